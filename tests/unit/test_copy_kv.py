"""The paged KV gather (copy-kv) executed by the interpreter at every level of the load path.

Pages are uploaded one by one in a shuffled order (unrelated addresses), the page
table holds their addresses, and ``out`` must equal the dense cache behind them:
zeros past ``seq_lens`` and where a page pointer is null.
"""

from __future__ import annotations

import argparse

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, interp
from pagedir.context import make_context
from pagedir.gen import copy_kv
from pagedir.interp.cases import copy_kv as copy_kv_case

LOAD_PASSES = ("rock-blockwise-load", "rock-threadwise-lowering", "rock-buffer-load", "rock-to-gpu")
#: The kernel pipeline's order: LDS planning between the two load passes.
PIPELINE_ORDER = ("rock-blockwise-load", "rock-annotate-liveness", "rock-reuse-lds", *LOAD_PASSES[1:])


def make_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    copy_kv.add_arguments(parser)
    args = parser.parse_args([])
    defaults = dict(batch=2, num_heads_kv=2, seq_len=32, head_dim=16, page_size=8, tile_tokens=16, block_size=64)
    for key, value in {**defaults, **overrides}.items():
        setattr(args, key, value)
    return args


def gather_inputs(args, rng: np.random.Generator, device, null_pages: bool):
    """(table, seq_lens or None, expected out, buffers kept alive)."""
    b, h, s, d = args.batch, args.num_heads_kv, args.seq_len, args.head_dim
    page = args.page_size * d
    pages = h * s // args.page_size
    dense = copy_kv_case.rounded(rng.standard_normal((b, h, s, d)).astype(np.float32), args.dtype)
    seq_lens = rng.integers(1, s + 1, size=b).astype(np.int32) if args.seq_lens else None
    null = rng.random((b, pages)) < 0.3 if null_pages else np.zeros((b, pages), dtype=bool)
    table, kept = copy_kv_case.scatter_pages(dense.reshape(b, pages, page), null, args.dtype, rng, device)
    null_tokens = np.repeat(null, page, axis=1).reshape(b, h, s, d)
    return table, seq_lens, copy_kv_case.reference(dense, seq_lens, null_tokens), kept


def run_levels(args, null_pages: bool = False, seed: int = 0, passes=LOAD_PASSES) -> None:
    """Run copy-kv at L2 and after each load-path pass on the same pages; every level must gather exactly."""
    rng = np.random.default_rng(seed)
    with make_context():
        module = ir.Module.parse(copy_kv.generate(args))
        device = interp.Device()
        table, seq_lens, expected, kept = gather_inputs(args, rng, device, null_pages)

        checked = []

        def gathers_exactly(stage, *_output_and_seconds) -> None:
            name = stage.name if stage else "generation"
            out = np.full(expected.shape, np.nan, dtype=np.float16 if args.dtype == "f16" else np.float32)
            inputs = [table] + ([seq_lens] if seq_lens is not None else []) + [out]
            results = interp.run(module, "copy_kv", inputs, device=device)
            got = as_f32(results[-1], args.dtype)
            np.testing.assert_array_equal(got, expected, err_msg=f"after {name}")
            checked.append(name)

        gathers_exactly(None)
        driver.run_stages(module.operation, [driver.pass_stage(argument) for argument in passes], on_stage=gathers_exactly)
        assert checked == ["generation", *passes]
        assert kept


def as_f32(result, dtype: str) -> np.ndarray:
    result = np.asarray(result)
    if dtype == "bf16" and result.dtype == np.uint16:
        return copy_kv_case.bf16_values(result)
    return result.astype(np.float32)


