"""Serving page tables consumed in place: vLLM block tables and FlashInfer CSR tables over nhd/hnd
cache pools (rock.block_table_view), and capacities that end inside a page, for every form.

Kernels are checked by execution as ``pagedir-run --check`` does: the case draws shuffled
block ids, a block shared by two sequences, NaN in unused blocks and slots past each
sequence's length, lengths that end inside a block, and compares L0 and the kernel after
rock-kernel-pipeline with the reference.
"""

from __future__ import annotations

import argparse
import io
from contextlib import redirect_stderr, redirect_stdout

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, interp, reference
from pagedir.cli import run as run_cli
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import TOLERANCE, make_case
from pagedir.interp.memory import Device
from pagedir.pipelines import KERNEL_PASSES

from test_attention import check_before_pass


def make_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    defaults = dict(batch=2, num_heads_q=4, num_heads_kv=2, seq_len_q=1, seq_len_k=40, head_dim=64, page_size=16)
    for key, value in {**defaults, **overrides}.items():
        setattr(args, key, value)
    return args


def check_kernel(args: argparse.Namespace, tmp_path, seed: int = 0) -> str:
    """``pagedir-run --check`` of the generated kernel (L0 and after rock-kernel-pipeline); its output."""
    path = tmp_path / "kernel.mlir"
    path.write_text(gen.generate(args))
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_cli.main(["--check", str(path), "--seed", str(seed)])
    text = out.getvalue()
    assert code == 0, text
    assert "L0 as written" in text and "L6 after rock-kernel-pipeline" in text and "FAIL" not in text, text
    return text


