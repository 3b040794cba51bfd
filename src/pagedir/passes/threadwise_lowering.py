"""rock-threadwise-lowering: rock.threadwise_read_into -> one rock.global_load per vector (L3 -> L4).

Mirrors the paged path of rocMLIR's ThreadwiseGemmLowering. Thread ``tid`` walks
its register rows ``i`` (an ``scf.for``); row ``i`` holds vector ``v = i *
block_size + tid`` of the tile (skipped when ``v >= num_vectors``). For a paged
source each vector becomes:

```mlir
%flat  = affine.apply #flat(%indices..., %coords...)       // second map result
%page  = affine.apply (flat floordiv page_size)
%off   = affine.apply (flat mod page_size)
%local = arith.subi %page, %first_page_index
%slot  = clamp(%local, 0, num_ptrs - 1)                      // never index outside the buffer
%ptr   = memref.load %lds_page_ptrs[%slot] : i64
%valid = page < num_pages_per_batch AND local == slot AND ptr != 0
%x = "rock.global_load"(%source, %off, %valid, %ptr) {page_size = S} : (...) -> vector<8xf16>
vector.store %x, %registers[%i, %c0]
```

A page of a ``rock.block_table_view`` is one KV head's rows of a block: the in-page
offset ``o`` becomes ``(o floordiv D) * token_stride + o mod D`` (``Hkv * D`` for nhd, ``D``
for hnd) and the load's ``page_size`` the page's extent ``(block_size - 1) *
token_stride + D``, so ``rock-buffer-load``'s descriptor covers exactly those rows.

A D-major pool (vLLM's paged-attention value cache: :meth:`~pagedir.page_sources.PageSource.contiguous_run`
steps by D) is read with vectors along the tokens; where the op's ``valid`` varies along them (key <
seq_len) the vector is loaded when its first or last point is valid (every point lies in one page,
the descriptor covers it) and each point ``valid`` excludes is selected to 0: a stale slot may hold NaN.

A dense source gets one index per source dimension and ``valid`` = every
coordinate inside the source. The op's own ``valid`` map joins the validity of
each load: ``valid_i(indices..., coords...) >= 0`` for each of its results, so a
point it excludes (a key past the sequence's length) is never read. It is
evaluated at the vector's first point, so it must not vary along the vector
dimension when vectors are wider than one element (rejected otherwise).

Vectors have ``vector_len`` elements (chosen by ``rock-blockwise-load``, at most
128 bits). A paged read whose page size is not a multiple of the vector length is
rejected: a vector would straddle two pages.

Uniform page pointers. A buffer descriptor lives in scalar registers; when its
base differs across the lanes of a wave, LLVM wraps the load in a waterfall loop.
The pass proves, when it can, that the lanes of every wave read the same page
for every row (the page of each (row, wave) group's lowest and highest offsets
agree for every residue of the tile origin modulo the page size that the map's
coefficients allow). It then marks the loads ``rock.uniform_page_ptr``, and
``rock-buffer-load`` takes the pointer with ``readfirstlane``. The wave size is the
kernel's chip's (the ``arch`` option, else the kernel's ``rock.arch``; another
chip than the kernel names, or neither, is an error: ``pagedir.arch.kernel_chip``);
the proof needs the map to be affine-linear in the tile coordinates.

Pointers read per wave (the op's ``wave_size``, set by ``rock-blockwise-load``). The
wave's first lane is ``readfirstlane(tid floordiv wave_size) * wave_size``, computed
once at the function's entry; per row the page of the wave's first vector (row 0's
page plus ``r`` times the rows' page step when the rows walk the pages evenly) gives,
at wave-uniform indices, the page's pointer from the ``rock.deref`` table or the
address from a ``rock.block_table_view``'s block id (the page clamped into the table):
scalar loads, no LDS, no ``readfirstlane`` of pointers. A load is valid where the page
is in the table and its entry live (a non-null pointer; a block id inside the pool,
its slot owned), and the op's ``valid``. Up to 4 rows (or the adjacent-page rows), every
row's entry is read before any is used, so the wave waits once on its scalar loads per
tile; pages, heads, slots and the block's byte offset are 32-bit (the offset widened
once, or a 32x32->64 product for a pool of unknown size); a CSR row's ``indptr`` pair is
read before the loops it does not vary in; a slot count known only at run time is
divided by the lanes at once (``readlane`` per row) for block tables.

Adjacent pages. When a wave's rows span several pages (``wave_page_span``), each wave
checks at run time that every row's pointer is the first row's plus the page distance
times the page stride (page bytes), or for a view that every block id is the first's
plus the page distance with the last row live and of the first row's head, and the
first is live. Then one pointer and one descriptor over the run cover every row (offsets from
the first row's page, the load's ``page_size`` the run's extent); otherwise the rows
load page by page. Block tables promise no adjacency: the choice is a uniform
``scf.if`` and both sides read the same elements.

Options: ``arch`` (chip or target; empty = each kernel's ``rock.arch``).

Not modelled: validity records returned to the caller, index-difference
optimisation, transposing reads through LDS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mlir.ir as ir
import numpy as np
from mlir.dialects import affine, arith, memref, scf, vector

from pagedir.dialect import rock
from pagedir.dialect.ops_core import UNIFORM_PAGE_PTR_ATTR
from pagedir.dialect.types import element_bytes
from pagedir.offset_width import fits_u32
from pagedir.page_sources import source_of
from pagedir.passes.base import ChipOptions, Pass
from pagedir.passes.ir_utils import (
    MAX_LOAD_BYTES,
    LinearForm,
    NotLinear,
    dims_of,
    enclosing_function,
    index_const,
    linear_form,
    lower_kernel_ops,
    origin_residues,
    pages_uniform,
    thread_item,
    vector_coords,
    vector_offsets,
)
from pagedir.targets import TargetFamily, family_of


@dataclass(frozen=True)
class ThreadwiseLoweringOptions(ChipOptions):
    #: Chip or target string (its wave size); empty means each kernel's own ``rock.arch``.
    arch: str = ""


class ThreadwiseLoweringPass(Pass):
    argument = "rock-threadwise-lowering"
    summary = "Lower rock.threadwise_read_into to rock.global_load with page pointers and validity"
    Options = ThreadwiseLoweringOptions

    def run(self, module: ir.Operation) -> bool:
        return lower_kernel_ops(module, self.options.arch, "rock.threadwise_read_into",
                                lambda op, chip: lower_read_into(op, chip.wave_size, family_of(chip)))


def lower_read_into(op, wave_size: int, family: TargetFamily) -> bool:
    paged = op.page_size is not None
    if paged and op.page_size % op.vector_len:
        op.location.emit_error(
            f"'rock.threadwise_read_into' op page size {op.page_size} is not a multiple of the vector width "
            f"{op.vector_len}: a vector would straddle two pages"
        )
        return False
    if op.valid is not None and op.vector_len > 1 and varies_along_vector(op) and not masked_per_point(op):
        op.location.emit_error(
            f"'rock.threadwise_read_into' op valid {op.valid} depends on the vector dimension {op.vector_dim} "
            f"of vectors of {op.vector_len} elements: a load would be valid for part of its vector"
        )
        return False
    per_wave = paged and op.wave_size is not None
    uniform = paged and not per_wave and pages_uniform_per_wave(op, wave_size)
    with op.location, ir.InsertionPoint(op):
        if not per_wave:
            emit_rows(op, None, lambda coords, _: emit_paged_load(op, coords, uniform, family) if paged else emit_dense_load(op, coords))
        else:
            with ir.InsertionPoint.at_block_begin(enclosing_function(op.operation).regions[0].blocks[0]):  # loop-invariant; LLVM does not hoist a readfirstlane
                wave_first = first_lane_of_wave(rock.workitem_id(ir.IndexType.get()), op.wave_size, family)
            row_pages = wave_row_pages(op, wave_first)
            rows = op.dest.type.shape[0]
            span = wave_page_span(op)
            if span is not None:
                emit_adjacent_or_per_page(op, row_pages, span, wave_first, family)
            elif rows <= MAX_GROUPED_ROWS:  # every row's table read issued at once
                pages = [(page_address(op, row), page_live(op, row))
                         for row in read_row_pages(op, row_pages, rows, wave_first, family)]
                emit_rows(op, pages, lambda coords, page: emit_wave_paged_load(op, coords, family, *page))
            else:
                per_page = lambda row: wave_page_pointer(op, row_pages(row)[0])  # noqa: E731
                emit_rows(op, per_page, lambda coords, pointer: emit_wave_paged_load(op, coords, family, pointer))
    op.operation.erase()
    return True


def emit_rows(op, per_row, load) -> None:
    """Thread ``tid`` fills each register row ``i`` with ``load(coords, per_row(i))`` at the coordinates of its
    vector ``i * block_size + tid`` (skipped past the tile); ``per_row`` (or None) runs before that guard.
    A list ``per_row`` holds each row's value, computed before: the rows are then unrolled here."""
    rows = op.dest.type.shape[0]
    tid = rock.workitem_id(ir.IndexType.get())
    if isinstance(per_row, list):
        for row in range(rows):
            emit_row(op, tid, index_const(row), per_row[row], load)
        return
    loop = scf.ForOp(index_const(0), index_const(rows), index_const(1))
    with ir.InsertionPoint(loop.body):
        row = loop.induction_variable
        emit_row(op, tid, row, per_row(row) if per_row is not None else None, load)
        scf.YieldOp([])


