"""AMDGPU backend: LLVM dialect kernels -> LLVM IR -> amdgcn assembly, ELF object, code object; kernel report.

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


#: What ``pagedir-compile --emit`` can produce, from the earliest to the last stage.
EMIT_KINDS = ("llvm-dialect", "llvm-ir", "asm", "obj", "hsaco")


__all__ = sorted(
    [
        "EMIT_KINDS",
        "BackendError",
        "KernelReport",
        "format_table",
        "gpu_modules",
        "kernel_reports",
        "to_json",
    ]
)
