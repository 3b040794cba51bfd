"""AMDGPU backend: LLVM dialect kernels -> LLVM IR -> amdgcn assembly, ELF object, code object; kernel report.

Input: a module whose ``gpu.module``\\s hold LLVM dialect + ROCDL (what
``rock-backend-pipeline`` produces). Use it from Python::

    from pagedir.backend import generate
    result = generate(module.operation, "gfx942", emit="asm")
    print(result.asm)
    for kernel in kernel_reports(result.asm, "gfx942"):
        print(kernel.name, kernel.vgprs, kernel.occupancy)

Stages (each can be observed with ``on_stage(name, text)``): ``llvm-module``
(the builtin module handed to mlir-translate), ``llvm-ir`` (translated),
``llvm-ir-opt`` (after LLVM's O3 pipeline), ``asm``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from typing import TYPE_CHECKING

from pagedir.arch import Chip, get_chip
from pagedir.backend.report import KernelReport, format_table, kernel_reports, to_json

if TYPE_CHECKING:
    import mlir.ir as ir

    from pagedir.backend.translate import BackendError, gpu_modules

# The MLIR bindings (translate) and llvmlite (codegen) are imported on first use: the kernel
# report and EMIT_KINDS are read without them (a pagedir-compile cache hit, --help).
_LAZY = {"BackendError": "pagedir.backend.translate", "gpu_modules": "pagedir.backend.translate"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pagedir.backend' has no attribute {name!r}")


#: What ``generate`` can produce, from the earliest to the last stage.
EMIT_KINDS = ("llvm-dialect", "llvm-ir", "asm", "obj", "hsaco")


@dataclass
class Generated:
    """The artefacts produced for one module (None where not asked for)."""

    llvm_module: str
    llvm_ir: str | None = None
    optimized_ir: str | None = None
    asm: str | None = None
    obj: bytes | None = None
    hsaco: bytes | None = None


def generate(
    module: ir.Operation,
    chip: Chip | str,
    *,
    emit: str = "asm",
    want_asm: bool = False,
    opt_level: int = 3,
    on_stage: Callable[[str, str], None] | None = None,
) -> Generated:
    """Translate and compile the LLVM dialect in ``module``'s gpu.modules for ``chip``.

    ``emit`` is one of :data:`EMIT_KINDS`; ``want_asm`` also produces the assembly
    (for the report) when emitting an object. Raises :class:`BackendError`.
    """
    from pagedir.backend.codegen import emit_assembly, emit_object, link_hsaco, optimize
    from pagedir.backend.translate import extract_llvm_module, translate_to_llvm_ir

    chip = get_chip(chip) if isinstance(chip, str) else chip
    if emit not in EMIT_KINDS:
        raise ValueError(f"unknown emit kind '{emit}'")
    stage = on_stage or (lambda name, text: None)
    llvm_module = str(extract_llvm_module(module))
    stage("llvm-module", llvm_module)
    result = Generated(llvm_module)
    if emit == "llvm-dialect":
        return result
    result.llvm_ir = translate_to_llvm_ir(llvm_module)
    stage("llvm-ir", result.llvm_ir)
    optimized = optimize(result.llvm_ir, chip, opt_level)
    result.optimized_ir = str(optimized)
    stage("llvm-ir-opt", result.optimized_ir)
    if emit == "asm" or want_asm:
        result.asm = emit_assembly(optimized, chip, opt_level)
        stage("asm", result.asm)
    if emit in ("obj", "hsaco"):
        result.obj = emit_object(optimized, chip, opt_level)
    if emit == "hsaco":
        result.hsaco = link_hsaco(result.obj)
    return result


__all__ = sorted(
    [
        "EMIT_KINDS",
        "BackendError",
        "Generated",
        "KernelReport",
        "format_table",
        "generate",
        "gpu_modules",
        "kernel_reports",
        "to_json",
    ]
)
