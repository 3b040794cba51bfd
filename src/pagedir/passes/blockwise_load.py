"""rock-blockwise-load: lower rock.blockwise_load_tile into staged per-thread reads (L2 -> L3).

Mirrors rocMLIR's BlockwiseLoadTileToThreadwise (paged path of PR #2221). A
paged tile load becomes three stages:

* ``PagePtrLoad``: the pages the tile can touch are counted at compile time;
  slot ``s`` of an LDS pointer buffer gets ``page_table[batch, first_page + s, 0]``
  (0 past the batch's pages), or for a ``rock.block_table_view`` source the page's
  address ``pool + (id * block_stride + head * head_stride) * elem_bytes`` from the
  block id of its slot (each id read once per tile, like a pointer; 0 for a slot the
  sequence does not own or an id outside the pool), thread ``t`` writing slots ``t, t + block_size, ...``
  (a tile of 1-token pages has more pages than the block has threads), then
  ``rock.lds_barrier``. The buffer is an i8 ``rock.alloc`` hoisted to the function
  entry and viewed as ``memref<num_pages x i64>`` so that ``rock-reuse-lds`` can place it.
* ``GlobalRead``: ``rock.threadwise_read_into`` fills a private register buffer,
  carrying the pointer buffer, the first page index, the page size and the
  number of pages per batch.
* ``LDSWrite``: the registers are stored into ``dest`` (vector stores when the
  vector dimension is contiguous in ``dest``, else scalar stores), then
  ``rock.lds_barrier``.

Pointers read per wave. When every wave reads one page per row of the tile (the proof
of :func:`pages_uniform`, for the kernel's chip: the ``arch`` option or ``rock.arch``),
there is no PagePtrLoad stage, no pointer buffer and no barrier for them:
``rock.threadwise_read_into`` gets ``wave_size`` instead, and ``rock-threadwise-lowering``
has each wave read its pages' pointers (block ids) from the table at wave-uniform
indices, which LLVM selects as scalar loads (``s_load_dwordx2`` / ``s_load_dword``).
Tiles whose waves read several pages per row (1-token pages, small pages against wide
waves), and kernels naming no chip, keep the LDS stage.

A dense tile load gets the same GlobalRead and LDSWrite stages without paging.
The op's ``valid`` map (points not read) travels to ``rock.threadwise_read_into``;
when it varies along the vector dimension the tile is read one point per load.

```mlir
"rock.blockwise_load_tile"(%pages, %tile, %b, %h, %t, %table) {map = ..., page_size = 2048, ...}
// becomes
%raw = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>     // at function entry
%ptrs = memref.view %raw[%c0][] : ... to memref<2xi64, #gpu.address_space<workgroup>>
scf.execute_region no_inline {
  %first = affine.apply #first_page(%b, %h, %t)
  scf.if (tid < 2) { %p = scf.if (first + tid < P) {memref.load %table[..]} else {0}; memref.store %p, %ptrs[tid] }
  // with more pages than threads: scf.for %r = 0 to ceil(num_pages / block_size) { slot = r * block_size + tid ... }
  "rock.lds_barrier"() ; scf.yield } {rock.stage = "PagePtrLoad"}
scf.execute_region no_inline { "rock.threadwise_read_into"(%pages, %regs, %b, %h, %t, %ptrs, %first) ... } {rock.stage = "GlobalRead"}
scf.execute_region no_inline { registers -> %tile ; "rock.lds_barrier"() } {rock.stage = "LDSWrite"}
```

Exact page count. The flat position of a tile point is ``origin(indices) + sum_j
c_j * x_j`` (the map must be affine-linear in the tile coordinates). Pages are
indexed by ``page - first_page`` so the buffer must span from the page of the
tile's minimum to the page of its maximum: ``(r + t_max) floordiv P - (r + t_min)
floordiv P + 1`` where ``r`` is the origin modulo ``P``. The pass takes the maximum
over the residues ``r`` the origin can actually reach (from ``index_bounds`` and
the coefficients of the indices; all residues of the right congruence class when
a bound is missing). This is exact for K-like ``[D, N]`` and V-like ``[N, D]``
tiles alike; rocMLIR's ``ceil(((d - 1) * k_global + k - 1) / P) + 1`` assumes the
K layout and over-counts V (see tests/unit/test_page_count.py).

Barriers. PagePtrLoad ends with one barrier, after all its rounds, so every thread
sees every pointer before GlobalRead (each slot has one writer, so the rounds need
none between them). The write-after-read hazard on the pointer buffer (the next
iteration's PagePtrLoad overwriting pointers a slow thread still reads) is closed
by the trailing LDSWrite barrier: a thread only passes it once every thread has
finished its GlobalRead. ``dest`` must therefore be in LDS.

Vectors along the tokens. A source whose elements lie side by side along the tokens (vLLM's
paged-attention value cache ``[num_blocks, Hkv, D, block_size]``: its page source's
``contiguous_run`` steps by D) is read with vectors of the tile dimension of that coefficient
(16 bytes: 8 f16 tokens of one column), the tokens outermost so that a wave's lanes read one page;
LDSWrite stores each element at its ``[n + i, d]`` place of the tile, which the products read as
any V tile. No direct-to-LDS loads there (a lane's dword would be two rows of the pool).

Short unit-stride dimensions. Where the tile dimension of unit stride is shorter than a 16-byte vector and
another dimension continues it in the source (its coefficient is that extent), and nothing else (the map's
other results, ``valid``) uses either, the two are read as one dimension (:func:`merged_vector`): the
transposed V tile's 7-D view holds 4 columns of D 64 f16 in its unit-stride dimension, and is read with
16-byte loads as a row-major tile is. LDSWrite stores each vector in pieces of the inner extent.

Swizzled tiles (``lds_swizzle``): LDSWrite stores a chunk at a time, each at its swizzled column.

Direct-to-LDS loads (``lds_dma``, where :func:`dma_fallback` finds none of its reasons: a CDNA
chip, a paged row-major 2-D tile whose rows are whole runs of their pages, a row a whole number
of a wave's 256 bytes): GlobalRead and LDSWrite become one ``GlobalToLDS`` stage with no
registers: phase 0 reads every load's page pointer, phase A issues every ``rock.global_load_lds``
of the wave (64 lanes x 4 bytes, one run of a row; on gfx950 64 lanes x 16 bytes where a page holds
the whole rows one such load covers, 4 rows of D 128 f16: a quarter of the loads and their address
work; the waves take the tile's loads in turn),
phase B waits (``rocdl.s.waitcnt`` vmcnt(0)), then ``rock.lds_barrier`` (rock-pipeline may split
phase B off into an ``LDSWait`` stage and issue phase A a tile ahead). With ``lds_swizzle``
a lane reads the global element whose swizzled place is its LDS dword (inverse swizzle: the
LDS writes stay linear). Elsewhere the op keeps the register path (gfx1100/RDNA: no such loads;
D 64 f16: a row is 128 bytes, half a wave's load). rocMLIR has no direct-to-LDS path for
paged loads: here the page pointer of each load is the wave's own.

A family that copies tiles into LDS its own way (:class:`pagedir.passes.families.DirectCopy`: NVIDIA's
``cp.async``) is asked first: how wide its copy of the tile is, and the GlobalToLDS stage it emits.

Options: ``arch`` (chip or target; empty = each kernel's ``rock.arch``, none: LDS pointers).

Not modelled: global prefetch, double buffering, private
destinations, maps that are not affine-linear in the tile coordinates, and a
compacted pointer buffer for strided tiles (their buffer spans skipped pages).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mlir.ir as ir
import numpy as np
from mlir.dialects import affine, arith, memref, rocdl, scf, vector

from pagedir.dialect import rock
from pagedir.dialect.types import element_bytes, is_lds, lds_bytes_type, private_space, strides_and_offset
from pagedir.arch import ChipError, kernel_chip, kernel_chip_or_none
from pagedir.page_sources import source_of
from pagedir.passes.base import ChipOptions, Pass, kernel_functions
from pagedir.passes.families import lowering_of, row_source_fallback
from pagedir.passes.ir_utils import (
    LinearForm,
    NotLinear,
    dims_of,
    find_ops,
    index_const,
    linear_form,
    open_stage,
    pages_uniform,
    swizzled_column,
    thread_item,
    vector_coords,
)

MAX_VECTOR_BITS = 128
#: Beyond this many (residue, step) pairs the reachable residues are over-approximated by a congruence class.
_RESIDUE_WORK_LIMIT = 1 << 24


# ----------------------------------------------------------------------------
# Geometry: the flat position as a LinearForm, origin(indices) + sum_j c_j * x_j.


def tile_offset_range(coeffs: list[int], tile_shape: list[int]) -> tuple[int, int, list[int]]:
    """(t_min, t_max, coordinates of the minimum) of ``sum c_j x_j`` over the tile."""
    t_min = sum(min(0, c * (n - 1)) for c, n in zip(coeffs, tile_shape))
    t_max = sum(max(0, c * (n - 1)) for c, n in zip(coeffs, tile_shape))
    argmin = [0 if c >= 0 else n - 1 for c, n in zip(coeffs, tile_shape)]
    return t_min, t_max, argmin


def reachable_residues(form: LinearForm, page_size: int, bounds: list[int] | None) -> np.ndarray:
    """Every value ``origin mod page_size`` can take, given the bounds of the indices."""
    reachable = np.zeros(page_size, dtype=bool)
    reachable[form.const % page_size] = True
    for mult, expr in form.index_terms:
        bound = None
        if isinstance(expr, ir.AffineDimExpr) and bounds is not None:
            bound = bounds[expr.position]
        step = mult % page_size
        period = page_size // math.gcd(step, page_size)
        count = period if bound is None else min(bound, period)
        if count * page_size > _RESIDUE_WORK_LIMIT:
            count = period  # over-approximate: the whole congruence class
        if count == period:
            # Adding every multiple of gcd(step, P): a residue class closes over that subgroup.
            group = math.gcd(step, page_size)
            classes = np.zeros(group, dtype=bool)  # (np.unique would import numpy.ma, slow to load, on every compile)
            classes[np.nonzero(reachable)[0] % group] = True
            reachable = classes[np.arange(page_size) % group]
            continue
        grown = np.zeros_like(reachable)
        for k in range(count):
            grown |= np.roll(reachable, (k * step) % page_size)
        reachable = grown
    return np.nonzero(reachable)[0]


def pages_per_tile(form: LinearForm, tile_shape: list[int], page_size: int, bounds: list[int] | None) -> int:
    """The largest number of consecutive page slots ``[first_page, last_page]`` any tile needs."""
    t_min, t_max, _ = tile_offset_range(form.tile_coeffs, tile_shape)
    residues = reachable_residues(form, page_size, bounds)
    spans = (residues + t_max) // page_size - (residues + t_min) // page_size + 1
    return int(spans.max())


def choose_vector(form: LinearForm, tile_shape: list[int], elem_bits: int, extent: int | None) -> tuple[int, int]:
    """(vector_dim, vector_len): the tile dimension with unit stride, and the widest vector
    (<= 128 bits, a power of two) that divides the tile extent and keeps every vector aligned,
    i.e. every other term of the position (and ``extent``, the source row length for a dense
    source) is a multiple of it. (0, 1) when no dimension has unit stride."""
    unit_dims = [j for j, c in enumerate(form.tile_coeffs) if c == 1]
    if not unit_dims:
        return 0, 1
    vector_dim = unit_dims[-1]
    multiples = [form.const, *(m for m, _ in form.index_terms)]
    multiples += [c for j, c in enumerate(form.tile_coeffs) if j != vector_dim]
    if extent is not None:
        multiples.append(extent)
    vector_len = max(1, MAX_VECTOR_BITS // elem_bits)
    while vector_len > 1 and (tile_shape[vector_dim] % vector_len or any(m % vector_len for m in multiples)):
        vector_len //= 2
    return vector_dim, vector_len


def merged_vector(op, form: LinearForm, tile_shape: list[int], vector_dim: int, vector_len: int,
                  elem_bits: int) -> tuple[int, int] | None:
    """(outer, inner extent) when the unit-stride dimension is shorter than a 16-byte vector and another
    dimension continues it in the source (coefficient = its extent): the two are read as one, so a
    16-byte load spans them (the 7-D view of a transposed V tile: 4 columns per dimension at D 64 f16).
    Only where nothing else tells them apart: the map's other results and ``valid`` use neither, and
    the tile goes through registers (the direct-to-LDS loads write rows as they lie)."""
    inner = tile_shape[vector_dim]
    if op.lds_dma or vector_len != inner or vector_len * elem_bits >= MAX_VECTOR_BITS:
        return None
    num_indices = len(op.indices)
    outer = [j for j, c in enumerate(form.tile_coeffs) if j != vector_dim and c == inner and tile_shape[j] > 1]
    if not outer:
        return None
    used = {num_indices + vector_dim, num_indices + outer[0]}
    others = list(op.map.results)[:-1] + (list(op.valid.results) if op.valid is not None else [])
    if any(used & set(dims_of(e)) for e in others):
        return None
    return outer[0], inner


def choose_strided_vector(form: LinearForm, tile_shape: list[int], elem_bits: int, step: int, run: int) -> tuple[int, int]:
    """(vector_dim, vector_len) for a source whose elements ``o, o + step, ...`` lie side by side in runs of
    ``run`` (:meth:`pagedir.page_sources.PageSource.contiguous_run`): the tile dimension of coefficient
    ``step``, the widest vector (<= 128 bits, whole 32-bit words) dividing ``run`` and its extent whose
    first point is always a multiple of ``vector_len * step`` up to terms that stay below ``step`` (a
    token's columns). (0, 1) when no dimension has that coefficient."""
    dims = [j for j, c in enumerate(form.tile_coeffs) if c == step]
    if not dims:
        return 0, 1
    vector_dim = dims[-1]
    below = [j for j, c in enumerate(form.tile_coeffs) if j != vector_dim and 0 < c < step]
    if sum(form.tile_coeffs[j] * (tile_shape[j] - 1) for j in below) >= step:
        below = []
    multiples = [form.const, *(m for m, _ in form.index_terms)]
    multiples += [c for j, c in enumerate(form.tile_coeffs) if j != vector_dim and j not in below]
    vector_len = max(1, MAX_VECTOR_BITS // elem_bits)
    while vector_len > 1 and (tile_shape[vector_dim] % vector_len or run % vector_len
                              or any(m % (vector_len * step) for m in multiples)):
        vector_len //= 2
    if vector_len * elem_bits % 32:  # masked per 32-bit word (rock-threadwise-lowering): a point per load
        vector_len = 1
    return vector_dim, vector_len


def plan_pages_uniform_per_wave(op, plan: TilePlan, wave_size: int) -> bool:
    """:func:`pages_uniform` for the tile as ``plan`` reads it."""
    try:
        form = linear_form(plan.read_map.results[1], len(op.indices), len(plan.read_shape))
    except NotLinear:
        return False
    return pages_uniform(form, plan.read_shape, plan.vector_dim, plan.vector_len, op.page_size, op.block_size, wave_size)


# ----------------------------------------------------------------------------
# IR helpers.


def unit_stride_last(type_: ir.MemRefType) -> bool:
    layout = strides_and_offset(type_)
    return layout is not None and layout[0][-1] == 1


# ----------------------------------------------------------------------------
# The lowering of one op.


@dataclass
class TilePlan:
    """How the threads read the tile: in ``read_order`` (dest dimensions, largest source stride
    first), so that consecutive threads read consecutive memory."""

    read_order: list[int]
    read_shape: list[int]
    read_map: ir.AffineMap
    vector_dim: int
    vector_len: int
    num_vectors: int
    rows: int
    num_pages: int = 0
    first_page_map: ir.AffineMap | None = None
    batch_map: ir.AffineMap | None = None
    #: (outer, inner extent): the vector's dest dimension ``read_order[vector_dim]`` is read together with
    #: dest dimension ``outer`` (:func:`merged_vector`): read coordinate x is (x div inner, x mod inner)
    merged: tuple[int, int] | None = None


class BlockwiseLoadPass(Pass):
    argument = "rock-blockwise-load"
    summary = "Lower rock.blockwise_load_tile: page pointers read per wave or staged in LDS, then per-thread reads"
    Options = ChipOptions

    def run(self, module: ir.Operation) -> bool:
        ok = True
        for func in kernel_functions(module):
            wave_size = kernel_wave_size(func, self.options.arch)
            if wave_size is False:
                ok = False
                continue
            entry = func.regions[0].blocks[0]
            hoist_point = ir.InsertionPoint(entry.operations[0])
            chip = chip_for_direct_loads(func)
            for op in find_ops(func, "rock.blockwise_load_tile"):
                ok = lower_blockwise_load(op.opview, hoist_point, wave_size, chip) and ok
        return ok


def kernel_wave_size(func: ir.Operation, arch: str) -> int | None | bool:
    """The wave size of the kernel's chip; None when neither the kernel nor the option names a chip
    (pages are then staged in LDS, which needs no wave size); False after an error (a conflict)."""
    if not arch and "rock.arch" not in func.attributes:
        return None
    chip = kernel_chip_or_none(func, arch)
    return False if chip is None else chip.wave_size


def plan_tile(op) -> TilePlan | str:
    """Geometry of the tile, or the reason it cannot be lowered."""
    dest_type = op.dest.type
    if not is_lds(dest_type):
        return f"dest must be in LDS (workgroup memory), got {dest_type}"
    tile_shape = list(dest_type.shape)
    num_indices = len(op.indices)
    contiguous = op.map.results[-1]
    try:
        form = linear_form(contiguous, num_indices, len(tile_shape))
    except NotLinear:
        return f"map must be affine-linear in the tile coordinates, got {contiguous}"
    paged = op.page_size is not None
    merged = None
    source_type = op.source.type
    elem_bits = element_bytes(source_type.element_type) * 8
    extent = None if paged else source_type.shape[-1]
    step, run = source_of(op.source, op.page_table).contiguous_run(op.page_size) if paged else (1, 0)
    if step > 1:  # a D-major pool: vectors along the tokens, masked point by point (rock-threadwise-lowering)
        vector_dim, vector_len = choose_strided_vector(form, tile_shape, elem_bits, step, run)
    else:
        vector_dim, vector_len = choose_vector(form, tile_shape, elem_bits, extent)
        merged = merged_vector(op, form, tile_shape, vector_dim, vector_len, elem_bits)
        if merged is not None:  # read as one dimension: the outer one of extent 1
            tile_shape = list(tile_shape)
            tile_shape[vector_dim] *= tile_shape[merged[0]]
            tile_shape[merged[0]] = 1  # its coordinate is always 0: its coefficient no longer counts
            form = LinearForm([0 if j == merged[0] else c for j, c in enumerate(form.tile_coeffs)], form.index_terms, form.const)
            vector_dim, vector_len = choose_vector(form, tile_shape, elem_bits, extent)
        if op.valid is not None and any(num_indices + vector_dim in dims_of(e) for e in op.valid.results):
            vector_len = 1  # validity that changes along a vector: one point per load
    # Vectors along the tokens keep the tokens outermost: a wave's lanes then read one token group's columns,
    # of one page, where with the vectors innermost they would span the tile's tokens and pages.
    read_order = sorted(range(len(tile_shape)), key=lambda j: (step == 1 and j == vector_dim, -abs(form.tile_coeffs[j]), j))
    read_map = permute_tile_inputs(op.map, num_indices, read_order)
    read_shape = [tile_shape[j] for j in read_order]
    num_vectors = math.prod(tile_shape) // vector_len
    rows = -(-num_vectors // op.block_size)
    plan = TilePlan(read_order, read_shape, read_map, read_order.index(vector_dim), vector_len, num_vectors, rows,
                    merged=merged if step == 1 else None)
    if not paged:
        return plan
    batch_expr = op.map.results[0]
    if any(d >= num_indices for d in dims_of(batch_expr)):
        return f"the batch result {batch_expr} of map must not depend on the tile coordinates"
    bounds = list(op.index_bounds) if op.index_bounds is not None else None
    plan.num_pages = pages_per_tile(form, tile_shape, op.page_size, bounds)
    _, _, argmin = tile_offset_range(form.tile_coeffs, tile_shape)
    to_origin = ir.AffineMap.get(
        num_indices, 0, [ir.AffineDimExpr.get(i) for i in range(num_indices)] + [ir.AffineConstantExpr.get(x) for x in argmin]
    )
    first_page = ir.AffineExpr.get_floor_div(contiguous.compose(to_origin), op.page_size)
    plan.first_page_map = ir.AffineMap.get(num_indices, 0, [first_page])
    plan.batch_map = ir.AffineMap.get(num_indices, 0, [batch_expr.compose(to_origin)])
    return plan


def permute_tile_inputs(affine_map: ir.AffineMap, num_indices: int, read_order: list[int]) -> ir.AffineMap:
    """``affine_map`` taking the tile coordinates in ``read_order`` (position p is dest dimension read_order[p])."""
    inputs = [ir.AffineDimExpr.get(i) for i in range(num_indices)]
    inputs += [ir.AffineDimExpr.get(num_indices + read_order.index(j)) for j in range(len(read_order))]
    substitution = ir.AffineMap.get(affine_map.n_dims, 0, inputs)
    return ir.AffineMap.get(affine_map.n_dims, 0, [expr.compose(substitution) for expr in affine_map.results])


def lower_blockwise_load(op, hoist_point: ir.InsertionPoint, wave_size: int | None = None, chip=None) -> bool:
    plan = plan_tile(op)
    if isinstance(plan, str):
        op.location.emit_error(f"'rock.blockwise_load_tile' op {plan}")
        return False
    loc = op.location
    element = op.source.type.element_type
    # Each wave reads one page per row: the wave reads that page's pointer itself (a scalar load,
    # in rock-threadwise-lowering), no LDS pointer buffer, no PagePtrLoad stage, no barrier.
    # Direct-to-LDS loads read the page pointers staged in LDS (each load's own: phase 0).
    own_copy = None if chip is None else lowering_of(chip).direct_copy  # None: buffer ... lds loads
    if not op.lds_dma:
        dma_bytes = None
    elif own_copy is not None:
        dma_bytes = own_copy.width(op, chip.wave_size)
    else:
        dma_bytes = dma_width(op, plan, chip)
    dma = dma_bytes is not None
    per_wave = (not dma and op.page_size is not None and wave_size is not None
                and plan_pages_uniform_per_wave(op, plan, wave_size))
    with loc, hoist_point:
        registers = rock.alloc(ir.MemRefType.get([plan.rows, plan.vector_len], element, memory_space=private_space()))
        page_ptrs = None
        if op.page_size is not None and not per_wave:
            ptr_bytes = rock.alloc(lds_bytes_type(plan.num_pages * 8))
            ptr_type = ir.MemRefType.get([plan.num_pages], ir.IntegerType.get_signless(64), memory_space=lds_bytes_type(1).memory_space)
            page_ptrs = memref.ViewOp(ptr_type, ptr_bytes, index_const(0), []).result
    with loc, ir.InsertionPoint(op):
        if page_ptrs is not None:
            emit_page_ptr_load(op, plan, page_ptrs)
        if dma and own_copy is not None:
            own_copy.emit(op, plan, page_ptrs, chip.wave_size, element_source)
        elif dma:
            emit_global_to_lds(op, plan, page_ptrs, chip.wave_size, dma_bytes)
        else:
            emit_global_read(op, plan, registers, page_ptrs, wave_size if per_wave else None)
            emit_lds_write(op, plan, registers)
    if dma:
        registers.owner.erase()
    op.operation.erase()
    return True


def emit_page_ptr_load(op, plan: TilePlan, page_ptrs: ir.Value) -> None:
    """Thread t stages the pointers of slots t, t + block_size, ...: ``ceil(num_pages / block_size)``
    rounds, a loop with a static trip count when there is more than one (LLVM unrolls it)."""
    block_size = op.block_size
    rounds = -(-plan.num_pages // block_size)
    with ir.InsertionPoint(open_stage("PagePtrLoad", op.location)):
        tid = rock.workitem_id(ir.IndexType.get())
        first_page = affine.apply(plan.first_page_map, list(op.indices))
        batch = affine.apply(plan.batch_map, list(op.indices))
        if rounds == 1:
            stage_page_ptr(op, plan, batch, first_page, tid, page_ptrs)
        else:
            round_loop = scf.ForOp(index_const(0), index_const(rounds), index_const(1))
            with ir.InsertionPoint(round_loop.body):
                slot = thread_item(round_loop.induction_variable, tid, block_size)
                stage_page_ptr(op, plan, batch, first_page, slot, page_ptrs)
                scf.YieldOp([])
        # One barrier after every round: each slot has a single writer and is read only in GlobalRead.
        rock.lds_barrier()
        scf.YieldOp([])


def stage_page_ptr(op, plan: TilePlan, batch: ir.Value, first_page: ir.Value, slot: ir.Value, page_ptrs: ir.Value) -> None:
    """``page_ptrs[slot] = page_table[batch, first_page + slot, 0]`` (0 past the batch's pages); when the
    last round is partial (num_pages not a multiple of block_size), only for ``slot < num_pages``."""
    form = source_of(op.source, op.page_table)
    i64 = ir.IntegerType.get_signless(64)
    partial = plan.num_pages % op.block_size != 0
    slot_point = ir.InsertionPoint.current
    if partial:
        in_buffer = arith.cmpi(arith.CmpIPredicate.ult, slot, index_const(plan.num_pages))
        slot_point = ir.InsertionPoint(scf.IfOp(in_buffer).then_block)
    with slot_point:
        page = arith.addi(first_page, slot)
        in_table = arith.cmpi(arith.CmpIPredicate.ult, page, form.page_count())
        pick = scf.IfOp(in_table, [i64], has_else=True)
        with ir.InsertionPoint(pick.then_block):
            scf.YieldOp([form.page_address(batch, page)])
        with ir.InsertionPoint(pick.else_block):
            scf.YieldOp([arith.constant(i64, 0)])
        memref.store(pick.result, page_ptrs, [slot])
        if partial:
            scf.YieldOp([])


def emit_global_read(op, plan: TilePlan, registers: ir.Value, page_ptrs: ir.Value | None,
                     wave_size: int | None = None) -> None:
    """The GlobalRead stage; paged with ``page_ptrs`` (staged in LDS) or ``wave_size`` (each wave reads its own)."""
    paged = op.page_size is not None
    with ir.InsertionPoint(open_stage("GlobalRead", op.location)):
        first_page = affine.apply(plan.first_page_map, list(op.indices)) if page_ptrs is not None else None
        rock.threadwise_read_into(
            op.source,
            registers,
            list(op.indices),
            page_ptrs,
            first_page,
            map=plan.read_map,
            block_size=op.block_size,
            tile_shape=plan.read_shape,
            vector_dim=plan.vector_dim,
            vector_len=plan.vector_len,
            page_size=op.page_size if paged else None,
            # A dynamic page count is checked where the pointers are staged: past it they are null.
            num_pages_per_batch=op.source.type.shape[1] if paged and not op.source.type.is_dynamic_dim(1) else None,
            valid=permute_tile_inputs(op.valid, len(op.indices), plan.read_order) if op.valid is not None else None,
            wave_size=wave_size,
        )
        scf.YieldOp([])


def emit_lds_write(op, plan: TilePlan, registers: ir.Value) -> None:
    """Each thread stores its register rows into ``dest`` at the coordinates of its vectors."""
    dest = op.dest
    dest_type = dest.type
    element = dest_type.element_type
    dest_vector_dim = plan.read_order[plan.vector_dim]
    vector_stores = plan.vector_len > 1 and dest_vector_dim == dest_type.rank - 1 and unit_stride_last(dest_type)
    with ir.InsertionPoint(open_stage("LDSWrite", op.location)):
        tid = rock.workitem_id(ir.IndexType.get())
        rows = scf.ForOp(index_const(0), index_const(plan.rows), index_const(1))
        with ir.InsertionPoint(rows.body):
            row = rows.induction_variable
            vector_index = thread_item(row, tid, op.block_size)
            body_point = ir.InsertionPoint.current
            if plan.num_vectors % op.block_size:
                in_tile = arith.cmpi(arith.CmpIPredicate.ult, vector_index, index_const(plan.num_vectors))
                guard = scf.IfOp(in_tile)
                body_point = ir.InsertionPoint(guard.then_block)
            with body_point:
                read_coords = vector_coords(vector_index, plan.read_shape, plan.vector_dim, plan.vector_len)
                coords = [read_coords[plan.read_order.index(j)] for j in range(dest_type.rank)]
                if plan.merged is not None:  # pieces of the inner extent, at consecutive outer coordinates
                    outer, inner = plan.merged
                    x = coords[dest_vector_dim]
                    coords[dest_vector_dim] = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineDimExpr.get(0) % inner]), [x])
                    for first in range(0, plan.vector_len, inner):
                        piece = list(coords)
                        piece[outer] = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineExpr.get_floor_div(
                            ir.AffineDimExpr.get(0) + first, inner)]), [x])
                        if op.lds_swizzle is not None:
                            store_swizzled(op, registers, row, piece, inner, dest_vector_dim, first)
                        else:
                            store_points(registers, row, piece, inner, dest_vector_dim, dest, first)
                elif op.lds_swizzle is not None:
                    store_swizzled(op, registers, row, coords, plan.vector_len, dest_vector_dim)
                elif vector_stores:
                    vector_type = ir.VectorType.get([plan.vector_len], element)
                    value = vector.load(vector_type, registers, [row, index_const(0)])
                    vector.store(value, dest, coords)
                else:
                    store_points(registers, row, coords, plan.vector_len, dest_vector_dim, dest)
                if plan.num_vectors % op.block_size:
                    scf.YieldOp([])
            scf.YieldOp([])
        rock.lds_barrier()
        scf.YieldOp([])


