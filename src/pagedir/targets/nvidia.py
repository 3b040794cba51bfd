"""NVIDIA (sm_80 A100, sm_90 H100): warps of 32, global memory through plain pointers, NVVM and PTX.

What differs from the AMD families (:mod:`pagedir.targets.base` lists what a family decides):

* memory: no buffer descriptors (``buffer_flags`` None). ``rock-buffer-load`` turns a
  ``rock.global_load`` into 16-byte ``llvm.load``\\s through a global pointer (``ld.global.v4``),
  guarded by the load's validity so that nothing outside the page, the buffer or the sequence is
  ever addressed (a descriptor's range check gave that on AMD): the family's lowering in the passes,
  :mod:`pagedir.passes.families.nvidia` (``lowering_module``);
* no scalar unit: a value the same in every lane of a warp needs no ``readfirstlane``
  (:attr:`TargetFamily.scalar_unit` False), and the per-lane division of page numbers by a run-time
  slot count (a ``readlane`` per row on AMD) is not used;
* matrix form: ``mma.sync.aligned.m16n8k16.row.col`` f16 / bf16 -> f32 (``nvvm.mma.sync``), emitted by
  the blockwise loop of :mod:`pagedir.passes.families.mma_sync_loop` (its lane scheme: the PTX fragment table of
  :mod:`pagedir.targets.nvidia_mma`); f32 keeps the VALU loop, and so do head dims above 128;
* direct global -> LDS loads (``lds_dma``): ``cp.async`` 16 bytes per thread, zero-filled where invalid,
  then ``cp.async.commit_group`` / ``wait_group 0`` (``dma_waits``) and a barrier
  (:mod:`pagedir.passes.families.nvidia`);
* occupancy: registers are the only per-lane limit (no SGPRs); the chip rows carry CUDA's 1 KiB
  of shared memory reserved per block and the 32 blocks per SM;
* backend: ``convert-gpu-to-nvvm`` (bare pointers, the index width), the ``nvptx64-nvidia-cuda``
  triple and its data layout, PTX from LLVM's NVPTX code generator (``+ptx80``: the PTX ISA that
  ptxas of CUDA 12 and later reads, sm_90 included), and a ``cubin`` assembled by ``ptxas``
  (:mod:`pagedir.backend.ptxas`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pagedir.targets.base import MatrixForm, MatrixLayout, TargetFamily

if TYPE_CHECKING:
    import mlir.ir as ir

    from pagedir.arch import Chip

#: The data layout of LLVM's NVPTX target for 64-bit pointers (what ``nvptx64-nvidia-cuda`` uses).
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
#: PTX ISA version written into the PTX (``.version 8.0``): sm_90 needs 7.8 or later.
PTX_FEATURES = "+ptx80"
#: Head dims above this keep the VALU loop: a lane's outputs alone are D / 2 registers (128 at D 256).
MMA_MAX_HEAD_DIM = 128


class Nvidia(TargetFamily):
    name = "nvidia"
    triple = "nvptx64-nvidia-cuda"
    lowered_dialects = ("llvm", "nvvm")
    code_object = "cubin"
    assembly = "ptx"
    direct_to_lds = "cp.async"
    pipelined_direct_loads = True
    # lg2.approx.f32: the split kernel's log-sum-exp (max relative error 2^-22, PTX ISA); NVPTX has no libcall
    # for llvm.log2
    scalar_math_intrinsics = {"math.log2": "llvm.nvvm.lg2.approx.f"}
    data_layout = DATA_LAYOUT
    matrix_ops = ("nvvm.mma.sync",)
    dma_waits = frozenset({"nvvm.cp.async.wait.group"})
    lowering_module = "nvidia"

    def matrix_form(self, chip: Chip, element: ir.Type) -> MatrixForm | None:
        import mlir.ir as ir

        if not isinstance(element, (ir.F16Type, ir.BF16Type)):
            return None
        return MatrixForm(16, 8, 32, self, n=8, max_head_dim=MMA_MAX_HEAD_DIM)

    def matrix_product(self, form: MatrixForm, a: list, b: list, c: ir.Value) -> ir.Value:
        """``D = A B + C`` of one m16n8k16 tile: A's 4 and B's 2 registers of two f16 / bf16 values
        (``vector<2x...>``, the lower-numbered element first), C and D ``vector<4xf32>`` (the fragment
        table: :mod:`pagedir.targets.nvidia_mma`)."""
        import mlir.ir as ir
        from mlir.dialects import llvm, nvvm, vector

        f32 = ir.F32Type.get()
        element = ir.VectorType(a[0].type).element_type
        name = "f16"
        if isinstance(element, ir.BF16Type):  # bf16 pairs travel as b32 registers
            i32 = ir.IntegerType.get_signless(32)
            a = [vector.extract(vector.bitcast(ir.VectorType.get([1], i32), r), [], [0]) for r in a]
            b = [vector.extract(vector.bitcast(ir.VectorType.get([1], i32), r), [], [0]) for r in b]
            name = "bf16"
        # the operands' PTX types named (the op's custom parser infers them; its builder does not)
        ptx_type = ir.Attribute.parse(f"#nvvm.mma_type<{name}>")
        extra = {"multiplicand_a_ptx_type": ptx_type, "multiplicand_b_ptx_type": ptx_type}
        accumulators = [vector.extract(c, [], [i]) for i in range(4)]
        struct = ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>")
        d = nvvm.mma_sync(struct, ir.Attribute.parse("#nvvm.shape<m = 16, n = 8, k = 16>"),
                          ir.Attribute.parse("#nvvm.mma_layout<row>"), ir.Attribute.parse("#nvvm.mma_layout<col>"),
                          list(a), list(b), accumulators, **extra)
        values = [llvm.extractvalue(f32, d, [i]) for i in range(4)]
        return vector.from_elements(ir.VectorType.get([4], f32), values)

    def matrix_layout(self, op_name, m, n, k, chip) -> MatrixLayout | None:
        from pagedir.targets.nvidia_mma import MMA_K, MMA_M, MMA_N, mma_layout

        return mma_layout() if (m, n, k) == (MMA_M, MMA_N, MMA_K) else None

    def lowering_passes(self, chip: Chip, index_bitwidth: int) -> tuple[str | None, list[str]]:
        # math ops with an LLVM intrinsic (fma, fabs, copysign) become it first: convert-gpu-to-nvvm would call
        # libdevice (__nv_fmaf), which nothing links
        return None, ["convert-math-to-llvm", "convert-nvgpu-to-nvvm",
                      f"convert-gpu-to-nvvm{{index-bitwidth={index_bitwidth} use-bare-ptr-memref-call-conv=true}}"]

    def codegen_features(self, chip: Chip) -> str:
        return PTX_FEATURES


NVIDIA = Nvidia()
