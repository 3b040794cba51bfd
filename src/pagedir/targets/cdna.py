"""CDNA (gfx9: gfx908, gfx90a, gfx942, gfx950): wave64, MFMA, gfx9 buffer descriptors and SGPR occupancy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pagedir.targets.amd import AmdFamily
from pagedir.targets.base import TILE, MatrixForm, MatrixLayout

if TYPE_CHECKING:
    import mlir.ir as ir

    from pagedir.arch import Chip

#: Flags word of a raw buffer descriptor on CDNA / gfx9: num format 7 (float, bits 14:12), data format 4
#: (32, bits 18:15; 0 would be INVALID, an unbound resource). Rules: pagedir.interp.buffer_descriptor.
BUFFER_FLAGS = 0x00027000  # 159744
#: Flags bits 26:24 and 29:28, reserved on CDNA (rule C1 of pagedir.interp.buffer_descriptor).
RESERVED = (0b111 << 24) | (0b11 << 28)
DATA_FORMAT_SHIFT, DATA_FORMAT_MASK = 15, 0xF
STRIDE_MASK = 0x3FFF  # stride operand bits 13:0
#: Chips whose MFMA the blockwise loop uses (gfx908 lacks the bf16 1k forms: it keeps the VALU loop).
MFMA_CHIPS = frozenset({"gfx90a", "gfx942", "gfx950"})
#: The SGPR occupancy steps of gfx9 (upper bound of SGPRs, waves per SIMD); above the last: 7.
GFX9_SGPR_STEPS = ((80, 10), (88, 9), (100, 8))


class Cdna(AmdFamily):
    name = "cdna"
    buffer_flags = BUFFER_FLAGS
    waitcnt_encoding = "gfx9"
    # rock-backend-lds-alias-scopes gives the two tiles' copies and reads apart alias scopes, so LLVM waits at a
    # read only for the copies into its own tile (docs/measurements.md).
    pipelined_direct_loads = True
    matrix_ops = ("amdgpu.mfma",)
    # 64-bit key positions, bounds and thread-id pieces (a zero high VGPR each) held across the KV loop cost
    # the decode kernels their waves; RDNA's WMMA kernels at the 256-VGPR edge spilled with 32-bit ones
    narrows_indices = True
    # v_exp_f32 itself (llvm.amdgcn.exp2): llvm.exp2 adds a denormal range fix-up (a compare, two selects, an add
    # and a v_ldexp_f32 per value, two constants held in VGPRs) for results below 2^-126, which every caller
    # (softmax and combine weights exp2(x - max), at most 1, beside the max's 1) may flush to 0. Not on RDNA:
    # its wave32 kernels at the 256-VGPR edge allocate differently, one of them spilled (docs/measurements.md)
    scalar_math_intrinsics = {"math.exp2": "llvm.amdgcn.exp2.f32"}

    def matrix_form(self, chip: Chip, element: ir.Type) -> MatrixForm | None:
        import mlir.ir as ir

        if chip.name not in MFMA_CHIPS or chip.wave_size != 64:
            return None
        if isinstance(element, ir.F32Type):
            return MatrixForm(4, 1, 64, self)  # 16x16x4 f32
        if isinstance(element, (ir.F16Type, ir.BF16Type)):
            return MatrixForm(16, 4, 64, self)  # 16x16x16 f16 / bf16 (bf16_1k)
        return None

    def matrix_product(self, form: MatrixForm, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        from mlir.dialects import amdgpu

        return amdgpu.mfma(TILE, TILE, form.k, a, b, c, blocks=1)

    def matrix_layout(self, op_name, m, n, k, chip) -> MatrixLayout | None:
        return mfma_layout(m, n, k)

    def descriptor_error(self, r: Any) -> str | None:
        import numpy as np

        for bad, values, message in (
            ((r.flags & RESERVED) != 0, r.flags,
             "flags {:#x} set bits reserved on CDNA (26:24, 29:28; RDNA's RESOURCE_LEVEL / OOB_SELECT?)"),
            ((r.stride & STRIDE_MASK) != 0, r.stride & STRIDE_MASK,
             "stride {} is not 0: a raw buffer needs stride 0 (num_records would count records of stride bytes)"),
        ):
            if np.any(bad):
                return message.format(int(np.broadcast_to(values, np.shape(bad))[bad].reshape(-1)[0]))
        return None

    def components_in_range(self, r: Any, offset: Any, soffset: Any, payload: int) -> Any:
        """C2, C4: in range iff the data format is bound and the byte offset is below num_records."""
        bound = ((r.flags.reshape(-1, 1) >> DATA_FORMAT_SHIFT) & DATA_FORMAT_MASK) != 0
        return bound & (offset < r.num_records.reshape(-1, 1))

    def waves_by_sgprs(self, chip: Chip, sgprs: int) -> int:
        for bound, waves in GFX9_SGPR_STEPS:
            if sgprs <= bound:
                return min(chip.max_waves_per_simd, waves)
        return min(chip.max_waves_per_simd, 7)


def mfma_layout(m: int, n: int, k: int) -> MatrixLayout | None:
    """MFMA with one block, wave64 (pagedir.interp.ops_matrix's docstring); None for shapes this rule
    does not cover."""
    import numpy as np

    wave = 64
    if m != n or m not in (16, 32) or k * m % wave:
        return None
    kl = k * m // wave
    lane = np.arange(wave)[:, None]
    group = lane // m
    j = np.arange(kl)[None, :]
    a = (np.broadcast_to(lane % m, (wave, kl)), kl * group + j)
    b = (kl * group + j, np.broadcast_to(lane % n, (wave, kl)))
    jd = np.arange(m * n // wave)[None, :]
    d = ((jd // 4) * (4 * wave // n) + 4 * group + jd % 4, np.broadcast_to(lane % n, (wave, jd.shape[1])))
    return MatrixLayout(m, n, k, wave, a, b, d)


CDNA = Cdna()
