"""pagedir.runtime: launch pagedir's compiled kernels by their launch plan, on CUDA or HIP.

* :class:`Launcher`: a compiled module (cubin/PTX or hsaco) and its plan; called on device arrays,
  it evaluates the plan's grid and split formulas on their shapes, takes or allocates the
  workspace, packs the arguments per target ABI and launches the kernels in order on a stream.
* :class:`PagedAttention`: the generator's options in, ``attn(q, k_cache, v_cache, block_table,
  seq_lens, out=None)`` out (the kernel's arguments by name, for every page-table form); CPU
  arrays run on pagedir's interpreter.

Launching imports neither the MLIR bindings nor llvmlite: the compile happens once, through the
compile cache (:mod:`pagedir.cache`), or elsewhere (``pagedir-compile --emit=hsaco --plan=...``).
The HIP path follows the HIP module API and the AMDGPU code-object ABI and is tested against a
stub library; it has not yet run on an AMD GPU.
"""

from __future__ import annotations

from pagedir.runtime.launcher import LaunchError, Launcher
from pagedir.runtime.plan import CallPlan, Launch, PlanError, call_plan

__all__ = ["CallPlan", "Launch", "LaunchError", "Launcher", "PagedAttention", "PlanError", "call_plan"]


def __getattr__(name: str):
    if name == "PagedAttention":  # its module reaches the generator; loaded when asked for
        from pagedir.runtime.attention import PagedAttention

        return PagedAttention
    raise AttributeError(f"module 'pagedir.runtime' has no attribute {name!r}")
