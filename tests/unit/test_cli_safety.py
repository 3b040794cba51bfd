"""Inputs and destinations that used to kill pagedir-opt and pagedir-compile or lose the user's files.

Each case runs the tool as a user does, in a fresh process: it must end with
exit code 1 and one located ``file:line:col: error:`` line, never a signal
(a C++ assertion or stack overflow inside MLIR), a traceback or an internal
error, and an output file named with ``-o`` keeps what it held.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "lit" / "backend" / "Inputs" / "wave64-kernel.mlir"
DEPTH = 10_000
OLD = "what the user had before\n"


def run_tool(tool: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """``pagedir-<tool> args`` from this checkout, in a fresh process (stderr as text)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("PAGEDIR_TRACEBACK", None)
    kwargs.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-m", f"pagedir.cli.{tool}", *args], stderr=subprocess.PIPE, env=env, timeout=120, **kwargs
    )


def assert_one_located_error(result: subprocess.CompletedProcess, path: Path, where: str, message: str) -> None:
    err = result.stderr.decode(errors="replace")
    assert result.returncode == 1, f"exit code {result.returncode} (negative: killed by a signal)\n{err}"
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{path}:{where}: error: "), err
    assert message in lines[0], err


def _nested(open_: str, inner: str, close: str) -> str:
    return open_ * DEPTH + inner + close * DEPTH


def _ops(line: str) -> str:
    """A function of tensors holding ``line`` as its third line (it names %t, %v, %o, %p)."""
    return ("func.func @f(%t: tensor<2x3xf32>, %v: tensor<6xf32>, %o: tensor<6x2xf32>, %p: tensor<3x2xf32>) {\n"
            "  // the op below crashed MLIR\n"
            f"  {line}\n"
            "  return\n"
            "}\n")


def _llvm_op(line: str) -> str:
    """An llvm.func holding ``line`` as its second line (it names %s, a struct of i64 and i32, and %v, an i64)."""
    return ("llvm.func @f(%s: !llvm.struct<(i64, i32)>, %v: i64) {\n"
            f"  {line}\n"
            "  llvm.return\n"
            "}\n")


# (name, text, line:col of the error, part of the message): each aborted, overflowed the stack or,
# for the long integer, took minutes. A deep one is reported at the bracket that opens level 257.
CRASHING_INPUTS = [
    ("index-array", "module attributes {a = array<index: 1>} {}\n", "1:24", "array<index"),
    ("index-array-empty", "module attributes {a = array<index>} {}\n", "1:24", "array<index"),
    ("index-array-alias", "!t = index\nmodule attributes {a = array<!t: 1>} {}\n", "2:24", "array<!t"),
    ("deep-list", "module attributes {a = " + _nested("[", "", "]") + "} {}\n", "1:279", "nested deeper than 256"),
    ("deep-dictionary", "module attributes {a = " + _nested("{b = ", "1", "}") + "} {}\n", "1:1299", "nested deeper"),
    ("deep-type", "func.func private @f(" + _nested("memref<", "f32", ">") + ")\n", "1:1813", "nested deeper"),
    (
        "deep-regions",
        "func.func @f() {" + _nested("scf.execute_region {", "scf.yield ", "}") + " return }\n",
        "1:5136",
        "nested deeper",
    ),
    ("huge-integer", "module attributes {a = " + "9" * 100_000 + " : i64} {}\n", "1:24", "100000 digits"),
    # Reported at the op, where MLIR puts its own errors about it.
    ("negative-reassociation", _ops("%r = tensor.collapse_shape %t [[0, -1]] : tensor<2x3xf32> into tensor<6xf32>"),
     "3:8", "reassociation index -1 is negative"),
    ("negative-reassociation-expand", _ops("%r = tensor.expand_shape %v [[-2, 1]] output_shape [2, 3] : tensor<6xf32> "
                                           "into tensor<2x3xf32>"), "3:8", "reassociation index -2 is negative"),
    ("negative-reassociation-generic", _ops('%r = "tensor.collapse_shape"(%t) <{reassociation = [[0 : i64, -1 : i64]]}> '
                                            ": (tensor<2x3xf32>) -> tensor<6xf32>"), "3:8", "reassociation index -1"),
    ("broadcast-dimension-2**64", _ops("%r = linalg.broadcast ins(%v : tensor<6xf32>) outs(%o : tensor<6x2xf32>) "
                                       f"dimensions = [{2**64}]"), "3:8", f"integer {2**64} of a list is outside"),
    ("transpose-permutation-2**63", _ops("%r = linalg.transpose ins(%t : tensor<2x3xf32>) outs(%p : tensor<3x2xf32>) "
                                         f"permutation = [{2**63}, 0]"), "3:8", f"integer {2**63} of a list"),
    ("llvm-extractvalue-2**32", _llvm_op("%r = llvm.extractvalue %s[4294967296] : !llvm.struct<(i64, i32)>"), "2:8",
     "position 4294967296 of an LLVM aggregate is out of range (at most 4294967295)"),
    ("llvm-insertvalue-2**32+1", _llvm_op("%t = llvm.insertvalue %v, %s[4294967297] : !llvm.struct<(i64, i32)>"), "2:8",
     "position 4294967297 of an LLVM aggregate"),
    ("llvm-extractvalue-generic", _llvm_op('%r = "llvm.extractvalue"(%s) <{position = array<i64: 4294967296>}> '
                                           ": (!llvm.struct<(i64, i32)>) -> i64"), "2:8", "position 4294967296"),
    ("transpose-permutation-below-int64", _ops("linalg.transpose ins(%t : tensor<2x3xf32>) outs(%p : tensor<3x2xf32>) "
                                               f"permutation = [1, {-2**63 - 1}]"), "3:3", "outside the 64-bit range"),
]


