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
    table_load = r"s_load_dwordx2 s\[\d+:\d+\], s\[\d+:\d+\], 0x0" if form.startswith("pointers") else r"s_load_dword s\d+"
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
        "paged_attention", "paged_attention (adjacent pages)", "paged_attention (switching pages)"]
    assert result.ok, result.report()
