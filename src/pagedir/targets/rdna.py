"""RDNA (gfx10.3, gfx11, gfx12): wave32, WMMA on gfx11/gfx12, RDNA buffer descriptors (OOB_SELECT)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pagedir.targets.amd import AmdFamily
from pagedir.targets.base import TILE, MatrixForm, MatrixLayout

if TYPE_CHECKING:
    import mlir.ir as ir

    from pagedir.arch import Chip

#: RDNA gfx10/11/12: FORMAT 0x27 (bits 18:12), bit 24 set and OOB_SELECT 3 (bits 29:28: raw, offset + payload
#: checked against num_records).
BUFFER_FLAGS = 0x31027000  # 822243328
FORMAT_SHIFT, FORMAT_MASK = 12, 0x7F
OOB_SELECT_SHIFT = 28
STRIDE_MASK = 0x3FFF  # stride operand bits 13:0
#: RDNA generations whose WMMA (wave32, 16x16x16 f16/bf16, no f32 form) the blockwise loop uses.
WMMA_MAJORS = frozenset({11, 12})
#: Head dims above this take the VALU loop on wave32 WMMA chips: at D 256 a lane's output accumulators
#: alone are 128 VGPRs, and the WMMA loop spilled (5 VGPRs on gfx1100, 76 on gfx1201) where the VALU
#: loop spills none.
WMMA_MAX_HEAD_DIM = 128


class Rdna(AmdFamily):
    name = "rdna"
    buffer_flags = BUFFER_FLAGS
    matrix_ops = ("amdgpu.wmma",)

    def matrix_form(self, chip: Chip, element: ir.Type) -> MatrixForm | None:
        import mlir.ir as ir

        if chip.major not in WMMA_MAJORS or chip.wave_size != 32:
            return None
        if not isinstance(element, (ir.F16Type, ir.BF16Type)):
            return None  # f32 has no WMMA form: the VALU loop
        replicated = chip.major == 11  # gfx12: 8 values per lane, half the K indices per lane half, as MFMA does
        return MatrixForm(16, 16 if replicated else 8, 32, self, wmma=True, replicated=replicated,
                          max_head_dim=WMMA_MAX_HEAD_DIM)

    def matrix_product(self, form: MatrixForm, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        from mlir.dialects import amdgpu

        return amdgpu.wmma(TILE, TILE, form.k, a, b, c)

    def matrix_layout(self, op_name, m, n, k, chip) -> MatrixLayout | None:
        return wmma_layout(m, n, k, chip().major)

    def components_in_range(self, r: Any, offset: Any, soffset: Any, payload: int) -> Any:
        """R1-R4: the data format bound, then the check OOB_SELECT chooses."""
        import numpy as np

        records = r.num_records.reshape(-1, 1)
        flags = r.flags.reshape(-1, 1)
        bound = ((flags >> FORMAT_SHIFT) & FORMAT_MASK) != 0
        oob_select = (flags >> OOB_SELECT_SHIFT) & 0b11
        stride = (r.stride & STRIDE_MASK).reshape(-1, 1)
        nonempty = records > 0
        by_mode = [
            nonempty & (offset + payload <= stride),
            nonempty,
            nonempty,
            offset + payload <= records - soffset.reshape(-1, 1),
        ]
        inside = by_mode[3]
        for mode in (2, 1, 0):
            inside = np.where(oob_select == mode, by_mode[mode], inside)
        return bound & inside


def wmma_layout(m: int, n: int, k: int, major: int) -> MatrixLayout | None:
    """WMMA 16x16x16 with an f32 accumulator, wave32 (pagedir.interp.ops_matrix's docstring)."""
    import numpy as np

    if (m, n, k) != (16, 16, 16) or major not in (11, 12):
        return None
    wave = 32
    lane = np.arange(wave)[:, None]
    if major == 11:
        j = np.arange(16)[None, :]
        a = (np.broadcast_to(lane % 16, (wave, 16)), np.broadcast_to(j, (wave, 16)))
        b = (np.broadcast_to(j, (wave, 16)), np.broadcast_to(lane % 16, (wave, 16)))
        jd = np.arange(8)[None, :]
        d = (2 * jd + lane // 16, np.broadcast_to(lane % 16, (wave, 8)))
        return MatrixLayout(m, n, k, wave, a, b, d, replicated=16)
    j = np.arange(8)[None, :]
    a = (np.broadcast_to(lane % 16, (wave, 8)), 8 * (lane // 16) + j)
    b = (8 * (lane // 16) + j, np.broadcast_to(lane % 16, (wave, 8)))
    d = (8 * (lane // 16) + j, np.broadcast_to(lane % 16, (wave, 8)))
    return MatrixLayout(m, n, k, wave, a, b, d)


RDNA = Rdna()