@pytest.mark.parametrize(("name", "text", "where", "message"), CRASHING_INPUTS, ids=[c[0] for c in CRASHING_INPUTS])
@pytest.mark.parametrize("tool", ["opt", "compile", "run"])
def test_input_that_crashed_mlir_is_a_located_error(tool, name, text, where, message, tmp_path):
    path = tmp_path / f"{name}.mlir"
    path.write_text(text)
    output = tmp_path / "out"
    output.write_text(OLD)
    flags = {"opt": ["-o"], "compile": ["--arch", "gfx942", "-o"], "run": ["--entry", "f", "--outputs"]}[tool]
    result = run_tool(tool, str(path), *flags, str(output))
    assert_one_located_error(result, path, where, message)
    assert output.read_text() == OLD


#: Lists the screen must leave to MLIR: valid reassociations, typed wide integers, dense data, leading zeros.
SCREENED_BUT_FINE = [
    "%r = tensor.collapse_shape %t [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>",
    "%r = linalg.transpose ins(%t : tensor<2x3xf32>) outs(%p : tensor<3x2xf32>) permutation = [01, 0x0]",
    f"\"test.op\"() {{a = [1 : i128, {2**100} : i128], b = [-1, -2]}} : () -> ()",
    f"%c = arith.constant dense<[[{2**100}, -1]]> : tensor<1x2xi128>",
    "%s = vector.shuffle %a, %b [0, -1] : vector<2xf32>, vector<2xf32>",
    "%e = llvm.extractvalue %s[0] : !llvm.struct<(i64, !llvm.array<5000000000 x i8>)>",
]


@pytest.mark.parametrize("line", SCREENED_BUT_FINE)
def test_the_screen_leaves_valid_lists_to_mlir(line):
    from pagedir.cli.screen import check_source

    assert check_source(_ops(line)) is None


MOD_BY_MINUS_ONE = """\
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%out: memref<64xindex>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, rock.wave_size = 64} {
      %tid = gpu.thread_id x
      %v = affine.apply affine_map<(d0) -> (d0 mod -1)>(%tid)
      memref.store %v, %out[%tid] : memref<64xindex>
      gpu.return
    }
  }
}
"""


def _affine_mod_kernel(tmp_path: Path) -> Path:
    """A kernel taking a remainder by -1: lower-affine reports it but does not fail."""
    path = tmp_path / "mod-by-minus-one.mlir"
    path.write_text(MOD_BY_MINUS_ONE)
    return path


