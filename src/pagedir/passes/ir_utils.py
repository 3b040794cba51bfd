"""IR helpers shared by the passes: finding ops, building index values, affine-linear forms.

Pass modules import these from here and never from each other, so each pass file
reads top to bottom as its own algorithm (tests/unit/test_pass_imports.py holds
that rule). Helpers about one op of the rock dialect live with its definition in
``pagedir.dialect`` instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mlir.ir as ir
import numpy as np
from mlir.dialects import affine, arith, memref, vector

from pagedir.arch import kernel_chip_or_none
from pagedir.dialect.types import strides_and_offset
from pagedir.page_sources.base import index_const  # noqa: F401 (the passes' helper, defined with the page sources)
from pagedir.passes.base import kernel_functions
from pagedir.targets import FAMILIES
from pagedir.variants import LOG2_E  # noqa: F401 (the kernels' base-2 scores: declared with the variants)

if TYPE_CHECKING:
    from pagedir.arch import Chip

# ----------------------------------------------------------------------------
# Finding ops.


def find_ops(root: ir.Operation, *names: str) -> list[ir.Operation]:
    """Every op named one of ``names`` in ``root`` (``root`` included), in post-order (an op
    after the ops nested in it).

    The list is collected before the caller rewrites anything, so erasing or
    replacing the ops found is safe.
    """
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


# ----------------------------------------------------------------------------
# Building index values (at the current insertion point and location).


def pow2_ceil(x: int) -> int:
    """The least power of two >= ``x`` (1 for ``x <= 1``)."""
    return 1 << max(0, (x - 1).bit_length())


def thread_item(round_: ir.Value, tid: ir.Value, block_size: int) -> ir.Value:
    """``round * block_size + tid``: the item thread ``tid`` handles in a round when the block's
    threads take consecutive items (page slots, tile vectors)."""
    strided = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0) * block_size + ir.AffineDimExpr.get(1)])
    return affine.apply(strided, [round_, tid])


def vector_coords(vector_index: ir.Value, tile_shape: list[int], vector_dim: int, vector_len: int) -> list[ir.Value]:
    """Tile coordinates of the first point of vector ``vector_index`` (row-major vector grid)."""
    grid = list(tile_shape)
    grid[vector_dim] //= vector_len
    coords, stride = [], 1
    for j in reversed(range(len(grid))):
        expr = ir.AffineExpr.get_floor_div(ir.AffineDimExpr.get(0), stride) if stride > 1 else ir.AffineDimExpr.get(0)
        if j > 0:
            expr = expr % grid[j]
        if j == vector_dim and vector_len > 1:
            expr = expr * vector_len
        coords.append(affine.apply(ir.AffineMap.get(1, 0, [expr]), [vector_index]))
        stride *= grid[j]
    return coords[::-1]


# ----------------------------------------------------------------------------
# Affine-linear forms: a tile map's position as origin(indices) + sum_j c_j * x_j.


class NotLinear(Exception):
    """The map is not affine-linear in the tile coordinates."""


@dataclass
class LinearForm:
    """``const + sum(mult * index_expr) + sum(tile_coeffs[j] * x_j)``."""

    tile_coeffs: list[int]
    index_terms: list[tuple[int, ir.AffineExpr]]
    const: int

    def scaled(self, factor: int) -> LinearForm:
        return LinearForm(
            [c * factor for c in self.tile_coeffs], [(m * factor, e) for m, e in self.index_terms], self.const * factor
        )

    def plus(self, other: LinearForm) -> LinearForm:
        coeffs = [a + b for a, b in zip(self.tile_coeffs, other.tile_coeffs)]
        return LinearForm(coeffs, self.index_terms + other.index_terms, self.const + other.const)


def dims_of(expr: ir.AffineExpr) -> set[int]:
    """Positions of the dimensions ``expr`` uses."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position}
    if isinstance(expr, ir.AffineBinaryExpr):
        return dims_of(expr.lhs) | dims_of(expr.rhs)
    return set()


