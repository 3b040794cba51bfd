"""PEERS.md and peers.json from the records of ``benchmarks/peers.py pagedir`` and ``... vllm``.

One table per phase and chip: per shape, pagedir's row, each peer's row, and the ratio of
pagedir to the best peer on each column; the winner of each cell is in bold, and a table of
wins per column closes the phase. Every time in the ``model`` columns comes from
:mod:`benchmarks.roofline`: a model, not a measurement (nothing here ran on a GPU).
"""

from __future__ import annotations

import copy
import json
import os
import platform
import time
from typing import Any, Callable

from benchmarks import roofline
from pagedir.backend import mca

README_START = "<!-- peers:start (written by `make bench-peers`) -->"
README_END = "<!-- peers:end -->"


# ----------------------------------------------------------------------------
# Columns: (header, value of a kernel record, lower wins?, cell text)


def main_launch(record: dict) -> dict:
    return record["launches"][0]


def counters(record: dict) -> dict:
    return main_launch(record)["counters"]


def bytes_per_load(record: dict) -> float:
    """Bytes a lane moves per vector load instruction of the main kernel, on average."""
    sizes = {"byte": 1, "short": 2, "dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16}
    loads = counters(record)["vector_loads"]
    count = sum(loads.values())
    return sum(sizes.get(w, 4) * n for w, n in loads.items()) / count if count else 0.0


def load_text(record: dict) -> str:
    sizes = {"byte": "1B", "short": "2B", "dword": "4B", "dwordx2": "8B", "dwordx3": "12B", "dwordx4": "16B"}
    loads = counters(record)["vector_loads"]
    order = sorted(loads.items(), key=lambda item: -int(sizes.get(item[0], "0B")[:-1]))
    return " ".join(f"{n}x{sizes.get(w, w)}" for w, n in order) or "-"


def model_launch(launch: dict) -> roofline.Launch:
    """The roofline's view of one launch record: the hot loop's common path every iteration, its rarely taken
    arm on the masked tiles (records written before the loop's paths were counted apart have the loop's
    blocks as their common path and no arm)."""
    c = launch["counters"]
    loop = c.get("hot_loop") or {}
    every = loop.get("all") or {}
    rare = loop.get("rare") or {}

    def matrix(stats: dict) -> int:
        return stats.get("mfma", 0) + stats.get("wmma", 0)

    return roofline.Launch(
        workgroups=launch["workgroups"], waves_per_workgroup=c["waves_per_workgroup"], occupancy=c["occupancy"],
        instructions=c["instructions"], matrix_instructions=c["mfma"] + c["wmma"], matrix_flops=c["matrix_flops"],
        loop_instructions=loop.get("instructions", 0), loop_matrix_instructions=matrix(loop),
        loop_matrix_flops=loop.get("matrix_flops", 0), iterations=launch["iterations"], nbytes=launch["nbytes"],
        loop_all_instructions=every.get("instructions", 0), loop_all_matrix_instructions=matrix(every),
        loop_all_matrix_flops=every.get("matrix_flops", 0),
        rare_instructions=rare.get("instructions", loop.get("instructions", 0)) - loop.get("instructions", 0),
        rare_matrix_instructions=matrix(rare or loop) - matrix(loop),
        rare_matrix_flops=rare.get("matrix_flops", loop.get("matrix_flops", 0)) - loop.get("matrix_flops", 0),
        rare_iterations=launch.get("rare_iterations", 0.0) if rare else 0.0,
        drain_distances=tuple(loop.get("drain_distances", ())))


def model_estimate(record: dict) -> dict[str, Any]:
    chip = roofline.CHIPS[record["config"]["arch"]]
    return roofline.estimate(chip, [model_launch(launch) for launch in record["launches"]])


def loop_per_kv_token(record: dict) -> float | None:
    """Wave-instructions of the hot loop's common path a workgroup issues per KV token; None without a loop."""
    launch = main_launch(record)
    return None if launch.get("straight_line") else launch["per_kv_token"]


def workgroup_per_kv_token(record: dict) -> float | None:
    """Wave-instructions one workgroup of the main kernel issues in all (outside the loop once, the loop's
    common path every iteration, the rare arm on the masked tiles) per KV token it reads."""
    launch = main_launch(record)
    tokens = launch.get("kv_tokens") or _kv_tokens(record)
    if not tokens:
        return None
    per_wave = roofline.wave_instructions(model_launch(launch))
    return per_wave * launch["counters"]["waves_per_workgroup"] / tokens


def grid_per_kv_token(record: dict) -> float:
    """Wave-instructions of every launch over the whole grid per KV token of the cache (B x KV heads x Sk)."""
    config = record["config"]
    total = sum(roofline.wave_instructions(model_launch(launch)) * launch["workgroups"]
                * launch["counters"]["waves_per_workgroup"] for launch in record["launches"])
    return total / (config["batch"] * config["heads_kv"] * config["seq_k"])


def mca_cycles(record: dict, stream: str) -> float | None:
    """llvm-mca's cycles per pass of one instruction stream of the main launch (``mca_text``: the loop's common
    path or a straight-line kernel, ``mca_outside_text``, ``mca_rare_text``: :func:`benchmarks.isa.simulated_texts`),
    kept in the launch; None without that stream or an llvm-mca that knows the chip."""
    launch = main_launch(record)
    cycles = launch.setdefault("mca_cycles", {})
    if not isinstance(cycles, dict):  # a figure of an earlier report: recomputed
        cycles = launch["mca_cycles"] = {}
    if stream not in cycles:
        text = launch.get(stream)
        cycles[stream] = mca.cycles(text.splitlines(), record["config"]["arch"]) if text else None
    return cycles[stream]


def mca_per_kv_token(record: dict) -> float | None:
    """llvm-mca cycles of one iteration of the hot loop's common path x waves per workgroup / KV tokens of an
    iteration: loop bodies with loop bodies; None without a loop (a straight-line kernel), its instructions or
    an llvm-mca."""
    launch = main_launch(record)
    if launch.get("straight_line") or not launch["counters"].get("hot_loop") or not launch.get("tokens_per_iteration"):
        return None
    cycles = mca_cycles(record, "mca_text")
    return None if cycles is None else cycles * launch["counters"]["waves_per_workgroup"] / launch["tokens_per_iteration"]


def workgroup_mca_per_kv_token(record: dict) -> float | None:
    """llvm-mca cycles of all a wave of the main kernel runs (the instructions outside the hot loop once, its
    common path every iteration, the rare arm's extra cycles on the masked tiles; a straight-line kernel once)
    x waves per workgroup / the KV tokens the workgroup reads: whole kernels with whole kernels; None without
    the instruction streams or an llvm-mca."""
    launch = main_launch(record)
    tokens = launch.get("kv_tokens") or _kv_tokens(record)
    if not tokens:
        return None
    if launch.get("straight_line") or not launch["counters"].get("hot_loop"):
        cycles = mca_cycles(record, "mca_text")
    else:
        common, outside = mca_cycles(record, "mca_text"), mca_cycles(record, "mca_outside_text")
        if common is None or outside is None:
            return None
        cycles = outside + launch["iterations"] * common
        if launch.get("rare_iterations"):
            rare = mca_cycles(record, "mca_rare_text")
            if rare is None:
                return None
            cycles += launch["rare_iterations"] * (rare - common)
    return None if cycles is None else cycles * launch["counters"]["waves_per_workgroup"] / tokens


def _kv_tokens(record: dict) -> float:
    """KV tokens a workgroup of the main kernel reads, for records without ``kv_tokens``: its iterations times
    the tokens of one, or without a loop the keys a row sees over the splits."""
    launch = main_launch(record)
    if launch["counters"].get("hot_loop") and launch.get("tokens_per_iteration"):
        return launch["iterations"] * launch["tokens_per_iteration"]
    config = record["config"]
    return roofline.keys_seen(config["seq_q"], config["seq_k"], config["causal"]) / max(1, record.get("splits") or 1)


def lower_bound(config: dict) -> dict[str, Any]:
    from benchmarks.configs import Config

    keys = {k: config[k] for k in Config.__dataclass_fields__ if k in config}
    cfg = Config(**keys)
    flops = roofline.attention_flops(cfg.batch, cfg.heads_q, cfg.seq_q, cfg.seq_k, cfg.head_dim, cfg.causal)
    return {**roofline.lower_bound(roofline.CHIPS[cfg.arch], sum(cfg.required_bytes().values()), flops),
            "bytes": sum(cfg.required_bytes().values()), "flops": flops}


def _num(value: float, digits: int = 1) -> str:
    if value is None:
        return "-"
    if abs(value - round(value)) < 1e-9 and abs(value) < 1e6:
        return str(int(round(value)))
    return f"{value:.{digits}f}"


#: header, value (None: no value), lower is better (None: no winner), text of the cell
Column = tuple[str, Callable[[dict], Any], bool | None, Callable[[dict], str]]
COLUMNS: list[Column] = [
    ("VGPR", lambda r: counters(r)["vgprs"] + counters(r)["agprs"], True,
     lambda r: f"{counters(r)['vgprs']}" + (f"+{counters(r)['agprs']}a" if counters(r)["agprs"] else "")),
    ("SGPR", lambda r: counters(r)["sgprs"], True, lambda r: str(counters(r)["sgprs"])),
    ("spills", lambda r: counters(r)["vgpr_spills"] + counters(r)["sgpr_spills"], True,
     lambda r: str(counters(r)["vgpr_spills"] + counters(r)["sgpr_spills"])),
    ("LDS B", lambda r: counters(r)["lds_bytes"], True, lambda r: str(counters(r)["lds_bytes"])),
    ("waves/SIMD", lambda r: counters(r)["occupancy"], False, lambda r: str(counters(r)["occupancy"])),
    ("MFMA/WMMA", lambda r: counters(r)["mfma"] + counters(r)["wmma"], False,
     lambda r: str(counters(r)["mfma"] + counters(r)["wmma"])),
    ("vector loads", bytes_per_load, False, load_text),
    ("scalar loads", lambda r: counters(r)["scalar_loads"], True, lambda r: str(counters(r)["scalar_loads"])),
    ("barriers", lambda r: counters(r)["barriers"], True, lambda r: str(counters(r)["barriers"])),
    ("instructions", lambda r: counters(r)["instructions"], True, lambda r: str(counters(r)["instructions"])),
    ("loop instr / KV token", loop_per_kv_token, True, lambda r: _num(loop_per_kv_token(r))),
    ("mca cycles / KV token", mca_per_kv_token, True, lambda r: _num(mca_per_kv_token(r))),
    ("workgroup instr / KV token", workgroup_per_kv_token, True, lambda r: _num(workgroup_per_kv_token(r))),
    ("workgroup mca cycles / KV token", workgroup_mca_per_kv_token, True,
     lambda r: _num(workgroup_mca_per_kv_token(r))),
    ("grid instr / KV token", grid_per_kv_token, True, lambda r: _num(grid_per_kv_token(r))),
    ("workgroups", lambda r: sum(launch["workgroups"] for launch in r["launches"]), False,
     lambda r: " + ".join(str(launch["workgroups"]) for launch in r["launches"])),
    ("compile cold ms", lambda r: r["compile"]["cold_s"] * 1e3, True, lambda r: _num(r["compile"]["cold_s"] * 1e3, 0)),
    ("compile warm ms", lambda r: r["compile"]["warm_s"] * 1e3, True, lambda r: _num(r["compile"]["warm_s"] * 1e3, 2)),
    ("model us", lambda r: model_estimate(r)["time_s"] * 1e6, True, lambda r: _num(model_estimate(r)["time_s"] * 1e6, 1)),
]


def mca_note(records: list[dict]) -> str:
    """The caveats of the llvm-mca columns, as the llvm-mca found behaves on the chips of ``records``."""
    tool = mca.llvm_mca()
    if tool is None:
        return ("**llvm-mca** (`benchmarks/mca.py`): not installed when this was written, so the mca columns are `-` "
                "(`make bench-peers` installs Debian's `llvm-22`).")
    archs = list(dict.fromkeys(r["config"]["arch"] for r in records))
    known = [a for a in archs if mca.knows(a)]
    unknown = [a for a in archs if a not in known]
    rewritten = [a for a in known if not mca.takes_buffers(a)]
    note = (f"**llvm-mca** (`benchmarks/mca.py`, `{tool}`, LLVM {mca.version() or 'of unknown version'}): a static "
            f"simulation of one wave alone on its SIMD, each instruction stream repeated {mca.ITERATIONS} times "
            "(cycles per pass); a branch is an instruction of the stream, never taken, so the instructions outside a "
            "loop (and a kernel without one) run every block once, whether a wave would take it or not; a load takes "
            "the scheduling "
            "model's fixed latency, and `s_waitcnt` waits for it. Other waves, memory latency under load and "
            "bandwidth, LDS bank conflicts and waits at barriers are not in it, so it ranks instruction streams, not "
            "kernels.")
    if rewritten:
        note += (f" This llvm-mca aborts on buffer instructions ({', '.join(rewritten)}): each `buffer_*` runs as the "
                 "`global_*` instruction of the same width on the same registers, which its model counts on "
                 "`lgkmcnt` as well (a FLAT instruction), so every `s_waitcnt lgkmcnt` waits for the loads too: the "
                 "figures overstate loops that wait for LDS reads while loads are in flight (llvm-mca 22 runs buffer "
                 "instructions as they are).")
    elif known:
        note += " Buffer instructions run as they are (llvm-mca 19 aborted on them)."
    if unknown:
        note += f" It does not know {', '.join(unknown)} (no figure there)."
    stale = sum(1 for r in records if r["status"] == "ok" and "mca_text" not in main_launch(r))
    if stale:
        note += (f" {stale} records were written before their instruction streams were kept (compiled in an earlier "
                 "run): no llvm-mca figure (`-`).")
    return note


def winners(rows: list[dict], column: Column) -> set[int]:
    _, value, lower, _ = column
    values = [value(r) for r in rows]
    known = [v for v in values if v is not None]
    if lower is None or not known:
        return set()
    best = min(known) if lower else max(known)
    return {i for i, v in enumerate(values) if v is not None and abs(v - best) <= 1e-9 * max(1.0, abs(best))}


def ratio(pagedir: dict, peers: list[dict], column: Column) -> str:
    _, value, lower, _ = column
    ours = value(pagedir)
    theirs = [v for v in (value(p) for p in peers) if v is not None]
    if ours is None or not theirs:
        return "-"
    best = min(theirs) if lower else max(theirs)
    if best == 0:
        return "-" if ours == 0 else "inf"
    return f"{ours / best:.2f}"


# ----------------------------------------------------------------------------
# The report


def shape_name(config: dict) -> str:
    head = f"B={config['batch']} {config['heads_q']}/{config['heads_kv']} heads"
    if config["phase"] == "decode":
        ragged = ", ragged" if config.get("ragged") else ""
        return f"decode GQA {config['heads_q'] // config['heads_kv']}, {head}, Sk {config['seq_k']}{ragged}"
    return f"prefill causal {config['seq_q']}, {head}"


def grouped(records: list[dict]) -> dict[tuple[str, str], dict[str, list[dict]]]:
    """{(phase, arch): {config name: [pagedir record, peer records...]}} in configuration order."""
    out: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for record in records:
        config = record["config"]
        out.setdefault((config["phase"], config["arch"]), {}).setdefault(config["name"], []).append(record)
    return out


def phase_table(shapes: dict[str, list[dict]], wins: dict[str, dict[str, int]]) -> list[str]:
    header = ["kernel", "main kernel"] + [c[0] for c in COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for rows in shapes.values():
        rows = sorted(rows, key=lambda r: r["side"] != "pagedir")  # pagedir first, then the peers in order
        ok = [r for r in rows if r["status"] == "ok"]
        config = rows[0]["config"]
        bound = lower_bound(config)
        lines.append(f"| **{shape_name(config)}** | lower bound {bound['bound_s'] * 1e6:.1f} us ({bound['limit']}: "
                     f"{bound['bytes'] / 1e6:.2f} MB, {bound['flops'] / 1e6:,.1f} MFLOP) |" + " |" * len(COLUMNS))
        best = {c[0]: winners(ok, c) for c in COLUMNS}
        for index, record in enumerate(ok):
            cells = []
            for column in COLUMNS:
                text = column[3](record)
                if index in best[column[0]] and len(ok) > 1:
                    text = f"**{text}**"
                    wins.setdefault(column[0], {}).setdefault(record["kernel"], 0)
                    wins[column[0]][record["kernel"]] += 1
                cells.append(text)
            lines.append(f"| {record['kernel']} | {main_launch(record)['kernel']} | " + " | ".join(cells) + " |")
        for record in rows:
            if record["status"] != "ok":
                lines.append(f"| {record.get('kernel', record['side'])} | {record['status']}: {record.get('error', '')} |"
                             + " |" * len(COLUMNS))
        pagedir = [r for r in ok if r["side"] == "pagedir"]
        peers = [r for r in ok if r["side"] != "pagedir"]
        if pagedir and peers:
            lines.append("| pagedir / best peer | |" + "".join(f" {ratio(pagedir[0], peers, c)} |" for c in COLUMNS))
    return lines


def markdown(meta: dict, records: list[dict]) -> str:
    out = [
        "# pagedir next to vLLM's Triton paged-attention kernels",
        "",
        f"Written by `make bench-peers` on {meta['machine']}; pagedir at {meta['pagedir']}, "
        f"triton {meta['versions'].get('triton')}, vllm {meta['versions'].get('vllm')}, torch {meta['versions'].get('torch')} "
        f"(CPU), {meta['date']}. Nothing ran on a GPU: both sides are compiled for the named chip and read from their "
        "assembly with one counter (`benchmarks/isa.py`).",
        "",
        "**How the peers are compiled.** vLLM's own launch wrappers (`unified_attention`, `decode_attention_fwd`) "
        "are called on CPU tensors laid out as vLLM's Triton backends lay them out, with a compile-only Triton driver "
        "for the chip (`benchmarks/vllm_kernels.py`): each `kernel[grid](...)` compiles and records the grid the wrapper "
        "chose. *vllm unified 3D* is what `TritonAttentionImpl` launches for a small decode batch (16 softmax segments, "
        "then `reduce_segments`), *vllm unified 2D* the same kernel once the batch reaches the backend's threshold "
        "(`MIN_LAUNCH_GRID_SIZE_2D / heads_kv` sequences) and for prefill; *vllm decode* is `decode_attention_fwd` "
        "(the grouped stage-1 kernel under GQA, the per-head one without; then stage 2) with the KV splits of vLLM's "
        "Triton MLA backend (`_compute_num_kv_splits`) and the ROCm launch options (`waves_per_eu`, `kpack`). pagedir "
        "splits decode along the KV sequence (`--num-splits 0`). A *ragged* shape is pagedir's kernel with "
        "`--seq-lens` (the README's main kernel); vLLM's kernels always take `seq_lens`, so its peer rows are the "
        "compile of the same shape without it (the same grid at the same longest sequence).",
        "",
        "**Columns** (the main kernel of each: the first launch): registers, spills, LDS (static + what the launch "
        "allocates; Triton's is dynamic), waves per SIMD from the resources (pagedir's occupancy rules), matrix "
        "instructions, vector loads by bytes per lane (winner: most bytes per load), scalar loads, barriers, static "
        "instructions; *loop instr / KV token*: instructions of the hot loop's common path (the loop with the most "
        "loads and matrix instructions; the path a wave runs on every tile, pages read one by one; the arm only the "
        "masked tiles take, the causal diagonal's three products, is counted apart) x waves per workgroup / KV tokens "
        "one iteration consumes, i.e. wave-instructions a workgroup issues per KV token in its loop (`-`: no loop is "
        "left, one tile per workgroup); *mca cycles / KV token*: llvm-mca's cycles for one iteration of that common "
        "path, x waves per workgroup / KV tokens of an iteration: loop bodies with loop bodies (`-`: no loop); "
        "*workgroup instr / KV token*: all "
        "a workgroup runs (outside the loop once, the common path every iteration, the masked arm on the masked "
        "tiles) x its waves / the KV tokens it reads: whole kernels with whole kernels; *workgroup mca cycles / KV "
        "token*: the same in llvm-mca's cycles (the instructions outside the loop once, the common path's cycles "
        "every iteration, the masked arm's extra cycles on the masked tiles; a kernel without a loop once); "
        "*grid instr / KV token*: the "
        "same over every workgroup of every launch (a split kernel's combine included) / the cache's KV tokens "
        "(B x KV heads x Sk); "
        "*workgroups*: of each launch, from the grid; *compile*: cold = an empty compile cache, in-process after a "
        "warm-up compile (pagedir: L0 text to assembly; Triton: Python to code object), warm = the cache hit. "
        "*model us*: the roofline estimate of all launches (`benchmarks/roofline.py`) — **a model, not a measurement**. "
        "The winner of each cell is in bold (fewer is better except waves, matrix instructions, bytes per load and "
        "workgroups); *pagedir / best peer* divides pagedir's value by the best peer's.",
        "",
        mca_note(records),
        "",
        "**Roofline model.** Lower bound = max(required bytes / HBM bandwidth, FLOPs / dense f16 matrix peak). Estimate "
        "per launch = max(compute, memory) + 2 us launch, where compute = waves per SIMD x max(matrix cycles, VALU "
        "cycles) of a wave's dynamic instructions (hot loop x iterations), memory = max(bytes / bandwidth, rounds of "
        "waves x hot-loop iterations x 1 us latency). Chips: "
        + "; ".join(f"{c.product} ({c.arch}) {c.compute_units} CUs, {c.hbm_bytes_per_s / 1e12:.2f} TB/s, "
                    f"{c.matrix_flops / 1e12:,.0f} TFLOPs f16 matrix, {c.valu_flops / 1e12:.1f} TFLOPs f32 VALU"
                    for c in roofline.CHIPS.values()) + ".",
        "",
    ]
    for (phase, arch), shapes in grouped(records).items():
        wins: dict[str, dict[str, int]] = {}
        out.append(f"## {phase} on {arch} ({roofline.CHIPS[arch].product})")
        out.append("")
        out.extend(phase_table(shapes, wins))
        out.append("")
        out.append("Wins per column (shapes where the kernel has the best value, ties count for each): "
                   + "; ".join(f"{column}: " + ", ".join(f"{k} {n}" for k, n in sorted(w.items(), key=lambda i: -i[1]))
                               for column, w in wins.items()) + ".")
        out.append("")
    return "\n".join(out)


def headline(records: list[dict]) -> str:
    """README rows: gfx942, per shape pagedir and the peer the model finds fastest."""
    lines = ["| gfx942 shape | kernel | VGPR | waves/SIMD | MFMA | loop instr / KV token | mca cycles / KV token | "
             "workgroup instr / KV token | workgroup mca cycles / KV token | workgroups | model us | lower bound us |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (phase, arch), shapes in grouped(records).items():
        if arch != "gfx942":
            continue
        for rows in shapes.values():
            ok = [r for r in rows if r["status"] == "ok"]
            pagedir = [r for r in ok if r["side"] == "pagedir"]
            peers = sorted((r for r in ok if r["side"] != "pagedir"), key=lambda r: model_estimate(r)["time_s"])
            bound = lower_bound(rows[0]["config"])["bound_s"] * 1e6
            for record in pagedir + peers[:1]:
                c = counters(record)
                lines.append(
                    f"| {shape_name(record['config'])} | {record['kernel']} | {c['vgprs'] + c['agprs']} | {c['occupancy']} | "
                    f"{c['mfma'] + c['wmma']} | {_num(loop_per_kv_token(record))} | "
                    f"{_num(mca_per_kv_token(record))} | {_num(workgroup_per_kv_token(record))} | "
                    f"{_num(workgroup_mca_per_kv_token(record))} | "
                    + " + ".join(str(launch["workgroups"]) for launch in record["launches"])
                    + f" | {model_estimate(record)['time_s'] * 1e6:.1f} | {bound:.1f} |")
    return "\n".join(lines)


def update_readme(path: str, meta: dict, records: list[dict], report_path: str) -> None:
    section = "\n".join([
        README_START,
        f"Next to vLLM's Triton kernels (`make bench-peers`: triton {meta['versions'].get('triton')}, vllm "
        f"{meta['versions'].get('vllm')}, compiled for the chip without a GPU and counted with the same counter; the "
        f"fastest peer by the model per shape). *model us* is the roofline estimate, a model and not a measurement; "
        f"loop columns count the hot loop's common path (`-`: no loop left); *workgroup* columns are all one "
        f"workgroup runs per KV token it reads; *mca cycles* are llvm-mca's, one wave alone. All columns, chips, "
        f"ratios and llvm-mca's caveats: "
        f"[{report_path}]({report_path}).\n",
        headline(records),
        README_END,
    ])
    with open(path) as handle:
        text = handle.read()
    if README_START in text and README_END in text:
        before, rest = text.split(README_START, 1)
        text = before + section + rest.split(README_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(path, "w") as handle:
        handle.write(text)


def plot_rows(records: list[dict], arch: str = "gfx942") -> list[tuple[str, list[tuple[str, float, float]]]]:
    """Per shape on ``arch``: (shape, [(kernel, model us, loop instructions per KV token)]), pagedir first."""
    rows = []
    for (_, chip), shapes in grouped(records).items():
        if chip != arch:
            continue
        for kernels in shapes.values():
            ok = sorted((r for r in kernels if r["status"] == "ok"), key=lambda r: r["side"] != "pagedir")
            if ok:
                rows.append((shape_name(ok[0]["config"]),
                             [(r["kernel"], model_estimate(r)["time_s"] * 1e6, main_launch(r)["per_kv_token"] or 0.0)
                              for r in ok]))
    return rows


def plots(records: list[dict], out: str) -> list[str]:
    """peers_gfx942.png: per shape, each kernel's model time (log scale, with the lower bound) and its
    hot-loop instructions per KV token; none without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib is not installed, no plots (pip install '.[bench]')")
        return []
    rows = plot_rows(records)
    if not rows:
        return []
    kernels = sorted({k for _, ks in rows for k, _, _ in ks}, key=lambda k: (k != "pagedir", k))
    width = 0.8 / len(kernels)
    fig, (time_ax, loop_ax) = plt.subplots(2, 1, figsize=(11, 8), sharex=True)
    for i, kernel in enumerate(kernels):
        xs = [n + i * width for n, (_, ks) in enumerate(rows) if any(k == kernel for k, _, _ in ks)]
        times = [t for _, ks in rows for k, t, _ in ks if k == kernel]
        loops = [p for _, ks in rows for k, _, p in ks if k == kernel]
        time_ax.bar(xs, times, width, label=kernel)
        loop_ax.bar(xs, loops, width, label=kernel)
    bounds = [lower_bound(next(r for r in records if shape_name(r["config"]) == shape)["config"])["bound_s"] * 1e6
              for shape, _ in rows]
    time_ax.scatter([n + 0.4 - width / 2 for n in range(len(rows))], bounds, marker="_", s=600, color="black",
                    label="lower bound", zorder=3)
    time_ax.set_yscale("log")
    time_ax.set_ylabel("model us (roofline estimate, not a measurement)")
    time_ax.legend(fontsize=8)
    loop_ax.set_ylabel("hot-loop wave-instructions per KV token\n(common path; straight-line: whole kernel)")
    loop_ax.set_xticks([n + 0.4 - width / 2 for n in range(len(rows))])
    loop_ax.set_xticklabels([shape for shape, _ in rows], rotation=20, ha="right", fontsize=8)
    fig.suptitle("gfx942: pagedir next to vLLM's Triton kernels")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "peers_gfx942.png"), dpi=100)
    plt.close(fig)
    return ["peers_gfx942.png"]


def peer_records(ours: list[dict], peers: list[dict]) -> list[dict]:
    """The peers' records, and for each of pagedir's shapes that has none: a ragged shape (``--seq-lens``) takes
    the records of the same shape without it (vLLM's kernels always take ``seq_lens``: one compile for both,
    the same grid at the same longest sequence), any other shape a row saying it was not compiled."""
    by_name: dict[str, list[dict]] = {}
    for record in peers:
        by_name.setdefault(record["config"]["name"], []).append(record)
    out = list(peers)
    for record in ours:
        config = record["config"]
        if config["name"] in by_name:
            continue
        twin = by_name.get(config["name"].removesuffix("-ragged"), []) if config.get("ragged") else []
        out.extend({**copy.deepcopy(peer), "config": config} for peer in twin)
        if not twin:
            out.append({"config": config, "status": "not compiled", "side": "vllm", "kernel": "vllm",
                        "error": "no peer record for this shape (`benchmarks/peers.py vllm` needs Triton)"})
    return out


def without_streams(record: dict) -> dict:
    """The record without llvm-mca's instruction streams (they stay in ``peers-<side>.json``); its figures stay."""
    launches = [{k: v for k, v in launch.items() if not (k.startswith("mca_") and k.endswith("_text"))}
                for launch in record.get("launches", [])]
    return {**record, "launches": launches} if "launches" in record else record


def write(out: str, readme: str | None) -> int:
    sides = {}
    for side in ("pagedir", "vllm"):
        path = os.path.join(out, f"peers-{side}.json")
        if not os.path.exists(path):
            print(f"error: {path} is missing: run `benchmarks/peers.py {side}` first")
            return 1
        with open(path) as handle:
            sides[side] = json.load(handle)
    records = sides["pagedir"]["records"] + peer_records(sides["pagedir"]["records"], sides["vllm"]["records"])
    order = {r["config"]["name"]: i for i, r in enumerate(sides["pagedir"]["records"])}
    records.sort(key=lambda r: order.get(r["config"]["name"], len(order)))
    meta = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
                       f"{platform.python_version()}",
            "pagedir": sides["pagedir"]["versions"]["pagedir"], "versions": sides["vllm"]["versions"],
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for record in records:
        if record["status"] == "ok":
            record["model"] = model_estimate(record)
            record["mca"] = {"loop_cycles_per_kv_token": mca_per_kv_token(record),
                             "workgroup_cycles_per_kv_token": workgroup_mca_per_kv_token(record)}
        record["lower_bound"] = lower_bound(record["config"])
    with open(os.path.join(out, "peers.json"), "w") as handle:
        json.dump({"meta": meta, "records": [without_streams(r) for r in records]}, handle, indent=1)
        handle.write("\n")
    figures = plots(records, out)
    with open(os.path.join(out, "PEERS.md"), "w") as handle:
        handle.write(markdown(meta, records) + "\n")
        for figure in figures:
            handle.write(f"\n![{figure}]({figure})\n")
    if readme:
        update_readme(readme, meta, records, os.path.relpath(os.path.join(out, "PEERS.md"),
                                                             os.path.dirname(os.path.abspath(readme))))
    print(f"wrote {out}/PEERS.md and {out}/peers.json")
    return 0
