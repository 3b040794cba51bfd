"""K and V in one tensor (``pagedir-gen attention --kv-cache stacked0|stacked1``): vLLM FlashAttention's
``[2, num_blocks, ...]`` and vLLM Triton's / FlashInfer's ``[num_blocks, 2, ...]`` read in place through
``memref.subview`` s of the one ``kv_cache`` argument (strided pools of ``rock.block_table_view``).

Kernels are checked by execution as ``pagedir-run --check`` does: shuffled and shared blocks, NaN in unused
blocks and past each sequence, the two halves of the one tensor holding K and V.
"""

from __future__ import annotations

import numpy as np
import pytest

from pagedir import reference
from pagedir.gen import attention as gen

from test_serving_forms import check_kernel, make_args

MODES = {"decode": dict(seq_len_q=1), "causal-prefill": dict(seq_len_q=4, causal=True)}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("page_table", ["blocks", "csr"])
@pytest.mark.parametrize("layout", ["nhd", "hnd"])
@pytest.mark.parametrize("kv_cache", ["stacked0", "stacked1"])
def test_stacked_caches_match_the_reference(kv_cache, layout, page_table, dynamic, mode, dtype, tmp_path) -> None:
    args = make_args(kv_cache=kv_cache, kv_layout=layout, page_table=page_table, dynamic=dynamic, dtype=dtype,
                     num_heads_q=4, num_heads_kv=2, head_dim=32, seq_len_k=40, page_size=8, **MODES[mode])
    text = gen.generate(args)
    assert "%kv_cache" in text and "%k_cache:" not in text and "%v_cache:" not in text
    check_kernel(args, tmp_path)


def kernel_report(**overrides):
    """The gfx942 report of the generated kernel (decode, 16 query heads on 2 KV heads, D = 128)."""
    import mlir.ir as ir

    from pagedir import driver
    from pagedir.backend import kernel_reports
    from pagedir.context import make_context

    args = make_args(num_heads_q=16, num_heads_kv=2, head_dim=128, seq_len_k=256, page_size=16, **overrides)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        asm = driver.run(module.operation, driver.CompileOptions(arch="gfx942"), end="asm")["asm"]
    return kernel_reports(asm, "gfx942")[0]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("kv_cache", ["stacked0", "stacked1"])
def test_stacked_pools_keep_the_16_byte_loads(kv_cache: str, dynamic: bool) -> None:
    # A stacked pool's block stride (stacked1) or its V half's offset (stacked0, '?' with --dynamic) changes
    # the page addresses only: every row is still read by 16-byte buffer loads, one descriptor per page.
    separate = kernel_report(page_table="blocks", dynamic=dynamic)
    stacked = kernel_report(page_table="blocks", dynamic=dynamic, kv_cache=kv_cache)
    assert stacked.buffer_loads == separate.buffer_loads and "dwordx4" in stacked.buffer_loads
    assert stacked.waterfall_buffer_loads == separate.waterfall_buffer_loads == 0
    assert stacked.vgprs <= separate.vgprs + 4


@pytest.mark.parametrize("kv_cache", ["separate", "stacked1"])
@pytest.mark.parametrize("num_blocks", [1, 5])
@pytest.mark.parametrize("page_table", ["blocks", "csr"])
def test_static_kernels_take_a_pool_smaller_than_the_table(page_table: str, num_blocks: int, kv_cache: str,
                                                         tmp_path) -> None:
    # 4 sequences of 8 block slots on a pool of 5 blocks, or of 1: a serving pool is sized by memory, and ids
    # outside it are null pages. The check fits its sequences into the pool (sequences 0 and 1 share a block).
    args = make_args(page_table=page_table, batch=4, seq_len_k=64, page_size=8, head_dim=32, num_blocks=num_blocks,
                     kv_cache=kv_cache)
    text = gen.generate(args)
    assert f"memref<{num_blocks}x8x2x32xf16" in text if kv_cache == "separate" else f"memref<{num_blocks}x2x8x2x32xf16>" in text
    check_kernel(args, tmp_path)


def test_num_blocks_must_be_positive(capsys) -> None:
    from pagedir.cli import gen as gen_cli

    assert gen_cli.main(["attention", "--page-table", "blocks", "--num-blocks", "0"]) == 1
    assert "--num-blocks must be at least 1 (block ids are range-checked), got 0" in capsys.readouterr().err


