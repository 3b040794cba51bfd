"""rock ops: alloc, deref, block_table_view, global_load, blockwise_load_tile, threadwise_read_into, attention.

``rock.attention`` and ``rock.gridwise_attention_accel`` run the numpy reference
on K/V gathered from the pages their tables point at. The tile loads follow
docs/levels.md exactly, so a lowering of them can be checked against them.
"""

from __future__ import annotations

from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir import reference
from pagedir.dialect.core import attr_value
from pagedir.dialect.ops_attention import attention_operands
from pagedir.interp.memory import Device, Elem, InterpError
from pagedir.interp.ops_control import affine_function
from pagedir.interp.ops_memory import MemRef, _check_space, all_coordinates, compile_allocation, describe, read
from pagedir.interp.simt import Program, elem_of, handles, vector_shape, widen
from pagedir.page_sources import source_of
from pagedir.page_sources.base import RunTimePages
from pagedir.variants import variant_attributes, variant_operands


def segments(op: Any) -> list[list[ir.Value]]:
    operation = op.operation
    operands = list(operation.operands)
    if "operandSegmentSizes" not in operation.attributes:
        return [[v] for v in operands]
    parts, start = [], 0
    for size in ir.DenseI32ArrayAttr(operation.attributes["operandSegmentSizes"]):
        parts.append(operands[start : start + size])
        start += size
    return parts


def int_attr(op: Any, name: str, default: Any = None) -> Any:
    attrs = op.operation.attributes
    return ir.IntegerAttr(attrs[name]).value if name in attrs else default


def i64_array(op: Any, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.operation.attributes[name]))


class PagedSource:
    """A paged K/V source at run time (a ``rock.deref`` or ``rock.block_table_view`` result): its form's
    reading of its pages (:meth:`pagedir.page_sources.PageSource.at_run_time`) over the operands' memory."""

    __slots__ = ("p", "form", "memrefs", "shape", "elem", "seq_len_k", "layout")

    def __init__(self, p: Program, form: Any, memrefs: list[MemRef], elem: Elem):
        self.p, self.form, self.memrefs, self.elem = p, form, memrefs, elem
        self.layout = self.reading(None)  # sizes and in-page offsets: nothing read
        self.shape = self.layout.shape
        self.seq_len_k = self.layout.seq_len_k  # when the last page is partly filled

    def reading(self, op_id: int | None) -> RunTimePages:
        """The pages as op ``op_id`` reads them (its name and location in a read's error)."""
        return self.form.at_run_time([OperandMemory(self.p, op_id, m) for m in self.memrefs])

    def element_offset(self, offset: np.ndarray) -> np.ndarray:
        """Elements from a page's base to element ``offset`` of the (virtual) page."""
        return self.layout.element_offset(offset)

    def pointers(self, op_id: int, batch: np.ndarray, page: np.ndarray) -> np.ndarray:
        """Device addresses of pages ``page`` (inside the table) of sequences ``batch`` (0: a null page)."""
        return self.reading(op_id).addresses(batch, page)


class OperandMemory:
    """An integer operand of a page view (a table, kv_indptr) or its pool, read as a form asks
    (:class:`pagedir.page_sources.base.RunTimeOperand`)."""

    def __init__(self, p: Program, op_id: int | None, m: MemRef):
        self.p, self.op_id, self.m = p, op_id, m
        self.shape, self.base, self.elem_size = m.shape, int(m.base[0]), m.elem.size

    def read(self, indices: tuple[np.ndarray, ...]) -> np.ndarray:
        elements = sum(np.asarray(i, dtype=np.int64) * stride for i, stride in zip(indices, self.m.strides))
        return read_i32(self.p, self.op_id, self.m, elements)