def emit_row(op, tid: ir.Value, row: ir.Value, row_value, load) -> None:
    """Register row ``row`` of thread ``tid``: ``load(coords, row_value)`` (see :func:`emit_rows`)."""
    tile_shape = list(op.tile_shape)
    num_vectors = math.prod(tile_shape) // op.vector_len
    vector_index = thread_item(row, tid, op.block_size)
    guarded = num_vectors % op.block_size != 0
    body_point = ir.InsertionPoint.current
    if guarded:
        in_tile = arith.cmpi(arith.CmpIPredicate.ult, vector_index, index_const(num_vectors))
        body_point = ir.InsertionPoint(scf.IfOp(in_tile).then_block)
    with body_point:
        coords = vector_coords(vector_index, tile_shape, op.vector_dim, op.vector_len)
        store_row(load(coords, row_value), op.dest, row)
        if guarded:
            scf.YieldOp([])


def result_type(op) -> ir.Type:
    element = op.source.type.element_type
    return ir.VectorType.get([op.vector_len], element) if op.vector_len > 1 else element


def apply_result(op, position: int, coords: list[ir.Value]) -> ir.Value:
    affine_map = op.map
    expr = affine_map.results[position]
    if isinstance(expr, ir.AffineDimExpr):  # an operand itself (a batch index): no op that would tie it to the others
        return [*op.indices, *coords][expr.position]
    single = ir.AffineMap.get(affine_map.n_dims, 0, [affine_map.results[position]])
    return affine.apply(single, [*op.indices, *coords])


