"""Fuzz the four tools with mutated inputs and argument vectors; count every way a run can go wrong.

    python benchmarks/fuzz.py [--count N] [--seed S] [--jobs J] [--timeout T] [--out DIR] [--only TOOL]

Each case is one subprocess run of pagedir-opt, pagedir-compile, pagedir-gen or
pagedir-run on a mutated input (lit tests, the example, generated kernels) or a
mutated argument vector. Every run that takes an output file (``-o``,
``--outputs``) gets one that already holds known bytes. A run is classified as

* ``ok``: exit code 0;
* ``user-error``: exit code 1 with an ``error:`` line (or a failed ``--check``)
  and nothing else wrong;
* ``internal-error``: exit code 2, or a message saying "internal error";
* ``leaked-exception``: exit code 1 with a Python exception's name
  (``ValueError: ...``) in the message: an internal error printed as a user one;
* ``traceback``: a Python traceback in the output;
* ``signal``: killed by a signal (a crash in native code);
* ``timeout``: still running after ``--timeout`` seconds;
* ``bad-exit``: any other exit code, or exit code 1 without an error;
* ``clobbered``: a failing run changed or emptied its output file.

Writes ``fuzz.json`` and ``fuzz.md`` to ``--out`` (default benchmarks/results)
with counts per tool and class, and saves the first reproducers of each bad class
(``fuzz-reproducers/<class>/<case>/``: the input, ``argv.txt``, the output seen).
The cases depend only on ``--seed`` and ``--count``; the exit status is 1 when
any run is in a bad class.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

TOOLS = {"pagedir-opt": "pagedir.cli.opt", "pagedir-compile": "pagedir.cli.compile",
         "pagedir-gen": "pagedir.cli.gen", "pagedir-run": "pagedir.cli.run"}
#: Share of the cases per tool (pagedir-compile and pagedir-run runs take longest).
SHARES = {"pagedir-opt": 0.4, "pagedir-compile": 0.15, "pagedir-gen": 0.2, "pagedir-run": 0.25}
BAD = ("internal-error", "leaked-exception", "traceback", "signal", "timeout", "bad-exit", "clobbered")
SENTINEL = b"// the user's file: a failing run must leave these bytes alone\n"
EXAMPLES_PER_CLASS = 5
EXCEPTION_NAME = re.compile(r"\b(?:[A-Z][a-z]+)+(?:Error|Exception)\b:")


# ----------------------------------------------------------------------------
# Mutations of .mlir text (each takes the rng and bytes, returns bytes)

TOKEN = re.compile(rb"%?[\w.$#]+|\S")
INTEGER = re.compile(rb"(?<![\w.%#@x])-?\d+(?![\w.])")
FLOAT = re.compile(rb"-?\d+\.\d+(?:e[-+]?\d+)?")
ATTRIBUTE = re.compile(rb"\b(\w+) = ([^,}\n]+)")
TYPES = [b"f16", b"bf16", b"f32", b"f64", b"i1", b"i8", b"i32", b"i64", b"index", b"vector<4xf16>",
         b"memref<?xf32>", b"memref<*xf16>", b"tensor<4xf32>", b"none", b"!llvm.ptr", b"complex<f32>"]
TYPE_TOKEN = re.compile(rb"\b(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64|index)\b")
HUGE = [b"0", b"-1", b"-2147483648", b"2147483648", b"4294967296", b"9223372036854775807", b"-9223372036854775808",
        b"18446744073709551616", b"1099511627776", b"99999999999999999999999999", b"1125899906842624"]
NANS = [b"nan", b"inf", b"-inf", b"0x7FC00000", b"1e400", b"-1e400", b"0.0", b"-0.0", b"1e-320", b"0x7FF0000000000000"]
BAD_VALUES = [b'"bogus"', b"unit", b"true", b"-1", b"0", b"[]", b"[1, 2, 3]", b"{}", b"@sym", b"dense<1> : vector<2xi32>",
              b"array<i64: >", b"array<i32: -1, 5>", b"affine_map<(d0) -> (d0)>", b"1.5 : f32", b'"gfx9999"',
              b"4294967296 : i64", b"-1 : i64", b"0 : i32", b"#gpu.address_space<workgroup>", b"i32"]


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def _spans(pattern: re.Pattern, data: bytes) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(data)]


def _replace(rng: random.Random, data: bytes, pattern: re.Pattern, choices: list[bytes], times: int = 1) -> bytes:
    spans = _spans(pattern, data)
    for start, end in sorted(rng.sample(spans, min(times, len(spans))), reverse=True):
        data = data[:start] + rng.choice(choices) + data[end:]
    return data


def delete_tokens(rng: random.Random, data: bytes) -> bytes:
    spans = _spans(TOKEN, data)
    for start, end in sorted(rng.sample(spans, min(rng.randint(1, 3), len(spans))), reverse=True):
        data = data[:start] + data[end:]
    return data


def duplicate_tokens(rng: random.Random, data: bytes) -> bytes:
    spans = _spans(TOKEN, data)
    start, end = rng.choice(spans)
    return data[:end] + b" " + data[start:end] + data[end:]


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([64, 500, 5000, 50000])
    kind = rng.randrange(4)
    if kind == 0:  # nested regions
        body = b"scf.execute_region {\n" * depth + b"}\n" * depth
        return data + b"\nfunc.func @deep() {\n" + body + b"return\n}\n"
    if kind == 1:  # nested array attributes
        return data.replace(b"{", b"{deep = " + b"[" * depth + b"]" * depth + b", ", 1)
    if kind == 2:  # nested affine parentheses
        return data.replace(b"-> (", b"-> (" + b"(" * depth + b"d0" + b")" * depth + b" + ", 1)
    return data + b"\n" + b"(" * depth + b"\n"


def huge_numbers(rng: random.Random, data: bytes) -> bytes:
    return _replace(rng, data, INTEGER, HUGE, rng.randint(1, 3))


def nan_numbers(rng: random.Random, data: bytes) -> bytes:
    if FLOAT.search(data) and rng.random() < 0.5:
        return _replace(rng, data, FLOAT, NANS)
    return _replace(rng, data, INTEGER, NANS)


def bad_attributes(rng: random.Random, data: bytes) -> bytes:
    spans = [m.span(2) for m in ATTRIBUTE.finditer(data)]
    if not spans:
        return flip_bytes(rng, data)
    start, end = rng.choice(spans)
    return data[:start] + rng.choice(BAD_VALUES) + data[end:]


def wrong_types(rng: random.Random, data: bytes) -> bytes:
    return _replace(rng, data, TYPE_TOKEN, TYPES, rng.randint(1, 2))


def index_arrays(rng: random.Random, data: bytes) -> bytes:
    spans = _spans(re.compile(rb"array<i(?:32|64):[^>]*>"), data)
    if not spans:
        return huge_numbers(rng, data)
    start, end = rng.choice(spans)
    width = rng.choice([b"i32", b"i64"])
    values = [rng.choice([-1, 0, 1, 2, 3, 7, 2**31, 2**40]) for _ in range(rng.randint(0, 6))]
    return data[:start] + b"array<" + width + b": " + b", ".join(str(v).encode() for v in values) + b">" + data[end:]


def bad_affine_maps(rng: random.Random, data: bytes) -> bytes:
    spans = _spans(re.compile(rb"affine_map<[^>]*>"), data)
    if not spans:
        return deep_nesting(rng, data)
    start, end = rng.choice(spans)
    text = data[start:end]
    edits = [
        lambda t: t.replace(b"floordiv ", b"floordiv 0 * ", 1),
        lambda t: re.sub(rb"\b\d+\b", lambda m: rng.choice(HUGE[:8]), t, count=1),
        lambda t: t.replace(b"->", b", d9) ->", 1),
        lambda t: t.replace(b"(d0", b"(d0, d0", 1),
        lambda t: t.replace(b")>", b", s0)>", 1),
        lambda t: t.replace(b"mod", b"mod -", 1),
        lambda t: b"affine_map<() -> ()>",
        lambda t: b"affine_map<(d0) -> (d0 floordiv 0)>",
    ]
    return data[:start] + rng.choice(edits)(text) + data[end:]


def segment_sizes(rng: random.Random, data: bytes) -> bytes:
    pattern = re.compile(rb"operandSegmentSizes = array<i32:[^>]*>")
    spans = _spans(pattern, data)
    if not spans:
        return index_arrays(rng, data)
    start, end = rng.choice(spans)
    values = [rng.choice([0, 1, 2, 3, -1, 2**31 - 1]) for _ in range(rng.randint(0, 7))]
    element = rng.choice([b"i32", b"i32", b"i8", b"i64"])  # the verifier wants i32: other widths must be refused too
    text = element + (b": " + b", ".join(str(v).encode() for v in values) if values else b"")
    return data[:start] + b"operandSegmentSizes = array<" + text + b">" + data[end:]


TEXT_MUTATIONS = [truncate, flip_bytes, delete_tokens, duplicate_tokens, deep_nesting, huge_numbers, nan_numbers,
                  bad_attributes, wrong_types, index_arrays, bad_affine_maps, segment_sizes]


# ----------------------------------------------------------------------------
# Argument vectors

GARBAGE = ["", "-1", "0", "1099511627776", "2147483648", "nan", "inf", "1e400", "x", "1abc", "a b", "--", "-",
           "gfx9999", "=", "{", "}", "a=b", "true", "\u00e9", "9" * 40, "0x10", "1.5", "/nonexistent/dir/x"]


def pass_options() -> list[tuple[str, list[str]]]:
    """(pass or pipeline argument, option names) of every registered pass and pipeline."""
    import dataclasses

    from pagedir.passes import PASSES, get_pass_class
    from pagedir.pipelines import PIPELINES

    found = []
    for argument in PASSES:
        options = getattr(get_pass_class(argument), "Options", None)
        names = [f.name.replace("_", "-") for f in dataclasses.fields(options)] if dataclasses.is_dataclass(options) else []
        found.append((argument, names))
    for argument, info in PIPELINES.items():
        options = info.options if hasattr(info, "options") else getattr(info, "options_cls", None)
        if options is None:
            options = next((v for v in vars(info).values() if dataclasses.is_dataclass(v)), None)
        found.append((argument, [f.name.replace("_", "-") for f in dataclasses.fields(options)] if options else []))
    return found


def mutate_argv(rng: random.Random, argv: list[str]) -> list[str]:
    """One to three edits: a value replaced by garbage, a flag dropped, duplicated or unknown, a value dropped."""
    argv = list(argv)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        if kind <= 1 and argv:  # replace a value (more often than the rest)
            i = rng.randrange(len(argv))
            argv[i] = rng.choice(GARBAGE) if kind == 0 or "=" not in argv[i] else argv[i].split("=")[0] + "=" + rng.choice(GARBAGE)
        elif kind == 2 and argv:
            del argv[rng.randrange(len(argv))]
        elif kind == 3 and argv:
            i = rng.randrange(len(argv))
            argv[i:i] = argv[i: i + 2]
        elif kind == 4:
            argv.insert(rng.randrange(len(argv) + 1), rng.choice(["--no-such-flag", "-x", "--seed", "--entry", "-o"]))
        else:
            argv.append(rng.choice(GARBAGE))
    return argv


# ----------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    tool: str
    argv: list[str]  # INPUT and OUTPUT stand for the case's files
    input: bytes | None = None
    output_flag: str | None = None  # -o, --outputs, or None when the case writes no file
    extra: dict = field(default_factory=dict)


def corpus() -> list[Path]:
    files = sorted(ROOT.glob("tests/lit/**/*.mlir")) + sorted(ROOT.glob("examples/*.mlir"))
    return [f for f in files if "/Output/" not in str(f) and f.stat().st_size < 200_000]


GEN_ARGVS = [
    ["attention", "--batch", "1", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-k", "32", "--head-dim", "16",
     "--page-size", "8", "--ragged"],
    ["attention", "--batch", "1", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-q", "4", "--seq-len-k", "16",
     "--head-dim", "16", "--dense", "--causal", "--scale", "0.25", "--dtype", "bf16", "--name", "att"],
    ["copy-kv", "--batch", "1", "--num-heads-kv", "1", "--seq-len", "32", "--head-dim", "16", "--page-size", "8",
     "--tile-tokens", "8", "--block-size", "64", "--seq-lens"],
    ["copy-kv", "--batch", "2", "--num-heads-kv", "2", "--seq-len", "16", "--head-dim", "8", "--page-size", "4",
     "--layout", "v", "--dtype", "f32", "--arch", "gfx1100"],
]
RUN_SOURCE = b"""func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = vector.load %a[%c1, %c0] : memref<4x8xf32>, vector<8xf32>
  %x = vector.extract %v[%n] : f32 from vector<8xf32>
  %s = memref.subview %a[1, 2] [2, 4] [1, 1] : memref<4x8xf32> to memref<2x4xf32, strided<[8, 1], offset: 10>>
  %y = memref.load %s[%c1, %c0] : memref<2x4xf32, strided<[8, 1], offset: 10>>
  %z = arith.addf %x, %y : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %z, %b[%i, %c0] : memref<4x8xf32>
  }
  return
}
"""


def generated_kernels() -> list[tuple[list[str], bytes]]:
    """The generator's argument vectors and their kernels (small; the fuzzed runs start from these)."""
    from pagedir.cli import gen

    kernels = []
    with tempfile.TemporaryDirectory() as directory:
        for argv in GEN_ARGVS:
            path = os.path.join(directory, "k.mlir")
            if gen.main([*argv, "-o", path]) == 0:
                kernels.append((argv, Path(path).read_bytes()))
    return kernels


