"""Chip facts in one table: wave size, LDS limit, buffer-descriptor flags, occupancy limits.

A target is a chip name (``gfx942``) or a full target string
(``amdgcn-amd-amdhsa:gfx942``, ``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``):
:func:`parse_chip` extracts the chip; nothing tests by string prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Flags word of a raw buffer descriptor on CDNA / gfx9: num format 7 (float, bits 14:12), data format 4
#: (32, bits 18:15; 0 would be INVALID, an unbound resource). Rules: pagedir.interp.buffer_descriptor.
CDNA_BUFFER_FLAGS = 0x00027000  # 159744
#: RDNA gfx10/11/12: FORMAT 0x27 (bits 18:12), bit 24 set and OOB_SELECT 3 (bits 29:28: raw, offset + payload
#: checked against num_records).
RDNA_BUFFER_FLAGS = 0x31027000  # 822243328


@dataclass(frozen=True)
class Chip:
    """What the compiler needs to know about one AMDGPU chip."""

    name: str
    wave_size: int
    #: Bytes of LDS one workgroup may allocate.
    lds_per_workgroup: int
    #: Bytes of LDS per compute unit (occupancy).
    lds_per_cu: int
    #: Maximum waves per SIMD.
    max_waves_per_simd: int
    simds_per_cu: int
    #: VGPRs per SIMD lane (budget used for occupancy) and allocation granule.
    vgpr_budget: int
    vgpr_granule: int
    #: LDS allocation granule in bytes.
    lds_granule: int
    buffer_flags: int
    family: str  # "cdna" or "rdna"

    @property
    def major(self) -> int:
        return int(self.name[3:-2], 10) if len(self.name) > 5 else int(self.name[3], 10)


_KB = 1024
CHIPS: dict[str, Chip] = {
    "gfx908": Chip("gfx908", 64, 64 * _KB, 64 * _KB, 10, 4, 256, 4, 512, CDNA_BUFFER_FLAGS, "cdna"),
    "gfx90a": Chip("gfx90a", 64, 64 * _KB, 64 * _KB, 8, 4, 512, 8, 512, CDNA_BUFFER_FLAGS, "cdna"),
    "gfx942": Chip("gfx942", 64, 64 * _KB, 64 * _KB, 8, 4, 512, 8, 512, CDNA_BUFFER_FLAGS, "cdna"),
    "gfx950": Chip("gfx950", 64, 160 * _KB, 160 * _KB, 8, 4, 512, 8, 1280, CDNA_BUFFER_FLAGS, "cdna"),
    "gfx1030": Chip("gfx1030", 32, 64 * _KB, 128 * _KB, 16, 4, 1024, 8, 512, RDNA_BUFFER_FLAGS, "rdna"),
    "gfx1100": Chip("gfx1100", 32, 64 * _KB, 128 * _KB, 16, 4, 1536, 24, 512, RDNA_BUFFER_FLAGS, "rdna"),
    "gfx1101": Chip("gfx1101", 32, 64 * _KB, 128 * _KB, 16, 4, 1536, 24, 512, RDNA_BUFFER_FLAGS, "rdna"),
    "gfx1200": Chip("gfx1200", 32, 64 * _KB, 128 * _KB, 16, 4, 1536, 24, 512, RDNA_BUFFER_FLAGS, "rdna"),
    "gfx1201": Chip("gfx1201", 32, 64 * _KB, 128 * _KB, 16, 4, 1536, 24, 512, RDNA_BUFFER_FLAGS, "rdna"),
}

_CHIP_RE = re.compile(r"(?:^|[-:])(gfx[0-9a-f]+)(?=$|[:])")


class UnknownChipError(ValueError):
    """Raised for a target string naming no known chip; the message lists the known ones."""


def parse_chip(target: str) -> str:
    """The chip name inside ``target``: ``gfx942``, ``amdgcn-amd-amdhsa:gfx942``, ``...--gfx942:xnack-``."""
    match = _CHIP_RE.search(target.strip())
    if not match:
        raise UnknownChipError(f"cannot find a chip name (gfxNNN) in target '{target}'; known chips: {known_chips()}")
    return match.group(1)


def get_chip(target: str) -> Chip:
    """The :class:`Chip` for a chip name or target string, or :class:`UnknownChipError`."""
    name = parse_chip(target)
    chip = CHIPS.get(name)
    if chip is None:
        raise UnknownChipError(f"unknown chip '{name}'; known chips: {known_chips()}")
    return chip


def known_chips() -> str:
    return ", ".join(CHIPS)
