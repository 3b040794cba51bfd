"""NVIDIA's own lowering in the passes (sm_80, sm_90; the family's facts: :mod:`pagedir.targets.nvidia`).

* the flash loop (rock-gridwise-attention-to-blockwise) on ``mma.sync.aligned.m16n8k16``:
  :class:`~pagedir.passes.families.mma_sync_loop.MmaSyncLoop`;
* ``rock.global_load`` (rock-buffer-load): no buffer descriptors, so the load reads through a global
  pointer, in 16-byte pieces (``ld.global.v4``), under an ``scf.if`` on its validity:

```mlir
%addr = arith.addi %ptr, (%off * 2 : i64) : i64
%v = scf.if %valid -> (vector<8xf16>) {
  %p = llvm.inttoptr %addr : i64 to !llvm.ptr<1>
  %raw = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
  scf.yield (vector.bitcast %raw : vector<4xi32> to vector<8xf16>)
} else {
  scf.yield (arith.constant dense<0.0> : vector<8xf16>)
}
```

  The same validity as the descriptors': an invalid lane (past seq_len, a null page, a block id outside
  the pool, a point outside a dense buffer) forms no address and reads 0. Offsets are 64-bit (no
  descriptor range to fit), so a dynamic leading dim needs no window. The address must be aligned to
  the piece (16 bytes for 8 f16): pages and buffers are allocated so (CUDA allocations are 256-byte
  aligned, page strides are multiples of the vectors). ptxas turns the guard into a predicated load.
  (Plain LLVM: a later family without buffer descriptors may lower its loads with :func:`lower_pointer_load`.)
* direct-to-LDS tiles (rock-blockwise-load, ``lds_dma``; :func:`cp_async_fallback` lists what they need:
  a paged row-major 2-D tile, each warp's 512 bytes in one page; swizzled, a lane's 16 bytes in one chunk:
  it reads the global elements its LDS place holds): the GlobalToLDS stage issues ``rock.global_load_lds``
  of 16 bytes a lane, each lane at its own row and column (a warp's copy may take several whole rows), then
  ``nvvm.cp.async.commit.group``, ``nvvm.cp.async.wait.group 0`` and ``rock.lds_barrier``;
* ``rock.global_load_lds`` (rock-buffer-load) becomes one ``nvvm.cp.async.shared.global`` per lane (``.cg``,
  16 bytes) from ``page_ptr + offset`` to the lane's LDS place, its ``cpSize`` 0 where invalid or past the
  page (nothing is read, the 16 bytes are zeroed; the source address is then null).
"""

from __future__ import annotations

from collections.abc import Callable

import mlir.ir as ir
from mlir.dialects import affine, arith, llvm, memref, nvvm, scf

from pagedir.dialect import rock
from pagedir.dialect.types import element_bytes, strides_and_offset
from pagedir.page_sources import source_of
from pagedir.passes.families import DirectCopy, FamilyLowering, row_source_fallback
from pagedir.passes.families.mma_sync_loop import MmaSyncLoop
from pagedir.passes.ir_utils import (
    MAX_LOAD_BYTES,
    as_elements,
    index_const,
    joined,
    linear_form,
    open_stage,
    swizzled_column,
    unsupported_dense,
    word_type,
    zero_attr,
)

# ----------------------------------------------------------------------------
# rock.global_load through a pointer under the validity (module docstring).


def lower_pointer_load(op) -> bool:
    result = op.operation.results[0]
    element = op.mem.type.element_type
    elem_bytes = element_bytes(element)
    paged = op.page_ptr is not None
    if not paged and (why := unsupported_dense(op.mem.type)):
        op.location.emit_error(f"'rock.global_load' op {why}")
        return False
    i64 = ir.IntegerType.get_signless(64)
    with op.location, ir.InsertionPoint(op):
        if paged:
            base, element_offset = op.page_ptr, arith.index_cast(i64, op.indices[0])
        else:
            base = arith.index_cast(i64, memref.extract_aligned_pointer_as_index(op.mem))
            element_offset = row_major_offset64(op.indices, list(op.mem.type.shape))
        address = arith.addi(base, arith.muli(element_offset, arith.constant(i64, elem_bytes)))
        if op.valid is None:
            value = load_pointer_split(address, result.type, element)
        else:
            guard = scf.IfOp(op.valid, [result.type], has_else=True)
            with ir.InsertionPoint(guard.then_block):
                scf.YieldOp([load_pointer_split(address, result.type, element)])
            with ir.InsertionPoint(guard.else_block):
                scf.YieldOp([arith.constant(result.type, zero_value(result.type, element))])
            value = guard.results[0]
    result.replace_all_uses_with(value)
    op.operation.erase()
    return True