def linear_form(expr: ir.AffineExpr, num_indices: int, tile_rank: int) -> LinearForm:
    """Split ``expr`` over (indices..., tile coords...) into a :class:`LinearForm` or raise NotLinear."""
    zero = [0] * tile_rank
    if isinstance(expr, ir.AffineConstantExpr):
        return LinearForm(zero, [], expr.value)
    if isinstance(expr, ir.AffineDimExpr):
        if expr.position < num_indices:
            return LinearForm(zero, [(1, expr)], 0)
        coeffs = list(zero)
        coeffs[expr.position - num_indices] = 1
        return LinearForm(coeffs, [], 0)
    if isinstance(expr, ir.AffineAddExpr):
        return linear_form(expr.lhs, num_indices, tile_rank).plus(linear_form(expr.rhs, num_indices, tile_rank))
    if isinstance(expr, ir.AffineMulExpr):
        for factor, other in ((expr.rhs, expr.lhs), (expr.lhs, expr.rhs)):
            if isinstance(factor, ir.AffineConstantExpr):
                return linear_form(other, num_indices, tile_rank).scaled(factor.value)
    if not any(d >= num_indices for d in dims_of(expr)):
        return LinearForm(zero, [(1, expr)], 0)  # any function of the indices alone: an opaque term
    raise NotLinear(str(expr))


# ----------------------------------------------------------------------------
# Program order.


class ProgramOrder:
    """Pre-order position of every op nested in ``root`` (``root`` itself has none), and the last
    position inside each op: that of its last nested op, its own when it holds none (-1 for a
    ``root`` holding nothing). ``contains(outer, inner)``: ``inner`` is ``outer`` or nested in it.

    Two walks of the bindings number the ops. The pre-order walk gives the positions. In the
    post-order walk the op visited just before ``op`` is its last child when ``op`` has any (it
    comes later in pre-order) and the last child's last position is ``op``'s; otherwise it came
    earlier in pre-order and ``op`` holds nothing.
    """

    def __init__(self, root: ir.Operation):
        self.position: dict[ir.Operation, int] = {}
        self.last_inside: dict[ir.Operation, int] = {}
        position, last_inside = self.position, self.last_inside
        advance = ir.WalkResult.ADVANCE
        is_root = True

        def number(op: ir.Operation) -> ir.WalkResult:
            nonlocal is_root
            if is_root:
                is_root = False
            else:
                position[op] = len(position)
            return advance

        previous: list[ir.Operation] = []  # the op the post-order walk visited last

        def close(op: ir.Operation) -> ir.WalkResult:
            here = position.get(op, -1)
            if previous and position[previous[0]] > here:
                last_inside[op] = last_inside[previous[0]]
            else:
                last_inside[op] = here
            previous[:] = [op]
            return advance

        root.walk(number, ir.WalkOrder.PRE_ORDER)
        root.walk(close, ir.WalkOrder.POST_ORDER)

    def contains(self, outer: ir.Operation, inner: ir.Operation) -> bool:
        return self.position.get(outer, -1) <= self.position[inner] <= self.last_inside[outer]


def enclosing_function(op: ir.Operation) -> ir.Operation:
    """The ``func.func`` around ``op``."""
    while op.name != "func.func":
        op = op.parent
    return op


def lower_kernel_ops(module: ir.Operation, arch: str, op_name: str, lower: Callable[[ir.OpView, Chip], bool]) -> bool:
    """``lower(op, chip)`` on every ``op_name`` op of each kernel function, with the kernel's chip
    (:func:`pagedir.arch.kernel_chip`: a kernel without one is an error there and keeps its ops).
    False when any kernel or op failed."""
    ok = True
    for func in kernel_functions(module):
        chip = kernel_chip_or_none(func, arch)
        if chip is None:
            ok = False
            continue
        for op in find_ops(func, op_name):
            ok = lower(op.opview, chip) and ok
    return ok


def apply(expr, *values: ir.Value) -> ir.Value:
    """``affine.apply`` of ``expr(d0, d1, ...)`` to ``values``."""
    dims = [ir.AffineDimExpr.get(i) for i in range(len(values))]
    return affine.apply(ir.AffineMap.get(len(values), 0, [expr(*dims)]), list(values))


def swizzled_column(swizzle, row: ir.Value, column: ir.Value) -> ir.Value:
    """Where ``column`` of ``row`` lies in a tile stored with ``lds_swizzle = [c, s, n, m]``
    (``rock.blockwise_load_tile``): its chunk of c elements xor ``((row div s) mod n) * m``."""
    chunk, rows, count, multiplier = swizzle
    if count == 1:
        return column
    flip = apply(lambda r: ir.AffineExpr.get_floor_div(r, rows) % count * multiplier, row)
    moved = arith.xori(apply(lambda d: ir.AffineExpr.get_floor_div(d, chunk), column), flip)
    return apply(lambda k, d: k * chunk + d % chunk, moved, column)


