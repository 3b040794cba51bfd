"""rock-to-gpu: turn rock kernel functions into gpu.module/gpu.func kernels (L5 -> L6).

Mirrors rocMLIR's RockToGPU. For each ``func.func`` with ``rock.kernel``:

* a ``gpu.module @<name>_module`` takes its place, holding ``gpu.func @<name>
  kernel`` with the same arguments, ``known_block_size = array<i32: BS, 1, 1>``,
  ``known_grid_size = array<i32: GS, 1, 1>`` (from ``rock.block_size`` /
  ``rock.grid_size``; a kernel whose grid is the formula ``rock.grid_map`` of its
  argument sizes gets no ``known_grid_size``) and the kernel's ``rock.*`` attributes;
* workgroup ``rock.alloc`` buffers become workgroup attributions and private
  ones private attributions (block arguments after the kernel arguments);
* ``rock.workitem_id`` / ``rock.workgroup_id`` -> ``gpu.thread_id x`` /
  ``gpu.block_id x``; ``rock.lds_barrier`` -> ``gpu.barrier``;
* leftover ``rock.live_in`` / ``rock.live_out`` markers and unused
  ``rock.deref`` views are dropped; ``func.return`` -> ``gpu.return``;
* the enclosing module gets ``gpu.container_module``.

```mlir
func.func @k(%a: memref<4xf32>) attributes {rock.kernel, rock.block_size = 64, rock.grid_size = 2} {
  %b = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  ...
// becomes
module attributes {gpu.container_module} {
  gpu.module @k_module {
    gpu.func @k(%a: memref<4xf32>) workgroup(%b : memref<256xi8, #gpu.address_space<workgroup>>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 2, 1, 1>, ...} {
```

Options: ``arch`` (recorded as ``rock.arch`` when the kernel has none; another chip
than the kernel names, or neither, is an error: ``pagedir.arch.kernel_chip``).
Not modelled: multi-dimensional ids, kernels with results, multi-block bodies,
host-side launch code.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlir.ir as ir
from mlir.dialects import gpu

from pagedir.arch import kernel_chip_or_none
from pagedir.dialect.types import PRIVATE, WORKGROUP, memory_space
from pagedir.passes.base import ChipOptions, Pass, kernel_functions
from pagedir.passes.ir_utils import find_ops

DROPPED_MARKERS = ("rock.live_in", "rock.live_out")
VIEWS = ("rock.deref", "rock.block_table_view", "rock.varlen_view")
REWRITTEN_OPS = ("rock.workitem_id", "rock.workgroup_id", "rock.lds_barrier", "func.return", *DROPPED_MARKERS, *VIEWS)


@dataclass(frozen=True)
class RockToGPUOptions(ChipOptions):
    #: Chip or target recorded on kernels that carry no ``rock.arch`` (another chip than theirs is an error).
    arch: str = ""


class RockToGPUPass(Pass):
    argument = "rock-to-gpu"
    summary = "Turn rock kernel functions into gpu.module/gpu.func kernels"
    Options = RockToGPUOptions

    def run(self, module: ir.Operation) -> bool:
        ok = True
        converted = False
        for func in kernel_functions(module):
            # The chip, recorded on the func.func, is copied to the gpu.func with the other rock attributes.
            if kernel_chip_or_none(func, self.options.arch) is not None and convert_kernel(func):
                converted = True
            else:
                ok = False
        if converted:
            module.attributes["gpu.container_module"] = ir.UnitAttr.get()
        return ok


def kernel_problem(func: ir.Operation) -> str | None:
    if len(func.regions[0].blocks) != 1:
        return "must have a single block to become a gpu.func"
    if ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).results:
        return "must not return values to become a gpu.func"
    if "rock.block_size" not in func.attributes:
        return "needs the rock.block_size attribute to become a gpu.func"
    if "rock.grid_size" not in func.attributes and "rock.grid_map" not in func.attributes:
        return "needs the rock.grid_size attribute to become a gpu.func"
    for view in find_ops(func, *VIEWS):
        if list(view.results[0].uses):
            return f"still uses a {view.name} view; run rock-buffer-load first"
    return None


def convert_kernel(func: ir.Operation) -> bool:
    if problem := kernel_problem(func):
        func.location.emit_error(f"'func.func' op kernel {problem}")
        return False
    name = ir.StringAttr(func.attributes["sym_name"]).value
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    allocs = find_ops(func, "rock.alloc")
    workgroup = [a for a in allocs if memory_space(a.results[0].type) == WORKGROUP]
    private = [a for a in allocs if memory_space(a.results[0].type) == PRIVATE]
    attrs = func.attributes
    block_size = ir.IntegerAttr(attrs["rock.block_size"]).value
    # A dynamic kernel's grid is a formula of its argument sizes (rock.grid_map, copied below): not known here.
    grid_size = ir.IntegerAttr(attrs["rock.grid_size"]).value if "rock.grid_size" in attrs else None
    with func.location, ir.InsertionPoint(func):
        gpu_module = gpu.GPUModuleOp(f"{name}_module")
        gpu_module.bodyRegion.blocks.append()
        with ir.InsertionPoint(gpu_module.bodyRegion.blocks[0]):
            kernel = gpu.GPUFuncOp(
                ir.TypeAttr.get(function_type),
                sym_name=name,
                kernel=True,
                known_block_size=[block_size, 1, 1],
                known_grid_size=[grid_size, 1, 1] if grid_size is not None else None,
            )
    kernel.attributes["workgroup_attributions"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(workgroup))
    for attr_name in list(attrs):
        if attr_name.startswith("rock.") and attr_name != "rock.kernel":
            kernel.attributes[attr_name] = attrs[attr_name]
    old_entry = func.regions[0].blocks[0]
    arg_types = list(function_type.inputs) + [a.results[0].type for a in workgroup + private]
    entry = kernel.body.blocks.append(*arg_types, arg_locs=[func.location] * len(arg_types))
    for old, new in zip(old_entry.arguments, entry.arguments):
        old.replace_all_uses_with(new)
    for alloc, argument in zip(workgroup + private, list(entry.arguments)[len(function_type.inputs) :]):
        alloc.results[0].replace_all_uses_with(argument)
        alloc.erase()
    for op in list(old_entry.operations):
        entry.append(op)
    func.erase()
    rewrite_body(kernel.operation)
    return True


def rewrite_body(kernel: ir.Operation) -> None:
    """Replace rock ids, barriers and returns by gpu ops; drop markers and unused views."""
    replacements = {
        "rock.workitem_id": lambda: gpu.thread_id(gpu.Dimension.x),
        "rock.workgroup_id": lambda: gpu.block_id(gpu.Dimension.x),
    }
    # One walk finds them all (none of the rewrites below creates or removes another's ops).
    found: dict[str, list[ir.Operation]] = {name: [] for name in REWRITTEN_OPS}
    for op in find_ops(kernel, *REWRITTEN_OPS):
        found[op.name].append(op)
    for op in found["rock.workitem_id"] + found["rock.workgroup_id"]:
        with op.location, ir.InsertionPoint(op):
            op.results[0].replace_all_uses_with(replacements[op.name]())
        op.erase()
    for op in found["rock.lds_barrier"]:
        with op.location, ir.InsertionPoint(op):
            gpu.barrier()
        op.erase()
    for op in found["func.return"]:
        with op.location, ir.InsertionPoint(op):
            gpu.ReturnOp([])
        op.erase()
    for name in DROPPED_MARKERS:
        for op in found[name]:
            op.erase()
    for op in [op for name in VIEWS for op in found[name]]:
        op.erase()
