"""The compiler driver: one ordered list of named stages from L0 to the artefact, and the loop that runs them.

Every tool lowers through here: ``pagedir-compile`` (L0 or L6 to the artefact),
``pagedir-run --check`` (a copy through rock-kernel-pipeline from the level it is at),
:func:`pagedir.interp.check.check_pass` (one pass), the tests and the benchmarks. The
named pipelines of :mod:`pagedir.pipelines` take their steps from the same table::

    from pagedir.driver import CompileOptions, run
    outputs = run(module.operation, CompileOptions(arch="gfx942", emit="asm"))
    print(outputs["asm"])

The stages, in order (docs/levels.md says why in this order; ``level`` is what a stage produces):

=====================================  ==============  =====================================
stage                                  level           what it runs
=====================================  ==============  =====================================
rock-attention-to-gridwise             L1              rock-kernel-pipeline: pagedir passes
rock-gridwise-attention-to-blockwise   L2
rock-blockwise-load                    L3
rock-pipeline                          L3
rock-annotate-liveness, rock-reuse-lds L3
rock-threadwise-lowering               L4
rock-buffer-load                       L5
rock-to-gpu                            L6
rock-backend-prepare ... check-lowered L7              rock-backend-pipeline: upstream pipeline
                                                       text and pagedir passes (8 steps)
extract-llvm-module                    llvm-module     codegen (:mod:`pagedir.backend`)
mlir-translate                         llvm-ir
llvm-O3 (``-O``)                       llvm-ir-opt
llvm-codegen                           asm
llvm-codegen-obj                       obj
ld.lld                                 hsaco
ptxas                                  cubin           NVIDIA: the asm level is PTX, no obj
=====================================  ==============  =====================================

:func:`run` runs the stages after level ``start`` (detected from the IR when not given) up
to ``end`` (the ``emit`` of the options when not given), each in a ``PassManager`` of its
own with MLIR's verifier on, and the rock verifiers after the input and each
rock-kernel-pipeline stage (``verify``). A failure raises :class:`StageError` naming the
stage, with the diagnostics collected (the tools print them their way); the code
generator's own errors stay :class:`pagedir.backend.BackendError`. ``on_stage(stage,
output, seconds)`` sees every stage's result: ``pagedir-compile --dump-dir`` writes them
(as ``Stage.dump``), the benchmarks time them. ``before_stage(stage)`` is called first
(``pagedir-compile`` notes the stage for its crash report).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mlir.ir as ir
from mlir.passmanager import PassManager

from pagedir.arch import get_chip
from pagedir.backend import EMIT_KINDS, emit_problem
from pagedir.diagnostics import Diag, DiagnosticCollector, run_pass_manager
from pagedir.passes import PASSES, OptionError, Pass, add_pass, get_pass_class, parse_options
from pagedir.passes.verify import verify_rock_ops
from pagedir.targets import family_of

#: Every level, in order: the IR levels of docs/levels.md, then the code generator's outputs.
LEVELS = ("linalg", "L0", "L1", "L2", "L3", "L4", "L5", "L6", "L7", "llvm-module", "llvm-ir", "llvm-ir-opt", "asm", "obj", "hsaco",
          "cubin")

#: The level an ``emit`` kind ends at (``llvm-dialect`` also makes the module mlir-translate would read).
EMIT_LEVELS = {"llvm-dialect": "llvm-module", "llvm-ir": "llvm-ir-opt", "asm": "asm", "obj": "obj", "hsaco": "hsaco",
               "ptx": "asm", "cubin": "cubin"}

KERNEL_PIPELINE = "rock-kernel-pipeline"
BACKEND_PIPELINE = "rock-backend-pipeline"
CODEGEN = "codegen"

#: rock-kernel-pipeline: each pass with the level of its output.
KERNEL_STAGES = (
    ("rock-raise-attention", "L0"),
    ("rock-attention-to-gridwise", "L1"),
    ("rock-gridwise-attention-to-blockwise", "L2"),
    ("rock-blockwise-load", "L3"),
    ("rock-pipeline", "L3"),
    ("rock-annotate-liveness", "L3"),
    ("rock-reuse-lds", "L3"),
    ("rock-threadwise-lowering", "L4"),
    ("rock-buffer-load", "L5"),
    ("rock-to-gpu", "L6"),
)

#: The options that go to the kernel passes: each to every pass whose Options have a field of that name, when set.
KERNEL_PASS_FIELDS = ("arch", "block_size", "m_per_block", "n_per_block", "num_splits", "compute_units", "pipeline_depth",
                      "lds_swizzle", "lds_dma")


@dataclass(frozen=True)
class CompileOptions:
    """Everything a compile depends on besides its input (one object for every stage)."""

    #: Chip or target; empty means each kernel's own ``rock.arch`` (the backend stages need one).
    arch: str = ""
    #: Tiling overrides for rock-attention-to-gridwise (0 chooses).
    block_size: int = 0
    m_per_block: int = 0
    n_per_block: int = 0
    #: KV splits (-1: the kernel's ``rock.num_splits``, else 1; 0: chosen from the compute units) and the
    #: compute units the choice fills (0: the chip's).
    num_splits: int = -1
    compute_units: int = 0
    #: KV tiles in flight (rock-pipeline): 1 or 2, 0 the kernel's ``rock.pipeline_depth``, else chosen.
    pipeline_depth: int = 0
    #: The matrix loop's tiles swizzled in LDS, and filled by direct global -> LDS loads
    #: (rock-gridwise-attention-to-blockwise; False: as the kernel's ``rock.lds_swizzle`` / ``rock.lds_dma`` say).
    lds_swizzle: bool = False
    lds_dma: bool = False
    #: Width of ``index`` in the kernel: 64 or 32 (rock-backend-pipeline).
    index_bitwidth: int = 64
    #: LLVM optimization level, 0 to 3.
    opt_level: int = 3
    #: What to produce (:data:`pagedir.backend.EMIT_KINDS`): the default end of :func:`run`.
    emit: str = "asm"
    #: Also produce the assembly when emitting an object, LLVM IR or the LLVM dialect (for the kernel report).
    want_asm: bool = False
    #: Run the rock verifiers on the input and after each rock-kernel-pipeline stage.
    verify: bool = True

    def __post_init__(self) -> None:
        if self.arch:
            get_chip(self.arch)  # ChipError (a ValueError) names the value and the accepted form
        if self.index_bitwidth not in (32, 64):
            raise ValueError(f"index-bitwidth must be 32 or 64, got {self.index_bitwidth}")
        if self.opt_level not in (0, 1, 2, 3):
            raise ValueError(f"opt-level must be 0, 1, 2 or 3, got {self.opt_level}")
        if self.emit not in EMIT_KINDS:
            raise ValueError(f"unknown emit kind '{self.emit}'; expected one of {', '.join(EMIT_KINDS)}")
        if self.arch and (why := emit_problem(get_chip(self.arch), self.emit)):
            raise ValueError(why)


_DEFAULTS = {field.name: field.default for field in dataclasses.fields(CompileOptions)}


@dataclass(frozen=True)
class Stage:
    """One named step from one level towards the artefact."""

    #: The pass argument, the upstream pipeline text, or the code generator step.
    name: str
    #: The level of its output (:data:`LEVELS`); "" for a pass outside the table.
    level: str
    #: rock-kernel-pipeline, rock-backend-pipeline or codegen.
    pipeline: str
    #: What it runs: a pagedir Pass or upstream pipeline text (on the module, in place), or a
    #: function of the module (``reads`` None) or of the output of level ``reads``.
    step: Any
    reads: str | None = None
    #: The name of its file in a dump directory (``pagedir-compile --dump-dir``); None: not written alone.
    dump: str | None = None


class StageError(Exception):
    """A stage failed (``stage``; None when the input failed the rock verifiers); ``diags`` say why."""

    def __init__(self, stage: Stage | None, diags: list[Diag]):
        self.stage = stage
        self.diags = diags
        what = f"stage {stage.name}" if stage else "the input"
        super().__init__("\n".join([f"{what} failed:", *(diag.format() for diag in diags)]))


class StageUnavailable(ImportError):
    """The pass of a stage does not load in this installation (nothing the input can fix)."""

    def __init__(self, argument: str, cause: Exception):
        self.argument = argument
        self.cause = cause
        super().__init__(f"pass '{argument}' is not available in this installation ({type(cause).__name__}: {cause})")


# ----------------------------------------------------------------------------
# The stages


def stages(options: CompileOptions, start: str = "L0", end: str | None = None) -> list[Stage]:
    """The stages taking IR at level ``start`` to level ``end`` (default: ``options.emit``'s), in order.

    Only the stages in that range are built, so a kernel-pipeline range needs no chip. On
    the way to an object the assembly is made only when ``options.want_asm``.
    """
    end = end or end_level(options)
    first, last = LEVELS.index(start), LEVELS.index(end)
    if first > last:
        raise ValueError(f"level {start} comes after {end}")

    def wanted(level: str) -> bool:
        return first < LEVELS.index(level) <= last

    found: list[Stage] = []
    if any(wanted(level) for _, level in KERNEL_STAGES):
        found += [stage for stage in kernel_stages(options) if wanted(stage.level)]
    if wanted("L7"):
        found += backend_stages(options)
    if last > LEVELS.index("L7"):
        found += [stage for stage in codegen_stages(options) if wanted(stage.level)]
    if end in ("obj", "hsaco") and not options.want_asm:
        found = [stage for stage in found if stage.level != "asm"]
    return found


def end_level(options: CompileOptions) -> str:
    level = EMIT_LEVELS[options.emit]
    return "asm" if level in ("llvm-module", "llvm-ir-opt") and options.want_asm else level


def kernel_stages(options: CompileOptions) -> list[Stage]:
    return [Stage(argument, level, KERNEL_PIPELINE, kernel_pass(argument, options), dump=argument)
            for argument, level in KERNEL_STAGES]


def kernel_pass(argument: str, options: CompileOptions) -> Pass:
    """Pass ``argument`` given the options it takes (:data:`KERNEL_PASS_FIELDS` its Options have, where set)."""
    cls = _pass_class(argument)
    taken = {field.name for field in dataclasses.fields(cls.Options)}
    values = {name: getattr(options, name) for name in KERNEL_PASS_FIELDS
              if name in taken and getattr(options, name) != _DEFAULTS[name]}
    return cls(parse_options(cls, values))


def pass_stage(argument: str, options: str | dict[str, Any] | None = None) -> Stage:
    """A stage running registered pass ``argument`` with ``options`` (text or a dict), verified like a kernel stage."""
    if argument not in PASSES:
        raise OptionError(f"no pagedir pass named '{argument}' (known: {', '.join(sorted(PASSES))})")
    cls = _pass_class(argument)
    level = dict(KERNEL_STAGES).get(argument, "")
    return Stage(argument, level, KERNEL_PIPELINE, cls(parse_options(cls, options or "")), dump=argument)


def _pass_class(argument: str) -> type[Pass]:
    try:
        return get_pass_class(argument)
    except Exception as err:  # a pass module that does not load
        raise StageUnavailable(argument, err) from None


def backend_stages(options: CompileOptions) -> list[Stage]:
    """rock-backend-pipeline: one stage per step, all at L7; the last one is dumped as ``llvm-dialect``."""
    steps = backend_pipeline_steps(BackendPipelineOptions(options.arch, options.index_bitwidth))
    found = [Stage(step if isinstance(step, str) else step.argument, "L7", BACKEND_PIPELINE, step) for step in steps]
    found[-1] = dataclasses.replace(found[-1], dump="llvm-dialect")
    return found


def codegen_stages(options: CompileOptions) -> list[Stage]:
    """The gpu.module bodies -> LLVM IR (mlir-translate) -> LLVM's O3 pipeline -> assembly, object, code object."""
    if not options.arch:
        raise ValueError("the code generator needs arch=<chip> (e.g. arch=gfx942)")
    chip = get_chip(options.arch)
    level = options.opt_level

    def extract(module: ir.Operation) -> str:
        from pagedir.backend.translate import extract_llvm_module

        family = family_of(chip)
        return str(extract_llvm_module(module, family.triple, family.data_layout))

    def translate(llvm_module: str) -> str:
        from pagedir.backend.translate import translate_to_llvm_ir

        return translate_to_llvm_ir(llvm_module)

    def optimize(llvm_ir: str) -> str:
        from pagedir.backend.codegen import optimize

        return str(optimize(llvm_ir, chip, level))

    def assembly(optimized: str) -> str:
        from pagedir.backend.codegen import emit_assembly

        return emit_assembly(optimized, chip, level)

    def obj(optimized: str) -> bytes:
        from pagedir.backend.codegen import emit_object

        return emit_object(optimized, chip, level)

    def hsaco(obj: bytes) -> bytes:
        from pagedir.backend.codegen import link_hsaco

        return link_hsaco(obj)

    def cubin(ptx: str) -> bytes:
        from pagedir.backend.codegen import assemble_cubin

        return assemble_cubin(ptx, chip)

    if family_of(chip).code_object == "cubin":  # NVIDIA: no object from LLVM; ptxas assembles the PTX
        return [
            Stage("extract-llvm-module", "llvm-module", CODEGEN, extract, dump="llvm-module"),
            Stage("mlir-translate", "llvm-ir", CODEGEN, translate, reads="llvm-module", dump="llvm-ir"),
            Stage(f"llvm-O{level}", "llvm-ir-opt", CODEGEN, optimize, reads="llvm-ir", dump="llvm-ir-opt"),
            Stage("llvm-codegen", "asm", CODEGEN, assembly, reads="llvm-ir-opt", dump="asm"),
            Stage("ptxas", "cubin", CODEGEN, cubin, reads="asm"),
        ]
    return [
        Stage("extract-llvm-module", "llvm-module", CODEGEN, extract, dump="llvm-module"),
        Stage("mlir-translate", "llvm-ir", CODEGEN, translate, reads="llvm-module", dump="llvm-ir"),
        Stage(f"llvm-O{level}", "llvm-ir-opt", CODEGEN, optimize, reads="llvm-ir", dump="llvm-ir-opt"),
        Stage("llvm-codegen", "asm", CODEGEN, assembly, reads="llvm-ir-opt", dump="asm"),
        Stage("llvm-codegen-obj", "obj", CODEGEN, obj, reads="llvm-ir-opt"),
        Stage("ld.lld", "hsaco", CODEGEN, hsaco, reads="obj"),
    ]


def takes_tensors(op: ir.Operation) -> bool:
    from pagedir.passes.raise_attention.signature import takes_tensors as reads_tensors

    return op.name == "func.func" and reads_tensors(op)


def level_of(module: ir.Operation) -> str:
    """The level to continue ``module`` from: linalg (a payload for rock-raise-attention, written
    to memrefs by ``bufferization.materialize_in_destination``, or a function taking and returning tensors, and no rock kernel), L0 (rock.attention), L1 (rock.gridwise_attention_accel),
    L2 (any other rock.kernel function: the passes leave IR past their level alone), L6 (gpu.func
    kernels), else L7 (LLVM dialect)."""
    held: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("rock.attention", "rock.gridwise_attention_accel"):
            held.add(op.name)
        elif op.name == "func.func" and "rock.kernel" in op.attributes:
            held.add("rock.kernel")
        elif op.name == "gpu.func" and op.parent is not None and op.parent.name == "gpu.module":
            held.add("gpu.func")
        elif op.name == "bufferization.materialize_in_destination" or takes_tensors(op):
            held.add("payload")  # a function taking tensors is one too (its memref signature: raise_attention/signature.py)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for level, marker in (("L0", "rock.attention"), ("L1", "rock.gridwise_attention_accel"), ("L2", "rock.kernel"),
                          ("L6", "gpu.func"), ("linalg", "payload")):
        if marker in held:
            return level
    return "L7"


