"""Attention kernels on chips with matrix cores use them: the upstream lowering of the
blockwise loop's amdgpu.mfma (convert-amdgpu-to-rocdl, LLVM's AMDGPU backend) emits the
v_mfma form of the element type, and the K/V elements are not converted to f32 one by one.
Correctness is checked by execution elsewhere (test_attention, test_split_kv, pagedir-run --check)."""

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
    # 4 waves share a 64-key tile, 16 keys each: S^T is 128 / k MFMAs, O^T is 8 tiles x 16 / k keys.
    k = 4 if dtype == "f32" else 16
    assert len(re.findall(rf"\b{mnemonic}\b", asm)) == report.matrix_instructions == 128 // k + 8 * 16 // k
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


def test_chips_without_matrix_instructions_keep_the_valu_loop() -> None:
    (report,) = kernel_reports(assembly("gfx1030"), "gfx1030")
    assert report.matrix_instructions == 0
