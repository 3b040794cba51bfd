"""Packed variable-length queries (``--varlen``) with pointer tables and dense K/V, and with split-KV.

q and out are ``[total_q, Hq, D]`` with ``cu_seqlens_q [B+1]``, viewed by ``rock.varlen_view`` as
the padded ``[B, Hq, Sq, D]``; with pointer tables or dense K/V ``--varlen`` implies ``seq_lens``.
Kernels are checked by execution as ``pagedir-run --check`` does: the case packs a prefill chunk
of Sq queries, a decode row and any others in one launch, rows past ``cu_seqlens_q[B]`` NaN (they
must stay untouched), and compares L0 and the kernel after rock-kernel-pipeline with the reference.
"""

from __future__ import annotations

import argparse
import io
import re
from contextlib import redirect_stdout

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, interp, reference
from pagedir.cli import run as run_cli
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import TOLERANCE, make_case
from pagedir.interp.memory import Device

from test_attention import check_before_pass

from test_dynamic import assert_checked_at_every_size
from test_serving_forms import check_kernel


def make_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    defaults = dict(batch=3, num_heads_q=4, num_heads_kv=2, seq_len_q=4, seq_len_k=40, head_dim=64, page_size=16,
                    varlen=True)
    for key, value in {**defaults, **overrides}.items():
        setattr(args, key, value)
    return args


