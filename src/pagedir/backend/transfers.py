"""Lower 1-D ``vector.transfer_read/write`` on memrefs to vector loads and stores.

Upstream lowers transfers inside ``convert-vector-to-llvm``, which cannot be run
on kernels using workgroup memory (it has no GPU address-space mapping), and
``convert-gpu-to-rocdl`` does not lower them. The transfers kernels use are the
simple ones, rewritten here before the ROCDL lowering:

```mlir
%v = vector.transfer_read %m[%i, %j], %pad {in_bounds = [true]} : memref<4x256xf16>, vector<8xf16>
// becomes
%v = vector.load %m[%i, %j] : memref<4x256xf16>, vector<8xf16>

%w = vector.transfer_read %m[%i, %j], %pad : memref<4x256xf16>, vector<8xf16>
// becomes (lanes past the end of the last dimension read %pad)
%n = arith.subi %dim_j, %j          // 256 - %j
%mask = arith.cmpi slt, [0, 1, .., 7], (broadcast %n)
%w = vector.maskedload %m[%i, %j], %mask, (broadcast %pad) : ...
```

and ``transfer_write`` likewise into ``vector.store`` / ``vector.maskedstore``.
Only 1-D transfers on memrefs with a minor-identity permutation map and no mask
are rewritten; anything else is left for the ``rock-backend-check-lowered`` error.
"""

from __future__ import annotations

import mlir.ir as ir
from mlir.dialects import arith, memref, vector


def lower_vector_transfers(module: ir.Operation) -> None:
    transfers: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("vector.transfer_read", "vector.transfer_write") and _is_simple(op.opview):
            transfers.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in transfers:
        _rewrite(op.opview)


def _is_simple(op) -> bool:
    vector_type = op.result.type if op.name == "vector.transfer_read" else op.valueToStore.type
    source_type = op.base.type
    if not isinstance(source_type, ir.MemRefType) or vector_type.rank != 1 or vector_type.scalable:
        return False
    if op.mask is not None:
        return False
    permutation = op.permutation_map.value if hasattr(op.permutation_map, "value") else op.permutation_map
    return permutation == ir.AffineMap.get_minor_identity(source_type.rank, 1)


def _rewrite(op) -> None:
    in_bounds = all(ir.BoolAttr(flag).value for flag in op.in_bounds)
    indices = list(op.indices)
    with ir.InsertionPoint(op), op.location:
        mask = None if in_bounds else _tail_mask(op.base, indices, op)
        if op.name == "vector.transfer_read":
            vector_type = op.result.type
            if mask is None:
                loaded = vector.load(vector_type, op.base, indices)
            else:
                pass_thru = vector.broadcast(vector_type, op.padding)
                loaded = vector.maskedload(vector_type, op.base, indices, mask, pass_thru)
            op.result.replace_all_uses_with(loaded)
        elif mask is None:
            vector.store(op.valueToStore, op.base, indices)
        else:
            vector.maskedstore(op.base, indices, mask, op.valueToStore)
    op.operation.erase()


def _tail_mask(source: ir.Value, indices: list[ir.Value], op) -> ir.Value:
    """Lanes whose position along the last dimension is inside it: ``[0, 1, ..] < extent - index``.

    Built from a compare rather than ``vector.create_mask``, which only
    ``convert-vector-to-llvm`` lowers.
    """
    source_type = source.type
    last = source_type.rank - 1
    if source_type.is_dynamic_dim(last):
        extent = memref.dim(source, arith.constant(ir.IndexType.get(), last))
    else:
        extent = arith.constant(ir.IndexType.get(), source_type.shape[last])
    remaining = arith.subi(extent, indices[last])
    vector_type = op.result.type if op.name == "vector.transfer_read" else op.valueToStore.type
    lanes_type = ir.VectorType.get(vector_type.shape, ir.IndexType.get())
    lanes = arith.constant(lanes_type, ir.DenseElementsAttr.get(
        [ir.IntegerAttr.get(ir.IndexType.get(), lane) for lane in range(vector_type.shape[0])], type=lanes_type))
    return arith.cmpi(arith.CmpIPredicate.slt, lanes, vector.broadcast(lanes_type, remaining))


def lower_strided_slices(module: ir.Operation) -> None:
    """1-D ``vector.extract_strided_slice`` / ``vector.insert_strided_slice`` with unit strides as
    ``vector.shuffle``s, which ``convert-gpu-to-rocdl`` lowers (it has no pattern for the slices).

    ``convert-arith-to-amdgpu`` leaves them when it cuts an fp8 ``arith.extf`` into the
    chip's packed conversions (4 fp8 values in, 2 f32 out, each)::

        %s = vector.extract_strided_slice %v {offsets = [4], sizes = [4], strides = [1]} : vector<16xf8E4M3FNUZ> to vector<4xf8E4M3FNUZ>
        // becomes
        %s = vector.shuffle %v, %v [4, 5, 6, 7] : vector<16xf8E4M3FNUZ>, vector<16xf8E4M3FNUZ>

        %r = vector.insert_strided_slice %p, %acc {offsets = [2], strides = [1]} : vector<2xf32> into vector<16xf32>
        // becomes (positions 2 and 3 from %p, the others from %acc)
        %r = vector.shuffle %acc, %p [0, 1, 16, 17, 4, ..., 15] : vector<16xf32>, vector<2xf32>
    """
    slices: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("vector.extract_strided_slice", "vector.insert_strided_slice") and _unit_1d_slice(op):
            slices.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in slices:
        offset = list(ir.ArrayAttr(op.attributes["offsets"]))[0].value
        with op.location, ir.InsertionPoint(op):
            if op.name == "vector.extract_strided_slice":
                source = op.operands[0]
                size = ir.VectorType(op.results[0].type).shape[0]
                result = vector.shuffle(source, source, list(range(offset, offset + size)))
            else:
                piece, dest = op.operands[0], op.operands[1]
                width, size = ir.VectorType(dest.type).shape[0], ir.VectorType(piece.type).shape[0]
                mask = [width + i - offset if offset <= i < offset + size else i for i in range(width)]
                result = vector.shuffle(dest, piece, mask)
        op.results[0].replace_all_uses_with(result)
        op.erase()


def _unit_1d_slice(op: ir.Operation) -> bool:
    strides = [a.value for a in ir.ArrayAttr(op.attributes["strides"])]
    return strides == [1] and all(ir.VectorType(v.type).rank == 1 for v in list(op.operands) + list(op.results))