def varies_along_vector(op) -> bool:
    vector_input = len(op.indices) + op.vector_dim
    return any(vector_input in dims_of(expr) for expr in op.valid.results)


def with_op_validity(op, coords: list[ir.Value], valid: ir.Value | None) -> ir.Value | None:
    """``valid`` and every result of the op's ``valid`` map at ``coords`` being >= 0. For a vector masked per
    point (:func:`masked_per_point`): some point of the vector may be valid (each result >= 0 at its first or
    its last point, the ends of a linear function), the points then selected by :func:`masked_load`."""
    if op.valid is None:
        return valid
    last = None
    if masked_per_point(op):
        last = list(coords)
        last[op.vector_dim] = arith.addi(coords[op.vector_dim], index_const(op.vector_len - 1))
    for position in range(len(op.valid.results)):
        allowed = valid_at(op, position, coords)
        if last is not None:
            allowed = arith.ori(allowed, valid_at(op, position, last))
        valid = allowed if valid is None else arith.andi(valid, allowed)
    return valid


def valid_at(op, position: int, coords: list[ir.Value]) -> ir.Value:
    """Result ``position`` of the op's ``valid`` map at ``coords`` being >= 0."""
    single = ir.AffineMap.get(op.valid.n_dims, 0, [op.valid.results[position]])
    value = affine.apply(single, [*op.indices, *coords])
    return arith.cmpi(arith.CmpIPredicate.sge, value, index_const(0))


def masked_per_point(op) -> bool:
    """Whether the vectors run along the source's tokens (a D-major pool: rock-blockwise-load chose a vector
    dimension of the source's :meth:`~pagedir.page_sources.PageSource.contiguous_run` step) while the op's
    ``valid`` varies along them: each vector is then read whole (its points lie in one live page, stale
    slots and all) and its points past ``valid`` are selected to 0 (:func:`masked_load`)."""
    if op.valid is None or op.vector_len == 1 or op.page_size is None or not varies_along_vector(op):
        return False
    step, _ = source_of(op.source).contiguous_run(op.page_size)
    try:
        form = linear_form(op.map.results[1], len(op.indices), len(op.tile_shape))
        for expr in op.valid.results:  # linear along the vector: its valid points are an interval
            linear_form(expr, len(op.indices), len(op.tile_shape))
    except NotLinear:
        return False
    return step > 1 and form.tile_coeffs[op.vector_dim] == step


