"""A seeded sample of benchmarks/fuzz.py's mutations run in-process through pagedir-gen and pagedir-run.

Mutated argument vectors of both tools and mutated inputs of pagedir-run (numbers,
attributes, types, index arrays, affine maps, segment sizes, tokens, bytes) must end
with exit code 0 or 1 and, on 1, an ``error:`` line with no traceback, internal
error or Python exception name; a failing run leaves its output file's bytes alone.
``make fuzz`` runs the full sweep (3000 runs in subprocesses). Deep nesting is left
to the sweep: MLIR's parser recursion is not in-process safe.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks import fuzz  # noqa: E402
from pagedir.cli import gen, run  # noqa: E402

SEED = 20250101
PER_FLAG = 3  # garbage values tried on each option of pagedir-gen
PER_MUTATION = 5  # mutated inputs of pagedir-run per mutation class
RUN_ARGV_CASES = 15
IN_PROCESS_MUTATIONS = [m for m in fuzz.TEXT_MUTATIONS if m is not fuzz.deep_nesting]
RUN_ARGV = ["INPUT", "--entry", "f", "--outputs", "OUTPUT", "--seed", "1"]


def gen_cases() -> list[list[str]]:
    """Each option of each generator with seeded garbage values, then seeded argv mutations."""
    rng = random.Random(SEED)
    cases = []
    for argv in fuzz.GEN_ARGVS:
        for i, flag in enumerate(argv):
            if flag.startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                for value in rng.sample(fuzz.GARBAGE, PER_FLAG):
                    cases.append(argv[: i + 1] + [value] + argv[i + 2:])
    return cases + [fuzz.mutate_argv(rng, rng.choice(fuzz.GEN_ARGVS)) for _ in range(20)]


def run_cases() -> list[tuple[str, bytes, list[str]]]:
    rng = random.Random(SEED + 1)
    cases = []
    for mutation in IN_PROCESS_MUTATIONS:
        for index in range(PER_MUTATION):
            cases.append((f"{mutation.__name__}-{index}", mutation(rng, fuzz.RUN_SOURCE), RUN_ARGV))
    for index in range(RUN_ARGV_CASES):
        cases.append((f"argv-{index}", fuzz.RUN_SOURCE, fuzz.mutate_argv(rng, RUN_ARGV)))
    return cases


def assert_clean(status: int, err: str, output: Path) -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    assert status in (0, 1), err
    if status == 1:
        assert "error:" in err, err
        assert not fuzz.EXCEPTION_NAME.search(err), err
        assert output.read_bytes() == fuzz.SENTINEL


def test_the_sample_covers_every_mutation_class() -> None:
    names = {name.rsplit("-", 1)[0] for name, _, _ in run_cases()}
    assert names == {m.__name__ for m in IN_PROCESS_MUTATIONS} | {"argv"}


@pytest.mark.parametrize("argv", gen_cases(), ids=[" ".join(argv) for argv in gen_cases()])
def test_mutated_gen_arguments(argv, tmp_path, capsys) -> None:
    output = tmp_path / "out.mlir"
    output.write_bytes(fuzz.SENTINEL)
    status = gen.main([*argv, "-o", str(output)])
    assert_clean(status, capsys.readouterr().err, output)


@pytest.mark.parametrize("name, data, argv", run_cases(), ids=[c[0] for c in run_cases()])
def test_mutated_run_inputs(name, data, argv, tmp_path, capsys) -> None:
    source, output = tmp_path / "in.mlir", tmp_path / "out.npz"
    source.write_bytes(data)
    output.write_bytes(fuzz.SENTINEL)
    status = run.main([str(source) if a == "INPUT" else str(output) if a == "OUTPUT" else a for a in argv])
    assert_clean(status, capsys.readouterr().err, output)
