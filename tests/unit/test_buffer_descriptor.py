"""The interpreter's raw buffer loads against the rules of the ISA guides (table in pagedir.interp.buffer_descriptor).

Each case builds a one-thread kernel that makes a descriptor over a 64-byte
buffer holding the dwords 1, 2, ..., 16 and loads from it; the expected values
are read off the rule the case names, not off anything the compiler emits.
"""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import interp
from pagedir.targets.cdna import BUFFER_FLAGS as CDNA_BUFFER_FLAGS
from pagedir.targets.rdna import BUFFER_FLAGS as RDNA_BUFFER_FLAGS
from pagedir.context import make_context
from pagedir.interp import InterpError

WORDS = np.arange(1, 17, dtype=np.int32)  # dword i (byte 4 i) holds i + 1

KERNEL = """
func.func @load(%base: i64, %voffset: i32, %soffset: i32, %out: memref<{count}xi32>)
    attributes {{rock.kernel, rock.arch = "{arch}", rock.block_size = 1 : i64, rock.grid_size = 1 : i64}} {{
  %ptr = llvm.inttoptr %base : i64 to !llvm.ptr<1>
  %stride = arith.constant {stride} : i16
  %records = arith.constant {records} : i64
  %flags = arith.constant {flags} : i32
  %rsrc = rocdl.make.buffer.rsrc %ptr, %stride, %records, %flags : <1> to <8>
  %aux = arith.constant 0 : i32
  %x = rocdl.raw.ptr.buffer.load %rsrc, %voffset, %soffset, %aux : {type}
  %c0 = arith.constant 0 : index
  {store}
  return
}}
"""


def load(*, voffset: int, soffset: int = 0, records: int = 64, count: int = 4, arch: str = "gfx942",
         flags: int | None = None, stride: int = 0, base: int | None = None) -> np.ndarray:
    """The dwords one lane loads (``count`` of them) with the described descriptor."""
    flags = {"gfx942": CDNA_BUFFER_FLAGS, "gfx1100": RDNA_BUFFER_FLAGS}[arch] if flags is None else flags
    type_ = f"vector<{count}xi32>" if count > 1 else "i32"
    store = (f"vector.store %x, %out[%c0] : memref<{count}xi32>, {type_}" if count > 1
             else f"memref.store %x, %out[%c0] : memref<{count}xi32>")
    text = KERNEL.format(count=count, arch=arch, stride=stride, records=records, flags=flags, type=type_, store=store)
    with make_context():
        module = ir.Module.parse(text)
        device = interp.Device()
        buffer = device.upload(WORDS)
        address = buffer.address if base is None else base
        out = interp.run(module, "load", [address, voffset, soffset, np.full(count, -7, np.int32)], device=device)
    return out[-1]


# ----------------------------------------------------------------------------
# CDNA (gfx942): rules A1, A7, C1-C4


def test_in_range_reads_the_dwords_at_the_offset() -> None:
    assert list(load(voffset=8)) == [3, 4, 5, 6]


def test_past_num_records_reads_zero_without_touching_memory() -> None:
    # The offset is past num_records, and base + offset is not mapped: out of range is decided first.
    assert list(load(voffset=4096)) == [0, 0, 0, 0]


def test_dwordx4_partially_out_of_range_keeps_the_in_range_dwords() -> None:
    # num_records 24: dwords at 16 and 20 are in range, 24 and 28 are not (C2, per dword).
    assert list(load(voffset=16, records=24)) == [5, 6, 0, 0]


def test_cdna_compares_each_dword_start_with_num_records() -> None:
    # C2: in range iff offset < num_records, so the dword at byte 20 is read whole with num_records 22.
    assert list(load(voffset=16, records=22)) == [5, 6, 0, 0]


def test_cdna_soffset_moves_the_address_but_not_the_range_check() -> None:
    # voffset 0 is in range of num_records 8; soffset 32 only moves the address (dword 8 holds 9).
    assert list(load(voffset=0, soffset=32, records=8, count=2)) == [9, 10]
    # voffset 8 is out of range whatever soffset is.
    assert list(load(voffset=8, soffset=0, records=8, count=2)) == [0, 0]


def test_cdna_unbound_data_format_reads_zero() -> None:
    # C4: data format 0 (flags bits 18:15) is INVALID, an unbound resource.
    assert list(load(voffset=0, flags=CDNA_BUFFER_FLAGS & ~(0xF << 15))) == [0, 0, 0, 0]