def valid_uniform_per_wave(op) -> bool:
    """Whether the op's ``valid`` is the same for the lanes of each wave (of ``op.wave_size``): it reads no
    tile coordinate but the vector dimension's, and the vectors of each wave's lanes share that coordinate
    (the tokens outermost: a wave reads columns of one token group)."""
    if op.wave_size is None:
        return False
    coordinates = range(len(op.indices), len(op.indices) + len(op.tile_shape))
    read = {d for expr in op.valid.results for d in dims_of(expr)} & set(coordinates)
    if read - {len(op.indices) + op.vector_dim}:
        return False
    grid = list(op.tile_shape)
    grid[op.vector_dim] //= op.vector_len
    along = np.unravel_index(np.arange(math.prod(grid)), grid)[op.vector_dim]
    group = min(op.wave_size, op.block_size)
    if op.block_size % group or len(along) % group:
        return False
    return bool((along.reshape(-1, group) == along.reshape(-1, group)[:, :1]).all())


def masked_load(op, coords: list[ir.Value], load: ir.Value, family: TargetFamily) -> ir.Value:
    """``load`` with each point the op's ``valid`` excludes set to 0 (a stale slot may hold NaN).

    Each result of ``valid`` is linear along the vector, so the valid points are an interval ``[lo, hi)``
    of it (32-bit: the bounds are sequence positions); the vector's 64-bit words (32-bit ones in a vector
    of 32 or 96 bits) are and-ed with the interval's bits, where a compare and a select per element cost
    several times more instructions.
    Where ``valid`` is the same for a wave's lanes (:func:`valid_uniform_per_wave`) the bits are scalar code."""
    if not masked_per_point(op):
        return load
    i32 = ir.IntegerType.get_signless(32)
    length = op.vector_len
    lo, hi = None, arith.constant(i32, length)
    uniform = valid_uniform_per_wave(op)
    for expr in op.valid.results:
        first = arith.index_cast(i32, affine.apply(ir.AffineMap.get(op.valid.n_dims, 0, [expr]), [*op.indices, *coords]))
        if uniform:  # the same for the wave's lanes: the masks are scalar code
            first = family.wave_uniform(first)
        slope = linear_form(expr, len(op.indices), len(op.tile_shape)).tile_coeffs[op.vector_dim]  # linear: checked
        if slope < 0:  # first + i * slope >= 0  <=>  i < first floordiv -slope + 1
            steps = first if slope == -1 else arith.floordivsi(first, arith.constant(i32, -slope))
            hi = arith.minsi(hi, arith.addi(steps, arith.constant(i32, 1)))
        elif slope > 0:  # i >= ceil(-first / slope)
            bound = arith.ceildivsi(arith.subi(arith.constant(i32, 0), first), arith.constant(i32, slope))
            lo = bound if lo is None else arith.maxsi(lo, bound)
        else:  # the same at every point
            valid = arith.cmpi(arith.CmpIPredicate.sge, first, arith.constant(i32, 0))
            hi = arith.select(valid, hi, arith.constant(i32, 0))
    element_bits = load.type.element_type.width
    width = 64 if length * element_bits % 64 == 0 else 32  # words of 64 bits: half the scalar instructions
    words, word_int = length * element_bits // width, ir.IntegerType.get_signless(width)

    def c(value: int, type_: ir.Type = word_int) -> ir.Value:
        return arith.constant(type_, value)

    def prefix(bits: ir.Value, word: int) -> ir.Value:
        """The bits of word ``word`` among the vector's first ``bits``: all, none, or the low ``bits - width *
        word`` (selects, not a clamp: LLVM makes a clamp of wave-uniform values a vector instruction)."""
        shift = arith.subi(bits, c(width * word)) if word else bits
        low = arith.subi(arith.shli(c(1), arith.andi(shift, c(width - 1))), c(1))
        none = arith.select(arith.cmpi(arith.CmpIPredicate.sle, shift, c(0)), c(0), low)
        return arith.select(arith.cmpi(arith.CmpIPredicate.sge, shift, c(width)), c(-1), none)

    def in_bits(count: ir.Value) -> ir.Value:
        bits = arith.muli(count, c(element_bits, i32))
        return bits if width == 32 else arith.extsi(word_int, bits)

    hi_bits = in_bits(hi)
    lo_bits = in_bits(lo) if lo is not None else None
    masks = []
    for word in range(words):
        mask = prefix(hi_bits, word)
        if lo_bits is not None:
            mask = arith.andi(mask, arith.xori(prefix(lo_bits, word), c(-1)))
        masks.append(mask)
    word_type = ir.VectorType.get([words], word_int)
    as_words = vector.bitcast(word_type, load)
    kept = arith.andi(as_words, vector.from_elements(word_type, masks))
    return vector.bitcast(load.type, kept)


