"""Split-KV attention: split kernels and their combine kernel, run in launch order, against the reference.

Each case goes L0 -> L6 through the driver with ``num_splits`` and runs in the
interpreter, which launches the split kernel and then its combine kernel on the
same memory with a NaN-filled workspace (a slot the combine reads that no split
wrote would show as NaN). Pages are shuffled, null past ``seq_lens``.
"""

from __future__ import annotations

import json
import math

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, interp
from pagedir.backend.plan import launch_plan
from pagedir.cli import compile as compile_cli
from pagedir.cli import run as run_cli
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import TOLERANCE, check_pass
from pagedir.passes.ir_utils import find_ops
from pagedir.pipelines import KERNEL_PASSES

from test_attention import check_generated, make_args, run_attention

SPLIT_CASES = {
    # name: (generator overrides, num_splits, seq_lens). With 32-token tiles: tiles per split
    # = ceil(ceil(Sk / 32) / S); lengths end inside pages, tiles and splits.
    "decode-2-splits-f16": (dict(seq_len_k=128), 2, [128, 77]),
    "decode-4-splits-gqa4-bf16": (dict(num_heads_q=8, num_heads_kv=2, seq_len_k=256, dtype="bf16"), 4, [256, 150]),
    "decode-7-splits-f32-len-not-a-multiple": (dict(seq_len_k=224, dtype="f32", page_size=8), 7, [223, 97]),
    "decode-splits-past-seq-len": (dict(seq_len_k=256), 8, [33, 1]),  # splits 2..7 (and 1..7) see no key
    "decode-seq-len-1-mqa-d128": (dict(num_heads_q=4, num_heads_kv=1, head_dim=128, seq_len_k=128), 4, [1, 5]),
    "decode-no-seq-lens": (dict(seq_len_k=96), 3, None),
    "decode-dense": (dict(dense=True, seq_len_k=100), 4, [100, 31]),
    "prefill-causal-f16": (dict(seq_len_q=8, seq_len_k=128, causal=True), 3, [128, 21]),
    "prefill-causal-gqa-bf16": (dict(num_heads_q=4, num_heads_kv=1, seq_len_q=5, seq_len_k=96, head_dim=128,
                                     dtype="bf16", causal=True), 3, [9, 96]),
}


@pytest.mark.parametrize("name", list(SPLIT_CASES))
def test_split_kernel_matches_reference(name: str) -> None:
    overrides, splits, lens = SPLIT_CASES[name]
    args = make_args(**overrides)
    seq_lens = None if lens is None else np.array(lens, dtype=np.int32)
    got, expected = run_attention(args, seq_lens, seed=len(name), num_splits=splits)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, atol=TOLERANCE[args.dtype], rtol=0)


@pytest.mark.parametrize("splits", [2, 5])
def test_splits_never_read_keys_past_seq_len(splits: int) -> None:
    # NaN/Inf in every slot past seq_len, and the pages after the one holding seq_len unmapped:
    # a split past seq_len loads nothing, a split ending inside a page reads only live keys.
    args = make_args(num_heads_q=8, num_heads_kv=2, seq_len_k=256)
    lens = np.array([70, 3], dtype=np.int32)
    got, expected = run_attention(args, lens, stale=True, unmapped_past=args.page_size, num_splits=splits)
    np.testing.assert_allclose(got, expected, atol=TOLERANCE[args.dtype], rtol=0)


def test_causally_hidden_keys_never_reach_a_split() -> None:
    args = make_args(seq_len_q=4, seq_len_k=128, causal=True)
    got, expected = run_attention(args, np.array([128, 70], dtype=np.int32), poison_last_key=True, num_splits=4)
    np.testing.assert_allclose(got, expected, atol=TOLERANCE[args.dtype], rtol=0)


def lowered(end: str = "L6", **options) -> tuple[ir.Context, ir.Module]:
    """A generated kernel lowered to ``end`` with CompileOptions ``options`` (the context kept alive)."""
    generator = {k: options.pop(k) for k in list(options) if k not in ("num_splits", "compute_units", "n_per_block")}
    context = make_context()
    with context:
        module = ir.Module.parse(gen.generate(make_args(**generator)))
        driver.run(module.operation, driver.CompileOptions(arch="gfx942", **options), start="L0", end=end)
    return context, module


