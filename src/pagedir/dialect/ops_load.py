"""Tiled load path ops: rock.blockwise_load_tile (L2) and rock.threadwise_read_into (L3).

Both ops describe a tile by an affine ``map`` from (indices..., tile
coordinates...) to source coordinates. For a dense source the results index the
source memref; for a paged source (a ``rock.deref`` result ``[B, P, S]``) the map
has two results, (batch, flat element position in the batch's concatenation of
pages), and the page of a position is ``flat floordiv S``.

An optional ``valid`` map over the same inputs restricts the points read, like the
inequalities of an ``affine_set``: a point is read only when every result of
``valid`` is ``>= 0``; any other point is not read and gives 0. Attention passes the
sequence length as an index so that keys past it are never read (a stale slot may
hold NaN or Inf).
"""

from __future__ import annotations

from collections.abc import Iterator

import mlir.ir as ir

from pagedir.dialect.core import (
    I1,
    I64,
    I64_ARRAY_ATTR,
    I64_ATTR,
    INDEX,
    MAP_ATTR,
    MEMREF,
    OPTIONAL,
    READ,
    UNIT_ATTR,
    VARIADIC,
    WRITE,
    Attr,
    OpDef,
    Operand,
)
from pagedir.dialect.types import PRIVATE, element_bytes, memory_space


def _check_map(op, tile_rank: int) -> Iterator[str]:
    """The map takes the indices and the tile coordinates and yields source coordinates."""
    affine_map = op.map
    paged = op.page_size is not None
    expected_inputs = len(op.indices) + tile_rank
    if affine_map.n_symbols:
        yield f"map must have no symbols, got {affine_map}"
    if affine_map.n_dims != expected_inputs:
        yield (
            f"map must take {expected_inputs} inputs ({len(op.indices)} indices + {tile_rank} tile "
            f"coordinates), got {affine_map.n_dims}"
        )
    expected_results = 2 if paged else op.source.type.rank
    what = "(batch, flat position)" if paged else f"one per dimension of {op.source.type}"
    if len(affine_map.results) != expected_results:
        yield f"map must have {expected_results} results {what}, got {len(affine_map.results)}"


def _check_valid(op, tile_rank: int) -> Iterator[str]:
    """``valid`` takes the same inputs as ``map`` and yields at least one value."""
    valid = op.valid
    if valid is None:
        return
    expected_inputs = len(op.indices) + tile_rank
    if valid.n_symbols or valid.n_dims != expected_inputs:
        yield f"valid must take the {expected_inputs} inputs of map and no symbols, got {valid}"
    if not valid.results:
        yield f"valid must have at least one result, got {valid}"


def _check_page_size(op, source: ir.MemRefType) -> Iterator[str]:
    if op.page_size <= 0:
        yield f"page_size must be positive, got {op.page_size}"
    elif source.rank == 3 and source.shape[2] != op.page_size:
        yield f"page_size {op.page_size} does not match the page length {source.shape[2]} of the source {source}"