def lds_view(shape: list[int], element: ir.Type) -> ir.Value:
    """An i8 LDS ``rock.alloc`` viewed as ``memref<shape x element>``."""
    from pagedir.dialect import rock
    from pagedir.dialect.types import element_bytes, lds_bytes_type

    size = math.prod(shape) * element_bytes(element)
    raw = rock.alloc(lds_bytes_type(size))
    view_type = ir.MemRefType.get(shape, element, memory_space=raw.type.memory_space)
    return memref.view(view_type, raw, index_const(0), [])


# ----------------------------------------------------------------------------
# Paged tiles: where each vector's page lies, and a page's address (rock-blockwise-load, rock-threadwise-lowering).

#: Bytes of the widest buffer load (rock-buffer-load splits wider results).
MAX_LOAD_BYTES = 16


def vector_offsets(form: LinearForm, tile_shape: list[int], vector_dim: int, vector_len: int) -> np.ndarray:
    """The flat offset from the origin of each vector's first point, in vector order (row-major over the
    tile shape whose ``vector_dim`` extent is divided by ``vector_len``)."""
    grid = list(tile_shape)
    grid[vector_dim] //= vector_len
    points = np.indices(grid).reshape(len(grid), -1)
    points[vector_dim] *= vector_len
    return np.tensordot(np.array(form.tile_coeffs), points, axes=1)


def origin_residues(form: LinearForm, page_size: int) -> np.ndarray:
    """Residues of the origin modulo the page size: the congruence class the coefficients of the indices allow."""
    step = math.gcd(page_size, *(m for m, _ in form.index_terms)) if form.index_terms else page_size
    return np.arange(form.const % step, page_size, step)


def pages_uniform(form: LinearForm, tile_shape: list[int], vector_dim: int, vector_len: int, page_size: int,
                  block_size: int, wave_size: int) -> bool:
    """True when, for every row and wave, all lanes' vectors lie in one page for any reachable origin.

    The tile is read in vectors ``i * block_size + tid`` (row-major over ``tile_shape`` with the
    ``vector_dim`` extent divided by ``vector_len``); the page of each (row, wave) group's lowest and
    highest offsets must agree for every residue of the origin modulo the page size that the
    coefficients of the indices allow."""
    offsets = vector_offsets(form, tile_shape, vector_dim, vector_len)
    residues = origin_residues(form, page_size)
    group_size = min(wave_size, block_size)
    for start in range(0, len(offsets), group_size):
        # Rows are block_size vectors long; a wave never spans two rows when block_size is a multiple of it.
        group = offsets[start : start + group_size]
        lowest = (residues + group.min()) // page_size
        highest = (residues + group.max() + (vector_len - 1) * form.tile_coeffs[vector_dim]) // page_size
        if np.any(lowest != highest):
            return False
    return block_size % group_size == 0


#: Ops whose result differs between the lanes of a wave.
_LANE_IDS = frozenset({"rock.workitem_id", "gpu.thread_id", "gpu.lane_id"})
#: Ops whose result is the same for every lane of a wave whatever their operands are (each family's).
_WAVE_UNIFORM = frozenset().union(*(family.wave_uniform_ops for family in FAMILIES.values()))


def varies_across_lanes(value: ir.Value) -> bool:
    """Whether ``value`` may differ between the lanes of a wave: it depends on a workitem id, on memory
    other than a kernel argument's (private registers, LDS), or on a region's result. Block arguments
    (kernel arguments, loop counters) are the same for the lanes running them. Used to choose code that
    is faster for wave-uniform values, never to decide what is read: a wrong True costs speed only."""
    seen: set = set()
    stack = [value]
    while stack:
        owner = stack.pop().owner
        if isinstance(owner, ir.Block) or owner in seen:
            continue
        seen.add(owner)
        name = owner.name
        if name in _WAVE_UNIFORM:
            continue
        if name in _LANE_IDS or len(owner.regions):
            return True
        if name in ("memref.load", "vector.load") and ir.MemRefType(owner.operands[0].type).memory_space is not None:
            return True
        stack.extend(owner.operands)
    return False