def store_points(registers: ir.Value, row: ir.Value, coords: list[ir.Value], vector_len: int, vector_dim: int,
                 dest: ir.Value, lane: int = 0) -> None:
    """Store register row ``row`` from element ``lane`` on, one point per store, along ``vector_dim`` from ``coords``."""
    for i in range(vector_len):
        value = memref.load(registers, [row, index_const(lane + i)])
        point = list(coords)
        if i:
            point[vector_dim] = arith.addi(coords[vector_dim], index_const(i))
        memref.store(value, dest, point)


def store_swizzled(op, registers: ir.Value, row: ir.Value, coords: list[ir.Value], vector_len: int, vector_dim: int,
                   lane: int = 0) -> None:
    """Store register row ``row`` (the tile vector at ``coords``, from element ``lane`` on) into the swizzled
    ``dest``: a chunk (or the vector, if shorter) per store, each at its rotated column; a vector along another
    dimension than the columns, one element per store."""
    dest = op.dest
    dest_type = ir.MemRefType(dest.type)
    element, rank = dest_type.element_type, dest_type.rank
    chunk, rows_per_step = list(op.lds_swizzle)[:2]
    along_columns = vector_dim == rank - 1 and unit_stride_last(dest_type)
    piece = min(chunk, vector_len) if along_columns else 1
    # A vector along a row dimension whose rows all lie within one step of the flip (the step a whole
    # number of that dimension's spans of rows) has one flip: its first element's row, one address
    # computation for all its elements (their addresses then differ by constants).
    rows_of_dim = math.prod(dest_type.shape[vector_dim:rank - 1])
    one_flip = not along_columns and vector_dim < rank - 1 and rows_per_step % rows_of_dim == 0
    if one_flip:  # its elements stored through a view from the first: constant offsets LLVM folds
        column = swizzled_column(list(op.lds_swizzle), flat_row(coords[:-1], dest_type.shape[:-1]), coords[-1])
        sizes = [1] * rank
        sizes[vector_dim] = vector_len
        sub = memref.subview(dest, list(coords[:-1]) + [column], sizes, [1] * rank)
        for first in range(vector_len):
            at = [index_const(0)] * rank
            at[vector_dim] = index_const(first)
            memref.store(memref.load(registers, [row, index_const(lane + first)]), sub, at)
        return
    for first in range(0, vector_len, piece):
        point = list(coords)
        if first:
            point[vector_dim] = arith.addi(coords[vector_dim], index_const(first))
        point[-1] = swizzled_column(list(op.lds_swizzle), flat_row(point[:-1], dest_type.shape[:-1]), point[-1])
        if piece == 1:
            memref.store(memref.load(registers, [row, index_const(lane + first)]), dest, point)
        else:
            value = vector.load(ir.VectorType.get([piece], element), registers, [row, index_const(lane + first)])
            vector.store(value, dest, point)


