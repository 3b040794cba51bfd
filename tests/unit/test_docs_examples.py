"""Every shell and Python example of README.md and docs/*.md runs as written and prints what the text says.

How the Markdown is read (the docs follow it):

* A fenced block tagged ``sh`` is shell commands, run by ``bash -e -o pipefail``: every command must
  succeed. A block tagged ``python`` is a program, run by the test's interpreter.
* An untagged block directly after one of those (nothing but blank lines between) is what that block
  prints, stdout and stderr together. A command block with no such block is only run.
* Any other block is no example: ``mlir`` and ``json`` excerpts (no other tag is allowed), and
  untagged blocks after prose (a synopsis such as ``pagedir-compile IN.mlir [--arch CHIP] ...``).
* ``<!-- docs-test: skip: REASON -->`` on the line before a block's fence leaves it out, with the reason
  in the source; ``SKIPPED`` below counts them, so a new one is a visible change of this file.

How they run: the blocks of one document in order, in a fresh directory of its own (a block may read
what an earlier block of the document wrote), which holds links to the checkout's ``examples/`` and
``tests/`` (the docs name input files relative to the checkout's root); the interpreter's ``bin``
(the virtualenv's tools) first on PATH, the checkout's ``src`` first on PYTHONPATH, the suite's compile
cache (conftest.py), so a compile repeated by another document is a cache hit.

How output is compared: runs of whitespace count as one space and blank lines are dropped; a line
``...`` matches any number of lines (none too) and ``...`` within a line any text; a number written
with a decimal point or an exponent matches within a relative 5 % (or 1e-9 absolute), an integer only
exactly (the tools print counts, which are deterministic).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
# Blocks left out (each with its reason in the Markdown): README's `make demo` / `make test`
# (minutes; the demo's own commands are the next example), serving.md's two launcher
# fragments (torch tensors on a GPU) and compile.md's "From PyTorch" (torch-mlir, an optional extra).
SKIPPED = 4
REL_TOLERANCE = 0.05
ABS_TOLERANCE = 1e-9
SKIP_MARKER = re.compile(r"<!--\s*docs-test:\s*skip:\s*(\S.*?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass
class Block:
    document: str
    line: int  # of the opening fence, 1-based
    kind: str  # "sh", "python" or "output" (untagged); other tags are dropped
    text: str
    skip_reason: str | None = None
    expected: Block | None = None  # the output block of a command block


def all_blocks(document: str) -> list[Block]:
    """Every fenced block of a document in order, command blocks with their expected output block."""
    lines = (ROOT / document).read_text().splitlines()
    found: list[tuple[Block, int]] = []  # (block, line index after its closing fence)
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        assert end < len(lines), f"{document}:{i + 1}: unclosed code block"
        tag = match.group(1)
        marker = SKIP_MARKER.search(lines[i - 1]) if i else None
        block = Block(document, i + 1, {"": "output"}.get(tag, tag), "\n".join(lines[i + 1 : end]) + "\n",
                      marker.group(1) if marker else None)
        if block.kind == "output" and found and found[-1][0].kind in ("sh", "python") \
                and all(not line.strip() for line in lines[found[-1][1] : i]):
            found[-1][0].expected = block
        found.append((block, end + 1))
        i = end + 1
    return [block for block, _ in found]


def blocks_of(document: str) -> list[Block]:
    """The command blocks of a document, in order."""
    return [block for block in all_blocks(document) if block.kind in ("sh", "python")]


# ----------------------------------------------------------------------------
# Comparison

NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
NUMBER_TOKEN = re.compile(rf"(?<![\w.]){NUMBER}(?![\w])")


def _normalise(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def _line_pattern(expected: str) -> tuple[re.Pattern, list[str]]:
    """A regex for one expected line (``...`` any text, each number a group) and its numbers."""
    parts, numbers = [], []
    for k, piece in enumerate(expected.split("...")):
        if k:
            parts.append(".*?")
        last = 0
        for number in NUMBER_TOKEN.finditer(piece):
            parts.append(re.escape(piece[last : number.start()]))
            parts.append(f"({NUMBER})")
            numbers.append(number.group())
            last = number.end()
        parts.append(re.escape(piece[last:]))
    return re.compile("".join(parts)), numbers


def _numbers_agree(expected: str, actual: str) -> bool:
    if not re.search(r"[.eE]", expected):
        return expected.lstrip("+") == actual.lstrip("+")
    return math.isclose(float(expected), float(actual), rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)


def line_matches(expected: str, actual: str) -> bool:
    pattern, numbers = _line_pattern(expected)
    match = pattern.fullmatch(actual)
    return bool(match) and all(_numbers_agree(e, a) for e, a in zip(numbers, match.groups()))


def output_matches(expected_text: str, actual_text: str) -> bool:
    """Whether the printed text is what the docs show (the rules in the module docstring)."""
    expected, actual = _normalise(expected_text), _normalise(actual_text)
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(expected):
                memo[i, j] = j == len(actual)
            elif expected[i] == "...":
                memo[i, j] = any(match(i + 1, k) for k in range(j, len(actual) + 1))
            else:
                memo[i, j] = j < len(actual) and line_matches(expected[i], actual[j]) and match(i + 1, j + 1)
        return memo[i, j]

    return match(0, 0)


# ----------------------------------------------------------------------------
# Running


def run_block(block: Block, workdir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
               PYTHONUNBUFFERED="1")  # stdout and stderr interleaved as a terminal shows them
    if block.kind == "sh":
        argv = ["bash", "-e", "-o", "pipefail", "-c", block.text]
    else:
        script = workdir / f"example_{block.line}.py"
        script.write_text(block.text)
        argv = [sys.executable, script.name]
    return subprocess.run(argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)


def check_document(document: str, workdir: Path) -> list[str]:
    """Runs a document's examples in order; the mismatches, each naming its block."""
    for name in ("examples", "tests"):
        (workdir / name).symlink_to(ROOT / name)
    problems = []
    for block in blocks_of(document):
        if block.skip_reason:
            continue
        start = time.perf_counter()
        result = run_block(block, workdir)
        where = f"{document}:{block.line} ({block.kind}, {time.perf_counter() - start:.1f} s)"
        if result.returncode != 0:
            tail = "\n".join(result.stdout.splitlines()[-40:])  # the error, not a whole printed module
            problems.append(f"{where}: exit code {result.returncode}; it printed (the last 40 lines):\n{tail}")
        elif block.expected and not output_matches(block.expected.text, result.stdout):
            problems.append(f"{where}: prints\n{result.stdout}\ninstead of ({document}:{block.expected.line})\n"
                            f"{block.expected.text}")
    return problems