def make_cases(count: int, seed: int, only: str | None) -> list[Case]:
    rng = random.Random(seed)
    files = corpus()
    texts = {str(f.relative_to(ROOT)): f.read_bytes() for f in files}
    kernels = generated_kernels()
    for argv, text in kernels:
        texts[f"pagedir-gen {' '.join(argv)}"] = text
    texts["run-source"] = RUN_SOURCE
    sources = sorted(texts)
    options = pass_options()
    lowered = [name for name in sources if b"gpu.module" in texts[name]]
    runnable = [name for name in sources if name.startswith("pagedir-gen") or "run/" in name or name == "run-source"]
    cases: list[Case] = []
    tools = [only] if only else list(TOOLS)
    shares = {tool: SHARES[tool] / sum(SHARES[t] for t in tools) for tool in tools}
    for tool in tools:
        for index in range(round(count * shares[tool])):
            name = f"{tool}-{index}"
            mutate = rng.choice(TEXT_MUTATIONS)
            if tool == "pagedir-opt":
                source = rng.choice(sources)
                if rng.random() < 0.3:  # option garbage for a pass or pipeline option
                    argument, names = rng.choice(options)
                    option = rng.choice(names) if names else rng.choice(["bogus", "arch"])
                    value = rng.choice(GARBAGE + ["{", "}", ",", "a{b}", "1,2"])
                    flags = [rng.choice([f"--{argument}={option}={value}", f"--pass-pipeline=builtin.module({argument}{{{option}={value}}})"])]
                    data = texts[source]
                else:
                    flags = rng.choice([[], ["--rock-verify"], ["--split-input-file"], ["--rock-kernel-pipeline"],
                                        ["--split-input-file", "--verify-diagnostics"], ["--mlir-print-op-generic"],
                                        ["--rock-attention-to-gridwise"], ["--rock-blockwise-load"], ["--rock-reuse-lds"],
                                        ["--rock-threadwise-lowering", "--rock-buffer-load"], ["--rock-to-gpu"]])
                    data = mutate(rng, texts[source])
                    if rng.random() < 0.2:
                        flags = mutate_argv(rng, flags)
                cases.append(Case(name, tool, ["INPUT", *flags, "-o", "OUTPUT"], data, "-o",
                                  {"source": source, "mutation": mutate.__name__}))
            elif tool == "pagedir-compile":
                source = rng.choice(lowered or sources)
                flags = ["--arch", rng.choice(["gfx942", "gfx1100", "gfx90a"]), f"--emit={rng.choice(['asm', 'llvm-ir', 'obj'])}"]
                data = texts[source]
                if rng.random() < 0.8:
                    data = mutate(rng, data)
                else:
                    flags = mutate_argv(rng, flags)
                cases.append(Case(name, tool, ["INPUT", *flags, "-o", "OUTPUT"], data, "-o",
                                  {"source": source, "mutation": mutate.__name__}))
            elif tool == "pagedir-gen":
                argv = mutate_argv(rng, rng.choice(GEN_ARGVS))
                cases.append(Case(name, tool, [*argv, "-o", "OUTPUT"], None, "-o", {"mutation": "argv"}))
            else:
                source = rng.choice(runnable)
                data = texts[source]
                check = source != "run-source" and rng.random() < 0.6
                argv = ["--check", "INPUT"] if check else ["INPUT", "--entry", "f", "--outputs", "OUTPUT"]
                if source.startswith("pagedir-gen") and not check:
                    argv[2] = "copy_kv" if b"@copy_kv" in data else ("att" if b"@att(" in data else "paged_attention")
                if not check:
                    argv += ["--seed", str(rng.choice([0, 1, 7]))]
                if rng.random() < 0.7:
                    data = mutate(rng, data)
                    how = mutate.__name__
                else:
                    argv, how = mutate_argv(rng, argv), "argv"
                cases.append(Case(name, tool, argv, data, "--outputs" if "OUTPUT" in argv else None,
                                  {"source": source, "mutation": how}))
    return cases


