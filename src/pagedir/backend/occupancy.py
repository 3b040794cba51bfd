"""Occupancy: how many waves of a kernel one SIMD can hold, from its resource use.

The rules follow LLVM's AMDGPU occupancy model, driven by the chip table in
:mod:`pagedir.arch`. Every limit is in waves per SIMD; the occupancy is their
minimum:

* ``waves``: the chip's maximum waves per SIMD (8 on gfx90a/gfx942/gfx950,
  16 on gfx10.3, gfx11 and gfx12).
* ``vgprs``: ``vgpr_budget // round_up(total_vgprs, vgpr_granule)``, where
  ``total_vgprs`` counts AGPRs (gfx90a+ unified register file) as
  ``round_up(arch_vgprs, 4) + agprs`` when AGPRs are used. CDNA3: budget 512,
  granule 8, so <=64 -> 8, <=72 -> 7, <=80 -> 6, <=96 -> 5, <=128 -> 4,
  <=168 -> 3, <=256 -> 2, else 1. RDNA3/RDNA4 (gfx1100, gfx1101, gfx1200,
  gfx1201) in wave32: budget 1536, granule 24 (<=96 -> 16, <=120 -> 12,
  <=128 -> 10, <=256 -> 5); gfx1030 in wave32: budget 1024, granule 8.
* ``sgprs``: only before gfx10 (SGPRs are not shared on RDNA): <=80 -> 10,
  <=88 -> 9, <=100 -> 8, else 7 (never below the CDNA3 cap of 8 in practice).
* ``lds``: workgroups per CU = ``lds_per_cu // round_up(lds_bytes, lds_granule)``
  (64 KiB and 512-byte blocks on gfx90a/gfx942; 160 KiB and 1280-byte blocks on
  gfx950; on RDNA the unit is the workgroup processor in its default WGP mode:
  128 KiB shared by 4 SIMD32s, 512-byte blocks). Their waves spread over the
  SIMDs: ``ceil(workgroups * waves_per_workgroup / simds_per_cu)``. NVIDIA (a SIMD is an SM
  sub-partition, a CU an SM): the 1 KiB CUDA reserves per block is added to each workgroup's bytes
  (``Chip.lds_reserved_per_workgroup``), 128-byte granules.
* ``workgroup``: whole workgroups only: ``floor(max_waves * simds / waves_per_workgroup)``
  workgroups fit, giving ``ceil(workgroups * waves_per_workgroup / simds)`` waves
  per SIMD (matters when a workgroup's wave count does not divide the CU's slots); at most
  ``Chip.max_workgroups_per_cu`` workgroups where the chip has such a limit (CUDA: 32 blocks per SM).

On NVIDIA this is CUDA's occupancy calculation: registers are allocated 256 per warp (8 per lane)
from 64K per SM, 16K per sub-partition, and there are no SGPRs (the family's rule gives no limit).
"""

from __future__ import annotations

from dataclasses import dataclass

from pagedir.arch import Chip
from pagedir.targets import family_of


@dataclass(frozen=True)
class Occupancy:
    """Waves per SIMD and the per-resource limits it is the minimum of."""

    waves_per_simd: int
    limits: dict[str, int]

    @property
    def limited_by(self) -> list[str]:
        return [name for name, waves in self.limits.items() if waves == self.waves_per_simd]


def round_up(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def total_vgprs(arch_vgprs: int, agprs: int) -> int:
    """Registers a wave occupies in the unified VGPR file (AGPRs start at a 4-aligned offset)."""
    if agprs <= 0:
        return arch_vgprs
    return round_up(arch_vgprs, 4) + agprs


def waves_by_vgprs(chip: Chip, arch_vgprs: int, agprs: int = 0) -> int:
    allocated = round_up(max(total_vgprs(arch_vgprs, agprs), 1), chip.vgpr_granule)
    return max(1, min(chip.max_waves_per_simd, chip.vgpr_budget // allocated))


def waves_by_sgprs(chip: Chip, sgprs: int) -> int:
    """The SGPR limit is the family's rule (``TargetFamily.waves_by_sgprs``): gfx9's steps on CDNA, none on RDNA."""
    return family_of(chip).waves_by_sgprs(chip, sgprs)


def waves_per_workgroup(chip: Chip, workgroup_size: int) -> int:
    return max(1, ceil_div(workgroup_size, chip.wave_size))


def waves_by_lds(chip: Chip, lds_bytes: int, workgroup_size: int) -> int:
    if lds_bytes <= 0:
        return chip.max_waves_per_simd
    workgroups = chip.lds_per_cu // round_up(lds_bytes + chip.lds_reserved_per_workgroup, chip.lds_granule)
    if chip.max_workgroups_per_cu:
        workgroups = min(workgroups, chip.max_workgroups_per_cu)
    if workgroups == 0:
        return 0
    waves = ceil_div(workgroups * waves_per_workgroup(chip, workgroup_size), chip.simds_per_cu)
    return min(chip.max_waves_per_simd, waves)


def waves_by_workgroup(chip: Chip, workgroup_size: int) -> int:
    per_group = waves_per_workgroup(chip, workgroup_size)
    workgroups = chip.max_waves_per_simd * chip.simds_per_cu // per_group
    if chip.max_workgroups_per_cu:
        workgroups = min(workgroups, chip.max_workgroups_per_cu)
    if workgroups == 0:
        return 0
    return min(chip.max_waves_per_simd, ceil_div(workgroups * per_group, chip.simds_per_cu))


def occupancy(
    chip: Chip, *, vgprs: int, agprs: int = 0, sgprs: int = 0, lds_bytes: int = 0, workgroup_size: int | None = None
) -> Occupancy:
    """Waves per SIMD for a kernel using these resources on ``chip`` (see the module docstring)."""
    group = workgroup_size or chip.wave_size
    limits = {
        "waves": chip.max_waves_per_simd,
        "vgprs": waves_by_vgprs(chip, vgprs, agprs),
        "sgprs": waves_by_sgprs(chip, sgprs),
        "lds": waves_by_lds(chip, lds_bytes, group),
        "workgroup": waves_by_workgroup(chip, group),
    }
    return Occupancy(min(limits.values()), limits)
