"""Named pipelines, as ``pagedir-opt`` flags and for :func:`add_pass`: ranges of the driver's stage table.

* ``rock-kernel-pipeline{arch=...}``: linalg payloads (rock-raise-attention) or L0 (rock.attention) -> L6 (gpu.module kernel).
* ``rock-backend-pipeline{arch=...}``: L6 -> LLVM dialect + ROCDL (upstream passes).

Each pipeline is a list of steps: a pagedir :class:`~pagedir.passes.base.Pass`
instance or upstream pipeline text, taken from :func:`pagedir.driver.stages`, so
``pagedir-opt``, ``pagedir-compile`` and users' own ``PassManager``\\s all run the same thing.
They are built from passes, so they live here, above :mod:`pagedir.passes` (which
knows nothing of them): :func:`add_pass` takes a pipeline or a pass::

    from pagedir.pipelines import add_pass
    add_pass(pm, "rock-kernel-pipeline", arch="gfx942")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pagedir.arch import get_chip
from pagedir.driver import (
    KERNEL_STAGES,
    BackendCheckLoweredPass,
    BackendLowerMathPass,
    BackendLowerTransfersPass,
    BackendPipelineOptions,
    BackendPreparePass,
    CompileOptions,
    backend_pipeline_steps,
    stages,
)
from pagedir.passes import PASSES, OptionError, Pass
from pagedir.passes import add_pass as add_one_pass
from pagedir.passes.base import merged_options, parse_option_values

#: The kernel pipeline's passes, in order (see docs/levels.md for why this order).
KERNEL_PASSES = tuple(argument for argument, _ in KERNEL_STAGES)


@dataclass(frozen=True)
class KernelPipelineOptions:
    #: Chip or target; empty means each kernel's own ``rock.arch`` (a kernel naming another chip is an error).
    arch: str = ""

    def __post_init__(self) -> None:
        if self.arch:
            get_chip(self.arch)  # ChipError (a ValueError) names the value and the accepted form


def kernel_pipeline_steps(options: KernelPipelineOptions) -> list[Pass | str]:
    return [stage.step for stage in stages(CompileOptions(arch=options.arch), "linalg", "L6")]


@dataclass(frozen=True)
class PipelineInfo:
    name: str
    summary: str
    options: type
    steps: Any  # (options) -> list of Pass instances and upstream pipeline text


def add_backend_pipeline(pm: Any, arch: str, index_bitwidth: int = 64) -> None:
    """Append ``rock-backend-pipeline`` to an upstream module-level ``PassManager``."""
    add_pass(pm, "rock-backend-pipeline", arch=arch, index_bitwidth=index_bitwidth)


def add_pass(
    pm: Any, pass_or_argument: Pass | str, options: str | dict[str, Any] | None = None, **kwargs: Any
) -> Pass | list[Pass | str]:
    """Add a named pipeline or a pagedir pass (instance or argument) to an upstream ``PassManager``.

    Options come as text (``"arch=gfx950"``), a dict or keywords. Returns the pass
    instance, or for a pipeline (``rock-kernel-pipeline``, ``rock-backend-pipeline``)
    its steps: pass instances and upstream pipeline text. Unknown names and bad
    options raise :class:`~pagedir.passes.OptionError`.
    """
    if isinstance(pass_or_argument, Pass) or pass_or_argument in PASSES:
        return add_one_pass(pm, pass_or_argument, options, **kwargs)
    if pass_or_argument not in PIPELINES:
        known = ", ".join(sorted([*PASSES, *PIPELINES]))
        raise OptionError(f"no pagedir pass or pipeline named '{pass_or_argument}' (known: {known})")
    info = PIPELINES[pass_or_argument]
    try:
        steps = info.steps(parse_option_values(info.name, info.options, merged_options(options, kwargs)))
    except (TypeError, ValueError) as err:  # a chip check in the pipeline's steps, say
        raise OptionError(f"'{info.name}': {err}") from None
    for step in steps:
        if isinstance(step, str):
            pm.add(step)
        else:
            add_one_pass(pm, step)
    return steps


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

__all__ = sorted(
    [
        "KERNEL_PASSES",
        "PIPELINES",
        "BackendCheckLoweredPass",
        "BackendLowerMathPass",
        "BackendLowerTransfersPass",
        "BackendPipelineOptions",
        "BackendPreparePass",
        "KernelPipelineOptions",
        "PipelineInfo",
        "add_backend_pipeline",
        "add_pass",
        "backend_pipeline_steps",
        "kernel_pipeline_steps",
    ]
)
