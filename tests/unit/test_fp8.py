"""fp8 KV caches: the encode/decode tables against the formats' specifications, kernels
through pagedir-run --check, the bytes read, and the chips that take each format.

The known encodings come from the OCP 8-bit floating point specification (E4M3FN:
bias 7, S.1111.111 NaN, no infinity, max 448; E5M2: bias 15, IEEE infinities and NaNs,
max 57344) and AMD's FNUZ formats of gfx942 (E4M3FNUZ: bias 8, max 240; E5M2FNUZ: bias
16, max 57344; 0x80 the only NaN, no negative zero, no infinity).
"""

from __future__ import annotations

import math

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import interp, reference
from pagedir.cli import gen as gen_cli
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import host_values

from test_attention import check_generated, lower, make_args
from test_variants import CountingDevice

KNOWN = {
    # format: [(code, value)]
    "f8E4M3FNUZ": [(0x00, 0.0), (0x01, 2.0**-10), (0x07, 7 * 2.0**-10), (0x08, 2.0**-7), (0x40, 1.0), (0x44, 1.5),
                   (0x7F, 240.0), (0xC0, -1.0), (0xFF, -240.0), (0x80, math.nan)],
    "f8E5M2FNUZ": [(0x00, 0.0), (0x01, 2.0**-17), (0x04, 2.0**-15), (0x40, 1.0), (0x42, 1.5), (0x7F, 57344.0),
                   (0xC0, -1.0), (0x80, math.nan)],
    "f8E4M3FN": [(0x00, 0.0), (0x01, 2.0**-9), (0x08, 2.0**-6), (0x38, 1.0), (0x3C, 1.5), (0x7E, 448.0),
                 (0x7F, math.nan), (0xFF, math.nan), (0x80, -0.0), (0xB8, -1.0), (0xFE, -448.0)],
    "f8E5M2": [(0x00, 0.0), (0x01, 2.0**-16), (0x04, 2.0**-14), (0x3C, 1.0), (0x3E, 1.5), (0x7B, 57344.0),
               (0x7C, math.inf), (0xFC, -math.inf), (0x7D, math.nan), (0x7E, math.nan), (0x7F, math.nan), (0xBC, -1.0)],
}


@pytest.mark.parametrize("name", list(KNOWN))
def test_decoding_matches_the_specification(name: str) -> None:
    codes, values = zip(*KNOWN[name])
    got = reference.fp8_values(np.array(codes, dtype=np.uint8), name)
    np.testing.assert_array_equal(got, np.array(values, dtype=np.float32))
    assert np.isnan(reference.fp8_table(name)).sum() == {"f8E4M3FNUZ": 1, "f8E5M2FNUZ": 1, "f8E4M3FN": 2, "f8E5M2": 6}[name]


@pytest.mark.parametrize("name", list(KNOWN))
def test_every_finite_code_round_trips(name: str) -> None:
    table = reference.fp8_table(name)
    codes = np.flatnonzero(np.isfinite(table)).astype(np.uint8)
    # OCP's -0.0 (0x80) comes back as itself too: the sign is kept
    np.testing.assert_array_equal(reference.fp8_bits(table[codes], name), codes)


@pytest.mark.parametrize(("name", "value", "code"), [
    ("f8E4M3FN", 1.0625, 0x38),  # halfway between 1.0 (0x38) and 1.125 (0x39): to even
    ("f8E4M3FN", 1.1875, 0x3A),  # halfway between 1.125 (0x39) and 1.25 (0x3A): to even
    ("f8E4M3FN", 1.05, 0x38),
    ("f8E4M3FN", 1.07, 0x39),
    ("f8E4M3FN", 1000.0, 0x7E),  # saturates at 448
    ("f8E4M3FN", math.inf, 0x7F),  # no infinity: NaN
    ("f8E4M3FNUZ", 241.0, 0x7F),
    ("f8E4M3FNUZ", -0.0, 0x00),  # no negative zero
    ("f8E4M3FNUZ", math.nan, 0x80),
    ("f8E4M3FNUZ", 2.0**-11, 0x00),  # half the smallest subnormal: to even (zero)
    ("f8E4M3FNUZ", 3 * 2.0**-11, 0x02),  # 1.5 subnormal steps: to even (2)
    ("f8E5M2", math.inf, 0x7C),
    ("f8E5M2", -math.inf, 0xFC),
    ("f8E5M2", 1e6, 0x7B),  # finite values saturate
    ("f8E5M2FNUZ", -math.inf, 0x80),
])
def test_encoding_rounds_to_nearest_even_and_saturates(name: str, value: float, code: int) -> None:
    assert int(reference.fp8_bits(np.array([value], dtype=np.float32), name)[0]) == code


