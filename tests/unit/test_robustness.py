"""Mutated inputs (truncated, bytes flipped, tokens swapped; fixed seed) never crash pagedir-opt.

Every run must end with exit code 0 (still valid) or 1 (a reported user error),
and nothing it prints may be a Python traceback or an internal error.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from pagedir.cli import opt
from pagedir.passes import PASSES

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [
    ROOT / "examples" / "paged_decode.mlir",
    ROOT / "tests" / "lit" / "dialect" / "rock" / "ops.mlir",
    ROOT / "tests" / "lit" / "dialect" / "rock" / "invalid.mlir",
    ROOT / "tests" / "lit" / "cli" / "verify-diagnostics.mlir",
]
FLAG_SETS = [
    [],
    ["--rock-verify"],
    ["--split-input-file"],
    ["--split-input-file", "--verify-diagnostics"],
    ["--mlir-print-op-generic", "--mlir-print-debuginfo"],
    ["--pass-pipeline=builtin.module(rock-verify,func.func(canonicalize),cse)"],
]
CASES_PER_KIND = 120
TOKEN = re.compile(rb"%?[\w.]+|\S")


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def swap_tokens(rng: random.Random, data: bytes) -> bytes:
    spans = [m.span() for m in TOKEN.finditer(data)]
    (a0, a1), (b0, b1) = sorted(rng.sample(spans, 2))
    return data[:a0] + data[b0:b1] + data[a1:b0] + data[a0:a1] + data[b1:]


def mutants() -> list[tuple[str, bytes, list[str]]]:
    rng = random.Random(20240611)
    cases = []
    for kind in (truncate, flip_bytes, swap_tokens):
        for index in range(CASES_PER_KIND):
            seed_file = rng.choice(SEEDS)
            data = kind(rng, seed_file.read_bytes())
            cases.append((f"{kind.__name__}-{index}-{seed_file.stem}", data, rng.choice(FLAG_SETS)))
    return cases


def pass_mutants() -> list[tuple[str, bytes, list[str]]]:
    """Mutants of each pass's lit tests, run through that pass (its argument is the file name)."""
    rng = random.Random(20240612)
    files = [
        path
        for path in sorted((ROOT / "tests" / "lit" / "passes").glob("rock-*.mlir"))
        if path.stem.removesuffix("-invalid") in PASSES
    ]
    cases = []
    for index in range(PASS_CASES if files else 0):
        seed_file = rng.choice(files)
        argument = seed_file.stem.removesuffix("-invalid")
        kind = rng.choice((truncate, flip_bytes, swap_tokens))
        flags = ["--split-input-file", f"--{argument}"]
        cases.append((f"{argument}-{kind.__name__}-{index}", kind(rng, seed_file.read_bytes()), flags))
    return cases


PASS_CASES = 120
CASES = mutants() + pass_mutants()


def test_there_are_several_hundred_distinct_mutants():
    assert len(CASES) >= 3 * CASES_PER_KIND
    assert len({data for _, data, _ in CASES}) > 0.9 * len(CASES)


@pytest.mark.parametrize(("name", "data", "flags"), CASES, ids=[c[0] for c in CASES])
def test_mutant_gives_a_diagnostic_or_output_never_a_crash(name, data, flags, tmp_path, capsys):
    path = tmp_path / f"{name}.mlir"
    path.write_bytes(data)
    status = opt.main([str(path), *flags])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert "internal error" not in captured.err
    assert status in (0, 1), captured.err
    if status == 1:
        assert "error:" in captured.err
