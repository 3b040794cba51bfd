"""Page pointers read by each wave with scalar loads, and adjacent pages read through one pointer.

Where every wave reads one page per row, rock-blockwise-load stages no pointers in LDS: each
wave reads its page pointers (or block ids) from the table at wave-uniform indices, which
LLVM turns into s_load; where the pages of a wave's rows lie back to back, one pointer and one
descriptor cover them (a run-time choice). The decode kernel of the issue (gfx942, B=2, Hq 16,
Hkv 2, D 128, page 16, f16) is compiled for every page-table form and checked by execution on
shuffled, adjacent and switching page placements.
"""

from __future__ import annotations

import argparse
import re

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, reference
from pagedir.backend.report import kernel_reports
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import check_pass, make_case, page_placements
from pagedir.interp.launch import run_function
from pagedir.interp.memory import Device
from pagedir.passes.ir_utils import find_ops

#: Every page-table form, static and dynamic; the value: how many readfirstlanes the kernel may hold
#: (the wave index, once; a run-time block count adds LLVM's uniform division by it).
FORMS = {
    "pointers": (dict(seq_lens=True), 1),
    "pointers-dynamic": (dict(seq_lens=True, dynamic=True), 1),
    "blocks-nhd": (dict(page_table="blocks", kv_layout="nhd", seq_lens=True), 1),
    "blocks-hnd": (dict(page_table="blocks", kv_layout="hnd", seq_lens=True), 1),
    "blocks-nhd-dynamic": (dict(page_table="blocks", kv_layout="nhd", seq_lens=True, dynamic=True), 2),
    "csr-nhd": (dict(page_table="csr", kv_layout="nhd"), 1),
    "csr-hnd-dynamic": (dict(page_table="csr", kv_layout="hnd", dynamic=True), 2),
}


def decode_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in {"batch": 2, "num_heads_q": 16, "num_heads_kv": 2, "seq_len_q": 1, "seq_len_k": 512,
                       "head_dim": 128, "page_size": 16, "dtype": "f16", "arch": "gfx942", **overrides}.items():
        setattr(args, key, value)
    return args


def lowered(args: argparse.Namespace, end: str):
    """(module, output at level ``end``) of the generated kernel; call inside a context."""
    module = ir.Module.parse(gen.generate(args))
    outputs = driver.run(module.operation, driver.CompileOptions(arch="gfx942", emit="asm"), start="L0", end=end)
    return module, outputs[end]


@pytest.mark.parametrize("form", list(FORMS))
def test_wave_uniform_page_pointers_are_scalar_loads(form: str) -> None:
    flags, readfirstlanes = FORMS[form]
    with make_context():
        _, asm = lowered(decode_args(**flags), "asm")
    (report,) = kernel_reports(asm, "gfx942")
    # No vector load of the table, no LDS round trip of pointers (ds_write/ds_read_b64), no waterfall loop:
    # the pointers (block ids) come in scalar loads.
    assert not report.global_loads and not report.flat_loads, report.global_loads
    assert "ds_read_b64" not in asm and "ds_write_b64" not in asm
    assert report.waterfall_buffer_loads == 0
    # A pointer: the entry's address in registers, or the batch's row plus the page's 32-bit offset in an SGPR
    # (a kernel argument is read at a constant offset from the argument pointer, never through an SGPR).
    table_load = (r"s_load_dwordx2 s\[\d+:\d+\], s\[\d+:\d+\], (?:s\d+ offset:0x[0-9a-f]+|0x0\b)"
                  if form.startswith("pointers") else r"s_load_dword s\d+")
    assert len(re.findall(table_load, asm)) >= 2, asm  # K's and V's, in the loop
    # K and V still arrive in 16-byte loads only; nothing spills.
    assert set(report.buffer_loads) == {"dwordx4"}
    assert report.vgpr_spills == report.sgpr_spills == 0
    assert len(re.findall(r"\bv_readfirstlane_b32\b", asm)) <= readfirstlanes


