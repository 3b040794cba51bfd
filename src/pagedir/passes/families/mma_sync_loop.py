"""The flash-attention loop of rock-gridwise-attention-to-blockwise on NVIDIA's tensor cores: both
products on ``mma.sync.aligned.m16n8k16.row.col`` f16 / bf16 -> f32.

The same tiles, masking, online softmax, slices and epilogue hand-off as the MFMA loop
(:class:`pagedir.passes.blockwise_gemm.MatrixLoop`, whose wave assignment, boundaries and slice merge
this loop shares), but the products are computed the way round that keeps P in registers with
m16n8k16's fragments (PTX ISA 9.7.14.5.8; the table: :mod:`pagedir.targets.nvidia_mma`)::

    lane l of a warp: g = l div 4, t = l mod 4; in row block rb the lane holds rows r0 = 16 rb + g
    and r1 = r0 + 8 (rows past M compute copies of row M - 1, never stored)
    S = Q K^T per 16 keys (two n8 products): A = Q, registers Q[r0|r1][16 s + 2 t (+8) .. +1]
    (held across the loop), B = K^T, registers K[key g][16 s + 2 t (+8) .. +1]; the result holds
    S[r0|r1][keys 2 t, 2 t + 1] of each 8 keys
    row max and sum: the lane's values, then the 4 lanes of the row (shuffles xor 1 and 2)
    O = P V + alpha O per 8 output columns: A = P, and the lane's S values of 16 keys are exactly
    its A registers (rows r0, r1; keys 2 t, 2 t + 1, 8 + 2 t, 9 + 2 t): no data moves;
    B = V, registers (V[key 2 t][8 db + g], V[key 2 t + 1][...]) and keys + 8
    the accumulator of output block db holds O[r0|r1][8 db + 2 t .. + 1]

Keys hidden from some row of a tile (causal, window) may hold NaN or Inf that ``0 x NaN`` would
spread; such tiles run the three products of the MFMA loop (V sanitized, V as it is, and the count
of non-finite values each output's row sees), the visibility in P's registers.

After the loop each lane hands the epilogue 2 columns of each of its 2 rows per output block.
The operands come from shared memory by ``ldmatrix`` (``nvgpu.ldmatrix``): Q's A registers x4 (once), K's
B registers x4 per 8 keys and two steps of D, V's x4 ``.trans`` per 16 keys and two output blocks.
With ``--lds-swizzle`` the tiles are stored swizzled for ldmatrix (:func:`ldmatrix_swizzle`), conflict-free.
"""

from __future__ import annotations

import math

import mlir.ir as ir
from mlir.dialects import arith, gpu, memref, nvgpu, scf, vector
from mlir.dialects import math as mlir_math

from pagedir.dialect import rock
from pagedir.passes.blockwise_gemm import MatrixLoop
from pagedir.passes.ir_utils import index_const, swizzled_column
from pagedir.passes.matrix_tiles import EXCHANGE_PAD

#: Rows (M), keys (N) and reduced elements (K) of one mma.sync.
MMA_M, MMA_N, MMA_K = 16, 8, 16
#: Lanes of a warp that hold one row (threadID_in_group: the shuffles of the row statistics).
ROW_LANES = 4
#: Bytes of one ldmatrix row (8 elements of 16 bits).
ROW_BYTES = 16


