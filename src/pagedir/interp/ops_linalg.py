"""linalg and tensor ops on tensors, executed per their upstream semantics (for payloads before rock-raise-attention).

A tensor value is a :class:`Tensor`: one numpy array in the element type's
compute dtype, the same for every lane (payload functions run on one thread).
``bufferization.to_tensor`` reads a memref, ``bufferization.materialize_in_destination``
writes one.

``linalg.generic`` runs its body once per point of the iteration space, as the
loop nest of its definition: each point reads the output element its map names
through the init block argument and writes the yielded value there. The
parallel points are the lanes of one body execution (the arith/math handlers
compute on them) and the other dimensions are walked in order; when the output
maps could send two lanes to one element, every dimension is walked. Indexing maps are evaluated as affine
expressions. Named ops follow their definitions: ``linalg.matmul`` and
``linalg.batch_matmul`` add the products of the inputs converted to the output
type to the output, ``linalg.softmax`` is ``exp(x - max) / sum(exp(x - max))``
along its dimension, ``linalg.broadcast``/``linalg.transpose``/``linalg.fill`` copy.
Reshapes (``tensor.collapse_shape``/``expand_shape``) keep the row-major order.
``llvm.load`` (:mod:`pagedir.interp.ops_nvvm`) reads device memory at the lanes' addresses (a page gather).
"""

from __future__ import annotations

import itertools
from typing import Any

import mlir.dialects.linalg  # noqa: F401 - parsed linalg.generic ops come back as GenericOp (inputs, outputs)
import mlir.ir as ir
import numpy as np

from pagedir.interp.memory import Elem, InterpError, elem_named
from pagedir.interp.ops_arith import cast
from pagedir.interp.ops_memory import all_coordinates, read, write
from pagedir.interp.simt import HANDLERS, Program, handles


class Tensor:
    """A tensor value: ``array`` (compute dtype) of element type ``elem``."""

    __slots__ = ("array", "elem")

    def __init__(self, array: np.ndarray, elem: Elem):
        self.array = array
        self.elem = elem


def tensor_elem(type_: ir.Type) -> Elem:
    return elem_named(str(ir.RankedTensorType(type_).element_type))


def tensor_shape(type_: ir.Type) -> tuple[int, ...]:
    return tuple(ir.RankedTensorType(type_).shape)


def on_tensors(compile_op):
    """A linalg op's handler, refusing the op on memrefs (a bufferized payload: no results to hold the values)
    with a diagnostic at the op, where the handlers would read its operands as tensors."""

    def compile_checked(p: Program, op: Any) -> Any:
        memrefs = [v.type for v in op.operation.operands if isinstance(v.type, ir.MemRefType)]
        if memrefs:
            raise InterpError(f"{op.operation.name} works on memrefs ({memrefs[0]}): the interpreter runs linalg on "
                              f"tensors, as a payload is before bufferization", op.operation.location)
        return compile_op(p, op)

    return compile_checked


def element_offsets(m: Any) -> np.ndarray:
    coords = all_coordinates(m.shape)
    return (coords * np.array(m.strides, dtype=np.int64)).sum(axis=1) * m.elem.size


