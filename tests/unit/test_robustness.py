"""Mutated inputs (truncated, bytes flipped, tokens swapped; fixed seed) never crash pagedir-opt.

Every run must end with exit code 0 (still valid) or 1 (a reported user error),
and nothing it prints may be a Python traceback or an internal error. A second
set aims at what used to kill the process or confuse the verifiers: deep
nesting, dense arrays of index, affine maps dividing by zero or a negative
number, wrong operandSegmentSizes and byte garbage. The runs are in-process
(so a crash of MLIR would take pytest down with it: the screen must catch it).
"""

from __future__ import annotations

import os
import random
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.fuzz import TOKEN, flip_bytes, segment_sizes, truncate  # noqa: E402
from pagedir.cli import opt  # noqa: E402
from pagedir.passes import PASSES  # noqa: E402

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


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    opener, inner, closer = rng.choice([(b"[", b"", b"]"), (b"{a = ", b"1", b"}"), (b"memref<", b"f32", b">"), (b"(", b"", b")")])
    depth = rng.choice([300, 3000, 10_000])
    at = rng.randrange(len(data))
    return data[:at] + opener * depth + inner + closer * depth + data[at:]

def index_array(rng: random.Random, data: bytes) -> bytes:
    arrays = [m.span(1) for m in re.finditer(rb"array<\s*(i32|i64)", data)]
    if not arrays:
        at = rng.randrange(len(data))
        return data[:at] + b"array<index: 1>" + data[at:]
    start, end = rng.choice(arrays)
    return data[:start] + rng.choice([b"index", b"!idx"]) + data[end:] + b"\n!idx = index\n"


def bad_affine_map(rng: random.Random, data: bytes) -> bytes:
    divisor = rng.choice([b"0", b"-1", b"-8"])
    divisions = [m.span(1) for m in re.finditer(rb"(?:mod|floordiv|ceildiv) (\d+)", data)]
    if divisions:
        start, end = rng.choice(divisions)
        return data[:start] + divisor + data[end:]
    results = [m.end() for m in re.finditer(rb"affine_map<\([^)]*\) -> \(d0", data)]
    if not results:
        return data + b"\n#bad = affine_map<(d0) -> (d0 mod " + divisor + b")>\n"
    at = rng.choice(results)
    return data[:at] + rng.choice([b" mod ", b" floordiv ", b" ceildiv "]) + divisor + data[at:]


def byte_garbage(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data))
    garbage = bytes(rng.choice([0, 0xFF, 0xC3, 0x80, 0x22, 0x7B, rng.randrange(256)]) for _ in range(rng.randint(1, 16)))
    return data[:at] + garbage + data[at:]


TARGETED_SEEDS = [
    *SEEDS,
    ROOT / "tests" / "lit" / "passes" / "rock-threadwise-lowering.mlir",
    ROOT / "tests" / "lit" / "backend" / "Inputs" / "paged-load-gfx942.mlir",
]
TARGETED_FLAG_SETS = [
    [],
    ["--split-input-file"],
    ["--pass-pipeline=builtin.module(lower-affine,canonicalize)"],
    ["--rock-verify", "--mlir-print-op-generic"],
]
TARGETED_CASES_PER_KIND = 24


def targeted_mutants() -> list[tuple[str, bytes, list[str]]]:
    rng = random.Random(20251123)
    cases = []
    for kind in (deep_nesting, index_array, bad_affine_map, segment_sizes, byte_garbage, truncate):
        for index in range(TARGETED_CASES_PER_KIND):
            seed_file = rng.choice(TARGETED_SEEDS)
            data = kind(rng, seed_file.read_bytes())
            cases.append((f"{kind.__name__}-{index}-{seed_file.stem}", data, rng.choice(TARGETED_FLAG_SETS)))
    return cases


CASES = mutants() + pass_mutants() + targeted_mutants()


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
