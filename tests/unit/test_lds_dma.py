"""The interpreter's direct-to-LDS loads (``rocdl.raw.ptr.buffer.load.lds``) and waits (``rocdl.s.waitcnt``).

The expected LDS contents come from AMD's documented rule, written out here: lane l of a wave
writes the ``size`` bytes the buffer holds at ``voffset + inst_offset`` (out of range: 0) to
``LDS_ADDR = M0 base + inst_offset + l * size``; the bytes may be read only after the wave's
``s_waitcnt vmcnt`` has retired the load (and, by other threads, after a barrier too).
"""

from __future__ import annotations

import re

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


# ----------------------------------------------------------------------------
# Kernels whose K/V tiles come in by direct-to-LDS loads (pagedir-gen --lds-dma).

from pagedir.cli import gen as gen_cli  # noqa: E402
from pagedir.cli import opt as opt_cli  # noqa: E402
from pagedir.cli import run as run_cli  # noqa: E402

DECODE = ["--batch", "2", "--seq-len-q", "1", "--seq-len-k", "96", "--page-size", "16", "--seq-lens"]


def lowered(tmp_path, flags: list[str]) -> tuple[str, str]:
    """(L0 path, its rock-kernel-pipeline output as text) of ``pagedir-gen attention flags``."""
    source, target = tmp_path / "kernel.mlir", tmp_path / "kernel.l6.mlir"
    assert gen_cli.main(["attention", *flags, "-o", str(source)]) == 0
    assert opt_cli.main([str(source), "--rock-kernel-pipeline", "-o", str(target)]) == 0
    return str(source), target.read_text()


@pytest.mark.parametrize(
    ("flags", "direct"),
    [
        (["--num-heads-q", "16", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE], True),
        (["--num-heads-q", "4", "--num-heads-kv", "4", "--head-dim", "256", "--dtype", "bf16", *DECODE], True),
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f32", *DECODE], True),
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE, "--lds-swizzle"], True),
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE,
          "--page-table", "blocks", "--num-splits", "2"], True),
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE[:-1],
          "--page-table", "csr", "--kv-layout", "hnd"], True),
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE,
          "--page-table", "blocks", "--dynamic"], True),
        (["--batch", "1", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-q", "48", "--seq-len-k", "80",
          "--head-dim", "128", "--page-size", "16", "--dtype", "f16", "--causal", "--seq-lens"], True),
        # A row of 64 f16 is 128 bytes, half a wave's 256: the register path.
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "64", "--dtype", "f16", *DECODE], False),
    ],
    ids=["gqa8-f16-d128", "mha-bf16-d256", "f32-d128", "swizzled", "blocks-split", "csr-hnd", "blocks-dynamic", "prefill-causal",
         "d64-register-path"],
)
def test_direct_to_lds_kernels_match_the_reference(flags, direct: bool, tmp_path, capsys) -> None:
    source, text = lowered(tmp_path, [*flags, "--arch", "gfx942", "--lds-dma"])
    assert ("rocdl.raw.ptr.buffer.load.lds" in text) == direct
    assert ("rocdl.s.waitcnt" in text) == direct
    capsys.readouterr()
    status = run_cli.main(["--check", source])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "L6 after rock-kernel-pipeline" in out and "PASS" in out


def test_rdna_keeps_the_register_path(tmp_path, capsys) -> None:
    """gfx1100 has no direct-to-LDS loads: --lds-dma loads through registers there, with the same results."""
    flags = ["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE]
    source, text = lowered(tmp_path, [*flags, "--arch", "gfx1100", "--lds-dma"])
    assert "buffer.load.lds" not in text
    capsys.readouterr()
    assert run_cli.main(["--check", source]) == 0, capsys.readouterr().out


def test_a_kernel_without_its_wait_reads_lds_in_flight(tmp_path, capsys) -> None:
    """The compiled kernel with its s_waitcnt removed: the first read of the K tile is reported as a race
    with the direct-to-LDS load that writes it."""
    flags = ["--batch", "1", "--num-heads-q", "8", "--num-heads-kv", "1", "--seq-len-q", "1", "--seq-len-k", "64",
             "--head-dim", "128", "--page-size", "16", "--seq-lens", "--dtype", "f16"]
    _, text = lowered(tmp_path, [*flags, "--arch", "gfx942", "--lds-dma"])
    intact = tmp_path / "intact.mlir"
    intact.write_text(text)
    capsys.readouterr()
    assert run_cli.main(["--check", str(intact)]) == 0, capsys.readouterr().out
    broken = tmp_path / "no_wait.mlir"
    broken.write_text("\n".join(line for line in text.splitlines() if "rocdl.s.waitcnt" not in line))
    capsys.readouterr()
    status = run_cli.main(["--check", str(broken)])
    captured = capsys.readouterr()
    assert status == 1
    assert "loads into LDS, before its wave waited for that load (s_waitcnt vmcnt)" in captured.err
    assert "rocdl.raw.ptr.buffer.load.lds at" in captured.err


@pytest.mark.parametrize(
    ("flags", "wide"),
    [
        (["--num-heads-q", "16", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE], True),
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE, "--lds-swizzle",
          "--page-table", "blocks"], True),
        # a 16-byte load of 64 lanes takes 8 rows of D 64: two loads per 16-token page
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "64", "--dtype", "bf16", *DECODE], True),
        (["--batch", "1", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-q", "48", "--seq-len-k", "80",
          "--head-dim", "128", "--page-size", "16", "--dtype", "f16", "--causal", "--seq-lens", "--lds-swizzle"], True),
        # pages of 2 tokens hold no 4 rows of D 128 f16: the dword form, one row a load
        (["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE[:6],
          "--page-size", "2", "--seq-lens"], False),
    ],
    ids=["gqa8-f16-d128", "swizzled-blocks", "bf16-d64", "prefill-causal", "pages-of-2"],
)
def test_gfx950_loads_16_bytes_a_lane_where_a_page_holds_the_rows(flags, wide: bool, tmp_path, capsys) -> None:
    """gfx950's direct-to-LDS loads take 16 bytes a lane (buffer_load_dwordx4 ... lds: a wave's 1024 bytes
    are 4 rows of D 128 f16, 8 of D 64) where a page holds whole groups of those rows; else the dword form."""
    from pagedir.cli.compile import compile_source

    source, text = lowered(tmp_path, [*flags, "--arch", "gfx950", "--lds-dma"])
    assert "rocdl.raw.ptr.buffer.load.lds" in text
    asm = compile_source(open(source).read(), arch="gfx950", cache_dir=str(tmp_path / "cache")).artefact
    wide_loads = len(re.findall(r"buffer_load_dwordx4 .*\blds\b", asm))
    dword_loads = len(re.findall(r"buffer_load_dword .*\blds\b", asm))
    assert (wide_loads > 0, dword_loads > 0) == (wide, not wide)
    capsys.readouterr()
    status = run_cli.main(["--check", source])
    out = capsys.readouterr().out
    assert status == 0 and "L6 after rock-kernel-pipeline" in out, out