class BlockwiseLoadTileOp(OpDef):
    name = "blockwise_load_tile"
    summary = "the workgroup loads one tile of a (possibly paged) source into LDS"
    description = """
`map` takes (indices..., tile coordinates...) to source coordinates. For a dense
source they index `source` (coordinates out of bounds read 0); for a paged source
(a `rock.deref` result `[B, P, S]`, with `page_table` and `page_size = S`) the map
yields (batch, flat element position in the batch's concatenation of pages), and
positions whose page is `>= P` or whose page pointer is null read 0. `dest` has the
tile's shape (any rank): the tile is every point of `dest`. With `valid` (same
inputs as `map`), a point is read only when every result of `valid` is `>= 0`;
the others are not read and give 0 (keys past a sequence's length, whatever
their slots hold).

With `lds_swizzle = array<i64: c, s, n, m>` the tile's rows are stored swizzled:
with `dest` seen as rows of its last dimension (D columns; row `r` is the
row-major number of the point's other coordinates), the chunk of `c` columns
number `k = d floordiv c` of row `r` is stored as chunk
`k xor (((r floordiv s) mod n) * m)` of that row (`n` and `m` powers of two, `n * m`
dividing `D / c`), moved whole. Readers of `dest` address it the same way; rows stay
dense (no padding bytes) while a column read by many rows spreads over the LDS banks.

With `lds_dma`, `rock-blockwise-load` loads the tile straight from global memory
into LDS (`rock.global_load_lds`) where the chip and the tile allow it (the same
result as without it).

After the op every thread of the workgroup sees the whole tile in `dest` (its
lowering ends with `rock.lds_barrier`). The op does not order earlier reads of
`dest`: the producer places a barrier before it when `dest` was read since the
last one. `index_bounds` (exclusive bounds of the indices) lets
`rock-blockwise-load` count exactly how many pages one tile can touch.
"""
    operands = (
        Operand("source", MEMREF, effect=READ, doc="dense memref or rock.deref result"),
        Operand("dest", MEMREF, effect=WRITE, overwrites=True, doc="LDS memref shaped like the tile"),
        Operand("indices", INDEX, VARIADIC, doc="tile indices fed to map"),
        Operand("page_table", MEMREF, OPTIONAL, effect=READ, doc="memref<B x P x 1 x i64> (paged)"),
    )
    attributes = (
        Attr("map", MAP_ATTR, doc="(indices..., tile coords...) -> source coordinates"),
        Attr("block_size", I64_ATTR, doc="threads per workgroup"),
        Attr("page_size", I64_ATTR, required=False, doc="elements per page (paged)"),
        Attr("index_bounds", I64_ARRAY_ATTR, required=False, doc="upper bounds of indices (exact page counts)"),
        Attr("valid", MAP_ATTR, required=False, doc="(indices..., tile coords...) -> values all >= 0 where a point is read"),
        Attr("lds_swizzle", I64_ARRAY_ATTR, required=False, doc="[c, s, n, m]: row r's chunk k of c elements stored as k xor ((r div s) mod n) m"),
        Attr("lds_dma", UNIT_ATTR, required=False, doc="load with direct global -> LDS loads where the chip and tile allow"),
    )
    example = """"rock.blockwise_load_tile"(%k_pages, %k_tile, %b, %h, %t, %k_table)
  {map = affine_map<(b, h, t, n, d) -> (b, (h * 64 + t * 16 + n) * 128 + d)>,
   block_size = 256, page_size = 2048, index_bounds = array<i64: 2, 2, 4>,
   operandSegmentSizes = array<i32: 1, 1, 3, 1>}
  : (memref<2x8x2048xf16>, memref<16x128xf16, #gpu.address_space<workgroup>>, index, index, index, memref<2x8x1xi64>) -> ()"""

    def verify(self, op) -> Iterator[str]:
        source, dest = op.source.type, op.dest.type
        if op.block_size <= 0:
            yield f"block_size must be positive, got {op.block_size}"
        if source.element_type != dest.element_type:
            yield f"dest element type {dest.element_type} does not match the source element type {source.element_type}"
        if not dest.has_static_shape:
            yield f"dest must have a static shape, got {dest}"
        if (op.page_table is None) != (op.page_size is None):
            yield "a paged load needs both page_table and page_size"
            return
        if op.page_size is not None:
            yield from _check_page_size(op, source)
        yield from _check_map(op, dest.rank)
        yield from _check_valid(op, dest.rank)
        bounds = op.index_bounds
        if bounds is not None and len(bounds) != len(op.indices):
            yield f"index_bounds has {len(bounds)} entries for {len(op.indices)} indices"
        if bounds is not None and any(b <= 0 for b in bounds):
            yield f"index_bounds must be positive, got {list(bounds)}"
        yield from _check_swizzle(op, dest)


def _check_swizzle(op, dest: ir.MemRefType) -> Iterator[str]:
    swizzle = op.lds_swizzle
    if swizzle is None:
        return
    if len(swizzle) != 4 or min(swizzle) <= 0 or any(v & (v - 1) for v in swizzle[2:]):
        yield f"lds_swizzle must be [chunk, rows per step, steps, multiplier], positive, the last two powers of two, got {list(swizzle)}"
    elif dest.rank < 2 or not dest.has_static_shape or dest.shape[-1] % (swizzle[0] * swizzle[2] * swizzle[3]):
        yield (f"lds_swizzle {list(swizzle)}: chunk * steps * multiplier must divide the last dim of a static dest "
               f"of rank >= 2, got {dest}")