def flat_row(coords: list[ir.Value], shape: list[int]) -> ir.Value:
    """The row-major number of ``coords`` in ``shape`` (the row of a tile seen as rows of its last dimension)."""
    if len(coords) == 1:
        return coords[0]
    dims = [ir.AffineDimExpr.get(i) for i in range(len(coords))]
    expr = dims[0]
    for dim, extent in zip(dims[1:], shape[1:]):
        expr = expr * extent + dim
    return affine.apply(ir.AffineMap.get(len(coords), 0, [expr]), list(coords))


# ----------------------------------------------------------------------------
# Direct global -> LDS loads (lds_dma): the GlobalToLDS stage.

#: Bytes per lane of one direct-to-LDS load: the dword form, which every chip with such loads has
#: (``Chip.lds_dma_sizes``: gfx90a, gfx942, gfx950; gfx950 also has 12 and 16 bytes; RDNA none).
DMA_BYTES = 4
#: Widths tried, widest first: a 16-byte load (gfx950) moves a wave's 1024 bytes, 4 rows of D 128 f16,
#: in one instruction where the dword form takes 4.
DMA_WIDTHS = (16, DMA_BYTES)
#: ``s_waitcnt`` immediate (gfx9 encoding) that waits for every vector memory load of the wave: vmcnt 0,
#: expcnt (bits 6:4) and lgkmcnt (11:8) at their maximum, so they do not wait.
WAIT_VMCNT_0 = 0x0F70