@pytest.mark.parametrize(("form", "shape"), [("stacked0", (2, 6, 4, 3, 8)), ("stacked1", (6, 2, 4, 3, 8))])
def test_reference_stacks_and_splits_without_a_copy(form: str, shape: tuple) -> None:
    rng = np.random.default_rng(0)
    k, v = rng.standard_normal((6, 4, 3, 8)), rng.standard_normal((6, 4, 3, 8))  # two nhd pools of 6 blocks
    kv_cache = reference.stack_kv_cache(k, v, form)
    assert kv_cache.shape == shape
    k_pool, v_pool = reference.split_kv_cache(kv_cache, form)
    assert np.array_equal(k_pool, k) and np.array_equal(v_pool, v)
    assert np.shares_memory(k_pool, kv_cache) and np.shares_memory(v_pool, kv_cache)
    with pytest.raises(ValueError, match="unknown stacked K/V cache 'separate'"):
        reference.split_kv_cache(kv_cache, "separate")


VARIANTS = {
    "split": ["--page-table", "blocks", "--kv-cache", "stacked0", "--num-splits", "2"],
    "split-dynamic": ["--page-table", "csr", "--kv-cache", "stacked1", "--num-splits", "0", "--dynamic"],
    "varlen": ["--page-table", "blocks", "--kv-cache", "stacked1", "--varlen", "--seq-len-q", "4", "--causal"],
    "varlen-dynamic": ["--page-table", "csr", "--kv-cache", "stacked0", "--varlen", "--seq-len-q", "4", "--causal",
                       "--dynamic"],
    "variants-hnd": ["--page-table", "blocks", "--kv-cache", "stacked0", "--alibi", "--sinks", "--softcap", "30",
                     "--window", "20", "--kv-layout", "hnd"],
    "fp8-per-tensor": ["--page-table", "blocks", "--kv-cache", "stacked1", "--kv-dtype", "fp8e4m3fnuz",
                       "--kv-scale", "per-tensor"],
    "fp8-per-token-head-dynamic": ["--page-table", "csr", "--kv-cache", "stacked0", "--kv-dtype", "fp8e4m3fnuz",
                                   "--kv-scale", "per-token-head", "--dynamic"],
    "lds-dma-prefill": ["--page-table", "blocks", "--kv-cache", "stacked0", "--lds-dma", "--seq-len-q", "16",
                        "--causal"],
}


@pytest.mark.parametrize("flags", list(VARIANTS.values()), ids=list(VARIANTS))
def test_stacked_caches_with_splits_varlen_variants_and_fp8(flags: list, tmp_path) -> None:
    import io
    from contextlib import redirect_stdout

    from pagedir.cli import gen as gen_cli
    from pagedir.cli import run as run_cli

    path = tmp_path / "kernel.mlir"
    shape = ["--batch", "3", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-k", "48", "--head-dim", "64",
             "--page-size", "16"]
    assert gen_cli.main(["attention", *shape, *flags, "-o", str(path)]) == 0
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_cli.main(["--check", str(path)])
    assert code == 0 and "L6 after rock-kernel-pipeline" in out.getvalue() and "FAIL" not in out.getvalue(), out.getvalue()


@pytest.mark.parametrize("form", [[], ["--dense"]], ids=["pointers", "dense"])
def test_kv_cache_stacks_pools_only(form: list, capsys) -> None:
    from pagedir.cli import gen as gen_cli

    assert gen_cli.main(["attention", *form, "--kv-cache", "stacked1"]) == 1
    assert "--kv-cache stacked1 stacks the cache pools of --page-table blocks or csr" in capsys.readouterr().err