# ----------------------------------------------------------------------------
# Running them


def run(
    module: ir.Operation,
    options: CompileOptions,
    *,
    start: str | None = None,
    end: str | None = None,
    on_stage: Callable[[Stage, Any, float], None] | None = None,
    before_stage: Callable[[Stage], None] | None = None,
) -> dict[str, Any]:
    """Take ``module`` from level ``start`` (default :func:`level_of`) to ``end`` (default ``options.emit``'s).

    The module is changed in place. Returns each level's output: the module for the IR
    levels, text or bytes for the code generator's. Raises :class:`StageError`,
    :class:`StageUnavailable`, ``BackendError``.
    """
    selected = stages(options, level_of(module) if start is None else start, end)
    return run_stages(module, selected, verify=options.verify, on_stage=on_stage, before_stage=before_stage)


def run_stages(
    module: ir.Operation,
    selected: list[Stage],
    *,
    verify: bool = True,
    on_stage: Callable[[Stage, Any, float], None] | None = None,
    before_stage: Callable[[Stage], None] | None = None,
) -> dict[str, Any]:
    """Run ``selected`` in order on ``module`` (the loop behind :func:`run`; tests run lists of their own)."""
    outputs: dict[str, Any] = {}
    with DiagnosticCollector(module.context) as collector:
        if verify and selected and selected[0].pipeline == KERNEL_PIPELINE and not verify_rock_ops(module):
            raise StageError(None, collector.take())
        for stage in selected:
            if before_stage:
                before_stage(stage)
            started = time.perf_counter()
            output = _run_one(stage, module, outputs, collector)
            seconds = time.perf_counter() - started
            if verify and stage.pipeline == KERNEL_PIPELINE and not verify_rock_ops(module):
                raise StageError(stage, collector.take())
            outputs[stage.level] = output
            if on_stage:
                on_stage(stage, output, seconds)
    return outputs