FORMS = [("blocks", "nhd"), ("blocks", "hnd"), ("csr", "nhd"), ("csr", "hnd")]
SHAPES = {
    "decode-gqa-f16": dict(seq_len_q=1, num_heads_q=8, num_heads_kv=2, dtype="f16"),
    "decode-mqa-bf16-causal": dict(seq_len_q=1, num_heads_q=4, num_heads_kv=1, dtype="bf16", causal=True),
    "prefill-gqa-bf16-causal": dict(seq_len_q=5, num_heads_q=4, num_heads_kv=2, dtype="bf16", causal=True),
    "prefill-mqa-f16": dict(seq_len_q=3, num_heads_q=4, num_heads_kv=1, dtype="f16"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize(("page_table", "layout"), FORMS)
def test_serving_forms_match_the_reference(page_table: str, layout: str, shape: str, tmp_path) -> None:
    check_kernel(make_args(page_table=page_table, kv_layout=layout, **SHAPES[shape]), tmp_path)


@pytest.mark.parametrize("page_table", ["pointers", "blocks", "csr"])
@pytest.mark.parametrize("causal", [False, True])
def test_capacity_ending_inside_a_page(page_table: str, causal: bool, tmp_path) -> None:
    # --seq-len-k 100 --page-size 16: 7 blocks per sequence (the pointer form: 12.5 pages of a
    # batch's [Hkv, Sk, D], the last partly filled and head 1 starting inside a page).
    args = make_args(page_table=page_table, seq_len_k=100, page_size=16, seq_len_q=4 if causal else 1, causal=causal)
    check_kernel(args, tmp_path)
    if page_table == "pointers":
        assert "seq_len_k = 100" in gen.generate(args)


@pytest.mark.parametrize("head_dim", [80, 96, 112, 192, 256])
def test_head_dims(head_dim: int, tmp_path) -> None:
    layout = "nhd" if head_dim % 32 else "hnd"
    check_kernel(make_args(page_table="blocks", kv_layout=layout, head_dim=head_dim, seq_len_k=24, page_size=8,
                           num_heads_q=4, num_heads_kv=2), tmp_path)


@pytest.mark.parametrize(("page_table", "layout", "page_size", "seq_len_k"),
                         [("blocks", "nhd", 1, 40), ("csr", "hnd", 1, 37), ("csr", "nhd", 3, 40),
                          ("blocks", "hnd", 5, 33), ("blocks", "nhd", 256, 300), ("csr", "nhd", 128, 200)])
def test_page_sizes(page_table: str, layout: str, page_size: int, seq_len_k: int, tmp_path) -> None:
    check_kernel(make_args(page_table=page_table, kv_layout=layout, page_size=page_size, seq_len_k=seq_len_k,
                           head_dim=16, num_heads_q=4, num_heads_kv=2, seq_len_q=2, causal=True), tmp_path)


@pytest.mark.parametrize(("page_table", "layout"), [("blocks", "nhd"), ("csr", "hnd")])
def test_split_kv_kernels_read_the_tables(page_table: str, layout: str, tmp_path) -> None:
    check_kernel(make_args(page_table=page_table, kv_layout=layout, seq_len_k=128, num_splits=2), tmp_path)


@pytest.mark.parametrize("argument", KERNEL_PASSES)
@pytest.mark.parametrize(("page_table", "layout"), [("blocks", "nhd"), ("csr", "hnd")])
def test_each_pass_preserves_the_computation(page_table: str, layout: str, argument: str) -> None:
    args = make_args(page_table=page_table, kv_layout=layout, num_heads_q=4, num_heads_kv=2, seq_len_q=2,
                     seq_len_k=37, causal=True)
    result = check_before_pass(args, argument, seed=5)
    assert result.ok and result.functions, result.report()


@pytest.mark.parametrize(("pool_blocks", "fits"), [(3, True), (1, True), (0, False)])
def test_the_check_fits_its_sequences_into_a_small_pool(pool_blocks: int, fits: bool, tmp_path) -> None:
    # A pool smaller than the block table can address (pools are shared by a server's sequences): the
    # check's sequences are drawn to fit it, or it says why they cannot; never an internal error.
    text = gen.generate(make_args(page_table="blocks", batch=2, seq_len_k=64, page_size=16, num_blocks=8))
    pool = "memref<8x16x2x64xf16>"
    assert pool in text
    path = tmp_path / "small_pool.mlir"
    path.write_text(text.replace(pool, f"memref<{pool_blocks}x16x2x64xf16>"))
    assert_check_fits(path, fits, "the cache pool's 0 blocks cannot hold a block for each of the 2 sequences")


@pytest.mark.parametrize(("nnz", "fits"), [(5, True), (2, True), (1, False)])
def test_the_check_fits_its_sequences_into_a_short_kv_indices(nnz: int, fits: bool, tmp_path) -> None:
    # kv_indices shorter than batch * max_blocks: the check's sequences are drawn to fit it, or it says
    # which argument cannot hold them; never an internal error.
    text = gen.generate(make_args(page_table="csr", batch=2, seq_len_k=32, page_size=8))
    indices = "%kv_indices: memref<8xi32>"
    assert indices in text
    path = tmp_path / "short_indices.mlir"
    path.write_text(text.replace("memref<8xi32>", f"memref<{nnz}xi32>"))
    assert_check_fits(path, fits, "error: kv_indices (argument 4, memref<1xi32>) has room for 1 page ids, fewer than "
                                  "the 2 sequences")


def assert_check_fits(path, fits: bool, refusal: str) -> None:
    """`pagedir-run --check path` passes where the sequences fit, else it is a user error saying ``refusal``."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run_cli.main(["--check", str(path)])
    if fits:
        assert code == 0 and "FAIL" not in out.getvalue() and "PASS" in out.getvalue(), out.getvalue() + err.getvalue()
    else:
        assert code == 1 and "internal error" not in err.getvalue(), err.getvalue()
        assert refusal in err.getvalue(), err.getvalue()


@pytest.mark.parametrize("lowered", [False, True], ids=["L0", "L6"])
def test_the_check_refuses_a_million_pages_at_once(lowered: bool, tmp_path) -> None:
    # A dynamic pointer-table kernel edited to 1048576 pages per sequence: its case needs 1 GiB of pages,
    # refused before any page is drawn or uploaded (one by one, they took minutes to reach the limit).
    import time

    from pagedir import driver
    from pagedir.context import make_context

    text = gen.generate(make_args(dynamic=True, batch=2, num_heads_q=2, num_heads_kv=1, seq_len_k=32, head_dim=16,
                                  page_size=8))
    assert "memref<?x4x1xi64>" in text
    text = text.replace("?x4x", "?x1048576x")
    if lowered:
        with make_context():
            module = ir.Module.parse(text)
            driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
            text = str(module)
    path = tmp_path / "million_pages.mlir"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    with redirect_stdout(out), redirect_stderr(err):
        code = run_cli.main(["--check", str(path)])
    assert time.monotonic() - start < 5
    assert code == 1 and "internal error" not in err.getvalue(), err.getvalue()
    assert "error: the K and V pages of the check's case (1048576 a sequence, 2 sequences): " in err.getvalue(), \
        err.getvalue()
    assert "bytes exceed the interpreter's memory limit of 268435456 bytes" in err.getvalue(), err.getvalue()


def test_the_check_draws_a_server_cache() -> None:
    # Shuffled ids, sequence 1's first block is sequence 0's, NaN in blocks no sequence uses, a
    # length ending inside a block.
    args = make_args(page_table="blocks", kv_layout="nhd", batch=3, seq_len_k=64, page_size=16, num_blocks=16)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        case = make_case(module.body.operations[0].operation, np.random.default_rng(1), Device())
    q, k_pool, v_pool, table, seq_lens, out = case.args
    assert k_pool.shape == (16, 16, 2, 64) and table.dtype == np.int32 and seq_lens.dtype == np.int32
    assert table[1, 0] == table[0, 0]
    used = {int(table[b, s]) for b in range(3) for s in range(-(-int(seq_lens[b]) // 16))}
    unused = sorted(set(range(16)) - used)
    assert unused and np.isnan(k_pool[unused].astype(np.float32)).all()
    assert any(n % 16 for n in seq_lens)
    live_ids = [int(table[0, s]) for s in range(-(-int(seq_lens[0]) // 16))]
    assert live_ids != sorted(live_ids)


def test_interp_run_takes_a_vllm_cache_as_it_is() -> None:
    # A vLLM-layout key cache [num_blocks, Hkv, D/x, block_size, x] converted once to a pool, the
    # value cache [num_blocks, Hkv, D, block_size] too; the block table and seq_lens as vLLM holds them.
    rng = np.random.default_rng(3)
    blocks, heads, head_dim, block_size, x = 10, 2, 64, 16, 8
    key_cache = rng.standard_normal((blocks, heads, head_dim // x, block_size, x)).astype(np.float16)
    value_cache = rng.standard_normal((blocks, heads, head_dim, block_size)).astype(np.float16)
    block_table = np.array([[7, 2, 9], [4, 2, -1]], dtype=np.int32)  # block 2 shared, -1: unused slot
    seq_lens = np.array([40, 20], dtype=np.int32)
    q = rng.standard_normal((2, 4, 1, head_dim)).astype(np.float16)
    args = make_args(page_table="blocks", kv_layout="hnd", seq_len_k=48, num_blocks=blocks, batch=2)
    k_pool = reference.vllm_key_cache_to_pool(key_cache, "hnd")
    v_pool = reference.vllm_value_cache_to_pool(value_cache, "hnd")
    dense_k = reference.vllm_dense(key_cache, np.where(block_table < 0, 0, block_table), kind="k", layout="vllm")
    dense_v = reference.vllm_dense(value_cache, np.where(block_table < 0, 0, block_table), kind="v", layout="vllm")
    expected = reference.attention(q, dense_k, dense_v, seq_lens=seq_lens)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        out = np.zeros(q.shape, np.float16)
        at_l0 = interp.run(module, "paged_attention", [q, k_pool, v_pool, block_table, seq_lens, out])[-1]
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        lowered = interp.run(module, "paged_attention", [q, k_pool, v_pool, block_table, seq_lens, out])[-1]
    np.testing.assert_allclose(at_l0, expected, atol=TOLERANCE["f16"], rtol=0)
    np.testing.assert_allclose(lowered, expected, atol=TOLERANCE["f16"], rtol=0)


@pytest.mark.parametrize("page_table", ["blocks", "csr"])
def test_a_block_id_outside_the_pool_reads_zeros_at_every_level(page_table: str) -> None:
    # docs/rock.md (rock.attention): an owned slot whose id is outside [0, num_blocks) is a null page and
    # reads 0: its keys below seq_len take part with K = V = 0. L0 (the reference run) and the lowered
    # kernel follow the same rule.
    rng = np.random.default_rng(4)
    blocks, heads, head_dim, block_size = 6, 2, 64, 16
    k_pool, v_pool = (rng.standard_normal((blocks, block_size, heads, head_dim)).astype(np.float16) for _ in range(2))
    block_table = np.array([[3, -1, 5], [0, blocks, 2]], dtype=np.int32)  # owned slots: -1 and num_blocks
    seq_lens = np.array([40, 48], dtype=np.int32)
    q = rng.standard_normal((2, 4, 1, head_dim)).astype(np.float16)
    expected = reference.attention(q, reference.blocks_dense(k_pool, block_table), reference.blocks_dense(v_pool, block_table),
                                   seq_lens=seq_lens)
    args = make_args(page_table=page_table, kv_layout="nhd", seq_len_k=48, num_blocks=blocks, batch=2)
    tables = [block_table]
    if page_table == "csr":
        indptr, indices, last = reference.csr_from_block_table(block_table, seq_lens, block_size)
        tables = [indptr, indices, last]
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        call = [q, k_pool, v_pool, *tables] + ([seq_lens] if page_table == "blocks" else []) + [np.zeros(q.shape, np.float16)]
        at_l0 = interp.run(module, "paged_attention", call)[-1]
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        lowered = interp.run(module, "paged_attention", call)[-1]
    assert not np.allclose(expected, reference.attention(q, reference.blocks_dense(k_pool, np.abs(block_table) % blocks),
                                                         reference.blocks_dense(v_pool, np.abs(block_table) % blocks),
                                                         seq_lens=seq_lens), atol=0.05)  # the zeros matter
    np.testing.assert_allclose(at_l0, expected, atol=TOLERANCE["f16"], rtol=0)
    np.testing.assert_allclose(lowered, expected, atol=TOLERANCE["f16"], rtol=0)


def test_csr_lengths_come_from_the_last_page() -> None:
    # Sequence 0: pages 3, 1 with 5 tokens in the last: 21 tokens; sequence 1: one page of 16.
    indptr, indices, last = np.array([0, 2, 3], np.int32), np.array([3, 1, 0, 2], np.int32), np.array([5, 16], np.int32)
    assert list(reference.csr_seq_lens(indptr, last, 16)) == [21, 16]
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 2, 1, 16)).astype(np.float16)
    pool = rng.standard_normal((4, 16, 1, 16)).astype(np.float16)
    pool[1, 5:] = np.nan  # past sequence 0's length: never read
    table = reference.csr_block_table(indptr, indices, 2)
    dense = reference.blocks_dense(pool, table, layout="nhd")
    expected = reference.attention(q, dense, dense, seq_lens=[21, 16])
    args = make_args(page_table="csr", batch=2, num_heads_q=2, num_heads_kv=1, head_dim=16, seq_len_k=32, num_blocks=4)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        out = interp.run(module, "paged_attention", [q, pool, pool, indptr, indices, last, np.zeros_like(q)])[-1]
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, expected, atol=TOLERANCE["f16"], rtol=0)


def test_block_caches_round_trip() -> None:
    rng = np.random.default_rng(2)
    k = rng.standard_normal((2, 2, 40, 8)).astype(np.float32)
    k[1, :, :16] = k[0, :, :16]
    for layout in ("nhd", "hnd"):
        caches = reference.block_caches(k, k, 16, seq_lens=[40, 25], layout=layout, num_blocks=8, rng=rng,
                                        share_first_block=True)
        assert caches.block_table[0, 0] == caches.block_table[1, 0]
        dense = reference.blocks_dense(caches.k_pool, caches.block_table, layout=layout)
        np.testing.assert_array_equal(dense[0, :, :40], k[0])
        np.testing.assert_array_equal(dense[1, :, :25], k[1, :, :25])
        indptr, indices, last = reference.csr_from_block_table(caches.block_table, [40, 25], 16)
        assert list(indptr) == [0, 3, 5] and list(last) == [8, 9]
        np.testing.assert_array_equal(reference.csr_block_table(indptr, indices, 3)[0], caches.block_table[0])


def test_block_caches_refuse_a_pool_too_small() -> None:
    with pytest.raises(ValueError, match="need 5 blocks, the pool has 4"):
        reference.block_caches(np.zeros((2, 1, 48, 8)), np.zeros((2, 1, 48, 8)), 16, seq_lens=[48, 20], num_blocks=4)


@pytest.mark.parametrize(("page_table", "layout", "shape"), [
    ("blocks", "nhd", dict(seq_len_q=5, causal=True)),
    ("blocks", "hnd", dict(seq_len_q=3, num_heads_kv=1, dtype="bf16")),
    ("csr", "nhd", dict(seq_len_q=17, causal=True, batch=3)),
    ("csr", "hnd", dict(seq_len_q=4, causal=True, num_heads_q=8, num_heads_kv=2, dtype="bf16")),
])
def test_packed_variable_length_queries(page_table: str, layout: str, shape: dict, tmp_path) -> None:
    # One launch mixes a prefill chunk of Sq queries, a decode row and (batch 3) any length;
    # causal masking is aligned to the end of each sequence.
    check_kernel(make_args(page_table=page_table, kv_layout=layout, varlen=True, seq_len_k=50, **shape), tmp_path)


@pytest.mark.parametrize("argument", ["rock-gridwise-attention-to-blockwise", "rock-blockwise-load",
                                      "rock-threadwise-lowering", "rock-buffer-load", "rock-to-gpu"])
def test_each_pass_preserves_packed_queries(argument: str) -> None:
    args = make_args(page_table="blocks", kv_layout="nhd", varlen=True, seq_len_q=3, seq_len_k=37, causal=True)
    result = check_before_pass(args, argument, seed=7)
    assert result.ok and result.functions, result.report()


def test_packed_queries_by_hand() -> None:
    # Sequence 0: 3 queries over 20 keys; sequence 1: 1 query (decode) over 7 keys; row 4 of 5 unused.
    rng = np.random.default_rng(4)
    args = make_args(page_table="blocks", kv_layout="hnd", varlen=True, seq_len_q=3, seq_len_k=32, num_heads_q=2,
                     num_heads_kv=1, head_dim=16, causal=True, num_blocks=4)
    q = rng.standard_normal((6, 2, 16)).astype(np.float16)
    pool_k = rng.standard_normal((4, 1, 16, 16)).astype(np.float16)
    pool_v = rng.standard_normal((4, 1, 16, 16)).astype(np.float16)
    table = np.array([[2, 0], [3, 1]], dtype=np.int32)
    cu, seq_lens = np.array([0, 3, 4], dtype=np.int32), np.array([20, 7], dtype=np.int32)
    k = reference.blocks_dense(pool_k, table, layout="hnd")
    v = reference.blocks_dense(pool_v, table, layout="hnd")
    first = reference.attention(np.swapaxes(q[:3], 0, 1)[None], k[:1], v[:1], seq_lens=[20], causal=True)[0]
    second = reference.attention(np.swapaxes(q[3:4], 0, 1)[None], k[1:], v[1:], seq_lens=[7], causal=True)[0]
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        out = np.full(q.shape, 7.0, np.float16)
        got = interp.run(module, "paged_attention", [q, cu, pool_k, pool_v, table, seq_lens, out])[-1]
    np.testing.assert_allclose(got[:3], np.swapaxes(first, 0, 1), atol=TOLERANCE["f16"], rtol=0)
    np.testing.assert_allclose(got[3], second[:, 0], atol=TOLERANCE["f16"], rtol=0)
    assert (got[4:] == 7.0).all()  # rows past cu_seqlens_q[B] are not written


def test_run_inputs_and_outputs_take_pools_and_tables(tmp_path) -> None:
    # pagedir-run --inputs/--outputs: the pools, the CSR table and q as arrays (no device addresses),
    # at L0 and as the compiled kernel gives the same output.
    args = make_args(page_table="csr", kv_layout="nhd", head_dim=16, num_heads_q=2, num_heads_kv=1, seq_len_k=32,
                     num_blocks=4)
    kernel = tmp_path / "csr.mlir"
    kernel.write_text(gen.generate(args))
    rng = np.random.default_rng(9)
    pool = rng.standard_normal((4, 16, 1, 16)).astype(np.float16)
    inputs = dict(arg0=rng.standard_normal((2, 2, 1, 16)).astype(np.float16), arg1=pool, arg2=pool,
                  arg3=np.array([0, 2, 3], np.int32), arg4=np.array([3, 0, 1, 2], np.int32),
                  arg5=np.array([9, 4], np.int32), arg6=np.zeros((2, 2, 1, 16), np.float16))
    np.savez(tmp_path / "in.npz", **inputs)
    with redirect_stdout(io.StringIO()):
        assert run_cli.main([str(kernel), "--entry", "paged_attention", "--inputs", str(tmp_path / "in.npz"),
                             "--outputs", str(tmp_path / "out.npz")]) == 0
    got = np.load(tmp_path / "out.npz")["arg6"]
    k = reference.blocks_dense(pool, reference.csr_block_table(inputs["arg3"], inputs["arg4"], 2), layout="nhd")
    expected = reference.attention(inputs["arg0"], k, k, seq_lens=[25, 4])
    np.testing.assert_allclose(got, expected, atol=TOLERANCE["f16"], rtol=0)


def test_dense_kv_without_seq_lens_still_runs_at_l0(tmp_path) -> None:
    # The interpreter asks only a block-table view for CSR lengths (a dense memref is not one).
    check_kernel(make_args(dense=True), tmp_path)