def gridwise_op(**options) -> tuple[int, int, int, bool]:
    """(grid_size, num_splits, n_per_block) of the gridwise op a generated kernel gets, and whether
    num_splits is recorded on it."""
    _context, module = lowered("L1", **options)
    op = find_ops(module.operation, "rock.gridwise_attention_accel")[0].opview
    return op.grid_size, op.num_splits, op.n_per_block, "num_splits" in op.operation.attributes


GRIDS = {
    # The shapes on gfx942 (304 compute units), f16, D 128, pages of 16 tokens, 32-key tiles:
    # (B, Hq, Hkv, Sk): (workgroups without splitting, with num-splits=0). The cost model
    # (pagedir.backend.split_kv) weighs the busiest CU's K/V against the partials the combine's
    # workgroups read back: 8 rows of one sequence give the combine 4 workgroups, so 256 splits of one
    # tile (19.4 us estimated) lose to 64 splits of 4 tiles (10.9 us).
    "decode-b1-hkv1-sk8192": ((1, 8, 1, 8192), 1, 64),
    "decode-b1-hkv1-sk4096": ((1, 8, 1, 4096), 1, 43),  # 3 tiles per split
    "decode-b2-hkv2-sk512": ((2, 16, 2, 512), 4, 64),  # 16 tiles per sequence: one per split
    "decode-b64-hkv8-sk512": ((64, 64, 8, 512), 512, 512),  # the grid already fills the chip: no split
    "decode-b1-mha8-sk4096": ((1, 8, 8, 4096), 8, 256),  # 32 splits: 4 tiles each, as with 38 (304 busy)
}


@pytest.mark.parametrize("name", list(GRIDS))
def test_chosen_splits_follow_the_cost_model(name: str) -> None:
    (b, hq, hkv, sk), unsplit, split = GRIDS[name]
    shape = dict(batch=b, num_heads_q=hq, num_heads_kv=hkv, seq_len_k=sk, head_dim=128)
    grid, splits, _, recorded = gridwise_op(**shape)
    assert (grid, splits, recorded) == (unsplit, 1, False)  # today's kernel, unchanged
    grid, splits, _, recorded = gridwise_op(num_splits=0, **shape)
    assert (grid, splits) == (split, split // unsplit) and recorded == (splits > 1)


def test_compute_units_override_and_no_empty_split() -> None:
    # MI300A: 228 compute units. 16 tiles, 4 workgroups: still one tile per split.
    _, splits, _, _ = gridwise_op(num_splits=0, compute_units=228, batch=2, num_heads_q=16, num_heads_kv=2,
                                  seq_len_k=512, head_dim=128)
    assert splits == 16
    # 10 tiles, one workgroup: the fewer the compute units, the fewer splits pay for their partials, and
    # never a count that leaves a split empty (6 splits of 2 tiles: the sixth has none; 5 do the same).
    chosen_counts = []
    for units in (2, 3, 4, 6, 304):
        _, chosen, n, _ = gridwise_op(num_splits=0, compute_units=units, batch=1, num_heads_q=2, num_heads_kv=1,
                                      seq_len_k=320)
        tiles = math.ceil(320 / n)
        per_split = math.ceil(tiles / chosen)
        assert (chosen - 1) * per_split < tiles  # the last split has a tile
        chosen_counts.append(chosen)
    assert chosen_counts == sorted(chosen_counts) and chosen_counts[0] < chosen_counts[-1] <= 10


def test_kernel_attribute_asks_for_splits_and_the_option_wins() -> None:
    context = make_context()
    args = make_args(seq_len_k=256)
    args.num_splits = 4
    with context:
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(arch="gfx942"), start="L0", end="L1")
        assert find_ops(module.operation, "rock.gridwise_attention_accel")[0].opview.num_splits == 4
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(arch="gfx942", num_splits=2), start="L0", end="L1")
        assert find_ops(module.operation, "rock.gridwise_attention_accel")[0].opview.num_splits == 2


@pytest.mark.parametrize("argument", KERNEL_PASSES)
def test_each_pass_preserves_a_split_computation(argument: str) -> None:
    args = make_args(num_heads_q=4, num_heads_kv=2, seq_len_k=96)
    args.seq_lens, args.num_splits = True, 3
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        index = list(KERNEL_PASSES).index(argument)
        if index:
            driver.run_stages(module.operation, [driver.pass_stage(a) for a in list(KERNEL_PASSES)[:index]])
        result = check_pass(module, argument, seed=3)
    assert result.ok and result.functions