def _run_one(stage: Stage, module: ir.Operation, outputs: dict[str, Any], collector: DiagnosticCollector) -> Any:
    if not isinstance(stage.step, (Pass, str)):
        return stage.step(module if stage.reads is None else outputs[stage.reads])
    pm = PassManager("builtin.module", context=module.context)
    pm.enable_verifier(True)
    if isinstance(stage.step, str):
        pm.add(stage.step)
    else:
        add_pass(pm, stage.step)
    diags = run_pass_manager(pm, module, collector)
    if any(diag.severity == "error" for diag in diags):
        raise StageError(stage, diags)
    return module


# ----------------------------------------------------------------------------
# rock-backend-pipeline's steps: L6 (gpu.module with gpu.func kernels) -> LLVM dialect + ROCDL


@dataclass(frozen=True)
class BackendPipelineOptions:
    #: Chip or target the kernels are compiled for (required).
    arch: str = ""
    #: Width of ``index`` in the kernel: 64 (default) or 32.
    index_bitwidth: int = 64

    def __post_init__(self) -> None:
        if self.index_bitwidth not in (32, 64):
            raise ValueError(f"index-bitwidth must be 32 or 64, got {self.index_bitwidth}")
        if not self.arch:
            raise ValueError("needs arch=<chip> (e.g. arch=gfx942)")
        get_chip(self.arch)  # ChipError (a ValueError) names the value and the accepted form


