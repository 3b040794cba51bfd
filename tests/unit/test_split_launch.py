"""Split-KV counts chosen at launch (``--dynamic --num-splits 0``), fixed counts with dynamic sizes
(``--dynamic --num-splits N``) and the split cost model.

A dynamic kernel takes its split count as the size of its workspace's dim 0 (an index
argument of the kernel ABI, like every ``?`` size); the launch plan states how a runtime
chooses it (``num_splits_formula``). ``pagedir-run --check`` runs such a kernel at three
launch size sets, two of the dynamic kernels' usual ones and one long sequence, so that
different split counts occur, each against the reference.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver
from pagedir.backend import formula, split_kv
from pagedir.cli import compile as compile_cli
from pagedir.cli import run as run_cli
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import DYNAMIC_SIZES, LONG_SEQUENCE_SIZES, make_case
from pagedir.interp.launch import functions, launch_size, launch_splits, run_function, symbol_name, workspace_given
from pagedir.interp.memory import Device
from pagedir.pipelines import KERNEL_PASSES
from pagedir.reference import PAGE_PLACEMENTS

from test_attention import check_before_pass
from test_dynamic import check_kernel, make_args

DYNAMIC_SPLITS = {
    # name: generator overrides (every one --dynamic --num-splits 0, Hq 4 / Hkv 2, D 64, pages of 16)
    "blocks-nhd-f16": dict(page_table="blocks", kv_layout="nhd"),
    "blocks-hnd-bf16": dict(page_table="blocks", kv_layout="hnd", dtype="bf16"),
    "csr-nhd-f32": dict(page_table="csr", kv_layout="nhd", dtype="f32"),
    "csr-hnd-mqa-f16": dict(page_table="csr", kv_layout="hnd", num_heads_kv=1),
    "csr-sinks-softcap-window": dict(page_table="csr", sinks=True, softcap=20.0, window=40),  # the combine adds sinks
    "blocks-causal-prefill-bf16": dict(page_table="blocks", seq_len_q=3, causal=True, dtype="bf16"),
    "blocks-varlen-causal": dict(page_table="blocks", varlen=True, seq_len_q=3, causal=True),
    "pointers-f16": dict(page_table="pointers", seq_lens=True, seq_len_k=200),
    "dense-f32": dict(dense=True, seq_lens=True, seq_len_k=150, dtype="f32"),
}


@pytest.mark.parametrize("name", list(DYNAMIC_SPLITS))
def test_split_count_chosen_at_launch_passes_the_check(name: str, tmp_path) -> None:
    out = check_kernel(make_args(num_splits=0, **DYNAMIC_SPLITS[name]), tmp_path)
    launches = [line for line in out.splitlines() if line.startswith("@")]
    placements = 1 if DYNAMIC_SPLITS[name].get("dense") else len(PAGE_PLACEMENTS)  # shuffled, adjacent, switching pages
    sized = len(DYNAMIC_SIZES) * placements  # then the long sequence's, the edge case and batch 0
    assert len(launches) == sized + placements + 2 and all("PASS" in line for line in launches), out
    chosen = [int(s) for s in re.findall(r"(\d+) splits chosen at launch", out)]
    assert len(chosen) == len(launches), out
    assert chosen[-1] == 1 and "batch 0" in launches[-1]  # nothing to split: one split of 0 workgroups
    if DYNAMIC_SPLITS[name].get("page_table") in ("blocks", "csr"):  # the long sequence gets more splits
        assert chosen[sized] > min(chosen[:sized]), out
    else:  # the capacity is compiled in: at batches 1 to 5 every one of its 7 (5) tiles gets a split
        assert len(set(chosen[: sized + placements])) == 1, out


def lowered_dynamic_split(**overrides) -> tuple[ir.Context, ir.Module, ir.Operation]:
    overrides = {"num_splits": 0, **overrides}
    context = make_context()
    with context:
        module = ir.Module.parse(gen.generate(make_args(**overrides)))
        signature = ir.Module.parse(gen.generate(make_args(**overrides)))
        driver.run(module.operation, driver.CompileOptions(arch="gfx942"), start="L0", end="L6")
    return context, module, signature


def test_plan_states_how_a_runtime_chooses_the_split_count() -> None:
    # The plan's formula, evaluated on this launch's arrays as a runtime would (the plan expressions'
    # evaluator), gives the count the interpreter launched with, the workspace shape and both kernels' grids.
    args = make_args(page_table="blocks", num_splits=0)
    plan = json.loads(compile_cli.compile_source(gen.generate(args), plan=True, cache=False).plan_json)
    split, combine = plan["kernels"]
    rule = split["num_splits_formula"]
    assert plan["workspace_bytes"] is None and split["workspace_bytes"] is None
    assert split["arguments"][rule["workspace_argument"]]["workspace"]
    assert combine["arguments"][rule["workspace_argument"]]["workspace"]
    assert split["arguments"][rule["workspace_argument"]]["shape"] == [None, None]
    assert all(isinstance(value, int) for value in rule["constants"].values())
    context, module, signature = lowered_dynamic_split(page_table="blocks")
    with context:
        kernel = next(f for f in functions(module.operation) if symbol_name(f) == "paged_attention")
        combine_kernel = next(f for f in functions(module.operation) if symbol_name(f) == "paged_attention_combine")
        l0 = functions(signature.operation)[0]
        counts = []
        for sizes in (*DYNAMIC_SIZES, LONG_SEQUENCE_SIZES):
            case = make_case(l0, np.random.default_rng(0), Device(), sizes)
            shapes = [np.shape(a) for a in case.args]
            splits, names = split_kv.split_count(rule, shapes)
            chosen, _ = launch_splits(kernel, shapes)
            assert splits == chosen
            workspace = workspace_given(kernel, list(case.args))[-1]
            assert workspace.shape == (splits, names["partial_bytes"] // 4)
            shapes.append(workspace.shape)
            assert formula.evaluate(split["grid_formula"]["expression"], shapes=shapes) == launch_size(kernel, None, shapes)[0]
            assert formula.evaluate(combine["grid_formula"]["expression"], shapes=shapes) == launch_size(combine_kernel, None, shapes)[0]
            assert launch_size(kernel, None, shapes)[0] == sizes.batch * 2 * splits
            counts.append(splits)
    assert counts[-1] > counts[0]


@pytest.mark.parametrize("num_splits", [0, 3])
def test_the_plan_formulas_are_defined_at_every_batch(num_splits: int) -> None:
    # Batch 0, 1 and large: the plan's count, workspace and grids (as a runtime evaluates them) are what
    # the interpreter launches; at batch 0 both grids are 0 workgroups and the launch runs nothing.
    args = make_args(page_table="blocks", num_splits=num_splits)
    plan = json.loads(compile_cli.compile_source(gen.generate(args), plan=True, cache=False).plan_json)
    split, combine = plan["kernels"]
    rule = split["num_splits_formula"]
    context, module, _ = lowered_dynamic_split(page_table="blocks", num_splits=num_splits)
    launched = {}
    with context:
        kernel, combine_kernel = (next(f for f in functions(module.operation) if symbol_name(f) == name)
                                  for name in ("paged_attention", "paged_attention_combine"))
        for batch in (0, 1, 4096):
            shapes = [(batch, 4, 1, 64), (9, 16, 2, 64), (9, 16, 2, 64), (batch, 3), (batch,), (batch, 4, 1, 64)]
            splits, names = split_kv.split_count(rule, shapes)
            assert (splits, names) == launch_splits(kernel, shapes)
            workspace = tuple(formula.evaluate(text, {**names, "num_splits": splits}) for text in rule["workspace_shape"])
            assert workspace == workspace_given(kernel, [np.zeros(s, np.float32) for s in shapes])[-1].shape
            shapes.append(workspace)
            grids = [formula.evaluate(k["grid_formula"]["expression"], shapes=shapes) for k in (split, combine)]
            assert grids == [launch_size(k, None, shapes)[0] for k in (kernel, combine_kernel)]
            launched[batch] = (splits, grids)
        case = [np.zeros((0, 4, 1, 64), np.float16), *(np.zeros((9, 16, 2, 64), np.float16) for _ in range(2)),
                np.zeros((0, 3), np.int32), np.zeros(0, np.int32), np.zeros((0, 4, 1, 64), np.float16)]
        outputs, _ = run_function(kernel, case)
    assert outputs[-1].shape == (0, 4, 1, 64)
    assert launched[0] == (num_splits or 1, [0, 0])  # an empty batch: no workgroup, no division by 0
    assert launched[1][1][0] == 2 * launched[1][0]
    if num_splits == 0:  # 8192 workgroups fill the chip: no split; one sequence of 2 tiles: one each
        assert launched[4096][0] == 1 and launched[1][0] == 2


def test_a_larger_batch_takes_fewer_splits() -> None:
    # Pointer tables compile the capacity in (200 keys: 7 tiles); only the batch changes at launch.
    context, module, _ = lowered_dynamic_split(page_table="pointers", seq_lens=True, seq_len_k=200)
    with context:
        kernel = next(f for f in functions(module.operation) if symbol_name(f) == "paged_attention")
        counts = [launch_splits(kernel, [(batch, 4, 1, 64), (batch, 26, 1), (batch, 26, 1), (batch,), (batch, 4, 1, 64)])[0]
                  for batch in (1, 5, 22)]
    # 22 x 2 workgroups x 7 splits would need 2 rounds of the 304 compute units for 1 tile each: 4 splits
    # of 2 tiles take as long in one round and write fewer partials.
    assert counts == [7, 7, 4]


def test_static_plan_records_the_cost_model() -> None:
    # B=1, Hq 8, Hkv 1, Sk 8192 (f16, D 128): the model's inputs and estimate are in the plan.
    args = make_args(dynamic=False, batch=1, num_heads_q=8, num_heads_kv=1, seq_len_k=8192, head_dim=128,
                     seq_lens=True, num_splits=0)
    plan = json.loads(compile_cli.compile_source(gen.generate(args), plan=True, cache=False).plan_json)
    model = plan["kernels"][0]["split_model"]
    assert model["inputs"]["workgroups"] == 1 and model["inputs"]["kv_tiles"] == 256
    assert model["inputs"]["combine_workgroups"] == 4 and model["num_splits"] == 64
    assert plan["kernels"][0]["grid"] == [64, 1, 1]
    assert model["split_us"] + model["combine_us"] < model["unsplit_us"] / 10
    assert "split_model" not in plan["kernels"][1]


# --- the model ---------------------------------------------------------------------------

def inputs(**overrides) -> split_kv.SplitInputs:
    """gfx942, f16, D 128, 32-key tiles: B=1, Hq 8, Hkv 1, Sk 8192 unless overridden."""
    values = dict(workgroups=1, kv_tiles=256, tile_bytes=16384, q_bytes=2048, partial_bytes=8 * 129 * 4,
                  combine_workgroups=4, compute_units=304, bandwidth=5.3e12)
    return split_kv.SplitInputs(**{**values, **overrides})


def test_a_full_grid_is_not_split() -> None:
    # B=64, Hkv 8, Sk 512: 512 workgroups on 304 compute units already.
    assert split_kv.choose_splits(inputs(workgroups=512, kv_tiles=16, partial_bytes=64 * 64 * 129 * 4,
                                           combine_workgroups=1024)) == 1


def test_the_combine_bounds_the_split_count() -> None:
    # The same K/V with partials merged by 4 workgroups or by a whole chip of them: one tile per split
    # (256) pays only when the combine reads its partials at the chip's full bandwidth.
    few, many = inputs(), inputs(combine_workgroups=304)
    assert split_kv.choose_splits(few) == 64 and split_kv.choose_splits(many) == 256
    assert split_kv.estimate_seconds(few, 64) < split_kv.estimate_seconds(few, 256)


def test_ties_take_the_fewest_splits() -> None:
    # MHA, B=1, Hkv 8, Sk 4096: 32 splits of 4 tiles keep 256 CUs busy, 38 (304 busy) need 4 tiles as well.
    m = inputs(workgroups=8, kv_tiles=128, q_bytes=256, partial_bytes=8 * 129 * 4)
    assert split_kv.split_seconds(m, 32) == split_kv.split_seconds(m, 38)
    assert split_kv.choose_splits(m) == 32


@pytest.mark.parametrize("always", [False, True])
def test_the_plan_expression_is_the_model(always: bool) -> None:
    # The plan's expression, evaluated by the plan expressions' evaluator on the model's integer names, is
    # the count the model's costs give (the cheapest, the fewest on a tie), also for an empty batch.
    for m in (inputs(combine_always=always), inputs(workgroups=3, kv_tiles=40, combine_always=always),
              inputs(workgroups=700, kv_tiles=9, combine_workgroups=900, combine_always=always),
              inputs(workgroups=0, kv_tiles=5, partial_bytes=0, combine_workgroups=0, combine_always=always)):
        cheapest = min(range(1, max(1, m.kv_tiles) + 1), key=lambda s: (split_kv.estimate_seconds(m, s), s))
        assert formula.evaluate(split_kv.SPLIT_EXPRESSION, split_kv.names(m)) == cheapest
        assert split_kv.choose_splits(m) == cheapest


@pytest.mark.parametrize("argument", KERNEL_PASSES)
def test_each_pass_preserves_a_split_chosen_at_launch(argument: str) -> None:
    # check_pass runs the pass's input and output at every launch size set: after
    # rock-gridwise-attention-to-blockwise the split and combine kernels with a workspace sized by the
    # count chosen for those sizes.
    args = make_args(page_table="blocks", kv_layout="hnd", varlen=True, seq_len_q=2, causal=True, num_splits=0)
    result = check_before_pass(args, argument, seed=5)
    assert result.ok and len(result.functions) == (len(DYNAMIC_SIZES) + 1) * len(PAGE_PLACEMENTS) + 2, result.report()


# --- a fixed split count with dynamic sizes ------------------------------------------------

FIXED_SPLITS = {
    # name: generator overrides (every one --dynamic --num-splits 3, Hq 4 / Hkv 2, D 64, pages of 16)
    "pointers-f16": dict(page_table="pointers", seq_lens=True, seq_len_k=200),
    "blocks-nhd-f16": dict(page_table="blocks", kv_layout="nhd"),
    "blocks-hnd-bf16": dict(page_table="blocks", kv_layout="hnd", dtype="bf16"),
    "csr-nhd-f32": dict(page_table="csr", kv_layout="nhd", dtype="f32"),
    "blocks-varlen-causal": dict(page_table="blocks", varlen=True, seq_len_q=3, causal=True),
    "csr-sinks": dict(page_table="csr", sinks=True),  # the combine adds the sinks
}


@pytest.mark.parametrize("name", list(FIXED_SPLITS))
def test_a_fixed_split_count_with_dynamic_sizes_passes_the_check(name: str, tmp_path) -> None:
    # Three launch size sets: at the two short ones (2 KV tiles of 32 keys) a split gets no tile,
    # at the long one (6 tiles; 200 keys: 7) each gets two or three.
    out = check_kernel(make_args(num_splits=3, **FIXED_SPLITS[name]), tmp_path)
    launches = [line for line in out.splitlines() if line.startswith("@")]
    # shuffled, adjacent, switching pages at each size set, then the edge case and batch 0
    assert len(launches) == (len(DYNAMIC_SIZES) + 1) * len(PAGE_PLACEMENTS) + 2
    assert all("PASS" in line for line in launches), out
    assert out.count("3 splits fixed") == len(launches), out


def test_plan_of_a_fixed_split_count() -> None:
    # The split kernel's grid is an affine map of the batch alone (B x Hkv x 3); the workspace is
    # [3, R x (D + 1)] with R from the batch, as the plan's expressions say and the interpreter launches.
    args = make_args(page_table="blocks", num_splits=3)
    plan = json.loads(compile_cli.compile_source(gen.generate(args), plan=True, cache=False).plan_json)
    split, combine = plan["kernels"]
    rule = split["num_splits_formula"]
    assert rule["expression"] == "3" and split["grid_formula"]["inputs"] == [{"argument": 0, "dim": 0}]
    workspace_argument = rule["workspace_argument"]
    assert split["arguments"][workspace_argument]["shape"] == [3, None]
    assert {"argument": workspace_argument, "dim": 0} not in split["size_arguments"]
    assert {"argument": workspace_argument, "dim": 1} in split["size_arguments"]
    context, module, signature = lowered_dynamic_split(page_table="blocks", num_splits=3)
    with context:
        kernel = next(f for f in functions(module.operation) if symbol_name(f) == "paged_attention")
        combine_kernel = next(f for f in functions(module.operation) if symbol_name(f) == "paged_attention_combine")
        l0 = functions(signature.operation)[0]
        for sizes in (*DYNAMIC_SIZES, LONG_SEQUENCE_SIZES):
            case = make_case(l0, np.random.default_rng(0), Device(), sizes)
            splits, names = split_kv.split_count(rule, [np.shape(a) for a in case.args])
            names["num_splits"] = splits
            workspace = workspace_given(kernel, list(case.args))[-1]
            assert workspace.shape == (3, formula.evaluate(rule["workspace_shape"][1], names))
            assert workspace.nbytes == formula.evaluate(rule["workspace_bytes"], names) == 3 * sizes.batch * 4 * 65 * 4
            shapes = [np.shape(a) for a in [*case.args, workspace]]
            assert formula.evaluate(split["grid_formula"]["expression"], shapes=shapes) == sizes.batch * 2 * 3
            assert launch_size(kernel, None, shapes)[0] == sizes.batch * 2 * 3
            assert formula.evaluate(combine["grid_formula"]["expression"], shapes=shapes) == launch_size(combine_kernel, None, shapes)[0]


@pytest.mark.parametrize("argument", KERNEL_PASSES)
def test_each_pass_preserves_a_fixed_split_count(argument: str) -> None:
    args = make_args(page_table="csr", kv_layout="hnd", varlen=True, seq_len_q=2, causal=True, sinks=True, num_splits=3)
    result = check_before_pass(args, argument, seed=7)
    assert result.ok and len(result.functions) == (len(DYNAMIC_SIZES) + 1) * len(PAGE_PLACEMENTS) + 2, result.report()


def test_a_fixed_count_past_a_static_capacity_is_refused(tmp_path) -> None:
    # Pointer tables compile the capacity in (200 keys): 16 splits are refused as for a static kernel
    # (the tiles shrink to 16 keys first: 13 of them), with the location and the numbers.
    path = tmp_path / "kernel.mlir"
    # (pagedir-gen refuses to write it: the count is set in the text, as a hand-written kernel would.)
    text = gen.generate(make_args(page_table="pointers", seq_lens=True, seq_len_k=200, num_splits=2))
    path.write_text(text.replace("rock.num_splits = 2", "rock.num_splits = 16"))
    out = io.StringIO()
    with redirect_stderr(out):
        code = run_cli.main(["--check", str(path)])
    assert code == 1, out.getvalue()
    assert "kernel.mlir:" in out.getvalue() and "num_splits 16 exceeds the 13 KV tiles of 16 tokens" in out.getvalue()


def test_a_static_batch_with_a_split_count_chosen_at_launch_launches_every_split(tmp_path) -> None:
    # Block slots known only at launch, the batch static: the grid still depends on the count chosen at
    # launch (it used to be the batch's workgroups alone, and the splits past the first wrote nothing).
    text = gen.generate(make_args(num_splits=0, page_table="blocks", num_heads_kv=1))
    for dynamic, static in (("memref<?x4x1x64xf16>", "memref<2x4x1x64xf16>"), ("memref<?x?xi32>", "memref<2x?xi32>"),
                            ("memref<?xi32>", "memref<2xi32>"), ("memref<?x?x1024xf16>", "memref<2x?x1024xf16>")):
        assert dynamic in text
        text = text.replace(dynamic, static)
    path = tmp_path / "static_batch.mlir"
    path.write_text(text)
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_cli.main(["--check", str(path)])
    output = out.getvalue()
    assert code == 0 and "FAIL" not in output, output
    for workgroups, splits in re.findall(r"@paged_attention on (\d+) workgroups.*?(\d+) splits chosen at launch", output):
        assert int(workgroups) == 2 * int(splits), output
