"""rock-buffer-load: rock.global_load -> ROCDL buffer descriptors and raw buffer loads (L4 -> L5).

Mirrors the paged path of rocMLIR's SugarToLoops. A paged load builds one
descriptor per page and reads at the element's byte offset inside it:

```mlir
%v = "rock.global_load"(%mem, %off, %valid, %ptr) {page_size = 2048} : (...) -> vector<8xf16>
// becomes
%base = llvm.inttoptr %ptr : i64 to !llvm.ptr<1>
%rsrc = rocdl.make.buffer.rsrc %base, %c0_i16, %c4096_i64, %c159744_i32 : <1> to <8>
%bytes = arith.index_cast (%off * 2) : index to i32
%voff = arith.select %valid, %bytes, %c4096_i32             // invalid: past num_records
%raw = rocdl.raw.ptr.buffer.load %rsrc, %voff, %c0_i32, %c0_i32 : vector<4xi32>
%v = vector.bitcast %raw : vector<4xi32> to vector<8xf16>
```

* Descriptor: stride 0 (raw byte addressing), num_records = page bytes, flags
  by chip family from :mod:`pagedir.targets` (159744 on CDNA, 822243328 on RDNA);
  the chip is the ``arch`` option or else the kernel's ``rock.arch``.
* Results wider than 128 bits are split into 128-bit loads at increasing byte
  offsets; data is loaded as i32 words (i16/i8 below 4 bytes) and bitcast, as
  upstream's AMDGPU-to-ROCDL does, so f16/bf16 vectors need no special casing.
* Invalid lanes: the byte offset is pushed to num_records, so the hardware's
  range check returns 0 without a memory request. This keeps the load
  branch-free and the descriptor untouched by per-lane validity (a descriptor
  made per-lane invalid, e.g. num_records = 0, would stop being uniform); a null
  page pointer is safe because the range check happens before any address is
  formed. (An ``scf.if`` guard would also work but splits the wave's execution mask.)
* Waterfall loops: the descriptor lives in scalar registers. When
  ``rock-threadwise-lowering`` proved that every wave reads one page per load it
  marks the load ``rock.uniform_page_ptr``, and the pointer goes through
  ``rocdl.readfirstlane``: the descriptor is then uniform and LLVM emits plain
  ``buffer_load_dwordx4``. Unmarked pointers may differ across lanes; they are
  used as they are, and LLVM wraps the load in a (correct, slower) waterfall loop.
* Non-paged loads: one descriptor over the memref's aligned base pointer
  (``memref.extract_aligned_pointer_as_index``; uniform, since kernel arguments
  are), num_records = the memref's bytes, offset = the row-major element offset.
  Requires an identity layout and a static shape but for the leading dim.
* A dynamic leading dim (a kernel for every batch size) leaves the buffer's size,
  which may pass 4 GiB, to run time; the byte offset is formed in 64 bits and the
  descriptor's base moved so that the 32-bit voffset never wraps:

  - a leading index the same for every lane (a batch row of dense K/V: it depends
    on no workitem id) starts the descriptor at its row, ``base + row * row_bytes``
    (64-bit, wave-uniform: no waterfall loop), and the voffset is the offset inside
    the row, which fits 32 bits since a row is checked to;
  - a leading index that varies across lanes (a packed query row) starts it at the
    wave's first lane's offset (``readfirstlane``) less 2 GiB, rounded down to 256
    bytes; a lane whose offset lies outside that 4 GiB window (a wave's rows more
    than 2 GiB apart) is made invalid, so it reads 0, never another row's bytes.

  num_records is the buffer's bytes from that start, read from ``memref.dim`` at run
  time, at most :func:`pagedir.offset_width.records_limit` of the load.
* 32-bit range: num_records and the voffset are 32-bit fields. A page (or dense
  buffer, or a row of one with a dynamic leading dim) whose bytes, plus the bytes of
  the load that an invalid lane starts at num_records, exceed 2^32 is refused with an
  error naming both; it is never wrapped. Every such choice is
  :func:`pagedir.offset_width.fits_u32`.

Options: ``arch`` (chip or target; empty = each kernel's ``rock.arch``).
Direct loads into LDS: ``rock.global_load_lds`` becomes ``rocdl.raw.ptr.buffer.load.lds``
with the page's descriptor (its pointer through ``rocdl.readfirstlane``: one per wave), the
voffset pushed to num_records when invalid (the hardware writes 0 for it), and the LDS base
(M0) the dest's address plus ``dest_offset`` elements, also through ``rocdl.readfirstlane``.

A family that lowers these ops its own way (:mod:`pagedir.passes.families`: NVIDIA reads through
global pointers and copies with ``cp.async``) is asked first; the descriptors are the default.

Not modelled: gfx1250's descriptor format, cache-policy bits (aux = 0).
"""