# ----------------------------------------------------------------------------
# Kernels

FP8_CASES = {
    "decode-e4m3fnuz-scaled": "--kv-dtype fp8e4m3fnuz --kv-scale per-tensor",
    "decode-e5m2fnuz-unscaled-bf16": "--kv-dtype fp8e5m2fnuz --dtype bf16",
    "decode-e4m3fn-gfx950": "--kv-dtype fp8e4m3fn --kv-scale per-tensor --arch gfx950",
    "decode-e5m2-gfx950-dense": "--kv-dtype fp8e5m2 --kv-scale per-tensor --arch gfx950 --dense",
    "prefill-causal-variants": "--kv-dtype fp8e4m3fnuz --kv-scale per-tensor --seq-len-q 7 --causal --window 20 --sinks "
                               "--alibi --softcap 3",
    "prefill-dense-causal": "--kv-dtype fp8e5m2fnuz --kv-scale per-tensor --dense --seq-len-q 5 --causal",
    "split-sinks-bf16": "--kv-dtype fp8e4m3fnuz --kv-scale per-tensor --num-splits 3 --seq-len-k 128 --sinks --dtype bf16",
    "blocks-pools-scaled": "--kv-dtype fp8e4m3fnuz --kv-scale per-tensor --page-table blocks",
    "csr-pools-e5m2-gfx950": "--kv-dtype fp8e5m2 --kv-scale per-tensor --page-table csr --arch gfx950",
}


@pytest.mark.parametrize("name", list(FP8_CASES))
def test_fp8_kernels_pass_pagedir_run_check(name: str, tmp_path, capsys) -> None:
    check_generated(["--seq-len-k", "64", *FP8_CASES[name].split()], tmp_path / "kernel.mlir", capsys, len(name))


#: Per-token-head scales (scale caches paged like K/V): every page-table form, decode and prefill, GQA 4/2.
PER_TOKEN_HEAD_CASES = {
    "decode-pointers-gfx942": "--kv-dtype fp8e4m3fnuz",
    "decode-pointers-partial-page-e5m2fnuz": "--kv-dtype fp8e5m2fnuz --seq-len-k 40 --dtype bf16",
    "prefill-pointers-causal": "--kv-dtype fp8e4m3fnuz --seq-len-q 7 --causal",
    "decode-blocks-nhd": "--kv-dtype fp8e4m3fnuz --page-table blocks",
    "prefill-blocks-hnd-causal-gfx950": "--kv-dtype fp8e4m3fn --arch gfx950 --page-table blocks --kv-layout hnd "
                                        "--seq-len-q 5 --causal",
    "decode-csr-nhd-gfx950": "--kv-dtype fp8e5m2 --arch gfx950 --page-table csr",
    "prefill-csr-hnd-causal": "--kv-dtype fp8e5m2fnuz --page-table csr --kv-layout hnd --seq-len-q 6 --causal",
    "decode-dense": "--kv-dtype fp8e4m3fnuz --dense",
    "prefill-dense-causal-gfx950": "--kv-dtype fp8e5m2 --arch gfx950 --dense --seq-len-q 5 --causal",
    "split-blocks": "--kv-dtype fp8e4m3fnuz --page-table blocks --num-splits 2",
    "dynamic-csr-hnd": "--kv-dtype fp8e4m3fnuz --page-table csr --kv-layout hnd --dynamic",
}


@pytest.mark.parametrize("name", list(PER_TOKEN_HEAD_CASES))
def test_per_token_head_scales_pass_pagedir_run_check(name: str, tmp_path, capsys) -> None:
    """Ragged lengths with NaN/Inf in stale K/V slots and NaN scales past them (--check draws them)."""
    path = tmp_path / "kernel.mlir"
    flags = PER_TOKEN_HEAD_CASES[name].split()
    seq_k = [] if "--seq-len-k" in flags else ["--seq-len-k", "64"]
    check_generated([*seq_k, "--kv-scale", "per-token-head", *flags], path, capsys, len(name))
    assert "k_scales" in path.read_text()