def emit_paged_load(op, coords: list[ir.Value], uniform: bool, family: TargetFamily) -> ir.Value:
    page_size = op.page_size
    flat = apply_result(op, 1, coords)
    page = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineExpr.get_floor_div(ir.AffineDimExpr.get(0), page_size)]), [flat])
    offset = in_page_offset(flat, page_size)
    local = arith.subi(page, op.first_page_index)
    num_ptrs = op.lds_page_ptrs.type.shape[0]
    slot = arith.minsi(arith.maxsi(local, index_const(0)), index_const(num_ptrs - 1))
    ptr = memref.load(op.lds_page_ptrs, [slot])
    # A dynamic page count (no num_pages_per_batch): PagePtrLoad staged null pointers past it.
    in_table = (arith.cmpi(arith.CmpIPredicate.ult, page, index_const(op.num_pages_per_batch))
                if op.num_pages_per_batch is not None else arith.constant(ir.IntegerType.get_signless(1), 1))
    in_buffer = arith.cmpi(arith.CmpIPredicate.eq, local, slot)
    non_null = arith.cmpi(arith.CmpIPredicate.ne, ptr, arith.constant(ir.IntegerType.get_signless(64), 0))
    valid = with_op_validity(op, coords, arith.andi(arith.andi(in_table, in_buffer), non_null))
    offset, page_size = source_of(op.source).page_offset(offset, page_size)
    load = rock.global_load(result_type(op), op.source, [offset], valid, ptr, page_size=page_size)
    if uniform:
        load.owner.attributes[UNIFORM_PAGE_PTR_ATTR] = ir.UnitAttr.get()
    return masked_load(op, coords, load, family)


def in_page_offset(flat: ir.Value, page_size: int) -> ir.Value:
    """The element offset of flat position ``flat`` inside its page."""
    return affine.apply(ir.AffineMap.get(1, 0, [ir.AffineDimExpr.get(0) % page_size]), [flat])


def first_lane_of_wave(tid: ir.Value, wave_size: int, family: TargetFamily) -> ir.Value:
    """``(tid floordiv wave_size) * wave_size`` made wave-uniform (the family's :meth:`~pagedir.targets.TargetFamily.wave_uniform`
    of the wave's index, loop-invariant: on AMD one ``readfirstlane``): what is computed from it stays in scalar
    registers, so LLVM reads the page table with scalar loads. Without a scalar unit (NVIDIA) the value as it
    is: every lane of a warp computes the same table address, and the loads of a warp to one address are one
    request."""
    wave = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineExpr.get_floor_div(ir.AffineDimExpr.get(0), wave_size)]), [tid])
    return arith.muli(family.wave_uniform(wave), index_const(wave_size))


def wave_page(op, wave_first: ir.Value, row: ir.Value) -> tuple[tuple[ir.Value, ir.Value], ir.Value]:
    """((batch, page), page) of the wave's vectors in ``row`` (one page: rock-blockwise-load proved it),
    from the wave's first lane: wave-uniform values."""
    coords = vector_coords(thread_item(row, wave_first, op.block_size), list(op.tile_shape), op.vector_dim, op.vector_len)
    batch = apply_result(op, 0, coords)
    flat = apply_result(op, 1, coords)
    if position_non_negative(op):  # a shift, where a signed floordiv of 64 bits is a dozen scalar instructions
        page = arith.divui(flat, index_const(op.page_size))
        return (batch, page), page
    page = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineExpr.get_floor_div(ir.AffineDimExpr.get(0), op.page_size)]), [flat])
    return (batch, page), page


def position_non_negative(op) -> bool:
    """Whether the map's position is >= 0 at every tile point: a constant and coefficients >= 0 on the
    tile coordinates and on indices used as they are (tile indices are non-negative: grid ids, loop counters)."""
    try:
        form = linear_form(op.map.results[1], len(op.indices), len(op.tile_shape))
    except NotLinear:
        return False
    return (form.const >= 0 and all(c >= 0 for c in form.tile_coeffs)
            and all(m >= 0 and isinstance(e, ir.AffineDimExpr) for m, e in form.index_terms))


def row_vector_offsets(op) -> tuple[LinearForm, np.ndarray] | None:
    """The map's linear form and the flat offset (from the origin) of each thread's vector in each row of
    the tile, ``[rows, block_size]``; None when the threads do not take whole rows of at least 2 or the
    map is not linear."""
    tile_shape = list(op.tile_shape)
    num_vectors = math.prod(tile_shape) // op.vector_len
    rows = num_vectors // op.block_size
    if num_vectors % op.block_size or rows < 2:
        return None
    try:
        form = linear_form(op.map.results[1], len(op.indices), len(tile_shape))
    except NotLinear:
        return None
    return form, vector_offsets(form, tile_shape, op.vector_dim, op.vector_len).reshape(rows, op.block_size)