class BackendPreparePass(Pass):
    """Check each gpu.func kernel against the chip (rock.arch, rock.wave_size, index width), record its wave size."""

    argument = "rock-backend-prepare"
    summary = "Check gpu.func kernels against the chip and record rock.wave_size"
    Options = BackendPipelineOptions

    def run(self, module) -> bool:
        from pagedir.backend.kernel_attrs import check_kernels

        return check_kernels(module, get_chip(self.options.arch), self.options.index_bitwidth)


class BackendLowerTransfersPass(Pass):
    """Rewrite 1-D vector.transfer_read/write on memrefs into vector (masked) loads and stores."""

    argument = "rock-backend-lower-transfers"
    summary = "Lower 1-D vector transfers to vector.load/store and masked loads/stores"

    def run(self, module) -> bool:
        from pagedir.backend.transfers import lower_vector_transfers

        lower_vector_transfers(module)
        return True


class BackendLowerMathPass(Pass):
    """Rewrite f32 math ops with an AMDGPU instruction (exp2) into LLVM intrinsic calls, expand tanh."""

    argument = "rock-backend-lower-math"
    summary = "Lower f32 math.exp2 and math.log2 to LLVM intrinsics instead of device-library calls, math.tanh to exp2 arithmetic"

    def run(self, module) -> bool:
        from pagedir.backend.intrinsics import lower_math_to_intrinsics

        lower_math_to_intrinsics(module)
        return True