class VarlenSource:
    """A ``rock.varlen_view`` result: packed rows ``[total_q, Hq, D]`` presented as ``[B, Hq, Sq, D]``,
    sequence b's rows right-aligned."""

    __slots__ = ("packed", "cu", "shape")

    def __init__(self, packed: MemRef, cu: MemRef, shape: tuple):
        self.packed, self.cu, self.shape = packed, cu, shape

    def rows(self, p: Program, op_id: int) -> list[tuple[int, int]]:
        """(first packed row, query count) per sequence; an error for offsets the packed rows do not hold."""
        cu = read_i32(p, op_id, self.cu, np.arange(self.shape[0] + 1))
        counts = np.diff(cu)
        if cu[0] < 0 or (counts < 0).any() or (counts > self.shape[2]).any() or cu[-1] > self.packed.shape[0]:
            raise InterpError(f"{p.op_name(op_id)}: cu_seqlens_q {cu.tolist()} must rise from 0 by at most Sq = "
                              f"{self.shape[2]} per sequence and end by {self.packed.shape[0]} rows", p.op_location(op_id))
        return [(int(cu[b]), int(counts[b])) for b in range(self.shape[0])]

    def read(self, p: Program, op_id: int) -> np.ndarray:
        packed = read_dense(p, op_id, self.packed)
        padded = np.zeros(self.shape, dtype=packed.dtype)
        for b, (first, count) in enumerate(self.rows(p, op_id)):
            padded[b, :, self.shape[2] - count :] = np.swapaxes(packed[first : first + count], 0, 1)
        return padded

    def write(self, p: Program, op_id: int, padded: np.ndarray) -> None:
        m = self.packed
        for b, (first, count) in enumerate(self.rows(p, op_id)):
            rows = np.swapaxes(padded[b, :, self.shape[2] - count :], 0, 1)  # [count, Hq, D]
            coords = all_coordinates(rows.shape) + np.array([first, 0, 0])
            offsets = (coords * np.array(m.strides, dtype=np.int64)).sum(axis=1) * m.elem.size
            stored = m.elem.to_storage(rows.reshape(-1).astype(np.float32))
            p.rt.device.write(m.base[0] + offsets, stored, m.elem, lambda: p.op_name(op_id), p.op_location(op_id))


@handles("rock.varlen_view")
def compile_varlen_view(p: Program, op: Any) -> Any:
    packed, cu = p.slot(op.operation.operands[0]), p.slot(op.operation.operands[1])
    shape = tuple(ir.MemRefType(op.operation.results[0].type).shape)
    result = p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        batch = shape[0] if shape[0] != ir.ShapedType.get_dynamic_size() else env[cu].shape[0] - 1
        env[result] = VarlenSource(env[packed], env[cu], (batch, *shape[1:]))

    return run


def read_i32(p: Program, op_id: int, m: MemRef, elements: np.ndarray) -> np.ndarray:
    """Elements (flat offsets) of a global integer memref (i32 ids and lengths, i64 pointers), as int64."""
    addresses = int(m.base[0]) + np.asarray(elements, dtype=np.int64) * m.elem.size
    return m.space.read(addresses, m.elem, lambda: p.op_name(op_id), p.op_location(op_id)).astype(np.int64)


@handles("rock.alloc")
def compile_rock_alloc(p: Program, op: Any) -> Any:
    return compile_allocation(p, op, ir.MemRefType(op.operation.results[0].type), "rock.alloc")


@handles("rock.deref", "rock.block_table_view")
def compile_page_view(p: Program, op: Any) -> Any:
    """The view's pages as its form reads them; dynamic sizes ('?') from the arguments."""
    view = op.operation.results[0]
    read_pages = page_reader(p, source_of(view))
    result = p.slot(view)

    def run(env: list, mask: Any) -> None:
        env[result] = read_pages(env)

    return run


def page_reader(p: Program, form: Any) -> Any:
    """``env -> PagedSource``: the pages of ``form`` (a :class:`pagedir.page_sources.PageSource`) at run time."""
    slots = [p.slot(value) for value in form.run_time_operands]
    elem = elem_of(ir.MemRefType(form.value.type))
    return lambda env: PagedSource(p, form, [env[s] for s in slots], elem)


# ----------------------------------------------------------------------------
# rock.global_load


