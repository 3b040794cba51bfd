"""The pass registry: lazy entries, pass flags in pagedir-opt, failures and internal errors."""

from __future__ import annotations

import dataclasses
import importlib
import sys
import types

import mlir.ir as ir
import pytest
from mlir.passmanager import PassManager

import pagedir
from pagedir.cli import opt
from pagedir.passes import PASSES, PassInfo, add_pass, create_pass, get_pass_class
from pagedir.passes.base import Pass

FIXED_PASSES = [
    "rock-attention-to-gridwise",
    "rock-gridwise-attention-to-blockwise",
    "rock-annotate-liveness",
    "rock-reuse-lds",
    "rock-blockwise-load",
    "rock-threadwise-lowering",
    "rock-buffer-load",
    "rock-to-gpu",
    "rock-verify",
]


def test_fixed_surface_pass_arguments_are_registered_by_file_name():
    for argument in FIXED_PASSES:
        info = PASSES[argument]
        assert info.argument == argument
        assert info.summary
        assert info.module != "" and "-" not in info.module


def test_registry_does_not_import_pass_modules():
    import subprocess

    code = "import sys, pagedir.passes; print(any(m.startswith('pagedir.passes.') and m != 'pagedir.passes.base' for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# A toy pass registered for the duration of a test: records the order it runs in.
@dataclasses.dataclass(frozen=True)
class _ToyOptions:
    #: Label recorded when the pass runs.
    label: str = "x"
    #: Fail at the first function.
    fail: bool = False
    #: Raise a Python exception (a bug).
    crash: bool = False


RUNS: list[str] = []


class ToyPass(Pass):
    argument = "test-toy"
    summary = "Record that the pass ran"
    Options = _ToyOptions

    def run(self, module: ir.Operation) -> bool:
        RUNS.append(self.options.label)
        if self.options.crash:
            raise RuntimeError("toy bug")
        if self.options.fail:
            func = module.regions[0].blocks[0].operations[0]
            func.location.emit_error(f"toy failure with label {self.options.label}")
            return False
        return True


@pytest.fixture
def toy_pass(monkeypatch):
    module = types.ModuleType("pagedir.passes.test_toy")
    module.ToyPass = ToyPass
    monkeypatch.setitem(sys.modules, "pagedir.passes.test_toy", module)
    monkeypatch.setitem(PASSES, "test-toy", PassInfo("test-toy", "test_toy", "ToyPass", ToyPass.summary))
    monkeypatch.setitem(PASSES, "test-broken", PassInfo("test-broken", "no_such_module", "Nope", "Does not import"))
    RUNS.clear()
    return ToyPass


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "in.mlir"
    path.write_text("func.func @f() {\n  return\n}\n")
    return str(path)


def test_pass_flags_run_in_order_with_each_option_syntax(toy_pass, input_file, capsys):
    argv = [input_file, "--test-toy=label=a", "--test-toy{label=b}", "--test-toy", "--test-toy='label=c'"]
    assert opt.main(argv) == 0
    assert RUNS == ["a", "b", "x", "c"]
    assert "func.func @f" in capsys.readouterr().out


def test_pass_flag_does_not_swallow_the_input_file(toy_pass, input_file, capsys):
    assert opt.main(["--test-toy", input_file]) == 0
    assert RUNS == ["x"]


def test_pipeline_text_runs_toy_pass_between_upstream_passes(toy_pass, input_file, capsys):
    argv = [input_file, "--pass-pipeline=builtin.module(test-toy{label=one},func.func(cse),test-toy{label=two})", "--dump-pass-pipeline"]
    assert opt.main(argv) == 0
    assert RUNS == ["one", "two"]
    err = capsys.readouterr().err
    assert "test-toy{label=one fail=false crash=false},func.func(cse),test-toy{label=two fail=false crash=false}" in err


def test_pass_failure_is_a_located_error_and_stops_the_pipeline(toy_pass, input_file, capsys):
    assert opt.main([input_file, "--test-toy=label=a fail=true", "--test-toy=label=b"]) == 1
    assert RUNS == ["a"]
    captured = capsys.readouterr()
    assert f"{input_file}:1:1: error: toy failure with label a" in captured.err
    assert captured.out == ""


def test_python_exception_in_a_pass_is_an_internal_error_without_traceback(toy_pass, input_file, capsys):
    assert opt.main([input_file, "--test-toy=crash=true"]) == 2
    err = capsys.readouterr().err
    assert "pagedir-opt: internal error: RuntimeError: toy bug" in err
    assert "Traceback" not in err


