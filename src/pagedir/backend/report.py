"""The kernel report: resources, occupancy and instruction statistics read from amdgcn assembly.

Everything comes from the text LLVM prints, so the figures match the assembly:

* per-kernel descriptor directives (``.amdhsa_kernel NAME`` ... ``.end_amdhsa_kernel``):
  ``.amdhsa_next_free_vgpr``, ``.amdhsa_accum_offset`` (gfx90a+),
  ``.amdhsa_next_free_sgpr``, ``.amdhsa_group_segment_fixed_size`` (LDS bytes),
  ``.amdhsa_private_segment_fixed_size`` (scratch bytes per lane),
  ``.amdhsa_wavefront_size32``;
* resource symbols ``.set NAME.num_vgpr`` / ``.set NAME.num_agpr`` (architectural
  VGPRs and AGPRs) when they are plain numbers, else the metadata's ``.vgpr_count``
  (LLVM sometimes prints both the symbols and the descriptor as expressions);
* code-object metadata (``.amdgpu_metadata``): ``.sgpr_count`` (SGPRs including
  VCC and friends, what the hardware allocates), ``.vgpr_spill_count``,
  ``.sgpr_spill_count``, ``.agpr_count``, ``.wavefront_size``,
  ``.reqd_workgroup_size`` or else ``.max_flat_workgroup_size``;
* the kernel's instructions (from its label to ``.Lfunc_end``): memory operations by
  width, ``s_barrier`` count, buffer loads inside waterfall loops, matrix instructions
  (``v_mfma*``, ``v_smfmac*``, ``v_wmma*``, ``v_swmmac*``), conversions (``v_cvt*``), and
  the instructions of the hot loop: of the natural loops of the control-flow graph
  (:mod:`pagedir.backend.loops`), the one with the most instructions, each instruction of
  its blocks counted once whichever branch a wave takes, loops nested in it included (0
  without a loop): the attention kernels' KV loop, whose count divided by the KV tile's
  tokens is the instructions per KV token (benchmarks/bench.py).

Widths are named like the CDNA mnemonics for global/buffer/flat accesses
(``dword``, ``dwordx2``, ``dwordx3``, ``dwordx4``; ``byte``/``short`` below 32 bits) and
like the LDS mnemonics for LDS (``b32``, ``b64``, ``b96``, ``b128``; ``2xb32``/``2xb64``
for the two-address ``ds_read2``/``ds_load_2addr`` forms); RDNA's ``buffer_load_b128``
counts as ``dwordx4`` and ``ds_load_b128`` as an LDS read ``b128``.

A *waterfall loop* is what LLVM emits when a buffer descriptor is not provably
uniform: ``v_readfirstlane`` the descriptor, run the load for the lanes that agree,
branch back (``s_cbranch_execnz`` to an earlier label) until every lane is done. A buffer
load counts as in a waterfall loop when a backward ``s_cbranch_execnz`` jumps over it to a
label followed by a ``v_readfirstlane`` into one of the load's descriptor registers before
the load. Other backward branches (a uniform loop's ``s_cbranch_scc*``, the ``s_cbranch_execz``
of a divergent ``if`` in a rotated loop) do not make a waterfall, even around a ``readfirstlane``
of a uniform pointer, and neither does a ``readfirstlane`` of another value (a wave-uniform bound)
inside a KV loop whose latch is an ``s_cbranch_execnz``.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from pagedir.arch import Chip, get_chip
from pagedir.backend.loops import LABEL_RE as _LABEL_RE
from pagedir.backend.loops import MATRIX_PREFIXES as _MATRIX_PREFIXES
from pagedir.backend.loops import hot_loop, hot_loop_paths, instruction
from pagedir.backend.occupancy import occupancy, total_vgprs
from pagedir.targets import family_of


@dataclass
class KernelReport:
    name: str
    chip: str
    vgprs: int
    agprs: int
    sgprs: int
    next_free_sgpr: int
    vgpr_spills: int
    sgpr_spills: int
    scratch_bytes: int
    lds_bytes: int
    wave_size: int
    workgroup_size: int
    occupancy: int
    occupancy_limits: dict[str, int]
    buffer_loads: dict[str, int] = field(default_factory=dict)
    buffer_stores: dict[str, int] = field(default_factory=dict)
    global_loads: dict[str, int] = field(default_factory=dict)
    global_stores: dict[str, int] = field(default_factory=dict)
    flat_loads: dict[str, int] = field(default_factory=dict)
    flat_stores: dict[str, int] = field(default_factory=dict)
    lds_reads: dict[str, int] = field(default_factory=dict)
    lds_writes: dict[str, int] = field(default_factory=dict)
    barriers: int = 0
    waterfall_buffer_loads: int = 0
    instructions: int = 0
    matrix_instructions: int = 0
    conversions: int = 0
    loop_instructions: int = 0
    #: The hot loop's common path (:func:`pagedir.backend.loops.hot_loop_paths`): instructions (pages read
    #: one by one), the shortest such path (adjacent pages), its matrix instructions.
    loop_common_instructions: int = 0
    loop_common_shortest: int = 0
    loop_common_matrix: int = 0
    #: The loop's rarely taken arm (a masked tile): instructions and matrix instructions of the whole
    #: iteration that takes it; 0 when the loop has none.
    loop_rare_instructions: int = 0
    loop_rare_matrix: int = 0
    global_waits_per_tile: int = 0
    draining_waits_per_tile: int = 0
    #: KV tokens one iteration of the hot loop reads (the gridwise op's ``n_per_block``); 0 when not known.
    kv_tile_tokens: int = 0
    #: The common path's instructions x waves per workgroup / KV tile tokens (:func:`add_kv_token_figures`).
    loop_instructions_per_kv_token: float | None = None
    #: llvm-mca's cycles per iteration of the common path (one wave), and x waves per workgroup / KV tile tokens.
    mca_cycles_per_iteration: float | None = None
    mca_cycles_per_kv_token: float | None = None
    #: Why the llvm-mca line has no figure ("not found ..."), or the LLVM version that gave it;
    #: None when :func:`add_kv_token_figures` did not run (:func:`kernel_reports` alone).
    mca: str | None = None

    @property
    def total_vgprs(self) -> int:
        return total_vgprs(self.vgprs, self.agprs)


# ----------------------------------------------------------------------------
# Sections of the assembly text.

_DESCRIPTOR_RE = re.compile(r"^\s*\.amdhsa_kernel\s+(\S+)\s*$(.*?)^\s*\.end_amdhsa_kernel", re.M | re.S)
_DIRECTIVE_RE = re.compile(r"^\s*\.amdhsa_(\w+)\s+(-?\d+)\s*$", re.M)
_SET_RE = re.compile(r"^\s*\.set\s+([\w.$]+)\.(num_vgpr|num_agpr),\s*(\d+)\s*$", re.M)
_METADATA_RE = re.compile(r"^\s*\.amdgpu_metadata\s*$(.*?)^\s*\.end_amdgpu_metadata", re.M | re.S)


def parse_descriptors(asm: str) -> dict[str, dict[str, int]]:
    """``{kernel: {directive without .amdhsa_: value}}`` from the kernel descriptors."""
    return {m.group(1): {k: int(v) for k, v in _DIRECTIVE_RE.findall(m.group(2))} for m in _DESCRIPTOR_RE.finditer(asm)}


def parse_resource_symbols(asm: str) -> dict[str, dict[str, int]]:
    """``{kernel: {"num_vgpr": n, "num_agpr": n}}`` from ``.set`` lines with plain numbers."""
    found: dict[str, dict[str, int]] = {}
    for name, key, value in _SET_RE.findall(asm):
        found.setdefault(name, {})[key] = int(value)
    return found


def parse_metadata(asm: str) -> dict[str, dict[str, object]]:
    """``{kernel: {".key": value}}`` for the scalar and list fields of ``amdhsa.kernels``.

    A small reader for the YAML LLVM prints: a kernel starts at ``  - .key: value``,
    its fields sit at four spaces, list items of a field at six; ``.args`` is skipped.
    """
    match = _METADATA_RE.search(asm)
    if not match:
        return {}
    kernels: list[dict[str, object]] = []
    in_kernels = False
    current_list: list | None = None
    for line in match.group(1).splitlines():
        if not line.strip() or line.strip() in ("---", "..."):
            continue
        if not line.startswith(" "):
            in_kernels = line.startswith("amdhsa.kernels:")
            continue
        if not in_kernels:
            continue
        if line.startswith("  - "):
            kernels.append({})
            line = "    " + line[4:]
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if indent == 4 and text.startswith("."):
            key, _, value = text.partition(":")
            value = value.strip()
            current_list = None
            if value:
                kernels[-1][key] = _scalar(value)
            else:
                current_list = []
                kernels[-1][key] = current_list
        elif indent == 6 and text.startswith("- ") and current_list is not None:
            current_list.append(_scalar(text[2:].strip()))
    return {str(k.get(".name")): k for k in kernels}


def _scalar(text: str) -> object:
    try:
        return int(text, 0)
    except ValueError:
        return text.strip("'\"")


def kernel_bodies(asm: str, names: list[str]) -> dict[str, list[str]]:
    """The instruction lines of each kernel: from ``name:`` to its ``.Lfunc_end`` label."""
    lines = asm.splitlines()
    bodies: dict[str, list[str]] = {}
    for name in names:
        try:
            start = lines.index(f"{name}:")
        except ValueError:
            bodies[name] = []
            continue
        body = []
        for line in lines[start + 1 :]:
            if line.startswith(".Lfunc_end"):
                break
            body.append(line)
        bodies[name] = body
    return bodies


# ----------------------------------------------------------------------------
# Instruction statistics.

_MEMORY_WIDTHS = {8: "byte", 16: "short", 32: "dword", 64: "dwordx2", 96: "dwordx3", 128: "dwordx4"}
_WIDTH_TOKEN_RE = re.compile(r"^(?:dword(?:x(\d))?|[bui](8|16|32|64|96|128)|s?byte|s?short|ubyte|ushort)$")
#: The back edge of a waterfall loop: repeat while some lane is left (a uniform loop branches on SCC instead).
_BRANCH_RE = re.compile(r"^s_cbranch_execnz\s+([.\w$]+)")


def access_width_bits(suffixes: list[str]) -> int | None:
    """Bits moved per lane from the mnemonic tokens after the opcode: ``dwordx4`` -> 128, ``b64`` -> 64."""
    for token in suffixes:
        match = _WIDTH_TOKEN_RE.match(token)
        if not match:
            continue
        if token.startswith("dword"):
            return 32 * int(match.group(1) or 1)
        if match.group(2):
            return int(match.group(2))
        return 8 if "byte" in token else 16
    return None


def classify(mnemonic: str) -> tuple[str, str] | None:
    """(category, width key) for a memory instruction we count, else None."""
    parts = mnemonic.split("_")
    prefix = "_".join(parts[:2])
    memory = {
        "buffer_load": "buffer_loads", "buffer_store": "buffer_stores",
        "global_load": "global_loads", "global_store": "global_stores",
        "flat_load": "flat_loads", "flat_store": "flat_stores",
    }
    if prefix in memory:
        if len(parts) > 2 and parts[2] == "format":
            return memory[prefix], "format"
        bits = access_width_bits(parts[2:])
        return memory[prefix], _MEMORY_WIDTHS.get(bits, f"{bits}bit") if bits else "other"
    if parts[0] != "ds" or len(parts) < 3:
        return None
    kind = parts[1]
    rest = parts[2:]
    if kind.startswith(("read", "load")):
        category = "lds_reads"
    elif kind.startswith(("write", "store")):
        category = "lds_writes"
    else:
        return None
    if kind in ("read", "write", "load", "store"):
        paired = bool(rest) and rest[0].startswith("2addr")
        if paired:
            rest = rest[1:]
    else:
        paired = kind.startswith(("read2", "write2"))
        if not paired and kind not in ("read", "write"):
            return None
    bits = access_width_bits(rest)
    if bits is None:
        return None
    return category, ("2x" if paired else "") + f"b{bits}"


def instruction_statistics(body: list[str]) -> dict[str, object]:
    """Counts of memory instructions by width, barriers, waterfall buffer loads, instructions."""
    stats: dict[str, object] = {
        "buffer_loads": {}, "buffer_stores": {}, "global_loads": {}, "global_stores": {},
        "flat_loads": {}, "flat_stores": {}, "lds_reads": {}, "lds_writes": {},
    }
    barriers = 0
    count = 0
    matrix = conversions = 0
    labels: dict[str, int] = {}
    readfirstlanes: list[int] = []
    buffer_loads: list[int] = []
    back_branches: list[tuple[int, str]] = []
    for index, line in enumerate(body):
        if label := _LABEL_RE.match(line.strip()):
            labels[label.group(1)] = index
            continue
        text = instruction(line)
        if text is None:
            continue
        count += 1
        mnemonic = text.split()[0]
        if mnemonic.startswith(_MATRIX_PREFIXES):
            matrix += 1
        if mnemonic.startswith("v_cvt"):
            conversions += 1
        if mnemonic in ("s_barrier", "s_barrier_signal"):
            barriers += 1
        if mnemonic.startswith("v_readfirstlane"):
            readfirstlanes.append((index, _sgprs(text.split(None, 1)[1].split(",")[0])))
        if branch := _BRANCH_RE.match(text):
            back_branches.append((index, branch.group(1)))
        if found := classify(mnemonic):
            category, width = found
            table = stats[category]
            table[width] = table.get(width, 0) + 1
            if category == "buffer_loads":
                descriptor = next((_sgprs(o) for o in text.split(None, 1)[1].split(", ") if o.startswith("s[")), set())
                buffer_loads.append((index, descriptor))
    stats["barriers"] = barriers
    stats["instructions"] = count
    stats["matrix_instructions"] = matrix
    stats["conversions"] = conversions
    loop = hot_loop(body)
    stats["loop_instructions"] = loop[0].instructions if loop else 0
    stats.update(loop_path_statistics(body))
    stats["waterfall_buffer_loads"] = sum(
        1 for load in buffer_loads if _in_waterfall(load, labels, readfirstlanes, back_branches)
    )
    return stats


def loop_path_statistics(body: list[str]) -> dict[str, int]:
    """The ``loop_common_*`` and ``loop_rare_*`` counts of :class:`KernelReport` (all 0 without a loop)."""
    paths = hot_loop_paths(body)
    names = ("loop_common_instructions", "loop_common_shortest", "loop_common_matrix", "loop_rare_instructions",
             "loop_rare_matrix")
    if paths is None:
        return dict.fromkeys(names, 0)

    def count(path: list[int] | None) -> tuple[int, int]:
        if path is None:
            return 0, 0
        texts = [instruction(body[line]) or "" for line in paths.lines(path)]
        return len(texts), sum(1 for t in texts if t.startswith(_MATRIX_PREFIXES))

    common, common_matrix = count(paths.common)
    rare, rare_matrix = count(paths.rare)
    return dict(zip(names, (common, count(paths.common_shortest)[0], common_matrix, rare, rare_matrix)))


#: Any branch to a label.
_ANY_BRANCH_RE = re.compile(r"^s_(?:c)?branch(?:_\w+)?\s+([.\w$]+)")
#: A wait on vector memory (global, buffer, flat loads and stores): ``s_waitcnt vmcnt(N)``, alone or with other counters.
_VMCNT_WAIT_RE = re.compile(r"^s_waitcnt(?:_vscnt)?\b.*\bvmcnt\((\d+)\)")
_VECTOR_MEMORY_RE = re.compile(r"^(?:buffer|global|flat)_")


def global_waits_per_tile(body: list[str]) -> tuple[int, int]:
    """(waits, draining waits) on global data in one iteration of the hot loop (the natural loop with
    the most instructions, :mod:`pagedir.backend.loops`: the KV loop of an attention kernel).

    A wait is an ``s_waitcnt`` with a ``vmcnt``; a run of them with nothing but ALU and LDS
    instructions in between (``vmcnt(7)``, ``ds_write``, ``vmcnt(6)``, ...: a batch of loads taken
    as it arrives) counts once, a label, branch, barrier or vector-memory instruction ends a run.
    A wait *drains* when its run ends at ``vmcnt(0)``: nothing stays in flight, so it also waits for
    the loads issued last. A pipelined loop waits with ``vmcnt(N > 0)`` for the tile issued one
    iteration earlier while the next tile's loads stay in flight. (0, 0) without a loop."""
    found = hot_loop(body)
    if found is None:
        return 0, 0
    runs: list[int] = []  # the last vmcnt of each run
    in_run = False
    previous = None
    for index in found[1]:  # the loop's instructions in text order; a label between two ends a run
        if previous is not None and any(_LABEL_RE.match(line.strip()) for line in body[previous + 1:index]):
            in_run = False
        previous = index
        text = instruction(body[index])
        if wait := _VMCNT_WAIT_RE.match(text):
            if in_run:
                runs[-1] = int(wait.group(1))
            else:
                runs.append(int(wait.group(1)))
            in_run = True
        elif _VECTOR_MEMORY_RE.match(text) or _ANY_BRANCH_RE.match(text) or text.startswith("s_barrier"):
            in_run = False
    return len(runs), sum(1 for last in runs if last == 0)


