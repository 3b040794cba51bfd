"""NVIDIA (sm_80 A100, sm_90 H100): warps of 32, global memory through plain pointers, NVVM and PTX.

What differs from the AMD families (:mod:`pagedir.targets.base` lists what a family decides):

* memory: no buffer descriptors (``buffer_flags`` None). ``rock-buffer-load`` turns a
  ``rock.global_load`` into 16-byte ``llvm.load``\\s through a global pointer (``ld.global.v4``),
  guarded by the load's validity so that nothing outside the page, the buffer or the sequence is
  ever addressed (a descriptor's range check gave that on AMD);
* no scalar unit: a value the same in every lane of a warp needs no ``readfirstlane``
  (:attr:`TargetFamily.scalar_unit` False), and the per-lane division of page numbers by a run-time
  slot count (a ``readlane`` per row on AMD) is not used;
* no direct global -> LDS loads (``Chip.lds_dma_sizes`` empty) and no matrix form yet: the
  blockwise loop is the VALU loop (``mma.sync`` m16n8k16 needs its own lane scheme there);
* occupancy: registers are the only per-lane limit (no SGPRs); the chip rows carry CUDA's 1 KiB
  of shared memory reserved per block and the 32 blocks per SM;
* backend: ``convert-gpu-to-nvvm`` (bare pointers, the index width), the ``nvptx64-nvidia-cuda``
  triple and its data layout, PTX from LLVM's NVPTX code generator (``+ptx80``: the PTX ISA that
  ptxas of CUDA 12 and later reads, sm_90 included), and a ``cubin`` assembled by ``ptxas``
  (:mod:`pagedir.backend.ptxas`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagedir.targets.base import TargetFamily

if TYPE_CHECKING:
    from pagedir.arch import Chip

#: The data layout of LLVM's NVPTX target for 64-bit pointers (what ``nvptx64-nvidia-cuda`` uses).
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
#: PTX ISA version written into the PTX (``.version 8.0``): sm_90 needs 7.8 or later.
PTX_FEATURES = "+ptx80"


class Nvidia(TargetFamily):
    name = "nvidia"
    triple = "nvptx64-nvidia-cuda"
    lowered_dialects = ("llvm", "nvvm")
    code_object = "cubin"
    data_layout = DATA_LAYOUT
    scalar_unit = False

    def lowering_passes(self, chip: Chip, index_bitwidth: int) -> tuple[str | None, list[str]]:
        return None, [f"convert-gpu-to-nvvm{{index-bitwidth={index_bitwidth} use-bare-ptr-memref-call-conv=true}}"]

    def codegen_features(self, chip: Chip) -> str:
        return PTX_FEATURES


NVIDIA = Nvidia()