def chip_for_direct_loads(func: ir.Operation):
    """The kernel's chip when it names one (direct-to-LDS loads need it), else None: without ``lds_dma``
    the lowering needs no chip, so a kernel naming none is no error here."""
    try:
        return kernel_chip(func)
    except ChipError:
        return None


def dma_width(op, plan: TilePlan, chip) -> int | None:
    """The widest direct-to-LDS load (bytes per lane) ``op``'s tile can take (:data:`DMA_WIDTHS`), None: none."""
    return next((nbytes for nbytes in DMA_WIDTHS if dma_fallback(op, plan, chip, nbytes) is None), None)


def dma_fallback(op, plan: TilePlan, chip, nbytes: int = DMA_BYTES) -> str | None:
    """Why ``op``'s tile cannot be loaded with direct-to-LDS loads of ``nbytes`` a lane (None: it can). A
    wave's load puts its lanes' bytes side by side in LDS: each one must be one run of a dest row, or
    whole consecutive rows of one page (the 16-byte form: 4 rows of D 128 f16), read in order."""
    if chip is None or nbytes not in chip.lds_dma_sizes:
        if nbytes != DMA_BYTES and chip is not None and DMA_BYTES in chip.lds_dma_sizes:
            return f"{chip.name} has no {nbytes}-byte direct-to-LDS loads (gfx950 does)"
        return f"{'no chip' if chip is None else chip.name} has no direct-to-LDS buffer loads (gfx90a, gfx942, gfx950 do)"
    if op.page_size is None:
        return "the source is not paged (the direct path is built for page pointers only)"
    dest_type = op.dest.type
    elem = element_bytes(dest_type.element_type)
    if dest_type.rank != 2 or strides_and_offset(dest_type) != ([dest_type.shape[1], 1], 0):
        return f"dest {dest_type} is not a row-major 2-D tile"
    rows, columns = dest_type.shape
    if nbytes % elem:
        return f"{elem}-byte elements do not fill a lane's {nbytes} bytes"
    span = chip.wave_size * nbytes // elem
    # whole rows per load for the wider forms (the dword form keeps one run of a row, as it always has)
    rows_per_load = span // columns if nbytes > DMA_BYTES and span > columns and span % columns == 0 else 1
    if rows_per_load == 1 and columns % span:
        return f"a row of {columns} elements is not a whole number of waves' loads ({span} elements each)"
    form = linear_form(op.map.results[-1], len(op.indices), 2)
    if form.tile_coeffs != [columns, 1] or op.page_size % columns:
        return "the tile's rows are not whole, consecutive runs of its pages"
    if rows_per_load > 1:
        group = rows_per_load * columns  # a load's rows: one page's, from a row the origin's alignment keeps
        if rows % rows_per_load or op.page_size % group or form.const % group or any(
                factor % group for factor, _ in form.index_terms):
            return f"the tile's rows are not whole groups of {rows_per_load} rows of a page (one {nbytes}-byte load)"
    return row_source_fallback(op, elem, DMA_BYTES)