# ----------------------------------------------------------------------------
# f32 values of the attention kernels (the KV loops, their epilogue, the split-KV combine).

def f32_const(value: float) -> ir.Value:
    return arith.constant(ir.F32Type.get(), value)


def splat(value: ir.Value, width: int) -> ir.Value:
    return vector.broadcast(ir.VectorType.get([width], value.type), value)


def to_f32(value: ir.Value) -> ir.Value:
    """Widen a vector of f16/bf16 to f32 (f32 passes through)."""
    width = ir.VectorType(value.type).shape[0]
    if isinstance(ir.VectorType(value.type).element_type, ir.F32Type):
        return value
    return arith.extf(ir.VectorType.get([width], ir.F32Type.get()), value)


def divided(acc: ir.Value, total: ir.Value, has_keys: ir.Value) -> ir.Value:
    """``acc / total`` (a vector by a scalar, through one reciprocal), 0 where ``has_keys`` is false."""
    inverse = arith.select(has_keys, arith.divf(f32_const(1.0), total), f32_const(0.0))
    return arith.mulf(acc, splat(inverse, ir.VectorType(acc.type).shape[0]))


def open_stage(name: str, loc: ir.Location) -> ir.Block:
    """An ``scf.execute_region no_inline {...} {rock.stage = name}`` at the current point; its body (a
    stage of rock-blockwise-load that rock-pipeline schedules)."""
    from mlir.dialects import scf

    region_op = scf.ExecuteRegionOp([], no_inline=True, loc=loc)
    region_op.operation.attributes["rock.stage"] = ir.StringAttr.get(name)
    return region_op.regions[0].blocks.append()


def remark(op: ir.Operation, message: str) -> None:
    """``FILE:LINE:COL: remark: message`` on stderr at ``op`` (a pass's note that changes no result)."""
    import sys

    from pagedir.diagnostics import file_position

    file, line, col = file_position(op.location)
    where = f"{file}:{line}:{col}" if file else "<unknown>"
    print(f"{where}: remark: {message}", file=sys.stderr)


# ----------------------------------------------------------------------------
# Loads of rock.global_load (rock-buffer-load and the families' own lowerings: pagedir.passes.families).


def unsupported_dense(type_: ir.MemRefType) -> str | None:
    if any(type_.is_dynamic_dim(i) for i in range(1, type_.rank)):
        return f"needs a static shape (but for the leading dim) for a buffer load, got {type_}"
    expected, running = [], 1
    for extent in reversed(type_.shape):
        expected.append(running)
        running *= extent
    if strides_and_offset(type_) != (expected[::-1], 0):
        return f"needs an identity layout for a buffer load, got {type_}"
    return None


def word_type(num_bytes: int) -> ir.Type:
    """What the hardware load returns for ``num_bytes``: i32 words, or i16/i8 below a word."""
    if num_bytes >= 4:
        words = num_bytes // 4
        i32 = ir.IntegerType.get_signless(32)
        return ir.VectorType.get([words], i32) if words > 1 else i32
    return ir.IntegerType.get_signless(8 * num_bytes)


def zero_attr(element: ir.Type) -> ir.Attribute:
    if isinstance(element, ir.IntegerType):
        return ir.IntegerAttr.get(element, 0)
    return ir.FloatAttr.get(element, 0.0)


def joined(pieces: list[ir.Value], type_: ir.Type, element: ir.Type, lanes_per_piece: int) -> ir.Value:
    """The vector ``type_`` made of ``pieces`` (each ``lanes_per_piece`` lanes) side by side."""
    if len(pieces) == 1:
        return pieces[0]
    result = arith.constant(type_, ir.DenseElementsAttr.get_splat(type_, zero_attr(element)))
    for index, piece in enumerate(pieces):
        result = vector.insert_strided_slice(piece, result, [index * lanes_per_piece], [1])
    return result


def as_elements(raw: ir.Value, lanes: int, element: ir.Type) -> ir.Value:
    """Bitcast the loaded words to ``lanes`` elements (a scalar when ``lanes == 1``)."""
    target = ir.VectorType.get([lanes], element) if lanes > 1 else element
    if raw.type == target:
        return raw
    if lanes == 1:
        return arith.bitcast(target, raw)
    if not isinstance(raw.type, ir.VectorType):
        raw = vector.from_elements(ir.VectorType.get([1], raw.type), [raw])
    return vector.bitcast(target, raw)