class BackendLowerSlicesPass(Pass):
    """Rewrite 1-D strided slices (left by convert-arith-to-amdgpu's fp8 conversions) into shuffles."""

    argument = "rock-backend-lower-slices"
    summary = "Lower 1-D vector.extract/insert_strided_slice to vector.shuffle"

    def run(self, module) -> bool:
        from pagedir.backend.transfers import lower_strided_slices

        lower_strided_slices(module)
        return True


class BackendDynamicArgumentsPass(Pass):
    """Give kernels with dynamic memref arguments a bare-pointer ABI (module docstring of
    :mod:`pagedir.backend.dynamic_abi`): each dynamic size becomes an index argument."""

    argument = "rock-backend-dynamic-arguments"
    summary = "Pass the dynamic sizes of kernel memref arguments as index arguments after the pointers"

    def run(self, module) -> bool:
        from pagedir.backend.dynamic_abi import lower_dynamic_arguments

        lower_dynamic_arguments(module)
        return True


class BackendLdsAliasScopesPass(Pass):
    """Alias scopes on the LDS accesses of kernels whose direct-to-LDS loads write disjoint tiles, so that
    LLVM waits only for the copies an access may read (:mod:`pagedir.backend.lds_scopes`)."""

    argument = "rock-backend-lds-alias-scopes"
    summary = "Alias scopes on LDS accesses and direct-to-LDS loads of disjoint LDS regions; LDS-only barriers there"

    def run(self, module) -> bool:
        from pagedir.backend.lds_scopes import annotate_lds_alias_scopes

        annotate_lds_alias_scopes(module)
        return True


