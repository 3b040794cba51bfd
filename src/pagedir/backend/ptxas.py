"""Where ``ptxas`` comes from, and what it says: PTX -> ``cubin`` for the NVIDIA family, with its resource report.

The assembler ships in NVIDIA's ``nvidia-cuda-nvcc`` wheel (``nvidia/cu13/bin/ptxas``; the CUDA 12
wheels put it under ``nvidia/cuda_nvcc/bin``), pagedir's optional ``nvidia`` extra
(``pip install 'pagedir[nvidia]'``): about 150 MB installed, too much for every AMD user.
``PAGEDIR_PTXAS`` names another ``ptxas`` (a CUDA toolkit's, a stand-in in tests) and takes precedence.
It is found from the package directory, never from PATH.

``ptxas -v`` reports per kernel what the occupancy and the kernel report need::

    ptxas info    : Compiling entry function 'paged_attention' for 'sm_90'
    ptxas info    : Function properties for paged_attention
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 96 registers, used 1 barriers, 4096 bytes smem, 384 bytes cmem[0]

This module imports nothing heavy: pagedir-compile asks it for the cache key.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

PTXAS_ENV = "PAGEDIR_PTXAS"
NVDISASM_ENV = "PAGEDIR_NVDISASM"
#: The requirement of the ``nvidia`` extra in pyproject.toml; named in the error when the package is missing.
NVCC_REQUIREMENT = "nvidia-cuda-nvcc==13.5.37"
#: The disassembler of the same release (SASS instruction counts in the kernel report), also in the extra.
NVDISASM_REQUIREMENT = "nvidia-cuda-nvdisasm==13.5.37"
#: Where the wheels put the tools, under the ``nvidia`` namespace package (CUDA 13, then CUDA 12).
_BIN_DIRS = ("cu13/bin", "cuda_nvcc/bin")


class PtxasError(Exception):
    """ptxas is missing or refused the PTX; the message says what to do."""


def find_tool(name: str) -> str | None:
    """``name`` (ptxas, nvdisasm) from the installed ``nvidia`` wheels, or None."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return None
    for directory in spec.submodule_search_locations:
        for bin_dir in _BIN_DIRS:
            path = os.path.join(directory, bin_dir, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def ptxas_command() -> str | None:
    """The ``ptxas`` to run, or None when there is none."""
    return os.environ.get(PTXAS_ENV) or find_tool("ptxas")


def missing_ptxas_message() -> str:
    return (
        "--emit=cubin needs NVIDIA's ptxas, from the 'nvidia-cuda-nvcc' package, which is not installed: "
        f"pip install '{NVCC_REQUIREMENT}' (pagedir's 'nvidia' extra), or set {PTXAS_ENV} to a ptxas; "
        "--emit=ptx gives the PTX without it"
    )


@dataclass
class KernelResources:
    """What ``ptxas -v`` reports for one kernel."""

    registers: int = 0
    barriers: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0


def assemble(ptx: str, chip_name: str) -> tuple[bytes, str]:
    """``(cubin, ptxas -v output)`` of ``ptx`` for ``chip_name`` (sm_80, sm_90)."""
    tool = ptxas_command()
    if tool is None:
        raise PtxasError(missing_ptxas_message())
    with tempfile.TemporaryDirectory(prefix="pagedir-") as work:
        ptx_path, out_path = os.path.join(work, "kernel.ptx"), os.path.join(work, "kernel.cubin")
        with open(ptx_path, "w") as handle:
            handle.write(ptx)
        try:
            done = subprocess.run([tool, "-v", f"-arch={chip_name}", ptx_path, "-o", out_path],
                                  capture_output=True, text=True)
        except OSError as err:
            raise PtxasError(f"cannot run {tool}: {err.strerror}; set {PTXAS_ENV} to a working ptxas") from None
        if done.returncode != 0:
            raise PtxasError(f"{tool} failed:\n{done.stderr.strip()}")
        with open(out_path, "rb") as handle:
            return handle.read(), done.stdout + done.stderr


_ENTRY_RE = re.compile(r"Compiling entry function '([^']+)'")
_FRAME_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RE = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")


def parse_resources(verbose: str) -> dict[str, KernelResources]:
    """``{kernel: KernelResources}`` from ``ptxas -v`` output (module docstring)."""
    found: dict[str, KernelResources] = {}
    current: KernelResources | None = None
    for line in verbose.splitlines():
        if entry := _ENTRY_RE.search(line):
            current = found.setdefault(entry.group(1), KernelResources())
        elif current is None:
            continue
        elif frame := _FRAME_RE.search(line):
            current.stack_bytes, current.spill_store_bytes, current.spill_load_bytes = (int(g) for g in frame.groups())
        elif used := _USED_RE.search(line):
            current.registers = int(used.group(1))
            current.barriers = int(used.group(2) or 0)
            current.shared_bytes = int(used.group(3) or 0)
    return found


def disassemble(cubin: bytes) -> str | None:
    """The SASS of ``cubin`` (``nvdisasm -c``, from the ``nvidia-cuda-nvdisasm`` wheel of the ``nvidia`` extra;
    ``PAGEDIR_NVDISASM`` names another), or None without the tool."""
    tool = os.environ.get(NVDISASM_ENV) or find_tool("nvdisasm")
    if tool is None:
        return None
    with tempfile.TemporaryDirectory(prefix="pagedir-") as work:
        path = os.path.join(work, "kernel.cubin")
        with open(path, "wb") as handle:
            handle.write(cubin)
        try:
            done = subprocess.run([tool, "-c", path], capture_output=True, text=True)
        except OSError as err:
            raise PtxasError(f"cannot run {tool}: {err.strerror}; set {NVDISASM_ENV} to a working nvdisasm") from None
    if done.returncode != 0:
        raise PtxasError(f"{tool} failed:\n{done.stderr.strip()}")
    return done.stdout
