"""pagedir.frontends.torch: text from another MLIR context raised to a rock kernel, its errors, and one export.

Everything but the last test runs without torch: the handoff reads text, so torch-mlir's printed
export (a committed fixture, tests/fixtures/torch) stands in for the export step, and a payload of
``pagedir-gen linalg-attention`` parsed in a context that is not pagedir's for torch-mlir's module
object. The last test exports a GQA decode written in PyTorch and compiles it in one call; it needs
torch-mlir (``pip install 'pagedir[torch]'``), which the suite's environment does not install.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import mlir.ir as ir
import pytest

from pagedir.cli import opt
from pagedir.cli.gen import build_parser
from pagedir.frontends import torch as pagedir_torch
from pagedir.gen import linalg_attention
from pagedir.passes.ir_utils import find_ops

#: torch-mlir's export of a GQA decode (tools/export_torch_payloads.py), as the export step returns it.
EXPORT = Path(__file__).resolve().parents[1] / "fixtures" / "torch" / "gqa_decode_f16.mlir"
SIZES = ["--batch", "2", "--num-heads-q", "8", "--num-heads-kv", "2", "--seq-len-k", "32", "--head-dim", "64"]


def payload(*flags: str) -> str:
    text = linalg_attention.generate(build_parser().parse_args(["linalg-attention", *SIZES, *flags]))
    return text.replace('rock.arch = "gfx942", ', "")  # as exported: no chip of its own


def attention_of(module: ir.Operation) -> ir.Operation:
    (found,) = find_ops(module, "rock.attention")
    return found


def test_missing_torch_mlir_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_mlir", None)  # an import of it fails, installed or not
    with pytest.raises(pagedir_torch.TorchMlirMissing, match=r"needs torch and torch-mlir .*pip install 'pagedir\[torch\]'"):
        pagedir_torch.compile(lambda q: q, None, arch="gfx942")
    assert issubclass(pagedir_torch.TorchMlirMissing, ImportError)


def test_a_module_of_another_context_is_raised_in_pagedirs():
    foreign_context = ir.Context()  # not pagedir's: no rock dialect, as torch-mlir's is not either
    foreign = ir.Module.parse(payload(), foreign_context)
    kernel = pagedir_torch.raise_kernel(foreign, arch="gfx942")
    assert kernel.context is not foreign_context
    (func,) = [op.operation for op in kernel.regions[0].blocks[0].operations]
    assert "rock.kernel" in func.attributes and ir.StringAttr(func.attributes["rock.arch"]).value == "gfx942"
    attention = attention_of(kernel)
    assert ir.IntegerAttr(attention.attributes["num_heads_q"]).value == 8
    assert ir.IntegerAttr(attention.attributes["num_heads_kv"]).value == 2
    assert not find_ops(kernel, "linalg.generic", "bufferization.materialize_in_destination")


def test_without_arch_the_kernel_names_no_chip():
    func = pagedir_torch.raise_kernel(payload()).regions[0].blocks[0].operations[0].operation
    assert "rock.kernel" in func.attributes and "rock.arch" not in func.attributes


def test_nothing_raised_is_an_error_with_the_raise_reason_and_the_line(tmp_path, capsys):
    text = payload().replace("arith.divf %in0, %in1", "arith.mulf %in0, %in1")
    path = tmp_path / "export.mlir"
    path.write_text(text)
    assert opt.main([str(path), "--rock-raise-attention=explain=true", "-o", str(tmp_path / "raised.mlir")]) == 0
    (remark,) = [line for line in capsys.readouterr().err.splitlines() if ": remark: " in line]
    reason = remark.split(": remark: ", 1)[1]
    line = int(remark.split(":")[1])
    with pytest.raises(pagedir_torch.NotRaised) as caught:
        pagedir_torch.raise_kernel(text, source_name="<export>")
    message = str(caught.value)
    assert f"<export>:{line}:" in message and f": error: {reason}" in message, message
    assert text.splitlines()[line - 1].strip() in message  # the exported line it stopped at
    assert caught.value.text == text and caught.value.diags[0].line == line


def test_an_export_without_linalg_is_not_raised_and_says_so():
    with pytest.raises(pagedir_torch.NotRaised, match=r"<export>:1:1: error: no function of the export became a rock "
                                                      r"kernel: rock-raise-attention reads functions in linalg on tensors"):
        pagedir_torch.raise_kernel("func.func @f(%a: memref<4xf32>) {\n  return\n}", source_name="<export>")


def test_text_that_does_not_parse_is_a_located_error():
    with pytest.raises(pagedir_torch.UserError, match=r"^<export>:1:\d+: error: "):
        pagedir_torch.raise_kernel("func.func @f(", source_name="<export>")


def test_compiling_needs_a_chip():
    with pytest.raises(pagedir_torch.UserError, match=r"compiling needs arch=<chip> \(e.g. arch='gfx942'\)"):
        pagedir_torch.compile(lambda q: q, None, emit="asm")


def test_torch_mlirs_text_becomes_a_kernel_with_the_output_appended():
    """The signature rule on torch-mlir's own text (a committed export): (q, k, v) -> o becomes (q, k, v, out)."""
    kernel = pagedir_torch.raise_kernel(EXPORT.read_text(), arch="gfx942")
    (func,) = [op.operation for op in kernel.regions[0].blocks[0].operations]
    types = [str(argument.type) for argument in func.regions[0].blocks[0].arguments]
    assert types == ["memref<2x4x1x32xf16>", "memref<2x2x32x32xf16>", "memref<2x2x32x32xf16>", "memref<2x4x1x32xf16>"]
    assert str(ir.TypeAttr(func.attributes["function_type"]).value).endswith("-> ()")
    attention = attention_of(kernel)
    assert [operand.owner for operand in attention.operands] == [func.regions[0].blocks[0]] * 4  # the arguments
    assert ir.IntegerAttr(attention.attributes["num_heads_kv"]).value == 2