def test_compile_reports_an_error_that_an_upstream_pass_emits_without_failing(tmp_path):
    path = _affine_mod_kernel(tmp_path)
    output = tmp_path / "out.s"
    output.write_text(OLD)
    result = run_tool("compile", str(path), "--arch", "gfx942", "-o", str(output))
    assert_one_located_error(result, path, "5:12", "modulo by non-positive value is not supported")
    assert output.read_text() == OLD


def test_opt_reports_an_error_that_an_upstream_pass_emits_without_failing(tmp_path):
    path = _affine_mod_kernel(tmp_path)
    result = run_tool("opt", str(path), "--pass-pipeline=builtin.module(lower-affine)")
    assert_one_located_error(result, path, "5:12", "modulo by non-positive value is not supported")


# ----------------------------------------------------------------------------
# Output files: written whole on success, untouched on failure.


def test_opt_leaves_the_output_file_alone_when_the_input_is_bad(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f( {\n")
    output = tmp_path / "out.mlir"
    output.write_text(OLD)
    result = run_tool("opt", str(path), "-o", str(output))
    assert result.returncode == 1
    assert output.read_text() == OLD
    assert set(os.listdir(tmp_path)) == {"bad.mlir", "out.mlir"}  # no temporary file left behind


def test_opt_split_input_file_with_a_failing_chunk_leaves_the_output_file_alone(tmp_path):
    path = tmp_path / "chunks.mlir"
    path.write_text("func.func @good() {\n  return\n}\n// -----\nfunc.func @bad( {\n")
    output = tmp_path / "out.mlir"
    output.write_text(OLD)
    result = run_tool("opt", str(path), "--split-input-file", "-o", str(output))
    assert result.returncode == 1
    assert b"chunks.mlir:5:16: error: expected non-function type" in result.stderr
    assert output.read_text() == OLD


def test_opt_writes_the_output_file_on_success(tmp_path):
    path = tmp_path / "good.mlir"
    path.write_text("func.func @good() {\n  return\n}\n")
    output = tmp_path / "out.mlir"
    output.write_text(OLD)
    os.chmod(output, 0o640)
    assert run_tool("opt", str(path), "-o", str(output)).returncode == 0
    assert "func.func @good()" in output.read_text()
    assert os.stat(output).st_mode & 0o777 == 0o640  # the replaced file keeps its permissions


def test_compile_leaves_the_output_file_alone_when_the_report_cannot_be_written(tmp_path):
    output = tmp_path / "out.s"
    output.write_text(OLD)
    result = run_tool("compile", str(KERNEL), "--arch", "gfx942", "-o", str(output), f"--report={tmp_path}/no/dir.json")
    assert result.returncode == 1
    assert b"could not write" in result.stderr and b"no/dir.json" in result.stderr
    assert output.read_text() == OLD


@pytest.mark.parametrize("full", ["-o", "--plan", "--report", "--dump-dir"])
def test_compile_changes_no_regular_output_when_one_output_cannot_be_written(full, tmp_path):
    """One output on /dev/full (a dump: through a symlink): exit code 1 and every regular file as it was."""
    paths = {"-o": tmp_path / "out.s", "--plan": tmp_path / "plan.json", "--report": tmp_path / "report.json"}
    for path in paths.values():
        path.write_text(OLD)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    first_dump = dumps / f"{KERNEL.stem}.00-input.mlir"
    if full == "--dump-dir":
        first_dump.symlink_to("/dev/full")
    else:
        first_dump.write_text(OLD)
        paths[full] = Path("/dev/full")
    result = run_tool("compile", str(KERNEL), "--arch", "gfx942", "--no-cache", "-o", str(paths["-o"]),
                      f"--plan={paths['--plan']}", f"--report={paths['--report']}", "--dump-dir", str(dumps))
    assert result.returncode == 1, result.stderr
    assert "No space left on device" in result.stderr.decode()
    for path in [*paths.values(), first_dump]:
        if path.resolve() != Path("/dev/full"):
            assert path.read_text() == OLD, path
    assert os.listdir(dumps) == [first_dump.name]  # no other stage written, no temporary file left
    assert sorted(os.listdir(tmp_path)) == sorted(["dumps", "out.s", "plan.json", "report.json"])


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("gen", ["attention", "-o"]),
        ("opt", [str(KERNEL), "-o"]),
        ("compile", [str(KERNEL), "--arch", "gfx942", "-o"]),
        ("run", [str(KERNEL), "--entry", "tiled", "--outputs"]),
    ],
)
def test_an_output_on_a_full_device_is_an_error(tool, args):
    result = run_tool(tool, *args, "/dev/full")
    assert result.returncode == 1, result.stderr
    assert re.fullmatch(r"pagedir-\w+: error: could not write (outputs )?'/dev/full': No space left on device\n",
                        result.stderr.decode()), result.stderr


@pytest.mark.parametrize("emit", ["llvm-dialect", "llvm-ir", "obj"])
def test_compile_writes_the_report_for_every_emit_kind(emit, tmp_path):
    report, output = tmp_path / "report.json", tmp_path / "out"
    result = run_tool("compile", str(KERNEL), "--arch", "gfx942", f"--emit={emit}", "-o", str(output), f"--report={report}")
    assert result.returncode == 0, result.stderr
    assert [kernel["name"] for kernel in json.loads(report.read_text())["kernels"]] == ["tiled"]
    plain = tmp_path / "plain"
    assert run_tool("compile", str(KERNEL), "--arch", "gfx942", f"--emit={emit}", "-o", str(plain)).returncode == 0
    assert output.read_bytes() == plain.read_bytes()  # the report changes nothing in the output


def test_compile_prints_the_report_table_for_the_llvm_dialect(tmp_path):
    result = run_tool("compile", str(KERNEL), "--arch", "gfx942", "--emit=llvm-dialect", "-o", str(tmp_path / "out"),
                      "--report")
    assert result.returncode == 0, result.stderr
    assert "kernel tiled (gfx942)" in result.stderr.decode()


def test_compile_refuses_a_dump_dir_that_is_not_a_directory(tmp_path):
    output = tmp_path / "out.s"
    output.write_text(OLD)
    result = run_tool("compile", str(KERNEL), "--arch", "gfx942", "-o", str(output), "--dump-dir", os.devnull)
    assert result.returncode == 1, result.stderr
    assert result.stderr.decode().strip() == f"pagedir-compile: error: --dump-dir '{os.devnull}' is not a directory"
    assert output.read_text() == OLD


@pytest.mark.parametrize("tool, flags", [
    ("compile", ["--arch", "gfx942", "-o", "{other}", "--plan={target}/"]),
    ("compile", ["--arch", "gfx942", "-o", "{other}", "--report={target}/"]),
    ("compile", ["--arch", "gfx942", "-o", "{target}/"]),
    ("opt", ["-o", "{target}/"]),
], ids=["compile-plan", "compile-report", "compile-output", "opt-output"])
def test_a_path_ending_in_a_slash_names_a_directory_not_the_file(tool, flags, tmp_path):
    # 'plan.json/' is a directory's name: writing the file plan.json instead (or over it) is not what was asked.
    target, other = tmp_path / "plan.json", tmp_path / "out.s"
    target.write_text(OLD)
    other.write_text(OLD)
    result = run_tool(tool, str(KERNEL), *(f.format(target=target, other=other) for f in flags))
    assert result.returncode == 1, result.stderr
    assert f"could not write '{target}/': a path ending in '/' names a directory, not a file" in result.stderr.decode()
    assert target.read_text() == OLD and other.read_text() == OLD


def test_gen_refuses_an_output_ending_in_a_slash(tmp_path):
    result = run_tool("gen", "attention", "--batch", "1", "-o", f"{tmp_path}/k.mlir/")
    assert result.returncode == 1, result.stderr
    assert b"names a directory, not a file" in result.stderr
    assert not (tmp_path / "k.mlir").exists()


# ----------------------------------------------------------------------------
# stdout that cannot be written.


def _close_stdout() -> None:
    os.close(1)


@pytest.mark.parametrize("tool", ["opt", "compile"])
def test_a_closed_stdout_is_an_error(tool):
    args = [str(KERNEL)] + (["--arch", "gfx942"] if tool == "compile" else [])
    result = run_tool(tool, *args, stdout=subprocess.DEVNULL, preexec_fn=_close_stdout)
    assert result.returncode == 1, result.stderr
    assert re.fullmatch(r"(pagedir-opt: |pagedir-compile: )?error: could not write to stdout: it is closed", result.stderr.decode().strip())


@pytest.mark.parametrize("tool", ["opt", "compile"])
def test_a_closed_stdin_is_an_error(tool):
    args = ["-"] + (["--arch", "gfx942"] if tool == "compile" else [])
    result = run_tool(tool, *args, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert result.returncode == 1, result.stderr
    assert re.fullmatch(r"(pagedir-opt: |pagedir-compile: )?error: could not read stdin: it is closed", result.stderr.decode().strip())


@pytest.mark.parametrize("tool", ["opt", "compile"])
def test_a_reader_that_went_away_is_an_error(tool):
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `pagedir-opt x.mlir | head -c 3` once head has exited
    args = [str(KERNEL)] + (["--arch", "gfx942"] if tool == "compile" else [])
    try:
        result = run_tool(tool, *args, stdout=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == 1, result.stderr
    err = result.stderr.decode()
    assert "error: the output was closed before all of it was written (broken pipe)" in err
    assert "Traceback" not in err and "Exception ignored" not in err


# ----------------------------------------------------------------------------
# The safety net for crashes the screen does not know.


@pytest.mark.parametrize("signal_name", ["SIGABRT", "SIGSEGV"])
def test_a_crash_in_the_work_is_one_error_line_naming_the_position(signal_name):
    code = (
        "import os, signal, sys\n"
        "from pagedir.cli import crash_guard\n"
        "def work():\n"
        "    crash_guard.note_position('in.mlir:12:1', 'parsing')\n"
        f"    os.kill(os.getpid(), signal.{signal_name})\n"
        "sys.exit(crash_guard.run_guarded('pagedir-opt', work))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 1
    assert result.stderr == f"in.mlir:12:1: error: the MLIR library crashed ({signal_name}) while parsing this input\n"


@pytest.mark.parametrize("tool", ["opt", "compile", "run"])
def test_every_tool_reports_a_crash_while_parsing_at_the_input(tool, tmp_path):
    """A crash the screen does not know (here: the screen itself aborts) is one error line, exit code 1."""
    path = tmp_path / "in.mlir"
    path.write_text(_ops("%r = tensor.empty() : tensor<2xf32>"))
    flags = {"opt": [], "compile": ["--arch", "gfx942", "--no-cache"], "run": ["--entry", "f"]}[tool]
    code = (
        "import os, signal, sys\n"
        "import pagedir.cli.opt, pagedir.cli.%s as tool\n"
        "pagedir.cli.opt.check_source = lambda text: os.kill(os.getpid(), signal.SIGABRT)\n"
        "sys.exit(tool.main(sys.argv[1:]))\n" % tool
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", code, str(path), *flags], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 1, f"exit code {result.returncode} (negative: killed by a signal)\n{result.stderr}"
    assert result.stderr == f"{path}:1:1: error: the MLIR library crashed (SIGABRT) while parsing this input\n"


@pytest.mark.parametrize(("tool", "hook", "flags"), [
    ("opt", "pagedir.cli.opt.pipeline_dump", ["--canonicalize", "--dump-pass-pipeline"]),
    ("run", "pagedir.cli.run.run_entry", ["--entry", "tiled"]),
    ("compile", "pagedir.cli.compile._has_gpu_kernels", ["--arch", "gfx942", "--no-cache"]),
])
def test_an_error_mlir_printed_is_exit_code_1(tool, hook, flags):
    """An error emitted where no collector listens is printed by MLIR: the tool must not then exit with 0."""
    module, _, name = hook.rpartition(".")
    code = (
        "import importlib, sys\n"
        "import mlir.ir as ir\n"
        f"import pagedir.cli.{tool} as tool\n"
        f"hooked = importlib.import_module('{module}')\n"
        f"original = hooked.{name}\n"
        "def emitting(*args):\n"
        "    ir.Location.unknown().emit_error('an error no collector saw')\n"
        "    return original(*args)\n"
        f"hooked.{name} = emitting\n"
        "sys.exit(tool.main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", code, str(KERNEL), *flags], capture_output=True, text=True, env=env,
                            timeout=120)
    assert "error: an error no collector saw" in result.stderr
    assert result.returncode == 1, result.stderr


def test_the_work_exit_status_and_output_pass_through_the_guard():
    code = (
        "import sys\n"
        "from pagedir.cli import crash_guard\n"
        "def work():\n"
        "    print('from the child')\n"
        "    return 7\n"
        "sys.exit(crash_guard.run_guarded('pagedir-opt', work))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (7, "from the child\n", "")


def test_compile_refuses_a_report_written_over_its_output(tmp_path) -> None:
    """`-o out.s --report=out.s` would replace the assembly by the report: refused, nothing written."""
    out = tmp_path / "out.s"
    out.write_text(OLD)
    result = run_tool("compile", str(KERNEL), "--arch", "gfx942", "-o", str(out), f"--report={out}", "--no-cache")
    assert result.returncode == 1
    assert result.stderr.decode().strip() == (
        f"pagedir-compile: error: two outputs would be written to '{out}'; name a different file for each"
    )
    assert out.read_text() == OLD


@pytest.mark.parametrize("tool, argv, flag", [
    ("compile", ["--arch", "gfx942", "-o", "{tmp}/a.s", "-o", "{tmp}/b.s"], "-o"),
    ("compile", ["--arch", "gfx942", "-o", "{tmp}/a.s", "--plan={tmp}/first.json", "--plan={tmp}/second.json"], "--plan"),
    ("compile", ["--arch", "gfx942", "-o", "{tmp}/a.s", "--pl={tmp}/first.json", "--plan={tmp}/second.json"], "--plan"),
    ("gen", ["attention", "-o", "{tmp}/a.mlir", "-o", "{tmp}/b.mlir"], "-o"),
    ("run", ["--entry", "tiled", "--outputs", "{tmp}/a.npz", "--outputs={tmp}/b.npz"], "--outputs"),
])
def test_a_file_option_given_twice_is_refused(tmp_path, tool, argv, flag) -> None:
    """argparse keeps the last of `--plan=x --plan=y` and never writes x, without a word; as in mlir-opt, it is
    an error, and nothing is written. (Other options keep argparse's rule: the last one counts.)"""
    args = [a.format(tmp=tmp_path) for a in argv]
    if tool != "gen":
        args.insert(0, str(KERNEL))
    result = run_tool(tool, *args)
    assert result.returncode == 1, result.stderr
    assert f"error: {flag} was given twice" in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("tool, flag", [("compile", "--plan="), ("compile", "--report="), ("run", "--outputs=")])
def test_an_output_naming_the_input_file_is_refused(tmp_path, tool, flag) -> None:
    """`--plan=kernel.mlir` would replace the user's kernel by the plan: refused before any work, the input intact."""
    kernel = tmp_path / "kernel.mlir"
    kernel.write_bytes(KERNEL.read_bytes())
    extra = ["--arch", "gfx942", "-o", str(tmp_path / "out.s")] if tool == "compile" else ["--entry", "tiled"]
    result = run_tool(tool, str(kernel), *extra, f"{flag}{kernel}")
    assert result.returncode == 1, result.stderr
    assert f"{flag.rstrip('=')} names the input file '{kernel}': it would be overwritten" in result.stderr.decode()
    assert kernel.read_bytes() == KERNEL.read_bytes()
    assert not (tmp_path / "out.s").exists()


def test_run_outputs_naming_its_inputs_archive_is_refused(tmp_path) -> None:
    inputs = tmp_path / "in.npz"
    inputs.write_bytes(b"the user's arrays")
    result = run_tool("run", str(KERNEL), "--entry", "tiled", "--inputs", str(inputs), "--outputs", str(inputs))
    assert result.returncode == 1
    assert "--outputs names the input file" in result.stderr.decode()
    assert inputs.read_bytes() == b"the user's arrays"