def _sgprs(operand: str) -> set[int]:
    """The scalar registers an operand names: ``s4`` or ``s[4:7]`` (none for anything else)."""
    if match := re.fullmatch(r"s(\d+)", operand.strip()):
        return {int(match.group(1))}
    if match := re.fullmatch(r"s\[(\d+):(\d+)\]", operand.strip()):
        return set(range(int(match.group(1)), int(match.group(2)) + 1))
    return set()


def _in_waterfall(load: tuple[int, set[int]], labels: dict[str, int], readfirstlanes: list[tuple[int, set[int]]],
                  branches: list[tuple[int, str]]) -> bool:
    at_load, descriptor = load
    for at, target in branches:
        start = labels.get(target)
        if start is None or not start < at_load < at:
            continue
        if any(start < r < at_load and written & descriptor for r, written in readfirstlanes):
            return True
    return False


# ----------------------------------------------------------------------------
# The report.


def kernel_reports(asm: str, chip: Chip | str) -> list[KernelReport]:
    """One :class:`KernelReport` per kernel descriptor in ``asm`` (an NVIDIA chip's PTX:
    :mod:`pagedir.backend.ptx_report`)."""
    chip = get_chip(chip) if isinstance(chip, str) else chip
    if family_of(chip).assembly == "ptx":
        from pagedir.backend.ptx_report import kernel_reports as ptx_kernel_reports

        return ptx_kernel_reports(asm, chip)
    descriptors = parse_descriptors(asm)
    symbols = parse_resource_symbols(asm)
    metadata = parse_metadata(asm)
    bodies = kernel_bodies(asm, list(descriptors))
    reports = []
    for name, directives in descriptors.items():
        meta = metadata.get(name, {})
        sets = symbols.get(name, {})
        agprs = int(sets.get("num_agpr", meta.get(".agpr_count", 0)))
        vgprs = sets.get("num_vgpr")
        if vgprs is None and ".vgpr_count" in meta:
            # The .set and the descriptor hold expressions (max(190, amdgpu.max_num_vgpr)) in some
            # modules; the metadata's count is round_up(VGPRs, 4) + AGPRs, a plain number.
            vgprs = int(meta[".vgpr_count"]) - agprs
        if vgprs is None:
            next_free = directives.get("next_free_vgpr", 0)
            vgprs = directives["accum_offset"] if agprs and "accum_offset" in directives else next_free
        next_free_sgpr = directives.get("next_free_sgpr", 0)
        sgprs = int(meta.get(".sgpr_count", next_free_sgpr))
        if ".wavefront_size" in meta:
            wave_size = int(meta[".wavefront_size"])
        else:
            wave_size = 32 if directives.get("wavefront_size32") else 64
        required = meta.get(".reqd_workgroup_size")
        if isinstance(required, list) and required:
            workgroup_size = 1
            for extent in required:
                workgroup_size *= int(extent)
        else:
            workgroup_size = int(meta.get(".max_flat_workgroup_size", 1024))
        lds_bytes = directives.get("group_segment_fixed_size", 0)
        occ = occupancy(chip, vgprs=vgprs, agprs=agprs, sgprs=sgprs, lds_bytes=lds_bytes, workgroup_size=workgroup_size)
        stats = instruction_statistics(bodies.get(name, []))
        stats["global_waits_per_tile"], stats["draining_waits_per_tile"] = global_waits_per_tile(bodies.get(name, []))
        reports.append(
            KernelReport(
                name=name, chip=chip.name, vgprs=int(vgprs), agprs=agprs, sgprs=sgprs, next_free_sgpr=next_free_sgpr,
                vgpr_spills=int(meta.get(".vgpr_spill_count", 0)), sgpr_spills=int(meta.get(".sgpr_spill_count", 0)),
                scratch_bytes=directives.get("private_segment_fixed_size", 0), lds_bytes=lds_bytes,
                wave_size=wave_size, workgroup_size=workgroup_size,
                occupancy=occ.waves_per_simd, occupancy_limits=occ.limits, **stats,
            )
        )
    return reports