def test_per_token_head_quantization_follows_each_row() -> None:
    """scale = amax of the (token, head) row / the format's largest value; a stale row's scale is NaN."""
    from pagedir.interp.check import fp8_quantized_per_token

    values = np.array([[[[1.0, -3.0], [0.5, 0.25], [0.0, 0.0], [np.nan, 1.0]]]], dtype=np.float32)
    bits, dequantized, scales = fp8_quantized_per_token(values, "f8E4M3FNUZ")
    assert scales.shape == (1, 1, 4)
    np.testing.assert_allclose(scales[0, 0, :3], [3.0 / 240, 0.5 / 240, 1.0], rtol=1e-6)
    assert np.isnan(scales[0, 0, 3])
    np.testing.assert_allclose(dequantized[0, 0, :3], values[0, 0, :3], rtol=0.07)
    assert reference.fp8_values(bits[0, 0, 0, 1:2], "f8E4M3FNUZ")[0] == -240.0  # the row's amax maps to the largest


def decode_kv_bytes(kv_dtype: str | None) -> tuple[int, float]:
    """(K/V page bytes read, max error against the fp8-aware reference) of the decode kernel
    B=2, 16/2 heads, D 128, pages of 16, seq_lens 512 and 300."""
    args = make_args(batch=2, num_heads_q=16, num_heads_kv=2, head_dim=128, seq_len_k=512, kv_dtype=kv_dtype,
                     kv_scale="per-tensor" if kv_dtype else None)
    args.seq_lens = True
    rng = np.random.default_rng(3)
    q = host_values(rng.standard_normal((2, 16, 1, 128)), "f16")
    k = host_values(rng.standard_normal((2, 2, 512, 128)), "f16")
    v = host_values(rng.standard_normal((2, 2, 512, 128)), "f16")
    lens = np.array([512, 300], dtype=np.int32)
    scales = []
    k_ref, v_ref, k_dev, v_dev = k, v, k, v
    if kv_dtype:
        name = gen.KV_DTYPES[kv_dtype]
        k_scale, v_scale = np.float32(np.abs(k).max() / 240), np.float32(np.abs(v).max() / 240)
        k_dev, v_dev = reference.fp8_bits(k / k_scale, name), reference.fp8_bits(v / v_scale, name)
        k_ref, v_ref = reference.fp8_values(k_dev, name) * k_scale, reference.fp8_values(v_dev, name) * v_scale
        scales = [np.array([k_scale]), np.array([v_scale])]
    device = CountingDevice()
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        lower(module)
        caches = [reference.paged_cache(device, x, 16, seq_lens=lens, rng=rng) for x in (k_dev, v_dev)]
        for cache in caches:
            device.watched += [(page.address, page.address + page.nbytes) for page in cache.pages]
        out = np.full((2, 16, 1, 128), np.nan, dtype=np.float16)
        got = interp.run(module, args.name, [q, caches[0].table, caches[1].table, lens, *scales, out], device=device)[-1]
    expected = reference.attention(q, k_ref, v_ref, seq_lens=lens)
    return device.bytes_read, float(np.abs(np.asarray(got, dtype=np.float32) - expected).max())


def test_fp8_decode_reads_half_the_bytes_of_f16() -> None:
    f16_bytes, f16_error = decode_kv_bytes(None)
    fp8_bytes, fp8_error = decode_kv_bytes("fp8e4m3fnuz")
    # Keys before seq_len only (512 + 300), of 2 KV heads, K and V, 128 elements of 2 bytes.
    assert f16_bytes == 2 * (512 + 300) * 2 * 128 * 2
    assert fp8_bytes == f16_bytes // 2
    # Against the reference of the same fp8 values the error is the f16 output's rounding.
    assert fp8_error < 2e-3 and f16_error < 2e-3


# ----------------------------------------------------------------------------
# Chips and flags