def test_the_combine_kernel_writes_out() -> None:
    # The split kernel alone leaves out as it was: only the combine kernel, launched after it, writes it.
    _context, module = lowered(num_splits=3, seq_len_k=96)
    split = next(f for f in interp.launch.functions(module.operation)
                 if interp.launch.symbol_name(f) == "paged_attention")
    args = make_args(seq_len_k=96)
    plan = interp.launch.launch_plan(split)
    assert [interp.launch.symbol_name(k) for k in plan] == ["paged_attention", "paged_attention_combine"]
    rng = np.random.default_rng(0)
    q = rng.standard_normal((args.batch, args.num_heads_q, 1, args.head_dim)).astype(np.float16)
    device = interp.Device()
    table = np.zeros((args.batch, args.num_heads_kv * 96 // 16, 1), dtype=np.int64)  # null pages: keys read 0
    out = np.full(q.shape, np.nan, dtype=np.float32)
    workspace_arg = list(split.regions[0].blocks[0].arguments)[interp.launch.argument_count(split) - 1]
    workspace = np.full(ir.MemRefType(workspace_arg.type).shape, np.nan, np.float32)
    only_split = split.attributes
    del only_split["rock.combine"]
    results, _ = interp.launch.run_function(split, [q, table, table, out, workspace], device=device)
    assert np.all(np.isnan(results[3]))  # out untouched
    assert np.all(np.isfinite(results[4]))  # every workspace slot written: partials 0, LSEs finite (keys of 0)


def test_launch_plan_states_kernels_grids_and_workspace() -> None:
    text = gen.generate(_plan_args())
    entry = compile_cli.compile_source(text, plan=True, cache=False)
    plan = json.loads(entry.plan_json)
    assert plan["launch_order"] == ["paged_attention", "paged_attention_combine"]
    split, combine = plan["kernels"]
    rows, splits, d = 2 * 16 * 1, 16, 128
    # gfx942's matrix cores, split-KV: 32-key tiles, 16 keys for each of 2 waves.
    assert split["grid"] == [4 * splits, 1, 1] and split["block"] == [128, 1, 1]
    assert plan["workspace_bytes"] == split["workspace_bytes"] == splits * rows * (d + 1) * 4
    assert split["arguments"][-1] == {"index": 5, "shape": [splits * rows * (d + 1)], "dtype": "f32",
                                      "bytes": splits * rows * (d + 1) * 4, "workspace": True}
    assert [a["workspace"] for a in split["arguments"]] == [False] * 5 + [True]
    assert split["lds_bytes"] > 0 and combine["lds_bytes"] == 0
    assert combine["grid"][0] * combine["block"][0] >= rows * d // 4
    assert combine["arguments"] == split["arguments"]
    assert [a["shape"] for a in split["arguments"][:5]] == [[2, 16, 1, 128], [2, 64, 1], [2, 64, 1], [2], [2, 16, 1, 128]]


def test_plan_flag_writes_the_file_and_a_cache_hit_keeps_it(tmp_path) -> None:
    source = tmp_path / "decode.mlir"
    source.write_text(gen.generate(_plan_args()))
    first, second = tmp_path / "plan1.json", tmp_path / "plan2.json"
    common = [str(source), "--arch", "gfx942", "-o", str(tmp_path / "k.s"), "--cache-dir", str(tmp_path / "cache")]
    assert compile_cli.main(common + [f"--plan={first}"]) == 0
    assert compile_cli.main(common + [f"--plan={second}"]) == 0
    assert json.loads(first.read_text()) == json.loads(second.read_text())
    assert json.loads(first.read_text())["launch_order"][-1] == "paged_attention_combine"


def test_unsplit_kernel_plan_has_one_launch_and_no_workspace() -> None:
    with make_context():
        args = make_args(batch=2, num_heads_q=16, num_heads_kv=2, seq_len_k=512, head_dim=128)
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(arch="gfx942"), start="L0", end="L6")
        plan = launch_plan(module.operation)
    assert plan["launch_order"] == ["paged_attention"] and plan["workspace_bytes"] == 0
    assert plan["kernels"][0]["grid"] == [4, 1, 1]


def test_pagedir_run_checks_split_kernels(tmp_path, capsys) -> None:
    args = make_args(batch=3, num_heads_q=8, num_heads_kv=2, seq_len_k=160, dtype="bf16")
    args.seq_lens, args.num_splits = True, 5
    path = tmp_path / "split.mlir"
    path.write_text(gen.generate(args))
    assert run_cli.main(["--check", str(path)]) == 0
    assert "L6 after rock-kernel-pipeline" in capsys.readouterr().out


def _plan_args():
    args = make_args(batch=2, num_heads_q=16, num_heads_kv=2, seq_len_k=512, head_dim=128)
    args.seq_lens, args.num_splits, args.arch = True, 0, "gfx942"
    return args


def test_gen_refuses_a_negative_split_count(capsys) -> None:
    from pagedir.cli import gen as gen_cli

    assert gen_cli.main(["attention", "--num-splits", "-1"]) == 1
    assert "--num-splits must be 0 (choose) or positive, got -1" in capsys.readouterr().err


def test_argument_attributes_get_one_for_the_workspace() -> None:
    # A kernel whose arguments carry attributes keeps one dictionary per argument, the workspace's empty.
    args = make_args(seq_len_k=96)
    args.num_splits = 3
    text = gen.generate(args).replace("%q: memref<2x4x1x64xf16>", "%q: memref<2x4x1x64xf16> {llvm.noalias}", 1)
    with make_context():
        module = ir.Module.parse(text)
        driver.run(module.operation, driver.CompileOptions(arch="gfx942"), start="L0", end="L2")
        for func in interp.launch.functions(module.operation):
            attrs = [str(a) for a in ir.ArrayAttr(func.attributes["arg_attrs"])]
            assert attrs == ["{llvm.noalias}", "{}", "{}", "{}", "{}"], interp.launch.symbol_name(func)


# --- the correctness matrix under pagedir-run --check ----------------------------------------
# The check draws the lengths of a split kernel's sequences with one full, one of a single key
# (shorter than any split: every split but the first sees none) and the others ragged, ending
# inside pages and tiles. A split is whole KV tiles, so it ends inside a page when pages are longer
# than tiles (64-token pages, 32-key tiles) and inside a tile only where seq_len does.
CHECK_MATRIX = {
    "pointers-f16-splits-end-mid-page": "--page-size 64 --seq-len-k 256 --num-splits 8",
    "pointers-bf16-capacity-mid-tile": "--dtype bf16 --seq-len-k 200 --num-splits 3",
    "pointers-f32": "--dtype f32 --seq-len-k 128 --num-splits 4",
    "blocks-nhd-f16": "--page-table blocks --kv-layout nhd --seq-len-k 100 --num-splits 3",
    "blocks-hnd-bf16": "--page-table blocks --kv-layout hnd --dtype bf16 --seq-len-k 100 --num-splits 4",
    "csr-nhd-f32": "--page-table csr --kv-layout nhd --dtype f32 --seq-len-k 100 --num-splits 3",
    "csr-hnd-f16-chosen": "--page-table csr --kv-layout hnd --seq-len-k 2048 --head-dim 128 --num-splits 0",
    "dense-bf16": "--dense --dtype bf16 --seq-len-k 96 --num-splits 3",
    "causal-prefill-pointers-bf16": "--seq-len-q 5 --causal --dtype bf16 --seq-len-k 128 --num-splits 3",
    "causal-prefill-blocks-f32": "--page-table blocks --seq-len-q 4 --causal --dtype f32 --seq-len-k 96 --num-splits 2",
}


@pytest.mark.parametrize("name", list(CHECK_MATRIX))
def test_pagedir_run_checks_the_split_matrix(name: str, tmp_path, capsys) -> None:
    out = check_generated(["--batch", "3", *CHECK_MATRIX[name].split()], tmp_path / "split.mlir", capsys, len(name))
    assert "then @paged_attention_combine" in out, out


def test_the_check_gives_a_split_kernel_a_sequence_of_one_key() -> None:
    from pagedir.interp.check import make_case
    from pagedir.interp.memory import Device

    for flags in (dict(), dict(page_table="blocks")):
        args = make_args(batch=3, seq_len_k=100, **flags)
        args.seq_lens, args.num_splits = True, 3
        with make_context():
            module = ir.Module.parse(gen.generate(args))
            func = interp.launch.functions(module.operation)[0]
            lengths = make_case(func, np.random.default_rng(0), Device()).args[-2]
        assert min(lengths) == 1 and max(lengths) >= 100  # the full one: the capacity (whole pages for blocks)
