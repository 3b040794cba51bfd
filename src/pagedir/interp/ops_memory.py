"""memref views and accesses, vector loads/stores/transfers (the gpu, rocdl and llvm ops: :mod:`pagedir.interp.ops_gpu`).

A memref value is a :class:`MemRef`: the memory it lives in (the global
:class:`Device`, or an LDS / private :class:`Space`), the byte address of its
element ``[0, ..., 0]`` per lane (``base``), the aligned pointer of its buffer
(``origin``, for ``reinterpret_cast`` and ``extract_aligned_pointer_as_index``),
its shape, strides in elements and element type. Views only change these fields.

Accesses check every index against the memref's shape (an out-of-bounds
``memref.load`` is undefined behaviour on the GPU, reported here), only touch
active lanes and go through the memory's checks (unmapped global addresses, LDS
races).
"""

from __future__ import annotations

from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.interp import lds_banks
from pagedir.interp.memory import Device, Elem, InterpError, Space
from pagedir.interp.simt import Program, Runtime, elem_of, handles, vector_shape, widen


class MemRef:
    __slots__ = ("space", "base", "origin", "shape", "strides", "elem")

    def __init__(self, space: Any, base: np.ndarray, origin: np.ndarray, shape: tuple, strides: tuple, elem: Elem):
        self.space = space
        self.base = base
        self.origin = origin
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)
        self.elem = elem

    def view(self, base: np.ndarray, shape: tuple, strides: tuple, elem: Elem | None = None, origin: Any = None) -> MemRef:
        return MemRef(self.space, base, self.origin if origin is None else origin, shape, strides, elem or self.elem)

    def select(self, mask: np.ndarray, other: MemRef) -> MemRef:
        if other.space is not self.space or other.shape != self.shape or other.strides != self.strides:
            raise InterpError("cannot merge different memrefs across divergent lanes")
        return self.view(np.where(mask, self.base, other.base), self.shape, self.strides,
                         origin=np.where(mask, self.origin, other.origin))


def row_major(shape: tuple) -> tuple:
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        running *= int(extent)
    return tuple(reversed(strides))


def type_strides(type_: ir.MemRefType) -> tuple:
    strides, _ = type_.get_strides_and_offset()
    if any(s == ir.ShapedType.get_dynamic_stride_or_offset() for s in strides):
        return row_major(tuple(type_.shape))
    return tuple(strides)


def describe(m: MemRef) -> str:
    kind = "global" if isinstance(m.space, Device) else m.space.kind
    return f"memref<{'x'.join(str(s) for s in m.shape)}x{m.elem.name}> ({kind})"


# ----------------------------------------------------------------------------
# Element accesses


def byte_offsets(m: MemRef, indices: list) -> np.ndarray:
    offset = m.base
    size = m.elem.size
    for index, stride in zip(indices, m.strides):
        offset = offset + index * (stride * size)
    return offset


def check_indices(p: Program, op_id: int, m: MemRef, indices: list, mask: Any, extents: tuple = ()) -> None:
    """Each index (plus the accessed extent along the trailing dims) inside the memref shape."""
    lead = len(indices) - len(extents)
    for dim, index in enumerate(indices):
        extent = extents[dim - lead] if dim >= lead else 1
        if index.shape[0] == 1 and index.size == 1:
            if 0 <= int(index[0]) and int(index[0]) + extent <= m.shape[dim]:
                continue  # the same index on every lane
        elif index.size and index.min() >= 0 and index.max() + extent <= m.shape[dim]:
            continue  # every lane in bounds, active or not
        active = index if (mask is None or index.shape[0] == 1) else index[mask]
        if active.size and ((active < 0).any() or (active + extent > m.shape[dim]).any()):
            bad = int(active[(active < 0) | (active + extent > m.shape[dim])][0])
            raise InterpError(
                f"{p.op_name(op_id)} index {bad} is out of bounds of dimension {dim} (size {m.shape[dim]}) of {describe(m)}",
                p.op_location(op_id),
            )


