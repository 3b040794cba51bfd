"""What a target family decides, as one interface: :class:`TargetFamily`.

A family is a set of chips that share an instruction set, a code-object format and a lowering
(CDNA, RDNA; a non-AMD family such as NVIDIA's sm_80 / sm_90 would be one more). The chip table
(:mod:`pagedir.arch`) holds the facts of each chip and names its family; everything that differs
between families, rather than between chips, is asked of the family (:func:`pagedir.targets.family_of`):

* matrix cores: which instruction a wave issues for an element type, with which lane layout
  (:class:`MatrixForm`), how it is emitted (:meth:`TargetFamily.matrix_product`) and how the
  interpreter spreads its operands over the lanes (:meth:`TargetFamily.matrix_layout`);
* memory: the flags word of a buffer descriptor (None: the family reads global memory through
  plain pointers, as NVIDIA's ``ld.global`` / ``cp.async`` do), the interpreter's model of the
  descriptor (:meth:`TargetFamily.descriptor_error`, :meth:`TargetFamily.components_in_range`),
  and the encoding of the wait for direct-to-LDS loads (:attr:`TargetFamily.waitcnt_encoding`);
  the sizes of the direct-to-LDS loads are a chip column (``Chip.lds_dma_sizes``), the ops that wait for
  them :attr:`TargetFamily.dma_waits`;
* wave-uniform values: whether the family has a scalar unit, how a value the same in every lane is kept
  (:meth:`TargetFamily.wave_uniform`, :meth:`TargetFamily.read_lane`) and which ops give one;
* what the passes lower the family's own way (its flash loop, page loads, direct-to-LDS copies): the
  module of :mod:`pagedir.passes.families` named by :attr:`TargetFamily.lowering_module`, at the passes'
  layer since it builds on their helpers (a leaf cannot import them);
* occupancy: whether SGPRs limit the waves per SIMD (:meth:`TargetFamily.waves_by_sgprs`);
* the backend: the upstream lowering and its chipset option (:meth:`TargetFamily.lowering_passes`),
  the dialects a lowered kernel may hold, the LLVM triple (whose data layout the lowering attaches),
  the code generator's CPU and features (:meth:`TargetFamily.codegen_features`) and the
  code object the object file is linked into (:attr:`TargetFamily.code_object`).

This package is a leaf like :mod:`pagedir.arch`: it imports that table and nothing else of
pagedir; the MLIR bindings and numpy are imported only inside the methods that build IR or arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import mlir.ir as ir

    from pagedir.arch import Chip


#: Rows and columns of one matrix-core tile the blockwise loop computes (MFMA / WMMA 16x16).
TILE = 16


@dataclass(frozen=True)
class MatrixForm:
    """One matrix-core product ``m x n x k`` a wave issues, and how its operands sit in the lanes.

    ``per_lane`` A and B values per lane, ``wave`` lanes; ``wmma``: the wave32 scheme (each product's
    K values in one or two lane halves; a lane holds 8 or 16 keys per product), else the wave64 MFMA
    scheme; ``replicated``: every lane holds all ``k`` values of its A row and B column (lanes 16-31
    repeat lanes 0-15) and the accumulator's rows alternate between the two lane halves (gfx11).
    ``max_head_dim``: head dims above it keep the VALU loop (None: no limit). The blockwise loop is
    written for ``TILE x TILE`` products (MFMA, WMMA); another shape (NVIDIA's ``mma.sync`` m16n8k16, whose
    :meth:`product` takes A as 4 and B as 2 two-element registers, C and D as 4 f32) comes with its family's own
    loop (``FamilyLowering.matrix_loop`` in :mod:`pagedir.passes.families`)."""

    k: int
    per_lane: int
    wave: int
    family: TargetFamily = field(compare=False, repr=False)
    wmma: bool = False
    replicated: bool = False
    max_head_dim: int | None = None
    m: int = TILE
    n: int = TILE

    def product(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        """``D = A x B + C`` of one tile, emitted at the current insertion point."""
        return self.family.matrix_product(self, a, b, c)


class MatrixLayout:
    """Where lane ``l``'s element ``j`` of A, B and D sits: (row, column) index arrays of shape (wave, count)."""

    def __init__(self, m: int, n: int, k: int, wave: int, a: tuple, b: tuple, d: tuple, replicated: int = 0):
        self.m, self.n, self.k, self.wave = m, n, k, wave
        self.a_rows, self.a_cols = a
        self.b_rows, self.b_cols = b
        self.d_rows, self.d_cols = d
        #: Lanes from this one on repeat the A and B values of the lanes before (gfx11 WMMA); 0: none.
        self.replicated = replicated


