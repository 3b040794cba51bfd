"""gpu, rocdl and llvm ops: thread and workgroup ids, barriers, lane reads, raw buffer accesses through a
buffer descriptor (:mod:`pagedir.interp.buffer_descriptor`), pointer casts and bitcasts."""

from __future__ import annotations

from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.interp.buffer_descriptor import BufferResource, components_in_range, descriptor_error, make_resource
from pagedir.interp.memory import InterpError, elem_named
from pagedir.interp.ops_memory import MemRef, masked_read, masked_write
from pagedir.interp.simt import Program, elem_of, handles, vector_shape

def _dimension(op: Any) -> str:
    return str(op.operation.attributes["dimension"]).split()[-1].strip("<>")


@handles("gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "rock.workitem_id", "rock.workgroup_id",
         "rocdl.workitem.id.x", "rocdl.workgroup.id.x", "rocdl.workitem.id.y", "rocdl.workitem.id.z",
         "rocdl.workgroup.id.y", "rocdl.workgroup.id.z", "rocdl.workgroup.dim.x", "rocdl.grid.dim.x")
def compile_ids(p: Program, op: Any) -> Any:
    name = op.operation.name
    result = p.slot(op.operation.results[0])
    dtype = elem_of(op.operation.results[0].type).compute
    if name.startswith("gpu."):
        dimension = _dimension(op)
        what = name.split(".")[1]
    else:
        dimension = name[-1] if name.startswith("rocdl.") else "x"
        what = {"rock.workitem_id": "thread_id", "rock.workgroup_id": "block_id", "rocdl.workitem.id": "thread_id",
                "rocdl.workgroup.id": "block_id", "rocdl.workgroup.dim": "block_dim", "rocdl.grid.dim": "grid_dim"}[
            name if name.startswith("rock.") else name[:-2]]

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        if dimension != "x":
            value = np.zeros(1, dtype=np.int64) if what in ("thread_id", "block_id") else np.ones(1, dtype=np.int64)
        elif what == "thread_id":
            value = rt.tid
        elif what == "block_id":
            value = rt.group_id
        elif what == "block_dim":
            value = np.array([rt.block], dtype=np.int64)
        else:
            value = np.array([rt.grid], dtype=np.int64)
        env[result] = value.astype(dtype, copy=False)

    return run


@handles("gpu.barrier", "rock.lds_barrier", "rocdl.s.barrier", "rocdl.barrier")
def compile_barrier(p: Program, op: Any) -> Any:
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        p.rt.barrier(mask, op_id)

    return run


