"""Named pipelines: ordered stages built from registered passes and upstream passes.

* ``rock-kernel-pipeline{arch=...}``: L0 (rock.attention) -> L6 (gpu.module kernel).
* ``rock-backend-pipeline{arch=...}``: L6 -> LLVM dialect + ROCDL (upstream passes).

Each pipeline is a list of steps: a pagedir :class:`~pagedir.passes.base.Pass`
instance or upstream pipeline text, so ``pagedir-opt``, ``pagedir-compile`` and
users' own ``PassManager``\\s all run the same thing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pagedir.arch import get_chip
from pagedir.passes import Pass, add_pass, create_pass, get_pass_class

#: The kernel pipeline's passes, in order (see docs/levels.md for why this order).
KERNEL_PASSES = (
    "rock-attention-to-gridwise",
    "rock-gridwise-attention-to-blockwise",
    "rock-blockwise-load",
    "rock-annotate-liveness",
    "rock-reuse-lds",
    "rock-threadwise-lowering",
    "rock-buffer-load",
    "rock-to-gpu",
)


@dataclass(frozen=True)
class KernelPipelineOptions:
    #: Chip or target; empty means each kernel's own ``rock.arch`` (a kernel naming another chip is an error).
    arch: str = ""

    def __post_init__(self) -> None:
        if self.arch:
            get_chip(self.arch)  # ChipError (a ValueError) names the value and the accepted form


def takes_chip(argument: str) -> bool:
    """Whether pass ``argument`` takes the chip: its Options have an ``arch`` field."""
    return any(field.name == "arch" for field in dataclasses.fields(get_pass_class(argument).Options))


def kernel_pass(argument: str, arch: str = "") -> Pass:
    """Pass ``argument`` of rock-kernel-pipeline, given the chip when it takes one and ``arch`` is set."""
    return create_pass(argument, {"arch": arch} if arch and takes_chip(argument) else {})


def kernel_pipeline_steps(options: KernelPipelineOptions) -> list[Any]:
    return [kernel_pass(argument, options.arch) for argument in KERNEL_PASSES]


@dataclass(frozen=True)
class PipelineInfo:
    name: str
    summary: str
    options: type
    steps: Any  # (options) -> list of Pass instances and upstream pipeline text


@dataclass(frozen=True)
class BackendPipelineOptions:
    #: Chip or target the kernels are compiled for (required).
    arch: str = ""
    #: Width of ``index`` in the kernel: 64 (default) or 32.
    index_bitwidth: int = 64

    def __post_init__(self) -> None:
        if self.index_bitwidth not in (32, 64):
            raise ValueError(f"index-bitwidth must be 32 or 64, got {self.index_bitwidth}")
        if not self.arch:
            raise ValueError("needs arch=<chip> (e.g. arch=gfx942)")
        get_chip(self.arch)  # ChipError (a ValueError) names the value and the accepted form


class BackendPreparePass(Pass):
    """Check each gpu.func kernel against the chip (rock.arch, rock.wave_size, index width), record its wave size."""

    argument = "rock-backend-prepare"
    summary = "Check gpu.func kernels against the chip and record rock.wave_size"
    Options = BackendPipelineOptions

    def run(self, module) -> bool:
        from pagedir.backend.kernel_attrs import check_kernels

        return check_kernels(module, get_chip(self.options.arch), self.options.index_bitwidth)


class BackendLowerTransfersPass(Pass):
    """Rewrite 1-D vector.transfer_read/write on memrefs into vector (masked) loads and stores."""

    argument = "rock-backend-lower-transfers"
    summary = "Lower 1-D vector transfers to vector.load/store and masked loads/stores"

    def run(self, module) -> bool:
        from pagedir.backend.transfers import lower_vector_transfers

        lower_vector_transfers(module)
        return True


class BackendLowerMathPass(Pass):
    """Rewrite f32 math ops with an AMDGPU instruction (exp2) into LLVM intrinsic calls."""

    argument = "rock-backend-lower-math"
    summary = "Lower f32 math.exp2 to llvm.exp2 instead of a device-library call"

    def run(self, module) -> bool:
        from pagedir.backend.intrinsics import lower_math_to_intrinsics

        lower_math_to_intrinsics(module)
        return True


class BackendCheckLoweredPass(Pass):
    """Report, at its location, any op left in a gpu.module that is not LLVM dialect or ROCDL."""

    argument = "rock-backend-check-lowered"
    summary = "Check that gpu.module bodies are fully in the LLVM and ROCDL dialects"

    def run(self, module) -> bool:
        from pagedir.backend.kernel_attrs import check_lowered

        return check_lowered(module)


def backend_pipeline_steps(options: BackendPipelineOptions) -> list[Any]:
    """L6 (gpu.module with gpu.func kernels) -> LLVM dialect + ROCDL inside the gpu.module.

    Index width: 64 bits by default, the width of a global pointer, so addresses
    never wrap (a KV cache easily passes 2**31 bytes). The cost is small after
    LLVM's O3 pipeline, which narrows index arithmetic bounded by the workitem and
    workgroup id ranges (the paged-load kernel in tests/lit/backend gets the same
    registers and 2 more instructions than with 32). ``index-bitwidth=32`` is
    available; memrefs above 2**31-1 elements are refused with it.
    Kernel memref arguments are bare pointers (one pointer each, as rocMLIR passes them).
    """
    chip = get_chip(options.arch).name
    to_rocdl = [
        f"convert-amdgpu-to-rocdl{{chipset={chip}}}",
        f"convert-gpu-to-rocdl{{chipset={chip} index-bitwidth={options.index_bitwidth} use-bare-ptr-memref-call-conv=true}}",
    ]
    return [
        BackendPreparePass(options),
        "convert-vector-to-scf",
        BackendLowerTransfersPass(),
        BackendLowerMathPass(),
        "expand-strided-metadata,lower-affine,arith-expand,convert-scf-to-cf",
        f"gpu.module({','.join(to_rocdl)})",
        "reconcile-unrealized-casts",
        BackendCheckLoweredPass(),
    ]


def add_backend_pipeline(pm: Any, arch: str, index_bitwidth: int = 64) -> None:
    """Append ``rock-backend-pipeline`` to an upstream module-level ``PassManager``."""
    for step in backend_pipeline_steps(BackendPipelineOptions(arch, index_bitwidth)):
        add_step(pm, step)


def add_step(pm: Any, step: Pass | str) -> None:
    """Append one pipeline step to an upstream ``PassManager``: a pagedir pass, or upstream pipeline text."""
    if isinstance(step, str):
        pm.add(step)
    else:
        add_pass(pm, step)


PIPELINES: dict[str, PipelineInfo] = {
    "rock-kernel-pipeline": PipelineInfo(
        "rock-kernel-pipeline",
        "rock.attention (L0) to a gpu.module kernel (L6)",
        KernelPipelineOptions,
        kernel_pipeline_steps,
    ),
    "rock-backend-pipeline": PipelineInfo(
        "rock-backend-pipeline",
        "gpu.module kernels (L6) to the LLVM dialect with ROCDL (L7)",
        BackendPipelineOptions,
        backend_pipeline_steps,
    ),
}