class ThreadwiseReadIntoOp(OpDef):
    name = "threadwise_read_into"
    summary = "each thread reads its share of a tile, in vectors, into its registers"
    description = """
The tile (`tile_shape`, `map` as in `rock.blockwise_load_tile`) is cut into
vectors of `vector_len` consecutive points along `vector_dim`, numbered row-major
over the tile shape whose `vector_dim` extent is divided by `vector_len`. `dest`
is private `memref<R x vector_len x T>` with `R = ceil(num_vectors / block_size)`;
thread `tid` fills row `i` with vector `v = i * block_size + tid` when
`v < num_vectors` and leaves the other rows unchanged.

Paged (`lds_page_ptrs`, `first_page_index`, `page_size`, `num_pages_per_batch`):
a point reads 0 when its page is `>= num_pages_per_batch` (for a source with `?`
pages, absent: the page count at run time, whose pages past it have null pointers
in `lds_page_ptrs`), when
`page - first_page_index` is outside `lds_page_ptrs`, or when that pointer is 0;
otherwise the element at byte address `ptr + (flat mod page_size) * elem_bytes`.
The op reads `lds_page_ptrs` (declared, so liveness sees the pointer buffer's
reads). Dense: `source[map(...)]`, 0 out of bounds. With `valid`, a point whose
`valid` results are not all `>= 0` is not read and gives 0, as in
`rock.blockwise_load_tile`.

Paged with `wave_size` instead of `lds_page_ptrs` and `first_page_index`: the
lanes of each wave of `wave_size` threads read one page per row (the pass that
sets it proved so), and each wave reads that page's pointer from the page table
itself (the `rock.deref` table, or the block id of a `rock.block_table_view`); a
page past the batch's pages, a slot the sequence does not own or a block id
outside the pool reads 0.
"""
    operands = (
        Operand("source", MEMREF, effect=READ),
        Operand("dest", MEMREF, effect=WRITE, doc="private registers memref<R x vector_len x T>"),
        Operand("indices", INDEX, VARIADIC),
        Operand("lds_page_ptrs", MEMREF, OPTIONAL, effect=READ, doc="LDS memref of i64 page pointers"),
        Operand("first_page_index", INDEX, OPTIONAL, doc="page index held in lds_page_ptrs[0]"),
    )
    attributes = (
        Attr("map", MAP_ATTR),
        Attr("block_size", I64_ATTR),
        Attr("tile_shape", I64_ARRAY_ATTR),
        Attr("vector_dim", I64_ATTR, doc="tile dimension read in vectors"),
        Attr("vector_len", I64_ATTR, doc="elements per vector (at most 128 bits)"),
        Attr("page_size", I64_ATTR, required=False),
        Attr("num_pages_per_batch", I64_ATTR, required=False),
        Attr("valid", MAP_ATTR, required=False, doc="(indices..., tile coords...) -> values all >= 0 where a point is read"),
        Attr("wave_size", I64_ATTR, required=False,
             doc="paged without lds_page_ptrs: each wave of this many lanes reads its pages' pointers itself"),
    )

    def verify(self, op) -> Iterator[str]:
        tile_shape = list(op.tile_shape)
        vector_dim, vector_len = op.vector_dim, op.vector_len
        if op.block_size <= 0:
            yield f"block_size must be positive, got {op.block_size}"
            return
        if not 0 <= vector_dim < len(tile_shape):
            yield f"vector_dim {vector_dim} is outside the tile of rank {len(tile_shape)}"
            return
        if vector_len <= 0 or tile_shape[vector_dim] % vector_len:
            yield f"vector_len {vector_len} does not divide the tile extent {tile_shape[vector_dim]} along vector_dim"
            return
        if op.wave_size is not None:
            if op.page_size is None or op.lds_page_ptrs is not None or op.first_page_index is not None:
                yield "wave_size needs page_size and no lds_page_ptrs or first_page_index: each wave reads its own pointers"
                return
            if op.wave_size <= 0:
                yield f"wave_size must be positive, got {op.wave_size}"
                return
        paged_parts = (op.lds_page_ptrs, op.first_page_index, op.page_size)
        if op.wave_size is None and any(p is None for p in paged_parts) and any(p is not None for p in paged_parts):
            yield "a paged read needs lds_page_ptrs, first_page_index, page_size and num_pages_per_batch"
            return
        dynamic_pages = op.source.type.rank == 3 and op.source.type.is_dynamic_dim(1)
        if op.page_size is not None and (op.num_pages_per_batch is None) != dynamic_pages:
            yield ("a paged read needs lds_page_ptrs, first_page_index, page_size and num_pages_per_batch"
                   if not dynamic_pages else
                   f"num_pages_per_batch must be absent for a source with a dynamic page count, got {op.source.type}")
            return
        if op.page_size is not None:
            yield from _check_page_size(op, op.source.type)
            ptrs = op.lds_page_ptrs.type if op.lds_page_ptrs is not None else None
            if ptrs is not None and (ptrs.rank != 1 or ptrs.element_type != ir.IntegerType.get_signless(64)):
                yield f"lds_page_ptrs must be a rank-1 memref of i64, got {ptrs}"
        yield from _check_map(op, len(tile_shape))
        yield from _check_valid(op, len(tile_shape))
        dest = op.dest.type
        element = op.source.type.element_type
        if element_bytes(element) * 8 * vector_len > 128:
            yield f"vector_len {vector_len} of {element} exceeds 128 bits"
        num_vectors = 1
        for extent in tile_shape:
            num_vectors *= extent
        num_vectors //= vector_len
        rows = -(-num_vectors // op.block_size)
        expected = [rows, vector_len]
        if list(dest.shape) != expected or dest.element_type != element or memory_space(dest) != PRIVATE:
            yield f"dest must be private memref<{rows}x{vector_len}x{element}>, got {dest}"


class GlobalLoadLdsOp(OpDef):
    name = "global_load_lds"
    summary = "one wave's direct load of a page's bytes into LDS (buffer_load ... lds)"
    description = """
The hardware's direct global -> LDS load, per wave: each lane reads `bytes` bytes of
the page at `page_ptr` (an i64 device address, the same in every lane of a wave) from
its element `offset` (zero when `valid` is false or the bytes pass the page of
`page_size` elements), and they land in `dest` (LDS, row-major) at flat element
`dest_offset + lane * bytes / element bytes`, where `lane` is the lane's number in its
wave and `dest_offset` the same in every lane of the wave (the M0 base). The bytes
are in LDS only once the wave has waited for the load (`rocdl.s.waitcnt` with vmcnt):
reading them before is a race. `rock-buffer-load` lowers it to
`rocdl.raw.ptr.buffer.load.lds`. On NVIDIA (sm_80, sm_90) each lane's bytes are its own
`cp.async` (16 bytes, `nvvm.cp.async.shared.global`, zero-filled where invalid), in the
thread's next cp.async group: they are in LDS once the thread has committed the group and
waited for it (`nvvm.cp.async.commit.group`, `nvvm.cp.async.wait.group`).
"""
    operands = (
        Operand("mem", MEMREF, effect=READ, doc="global memref (element type only)"),
        Operand("offset", INDEX, doc="this lane's element offset in the page"),
        Operand("dest", MEMREF, effect=WRITE, doc="LDS memref, row-major"),
        Operand("dest_offset", INDEX, doc="flat element of dest where lane 0's bytes land (wave-uniform)"),
        Operand("valid", I1, OPTIONAL, doc="zero bytes when false"),
        Operand("page_ptr", I64, doc="device address of the page (wave-uniform)"),
    )
    attributes = (
        Attr("page_size", I64_ATTR, doc="elements per page"),
        Attr("bytes", I64_ATTR, doc="bytes per lane: 4 (gfx90a, gfx942, gfx950), 12 or 16 (gfx950), 16 (sm_80, sm_90)"),
    )
    example = """"rock.global_load_lds"(%mem, %off, %tile, %base, %valid, %ptr) {page_size = 2048, bytes = 4,
    operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<1xf16>, index, memref<64x128xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()"""

    def verify(self, op) -> Iterator[str]:
        dest = op.dest.type
        if memory_space(dest) != "workgroup":
            yield f"dest must be in LDS (workgroup memory), got {dest}"
        if dest.element_type != op.mem.type.element_type:
            yield f"dest element type {dest.element_type} does not match the memref element type {op.mem.type.element_type}"
        if op.bytes not in (4, 12, 16) or op.bytes % element_bytes(dest.element_type):
            yield f"bytes must be 4, 12 or 16 and a whole number of elements, got {op.bytes}"
        if op.page_size <= 0:
            yield f"page_size must be positive, got {op.page_size}"


OPS = (BlockwiseLoadTileOp, ThreadwiseReadIntoOp, GlobalLoadLdsOp)
