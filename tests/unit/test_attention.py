"""Paged attention from L0 through rock-kernel-pipeline, executed by the interpreter against the reference.

Pages are uploaded in a shuffled order and pages wholly past ``seq_lens`` hold
null pointers (``pagedir.reference.paged_cache``), so every case exercises the
page table, the null-page guard and the masks.
"""

from __future__ import annotations

import argparse

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, interp, reference
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import TOLERANCE, check_pass, host_values
from pagedir.pipelines import KERNEL_PASSES


def make_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    defaults = dict(batch=2, num_heads_q=4, num_heads_kv=2, seq_len_q=1, seq_len_k=32, head_dim=64, page_size=16)
    for key, value in {**defaults, **overrides}.items():
        setattr(args, key, value)
    return args


def lower(module: ir.Module, end: str = "L6", **tiling) -> None:
    """L0 -> ``end`` through the driver; ``tiling`` (block_size, m_per_block, n_per_block) goes to rock-attention-to-gridwise."""
    driver.run(module.operation, driver.CompileOptions(**tiling), start="L0", end=end)


def run_attention(args, seq_lens=None, seed: int = 0, unmapped_past: int | None = None, stale: bool = False,
                  poison_last_key: bool = False, **options):
    """(kernel output, reference) for ``args`` after the whole kernel pipeline.

    ``unmapped_past``: the pages from the first multiple of this many tokens at or past
    ``seq_lens`` point at unmapped memory (reading one is an interpreter error).
    ``stale``: every K and V slot past ``seq_lens`` (in the live last page of a sequence,
    or of dense K/V) holds NaN, +Inf or -Inf, as a reused cache slot may. ``poison_last_key``:
    the K and V of each sequence's last key (which causal masking hides from every query
    but the last) hold NaN."""
    rng = np.random.default_rng(seed)
    args.seq_lens = seq_lens is not None
    seq_lens = np.asarray(seq_lens, dtype=np.int32) if seq_lens is not None else None  # the kernel's i32
    b, hq, hkv, sq, sk, d = args.batch, args.num_heads_q, args.num_heads_kv, args.seq_len_q, args.seq_len_k, args.head_dim
    q = host_values(rng.standard_normal((b, hq, sq, d)), args.dtype)
    k = host_values(rng.standard_normal((b, hkv, sk, d)), args.dtype)
    v = host_values(rng.standard_normal((b, hkv, sk, d)), args.dtype)
    if stale:
        k, v = reference.fill_stale(k, seq_lens), reference.fill_stale(v, seq_lens)
    if poison_last_key:
        for batch, length in enumerate(seq_lens):
            k[batch, :, length - 1] = np.nan
            v[batch, :, length - 1] = np.nan
    device_dtype = "bf16" if args.dtype == "bf16" else None
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        lower(module, **options)
        device = interp.Device()
        if args.dense:
            k_arg, v_arg = k, v
        else:
            caches = [reference.paged_cache(device, x, args.page_size, seq_lens=seq_lens, rng=rng, dtype=device_dtype)
                      for x in (k, v)]
            k_arg, v_arg = caches[0].table, caches[1].table
            if unmapped_past:
                first_token = np.arange(k_arg.shape[1]) * args.page_size % sk
                for table in (k_arg, v_arg):
                    for batch, length in enumerate(seq_lens):
                        unread = first_token >= -(-int(length) // unmapped_past) * unmapped_past
                        table[batch, unread, 0] = 0xDEAD0000
        out = host_values(np.full((b, hq, sq, d), np.nan), args.dtype)
        call = [q, k_arg, v_arg] + ([seq_lens] if seq_lens is not None else []) + [out]
        results = interp.run(module, args.name, call, device=device)
    expected = reference.attention(q, k, v, seq_lens=seq_lens, causal=args.causal, scale=args.scale)
    return np.asarray(results[-1], dtype=np.float32), expected


CASES = {
    # name: (generator overrides, seq_lens or None)
    "decode-gqa2-f16-p16": (dict(), [32, 7]),
    "decode-gqa4-d128-p32": (dict(num_heads_q=8, head_dim=128, page_size=32, seq_len_k=64), [1, 45]),
    "decode-gqa8-p64-bf16": (dict(num_heads_q=8, num_heads_kv=1, seq_len_k=128, page_size=64, dtype="bf16"), [128, 65]),
    "decode-mha-f32": (dict(num_heads_q=2, num_heads_kv=2, dtype="f32", page_size=8, seq_len_k=40), [40, 13]),
    "decode-mqa-d128": (dict(num_heads_q=4, num_heads_kv=1, head_dim=128), [1, 31]),
    "decode-full-no-seq-lens": (dict(seq_len_k=48), None),
    "prefill-causal-f16": (dict(seq_len_q=8, seq_len_k=48, causal=True), [48, 21]),
    "prefill-causal-gqa4-d128-bf16": (dict(num_heads_q=4, num_heads_kv=1, seq_len_q=5, seq_len_k=32, head_dim=128,
                                           dtype="bf16", causal=True), [9, 32]),
    "prefill-f32-p32": (dict(seq_len_q=6, seq_len_k=64, dtype="f32", page_size=32), [64, 50]),
    "prefill-many-query-blocks": (dict(num_heads_q=2, num_heads_kv=2, seq_len_q=40, seq_len_k=64, causal=True), [40, 64]),
    "dense-decode": (dict(dense=True, seq_len_k=40), [40, 3]),
    "dense-prefill-causal": (dict(dense=True, seq_len_q=4, seq_len_k=24, causal=True), None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_reference(name: str) -> None:
    overrides, lens = CASES[name]
    args = make_args(**overrides)
    seq_lens = None if lens is None else np.array(lens, dtype=np.int32)
    got, expected = run_attention(args, seq_lens, seed=len(name))
    np.testing.assert_allclose(got, expected, atol=TOLERANCE[args.dtype], rtol=0)


STALE_CASES = {
    # name: (generator overrides, kernel options, seq_lens): each length ends inside a page and a KV tile.
    "decode": (dict(), {}, [32, 7]),
    "decode-tiles-start-mid-page": (dict(seq_len_k=128, page_size=64), dict(n_per_block=32), [128, 45]),
    "decode-page-spans-two-heads": (dict(seq_len_k=32, page_size=64), {}, [13, 30]),
    "prefill": (dict(seq_len_q=6, seq_len_k=64, dtype="f32", page_size=32), {}, [64, 50]),
    "prefill-causal": (dict(seq_len_q=8, seq_len_k=48, causal=True), {}, [48, 21]),
    "prefill-causal-bf16-tiles-start-mid-page": (dict(num_heads_q=4, num_heads_kv=1, seq_len_q=5, seq_len_k=64, page_size=32,
                                                      dtype="bf16", causal=True), dict(n_per_block=16), [25, 41]),
    "dense-decode": (dict(dense=True, seq_len_k=40), {}, [40, 3]),
    "dense-prefill-causal": (dict(dense=True, seq_len_q=4, seq_len_k=24, causal=True), {}, [24, 10]),
}


@pytest.mark.parametrize("name", list(STALE_CASES))
def test_keys_past_seq_len_never_reach_the_output(name: str) -> None:
    # NaN/Inf in every K and V slot past seq_len: masked keys must not be read (a probability of 0 times NaN is NaN).
    overrides, options, lens = STALE_CASES[name]
    args = make_args(**overrides)
    got, expected = run_attention(args, np.array(lens, dtype=np.int32), seed=len(name), stale=True, **options)
    assert np.all(np.isfinite(expected))
    assert np.all(np.isfinite(got)), f"{np.count_nonzero(~np.isfinite(got))} of {got.size} outputs are not finite"
    np.testing.assert_allclose(got, expected, atol=TOLERANCE[args.dtype], rtol=0)


@pytest.mark.parametrize("dense", [False, True])
def test_causally_masked_keys_never_reach_the_output(dense: bool) -> None:
    # Only the last query row sees the last key: NaN in its K and V must spare every other row.
    args = make_args(seq_len_q=4, seq_len_k=48, causal=True, dense=dense)
    got, expected = run_attention(args, np.array([48, 21], dtype=np.int32), poison_last_key=True)
    assert np.all(np.isnan(expected[:, :, -1])) and np.all(np.isfinite(expected[:, :, :-1]))
    np.testing.assert_allclose(got[:, :, :-1], expected[:, :, :-1], atol=TOLERANCE[args.dtype], rtol=0)


def test_causally_masked_keys_never_reach_the_output_without_matrix_cores() -> None:
    # The same on a chip without matrix instructions (gfx1030): the VALU loop skips hidden keys itself.
    args = make_args(seq_len_q=4, seq_len_k=48, causal=True, arch="gfx1030")
    got, expected = run_attention(args, np.array([48, 21], dtype=np.int32), poison_last_key=True)
    assert np.all(np.isnan(expected[:, :, -1])) and np.all(np.isfinite(expected[:, :, :-1]))
    np.testing.assert_allclose(got[:, :, :-1], expected[:, :, :-1], atol=TOLERANCE[args.dtype], rtol=0)


#: The VALU loop (gfx1030: no matrix cores) under causal and window masks. With --seq-lens the check draws a
#: sequence shorter than the queries: its first rows see no key in any tile, so their running max stays -inf
#: while the other rows' grows, and the online softmax must rescale from the masked max, not the raw one.
VALU_MASKS = {
    "decode-window-f16": "--seq-len-k 128 --window 8",
    "decode-window-f32": "--seq-len-k 128 --window 40 --dtype f32",
    "prefill-causal-f16": "--seq-len-q 4 --seq-len-k 128 --causal",
    "prefill-causal-f32": "--seq-len-q 4 --seq-len-k 128 --causal --dtype f32",
    "prefill-window-causal-f16": "--seq-len-q 9 --seq-len-k 96 --causal --window 20",
    "prefill-window-f32": "--seq-len-q 9 --seq-len-k 96 --window 20 --dtype f32",
    "prefill-causal-splits-f16": "--batch 3 --seq-len-q 4 --seq-len-k 128 --causal --num-splits 2",
}


@pytest.mark.parametrize("case", list(VALU_MASKS))
def test_valu_loop_with_causal_and_window_masks_matches_the_reference(case: str, tmp_path, capsys) -> None:
    check_generated(["--arch", "gfx1030", *VALU_MASKS[case].split()], tmp_path / "valu.mlir", capsys, seed=1)


def test_tiles_past_seq_len_are_never_loaded() -> None:
    args = make_args(num_heads_q=8, seq_len_k=128, page_size=16)
    # Pages of tiles wholly past seq_len point at unmapped memory.
    got, expected = run_attention(args, np.array([17, 70], dtype=np.int32), unmapped_past=32, n_per_block=32)
    np.testing.assert_allclose(got, expected, atol=2e-2, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_pages_past_seq_len_are_never_read(causal: bool) -> None:
    # Every page wholly past seq_len points at unmapped memory, also those inside the last tile
    # (tiles of 64 keys, pages of 16): keys past seq_len are not read at all, not read and then masked.
    args = make_args(seq_len_q=4 if causal else 1, seq_len_k=128, causal=causal)
    got, expected = run_attention(args, np.array([17, 70], dtype=np.int32), unmapped_past=1, n_per_block=64)
    np.testing.assert_allclose(got, expected, atol=2e-2, rtol=0)


def test_every_causal_row_fully_masked_gives_zeros() -> None:
    # seq_len 2 with 4 query positions: rows 0 and 1 see no key (i + seq_len - Sq < 0).
    args = make_args(seq_len_q=4, seq_len_k=16, causal=True)
    got, expected = run_attention(args, np.array([2, 16], dtype=np.int32))
    assert np.all(got[0, :, :2] == 0)
    np.testing.assert_allclose(got, expected, atol=2e-2, rtol=0)


def test_tiling_override_still_computes_attention() -> None:
    args = make_args(num_heads_q=8, seq_len_q=3, seq_len_k=64)
    got, expected = run_attention(args, np.array([64, 30], dtype=np.int32), block_size=64, m_per_block=8, n_per_block=16)
    np.testing.assert_allclose(got, expected, atol=2e-2, rtol=0)


@pytest.mark.parametrize(("page_size", "seq_len_k", "lens"), [(64, 128, [128, 45]), (24, 96, [96, 50])])
def test_kv_tiles_starting_inside_a_page(page_size: int, seq_len_k: int, lens: list[int]) -> None:
    # Tiles of 16 tokens. Pages of 64: three tiles of every page start at its tokens 16, 32, 48.
    # Pages of 24: the tile at token 16 ends in the next page, the one at 32 starts 8 tokens into it.
    args = make_args(num_heads_q=4, seq_len_q=3, seq_len_k=seq_len_k, page_size=page_size, causal=True)
    assert gridwise_attributes(args, n_per_block=16)["n_per_block"] == 16
    got, expected = run_attention(args, np.array(lens, dtype=np.int32), n_per_block=16)
    np.testing.assert_allclose(got, expected, atol=2e-2, rtol=0)


def gridwise_attributes(args, **options) -> dict[str, int]:
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        lower(module, end="L1", **options)
        found = {}

        def visit(op):
            if op.name == "rock.gridwise_attention_accel":
                for key in ("block_size", "grid_size", "m_per_block", "n_per_block"):
                    found[key] = ir.IntegerAttr(op.attributes[key]).value
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        return found


def test_decode_packs_the_query_heads_of_a_kv_head() -> None:
    # GQA 8: one workgroup per (sequence, KV head) holds the 8 query heads, so K/V are read once per group.
    attrs = gridwise_attributes(make_args(batch=3, num_heads_q=16, num_heads_kv=2, head_dim=128))
    assert attrs["m_per_block"] == 8
    assert attrs["grid_size"] == 3 * 2


def test_prefill_tiles_query_positions_of_the_group() -> None:
    attrs = gridwise_attributes(make_args(num_heads_q=8, num_heads_kv=2, seq_len_q=20, seq_len_k=64))
    assert attrs["m_per_block"] % 4 == 0
    positions = attrs["m_per_block"] // 4
    assert attrs["grid_size"] == 2 * 2 * -(-20 // positions)


def test_options_override_the_tiling() -> None:
    attrs = gridwise_attributes(make_args(), block_size=128, n_per_block=16)
    assert attrs["block_size"] == 128 and attrs["n_per_block"] == 16


def check_generated(flags: list[str], path, capsys, seed: int) -> str:
    """``pagedir-gen attention`` with Hq 4 / Hkv 2, D 64 and ``flags`` (``--seq-lens`` too, unless a CSR table
    carries the lengths) into ``path``, then ``pagedir-run --check`` of it: both succeed, no level fails;
    the check's output."""
    from pagedir.cli import gen as gen_cli
    from pagedir.cli import run as run_cli

    lengths = [] if "csr" in flags else ["--seq-lens"]
    assert gen_cli.main(["attention", "--num-heads-q", "4", "--num-heads-kv", "2", "--head-dim", "64", *lengths, *flags,
                         "-o", str(path)]) == 0
    capsys.readouterr()
    assert run_cli.main(["--check", str(path), "--seed", str(seed)]) == 0
    out = capsys.readouterr().out
    assert "L6 after rock-kernel-pipeline" in out and "FAIL" not in out, out
    return out


def check_before_pass(args: argparse.Namespace, argument: str, seed: int):
    """check_pass of kernel pass ``argument`` on the generated kernel lowered up to that pass."""
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        stages = driver.stages(driver.CompileOptions(), "linalg", "L6")  # from the first kernel pass
        driver.run_stages(module.operation, stages[: KERNEL_PASSES.index(argument)])
        return check_pass(module, argument, seed=seed)


@pytest.mark.parametrize("argument", KERNEL_PASSES)
def test_each_pass_preserves_the_computation(argument: str) -> None:
    # The module is lowered up to the pass, then check_pass runs the pass's input and output on the same data.
    args = make_args(num_heads_q=4, num_heads_kv=1, seq_len_q=2, seq_len_k=32, causal=True, seq_lens=True)
    result = check_before_pass(args, argument, seed=3)
    assert result.ok and result.functions, result.report()


@pytest.mark.parametrize(("page_size", "block_size"), [(1, 1), (1, 32), (1, 64), (2, 32), (2, 64), (4, 64)])
def test_more_pages_per_tile_than_threads(page_size: int, block_size: int) -> None:
    # KV tiles of 128 pages (1-token pages as in SGLang), shuffled in memory: each thread stages several pointers.
    tile = 128 * page_size
    args = make_args(num_heads_q=2, num_heads_kv=1, seq_len_k=2 * tile, head_dim=16, page_size=page_size)
    seq_lens = np.array([2 * tile, tile + 37], dtype=np.int32)
    got, expected = run_attention(args, seq_lens, seed=page_size, block_size=block_size, n_per_block=tile)
    np.testing.assert_allclose(got, expected, atol=TOLERANCE[args.dtype], rtol=0)


@pytest.mark.parametrize("page_size", [1, 2, 3, 4])
def test_small_pages_with_the_default_tiling(page_size: int) -> None:
    # Prefill, causal, GQA 2, D 64: the chosen tiling over pages of a few tokens.
    args = make_args(seq_len_q=3, seq_len_k=96, causal=True, page_size=page_size)
    got, expected = run_attention(args, np.array([96, 50], dtype=np.int32), seed=page_size)
    np.testing.assert_allclose(got, expected, atol=TOLERANCE[args.dtype], rtol=0)


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
def test_f32_head_dim_256_without_f32_matrix_cores_fits_the_lds(arch: str) -> None:
    # The VALU loop's 64-key tile of f32 D 256 is 64 KiB of K alone: the tiling takes 32 keys (it used to
    # keep 64 and refuse its own choice for LDS), and the kernel computes the reference.
    args = make_args(head_dim=256, dtype="f32", seq_len_k=96, arch=arch)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        lower(module, end="L1")
        op = [o for o in module.body.operations[0].regions[0].blocks[0].operations
              if o.operation.name == "rock.gridwise_attention_accel"][0]
        assert ir.IntegerAttr(op.attributes["n_per_block"]).value == 32
    got, expected = run_attention(args, seq_lens=np.array([96, 41], dtype=np.int32), seed=4)
    np.testing.assert_allclose(got, expected, atol=TOLERANCE["f32"], rtol=0)
