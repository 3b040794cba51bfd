"""Cycles per iteration of a kernel's hot loop from llvm-mca, LLVM's static pipeline simulator.

A second opinion next to the instruction counts of :mod:`benchmarks.isa`, with its own limits:

* llvm-mca simulates **one wave alone** on its SIMD, the loop's instructions repeated back to back
  (``-iterations``); other waves, the memory system's latency and bandwidth, LDS bank conflicts
  and barriers' waits on other waves are not in it. Its AMDGPU model gives each instruction a
  latency and a unit (scheduling model ``SIGfx940`` for CDNA3, ``SIGfx11`` for RDNA3); ``s_waitcnt``
  waits for the counted loads as modelled.
* what runs is the loop's **common path** (:func:`pagedir.backend.loops.hot_loop_paths`: the blocks a
  wave runs on every tile, in order, its branches kept as instructions), or the whole kernel when no
  loop is left (a straight-line kernel: one pass).
* llvm-mca 19 (Debian's ``llvm-19``) rejects buffer instructions (it aborts on them), so for an
  llvm-mca that rejects them (:func:`takes_buffers`) each ``buffer_load_*`` / ``buffer_store_*`` is
  rewritten as the ``global_*`` instruction of the same width, on the same data and address
  registers (the descriptor's base pair as ``saddr``); direct-to-LDS loads (``... lds``) become
  ``global_load_lds_dword``. Its model counts a ``global_*`` instruction on ``lgkmcnt`` as well
  (a FLAT instruction may reach LDS), so each ``s_waitcnt lgkmcnt`` then waits for the loads too:
  a loop that waits for LDS reads while its loads are in flight comes out slower (vLLM's causal
  prefill loop on gfx942: 506 cycles against 359 with the buffer loads as they are). LLVM 22
  (Debian's ``llvm-22``) runs buffer instructions as they are. llvm-mca 19 does
  not know gfx950 nor parse gfx1100's 16-bit register halves (``v1.l``) that Triton's newer LLVM
  writes: a chip llvm-mca does not know, or instructions it does not parse, get no figure.

``cycles(lines, arch)`` returns llvm-mca's total cycles over its iterations, per iteration; the kernel
report (``pagedir-compile --report``) and ``benchmarks/mca.py`` / ``benchmarks/peers_report.py`` use it.
The tool is found anew on each call (``$LLVM_MCA`` may change); what it answers is cached per tool.
A tool that cannot be run counts as none found: no figure, never an error.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from functools import cache

#: Loop iterations llvm-mca simulates (the steady state dominates: the first iteration's start-up is 1/N).
ITERATIONS = 20

_BUFFER_RE = re.compile(r"^buffer_(load|store)_(\w+?)\s+(.*)$")
_SGPR_QUAD_RE = re.compile(r"s\[(\d+):\d+\]")
_TOTAL_RE = re.compile(r"^Total Cycles:\s+(\d+)", re.M)


def llvm_mca() -> str | None:
    """An llvm-mca that knows AMDGPU: ``$LLVM_MCA`` (a path or a name on the PATH), else the newest ``/usr/lib/llvm-N`` (N >= 19), else
    ``llvm-mca-N`` on the PATH; None when none is found."""
    if os.environ.get("LLVM_MCA"):  # the one asked for, or none when it is not an executable
        return shutil.which(os.environ["LLVM_MCA"])
    versions = sorted(glob.glob("/usr/lib/llvm-*/bin/llvm-mca"), key=lambda p: int(re.search(r"llvm-(\d+)", p).group(1)))
    candidates = [p for p in reversed(versions) if int(re.search(r"llvm-(\d+)", p).group(1)) >= 19]
    candidates += [shutil.which(name) for name in ("llvm-mca-22", "llvm-mca-21", "llvm-mca-20", "llvm-mca-19")]
    return next((c for c in candidates if c), None)


def _run(tool: str, args: list[str], text: str = "", timeout: float = 60) -> subprocess.CompletedProcess | None:
    """``tool args`` with ``text`` on stdin; None when it cannot be started or runs past ``timeout``."""
    try:
        return subprocess.run([tool, *args], input=text, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None


def knows(arch: str) -> bool:
    """Whether the llvm-mca found knows the chip (it warns and falls back to a generic one otherwise)."""
    tool = llvm_mca()
    if tool is None:
        return False
    ran, warnings = _simulates(tool, arch, "s_nop 0\n")
    return ran and "not a recognized processor" not in warnings


def takes_buffers(arch: str) -> bool:
    """Whether the llvm-mca found simulates buffer instructions on the chip (llvm-mca 19 aborts on them)."""
    tool = llvm_mca()
    return tool is not None and _simulates(tool, arch, "buffer_load_dword v0, v1, s[0:3], 0 offen\n")[0]


@cache
def _simulates(tool: str, arch: str, text: str) -> tuple[bool, str]:
    """Whether ``tool`` simulates ``text`` on the chip (exit code 0), and what it wrote on stderr."""
    done = _run(tool, ["-mtriple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "-"], text)
    return done is not None and done.returncode == 0, done.stderr if done is not None else ""


def version() -> str | None:
    """The LLVM version of the llvm-mca found (``22.1.8``); None without one."""
    tool = llvm_mca()
    return None if tool is None else _version(tool)


@cache
def _version(tool: str) -> str | None:
    done = _run(tool, ["--version"])
    found = re.search(r"LLVM version (\S+)", done.stdout) if done is not None else None
    return found.group(1) if found else None


def simulated_text(lines: list[str], arch: str) -> str:
    """The text llvm-mca runs: ``lines``, their buffer instructions rewritten where it rejects them."""
    if not takes_buffers(arch):
        lines = [rewrite(line) for line in lines]
    return "\n".join(lines) + "\n"


def rewrite(line: str) -> str:
    """A buffer instruction as the global instruction of the same width on the same registers; others as they are."""
    match = _BUFFER_RE.match(line)
    if not match:
        return line
    kind, width, operands = match.groups()
    parts = [p.strip() for p in operands.split(",")]
    sbase = _SGPR_QUAD_RE.search(operands)
    saddr = f"s[{sbase.group(1)}:{int(sbase.group(1)) + 1}]" if sbase else "off"
    if " lds" in f" {operands}":  # direct to LDS: no data register, the first operand is the lane's offset
        return f"global_load_lds_dword {parts[0] if parts[0].startswith('v') else 'v0'}, {saddr}"
    vaddr = next((p for p in parts[1:] if p.startswith("v")), None)
    data = parts[0]
    if vaddr is None:  # no per-lane offset: any VGPR stands for it (the data's, read before it is written)
        vaddr = re.sub(r"\[(\d+):\d+\]", r"\1", data)
    vaddr = re.sub(r"v\[(\d+):\d+\]", r"v\1", vaddr)
    if kind == "load":
        return f"global_load_{width} {data}, {vaddr}, {saddr}"
    return f"global_store_{width} {vaddr}, {data}, {saddr}"


def cycles(lines: list[str], arch: str, iterations: int = ITERATIONS) -> float | None:
    """llvm-mca's cycles per iteration of ``lines`` on ``arch``; None without an llvm-mca that knows the chip,
    for no instructions, or when llvm-mca fails on them."""
    if not lines or not knows(arch):
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as handle:
        handle.write(simulated_text(lines, arch))
        path = handle.name
    try:
        done = _run(llvm_mca(), ["-mtriple=amdgcn-amd-amdhsa", f"-mcpu={arch}", f"-iterations={iterations}",
                                 "-summary-view", "-instruction-info=0", "-resource-pressure=0", path], timeout=300)
    finally:
        os.unlink(path)
    total = _TOTAL_RE.search(done.stdout) if done is not None and done.returncode == 0 else None
    return int(total.group(1)) / iterations if total else None
