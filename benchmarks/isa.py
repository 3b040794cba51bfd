"""One counter for every kernel's assembly, pagedir's and its peers': the kernel report plus what a
side-by-side comparison needs.

:func:`count` reads amdgcn assembly text (what LLVM prints, whoever drove it) with
:func:`pagedir.backend.report.kernel_reports` (registers, spills, LDS, occupancy, memory
instructions by width, barriers, instructions) and adds:

* matrix instructions: ``v_mfma*``/``v_smfmac*`` (CDNA) and ``v_wmma*``/``v_swmmac*`` (RDNA), and
  their FLOPs from the ``MxNxK`` in the mnemonic (2 per multiply-add);
* scalar loads (``s_load_*``, ``s_buffer_load_*``): kernel arguments and uniform data;
* vector loads by width, buffer/global/flat together (the comparison is about bytes per
  instruction, not about the addressing form);
* the *hot loop*: of the natural loops of the control-flow graph (:mod:`pagedir.backend.loops`), the
  one holding the most vector loads and matrix instructions, the shortest on a tie: the KV loop of
  an attention kernel. Its *common path* (:func:`pagedir.backend.loops.hot_loop_paths`: the fewest
  matrix instructions, pages read one by one) is what a wave runs on every tile; a path with more
  matrix instructions is the *rare arm* of the masked tiles (the causal diagonal), counted apart.
  The common path's instructions per wave, times the waves of a workgroup, over the KV tokens
  one iteration consumes, is the *hot-loop instructions per KV token* of a workgroup. Its
  ``drain_distances``: for each wait that drains vector memory (``s_waitcnt vmcnt(0)``) with a load
  outstanding, the instructions the wave ran since its last vector load (around the back edge): a
  wait right after its loads exposes their whole latency (:mod:`benchmarks.roofline`);
* the kernel's lines from its label even when the label line carries a comment (Triton's
  assembly); the memory tables of the report are counted on those lines;
* LDS allocated at launch: Triton kernels declare no static LDS (``.amdhsa_group_segment_fixed_size 0``)
  and get theirs as dynamic LDS at launch (``metadata.shared``), so occupancy is recomputed
  with static + launch LDS.

Nothing here needs MLIR, Triton or a GPU: the module runs in the project's environment and in
the peer environment of ``make bench-peers`` alike.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

from pagedir.arch import get_chip
from pagedir.backend.occupancy import occupancy, waves_per_workgroup
from pagedir.backend.loops import LoopPaths, basic_blocks, loop_paths, natural_loops
from pagedir.backend.report import access_width_bits, instruction, instruction_statistics, kernel_reports

_MATRIX = {"mfma": ("v_mfma", "v_smfmac"), "wmma": ("v_wmma", "v_swmmac")}
_VECTOR_LOADS = ("buffer_loads", "global_loads", "flat_loads")


def matrix_kind(mnemonic: str) -> str | None:
    for kind, prefixes in _MATRIX.items():
        if mnemonic.startswith(prefixes):
            return kind
    return None


_SHAPE_RE = re.compile(r"_(\d+)x(\d+)x(\d+)")


def matrix_flops(mnemonic: str) -> int:
    """FLOPs of one matrix instruction of a wave from its ``MxNxK`` shape (2 per multiply-add); 0 if none."""
    match = _SHAPE_RE.search(mnemonic) if matrix_kind(mnemonic) else None
    if not match:
        return 0
    m, n, k = (int(g) for g in match.groups())
    return 2 * m * n * k


def is_vector_load(mnemonic: str) -> bool:
    return mnemonic.startswith(("buffer_load", "global_load", "flat_load"))


def load_bytes_per_lane(mnemonic: str) -> int:
    """Bytes one lane of a vector load moves (``dwordx4``/``b128``: 16); 4 for a form without a width."""
    bits = access_width_bits(mnemonic.split("_")[2:])
    return (bits or 32) // 8


def is_scalar_load(mnemonic: str) -> bool:
    return mnemonic.startswith(("s_load_", "s_buffer_load_"))


def kernel_bodies(asm: str, names: list[str]) -> dict[str, list[str]]:
    """The lines of each kernel, from its label to its ``.Lfunc_end``.

    The label line may carry a comment (LLVM prints ``name:   ; @name`` when it compiles a
    module of its own, as Triton's backend does), which the kernel report's reader does not expect.
    """
    lines = asm.splitlines()
    labels = {line.split(";", 1)[0].strip(): index for index, line in enumerate(lines) if line and not line[0].isspace()}
    bodies = {}
    for name in names:
        start = labels.get(f"{name}:")
        body = []
        if start is not None:
            for line in lines[start + 1 :]:
                if line.startswith(".Lfunc_end"):
                    break
                body.append(line)
        bodies[name] = body
    return bodies


def loops(body: list[str]) -> list[list[int]]:
    """The line indices of each natural loop's instructions (its blocks, nested loops included)."""
    blocks = basic_blocks(body)
    return [sorted(line for b in loop.blocks for line in blocks[b].lines) for loop in natural_loops(blocks)]


def span_statistics(body: list[str], lines: list[int] | None = None) -> dict[str, int]:
    """Instructions, matrix instructions, vector and scalar loads, barriers of ``body``'s ``lines`` (all by default)."""
    stats = {"instructions": 0, "mfma": 0, "wmma": 0, "matrix_flops": 0, "vector_loads": 0, "vector_load_bytes": 0,
             "scalar_loads": 0, "barriers": 0}
    for line in body if lines is None else [body[i] for i in lines]:
        text = instruction(line)
        if text is None:
            continue
        mnemonic = text.split()[0]
        stats["instructions"] += 1
        if kind := matrix_kind(mnemonic):
            stats[kind] += 1
        stats["matrix_flops"] += matrix_flops(mnemonic)
        if is_vector_load(mnemonic):
            stats["vector_loads"] += 1
            stats["vector_load_bytes"] += load_bytes_per_lane(mnemonic)
        stats["scalar_loads"] += is_scalar_load(mnemonic)
        stats["barriers"] += mnemonic in ("s_barrier", "s_barrier_signal")
    return stats


def hot_paths(body: list[str]) -> LoopPaths | None:
    """The paths of the loop with the most vector loads + matrix instructions (shortest on a tie)."""
    blocks = basic_blocks(body)
    best = None
    for loop in natural_loops(blocks):
        stats = span_statistics(body, sorted(line for b in loop.blocks for line in blocks[b].lines))
        key = (stats["vector_loads"] + stats["mfma"] + stats["wmma"], -stats["instructions"])
        if best is None or key > best[0]:
            best = (key, loop)
    return None if best is None else loop_paths(body, blocks, best[1])


_DRAIN_RE = re.compile(r"^s_waitcnt(?:_vscnt)?\b.*\bvmcnt\(0\)")


def drain_distances(texts: list[str]) -> list[int]:
    """For each ``vmcnt(0)`` wait of a loop path (instruction texts in the order a wave runs them, around the back
    edge) with a vector load outstanding: the instructions since that load. Waits with nothing in flight are
    left out."""
    size = len(texts)
    loads = {i for i, text in enumerate(texts) if is_vector_load(text.split()[0])}
    drains = [i for i, text in enumerate(texts) if _DRAIN_RE.match(text)]
    found = []
    for i in drains:
        back = next((k for k in range(1, size + 1) if (i - k) % size in loads), None)
        previous = next(k for k in range(1, size + 1) if (i - k) % size in drains)  # itself after a whole turn
        if back is not None and back < previous:
            found.append(back - 1)
    return found


def hot_loop(body: list[str]) -> dict[str, Any] | None:
    """The statistics of the hot loop's common path (:func:`pagedir.backend.loops.hot_loop_paths`), with
    ``all``: those of every block of the loop once, ``shortest_instructions``: the common path with
    adjacent pages, and ``rare``: the statistics of an iteration through the rarely taken arm (None without)."""
    paths = hot_paths(body)
    if paths is None:
        return None
    common = paths.lines(paths.common)
    return {**span_statistics(body, common),
            "drain_distances": drain_distances([instruction(body[line]) for line in common]),
            "all": span_statistics(body, sorted(line for b in paths.loop.blocks for line in paths.blocks[b].lines)),
            "shortest_instructions": len(paths.lines(paths.common_shortest)),
            "rare": None if paths.rare is None else span_statistics(body, paths.lines(paths.rare))}


def kernel_text(body: list[str]) -> list[str]:
    """The kernel's instructions in text order."""
    return [text for text in map(instruction, body) if text]


def hot_loop_text(body: list[str]) -> list[str]:
    """The instructions of the hot loop's common path in the order a wave runs them (for llvm-mca)."""
    paths = hot_paths(body)
    return [] if paths is None else [instruction(body[line]) for line in paths.lines(paths.common)]


def simulated_texts(body: list[str]) -> dict[str, str]:
    """The instruction streams llvm-mca runs for a kernel (:mod:`pagedir.backend.mca`), each one instruction a line:
    ``mca_text``: the hot loop's common path (the whole kernel without a loop); with a loop,
    ``mca_outside_text``: the instructions outside the loop's blocks, in text order (a wave runs them once),
    and with a rarely taken arm, ``mca_rare_text``: the path through it."""
    paths = hot_paths(body)
    if paths is None:
        return {"mca_text": "\n".join(kernel_text(body))}
    inside = {line for b in paths.loop.blocks for line in paths.blocks[b].lines}
    texts = {"mca_text": "\n".join(instruction(body[line]) for line in paths.lines(paths.common)),
             "mca_outside_text": "\n".join(text for line, text in enumerate(map(instruction, body))
                                            if text and line not in inside)}
    if paths.rare is not None:
        texts["mca_rare_text"] = "\n".join(instruction(body[line]) for line in paths.lines(paths.rare))
    return texts


def merged_widths(*tables: dict[str, int]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for table in tables:
        for width, n in table.items():
            merged[width] = merged.get(width, 0) + n
    return merged


def count(asm: str, arch: str, *, launch_lds_bytes: int = 0) -> dict[str, dict[str, Any]]:
    """``{kernel: counters}`` for every kernel in ``asm`` (see the module docstring)."""
    chip = get_chip(arch)
    reports = kernel_reports(asm, chip)
    bodies = kernel_bodies(asm, [r.name for r in reports])
    counted = {}
    for report in reports:
        body = bodies[report.name]
        for key, value in instruction_statistics(body).items():
            setattr(report, key, value)
        whole = span_statistics(body)
        lds = report.lds_bytes + launch_lds_bytes
        occ = occupancy(chip, vgprs=report.vgprs, agprs=report.agprs, sgprs=report.sgprs, lds_bytes=lds,
                        workgroup_size=report.workgroup_size)
        counted[report.name] = {
            **asdict(report),
            "lds_bytes": lds,
            "occupancy": occ.waves_per_simd,
            "occupancy_limits": occ.limits,
            "waves_per_workgroup": waves_per_workgroup(chip, report.workgroup_size),
            "mfma": whole["mfma"],
            "wmma": whole["wmma"],
            "matrix_flops": whole["matrix_flops"],
            "scalar_loads": whole["scalar_loads"],
            "vector_loads": merged_widths(*(getattr(report, table) for table in _VECTOR_LOADS)),
            "hot_loop": hot_loop(body),
        }
    return counted


def per_kv_token(counters: dict[str, Any], tokens_per_iteration: int | None) -> float | None:
    """Hot-loop wave-instructions a workgroup issues per KV token (None without a loop or a tile)."""
    loop = counters.get("hot_loop")
    if not loop or not tokens_per_iteration:
        return None
    return loop["instructions"] * counters["waves_per_workgroup"] / tokens_per_iteration
