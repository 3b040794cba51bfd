"""The flash-attention loop on the VALU, for rock-gridwise-attention-to-blockwise: chips and types
without a matrix form (gfx908, gfx1030, fp8 K/V, f32 on RDNA), in vector FMAs of f32 registers.

The loop body of the pass's pseudo-code (its module docstring), per KV tile: K tile, the
scores into an LDS tile, a barrier, V tile, the online-softmax update of each output chunk, a
barrier. The tile loads, the scores' variants and masks (scale, soft-cap, ALiBi, causal, window)
and the output chunks' places are the pass's Builder's (``self.b``), shared with the matrix loop
(:class:`pagedir.passes.blockwise_gemm.MatrixLoop`).

Threads. Scores: thread ``tid`` computes elements ``tid + k * block_size`` of the
``M x N`` score tile (row-major). Output: the ``M x D`` result is cut into chunks
of ``VO`` consecutive columns; thread ``tid`` owns chunks ``tid + k * block_size``
and keeps their accumulators (``vector<VO x f32>``) and their row's running max
and sum in registers across the KV loop. The row statistics are recomputed by
every thread owning a chunk of the row: cheaper than another LDS round trip and
barrier. Threads past the last element work on a clamped index and do not store.
"""

from __future__ import annotations

import math

import mlir.ir as ir
from mlir.dialects import arith, memref, scf, vector
from mlir.dialects import math as mlir_math

from pagedir.dialect import rock
from pagedir.passes.ir_utils import apply, f32_const, index_const, splat, to_f32

#: Scores read per LDS vector load in the output phase.
SCORE_VECTOR = 4


