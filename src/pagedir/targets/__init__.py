"""Target families: one module per family, each a :class:`~pagedir.targets.base.TargetFamily`
(what it decides: :mod:`pagedir.targets.base`), chosen by the chip table's ``Chip.family``.

Adding a family: its module here (a subclass of ``TargetFamily``, or of ``AmdFamily`` for an AMD one),
its line in :data:`FAMILIES`, and its chips' rows in :data:`pagedir.arch.CHIPS`; where the passes lower
something its own way (a matrix loop, page loads, direct-to-LDS copies), its module in
:mod:`pagedir.passes.families`, which its ``lowering_module`` names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagedir.targets.base import MatrixForm, MatrixLayout, TargetFamily
from pagedir.targets.cdna import CDNA
from pagedir.targets.nvidia import NVIDIA
from pagedir.targets.rdna import RDNA

if TYPE_CHECKING:
    from pagedir.arch import Chip

#: Family name (``Chip.family``) -> its decisions.
FAMILIES: dict[str, TargetFamily] = {family.name: family for family in (CDNA, RDNA, NVIDIA)}

__all__ = ["FAMILIES", "MatrixForm", "MatrixLayout", "TargetFamily", "family_of", "matrix_op_family"]


def family_of(chip: Chip) -> TargetFamily:
    """The family of ``chip`` (a row of the chip table)."""
    return FAMILIES[chip.family]


def matrix_op_family(op_name: str) -> TargetFamily | None:
    """The family whose matrix op ``op_name`` is (the interpreter's lane layouts), or None."""
    return next((family for family in FAMILIES.values() if op_name in family.matrix_ops), None)