@handles("bufferization.to_tensor")
def compile_to_tensor(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        m = env[source]
        stored = read(p, op_id, m, m.base[:1], element_offsets(m), None)[0]
        env[result] = Tensor(m.elem.to_compute(stored).reshape(m.shape), m.elem)

    return run


@handles("bufferization.materialize_in_destination")
def compile_materialize(p: Program, op: Any) -> Any:
    source, dest = (p.slot(v) for v in op.operation.operands[:2])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        t, m = env[source], env[dest]
        values = cast(t.array, m.elem).reshape(1, -1)
        write(p, op_id, m, m.base[:1], element_offsets(m), to_storage(values, m.elem), mask)

    return run


def to_storage(values: np.ndarray, elem: Elem) -> np.ndarray:
    from pagedir.interp.ops_arith import to_bits

    return to_bits(values, elem)


@handles("tensor.empty")
def compile_empty(p: Program, op: Any) -> Any:
    type_ = op.operation.results[0].type
    result, elem, shape = p.slot(op.operation.results[0]), tensor_elem(type_), tensor_shape(type_)

    def run(env: list, mask: Any) -> None:
        env[result] = Tensor(np.zeros(shape, dtype=elem.compute), elem)

    return run


@handles("tensor.collapse_shape", "tensor.expand_shape")
def compile_reshape(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    shape = tensor_shape(op.operation.results[0].type)

    def run(env: list, mask: Any) -> None:
        t = env[source]
        env[result] = Tensor(t.array.reshape(shape), t.elem)

    return run


@handles("tensor.extract")
def compile_extract(p: Program, op: Any) -> Any:
    source = p.slot(op.operation.operands[0])
    indices = [p.slot(v) for v in op.operation.operands[1:]]
    result = p.slot(op.operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        t = env[source]
        index = np.broadcast_arrays(*[np.asarray(env[s], dtype=np.int64) for s in indices]) if indices else []
        for dim, values in enumerate(index):
            if (values < 0).any() or (values >= t.array.shape[dim]).any():
                bad = int(values[(values < 0) | (values >= t.array.shape[dim])][0])
                raise InterpError(f"tensor.extract index {bad} is out of bounds of dimension {dim} (size "
                                  f"{t.array.shape[dim]})", p.op_location(op_id))
        env[result] = t.array[tuple(index)] if index else t.array.reshape(1)

    return run


@handles("linalg.fill")
@on_tensors
def compile_fill(p: Program, op: Any) -> Any:
    value, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    type_ = op.operation.results[0].type
    elem, shape = tensor_elem(type_), tensor_shape(type_)

    def run(env: list, mask: Any) -> None:
        scalar = np.asarray(env[value]).reshape(-1)[0]
        env[result] = Tensor(cast(np.full(shape, scalar), elem), elem)

    return run


def int_array(op: Any, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.operation.attributes[name]))


@handles("linalg.broadcast")
@on_tensors
def compile_broadcast(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    added = int_array(op, "dimensions")
    shape = tensor_shape(op.operation.results[0].type)

    def run(env: list, mask: Any) -> None:
        t = env[source]
        env[result] = Tensor(np.broadcast_to(np.expand_dims(t.array, tuple(added)), shape).copy(), t.elem)

    return run


@handles("linalg.transpose")
@on_tensors
def compile_transpose(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    permutation = int_array(op, "permutation")

    def run(env: list, mask: Any) -> None:
        t = env[source]
        env[result] = Tensor(np.ascontiguousarray(np.transpose(t.array, permutation)), t.elem)

    return run


@handles("linalg.matmul", "linalg.batch_matmul")
@on_tensors
def compile_matmul(p: Program, op: Any) -> Any:
    operation = op.operation
    a, b, c = (p.slot(v) for v in operation.operands[:3])
    result = p.slot(operation.results[0])
    spec = einsum_spec([ir.AffineMapAttr(m).value for m in ir.ArrayAttr(operation.attributes["indexing_maps"])],
                       operation.location)

    def run(env: list, mask: Any) -> None:
        acc = env[c]
        lhs, rhs = cast(env[a].array, acc.elem), cast(env[b].array, acc.elem)
        product = np.einsum(spec, lhs.astype(np.float64), rhs.astype(np.float64))
        env[result] = Tensor(cast(acc.array + cast(product, acc.elem), acc.elem), acc.elem)

    return run


def einsum_spec(maps: list[ir.AffineMap], location: Any) -> str:
    """``"bmk,bkn->bmn"`` from indexing maps made of plain dimensions (default or transposed operands)."""
    terms = []
    for amap in maps:
        if not all(isinstance(e, ir.AffineDimExpr) for e in amap.results):
            raise InterpError(f"indexing map {amap} of a contraction is not supported by the interpreter", location)
        terms.append("".join("abcdefghijklmnop"[e.position] for e in amap.results))
    return f"{','.join(terms[:-1])}->{terms[-1]}"


@handles("linalg.softmax")
@on_tensors
def compile_softmax(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    dim = ir.IntegerAttr(op.operation.attributes["dimension"]).value
    elem = tensor_elem(op.operation.results[0].type)

    def run(env: list, mask: Any) -> None:
        x = cast(env[source].array, elem)
        shifted = cast(x - x.max(axis=dim, keepdims=True), elem)
        exps = cast(np.exp(shifted), elem)
        env[result] = Tensor(cast(exps / cast(exps.sum(axis=dim, keepdims=True), elem), elem), elem)

    return run


# ----------------------------------------------------------------------------
# linalg.generic


def affine_value(expr: ir.AffineExpr, coords: list) -> Any:
    """``expr`` at the iteration points ``coords`` (one int64 array or scalar per loop dimension)."""
    if isinstance(expr, ir.AffineDimExpr):
        return coords[expr.position]
    if isinstance(expr, ir.AffineConstantExpr):
        return np.int64(expr.value)
    for kind, fn in ((ir.AffineAddExpr, np.add), (ir.AffineMulExpr, np.multiply), (ir.AffineModExpr, np.mod),
                     (ir.AffineFloorDivExpr, np.floor_divide)):
        if isinstance(expr, kind):
            return fn(affine_value(expr.lhs, coords), affine_value(expr.rhs, coords))
    raise InterpError(f"affine expression {expr} in an indexing map is not supported by the interpreter")


def loop_extents(maps: list[ir.AffineMap], shapes: list[tuple[int, ...]], location: Any) -> list[int]:
    count = maps[0].n_dims
    extents: list[int | None] = [None] * count
    for amap, shape in zip(maps, shapes):
        for expr, extent in zip(amap.results, shape):
            if isinstance(expr, ir.AffineDimExpr):
                extents[expr.position] = extent
    if any(e is None for e in extents):
        raise InterpError("linalg.generic: a loop dimension appears in no indexing map as a plain dimension", location)
    return [int(e) for e in extents]


def lanes_distinct(amap: ir.AffineMap, parallel: list[int]) -> bool:
    """Whether ``amap`` names a different element at each point of the ``parallel`` dimensions (the other
    dimensions fixed): its results are distinct plain dimensions (a projected permutation) covering them."""
    dims = [e.position for e in amap.results if isinstance(e, ir.AffineDimExpr)]
    return len(dims) == len(amap.results) == len(set(dims)) and set(parallel) <= set(dims)


def flat_offsets(amap: ir.AffineMap, coords: list, shape: tuple[int, ...], lanes: int) -> np.ndarray:
    """Row-major offsets of the elements ``amap`` names at ``coords``, one per lane."""
    if not amap.results:
        return np.zeros(lanes, dtype=np.int64)
    index = tuple(np.broadcast_to(affine_value(e, coords), (lanes,)) for e in amap.results)
    return np.ravel_multi_index(index, shape)


@handles("linalg.generic")
@on_tensors
def compile_generic(p: Program, op: Any) -> Any:
    operation = op.operation
    generic = operation.opview
    inputs, outputs = list(generic.inputs), list(generic.outputs)
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(operation.attributes["indexing_maps"])]
    kinds = ["reduction" if "reduction" in str(a) else "parallel" for a in ir.ArrayAttr(operation.attributes["iterator_types"])]
    shapes = [tensor_shape(v.type) for v in inputs + outputs]
    extents = loop_extents(maps, shapes, operation.location)
    in_slots, out_slots = [p.slot(v) for v in inputs], [p.slot(v) for v in outputs]
    results = [p.slot(r) for r in operation.results]
    out_elems = [tensor_elem(v.type) for v in outputs]
    block = operation.regions[0].blocks[0]
    arg_slots = [p.slot(a) for a in block.arguments]
    body, index_slots, yields = [], [], []
    for inner in block.operations:
        name = inner.operation.name
        if name == "linalg.yield":
            yields = [p.slot(v) for v in inner.operation.operands]
        elif name == "linalg.index":
            index_slots.append((p.slot(inner.operation.results[0]), ir.IntegerAttr(inner.operation.attributes["dim"]).value))
        elif name in HANDLERS:
            closure = HANDLERS[name](p, inner)
            if closure is not None:
                body.append(closure)
        else:
            raise InterpError(f"the interpreter does not support {name}", inner.operation.location)
    out_maps = maps[len(inputs):]
    parallel = [d for d, k in enumerate(kinds) if k == "parallel"]
    if not all(lanes_distinct(amap, parallel) for amap in out_maps):
        parallel = []  # lanes could share an output element: run the whole loop nest point by point
    walked = [d for d in range(len(extents)) if d not in parallel]
    lanes = int(np.prod([extents[d] for d in parallel], dtype=np.int64))
    parallel_coords = np.unravel_index(np.arange(lanes, dtype=np.int64), [extents[d] for d in parallel]) if parallel else []

    def run(env: list, mask: Any) -> None:
        # The op is a loop nest over all dimensions: each point reads the output element its map names (through
        # the init block argument) and writes the yielded value there. The parallel points are lanes; the other
        # dimensions are walked in order, so an output element indexed by a walked dimension is written at each
        # of its points, and one that is not accumulates over them in iteration order.
        coords: list[Any] = [None] * len(extents)
        for d, values in zip(parallel, parallel_coords):
            coords[d] = values
        work = [env[slot].array.reshape(-1).copy() for slot in out_slots]
        shapes_out = [env[slot].array.shape for slot in out_slots]
        for point in itertools.product(*(range(extents[d]) for d in walked)):
            for d, value in zip(walked, point):
                coords[d] = np.int64(value)
            for arg, slot, amap in zip(arg_slots, in_slots, maps):
                array = env[slot].array
                index = tuple(affine_value(e, coords) for e in amap.results)
                env[arg] = np.broadcast_to(array[index] if index else array, (lanes,))
            offsets = [flat_offsets(amap, coords, shape, lanes) for amap, shape in zip(out_maps, shapes_out)]
            for arg, flat, offset in zip(arg_slots[len(inputs):], work, offsets):
                env[arg] = flat[offset]
            for slot, dim in index_slots:
                env[slot] = np.broadcast_to(np.asarray(coords[dim], dtype=np.int64), (lanes,))
            for closure in body:
                closure(env, None)
            for flat, offset, y, elem in zip(work, offsets, yields, out_elems):
                flat[offset] = cast(np.broadcast_to(env[y], (lanes,)), elem)
        for result, flat, shape, elem in zip(results, work, shapes_out, out_elems):
            env[result] = Tensor(flat.reshape(shape), elem)

    return run