def contiguous(m: MemRef, element_offsets: np.ndarray) -> bool:
    """The elements lie one after another (a row the memories move at once)."""
    return bool((element_offsets == np.arange(element_offsets.shape[0]) * m.elem.size).all())


def _lane_starts(rt: Runtime, offsets: np.ndarray, lanes: np.ndarray, mask: Any) -> np.ndarray:
    """The byte offset of each lane in ``lanes`` (the active lanes)."""
    if mask is None and offsets.shape[0] == rt.lanes:
        return offsets
    return widen(offsets, rt.lanes)[lanes]


def read(p: Program, op_id: int, m: MemRef, offsets: np.ndarray, element_offsets: np.ndarray, mask: Any,
         rows: bool = False) -> np.ndarray:
    """Stored values at ``offsets[:, None] + element_offsets`` (bytes) for the active lanes; 0 elsewhere.

    ``rows``: the element offsets are :func:`contiguous`, so LDS and private memory move a row per lane."""
    rt: Runtime = p.rt
    space = m.space
    count = element_offsets.shape[0]
    if isinstance(space, Device):
        what = lambda: p.op_name(op_id)  # noqa: E731
        if offsets.shape[0] == 1 or mask is None:
            return space.read(offsets[:, None] + element_offsets, m.elem, what, p.op_location(op_id))
        lanes = np.nonzero(mask)[0]
        out = np.zeros((rt.lanes, count), dtype=m.elem.storage)
        out[lanes] = space.read(widen(offsets, rt.lanes)[lanes, None] + element_offsets, m.elem, what, p.op_location(op_id))
        return out
    if rows:
        return _read_rows(p, op_id, m, offsets, element_offsets, mask)
    lanes = rt.active_lanes(mask)
    addresses = widen(offsets, rt.lanes)[lanes, None] + element_offsets
    _check_space(p, op_id, space, addresses, lanes, m.elem.size)
    _count_banks(p, op_id, space, addresses, lanes, m.elem.size, "read")
    values = space.read(addresses, np.broadcast_to(lanes[:, None], addresses.shape), m.elem, rt, op_id)
    if mask is None:
        return values
    out = np.zeros((rt.lanes, count), dtype=m.elem.storage)
    out[lanes] = values
    return out


def _read_rows(p: Program, op_id: int, m: MemRef, offsets: np.ndarray, element_offsets: np.ndarray, mask: Any) -> np.ndarray:
    """:func:`read` of contiguous elements from LDS or private memory, a row per lane.

    Under a mask every lane whose row lies inside its copy of the buffer is read at once, then the
    inactive lanes are zeroed; only the active lanes are checked and recorded as readers."""
    rt: Runtime = p.rt
    space: Space = m.space
    count, size = element_offsets.shape[0], m.elem.size
    starts = widen(offsets, rt.lanes)
    relative = starts - space.lane_base
    limit = space.nbytes - size - int(element_offsets[-1])
    inside = relative.min() >= 0 and relative.max() <= limit
    outside = None if inside else (relative < 0) | (relative > limit)
    if mask is None:
        if not inside:
            _check_space(p, op_id, space, starts[:, None] + element_offsets, rt.all_lanes, size)
        _count_bank_rows(p, op_id, space, starts, rt.all_lanes, element_offsets, size, "read")
        return space.read_rows(starts, count, rt.all_lanes, m.elem, rt, op_id)
    if not inside or lds_banks.counting():
        lanes = np.nonzero(mask)[0]
        if not lanes.size:
            return np.zeros((rt.lanes, count), dtype=m.elem.storage)
        if not inside:
            _check_space(p, op_id, space, starts[lanes, None] + element_offsets, lanes, size)
            starts = np.where(outside, space.lane_base, starts)  # inactive lanes out of bounds read their copy's start
        _count_bank_rows(p, op_id, space, starts[lanes], lanes, element_offsets, size, "read")
    values = space.read_rows(starts, count, None, m.elem, rt, op_id, active=mask)
    np.copyto(values, 0, where=~mask[:, None])  # as for element reads: an inactive lane reads 0
    return values