def test_compile_gives_the_artefact_and_the_plan_of_the_raised_kernel(monkeypatch, tmp_path):
    """compile() past the export (a committed torch-mlir export in its place): the compile API's asm and plan."""
    monkeypatch.setattr(pagedir_torch, "export", lambda fn, *inputs, name: EXPORT.read_text())
    compiled = pagedir_torch.compile(None, arch="gfx942", emit="asm", plan=True, cache_dir=str(tmp_path))
    assert attention_of(compiled.kernel) is not None
    assert ".amdgcn_target \"amdgcn-amd-amdhsa--gfx942" in compiled.artefact and "gqa_decode_f16:" in compiled.artefact
    (kernel,) = compiled.plan["kernels"]
    assert kernel["symbol"] == "gqa_decode_f16"
    assert [argument["shape"] for argument in kernel["arguments"]] == [[2, 4, 1, 32], [2, 2, 32, 32], [2, 2, 32, 32],
                                                                       [2, 4, 1, 32]]
    again = pagedir_torch.compile(None, arch="gfx942", emit="asm", plan=True, cache_dir=str(tmp_path))
    assert again.cache_hit and again.artefact == compiled.artefact


@pytest.mark.skipif(importlib.util.find_spec("torch_mlir") is None,
                    reason="needs torch-mlir (pip install 'pagedir[torch]'), which the test environment does not install")
def test_gqa_decode_written_in_pytorch_compiles_in_one_call(tmp_path):
    import torch

    def gqa_decode(q, k, v):
        group = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(group, 1)
        v = v.repeat_interleave(group, 1)
        scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
        return scores.softmax(-1) @ v

    q = torch.randn(2, 8, 1, 64, dtype=torch.float16)
    k, v = (torch.randn(2, 2, 32, 64, dtype=torch.float16) for _ in range(2))
    compiled = pagedir_torch.compile(gqa_decode, q, k, v, name="gqa_decode", arch="gfx942", emit="hsaco", plan=True,
                                     cache_dir=str(tmp_path))
    attention = attention_of(compiled.kernel)
    assert ir.IntegerAttr(attention.attributes["num_heads_q"]).value == 8
    assert ir.IntegerAttr(attention.attributes["num_heads_kv"]).value == 2
    assert compiled.artefact[:4] == b"\x7fELF"
    (kernel,) = compiled.plan["kernels"]
    shapes = [argument["shape"] for argument in kernel["arguments"]]
    assert shapes == [[2, 8, 1, 64], [2, 2, 32, 64], [2, 2, 32, 64], [2, 8, 1, 64]], json.dumps(kernel["arguments"])
