"""Dynamic kernels (``pagedir-gen attention --dynamic``): batch, block slots, pool blocks, nnz and
total_q are ``?``; one compiled kernel serves every batch size, its grid a formula of the argument sizes.

Kernels are checked by execution as ``pagedir-run --check`` does: the kernel is lowered once and
run at two launch size sets (different batch, block slots and pool blocks), each compared with
the reference.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from contextlib import redirect_stdout

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, interp
from pagedir.backend.plan import launch_plan
from pagedir.cli import run as run_cli
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import DYNAMIC_SIZES, EDGE_SIZES, EMPTY_BATCH, ONE_SEQUENCE, LaunchSizes, make_case
from pagedir.interp.launch import functions, launch_size
from pagedir.interp.memory import Device
from pagedir.reference import PAGE_PLACEMENTS
from pagedir.pipelines import KERNEL_PASSES

from test_attention import check_before_pass


#: The launches every check of a dynamic kernel makes after its size sets: the edge case, batch 0, batch 1.
EDGE_LAUNCHES = (EDGE_SIZES, EMPTY_BATCH, ONE_SEQUENCE)


def make_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    defaults = dict(num_heads_q=4, num_heads_kv=2, seq_len_q=1, head_dim=64, page_size=16, dynamic=True)
    for key, value in {**defaults, **overrides}.items():
        setattr(args, key, value)
    return args


def check_kernel(args: argparse.Namespace, tmp_path) -> str:
    path = tmp_path / "kernel.mlir"
    path.write_text(gen.generate(args))
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_cli.main(["--check", str(path)])
    text = out.getvalue()
    assert code == 0, text
    assert "FAIL" not in text, text
    return text


def test_the_generator_writes_dynamic_sizes() -> None:
    text = gen.generate(make_args(page_table="csr", varlen=True, seq_len_q=4))
    assert "%q: memref<?x4x64xf16>, %cu_seqlens_q: memref<?xi32>, %k_cache: memref<?x16x2x64xf16>" in text
    assert "%kv_indptr: memref<?xi32>, %kv_indices: memref<?xi32>, %kv_last_page_len: memref<?xi32>" in text
    assert "-> memref<?x?x1024xf16>" in text and "-> memref<?x4x4x64xf16>" in text  # views: '?' pages; Sq static
    blocks = gen.generate(make_args(page_table="blocks"))
    assert "%block_table: memref<?x?xi32>, %seq_lens: memref<?xi32>" in blocks


SHAPES = {
    "decode-gqa": dict(seq_len_q=1, num_heads_q=8, num_heads_kv=2),
    "prefill-causal": dict(seq_len_q=5, num_heads_q=4, num_heads_kv=2, causal=True, page_size=4),
}
CASES = [  # every form, layout, padded/packed and decode/prefill appears
    ("blocks", "nhd", False, "decode-gqa"),
    ("blocks", "hnd", True, "prefill-causal"),
    ("csr", "hnd", False, "prefill-causal"),
    ("csr", "nhd", True, "decode-gqa"),
    ("blocks", "nhd", True, "prefill-causal"),
    ("csr", "hnd", True, "decode-gqa"),
]


@pytest.mark.parametrize(("page_table", "layout", "varlen", "shape"), CASES)
def test_one_kernel_serves_two_batch_sizes(page_table: str, layout: str, varlen: bool, shape: str, tmp_path) -> None:
    text = check_kernel(make_args(page_table=page_table, kv_layout=layout, varlen=varlen, **SHAPES[shape]), tmp_path)
    # Lowered once, checked at both launch size sets against the reference, each with its own grid
    # (and each on shuffled, adjacent and switching pages), then the edge case and batches 0 and 1.
    assert text.count("@paged_attention: PASS") == 2 * len(PAGE_PLACEMENTS) + len(EDGE_LAUNCHES), text
    for sizes in (*DYNAMIC_SIZES, *EDGE_LAUNCHES):
        assert f"batch {sizes.batch}, {sizes.max_blocks} block slots, {sizes.num_blocks} pool blocks" in text
    per_sequence = 2  # Hkv x query blocks: 2 KV heads, every query position of a sequence in one tile
    grids = [int(g) for g in re.findall(r"launches @paged_attention on (\d+) workgroups", text)]
    assert grids == [s.batch * per_sequence for s in DYNAMIC_SIZES for _ in PAGE_PLACEMENTS] + [
        s.batch * per_sequence for s in EDGE_LAUNCHES], text


@pytest.mark.parametrize("argument", KERNEL_PASSES)
@pytest.mark.parametrize(("page_table", "layout", "varlen"), [("blocks", "nhd", True), ("csr", "hnd", False)])
def test_each_pass_preserves_dynamic_kernels(page_table: str, layout: str, varlen: bool, argument: str) -> None:
    args = make_args(page_table=page_table, kv_layout=layout, varlen=varlen, seq_len_q=3, causal=True, page_size=4)
    result = check_before_pass(args, argument, seed=3)
    assert result.ok and len(result.functions) == len(DYNAMIC_SIZES) * len(PAGE_PLACEMENTS) + len(EDGE_LAUNCHES), \
        result.report()


def lowered(args: argparse.Namespace, end: str = "L6") -> tuple[ir.Context, ir.Module]:
    context = make_context()
    with context:
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(arch="gfx942"), end=end)
    return context, module


def test_the_grid_formula_reads_the_batch_from_the_arguments() -> None:
    context, module = lowered(make_args(page_table="blocks", varlen=True, seq_len_q=4, num_heads_q=8))
    with context:
        kernel = functions(module.operation)[0]
        assert "known_grid_size" not in kernel.attributes and "rock.grid_size" not in kernel.attributes
        assert str(kernel.attributes["rock.grid_map"]) == "affine_map<(d0) -> ((d0 - 1) * 2)>"
        assert list(ir.DenseI64ArrayAttr(kernel.attributes["rock.grid_sizes"])) == [1, 0]  # cu_seqlens_q's dim 0
        # Packed queries: the grid depends on B = len(cu_seqlens_q) - 1, never on total_q or the lengths.
        shapes = [(40, 8, 64), (7,), (30, 16, 2, 64), (30, 16, 2, 64), (6, 5), (6,), (40, 8, 64)]
        assert launch_size(kernel, None, shapes) == (12, 256)
        plan = launch_plan(module.operation)
    entry = plan["kernels"][0]
    assert entry["grid"] is None
    assert entry["grid_formula"] == {"affine_map": "(d0) -> ((d0 - 1) * 2)", "inputs": [{"argument": 1, "dim": 0}],
                                     "expression": "(arguments[1].shape[0] - 1) * 2"}
    assert entry["arguments"][4]["shape"] == [None, None] and entry["arguments"][4]["bytes"] is None
    assert [(s["argument"], s["dim"]) for s in entry["size_arguments"]] == [
        (0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (4, 1), (5, 0), (6, 0)]
    arguments = [np.zeros(s) for s in shapes]
    assert eval(entry["grid_formula"]["expression"], {"arguments": arguments}) == 12  # noqa: S307 - as a launcher would
    json.dumps(plan)


def test_the_isa_takes_pointers_then_sizes() -> None:
    with make_context():
        module = ir.Module.parse(gen.generate(make_args(page_table="csr", kv_layout="nhd", num_heads_q=8, head_dim=128)))
        asm = driver.run(module.operation, driver.CompileOptions(arch="gfx942"), end="asm")["asm"]
    # 7 pointers (q, k, v, kv_indptr, kv_indices, kv_last_page_len, out), then 7 sizes: the batch in
    # q, kv_indptr (B + 1), kv_last_page_len and out, the pools' blocks and nnz.
    assert ".amdhsa_kernarg_size 112" in asm
    assert asm.count("value_kind:     global_buffer") == 7 and asm.count("value_kind:     by_value") == 7
    assert "buffer_load_dwordx4" in asm and "s_waterfall" not in asm
    assert re.search(r"\.vgpr_spill_count:\s+0", asm) and re.search(r"\.sgpr_spill_count:\s+0", asm)


def test_the_interpreter_takes_sizes_from_the_arrays() -> None:
    args = make_args(page_table="blocks", num_heads_q=4)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        func = module.body.operations[0]
        for sizes in DYNAMIC_SIZES:
            case = make_case(func, np.random.default_rng(1), Device(), sizes)
            assert case.args[0].shape[0] == sizes.batch and case.args[3].shape == (sizes.batch, sizes.max_blocks)
            out = interp.run(module, "paged_attention", case.args)[-1]
            np.testing.assert_allclose(out, case.expected[len(case.args) - 1], atol=2e-2)
        with pytest.raises(interp.InterpError, match=r"arg0 has shape \[2, 4, 2, 64\]; the argument is memref<\?x4x1x64xf16>"):
            interp.run(module, "paged_attention", [np.zeros((2, 4, 2, 64), np.float16)] + case.args[1:])


def test_dynamic_takes_a_fixed_split_count() -> None:
    # Chosen at launch (--num-splits 0) or fixed (test_split_launch checks both by execution).
    assert "rock.num_splits = 3" in gen.generate(make_args(page_table="blocks", num_splits=3))


@pytest.mark.parametrize("form", [dict(page_table="pointers", seq_lens=True, seq_len_k=100),
                                  dict(dense=True, seq_lens=True, causal=True, seq_len_q=3, seq_len_k=48)])
def test_pointer_tables_and_dense_kv_take_a_dynamic_batch(form: dict, tmp_path) -> None:
    args = make_args(**form)
    text = gen.generate(args)
    assert "%q: memref<?x4x" in text and "%seq_lens: memref<?xi32>" in text
    assert ("memref<?x13x1xi64>" in text) if not args.dense else ("%k: memref<?x2x48x64xf16>" in text)
    assert_checked_at_every_size(args, check_kernel(args, tmp_path))


def assert_checked_at_every_size(args: argparse.Namespace, out: str) -> None:
    """``pagedir-run --check``'s ``out`` for a dynamic kernel of 2 workgroups per sequence: one launch per size set
    of :data:`DYNAMIC_SIZES` and page placement (dense K/V has no pages), then the edge case and batches 0 and 1,
    each on its batch's workgroups."""
    placements = [""] if args.dense else ["", ", adjacent pages", ", switching pages"]
    assert [line.split(", seed 0, ")[1] for line in out.splitlines() if line.startswith("@")] == [
        f"batch {s.batch}{placement})" for s in DYNAMIC_SIZES for placement in placements] + [
        f"batch {EDGE_SIZES.batch}, edge case)", "batch 0)", "batch 1)"]
    assert [int(g) for g in re.findall(r"on (\d+) workgroups", out)] == [
        2 * s.batch for s in DYNAMIC_SIZES for _ in placements] + [2 * s.batch for s in EDGE_LAUNCHES]


@pytest.mark.parametrize("form", [dict(page_table="blocks"), dict(page_table="csr", varlen=True, seq_len_q=3),
                                  dict(page_table="pointers", seq_lens=True, seq_len_k=48),
                                  dict(page_table="blocks", num_splits=0)])
def test_batch_0_gives_an_empty_output_at_every_level(form: dict) -> None:
    # An empty batch (a server step without sequences): 0 workgroups launched, nothing read or written.
    args = make_args(**form)
    empty = LaunchSizes(batch=0, max_blocks=2, num_blocks=3)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        func = module.body.operations[0]
        case = make_case(func, np.random.default_rng(0), Device(), empty)
        assert case.args[0].shape[0] == 0 and case.expected[len(case.args) - 1].size == 0
        for end in ("L0", "L2", "L6"):
            if end != "L0":
                driver.run(module.operation, driver.CompileOptions(arch="gfx942"), start="L0", end=end)
            out = interp.run(module, "paged_attention", case.args)[len(case.args) - 1]
            assert out.shape == case.expected[len(case.args) - 1].shape, end
            module = ir.Module.parse(gen.generate(args))