def write(p: Program, op_id: int, m: MemRef, offsets: np.ndarray, element_offsets: np.ndarray, values: np.ndarray, mask: Any,
          rows: bool = False) -> None:
    """Store ``values`` (lanes or 1, count) in storage dtype at the active lanes' addresses (``rows`` as for :func:`read`)."""
    rt: Runtime = p.rt
    space = m.space
    count = element_offsets.shape[0]
    lanes = rt.active_lanes(mask)
    values = values.reshape(values.shape[0], count)
    if mask is not None or values.shape[0] != rt.lanes:
        values = np.broadcast_to(values, (rt.lanes, count))[lanes]
    if rows and not isinstance(space, Device):
        starts = _lane_starts(rt, offsets, lanes, mask)
        _check_rows(p, op_id, space, starts, lanes, element_offsets, m.elem.size)
        _count_bank_rows(p, op_id, space, starts, lanes, element_offsets, m.elem.size, "write")
        space.write_rows(starts, lanes, values, m.elem, rt, op_id)
        return
    addresses = widen(offsets, rt.lanes)[lanes, None] + element_offsets
    if isinstance(space, Device):
        space.write(addresses, values, m.elem, lambda: p.op_name(op_id), p.op_location(op_id))
        return
    _check_space(p, op_id, space, addresses, lanes, m.elem.size)
    _count_banks(p, op_id, space, addresses, lanes, m.elem.size, "write")
    space.write(addresses, np.broadcast_to(lanes[:, None], addresses.shape), values, m.elem, rt, op_id)


def _check_rows(p: Program, op_id: int, space: Space, starts: np.ndarray, lanes: np.ndarray, element_offsets: np.ndarray,
                size: int) -> None:
    """:func:`_check_space` of rows: each row's first and last element decide (the message comes from the full check)."""
    base = space.lane_base if lanes.shape[0] == space.lane_base.shape[0] else space.lane_base[lanes]
    relative = starts - base
    if relative.size and ((relative < 0).any() or (relative > space.nbytes - size - int(element_offsets[-1])).any()):
        _check_space(p, op_id, space, starts[:, None] + element_offsets, lanes, size)


def _count_bank_rows(p: Program, op_id: int, space: Space, starts: np.ndarray, lanes: np.ndarray, element_offsets: np.ndarray,
                     size: int, kind: str) -> None:
    """:func:`_count_banks` of rows (their element addresses are only built while counting)."""
    if space.kind == "lds" and lds_banks.counting():
        _count_banks(p, op_id, space, starts[:, None] + element_offsets, lanes, size, kind)


def _count_banks(p: Program, op_id: int, space: Space, addresses: np.ndarray, lanes: np.ndarray, size: int, kind: str) -> None:
    """LDS bank conflicts of this access, inside ``lds_banks.tally()`` (pagedir-run --lds-banks)."""
    if space.kind != "lds" or not lds_banks.counting():
        return
    rt: Runtime = p.rt
    try:
        wave = p.wave_size
    except InterpError:  # a function naming no chip: counted in waves of 64
        wave = 64
    lds_banks.record((p.op_name(op_id), p.op_where(op_id), kind), addresses - space.lane_base[lanes, None], lanes,
                     rt.tid[lanes], rt.block, wave, size)


def _check_space(p: Program, op_id: int, space: Space, addresses: np.ndarray, lanes: np.ndarray, size: int) -> None:
    relative = addresses - space.lane_base[lanes, None]
    if addresses.size and ((relative < 0).any() or (relative > space.nbytes - size).any()):
        bad = int(relative[(relative < 0) | (relative > space.nbytes - size)][0])
        raise InterpError(
            f"{p.op_name(op_id)} accesses byte {bad} outside {space.name} ({space.nbytes} bytes)", p.op_location(op_id)
        )


