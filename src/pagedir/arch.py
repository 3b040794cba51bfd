"""Chip facts in one table (wave size, LDS limit, occupancy limits, family),
and the one rule that decides which chip a kernel is for. What a family decides (matrix
instructions, buffer descriptors, the lowering and code object) is :mod:`pagedir.targets`.

A target is a chip name (``gfx942``, ``sm_90``) or a full target string
(``amdgcn-amd-amdhsa:gfx942``, ``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``, ``nvptx64-nvidia-cuda:sm_90``),
parsed strictly by :func:`parse_target`: spaces, unknown features and anything
else are errors naming the value and the accepted form; nothing tests by string prefix.

:func:`kernel_chip` is the only place that decides a kernel's chip: the arch
option when given, else the kernel's ``rock.arch``. Both given and naming
different chips is an error at the kernel naming both (a kernel lowered for one
chip is never lowered further or compiled for another); neither given is an
error too (no default chip is guessed). Given the option, a kernel without
``rock.arch`` records it, so later stages and ``pagedir-compile`` see the chip
the code was lowered for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the bindings are imported where a kernel is read, so a cache hit never loads them
    import mlir.ir as ir


@dataclass(frozen=True)
class Chip:
    """What the compiler needs to know about one chip.

    The names are AMD's; an NVIDIA chip maps onto them: a wave is a warp, a SIMD an SM
    sub-partition (4 per SM, each scheduling up to 16 warps), a compute unit an SM and LDS its
    shared memory (the occupancy rules of :mod:`pagedir.backend.occupancy` then give CUDA's)."""

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
    #: The target family (a key of ``pagedir.targets.FAMILIES``): "cdna", "rdna" or "nvidia".
    family: str
    #: Target-ID features the chip takes (``gfx942:sramecc+:xnack-``).
    features: tuple[str, ...] = ()
    #: Compute units of the largest part with this chip (MI300X for gfx942, MI210 for gfx90a): the
    #: workgroups a launch needs to fill it. Parts with fewer (MI300A: 228) pass their own count.
    compute_units: int = 0
    #: fp8 element types the chip converts in hardware (MLIR names): gfx942 the FNUZ formats, gfx950 the OCP ones.
    fp8_types: tuple[str, ...] = ()
    #: Bytes per lane of the chip's direct global -> LDS loads (``buffer_load_dword ... lds``); () : none.
    lds_dma_sizes: tuple[int, ...] = ()
    #: Bytes of LDS the hardware keeps per workgroup besides the kernel's (CUDA reserves 1 KiB per block on sm_80+).
    lds_reserved_per_workgroup: int = 0
    #: Workgroups one compute unit holds at most (CUDA: 32 blocks per SM); 0: no limit besides waves.
    max_workgroups_per_cu: int = 0
    #: Peak HBM bandwidth (bytes/s) and dense f16 matrix-core peak (FLOP/s) of the largest part (roofline figures).
    hbm_bandwidth: float = 0.0
    matrix_f16_flops: float = 0.0

    @property
    def major(self) -> int:
        if self.name.startswith("sm_"):
            return int(self.name[3:-1], 10)  # sm_90 -> 9
        return int(self.name[3:-2], 10) if len(self.name) > 5 else int(self.name[3], 10)


#: Threads per workgroup on every chip, and workgroups in a grid (workgroup ids are 32 bits).
MAX_WORKGROUP_SIZE = 1024
MAX_GRID_SIZE = 2**32 - 1

_KB = 1024
_CDNA_FEATURES = ("sramecc", "xnack")
CHIPS: dict[str, Chip] = {
    "gfx908": Chip("gfx908", 64, 64 * _KB, 64 * _KB, 10, 4, 256, 4, 512, "cdna", _CDNA_FEATURES, compute_units=120),
    "gfx90a": Chip("gfx90a", 64, 64 * _KB, 64 * _KB, 8, 4, 512, 8, 512, "cdna", _CDNA_FEATURES, compute_units=104,
                   lds_dma_sizes=(4,)),
    "gfx942": Chip("gfx942", 64, 64 * _KB, 64 * _KB, 8, 4, 512, 8, 512, "cdna", _CDNA_FEATURES, compute_units=304,
                   fp8_types=("f8E4M3FNUZ", "f8E5M2FNUZ"), lds_dma_sizes=(4,)),
    "gfx950": Chip("gfx950", 64, 160 * _KB, 160 * _KB, 8, 4, 512, 8, 1280, "cdna", _CDNA_FEATURES, compute_units=256,
                   fp8_types=("f8E4M3FN", "f8E5M2"), lds_dma_sizes=(4, 12, 16)),
    "gfx1030": Chip("gfx1030", 32, 64 * _KB, 128 * _KB, 16, 4, 1024, 8, 512, "rdna", compute_units=80),
    "gfx1100": Chip("gfx1100", 32, 64 * _KB, 128 * _KB, 16, 4, 1536, 24, 512, "rdna", compute_units=96),
    "gfx1101": Chip("gfx1101", 32, 64 * _KB, 128 * _KB, 16, 4, 1536, 24, 512, "rdna", compute_units=60),
    "gfx1200": Chip("gfx1200", 32, 64 * _KB, 128 * _KB, 16, 4, 1536, 24, 512, "rdna", compute_units=32),
    "gfx1201": Chip("gfx1201", 32, 64 * _KB, 128 * _KB, 16, 4, 1536, 24, 512, "rdna", compute_units=64),
    # NVIDIA (CUDA C Programming Guide, compute capabilities 8.0 / 9.0): warps of 32, 4 sub-partitions of 16 warps
    # per SM, 64K registers per SM (512 per lane per sub-partition, allocated 256 per warp: 8 per lane), up to 255 per
    # thread; shared memory per block (opt-in maximum) / per SM, 128-byte granules, 1 KiB reserved per block.
    # A100 SXM: 108 SMs, 2.04 TB/s, 312 dense f16 TFLOP/s; H100 SXM: 132 SMs, 3.35 TB/s, 989 dense f16 TFLOP/s.
    "sm_80": Chip("sm_80", 32, 163 * _KB, 164 * _KB, 16, 4, 512, 8, 128, "nvidia", compute_units=108,
                  lds_reserved_per_workgroup=_KB, max_workgroups_per_cu=32, hbm_bandwidth=2.04e12,
                  matrix_f16_flops=312e12),
    "sm_90": Chip("sm_90", 32, 227 * _KB, 228 * _KB, 16, 4, 512, 8, 128, "nvidia", compute_units=132,
                  lds_reserved_per_workgroup=_KB, max_workgroups_per_cu=32, hbm_bandwidth=3.35e12,
                  matrix_f16_flops=989e12),
}

#: ``[amdgcn-amd-amdhsa: or amdgcn-amd-amdhsa--]gfxNNN[:feature+|-]...`` or ``[nvptx64-nvidia-cuda:]sm_NN``, matched whole.
_TARGET_RE = re.compile(r"(?:amdgcn-amd-amdhsa(?::|--))?(gfx[0-9a-f]+)((?::[a-z]+[+-])*)|(?:nvptx64-nvidia-cuda:)?(sm_[0-9]+)")
ACCEPTED_FORM = (
    "expected a chip (gfx942) or a target (amdgcn-amd-amdhsa:gfx942, amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-), "
    "or an NVIDIA chip (sm_90, nvptx64-nvidia-cuda:sm_90)"
)


class ChipError(ValueError):
    """A target naming no known chip, or a kernel whose chip cannot be decided; the message says why."""


#: The former name, kept for callers that catch it.
UnknownChipError = ChipError


def parse_target(target: str) -> tuple[str, dict[str, bool]]:
    """``(chip name, {feature: on})`` of a chip name or target string; :class:`ChipError` otherwise."""
    match = _TARGET_RE.fullmatch(target)
    if not match:
        raise ChipError(f"invalid target '{target}': {ACCEPTED_FORM}")
    name, feature_text, nvidia = match.groups()
    if nvidia:
        return nvidia, {}
    features: dict[str, bool] = {}
    for item in feature_text.split(":")[1:]:
        feature = item[:-1]
        if feature in features:
            raise ChipError(f"invalid target '{target}': feature '{feature}' is set twice")
        features[feature] = item.endswith("+")
    return name, features


def parse_chip(target: str) -> str:
    """The chip name inside ``target``: ``gfx942``, ``amdgcn-amd-amdhsa:gfx942``, ``...--gfx942:xnack-``."""
    return parse_target(target)[0]


def get_chip(target: str) -> Chip:
    """The :class:`Chip` for a chip name or target string (features checked against the chip), or :class:`ChipError`."""
    name, features = parse_target(target)
    chip = CHIPS.get(name)
    if chip is None:
        raise ChipError(f"unknown chip '{name}'; known chips: {known_chips()}")
    for feature in features:
        if feature not in chip.features:
            takes = ", ".join(f"{f}+/-" for f in chip.features) or "none"
            raise ChipError(f"invalid target '{target}': unknown feature '{feature}' ({name} takes {takes})")
    return chip


def known_chips() -> str:
    return ", ".join(CHIPS)


def kernel_chip(kernel: ir.Operation, option: str = "") -> Chip:
    """The chip ``kernel`` (a ``func.func``/``gpu.func``) is lowered or compiled for, by the rule above.

    ``option`` is the arch option of the pass, pipeline or tool ("" when not
    given). Raises :class:`ChipError` with a message naming the kernel; the
    caller reports it at ``kernel.location``. When ``option`` decides, a kernel
    without ``rock.arch`` records it.
    """
    import mlir.ir as ir
    what = f"'{kernel.name}' op @{ir.StringAttr(kernel.attributes['sym_name']).value}"
    recorded = _recorded_target(kernel, what)
    if recorded is None:
        if not option:
            raise ChipError(
                f"{what} names no chip: set rock.arch on the kernel or give the arch option (known chips: {known_chips()})"
            )
        chip = get_chip(option)
        kernel.attributes["rock.arch"] = ir.StringAttr.get(option, context=kernel.context)
        return chip
    try:
        own = get_chip(recorded)
    except ChipError as err:
        raise ChipError(f'{what} has rock.arch = "{recorded}": {err}') from None
    if option and (asked := get_chip(option)).name != own.name:
        raise ChipError(f'{what} is for {own.name} (rock.arch = "{recorded}"), not for {asked.name} (arch = "{option}")')
    return own


def _recorded_target(kernel: ir.Operation, what: str) -> str | None:
    import mlir.ir as ir

    if "rock.arch" not in kernel.attributes:
        return None
    attr = kernel.attributes["rock.arch"]
    if not isinstance(attr, ir.StringAttr):
        raise ChipError(f"{what} has rock.arch = {attr}: expected a string naming a chip; {ACCEPTED_FORM}")
    return attr.value


def kernel_chip_or_none(kernel: ir.Operation, option: str = "") -> Chip | None:
    """:func:`kernel_chip` for a pass: its error is emitted at the kernel, and the result is then None."""
    try:
        return kernel_chip(kernel, option)
    except ChipError as err:
        kernel.location.emit_error(str(err))
        return None
