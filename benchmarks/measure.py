"""Measurements of one configuration: compile time per stage, kernel report, LDS plan, interpreter run.

Everything goes through the Python APIs (no subprocess except mlir-translate,
which has no Python API), so a stage's time is the time of that stage alone.
"""

from __future__ import annotations

import argparse
import importlib
import time
from dataclasses import asdict
from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.arch import get_chip
from pagedir.interp import lds_banks
from pagedir.interp.memory import BASE, Device

#: Which part of the toolchain a stage belongs to (the headline ratio is ours / everything else).
OURS, UPSTREAM, TRANSLATE, LLVM = "ours", "upstream", "translate", "llvm"


class NotAvailable(Exception):
    """A generator or pass this configuration needs is not in this installation."""


# ----------------------------------------------------------------------------
# Generation


def generate(kind: str, argv: list[str]) -> str:
    """The kernel text of ``pagedir-gen KIND ARGV...``, through the generator's own argument parser."""
    from pagedir.gen import GENERATORS

    if kind not in GENERATORS:
        raise NotAvailable(f"pagedir-gen has no '{kind}' generator")
    try:
        module = importlib.import_module(f"pagedir.gen.{GENERATORS[kind]}")
    except ImportError as err:
        raise NotAvailable(f"pagedir-gen {kind}: {err}") from None
    parser = argparse.ArgumentParser(prog=f"pagedir-gen {kind}", exit_on_error=False)
    module.add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as err:
        raise NotAvailable(f"pagedir-gen {kind} does not take {' '.join(argv)}: {err}") from None
    return module.generate(args)


# ----------------------------------------------------------------------------
# Compilation, stage by stage


def group_of(stage: Any) -> str:
    """Ours (pagedir passes), upstream (MLIR pipeline text), translate (to LLVM IR) or LLVM (O3, codegen)."""
    from pagedir import driver

    if stage.pipeline == driver.CODEGEN:
        return TRANSLATE if stage.level in ("llvm-module", "llvm-ir") else LLVM
    return UPSTREAM if isinstance(stage.step, str) else OURS


def compile_kernel(text: str, arch: str) -> dict[str, Any]:
    """L0/L2 text -> assembly, timing each stage; also the L6 text (for the interpreter) and the LDS plan.

    The driver runs every stage as pagedir-compile does (from L0, one PassManager each); the rock
    verifiers pagedir-compile runs after each kernel stage run in the callback instead, timed as
    their own stage ``rock-verify``.
    """
    from pagedir import driver
    from pagedir.backend import kernel_reports
    from pagedir.context import make_context
    from pagedir.passes.verify import verify_rock_ops

    chip = get_chip(arch)
    timed: list[dict[str, Any]] = []
    found: dict[str, Any] = {"lds": {}, "tiles": {}}

    def time_call(name: str, group: str, fn, *args):
        start = time.perf_counter()
        result = fn(*args)
        timed.append({"name": name, "group": group, "seconds": time.perf_counter() - start})
        return result

    def observe(stage: Any, output: Any, seconds: float) -> None:
        timed.append({"name": stage.name, "group": group_of(stage), "seconds": seconds})
        if stage.pipeline != driver.KERNEL_PIPELINE:
            return
        if not time_call("rock-verify", OURS, verify_rock_ops, output):
            raise RuntimeError(f"rock verifiers failed after {stage.name}")
        if stage.name == "rock-attention-to-gridwise":
            found["tiles"] = tiling(output)
        if stage.name == "rock-annotate-liveness":
            found["lds"] = lds_plan(output)
        if stage.level == "L6":
            found["l6"] = output.get_asm(enable_debug_info=True)
            found["work"] = launch_of(output)

    # verify=False: the callback runs the rock verifiers itself, to time them apart from the passes.
    options = driver.CompileOptions(arch=arch, verify=False)
    with make_context(), ir.Location.unknown():
        module = time_call("parse", "parse", ir.Module.parse, text).operation
        try:
            outputs = driver.run(module, options, start="L0", end="asm", on_stage=observe)
        except driver.StageUnavailable as err:
            raise NotAvailable(str(err)) from None
    reports = {report.name: report for report in kernel_reports(outputs["asm"], chip)}
    work = found["work"]
    if set(reports) != {launch["name"] for launch in work["launches"]}:
        raise RuntimeError(f"the assembly holds kernels {sorted(reports)}, the launch plan {work['launches']}")
    for launch in work["launches"]:
        report = reports[launch["name"]]
        launch.update(vgprs=report.vgprs, sgprs=report.sgprs, instructions=report.instructions)
    entry = work.pop("entry")
    return {"stages": merge_repeated(timed), "report": asdict(reports[entry]), "lds": found["lds"], "l6": found["l6"],
            "work": {**found["tiles"], **work}, "entry": entry}


