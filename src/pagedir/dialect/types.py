"""Small facts about builtin types shared by verifiers and passes."""

from __future__ import annotations

import mlir.ir as ir

WORKGROUP = "workgroup"
PRIVATE = "private"


def element_bytes(type_: ir.Type) -> int:
    """Byte width of a scalar or vector element type (vector: lanes x width)."""
    if isinstance(type_, ir.VectorType):
        lanes = 1
        for dim in type_.shape:
            lanes *= dim
        return lanes * element_bytes(type_.element_type)
    if isinstance(type_, ir.IndexType):
        return 8
    width = getattr(type_, "width", None)
    if width is None:
        raise ValueError(f"no byte width for type {type_}")
    return max(1, width // 8)


def memref_bytes(type_: ir.MemRefType) -> int:
    """Total bytes of a static memref (elements x element bytes)."""
    count = 1
    for dim in type_.shape:
        count *= dim
    return count * element_bytes(type_.element_type)


def strides_and_offset(type_: ir.MemRefType) -> tuple[list[int], int] | None:
    """The strides and offset of ``type_``'s layout, or None for a layout map that is no
    strided layout (``affine_map<(d0) -> (d0 floordiv 2)>``, a permutation)."""
    try:
        strides, offset = type_.get_strides_and_offset()
    except RuntimeError:  # the bindings' "Failed to extract strides and offset"
        return None
    return list(strides), offset


def memory_space(type_: ir.MemRefType) -> str | None:
    """'workgroup', 'private', 'global', another name, or None when the memref has none."""
    space = type_.memory_space
    if space is None:
        return None
    text = str(space)
    for name in (WORKGROUP, PRIVATE, "global"):
        if f"address_space<{name}>" in text:
            return name
    if text in ("3", "3 : i32"):
        return WORKGROUP
    if text in ("5", "5 : i32"):
        return PRIVATE
    return text


def is_lds(type_: ir.Type) -> bool:
    return isinstance(type_, ir.MemRefType) and memory_space(type_) == WORKGROUP


def workgroup_space() -> ir.Attribute:
    return ir.Attribute.parse("#gpu.address_space<workgroup>")


def private_space() -> ir.Attribute:
    return ir.Attribute.parse("#gpu.address_space<private>")


def lds_bytes_type(size: int) -> ir.MemRefType:
    """``memref<size x i8, #gpu.address_space<workgroup>>``: the shape of every LDS alloc."""
    return ir.MemRefType.get([size], ir.IntegerType.get_signless(8), memory_space=workgroup_space())


def vector_width_bits(type_: ir.Type) -> int:
    """Bits of a scalar or vector result."""
    return element_bytes(type_) * 8
