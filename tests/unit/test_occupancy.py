"""Occupancy rules, table-driven from LLVM's AMDGPU model (see pagedir.backend.occupancy)."""

import pytest

from pagedir.arch import get_chip
from pagedir.backend.occupancy import occupancy, total_vgprs, waves_by_lds, waves_by_sgprs, waves_by_vgprs

# CDNA2/3 (gfx90a, gfx942, gfx950): 512 VGPRs per lane, granule 8, at most 8 waves.
CDNA_VGPR_STEPS = [
    (1, 8), (64, 8), (65, 7), (72, 7), (73, 6), (80, 6), (81, 5), (96, 5), (97, 4), (128, 4),
    (129, 3), (168, 3), (169, 2), (256, 2), (257, 1), (512, 1),
]


@pytest.mark.parametrize("chip", ["gfx90a", "gfx942", "gfx950"])
@pytest.mark.parametrize(("vgprs", "waves"), CDNA_VGPR_STEPS)
def test_cdna_vgpr_steps(chip, vgprs, waves):
    assert waves_by_vgprs(get_chip(chip), vgprs) == waves


@pytest.mark.parametrize(
    ("arch_vgprs", "agprs", "total"),
    [(10, 0, 10), (10, 4, 16), (12, 4, 16), (61, 64, 128), (64, 64, 128), (65, 64, 132)],
)
def test_agprs_start_at_a_four_aligned_offset(arch_vgprs, agprs, total):
    assert total_vgprs(arch_vgprs, agprs) == total


def test_agprs_lower_cdna_occupancy():
    chip = get_chip("gfx942")
    assert waves_by_vgprs(chip, 64) == 8
    assert waves_by_vgprs(chip, 64, agprs=64) == 4  # 128 unified registers


# RDNA3/4 wave32: 1536 VGPRs per lane, granule 24, at most 16 waves.
@pytest.mark.parametrize("chip", ["gfx1100", "gfx1201"])
@pytest.mark.parametrize(("vgprs", "waves"), [(24, 16), (96, 16), (97, 12), (120, 12), (128, 10), (256, 5)])
def test_rdna_vgpr_steps(chip, vgprs, waves):
    assert waves_by_vgprs(get_chip(chip), vgprs) == waves


@pytest.mark.parametrize(("sgprs", "waves"), [(16, 8), (100, 8), (102, 7)])
def test_gfx9_sgpr_rule(sgprs, waves):
    assert waves_by_sgprs(get_chip("gfx942"), sgprs) == waves


def test_rdna_sgprs_never_limit():
    assert waves_by_sgprs(get_chip("gfx1100"), 106) == 16


# LDS: 512-byte blocks from 64 KiB per CU on gfx942; workgroup waves spread over 4 SIMDs.
@pytest.mark.parametrize(
    ("lds_bytes", "workgroup_size", "waves"),
    [
        (0, 256, 8),
        (8192, 256, 8),  # 8 groups x 4 waves / 4 SIMDs
        (16384, 256, 4),  # 4 groups x 4 waves / 4
        (16385, 256, 3),  # rounds to 16896: 3 groups
        (32768, 256, 2),
        (65536, 256, 1),
        (16384, 64, 1),  # 4 one-wave groups over 4 SIMDs
        (16384, 512, 8),  # 4 groups x 8 waves / 4
    ],
)
def test_gfx942_lds_rule(lds_bytes, workgroup_size, waves):
    assert waves_by_lds(get_chip("gfx942"), lds_bytes, workgroup_size) == waves


def test_gfx950_has_more_lds():
    assert waves_by_lds(get_chip("gfx950"), 32000, 256) == 5  # 160 KiB / 32000 B (25 blocks of 1280) = 5 groups
    assert waves_by_lds(get_chip("gfx950"), 32768, 256) == 4  # rounds up to 33280 B: 4 groups


def test_occupancy_is_the_minimum_and_names_its_limit():
    result = occupancy(get_chip("gfx942"), vgprs=130, sgprs=10, lds_bytes=8192, workgroup_size=256)
    assert result.waves_per_simd == 3
    assert result.limited_by == ["vgprs"]
    result = occupancy(get_chip("gfx942"), vgprs=32, lds_bytes=32768, workgroup_size=256)
    assert result.waves_per_simd == 2
    assert result.limited_by == ["lds"]