MCA_NOT_FOUND = "not found (install llvm-19 or newer, or set LLVM_MCA)"


def waves_per_workgroup(r: KernelReport) -> int:
    return -(-r.workgroup_size // r.wave_size)


def add_kv_token_figures(reports: list[KernelReport], asm: str, kv_tiles: dict[str, int]) -> None:
    """Per KV token figures of each AMD kernel's hot loop, its common path (:mod:`pagedir.backend.loops`): the
    instructions and llvm-mca's cycles (:mod:`pagedir.backend.mca`) of one iteration x the workgroup's waves
    (each runs the loop over the whole tile) / ``kv_tiles[kernel]``, the KV tokens an iteration reads (the
    tiling; absent: no per token figure). Like PEERS.md's columns: loop bodies per workgroup."""
    from pagedir.backend import mca

    bodies = kernel_bodies(asm, [r.name for r in reports])
    for r in reports:
        if family_of(get_chip(r.chip)).assembly == "ptx":
            continue
        r.kv_tile_tokens = kv_tiles.get(r.name, 0)
        waves = waves_per_workgroup(r)
        if r.loop_instructions and r.kv_tile_tokens:
            r.loop_instructions_per_kv_token = r.loop_common_instructions * waves / r.kv_tile_tokens
        paths = hot_loop_paths(bodies[r.name])
        if paths is None:
            r.mca = "- (no loop)"
            continue
        tool = mca.llvm_mca()
        if tool is None:
            r.mca = MCA_NOT_FOUND
            continue
        if not mca.knows(r.chip):
            r.mca = f"{tool} does not know {r.chip}"
            continue
        r.mca_cycles_per_iteration = mca.cycles([instruction(bodies[r.name][line]) for line in paths.lines(paths.common)],
                                                r.chip)
        if r.mca_cycles_per_iteration is None:
            r.mca = f"{tool} failed on the loop"
            continue
        r.mca = f"LLVM {mca.version() or '(unknown version)'}"
        if r.kv_tile_tokens:
            r.mca_cycles_per_kv_token = r.mca_cycles_per_iteration * waves / r.kv_tile_tokens


def to_json(reports: list[KernelReport]) -> str:
    return json.dumps({"kernels": [asdict(r) for r in reports]}, indent=2) + "\n"


def _widths(table: dict[str, int]) -> str:
    return ", ".join(f"{n} x {w}" for w, n in sorted(table.items(), key=lambda item: _width_order(item[0]))) or "-"


def _width_order(key: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", key.replace("dwordx", "dword"))
    return (int(digits[-1]) if digits else 0, key)


def _loop_paths_text(r: KernelReport) -> str:
    if not r.loop_instructions:
        return "-"
    common = f"{r.loop_common_shortest}-{r.loop_common_instructions}" \
        if r.loop_common_shortest != r.loop_common_instructions else str(r.loop_common_instructions)
    text = f"common {common} ({r.loop_common_matrix} matrix)"
    if r.loop_rare_instructions:
        text += f", rare arm {r.loop_rare_instructions} ({r.loop_rare_matrix} matrix)"
    return text


def format_table(reports: list[KernelReport]) -> str:
    """A readable report: one block per kernel, one resource or statistic per line."""
    out = []
    for r in reports:
        limits = ", ".join(f"{k} {v}" for k, v in r.occupancy_limits.items())
        if family_of(get_chip(r.chip)).assembly == "ptx":
            out.extend(_nvidia_rows(r, limits))
            continue
        rows = [
            ("VGPRs", f"{r.vgprs} arch + {r.agprs} acc = {r.total_vgprs}" if r.agprs else f"{r.vgprs}"),
            ("SGPRs", str(r.sgprs)),
            ("spills", f"{r.vgpr_spills} VGPR, {r.sgpr_spills} SGPR"),
            ("scratch", f"{r.scratch_bytes} bytes"),
            ("LDS", f"{r.lds_bytes} bytes"),
            ("wave size", str(r.wave_size)),
            ("workgroup size", str(r.workgroup_size)),
            ("occupancy", f"{r.occupancy} waves/SIMD (limits: {limits})"),
            ("buffer loads", _widths(r.buffer_loads)),
            ("buffer stores", _widths(r.buffer_stores)),
            ("global loads", _widths(r.global_loads)),
            ("global stores", _widths(r.global_stores)),
            ("flat loads", _widths(r.flat_loads)),
            ("flat stores", _widths(r.flat_stores)),
            ("LDS reads", _widths(r.lds_reads)),
            ("LDS writes", _widths(r.lds_writes)),
            ("s_barrier", str(r.barriers)),
            ("waterfall loads", str(r.waterfall_buffer_loads)),
            ("instructions", str(r.instructions)),
            ("matrix instrs", str(r.matrix_instructions)),
            ("v_cvt", str(r.conversions)),
            ("loop instrs", str(r.loop_instructions)),
            ("loop paths", _loop_paths_text(r)),
            ("global waits", f"{r.global_waits_per_tile} per loop iteration, {r.draining_waits_per_tile} at vmcnt(0)"),
            *_kv_token_rows(r),
        ]
        out.append(f"kernel {r.name} ({r.chip})")
        out.extend(f"  {label:<16} {value}" for label, value in rows)
    return "\n".join(out) + "\n"


def _kv_token_rows(r: KernelReport) -> list[tuple[str, str]]:
    """The per KV token and llvm-mca lines (none when :func:`add_kv_token_figures` did not run)."""
    if r.mca is None:
        return []
    if r.loop_instructions_per_kv_token is not None:
        per_token = (f"{r.loop_instructions_per_kv_token:.2f} loop instrs (common path x {waves_per_workgroup(r)} waves "
                     f"/ {r.kv_tile_tokens}-token KV tile)")
    else:
        per_token = "- (no loop)" if not r.loop_instructions else "- (KV tile not known)"
    mca = r.mca
    if r.mca_cycles_per_iteration is not None:
        mca = f"{r.mca_cycles_per_iteration:.1f} cycles per loop iteration (common path, one wave)"
        if r.mca_cycles_per_kv_token is not None:
            mca += f", {r.mca_cycles_per_kv_token:.2f} per KV token"
        mca += f"; {r.mca}"
    return [("per KV token", per_token), ("llvm-mca", mca)]


def _nvidia_rows(r: KernelReport, limits: str) -> list[str]:
    """An NVIDIA kernel's block (:mod:`pagedir.backend.ptx_report`): CUDA's names; instructions, mma, barriers and
    the hot loop from the SASS where nvdisasm is installed (else the PTX), memory widths from the PTX."""
    chip = get_chip(r.chip)
    rows = [
        ("registers", str(r.vgprs)),
        ("spills", f"{r.vgpr_spills} registers ({r.scratch_bytes} bytes stack frame)"),
        ("shared memory", f"{r.lds_bytes} bytes"),
        ("block size", str(r.workgroup_size)),
        ("occupancy", f"{r.occupancy * chip.simds_per_cu} warps/SM ({r.occupancy} per sub-partition; limits: {limits})"),
        ("global loads", _widths(r.global_loads)),
        ("global stores", _widths(r.global_stores)),
        ("generic loads", _widths(r.flat_loads)),
        ("shared reads", _widths(r.lds_reads)),
        ("shared writes", _widths(r.lds_writes)),
        ("bar.sync", str(r.barriers)),
        ("instructions", str(r.instructions)),
        ("mma", str(r.matrix_instructions)),
        ("cvt (PTX)", str(r.conversions)),
        ("loop instrs", str(r.loop_instructions)),
    ]
    return [f"kernel {r.name} ({r.chip})", *(f"  {label:<16} {value}" for label, value in rows)]