def test_check_draws_pools_taking_every_other_block_of_the_tensor(tmp_path) -> None:
    # memref.subview steps are static strides: K in the even blocks of K's half, V in the odd ones of V's half
    import io
    from contextlib import redirect_stdout

    from pagedir.cli import gen as gen_cli
    from pagedir.cli import run as run_cli

    path = tmp_path / "kernel.mlir"
    shape = ["--batch", "2", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-k", "32", "--head-dim", "16",
             "--page-size", "8", "--page-table", "blocks", "--kv-cache", "stacked0"]
    assert gen_cli.main(["attention", *shape, "-o", str(path)]) == 0
    text = path.read_text()
    pool = "memref<8x8x1x16xf16, strided<[128, 16, 16, 1]"
    for half, offset in (("0, 0", ">>"), ("1, 1", ", offset: 1024>>")):
        text = text.replace(f"%kv_cache[{half[0]}, 0, 0, 0, 0] [1, 8, 8, 1, 16] [1, 1, 1, 1, 1]",
                            f"%kv_cache[{half}, 0, 0, 0] [1, 4, 8, 1, 16] [1, 2, 1, 1, 1]")
        text = text.replace(pool + offset, "memref<4x8x1x16xf16, strided<[256, 16, 16, 1]"
                            + (">>" if half == "0, 0" else ", offset: 1152>>"))
    assert text.count("[1, 2, 1, 1, 1]") == 2 and "offset: 1152" in text
    path.write_text(text)
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_cli.main(["--check", str(path)])
    assert code == 0 and "L6 after rock-kernel-pipeline" in out.getvalue() and "FAIL" not in out.getvalue(), out.getvalue()


def test_check_refuses_k_and_v_pools_of_different_sizes(tmp_path, capsys) -> None:
    from pagedir.cli import gen as gen_cli
    from pagedir.cli import run as run_cli

    path = tmp_path / "kernel.mlir"
    shape = ["--batch", "2", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-k", "32", "--head-dim", "16",
             "--page-size", "8", "--page-table", "blocks", "--kv-cache", "stacked0"]
    assert gen_cli.main(["attention", *shape, "-o", str(path)]) == 0
    text = path.read_text().replace("%kv_cache[0, 0, 0, 0, 0] [1, 8, 8, 1, 16] [1, 1, 1, 1, 1]",
                                    "%kv_cache[0, 0, 0, 0, 0] [1, 4, 8, 1, 16] [1, 2, 1, 1, 1]")
    path.write_text(text.replace("memref<8x8x1x16xf16, strided<[128, 16, 16, 1]>>",
                                 "memref<4x8x1x16xf16, strided<[256, 16, 16, 1]>>"))
    capsys.readouterr()
    assert run_cli.main(["--check", str(path)]) == 1  # K's pool the even blocks of its half, V's the whole half
    assert "kernel.mlir:6:8: error: cannot draw cache pools of 4 (k) and 8 (v) blocks" in capsys.readouterr().err


def test_the_stacked_tensor_must_fit_where_each_pool_does(capsys) -> None:
    # 100000 blocks of 16 x 8 x 128 f16: a pool is 1.6e9 elements (3.3 GB), within the 32-bit limits; the tensor
    # holding K and V is twice that.
    from pagedir.cli import gen as gen_cli

    flags = ["attention", "--page-table", "blocks", "--num-heads-q", "8", "--num-heads-kv", "8", "--head-dim", "128",
             "--num-blocks", "100000"]
    assert gen_cli.main([*flags, "-o", "/dev/null"]) == 0
    assert gen_cli.main([*flags, "--kv-cache", "stacked1", "-o", "/dev/null"]) == 1
    assert "the kv_cache 100000x2x16x8x128xf16 holds 3276800000 elements" in capsys.readouterr().err


def test_check_ignores_the_step_of_the_stacked_axis(tmp_path) -> None:
    # the subview takes one element of the stacked axis: its step (0 here) moves nothing
    import io
    from contextlib import redirect_stdout

    from pagedir.cli import gen as gen_cli
    from pagedir.cli import run as run_cli

    path = tmp_path / "kernel.mlir"
    shape = ["--batch", "2", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-k", "32", "--head-dim", "16",
             "--page-size", "8", "--page-table", "blocks", "--kv-cache", "stacked1"]
    assert gen_cli.main(["attention", *shape, "-o", str(path)]) == 0
    text = path.read_text().replace("[8, 1, 8, 1, 16] [1, 1, 1, 1, 1]", "[8, 1, 8, 1, 16] [1, 0, 1, 1, 1]")
    assert text.count("[1, 0, 1, 1, 1]") == 2
    path.write_text(text)
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_cli.main(["--check", str(path)])
    assert code == 0 and "L6 after rock-kernel-pipeline" in out.getvalue() and "FAIL" not in out.getvalue(), out.getvalue()