class ValuLoop:
    """Emits the KV loop for one gridwise op (``builder``: the pass's Builder)."""

    def __init__(self, builder):
        self.b = builder
        self.plan = builder.plan
        self.f32 = ir.F32Type.get()

    def run(self, first: ir.Value | None, end: ir.Value) -> list[ir.Value]:
        """The loop over tiles ``[first, end)`` (first None: from 0); returns per output chunk of this
        thread (:meth:`Builder.chunk_position`) its (acc, running max, running sum)."""
        plan = self.plan
        per_thread = math.ceil(plan.chunks / plan.block)
        init = []
        for _ in range(per_thread):
            init += [splat(f32_const(0.0), plan.chunk), f32_const(-math.inf), f32_const(0.0)]
        loop = scf.ForOp(index_const(0) if first is None else first, end, index_const(1), init)
        with ir.InsertionPoint(loop.body):
            t = loop.induction_variable
            carried = list(loop.inner_iter_args)
            self.b.load_kv(self.b.op.k, self.b.k_tile, t)
            if self.b.k_scale_tile is not None:
                self.b.load_scales(self.b.op.k_scales, self.b.k_scale_tile, t)
            self.compute_scores(t)
            rock.lds_barrier()
            self.b.load_kv(self.b.op.v, self.b.v_tile, t)
            if self.b.v_scale_tile is not None:
                self.b.load_scales(self.b.op.v_scales, self.b.v_scale_tile, t)
            updated = []
            for k in range(per_thread):
                acc, running_max, running_sum = carried[3 * k : 3 * k + 3]
                updated += self.accumulate(k, t, acc, running_max, running_sum)
            rock.lds_barrier()
            scf.YieldOp(updated)
        return list(loop.results)

    def compute_scores(self, t: ir.Value) -> None:
        """The tile's ``M x N`` base-2 scores into the LDS score tile, element ``tid + k * block_size``
        by thread ``tid``."""
        plan, p = self.plan, self.plan.p
        total = plan.m * plan.n
        width = p.vector_len
        for k in range(math.ceil(total / plan.block)):
            element, element_in, guarded = self.b.thread_item(k, total)
            row = apply(lambda e: ir.AffineExpr.get_floor_div(e, plan.n), element_in)
            col = apply(lambda e: e % plan.n, element_in)
            dot = splat(f32_const(0.0), width)
            for d0 in range(0, p.head_dim, width):
                vec_type = ir.VectorType.get([width], p.element)
                q = to_f32(vector.load(vec_type, self.b.q_rows, [row, index_const(d0)]))
                key_type = ir.VectorType.get([width], p.kv_type)
                key = to_f32(vector.load(key_type, self.b.k_tile, [col, index_const(d0)]))
                dot = vector.fma(q, key, dot)
            score = self.b.finish_score(vector.reduction(self.f32, vector.CombiningKind.ADD, dot), t, row, col)
            if guarded:
                inside = arith.cmpi(arith.CmpIPredicate.ult, element, index_const(total))
                if_op = scf.IfOp(inside)
                with ir.InsertionPoint(if_op.then_block):
                    memref.store(score, self.b.scores, [row, col])
                    scf.YieldOp([])
            else:
                memref.store(score, self.b.scores, [row, col])

    def accumulate(self, k: int, t: ir.Value, acc: ir.Value, running_max: ir.Value, running_sum: ir.Value) -> list[ir.Value]:
        """The online-softmax update of this thread's ``k``-th output chunk by tile ``t``."""
        plan, p = self.plan, self.plan.p
        _, _, row, col = self.b.chunk_position(k)
        position = self.b.causal_limit(t, row) if plan.keys.hides_keys else None
        last = plan.keys.last_key(position)
        first = plan.keys.first_key(position)
        width = math.gcd(plan.n, SCORE_VECTOR)
        score_type = ir.VectorType.get([width], self.f32)
        scores = [vector.load(score_type, self.b.scores, [row, index_const(n0)]) for n0 in range(0, plan.n, width)]
        tile_max = running_max
        for s in scores:
            tile_max = arith.maxnumf(tile_max, vector.reduction(self.f32, vector.CombiningKind.MAXNUMF, s))
        new_max = tile_max
        nothing_seen = arith.cmpf(arith.CmpFPredicate.OEQ, new_max, f32_const(-math.inf))
        safe_max = arith.select(nothing_seen, f32_const(0.0), new_max)
        alpha = mlir_math.exp2(arith.subf(running_max, safe_max))
        probs = [mlir_math.exp2(arith.subf(s, splat(safe_max, width))) for s in scores]
        new_sum = arith.mulf(running_sum, alpha)
        for prob in probs:
            new_sum = arith.addf(new_sum, vector.reduction(self.f32, vector.CombiningKind.ADD, prob))
        acc = arith.mulf(acc, splat(alpha, plan.chunk))
        value_type = ir.VectorType.get([plan.chunk], p.kv_type)
        if self.b.v_scale_tile is not None:  # V[n] = v[n] * v_scales[n] weights key n's row: p_n * v_scales[n]
            probs = [arith.mulf(prob, vector.load(score_type, self.b.v_scale_tile, [index_const(n0)]))
                     for prob, n0 in zip(probs, range(0, plan.n, width))]
        for n in range(plan.n):
            prob = vector.extract(probs[n // width], [], [n % width])
            values = to_f32(vector.load(value_type, self.b.v_tile, [index_const(n), col]))
            updated = vector.fma(splat(prob, plan.chunk), values, acc)
            if last is not None:
                # A key hidden by causality is a later query's live key: its probability is 0, but
                # 0 * V is NaN when V holds NaN or Inf, so the key is skipped, not weighted by 0.
                # Keys past seq_len need no such care: their tile slots were never read (they hold 0).
                updated = arith.select(arith.cmpi(arith.CmpIPredicate.sge, last, index_const(n)), updated, acc)
            if first is not None:  # keys before the window are live keys too: skipped the same way
                updated = arith.select(arith.cmpi(arith.CmpIPredicate.sle, first, index_const(n)), updated, acc)
            acc = updated
        return [acc, new_max, new_sum]
