"""The split-KV kernels' IR, for rock-gridwise-attention-to-blockwise: the workspace argument and
its views, and the combine kernel that merges the splits.

The split kernel (the pass's loop, each workgroup one split of a KV range) writes its rows'
normalized partial outputs and log-sum-exps to an f32 workspace appended to its arguments;
the layout (offsets, sizes, the combine's grid) is :mod:`pagedir.backend.split_kv`'s, which
the launch plan and the interpreter's launch read too. Here ``plan`` is the pass's ``Plan``
(the sizes of one workgroup's work: ``p``, ``splits``, ``rows``, ``sized_at_launch``).

The workspace's type. With sizes known at compile time it is ``memref<S * R * (D + 1) x f32>``
and ``rock.workspace_bytes`` states it. With ``num_splits`` 0 (dynamic sizes: the count chosen at
launch) it is ``memref<? x ? x f32>``, ``[S, R * (D + 1)]`` with the same layout: both kernels
read S and R from its sizes, the split kernel's ``rock.grid_map`` is multiplied by a symbol, the
workspace's dim 0, and the combine's grid is a map of its dim 1; the divisions by S are 32-bit.
A fixed count S > 1 with dynamic sizes (batch or capacity ``?``) takes the same path with a
static dim 0, ``memref<S x ? x f32>``: the kernels read the same sizes (dim 0 folds to S), the
grid map is multiplied by S itself (an affine map of the batch), and a runtime passes one size,
dim 1.

The combine. A second kernel, ``@<kernel>_combine`` (same arguments; ``rock.combine`` on the
first names it), merges the splits: per
row ``M = max_s lse_s``, ``w_s = exp2(lse_s - M)``, ``out = sum_s w_s o_s / sum_s
w_s`` with splits of ``-inf`` skipped (a select, not a weight of 0) and a row no
split saw giving 0 (a NaN, from a NaN key some row sees, reaches that row as it would
in one kernel). The combine is a kernel of its own, launched after the splits,
rather than done by the last split through an atomic counter: it needs no counter
to zero before each launch, no atomics or memory fences between workgroups, and it
sums the splits in a fixed order (the same bits on every run); its cost is one more
launch and a read of the partials, ``S * R * (D + 1) * 4`` bytes. With sinks the row's
sink joins the denominator here, once; with packed queries (``rock.varlen_view``) the
workspace keeps the padded rows and the combine merges and stores only the present ones.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import mlir.ir as ir
from mlir.dialects import arith, memref, scf, vector
from mlir.dialects import func as func_dialect
from mlir.dialects import math as mlir_math

from pagedir.backend import split_kv
from pagedir.backend.split_kv import COMBINE_BLOCK, COMBINE_CHUNK
from pagedir.dialect import rock
from pagedir.passes.ir_utils import apply, divided, f32_const, index_const, splat
from pagedir.variants import Variant


def add_workspace_argument(func: ir.Operation, plan, location: ir.Location) -> ir.Value:
    """Append the split kernel's f32 workspace to ``func``'s arguments and state its size
    (``memref<S * R * (D + 1) x f32>``, ``rock.workspace_bytes``); with the split count chosen at launch (``plan.splits`` 0) it is ``memref<? x ? x f32>``: dim 0 the split
    count S, dim 1 one split's elements ``R * (D + 1)`` (the layout is the same, row-major); a fixed
    count with dynamic sizes, ``memref<S x ? x f32>``."""
    dynamic = ir.ShapedType.get_dynamic_size()
    shape = [plan.splits or dynamic, dynamic] if plan.sized_at_launch else [plan.workspace_elements]
    workspace_type = ir.MemRefType.get(shape, ir.F32Type.get())
    workspace = func.regions[0].blocks[0].add_argument(workspace_type, location)
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(list(function_type.inputs) + [workspace_type], list(function_type.results)))
    if "arg_attrs" in func.attributes:  # one dictionary per argument: the workspace gets an empty one
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(list(ir.ArrayAttr(func.attributes["arg_attrs"])) + [ir.DictAttr.get({})])
    i64 = ir.IntegerType.get_signless(64)
    if workspace_type.has_static_shape:  # else a formula of the split count and the batch (the launch plan)
        func.attributes["rock.workspace_bytes"] = ir.IntegerAttr.get(i64, plan.workspace_elements * split_kv.F32_BYTES)
    func.attributes["rock.combine"] = ir.StringAttr.get(combine_name(func))
    if plan.splits == 0 and "rock.grid_map" in func.attributes:  # the grid times S, the workspace's dim 0
        grid_map = ir.AffineMapAttr(func.attributes["rock.grid_map"]).value
        split_count = ir.AffineSymbolExpr.get(grid_map.n_symbols)
        func.attributes["rock.grid_map"] = ir.AffineMapAttr.get(
            ir.AffineMap.get(grid_map.n_dims, grid_map.n_symbols + 1, [grid_map.results[0] * split_count]))
        func.attributes["rock.grid_sizes"] = ir.DenseI64ArrayAttr.get(
            list(ir.DenseI64ArrayAttr(func.attributes["rock.grid_sizes"])) + [len(function_type.inputs), 0])
    elif plan.splits > 1 and "rock.grid_map" in func.attributes:  # a fixed count: the grid times S, an affine map
        grid_map = ir.AffineMapAttr(func.attributes["rock.grid_map"]).value
        func.attributes["rock.grid_map"] = ir.AffineMapAttr.get(
            ir.AffineMap.get(grid_map.n_dims, grid_map.n_symbols, [grid_map.results[0] * plan.splits]))
    return workspace


def combine_name(func: ir.Operation) -> str:
    return ir.StringAttr(func.attributes["sym_name"]).value + "_combine"


def workspace_parts(workspace: ir.Value, plan) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(the workspace as one f32 vector, the split count S, the output rows R): constants, or with the
    split count chosen at launch the sizes of ``memref<S x (R * (D + 1)) x f32>`` and a 1-D view of it."""
    if not plan.sized_at_launch:
        return workspace, index_const(plan.splits), index_const(plan.rows)
    splits = memref.dim(workspace, index_const(0))
    per_split = memref.dim(workspace, index_const(1))
    rows = apply(lambda e: split_kv.rows_of(e, plan.p.head_dim), per_split)
    dynamic = ir.ShapedType.get_dynamic_size()
    flat_type = ir.MemRefType.get([dynamic], ir.F32Type.get())
    flat = memref.reinterpret_cast(flat_type, workspace, [], [arith.muli(splits, per_split)], [],
                                   static_offsets=[0], static_sizes=[dynamic], static_strides=[1])
    return flat, splits, rows