class BackendNarrowIndicesPass(Pass):
    """In each gpu.module holding a kernel that asks for waves per SIMD (``rock.lds_occupancy``) with
    its KV loop software-pipelined (``rock.pipelined = 2``), on a family that narrows indices
    (``TargetFamily.narrows_indices``): index arithmetic whose range provably fits 32 bits in 32
    (:data:`NARROW_INDICES`). Those kernels hold the next K/V tiles in registers across the loop and
    need the registers 64-bit positions, bounds and thread-id pieces took to fit the waves they ask
    for; on other kernels the same rewrite was measured to lose as often as it won (waves,
    instructions: docs/measurements.md), so they keep LLVM's 64-bit code."""

    argument = "rock-backend-narrow-indices"
    summary = "Compute index arithmetic that fits 32 bits in 32 in gpu.modules of pipelined kernels asking for waves"
    Options = BackendPipelineOptions

    def run(self, module) -> bool:
        from pagedir.backend.kernel_attrs import gpu_kernels

        if not family_of(get_chip(self.options.arch)).narrows_indices:
            return True
        chosen: list[ir.Operation] = []
        for kernel in gpu_kernels(module):
            gpu_module = kernel.parent.operation
            if "rock.lds_occupancy" in kernel.attributes and _has_pipelined_loop(kernel) and gpu_module not in chosen:
                chosen.append(gpu_module)
        for gpu_module in chosen:
            PassManager.parse(f"gpu.module({NARROW_INDICES})", context=module.context).run(gpu_module)
        return True


