"""benchmarks/fuzz.py's classification rules, and a seeded sample of its round-2 mutations run in-process.

The rules: an ``error:`` printed with exit code 0 is a bad run; a ``--check`` report
whose lowered kernel fails where the function as written passed is "mis-lowered"; a
linalg payload whose lowered kernel fails against it is "mis-raised" only where the
payload's own result is finite (a NaN result makes the payload, not the raise, the
cause). The sample: block-table / varlen view edits through pagedir-opt, payload edits
through rock-raise-attention, and one --inputs archive of each npz edit through
pagedir-run: each ends with exit code 0 or 1 and, on 1, an ``error:`` line, no
traceback, internal error or Python exception name, the output file left alone.
``make fuzz`` runs the whole sweep in subprocesses.
"""

from __future__ import annotations

import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks import fuzz  # noqa: E402
from pagedir.cli import opt, run  # noqa: E402
from test_fuzz_gen_run import assert_clean  # noqa: E402 (the fuzz sample's rule for a clean run)

SEED = 20261127
KERNELS = [fuzz.R2_GEN_ARGVS[2], fuzz.R2_GEN_ARGVS[6], fuzz.R2_GEN_ARGVS[13]]  # blocks hnd dynamic, csr varlen, variants
PAYLOAD = fuzz.LINALG_GEN_ARGVS[0]
PAYLOAD_CASES_PER_EDIT = 2


def generated(argv: list[str]) -> bytes:
    [(_, text)] = fuzz.generate([argv])
    return text


def lowered_fail(function: str = "paged_attention") -> str:
    return (f"@{function}: FAIL (levels L0 -> L6, seed 0)\n"
            "  {written}\n"
            "  L6 after rock-kernel-pipeline: max abs error 0.424 > abs tolerance 0.02 (max rel error 13, not checked): FAIL\n"
            "    argument 3 (memref<1x2x1x16xf16>): max abs error 0.424 > abs tolerance 0.02\n")


def test_an_error_printed_with_exit_code_0_is_a_bad_run() -> None:
    assert fuzz.classify(0, "", "in.mlir:3:5: error: invalid options for 'inline'\n", False) == "error-exit-0"
    assert fuzz.classify(0, "", "pagedir-opt: error: no such pass\n", False) == "error-exit-0"
    assert fuzz.classify(0, "", "in.mlir:3:5: warning: the cache is off\n", False) == "ok"
    assert fuzz.classify(1, "", "x/memory.py:142: RuntimeWarning: invalid value\nerror: bad\n", False) == "leaked-warning"
    assert {"error-exit-0", "mis-raised", "mis-lowered"} <= set(fuzz.BAD)


def test_a_lowered_kernel_failing_where_the_kernel_as_written_passes_is_mis_lowered(tmp_path) -> None:
    case = fuzz.Case("k", "pagedir-run", ["--check", "INPUT"], b"", None)
    written = "L0 as written: max abs error 0.000171 <= abs tolerance 0.02 (max rel error 0.0004, not checked): PASS"
    assert fuzz.wrong_result(case, lowered_fail().format(written=written), tmp_path, dict(os.environ), 60) == "mis-lowered"
    failed = written.replace("<=", ">").replace("PASS", "FAIL")  # the reference itself is not met: a bad input
    assert fuzz.wrong_result(case, lowered_fail().format(written=failed), tmp_path, dict(os.environ), 60) is None


@pytest.mark.parametrize("nan_payload", [False, True], ids=["finite payload", "NaN payload"])
def test_a_payload_is_mis_raised_only_where_its_own_result_is_finite(nan_payload, tmp_path) -> None:
    payload = generated(PAYLOAD)
    if nan_payload:  # every accumulator starts at NaN: the payload's result is NaN everywhere
        payload = payload.replace(b"%zero = arith.constant 0.000000e+00 : f32", b"%zero = arith.constant 0x7FC00000 : f32")
    (tmp_path / "input.mlir").write_bytes(payload)
    case = fuzz.Case("p", "pagedir-run", ["--check", "INPUT"], payload, None, {"payload": True, "seed": 0})
    report = lowered_fail("attention").format(written=fuzz.PAYLOAD_REFERENCE.strip())
    env = {**os.environ, "PYTHONPATH": str(fuzz.SRC)}
    assert fuzz.wrong_result(case, report, tmp_path, env, 60) == (None if nan_payload else "mis-raised")


def test_a_plan_or_report_asked_for_is_a_promised_file(tmp_path) -> None:
    argv = ["in.mlir", f"--plan={tmp_path}/p.json", "--report", f"--report={tmp_path}/r.json", "--plan", f"{tmp_path}/q.json",
            "--plan=-", f"--report={tmp_path}/"]
    assert fuzz.promised_files(argv, tmp_path) == [tmp_path / "p.json", tmp_path / "r.json", tmp_path / "q.json"]


def view_cases() -> list[tuple[str, bytes]]:
    """Each view edit on each kernel."""
    rng = random.Random(SEED)
    kernels = [generated(argv) for argv in KERNELS]
    return [(f"views-{name}-{index}", fuzz.view_edit(rng, kernel, kind)[0])
            for kind, name in enumerate(fuzz.VIEW_EDITS) for index, kernel in enumerate(kernels)]


def payload_cases() -> list[tuple[str, bytes]]:
    """Each payload edit, twice."""
    rng = random.Random(SEED + 1)
    payload = generated(PAYLOAD)
    return [(f"payloads-{name}-{index}", fuzz.payload_edit(rng, payload, kind)[0])
            for kind, name in enumerate(fuzz.PAYLOAD_EDITS) for index in range(PAYLOAD_CASES_PER_EDIT)]


def npz_cases() -> list[tuple[str, bytes, bytes, str]]:
    rng = random.Random(SEED + 2)
    kernel = generated(fuzz.R2_GEN_ARGVS[1])  # a static block-table kernel: every argument can be given
    return [(kind, kernel, *fuzz.npz_case(rng, kernel, kind)[::2]) for kind in fuzz.NPZ_MUTATIONS]


@pytest.mark.parametrize("name, data", view_cases() + payload_cases(), ids=[c[0] for c in view_cases() + payload_cases()])
def test_mutated_views_and_payloads_through_pagedir_opt(name, data, tmp_path, capsys) -> None:
    source, output = tmp_path / "in.mlir", tmp_path / "out.mlir"
    source.write_bytes(data)
    output.write_bytes(fuzz.SENTINEL)
    flags = ["--rock-raise-attention"] if name.startswith("payloads") else ["--rock-verify"]
    status = opt.main([str(source), *flags, "-o", str(output)])
    assert_clean(status, capsys.readouterr().err, output)


@pytest.mark.parametrize("name, kernel, archive, entry", npz_cases(), ids=[c[0] for c in npz_cases()])
def test_mutated_npz_inputs_through_pagedir_run(name, kernel, archive, entry, tmp_path, capsys) -> None:
    source, inputs, output = tmp_path / "in.mlir", tmp_path / "in.npz", tmp_path / "out.npz"
    source.write_bytes(kernel)
    inputs.write_bytes(archive)
    output.write_bytes(fuzz.SENTINEL)
    status = run.main([str(source), "--entry", entry, "--inputs", str(inputs), "--outputs", str(output)])
    assert_clean(status, capsys.readouterr().err, output)
    assert inputs.read_bytes() == archive