def vector_element_offsets(m: MemRef, shape: tuple) -> np.ndarray:
    """Byte offsets of the elements of a vector of ``shape`` laid along the memref's trailing dims."""
    strides = m.strides[len(m.strides) - len(shape):] if shape else ()
    grid = np.zeros(shape if shape else (1,), dtype=np.int64)
    for dim, (extent, stride) in enumerate(zip(shape, strides)):
        axis = np.arange(extent).reshape((1,) * dim + (-1,) + (1,) * (len(shape) - dim - 1))
        grid = grid + axis * stride * m.elem.size
    return grid.reshape(-1)


# ----------------------------------------------------------------------------
# memref


@handles("memref.load", "memref.store", "vector.load", "vector.store")
def compile_load_store(p: Program, op: Any) -> Any:
    operation = op.operation
    name = operation.name
    storing = name.endswith("store")
    operands = [p.slot(v) for v in operation.operands]
    value_slot = operands[0] if storing else None
    memref_slot = operands[1] if storing else operands[0]
    index_slots = operands[2:] if storing else operands[1:]
    value_type = operation.operands[0].type if storing else operation.results[0].type
    shape = vector_shape(value_type)
    result = None if storing else p.slot(operation.results[0])
    op_id = p.op_id(op)
    cache: dict = {}

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[memref_slot]
        indices = [env[s] for s in index_slots]
        check_indices(p, op_id, m, indices, mask, shape)
        key = (m.strides, m.elem)
        layout = cache.get(key)
        if layout is None:
            elements = vector_element_offsets(m, shape)
            layout = cache[key] = (elements, contiguous(m, elements))
        elements, rows = layout
        offsets = byte_offsets(m, indices)
        if storing:
            values = m.elem.to_storage(env[value_slot])
            write(p, op_id, m, offsets, elements, values.reshape(values.shape[0], -1), mask, rows)
            return
        stored = read(p, op_id, m, offsets, elements, mask, rows)
        values = m.elem.to_compute(stored)
        env[result] = values.reshape((values.shape[0], *shape))

    return run


def _dynamic_or_static(values: list, static: list) -> list:
    dynamic = iter(values)
    sentinel = ir.ShapedType.get_dynamic_stride_or_offset()
    return [("slot", next(dynamic)) if s == sentinel else ("const", s) for s in static]


def _resolve(env: list, items: list) -> list:
    return [v if kind == "const" else env[v] for kind, v in items]


@handles("memref.view")
def compile_view(p: Program, op: Any) -> Any:
    source, shift = p.slot(op.operation.operands[0]), p.slot(op.operation.operands[1])
    size_slots = [p.slot(v) for v in op.operation.operands[2:]]
    type_ = ir.MemRefType(op.operation.results[0].type)
    elem = elem_of(type_)
    static = list(type_.shape)
    result = p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[source]
        dynamic = iter(size_slots)
        shape = tuple(int(env[next(dynamic)][0]) if s == ir.ShapedType.get_dynamic_size() else s for s in static)
        base = m.base + env[shift]
        env[result] = MemRef(m.space, base, base, shape, row_major(shape), elem)

    return run