def _has_pipelined_loop(kernel: ir.Operation) -> bool:
    """Whether a loop of ``kernel`` was software-pipelined (rock-pipeline marks it ``rock.pipelined``)."""
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if "rock.pipelined" in op.attributes:
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    kernel.walk(visit)
    return bool(found)


class BackendCheckLoweredPass(Pass):
    """Report, at its location, any op left in a gpu.module that is not LLVM dialect or ROCDL."""

    argument = "rock-backend-check-lowered"
    summary = "Check that gpu.module bodies are fully in the LLVM and ROCDL dialects"

    def run(self, module) -> bool:
        from pagedir.backend.kernel_attrs import check_lowered

        return check_lowered(module)


#: 64-bit index arithmetic that provably fits 32 bits, computed in 32. LLVM left the key positions,
#: the loop counter and the thread-id pieces of the decode kernels in VGPR pairs (64-bit compares,
#: a zero high word per value kept across the KV loop): make demo's kernel's registers
#: (docs/measurements.md). Sound by construction (only ranges that fit are narrowed); the one case
#: LLVM 22.1 narrows wrongly, a right shift by an amount that may reach 32 (llvm/llvm-project#218191),
#: does not occur: the kernels' only 64-bit shift is ``1 << (s & 63)`` of a masked load, whose range
#: does not fit 32 bits.
NARROW_INDICES = "arith-int-range-narrowing{int-bitwidths-supported=32}"


def backend_pipeline_steps(options: BackendPipelineOptions) -> list[Pass | str]:
    """L6 (gpu.module with gpu.func kernels) -> LLVM dialect + ROCDL inside the gpu.module.

    Index width: 64 bits by default, the width of a global pointer, so addresses
    never wrap (a KV cache easily passes 2**31 bytes). The cost is small after
    LLVM's O3 pipeline, which narrows index arithmetic bounded by the workitem and
    workgroup id ranges (the paged-load kernel in tests/lit/backend gets the same
    registers and 2 more instructions than with 32). ``index-bitwidth=32`` is
    available; memrefs above 2**31-1 elements are refused with it.
    After ``lower-affine``, the ``gpu.module`` of a pipelined kernel asking for waves computes the
    integer arithmetic whose range analysis proves it fits 32 bits in 32, on CDNA
    (:class:`BackendNarrowIndicesPass`): a value that may pass 32 bits (a page's byte offset in a
    pool past 4 GiB, a pointer) keeps 64.
    Kernel memref arguments are bare pointers (one pointer each, as rocMLIR passes them); the
    dynamic sizes of a kernel that serves every batch follow as index arguments
    (:class:`BackendDynamicArgumentsPass`).
    """
    chip = get_chip(options.arch)
    to_arith, to_llvm = family_of(chip).lowering_passes(chip, options.index_bitwidth)
    return [
        BackendPreparePass(options),
        BackendDynamicArgumentsPass(),
        "convert-vector-to-scf",
        BackendLowerTransfersPass(),
        BackendLowerMathPass(),
        *([f"gpu.module({to_arith})"] if to_arith else []),  # the family's lowering of arith (fp8 conversions)
        BackendLowerSlicesPass(),
        "expand-strided-metadata,lower-affine",
        BackendNarrowIndicesPass(options),
        "arith-expand,convert-scf-to-cf",
        f"gpu.module({','.join(to_llvm)})",
        "reconcile-unrealized-casts",
        BackendLdsAliasScopesPass(),
        BackendCheckLoweredPass(),
    ]

