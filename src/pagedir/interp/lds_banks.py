"""LDS bank conflicts of the LDS accesses the interpreter runs, by the CDNA model below.

Inside ``with tally() as counts:`` every LDS load and store the interpreter executes is
counted as one instruction per wave that runs it (the lanes of a wave are threads
``w * wave .. (w + 1) * wave - 1`` of a workgroup), and its conflict cycles are added.

The model (CDNA, gfx90a/gfx942/gfx950; MI300 ISA guide, "Local Data Share"; the lane
groups as in ``shared/design/MATRIX_CORES.md``):

* LDS has 32 banks of 4 bytes: byte address ``a`` (from the start of the workgroup's
  LDS) is in dword ``a div 4`` and bank ``(a div 4) mod 32``.
* An instruction moving ``B`` bytes per lane is served in groups of lanes that together
  move at most 128 bytes: B <= 4 (``ds_read_b32``, ``_u16``, ``_u8``): 32 lanes per
  group (two per wave64), B = 8 (``b64``): 16 lanes, B = 12 or 16 (``b96``, ``b128``):
  8 lanes. A lane's B bytes are its consecutive dwords. Wider accesses are counted as
  the 16-byte instructions LLVM splits them into; an access whose elements are not
  contiguous counts each element as its own instruction.
* A group takes as many cycles as the most distinct dwords any one bank holds among
  the dwords its active lanes touch (lanes reading the same dword share it: a
  broadcast); the *conflict cycles* are those past the first. A wave's instruction
  conflicts when any of its groups takes more than one cycle.

The count reports what the model predicts, not the hardware's exact timing (gfx950's
wider LDS and RDNA's are not modelled differently).

NVIDIA's shared memory (sm_80, sm_90) has the same 32 banks of 4 bytes and serves a warp's
request 128 bytes at a time (16-byte accesses: 8 threads per cycle), so the NVVM ops count
by this model with waves of 32 (:func:`pagedir.interp.ops_nvvm.count_banks`); ``ldmatrix``
reads one 8x8 matrix (eight 16-byte rows) per cycle.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

BANKS = 32
BANK_BYTES = 4
GROUP_BYTES = BANKS * BANK_BYTES  # bytes one group of lanes moves per cycle without conflict


@dataclass
class OpCounts:
    instructions: int = 0  # wave instructions
    conflicted: int = 0  # of them, those with a conflict
    cycles: int = 0  # conflict cycles (past the first of each group)


@dataclass
class Tally:
    """Counts per op (name and location text), reads and writes apart."""

    ops: dict[tuple[str, str, str], OpCounts] = field(default_factory=dict)

    def add(self, key: tuple[str, str, str], instructions: int, conflicted: int, cycles: int) -> None:
        counts = self.ops.setdefault(key, OpCounts())
        counts.instructions += instructions
        counts.conflicted += conflicted
        counts.cycles += cycles

    def total(self, kind: str | None = None) -> OpCounts:
        total = OpCounts()
        for (_, _, op_kind), counts in self.ops.items():
            if kind is None or op_kind == kind:
                total.instructions += counts.instructions
                total.conflicted += counts.conflicted
                total.cycles += counts.cycles
        return total

    def summary(self) -> str:
        parts = []
        for kind in ("read", "write"):
            t = self.total(kind)
            parts.append(f"{kind}s {t.cycles} cycles in {t.conflicted} of {t.instructions} wave instructions")
        return "; ".join(parts)

    def worst(self, count: int = 3) -> list[tuple[tuple[str, str, str], OpCounts]]:
        """The ops with the most conflict cycles, most first (only those with some)."""
        found = [(key, c) for key, c in self.ops.items() if c.cycles]
        return sorted(found, key=lambda item: -item[1].cycles)[:count]


_CURRENT: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("pagedir_lds_banks", default=None)


@contextlib.contextmanager
def tally() -> Iterator[Tally]:
    """Count the LDS bank conflicts of what runs inside the block."""
    counts = Tally()
    token = _CURRENT.set(counts)
    try:
        yield counts
    finally:
        _CURRENT.reset(token)


def counting() -> bool:
    return _CURRENT.get() is not None


def record(key: tuple[str, str, str], relative: np.ndarray, lanes: np.ndarray, tid: np.ndarray, block: int,
           wave: int, element_size: int) -> None:
    """Count one op execution: ``relative`` (active lanes x elements) byte addresses from the start of
    each lane's workgroup LDS, ``lanes`` the active lanes' indices in the batch, ``tid`` their threads."""
    counts = _CURRENT.get()
    if counts is None or relative.size == 0:
        return
    elements = relative.shape[1]
    contiguous = elements == 1 or bool((np.diff(relative, axis=1) == element_size).all())
    if contiguous:
        width = elements * element_size
        pieces = [(relative[:, 0] + start, min(16, width - start)) for start in range(0, width, 16)] if width > 16 \
            else [(relative[:, 0], width)]
    else:
        pieces = [(relative[:, e], element_size) for e in range(elements)]
    waves_per_group = -(-block // wave)
    wave_id = (lanes // block) * waves_per_group + tid // wave
    for start, width in pieces:
        instructions, conflicted, cycles = _conflicts(start, width, wave_id, tid % wave)
        counts.add(key, instructions, conflicted, cycles)


def _conflicts(start: np.ndarray, width: int, wave_id: np.ndarray, lane: np.ndarray) -> tuple[int, int, int]:
    """(wave instructions, conflicted ones, conflict cycles) of one access of ``width`` bytes per lane."""
    lanes_per_group = GROUP_BYTES // (16 if width > 8 else 8 if width > 4 else 4)
    group = wave_id * 64 + lane // lanes_per_group  # at most 64 groups per wave
    first = start // BANK_BYTES
    last = (start + width - 1) // BANK_BYTES
    span = int((last - first).max()) + 1
    dwords = first[:, None] + np.arange(span)[None, :]
    used = dwords <= last[:, None]
    groups = np.broadcast_to(group[:, None], dwords.shape)[used]
    dwords = dwords[used]
    # distinct (group, dword) pairs, then the most dwords of one bank per group
    pairs = np.unique(np.stack([groups, dwords], axis=1), axis=0)
    banks = pairs[:, 1] % BANKS
    per_bank = np.unique(np.stack([pairs[:, 0], banks], axis=1), axis=0, return_counts=True)
    group_of_bank, depth = per_bank[0][:, 0], per_bank[1]
    order = np.argsort(group_of_bank, kind="stable")
    group_of_bank, depth = group_of_bank[order], depth[order]
    boundaries = np.flatnonzero(np.diff(group_of_bank)) + 1
    group_cycles = np.maximum.reduceat(depth, np.concatenate([[0], boundaries]))
    group_ids = group_of_bank[np.concatenate([[0], boundaries])]
    extra = group_cycles - 1
    waves_of_groups = group_ids // 64
    conflicted_waves = np.unique(waves_of_groups[extra > 0]).size
    return int(np.unique(wave_id).size), int(conflicted_waves), int(extra.sum())
