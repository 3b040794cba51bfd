"""vLLM's paged-attention caches read in place (``rock.block_table_view`` layout ``vllm-pa``): key
``[num_blocks, Hkv, D/x, block_size, x]`` with ``x = 16 bytes / element size``, value ``[num_blocks, Hkv, D,
block_size]``.

Kernels written as a user would (no generator), and the generator's (``--kv-layout vllm-pa``, checked as
``pagedir-run --check`` does), run at L0 and after rock-kernel-pipeline on caches with shuffled blocks, a block
shared by two sequences, NaN in unused blocks and in the slots past each sequence's length, and compared with
the reference on the same values in dense form; their loads in the assembly.
"""

from __future__ import annotations

import re

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver, interp, reference
from pagedir.backend import kernel_reports
from pagedir.context import make_context
from pagedir.errors import UserError
from pagedir.gen import attention as gen
from pagedir.interp.check import TOLERANCE, host_values

from test_serving_forms import check_kernel, make_args

BATCH, HEADS_Q, HEADS_KV, HEAD_DIM, BLOCK, SLOTS, NUM_BLOCKS = 2, 4, 2, 32, 16, 3, 7


def kernel_text(dtype: str, seq_q: int, causal: bool, csr: bool, arch: str) -> str:
    """A paged-attention kernel over vLLM's paged-attention caches through a block table or a CSR table."""
    x = 16 // 2
    key = f"memref<{NUM_BLOCKS}x{HEADS_KV}x{HEAD_DIM // x}x{BLOCK}x{x}x{dtype}>"
    value = f"memref<{NUM_BLOCKS}x{HEADS_KV}x{HEAD_DIM}x{BLOCK}x{dtype}>"
    pages = f"memref<{BATCH}x{HEADS_KV * SLOTS}x{BLOCK * HEAD_DIM}x{dtype}>"
    q = f"memref<{BATCH}x{HEADS_Q}x{seq_q}x{HEAD_DIM}x{dtype}>"
    if csr:
        nnz = BATCH * SLOTS
        table_args = f"%kv_indptr: memref<{BATCH + 1}xi32>, %kv_indices: memref<{nnz}xi32>, %kv_last_page_len: memref<{BATCH}xi32>"
        view = "%kv_indices, %kv_indptr, %kv_last_page_len"
        view_types = f"memref<{nnz}xi32>, memref<{BATCH + 1}xi32>, memref<{BATCH}xi32>"
        segments, lens, lens_type, lens_segment = "1, 1, 1, 1", "", "", 0
    else:
        table_args = f"%block_table: memref<{BATCH}x{SLOTS}xi32>, %seq_lens: memref<{BATCH}xi32>"
        view, view_types = "%block_table", f"memref<{BATCH}x{SLOTS}xi32>"
        segments, lens, lens_type, lens_segment = "1, 1, 0, 0", ", %seq_lens", f", memref<{BATCH}xi32>", 1
    return f"""
func.func @vllm_pa(%q: {q}, %key_cache: {key}, %value_cache: {value}, {table_args}, %out: {q}) attributes {{rock.kernel, rock.arch = "{arch}"}} {{
  %k = "rock.block_table_view"(%key_cache, {view}) {{layout = "vllm-pa", operandSegmentSizes = array<i32: {segments}>}} : ({key}, {view_types}) -> {pages}
  %v = "rock.block_table_view"(%value_cache, {view}) {{layout = "vllm-pa", operandSegmentSizes = array<i32: {segments}>}} : ({value}, {view_types}) -> {pages}
  "rock.attention"(%q, %k, %v{lens}, %out) {{num_heads_q = {HEADS_Q}, num_heads_kv = {HEADS_KV}, causal = {str(causal).lower()},
      operandSegmentSizes = array<i32: 1, 1, 1, {lens_segment}, 0, 0, 0, 0, 0, 0, 1>}}
    : ({q}, {pages}, {pages}{lens_type}, {q}) -> ()
  return
}}"""


