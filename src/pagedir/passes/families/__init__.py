"""What the passes lower a target family's own way: one :class:`FamilyLowering` per family that needs one.

The passes never ask which family a chip belongs to. What differs between families in a pass's output is
asked of the family, in two places by layer:

* :class:`pagedir.targets.TargetFamily` (a leaf, read by the backend and the interpreter too): the facts and
  the small IR choices that need only the MLIR bindings: the matrix product an element type takes
  (``matrix_form``, ``matrix_product``), how a wave-uniform value is kept (``wave_uniform``), whether it has a
  scalar unit, its buffer descriptors' flags, which ops wait for direct-to-LDS loads (``dma_waits``);
* its ``FamilyLowering`` here, at the passes' layer (it builds on their helpers: the matrix loop, the tile
  plans): the flash loop on its matrix cores, how ``rock.global_load`` and ``rock.global_load_lds`` become
  memory instructions, and how rock-blockwise-load copies a tile straight into LDS.

:func:`lowering_of` finds a family's lowering by :attr:`pagedir.targets.TargetFamily.lowering_module`, the
name of its module in this package (``nvidia``: :mod:`pagedir.passes.families.nvidia`), imported on first
use; a family without one (CDNA, RDNA) takes the defaults below, the passes' own lowering. Adding a family
is its :class:`~pagedir.targets.TargetFamily` module, its line in ``pagedir.targets.FAMILIES``, its chips'
rows in ``pagedir.arch.CHIPS``, and, where it lowers something its own way, its module here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from pagedir.page_sources import source_of
from pagedir.passes.blockwise_gemm import MatrixLoop
from pagedir.passes.ir_utils import dims_of
from pagedir.targets import TargetFamily, family_of

if TYPE_CHECKING:
    import mlir.ir as ir

    from pagedir.arch import Chip


#: Bytes per lane of the ``buffer ... lds`` loads whose tiles are pipelined (the widest of rock-blockwise-load's
#: ``DMA_WIDTHS``).
PIPELINED_DMA_BYTES = 16


class DirectCopy:
    """A family's own direct global -> LDS copy of a ``rock.blockwise_load_tile`` (``lds_dma``), in
    rock-blockwise-load's GlobalToLDS stage."""

    def width(self, op, wave: int) -> int | None:
        """Bytes per lane of the copy of ``op``'s tile, None: the tile keeps the register path."""
        raise NotImplementedError

    def emit(self, op, plan, page_ptrs: ir.Value, wave: int, element_source: Callable) -> None:
        """The GlobalToLDS stage of ``op`` at the current insertion point: ``plan`` is the pass's tile plan
        (``first_page_map``), ``element_source(op, form, page_ptrs, first_page, coords)`` gives a tile
        element's page pointer, offset, page extent and validity (rock-blockwise-load's)."""
        raise NotImplementedError


def row_source_fallback(op, elem: int, lane_bytes: int) -> str | None:
    """Why the pool cannot give each lane of a direct-to-LDS copy of ``op``'s tile its ``lane_bytes`` from
    one run of a row (None: it can): the validity must not change along a row, and the pool must hold a
    row's ``elem``-byte elements side by side in runs of whole lanes' bytes. Asked by every family's copy."""
    if op.valid is not None and any(len(op.indices) + 1 in dims_of(e) for e in op.valid.results):
        return "validity changes along a row"
    step, run = source_of(op.source, op.page_table).contiguous_run(op.page_size)
    if step != 1 or run * elem % lane_bytes:
        return f"the pool holds a row's elements {step} apart in runs of {run}, not one lane's {lane_bytes} bytes"
    return None


class FamilyLowering:
    """What a family lowers its own way in the passes; the defaults are the passes' own lowering (AMD's:
    the MFMA / WMMA loop, buffer descriptors with the family's ``buffer_flags``, ``buffer ... lds`` loads
    sized by ``Chip.lds_dma_sizes``)."""

    #: rock-gridwise-attention-to-blockwise's flash loop on the family's matrix cores: :class:`MatrixLoop`
    #: or a subclass (its products, lane scheme, tile swizzles).
    matrix_loop: type[MatrixLoop] = MatrixLoop
    #: rock-buffer-load's lowering of ``rock.global_load``, ``(op, chip) -> bool`` (False after an error);
    #: None: a raw buffer load through a descriptor.
    global_load: Callable[[ir.OpView, Chip], bool] | None = None
    #: rock-buffer-load's lowering of ``rock.global_load_lds``; None: ``raw.ptr.buffer.load.lds``.
    global_load_lds: Callable[[ir.OpView, Chip], bool] | None = None
    #: rock-blockwise-load's direct-to-LDS copy of a tile; None: ``buffer ... lds`` loads where the chip has them.
    direct_copy: DirectCopy | None = None

    def direct_copies_pipelined(self, chip: Chip) -> bool:
        """Whether a loop's direct-to-LDS tiles pay for being copied during the other tile's math, where the
        family's waits let them (``TargetFamily.pipelined_direct_loads``): ``buffer ... lds`` loads in their
        16-byte form only (gfx950: with the dword form of gfx90a and gfx942 the pipelined loop's four times as
        many copies and its VGPRs cost more than the overlap gains, docs/measurements.md)."""
        return PIPELINED_DMA_BYTES in chip.lds_dma_sizes


#: The lowering of families without a module of their own.
DEFAULT = FamilyLowering()


def lowering_of(chip_or_family: Chip | TargetFamily) -> FamilyLowering:
    """The :class:`FamilyLowering` of a chip's family (or of ``family``)."""
    family = chip_or_family if isinstance(chip_or_family, TargetFamily) else family_of(chip_or_family)
    if not family.lowering_module:
        return DEFAULT
    return importlib.import_module(f"pagedir.passes.families.{family.lowering_module}").LOWERING