from __future__ import annotations

import mlir.ir as ir
from mlir.dialects import arith, llvm, memref, rocdl

from pagedir.dialect import rock
from pagedir.dialect.ops_core import UNIFORM_PAGE_PTR_ATTR
from pagedir.dialect.types import element_bytes
from pagedir.offset_width import U32_LIMIT, fits_u32, records_limit
from pagedir.passes.base import ChipOptions, Pass
from pagedir.passes.families import lowering_of
from pagedir.passes.ir_utils import (
    MAX_LOAD_BYTES,
    as_elements,
    joined,
    lower_kernel_ops,
    unsupported_dense,
    varies_across_lanes,
    word_type,
)
from pagedir.targets import family_of

#: Rows that vary across lanes: the window starts this many bytes below the wave's first lane (half
#: the 32-bit range, so lanes on either side of it fit), rounded down to WINDOW_ALIGN bytes.
WINDOW_BELOW = U32_LIMIT // 2
WINDOW_ALIGN = 256


class BufferLoadPass(Pass):
    argument = "rock-buffer-load"
    summary = "Lower rock.global_load to rocdl buffer descriptors and raw buffer loads"
    Options = ChipOptions

    def run(self, module: ir.Operation) -> bool:
        if not lower_kernel_ops(module, self.options.arch, "rock.global_load", lower_for_family):
            return False  # a kernel without a chip was reported once
        return lower_kernel_ops(module, self.options.arch, "rock.global_load_lds", lower_lds_for_family)


def lower_for_family(op, chip) -> bool:
    own = lowering_of(chip).global_load
    return own(op, chip) if own else lower_global_load(op, family_of(chip).buffer_flags)


def lower_lds_for_family(op, chip) -> bool:
    own = lowering_of(chip).global_load_lds
    return own(op, chip) if own else lower_global_load_lds(op, family_of(chip).buffer_flags)


def i32_const(value: int) -> ir.Value:
    return arith.constant(ir.IntegerType.get_signless(32), value)


def lower_global_load(op, flags: int) -> bool:
    result = op.operation.results[0]
    element = op.mem.type.element_type
    elem_bytes = element_bytes(element)
    paged, dynamic = op.page_ptr is not None, False
    if not paged and (why := unsupported_dense(op.mem.type)):
        op.location.emit_error(f"'rock.global_load' op {why}")
        return False
    if paged:
        num_records = op.page_size * elem_bytes
        what = f"page of {num_records} bytes ({op.page_size} x {elem_bytes})"
    elif dynamic := op.mem.type.is_dynamic_dim(0):
        num_records = element_count(op.mem.type, 1) * elem_bytes  # one row; the rows are known at run time
        what = f"buffer of {num_records} bytes per row"
    else:
        num_records = element_count(op.mem.type) * elem_bytes
        what = f"buffer of {num_records} bytes"
    if why := out_of_32_bits(what, num_records, result_bytes(result.type, element)):
        op.location.emit_error(f"'rock.global_load' op {why}")
        return False
    with op.location, ir.InsertionPoint(op):
        valid = op.valid
        if paged:
            pointer = op.page_ptr
            if UNIFORM_PAGE_PTR_ATTR in op.operation.attributes:
                pointer = rocdl.readfirstlane(pointer.type, pointer)
            element_offset = op.indices[0]
        elif dynamic:
            pointer, num_records, byte_offset, inside = dynamic_window(op, elem_bytes, result_bytes(result.type, element))
            if inside is not None:
                valid = inside if valid is None else arith.andi(valid, inside)
        else:
            base = memref.extract_aligned_pointer_as_index(op.mem)
            pointer = arith.index_cast(ir.IntegerType.get_signless(64), base)
            element_offset = row_major_offset(op.indices, list(op.mem.type.shape))
        rsrc = make_descriptor(pointer, num_records, flags)
        if not dynamic:  # the offset fits 32 bits: the page's or buffer's bytes do (out_of_32_bits)
            byte_offset = index_bytes32(element_offset, elem_bytes)
        if valid is not None:
            past_end = (i32_const(num_records) if isinstance(num_records, int)
                        else arith.trunci(ir.IntegerType.get_signless(32), num_records))
            byte_offset = arith.select(valid, byte_offset, past_end)
        value = load_split(rsrc, byte_offset, result.type, element)
    result.replace_all_uses_with(value)
    op.operation.erase()
    return True


