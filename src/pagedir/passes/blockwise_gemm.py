"""The flash-attention loop of rock-gridwise-attention-to-blockwise on matrix cores (CDNA MFMA,
RDNA WMMA).

Same LDS tiles and masking as the VALU loop of the pass (its module docstring), but
both products are ``amdgpu.mfma`` 16x16 tiles computed *transposed*, so that the
softmax and P never leave the registers:

```
rows padded to Mp = ceil(M / 16) * 16 (rows >= M compute copies of row M - 1, never stored)
wave w -> row block rb (16 rows) and key slice s of each KV tile (Nw = N / slices keys)
before the loop: the wave's Q fragments (loop-invariant registers)
for t in tiles:
  K tile <- pages                                  (ends with a barrier)
  S^T = K Q^T per 16 keys of the slice: lane l holds S[row 16 rb + l mod 16][keys 4 (l div 16) + j]
  scaled, masked; row max and sum over the slice: in-lane, then 2 shuffles (lanes l xor 16, l xor 32)
  m' = max(m, row max); alpha = exp2(m - m'); P = exp2(S - m'); l' = l alpha + row sum
  V tile <- pages                                  (ends with a barrier)
  O^T = V^T P^T + alpha O^T: P is already the B operand in the lanes that hold it
  barrier
after the loop, several slices per row block: slice 0's waves take in the others' (O, m, l) one
slice at a time through LDS (O = sum exp2(m_s - M) O_s, l likewise, M = max m_s); then each lane
of slice 0 (of the only slice) hands its row's 4 output columns to the pass's epilogue.
```

Lane layout (16x16x16 f16/bf16, 16x16x4 f32; pinned in tests/unit/test_interp_matrix.py):
lane ``l`` of a wave, ``q = l mod 16``, ``g = l div 16``; an MFMA's A holds ``A[q][kl g + j]``,
B ``B[kl g + j][q]``, the accumulator ``D[4 g + j][q]`` (``kl`` = 4 or 1 values per lane).
``S^T = K Q^T``: A = K, lane ``K[key q][d0 + kl g + j]`` (one LDS read), B = ``Q^T``, lane
``Q[row q][d0 + kl g + j]`` (the Q fragment); the result ``S^T[4 g + j][q]`` is row ``q``'s
keys ``4 g + j``. ``O^T = V^T P^T``: B = ``P^T``, lane ``P[row q][key 4 g + j]``: exactly the
lane's own scores. A = ``V^T``, lane ``V[key 4 g + j][d0 + q]`` (one element of each of 4 key
rows). The accumulator ``O^T[d0 + 4 g + j][q]`` is row ``q``'s output columns ``d0 + 4 g + j``.
With 16x16x4 (f32) the 16 keys of a tile run in 4 MFMAs, MFMA ``i`` taking keys ``4 g + i``
(any order of the summed index is the same product): again the lane's own element ``i``.

V's columns. Which output column an accumulator row stands for is free (the products of
different columns never meet), and it is chosen so that a lane reads V in wide pieces: output
tile ``dt``'s row ``m`` is column ``16 G (dt div G) + G m + dt mod G``, so lane ``q`` finds the
columns of G consecutive d-tiles side by side in each key row: one LDS read of G elements
per key (``ds_read_b128`` for f16 D 128, G = 8) instead of one 2-byte read per d-tile (the
decode kernel: 4 instead of 32 reads per 16 keys; docs/measurements.md has the loop's instructions).
G is the largest power of two dividing the d-tiles with G elements in 16 bytes; the lane's
accumulators then hold G acc consecutive columns of its row, regrouped after the loop into
chunks of ``acc`` for the epilogue (no instruction). Loops with hidden keys (causal, window) read
V transposed instead where they can (CDNA f16/bf16: "V stored transposed" in
:mod:`pagedir.passes.matrix_tiles`, the same grouped columns, one read per d-tile); otherwise (f32, fp8 caches, swizzled or direct-to-LDS tiles) they keep
G = 1, the mapping ``d0 + m`` above (causal masking below: their diagonal tiles hold three products
per d-tile, and the grouped reads cost registers there), and so does WMMA (8 or 16 keys per lane and
product: the grouped reads took more registers than they saved; docs/measurements.md).

A D-major V pool (vLLM's paged-attention value cache, a column's tokens side by side) gives a V^T
tile ``[D, N]`` (rock-gridwise-attention-to-blockwise: each 16-byte load along the tokens is one LDS
store, its 16-byte chunks xor the row against bank conflicts): a lane's keys of column ``16 dt + q`` are
one read of its row, G = 1 (gfx11's 16 keys: two reads, taken even keys then odd ones). It keeps the
keys in their order, not the layout of "V stored transposed" (matrix_tiles), also where that one applies (with
hidden keys): there a 16-byte load of 8 consecutive tokens would land in two runs 4 S keys apart, and that
layout takes 4 keys a lane of 16-bit elements only (the pool's V^T serves every matrix core).

WMMA (RDNA, wave32, 16x16x16 f16/bf16; ``g = l div 16`` is 0 or 1). gfx12 is the scheme
above with 8 values per lane: A ``A[q][8 g + j]``, B ``B[8 g + j][q]``, the accumulator
``D[8 g + j][q]``, j < 8; a row's statistics take one shuffle (lane l xor 16). gfx11 gives
every lane all 16 K values of its A row and B column (lanes 16-31 repeat lanes 0-15) and
splits the accumulator's rows between the halves: ``D[2 j + g][q]``, j < 8. So ``S^T = K Q^T``
reads 16 elements of one K row and one Q row per lane (from column ``d0``, the same in both
halves) and leaves lane ``l`` with keys ``2 j + g`` of row ``q``; P's B operand needs all 16
keys of the row in both halves: each lane takes its partner's 8 (f16, 4 shuffles of packed
words) and both order them even keys then odd keys (the product sums over keys in any order),
as A = ``V^T`` reads them. The output accumulator holds columns ``d0 + 2 j + g``; after the
loop each lane swaps half of them with its partner to hold ``d0 + 8 g + j``, as gfx12 does.
f32 has no WMMA form: RDNA's f32 kernels keep the VALU loop. Wave32 accumulators take twice
the registers of wave64 ones (D 256: 128 VGPRs of outputs) and gfx11's Q fragments four times:
where Q's fragments and the outputs would pass 96 VGPRs (gfx11 D 128, any wave32 D 256) each
tile reads Q's fragments from LDS instead of holding them across the loop.

Each f16/bf16 element goes into the matrix cores as it is; the conversions left are P to
the element type (once per element) and nothing else in the loop.

Causal masking. A key hidden from a row is a later row's live key and may hold NaN or Inf;
``0 x NaN`` is NaN inside an MFMA too. In a tile where some row of the block does not see
some key before seq_len (the ``ceil((Sq_t + N) / N)`` tiles on the diagonal at most) each
P V product runs three times: with V's non-finite values replaced by 0 (exact for every
row that sees only finite values: a hidden key's P is 0), with V as it is, and the count,
per output, of non-finite V values its row sees (non-finite flags times the visibility);
an output whose count is not 0 takes the product of V as it is (non-finite, as the row's
true result; it may be NaN where the row alone would give Inf, when a key hidden from the
row also holds a non-finite value). Every other tile runs the plain product. Keys past
seq_len need no such care: their tile slots were never read and hold 0. A sliding window
hides keys the same way from the other side (an earlier row's live key before the row's
window): the tiles where the block's last row starts its window take the same three products,
with visibility from both ends.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import mlir.ir as ir
from mlir.dialects import arith, gpu, memref, scf, vector
from mlir.dialects import math as mlir_math

from pagedir.dialect import rock
from pagedir.dialect.types import element_bytes
from pagedir.passes.ir_utils import apply, index_const, lds_view, swizzled_column
from pagedir.passes.matrix_tiles import (
    EXCHANGE_PAD,
    TILE,
    MatrixInstruction,
    column_group,
    padded_rows,
    paired_k_reads,
    tile_swizzle,
)
from pagedir.variants import query_position

class MatrixLoop:
    """Emits the KV loop and the exchange for one gridwise op (``builder``: the pass's Builder). A family
    with another lane scheme subclasses it (:attr:`pagedir.passes.families.FamilyLowering.matrix_loop`)."""

    #: V may reach the loop as V^T ([D, N]): a D-major pool's tile, or "V stored transposed" (matrix_tiles).
    reads_v_transposed = True

    @classmethod
    def tile_swizzles(cls, instruction: MatrixInstruction, head_dim: int, elem_bytes: int) -> tuple:
        """The Q, K and V tiles' ``lds_swizzle`` with ``--lds-swizzle``: :func:`tile_swizzle` of each."""
        return tuple(tile_swizzle(instruction, which, head_dim, elem_bytes) for which in "qkv")

    def __init__(self, builder, instruction: MatrixInstruction):
        self.apply, self.lds_view = apply, lds_view
        self.b = builder
        self.mi = instruction
        plan = builder.plan
        self.plan, self.p = plan, plan.p
        self.f32 = ir.F32Type.get()
        self.rows = padded_rows(plan.m)
        self.slice_keys = plan.n // instruction.slices
        self.d_tiles = plan.p.head_dim // TILE
        # A loop with hidden keys (causal, window) keeps the plain column mapping: its diagonal tiles run
        # three products per d-tile, and the grouped columns took registers enough to lose a wave there.
        # WMMA keeps it too: a lane reads 8 or 16 keys per product there, and grouped reads of them took
        # more registers than they saved (the counts: docs/measurements.md).
        # So does a swizzled V tile: its columns are placed per key row (:meth:`v_column`).
        hides_keys = plan.keys.hides_keys
        # So does a V^T tile (a D-major V pool): a lane's keys of one column are one read there.
        plain = hides_keys or instruction.wmma or builder.swizzle or builder.v_pool_transposed
        self.group = 1 if plain else column_group(self.d_tiles, self.p.element.width)
        if builder.v_layout is not None:  # V^T ("V stored transposed"): the grouped columns, read from rows of keys
            self.group = builder.v_layout.group
        self.paired = builder.swizzle and paired_k_reads(instruction, plan.p.head_dim)  # with the swizzled tiles
        # V^T in LDS in the layout of the module section "V stored transposed" (a D-major pool's V^T, in key
        # order, is read per key step instead: :meth:`transposed_values`)
        self.transposed = builder.v_layout is not None
        self.lane_rows = None  # this lane's rows of V^T from its first key (pv_from_transposed)

    # --- the loop -------------------------------------------------------------------

    def run(self, first: ir.Value | None, end: ir.Value) -> tuple[list[ir.Value], list | None]:
        """The loop; returns the pass's epilogue values, per output chunk (acc, max, sum), and where the
        chunks are (None: this thread's chunks of the VALU layout)."""
        b, apply = self.b, self.apply
        wave = self.mi.wave
        self.lane_q = apply(lambda t: t % TILE, b.tid)
        self.lane_g = apply(lambda t: ir.AffineExpr.get_floor_div(t % wave, TILE), b.tid)
        self.assign_waves()
        # Q's fragments stay in registers across the loop unless they and the output accumulators would
        # pass 96 of the 256 VGPRs: then each tile reads them from LDS. Wave32 D 256 holds 128 VGPRs of
        # outputs alone (held Q spills there), and at D 128 reading Q ran fewer loop instructions and more
        # waves than holding it (docs/measurements.md).
        held = len(self.row_blocks) * self.d_tiles * (self.mi.per_lane * self.p.element.width // 32 + self.mi.acc)
        self.queries_in_registers = held <= 96
        queries = [self.query_fragments(rb) if self.queries_in_registers else None for rb in self.row_blocks]
        init = []
        for _ in self.row_blocks:
            init += [self.zeros() for _ in range(self.d_tiles)] + [self.const(-math.inf), self.const(0.0)]
        loop = scf.ForOp(index_const(0) if first is None else first, end, index_const(1), init)
        self.before_loop = ir.InsertionPoint(loop.operation)  # where the swizzled tiles' lane bases go
        self.lane_bases: dict = {}
        per_block = self.d_tiles + 2
        with ir.InsertionPoint(loop.body):
            t = loop.induction_variable
            carried = list(loop.inner_iter_args)
            b.load_kv(b.op.k, b.k_tile, t)
            softmax = [self.softmax(t, rb, self.scores(rb, fragments), *carried[i * per_block + self.d_tiles:(i + 1) * per_block])
                       for i, (rb, fragments) in enumerate(zip(self.row_blocks, queries))]
            b.load_kv(b.op.v, b.v_tile, t)
            updated = []
            for i, (rb, (probs, alpha, new_max, new_sum)) in enumerate(zip(self.row_blocks, softmax)):
                outputs = carried[i * per_block:i * per_block + self.d_tiles]
                updated += self.accumulate(t, rb, probs, alpha, outputs) + [new_max, new_sum]
            rock.lds_barrier()
            scf.YieldOp(updated)
        results = list(loop.results)
        if self.mi.replicated:
            results = self.contiguous_columns(results)
        results = self.column_chunks(results)
        if self.mi.slices > 1:
            results = self.merge_slices(results)
            receiver = arith.cmpi(arith.CmpIPredicate.eq, self.slice, index_const(0))
            self.stores = receiver if self.stores is None else arith.andi(self.stores, receiver)
        return self.in_place(results)

    def assign_waves(self) -> None:
        """This wave's row blocks (a list of index values) and key slice; waves past the busy ones
        repeat a busy wave's work and store nothing (``self.stores``: None when every wave stores)."""
        mi, apply = self.mi, self.apply
        wave = apply(lambda t: ir.AffineExpr.get_floor_div(t, mi.wave), self.b.tid)
        if mi.row_blocks >= mi.waves:  # one slice; row blocks dealt to the waves in turn
            per_wave = math.ceil(mi.row_blocks / mi.waves)
            self.row_blocks = [arith.minui(apply(lambda w: w + i * mi.waves, wave), index_const(mi.row_blocks - 1))
                               for i in range(per_wave)]
            self.row_stored = [None if (i + 1) * mi.waves <= mi.row_blocks else
                               arith.cmpi(arith.CmpIPredicate.ult, apply(lambda w: w + i * mi.waves, wave),
                                          index_const(mi.row_blocks)) for i in range(per_wave)]
            self.slice = index_const(0)
            self.stores = None
            return
        busy = mi.busy_waves
        slot = apply(lambda w: w % busy, wave)
        self.row_blocks = [apply(lambda s: ir.AffineExpr.get_floor_div(s, mi.slices), slot)]
        self.row_stored = [None]
        self.slice = apply(lambda s: s % mi.slices, slot)
        self.stores = None if busy == mi.waves else arith.cmpi(arith.CmpIPredicate.ult, wave, index_const(busy))

    # --- helpers ----------------------------------------------------------------------

    def const(self, value: float) -> ir.Value:
        return arith.constant(self.f32, value)

    def zeros(self) -> ir.Value:
        return vector.broadcast(ir.VectorType.get([self.mi.acc], self.f32), self.const(0.0))

    def lane_column(self, i: int) -> tuple:
        """(lane part ``f(q, g)``, constant part) of the first column (of D) of this lane's ``per_lane``
        values for MFMA step ``i`` over D: column ``k i + per_lane g`` (gfx11 WMMA: ``k i``, all of them
        in every lane). Paired steps (:func:`paired_k_reads`): steps 2s and 2s + 1 take columns
        ``32 s + 8 g`` and ``32 s + 8 g + 4``, so a lane's K values of both are 8 consecutive elements,
        one 16-byte read (a product sums over its k index in any order, as long as A and B agree: Q's
        fragments take the same columns)."""
        k, kl = self.mi.k, self.mi.per_lane
        if self.mi.replicated:
            return (lambda q, g: 0 * q), i * k
        if self.paired:
            return (lambda q, g: g * 8), 32 * (i // 2) + 4 * (i % 2)
        return (lambda q, g: g * kl), i * k

    def shifted(self, col: ir.Value, by: int) -> ir.Value:
        return col if by == 0 else self.apply(lambda c: c + by, col)

    def column_value(self, i: int) -> ir.Value:
        """:meth:`lane_column` of step ``i`` as an index value (a constant where no lane part)."""
        lane, offset = self.lane_column(i)
        if self.mi.replicated:
            return index_const(offset)
        return self.apply(lambda q, g: lane(q, g) + offset, self.lane_q, self.lane_g)

    def fragment(self, tile: ir.Value, row: ir.Value, i: int, swizzle: tuple[int, int, int, int] | None = None) -> ir.Value:
        """This lane's ``per_lane`` values of ``tile[row]`` for MFMA step ``i`` (:meth:`lane_column`)."""
        col = self.column_value(i)
        if swizzle is None:
            return self.read_row(tile, row, self.mi.per_lane, lambda first: self.shifted(col, first))
        return self.read_row(tile, row, self.mi.per_lane, lambda first: swizzled_column(swizzle, row, self.shifted(col, first)),
                             swizzle[0])

    def key_fragments(self, first_key: ir.Value) -> Iterator[ir.Value]:
        """This lane's K values of key row ``first_key + q`` for every MFMA step over D (paired: one read
        per pair of steps), each read emitted when its step is (next to the MFMA that takes it).
        ``first_key`` is a multiple of 16: a swizzled row's flip comes from q alone."""
        steps = self.p.head_dim // self.mi.k
        swizzle = self.b.k_swizzle
        key = self.apply(lambda k, q: k + q, first_key, self.lane_q)
        reads = [(i, self.mi.per_lane) for i in range(steps)] if not self.paired else [(i, 8) for i in range(0, steps, 2)]
        for i, count in reads:
            lane, offset = self.lane_column(i)
            if swizzle is None:
                col = self.column_value(i)
                values = self.read_row(self.b.k_tile, key, count, lambda first: self.shifted(col, first))
            else:
                values = self.read_row(self.b.k_tile, key, count, lambda first: self.tile_column(
                    swizzle, (lambda q, g: q), 0, lane, offset + first), swizzle[0])
            if count == self.mi.per_lane:
                yield values
                continue
            half = ir.VectorType.get([4], ir.MemRefType(self.b.k_tile.type).element_type)
            for o in (0, 4):
                yield vector.extract_strided_slice(half, values, [o], [4], [1])

    def read_row(self, tile: ir.Value, row: ir.Value, count: int, column, chunk: int | None = None) -> ir.Value:
        """``count`` consecutive elements of ``tile[row]`` (a scalar when 1), from the column
        ``column(first)`` gives for the element ``first`` of them; in a swizzled tile (``chunk``: its
        chunk elements) a chunk at a time."""
        element = ir.MemRefType(tile.type).element_type
        piece = count if chunk is None else min(count, chunk)
        pieces = []
        for first in range(0, count, piece):
            where = column(first)
            pieces.append(memref.load(tile, [row, where]) if piece == 1 else
                          vector.load(ir.VectorType.get([piece], element), tile, [row, where]))
        if len(pieces) == 1:
            return pieces[0]
        values = [p if piece == 1 else vector.extract(p, [], [i]) for p in pieces for i in range(piece)]
        return vector.from_elements(ir.VectorType.get([count], element), values)

    def tile_column(self, swizzle: tuple[int, int, int, int], lane_row, row_offset: int, lane_col, col_offset: int) -> ir.Value:
        """The column, in a tile stored with ``swizzle``, of column ``lane_col(q, g) + col_offset`` of row
        ``R + lane_row(q, g) + row_offset`` (R a multiple of 16: it leaves a flip of at most 16 rows alone), as a lane base
        plus a constant, so that LLVM folds the constant into the LDS instruction's offset: the reads
        whose columns differ across the lanes by the same amounts share one base, computed once before
        the loop (the smallest column of the lanes; a base is never negative)."""
        chunk, rows, count, multiplier = swizzle
        columns = []
        for lane in range(self.mi.wave):
            q, g = lane % TILE, lane // TILE
            row, col = lane_row(q, g) + row_offset, lane_col(q, g) + col_offset
            columns.append(((col // chunk) ^ (row // rows % count * multiplier)) * chunk + col % chunk)
        low = min(columns)
        shape = (swizzle, tuple(c - low for c in columns))
        if shape not in self.lane_bases:
            with self.before_loop:
                row = self.apply(lambda q, g: lane_row(q, g) + row_offset, self.lane_q, self.lane_g)
                col = self.apply(lambda q, g: lane_col(q, g) + col_offset, self.lane_q, self.lane_g)
                self.lane_bases[shape] = self.apply(lambda c: c - low, swizzled_column(swizzle, row, col))
        return self.apply(lambda base: base + low, self.lane_bases[shape])

    def mfma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return self.mi.form.product(a, b, c)

    def acc_index(self, first: ir.Value, j: int) -> ir.Value:
        """Row ``first + r`` of the accumulator's element ``j`` in this lane: ``r = acc g + j`` (MFMA,
        gfx12 WMMA), ``r = 2 j + g`` (gfx11 WMMA: the lane halves take alternate rows)."""
        if self.mi.replicated:
            groups = self.mi.groups
            return self.apply(lambda k, g: k + j * groups + g, first, self.lane_g)
        acc = self.mi.acc
        return self.apply(lambda k, g: k + g * acc + j, first, self.lane_g)

    def from_partner(self, value: ir.Value) -> ir.Value:
        """The vector ``value`` of lane ``l xor 16`` (the other half of a gfx11 wave), 32 bits per shuffle."""
        vector_type = ir.VectorType(value.type)
        i32 = ir.IntegerType.get_signless(32)
        words = vector_type.shape[0] * vector_type.element_type.width // 32
        packed = vector.bitcast(ir.VectorType.get([words], i32), value) if vector_type.element_type != i32 else value
        offset, width = arith.constant(i32, TILE), arith.constant(i32, self.mi.wave)
        received = [gpu.shuffle(vector.extract(packed, [], [w]), offset, width, gpu.ShuffleMode.XOR)[0]
                    for w in range(words)]
        received = vector.from_elements(packed.type, received)
        return received if received.type == value.type else vector.bitcast(value.type, received)

    def both_halves(self, mine: ir.Value, theirs: ir.Value, alternate: bool) -> ir.Value:
        """Lane half 0's values and half 1's, from this lane's and its partner's (the same vector in
        both lanes of the pair): alternately (half 0's first), or half 0's then half 1's."""
        first_half = arith.cmpi(arith.CmpIPredicate.eq, self.lane_g, index_const(0))
        even = arith.select(first_half, mine, theirs)
        odd = arith.select(first_half, theirs, mine)
        vector_type = ir.VectorType(mine.type)
        count = vector_type.shape[0]
        order = [(i % 2, i // 2) for i in range(2 * count)] if alternate else [(i // count, i % count) for i in range(2 * count)]
        values = [vector.extract(odd if half else even, [], [i]) for half, i in order]
        return vector.from_elements(ir.VectorType.get([2 * count], vector_type.element_type), values)

    def key_block(self, kt: int) -> ir.Value:
        """First key (in the tile) of this wave's ``kt``-th block of 16 keys."""
        return self.apply(lambda s: s * self.slice_keys + kt * TILE, self.slice)

    def row_of(self, rb: ir.Value) -> ir.Value:
        """The tile row of this lane in row block ``rb``: ``16 rb + q``."""
        return self.apply(lambda r, q: r * TILE + q, rb, self.lane_q)

    def across_groups(self, value: ir.Value, combine) -> ir.Value:
        """``combine`` of ``value`` over the lanes ``q + 16 g`` (the lanes holding one row: 4 in wave64,
        2 in wave32)."""
        i32 = ir.IntegerType.get_signless(32)
        width = arith.constant(i32, self.mi.wave)
        for offset in (TILE * 2 ** i for i in range(self.mi.groups.bit_length() - 1)):
            other, _ = gpu.shuffle(value, arith.constant(i32, offset), width, gpu.ShuffleMode.XOR)
            value = combine(value, other)
        return value

    # --- S^T = K Q^T, softmax -------------------------------------------------------------

    def data_row(self, rb: ir.Value) -> ir.Value:
        """Row ``16 rb + q`` of the tile, padding rows (past M) taken as row M - 1: they compute a copy
        of it (Q row, ALiBi slope, visibility, sink) that is never stored."""
        row = self.row_of(rb)
        if self.rows != self.plan.m:
            row = arith.minui(row, index_const(self.plan.m - 1))
        return row

    def query_fragments(self, rb: ir.Value) -> list[ir.Value]:
        """Row ``16 rb + q``'s Q fragments over D (rows past M read row M - 1)."""
        row = self.data_row(rb)
        return [self.fragment(self.b.q_rows, row, i, self.b.q_swizzle) for i in range(self.p.head_dim // self.mi.k)]

    def scores(self, rb: ir.Value, queries: list[ir.Value] | None) -> list[tuple[ir.Value, ir.Value]]:
        """Per 16-key block of the slice: (S^T accumulator, first key of the block); ``queries`` None:
        each Q fragment is read from LDS where it is used."""
        blocks = []
        for kt in range(self.slice_keys // TILE):
            first_key = self.key_block(kt)
            acc = self.zeros()
            for i, k_values in enumerate(self.key_fragments(first_key)):
                fragment = queries[i] if queries is not None else self.fragment(self.b.q_rows, self.data_row(rb), i, self.b.q_swizzle)
                acc = self.mfma(k_values, fragment, acc)
            blocks.append((acc, first_key))
        return blocks

    def softmax(self, t: ir.Value, rb: ir.Value, blocks, running_max: ir.Value, running_sum: ir.Value):
        """(P per key block as vector<acc x f32>, alpha, new max, new sum) of row ``16 rb + q`` over the slice."""
        f32 = self.f32
        row = self.data_row(rb)
        scores = []
        for acc, first_key in blocks:
            values = []
            for j in range(self.mi.acc):
                col = self.acc_index(first_key, j)
                values.append(self.b.finish_score(vector.extract(acc, [], [j]), t, row, col))
            scores.append(vector.from_elements(ir.VectorType.get([self.mi.acc], f32), values))
        local = running_max
        for s in scores:
            local = arith.maxnumf(local, vector.reduction(f32, vector.CombiningKind.MAXNUMF, s))
        new_max = self.across_groups(local, arith.maxnumf)
        nothing_seen = arith.cmpf(arith.CmpFPredicate.OEQ, new_max, self.const(-math.inf))
        safe_max = arith.select(nothing_seen, self.const(0.0), new_max)
        alpha = mlir_math.exp2(arith.subf(running_max, safe_max))
        probs = [mlir_math.exp2(arith.subf(s, vector.broadcast(s.type, safe_max))) for s in scores]
        total = self.const(0.0)
        for prob in probs:
            total = arith.addf(total, vector.reduction(f32, vector.CombiningKind.ADD, prob))
        new_sum = arith.addf(arith.mulf(running_sum, alpha), self.across_groups(total, arith.addf))
        return [(prob, first_key) for prob, (_, first_key) in zip(probs, blocks)], alpha, new_max, new_sum

    # --- O^T += V^T P^T ------------------------------------------------------------------

    def accumulate(self, t: ir.Value, rb: ir.Value, probs, alpha: ir.Value, outputs: list[ir.Value]) -> list[ir.Value]:
        outputs = [arith.mulf(acc, vector.broadcast(acc.type, alpha)) for acc in outputs]
        return self.on_boundary_tiles(t, rb, outputs, lambda hidden: self.pv_on_matrix_cores(probs, outputs, hidden))

    def on_boundary_tiles(self, t: ir.Value, rb: ir.Value, outputs: list[ir.Value], product) -> list[ir.Value]:
        """``product(hidden)`` of tile ``t``: with ``hidden = (t, rb)`` on a tile that hides keys from some row
        (the causal diagonal or the window's edge), else with None, the common path (an ``scf.if`` on the
        boundary when the loop has one). ``outputs``: the accumulators the product yields new values of."""
        boundaries = []
        if self.plan.causal:
            boundaries.append(self.causal_boundary(t))
        if self.plan.window is not None:
            boundaries.append(self.window_boundary(t))
        if not boundaries:
            return product(None)
        boundary = boundaries[0] if len(boundaries) == 1 else arith.ori(*boundaries)
        if_op = scf.IfOp(boundary, [acc.type for acc in outputs], has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            scf.YieldOp(product((t, rb)))
        with ir.InsertionPoint(if_op.else_block):
            scf.YieldOp(product(None))
        return list(if_op.results)

    def pv_on_matrix_cores(self, probs, outputs: list[ir.Value], hidden: tuple | None = None) -> list[ir.Value]:
        """O^T += V^T P^T. ``hidden`` = (t, rb): some keys of the tile are hidden from some rows
        (module docstring, causal masking)."""
        if self.transposed:
            return self.pv_from_transposed(probs, outputs, hidden)
        element = self.p.element
        outputs = list(outputs)
        for prob, first_key in probs:
            # Per step, each key's row ``first_key + lane part (q, g) + offset``.
            if isinstance(element, ir.F32Type):  # 16x16x4: MFMA i takes keys 4 g + i, the lane's element i
                rows = [[(lambda q, g: g * 4, i)] for i in range(4)]
                operands = [vector.extract(prob, [], [i]) for i in range(4)]
            elif self.mi.replicated:
                # gfx11: all 16 keys in every lane, the other half's from lane l xor 16. The sum over
                # keys takes them in any order: the even keys (half 0's), then the odd ones, in A too.
                rows = [[(lambda q, g: 0 * q, 2 * j + half) for half in (0, 1) for j in range(TILE // 2)]]
                mine = arith.truncf(ir.VectorType.get([self.mi.acc], element), prob)
                operands = [self.both_halves(mine, self.from_partner(mine), alternate=False)]
            else:
                rows = [[(lambda q, g: g * self.mi.acc, j) for j in range(self.mi.acc)]]
                operands = [arith.truncf(ir.VectorType.get([self.mi.acc], element), prob)]
            steps = [[self.apply(lambda k, q, g: k + lane(q, g) + offset, first_key, self.lane_q, self.lane_g)
                      for lane, offset in step] for step in rows]
            for keys, key_rows, operand in zip(steps, rows, operands):
                seen = self.seen_keys(hidden, keys) if hidden else None
                group_rows = []
                for dt in range(self.d_tiles):
                    if self.b.v_pool_transposed:
                        values = self.transposed_values(first_key, key_rows, dt)
                    elif self.group == 1:
                        values = [memref.load(self.b.v_tile, [key, self.v_column(key_row, dt)])
                                  for key, key_row in zip(keys, key_rows)]
                    else:
                        if dt % self.group == 0:  # this lane's columns of a group of d-tiles, per key: one read each
                            col = self.apply(lambda q: q * self.group + dt * TILE, self.lane_q)
                            group_rows = [vector.load(ir.VectorType.get([self.group], element), self.b.v_tile, [key, col])
                                          for key in keys]
                        values = [vector.extract(row, [], [dt % self.group]) for row in group_rows]
                    v_t = values[0] if len(values) == 1 else vector.from_elements(ir.VectorType.get([len(values)], element), values)
                    if seen is None:
                        outputs[dt] = self.mfma(v_t, operand, outputs[dt])
                    else:
                        outputs[dt] = self.mfma_with_hidden_keys(v_t, operand, seen, outputs[dt])
        return outputs

    def pv_from_transposed(self, probs, outputs: list[ir.Value], hidden: tuple | None) -> list[ir.Value]:
        """:meth:`pv_on_matrix_cores` with V^T in LDS: per d-tile, the lane's run of ``4 S`` keys of column
        ``16 dt + q`` in one read (16 bytes at most a piece), 4 of them into each block's MFMA."""
        element = self.p.element
        outputs = list(outputs)
        steps = []
        for prob, first_key in probs:
            keys = [self.acc_index(first_key, j) for j in range(self.mi.acc)]
            steps.append((arith.truncf(ir.VectorType.get([self.mi.acc], element), prob),
                          self.seen_keys(hidden, keys) if hidden else None))
        run = self.b.v_layout.run
        if self.lane_rows is None:  # once before the loop, for both arms of a masked tile
            with self.before_loop:  # run g xor (row div 2) mod 4, the same in rows q and 16 dt + q
                flip = self.apply(lambda q: ir.AffineExpr.get_floor_div(q, 2) % 4, self.lane_q)
                moved = arith.xori(self.lane_g, flip)
                first = self.apply(lambda s, g: s * self.slice_keys + g * run, self.slice, moved)
                # the lane's rows q, 16 + q, ... as a view from its first element: the d-tiles' reads are
                # then constant offsets from one address (LLVM folds them into the LDS instructions)
                rows = TILE * (self.d_tiles - 1) + 1
                self.lane_rows = memref.subview(self.b.v_tile, [self.lane_q, first], [rows, run], [1, 1])
        chunk = 16 // element_bytes(element)
        for dt in range(self.d_tiles):
            values = self.read_row(self.lane_rows, index_const(dt * TILE), run, index_const, chunk)
            for i, (operand, seen) in enumerate(steps):
                v_t = values if run == self.mi.acc else vector.extract_strided_slice(
                    ir.VectorType.get([self.mi.acc], element), values, [i * self.mi.acc], [self.mi.acc], [1])
                outputs[dt] = (self.mfma(v_t, operand, outputs[dt]) if seen is None
                               else self.mfma_with_hidden_keys(v_t, operand, seen, outputs[dt]))
        return outputs

    def transposed_values(self, first_key: ir.Value, key_rows: list, dt: int) -> list[ir.Value]:
        """The lane's values of column ``16 dt + q`` at keys ``first_key + lane part + offset`` (``key_rows``,
        one lane part, the offsets a run of consecutive keys in any order) from the V^T tile: one read of
        the run, its elements taken in the offsets' order."""
        lane, _ = key_rows[0]
        offsets = [offset for _, offset in key_rows]
        start = min(offsets)
        assert all(part.__code__ is lane.__code__ for part, _ in key_rows) and sorted(offsets) == list(
            range(start, start + len(offsets))), "the keys of a step are one run"
        column = self.apply(lambda q: q + dt * TILE, self.lane_q)
        if len(offsets) == 1:
            key = self.apply(lambda k, q, g: k + lane(q, g) + start, first_key, self.lane_q, self.lane_g)
            return [memref.load(self.b.v_tile, [column, swizzled_column(self.b.v_swizzle, column, key)])]
        chunk = min(len(offsets), self.b.v_swizzle[0])  # a read per swizzled chunk (gfx11: 16 keys, two chunks)
        run = []
        for piece in range(start, start + len(offsets), chunk):
            key = self.apply(lambda k, q, g: k + lane(q, g) + piece, first_key, self.lane_q, self.lane_g)
            read = vector.load(ir.VectorType.get([chunk], self.b.v_tile.type.element_type), self.b.v_tile,
                               [column, swizzled_column(self.b.v_swizzle, column, key)])
            run += [vector.extract(read, [], [i]) for i in range(chunk)]
        return [run[offset - start] for offset in offsets]

    def v_column(self, key_row: tuple, dt: int) -> ir.Value:
        """Where column ``16 dt + q`` of the key row ``first_key + lane part + offset`` (``key_row``) lies
        in the V tile (swizzled rows: :meth:`tile_column`)."""
        if self.b.v_swizzle is None:
            return self.apply(lambda q: q + dt * TILE, self.lane_q)
        lane, offset = key_row
        return self.tile_column(self.b.v_swizzle, lane, offset, lambda q, g: q, dt * TILE)

    def seen_keys(self, hidden: tuple, keys: list[ir.Value]) -> ir.Value:
        """1 where row ``16 rb + q`` sees key ``keys[j]`` (the B operand's shape), else 0."""
        t, rb = hidden
        position = self.b.causal_limit(t, self.data_row(rb))
        element = self.p.element
        one, zero = arith.constant(element, 1.0), arith.constant(element, 0.0)
        flags = []
        last = self.plan.keys.last_key(position)
        for key in keys:
            seen = arith.cmpi(arith.CmpIPredicate.sge, last, key) if last is not None else None
            if (first := self.plan.keys.first_key(position)) is not None:
                inside = arith.cmpi(arith.CmpIPredicate.sge, key, first)
                seen = inside if seen is None else arith.andi(seen, inside)
            flags.append(arith.select(seen, one, zero))
        return flags[0] if len(flags) == 1 else vector.from_elements(ir.VectorType.get([len(flags)], element), flags)

    def mfma_with_hidden_keys(self, v_t: ir.Value, probs: ir.Value, seen: ir.Value, acc: ir.Value) -> ir.Value:
        """``acc + V^T P^T`` where a key hidden from a row adds nothing to it, whatever its V holds: the
        product of V with its non-finite values replaced by 0 (exact: a hidden key has P = 0); for the
        outputs whose row sees a non-finite V value (counted by the product of the non-finite flags
        and the visibility), the product of V as it is, non-finite as the row's true result."""
        finite = arith.cmpf(arith.CmpFPredicate.OLT, mlir_math.absf(v_t), self.splat_like(v_t, math.inf))
        sanitized = arith.select(finite, v_t, self.splat_like(v_t, 0.0))
        flags = arith.select(finite, self.splat_like(v_t, 0.0), self.splat_like(v_t, 1.0))
        sees_non_finite = arith.cmpf(arith.CmpFPredicate.OGT, self.mfma(flags, seen, self.zeros()),
                                     vector.broadcast(acc.type, self.const(0.0)))
        return arith.select(sees_non_finite, self.mfma(v_t, probs, acc), self.mfma(sanitized, probs, acc))

    def splat_like(self, value: ir.Value, number: float) -> ir.Value:
        element = value.type.element_type if isinstance(value.type, ir.VectorType) else value.type
        constant = arith.constant(element, number)
        return vector.broadcast(value.type, constant) if isinstance(value.type, ir.VectorType) else constant

    def causal_boundary(self, t: ir.Value) -> ir.Value:
        """Whether some row of the block does not see some key of tile ``t`` before seq_len: the block's
        first query position i0 sees keys up to i0 + seq_len - Sq, the tile's last live key is
        min(t * N + N - 1, seq_len - 1)."""
        plan, p = self.plan, self.p
        last_key = arith.minui(self.apply(lambda tt: tt * plan.n + plan.n - 1, t),
                               arith.subi(self.b.seq_len, index_const(1)))
        first_position = query_position(self.apply(lambda qt: qt * plan.positions, self.b.qt), self.b.seq_len, p.seq_q)
        return arith.cmpi(arith.CmpIPredicate.sgt, last_key, first_position)

    def window_boundary(self, t: ir.Value) -> ir.Value:
        """Whether some row of the block does not see some key of tile ``t`` for its sliding window: the
        block's last query position sees keys from its position + seq_len - Sq - window_left on, and the
        tile starts at key t * N."""
        plan, p = self.plan, self.p
        last_row = self.apply(lambda qt: qt * plan.positions + plan.positions - 1, self.b.qt)
        start = plan.keys.window_first(query_position(last_row, self.b.seq_len, p.seq_q))
        return arith.cmpi(arith.CmpIPredicate.slt, self.apply(lambda tt: tt * plan.n, t), start)

    # --- after the loop ------------------------------------------------------------------

    def stored_rows(self, i: int) -> ir.Value | None:
        """Whether this lane's row of its ``i``-th row block is one to store: a real wave's, a real row
        block's, a row < M (None: always)."""
        conditions = [c for c in (self.stores, self.row_stored[i]) if c is not None]
        if self.rows != self.plan.m:
            conditions.append(arith.cmpi(arith.CmpIPredicate.ult, self.row_of(self.row_blocks[i]), index_const(self.plan.m)))
        condition = None
        for c in conditions:
            condition = c if condition is None else arith.andi(condition, c)
        return condition

    def contiguous_columns(self, results: list[ir.Value]) -> list[ir.Value]:
        """gfx11: a lane's accumulator holds its row's columns ``16 dt + 2 j + g``; after swapping half
        of them with lane ``l xor 16`` it holds columns ``16 dt + 8 g + j`` (half 0 keeps its first
        four, half 1 its last four, each takes the partner's others), as the other forms do."""
        per_block = self.d_tiles + 2
        first_half = arith.cmpi(arith.CmpIPredicate.eq, self.lane_g, index_const(0))
        half = ir.VectorType.get([self.mi.acc // 2], self.f32)
        results = list(results)
        for i in range(len(self.row_blocks)):
            for dt in range(self.d_tiles):
                acc = results[i * per_block + dt]
                low, high = (vector.extract_strided_slice(half, acc, [o], [self.mi.acc // 2], [1])
                             for o in (0, self.mi.acc // 2))
                kept, sent = arith.select(first_half, low, high), arith.select(first_half, high, low)
                results[i * per_block + dt] = self.both_halves(kept, self.from_partner(sent), alternate=True)
        return results

    def column_chunks(self, results: list[ir.Value]) -> list[ir.Value]:
        """Each row block's output accumulators regrouped into chunks of ``acc`` consecutive columns
        (module docstring, the V reads): accumulator ``dt``'s element ``j`` is column
        ``16 G (dt div G) + G (acc g + j) + dt mod G``, so a group of G accumulators holds the lane's
        ``G acc`` consecutive columns, and chunk ``c`` takes ``acc`` of them (no instruction: the
        values stay in their registers)."""
        group, acc, per_block = self.group, self.mi.acc, self.d_tiles + 2
        if group == 1:
            return results
        chunked = list(results)
        for i in range(len(self.row_blocks)):
            accs = results[i * per_block:i * per_block + self.d_tiles]
            for c in range(self.d_tiles):
                first, offset = c - c % group, (c % group) * acc
                values = [vector.extract(accs[first + o % group], [], [o // group]) for o in range(offset, offset + acc)]
                chunked[i * per_block + c] = vector.from_elements(accs[0].type, values)
        return chunked

    def chunk_column(self, c: int) -> ir.Value:
        """The first column of this lane's output chunk ``c`` (:meth:`column_chunks`)."""
        group, acc = self.group, self.mi.acc
        return self.apply(lambda g: g * group * acc + (c - c % group) * TILE + (c % group) * acc, self.lane_g)

    def in_place(self, results: list[ir.Value]) -> tuple[list[ir.Value], list]:
        """One slice: each lane's output chunks of its row (:meth:`chunk_column`)."""
        per_block = self.d_tiles + 2
        final, places = [], []
        for i, rb in enumerate(self.row_blocks):
            running_max, running_sum = results[i * per_block + self.d_tiles:(i + 1) * per_block]
            row, stored = self.data_row(rb), self.stored_rows(i)  # a padding row is not stored
            for c, acc in enumerate(results[i * per_block:i * per_block + self.d_tiles]):
                final += [acc, running_max, running_sum]
                places.append((row, self.chunk_column(c), stored))
        return final, places

    def merge_slices(self, results: list[ir.Value]) -> list[ir.Value]:
        """Slice 0's waves take in the other slices' (O, m, l), one slice per round through one LDS
        buffer (the output rows of the tile, padded by 4 floats: conflict-free 16-byte stores), as
        the split-KV combine merges splits: M = max(m_0, m_s), O = sum of exp2(m - M) O and l likewise
        over the two, a side that saw no key skipped by a select. Only slice 0 then stores."""
        plan, p, mi = self.plan, self.p, self.mi
        d = p.head_dim
        padded = self.lds_view([plan.m, d + EXCHANGE_PAD], self.f32)
        outputs_buffer = memref.subview(padded, [0, 0], [plan.m, d], [1, 1])
        stats = self.lds_view([2, plan.m], self.f32)
        (rb,) = self.row_blocks  # several slices: one row block per wave
        row = self.row_of(rb)
        inside = self.stored_rows(0)
        cols = [self.chunk_column(c) for c in range(self.d_tiles)]
        merged = list(results)
        for s in range(1, mi.slices):
            merged = self.take_slice(s, merged, row, cols, inside, outputs_buffer, stats, self.lane_g)
        return merged

    def take_slice(self, s: int, merged: list[ir.Value], row: ir.Value, cols: list[ir.Value], inside: ir.Value | None,
                   outputs_buffer: ir.Value, stats: ir.Value, stats_lane: ir.Value) -> list[ir.Value]:
        """One round of :meth:`merge_slices` for one row: slice ``s`` stores its (O chunks at ``cols``, m, l) of
        ``row`` (``m``, ``l``: the last two of ``merged``; only its lanes with ``stats_lane`` 0 store them, the
        lanes of a row holding the same statistics), slice 0 loads and merges them; ``inside``: the row is stored."""
        rock.lds_barrier()  # the previous round's reads are done
        sender = arith.cmpi(arith.CmpIPredicate.eq, self.slice, index_const(s))
        send = scf.IfOp(sender if inside is None else arith.andi(sender, inside))
        with ir.InsertionPoint(send.then_block):
            for c, col in enumerate(cols):
                vector.store(merged[c], outputs_buffer, [row, col])
            first_lane = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, stats_lane, index_const(0)))
            with ir.InsertionPoint(first_lane.then_block):
                memref.store(merged[-2], stats, [index_const(0), row])
                memref.store(merged[-1], stats, [index_const(1), row])
                scf.YieldOp([])
            scf.YieldOp([])
        rock.lds_barrier()
        receiver = arith.cmpi(arith.CmpIPredicate.eq, self.slice, index_const(0))
        take = scf.IfOp(receiver if inside is None else arith.andi(receiver, inside), [v.type for v in merged],
                        has_else=True)
        with ir.InsertionPoint(take.then_block):
            other = [vector.load(merged[c].type, outputs_buffer, [row, col]) for c, col in enumerate(cols)]
            other += [memref.load(stats, [index_const(0), row]), memref.load(stats, [index_const(1), row])]
            scf.YieldOp(self.merged(merged, other))
        with ir.InsertionPoint(take.else_block):
            scf.YieldOp(merged)
        return list(take.results)

    def merged(self, mine: list[ir.Value], other: list[ir.Value]) -> list[ir.Value]:
        """(O, m, l) of two slices together."""
        m_a, l_a, m_b, l_b = mine[-2], mine[-1], other[-2], other[-1]
        new_max = arith.maxnumf(m_a, m_b)
        nothing_seen = arith.cmpf(arith.CmpFPredicate.OEQ, new_max, self.const(-math.inf))
        safe_max = arith.select(nothing_seen, self.const(0.0), new_max)
        outputs = [vector.broadcast(acc.type, self.const(0.0)) for acc in mine[:-2]]
        total = self.const(0.0)
        for m_s, l_s, accs in ((m_a, l_a, mine[:-2]), (m_b, l_b, other[:-2])):
            weight = mlir_math.exp2(arith.subf(m_s, safe_max))
            seen = arith.cmpf(arith.CmpFPredicate.UNE, m_s, self.const(-math.inf))
            outputs = [arith.select(seen, vector.fma(vector.broadcast(acc.type, weight), acc, out), out)
                       for acc, out in zip(accs, outputs)]
            total = arith.select(seen, mlir_math.fma(weight, l_s, total), total)
        return outputs + [new_max, total]
