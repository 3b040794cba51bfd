"""Interpreter speed on a decode and a prefill kernel: the whole `pagedir-run --check`, and the L6 run.

    python benchmarks/interp_speed.py [--out DIR] [--only decode|prefill]

For each shape: the seconds of the check as `pagedir-run --check` does it (draw the case and its
reference, run the function as written (L0), lower it through rock-kernel-pipeline, run the L6
kernel, compare), the seconds of the L6 run alone (wall clock and CPU: the machine may be shared),
the thread-instructions it executes (ops x active lanes, `Program.count_instructions`) and their
rate. Writes ``interp_speed.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.measure import counting_program, generate  # noqa: E402

#: name -> pagedir-gen attention arguments. Decode is `make demo`'s shape (the peers' decode shape);
#: prefill is a whole causal 512-token prompt with 32 query heads on 8 KV heads.
SHAPES = {
    "decode": ["--batch", "2", "--num-heads-q", "16", "--num-heads-kv", "2", "--seq-len-k", "512", "--seq-lens"],
    "prefill": ["--batch", "1", "--num-heads-q", "32", "--num-heads-kv", "8", "--seq-len-q", "512",
                "--seq-len-k", "512", "--causal"],
}


def measure(name: str, argv: list[str], seed: int = 0) -> dict:
    import mlir.ir as ir

    from pagedir import driver
    from pagedir.context import make_context
    from pagedir.interp.check import compare, make_case
    from pagedir.interp.launch import find_function, launch_size, run_function
    from pagedir.interp.memory import Device

    text = generate("attention", argv)
    with make_context():
        start = time.perf_counter()
        module = ir.Module.parse(text)
        l0 = find_function(module.operation, "paged_attention")
        arguments = list(l0.regions[0].blocks[0].arguments)

        def check(func) -> bool:
            device = Device()
            case = make_case(l0, np.random.default_rng(seed), device)
            outputs, _ = run_function(func, case.args, device=device)
            return all(compare(i, arguments[i].type, e, outputs[i], case.tolerance).ok for i, e in case.expected.items())

        passed = check(l0)
        lowered = ir.Module.parse(module.operation.get_asm(enable_debug_info=True))
        driver.run(lowered.operation, driver.CompileOptions(), start="L0", end="L6")
        l6 = find_function(lowered.operation, "paged_attention")
        passed = check(l6) and passed
        check_seconds = time.perf_counter() - start

        device = Device()
        case = make_case(l0, np.random.default_rng(seed), device)
        wall, cpu = time.perf_counter(), time.process_time()
        run_function(l6, case.args, device=device)
        run_seconds, run_cpu = time.perf_counter() - wall, time.process_time() - cpu

        device = Device()
        case = make_case(l0, np.random.default_rng(seed), device)
        program = counting_program(l6)
        run_function(l6, case.args, device=device, program=program)
        groups, block = launch_size(l6)
    return {
        "shape": name, "argv": argv, "passed": passed, "grid": groups, "block": block,
        "check_seconds": check_seconds, "run_seconds": run_seconds, "run_cpu_seconds": run_cpu,
        "thread_instructions": int(program.executed),
        "rate_per_second": program.executed / run_seconds, "rate_per_cpu_second": program.executed / run_cpu,
    }


def table(records: list[dict]) -> str:
    lines = ["| shape | grid x block | check (s) | L6 run (s) | L6 run CPU (s) | thread-instructions | M/s | M/s of CPU |",
             "|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['shape']} | {r['grid']} x {r['block']} | {r['check_seconds']:.1f} | {r['run_seconds']:.2f} | "
                     f"{r['run_cpu_seconds']:.2f} | {r['thread_instructions']:,} | {r['rate_per_second'] / 1e6:.0f} | "
                     f"{r['rate_per_cpu_second'] / 1e6:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="directory of interp_speed.json (default benchmarks/results)")
    parser.add_argument("--only", choices=sorted(SHAPES), help="one shape")
    args = parser.parse_args(argv)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    records = [measure(name, shape) for name, shape in SHAPES.items() if args.only in (None, name)]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "interp_speed.json"), "w") as f:
        json.dump(records, f, indent=2)
    print(table(records))
    return 0 if all(r["passed"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