def tiling(module: ir.Operation) -> dict[str, int]:
    """The tuning parameters rock-attention-to-gridwise chose (integer attributes of the gridwise op;
    ``num_splits`` and ``pipeline_depth`` are 1 when the op has none)."""
    found: dict[str, int] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "rock.gridwise_attention_accel":
            found["num_splits"] = found["pipeline_depth"] = 1
            for name in ("m_per_block", "n_per_block", "num_splits", "pipeline_depth"):
                if name in op.attributes:
                    found[name] = ir.IntegerAttr(op.attributes[name]).value
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


def launch_of(module: ir.Operation) -> dict[str, Any]:
    """From the L6 module's launch plan: the first kernel launched (``entry``), its workgroups and threads
    per workgroup; every launch in order; the workgroups of all launches together and the workspace bytes."""
    from pagedir.backend.plan import launch_plan

    plan = launch_plan(module)
    kernels = {kernel["symbol"]: kernel for kernel in plan["kernels"]}
    launches = [{"name": name, "grid": volume(kernels[name]["grid"]), "block": volume(kernels[name]["block"]),
                 "lds_bytes": kernels[name]["lds_bytes"]} for name in plan["launch_order"]]
    return {"entry": launches[0]["name"], "grid": launches[0]["grid"], "block": launches[0]["block"],
            "launches": launches, "workgroups": sum(launch["grid"] for launch in launches),
            "workspace_bytes": plan["workspace_bytes"], "split_model": kernels[launches[0]["name"]].get("split_model")}


def volume(dims: list[int]) -> int:
    count = 1
    for extent in dims:
        count *= extent
    return count


def warm_up() -> None:
    """Compile a tiny kernel once: imports, dialect loading and LLVM target set-up are then paid."""
    compile_kernel(generate("copy-kv", ["--seq-len", "16", "--head-dim", "8", "--block-size", "64"]), "gfx942")
    try:
        compile_kernel(generate("attention", ["--seq-len-k", "64", "--head-dim", "64"]), "gfx942")
    except NotAvailable:
        pass