@pytest.mark.parametrize("document", DOCUMENTS)
def test_examples_print_what_the_docs_show(document, tmp_path):
    problems = check_document(document, tmp_path)
    assert not problems, "\n\n".join(problems)


def test_only_the_counted_blocks_are_left_out():
    skipped = [f"{b.document}:{b.line}: {b.skip_reason}" for d in DOCUMENTS for b in blocks_of(d) if b.skip_reason]
    assert len(skipped) == SKIPPED, "\n".join(skipped)


def test_every_block_is_a_command_an_output_or_an_excerpt():
    # A ```bash or ```console example would escape the run: the docs use these tags only.
    tags = {f"{b.document}:{b.line}: {b.kind}" for d in DOCUMENTS for b in all_blocks(d)
            if b.kind not in ("sh", "python", "output", "mlir", "json")}
    assert not tags


def test_readme_starts_with_the_two_make_commands():
    first = all_blocks("README.md")[0]
    assert first.kind == "sh" and [line.split("#")[0].strip() for line in first.text.splitlines()] == ["make demo", "make test"]


# ----------------------------------------------------------------------------
# The comparison itself


@pytest.mark.parametrize("expected, actual, agree", [
    ("max abs error 0.00024", "max abs error 0.000277", False),  # 15 % off
    ("max abs error 0.000277", "max abs error 0.00028", True),
    ("VGPRs 152", "VGPRs 153", False),  # counts exactly
    ("VGPRs 152", "VGPRs   152", True),
    ("L6 after ...: ... PASS", "L6 after rock-kernel-pipeline (x): max abs error 0.1 <= 0.02: PASS", True),
    ("L6 after ...: ... PASS", "L6 after rock-kernel-pipeline (x): FAIL", False),
    ("a\n...\nd", "a\nb\nc\nd", True),
    ("a\n...\nd", "a\nd", True),
    ("a\nb", "a\nb\nc", False),  # nothing left over
    ("gfx942 2xb32 1e-5", "gfx942 2xb32 1.02e-05", True),
    ("gfx942", "gfx943", False),
])
def test_output_comparison(expected, actual, agree):
    assert output_matches(expected, actual) == agree
