"""Checks on ``gpu.func`` kernels before lowering: the chip and wave size they assume.

A kernel built for one chip family is wrong on another (buffer-descriptor flags,
LDS limits, wave size), so the backend refuses, at the kernel's location:

* a ``rock.arch`` naming another chip than the one compiled for (the rule of
  ``pagedir.arch.kernel_chip``; a kernel without one records the chip);
* a ``rock.wave_size`` other than the chip's wave size (a kernel tiled for
  64-lane waves compiled for gfx1100 would compute with half its threads);
* with 32-bit indices, a memref holding more elements than an i32 index reaches;
* kernel memref arguments without a static shape and identity layout (kernels
  take bare pointers).

A kernel without ``rock.wave_size`` gets the chip's, so later stages and the
report see what the code assumes.

A kernel marked ``rock.lds_occupancy`` (rock-attention-to-gridwise marks the decode loop on
the matrix cores) asks the code generator for the waves per SIMD its LDS and workgroup size
allow, at most the waves that leave a wave 128 VGPRs: ``rocdl.waves_per_eu`` (LLVM's ``amdgpu-waves-per-eu``), which bounds the registers the
scheduler and the allocator may use. Without it LLVM's scheduler spends registers on latency
(the split decode kernel ran a wave fewer than its LDS allows: docs/measurements.md). The code generator
drops the request again when meeting it would spill (:mod:`pagedir.backend.codegen`).
"""

from __future__ import annotations

import mlir.ir as ir

from pagedir.arch import Chip, kernel_chip_or_none
from pagedir.offset_width import I32_LIMIT, fits_i32
from pagedir.targets import FAMILIES, family_of

INDEX32_MAX_ELEMENTS = I32_LIMIT - 1
#: A request for waves per SIMD leaves a wave at least this many VGPRs (4 waves on CDNA): the decode
#: kernels asked for more spilled (D 64: 2 VGPRs at 7 waves, 14 at 8), so the code generator would
#: only run twice to drop the request.
REQUEST_MIN_VGPRS = 128
FUNCTION_OPS = frozenset({"func.func", "gpu.func", "llvm.func"})


def gpu_kernels(module: ir.Operation) -> list[ir.Operation]:
    """``gpu.func`` ops with the ``gpu.kernel`` attribute, in every ``gpu.module``."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name not in FUNCTION_OPS:
            return ir.WalkResult.ADVANCE
        if name == "gpu.func" and "gpu.kernel" in op.attributes:
            found.append(op)
        return ir.WalkResult.SKIP  # a function body (nearly every op) holds no kernel

    module.walk(visit, ir.WalkOrder.PRE_ORDER)  # pre-order: SKIP leaves the body unwalked
    return found


def _name(kernel: ir.Operation) -> str:
    return ir.StringAttr(kernel.attributes["sym_name"]).value


def check_kernels(module: ir.Operation, chip: Chip, index_bitwidth: int) -> bool:
    """Check every kernel of ``module`` against ``chip`` and record its wave size; False after errors."""
    ok = True
    for kernel in gpu_kernels(module):
        ok &= _check_arch(kernel, chip)
        ok &= _check_wave_size(kernel, chip)
        ok &= _check_memrefs(kernel, index_bitwidth)
        # the request is ROCDL's attribute (amdgpu-waves-per-eu): NVIDIA's ptxas allocates registers itself
        if ok and "rock.lds_occupancy" in kernel.attributes and "rocdl" in family_of(chip).lowered_dialects:
            _request_lds_occupancy(kernel, chip)
    return ok


def _request_lds_occupancy(kernel: ir.Operation, chip: Chip) -> None:
    from pagedir.backend.occupancy import waves_by_lds, waves_by_workgroup
    from pagedir.backend.plan import kernel_entry

    entry = kernel_entry(kernel)
    block = entry["block"][0] * entry["block"][1] * entry["block"][2]
    if entry["lds_bytes"] is None:
        return
    waves = min(waves_by_lds(chip, entry["lds_bytes"], block), waves_by_workgroup(chip, block),
                chip.vgpr_budget // REQUEST_MIN_VGPRS)
    if waves > 1:
        with kernel.context:
            kernel.attributes["rocdl.waves_per_eu"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), waves)


def _check_arch(kernel: ir.Operation, chip: Chip) -> bool:
    return kernel_chip_or_none(kernel, chip.name) is not None


def _check_wave_size(kernel: ir.Operation, chip: Chip) -> bool:
    with kernel.context:
        recorded = kernel.attributes["rock.wave_size"] if "rock.wave_size" in kernel.attributes else None
        if recorded is None:
            kernel.attributes["rock.wave_size"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), chip.wave_size)
            return True
    if not isinstance(recorded, ir.IntegerAttr):
        kernel.location.emit_error(f"gpu.func @{_name(kernel)} has rock.wave_size = {recorded}, expected an integer")
        return False
    wave_size = recorded.value
    if wave_size != chip.wave_size:
        kernel.location.emit_error(
            f"gpu.func @{_name(kernel)} assumes rock.wave_size = {wave_size} but {chip.name} runs waves of "
            f"{chip.wave_size} lanes"
        )
        return False
    return True


def _identity_layout(memref: ir.MemRefType) -> bool:
    layout = memref.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(memref.rank)


def _check_memrefs(kernel: ir.Operation, index_bitwidth: int) -> bool:
    ok = True
    body = kernel.regions[0].blocks[0]
    arguments = list(body.arguments)
    num_inputs = len(ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value).inputs)
    for position, value in enumerate(arguments):
        if not isinstance(value.type, ir.MemRefType):
            continue
        memref = value.type
        what = f"argument {position}" if position < num_inputs else f"attribution {position - num_inputs}"
        if position < num_inputs and not _identity_layout(memref):
            kernel.location.emit_error(
                f"gpu.func @{_name(kernel)} {what} has type {memref}; kernel memref arguments need an identity layout"
            )
            ok = False
            continue
        if index_bitwidth == 32 and memref.has_static_shape:
            elements = 1
            for extent in memref.shape:
                elements *= extent
            if not fits_i32(elements):
                kernel.location.emit_error(
                    f"gpu.func @{_name(kernel)} {what} has {elements} elements, more than 32-bit indices reach "
                    f"({INDEX32_MAX_ELEMENTS}); use rock-backend-pipeline{{index-bitwidth=64}}"
                )
                ok = False
    return ok


#: Dialects an LLVM IR translation accepts inside a gpu.module: those of every family's lowering
#: (``TargetFamily.lowered_dialects``; the pass runs without a chip).
_LOWERED_DIALECTS = tuple(dict.fromkeys(d for family in FAMILIES.values() for d in family.lowered_dialects))


def check_lowered(module: ir.Operation) -> bool:
    """Emit an error at each op inside a ``gpu.module`` that the lowering left behind."""
    leftovers: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        dialect = op.name.split(".", 1)[0]
        if op.name != "gpu.module" and dialect not in _LOWERED_DIALECTS and _inside_gpu_module(op):
            leftovers.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    # Casts left over only tell that something else was not converted: show them alone.
    unconverted = [op for op in leftovers if op.name != "builtin.unrealized_conversion_cast"] or leftovers
    for op in unconverted:
        op.location.emit_error(f"'{op.name}' was not lowered to the LLVM dialect by rock-backend-pipeline")
    return not leftovers


def _inside_gpu_module(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name == "gpu.module":
            return True
        parent = parent.parent
    return False
