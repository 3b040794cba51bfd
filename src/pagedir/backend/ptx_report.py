"""The kernel report of the NVIDIA family: resources from ``ptxas -v``, instruction statistics from the PTX.

* registers, spills, stack frame and static shared memory per kernel: ``ptxas -v`` on the PTX
  (:mod:`pagedir.backend.ptxas`; the report needs it, as registers decide the occupancy);
* the occupancy: CUDA's rules through :func:`pagedir.backend.occupancy.occupancy` (warps per SM
  sub-partition: multiply by 4 for warps per SM), the block size from ``.reqntid`` / ``.maxntid``;
* from the kernel's PTX body (``.entry NAME(...) { ... }``): memory instructions by width
  (``ld.global.v4.b32`` is a 128-bit global load, ``dwordx4`` like the AMD tables; ``ld.shared`` /
  ``st.shared`` are the LDS reads and writes, ``b128``; ``ldmatrix`` reads as ``ldmatrix.x4[.trans]``),
  ``cp.async`` copies (as LDS writes, ``async`` widths), ``bar.sync`` barriers, tensor-core instructions (``mma.sync``, ``wgmma``), conversions
  (``cvt``) and the hot loop's instructions (:mod:`pagedir.backend.loops` on the PTX's control-flow
  graph: ``bra`` and ``@%p bra``). PTX instructions are virtual: ptxas schedules and may fold them, so
  where ``nvdisasm`` is installed (the ``nvidia-cuda-nvdisasm`` wheel of the ``nvidia`` extra) the
  instruction, tensor-core (``HMMA``), barrier (``BAR``) and hot-loop counts are the SASS's of the cubin
  ptxas made (``nvdisasm -c``), the memory widths stay the PTX's.

KernelReport's fields keep their AMD names: ``vgprs`` holds the registers per thread, ``vgpr_spills``
the 32-bit registers spilled (spill-store bytes / 4), ``scratch_bytes`` the stack frame,
``lds_bytes`` the shared memory; SGPRs, AGPRs and buffer loads are 0.
"""

from __future__ import annotations

import re

from pagedir.arch import Chip
from pagedir.backend.loops import hot_loop
from pagedir.backend.occupancy import occupancy
from pagedir.backend.ptxas import PtxasError, assemble, disassemble, parse_resources

_ENTRY_RE = re.compile(r"^\.(?:visible\s+)?\.entry\s+([\w$]+)\s*\(", re.M)
_NTID_RE = re.compile(r"^\.(reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", re.M)
_PREDICATE_RE = re.compile(r"^@!?%\w+\s+")
_WIDTH_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
               "b32": 32, "u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64}
_GLOBAL_WIDTHS = {8: "byte", 16: "short", 32: "dword", 64: "dwordx2", 96: "dwordx3", 128: "dwordx4"}


def ptx_bodies(ptx: str) -> dict[str, tuple[str, list[str]]]:
    """``{kernel: (header, body lines)}``: the text from ``.entry`` to its ``{`` and the lines inside."""
    lines = ptx.splitlines()
    found = {}
    for match in _ENTRY_RE.finditer(ptx):
        start = ptx.count("\n", 0, match.start())
        open_at = next(i for i in range(start, len(lines)) if lines[i].strip() == "{")
        close_at = next(i for i in range(open_at + 1, len(lines)) if lines[i].rstrip() == "}")
        found[match.group(1)] = ("\n".join(lines[start:open_at]), lines[open_at + 1 : close_at])
    return found


def loop_lines(body: list[str]) -> list[str]:
    """The PTX body in the branch syntax :mod:`pagedir.backend.loops` reads: ``@%p bra L`` is a conditional
    branch, ``bra L`` one that always goes, ``ret`` / ``exit`` end; declarations and braces are dropped."""
    out = []
    for line in body:
        text = line.split("//", 1)[0].strip().rstrip(";").strip()
        if not text or text in ("{", "}") or text.startswith("."):
            continue
        if text.endswith(":"):
            out.append(text)
            continue
        predicated = bool(_PREDICATE_RE.match(text))
        text = _PREDICATE_RE.sub("", text)
        mnemonic, _, rest = text.partition(" ")
        if mnemonic.split(".")[0] == "bra":
            out.append(f"s_cbranch_p {rest.strip()}" if predicated else f"s_branch {rest.strip()}")
        elif mnemonic in ("ret", "exit"):
            out.append("s_endpgm")
        else:
            out.append(text)
    return out


def access_bits(mnemonic: str) -> int | None:
    parts = mnemonic.split(".")
    vector = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
    bits = next((_WIDTH_BITS[p] for p in reversed(parts) if p in _WIDTH_BITS), None)
    return None if bits is None else vector * bits


