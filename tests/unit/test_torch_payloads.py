"""Attention written in PyTorch and exported by torch-mlir (tests/fixtures/torch, tools/export_torch_payloads.py):
raised as exported, the kernel passes ``pagedir-run --check --arch gfx942`` against the payload run as written,
and compiles to gfx942 assembly. The raise itself is checked op by op in tests/lit/frontends/torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagedir.cli import compile as compile_cli
from pagedir.cli import run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "torch"
SIX = ["gqa_decode", "sdpa_gqa", "repeat_sdpa", "causal_prefill", "paged_decode", "bmm_folded"]
RAISED = [f"{form}_{dtype}" for form in SIX for dtype in ("f16", "f32", "bf16")] + \
    sorted(p.stem for p in FIXTURES.glob("*_alt_f16.mlir"))


def test_every_fixture_is_listed():
    """A new fixture is either a near miss (lit) or checked here."""
    on_disk = {p.stem for p in FIXTURES.glob("*.mlir")}
    assert on_disk - {n for n in on_disk if n.startswith("miss_")} == set(RAISED)


@pytest.mark.parametrize("name", RAISED)
def test_check_against_the_payload_passes(name, capsys):
    status = run.main(["--check", "--arch", "gfx942", str(FIXTURES / f"{name}.mlir")])
    out = capsys.readouterr().out
    assert status == 0, out
    # Every draw compared the lowered kernel with the payload as written (not with a reference of its own).
    draws = [line for line in out.splitlines() if line.startswith(f"@{name}: ")]
    assert draws and all("PASS (levels input -> L6" in line for line in draws), out
    assert out.count("input as written: ran; the reference of the lowered kernel") == len(draws), out


@pytest.mark.parametrize("name", [f"{form}_f16" for form in SIX])
def test_compiles_to_gfx942_assembly(name, tmp_path, capsys):
    asm = tmp_path / f"{name}.s"
    assert compile_cli.main([str(FIXTURES / f"{name}.mlir"), "--arch", "gfx942", "--emit=asm", "-o", str(asm)]) == 0, \
        capsys.readouterr().err
    text = asm.read_text()
    assert ".amdgcn_target \"amdgcn-amd-amdhsa--gfx942" in text and "s_endpgm" in text


@pytest.mark.parametrize("name", ["gqa_decode_f16", "paged_decode_bf16"])
def test_check_fails_where_the_kernel_differs_from_the_payload(name, monkeypatch, capsys):
    """The payload run as written is the reference: a raise that got the scale wrong fails the check."""
    import pagedir.passes.raise_attention as raise_attention

    right = raise_attention.replace

    def doubled_scale(sink, found):
        found.scale *= 2
        right(sink, found)

    monkeypatch.setattr(raise_attention, "replace", doubled_scale)
    assert run.main(["--check", "--arch", "gfx942", str(FIXTURES / f"{name}.mlir")]) == 1
    assert "L6 after rock-kernel-pipeline: max abs error" in capsys.readouterr().out


def test_rounding_below_the_inputs_type_is_not_raised(tmp_path, capsys):
    """Precision policy: a chain may round to its inputs' type between steps (raised to f32), not narrower. An f32
    payload whose P goes through f16 is left as written, with the remark saying so."""
    from pagedir.cli import opt

    text = (FIXTURES / "gqa_decode_f32.mlir").read_text()
    rounded = """    %p16 = tensor.empty() : tensor<2x4x1x32xf16>
    %p_half = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%19 : tensor<2x4x1x32xf32>) outs(%p16 : tensor<2x4x1x32xf16>) {
    ^bb0(%in: f32, %out: f16):
      %t = arith.truncf %in : f32 to f16
      linalg.yield %t : f16
    } -> tensor<2x4x1x32xf16>
    %p_back = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p_half : tensor<2x4x1x32xf16>) outs(%7 : tensor<2x4x1x32xf32>) {
    ^bb0(%in: f16, %out: f32):
      %e = arith.extf %in : f16 to f32
      linalg.yield %e : f32
    } -> tensor<2x4x1x32xf32>
    %collapsed_5 = tensor.collapse_shape %p_back [[0, 1], [2], [3]]"""
    edited = text.replace("    %collapsed_5 = tensor.collapse_shape %19 [[0, 1], [2], [3]]", rounded)
    assert edited != text
    source = tmp_path / "rounded.mlir"
    source.write_text(edited)
    assert opt.main([str(source), "--rock-raise-attention=explain=true", "-o", str(tmp_path / "out.mlir")]) == 0
    assert "rock.attention" not in (tmp_path / "out.mlir").read_text().replace("not raised to rock.attention", "")
    assert "remark: not raised to rock.attention: the chain rounds to f16 between steps, not to the inputs' f32" \
        in capsys.readouterr().err