class TargetFamily:
    """The decisions one family of chips makes (module docstring); one instance per family."""

    #: The family's name in the chip table (``Chip.family``).
    name: str = ""
    #: LLVM target triple of the kernels' module (``amdgcn-amd-amdhsa``; NVIDIA: ``nvptx64-nvidia-cuda``).
    triple: str = ""
    #: The LLVM data layout, where the family's lowering attaches none ("": the lowering's).
    data_layout: str = ""
    #: Dialects a fully lowered ``gpu.module`` body may hold (NVIDIA: llvm, nvvm).
    lowered_dialects: tuple[str, ...] = ()
    #: The code generator's assembly: ``amdgcn`` (read by :mod:`pagedir.backend.report`) or ``ptx``
    #: (:mod:`pagedir.backend.ptx_report`).
    assembly: str = "amdgcn"
    #: Emit kind of the loadable code object (``hsaco``, linked by ``ld.lld``; NVIDIA: ``cubin``, by ``ptxas``).
    code_object: str = ""
    #: Flags word of a raw buffer descriptor; None where the family has no buffer descriptors.
    buffer_flags: int | None = None
    #: How global memory is copied straight into LDS (``lds_dma``): ``buffer`` (AMD's ``buffer_load ... lds``,
    #: a wave's lanes side by side, ``Chip.lds_dma_sizes``) or ``cp.async`` (NVIDIA: per thread, 16 bytes,
    #: ``cp.async.commit_group`` / ``wait_group``).
    direct_to_lds: str = "buffer"
    #: rock-pipeline issues a loop's direct-to-LDS tiles during the other tile's math (depth 2): where a read of
    #: one tile need not wait for the other tile's copies. NVIDIA: the kernel's own waits are the only ones
    #: (cp.async.wait_group). CDNA: LLVM waits (vmcnt) before an LDS read for every direct-to-LDS load it cannot
    #: prove apart from it; rock-backend-lds-alias-scopes gives it the proof (alias scopes per tile).
    pipelined_direct_loads: bool = False
    #: Name of the ``s_waitcnt`` encoding the interpreter models for direct-to-LDS loads ("": none).
    waitcnt_encoding: str = ""
    #: Matrix ops (MLIR names) whose lane layout this family defines (the interpreter's dispatch).
    matrix_ops: tuple[str, ...] = ()
    #: A scalar unit (AMD's SGPRs): wave-uniform values are made so (:meth:`wave_uniform`, ``readlane``) so
    #: that they live in scalar registers. False (NVIDIA): the lowering emits neither.
    scalar_unit: bool = False
    #: Ops that wait for the kernel's own direct-to-LDS loads (rock-pipeline splits a tile's copies from
    #: their wait at the first of them).
    dma_waits: frozenset[str] = frozenset()
    #: Ops whose result is the same in every lane of a wave whatever their operands (:meth:`wave_uniform`'s).
    wave_uniform_ops: frozenset[str] = frozenset()
    #: The module of :mod:`pagedir.passes.families` that lowers what this family lowers its own way (the
    #: flash loop's products, page loads, direct-to-LDS copies: ``FamilyLowering``); "": none, the passes'
    #: own lowering (buffer descriptors, ``buffer ... lds``, the MFMA / WMMA loop).
    lowering_module: str = ""
    #: f32 math ops (MLIR names) the backend turns into a per-element call of this family's intrinsic instead
    #: of the generic LLVM one (``rock-backend-lower-math``): NVPTX selects no ``llvm.log2``.
    scalar_math_intrinsics: Mapping[str, str] = MappingProxyType({})
    #: The backend computes index arithmetic whose range provably fits 32 bits in 32
    #: (``driver.NARROW_INDICES``): where it leaves the code generator fewer registers (docs/measurements.md).
    narrows_indices: bool = False

    # --- matrix cores ---------------------------------------------------------------------

    def matrix_form(self, chip: Chip, element: ir.Type) -> MatrixForm | None:
        """The product the blockwise loop issues for ``element`` on ``chip``; None: the VALU loop."""
        return None

    def matrix_product(self, form: MatrixForm, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        raise NotImplementedError(f"{self.name} has no matrix product")

    def matrix_layout(self, op_name: str, m: int, n: int, k: int, chip: Callable[[], Chip]) -> MatrixLayout | None:
        """The lane layout of ``op_name`` of shape m x n x k (None: not one the interpreter knows).
        ``chip()`` gives the kernel's chip where the layout depends on it (it raises ChipError)."""
        return None

    # --- memory ---------------------------------------------------------------------------

    def wave_uniform(self, value: ir.Value) -> ir.Value:
        """``value`` (an integer or index, the same in every lane of a wave) as the family keeps wave-uniform
        values, emitted at the current insertion point: as it is (no scalar unit: nothing to choose)."""
        return value

    def read_lane(self, value: ir.Value, lane: int) -> ir.Value:
        """Lane ``lane``'s ``value`` (an i32) for every lane of the wave, in a scalar register (asked only of a
        family with a scalar unit)."""
        raise NotImplementedError(f"{self.name} has no scalar unit")

    def descriptor_error(self, r: Any) -> str | None:
        """The family's own rules on a raw buffer descriptor (beyond the common ones), or None."""
        return None

    def components_in_range(self, r: Any, offset: Any, soffset: Any, payload: int) -> Any:
        """Per lane and component at byte ``offset``: does the hardware's range check let it through."""
        raise NotImplementedError(f"{self.name} has no buffer descriptors")

    # --- occupancy ------------------------------------------------------------------------

    def waves_by_sgprs(self, chip: Chip, sgprs: int) -> int:
        return chip.max_waves_per_simd

    # --- backend --------------------------------------------------------------------------

    def lowering_passes(self, chip: Chip, index_bitwidth: int) -> tuple[str | None, list[str]]:
        """Upstream passes of rock-backend-pipeline: ``(arith lowering, gpu lowering)``, each run on
        every ``gpu.module`` with the family's chipset option filled in (AMD: ``convert-arith-to-amdgpu``,
        ``convert-amdgpu-to-rocdl`` and ``convert-gpu-to-rocdl``; NVIDIA: no arith lowering and
        ``convert-gpu-to-nvvm``). The lowering attaches the data layout the translation uses."""
        raise NotImplementedError

    def codegen_features(self, chip: Chip) -> str:
        """Target features given to LLVM's code generator for ``chip`` (its CPU is the chip's name; NVIDIA:
        the PTX version, ``+ptx80``)."""
        return ""