def draw(dtype: str, seq_q: int, causal: bool, csr: bool, seed: int):
    """The kernel's arguments (vLLM's caches drawn by ``reference.block_caches``) and the reference output."""
    rng = np.random.default_rng(seed)
    seq_k = SLOTS * BLOCK
    lens = np.array([seq_k, BLOCK + 5], dtype=np.int32)  # a full sequence, one ending inside its second block
    shape = (BATCH, HEADS_KV, seq_k, HEAD_DIM)
    k, v = (host_values(rng.standard_normal(shape), dtype) for _ in range(2))
    k[1, :, :BLOCK], v[1, :, :BLOCK] = k[0, :, :BLOCK], v[0, :, :BLOCK]  # sequence 1 shares sequence 0's first block
    k, v = reference.fill_stale(k, lens), reference.fill_stale(v, lens)
    caches = reference.block_caches(k, v, BLOCK, seq_lens=lens, layout="vllm-pa", num_blocks=NUM_BLOCKS, rng=rng,
                                    dtype=np.float16 if dtype == "f16" else "bf16", share_first_block=True)
    q = host_values(rng.standard_normal((BATCH, HEADS_Q, seq_q, HEAD_DIM)), dtype)
    out = np.full(q.shape, np.nan, dtype=np.float32)
    if dtype == "f16":
        out = out.astype(np.float16)
    if csr:
        indptr, indices, last = reference.csr_from_block_table(caches.block_table, lens, BLOCK, nnz=BATCH * SLOTS, rng=rng)
        tables = [indptr, indices, last]
    else:
        tables = [caches.block_table, lens]
    expected = reference.attention(q, k, v, seq_lens=lens, causal=causal)
    return [q, caches.k_pool, caches.v_pool, *tables, out], expected


CASES = {
    "blocks-decode-f16": ("f16", 1, False, False),
    "csr-decode-bf16": ("bf16", 1, False, True),
    "blocks-prefill-causal-bf16": ("bf16", 5, True, False),
    "csr-prefill-causal-f16": ("f16", 5, True, True),
}


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100", "gfx1030"])  # MFMA, WMMA (wave32), the VALU loop
@pytest.mark.parametrize("case", list(CASES))
def test_vllm_pa_caches_in_place_match_the_reference(case: str, arch: str) -> None:
    dtype, seq_q, causal, csr = CASES[case]
    text = kernel_text(dtype, seq_q, causal, csr, arch)
    args, expected = draw(dtype, seq_q, causal, csr, seed=len(case))
    with make_context():
        module = ir.Module.parse(text)
        got = interp.run(module, "vllm_pa", args)[-1]
        np.testing.assert_allclose(got.astype(np.float32), expected, atol=TOLERANCE[dtype], rtol=0)  # L0
        driver.run_stages(module.operation, driver.stages(driver.CompileOptions(), "linalg", "L6"))
        got = interp.run(module, "vllm_pa", args)[-1]
    np.testing.assert_allclose(got.astype(np.float32), expected, atol=TOLERANCE[dtype], rtol=0)


def test_pool_to_vllm_pa_round_trips_through_nhd() -> None:
    # The converters: nhd -> vLLM's caches -> nhd, and the 5-d key's 16-byte chunks of each row.
    pool = np.arange(3 * 4 * 2 * 32, dtype=np.float16).reshape(3, 4, 2, 32)  # [blocks, block_size, Hkv, D]
    key, value = reference.pool_to_vllm_pa(pool, "k"), reference.pool_to_vllm_pa(pool, "v")
    assert key.shape == (3, 2, 4, 4, 8) and value.shape == (3, 2, 32, 4)
    assert key[1, 1, 2, 3].tolist() == pool[1, 3, 1, 16:24].tolist()  # chunk 2 of token 3, head 1
    assert value[2, 0, 5].tolist() == pool[2, :, 0, 5].tolist()  # column 5 along the block's tokens
    np.testing.assert_array_equal(reference.vllm_key_cache_to_pool(key, "nhd"), pool)
    np.testing.assert_array_equal(reference.vllm_value_cache_to_pool(value, "nhd"), pool)


# --- pagedir-gen attention --kv-layout vllm-pa, checked as pagedir-run --check does -------------------------

SMALL = dict(num_heads_q=4, num_heads_kv=2, head_dim=32, seq_len_k=40, page_size=16)
PHASES = {"decode": dict(seq_len_q=1), "prefill-causal": dict(seq_len_q=5, causal=True)}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("phase", list(PHASES))
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("page_table", ["blocks", "csr"])
def test_vllm_pa_kernels_pass_the_check(page_table: str, dynamic: bool, phase: str, dtype: str, tmp_path) -> None:
    # Shuffled and shared blocks, NaN in unused blocks and past each length: L0 and L6 match the reference.
    args = make_args(page_table=page_table, kv_layout="vllm-pa", dynamic=dynamic, dtype=dtype, **SMALL, **PHASES[phase])
    check_kernel(args, tmp_path)