def row_page_step(op) -> int | None:
    """``k`` when the page of every wave's row ``r`` is the page of its row 0 plus ``r * k`` for every origin
    the coefficients of the indices allow (rows of one tile walk the pages evenly); else None."""
    found = row_vector_offsets(op)
    if found is None:
        return None
    form, offsets = found
    rows = offsets.shape[0]
    firsts = offsets[:, :: min(op.wave_size, op.block_size)]  # [rows, waves]
    pages = (origin_residues(form, op.page_size)[:, None, None] + firsts[None]) // op.page_size
    steps = pages - pages[:, :1, :]
    step = int(steps[0, 1, 0])
    return step if np.array_equal(steps, np.broadcast_to(np.arange(rows)[None, :, None] * step, steps.shape)) else None


def wave_row_pages(op, wave_first: ir.Value):
    """``row -> ((batch, page), page)`` of the wave's row (:func:`wave_page`); when the rows walk the pages
    evenly (:func:`row_page_step`), row 0's page is computed here once and row ``r``'s is ``page0 + r * k``
    (an add, where the division of the flat position by the page size would be redone per row)."""
    step = row_page_step(op)
    if step is None:
        return lambda row: wave_page(op, wave_first, row)
    (batch, first_page), _ = wave_page(op, wave_first, index_const(0))
    walk = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0) + ir.AffineDimExpr.get(1) * step])

    def at(row: ir.Value) -> tuple[tuple[ir.Value, ir.Value], ir.Value]:
        page = affine.apply(walk, [first_page, row])
        return (batch, page), page

    return at


def wave_page_pointer(op, batch_page: tuple[ir.Value, ir.Value]) -> ir.Value:
    """The i64 pointer of ``(batch, page)``, read from the page table at wave-uniform indices; 0 past the
    batch's pages."""
    return table_page_pointer(op.source, *batch_page)


def table_page_pointer(source: ir.Value, batch: ir.Value, page: ir.Value) -> ir.Value:
    """``page``'s address of ``batch`` (:meth:`pagedir.page_sources.PageSource.page_address`); 0 when ``page``
    is past the batch's pages. Branch-free: the page is clamped into the table and the pointer selected, so a
    wave-uniform ``page`` gives scalar loads and no branch."""
    i64 = ir.IntegerType.get_signless(64)
    form = source_of(source)
    count = form.page_count()
    in_table = arith.cmpi(arith.CmpIPredicate.ult, page, count)
    clamped = arith.select(in_table, page, index_const(0))
    pointer = form.page_address(batch, clamped)
    return arith.select(in_table, pointer, arith.constant(i64, 0))


@dataclass
class RowPage:
    """A wave's row's page as read from its table: whether the page is inside the table, and the entry
    read at the page clamped into the table (any page of it: the entry is used only where the page is in
    it): the form's entry (:meth:`pagedir.page_sources.PageSource.read_entries`)."""

    in_table: ir.Value
    entry: object


def read_row_pages(op, row_pages, rows: int, wave_first: ir.Value, family: TargetFamily) -> list[RowPage]:
    """The :class:`RowPage` of each of the wave's ``rows``, every table read issued after all the index
    arithmetic and before any use: one wait on the wave's scalar loads per tile, not one per row. Pages in
    32 bits (a sequence's pages are counted by i32 table sizes; a row is at most a few tiles past them)."""
    i32 = ir.IntegerType.get_signless(32)
    form = source_of(op.source)
    count = arith.index_cast(i32, form.page_count())
    static_count = None if ir.MemRefType(op.source.type).is_dynamic_dim(1) else op.source.type.shape[1]
    places = []
    for r in range(rows):
        (batch, page), _ = row_pages(index_const(r))
        page32 = arith.index_cast(i32, page)
        in_table = arith.cmpi(arith.CmpIPredicate.ult, page32, count)
        if static_count:  # the last page past the table: a bound LLVM sees, so the read's offset is 32-bit
            clamped = arith.minui(page32, arith.constant(i32, static_count - 1))
        else:
            clamped = arith.select(in_table, page32, arith.constant(i32, 0))
        places.append((batch, in_table, clamped))
    # the lanes' division reads each lane's quotient into scalar registers; without a scalar unit each row divides its own
    divide = form.divides_pages_across_lanes and family.scalar_unit
    heads_slots = lane_divided_pages(op, row_pages, rows, wave_first, count, family) if divide else None
    entries = form.read_entries([(batch, clamped) for batch, _, clamped in places], heads_slots)
    return [RowPage(in_table, entry) for (_, in_table, _), entry in zip(places, entries)]


