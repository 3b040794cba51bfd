"""The kernel ABI of dynamic memref arguments (rock-backend-dynamic-arguments, a step of rock-backend-pipeline).

Kernel memref arguments are bare pointers (``convert-gpu-to-rocdl
use-bare-ptr-memref-call-conv``, one pointer each, as rocMLIR passes them), which
needs static shapes. A kernel built for every batch size (``pagedir-gen attention
--dynamic``) has memref arguments with ``?`` sizes; rather than switching the whole
module to MLIR's memref descriptors (two pointers, an offset, every size and every
stride: 9 values for a 3-d memref), this step keeps one pointer per memref and appends
one ``index`` argument (i64 at index-bitwidth=64) per dynamic size, in argument order
then dim order, after the kernel's arguments:

```mlir
gpu.func @k(%q: memref<?x8x128xf16>, %table: memref<?x?xi32>) kernel
// becomes
gpu.func @k(%q: memref<1x8x128xf16>, %table: memref<1x1xi32>, %q_0: index, %table_0: index, %table_1: index)
    kernel attributes {rock.dynamic_sizes = array<i64: 0, 0, 1, 0, 1, 1>} {
  %q2 = memref.reinterpret_cast %q to offset: [0], sizes: [%q_0, 8, 128], strides: [1024, 128, 1]
  %t2 = memref.reinterpret_cast %table to offset: [0], sizes: [%table_0, %table_1], strides: [%table_1, 1]
```

``rock.dynamic_sizes`` lists, per appended argument, the (argument, dim) whose size it
is; the launch plan states it (``pagedir-compile --plan``). A split-KV kernel whose split
count is chosen at launch (``--dynamic --num-splits 0``) takes the count this way: its
workspace is ``memref<?x?xf32>``, ``[num_splits, R * (D + 1)]``, so the count arrives as the
i64 size argument of the workspace's dim 0 (the plan's ``num_splits_formula`` says how a
runtime chooses it), and its combine kernel reads it from the same argument. The memrefs keep the
identity (row-major) layout, so the strides follow from the sizes; ``memref.dim`` of
a reinterpret_cast folds to the size argument, and the buffer descriptors of dense
loads take their num_records from it (rock-buffer-load).
"""

from __future__ import annotations

import mlir.ir as ir
from mlir.dialects import arith, memref

from pagedir.backend.kernel_attrs import gpu_kernels

DYNAMIC = ir.ShapedType.get_dynamic_size()


def lower_dynamic_arguments(module: ir.Operation) -> None:
    for kernel in gpu_kernels(module):
        lower_kernel(kernel)


def lower_kernel(kernel: ir.Operation) -> None:
    function_type = ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value)
    inputs = list(function_type.inputs)
    dynamic = [(i, ir.MemRefType(t)) for i, t in enumerate(inputs)
               if isinstance(t, ir.MemRefType) and not ir.MemRefType(t).has_static_shape]
    if not dynamic:
        return
    entry = kernel.regions[0].blocks[0]
    attributions = list(entry.arguments)[len(inputs):]
    index = ir.IndexType.get()
    sizes: dict[tuple[int, int], ir.Value] = {}
    with kernel.location:
        for position, type_ in dynamic:  # the size arguments, then the attributions again after them
            for dim in range(type_.rank):
                if type_.is_dynamic_dim(dim):
                    sizes[(position, dim)] = entry.add_argument(index, kernel.location)
        for old in attributions:
            old.replace_all_uses_with(entry.add_argument(old.type, old.location))
        for _ in attributions:
            entry.erase_argument(len(inputs))
        first_op = entry.operations[0]
        for position, type_ in dynamic:
            argument = entry.arguments[position]
            placeholder = ir.MemRefType.get([1 if type_.is_dynamic_dim(d) else type_.shape[d] for d in range(type_.rank)],
                                            type_.element_type, memory_space=type_.memory_space)
            argument.set_type(placeholder)
            with ir.InsertionPoint(first_op):
                view = reinterpret(argument, type_, [sizes.get((position, d)) for d in range(type_.rank)])
            argument.replace_all_uses_except(view, view.owner.operation)
            inputs[position] = placeholder
    new_inputs = inputs + [index] * len(sizes)
    kernel.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_inputs, list(function_type.results)))
    if "arg_attrs" in kernel.attributes:
        kernel.attributes["arg_attrs"] = ir.ArrayAttr.get(
            list(ir.ArrayAttr(kernel.attributes["arg_attrs"])) + [ir.DictAttr.get({})] * len(sizes))
    pairs = [x for key in sizes for x in key]
    kernel.attributes["rock.dynamic_sizes"] = ir.DenseI64ArrayAttr.get(pairs)


def reinterpret(argument: ir.Value, type_: ir.MemRefType, sizes: list[ir.Value | None]) -> ir.Value:
    """``argument`` (a bare pointer) as ``type_``: identity layout, sizes from ``sizes`` where dynamic."""
    rank = type_.rank
    static_sizes = [DYNAMIC if sizes[d] is not None else type_.shape[d] for d in range(rank)]
    static_strides, dynamic_strides = [0] * rank, []
    stride: int | ir.Value = 1
    for d in reversed(range(rank)):
        static_strides[d] = stride if isinstance(stride, int) else DYNAMIC
        if not isinstance(stride, int):
            dynamic_strides.insert(0, stride)
        extent = sizes[d] if sizes[d] is not None else type_.shape[d]
        stride = _multiply(stride, extent)
    return memref.reinterpret_cast(type_, argument, [], [s for s in sizes if s is not None], dynamic_strides,
                                   static_offsets=[0], static_sizes=static_sizes, static_strides=static_strides)


def _multiply(a: int | ir.Value, b: int | ir.Value) -> int | ir.Value:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    as_value = [arith.constant(ir.IndexType.get(), x) if isinstance(x, int) else x for x in (a, b)]
    return arith.muli(*as_value)
