"""The interpreter's LDS bank-conflict count follows the model of pagedir.interp.lds_banks.

Each case reads an LDS buffer with a known pattern; the expected cycles are worked out by
hand from the model (32 banks of 4 bytes; lanes served in groups moving at most 128
bytes: 32 lanes for 4 bytes or less, 16 for 8, 8 for 16; a group takes as many cycles as
the most distinct dwords of one bank), not from the counting code.
"""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp import lds_banks
from pagedir.interp.launch import run

KERNEL = """
func.func @f(%out: memref<64x{width}xf32>) attributes {{rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %t = "rock.workitem_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<65536xi8, #gpu.address_space<workgroup>>
  %lds = memref.view %raw[%c0][] : memref<65536xi8, #gpu.address_space<workgroup>> to memref<16384xf32, #gpu.address_space<workgroup>>
  %zero = arith.constant dense<1.0> : vector<{width}xf32>
  %w = affine.apply affine_map<(d0) -> (d0 * {width})>(%t)
  vector.store %zero, %lds[%w] : memref<16384xf32, #gpu.address_space<workgroup>>, vector<{width}xf32>
  "rock.lds_barrier"() : () -> ()
  %at = affine.apply affine_map<(d0) -> ({index})>(%t)
  %v = vector.load %lds[%at] : memref<16384xf32, #gpu.address_space<workgroup>>, vector<{width}xf32>
  vector.store %v, %out[%t, %c0] : memref<64x{width}xf32>, vector<{width}xf32>
  return
}}
"""


def read_cycles(width: int, index: str) -> lds_banks.OpCounts:
    """Conflict counts of the one vector.load of ``width`` f32 per lane at element ``index(d0 = thread)``."""
    with make_context():
        module = ir.Module.parse(KERNEL.format(width=width, index=index))
        with lds_banks.tally() as counts:
            run(module, "f", [np.zeros((64, width), np.float32)])
    return counts.total("read")


@pytest.mark.parametrize(
    ("width", "index", "cycles", "conflicted"),
    [
        (1, "d0", 0, 0),  # 32 consecutive dwords per group: every bank once
        (1, "d0 mod 8", 0, 0),  # 8 dwords, each read by 4 lanes: broadcasts
        (1, "d0 * 2", 2, 1),  # 32 lanes on 16 banks, 2 dwords each: 1 extra cycle per group, 2 groups
        (1, "d0 * 32", 62, 1),  # one bank, 32 dwords per group: 31 extra cycles x 2 groups
        (2, "d0 * 2", 0, 0),  # b64: 16 lanes x 2 dwords = 32 banks
        (2, "d0 * 64", 60, 1),  # b64 rows 256 bytes apart: 16 lanes on 2 banks, 15 extra x 4 groups
        (2, "d0 * 66", 0, 0),  # ... padded by 8 bytes: 16 rows 2 banks apart, all 32 banks
        (4, "d0 * 4", 0, 0),  # b128: 8 lanes x 4 dwords
        (4, "d0 * 132", 0, 0),  # b128 rows of 132 dwords: 4 banks apart, 8 lanes cover 32
        (4, "d0 * 128", 56, 1),  # b128 rows of 128 dwords: 8 lanes on 4 banks, 7 extra x 8 groups
    ],
)
def test_bank_conflict_cycles(width: int, index: str, cycles: int, conflicted: int) -> None:
    counts = read_cycles(width, index)
    assert (counts.cycles, counts.conflicted, counts.instructions) == (cycles, conflicted, 1)


def test_wide_access_counts_as_16_byte_instructions() -> None:
    # 32 bytes per lane, lanes 32 bytes apart: two b128 instructions; in each, the 8 lanes of a group
    # touch dwords 8 l + (0..3) (then 4..7): banks 8 l mod 32 + ..: lanes l and l + 4 share banks,
    # 2 dwords per bank, 1 extra cycle per group, 8 groups, 2 instructions.
    counts = read_cycles(8, "d0 * 8")
    assert (counts.cycles, counts.instructions) == (16, 2)


def test_nothing_is_counted_outside_a_tally() -> None:
    assert not lds_banks.counting()
    with lds_banks.tally():
        assert lds_banks.counting()
    assert not lds_banks.counting()


# ----------------------------------------------------------------------------
# The matrix loop's swizzled tiles (rock.lds_swizzle): conflict-free tile reads, same results.

from pagedir.cli import gen as gen_cli  # noqa: E402
from pagedir.cli import run as run_cli  # noqa: E402

DECODE = ["--batch", "2", "--seq-len-q", "1", "--seq-len-k", "256", "--page-size", "16", "--seq-lens"]


def checked_conflicts(tmp_path, capsys, *flags: str) -> tuple[int, int]:
    """(read, write) conflict cycles of the lowered kernel of ``pagedir-gen attention flags``; its check passes."""
    path = tmp_path / "kernel.mlir"
    assert gen_cli.main(["attention", *flags, "-o", str(path)]) == 0
    capsys.readouterr()
    status = run_cli.main(["--check", "--lds-banks", str(path)])
    out = capsys.readouterr().out
    assert status == 0, out
    line = next(line for line in out.splitlines() if "LDS bank conflicts" in line)
    reads, writes = (int(part.split()[1]) for part in line.split(":", 1)[1].split(";"))
    return reads, writes


@pytest.mark.parametrize(
    "shape",
    [
        ["--num-heads-q", "16", "--num-heads-kv", "2", "--head-dim", "128", "--dtype", "f16", *DECODE],  # GQA 8
        ["--num-heads-q", "4", "--num-heads-kv", "4", "--head-dim", "128", "--dtype", "bf16", *DECODE],  # MHA
        ["--batch", "1", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-q", "64", "--seq-len-k", "64",
         "--head-dim", "64", "--page-size", "16", "--dtype", "f16", "--causal"],  # prefill
        ["--num-heads-q", "8", "--num-heads-kv", "1", "--head-dim", "64", "--dtype", "f32", *DECODE],  # 16x16x4
    ],
    ids=["gqa8-f16-d128", "mha-bf16-d128", "prefill-f16-d64", "gqa8-f32-d64"],
)
def test_swizzled_tiles_read_without_bank_conflicts(shape, tmp_path, capsys) -> None:
    linear, _ = checked_conflicts(tmp_path, capsys, *shape, "--arch", "gfx942")
    swizzled, _ = checked_conflicts(tmp_path, capsys, *shape, "--arch", "gfx942", "--lds-swizzle")
    assert linear > 0  # the row-major tiles conflict: each 16 rows of one column share a bank
    assert swizzled == 0


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
def test_swizzled_tiles_on_wmma_match_the_reference(arch: str, tmp_path, capsys) -> None:
    shape = ["--num-heads-q", "8", "--num-heads-kv", "2", "--head-dim", "64", "--dtype", "f16", *DECODE]
    checked_conflicts(tmp_path, capsys, *shape, "--arch", arch, "--lds-swizzle")