def lane_divided_pages(op, row_pages, rows: int, wave_first: ir.Value, count: ir.Value, family: TargetFamily):
    """Each row's (head, slot) of a form that divides pages by a slot count known only at run time
    (:attr:`pagedir.page_sources.PageSource.divides_pages_across_lanes`), divided by the lanes at once: lane
    ``r`` divides row ``r``'s page (clamped into the table) and each row reads its lane's quotient and
    remainder (:meth:`~pagedir.targets.TargetFamily.read_lane`: AMD's ``readlane``), where the wave would divide row after row in scalar code (a 32-bit division
    by a run-time value is a dozen instructions). None for rows not evenly apart."""
    step = row_page_step(op)
    if step is None or rows > op.wave_size:
        return None
    i32, index = ir.IntegerType.get_signless(32), ir.IndexType.get()
    lane_row = arith.minui(arith.subi(rock.workitem_id(index), wave_first), index_const(rows - 1))
    (_, first_page), _ = row_pages(index_const(0))
    page = arith.index_cast(i32, affine.apply(
        ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0) + ir.AffineDimExpr.get(1) * step]), [first_page, lane_row]))
    clamped = arith.select(arith.cmpi(arith.CmpIPredicate.ult, page, count), page, arith.constant(i32, 0))
    slots = source_of(op.source).slots_per_sequence()
    head, block_slot = arith.divui(clamped, slots), arith.remui(clamped, slots)
    return [(family.read_lane(head, r), family.read_lane(block_slot, r)) for r in range(rows)]


def page_address(op, row: RowPage) -> ir.Value:
    """The i64 address of ``row``'s page, meaningful where :func:`page_live` (a load is invalid elsewhere:
    its offset lies past the descriptor's range, the address is never formed)."""
    return source_of(op.source).entry_address(row.entry)


def page_live(op, row: RowPage) -> ir.Value:
    """Whether ``row``'s page is inside the table and names memory: a non-null pointer, a live block."""
    return source_of(op.source).entry_live(row.in_table, row.entry)


def emit_wave_paged_load(op, coords: list[ir.Value], family: TargetFamily, pointer: ir.Value,
                         live: ir.Value | None = None) -> ir.Value:
    """A paged load through the wave's page pointer: the element offset of the lane's vector in that page;
    valid where ``live`` (default: the pointer is not null) and the op's ``valid``."""
    offset = in_page_offset(apply_result(op, 1, coords), op.page_size)
    if live is None:
        live = arith.cmpi(arith.CmpIPredicate.ne, pointer, arith.constant(ir.IntegerType.get_signless(64), 0))
    valid = with_op_validity(op, coords, live)
    offset, page_size = source_of(op.source).page_offset(offset, op.page_size)
    return masked_load(op, coords, rock.global_load(result_type(op), op.source, [offset], valid, pointer, page_size=page_size),
                       family)


# ----------------------------------------------------------------------------
# Adjacent pages: one pointer and one descriptor for a wave's rows (chosen at run time).


#: Rows whose page pointers the adjacent-page check holds at once (2 SGPRs each): past it, page by page.
MAX_ADJACENT_ROWS = 8
#: Rows (not whole pages apart) whose table entries a wave reads at once: with 8 (f32 tiles, two rows to a
#: page) the pipelined loop's addresses and descriptors spill scalar registers; past it, row by row.
MAX_GROUPED_ROWS = 4


def wave_page_span(op) -> int | None:
    """The pages one wave's rows reach, counted from its first row's page, when the adjacent-page path
    applies: every row lies whole pages after row 0 (:func:`rows_whole_pages_apart`: each lane's offset is
    then its row-0 offset plus whole pages), at most MAX_ADJACENT_ROWS rows, a run inside 32 bits; else None."""
    pages_per_row = rows_whole_pages_apart(op)
    rows = op.dest.type.shape[0]
    if not pages_per_row or rows > MAX_ADJACENT_ROWS:
        return None
    span = (rows - 1) * pages_per_row + 1
    stride, extent = source_of(op.source).page_stride_and_extent(op.page_size)
    run_bytes = ((span - 1) * stride + extent) * element_bytes(op.source.type.element_type)
    return span if fits_u32(run_bytes + MAX_LOAD_BYTES - 1) else None


