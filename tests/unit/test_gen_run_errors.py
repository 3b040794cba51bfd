"""pagedir-gen and pagedir-run on bad input, as a user runs them (subprocesses): exit code 1, one
line naming the value and the limit, no traceback; a failing run keeps the output file's bytes;
a reader closing the pipe early is an error line, not a traceback."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pagedir

SRC = Path(pagedir.__file__).resolve().parents[1]
KEEP = b"// the user's own file\n"


def tool(module: str, *argv: str, stdin: bytes | None = None, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("PAGEDIR_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", f"pagedir.cli.{module}", *argv], input=stdin, capture_output=True,
                          env=env, timeout=120, **kwargs)


def one_error_line(done: subprocess.CompletedProcess, prefix: str) -> str:
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix) or ": error: " in lines[0], err
    return lines[0]


GEN_CASES = [
    (["--scale", "nan"], "argument --scale: nan is not a finite positive f32 value"),
    (["--scale", "inf"], "argument --scale: inf is not a finite positive f32 value"),
    (["--scale", "1e400"], "argument --scale: 1e400 is not a finite positive f32 value"),
    (["--scale", "0"], "argument --scale: 0 is not a finite positive f32 value"),
    (["--name", "1abc"], "--name '1abc' is not a valid symbol name"),
    (["--name", "a b"], "--name 'a b' is not a valid symbol name"),
    (["--batch", "1099511627776"], "--batch 1099511627776 exceeds the 32-bit index limit (2147483647)"),
    (["--head-dim", str(2**40)], f"--head-dim {2**40} exceeds the 32-bit index limit (2147483647)"),
    (["--batch", "65536", "--seq-len-k", "65536", "--page-size", "16"],
     "a kernel tensor is limited to 2147483647 elements and 4294967295 bytes"),
    (["--arch", "gfx9999"], "--arch: unknown chip 'gfx9999'"),
    (["--arch", 'gfx942:"'], "holds a quote, a backslash or an unprintable character"),
]


@pytest.mark.parametrize("argv, message", GEN_CASES, ids=[" ".join(c[0]) for c in GEN_CASES])
def test_gen_attention_refuses_with_the_value_and_limit(argv, message) -> None:
    line = one_error_line(tool("gen", "attention", *argv), "pagedir-gen: error: ")
    assert message in line


@pytest.mark.parametrize("argv, message", [
    (["--block-size", "4096"], "--block-size 4096 exceeds the hardware limit of 1024 threads"),
    (["--tile-tokens", "100000"], "bytes of LDS; gfx942 has 65536 bytes per workgroup"),
    (["--batch", str(2**32)], f"--batch {2**32} exceeds the 32-bit index limit"),
])
def test_gen_copy_kv_refuses_with_the_value_and_limit(argv, message) -> None:
    assert message in one_error_line(tool("gen", "copy-kv", *argv), "pagedir-gen: error: ")


SIMPLE = """func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf32>
  memref.store %x, %b[%c0] : memref<4xf32>
  return
}
"""


@pytest.fixture
def simple(tmp_path) -> Path:
    path = tmp_path / "simple.mlir"
    path.write_text(SIMPLE)
    return path


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_run_seed_outside_numpys_range(simple, seed) -> None:
    line = one_error_line(tool("run", str(simple), "--entry", "f", "--seed", seed), "pagedir-run: error: ")
    assert "argument --seed" in line


def test_run_object_array_inputs(simple, tmp_path) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.array([object(), 1, 2, 3], dtype=object), arg1=np.zeros(4, np.float32))
    line = one_error_line(tool("run", str(simple), "--entry", "f", "--inputs", str(inputs)), "pagedir-run: error: ")
    assert "arg0 is an object array" in line


def test_run_string_array_inputs(simple, tmp_path) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.array(list("abcd")), arg1=np.zeros(4, np.float32))
    line = one_error_line(tool("run", str(simple), "--entry", "f", "--inputs", str(inputs)), "pagedir-run: error: ")
    assert line.endswith("arg0 (%a) has dtype <U1; the argument is memref<4xf32>, which takes float32")


@pytest.mark.parametrize("check", [True, False], ids=["check", "plain"])
def test_run_unknown_rock_check_generator(tmp_path, check) -> None:
    path = tmp_path / "bogus.mlir"
    path.write_text('func.func @f(%a: memref<4xf32>) attributes {rock.check = "bogus"} {\n  return\n}\n')
    argv = ["--check", str(path)] if check else [str(path), "--entry", "f"]
    line = one_error_line(tool("run", *argv), "")
    assert line.startswith(f"{path}:1:1: error: @f has rock.check = \"bogus\": no such case generator (known: copy_kv, linalg_attention)")


@pytest.mark.parametrize("body, message", [
    ("""  %c5 = arith.constant 5 : index
  %d = memref.dim %a, %c5 : memref<4xf32>""", "4:8: error: memref.dim dimension 5 is out of bounds of memref<4xf32>"),
    ("""  %c7 = arith.constant 7 : index
  %v = vector.load %a[%c0] : memref<4xf32>, vector<4xf32>
  %x = vector.extract %v[%c7] : f32 from vector<4xf32>""",
     "5:8: error: vector.extract position 7 is out of bounds of dimension 0 (size 4)")
], ids=["memref.dim", "vector.extract"])
def test_run_index_constant_past_the_bounds_is_located(tmp_path, body, message) -> None:
    path = tmp_path / "bounds.mlir"
    path.write_text(f"func.func @f(%a: memref<4xf32>) {{\n  %c0 = arith.constant 0 : index\n{body}\n  return\n}}\n")
    line = one_error_line(tool("run", str(path), "--entry", "f"), "")
    assert line.startswith(f"{path}:") and message in line


def test_run_petabytes_refused_before_allocating(tmp_path) -> None:
    path = tmp_path / "huge.mlir"
    path.write_text("func.func @f(%a: memref<1099511627776x1024xf32>) {\n  return\n}\n")
    line = one_error_line(tool("run", str(path), "--entry", "f"), "")
    assert line == (f"{path}:1:1: error: the arguments of @f: 4503599627370496 bytes exceed the interpreter's "
                    "memory limit of 268435456 bytes")


def test_run_huge_lds_buffer_refused(tmp_path) -> None:
    path = tmp_path / "lds.mlir"
    path.write_text("func.func @f(%a: memref<4xf32>) {\n"
                    "  %l = memref.alloca() : memref<1073741824xf32, #gpu.address_space<private>>\n  return\n}\n")
    line = one_error_line(tool("run", str(path), "--entry", "f"), "")
    assert f"{path}:2:8: error: private buffer memref.alloca of 4294967296 bytes" in line
    assert "exceed the interpreter's memory limit of 268435456 bytes" in line


@pytest.mark.parametrize("module, argv", [
    ("run", ["--check", "-"]),
    ("gen", ["attention", "--batch", "64", "--seq-len-k", "4096"]),
])
def test_closed_pipe_is_one_error_line(module, argv, tmp_path) -> None:
    """`tool | head -c 3`: the reader is gone before the output is written."""
    stdin = subprocess.run([sys.executable, "-m", "pagedir.cli.gen", "copy-kv"], capture_output=True,
                           env={**os.environ, "PYTHONPATH": str(SRC)}).stdout if module == "run" else None
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    process = subprocess.Popen([sys.executable, "-m", f"pagedir.cli.{module}", *argv], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    process.stdout.close()
    _, err = process.communicate(stdin, timeout=120)
    assert process.returncode == 1, err
    assert err.decode().strip() == f"pagedir-{module}: error: the output was closed before all of it was written (broken pipe)"


def disk_full_after(nbytes: int):
    """A child whose files cannot grow past ``nbytes`` (a full disk or quota): writes fail with EFBIG."""
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return limit


def test_gen_failed_write_keeps_the_output_file(tmp_path) -> None:
    out = tmp_path / "kernel.mlir"
    out.write_bytes(KEEP)
    done = tool("gen", "attention", "-o", str(out), preexec_fn=disk_full_after(100))
    assert "could not write" in one_error_line(done, "pagedir-gen: error: ")
    assert out.read_bytes() == KEEP
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


def test_gen_refused_options_keep_the_output_file(tmp_path) -> None:
    out = tmp_path / "kernel.mlir"
    out.write_bytes(KEEP)
    one_error_line(tool("gen", "attention", "--scale", "nan", "-o", str(out)), "pagedir-gen: error: ")
    assert out.read_bytes() == KEEP


def test_run_failed_write_keeps_the_outputs_file(simple, tmp_path) -> None:
    out = tmp_path / "out.npz"
    out.write_bytes(KEEP)
    done = tool("run", str(simple), "--entry", "f", "--outputs", str(out), preexec_fn=disk_full_after(100))
    assert "could not write outputs" in done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in done.stderr.decode()
    assert out.read_bytes() == KEEP


def test_run_failed_run_keeps_the_outputs_file(tmp_path) -> None:
    path = tmp_path / "bounds.mlir"
    path.write_text("func.func @f(%a: memref<4xf32>) {\n  %c9 = arith.constant 9 : index\n"
                    "  %x = memref.load %a[%c9] : memref<4xf32>\n  return\n}\n")
    out = tmp_path / "out.npz"
    out.write_bytes(KEEP)
    one_error_line(tool("run", str(path), "--entry", "f", "--outputs", str(out)), "")
    assert out.read_bytes() == KEEP


def test_outputs_written_whole_on_success(simple, tmp_path) -> None:
    out = tmp_path / "out.npz"
    out.write_bytes(KEEP)
    out.chmod(0o640)
    done = tool("run", str(simple), "--entry", "f", "--outputs", str(out))
    assert done.returncode == 0, done.stderr
    with np.load(out) as archive:
        assert sorted(archive.files) == ["arg0", "arg1"]
    assert out.stat().st_mode & 0o777 == 0o640  # the file's permissions are kept


@pytest.mark.parametrize("attributes, message", [
    # rock-verify refuses the launch attributes before anything runs
    ("rock.block_size = -1 : i64, rock.grid_size = 2 : i64",
     "'func.func' op attribute 'rock.block_size' must be an integer in 1 .. 1024, got -1"),
    ("rock.block_size = 2048 : i64, rock.grid_size = 2 : i64",
     "'func.func' op attribute 'rock.block_size' must be an integer in 1 .. 1024, got 2048"),
    ("rock.block_size = 64 : i64, rock.grid_size = 0 : i64",
     "'func.func' op attribute 'rock.grid_size' must be an integer in 1 .. 4294967295, got 0"),
], ids=["negative-block", "huge-block", "no-workgroups"])
def test_run_launch_size_outside_the_hardware(tmp_path, attributes, message) -> None:
    path = tmp_path / "launch.mlir"
    path.write_text(f"func.func @k(%a: memref<4xf32>) attributes {{rock.kernel, {attributes}}} {{\n  return\n}}\n")
    line = one_error_line(tool("run", str(path), "--entry", "k"), "")
    assert line.startswith(f"{path}:1:1: error: {message}")


def test_run_tile_load_into_a_view_past_the_lds_buffer(tmp_path) -> None:
    """copy-kv with its tile view moved 2**31 bytes into a 512-byte LDS buffer."""
    kernel = tool("gen", "copy-kv", "--batch", "1", "--num-heads-kv", "1", "--seq-len", "16", "--head-dim", "8",
                  "--page-size", "4", "--tile-tokens", "16").stdout.decode()
    assert "%c0 = arith.constant 0 : index" in kernel
    path = tmp_path / "view.mlir"
    path.write_text(kernel.replace("%c0 = arith.constant 0 : index", "%c0 = arith.constant 2147483648 : index", 1))
    line = one_error_line(tool("run", str(path), "--entry", "copy_kv"), "")
    assert "error: rock.blockwise_load_tile accesses byte 2147483648 outside LDS buffer rock.alloc of 256 bytes" in line