def test_one_token_pages_keep_the_lds_pointer_stage() -> None:
    """A wave of 1-token pages reads many pages per row: their pointers are still staged in LDS."""
    with make_context():
        module, _ = lowered(decode_args(page_size=1, seq_lens=True), "L3")
        stages = [ir.StringAttr(op.attributes["rock.stage"]).value
                  for op in find_ops(module.operation, "scf.execute_region") if "rock.stage" in op.attributes]
    assert stages.count("PagePtrLoad") >= 2  # K's and V's (rock-pipeline copies them for the next tile)


def test_adjacent_and_per_page_paths_give_the_reference_result() -> None:
    """The kernel holds both sides of the choice (a descriptor over the run of 4 pages, one over a page) and gives
    the reference's result on shuffled, adjacent and switching pages."""
    args = decode_args(seq_lens=True)
    with make_context():
        l0 = ir.Module.parse(gen.generate(args))
        (func,) = find_ops(l0.operation, "func.func")
        kernel, _ = lowered(args, "L6")
        (gpu_func,) = find_ops(kernel.operation, "gpu.func")
        assert page_placements(func) == list(reference.PAGE_PLACEMENTS)
        records = {ir.IntegerAttr(op.operands[2].owner.attributes["value"]).value
                   for op in find_ops(gpu_func, "rocdl.make.buffer.rsrc") if op.operands[2].owner.name == "arith.constant"}
        assert {4096, 4 * 4096} <= records, records  # a page is 16 tokens x 128 x f16
        for placement in reference.PAGE_PLACEMENTS:
            device = Device()
            case = make_case(func, np.random.default_rng(0), device, placement=placement)
            outputs, _ = run_function(gpu_func, case.args, device=device)
            ((index, want),) = case.expected.items()
            assert np.abs(outputs[index] - want).max() < 2e-2, placement


def test_placements_put_pages_where_they_say() -> None:
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((2, 2, 40, 8)).astype(np.float16)
    lens = np.array([40, 21], dtype=np.int32)
    page_bytes = 4 * 8 * 2  # 4 tokens x D 8 x f16
    for placement in reference.PAGE_PLACEMENTS:
        cache = reference.paged_cache(Device(), dense, tokens_per_page=4, seq_lens=lens, rng=rng, placement=placement)
        table = cache.table[..., 0]
        live = (table[:, 1:] != 0) & (table[:, :-1] != 0)
        adjacent = np.diff(table, axis=1)[live] == page_bytes
        if placement == "adjacent":
            assert adjacent.all()
        elif placement == "switching":  # runs of 6 adjacent pages alternate with shuffled ones
            assert adjacent.any() and not adjacent.all()
        else:
            assert not adjacent.all()
    ids = reference.block_id_order(30, "switching", rng)
    assert list(ids[:6]) == list(range(6)) and sorted(ids[6:12]) == list(range(6, 12)) and list(ids[6:12]) != list(range(6, 12))
    assert list(reference.block_id_order(30, "adjacent", rng)) == list(range(30))


def test_each_pass_check_runs_every_page_placement() -> None:
    with make_context():
        module, _ = lowered(decode_args(seq_lens=True, seq_len_k=128), "L3")
        result = check_pass(module.operation, "rock-threadwise-lowering")
    assert [f.name for f in result.functions] == [
        "paged_attention", "paged_attention (adjacent pages)", "paged_attention (switching pages)",
        "paged_attention (edge case)"]
    assert result.ok, result.report()


def global_read_stages(module) -> list[ir.Operation]:
    return [op for op in find_ops(module.operation, "scf.execute_region")
            if "rock.stage" in op.attributes and ir.StringAttr(op.attributes["rock.stage"]).value == "GlobalRead"]


def table_operands(func) -> set:
    """The page table's memrefs: a deref's table, a block-table view's ids (and CSR indptr)."""
    tables = set()
    for op in find_ops(func, "rock.deref", "rock.block_table_view"):
        tables.update(op.operands[i] for i in ([0] if op.name == "rock.deref" else [1]))
    return tables