@pytest.mark.parametrize("page_size", [8, 16, 32, 64, 128, 256])
def test_page_sizes(page_size: int) -> None:
    # Tiles of 16 tokens: smaller than, equal to and larger than a page.
    run_levels(make_args(page_size=page_size, num_heads_kv=2, seq_len=max(32, page_size // 2), head_dim=8))


@pytest.mark.parametrize("layout", ["k", "v"])
@pytest.mark.parametrize("tile_tokens", [8, 12, 24])
def test_layouts_and_unaligned_tiles(layout: str, tile_tokens: int) -> None:
    run_levels(make_args(layout=layout, tile_tokens=tile_tokens, seq_len=48))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_dtypes(dtype: str) -> None:
    run_levels(make_args(dtype=dtype, layout="v"))


@pytest.mark.parametrize("layout", ["k", "v"])
def test_ragged_sequences_and_null_pages(layout: str) -> None:
    run_levels(make_args(layout=layout, seq_lens=True), null_pages=True, seed=3)


@pytest.mark.parametrize("argument", LOAD_PASSES)
def test_each_pass_preserves_the_gather(argument: str) -> None:
    with make_context():
        module = ir.Module.parse(copy_kv.generate(make_args(seq_lens=True)))
        earlier = LOAD_PASSES[: LOAD_PASSES.index(argument)]
        driver.run_stages(module.operation, [driver.pass_stage(name) for name in earlier])
        interp.check_pass(module, argument, seed=7)


@pytest.mark.parametrize("layout", ["k", "v"])
def test_pipeline_order_with_pooled_lds(layout: str) -> None:
    # rock-reuse-lds recycles the pointer buffer's bytes for the tile; the race detector checks the barriers.
    run_levels(make_args(layout=layout, seq_lens=True), null_pages=True, seed=5, passes=PIPELINE_ORDER)


def run_kernel_pipeline(args, null_pages: bool = False, seed: int = 0) -> None:
    """copy-kv lowered by rock-kernel-pipeline (L2 -> L6), run on shuffled pages, against the reference."""
    rng = np.random.default_rng(seed)
    with make_context():
        module = ir.Module.parse(copy_kv.generate(args))
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        device = interp.Device()
        table, seq_lens, expected, _ = gather_inputs(args, rng, device, null_pages)
        assert np.any(np.diff(table[0, :, 0]) < 0), "the pages must not lie in table order"
        out = np.full(expected.shape, np.nan, dtype=np.float16 if args.dtype == "f16" else np.float32)
        inputs = [table] + ([seq_lens] if seq_lens is not None else []) + [out]
        got = as_f32(interp.run(module, "copy_kv", inputs, device=device)[-1], args.dtype)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("block_size", [1, 32, 64])
@pytest.mark.parametrize("page_size", [1, 2, 4])
def test_more_pages_per_tile_than_threads(page_size: int, block_size: int) -> None:
    # 128 pages per tile: every thread stages pointers for pages t, t + block_size, ...
    tile = 128 * page_size
    args = make_args(batch=1, num_heads_kv=2, seq_len=tile, head_dim=8, page_size=page_size, tile_tokens=tile,
                     block_size=block_size)
    run_kernel_pipeline(args)


@pytest.mark.parametrize("layout", ["k", "v"])
def test_page_count_not_a_multiple_of_the_block(layout: str) -> None:
    # 1-token pages, 100-token tiles, 32 threads: the last staging round covers only 4 of its 32 slots.
    args = make_args(batch=2, num_heads_kv=1, seq_len=200, head_dim=8, page_size=1, tile_tokens=100, block_size=32,
                     layout=layout, seq_lens=True)
    run_kernel_pipeline(args, null_pages=True, seed=11)


@pytest.mark.parametrize("page_size", [1, 2, 3, 4])
def test_every_small_page_size_through_each_load_pass(page_size: int) -> None:
    # Pages of 3 tokens start anywhere in a 16-token tile: up to 7 pages for 4 threads.
    args = make_args(num_heads_kv=1, seq_len=48, page_size=page_size, tile_tokens=16, block_size=4, layout="v")
    run_levels(args, passes=PIPELINE_ORDER)


@pytest.mark.parametrize("seq_lens", [False, True], ids=["full", "ragged"])
@pytest.mark.parametrize("layout", ["k", "v"])
def test_any_capacity_the_last_page_partly_filled(layout: str, seq_lens: bool, tmp_path) -> None:
    # 2 heads x 130 tokens in pages of 64 tokens: 5 pages per sequence, the last holding 4 tokens (NaN past
    # them, never copied); pagedir-run --check at L2 and after rock-kernel-pipeline.
    import io
    from contextlib import redirect_stdout

    from pagedir.cli import run as run_cli

    args = make_args(seq_len=130, page_size=64, layout=layout, seq_lens=seq_lens)
    text = copy_kv.generate(args)
    assert "seq_len_k = 130" in text and "memref<2x5x1xi64>" in text
    path = tmp_path / "copy_kv.mlir"
    path.write_text(text)
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_cli.main(["--check", str(path)])
    assert code == 0 and "L6 after rock-kernel-pipeline" in out.getvalue() and "FAIL" not in out.getvalue(), out.getvalue()
