"""Attention kernels on chips with matrix cores use them: the upstream lowering of the
blockwise loop's amdgpu.mfma / amdgpu.wmma (convert-amdgpu-to-rocdl, LLVM's AMDGPU backend) emits
the v_mfma / v_wmma form of the element type, and the K/V elements are not converted to f32 one by one.
Correctness is checked by execution elsewhere (test_attention, test_split_kv, pagedir-run --check),
and here for the RDNA kernels on WMMA, whose lane layout differs from MFMA's."""

from __future__ import annotations

import argparse
import re

import mlir.ir as ir
import pytest

from pagedir import driver
from pagedir.backend.report import kernel_reports
from pagedir.context import make_context
from pagedir.gen import attention as gen


def assembly(arch: str, **overrides) -> str:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in {"num_heads_q": 16, "num_heads_kv": 2, "seq_len_k": 512, "head_dim": 128, "arch": arch,
                       "seq_lens": True, **overrides}.items():
        setattr(args, key, value)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        outputs = driver.run(module.operation, driver.CompileOptions(arch=arch, emit="asm"), start="L0", end="asm")
    return outputs["asm"]


@pytest.mark.parametrize(("arch", "dtype", "mnemonic"), [
    ("gfx942", "f16", "v_mfma_f32_16x16x16_f16"),
    ("gfx942", "bf16", "v_mfma_f32_16x16x16_bf16"),
    ("gfx942", "f32", "v_mfma_f32_16x16x4_f32"),
    ("gfx90a", "bf16", "v_mfma_f32_16x16x16bf16_1k"),
])
def test_decode_runs_both_products_on_mfma(arch: str, dtype: str, mnemonic: str) -> None:
    asm = assembly(arch, dtype=dtype)
    (report,) = kernel_reports(asm, arch)
    # 4 waves share a 64-key tile, 16 keys each: S^T is 128 / k MFMAs, O^T is 8 tiles x 16 / k keys; twice,
    # as the KV loop is pipelined (4 workgroups): rock-pipeline runs the last tile in a copy of the loop.
    k = 4 if dtype == "f32" else 16
    assert len(re.findall(rf"\b{mnemonic}\b", asm)) == report.matrix_instructions == 2 * (128 // k + 8 * 16 // k)
    assert report.vgpr_spills == report.sgpr_spills == report.scratch_bytes == 0
    # In the KV loop only P is converted (to f16 by v_cvt; bf16 rounds with integer ops): 16 keys x 16 rows
    # per wave, 4 per lane, at most one instruction each (main converted every K and V element: 384).
    assert loop_conversions(asm) <= 4


def loop_conversions(asm: str) -> int:
    """v_cvt instructions between the label and the backward branch of the kernel's largest loop."""
    lines = [line.split(";")[0].strip() for line in asm.splitlines()]
    labels = {line[:-1]: i for i, line in enumerate(lines) if re.fullmatch(r"[.\w$]+:", line)}
    loops = [(labels[m.group(1)], i) for i, line in enumerate(lines)
             if (m := re.match(r"s_c?branch\w*\s+([.\w$]+)", line)) and labels.get(m.group(1), i) < i]
    start, end = max(loops, key=lambda loop: loop[1] - loop[0])
    return sum(1 for line in lines[start:end] if line.startswith("v_cvt"))


@pytest.mark.parametrize(("arch", "dtype", "mnemonic"), [
    ("gfx1100", "f16", "v_wmma_f32_16x16x16_f16"),
    ("gfx1100", "bf16", "v_wmma_f32_16x16x16_bf16"),
    ("gfx1201", "f16", "v_wmma_f32_16x16x16_f16"),
])
def test_decode_runs_both_products_on_wmma(arch: str, dtype: str, mnemonic: str) -> None:
    asm = assembly(arch, dtype=dtype)
    (report,) = kernel_reports(asm, arch)
    # 4 waves of 32 share a 64-key tile, 16 keys each: S^T is 128 / 16 WMMAs, O^T 8 tiles of 16 keys; twice,
    # as the KV loop is pipelined: rock-pipeline runs the last tile in a copy of the loop.
    assert len(re.findall(rf"\b{mnemonic}\b", asm)) == report.matrix_instructions == 2 * (8 + 8)
    assert report.wave_size == 32 and report.workgroup_size == 128
    assert report.vgpr_spills == report.sgpr_spills == report.scratch_bytes == 0


@pytest.mark.parametrize("arch", ["gfx1030", "gfx1100"])
def test_chips_without_matrix_instructions_keep_the_valu_loop(arch: str) -> None:
    """gfx1030 has no matrix cores; RDNA's WMMA has no f32 form (gfx1100 f32 keeps the VALU loop)."""
    (report,) = kernel_reports(assembly(arch, dtype="f32"), arch)
    assert report.matrix_instructions == 0


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
def test_wave32_head_dim_256_keeps_the_valu_loop_without_spills(arch: str) -> None:
    """At D 256 the WMMA loop's accumulators alone are 128 VGPRs of a wave32 lane and it spilled; the VALU
    loop does not (pagedir.targets.rdna.WMMA_MAX_HEAD_DIM)."""
    (report,) = kernel_reports(assembly(arch, head_dim=256), arch)
    assert report.matrix_instructions == 0
    assert report.vgpr_spills == report.sgpr_spills == report.scratch_bytes == 0


RDNA_CASES = {
    "decode-gqa8-ragged": [],
    "decode-gqa1": ["--num-heads-q", "16", "--num-heads-kv", "16"],
    "decode-gqa3-padding-rows": ["--num-heads-q", "12", "--num-heads-kv", "4"],
    "prefill-causal": ["--causal", "--seq-len-q", "64", "--seq-len-k", "96", "--num-heads-q", "4", "--num-heads-kv", "2"],
    "split-kv": ["--num-splits", "0", "--seq-len-k", "512"],
    "d64": ["--head-dim", "64"],
    "blocks-nhd": ["--page-table", "blocks", "--kv-layout", "nhd"],
    "csr": ["--page-table", "csr"],
    "window-causal": ["--window", "8", "--causal", "--seq-len-q", "64", "--seq-len-k", "96", "--num-heads-q", "4",
                      "--num-heads-kv", "2"],
    "alibi": ["--alibi"],
    "softcap": ["--softcap", "30"],
    "sinks-split-kv": ["--sinks", "--num-splits", "0", "--seq-len-k", "512"],
}


@pytest.mark.parametrize("case", list(RDNA_CASES))
@pytest.mark.parametrize(("arch", "dtype"), [("gfx1100", "f16"), ("gfx1100", "bf16"), ("gfx1201", "f16")])
def test_rdna_kernels_on_wmma_match_the_reference(arch: str, dtype: str, case: str, tmp_path) -> None:
    """pagedir-run --check of the kernel (L0 and after rock-kernel-pipeline, in the interpreter with
    WMMA's lane layout), whose lowered form takes both products on amdgpu.wmma."""
    import io
    from contextlib import redirect_stdout

    from pagedir.cli import run as run_cli

    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    flags = RDNA_CASES[case]
    ragged = [] if "csr" in flags else ["--seq-lens"]
    args = parser.parse_args(["--arch", arch, "--dtype", dtype, "--head-dim", "128", *ragged, *flags])
    path = tmp_path / "kernel.mlir"
    path.write_text(gen.generate(args))
    with make_context():
        module = ir.Module.parse(path.read_text())
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        assert "amdgpu.wmma" in str(module)
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_cli.main(["--check", str(path)])
    assert code == 0 and "L6 after rock-kernel-pipeline" in out.getvalue(), out.getvalue()


@pytest.mark.parametrize(("arch", "dtype", "matrix_op"), [("gfx942", "f16", "amdgpu.mfma"), ("gfx942", "f32", "amdgpu.mfma"),
                                                     ("gfx1100", "f16", "amdgpu.wmma"), ("gfx1201", "bf16", "amdgpu.wmma")])
def test_keys_before_a_window_do_not_reach_rows_on_matrix_cores(arch: str, dtype: str, matrix_op: str) -> None:
    """Dense causal prefill with a sliding window on the matrix loop: the V rows of keys 0..3
    hold NaN. Query i sees keys i - 8 .. i, so rows 0..11 see a NaN and rows 12.. do not: a hidden
    key's NaN must not reach them through P = 0 in the MFMA / WMMA (0 x NaN), as the reference drops it."""
    import numpy as np

    from pagedir import interp, reference
    from pagedir.interp.check import host_values

    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args(["--dense", "--causal", "--window", "8", "--num-heads-q", "2", "--num-heads-kv", "1",
                              "--batch", "1", "--seq-len-q", "64", "--seq-len-k", "64", "--head-dim", "64",
                              "--dtype", dtype, "--arch", arch])
    rng = np.random.default_rng(5)
    q, k, v = (host_values(rng.standard_normal(shape), dtype) for shape in ((1, 2, 64, 64), (1, 1, 64, 64), (1, 1, 64, 64)))
    v[:, :, :4] = np.nan
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        driver.run(module.operation, driver.CompileOptions(), start="L0", end="L6")
        assert matrix_op in str(module)
        out = host_values(np.zeros((1, 2, 64, 64)), dtype)
        got = np.asarray(interp.run(module, args.name, [q, k, v, out])[-1], dtype=np.float32)
    expected = reference.attention(q, k, v, causal=True, window_left=8)
    assert np.isnan(expected[:, :, :12]).all() and np.isfinite(expected[:, :, 12:]).all()
    assert np.isnan(got[:, :, :12]).all()
    np.testing.assert_allclose(got[:, :, 12:], expected[:, :, 12:], atol=1e-5 if dtype == "f32" else 2e-2)


def test_decode_reads_v_in_wide_pieces():
    # Output columns are mapped so that a lane's V columns of 8 d-tiles sit side by side in a key row:
    # per 16 keys a lane reads 4 rows with one ds_read_b128 each, not 32 single elements (main: 32
    # ds_read_u16 per tile, 464 loop instructions per 64-key tile, 7.25 per KV token).
    from pagedir.backend.loops import hot_loop
    from pagedir.backend.report import kernel_bodies

    asm = assembly("gfx942")
    (report,) = kernel_reports(asm, "gfx942")
    body = kernel_bodies(asm, [report.name])[report.name]
    _, lines = hot_loop(body)
    loop = [body[i].split()[0] for i in lines]
    assert loop.count("ds_read_u16") == 0
    assert loop.count("ds_read_b128") >= 4
    assert report.loop_instructions / 64 <= 6.5
