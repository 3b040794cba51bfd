"""What a raw buffer access reads on the hardware: the V# fields and the range check, per chip family.

``rocdl.make.buffer.rsrc %base, %stride, %num_records, %flags`` is LLVM's
``llvm.amdgcn.make.buffer.rsrc``: the pointer becomes V# bits 47:0, the i16
``stride`` operand bits 63:48, ``num_records`` bits 95:64 and ``flags`` bits
127:96 (LLVM AMDGPUUsage, "Address Spaces", **Buffer Resource**).
``rocdl.raw.ptr.buffer.{load,store} %rsrc, %voffset, %soffset, %aux`` is
``llvm.amdgcn.raw.ptr.buffer.{load,store}``: ``voffset`` is "included in bounds
checking and swizzling", ``soffset`` "excluded from bounds checking and
swizzling" (LLVM IntrinsicsAMDGPU.td, ``AMDGPURawPtrBufferLoad``); a raw access
has no index (IDXEN = 0).

The rules, from the ISA guides (CDNA: "AMD Instinct MI300 / CDNA3 ISA" and
"CDNA4 ISA", §9.1.4 Buffer Data, §9.1.5 Buffer Addressing, §9.1.5.1 Range
Checking, §9.1.8 Table "Buffer Resource Descriptor"; RDNA: "RDNA4 ISA" §9.4.1
Range Checking, Table 56 "Buffer Out Of Bounds Selection", with the same
OOB_SELECT table in the RDNA3 guide):

====  ======================================================  ============================================
rule  what the hardware does                                  the interpreter
====  ======================================================  ============================================
A1    address = base + soffset + voffset (+ 4 k for dword k)   same; only in-range components touch memory
A2    base is 48 bits (V# 47:0)                                base >= 2^48: error (would be cut)
A3    num_records is 32 bits (V# 95:64)                        >= 2^32: error (would wrap)
A4    stride operand: bits 13:0 stride, bit 14 cache           bit 15 (swizzled addressing): error, not a
      swizzle (caching only), bit 15 swizzle enable            raw buffer; bit 14 ignored
A5    flags bit 23 ADD_TID_ENABLE: index += lane id,           set: error (a scratch buffer, not raw)
      no range check (the private/scratch buffer)
A6    flags bits 31:30 TYPE must be 0 for a buffer             non-zero: error
A7    dwordx2/x3/x4 loads and stores are range checked per     per 4-byte component; a load below 4 bytes
      dword; out-of-range loads return 0, stores are dropped   is one component
C1    CDNA flags bits 26:24 and 29:28 are reserved, must be 0  non-zero: error (e.g. RDNA flags on CDNA)
C2    CDNA raw buffer (ADD_TID 0, swizzle 0, IDXEN 0): out of  component k in range iff
      range if inst_offset + voffset >= num_records (bytes);   voffset + 4 k < num_records
      soffset takes no part (§9.1.5.2: "sgpr_offset is not
      a part of the offset term")
C3    CDNA num_records is in bytes for raw buffers, in units   stride != 0: error (the unit is ambiguous;
      of stride for structured ones (the guide contradicts     AMDGPUUsage requires stride 0 for a raw
      itself on which one IDXEN selects)                       resource)
C4    data format (flags 18:15) 0 is INVALID: an unbound       every component out of range: loads 0,
      resource, the instruction's format does not replace it   stores dropped
R1    RDNA OOB_SELECT (flags 29:28) 0: out of bounds if        same, index = 0
      index >= num_records or offset + payload > stride
R2    RDNA OOB_SELECT 1: out if index >= num_records;          out iff num_records == 0 (offsets are not
      2: out if num_records == 0                               checked at all)
R3    RDNA OOB_SELECT 3 (raw): out if offset + payload >       component k in range iff voffset + 4 k +
      num_records, "num_records is reduced by sgpr_offset";    payload <= num_records - soffset
      exact, stride ignored (swizzle off)
R4    RDNA FORMAT (flags 18:12) 0 is INVALID, as C4            as C4
====  ======================================================  ============================================

"payload" is the bytes of one component (4 for a dword; the whole access below
4 bytes). Offsets are unsigned 32-bit values. Not modelled (an error when a
descriptor asks for them): swizzled and structured addressing, ADD_TID, format
conversion (raw loads move bits), gfx1250's 45-bit num_records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pagedir.targets import TargetFamily

NUM_RECORDS_BITS = 32
BASE_BITS = 48
STRIDE_MASK = 0x3FFF  # stride operand bits 13:0
SWIZZLE_ENABLE = 1 << 15  # stride operand bit 15 = V# bit 63
ADD_TID_ENABLE = 1 << 23
TYPE_MASK = 0b11 << 30


class BufferResource:
    """A buffer descriptor as ``rocdl.make.buffer.rsrc`` builds it: each field per lane (or 1)."""

    __slots__ = ("base", "stride", "num_records", "flags")

    def __init__(self, base: np.ndarray, stride: np.ndarray, num_records: np.ndarray, flags: np.ndarray):
        self.base = base
        self.stride = stride  # the i16 operand's 16 bits
        self.num_records = num_records
        self.flags = flags  # 32 bits

    def select(self, mask: np.ndarray, other: BufferResource) -> BufferResource:
        return BufferResource(*(np.where(mask, mine, theirs) for mine, theirs in
                                ((self.base, other.base), (self.stride, other.stride),
                                 (self.num_records, other.num_records), (self.flags, other.flags))))


def make_resource(base: Any, stride: Any, num_records: Any, flags: Any) -> BufferResource:
    return BufferResource(np.asarray(base, dtype=np.int64), np.asarray(stride).astype(np.int64) & 0xFFFF,
                          np.asarray(num_records).astype(np.int64), np.asarray(flags).astype(np.int64) & 0xFFFFFFFF)


def descriptor_error(r: BufferResource, family: TargetFamily) -> str | None:
    """Why the hardware would not perform a raw byte-addressed access with this descriptor (rules A2-A6; the
    family's own, C1 and C3 on CDNA: ``TargetFamily.descriptor_error`` in :mod:`pagedir.targets`)."""
    checks = [
        ((r.base < 0) | (r.base >= 1 << BASE_BITS), r.base, "base address {:#x} does not fit the descriptor's 48 bits"),
        ((r.num_records < 0) | (r.num_records >= 1 << NUM_RECORDS_BITS), r.num_records,
         "num_records {} does not fit the descriptor's 32 bits (limit 4294967295): the hardware would see it wrapped"),
        ((r.stride & SWIZZLE_ENABLE) != 0, r.stride, "stride field {:#x} enables swizzled addressing, not a raw buffer"),
        ((r.flags & ADD_TID_ENABLE) != 0, r.flags, "flags {:#x} set ADD_TID_ENABLE (bit 23): a scratch buffer, not a raw one"),
        ((r.flags & TYPE_MASK) != 0, r.flags, "flags {:#x} set TYPE (bits 31:30): not a buffer resource"),
    ]
    for bad, values, message in checks:
        if np.any(bad):
            return message.format(int(np.broadcast_to(values, np.shape(bad))[bad].reshape(-1)[0]))
    return family.descriptor_error(r)


def components_in_range(r: BufferResource, family: TargetFamily, voffset: np.ndarray, soffset: np.ndarray,
                        component_offsets: np.ndarray, payload: int) -> np.ndarray:
    """Per lane and component (at byte ``voffset + component_offsets``): does the hardware access it (A7; the
    family's range check, C2 and C4 on CDNA, R1-R4 on RDNA: ``TargetFamily.components_in_range``)."""
    offset = voffset.reshape(-1, 1) + component_offsets[None]
    return family.components_in_range(r, offset, soffset, payload)