# ----------------------------------------------------------------------------
# Running and classifying


def classify(returncode: int | None, out: str, err: str, clobbered: bool) -> str:
    text = out + err
    if returncode is None:
        return "timeout"
    if returncode < 0:
        return "signal"
    if "Traceback (most recent call last)" in text:
        return "traceback"
    if returncode == 2 or "internal error" in err:
        return "internal-error"
    if clobbered:
        return "clobbered"
    if returncode == 0:
        return "ok"
    if returncode != 1:
        return "bad-exit"
    if EXCEPTION_NAME.search(err):
        return "leaked-exception"
    if "error:" in err or "FAIL" in out:
        return "user-error"
    return "bad-exit"


def run_case(case: Case, timeout: float, directory: Path) -> dict:
    work = directory / case.name
    work.mkdir(parents=True, exist_ok=True)
    input_path, output_path = work / "input.mlir", work / "output"
    if case.input is not None:
        input_path.write_bytes(case.input)
    output_path.write_bytes(SENTINEL)
    argv = [str(input_path) if a == "INPUT" else str(output_path) if a == "OUTPUT" else a for a in case.argv]
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PAGEDIR_TRACEBACK", None)
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", TOOLS[case.tool], *argv], capture_output=True, timeout=timeout,
                              env=env, cwd=work, stdin=subprocess.DEVNULL)
        returncode, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        returncode, out, err = None, expired.stdout or b"", expired.stderr or b""
    seconds = time.perf_counter() - start
    written = output_path.read_bytes() if output_path.exists() else b""
    # Only a run that names the file may change it, and only when it succeeds.
    clobbered = written != SENTINEL and (returncode != 0 or case.output_flag is None) and "OUTPUT" in case.argv
    out_text, err_text = out.decode(errors="replace"), err.decode(errors="replace")
    verdict = classify(returncode, out_text, err_text, clobbered)
    return {"name": case.name, "tool": case.tool, "argv": argv, "class": verdict, "returncode": returncode,
            "seconds": round(seconds, 3), "stderr_tail": err_text[-600:], "stdout_tail": out_text[-300:],
            "work": str(work), **case.extra}