def element_source(op, form, page_ptrs: ir.Value, first_page: ir.Value, coords: list[ir.Value],
                   last_page: int | None = None) -> tuple[ir.Value, ir.Value, int, ir.Value]:
    """Where a direct-to-LDS copy reads the tile element at ``coords`` (op's indices, row, column): its page's
    pointer (staged in ``page_ptrs``; the slot clamped to ``last_page`` when given), the element's offset in
    the page (the page source's) with the page extent it is bounded by, and whether it may be read (a null
    page reads nothing, nor does a place ``op.valid`` rules out)."""
    d0 = ir.AffineDimExpr.get(0)
    position = affine.apply(ir.AffineMap.get(len(coords), 0, [op.map.results[-1]]), coords)
    page = affine.apply(ir.AffineMap.get(2, 0, [ir.AffineExpr.get_floor_div(d0, op.page_size) - ir.AffineDimExpr.get(1)]),
                        [position, first_page])
    if last_page is not None:
        page = arith.minui(page, index_const(last_page))
    pointer = memref.load(page_ptrs, [page])
    offset = affine.apply(ir.AffineMap.get(1, 0, [d0 % op.page_size]), [position])
    offset, page_size = form.page_offset(offset, op.page_size)
    valid = arith.cmpi(arith.CmpIPredicate.ne, pointer, arith.constant(ir.IntegerType.get_signless(64), 0))
    if op.valid is not None:
        for expr in op.valid.results:
            value = affine.apply(ir.AffineMap.get(len(coords), 0, [expr]), coords)
            valid = arith.andi(valid, arith.cmpi(arith.CmpIPredicate.sge, value, index_const(0)))
    return pointer, offset, page_size, valid


