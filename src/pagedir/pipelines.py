"""Named pipelines: ordered stages built from registered passes and upstream passes.

* ``rock-kernel-pipeline{arch=...}``: L0 (rock.attention) -> L6 (gpu.module kernel).
* ``rock-backend-pipeline{arch=...}``: L6 -> LLVM dialect + ROCDL (upstream passes).

Each pipeline is a list of steps: a pagedir :class:`~pagedir.passes.base.Pass`
instance or upstream pipeline text, so ``pagedir-opt``, ``pagedir-compile`` and
users' own ``PassManager``\\s all run the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pagedir.passes import create_pass

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

#: Passes that take the chip: the pipeline's arch option is forwarded to them.
_ARCH_PASSES = frozenset({"rock-attention-to-gridwise", "rock-reuse-lds", "rock-buffer-load", "rock-to-gpu"})


@dataclass(frozen=True)
class KernelPipelineOptions:
    #: Chip or target; empty means each kernel's own ``rock.arch``.
    arch: str = ""


def kernel_pipeline_steps(options: KernelPipelineOptions) -> list[Any]:
    steps = []
    for argument in KERNEL_PASSES:
        pass_options = {"arch": options.arch} if options.arch and argument in _ARCH_PASSES else {}
        steps.append(create_pass(argument, pass_options))
    return steps


@dataclass(frozen=True)
class PipelineInfo:
    name: str
    summary: str
    options: type
    steps: Any  # (options) -> list of Pass instances and upstream pipeline text


PIPELINES: dict[str, PipelineInfo] = {
    "rock-kernel-pipeline": PipelineInfo(
        "rock-kernel-pipeline",
        "rock.attention (L0) to a gpu.module kernel (L6)",
        KernelPipelineOptions,
        kernel_pipeline_steps,
    ),
}
