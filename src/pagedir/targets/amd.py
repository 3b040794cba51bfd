"""What the AMD families (CDNA, RDNA) share: the ROCDL lowering, the amdgcn code generator, code objects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagedir.targets.base import TargetFamily

if TYPE_CHECKING:
    import mlir.ir as ir

    from pagedir.arch import Chip


class AmdFamily(TargetFamily):
    triple = "amdgcn-amd-amdhsa"
    lowered_dialects = ("llvm", "rocdl")
    code_object = "hsaco"
    scalar_unit = True
    dma_waits = frozenset({"rocdl.s.waitcnt"})
    wave_uniform_ops = frozenset({"rocdl.readfirstlane", "rocdl.readlane"})

    def wave_uniform(self, value: ir.Value) -> ir.Value:
        """``readfirstlane``: the value in a scalar register, where LLVM cannot prove it uniform itself (an
        index goes through 32 bits: the wave indices and offsets made uniform fit them)."""
        import mlir.ir as ir
        from mlir.dialects import arith, rocdl

        if not isinstance(value.type, ir.IndexType):
            return rocdl.readfirstlane(value.type, value)
        i32 = ir.IntegerType.get_signless(32)
        return arith.index_castui(value.type, rocdl.readfirstlane(i32, arith.index_cast(i32, value)))

    def read_lane(self, value: ir.Value, lane: int) -> ir.Value:
        """``readlane``."""
        import mlir.ir as ir
        from mlir.dialects import arith, rocdl

        return rocdl.readlane(value.type, value, arith.constant(ir.IntegerType.get_signless(32), lane))

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