@handles("memref.subview")
def compile_subview(p: Program, op: Any) -> Any:
    source = p.slot(op.operation.operands[0])
    offsets = _dynamic_or_static([p.slot(v) for v in op.offsets], list(op.static_offsets))
    sizes = _dynamic_or_static([p.slot(v) for v in op.sizes], list(op.static_sizes))
    steps = _dynamic_or_static([p.slot(v) for v in op.strides], list(op.static_strides))
    result_shape = list(ir.MemRefType(op.operation.results[0].type).shape)
    keep = _kept_dims(list(op.static_sizes), result_shape)  # a dynamic size ('?') is kept, as in the result type
    result = p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[source]
        base = m.base
        for offset, stride in zip(_resolve(env, offsets), m.strides):
            base = base + offset * (stride * m.elem.size)
        strides = [s * int(np.asarray(st).reshape(-1)[0]) for s, st in zip(m.strides, _resolve(env, steps))]
        shape = [int(np.asarray(size).reshape(-1)[0]) for size in _resolve(env, sizes)]
        env[result] = m.view(base, tuple(shape[d] for d in keep), tuple(strides[d] for d in keep))

    return run


def _kept_dims(sizes: list, result_shape: list) -> list:
    """Dims of a (possibly rank-reducing) subview that stay in the result."""
    if len(sizes) == len(result_shape):
        return list(range(len(sizes)))
    keep, r = [], 0
    for d, size in enumerate(sizes):
        if r < len(result_shape) and size == result_shape[r] and (size != 1 or len(sizes) - d - 1 < len(result_shape) - r):
            keep.append(d)
            r += 1
    return keep


def _reassociation(op: Any) -> list[list[int]]:
    return [[ir.IntegerAttr(i).value for i in group] for group in ir.ArrayAttr(op.operation.attributes["reassociation"])]


@handles("memref.expand_shape")
def compile_expand_shape(p: Program, op: Any) -> Any:
    source = p.slot(op.operation.operands[0])
    groups = _reassociation(op)
    shape = tuple(ir.MemRefType(op.operation.results[0].type).shape)
    result = p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[source]
        strides = [0] * len(shape)
        for source_dim, group in enumerate(groups):
            running = m.strides[source_dim]
            for dim in reversed(group):
                strides[dim] = running
                running *= shape[dim]
        env[result] = m.view(m.base, shape, tuple(strides))

    return run


@handles("memref.collapse_shape")
def compile_collapse_shape(p: Program, op: Any) -> Any:
    source = p.slot(op.operation.operands[0])
    groups = _reassociation(op)
    shape = tuple(ir.MemRefType(op.operation.results[0].type).shape)
    result = p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[source]
        strides = tuple(m.strides[group[-1]] if group else 1 for group in groups)
        env[result] = m.view(m.base, shape, strides)

    return run