def row_major_offset64(indices: list[ir.Value], shape: list[int]) -> ir.Value:
    """The row-major element offset of ``indices`` as i64 (an index of 32 bits would wrap on a large buffer)."""
    i64 = ir.IntegerType.get_signless(64)
    offset = None
    for index, extent in zip(indices, shape):
        wide = arith.index_cast(i64, index)
        offset = wide if offset is None else arith.addi(arith.muli(offset, arith.constant(i64, extent)), wide)
    return offset if offset is not None else arith.constant(i64, 0)


def zero_value(type_: ir.Type, element: ir.Type) -> ir.Attribute:
    if isinstance(type_, ir.VectorType):
        return ir.DenseElementsAttr.get_splat(type_, zero_attr(element))
    return zero_attr(element)


def load_pointer_split(address: ir.Value, type_: ir.Type, element: ir.Type) -> ir.Value:
    """Load ``type_`` from the i64 global ``address`` in aligned pieces of at most 128 bits."""
    lanes = type_.shape[0] if isinstance(type_, ir.VectorType) else 1
    elem_bytes = element_bytes(element)
    lanes_per_load = max(1, min(lanes, MAX_LOAD_BYTES // elem_bytes))
    i64 = ir.IntegerType.get_signless(64)
    pointer_type = ir.Type.parse("!llvm.ptr<1>")
    pieces = []
    for first_lane in range(0, lanes, lanes_per_load):
        at = address if first_lane == 0 else arith.addi(address, arith.constant(i64, first_lane * elem_bytes))
        piece_bytes = lanes_per_load * elem_bytes
        raw = llvm.load(word_type(piece_bytes), llvm.inttoptr(pointer_type, at), alignment=piece_bytes)
        pieces.append(as_elements(raw, lanes_per_load, element))
    return joined(pieces, type_, element, lanes_per_load)


# ----------------------------------------------------------------------------
# cp.async: rock.global_load_lds, and the GlobalToLDS stage of rock-blockwise-load (module docstring).


def lower_global_load_lds_cp_async(op, wave: int) -> bool:
    """``rock.global_load_lds`` -> ``nvvm.cp.async.shared.global`` per lane (module docstring)."""
    i32, i64, index = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64), ir.IndexType.get()
    elem_bytes = element_bytes(op.dest.type.element_type)
    page_bytes = op.page_size * elem_bytes
    with op.location, ir.InsertionPoint(op):
        offset = arith.muli(arith.index_cast(i64, op.offset), arith.constant(i64, elem_bytes))
        inside = arith.cmpi(arith.CmpIPredicate.ule, offset, arith.constant(i64, page_bytes - op.bytes))
        valid = inside if op.valid is None else arith.andi(op.valid, inside)
        source = arith.select(valid, arith.addi(op.page_ptr, offset), arith.constant(i64, 0))
        lane = arith.remui(rock.workitem_id(index), arith.constant(index, wave))
        element = arith.addi(op.dest_offset, arith.muli(lane, arith.constant(index, op.bytes // elem_bytes)))
        at = arith.addi(memref.extract_aligned_pointer_as_index(op.dest), arith.muli(element, arith.constant(index, elem_bytes)))
        target = llvm.inttoptr(ir.Type.parse("!llvm.ptr<3>"), arith.index_cast(i32, at))
        size = arith.select(valid, arith.constant(i32, op.bytes), arith.constant(i32, 0))
        nvvm.cp_async_shared_global(target, llvm.inttoptr(ir.Type.parse("!llvm.ptr<1>"), source), op.bytes,
                                    ir.Attribute.parse("#nvvm<load_cache_modifier cg>"), cp_size=size)
    op.operation.erase()
    return True


#: Bytes one thread copies per cp.async (the .cg form: L2 only, 16 bytes).
CP_ASYNC_BYTES = 16


def cp_async_fallback(op, wave: int) -> str | None:
    """Why ``op``'s tile cannot be copied with cp.async (None: it can). A warp's copy (``rock.global_load_lds``
    of 16 bytes a lane) takes 32 consecutive 16-byte pieces of the tile: whole rows or a part of one, in one
    page (its pointer is the warp's)."""
    if op.page_size is None:
        return "the source is not paged (the direct path is built for page pointers only)"
    dest_type = op.dest.type
    elem = element_bytes(dest_type.element_type)
    if op.lds_swizzle is not None and list(op.lds_swizzle)[0] % (CP_ASYNC_BYTES // elem):
        return f"a lane's {CP_ASYNC_BYTES} bytes would straddle two chunks of the swizzle {list(op.lds_swizzle)}"
    if dest_type.rank != 2 or strides_and_offset(dest_type) != ([dest_type.shape[1], 1], 0):
        return f"dest {dest_type} is not a row-major 2-D tile"
    rows, columns = dest_type.shape
    span = wave * CP_ASYNC_BYTES // elem
    if CP_ASYNC_BYTES % elem or rows * columns % span:
        return f"the tile of {rows * columns} elements is not a whole number of warps' copies ({span} elements each)"
    form = linear_form(op.map.results[-1], len(op.indices), 2)
    if form.tile_coeffs != [columns, 1] or op.page_size % columns:
        return "the tile's rows are not whole, consecutive runs of its pages"
    if columns % span and (span % columns or (op.page_size // columns) % (span // columns) or rows % (span // columns)):
        return f"a warp's copy of {span} elements does not lie in one page"
    return row_source_fallback(op, elem, CP_ASYNC_BYTES)


def emit_cp_async_to_lds(op, plan, page_ptrs: ir.Value, wave: int, element_source: Callable) -> None:
    """The tile straight from its pages into LDS (module docstring): warp w's copy j (j = w, w + warps, ...)
    takes the tile's elements from ``j * span``, lane l the 16 bytes from ``j * span + l * 16 / element
    bytes``, each lane at its own row and column; then the wait for the copies and the barrier."""
    dest = op.dest
    rows, columns = dest.type.shape
    elem = element_bytes(dest.type.element_type)
    per_lane = CP_ASYNC_BYTES // elem
    span = wave * per_lane
    copies = rows * columns // span
    warps = -(-op.block_size // wave)
    rounds = -(-copies // warps)
    form = source_of(op.source, op.page_table)
    d0, d1 = ir.AffineDimExpr.get(0), ir.AffineDimExpr.get(1)
    with ir.InsertionPoint(open_stage("GlobalToLDS", op.location)):
        tid = rock.workitem_id(ir.IndexType.get())
        warp = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineExpr.get_floor_div(d0, wave)]), [tid])
        lane = affine.apply(ir.AffineMap.get(1, 0, [d0 % wave]), [tid])
        first_page = affine.apply(plan.first_page_map, list(op.indices))
        for r in range(rounds):
            copy = affine.apply(ir.AffineMap.get(1, 0, [d0 + r * warps]), [warp])
            point = ir.InsertionPoint.current
            partial = (r + 1) * warps > copies
            if partial:  # uniform per warp
                point = ir.InsertionPoint(scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, copy, index_const(copies))).then_block)
            with point:
                first = affine.apply(ir.AffineMap.get(1, 0, [d0 * span]), [copy])
                start = affine.apply(ir.AffineMap.get(2, 0, [d0 + d1 * per_lane]), [first, lane])
                row = affine.apply(ir.AffineMap.get(1, 0, [ir.AffineExpr.get_floor_div(d0, columns)]), [start])
                column = affine.apply(ir.AffineMap.get(1, 0, [d0 % columns]), [start])
                if op.lds_swizzle is not None:  # the lane reads what its LDS place holds: the xor is its own inverse
                    column = swizzled_column(list(op.lds_swizzle), row, column)
                pointer, offset, page_size, valid = element_source(op, form, page_ptrs, first_page,
                                                                   [*op.indices, row, column])
                rock.global_load_lds(op.source, offset, dest, first, valid, pointer, bytes=CP_ASYNC_BYTES,
                                     page_size=page_size)
                if partial:
                    scf.YieldOp([])
        nvvm.cp_async_commit_group()
        nvvm.cp_async_wait_group(0)
        rock.lds_barrier()
        scf.YieldOp([])


class CpAsyncCopy(DirectCopy):
    """rock-blockwise-load's direct-to-LDS tiles by cp.async (module docstring)."""

    def width(self, op, wave: int) -> int | None:
        return CP_ASYNC_BYTES if cp_async_fallback(op, wave) is None else None

    def emit(self, op, plan, page_ptrs: ir.Value, wave: int, element_source: Callable) -> None:
        emit_cp_async_to_lds(op, plan, page_ptrs, wave, element_source)


class NvidiaLowering(FamilyLowering):
    """What the passes lower NVIDIA's own way: the mma.sync loop, pointer loads, cp.async copies."""

    matrix_loop = MmaSyncLoop
    direct_copy = CpAsyncCopy()

    def global_load(self, op, chip) -> bool:
        return lower_pointer_load(op)

    def global_load_lds(self, op, chip) -> bool:
        return lower_global_load_lds_cp_async(op, chip.wave_size)

    def direct_copies_pipelined(self, chip) -> bool:
        return True  # 16 bytes a lane on every chip


LOWERING = NvidiaLowering()
