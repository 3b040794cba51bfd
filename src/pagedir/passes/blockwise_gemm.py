"""The flash-attention loop of rock-gridwise-attention-to-blockwise on matrix cores (CDNA MFMA).

Same algorithm, same LDS tiles and barriers as the VALU loop of the pass (its
module docstring); the two products run as ``amdgpu.mfma`` 16x16 tiles and the
softmax runs once per row:

```
rows padded to Mp = ceil(M / 16) * 16 (rows >= M compute copies of row M - 1, never stored)
before the loop: each wave loads the Q fragments of its score tiles (loop-invariant registers)
for t in tiles:
  K tile <- pages                                       (ends with a barrier)
  S tile (mt, nt), one per wave in turn: sum over D of mfma(Q[16 rows], K[16 keys]^T)
      -> scaled and masked like the VALU scores -> scores[M, N] in LDS (rows < M)
  barrier
  row r (thread r mod block):  m' = max(m, S[r, :]), alpha = exp2(m - m'), P = exp2(S - m'),
      l' = l * alpha + sum P;  P -> probs[Mp, N] (element type), alpha -> alphas[Mp]
  V tile <- pages                                       (ends with a barrier: probs and alphas seen)
  O tile (mt, dt), one per wave in turn: O *= alpha[rows]; O += sum over N of mfma(P[16 rows], V[16 keys])
  barrier
after the loop: O tiles -> LDS [M, D] f32, (m, l) -> LDS; barrier; each thread reads its
output chunks and their row's statistics, and the pass's epilogue stores them as before.
```

Lane layout (16x16x16 f16/bf16, 16x16x4 f32; pinned in tests/unit/test_interp_matrix.py):
lane ``l`` of a wave, ``g = l div 16``, ``kl`` = 4 (f16/bf16) or 1 (f32) values per lane:
A = ``X[row0 + l mod 16][k0 + kl * g + j]`` (Q or P: ``kl`` consecutive elements of a row,
one LDS read), B = ``Y[k0 + kl * g + j][col0 + l mod 16]`` (for S, ``Y = K^T``: ``kl``
consecutive elements of key ``col0 + l mod 16``, one LDS read; for O, ``Y = V``: one
element from each of ``kl`` key rows), accumulator ``D[row0 + 4 * g + j][col0 + l mod 16]``, j < 4.

Each f16/bf16 element goes into the matrix cores as it is (no conversion); the only
conversions left are P to the element type once per element, and f32 scores.

Causal masking. A key hidden from a row is a later row's live key and may hold NaN or
Inf; ``0 x NaN`` is NaN inside an MFMA too, so a tile where some row of the block does not
see some key before seq_len (at most the ``ceil((Sq_t + N) / N)`` tiles on the diagonal) adds
P V on the VALU with a select per key, as the VALU loop does; every other tile uses MFMA.
Keys past seq_len need no such care: their tile slots were never read and hold 0.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import mlir.ir as ir
from mlir.dialects import amdgpu, arith, memref, scf, vector
from mlir.dialects import math as mlir_math

from pagedir.arch import Chip
from pagedir.dialect import rock
from pagedir.passes.ir_utils import index_const

#: Chips whose MFMA this loop uses (gfx908 lacks the bf16 1k forms: it keeps the VALU loop).
MFMA_CHIPS = frozenset({"gfx90a", "gfx942", "gfx950"})
#: Rows and columns of one MFMA tile.
TILE = 16


@dataclass(frozen=True)
class MatrixInstruction:
    """One ``amdgpu.mfma`` form: ``TILE x TILE x k``, ``per_lane`` A and B values per lane."""

    k: int
    per_lane: int
    wave: int = 64


def matrix_instruction(chip: Chip | None, element: ir.Type, block: int, n: int, head_dim: int) -> MatrixInstruction | None:
    """The MFMA form for this chip, element type and tiling, or None (the VALU loop)."""
    if chip is None or chip.name not in MFMA_CHIPS:
        return None
    if block % chip.wave_size or n % TILE or head_dim % TILE:
        return None
    if isinstance(element, ir.F32Type):
        return MatrixInstruction(k=4, per_lane=1)
    if isinstance(element, (ir.F16Type, ir.BF16Type)):
        return MatrixInstruction(k=16, per_lane=4)
    return None


def padded_rows(m: int) -> int:
    return math.ceil(m / TILE) * TILE


def matrix_lds_bytes(m: int, n: int, head_dim: int, element_size: int) -> dict[str, int]:
    """LDS the matrix loop adds to the VALU loop's buffers: P and alpha per padded row (live
    through an iteration); the output exchange after the loop fits on the K/V bytes."""
    rows = padded_rows(m)
    return {"probs": rows * n * element_size, "alphas": rows * 4}


class MatrixLoop:
    """Emits the KV loop and the output exchange for one gridwise op (``builder``: the pass's Builder)."""

    def __init__(self, builder, instruction: MatrixInstruction):
        from pagedir.passes.gridwise_attention_to_blockwise import apply, lds_view  # that module imports this one

        self.apply, self.lds_view = apply, lds_view
        self.b = builder
        self.mi = instruction
        plan = builder.plan
        self.plan, self.p = plan, plan.p
        self.f32 = ir.F32Type.get()
        self.rows = padded_rows(plan.m)
        self.waves = plan.block // instruction.wave
        self.score_tiles = (self.rows // TILE) * (plan.n // TILE)
        self.out_tiles = (self.rows // TILE) * (plan.p.head_dim // TILE)
        self.row_owners = math.ceil(self.rows / plan.block)

    # --- the loop -------------------------------------------------------------------

    def run(self, first: ir.Value | None, end: ir.Value) -> list[ir.Value]:
        """The loop; returns the pass's epilogue values: per output chunk of this thread (acc, max, sum)."""
        b, apply = self.b, self.apply
        wave = self.mi.wave
        self.wave = apply(lambda t: ir.AffineExpr.get_floor_div(t, wave), b.tid)
        self.lane = apply(lambda t: t % wave, b.tid)
        self.lane_row = apply(lambda t: t % TILE, b.tid)  # l mod 16
        self.lane_group = apply(lambda t: ir.AffineExpr.get_floor_div(t % wave, TILE), b.tid)  # l div 16
        self.probs = self.lds_view([self.rows, self.plan.n], self.p.element)
        self.alphas = self.lds_view([self.rows], self.f32)
        queries = self.query_fragments()
        outputs = self.per_wave(self.out_tiles)
        init = [self.zeros() for _ in range(outputs)]
        for _ in range(self.row_owners):
            init += [self.const(-math.inf), self.const(0.0)]
        loop = scf.ForOp(index_const(0) if first is None else first, end, index_const(1), init)
        with ir.InsertionPoint(loop.body):
            t = loop.induction_variable
            carried = list(loop.inner_iter_args)
            b.load_kv(b.op.k, b.k_tile, t)
            self.scores_on_matrix_cores(t, queries)
            rock.lds_barrier()
            statistics = self.softmax_rows(carried[outputs:])
            b.load_kv(b.op.v, b.v_tile, t)  # its closing barrier also publishes probs and alphas
            accumulators = self.accumulate_on_matrix_cores(t, carried[:outputs])
            rock.lds_barrier()
            scf.YieldOp(accumulators + statistics)
        results = list(loop.results)
        return self.exchange(results[:outputs], results[outputs:])

    # --- helpers ----------------------------------------------------------------------

    def const(self, value: float) -> ir.Value:
        return arith.constant(self.f32, value)

    def zeros(self) -> ir.Value:
        return vector.broadcast(ir.VectorType.get([4], self.f32), self.const(0.0))

    def per_wave(self, tiles: int) -> int:
        return math.ceil(tiles / self.waves)

    def wave_tile(self, s: int, tiles: int) -> tuple[ir.Value, ir.Value | None]:
        """The ``s``-th tile of this wave (wave + s * waves), clamped into range, and whether it is
        real (None when every wave's is): clamped tiles compute but store nothing."""
        raw = self.apply(lambda w: w + s * self.waves, self.wave)
        if (s + 1) * self.waves <= tiles:
            return raw, None
        real = arith.cmpi(arith.CmpIPredicate.ult, raw, index_const(tiles))
        return arith.minui(raw, index_const(tiles - 1)), real

    def fragment(self, tile: ir.Value, row: ir.Value, k0: ir.Value | int) -> ir.Value:
        """``per_lane`` consecutive elements of ``tile[row]`` from column ``k0 + per_lane * (l div 16)``."""
        kl = self.mi.per_lane
        col = self.apply(lambda g: g * kl + k0, self.lane_group) if isinstance(k0, int) else \
            self.apply(lambda g, k: g * kl + k, self.lane_group, k0)
        element = ir.MemRefType(tile.type).element_type
        if kl == 1:
            return memref.load(tile, [row, col])
        return vector.load(ir.VectorType.get([kl], element), tile, [row, col])

    def mfma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return amdgpu.mfma(TILE, TILE, self.mi.k, a, b, c, blocks=1)

    def guarded_store(self, condition: ir.Value | None, value: ir.Value, target: ir.Value, indices: list[ir.Value]) -> None:
        if condition is None:
            memref.store(value, target, indices)
            return
        if_op = scf.IfOp(condition)
        with ir.InsertionPoint(if_op.then_block):
            memref.store(value, target, indices)
            scf.YieldOp([])

    def row_stored(self, row: ir.Value, real: ir.Value | None) -> ir.Value | None:
        """Whether an accumulator row is a row of the tile (< M) of a real tile; None: always."""
        condition = real
        if self.rows != self.plan.m:
            inside = arith.cmpi(arith.CmpIPredicate.ult, row, index_const(self.plan.m))
            condition = inside if condition is None else arith.andi(condition, inside)
        return condition

    def tile_rows(self, mt: ir.Value) -> list[ir.Value]:
        """Rows of accumulator element j < 4 of this lane in row tile ``mt``: ``16 mt + 4 (l div 16) + j``."""
        return [self.apply(lambda m, g: m * TILE + g * 4 + j, mt, self.lane_group) for j in range(4)]

    # --- S = Q K^T ---------------------------------------------------------------------

    def query_fragments(self) -> list[list[ir.Value]]:
        """Per score tile of this wave, its Q fragments over D (rows past M read row M - 1)."""
        plan, p = self.plan, self.p
        n_tiles = plan.n // TILE
        fragments = []
        for s in range(self.per_wave(self.score_tiles)):
            tile, _ = self.wave_tile(s, self.score_tiles)
            row = self.apply(lambda tt, r: ir.AffineExpr.get_floor_div(tt, n_tiles) * TILE + r, tile, self.lane_row)
            if self.rows != plan.m:
                row = arith.minui(row, index_const(plan.m - 1))
            fragments.append([self.fragment(self.b.q_rows, row, d0) for d0 in range(0, p.head_dim, self.mi.k)])
        return fragments

    def scores_on_matrix_cores(self, t: ir.Value, queries: list[list[ir.Value]]) -> None:
        plan, p = self.plan, self.p
        n_tiles = plan.n // TILE
        for s, fragments in enumerate(queries):
            tile, real = self.wave_tile(s, self.score_tiles)
            key = self.apply(lambda tt, r: (tt % n_tiles) * TILE + r, tile, self.lane_row)
            acc = self.zeros()
            for fragment, d0 in zip(fragments, range(0, p.head_dim, self.mi.k)):
                acc = self.mfma(fragment, self.fragment(self.b.k_tile, key, d0), acc)
            mt = self.apply(lambda tt: ir.AffineExpr.get_floor_div(tt, n_tiles), tile)
            for j, row in enumerate(self.tile_rows(mt)):
                score = self.b.finish_score(vector.extract(acc, [], [j]), t, row, key)
                self.guarded_store(self.row_stored(row, real), score, self.b.scores, [row, key])

    # --- softmax, once per row -----------------------------------------------------------

    def softmax_rows(self, statistics: list[ir.Value]) -> list[ir.Value]:
        plan, p = self.plan, self.p
        f32 = self.f32
        width = 4
        score_type = ir.VectorType.get([width], f32)
        updated = []
        for k in range(self.row_owners):
            running_max, running_sum = statistics[2 * k : 2 * k + 2]
            item, row, past_end = self.b.thread_item(k, self.rows)
            score_row = arith.minui(row, index_const(plan.m - 1)) if self.rows != plan.m else row
            scores = [vector.load(score_type, self.b.scores, [score_row, index_const(n0)]) for n0 in range(0, plan.n, width)]
            tile_max = running_max
            for s in scores:
                tile_max = arith.maxnumf(tile_max, vector.reduction(f32, vector.CombiningKind.MAXNUMF, s))
            nothing_seen = arith.cmpf(arith.CmpFPredicate.OEQ, tile_max, self.const(-math.inf))
            safe_max = arith.select(nothing_seen, self.const(0.0), tile_max)
            alpha = mlir_math.exp2(arith.subf(running_max, safe_max))
            probs = [mlir_math.exp2(arith.subf(s, vector.broadcast(score_type, safe_max))) for s in scores]
            new_sum = arith.mulf(running_sum, alpha)
            for prob in probs:
                new_sum = arith.addf(new_sum, vector.reduction(f32, vector.CombiningKind.ADD, prob))
            if not isinstance(p.element, ir.F32Type):
                probs = [arith.truncf(ir.VectorType.get([width], p.element), prob) for prob in probs]
            store = None
            if past_end:  # threads past the last row hold a clamped row: they must not write it
                store = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, item, index_const(self.rows)))
            with ir.InsertionPoint(store.then_block) if store else contextlib.nullcontext():
                for prob, n0 in zip(probs, range(0, plan.n, width)):
                    vector.store(prob, self.probs, [row, index_const(n0)])
                memref.store(alpha, self.alphas, [row])
                if store:
                    scf.YieldOp([])
            updated += [tile_max, new_sum]
        return updated

    # --- O += P V ------------------------------------------------------------------------

    def accumulate_on_matrix_cores(self, t: ir.Value, accumulators: list[ir.Value]) -> list[ir.Value]:
        p = self.p
        d_tiles = p.head_dim // TILE
        boundary = self.causal_boundary(t) if self.plan.causal else None
        updated = []
        for s, acc in enumerate(accumulators):
            tile, _ = self.wave_tile(s, self.out_tiles)
            mt = self.apply(lambda tt: ir.AffineExpr.get_floor_div(tt, d_tiles), tile)
            col = self.apply(lambda tt, r: (tt % d_tiles) * TILE + r, tile, self.lane_row)
            rows = self.tile_rows(mt)
            alpha = vector.load(ir.VectorType.get([4], self.f32), self.alphas, [rows[0]])
            acc = arith.mulf(acc, alpha)
            if boundary is None:
                updated.append(self.pv_on_matrix_cores(mt, col, acc))
                continue
            if_op = scf.IfOp(boundary, [acc.type], has_else=True)
            with ir.InsertionPoint(if_op.then_block):
                scf.YieldOp([self.pv_with_hidden_keys(t, rows, col, acc)])
            with ir.InsertionPoint(if_op.else_block):
                scf.YieldOp([self.pv_on_matrix_cores(mt, col, acc)])
            updated.append(if_op.results[0])
        return updated

    def pv_on_matrix_cores(self, mt: ir.Value, col: ir.Value, acc: ir.Value) -> ir.Value:
        kl = self.mi.per_lane
        prob_row = self.apply(lambda m, r: m * TILE + r, mt, self.lane_row)
        element = self.p.element
        for k0 in range(0, self.plan.n, self.mi.k):
            probs = self.fragment(self.probs, prob_row, k0)
            keys = [self.apply(lambda g: g * kl + k0 + j, self.lane_group) for j in range(kl)]
            values = [memref.load(self.b.v_tile, [key, col]) for key in keys]
            operand = values[0] if kl == 1 else vector.from_elements(ir.VectorType.get([kl], element), values)
            acc = self.mfma(probs, operand, acc)
        return acc

    def causal_boundary(self, t: ir.Value) -> ir.Value:
        """Whether some row of the block does not see some key of tile ``t`` before seq_len: the block's
        first query position i0 sees keys up to i0 + seq_len - Sq, the tile's last live key is
        min(t * N + N - 1, seq_len - 1)."""
        plan, p = self.plan, self.p
        last_key = arith.minui(self.apply(lambda tt: tt * plan.n + plan.n - 1, t),
                               arith.subi(self.b.seq_len, index_const(1)))
        first_position = self.apply(lambda qt: qt * plan.positions, self.b.qt)
        seen = arith.subi(arith.addi(first_position, self.b.seq_len), index_const(p.seq_q))
        return arith.cmpi(arith.CmpIPredicate.sgt, last_key, seen)

    def pv_with_hidden_keys(self, t: ir.Value, rows: list[ir.Value], col: ir.Value, acc: ir.Value) -> ir.Value:
        """P V for this lane's four accumulator elements on the VALU, each key skipped (not weighted
        by 0) where the row does not see it."""
        f32 = self.f32
        for j, row in enumerate(rows):
            prob_row = arith.minui(row, index_const(self.rows - 1))
            limit = self.b.causal_limit(t, row)
            total = vector.extract(acc, [], [j])
            for n in range(self.plan.n):
                prob = memref.load(self.probs, [prob_row, index_const(n)])
                value = memref.load(self.b.v_tile, [index_const(n), col])
                if not isinstance(self.p.element, ir.F32Type):
                    prob, value = arith.extf(f32, prob), arith.extf(f32, value)
                updated = mlir_math.fma(prob, value, total)
                seen = arith.cmpi(arith.CmpIPredicate.sge, limit, index_const(n))
                total = arith.select(seen, updated, total)
            acc = vector.insert(total, acc, [], [j])
        return acc

    # --- after the loop ------------------------------------------------------------------

    def exchange(self, accumulators: list[ir.Value], statistics: list[ir.Value]) -> list[ir.Value]:
        """O tiles and row statistics through LDS into the pass's chunk layout: (acc, max, sum) per chunk."""
        plan, p = self.plan, self.p
        d_tiles = p.head_dim // TILE
        outputs = self.lds_view([plan.m, p.head_dim], self.f32)
        stats = self.lds_view([2, self.rows], self.f32)
        for s, acc in enumerate(accumulators):
            tile, real = self.wave_tile(s, self.out_tiles)
            mt = self.apply(lambda tt: ir.AffineExpr.get_floor_div(tt, d_tiles), tile)
            col = self.apply(lambda tt, r: (tt % d_tiles) * TILE + r, tile, self.lane_row)
            for j, row in enumerate(self.tile_rows(mt)):
                self.guarded_store(self.row_stored(row, real), vector.extract(acc, [], [j]), outputs, [row, col])
        for k in range(self.row_owners):
            item, row, past_end = self.b.thread_item(k, self.rows)
            inside = arith.cmpi(arith.CmpIPredicate.ult, item, index_const(self.rows)) if past_end else None
            self.guarded_store(inside, statistics[2 * k], stats, [index_const(0), row])
            self.guarded_store(inside, statistics[2 * k + 1], stats, [index_const(1), row])
        rock.lds_barrier()
        final = []
        chunk_type = ir.VectorType.get([plan.chunk], self.f32)
        for k in range(math.ceil(plan.chunks / plan.block)):
            _, _, row, col = self.b.chunk_position(k)
            final += [vector.load(chunk_type, outputs, [row, col]),
                      memref.load(stats, [index_const(0), row]), memref.load(stats, [index_const(1), row])]
        return final