def instruction_statistics(lines: list[str]) -> dict[str, object]:
    stats: dict[str, object] = {key: {} for key in ("global_loads", "global_stores", "flat_loads", "flat_stores",
                                                     "lds_reads", "lds_writes")}
    counts = {"instructions": 0, "matrix_instructions": 0, "conversions": 0, "barriers": 0}
    for text in lines:
        if text.endswith(":"):
            continue
        counts["instructions"] += 1
        mnemonic = text.split()[0]
        parts = mnemonic.split(".")
        op = parts[0]
        if op in ("mma", "wgmma"):
            counts["matrix_instructions"] += 1
        elif op == "cvt":
            counts["conversions"] += 1
        elif op in ("bar", "barrier") and "sync" in parts:
            counts["barriers"] += 1
        if op == "ldmatrix":  # ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16: an LDS read of 1, 2 or 4 matrices
            key = "ldmatrix." + ".".join(p for p in parts if p in ("x1", "x2", "x4", "trans"))
            stats["lds_reads"][key] = stats["lds_reads"].get(key, 0) + 1
            continue
        if mnemonic.startswith("cp.async") and "shared" in mnemonic:
            size = re.search(r",\s*(\d+)", text)
            key = f"async {8 * int(size.group(1))}bit" if size else "async"
            stats["lds_writes"][key] = stats["lds_writes"].get(key, 0) + 1
            continue
        if op not in ("ld", "st") or "param" in parts:
            continue
        bits = access_bits(mnemonic)
        if "shared" in parts:
            category, width = ("lds_reads" if op == "ld" else "lds_writes"), f"b{bits}"
        else:
            space = "global" if "global" in parts else "flat"
            category = f"{space}_{'loads' if op == 'ld' else 'stores'}"
            width = _GLOBAL_WIDTHS.get(bits, f"{bits}bit")
        stats[category][width] = stats[category].get(width, 0) + 1
    stats.update(counts)
    loop = hot_loop(lines)
    stats["loop_instructions"] = loop[0].instructions if loop else 0
    return stats


_SASS_SECTION_RE = re.compile(r"^//-+\s+\.text\.([\w$]+)\s+-+\s*$", re.M)
_SASS_ADDRESS_RE = re.compile(r"^/\*[0-9a-f]+\*/\s*")
_SASS_TARGET_RE = re.compile(r"`\(([.\w$]+)\)")


def sass_bodies(sass: str) -> dict[str, list[str]]:
    """``{kernel: lines}`` of ``nvdisasm -c`` output, one section per kernel."""
    sections = list(_SASS_SECTION_RE.finditer(sass))
    return {m.group(1): sass[m.end():sections[i + 1].start() if i + 1 < len(sections) else len(sass)].splitlines()
            for i, m in enumerate(sections)}


def sass_loop_lines(body: list[str]) -> list[str]:
    """SASS in the branch syntax of :mod:`pagedir.backend.loops`: ``@P0 BRA `(L)`` branches conditionally, ``BRA``
    always, an unpredicated ``EXIT`` / ``RET`` ends; the ``NOP`` padding after the end is dropped."""
    out = []
    for line in body:
        text = line.strip().rstrip(";").strip()
        if re.match(r"^[.\w$]+:$", text):
            out.append(text)
            continue
        if not text.startswith("/*"):
            continue
        text = _SASS_ADDRESS_RE.sub("", text).strip().rstrip(";").strip()
        predicated = text.startswith("@")
        instruction = text.split(None, 1)[1] if predicated else text
        mnemonic = instruction.split()[0]
        if mnemonic == "NOP":
            continue
        if mnemonic.split(".")[0] == "BRA" and (target := _SASS_TARGET_RE.search(instruction)):
            out.append(f"s_cbranch_p {target.group(1)}" if predicated else f"s_branch {target.group(1)}")
        elif mnemonic in ("EXIT", "RET") and not predicated:
            out.append("s_endpgm")
        else:
            out.append(instruction)
    return out


def sass_statistics(lines: list[str]) -> dict[str, int]:
    """Instructions, tensor-core instructions (``HMMA``, ``HGMMA``), barriers and the hot loop's instructions."""
    counts = {"instructions": 0, "matrix_instructions": 0, "barriers": 0}
    for text in lines:
        if text.endswith(":"):
            continue
        counts["instructions"] += 1
        mnemonic = text.split()[0].split(".")[0] if not text.startswith("s_") else text.split()[0]
        counts["matrix_instructions"] += mnemonic in ("HMMA", "HGMMA")
        counts["barriers"] += mnemonic == "BAR"
    loop = hot_loop(lines)
    counts["loop_instructions"] = loop[0].instructions if loop else 0
    return counts


def kernel_reports(ptx: str, chip: Chip) -> list:
    """One :class:`pagedir.backend.report.KernelReport` per ``.entry`` of ``ptx`` (module docstring)."""
    from pagedir.backend.report import KernelReport
    from pagedir.backend.translate import BackendError

    try:
        cubin, verbose = assemble(ptx, chip.name)
        sass = disassemble(cubin)
    except PtxasError as err:
        raise BackendError(f"the kernel report of an NVIDIA kernel needs ptxas's resource counts: {err}") from None
    resources = parse_resources(verbose)
    machine_code = sass_bodies(sass) if sass is not None else {}
    reports = []
    for name, (header, body) in ptx_bodies(ptx).items():
        used = resources[name]
        ntid = _NTID_RE.search(header)
        workgroup_size = 1024
        if ntid:
            workgroup_size = 1
            for extent in ntid.groups()[1:]:
                workgroup_size *= int(extent or 1)
        occ = occupancy(chip, vgprs=used.registers, lds_bytes=used.shared_bytes, workgroup_size=workgroup_size)
        stats = instruction_statistics(loop_lines(body))
        if name in machine_code:  # what runs: SASS's counts of instructions, HMMA, BAR and the hot loop
            stats.update(sass_statistics(sass_loop_lines(machine_code[name])))
        reports.append(KernelReport(
            name=name, chip=chip.name, vgprs=used.registers, agprs=0, sgprs=0, next_free_sgpr=0,
            vgpr_spills=used.spill_store_bytes // 4, sgpr_spills=0, scratch_bytes=used.stack_bytes,
            lds_bytes=used.shared_bytes, wave_size=chip.wave_size, workgroup_size=workgroup_size,
            occupancy=occ.waves_per_simd, occupancy_limits=occ.limits, **stats,
        ))
    return reports