@pytest.mark.parametrize("form", ["pointers", "blocks-nhd", "csr-nhd", "csr-hnd-dynamic"])
def test_a_tiles_table_reads_are_issued_before_any_is_used(form: str) -> None:
    """Each wave reads the table entries of all its rows (4 pages per 64-token tile) and only then computes with
    them, so the scalar loads are waited on once per tile, not once per row."""
    flags, _ = FORMS[form]
    with make_context():
        module, _ = lowered(decode_args(**flags), "L4")
        (func,) = find_ops(module.operation, "func.func")
        tables = table_operands(func)
        checked = 0
        for stage in global_read_stages(module):
            block = stage.regions[0].blocks[0]
            ops = list(block.operations)
            reads = [i for i, op in enumerate(ops) if op.name == "memref.load" and op.operands[0] in tables]
            if not reads:
                continue
            assert len(reads) == 4, [str(ops[i]) for i in reads]
            first_use = min(ops.index(use.owner) for i in reads for use in ops[i].result.uses
                            if use.owner.parent == stage)
            assert first_use > reads[-1]
            checked += 1
    assert checked >= 2  # K's and V's, in the loop and the pipeline's prologue


def test_the_csr_row_start_is_read_outside_the_kv_loop() -> None:
    """kv_indptr[b] and kv_indptr[b + 1] do not change along the KV loop: read once before it, not per tile
    (the loop's barriers keep LLVM from hoisting a load)."""
    flags, _ = FORMS["csr-nhd"]
    with make_context():
        module, _ = lowered(decode_args(**flags), "L4")
        (func,) = find_ops(module.operation, "func.func")
        (view, *_) = find_ops(func, "rock.block_table_view")
        indptr = view.operands[2]
        loads = [op for op in find_ops(func, "memref.load") if op.operands[0] == indptr]
        assert loads
        for load in loads:
            op = load.parent
            while op.name != "func.func":
                assert op.name != "scf.for", load
                op = op.parent


def test_a_run_time_slot_count_is_divided_by_the_lanes_at_once() -> None:
    """With slots per sequence known only at launch, lane r divides row r's page and each row reads its
    quotient and remainder with readlane: one division per K/V read, not one per row."""
    flags, _ = FORMS["blocks-nhd-dynamic"]
    with make_context():
        module, _ = lowered(decode_args(**flags), "L4")
        for stage in global_read_stages(module):
            divisions = [op for op in find_ops(stage, "arith.divui") if op.result.type == ir.IntegerType.get_signless(32)]
            if not divisions:
                continue
            assert len(divisions) == 1
            assert len(find_ops(stage, "rocdl.readlane")) == 2 * 4  # head and slot of each of 4 rows


READLANE = """
func.func @k(%out: memref<128xi32>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 128 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : i32
  %t = arith.index_cast %tid : index to i32
  %x = arith.muli %t, %c3 : i32
  %lane = arith.constant 5 : i32
  %odd = arith.remui %tid, %c2 : index
  %keep = arith.cmpi eq, %odd, %c1 : index
  %y = scf.if %keep -> (i32) {
    scf.yield %t : i32
  } else {
    %picked = rocdl.readlane %x, %lane : (i32, i32) -> i32
    scf.yield %picked : i32
  }
  memref.store %y, %out[%tid] : memref<128xi32>
  return
}
"""


def test_readlane_gives_every_lane_of_a_wave_that_waves_lane() -> None:
    """v_readlane_b32: the even lanes of each wave of 64 get the wave's lane 5's value (3 x 5, 3 x 69), though
    lane 5 (odd) is not active in that branch; the odd lanes keep their own."""
    from pagedir.interp.launch import run

    with make_context():
        (result,) = run(ir.Module.parse(READLANE), "k", [np.zeros(128, np.int32)])
    lanes = np.arange(128)
    assert list(result[lanes % 2 == 0]) == [15] * 32 + [3 * 69] * 32
    assert list(result[lanes % 2 == 1]) == list(lanes[lanes % 2 == 1])
