"""Usage errors are user errors: every tool exits with code 1 and one line naming the problem, never
argparse's code 2 (reserved for a bug in pagedir) and never a traceback."""

from __future__ import annotations

import pytest

from pagedir.cli import compile as compile_cli
from pagedir.cli import gen, opt, run

CASES = [
    (gen.main, ["bogus"], "pagedir-gen: error: argument kind: invalid choice: 'bogus'"),
    (gen.main, ["attention", "--batch", "x"], "pagedir-gen: error: argument --batch: invalid int value: 'x'"),
    (gen.main, ["attention", "--dtype", "f64"], "pagedir-gen: error: argument --dtype: invalid choice: 'f64'"),
    (gen.main, ["attention", "-o", "/nonexistent/dir/x.mlir"],
     "pagedir-gen: error: could not write '/nonexistent/dir/x.mlir': No such file or directory"),
    (compile_cli.main, ["--emit=bogus"], "error: argument --emit: invalid choice: 'bogus'"),
    (compile_cli.main, ["-O", "7"], "error: argument -O: invalid choice: 7"),
    (opt.main, ["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (run.main, ["--seed", "x"], "pagedir-run: error: argument --seed: invalid int value: 'x'"),
    # An empty file name is refused before any work, not taken as the flag left out.
    (compile_cli.main, ["--plan=", "in.mlir"], "pagedir-compile: error: --plan was given an empty name"),
    (compile_cli.main, ["--report=", "in.mlir"], "pagedir-compile: error: --report was given an empty name"),
    (compile_cli.main, ["--dump-dir=", "in.mlir"], "pagedir-compile: error: --dump-dir was given an empty name"),
    (compile_cli.main, ["--cache-dir=", "in.mlir"], "pagedir-compile: error: --cache-dir was given an empty name"),
    (compile_cli.main, ["-o", "", "in.mlir"], "pagedir-compile: error: -o was given an empty name"),
    (opt.main, ["-o", "", "in.mlir"], "pagedir-opt: error: -o was given an empty name"),
    (gen.main, ["attention", "-o", ""], "pagedir-gen: error: -o was given an empty name"),
    (run.main, ["--outputs=", "--entry", "f", "in.mlir"], "pagedir-run: error: --outputs was given an empty name"),
    (run.main, ["--inputs=", "--entry", "f", "in.mlir"], "pagedir-run: error: --inputs was given an empty name"),
]


@pytest.mark.parametrize("main, argv, message", CASES, ids=[" ".join(c[1]) for c in CASES])
def test_usage_error_is_exit_code_1(main, argv, message, capsys) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("main", [gen.main, compile_cli.main, opt.main, run.main])
def test_help_is_exit_code_0(main, capsys) -> None:
    assert main(["--help"]) == 0
    assert "usage:" in capsys.readouterr().out