def ldmatrix_swizzle(head_dim: int, elem_bytes: int) -> tuple[int, int, int, int]:
    """``lds_swizzle`` of the tiles ldmatrix reads (``--lds-swizzle``): 16-byte chunks, row r's chunk k stored at
    ``k xor (r mod n)``, n = min(8, chunks per row). An ldmatrix phase reads 8 consecutive rows at one chunk
    (8 lanes x 16 bytes); unswizzled, rows of 128 bytes or more put them all in the same 4 banks (8-way
    conflicts), swizzled they take 8 different chunks of 16 bytes: all 32 banks once."""
    chunk = ROW_BYTES // elem_bytes
    return (chunk, 1, min(8, head_dim // chunk), 1)


class MmaSyncLoop(MatrixLoop):
    """Emits the KV loop and the slice merge for one gridwise op on mma.sync (module docstring)."""

    reads_v_transposed = False  # ldmatrix .trans reads V from [N, D]

    @classmethod
    def tile_swizzles(cls, instruction, head_dim: int, elem_bytes: int) -> tuple:
        """ldmatrix's rows, for Q, K and V alike (:func:`ldmatrix_swizzle`)."""
        return (ldmatrix_swizzle(head_dim, elem_bytes),) * 3

    def __init__(self, builder, instruction):
        super().__init__(builder, instruction)
        self.group = 1
        self.o_blocks = self.p.head_dim // MMA_N
        self.steps = self.p.head_dim // MMA_K

    # --- the loop -------------------------------------------------------------------

    def run(self, first: ir.Value | None, end: ir.Value) -> tuple[list[ir.Value], list]:
        b, apply = self.b, self.apply
        self.lane = apply(lambda t: t % 32, b.tid)
        self.lane_g = apply(lambda l: ir.AffineExpr.get_floor_div(l, ROW_LANES), self.lane)
        self.lane_t = apply(lambda l: l % ROW_LANES, self.lane)
        self.lane_q = self.lane_g  # MatrixLoop's helpers that take a lane row
        self.assign_waves()
        queries = [self.query_registers(rb) for rb in self.row_blocks]
        per_block = self.o_blocks + 4  # outputs, max r0, max r1, sum r0, sum r1
        init = []
        for _ in self.row_blocks:
            init += [self.zeros() for _ in range(self.o_blocks)] + [self.const(-math.inf)] * 2 + [self.const(0.0)] * 2
        loop = scf.ForOp(index_const(0) if first is None else first, end, index_const(1), init)
        with ir.InsertionPoint(loop.body):
            t = loop.induction_variable
            carried = list(loop.inner_iter_args)
            b.load_kv(b.op.k, b.k_tile, t)
            softmax = []
            for i, (rb, registers) in enumerate(zip(self.row_blocks, queries)):
                state = carried[i * per_block + self.o_blocks:(i + 1) * per_block]
                softmax.append(self.softmax(t, rb, self.scores(registers), state[0:2], state[2:4]))
            b.load_kv(b.op.v, b.v_tile, t)
            updated = []
            for i, (rb, (probs, alphas, maxes, sums)) in enumerate(zip(self.row_blocks, softmax)):
                outputs = carried[i * per_block:i * per_block + self.o_blocks]
                updated += self.accumulate(t, rb, probs, alphas, outputs) + maxes + sums
            rock.lds_barrier()
            scf.YieldOp(updated)
        results = list(loop.results)
        if self.mi.slices > 1:
            results = self.merge_slices(results)
            receiver = arith.cmpi(arith.CmpIPredicate.eq, self.slice, index_const(0))
            self.stores = receiver if self.stores is None else arith.andi(self.stores, receiver)
        return self.in_place(results)

    # --- helpers ----------------------------------------------------------------------

    def zeros(self) -> ir.Value:
        return vector.broadcast(ir.VectorType.get([4], self.f32), self.const(0.0))

    def rows_of(self, rb: ir.Value) -> list[ir.Value]:
        """The lane's two tile rows of row block ``rb``: ``16 rb + g`` and ``+ 8``."""
        return [self.apply(lambda r, g: r * MMA_M + g + 8 * h, rb, self.lane_g) for h in (0, 1)]

    def data_rows(self, rb: ir.Value) -> list[ir.Value]:
        """:meth:`rows_of`, padding rows (past M) taken as row M - 1 (they compute a copy of it)."""
        rows = self.rows_of(rb)
        if self.rows != self.plan.m:
            rows = [arith.minui(row, index_const(self.plan.m - 1)) for row in rows]
        return rows

    def pair(self, tile: ir.Value, row: ir.Value, column) -> ir.Value:
        """Elements ``column`` and ``column + 1`` of ``tile[row]``: one 32-bit register."""
        element = ir.MemRefType(tile.type).element_type
        return vector.load(ir.VectorType.get([2], element), tile, [row, column])

    def column(self, lane_part, offset: int) -> ir.Value:
        return self.apply(lambda t: lane_part(t) + offset, self.lane_t)

    def product(self, a: list[ir.Value], b: list[ir.Value], c: ir.Value) -> ir.Value:
        return self.mi.form.product(a, b, c)

    def across_row(self, value: ir.Value, combine) -> ir.Value:
        """``combine`` of ``value`` over the 4 lanes holding one row (``l xor 1``, ``l xor 2``)."""
        i32 = ir.IntegerType.get_signless(32)
        width = arith.constant(i32, 32)
        for offset in (1, 2):
            other, _ = gpu.shuffle(value, arith.constant(i32, offset), width, gpu.ShuffleMode.XOR)
            value = combine(value, other)
        return value

    # --- S = Q K^T, softmax -------------------------------------------------------------

    def ldmatrix(self, tile: ir.Value, swizzle, row: ir.Value, column: ir.Value, tiles: int,
                 transpose: bool) -> list[ir.Value]:
        """``tiles`` 8x8 matrices of ``tile`` by one ``ldmatrix`` (lane ``8 j + r`` gives row r of matrix j at
        ``tile[row, column]``, moved by the tile's ``swizzle``): register j of the lane as ``vector<2 x element>``."""
        if swizzle is not None:
            column = swizzled_column(swizzle, row, column)
        element = ir.MemRefType(tile.type).element_type
        result = nvgpu.ldmatrix(ir.VectorType.get([tiles, 2], element), tile, [row, column], transpose, tiles)
        return [vector.extract(result, [], [j]) for j in range(tiles)]

    def query_registers(self, rb: ir.Value) -> list[list[ir.Value]]:
        """Per 16-column step of D: A's 4 registers, Q[r0|r1][16 s + 2 t (+ 8)] and the next element, by one
        ldmatrix.x4: matrix j holds rows ``16 rb + 8 (j mod 2)`` on, columns ``16 s + 8 (j div 2)`` on."""
        row = self.apply(lambda r, l: r * MMA_M + 8 * (ir.AffineExpr.get_floor_div(l, 8) % 2) + l % 8, rb, self.lane)
        if self.rows != self.plan.m:
            row = arith.minui(row, index_const(self.plan.m - 1))
        steps = []
        for s in range(self.steps):
            column = self.apply(lambda l: 16 * s + 8 * ir.AffineExpr.get_floor_div(l, 16), self.lane)
            steps.append(self.ldmatrix(self.b.q_rows, self.b.q_swizzle, row, column, 4, False))
        return steps

    def scores(self, queries: list[list[ir.Value]]) -> list[tuple[ir.Value, ir.Value]]:
        """Per 8 keys of the slice: (S accumulator, first key of the 8)."""
        blocks = []
        for kt in range(self.slice_keys // MMA_N):
            first_key = self.apply(lambda s: s * self.slice_keys + kt * MMA_N, self.slice)
            # ldmatrix: row r of matrix j is key first_key + r, columns 8 j on (of two steps, or one)
            key = self.apply(lambda k, l: k + l % 8, first_key, self.lane)
            acc = self.zeros()
            for s in range(0, self.steps, 2):
                tiles = 4 if s + 1 < self.steps else 2
                column = self.apply(lambda l: 16 * s + 8 * (ir.AffineExpr.get_floor_div(l, 8) % tiles), self.lane)
                registers = self.ldmatrix(self.b.k_tile, self.b.k_swizzle, key, column, tiles, False)
                for step in range(tiles // 2):
                    acc = self.product(queries[s + step], registers[2 * step:2 * step + 2], acc)
            blocks.append((acc, first_key))
        return blocks

    def score_place(self, first_key: ir.Value, j: int) -> tuple[int, ir.Value]:
        """(which of the lane's rows, key in the tile) of accumulator element ``j``."""
        return j // 2, self.apply(lambda k, t: k + 2 * t + j % 2, first_key, self.lane_t)

    def softmax(self, t: ir.Value, rb: ir.Value, blocks, running_max: list, running_sum: list):
        """(P per 8 keys, alpha per row, new max per row, new sum per row) of the lane's two rows."""
        f32 = self.f32
        rows = self.data_rows(rb)
        scores = []
        for acc, first_key in blocks:
            values = []
            for j in range(4):
                half, key = self.score_place(first_key, j)
                values.append(self.b.finish_score(vector.extract(acc, [], [j]), t, rows[half], key))
            scores.append(values)
        alphas, maxes, sums, safe = [], [], [], []
        for half in (0, 1):
            local = running_max[half]
            for values in scores:
                local = arith.maxnumf(local, arith.maxnumf(values[2 * half], values[2 * half + 1]))
            new_max = self.across_row(local, arith.maxnumf)
            nothing_seen = arith.cmpf(arith.CmpFPredicate.OEQ, new_max, self.const(-math.inf))
            safe.append(arith.select(nothing_seen, self.const(0.0), new_max))
            alphas.append(mlir_math.exp2(arith.subf(running_max[half], safe[-1])))
            maxes.append(new_max)
        probs = [[mlir_math.exp2(arith.subf(v, safe[j // 2])) for j, v in enumerate(values)] for values in scores]
        for half in (0, 1):
            total = self.const(0.0)
            for values in probs:
                total = arith.addf(total, arith.addf(values[2 * half], values[2 * half + 1]))
            sums.append(arith.addf(arith.mulf(running_sum[half], alphas[half]), self.across_row(total, arith.addf)))
        return [(values, first_key) for values, (_, first_key) in zip(probs, blocks)], alphas, maxes, sums

    # --- O = P V + alpha O ------------------------------------------------------------------

    def accumulate(self, t: ir.Value, rb: ir.Value, probs, alphas: list, outputs: list[ir.Value]) -> list[ir.Value]:
        scale = vector.from_elements(ir.VectorType.get([4], self.f32), [alphas[0], alphas[0], alphas[1], alphas[1]])
        outputs = [arith.mulf(acc, scale) for acc in outputs]
        return self.on_boundary_tiles(t, rb, outputs, lambda hidden: self.pv(probs, outputs, hidden))

    def a_registers(self, values: list[ir.Value]) -> list[ir.Value]:
        """A's 4 registers from 8 values of 16 keys: the two 8-key blocks' (r0, r0, r1, r1) values."""
        element = self.p.element
        pair = ir.VectorType.get([2], element)
        low, high = values[:4], values[4:]
        return [vector.from_elements(pair, part) for part in (low[0:2], low[2:4], high[0:2], high[2:4])]

    def pv(self, probs, outputs: list[ir.Value], hidden: tuple | None = None) -> list[ir.Value]:
        """O += P V per 16 keys (``hidden`` = (t, rb): some keys of the tile are hidden from some rows)."""
        element = self.p.element
        outputs = list(outputs)
        for k in range(0, len(probs), 2):
            (low, first_key), (high, _) = probs[k], probs[k + 1]
            a = self.a_registers([arith.truncf(element, v) for v in low + high])
            seen = self.seen_registers(hidden, first_key) if hidden else None
            # ldmatrix.trans: row r of matrix j is key first_key + 8 (j mod 2) + r, columns 8 (db + j div 2) on
            key = self.apply(lambda k, l: k + 8 * (ir.AffineExpr.get_floor_div(l, 8) % 2) + l % 8, first_key, self.lane)
            for db in range(0, self.o_blocks, 2):
                column = self.apply(lambda l: 8 * db + 8 * ir.AffineExpr.get_floor_div(l, 16), self.lane)
                registers = self.ldmatrix(self.b.v_tile, self.b.v_swizzle, key, column, 4, True)
                for block in (db, db + 1):
                    b = registers[2 * (block - db):2 * (block - db) + 2]
                    if seen is None:
                        outputs[block] = self.product(a, b, outputs[block])
                    else:
                        outputs[block] = self.product_with_hidden_keys(a, b, seen, outputs[block])
        return outputs

    def seen_registers(self, hidden: tuple, first_key: ir.Value) -> list[ir.Value]:
        """A's registers of 1 where the row sees the key (P's places: rows r0, r1; 16 keys), else 0."""
        t, rb = hidden
        element = self.p.element
        one, zero = arith.constant(element, 1.0), arith.constant(element, 0.0)
        flags = []
        for half_keys in (0, 8):
            for half in (0, 1):
                row = self.data_rows(rb)[half]
                position = self.b.causal_limit(t, row)
                last, first = self.plan.keys.last_key(position), self.plan.keys.first_key(position)
                for o in (0, 1):
                    key = self.apply(lambda f, t_: f + half_keys + 2 * t_ + o, first_key, self.lane_t)
                    seen = arith.cmpi(arith.CmpIPredicate.sge, last, key) if last is not None else None
                    if first is not None:
                        inside = arith.cmpi(arith.CmpIPredicate.sge, key, first)
                        seen = inside if seen is None else arith.andi(seen, inside)
                    flags.append(arith.select(seen, one, zero))
        pair = ir.VectorType.get([2], element)
        return [vector.from_elements(pair, flags[i:i + 2]) for i in range(0, 8, 2)]

    def product_with_hidden_keys(self, a: list, b: list, seen: list, acc: ir.Value) -> ir.Value:
        """``acc + P V`` where a key hidden from a row adds nothing, whatever its V holds (MatrixLoop's
        ``mfma_with_hidden_keys``, on m16n8k16 registers)."""
        # finite: v - v is 0 (inf - inf and NaN are NaN); an f16 absf is not lowered by convert-gpu-to-nvvm
        finite = [arith.cmpf(arith.CmpFPredicate.OEQ, arith.subf(r, r), self.splat_like(r, 0.0)) for r in b]
        sanitized = [arith.select(f, r, self.splat_like(r, 0.0)) for f, r in zip(finite, b)]
        flags = [arith.select(f, self.splat_like(r, 0.0), self.splat_like(r, 1.0)) for f, r in zip(finite, b)]
        sees_non_finite = arith.cmpf(arith.CmpFPredicate.OGT, self.product(seen, flags, self.zeros()), self.zeros())
        return arith.select(sees_non_finite, self.product(a, b, acc), self.product(a, sanitized, acc))

    # --- after the loop ------------------------------------------------------------------

    def stored_row(self, i: int, half: int) -> ir.Value | None:
        """Whether the lane's row ``half`` of its ``i``-th row block is stored (None: always)."""
        conditions = [c for c in (self.stores, self.row_stored[i]) if c is not None]
        if self.rows != self.plan.m:
            conditions.append(arith.cmpi(arith.CmpIPredicate.ult, self.rows_of(self.row_blocks[i])[half],
                                         index_const(self.plan.m)))
        condition = None
        for c in conditions:
            condition = c if condition is None else arith.andi(condition, c)
        return condition

    def chunks(self, accs: list[ir.Value], half: int) -> list[ir.Value]:
        """Row ``half``'s two columns of each output block: ``vector<2xf32>``."""
        two = ir.VectorType.get([2], self.f32)
        return [vector.extract_strided_slice(two, acc, [2 * half], [2], [1]) for acc in accs]

    def chunk_col(self, db: int) -> ir.Value:
        return self.apply(lambda t: 8 * db + 2 * t, self.lane_t)

    def in_place(self, results: list[ir.Value]) -> tuple[list[ir.Value], list]:
        per_block = self.o_blocks + 4
        final, places = [], []
        for i, rb in enumerate(self.row_blocks):
            state = results[i * per_block:(i + 1) * per_block]
            accs, maxes, sums = state[:self.o_blocks], state[self.o_blocks:self.o_blocks + 2], state[self.o_blocks + 2:]
            rows = self.data_rows(rb)
            for half in (0, 1):
                stored = self.stored_row(i, half)
                for db, chunk in enumerate(self.chunks(accs, half)):
                    final += [chunk, maxes[half], sums[half]]
                    places.append((rows[half], self.chunk_col(db), stored))
        return final, places

    def merge_slices(self, results: list[ir.Value]) -> list[ir.Value]:
        """Slice 0's warps take in the other slices' (O, m, l) one slice per round through LDS, as the MFMA
        loop does (``MatrixLoop.merge_slices``); here per lane row."""
        plan, mi = self.plan, self.mi
        padded = self.lds_view([plan.m, self.p.head_dim + EXCHANGE_PAD], self.f32)
        outputs_buffer = memref.subview(padded, [0, 0], [plan.m, self.p.head_dim], [1, 1])
        stats = self.lds_view([2, plan.m], self.f32)
        (rb,) = self.row_blocks
        rows = self.rows_of(rb)
        cols = [self.chunk_col(db) for db in range(self.o_blocks)]
        accs = results[:self.o_blocks]
        per_row = [self.chunks(accs, half) + [results[self.o_blocks + half], results[self.o_blocks + 2 + half]]
                   for half in (0, 1)]
        for s in range(1, mi.slices):
            for half in (0, 1):
                per_row[half] = self.take_slice(s, per_row[half], rows[half], cols, self.stored_row(0, half),
                                                outputs_buffer, stats, self.lane_t)
        # back to the loop's layout: per output block the 4 values (r0, r0, r1, r1)
        four = ir.VectorType.get([4], self.f32)
        merged_accs = []
        for db in range(self.o_blocks):
            values = [vector.extract(per_row[h][db], [], [j]) for h in (0, 1) for j in (0, 1)]
            merged_accs.append(vector.from_elements(four, values))
        return merged_accs + [per_row[0][-2], per_row[1][-2], per_row[0][-1], per_row[1][-1]]