def emit_adjacent_or_per_page(op, row_pages, span: int, wave_first: ir.Value, family: TargetFamily) -> None:
    """Each wave reads every row's table entry at once and checks whether the pages lie back to back in
    memory (:func:`pages_adjacent`); then it reads them through the first row's pointer (one descriptor,
    offsets from its page), else page by page, computing the other rows' addresses only there. A uniform
    branch: block tables do not promise adjacency, so the choice is made at run time; both read the same
    elements."""
    stride, extent = source_of(op.source).page_stride_and_extent(op.page_size)
    read = read_row_pages(op, row_pages, op.dest.type.shape[0], wave_first, family)
    first_ptr = page_address(op, read[0])
    choice = scf.IfOp(pages_adjacent(op, read, first_ptr), has_else=True)
    with ir.InsertionPoint(choice.then_block):  # each lane's offset: its row-0 offset in the page, plus whole pages
        tid = rock.workitem_id(ir.IndexType.get())
        row0 = vector_coords(tid, list(op.tile_shape), op.vector_dim, op.vector_len)
        in_page, _ = source_of(op.source).page_offset(in_page_offset(apply_result(op, 1, row0), op.page_size), op.page_size)
        row_stride = rows_whole_pages_apart(op) * stride  # elements from a lane's vector in one row to the next
        pages_apart = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0) + ir.AffineDimExpr.get(1) * row_stride])

        def load(coords: list[ir.Value], row: ir.Value) -> ir.Value:
            offset = affine.apply(pages_apart, [in_page, row])
            return masked_load(op, coords, rock.global_load(result_type(op), op.source, [offset],
                                                            with_op_validity(op, coords, None), first_ptr,
                                                            page_size=(span - 1) * stride + extent), family)

        emit_rows(op, lambda row: row, load)
        scf.YieldOp([])
    with ir.InsertionPoint(choice.else_block):
        pages = [(first_ptr if r == 0 else page_address(op, row), page_live(op, row)) for r, row in enumerate(read)]
        emit_rows(op, pages, lambda coords, page: emit_wave_paged_load(op, coords, family, *page))
        scf.YieldOp([])


def pages_adjacent(op, read: list[RowPage], first_ptr: ir.Value) -> ir.Value:
    """Whether row ``r``'s page lies ``r * k`` pages after row 0's in memory for every row (``k``:
    :func:`rows_whole_pages_apart`, so row ``r``'s virtual page is row 0's plus ``r * k``) and row 0's is
    live: :meth:`pagedir.page_sources.PageSource.entries_adjacent`."""
    form = source_of(op.source)
    stride, _ = form.page_stride_and_extent(op.page_size)
    page_bytes = stride * element_bytes(op.source.type.element_type)
    rows = [(row.in_table, row.entry) for row in read]
    return form.entries_adjacent(rows, first_ptr, rows_whole_pages_apart(op), page_bytes)


def rows_whole_pages_apart(op) -> int | None:
    """``k`` when every lane's vector in row ``r`` lies ``r * k`` whole pages after its vector in row 0 (the same
    offset inside the page, for any origin); else None."""
    found = row_vector_offsets(op)
    if found is None:
        return None
    _, offsets = found
    rows = offsets.shape[0]
    apart = offsets - offsets[:1]
    distance = int(apart[1, 0])
    if distance % op.page_size or not np.array_equal(apart, np.arange(rows)[:, None] * distance * np.ones_like(apart)):
        return None
    return distance // op.page_size


def emit_dense_load(op, coords: list[ir.Value]) -> ir.Value:
    source_shape = op.source.type.shape
    indices, valid = [], None
    for position, extent in enumerate(source_shape):
        index = apply_result(op, position, coords)
        bound = memref.dim(op.source, index_const(position)) if op.source.type.is_dynamic_dim(position) else index_const(extent)
        inside = arith.cmpi(arith.CmpIPredicate.ult, index, bound)
        valid = inside if valid is None else arith.andi(valid, inside)
        indices.append(index)
    return rock.global_load(result_type(op), op.source, indices, with_op_validity(op, coords, valid), None)


def store_row(value: ir.Value, registers: ir.Value, row: ir.Value) -> None:
    if isinstance(value.type, ir.VectorType):
        vector.store(value, registers, [row, index_const(0)])
    else:
        memref.store(value, registers, [row, index_const(0)])


def pages_uniform_per_wave(op, wave_size: int) -> bool:
    """True when, for every row and wave, all lanes' vectors lie in one page for any reachable origin."""
    try:
        form = linear_form(op.map.results[1], len(op.indices), len(op.tile_shape))
    except NotLinear:
        return False
    return pages_uniform(form, list(op.tile_shape), op.vector_dim, op.vector_len, op.page_size, op.block_size, wave_size)