VARIANTS = {
    "split-kv": dict(num_splits=3, seq_len_k=100),
    "varlen-causal": dict(varlen=True, seq_len_q=4, causal=True),
    "window-alibi-sinks-softcap": dict(window=10, alibi=True, sinks=True, softcap=20.0, seq_len_q=3, causal=True),
    "fp8-per-tensor": dict(kv_dtype="fp8e4m3fnuz", kv_scale="per-tensor", head_dim=64),
    "fp8-per-token-head-dynamic": dict(kv_dtype="fp8e4m3fnuz", kv_scale="per-token-head", head_dim=64, dynamic=True),
    "f32-blocks-of-4": dict(dtype="f32", page_size=4),
    "lds-dma-prefill": dict(lds_dma=True, seq_len_q=8, causal=True),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_vllm_pa_variants_pass_the_check(variant: str, tmp_path) -> None:
    page_table = "csr" if "varlen" in variant or "per-tensor" in variant else "blocks"
    check_kernel(make_args(page_table=page_table, kv_layout="vllm-pa", **{**SMALL, **VARIANTS[variant]}), tmp_path)


NVIDIA = {"decode": dict(), "prefill-causal": dict(seq_len_q=5, causal=True),
          "swizzled-prefill-causal": dict(seq_len_q=5, causal=True, lds_swizzle=True), "cp-async-decode": dict(lds_dma=True)}


@pytest.mark.parametrize("case", list(NVIDIA))
def test_vllm_pa_kernels_on_nvidia_pass_the_check(case: str, tmp_path) -> None:
    # The mma.sync loop reads V as [N, D] with ldmatrix: the value cache's tokens go to their rows there, and
    # cp.async, 16 bytes of a row a lane, copies no tile of it (a column's tokens are D elements apart).
    check_kernel(make_args(page_table="blocks", kv_layout="vllm-pa", arch="sm_90", **{**SMALL, **NVIDIA[case]}), tmp_path)


def test_the_generator_writes_vllms_tensors() -> None:
    text = gen.generate(make_args(page_table="blocks", kv_layout="vllm-pa", **SMALL))
    assert "%k_cache: memref<6x2x4x16x8xf16>, %v_cache: memref<6x2x32x16xf16>" in text  # x = 8 f16
    fp8 = gen.generate(make_args(page_table="csr", kv_layout="vllm-pa", kv_dtype="fp8e4m3fnuz", **{**SMALL, "head_dim": 64}))
    assert "%k_cache: memref<6x2x4x16x16xf8E4M3FNUZ>, %v_cache: memref<6x2x64x16xf8E4M3FNUZ>" in fp8  # x = 16


@pytest.mark.parametrize(("overrides", "message"), [
    (dict(page_size=4), "--page-size 4 must be a multiple of x = 8 with --kv-layout vllm-pa (the value cache's "
                        "16-byte loads along a block's tokens of 8 f16 elements)"),
    (dict(head_dim=36, page_size=8), "--head-dim 36 must be a multiple of x = 8 with --kv-layout vllm-pa"),
    (dict(kv_dtype="fp8e4m3fnuz", head_dim=64, page_size=8), "--page-size 8 must be a multiple of x = 16"),
    (dict(kv_cache="stacked0"), "--kv-cache stacked0 stacks K and V pools of one shape; --kv-layout vllm-pa's key "
                                "and value caches differ"),
])
def test_vllm_pa_constraints_are_refused_naming_the_value_and_the_limit(overrides, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        gen.generate(make_args(page_table="blocks", kv_layout="vllm-pa", **{**SMALL, **overrides}))


@pytest.mark.parametrize(("arch", "phase"), [("gfx942", "decode"), ("gfx942", "prefill-causal"), ("gfx1100", "decode")])
def test_vllm_pa_kernels_read_16_bytes_per_load_without_waterfall(arch: str, phase: str) -> None:
    # Both caches in 16-byte buffer loads (K: a chunk of a row; V: 8 tokens of a column), descriptors per wave.
    args = make_args(page_table="blocks", kv_layout="vllm-pa", arch=arch, head_dim=128, num_heads_q=16, seq_len_k=512,
                     **PHASES[phase])
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        asm = driver.run(module.operation, driver.CompileOptions(arch=arch), start="L0", end="asm")["asm"]
    (report,) = kernel_reports(asm, arch)
    assert set(report.buffer_loads) == {"dwordx4"} and report.waterfall_buffer_loads == 0


def test_vllms_caches_given_to_an_nhd_kernel_are_refused_naming_the_argument() -> None:
    # Passed as they are to a kernel of another layout, the caches are refused, not read with nhd's strides.
    args, _ = draw("f16", 1, False, False, seed=1)
    text = gen.generate(make_args(page_table="blocks", kv_layout="nhd", num_blocks=NUM_BLOCKS, seq_len_k=SLOTS * BLOCK,
                                  head_dim=HEAD_DIM, num_heads_q=HEADS_Q, num_heads_kv=HEADS_KV, batch=BATCH))
    refused = r"arg1 \(%k_cache\) has shape \[7, 2, 4, 16, 8\]; the argument is memref<7x16x2x32xf16>"
    with make_context(), pytest.raises(interp.InputError, match=refused):
        interp.run(text, "paged_attention", args)