def merge_repeated(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per stage name (rock-verify runs after every pass), in first-seen order."""
    merged: dict[str, dict[str, Any]] = {}
    for stage in stages:
        if stage["name"] in merged:
            merged[stage["name"]]["seconds"] += stage["seconds"]
        else:
            merged[stage["name"]] = dict(stage)
    return list(merged.values())


def lds_plan(module: ir.Operation) -> dict[str, int]:
    """LDS bytes of the kernel before and after rock-reuse-lds, from the pass's own plan()."""
    from pagedir.passes import kernel_functions
    from pagedir.passes.reuse_lds import plan

    before = after = 0
    for func in kernel_functions(module):
        layout = plan(func)
        before += layout.bytes_before
        after += layout.bytes_after
    return {"before_reuse": before, "after_reuse": after}


def best_of(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per stage, the fastest of several compiles (the least disturbed by the rest of the machine)."""
    best = [dict(stage) for stage in runs[0]]
    for run in runs[1:]:
        for stage, other in zip(best, run):
            stage["seconds"] = min(stage["seconds"], other["seconds"])
    return best


def totals(stages: list[dict[str, Any]]) -> dict[str, float]:
    sums = {OURS: 0.0, UPSTREAM: 0.0, TRANSLATE: 0.0, LLVM: 0.0}
    for stage in stages:
        if stage["group"] in sums:
            sums[stage["group"]] += stage["seconds"]
    sums["ratio"] = sums[OURS] / max(1e-12, sums[UPSTREAM] + sums[TRANSLATE] + sums[LLVM])
    return sums


# ----------------------------------------------------------------------------
# Interpreter: a timed check, then a counted run


class CountingDevice(Device):
    """The interpreter's device memory, counting bytes read and written per allocation, and distinct bytes read.

    Every global access of the interpreter goes through ``read``/``write`` with
    the addresses of the elements the active lanes touch (masked-off lanes,
    invalid lanes of a paged load and out-of-range buffer-load components touch
    nothing), so these are the bytes the kernel's loads fetch. Tables are indexed
    by allocation number + 1 (0: unmapped).
    """

    def __init__(self) -> None:
        super().__init__()
        self.bytes_read = np.zeros(0, dtype=np.int64)
        self.bytes_written = np.zeros(0, dtype=np.int64)
        self.touched: np.ndarray | None = None

    def _tally(self, table: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
        counts = np.bincount(self._owner[offsets], minlength=len(self.arrays) + 1) * size
        if len(table) < len(counts):
            table = np.concatenate([table, np.zeros(len(counts) - len(table), dtype=np.int64)])
        table[: len(counts)] += counts
        return table

    def read(self, addresses, elem, what, location):
        values = super().read(addresses, elem, what, location)
        offsets = np.asarray(addresses, dtype=np.int64).reshape(-1) - BASE
        self.bytes_read = self._tally(self.bytes_read, offsets, elem.size)
        if self.touched is None or len(self.touched) < len(self._bytes):
            self.touched = np.zeros(len(self._bytes), dtype=np.bool_)
        for byte in range(elem.size):
            self.touched[offsets + byte] = True
        return values

    def write(self, addresses, values, elem, what, location):
        super().write(addresses, values, elem, what, location)
        offsets = np.asarray(addresses, dtype=np.int64).reshape(-1) - BASE
        self.bytes_written = self._tally(self.bytes_written, offsets, elem.size)

    def distinct_read(self) -> np.ndarray:
        if self.touched is None:
            return np.zeros(len(self.arrays) + 1, dtype=np.int64)
        return np.bincount(self._owner[: len(self.touched)][self.touched], minlength=len(self.arrays) + 1)


def counting_program(func: ir.Operation):
    """A Program that counts executed ops x active lanes (its ``executed``).

    The interpreter wraps closures with the counter while compiling when
    ``count_instructions`` is set; compiling happens in the constructor, so the
    flag is raised at the first compile_block call.
    """
    from pagedir.interp.simt import Program

    class Counting(Program):
        def compile_block(self, block):
            self.count_instructions = True
            return super().compile_block(block)

    return Counting(func)


def interpret(l0_text: str, l6_text: str, entry: str, seed: int = 0) -> dict[str, Any]:
    """Check the L6 kernel on the case of its L0 form (timed), then run it again with the counters.

    A run is the whole launch plan (a split kernel, then its combine kernel); the byte counters see
    both, the thread-instruction counter the first kernel only.

    ``check_seconds`` is a whole check: drawing the case (and its reference
    output), running the kernel, comparing; ``run_seconds`` is the faster of two
    uncounted kernel runs, the time thread-instructions per second are computed against.
    """
    from pagedir.context import make_context
    from pagedir.interp.check import compare, make_case
    from pagedir.interp.launch import argument_count, find_function, launch_size, run_function

    with make_context():
        modules = [ir.Module.parse(l0_text), ir.Module.parse(l6_text)]  # kept alive while their ops are used
        l0, l6 = (find_function(m.operation, entry) for m in modules)
        arguments = list(l6.regions[0].blocks[0].arguments)[: argument_count(l6)]

        start = time.perf_counter()
        device = Device()
        case = make_case(l0, np.random.default_rng(seed), device)
        run_start = time.perf_counter()
        outputs, _ = run_function(l6, case.args, device=device)
        run_seconds = time.perf_counter() - run_start
        comparisons = [compare(i, arguments[i].type, e, outputs[i], case.tolerance) for i, e in case.expected.items()]
        check_seconds = time.perf_counter() - start

        device = CountingDevice()
        case = make_case(l0, np.random.default_rng(seed), device)
        first_argument = len(device.arrays) + 1  # the case uploads the pages; the arguments follow, in order
        start = time.perf_counter()  # building the Program is part of a run, as in the check above
        program = counting_program(l6)
        run_function(l6, case.args, device=device, program=program)
        counted_seconds = time.perf_counter() - start
        groups, block = launch_size(l6)
        workspace = len(arguments) - 1 if "rock.workspace_bytes" in l6.attributes else None

        # Once more without counters: the rate and the counters' cost use the faster plain run.
        fresh = Device()
        again = make_case(l0, np.random.default_rng(seed), fresh)
        start = time.perf_counter()
        run_function(l6, again.args, device=fresh)
        run_seconds = min(run_seconds, time.perf_counter() - start)

        # And with the LDS bank-conflict model (pagedir.interp.lds_banks) on.
        banked = Device()
        case = make_case(l0, np.random.default_rng(seed), banked)
        with lds_banks.tally() as banks:
            run_function(l6, case.args, device=banked)

    count = len(device.arrays) + 1
    sizes = np.array([0] + [a.nbytes for a in device.arrays], dtype=np.int64)
    read, written, distinct = (padded(t, count) for t in (device.bytes_read, device.bytes_written, device.distinct_read()))
    pages = slice(1, first_argument)
    args = slice(first_argument, first_argument + len(arguments))
    return {
        "passed": all(c.ok for c in comparisons),
        "checked": bool(comparisons),
        "max_abs_error": max((c.max_abs for c in comparisons), default=0.0),
        "check_seconds": check_seconds,
        "run_seconds": run_seconds,
        "counted_seconds": counted_seconds,
        "thread_instructions": int(program.executed),
        "lds_conflicts": {kind: {"cycles": t.cycles, "conflicted": t.conflicted, "instructions": t.instructions}
                          for kind in ("read", "write") for t in [banks.total(kind)]},
        "grid": groups,
        "block": block,
        #: The argument the plan appends for a split kernel (partial outputs and LSEs), else None;
        #: the output is the last argument before it.
        "workspace_argument": workspace,
        "out_argument": len(arguments) - 1 - (workspace is not None),
        "bytes": {
            "pages_size": int(sizes[pages].sum()),
            "pages_read": int(read[pages].sum()),
            "pages_distinct": int(distinct[pages].sum()),
            "arguments_size": sizes[args].tolist(),
            "arguments_read": read[args].tolist(),
            "arguments_distinct": distinct[args].tolist(),
            "arguments_written": written[args].tolist(),
        },
    }


def hot_loop(func: ir.Operation) -> ir.Operation | None:
    """The kernel's KV loop: the ``scf.for`` holding the most ops (its tile's loads and math)."""
    best, best_size = None, 0

    def size(op: ir.Operation) -> int:
        return sum(1 + size(inner) for region in op.regions for block in region.blocks for inner in block.operations)

    def visit(op: ir.Operation) -> None:
        nonlocal best, best_size
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name == "scf.for" and (count := size(inner.operation)) > best_size:
                        best, best_size = inner.operation, count
                    visit(inner.operation)

    visit(func)
    return best


def loop_program(func: ir.Operation, loop: ir.Operation):
    """A Program counting only the ops inside ``loop`` (ops x active lanes, its ``executed``) and the lanes
    entering its body (``iterations``, lanes x iterations)."""
    from pagedir.interp.simt import Program

    def inside(block: ir.Block) -> bool:
        op = block.owner
        while op is not None and op.name not in ("func.func", "gpu.func"):
            if op == loop:
                return True
            op = op.parent
        return False

    class LoopCounting(Program):
        iterations = 0

        def compile_block(self, block):
            self.count_instructions = inside(block)
            closures, results = super().compile_block(block)
            if block.owner == loop and closures:  # the body's first closure: once per iteration and lane
                first = closures[0]

                def entered(env, mask, first=first):
                    self.iterations += self.rt.lanes if mask is None else int(mask.sum())
                    first(env, mask)

                closures = [entered, *closures[1:]]
            return closures, results

    return LoopCounting(func)


def hot_loop_instructions(l0_text: str, l6_text: str, entry: str, seed: int = 0) -> dict[str, float]:
    """Per page placement (shuffled, adjacent, switching: :data:`pagedir.reference.PAGE_PLACEMENTS`), the ops of
    the kernel's KV loop that one wave executes per tile: thread-instructions inside the loop over the lanes x
    iterations that entered it (a lane runs in lockstep with its wave). The L6 ops the interpreter runs,
    not ISA instructions; a uniform branch counts the side taken only."""
    from pagedir.context import make_context
    from pagedir.interp.check import make_case
    from pagedir.interp.launch import find_function, run_function
    from pagedir.reference import PAGE_PLACEMENTS

    counts = {}
    with make_context():
        modules = [ir.Module.parse(l0_text), ir.Module.parse(l6_text)]
        l0, l6 = (find_function(m.operation, entry) for m in modules)
        loop = hot_loop(l6)
        if loop is None:
            return counts
        for placement in PAGE_PLACEMENTS:
            device = Device()
            case = make_case(l0, np.random.default_rng(seed), device, placement=placement)
            program = loop_program(l6, loop)
            run_function(l6, case.args, device=device, program=program)
            counts[placement] = round(program.executed / max(1, program.iterations), 1)
    return counts


def padded(table: np.ndarray, count: int) -> np.ndarray:
    out = np.zeros(count, dtype=np.int64)
    out[: min(count, len(table))] = table[:count]
    return out


# ----------------------------------------------------------------------------
# pagedir-compile as a command: cold (no cache) and warm (compile-cache hit)

#: The decode kernel of `make demo`.
DECODE_ARGV = ["--batch", "2", "--num-heads-q", "16", "--num-heads-kv", "2", "--seq-len-q", "1", "--seq-len-k", "512",
               "--head-dim", "128", "--page-size", "16", "--dtype", "f16", "--ragged", "--arch", "gfx942"]


def compile_command_times(runs: int = 5) -> dict[str, Any]:
    """Medians of ``runs``: CPU seconds of a cold ``pagedir-compile`` of the decode kernel (``--no-cache``,
    the process and its mlir-translate child), wall seconds of a warm one (a cache hit) and
    milliseconds of a hit through ``compile_source`` in-process."""
    import os
    import resource
    import statistics
    import subprocess
    import sys
    import tempfile

    from pagedir.cli.compile import compile_source

    text = generate("attention", DECODE_ARGV)
    with tempfile.TemporaryDirectory(prefix="pagedir-bench-") as work:
        source = os.path.join(work, "decode.mlir")
        with open(source, "w") as handle:
            handle.write(text)
        cache_dir = os.path.join(work, "cache")
        command = [sys.executable, "-m", "pagedir.cli.compile", source, "--arch", "gfx942", "--emit=asm",
                   "-o", os.path.join(work, "decode.s"), "--report", "--cache-dir", cache_dir]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (_src_dir(), os.environ.get("PYTHONPATH")) if p))

        def run(*extra: str) -> tuple[float, float]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(command + list(extra), env=env, check=True, capture_output=True)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall

        cold = [run("--no-cache") for _ in range(runs)]
        run()  # stores the entry
        warm = [run() for _ in range(runs)]
        compile_source(text, arch="gfx942", report=True, cache_dir=cache_dir)  # imports, versions, source hash
        hits = []
        for _ in range(max(runs, 20)):
            started = time.perf_counter()
            entry = compile_source(text, arch="gfx942", report=True, cache_dir=cache_dir)
            hits.append(time.perf_counter() - started)
            assert entry.hit
    return {
        "kernel": "decode-b2-hq16-hkv2-sq1-sk512-d128-p16-f16-gfx942",
        "runs": runs,
        "cold_command_cpu_s": statistics.median(cpu for cpu, _ in cold),
        "cold_command_wall_s": statistics.median(wall for _, wall in cold),
        "warm_command_wall_s": statistics.median(wall for _, wall in warm),
        "warm_command_cpu_s": statistics.median(cpu for cpu, _ in warm),
        "warm_in_process_ms": statistics.median(hits) * 1e3,
    }


def _src_dir() -> str:
    import os

    import pagedir

    return os.path.dirname(os.path.dirname(os.path.abspath(pagedir.__file__)))
