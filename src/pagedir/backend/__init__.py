"""Backend: LLVM dialect kernels -> LLVM IR -> amdgcn assembly, ELF object, code object (AMD) or PTX and cubin
(NVIDIA); kernel report.

Input: a module whose ``gpu.module``\\s hold LLVM dialect + ROCDL (what
``rock-backend-pipeline`` produces). The steps (``translate``: the kernels moved into
an LLVM module, ``mlir-translate``; ``codegen``: LLVM's O3 pipeline, assembly, object,
``ld.lld``) are stages of :mod:`pagedir.driver`, which runs them::

    from pagedir.driver import CompileOptions, run
    outputs = run(module.operation, CompileOptions(arch="gfx942", emit="asm"), start="L7")
    for kernel in kernel_reports(outputs["asm"], "gfx942"):
        print(kernel.name, kernel.vgprs, kernel.occupancy)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagedir.backend.report import KernelReport, format_table, kernel_reports, to_json

if TYPE_CHECKING:
    from pagedir.backend.translate import BackendError, gpu_modules

# The MLIR bindings (translate) and llvmlite (codegen) are imported on first use: the kernel
# report and EMIT_KINDS are read without them (a pagedir-compile cache hit, --help).
_LAZY = {"BackendError": "pagedir.backend.translate", "gpu_modules": "pagedir.backend.translate"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pagedir.backend' has no attribute {name!r}")


#: What ``pagedir-compile --emit`` can produce, from the earliest to the last stage. ``obj`` and ``hsaco`` are
#: the AMD families' (an ELF object, a code object); ``ptx`` (the NVIDIA family's assembly, what ``asm`` gives
#: there too) and ``cubin`` (assembled by ptxas) NVIDIA's: :data:`FAMILY_EMITS`.
EMIT_KINDS = ("llvm-dialect", "llvm-ir", "asm", "obj", "hsaco", "ptx", "cubin")
#: Emit kinds only one family's code objects have, by ``TargetFamily.code_object``.
FAMILY_EMITS = {"hsaco": ("obj", "hsaco"), "cubin": ("ptx", "cubin")}


def emit_problem(chip, emit: str) -> str | None:
    """Why ``emit`` cannot be made for ``chip`` (another family's artefact), or None."""
    from pagedir.targets import family_of

    own = family_of(chip).code_object
    for code_object, kinds in FAMILY_EMITS.items():
        if emit in kinds and code_object != own:
            allowed = ", ".join(k for k in EMIT_KINDS if not any(k in ks for co, ks in FAMILY_EMITS.items() if co != own))
            return f"--emit={emit} is not made for {chip.name} ({family_of(chip).name}: it emits {allowed})"
    return None


__all__ = sorted(
    [
        "EMIT_KINDS",
        "FAMILY_EMITS",
        "emit_problem",
        "BackendError",
        "KernelReport",
        "format_table",
        "gpu_modules",
        "kernel_reports",
        "to_json",
    ]
)
