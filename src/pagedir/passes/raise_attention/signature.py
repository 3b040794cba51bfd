"""The signature rule for payloads that take and return tensors (torch-mlir's ``func.func``).

A function ``(tensor<A>, tensor<B>, ...) -> tensor<R>`` is read as the kernel ``(memref<A>, memref<B>,
..., memref<R>) -> ()``: each tensor argument becomes a memref argument of the same shape and element
type (identity layout) read by ``bufferization.to_tensor ... restrict``, and each tensor result becomes
one more memref argument, appended after the others in result order, into which the returned value is
written with ``bufferization.materialize_in_destination ... in restrict writable``. That is the form
``pagedir-gen linalg-attention`` writes, so the rest of the raise reads both alike. (Upstream reaches
the same signature with ``one-shot-bufferize{bufferize-function-boundaries}`` followed by
``buffer-results-to-out-params``, but that bufferizes the body as well, and the raise reads tensors.)
Arguments of other types (scalars) are kept."""

from __future__ import annotations

import mlir.ir as ir


def takes_tensors(func: ir.Operation) -> bool:
    """A ``func.func`` with a body whose arguments or results include ranked tensors, and no unranked ones."""
    if func.name != "func.func" or not len(func.regions[0].blocks):
        return False
    kind = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    types = list(kind.inputs) + list(kind.results)
    if any(isinstance(t, ir.UnrankedTensorType) for t in types):
        return False
    return any(isinstance(t, ir.RankedTensorType) for t in types) and \
        all(isinstance(t, ir.RankedTensorType) for t in kind.results)


def to_memref_signature(func: ir.Operation) -> None:
    """Rewrite ``func`` (see :func:`takes_tensors`) in place to the memref signature of the module doc."""
    block = func.regions[0].blocks[0]
    kind = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    returns = [op.operation for op in block.operations if op.operation.name == "func.return"]
    first = block.operations[0]
    for argument in list(block.arguments):
        if not isinstance(argument.type, ir.RankedTensorType):
            continue
        tensor = argument.type
        argument.set_type(memref_of(tensor))
        with ir.InsertionPoint(first), func.location:
            read = ir.Operation.create("bufferization.to_tensor", results=[tensor], operands=[argument],
                                       attributes={"restrict": ir.UnitAttr.get()})
        argument.replace_all_uses_except(read.results[0], read)
    outs = [block.add_argument(memref_of(t), func.location) for t in kind.results]
    for ret in returns:
        with ir.InsertionPoint(ret), ret.location:
            for value, out in zip(list(ret.operands), outs):
                ir.Operation.create("bufferization.materialize_in_destination", operands=[value, out],
                                    attributes={"restrict": ir.UnitAttr.get(), "writable": ir.UnitAttr.get()})
            ir.Operation.create("func.return")
        ret.erase()
    inputs = [a.type for a in block.arguments]
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, []))


def memref_of(tensor: ir.RankedTensorType) -> ir.MemRefType:
    return ir.MemRefType.get(list(tensor.shape), tensor.element_type)
