"""pagedir-compile and pagedir-run --check on linalg payloads the raise does not take: each says why, where.

The payloads are ``pagedir-gen linalg-attention``'s, mutated: the softmax's division made a product
(never attention), the result returned as a tensor instead of written into ``%out`` (torch-mlir's
signature), bufferized, ``rock.arch`` removed; and torch-mlir's export of a near miss. The reason printed is the one rock-raise-attention's
``explain=true`` remark gives, as an error at the op where the raise stopped (exit code 1, no
traceback), never "input has no GPU kernel"; a check without a chip says which ``--arch`` to add.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pagedir.cli import compile as compile_cli, gen, opt, run

DIVISION = "arith.divf %in0, %in1"
SIZES = ["--batch", "1", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-k", "32", "--head-dim", "32"]


@pytest.fixture(scope="module")
def payload(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("payload") / "payload.mlir"
    assert gen.main(["linalg-attention", *SIZES, "-o", str(path)]) == 0
    return path.read_text()


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def no_division(text: str) -> str:
    assert text.count(DIVISION) == 1
    return text.replace(DIVISION, "arith.mulf %in0, %in1")


def returning_tensor(text: str) -> str:
    """The function returns its result as torch-mlir's functions do, instead of writing it into %out."""
    sink = re.search(r"  bufferization.materialize_in_destination (%\w+) in restrict writable %out : \((tensor<[^>]+>), "
                     r"[^\n]*\n  return\n", text)
    assert sink
    result, tensor = sink.groups()
    text = text.replace(sink.group(0), f"  return {result} : {tensor}\n")
    return text.replace(") attributes {", f") -> {tensor} attributes {{", 1)


def remarks(path: Path, capsys) -> list[str]:
    """What rock-raise-attention's explain=true remarks say about ``path``, as errors."""
    assert opt.main([str(path), "--rock-raise-attention=explain=true", "-o", "-"]) == 0
    found = [line for line in capsys.readouterr().err.splitlines() if ": remark: not raised to rock.attention: " in line]
    assert found
    return [line.replace(": remark: ", ": error: ", 1) for line in found]


def cli(main, capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    return status, captured.out, captured.err


def test_compile_of_a_payload_not_raised_prints_the_remarks_reason(payload, tmp_path, capsys):
    path = tmp_path / "nodiv.mlir"
    path.write_text(no_division(payload))
    expected = remarks(path, capsys)
    status, _, err = cli(compile_cli.main, capsys, str(path), "--no-cache", "-o", str(tmp_path / "out.s"))
    assert status == 1 and err.splitlines() == expected, err
    assert expected[0].startswith(f"{path}:{line_of(path.read_text(), 'arith.mulf %in0, %in1') - 2}:")
    assert not (tmp_path / "out.s").exists()


def test_compile_of_a_function_returning_a_tensor_says_why_not_that_it_has_no_kernel(payload, tmp_path, capsys):
    path = tmp_path / "returned.mlir"
    path.write_text(returning_tensor(no_division(payload)))
    expected = remarks(path, capsys)
    status, _, err = cli(compile_cli.main, capsys, str(path), "--no-cache", "-o", str(tmp_path / "out.s"))
    assert status == 1, err
    assert "no GPU kernel" not in err
    assert err.splitlines() == expected, err
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error: not raised to rock.attention: ", err)


def test_compile_takes_a_tensor_functions_chip_from_its_rock_arch(payload, tmp_path, capsys):
    path = tmp_path / "returned.mlir"
    path.write_text(returning_tensor(payload).replace('rock.arch = "gfx942"', 'rock.arch = "gfx950"'))
    status, _, err = cli(compile_cli.main, capsys, str(path), "--no-cache", "-o", str(tmp_path / "out.s"))
    assert status == 0, err
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx950' in (tmp_path / "out.s").read_text()


def test_check_of_a_payload_not_raised_fails_with_the_reason(payload, tmp_path, capsys):
    path = tmp_path / "nodiv.mlir"
    path.write_text(no_division(payload))
    expected = remarks(path, capsys)
    status, out, err = cli(run.main, capsys, "--check", str(path))
    assert status == 1
    assert out.splitlines() == ["@attention: FAIL: not raised to rock.attention by rock-raise-attention"]
    assert err.splitlines() == expected, err


def test_check_of_a_function_returning_a_tensor_is_no_pass(payload, tmp_path, capsys):
    """It used to run as written and PASS with nothing to compare with: the check never saw a kernel."""
    path = tmp_path / "returned.mlir"
    path.write_text(returning_tensor(no_division(payload)))
    expected = remarks(path, capsys)
    status, out, err = cli(run.main, capsys, "--check", str(path))
    assert status == 1
    assert out.splitlines() == ["@attention: FAIL: not raised to rock.attention by rock-raise-attention"]
    assert err.splitlines() == expected, err


def test_check_of_a_bufferized_payload_is_no_pass(payload, tmp_path, capsys):
    """linalg on memrefs (bufferized before the raise) used to run as written and PASS, comparing nothing."""
    written, path = tmp_path / "payload.mlir", tmp_path / "bufferized.mlir"
    written.write_text(payload)
    assert opt.main([str(written), "--pass-pipeline=builtin.module(one-shot-bufferize{bufferize-function-boundaries})",
                     "-o", str(path)]) == 0
    expected = remarks(path, capsys)
    assert "works on memrefs: the payload is bufferized" in expected[0]
    status, out, err = cli(run.main, capsys, "--check", str(path))
    assert status == 1
    assert out.splitlines() == ["@attention: FAIL: not raised to rock.attention by rock-raise-attention"]
    assert err.splitlines() == expected, err


def test_check_without_a_chip_names_the_arch_flag_to_add(payload, tmp_path, capsys):
    path = tmp_path / "noarch.mlir"
    path.write_text(payload.replace('rock.arch = "gfx942", ', ""))
    assert "rock.arch" not in path.read_text()
    status, out, err = cli(run.main, capsys, "--check", str(path))
    assert status == 1 and not out
    assert err.startswith(f"{path}:1:1: error: 'func.func' op @attention names no chip: add --arch to check it "
                          f"lowered, e.g. --arch gfx942 (known chips: gfx908, "), err
    status, out, err = cli(run.main, capsys, "--check", str(path), "--arch", "gfx942")  # the advice works
    assert status == 0 and "L6 after rock-kernel-pipeline" in out and "FAIL" not in out, out + err


def test_compile_of_a_torch_export_lists_every_blocker(tmp_path, capsys):
    """torch-mlir's export of GQA with the heads tiled (q head h on kv head h % G): K and V are both blockers."""
    path = Path(__file__).resolve().parents[1] / "fixtures" / "torch" / "miss_gqa_tiled_f16.mlir"
    expected = remarks(path, capsys)
    assert len(expected) == 2
    status, _, err = cli(compile_cli.main, capsys, str(path), "--arch", "gfx942", "--no-cache", "-o", str(tmp_path / "out.s"))
    assert status == 1 and err.splitlines() == expected, err
