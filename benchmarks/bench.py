"""Measure compile time, kernel quality and interpreter speed; write JSON, a markdown report and plots.

    python benchmarks/bench.py [--quick] [--out DIR] [--repeat N] [--only SUBSTRING] [--readme README.md]

One JSON record per configuration (``results.json``), ``REPORT.md`` and PNG plots
in ``--out``. ``--readme`` also replaces the Benchmarks section of that README.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

# Run as a script from the checkout: make `benchmarks` importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import measure, report  # noqa: E402
from benchmarks.configs import Config, configurations  # noqa: E402


def measure_config(config: Config, repeat: int) -> dict:
    """One record; a missing generator or pass gives status "not available", a failure status "error"."""
    record = {"config": config.as_dict(), "status": "ok"}
    try:
        text = measure.generate(config.kind, config.argv())
        runs = [measure.compile_kernel(text, config.arch) for _ in range(repeat)]
        first = runs[0]
        stages = measure.best_of([run["stages"] for run in runs])
        record["compile"] = {"stages": stages, "totals": measure.totals(stages), "repeat": repeat}
        record["kernel"] = {**first["report"], "lds_before_reuse": first["lds"].get("before_reuse"),
                            "lds_after_reuse": first["lds"].get("after_reuse"), **first["work"]}
        if "n_per_block" in record["kernel"]:
            record["kernel"]["kv_tiles"] = -(-config.seq_k // record["kernel"]["n_per_block"])
            # The KV loop's common path (one wave's program on every tile; the masked tiles' arm is counted
            # apart in the report) per token of the workgroup's KV tile. Without a
            # loop (LLVM unrolled a workgroup's few tiles, or a split has one tile) the whole kernel counts,
            # over the KV tokens one workgroup reads, marked straight-line.
            kernel = record["kernel"]
            kernel["straight_line"] = not kernel.get("loop_instructions")
            if kernel["straight_line"]:
                tokens = -(-config.seq_k // kernel.get("num_splits", 1))
                kernel["loop_instructions_per_kv_token"] = round(kernel["instructions"] / tokens, 2)
            else:
                kernel["loop_instructions_per_kv_token"] = round(kernel["loop_common_instructions"] / kernel["n_per_block"], 2)
        record["bytes_required"] = config.required_bytes()
        if config.interpret:
            record["interp"] = measure.interpret(text, first["l6"], first["entry"])
            if config.kind == "attention" and not config.dense:
                record["interp"]["hot_loop_per_tile"] = measure.hot_loop_instructions(text, first["l6"], first["entry"])
    except measure.NotAvailable as err:
        record.update(status="not available", error=str(err))
    except Exception as err:  # report it and go on with the other configurations
        record.update(status="error", error=f"{type(err).__name__}: {err}")
        if os.environ.get("PAGEDIR_TRACEBACK"):
            traceback.print_exc()
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few small configurations (minutes on 2 cores)")
    parser.add_argument("--out", help="output directory (default benchmarks/results, or benchmarks/results-quick)")
    parser.add_argument("--repeat", type=int, help="compiles per configuration; the fastest of each stage counts")
    parser.add_argument("--only", help="only configurations whose name contains this")
    parser.add_argument("--readme", help="README whose Benchmarks section gets the summary table")
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    out = args.out or os.path.join(here, "results-quick" if args.quick else "results")
    repeat = args.repeat or (1 if args.quick else 3)
    configs = [c for c in configurations(args.quick) if not args.only or args.only in c.name]
    os.makedirs(out, exist_ok=True)

    # Imports and target initialisation happen once per process: keep them out of the first record.
    measure.warm_up()
    started = time.perf_counter()
    records = []
    for number, config in enumerate(configs, 1):
        t0 = time.perf_counter()
        record = measure_config(config, repeat)
        records.append(record)
        print(f"[{number}/{len(configs)}] {config.name}: {record['status']} ({time.perf_counter() - t0:.1f} s)"
              + (f": {record['error']}" if "error" in record else ""), flush=True)
    command = measure.compile_command_times()
    print(f"pagedir-compile decode kernel: cold {command['cold_command_cpu_s']:.2f} s CPU, "
          f"warm (cache hit) {command['warm_command_wall_s']:.3f} s wall, in-process hit "
          f"{command['warm_in_process_ms']:.2f} ms", flush=True)
    machine = report.machine(quick=args.quick, repeat=repeat, seconds=time.perf_counter() - started)
    with open(os.path.join(out, "results.json"), "w") as handle:
        json.dump({"machine": machine, "records": records, "compile_command": command}, handle, indent=1)
        handle.write("\n")
    with open(os.path.join(out, "REPORT.md"), "w") as handle:
        handle.write(report.markdown(machine, records, plots=report.plots(records, out), command=command))
    if args.readme:
        report.update_readme(args.readme, machine, records, os.path.relpath(out, os.path.dirname(os.path.abspath(args.readme))))
    print(f"wrote {out}/results.json and {out}/REPORT.md")
    return 0 if all(r["status"] != "error" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