def workspace_lse_base(splits: ir.Value, rows: ir.Value, plan) -> ir.Value | int:
    """Where the LSEs start in the workspace: after the ``S * R * D`` partial outputs (an int when static)."""
    if not plan.sized_at_launch:
        return split_kv.lse_base(plan.splits, plan.rows, plan.p.head_dim)
    return arith.muli(arith.muli(splits, rows), index_const(plan.p.head_dim))


def build_combine_kernel(split_func: ir.Operation, plan, out_type: ir.MemRefType, location: ir.Location,
                         joined: Sequence[Variant] = (), packed_arguments: list[int] | None = None) -> None:
    """``@<kernel>_combine``, right after the split kernel, with its arguments: thread ``i`` merges
    columns ``[c, c + COMBINE_CHUNK)`` of one output row over the splits (module docstring).
    The variants acting in the epilogue (``joined``: sinks, their operands as argument numbers) act here, once.
    Packed queries (``packed_arguments``: cu_seqlens_q and the packed out): the workspace keeps
    the padded rows; a row present in its sequence is merged and stored to its packed row, an
    absent one reads and writes nothing (the splits did not write it)."""
    p = plan.p
    block = COMBINE_BLOCK
    function_type = ir.FunctionType(ir.TypeAttr(split_func.attributes["function_type"]).value)
    i64 = ir.IntegerType.get_signless(64)
    with location, ir.InsertionPoint.after(split_func):
        combine = func_dialect.FuncOp(combine_name(split_func), function_type)
    combine.attributes["rock.kernel"] = ir.UnitAttr.get()
    for name in ("rock.arch", "arg_attrs"):
        if name in split_func.attributes:
            combine.attributes[name] = split_func.attributes[name]
    combine.attributes["rock.block_size"] = ir.IntegerAttr.get(i64, block)
    if not plan.sized_at_launch:
        combine.attributes["rock.grid_size"] = ir.IntegerAttr.get(i64, split_kv.combine_workgroups(plan.rows, p.head_dim))
    else:  # its rows R from the workspace's dim 1, R * (D + 1)
        rows = split_kv.rows_of(ir.AffineDimExpr.get(0), p.head_dim)
        combine.attributes["rock.grid_map"] = ir.AffineMapAttr.get(
            ir.AffineMap.get(1, 0, [split_kv.combine_workgroups(rows, p.head_dim)]))
        combine.attributes["rock.grid_sizes"] = ir.DenseI64ArrayAttr.get([len(function_type.inputs) - 1, 1])
    entry = combine.add_entry_block()
    args = list(entry.arguments)
    out, workspace = args[-2], args[-1]
    f32 = ir.F32Type.get()
    index = ir.IndexType.get()
    chunk_type = ir.VectorType.get([COMBINE_CHUNK], f32)
    with location, ir.InsertionPoint(entry):
        workspace, splits, rows = workspace_parts(workspace, plan)
        lse_base = workspace_lse_base(splits, rows, plan)
        wg, tid = rock.workgroup_id(index), rock.workitem_id(index)
        item = apply(lambda w, t: w * block + t, wg, tid)
        per_row = p.head_dim // COMBINE_CHUNK
        items = arith.muli(rows, index_const(per_row))
        inside = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, item, items))
        with ir.InsertionPoint(inside.then_block):
            row = apply(lambda i: ir.AffineExpr.get_floor_div(i, per_row), item)
            col = apply(lambda i: (i % per_row) * COMBINE_CHUNK, item)
            b = apply(lambda r: ir.AffineExpr.get_floor_div(r, p.heads_q * p.seq_q), row)
            head = apply(lambda r: ir.AffineExpr.get_floor_div(r, p.seq_q) % p.heads_q, row)
            position = apply(lambda r: r % p.seq_q, row)
            out_ref, out_indices, guard = out, [b, head, position, col], None
            if packed_arguments is not None:  # merge only a present row, inside this guard
                present, out_ref, out_indices = packed_output_place(args[packed_arguments[0]], args[packed_arguments[1]],
                                                                    p.seq_q, b, head, position, col)
                guard = scf.IfOp(present)
            with ir.InsertionPoint(guard.then_block) if guard is not None else contextlib.nullcontext():
                # M = max_s lse_s (-inf when no split saw a key)
                loop = scf.ForOp(index_const(0), splits, index_const(1), [f32_const(-math.inf)])
                with ir.InsertionPoint(loop.body):
                    lse = memref.load(workspace, [lse_index(plan, lse_base, loop.induction_variable, rows, row)])
                    scf.YieldOp([arith.maxnumf(loop.inner_iter_args[0], lse)])
                lse_max = loop.results[0]
                nothing_seen = arith.cmpf(arith.CmpFPredicate.OEQ, lse_max, f32_const(-math.inf))
                safe_max = arith.select(nothing_seen, f32_const(0.0), lse_max)
                loop = scf.ForOp(index_const(0), splits, index_const(1),
                                 [splat(f32_const(0.0), COMBINE_CHUNK), f32_const(0.0)])
                with ir.InsertionPoint(loop.body):
                    s = loop.induction_variable
                    acc, weights = loop.inner_iter_args
                    lse = memref.load(workspace, [lse_index(plan, lse_base, s, rows, row)])
                    # NaN (a split that saw a NaN key) counts as seen: it reaches the row, as in one kernel.
                    seen = arith.cmpf(arith.CmpFPredicate.UNE, lse, f32_const(-math.inf))
                    weight = mlir_math.exp2(arith.subf(lse, safe_max))
                    if not plan.sized_at_launch:
                        at = apply(lambda s, r, c: split_kv.partial_at(s, plan.rows, r, p.head_dim, c), s, row, col)
                    else:
                        at = apply(lambda r, c: r * p.head_dim + c, arith.addi(arith.muli(s, rows), row), col)
                    partial = vector.load(chunk_type, workspace, [at])
                    # A split that saw no key is skipped, not weighted by 0: its partial is never needed.
                    scf.YieldOp([arith.select(seen, vector.fma(splat(weight, COMBINE_CHUNK), partial, acc), acc),
                                 arith.select(seen, arith.addf(weights, weight), weights)])
                acc, weights = loop.results
                for variant in joined:  # weights are relative to exp2(safe_max), like a running sum
                    acc, weights = variant.join(acc, safe_max, weights, RowOf(head, args))
                result = divided(acc, weights, arith.cmpf(arith.CmpFPredicate.OGT, weights, f32_const(0.0)))
                if not isinstance(p.element, ir.F32Type):
                    result = arith.truncf(ir.VectorType.get([COMBINE_CHUNK], p.element), result)
                vector.store(result, out_ref, out_indices)
                if guard is not None:
                    scf.YieldOp([])
            scf.YieldOp([])
        func_dialect.ReturnOp([])