def save_reproducer(result: dict, case: Case, out: Path) -> str:
    target = out / "fuzz-reproducers" / result["class"] / case.name
    target.mkdir(parents=True, exist_ok=True)
    if case.input is not None:
        (target / "input.mlir").write_bytes(case.input)
    argv = ["input.mlir" if a == "INPUT" else "output" if a == "OUTPUT" else a for a in case.argv]
    (target / "argv.txt").write_text(f"{case.tool} {shlex.join(argv)}\n")
    (target / "seen.txt").write_text(f"exit code {result['returncode']}\n--- stderr\n{result['stderr_tail']}\n"
                                     f"--- stdout\n{result['stdout_tail']}\n")
    return str(target.relative_to(ROOT)) if target.is_relative_to(ROOT) else str(target)


def first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")[:300]


def markdown(summary: dict, examples: dict) -> str:
    classes = ["ok", "user-error", *BAD]
    lines = [f"# Fuzz sweep: {summary['cases']} runs (seed {summary['seed']}, {summary['seconds']:.0f} s)", "",
             "| tool | " + " | ".join(classes) + " |", "|---" * (len(classes) + 1) + "|"]
    for tool, counts in summary["per_tool"].items():
        lines.append(f"| {tool} | " + " | ".join(str(counts.get(c, 0)) for c in classes) + " |")
    totals = summary["per_class"]
    lines.append("| **all** | " + " | ".join(str(totals.get(c, 0)) for c in classes) + " |")
    lines += ["", "Runs per mutation class:", ""]
    lines += [f"- {name}: {n}" for name, n in sorted(summary["per_mutation"].items())]
    if examples:
        lines += ["", "## First reproducers of each bad class", ""]
        for verdict, items in examples.items():
            lines.append(f"### {verdict}")
            for item in items:
                lines.append(f"- `{item['reproducer']}`: `{item['tool']}` exit {item['returncode']}: "
                             f"{first_line(item['stderr_tail'])[:200]}")
            lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=3000, help="runs in all (default 3000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the mutations (default 1)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run (default 60)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"), help="report directory")
    parser.add_argument("--only", choices=list(TOOLS), help="fuzz one tool")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(SRC))  # the cases are made with this checkout's generators and pass registry
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "fuzz-reproducers", ignore_errors=True)
    cases = make_cases(args.count, args.seed, args.only)
    by_name = {case.name: case for case in cases}
    start = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="pagedir-fuzz-") as scratch, ThreadPoolExecutor(args.jobs) as pool:
        for done, result in enumerate(pool.map(lambda c: run_case(c, args.timeout, Path(scratch)), cases), 1):
            results.append(result)
            if result["class"] in BAD:
                print(f"{result['class']}: {result['tool']} {shlex.join(result['argv'][:6])} ...", file=sys.stderr)
            if done % 250 == 0:
                print(f"{done}/{len(cases)} runs", file=sys.stderr)
    per_tool: dict[str, Counter] = defaultdict(Counter)
    for result in results:
        per_tool[result["tool"]][result["class"]] += 1
    examples: dict[str, list] = defaultdict(list)
    for result in results:
        if result["class"] in BAD and len(examples[result["class"]]) < EXAMPLES_PER_CLASS * len(TOOLS):
            if sum(1 for e in examples[result["class"]] if e["tool"] == result["tool"]) < EXAMPLES_PER_CLASS:
                result["reproducer"] = save_reproducer(result, by_name[result["name"]], out)
                examples[result["class"]].append(result)
    summary = {
        "cases": len(results), "seed": args.seed, "count": args.count, "timeout": args.timeout,
        "seconds": round(time.perf_counter() - start, 1),
        "per_tool": {tool: dict(counts) for tool, counts in per_tool.items()},
        "per_class": dict(sum(per_tool.values(), Counter())),
        "per_mutation": dict(Counter(r.get("mutation", "argv") for r in results)),
    }
    bad = [{"name": r["name"], "tool": r["tool"], "class": r["class"], "source": r.get("source"),
            "mutation": r.get("mutation"), "message": first_line(r["stderr_tail"])} for r in results if r["class"] in BAD]
    record = {"summary": summary, "bad": bad, "examples": {k: [{x: v for x, v in e.items() if x != "work"} for e in items]
                                                  for k, items in examples.items()}}
    (out / "fuzz.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "fuzz.md").write_text(markdown(summary, examples))
    print(markdown(summary, {}))
    return 1 if any(summary["per_class"].get(c) for c in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