@pytest.mark.parametrize(("flags", "message"), [
    (["--kv-dtype", "fp8e4m3fn"], "--kv-dtype fp8e4m3fn is not supported on gfx942 (its fp8 formats: fp8e4m3fnuz, fp8e5m2fnuz)"),
    (["--kv-dtype", "fp8e4m3fnuz", "--arch", "gfx950"], "not supported on gfx950 (its fp8 formats: fp8e4m3fn, fp8e5m2)"),
    (["--kv-dtype", "fp8e5m2fnuz", "--arch", "gfx90a"], "not supported on gfx90a (its fp8 formats: none)"),
    (["--kv-dtype", "fp8e4m3fnuz", "--dtype", "f32"], "needs --dtype f16 or bf16 for Q and out, got f32"),
    (["--kv-scale", "per-tensor"], "--kv-scale needs an fp8 --kv-dtype"),
    (["--kv-scale", "per-token-head"], "--kv-scale needs an fp8 --kv-dtype"),
])
def test_gen_refuses_unsupported_fp8(flags: list[str], message: str, capsys) -> None:
    assert gen_cli.main(["attention", *flags]) == 1
    assert message in capsys.readouterr().err


def test_per_token_head_scales_are_read_once_per_key_up_to_seq_len() -> None:
    """Decode B=2, 16/2 heads, D 128, pages of 16, seq_lens 512 and 300, NaN in stale slots and their
    scales: the scale pages give 4 bytes per key and KV head for K and for V (each scale read once,
    none past seq_len), against 128 fp8 bytes of K/V; the result matches the dequantizing reference."""
    from pagedir.interp.check import fp8_quantized_per_token

    args = make_args(batch=2, num_heads_q=16, num_heads_kv=2, head_dim=128, seq_len_k=512, kv_dtype="fp8e4m3fnuz",
                     kv_scale="per-token-head")
    args.seq_lens = True
    rng = np.random.default_rng(5)
    q = host_values(rng.standard_normal((2, 16, 1, 128)), "f16")
    lens = np.array([512, 300], dtype=np.int32)
    k, v = (reference.fill_stale(host_values(rng.standard_normal((2, 2, 512, 128)), "f16"), lens) for _ in range(2))
    (k_bits, k_ref, k_scales), (v_bits, v_ref, v_scales) = (fp8_quantized_per_token(x, "f8E4M3FNUZ") for x in (k, v))
    assert np.isnan(k_scales[1, :, 300:]).all()
    device = CountingDevice()
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        lower(module)
        caches = [reference.paged_cache(device, x, 16, seq_lens=lens, rng=rng) for x in (k_bits, v_bits)]
        scale_caches = [reference.paged_cache(device, x[..., None], 16, seq_lens=lens, rng=rng) for x in (k_scales, v_scales)]
        kv_ranges = [(page.address, page.address + page.nbytes) for cache in caches for page in cache.pages]
        scale_ranges = [(page.address, page.address + page.nbytes) for cache in scale_caches for page in cache.pages]
        out = np.full((2, 16, 1, 128), np.nan, dtype=np.float16)
        call = [q, caches[0].table, caches[1].table, lens, scale_caches[0].table, scale_caches[1].table, out]
        device.watched = scale_ranges
        got = interp.run(module, args.name, call, device=device)[-1]
        scale_bytes = device.bytes_read
        device.watched, device.bytes_read = kv_ranges, 0
        interp.run(module, args.name, call, device=device)
        kv_bytes = device.bytes_read
    keys = 512 + 300
    assert scale_bytes == 2 * keys * 2 * 4  # K and V, 2 KV heads, one f32 per key
    assert kv_bytes == 2 * keys * 2 * 128  # K and V, 2 KV heads, 128 fp8 values per key
    expected = reference.attention(q, k_ref, v_ref, seq_lens=lens)
    assert np.abs(np.asarray(got, dtype=np.float32) - expected).max() < 2e-3


def test_fp8_decode_keeps_the_valu_tiling_on_a_matrix_chip() -> None:
    """fp8 K/V take the VALU loop (no fp8 matrix loop yet), so they must get its tiling too: the matrix
    tiling (256 threads, 64-key tiles) run on the VALU loop needs ~250 VGPRs, 1 wave per SIMD."""
    from pagedir import driver
    from pagedir.backend.report import kernel_reports

    args = make_args(num_heads_q=16, num_heads_kv=2, seq_len_k=512, head_dim=128, seq_lens=True, kv_dtype="fp8e4m3fnuz")
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        outputs = driver.run(module.operation, driver.CompileOptions(arch="gfx942", emit="asm"), start="L0", end="asm")
    report = kernel_reports(outputs["asm"], "gfx942")[0]
    assert report.vgpr_spills == 0 and report.occupancy >= 4, report