@handles("rocdl.readfirstlane")
def compile_readfirstlane(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        value = env[source]
        if value.shape[0] == 1:
            env[result] = value
            return
        wave = min(p.wave_size, rt.block)
        active = np.ones(rt.lanes, dtype=np.bool_) if mask is None else mask
        waves = active.reshape(-1, wave)
        first = np.argmax(waves, axis=1) + np.arange(waves.shape[0]) * wave
        env[result] = np.repeat(value[first], wave, axis=0)

    return run


@handles("rocdl.readlane")
def compile_readlane(p: Program, op: Any) -> Any:
    """``v_readlane_b32``: every lane of a wave gets the value of the wave's lane ``lane`` (a uniform
    index), whether that lane is active or not."""
    source, lane = (p.slot(v) for v in op.operation.operands)
    result = p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        value = env[source]
        if value.shape[0] == 1:
            env[result] = value
            return
        wave = min(p.wave_size, rt.block)
        index = np.broadcast_to(env[lane], (rt.lanes,)).reshape(-1, wave)[:, 0].astype(np.int64)
        if np.any((index < 0) | (index >= wave)):
            raise InterpError(f"'rocdl.readlane' reads lane {int(index.max())} of waves of {wave} lanes", op.operation.location)
        picked = value[index + np.arange(index.shape[0]) * wave]
        env[result] = np.repeat(picked, wave, axis=0)

    return run


def program_chip(p: Program):
    """The kernel's chip by ``pagedir.arch.kernel_chip``, or None when it names none."""
    from pagedir.arch import ChipError, kernel_chip

    try:
        return kernel_chip(p.func)
    except ChipError:
        return None


def chip_family(p: Program):
    """The kernel's :class:`pagedir.targets.TargetFamily` (what its buffer descriptors mean), or None when
    it names no chip."""
    from pagedir.targets import family_of

    chip = program_chip(p)
    return None if chip is None else family_of(chip)


@handles("rocdl.make.buffer.rsrc")
def compile_make_rsrc(p: Program, op: Any) -> Any:
    base, stride, records, flags = (p.slot(v) for v in op.operation.operands)
    result = p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        env[result] = make_resource(env[base], env[stride], env[records], env[flags])

    return run


@handles("rocdl.raw.ptr.buffer.load", "rocdl.raw.ptr.buffer.store")
def compile_buffer_access(p: Program, op: Any) -> Any:
    """A raw buffer access as the hardware performs it (rules of :mod:`pagedir.interp.buffer_descriptor`).

    The data moves in components: dwords for accesses of 4 bytes or more, else
    the whole access. A component out of range loads 0 (is not stored) without
    touching memory, so a null base with an out-of-range offset is fine; one in
    range reads the device memory at ``base + soffset + offset`` (unmapped -> error).
    """
    operation = op.operation
    storing = operation.name.endswith("store")
    operands = [p.slot(v) for v in operation.operands]
    if storing:
        value_slot, rsrc, voffset, soffset = operands[:4]
        type_ = operation.operands[0].type
    else:
        rsrc, voffset, soffset = operands[:3]
        type_ = operation.results[0].type
        result = p.slot(operation.results[0])
    elem = elem_of(type_)
    shape = vector_shape(type_)
    total = elem.size * (int(np.prod(shape, dtype=np.int64)) if shape else 1)
    if total >= 4 and total % 4:
        raise InterpError(f"{operation.name} of {total} bytes is not a whole number of dwords", operation.location)
    component = elem_named("i32") if total >= 4 else elem
    payload = component.size
    component_offsets = np.arange(total // payload, dtype=np.int64) * payload
    family = chip_family(p)
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        if family is None:
            raise InterpError(f"{operation.name}: a buffer descriptor's flags mean different things on CDNA and RDNA "
                              "chips; set rock.arch on the kernel so the interpreter knows which", p.op_location(op_id))
        r: BufferResource = env[rsrc]
        if why := descriptor_error(r, family):
            raise InterpError(f"{operation.name}: descriptor {why}", p.op_location(op_id))
        offset = env[voffset].astype(np.int64) & 0xFFFFFFFF
        scalar_offset = env[soffset].astype(np.int64) & 0xFFFFFFFF
        inside = components_in_range(r, family, offset, scalar_offset, component_offsets, payload)
        addresses = (r.base + scalar_offset + offset).reshape(-1, 1) + component_offsets[None]
        m = MemRef(p.rt.device, np.zeros(1, np.int64), np.zeros(1, np.int64), (), (), component)
        if storing:
            values = np.ascontiguousarray(elem.to_storage(env[value_slot]))
            words = values.reshape(values.shape[0], -1).view(component.storage)
            masked_write(p, op_id, m, addresses, inside, words, mask)
            return
        words = np.ascontiguousarray(masked_read(p, op_id, m, addresses, inside, mask))
        values = elem.to_compute(words.view(elem.storage))
        env[result] = values.reshape((values.shape[0], *shape)) if shape else values[:, 0]

    return run


@handles("llvm.inttoptr", "llvm.ptrtoint", "llvm.bitcast", "llvm.addrspacecast", "builtin.unrealized_conversion_cast")
def compile_pointer_cast(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    target = op.operation.results[0].type
    if op.operation.name == "llvm.bitcast" and not str(target).startswith("!llvm.ptr"):
        return _value_bitcast(p, op)
    to_int = isinstance(target, ir.IntegerType)
    dtype = elem_of(target).compute if to_int else np.int64

    def run(env: list, mask: Any) -> None:
        value = env[source]
        env[result] = np.asarray(value).astype(dtype, copy=False) if isinstance(value, np.ndarray) else value

    return run


def _value_bitcast(p: Program, op: Any) -> Any:
    """``llvm.bitcast`` of a scalar or vector value: the same bits read as the other type (``i32`` <->
    ``vector<2xf16>``: the vector's first element is the integer's low half)."""
    from pagedir.interp.ops_arith import from_bits, to_bits

    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    source_elem = elem_of(op.operation.operands[0].type)
    target_type = op.operation.results[0].type
    target_elem, shape = elem_of(target_type), vector_shape(target_type)

    def run(env: list, mask: Any) -> None:
        value = np.asarray(env[source])
        bits = np.ascontiguousarray(to_bits(value, source_elem)).reshape(value.shape[0], -1)
        out = from_bits(bits.view(target_elem.storage), target_elem)
        env[result] = out.reshape((value.shape[0], *shape))

    return run


@handles("llvm.mlir.zero")
def compile_null(p: Program, op: Any) -> Any:
    result = p.slot(op.operation.results[0])
    zero = np.zeros(1, dtype=np.int64)

    def run(env: list, mask: Any) -> None:
        env[result] = zero

    return run