@handles("memref.cast")
def compile_cast(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        env[result] = env[source]

    return run


@handles("memref.reinterpret_cast")
def compile_reinterpret_cast(p: Program, op: Any) -> Any:
    source = p.slot(op.operation.operands[0])
    offsets = _dynamic_or_static([p.slot(v) for v in op.offsets], list(op.static_offsets))
    sizes = _dynamic_or_static([p.slot(v) for v in op.sizes], list(op.static_sizes))
    strides = _dynamic_or_static([p.slot(v) for v in op.strides], list(op.static_strides))
    result = p.slot(op.operation.results[0])

    def scalar(v: Any) -> int:
        return int(np.asarray(v).reshape(-1)[0])

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[source]
        offset = _resolve(env, offsets)[0]
        base = m.origin + offset * m.elem.size
        env[result] = m.view(base, tuple(scalar(s) for s in _resolve(env, sizes)),
                             tuple(scalar(s) for s in _resolve(env, strides)))

    return run


@handles("memref.dim")
def compile_dim(p: Program, op: Any) -> Any:
    source, index = p.slot(op.operation.operands[0]), p.slot(op.operation.operands[1])
    result = p.slot(op.operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[source]
        dim = int(env[index][0])
        if not 0 <= dim < len(m.shape):  # MLIR: undefined behaviour
            raise InterpError(f"{p.op_name(op_id)} dimension {dim} is out of bounds of {describe(m)} (rank {len(m.shape)})",
                              p.op_location(op_id))
        env[result] = np.array([m.shape[dim]], dtype=np.int64)

    return run


#: An LDS pointer's bits below the tag of the allocation it points into (pagedir.interp.ops_lds_dma).
LDS_POINTER_SHIFT = 20


def lds_pointer(rt: Runtime, m: MemRef) -> np.ndarray:
    """Each lane's LDS pointer to ``m``: its byte offset in the workgroup's copy of its allocation, tagged
    above :data:`LDS_POINTER_SHIFT` with the allocation (the interpreter keeps allocations apart)."""
    tag = rt.lds_spaces.index(m.space) + 1
    return (tag << LDS_POINTER_SHIFT) + np.asarray(m.origin, dtype=np.int64) - m.space.lane_base


@handles("memref.extract_aligned_pointer_as_index")
def compile_extract_pointer(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        m = env[source]
        if isinstance(m.space, Space) and m.space.kind == "lds":
            env[result] = lds_pointer(p.rt, m)
            return
        env[result] = np.asarray(m.origin, dtype=np.int64)

    return run


@handles("memref.extract_strided_metadata")
def compile_extract_strided_metadata(p: Program, op: Any) -> Any:
    """(the buffer as a 0-d memref, the offset in elements, the sizes, the strides) of a global memref."""
    source = p.slot(op.operation.operands[0])
    results = [p.slot(r) for r in op.operation.results]

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[source]
        offset = (np.asarray(m.base, dtype=np.int64) - np.asarray(m.origin, dtype=np.int64)) // m.elem.size
        env[results[0]] = m.view(m.origin, (), (), origin=m.origin)
        env[results[1]] = offset
        for slot, value in zip(results[2:], [*m.shape, *m.strides]):
            env[slot] = np.array([value], dtype=np.int64)

    return run


def compile_allocation(p: Program, op: Any, type_: ir.MemRefType, name: str) -> Any:
    from pagedir.dialect.types import memory_space, memref_bytes, strides_and_offset

    if strides_and_offset(type_) != (list(row_major(tuple(type_.shape))), 0):
        raise InterpError(f"'{op.operation.name}' op allocates {type_}: the interpreter allocates memrefs with the "
                          "identity layout", op.operation.location)
    kind = "lds" if memory_space(type_) == "workgroup" else "private"
    nbytes = memref_bytes(type_)
    shape = tuple(type_.shape)
    elem = elem_of(type_)
    strides = row_major(shape)
    op_id = p.op_id(op)
    result = p.slot(op.operation.results[0])
    label = f"{'LDS' if kind == 'lds' else 'private'} buffer {name} of {nbytes} bytes ({p.op_where(op_id)})"

    def run(env: list, mask: Any) -> None:
        space = p.rt.space(op_id, kind, nbytes, label, p.op_location(op_id))
        env[result] = MemRef(space, space.lane_base, space.lane_base, shape, strides, elem)

    return run


@handles("memref.alloca", "memref.alloc")
def compile_alloca(p: Program, op: Any) -> Any:
    type_ = ir.MemRefType(op.operation.results[0].type)
    return compile_allocation(p, op, type_, op.operation.name)


@handles("memref.dealloc", "rock.live_in", "rock.live_out", "memref.assume_alignment")
def compile_noop(p: Program, op: Any) -> Any:
    if op.operation.results:
        source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])

        def forward(env: list, mask: Any) -> None:
            env[result] = env[source]

        return forward
    return None


def all_coordinates(shape: tuple) -> np.ndarray:
    return np.stack(np.unravel_index(np.arange(int(np.prod(shape, dtype=np.int64))), shape), axis=1) if shape else np.zeros((1, 0), np.int64)


@handles("memref.copy")
def compile_copy(p: Program, op: Any) -> Any:
    source, target = (p.slot(v) for v in op.operation.operands)
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        src, dst = env[source], env[target]
        coords = all_coordinates(src.shape)
        src_elements = (coords * np.array(src.strides, dtype=np.int64)).sum(axis=1) * src.elem.size
        dst_elements = (coords * np.array(dst.strides, dtype=np.int64)).sum(axis=1) * dst.elem.size
        values = read(p, op_id, src, src.base, src_elements, mask)
        write(p, op_id, dst, dst.base, dst_elements, values, mask)

    return run


# ----------------------------------------------------------------------------
# vector transfers


def _transfer_parts(op: Any) -> tuple:
    operation = op.operation
    sizes = list(ir.DenseI32ArrayAttr(operation.attributes["operandSegmentSizes"]))
    operands = list(operation.operands)
    parts, start = [], 0
    for size in sizes:
        parts.append(operands[start : start + size])
        start += size
    return parts


def _transfer_layout(op: Any, memref_rank: int, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(memref dim per vector dim or -1 for broadcast, vector coordinates of every element)."""
    affine_map = ir.AffineMapAttr(op.operation.attributes["permutation_map"]).value
    dims = []
    for expr in affine_map.results:
        dims.append(expr.position if isinstance(expr, ir.AffineDimExpr) else -1)
    return np.array(dims, dtype=np.int64), all_coordinates(shape)


def _transfer_indices(env: list, m: MemRef, index_slots: list, dims: np.ndarray, coords: np.ndarray, lanes: int) -> list:
    """Per memref dim, the index of every vector element: (lanes or 1, elements)."""
    indices = []
    for dim, slot in enumerate(index_slots):
        index = env[slot].astype(np.int64).reshape(-1, 1)
        for vdim in np.nonzero(dims == dim)[0]:
            index = index + coords[:, vdim][None, :]
        indices.append(index)
    return indices


def _in_bounds(m: MemRef, indices: list) -> np.ndarray:
    inside = np.ones(np.broadcast_shapes(*[i.shape for i in indices]), dtype=np.bool_)
    for dim, index in enumerate(indices):
        inside &= (index >= 0) & (index < m.shape[dim])
    return inside


@handles("vector.transfer_read", "vector.transfer_write")
def compile_transfer(p: Program, op: Any) -> Any:
    operation = op.operation
    reading = operation.name == "vector.transfer_read"
    parts = _transfer_parts(op)
    if reading:
        memref_part, index_part, pad_part, mask_part = parts
        vector_type = operation.results[0].type
    else:
        value_part, memref_part, index_part, mask_part = parts
        vector_type = value_part[0].type
    shape = vector_shape(vector_type)
    dims, coords = _transfer_layout(op, len(index_part), shape)
    memref_slot = p.slot(memref_part[0])
    index_slots = [p.slot(v) for v in index_part]
    mask_slot = p.slot(mask_part[0]) if mask_part else None
    pad_slot = p.slot(pad_part[0]) if reading else None
    value_slot = None if reading else p.slot(value_part[0])
    result = p.slot(operation.results[0]) if reading else None
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        m: MemRef = env[memref_slot]
        indices = _transfer_indices(env, m, index_slots, dims, coords, rt.lanes)
        inside = _in_bounds(m, indices)
        if mask_slot is not None:
            vector_mask = env[mask_slot]
            inside = inside & vector_mask.reshape(vector_mask.shape[0], -1)
        safe = [np.where(inside, i, 0) for i in indices]
        offsets = m.base.reshape(-1, 1)
        for index, stride in zip(safe, m.strides):
            offsets = offsets + index * (stride * m.elem.size)
        lanes = offsets.shape[0]
        flat_offsets = offsets.reshape(lanes, -1)
        if reading:
            stored = masked_read(p, op_id, m, flat_offsets, np.broadcast_to(inside, flat_offsets.shape), mask)
            values = m.elem.to_compute(stored)
            pad = env[pad_slot].reshape(-1, 1)
            out = np.where(np.broadcast_to(inside, values.shape) if values.shape[0] == inside.shape[0] else inside, values, pad)
            env[result] = out.reshape((out.shape[0], *shape))
            return
        values = env[value_slot]
        stored = m.elem.to_storage(values.reshape(values.shape[0], -1))
        masked_write(p, op_id, m, flat_offsets, np.broadcast_to(inside, flat_offsets.shape), stored, mask)

    return run


def masked_read(p: Program, op_id: int, m: MemRef, offsets: np.ndarray, inside: np.ndarray, mask: Any) -> np.ndarray:
    """Element reads where ``inside`` (per lane and element) for active lanes; 0 elsewhere."""
    rt = p.rt
    lanes_total = rt.lanes if (offsets.shape[0] > 1 or not isinstance(m.space, Device) or mask is not None) else 1
    offsets = np.broadcast_to(offsets, (lanes_total, offsets.shape[1]))
    inside = np.broadcast_to(inside, offsets.shape)
    if mask is not None:
        inside = inside & mask[:, None]
    lane_of = np.broadcast_to(np.arange(lanes_total)[:, None], offsets.shape)
    out = np.zeros(offsets.shape, dtype=m.elem.storage)
    where = np.nonzero(inside)
    if not where[0].size:
        return out
    addresses = offsets[where]
    if isinstance(m.space, Device):
        out[where] = m.space.read(addresses, m.elem, lambda: p.op_name(op_id), p.op_location(op_id))
    else:
        _check_space(p, op_id, m.space, addresses[:, None], lane_of[where], m.elem.size)
        out[where] = m.space.read(addresses, lane_of[where], m.elem, rt, op_id)
    return out


def masked_write(p: Program, op_id: int, m: MemRef, offsets: np.ndarray, inside: np.ndarray, values: np.ndarray, mask: Any) -> None:
    rt = p.rt
    offsets = np.broadcast_to(offsets, (rt.lanes, offsets.shape[1]))
    inside = np.broadcast_to(inside, offsets.shape)
    if mask is not None:
        inside = inside & mask[:, None]
    values = np.broadcast_to(values, offsets.shape)
    where = np.nonzero(inside)
    if not where[0].size:
        return
    addresses = offsets[where]
    if isinstance(m.space, Device):
        m.space.write(addresses, values[where], m.elem, lambda: p.op_name(op_id), p.op_location(op_id))
        return
    lanes = where[0]
    _check_space(p, op_id, m.space, addresses[:, None], lanes, m.elem.size)
    m.space.write(addresses, lanes, values[where], m.elem, rt, op_id)


@handles("vector.maskedload", "vector.maskedstore")
def compile_masked(p: Program, op: Any) -> Any:
    operation = op.operation
    reading = operation.name == "vector.maskedload"
    operands = [p.slot(v) for v in operation.operands]
    memref_slot = operands[0]
    if reading:
        index_slots, mask_slot, pass_slot = operands[1:-2], operands[-2], operands[-1]
        shape = vector_shape(operation.results[0].type)
        result = p.slot(operation.results[0])
    else:
        index_slots, mask_slot, value_slot = operands[1:-2], operands[-2], operands[-1]
        shape = vector_shape(operation.operands[-1].type)
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        m: MemRef = env[memref_slot]
        offsets = byte_offsets(m, [env[s] for s in index_slots]).reshape(-1, 1) + vector_element_offsets(m, shape)[None]
        enabled = env[mask_slot].reshape(env[mask_slot].shape[0], -1)
        if reading:
            stored = masked_read(p, op_id, m, offsets, enabled, mask)
            values = m.elem.to_compute(stored)
            passthru = env[pass_slot].reshape(env[pass_slot].shape[0], -1)
            out = np.where(np.broadcast_to(enabled, values.shape), values, passthru)
            env[result] = out.reshape((out.shape[0], *shape))
            return
        values = env[value_slot]
        masked_write(p, op_id, m, offsets, enabled, m.elem.to_storage(values.reshape(values.shape[0], -1)), mask)

    return run
