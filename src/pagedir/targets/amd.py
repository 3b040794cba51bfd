"""What the AMD families (CDNA, RDNA) share: the ROCDL lowering, the amdgcn code generator, code objects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagedir.targets.base import TargetFamily

if TYPE_CHECKING:
    from pagedir.arch import Chip


class AmdFamily(TargetFamily):
    triple = "amdgcn-amd-amdhsa"
    lowered_dialects = ("llvm", "rocdl")
    code_object = "hsaco"

    def lowering_passes(self, chip: Chip, index_bitwidth: int) -> tuple[str, list[str]]:
        # fp8 -> f32 conversions (fp8 KV caches) become the chip's packed conversions (amdgpu ext ops)
        arith = f"convert-arith-to-amdgpu{{chipset={chip.name}}}"
        return arith, [
            f"convert-amdgpu-to-rocdl{{chipset={chip.name}}}",
            f"convert-gpu-to-rocdl{{chipset={chip.name} index-bitwidth={index_bitwidth} use-bare-ptr-memref-call-conv=true}}",
        ]

    def codegen_features(self, chip: Chip) -> str:
        """The wave size as an explicit feature, so the code matches the chip table whatever LLVM's default."""
        if chip.wave_size == 32:
            return "+wavefrontsize32,-wavefrontsize64"
        return "+wavefrontsize64,-wavefrontsize32"
