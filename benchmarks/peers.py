"""pagedir's kernels next to the kernels a user would pick instead: vLLM's Triton paged attention.

    python benchmarks/peers.py pagedir [--out DIR] [--arch A ...] [--only S]   # the project's environment
    python benchmarks/peers.py vllm    [--out DIR] [--arch A ...] [--only S]   # the peer environment
    python benchmarks/peers.py report  [--out DIR] [--readme README.md]

``make bench-peers`` runs the three steps (the second in ``.venv-peers``, with the pinned
``triton``, ``vllm`` and CPU ``torch`` of ``benchmarks/requirements-peers.txt``). Each of the
first two compiles its kernels at the shapes of :func:`benchmarks.configs.peer_configurations`
and reads the assembly with the same counter, :func:`benchmarks.isa.count`; ``report`` puts the
records side by side in ``PEERS.md`` and ``peers.json`` with the roofline model
(:mod:`benchmarks.roofline`) and, with ``--readme``, the headline rows in README.

Compile time, both sides in-process after a warm-up compile: *cold* is a compile with an empty
cache (pagedir: ``compile_source`` from L0 text to assembly; vLLM: the wrapper's first launch,
Triton from the kernel's Python to the code object), *warm* the same compile again, served by the
compile cache (pagedir's cache; Triton's on-disk cache after its in-memory one is emptied).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any

# Run as a script from the checkout: make `benchmarks` and the checkout's `pagedir` importable.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
sys.path.insert(1, os.path.join(_ROOT, "src"))

from benchmarks import isa, roofline  # noqa: E402
from benchmarks.configs import PEER_ARCHS, Config, peer_configurations  # noqa: E402

OUT = os.path.join(_ROOT, "benchmarks", "results")


def kv_tokens_per_workgroup(config: Config, splits: int) -> float:
    """KV tokens one workgroup reads on average: the keys a query row sees, over the splits."""
    return roofline.keys_seen(config.seq_q, config.seq_k, config.causal) / max(1, splits)


def launch_record(name: str, grid: list[int] | int, counters: dict[str, Any], *, tokens_per_iteration: int | None,
                  kv_tokens: float, nbytes: float, masked_tiles: float = 0.0,
                  texts: dict[str, str] | None = None) -> dict[str, Any]:
    """One launch: its counters, iterations and KV tokens; ``masked_tiles``: the iterations of a wave that take
    the hot loop's rarely taken arm; ``texts``: the instruction streams of :func:`benchmarks.isa.simulated_texts`,
    kept for llvm-mca in the report step (:mod:`pagedir.backend.mca`, in the project's environment)."""
    workgroups = grid if isinstance(grid, int) else _volume(grid)
    loop = counters.get("hot_loop") or {}
    iterations = kv_tokens / tokens_per_iteration if tokens_per_iteration and loop else 1.0
    keep = ("vgprs", "agprs", "sgprs", "vgpr_spills", "sgpr_spills", "scratch_bytes", "lds_bytes", "wave_size",
            "workgroup_size", "occupancy", "occupancy_limits", "waves_per_workgroup", "mfma", "wmma", "matrix_flops",
            "vector_loads",
            "lds_reads", "lds_writes", "scalar_loads", "barriers", "instructions", "hot_loop")
    per_token = isa.per_kv_token(counters, tokens_per_iteration)
    straight = bool(tokens_per_iteration) and per_token is None and kv_tokens > 0
    if straight:
        # No loop left (one KV tile per workgroup, unrolled): the whole kernel serves its tokens.
        per_token = counters["instructions"] * counters["waves_per_workgroup"] / kv_tokens
    return {"kernel": name, "grid": grid, "workgroups": workgroups, "tokens_per_iteration": tokens_per_iteration,
            "iterations": iterations, "kv_tokens": kv_tokens,
            "rare_iterations": masked_tiles if loop.get("rare") else 0.0, "nbytes": nbytes,
            "counters": {k: counters[k] for k in keep}, "per_kv_token": per_token, "straight_line": straight,
            **(texts or {})}


def _volume(grid: list[int]) -> int:
    total = 1
    for extent in grid:
        total *= extent
    return total


# ----------------------------------------------------------------------------
# pagedir (the project's environment)


def measure_pagedir(config: Config) -> dict[str, Any]:
    from benchmarks import measure
    from pagedir.cli.compile import compile_source

    text = measure.generate(config.kind, config.argv())
    work = measure.compile_kernel(text, config.arch)["work"]  # tiling and the launch plan
    with tempfile.TemporaryDirectory(prefix="pagedir-peers-") as cache_dir:
        started = time.perf_counter()
        cold = compile_source(text, arch=config.arch, cache_dir=cache_dir)
        cold_s = time.perf_counter() - started
        started = time.perf_counter()
        warm = compile_source(text, arch=config.arch, cache_dir=cache_dir)
        warm_s = time.perf_counter() - started
    assert warm.hit and not cold.hit
    counted = isa.count(cold.artefact, config.arch)
    bodies = isa.kernel_bodies(cold.artefact, list(counted))
    required = sum(config.required_bytes().values())
    splits = work.get("num_splits", 1)
    positions = max(1, work["m_per_block"] // (config.heads_q // config.heads_kv))
    masked = roofline.masked_tiles(config.seq_q, config.seq_k, positions, work["n_per_block"]) if config.causal else 0.0
    launches = []
    for number, launch in enumerate(work["launches"]):
        main = number == 0
        body = bodies[launch["name"]]
        launches.append(launch_record(
            launch["name"], launch["grid"], counted[launch["name"]],
            tokens_per_iteration=work["n_per_block"] if main else None,
            kv_tokens=kv_tokens_per_workgroup(config, splits) if main else 0,
            nbytes=required + work["workspace_bytes"] if main else work["workspace_bytes"],
            masked_tiles=masked if main else 0.0, texts=isa.simulated_texts(body),
        ))
    return {"side": "pagedir", "kernel": "pagedir", "launches": launches, "splits": splits,
            "rows_per_workgroup": work["m_per_block"], "workspace_bytes": work["workspace_bytes"],
            "compile": {"cold_s": cold_s, "warm_s": warm_s}}


# ----------------------------------------------------------------------------
# vLLM (the peer environment)

#: The kernels compared, per phase: (name in the report, vLLM wrapper, forced 2D).
PEER_KERNELS = {
    "decode": [("vllm unified 3D", "vllm-unified", False), ("vllm unified 2D", "vllm-unified", True),
               ("vllm decode", "vllm-decode", False)],
    "prefill": [("vllm unified 2D", "vllm-unified", False)],
}


def measure_vllm(config: Config, label: str, peer: str, force_2d: bool) -> dict[str, Any]:
    from benchmarks import vllm_kernels

    shape = vllm_kernels.Shape(config.batch, config.heads_q, config.heads_kv, config.seq_q, config.seq_k,
                               config.head_dim, config.page_tokens, config.dtype, config.causal)
    with tempfile.TemporaryDirectory(prefix="triton-peers-") as cache_dir:
        result = vllm_kernels.compile_peer(peer, shape, config.arch, cache_dir, force_2d=force_2d)
    launches = result["launches"]
    first = launches[0]["constants"]
    group = config.heads_q // config.heads_kv
    if peer == "vllm-unified":
        splits = first["NUM_SEGMENTS_PER_SEQ"]
        tokens = first["TILE_SIZE"]
        rows = min(first["BLOCK_Q"], config.seq_q) * group
        workspace = (config.batch * config.seq_q * config.heads_q * splits * (first["HEAD_SIZE_PADDED"] + 2) * 4
                     if first["IS_3D"] else 0)
    else:
        splits = first["num_kv_splits"]
        tokens = first["BLOCK_N"]
        rows = min(first.get("BLOCK_H", 1), group)
        workspace = config.batch * config.heads_q * splits * (config.head_dim + 1) * 4
    required = sum(config.required_bytes().values())
    records = []
    for number, launch in enumerate(launches):
        main = number == 0
        counted = isa.count(launch["asm"], config.arch, launch_lds_bytes=launch["shared_bytes"])
        name = next(iter(counted))
        body = isa.kernel_bodies(launch["asm"], [name])[name]
        records.append(launch_record(
            launch["kernel"], launch["grid"], counted[name],
            tokens_per_iteration=tokens if main else None,
            kv_tokens=kv_tokens_per_workgroup(config, splits) if main else 0,
            nbytes=required + workspace if main else workspace,
            texts=isa.simulated_texts(body),
        ))
        records[-1]["constants"] = {k: v if isinstance(v, (bool, int, float)) else str(v)
                                    for k, v in launch["constants"].items()}
    return {"side": "vllm", "kernel": label, "launches": records, "splits": splits, "rows_per_workgroup": rows,
            "workspace_bytes": workspace,
            "compile": {"cold_s": sum(launch["cold_s"] for launch in launches),
                        "warm_s": sum(launch["warm_s"] for launch in launches)}}


# ----------------------------------------------------------------------------
# Measuring steps


def run_side(side: str, archs: tuple[str, ...], only: str | None, out: str) -> int:
    configs = [c for c in peer_configurations(archs) if not only or only in c.name]
    records = []
    if side == "pagedir":
        from benchmarks import measure

        measure.warm_up()
        versions = {"pagedir": _git_head()}
        jobs = [(config, lambda c=config: measure_pagedir(c)) for config in configs]
    else:
        from benchmarks import vllm_kernels

        versions = vllm_kernels.versions()
        warm_up_vllm(archs)
        jobs = [(config, lambda c=config, k=kernel: measure_vllm(c, *k))
                for config in configs for kernel in PEER_KERNELS[config.phase]]
    failed = 0
    for number, (config, job) in enumerate(jobs, 1):
        started = time.perf_counter()
        try:
            record = {"config": config.as_dict(), "status": "ok", **job()}
        except Exception as err:  # record it, go on with the others
            failed += 1
            record = {"config": config.as_dict(), "status": "error", "side": side, "error": f"{type(err).__name__}: {err}"}
            if os.environ.get("PAGEDIR_TRACEBACK"):
                import traceback

                traceback.print_exc()
        records.append(record)
        print(f"[{number}/{len(jobs)}] {side} {record.get('kernel', '')} {config.name}: {record['status']} "
              f"({time.perf_counter() - started:.1f} s)" + (f": {record['error']}" if "error" in record else ""),
              flush=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"peers-{side}.json"), "w") as handle:
        json.dump({"versions": versions, "records": records}, handle, indent=1)
        handle.write("\n")
    return 1 if failed == len(jobs) else 0


def warm_up_vllm(archs: tuple[str, ...]) -> None:
    """Compile each wrapper once at a small shape per chip: imports and Triton's set-up are then paid."""
    from benchmarks import vllm_kernels

    small = vllm_kernels.Shape(1, 2, 1, 1, 64, 64, 16, "f16", False)
    with tempfile.TemporaryDirectory(prefix="triton-warm-") as cache_dir:
        for arch in archs:
            for peer in vllm_kernels.PEERS:
                vllm_kernels.compile_peer(peer, small, arch, os.path.join(cache_dir, peer))


def _git_head() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "-C", _ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("pagedir", "vllm", "report"))
    parser.add_argument("--out", default=OUT, help="results directory (default benchmarks/results)")
    parser.add_argument("--arch", action="append", help=f"chips (default {', '.join(PEER_ARCHS)})")
    parser.add_argument("--only", help="only configurations whose name contains this")
    parser.add_argument("--readme", help="README whose Benchmarks section gets the peer headline rows")
    args = parser.parse_args(argv)
    if args.step == "report":
        from benchmarks import peers_report

        return peers_report.write(args.out, args.readme)
    return run_side(args.step, tuple(args.arch or PEER_ARCHS), args.only, args.out)


if __name__ == "__main__":
    sys.exit(main())