@dataclass
class RowOf:
    """An output row of query head ``head`` in the epilogue (or the combine), for the variants' :meth:`join`;
    ``arguments``: the kernel's arguments, where the variant's operands are their numbers (the combine)."""

    head: ir.Value
    arguments: list | None = None

    def head_value(self, operand: ir.Value | int) -> ir.Value:
        return memref.load(operand if self.arguments is None else self.arguments[operand], [self.head])


def lse_index(plan, lse_base: ir.Value | int, split: ir.Value, rows: ir.Value, row: ir.Value) -> ir.Value:
    """The workspace slot of split ``split``'s log-sum-exp of ``row``."""
    if not plan.sized_at_launch:
        return apply(lambda s, r: split_kv.lse_at(lse_base, s, plan.rows, r), split, row)
    return arith.addi(lse_base, arith.addi(arith.muli(split, rows), row))


def offset(base: ir.Value | int, index: ir.Value) -> ir.Value:
    """``base + index``: an affine map for a constant base, else an addition."""
    return apply(lambda i: base + i, index) if isinstance(base, int) else arith.addi(base, index)


def packed_output_place(cu_seqlens: ir.Value, packed_out: ir.Value, seq_q: int, b: ir.Value, head: ir.Value,
                        position: ir.Value, col: ir.Value) -> tuple[ir.Value, ir.Value, list[ir.Value]]:
    """(present, packed out, its indices) of padded position ``position`` of sequence ``b``: right-aligned
    as rock.varlen_view presents it, row ``cu[b + 1] - Sq + position``, present when ``position >= Sq -
    (cu[b + 1] - cu[b])``."""
    index = ir.IndexType.get()
    first = arith.index_cast(index, memref.load(cu_seqlens, [b]))
    end = arith.index_cast(index, memref.load(cu_seqlens, [apply(lambda x: x + 1, b)]))
    padding = apply(lambda f, e: seq_q - (e - f), first, end)
    present = arith.cmpi(arith.CmpIPredicate.uge, position, padding)
    return present, packed_out, [apply(lambda e, i: e - seq_q + i, end, position), head, col]