@handles("rock.global_load")
def compile_global_load(p: Program, op: Any) -> Any:
    """Paged: element ``ptr + offset`` of the page; components outside ``[0, page_size)`` read 0, as the buffer load does."""
    mem_part, index_part, valid_part, ptr_part = segments(op)
    mem, indices = p.slot(mem_part[0]), [p.slot(v) for v in index_part]
    valid = p.slot(valid_part[0]) if valid_part else None
    ptr = p.slot(ptr_part[0]) if ptr_part else None
    page_size = int_attr(op, "page_size")
    type_ = op.operation.results[0].type
    elem, shape = elem_of(type_), vector_shape(type_)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    components = np.arange(count, dtype=np.int64)
    result = p.slot(op.operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        active = np.ones(rt.lanes, dtype=np.bool_) if mask is None else mask.copy()
        if valid is not None:
            active &= widen(env[valid], rt.lanes)
        out = np.zeros((rt.lanes, count), dtype=elem.storage)
        lanes = np.nonzero(active)[0]
        if lanes.size:
            if ptr is not None:
                offset = widen(env[indices[0]], rt.lanes)[lanes, None] + components
                inside = (offset >= 0) & (offset < page_size)
                addresses = widen(env[ptr], rt.lanes)[lanes, None].astype(np.int64) + offset * elem.size
                where = np.nonzero(inside)
                values = np.zeros(offset.shape, dtype=elem.storage)
                values[where] = rt.device.read(addresses[where], elem, lambda: p.op_name(op_id), p.op_location(op_id))
                out[lanes] = values
            else:
                m: MemRef = env[mem]
                index_values = [widen(env[s], rt.lanes)[lanes] for s in indices]
                for dim, index in enumerate(index_values):
                    extent = count if dim == len(index_values) - 1 else 1
                    if (index < 0).any() or (index + extent > m.shape[dim]).any():
                        raise InterpError(f"rock.global_load index out of bounds of dimension {dim} of {describe(m)}",
                                          p.op_location(op_id))
                offset = widen(m.base, rt.lanes)[lanes]
                for index, stride in zip(index_values, m.strides):
                    offset = offset + index * stride * elem.size
                out[lanes] = m.space.read(offset[:, None] + components * elem.size, elem, lambda: p.op_name(op_id),
                                          p.op_location(op_id))
        values = elem.to_compute(out)
        env[result] = values.reshape((rt.lanes, *shape)) if shape else values[:, 0]

    return run


# ----------------------------------------------------------------------------
# Tile loads


def valid_function(op: Any) -> Any:
    """``f(map inputs) -> bool array``: the points the op's ``valid`` map lets be read (every result >= 0)."""
    attrs = op.operation.attributes
    if "valid" not in attrs:
        return lambda inputs: np.True_
    fn = affine_function(ir.AffineMapAttr(attrs["valid"]).value)
    return lambda inputs: np.logical_and.reduce([np.asarray(r) >= 0 for r in fn(inputs)])


def read_source(p: Program, op_id: int, source: Any, results: list, wanted: Any, num_pages: int | None,
                pointer_of: Any) -> tuple:
    """Stored values of a tile (any shape) from a paged or dense source; 0 where the doc says so.

    ``results``: the map's results; ``wanted``: the points ``valid`` lets be read (True
    when the op has no ``valid``); the others are not read and give 0. Paged:
    (batch, flat) and ``pointer_of(batch, page, readable) -> pointers`` finds each page's pointer.
    """
    rt = p.rt
    if isinstance(source, PagedSource):
        batch, flat, wanted = np.broadcast_arrays(*results[:2], wanted)
        page_size = source.shape[2]
        page, offset = flat // page_size, flat % page_size
        readable = (page >= 0) & (page < num_pages) & (batch >= 0) & (batch < source.shape[0]) & wanted
        pointers = pointer_of(batch, page, readable)
        live = readable & (pointers != 0)
        out = np.zeros(flat.shape, dtype=source.elem.storage)
        where = np.nonzero(live)
        out[where] = rt.device.read(pointers[where] + source.element_offset(offset[where]) * source.elem.size, source.elem,
                                    lambda: p.op_name(op_id), p.op_location(op_id))
        return out, live
    m: MemRef = source
    *coords, wanted = np.broadcast_arrays(*results, wanted)
    inside = wanted.copy()
    for dim, coord in enumerate(coords):
        inside &= (coord >= 0) & (coord < m.shape[dim])
    offset = np.zeros(coords[0].shape, dtype=np.int64)
    for coord, stride in zip(coords, m.strides):
        offset = offset + np.where(inside, coord, 0) * stride * m.elem.size
    out = np.zeros(offset.shape, dtype=m.elem.storage)
    where = np.nonzero(inside)
    if isinstance(m.space, Device):
        base = np.broadcast_to(m.base.reshape((-1,) + (1,) * (offset.ndim - 1)), offset.shape)
        out[where] = m.space.read(base[where] + offset[where], m.elem, lambda: p.op_name(op_id), p.op_location(op_id))
        return out, inside
    raise InterpError(f"{p.op_name(op_id)} from a {m.space.kind} source is not supported", p.op_location(op_id))


def swizzled(coords: np.ndarray, op: Any) -> np.ndarray:
    """The dest coordinates of the tile points ``coords`` under ``lds_swizzle = [c, s, n, m]`` (rock.md): in
    row r (the row-major number of the coordinates but the last), chunk ``k = d div c`` of the columns is
    stored as chunk ``k xor ((r div s) mod n) m``."""
    attrs = op.operation.attributes
    if "lds_swizzle" not in attrs:
        return coords
    chunk, rows, count, multiplier = ir.DenseI64ArrayAttr(attrs["lds_swizzle"])
    shape = ir.MemRefType(op.operation.operands[1].type).shape
    row = np.zeros(len(coords), dtype=np.int64)
    for dim, extent in enumerate(shape[:-1]):
        row = row * extent + coords[:, dim]
    column = coords[:, -1]
    moved = coords.copy()
    moved[:, -1] = ((column // chunk) ^ ((row // rows) % count * multiplier)) * chunk + column % chunk
    return moved


@handles("rock.blockwise_load_tile")
def compile_blockwise_load_tile(p: Program, op: Any) -> Any:
    """The whole workgroup loads the tile; the result is visible to every thread (a barrier follows)."""
    source_part, dest_part, index_part, table_part = segments(op)
    source, dest = p.slot(source_part[0]), p.slot(dest_part[0])
    indices = [p.slot(v) for v in index_part]
    # A paged source's pages read through the op's page_table, as rock-blockwise-load reads them.
    through_table = page_reader(p, source_of(source_part[0], table_part[0])) if table_part else None
    fn = affine_function(ir.AffineMapAttr(op.operation.attributes["map"]).value)
    valid_fn = valid_function(op)
    dest_type = ir.MemRefType(dest_part[0].type)
    coords = all_coordinates(tuple(dest_type.shape))  # [points, rank]
    stored = swizzled(coords, op)  # where each point lands in dest
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        if mask is not None:
            rt.barrier(mask, op_id)  # a collective op: every thread of a workgroup takes part
        firsts = rt.group_first_lane
        index_values = [widen(env[s], rt.lanes)[firsts].reshape(-1, 1).astype(np.int64) for s in indices]
        tile_coords = [coords[:, d][None, :] for d in range(coords.shape[1])]
        results = fn(index_values + tile_coords)
        wanted = valid_fn(index_values + tile_coords)
        src = env[source]
        if isinstance(src, PagedSource):
            src = through_table(env) if through_table is not None else src
            num_pages = src.shape[1]

            def pointer_of(batch, page, readable):
                pointers = np.zeros(page.shape, dtype=np.int64)
                where = np.nonzero(readable)
                pointers[where] = src.pointers(op_id, batch[where], page[where])
                return pointers

            values, _ = read_source(p, op_id, src, results, wanted, num_pages, pointer_of)
        else:
            values, _ = read_source(p, op_id, src, results, wanted, None, None)
        m: MemRef = env[dest]
        element_offsets = (stored * np.array(m.strides, dtype=np.int64)).sum(axis=1) * m.elem.size
        space = m.space
        if space.kind == "lds":
            addresses = widen(m.base, rt.lanes)[firsts][:, None] + element_offsets[None, :]
            _check_space(p, op_id, space, addresses, firsts, m.elem.size)  # a view placed past the buffer's end
            collective = np.full(addresses.shape, -3, dtype=np.int64)
            space.write(addresses, collective, values, m.elem, rt, op_id)
            rt.barrier(None, op_id)
        else:
            per_lane = values[rt.all_lanes // rt.block]
            addresses = widen(m.base, rt.lanes)[:, None] + element_offsets[None, :]
            _check_space(p, op_id, space, addresses, rt.all_lanes, m.elem.size)
            space.write(addresses, np.broadcast_to(rt.all_lanes[:, None], addresses.shape), per_lane, m.elem, rt, op_id)

    return run


@handles("rock.threadwise_read_into")
def compile_threadwise_read_into(p: Program, op: Any) -> Any:
    """Thread tid fills row i of its registers with vector i * block_size + tid of the tile."""
    source_part, dest_part, index_part, ptrs_part, first_part = segments(op)
    source, dest = p.slot(source_part[0]), p.slot(dest_part[0])
    indices = [p.slot(v) for v in index_part]
    ptrs = p.slot(ptrs_part[0]) if ptrs_part else None
    first = p.slot(first_part[0]) if first_part else None
    fn = affine_function(ir.AffineMapAttr(op.operation.attributes["map"]).value)
    valid_fn = valid_function(op)
    block_size = int_attr(op, "block_size")
    tile_shape = i64_array(op, "tile_shape")
    vector_dim, vector_len = int_attr(op, "vector_dim"), int_attr(op, "vector_len")
    num_pages = int_attr(op, "num_pages_per_batch")
    vector_grid = list(tile_shape)
    vector_grid[vector_dim] //= vector_len
    num_vectors = int(np.prod(vector_grid, dtype=np.int64))
    rows = -(-num_vectors // block_size)
    starts = all_coordinates(tuple(vector_grid))  # [num_vectors, rank]
    starts[:, vector_dim] *= vector_len
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        vector = np.arange(rows)[None, :] * block_size + rt.tid[:, None]  # [lanes, rows]
        in_tile = vector < num_vectors
        if mask is not None:
            in_tile &= mask[:, None]
        start = starts[np.minimum(vector, num_vectors - 1)]  # [lanes, rows, rank]
        tile_coords = []
        for d in range(len(tile_shape)):
            coord = start[:, :, d][:, :, None]
            if d == vector_dim:
                coord = coord + np.arange(vector_len)[None, None, :]
            tile_coords.append(coord)
        index_values = [widen(env[s], rt.lanes).astype(np.int64).reshape(-1, 1, 1) for s in indices]
        results = fn(index_values + tile_coords)
        wanted = valid_fn(index_values + tile_coords)
        src = env[source]
        if isinstance(src, PagedSource) and ptrs is None:
            # Each wave reads its pages' pointers from the page table itself (the op's wave_size form).
            def pointer_of(batch, page, readable):
                pointers = np.zeros(page.shape, dtype=np.int64)
                where = np.nonzero(readable & in_tile[:, :, None])
                pointers[where] = src.pointers(op_id, batch[where], page[where])
                return pointers

            values, _ = read_source(p, op_id, src, results, wanted, num_pages if num_pages is not None else src.shape[1],
                                    pointer_of)
        elif isinstance(src, PagedSource):
            pointer_memref: MemRef = env[ptrs]
            first_page = widen(env[first], rt.lanes).astype(np.int64).reshape(-1, 1, 1)
            slots = pointer_memref.shape[0]

            def pointer_of(batch, page, readable):
                local = page - first_page
                needed = readable & (local >= 0) & (local < slots) & in_tile[:, :, None]
                pointers = np.zeros(page.shape, dtype=np.int64)
                lane, row, lane_elem = np.nonzero(needed)
                if lane.size:
                    offsets = pointer_memref.base[lane] if pointer_memref.base.shape[0] > 1 else np.broadcast_to(pointer_memref.base, lane.shape)
                    addresses = offsets + local[lane, row, lane_elem] * pointer_memref.strides[0] * 8
                    i64 = pointer_memref.elem
                    pointers[lane, row, lane_elem] = pointer_memref.space.read(addresses, lane, i64, rt, op_id)
                return pointers

            # No num_pages_per_batch: the source's page count at run time (a dynamic view).
            values, _ = read_source(p, op_id, src, results, wanted, num_pages if num_pages is not None else src.shape[1],
                                    pointer_of)
        else:
            values, _ = read_source(p, op_id, src, results, wanted, None, None)
        m: MemRef = env[dest]
        lane, row = np.nonzero(in_tile)
        element_offsets = (row[:, None] * m.strides[0] + np.arange(vector_len)[None, :] * m.strides[1]) * m.elem.size
        addresses = widen(m.base, rt.lanes)[lane][:, None] + element_offsets
        m.space.write(addresses, np.broadcast_to(lane[:, None], addresses.shape), values[lane, row], m.elem, rt, op_id)

    return run


# ----------------------------------------------------------------------------
# Attention by the reference


def read_dense(p: Program, op_id: int, m: MemRef) -> np.ndarray:
    """Every element of a global memref (lane 0's view), as computed values."""
    coords = all_coordinates(m.shape)
    offsets = (coords * np.array(m.strides, dtype=np.int64)).sum(axis=1) * m.elem.size
    stored = read(p, op_id, m, m.base[:1], offsets, None)
    return m.elem.to_compute(stored[0]).reshape(m.shape)


def gather_pages(p: Program, op_id: int, label: str, source: PagedSource, heads_kv: int, head_dim: int) -> np.ndarray:
    """Dense [B, Hkv, Sk, D] from the pages; a null page reads 0 (docs/rock.md, ``rock.attention``): a null
    pointer, or for a block table view a slot the sequence does not own or an id outside the pool."""
    batch, num_pages, page_size = source.shape
    every = np.indices((batch, num_pages)).reshape(2, -1)
    table = source.pointers(op_id, every[0], every[1]).reshape(batch, num_pages)
    seq_k = source.seq_len_k or num_pages * page_size // (heads_kv * head_dim)
    used = heads_kv * seq_k * head_dim  # the tail of a partly filled last page holds no key
    flat = np.zeros((batch, num_pages * page_size), dtype=source.elem.storage)
    for b, page in zip(*np.nonzero(table)):
        addresses = int(table[b, page]) + source.element_offset(np.arange(page_size, dtype=np.int64)) * source.elem.size
        flat[b, page * page_size : (page + 1) * page_size] = p.rt.device.read(
            addresses, source.elem, lambda: f"{p.op_name(op_id)} ({label} page {page} of batch {b})", p.op_location(op_id))
    return source.elem.to_compute(flat[:, :used]).reshape(batch, heads_kv, seq_k, head_dim)


@handles("rock.attention", "rock.gridwise_attention_accel")
def compile_attention(p: Program, op: Any) -> Any:
    operands = attention_operands(op.operation)
    slots = {name: p.slot(value) if value is not None else None for name, value in operands.items()}
    q, k, v, out, lens = (slots[name] for name in ("q", "k", "v", "out", "seq_lens"))
    per_head = {d.name: slots[d.name] for d in variant_operands() if slots[d.name] is not None}
    scales = [slots["k_scale"], slots["v_scale"]]
    token_scales = [slots["k_scales"], slots["v_scales"]]
    attrs = op.operation.attributes
    heads_kv = int_attr(op, "num_heads_kv")
    causal = bool(ir.BoolAttr(attrs["causal"]).value) if "causal" in attrs else False
    scale = ir.FloatAttr(attrs["scale"]).value if "scale" in attrs else None
    attributes = {d.name: attr_value(attrs[d.name]) for d in variant_attributes() if d.name in attrs}
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        query = env[q].read(p, op_id) if isinstance(env[q], VarlenSource) else read_dense(p, op_id, env[q])
        head_dim = query.shape[3]
        seq_lens = read_dense(p, op_id, env[lens]).astype(np.int64) if lens is not None else None
        if seq_lens is None and isinstance(env[k], PagedSource):
            seq_lens = env[k].reading(op_id).seq_lens()  # CSR: the lengths come with the page table
        kv = []
        for label, slot, scale_slot, token_slot in (("k", k, scales[0], token_scales[0]), ("v", v, scales[1], token_scales[1])):
            value = env[slot]
            kv.append(gather_pages(p, op_id, label, value, heads_kv, head_dim) if isinstance(value, PagedSource)
                      else read_dense(p, op_id, value))
            if scale_slot is not None:  # per-tensor scale of an fp8 cache: the values are stored * scale
                kv[-1] = kv[-1] * np.float32(read_dense(p, op_id, env[scale_slot]).reshape(-1)[0])
            if token_slot is not None:  # per-token-head scales: a cache of their own, paged like K/V with D = 1
                cache = env[token_slot]
                per_token = (gather_pages(p, op_id, f"{label}_scales", cache, heads_kv, 1)
                             if isinstance(cache, PagedSource) else read_dense(p, op_id, cache)[..., None])
                kv[-1] = kv[-1] * per_token.astype(np.float32)
        if seq_lens is not None and ((seq_lens < 0) | (seq_lens > kv[0].shape[2])).any():
            raise InterpError(f"{p.op_name(op_id)}: seq_lens {seq_lens.tolist()} outside [0, {kv[0].shape[2]}]", p.op_location(op_id))
        variants = {name: read_dense(p, op_id, env[slot]) for name, slot in per_head.items()}
        result = reference.attention(query, kv[0], kv[1], seq_lens=seq_lens, causal=causal, scale=scale,
                                     **attributes, **variants)
        if isinstance(env[out], VarlenSource):
            env[out].write(p, op_id, result)
            return
        m: MemRef = env[out]
        coords = all_coordinates(m.shape)
        offsets = (coords * np.array(m.strides, dtype=np.int64)).sum(axis=1) * m.elem.size
        stored = m.elem.to_storage(result.reshape(-1).astype(np.float32))
        p.rt.device.write(m.base[0] + offsets, stored, m.elem, lambda: p.op_name(op_id), p.op_location(op_id))

    return run
