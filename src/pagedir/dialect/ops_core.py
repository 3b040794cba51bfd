"""Memory, synchronisation and load primitives of the rock dialect (the fixed surface)."""

from __future__ import annotations

from collections.abc import Iterator

import mlir.ir as ir

from pagedir.dialect.core import (
    I1,
    I64,
    I64_ATTR,
    INDEX,
    MEMREF,
    OPTIONAL,
    READ,
    VARIADIC,
    Attr,
    OpDef,
    Operand,
    Result,
)
from pagedir.dialect.types import PRIVATE, WORKGROUP, memory_space, memref_bytes


class AllocOp(OpDef):
    name = "alloc"
    summary = "allocate a buffer in LDS (workgroup space) or registers (private space)"
    description = """
LDS buffers are rank-1 `i8` byte buffers; typed access goes through `memref.view`.
Liveness is not tied to the alloc: `rock.live_in`/`rock.live_out` mark ranges and
`rock-reuse-lds` packs the buffers into a few pooled allocations.
"""
    results = (Result("buffer", MEMREF, "the allocated memref"),)
    example = '%b = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>'

    def verify(self, op) -> Iterator[str]:
        """static shape, size > 0 bytes, workgroup or private memory space."""
        type_ = op.operation.results[0].type
        if not type_.has_static_shape:
            yield f"requires a static shape, got {type_}"
            return
        try:
            size = memref_bytes(type_)
        except ValueError:
            yield f"element type {type_.element_type} has no byte size"
            return
        if size <= 0:
            yield f"the size of rock.alloc should be greater than zero, got {size} bytes for {type_}"
        space = memory_space(type_)
        if space not in (WORKGROUP, PRIVATE):
            yield f"requires a workgroup or private memory space, got {type_}"


class _LivenessMarker(OpDef):
    operands = (Operand("buffer", MEMREF, doc="the result of a workgroup-space rock.alloc"),)
    marker = True

    def verify(self, op) -> Iterator[str]:
        """the operand is the result of a `rock.alloc` in workgroup (LDS) space."""
        buffer = op.operation.operands[0]
        owner = buffer.owner
        if not isinstance(owner, ir.Operation | ir.OpView):
            yield f"operand of rock.{self.name} must be the result of a rock.alloc, got a block argument"
            return
        if owner.name != "rock.alloc":
            yield f"operand of rock.{self.name} must be the result of a rock.alloc, got a result of {owner.name}"
            return
        space = memory_space(buffer.type)
        if space is None:
            yield f"operand of rock.{self.name} must have a specified memory space, got {buffer.type}"
        elif space != WORKGROUP:
            yield f"operand of rock.{self.name} must be an LDS (workgroup) memref, got {buffer.type}"


class LiveInOp(_LivenessMarker):
    name = "live_in"
    summary = "start of one live range of an LDS buffer"
    description = "Inserted by `rock-annotate-liveness` right before the first write of a range; consumed by `rock-reuse-lds`."
    example = '"rock.live_in"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()'


class LiveOutOp(_LivenessMarker):
    name = "live_out"
    summary = "end of one live range of an LDS buffer"
    description = "Inserted by `rock-annotate-liveness` right after the last read of a range; consumed by `rock-reuse-lds`."
    example = '"rock.live_out"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()'


class LdsBarrierOp(OpDef):
    name = "lds_barrier"
    summary = "workgroup barrier ordering LDS accesses"
    description = "Lowered to `gpu.barrier` (s_waitcnt lgkmcnt(0) + s_barrier)."
    example = '"rock.lds_barrier"() : () -> ()'


class WorkgroupIdOp(OpDef):
    name = "workgroup_id"
    summary = "1-D workgroup id (x)"
    results = (Result("id", INDEX),)
    example = '%bid = "rock.workgroup_id"() : () -> index'


class WorkitemIdOp(OpDef):
    name = "workitem_id"
    summary = "1-D id of the thread in its workgroup (x)"
    results = (Result("id", INDEX),)
    example = '%tid = "rock.workitem_id"() : () -> index'


class GlobalLoadOp(OpDef):
    name = "global_load"
    summary = "load a scalar or vector from global memory, zero when invalid"
    description = """
Without `page_ptr`, `indices` address `mem` (one per dimension). With `page_ptr`
(an i64 device address of a page), there is exactly one index: the element offset
inside the page, and `mem` only gives the element type; `page_size` (elements) is
then required and must be a multiple of the result's vector width. `valid` (i1)
makes the result zero when false. Results wider than 128 bits are split into
several hardware loads by `rock-buffer-load`.
"""
    operands = (
        Operand("mem", MEMREF, effect=READ, doc="global memref (element type only when paged)"),
        Operand("indices", INDEX, VARIADIC, doc="coordinates, or the offset in the page"),
        Operand("valid", I1, OPTIONAL, doc="result is zero when false"),
        Operand("page_ptr", I64, OPTIONAL, doc="device address of the page"),
    )
    results = (Result("result", doc="scalar or vector of the element type"),)
    attributes = (Attr("page_size", I64_ATTR, required=False, doc="elements per page (paged loads)"),)
    example = """%v = "rock.global_load"(%mem, %off, %valid, %ptr) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 2048}
    : (memref<1xf16>, index, i1, i64) -> vector<8xf16>"""

    def verify(self, op) -> Iterator[str]:
        """result element type = memref element type; without `page_ptr` one index per memref
        dimension and no `page_size`; with it exactly one index and a `page_size` that is a
        positive multiple of the result's vector width."""
        mem, indices, page_ptr = op.mem, op.indices, op.page_ptr
        result_type = op.operation.results[0].type
        element = mem.type.element_type
        result_element = result_type.element_type if isinstance(result_type, ir.VectorType) else result_type
        if result_element != element:
            yield f"result element type {result_element} does not match the memref element type {element}"
            return
        lanes = 1
        if isinstance(result_type, ir.VectorType):
            for dim in result_type.shape:
                lanes *= dim
        page_size = op.page_size
        if page_ptr is None:
            if page_size is not None:
                yield f"page_size {page_size} requires a page_ptr operand"
            if len(indices) != mem.type.rank:
                yield f"expects {mem.type.rank} indices for {mem.type}, got {len(indices)}"
            return
        if len(indices) != 1:
            yield f"with a page_ptr expects exactly one index (the offset in the page), got {len(indices)}"
        if page_size is None:
            yield "with a page_ptr requires a page_size attribute"
        elif page_size <= 0 or page_size % lanes:
            yield f"page_size {page_size} must be a positive multiple of the vector width {lanes} of {result_type}"


#: Unit attribute on a paged ``rock.global_load``: the lanes of every wave that executes it pass
#: the same ``page_ptr`` (set by rock-threadwise-lowering, which proves it; rock-buffer-load then
#: takes the pointer with ``readfirstlane``).
UNIFORM_PAGE_PTR_ATTR = "rock.uniform_page_ptr"

OPS = (AllocOp, LiveInOp, LiveOutOp, LdsBarrierOp, WorkgroupIdOp, WorkitemIdOp, GlobalLoadOp)