FORMS = {"pointers": dict(), "dense": dict(dense=True)}
SHAPES = {
    "mixed-gqa-f16-causal": dict(seq_len_q=5, num_heads_q=8, num_heads_kv=2, dtype="f16", causal=True),
    "mixed-mqa-bf16": dict(seq_len_q=3, num_heads_q=4, num_heads_kv=1, dtype="bf16"),
    "mixed-gqa-bf16-causal-partial-page": dict(seq_len_q=6, seq_len_k=100, dtype="bf16", causal=True),
    "prefill-17-f16": dict(seq_len_q=17, seq_len_k=48, batch=2, causal=True),
    "variants-fp8-window-alibi-softcap": dict(seq_len_q=5, seq_len_k=64, causal=True, window=7, alibi=True, softcap=30.0,
                                              kv_dtype="fp8e4m3fnuz", kv_scale="per-tensor"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("form", list(FORMS))
def test_packed_queries_match_the_reference(form: str, shape: str, tmp_path) -> None:
    check_kernel(make_args(**FORMS[form], **SHAPES[shape]), tmp_path)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("causal", [False, True])
def test_one_dynamic_kernel_serves_two_batches_of_packed_queries(form: str, causal: bool, tmp_path) -> None:
    args = make_args(**FORMS[form], dynamic=True, causal=causal, seq_len_q=5, dtype="bf16" if causal else "f16")
    text = gen.generate(args)
    assert "%q: memref<?x4x64x" in text and "%cu_seqlens_q: memref<?xi32>" in text and "%seq_lens: memref<?xi32>" in text
    assert_checked_at_every_size(args, check_kernel(args, tmp_path))


def test_arguments_in_the_serving_order() -> None:
    # q, cu_seqlens_q, the K/V tables, seq_lens (implied), variant operands, out.
    text = gen.generate(make_args(alibi=True, batch=2, seq_len_q=3))
    params = re.search(r"@paged_attention\((.*?)\) attributes", text).group(1)
    names = re.findall(r"%(\w+):", params)
    assert names == ["q", "cu_seqlens_q", "k_table", "v_table", "seq_lens", "alibi_slopes", "out"]
    assert "%q: memref<6x4x64xf16>" in params and "%cu_seqlens_q: memref<3xi32>" in params
    assert "%out: memref<6x4x64xf16>" in params
    assert text.count('"rock.varlen_view"') == 2 and "-> memref<2x4x3x64xf16>" in text
    dense = gen.generate(make_args(dense=True, batch=2))
    assert re.findall(r"%(\w+):", re.search(r"\((.*?)\) attributes", dense).group(1)) == [
        "q", "cu_seqlens_q", "k", "v", "seq_lens", "out"]


def test_the_check_packs_decode_rows_and_prefill_chunks() -> None:
    with make_context():
        module = ir.Module.parse(gen.generate(make_args(batch=4, seq_len_q=6)))
        func = module.body.operations[0]
        case = make_case(func, np.random.default_rng(0), Device())
    q, cu, out = case.args[0], case.args[1], case.args[-1]
    lengths = np.diff(cu)
    assert lengths[0] == 6 and lengths[1] == 1 and (lengths >= 1).all() and cu[-1] <= q.shape[0] == 24
    assert np.isnan(out[cu[-1]:]).all() and np.isnan(case.expected[len(case.args) - 1][cu[-1]:]).all()


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("argument", ["rock-gridwise-attention-to-blockwise", "rock-blockwise-load",
                                      "rock-threadwise-lowering", "rock-buffer-load", "rock-to-gpu"])
def test_each_pass_preserves_packed_queries(form: str, argument: str) -> None:
    args = make_args(**FORMS[form], seq_len_q=3, seq_len_k=37, causal=True)
    result = check_before_pass(args, argument, seed=7)
    assert result.ok and result.functions, result.report()


def test_dense_packed_queries_by_hand(tmp_path) -> None:
    # Sequence 0: 3 queries over 20 keys; sequence 1: 1 query (decode) over 7 keys; rows 4 and 5
    # unused. The compiled kernel through pagedir-run --inputs/--outputs: rows past
    # cu_seqlens_q[B] keep what they held.
    rng = np.random.default_rng(4)
    args = make_args(dense=True, batch=2, seq_len_q=3, seq_len_k=32, num_heads_q=2, num_heads_kv=1, head_dim=16,
                     causal=True)
    q = rng.standard_normal((6, 2, 16)).astype(np.float16)
    k = rng.standard_normal((2, 1, 32, 16)).astype(np.float16)
    v = rng.standard_normal((2, 1, 32, 16)).astype(np.float16)
    cu, seq_lens = np.array([0, 3, 4], dtype=np.int32), np.array([20, 7], dtype=np.int32)
    first = reference.attention(np.swapaxes(q[:3], 0, 1)[None], k[:1], v[:1], seq_lens=[20], causal=True)[0]
    second = reference.attention(np.swapaxes(q[3:4], 0, 1)[None], k[1:], v[1:], seq_lens=[7], causal=True)[0]
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        (tmp_path / "kernel.mlir").write_text(str(module))
    np.savez(tmp_path / "in.npz", arg0=q, arg1=cu, arg2=k, arg3=v, arg4=seq_lens,
             arg5=np.full(q.shape, 7.0, np.float16))
    with redirect_stdout(io.StringIO()):
        assert run_cli.main([str(tmp_path / "kernel.mlir"), "--entry", "paged_attention", "--inputs",
                             str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz")]) == 0
    got = np.load(tmp_path / "out.npz")["arg5"]
    np.testing.assert_allclose(got[:3], np.swapaxes(first, 0, 1), atol=TOLERANCE["f16"], rtol=0)
    np.testing.assert_allclose(got[3], second[:, 0], atol=TOLERANCE["f16"], rtol=0)
    assert (got[4:] == 7.0).all()  # rows past cu_seqlens_q[B] are not written
    with make_context():  # the same at L0 through interp.run
        got0 = interp.run(ir.Module.parse(gen.generate(args)), "paged_attention",
                          [q, cu, k, v, seq_lens, np.full(q.shape, 7.0, np.float16)])[-1]
    np.testing.assert_allclose(got0, got, atol=TOLERANCE["f16"], rtol=0)


# --- split-KV ---------------------------------------------------------------------------

SPLIT_CASES = {
    # name: generator overrides (packed queries: a prefill chunk of Sq, a decode row, any others).
    "pointers-causal-3-splits": dict(seq_len_q=5, seq_len_k=100, causal=True, num_splits=3),
    "pointers-gqa4-f32-2-splits": dict(seq_len_q=3, seq_len_k=96, num_heads_q=8, num_heads_kv=2, dtype="f32",
                                       num_splits=2),
    "dense-bf16-causal-2-splits": dict(dense=True, seq_len_q=4, seq_len_k=128, causal=True, dtype="bf16", num_splits=2),
    "blocks-nhd-causal-4-splits": dict(page_table="blocks", seq_len_q=6, seq_len_k=100, causal=True, num_splits=4),
    "csr-hnd-mqa-sinks-3-splits": dict(page_table="csr", kv_layout="hnd", seq_len_q=4, seq_len_k=80, num_heads_kv=1,
                                       sinks=True, num_splits=3),
    "blocks-hnd-splits-past-seq-len": dict(page_table="blocks", kv_layout="hnd", seq_len_q=2, seq_len_k=40,
                                           num_splits=3, batch=4),
}


@pytest.mark.parametrize("name", list(SPLIT_CASES))
def test_split_kv_writes_the_packed_rows(name: str, tmp_path) -> None:
    # The splits and the combine, run in launch order on a NaN-filled workspace: every packed row
    # of a sequence gets the reference, the rows past cu_seqlens_q[B] stay NaN (the check fails
    # on a NaN computed where a number is expected and on a number where NaN was left).
    out = check_kernel(make_args(**SPLIT_CASES[name]), tmp_path, seed=len(name))
    assert re.search(r"launches @paged_attention on \d+ workgroups, then @paged_attention_combine on \d+", out), out


def test_split_kv_by_hand_leaves_the_other_rows_alone() -> None:
    # Sequence 0: 1 query (decode) over 70 keys; sequence 1: 3 queries over 9 keys (causal: the
    # first two see fewer); rows 4 and 5 unused. Padded positions 0 and 1 of sequence 0 would land
    # on no row of its own (row -2, -1): nothing may be written for them, nor for the rows past the last.
    rng = np.random.default_rng(11)
    args = make_args(dense=True, batch=2, seq_len_q=3, seq_len_k=96, num_heads_q=2, num_heads_kv=1, head_dim=16,
                     causal=True, num_splits=3)
    q = rng.standard_normal((6, 2, 16)).astype(np.float16)
    k = rng.standard_normal((2, 1, 96, 16)).astype(np.float16)
    v = rng.standard_normal((2, 1, 96, 16)).astype(np.float16)
    cu, seq_lens = np.array([0, 1, 4], dtype=np.int32), np.array([70, 9], dtype=np.int32)
    first = reference.attention(np.swapaxes(q[:1], 0, 1)[None], k[:1], v[:1], seq_lens=[70], causal=True)[0]
    second = reference.attention(np.swapaxes(q[1:4], 0, 1)[None], k[1:], v[1:], seq_lens=[9], causal=True)[0]
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        out = np.full(q.shape, 7.0, np.float16)
        got = interp.run(module, "paged_attention", [q, cu, k, v, seq_lens, out])[-1]
    np.testing.assert_allclose(got[0], first[:, 0], atol=TOLERANCE["f16"], rtol=0)
    np.testing.assert_allclose(got[1:4], np.swapaxes(second, 0, 1), atol=TOLERANCE["f16"], rtol=0)
    assert (got[4:] == 7.0).all()


@pytest.mark.parametrize("argument", ["rock-gridwise-attention-to-blockwise", "rock-blockwise-load",
                                      "rock-threadwise-lowering", "rock-buffer-load", "rock-to-gpu"])
def test_each_pass_preserves_packed_split_kv(argument: str) -> None:
    args = make_args(seq_len_q=4, seq_len_k=100, causal=True, num_splits=3)
    result = check_before_pass(args, argument, seed=3)
    assert result.ok and result.functions, result.report()