def emit_global_to_lds(op, plan: TilePlan, page_ptrs: ir.Value, wave: int, nbytes: int = DMA_BYTES) -> None:
    """The tile straight from its pages into LDS, in two phases: every wave issues all its loads (load j of
    the tile: ``wave * 4`` bytes, dest elements from ``j * span``, one run of a row; the waves take them in
    turn), then waits for them (``s_waitcnt vmcnt(0)``), then the workgroup meets at a barrier. Each load's
    page pointer is the wave's (one per load: a row lies in one page). With ``lds_swizzle`` a lane reads the
    global element whose swizzled place is its LDS dword: LDS is written linearly (inverse swizzle)."""
    dest = op.dest
    rows, columns = dest.type.shape
    elem = element_bytes(dest.type.element_type)
    per_lane = nbytes // elem
    span = wave * per_lane
    rows_per_load = span // columns if span > columns else 1  # whole rows (dma_fallback)
    loads = rows * columns // span
    waves = -(-op.block_size // wave)
    rounds = -(-loads // waves)
    form = source_of(op.source, op.page_table)
    with ir.InsertionPoint(open_stage("GlobalToLDS", op.location)):
        tid = rock.workitem_id(ir.IndexType.get())
        d0 = ir.AffineDimExpr.get(0)
        wave_id = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineExpr.get_floor_div(d0, wave)]), [tid])
        lane = affine.apply(ir.AffineMap.get(1, 0, [d0 % wave]), [tid])
        first_page = affine.apply(plan.first_page_map, list(op.indices))
        # Phase 0: every load's page pointer and lane offset. Reading the pointers (LDS) between the loads
        # would make LLVM wait for each load before the next read (it may alias the loads' LDS bytes).
        issues = []
        for r in range(rounds):
            load = affine.apply(ir.AffineMap.get(1, 0, [d0 + r * waves]), [wave_id])
            start = affine.apply(ir.AffineMap.get(1, 0, [d0 * span]), [load])
            if rows_per_load == 1:
                row = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineExpr.get_floor_div(d0, columns)]), [start])
                column = affine.apply(ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0) % columns + ir.AffineDimExpr.get(1) * per_lane]),
                                      [start, lane])
            else:  # the lane's element of the load's rows
                element_of = ir.AffineDimExpr.get(0) + ir.AffineDimExpr.get(1) * per_lane
                row = affine.apply(ir.AffineMap.get(2, 0, [ir.AffineExpr.get_floor_div(element_of, columns)]), [start, lane])
                column = affine.apply(ir.AffineMap.get(2, 0, [element_of % columns]), [start, lane])
            if op.lds_swizzle is not None:  # xor swizzle: its own inverse
                column = swizzled_column(list(op.lds_swizzle), row, column)
            # the last round: only the waves with a load left read a pointer
            last_page = plan.num_pages - 1 if (r + 1) * waves > loads else None
            pointer, offset, page_size, valid = element_source(op, form, page_ptrs, first_page, [*op.indices, row, column],
                                                               last_page)
            issues.append((load, start, offset, page_size, valid, pointer, (r + 1) * waves > loads))
        # Phase A: every load issued; phase B: wait for them all, then the barrier.
        for load, start, offset, page_size, valid, pointer, partial in issues:
            point = ir.InsertionPoint.current
            if partial:  # uniform per wave
                point = ir.InsertionPoint(scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, load, index_const(loads))).then_block)
            with point:
                rock.global_load_lds(op.source, offset, dest, start, valid, pointer, bytes=nbytes,
                                     page_size=page_size)
                if partial:
                    scf.YieldOp([])
        rocdl.s_waitcnt(WAIT_VMCNT_0)
        rock.lds_barrier()
        scf.YieldOp([])