def element_count(type_: ir.MemRefType, first: int = 0) -> int:
    count = 1
    for extent in type_.shape[first:]:
        count *= extent
    return count


def index_bytes32(element_offset: ir.Value, elem_bytes: int) -> ir.Value:
    """The i32 byte offset of an element offset that the caller knows fits 32 bits."""
    bytes_ = arith.muli(element_offset, arith.constant(ir.IndexType.get(), elem_bytes))
    return arith.index_cast(ir.IntegerType.get_signless(32), bytes_)


def dynamic_window(op, elem_bytes: int, load_bytes: int) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value | None]:
    """(descriptor base, num_records, i32 byte offset, whether the offset lies in the window or None when it
    always does) of a dense load from a buffer with a dynamic leading dim (module docstring): the offset is
    formed in 64 bits and the base moved to the row, or to a window around the wave's first lane, so that
    no offset wraps 32 bits however large the buffer is at run time."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    shape = list(op.mem.type.shape)
    row_bytes = element_count(op.mem.type, 1) * elem_bytes
    row = arith.index_cast(i64, op.indices[0])
    inner = arith.muli(arith.index_cast(i64, row_major_offset(op.indices[1:], shape[1:])), arith.constant(i64, elem_bytes))
    rows = arith.index_cast(i64, memref.dim(op.mem, arith.constant(ir.IndexType.get(), 0)))
    total = arith.muli(rows, arith.constant(i64, row_bytes))
    row_start = arith.muli(row, arith.constant(i64, row_bytes))
    divergent = varies_across_lanes(op.indices[0])
    if not divergent:
        start, offset = row_start, inner  # inside a row: fits 32 bits (out_of_32_bits)
    else:
        offset = arith.addi(row_start, inner)
        first = rocdl.readfirstlane(i64, offset)
        below = arith.subi(first, arith.minui(first, arith.constant(i64, WINDOW_BELOW)))  # first - 2 GiB, at least 0
        start = arith.andi(below, arith.constant(i64, -WINDOW_ALIGN))
        offset = arith.subi(offset, start)
    # The bytes from start to the buffer's end (0 past it), at most what keeps the offsets inside 32 bits.
    left = arith.subi(arith.maxui(total, start), start)
    records = arith.minui(left, arith.constant(i64, records_limit(load_bytes)))
    # unsigned: an offset below start is outside too
    inside = arith.cmpi(arith.CmpIPredicate.ult, offset, records) if divergent else None
    base = arith.index_cast(i64, memref.extract_aligned_pointer_as_index(op.mem))
    return arith.addi(base, start), records, arith.trunci(i32, offset), inside


def result_bytes(type_: ir.Type, element: ir.Type) -> int:
    lanes = type_.shape[0] if isinstance(type_, ir.VectorType) else 1
    return lanes * element_bytes(element)


def out_of_32_bits(what: str, num_records: int, load_bytes: int) -> str | None:
    """Why ``num_records`` or a byte offset of the load would wrap the descriptor's and the offset's 32 bits.

    The furthest byte formed is an invalid lane's: its offset is pushed to
    num_records and its load reaches ``load_bytes - 1`` bytes further.
    """
    furthest = num_records + load_bytes
    if fits_u32(furthest - 1):
        return None
    return (f"{what} exceeds the 32-bit buffer range: num_records and the byte offsets of a {load_bytes}-byte "
            f"load reach {furthest}, the limit is {U32_LIMIT} (2^32)")


def row_major_offset(indices: list[ir.Value], shape: list[int]) -> ir.Value:
    offset = None
    for index, extent in zip(indices, shape):
        if offset is None:
            offset = index
            continue
        offset = arith.addi(arith.muli(offset, arith.constant(ir.IndexType.get(), extent)), index)
    return offset if offset is not None else arith.constant(ir.IndexType.get(), 0)


def make_descriptor(pointer: ir.Value, num_records: int | ir.Value, flags: int) -> ir.Value:
    """A raw buffer descriptor: stride 0, ``num_records`` bytes (a constant, or an i64 value), chip flags."""
    global_ptr = llvm.inttoptr(ir.Type.parse("!llvm.ptr<1>"), pointer)
    stride = arith.constant(ir.IntegerType.get_signless(16), 0)
    records = arith.constant(ir.IntegerType.get_signless(64), num_records) if isinstance(num_records, int) else num_records
    return rocdl.make_buffer_rsrc(ir.Type.parse("!llvm.ptr<8>"), global_ptr, stride, records, i32_const(flags))


def load_split(rsrc: ir.Value, byte_offset: ir.Value, type_: ir.Type, element: ir.Type) -> ir.Value:
    """Load ``type_`` in pieces of at most 128 bits at increasing byte offsets."""
    lanes = type_.shape[0] if isinstance(type_, ir.VectorType) else 1
    elem_bytes = element_bytes(element)
    lanes_per_load = max(1, min(lanes, MAX_LOAD_BYTES // elem_bytes))
    zero32 = i32_const(0)
    pieces = []
    for first_lane in range(0, lanes, lanes_per_load):
        offset = byte_offset if first_lane == 0 else arith.addi(byte_offset, i32_const(first_lane * elem_bytes))
        raw = rocdl.raw_ptr_buffer_load(word_type(lanes_per_load * elem_bytes), rsrc, offset, zero32, zero32)
        pieces.append(as_elements(raw, lanes_per_load, element))
    return joined(pieces, type_, element, lanes_per_load)


def lower_global_load_lds(op, flags: int) -> bool:
    """``rock.global_load_lds`` -> ``rocdl.raw.ptr.buffer.load.lds`` (module docstring)."""
    i32 = ir.IntegerType.get_signless(32)
    elem_bytes = element_bytes(op.dest.type.element_type)
    page_bytes = op.page_size * elem_bytes
    if why := out_of_32_bits(f"page of {page_bytes} bytes", page_bytes, op.bytes):
        op.location.emit_error(f"'rock.global_load_lds' op {why}")
        return False
    with op.location, ir.InsertionPoint(op):
        pointer = rocdl.readfirstlane(op.page_ptr.type, op.page_ptr)
        rsrc = make_descriptor(pointer, page_bytes, flags)
        index = ir.IndexType.get()
        byte_offset = arith.index_cast(i32, arith.muli(op.offset, arith.constant(index, elem_bytes)))
        if op.valid is not None:
            byte_offset = arith.select(op.valid, byte_offset, i32_const(page_bytes))
        base = arith.addi(memref.extract_aligned_pointer_as_index(op.dest), arith.muli(op.dest_offset, arith.constant(index, elem_bytes)))
        base32 = rocdl.readfirstlane(i32, arith.index_cast(i32, base))
        lds = llvm.inttoptr(ir.Type.parse("!llvm.ptr<3>"), base32)
        zero = i32_const(0)
        rocdl.raw_ptr_buffer_load_lds(rsrc, lds, i32_const(op.bytes), byte_offset, zero, zero, zero)
    op.operation.erase()
    return True