def test_exception_after_an_emitted_error_is_still_an_internal_error(toy_pass, input_file, monkeypatch, capsys):
    """The bug can only leave the pass as one more diagnostic; it must not read as a user error (exit code 1)."""

    def fail_then_crash(self, module):
        module.location.emit_error("a first, genuine error")
        raise RuntimeError("toy bug after an error")

    monkeypatch.setattr(ToyPass, "run", fail_then_crash)
    assert opt.main([input_file, "--test-toy"]) == 2
    err = capsys.readouterr().err
    assert "error: internal error in test-toy: RuntimeError: toy bug after an error" in err
    assert "Traceback" not in err


def test_exception_in_a_rock_verifier_is_an_internal_error(tmp_path, monkeypatch, capsys):
    from pagedir.dialect.rock import AllocOp

    def broken(self, op):
        raise ZeroDivisionError("verifier bug")

    monkeypatch.setattr(AllocOp.op_def, "verify", broken)
    path = tmp_path / "alloc.mlir"
    path.write_text('%b = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>\n')
    for flags in ([], ["--split-input-file", "--verify-diagnostics"]):
        assert opt.main([str(path), *flags]) == 2
        err = capsys.readouterr().err
        assert "error: internal error in the verifier of 'rock.alloc': ZeroDivisionError: verifier bug" in err


def test_pass_module_that_fails_to_import_is_an_internal_error(toy_pass, input_file, capsys):
    assert opt.main([input_file, "--test-broken"]) == 2
    err = capsys.readouterr().err
    assert "internal error: cannot load pass 'test-broken': ModuleNotFoundError" in err
    assert "Traceback" not in err


def test_list_passes_shows_options_with_docs_and_survives_broken_passes(toy_pass, capsys):
    assert opt.main(["--list-passes"]) == 0
    out = capsys.readouterr().out
    assert "--test-toy" in out and "Record that the pass ran" in out
    assert "--label=<str>" in out and "Label recorded when the pass runs. (default: 'x')" in out
    assert "--test-broken" in out and "not available" in out


def test_add_pass_puts_a_pass_into_a_users_pass_manager(toy_pass):
    with pagedir.make_context():
        module = ir.Module.parse("func.func @f() { return }")
        pm = PassManager("builtin.module")
        add_pass(pm, "test-toy", label="mine")
        add_pass(pm, create_pass("test-toy", "label=second"))
        pm.add("canonicalize")
        pm.run(module.operation)
    assert RUNS == ["mine", "second"]


def test_named_pipelines_are_added_from_above_the_passes(toy_pass):
    """pagedir.pipelines.add_pass takes a pipeline or a pass; the passes know no pipeline and say where it is."""
    from pagedir.passes import OptionError
    from pagedir.pipelines import KERNEL_PASSES
    from pagedir.pipelines import add_pass as add_pass_or_pipeline

    with pagedir.make_context():
        pm = PassManager("builtin.module")
        assert add_pass_or_pipeline(pm, "test-toy", label="mine").options.label == "mine"
        assert len(add_pass_or_pipeline(pm, "rock-kernel-pipeline", arch="gfx942")) == len(KERNEL_PASSES)
        with pytest.raises(OptionError, match="no pagedir pass named 'rock-kernel-pipeline'.*pagedir.pipelines.add_pass"):
            add_pass(pm, "rock-kernel-pipeline", arch="gfx942")


def test_error_in_users_pass_manager_fails_the_run_instead_of_aborting(toy_pass):
    """An error emitted by a pass that then claims success must still fail the run (the bindings abort otherwise)."""

    class Sloppy(Pass):
        argument = "test-sloppy"

        def run(self, module):
            module.location.emit_error("reported but not failed")
            return True

    with pagedir.make_context():
        module = ir.Module.parse("func.func @f() { return }")
        pm = PassManager("builtin.module")
        add_pass(pm, Sloppy())
        with pytest.raises(ir.MLIRError, match="reported but not failed"):
            pm.run(module.operation)


def test_get_pass_class_imports_lazily():
    assert get_pass_class("rock-verify").argument == "rock-verify"
    assert importlib.import_module("pagedir.passes.verify").RockVerifyPass is get_pass_class("rock-verify")


def test_list_passes_lists_pagedirs_passes_and_pipelines_before_the_upstream_ones(capsys):
    assert opt.main(["--list-passes"]) == 0
    names = [line.split()[0] if line.startswith("  --") else line for line in capsys.readouterr().out.splitlines()]
    names = [name for name in names if not name.startswith(" ")]  # option lines
    assert names[0] == "Passes:"
    ours = [name.removeprefix("--") in PASSES for name in names[1 : names.index("Pass Pipelines:")]]
    # pagedir's passes first, as one block, then only upstream ones under their own heading.
    assert ours == sorted(ours, reverse=True) and ours[0]
    assert names[1 + ours.index(False)] == "Upstream Passes:"
    pipelines = names[names.index("Pass Pipelines:") :]
    assert pipelines[1:3] == ["--rock-backend-pipeline", "--rock-kernel-pipeline"]
    assert pipelines[3] == "Upstream Pass Pipelines:"
