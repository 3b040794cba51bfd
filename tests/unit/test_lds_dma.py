"""The interpreter's direct-to-LDS loads (``rocdl.raw.ptr.buffer.load.lds``) and waits (``rocdl.s.waitcnt``).

The expected LDS contents come from AMD's documented rule, written out here: lane l of a wave
writes the ``size`` bytes the buffer holds at ``voffset + inst_offset`` (out of range: 0) to
``LDS_ADDR = M0 base + inst_offset + l * size``; the bytes may be read only after the wave's
``s_waitcnt vmcnt`` has retired the load (and, by other threads, after a barrier too).
"""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp.launch import run
from pagedir.interp.memory import InterpError
from pagedir.interp.ops_lds_dma import vmcnt

#: s_waitcnt immediates (gfx9): vmcnt in bits 3:0 (and 15:14), expcnt 6:4 and lgkmcnt 11:8 left at their maximum.
WAIT_VMCNT_0 = 0x0F70
WAIT_VMCNT_1 = 0x0F71

KERNEL = """
func.func @dma(%src: memref<64xf32>, %out: memref<64xf32>) attributes {{rock.kernel, rock.arch = "{arch}", rock.block_size = 64 : i64, rock.grid_size = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %i0 = arith.constant 0 : i32
  %size = arith.constant 4 : i32
  %inst = arith.constant {inst_offset} : i32
  %records = arith.constant 256 : i64
  %flags = arith.constant 159744 : i32
  %stride = arith.constant 0 : i16
  %t = "rock.workitem_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %lds = memref.view %raw[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
  %base = memref.extract_aligned_pointer_as_index %src : memref<64xf32> -> index
  %base64 = arith.index_cast %base : index to i64
  %global = llvm.inttoptr %base64 : i64 to !llvm.ptr<1>
  %rsrc = rocdl.make.buffer.rsrc %global, %stride, %records, %flags : <1> to <8>
  %at = memref.extract_aligned_pointer_as_index %lds : memref<256xf32, #gpu.address_space<workgroup>> -> index
  %at_dma = affine.apply affine_map<(d0) -> (d0 + {lds_shift})>(%at)
  %at32 = arith.index_cast %at_dma : index to i32
  %m0 = llvm.inttoptr %at32 : i32 to !llvm.ptr<3>
  %voff_index = affine.apply affine_map<(d0) -> ({voffset})>(%t)
  %voff = arith.index_cast %voff_index : index to i32
  rocdl.raw.ptr.buffer.load.lds %rsrc, %m0, %size, %voff, %i0, %inst, %i0
  {second}
  {wait}
  "rock.lds_barrier"() : () -> ()
  %read_at = affine.apply affine_map<(d0) -> ({read})>(%t)
  %v = memref.load %lds[%read_at] : memref<256xf32, #gpu.address_space<workgroup>>
  memref.store %v, %out[%t] : memref<64xf32>
  return
}}
"""


def run_dma(*, voffset: str = "d0 * 4", inst_offset: int = 0, lds_shift: int = 0, read: str = "d0",
            wait: int | None = WAIT_VMCNT_0, second: str = "", arch: str = "gfx942") -> np.ndarray:
    text = KERNEL.format(arch=arch, voffset=voffset, inst_offset=inst_offset, lds_shift=lds_shift, read=read,
                         second=second, wait="" if wait is None else f"rocdl.s.waitcnt {wait}")
    source = np.arange(100, 164, dtype=np.float32)
    with make_context():
        return run(ir.Module.parse(text), "dma", [source, np.zeros(64, np.float32)])[1]


SRC = np.arange(100, 164, dtype=np.float32)
LANE = np.arange(64)

#: (kernel variation, out[t] = the LDS dword at ``read(t)``, by the documented rule)
CASES = {
    "lane l writes dword l": (dict(), SRC),
    "the global offset picks the data, the lane the LDS place": (dict(voffset="(63 - d0) * 4"), SRC[63 - LANE]),
    "the M0 base moves the LDS place": (dict(lds_shift=64, read="d0 + 16"), SRC),
    "inst_offset moves both addresses": (dict(inst_offset=8, read="d0 + 2", voffset="(d0 mod 62) * 4"),
                                         SRC[LANE % 62 + 2]),
    "out of range reads 0": (dict(voffset="d0 * 8"), np.where(LANE < 32, SRC[np.minimum(2 * LANE, 63)], 0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_lanes_write_the_documented_lds_bytes(case: str) -> None:
    variation, expected = CASES[case]
    np.testing.assert_array_equal(run_dma(**variation), expected)


def test_vmcnt_is_read_from_both_fields_of_the_immediate() -> None:
    assert vmcnt(WAIT_VMCNT_0) == 0
    assert vmcnt(0x0F73) == 3
    assert vmcnt(0xC07F) == 63  # bits 15:14 are vmcnt's high bits
    assert vmcnt(0x0F7F | 0x4000) == 31


def test_reading_lds_before_the_wait_is_a_race() -> None:
    """The kernel without its s_waitcnt: the barrier alone does not make the load's bytes readable."""
    with pytest.raises(InterpError, match=r"LDS race .* memref.load in thread \d+ reads byte \d+ of LDS buffer .* that "
                                          r"rocdl.raw.ptr.buffer.load.lds at .* loads into LDS, before its wave waited"):
        run_dma(wait=None)


def test_another_thread_still_needs_the_barrier_after_the_wait() -> None:
    text = KERNEL.format(arch="gfx942", voffset="d0 * 4", inst_offset=0, lds_shift=0, read="(d0 + 1) mod 64",
                         second="", wait=f"rocdl.s.waitcnt {WAIT_VMCNT_0}")
    text = text.replace('  "rock.lds_barrier"() : () -> ()\n', "")
    with make_context(), pytest.raises(InterpError, match="LDS race .* since the last barrier"):
        run(ir.Module.parse(text), "dma", [SRC, np.zeros(64, np.float32)])


SECOND = """%second_at = affine.apply affine_map<(d0) -> (d0 + 256)>(%at)
  %second32 = arith.index_cast %second_at : index to i32
  %second_m0 = llvm.inttoptr %second32 : i32 to !llvm.ptr<3>
  rocdl.raw.ptr.buffer.load.lds %rsrc, %second_m0, %size, %voff, %i0, %inst, %i0"""


def test_vmcnt_1_leaves_the_newest_load_in_flight() -> None:
    # The first load (dwords 0-63) is retired and readable; the second (dwords 64-127) is not.
    np.testing.assert_array_equal(run_dma(second=SECOND, wait=WAIT_VMCNT_1, read="d0"), SRC)
    with pytest.raises(InterpError, match="before its wave waited"):
        run_dma(second=SECOND, wait=WAIT_VMCNT_1, read="d0 + 64")
    np.testing.assert_array_equal(run_dma(second=SECOND, wait=WAIT_VMCNT_0, read="d0 + 64"), SRC)


def test_chips_without_the_load_size_are_refused() -> None:
    with pytest.raises(InterpError, match="4-byte loads to LDS are not modelled on gfx1100"):
        run_dma(arch="gfx1100")