def test_cdna_rejects_rdna_flags() -> None:
    # C1: bits 24 and 28-29 are reserved on CDNA.
    with pytest.raises(InterpError, match=r"flags 0x31027000 set bits reserved on CDNA"):
        load(voffset=0, flags=RDNA_BUFFER_FLAGS)


def test_cdna_rejects_a_non_zero_stride() -> None:
    # C3: num_records would count records of 16 bytes, not bytes.
    with pytest.raises(InterpError, match=r"stride 16 is not 0: a raw buffer needs stride 0"):
        load(voffset=0, stride=16)


# ----------------------------------------------------------------------------
# Descriptor fields any chip reads the same way: A2-A6


def test_num_records_past_32_bits_is_an_error_not_a_wrap() -> None:
    # 2^32 + 8 would reach the hardware as 8: dword 3 (byte 12) would then read 0.
    with pytest.raises(InterpError, match=r"num_records 4294967304 does not fit the descriptor's 32 bits"):
        load(voffset=12, records=(1 << 32) + 8)


def test_swizzle_enable_and_add_tid_are_not_raw_buffers() -> None:
    with pytest.raises(InterpError, match=r"enables swizzled addressing"):
        load(voffset=0, stride=-(1 << 15))  # i16 bit 15
    with pytest.raises(InterpError, match=r"ADD_TID_ENABLE"):
        load(voffset=0, flags=CDNA_BUFFER_FLAGS | (1 << 23))


def test_base_past_48_bits_is_an_error() -> None:
    with pytest.raises(InterpError, match=r"base address 0x1000000000000 does not fit the descriptor's 48 bits"):
        load(voffset=0, base=1 << 48)


def test_a_kernel_without_a_chip_cannot_interpret_the_flags() -> None:
    text = KERNEL.format(count=1, arch="gfx942", stride=0, records=64, flags=CDNA_BUFFER_FLAGS, type="i32",
                         store="memref.store %x, %out[%c0] : memref<1xi32>").replace('rock.arch = "gfx942", ', "")
    with make_context():
        module = ir.Module.parse(text)
        device = interp.Device()
        with pytest.raises(InterpError, match=r"set rock.arch on the kernel"):
            interp.run(module, "load", [device.upload(WORDS).address, 0, 0, np.zeros(1, np.int32)], device=device)


# ----------------------------------------------------------------------------
# RDNA (gfx1100): rules R1-R4


def test_rdna_raw_mode_in_range_and_past_num_records() -> None:
    assert list(load(voffset=8, arch="gfx1100")) == [3, 4, 5, 6]
    assert list(load(voffset=4096, arch="gfx1100")) == [0, 0, 0, 0]


def test_rdna_raw_mode_checks_each_dword_exactly() -> None:
    # R3: the dword at byte 20 needs 24 <= num_records; with 22 it is out (on CDNA it is read, see above).
    assert list(load(voffset=16, records=22, arch="gfx1100")) == [5, 0, 0, 0]


def test_rdna_raw_mode_reduces_num_records_by_soffset() -> None:
    # R3: num_records 16 - soffset 8 leaves 8 bytes for voffset: dwords at voffset 0 and 4.
    assert list(load(voffset=0, soffset=8, records=16, arch="gfx1100")) == [3, 4, 0, 0]


def test_rdna_structured_mode_with_stride_zero_reads_nothing() -> None:
    # R1: OOB_SELECT 0 (CDNA's flags on RDNA) checks offset + payload > stride, and the stride is 0.
    assert list(load(voffset=0, arch="gfx1100", flags=CDNA_BUFFER_FLAGS)) == [0, 0, 0, 0]
    # ... and with a stride of 8 bytes the first two dwords are in range.
    assert list(load(voffset=0, stride=8, arch="gfx1100", flags=CDNA_BUFFER_FLAGS)) == [1, 2, 0, 0]


def test_rdna_unchecked_modes_read_past_num_records() -> None:
    # R2: OOB_SELECT 1 and 2 check no offset: a load past num_records 8 reads the memory there.
    for mode in (1, 2):
        flags = (RDNA_BUFFER_FLAGS & ~(0b11 << 28)) | (mode << 28)
        assert list(load(voffset=16, records=8, arch="gfx1100", flags=flags)) == [5, 6, 7, 8]


def test_rdna_unchecked_mode_reaches_unmapped_memory_through_a_null_base() -> None:
    flags = (RDNA_BUFFER_FLAGS & ~(0b11 << 28)) | (2 << 28)
    with pytest.raises(InterpError, match=r"reads unmapped device address 0x40 \(4 bytes\)"):
        load(voffset=64, records=64, arch="gfx1100", flags=flags, base=0)
