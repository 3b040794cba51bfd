"""NVVM ops (NVIDIA sm_80 / sm_90 kernels) and the LLVM struct and pointer ops around them.

The semantics are the PTX ISA's (release 8.7), through the table of :mod:`pagedir.targets.nvidia_mma`;
nothing here comes from pagedir's NVIDIA lowering. A warp is 32 consecutive threads of a block.

* ``nvvm.mma.sync`` m16n8k16, A/B f16 or bf16 (``vector<2xf16>``, ``vector<2xbf16>`` or ``i32`` registers of
  two elements, low half first), C/D f32: ``D = A x B + C`` per warp, exact products summed and rounded once
  to f32 (as the AMD matrix cores are modelled). ``.sync.aligned``: every thread of the warp executes it
  together; a warp with some threads inactive is an error.
* ``nvvm.ldmatrix`` m8n8 b16, x1/x2/x4, with or without ``.trans`` (``layout = col``): row r of matrix j at
  the shared address of lane 8j + r (16-byte aligned, inside one shared allocation); the whole warp must
  execute it. Reads count as reads of the lane that gave the row's address (LDS race detection), and each
  matrix as one 128-byte cycle of the lanes that gave its rows (``pagedir-run --lds-banks``).
* ``nvvm.cp.async.shared.global`` (``cp.async``): per thread, ``src-size`` bytes (the optional ``cpSize``
  operand, else all ``size``) from the global address, zeros for the rest of ``size`` bytes, to the shared
  address; ``cp.async.commit.group`` / ``cp.async.wait.group N`` keep per-thread groups. The interpreter
  writes the data at issue (values never depend on timing) and keeps its bytes *in flight* until a wait of
  the issuing thread covers its group: any access to them before that is reported (``Runtime.check_in_flight``).
  The wait records the issuing thread as the bytes' writer at that point, so the other threads also need a
  barrier after the wait (a barrier between the issue and the wait is not enough).
* ``nvvm.read.ptx.sreg.*`` (tid, ntid, ctaid, nctaid: x only is more than 1; laneid, warpid, nwarpid,
  warpsize), ``nvvm.barrier0`` / ``nvvm.barrier`` without operands (``bar.sync 0``: the barrier model of
  :meth:`Runtime.barrier`), ``nvvm.shfl.sync`` (bfly / up / down / idx with the ``c`` operand's clamp and
  segment mask, PTX ISA 9.7.8.6) and ``nvvm.vote.sync`` (any / all / uni / ballot): every thread the member
  mask names must execute it, and a shuffle must read an active member lane.
* LLVM: ``llvm.extractvalue`` / ``insertvalue`` / ``mlir.undef`` / ``mlir.poison`` on the structs the NVVM ops
  return (:class:`Struct`: one array per field), ``llvm.getelementptr``, and ``llvm.load`` / ``llvm.store``
  through pointers: address space 3 holds the interpreter's shared (LDS) pointers
  (:func:`pagedir.interp.ops_memory.lds_pointer`), any other a global device address.
"""

from __future__ import annotations

import re
from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.interp import lds_banks
from pagedir.interp.memory import Elem, InterpError, Space, elem_named
from pagedir.interp.ops_arith import FLOAT_RULES, FloatRule, from_bits, to_bits
from pagedir.interp.ops_lds_dma import lds_space
from pagedir.interp.ops_memory import LDS_POINTER_SHIFT
from pagedir.interp.simt import Program, elem_of, handles, select, vector_shape, widen
from pagedir.targets import nvidia_mma as nv

WARP = nv.WARP


class Struct:
    """An ``!llvm.struct`` value: one per-lane array per field."""

    __slots__ = ("fields",)

    def __init__(self, fields: list) -> None:
        self.fields = list(fields)

    def select(self, mask: np.ndarray, other: Struct) -> Struct:
        return Struct([select(mask, a, b) for a, b in zip(self.fields, other.fields)])


def _attr_text(op: Any, name: str) -> str:
    attributes = op.operation.attributes
    return str(attributes[name]) if name in attributes else ""


def _enum(op: Any, name: str) -> str:
    """The case of an enum attribute (``#nvvm<shfl_kind bfly>``, ``#nvvm.vote_sync_kind<any>``: bfly, any)."""
    return [word for word in re.split(r"[<>\s]+", _attr_text(op, name)) if word][-1]


def _int_attr(op: Any, name: str, default: int | None = None) -> int | None:
    attributes = op.operation.attributes
    return ir.IntegerAttr(attributes[name]).value if name in attributes else default


def address_space(type_: ir.Type) -> int:
    """The address space of an ``!llvm.ptr<N>`` (0 for ``!llvm.ptr``)."""
    match = re.fullmatch(r"!llvm\.ptr(?:<(\d+)>)?", str(type_))
    if match is None:
        raise InterpError(f"{type_} is not an LLVM pointer type")
    return int(match.group(1) or 0)


SHARED = 3


def whole_warps(p: Program, op_id: int, mask: Any, what: str) -> int:
    """The number of warps of the batch, after checking that ``what`` is executed by whole warps."""
    rt = p.rt
    if rt.block % WARP:
        raise InterpError(f"{p.op_name(op_id)} {what}in a block of {rt.block} threads: not a whole number of "
                          f"{WARP}-thread warps", p.op_location(op_id))
    warps = rt.lanes // WARP
    if mask is not None:
        per_warp = mask.reshape(warps, WARP)
        partial = per_warp.any(axis=1) & ~per_warp.all(axis=1)
        if partial.any():
            first = int(np.argmax(partial))
            raise InterpError(f"{p.op_name(op_id)} {what}executed by {int(per_warp[first].sum())} of the {WARP} threads "
                              f"of warp {first % (rt.block // WARP)} of block {int(rt.group_id[first * WARP])} "
                              "(.sync.aligned: the whole warp executes it together)", p.op_location(op_id))
    return warps


def lane_values(env: list, slot: int, lanes: int) -> np.ndarray:
    value = np.asarray(env[slot])
    return np.broadcast_to(value, (lanes, *value.shape[1:]))


# ----------------------------------------------------------------------------
# shared and global memory through pointers


def shared_places(p: Program, op_id: int, pointers: np.ndarray, lanes: np.ndarray, nbytes: int,
                  align: int = 1) -> list[tuple[Space, np.ndarray, np.ndarray]]:
    """Per shared allocation: (space, the byte offsets in its ``bytes`` of ``lanes``' accesses of ``nbytes``
    at ``pointers``, the indices into ``lanes`` that access it); bounds and alignment checked."""
    rt, where = p.rt, p.op_location(op_id)
    tags = pointers >> LDS_POINTER_SHIFT
    places = []
    for tag in np.unique(tags):
        these = np.nonzero(tags == tag)[0]
        space, _ = lds_space(rt, int(pointers[these[0]]), where)
        offset = pointers[these] & ((1 << LDS_POINTER_SHIFT) - 1)
        bad = (offset + nbytes > space.nbytes) | (offset < 0)
        if bad.any():
            at = int(offset[bad][0])
            raise InterpError(f"{p.op_name(op_id)} accesses bytes [{at}, {at + nbytes}) of {space.name}: past its end",
                              where)
        if align > 1 and (offset % align).any():
            at = int(offset[offset % align != 0][0])
            raise InterpError(f"{p.op_name(op_id)}: shared address {at} in {space.name} is not {align}-byte aligned",
                              where)
        places.append((space, space.lane_base[lanes[these]] + offset, these))
    return places


def count_banks(p: Program, op_id: int, space: Space, addresses: np.ndarray, lanes: np.ndarray, size: int,
                kind: str) -> None:
    """Shared-memory bank conflicts of an access inside ``lds_banks.tally()``: NVIDIA's shared memory has the 32
    banks of 4 bytes and the 128 bytes per cycle of :mod:`pagedir.interp.lds_banks`' model, for warps of 32."""
    if lds_banks.counting():
        lds_banks.record((p.op_name(op_id), p.op_where(op_id), kind), addresses - space.lane_base[lanes, None], lanes,
                         p.rt.tid[lanes], p.rt.block, WARP, size)


def global_read(p: Program, op_id: int, addresses: np.ndarray, elem: Elem) -> np.ndarray:
    return p.rt.device.read(addresses, elem, lambda: p.op_name(op_id), p.op_location(op_id))


def check_aligned(p: Program, op_id: int, addresses: np.ndarray, align: int, what: str) -> None:
    if align > 1 and addresses.size and (addresses % align).any():
        at = int(addresses[addresses % align != 0][0])
        raise InterpError(f"{p.op_name(op_id)}: {what} address {at:#x} is not {align}-byte aligned",
                          p.op_location(op_id))


@handles("llvm.load", "llvm.store")
def compile_llvm_access(p: Program, op: Any) -> Any:
    """A scalar or vector load or store of the active lanes through a pointer (module docstring)."""
    operation = op.operation
    storing = operation.name == "llvm.store"
    value_slot = p.slot(operation.operands[0]) if storing else None
    pointer_slot = p.slot(operation.operands[1] if storing else operation.operands[0])
    type_ = operation.operands[0].type if storing else operation.results[0].type
    space = address_space((operation.operands[1] if storing else operation.operands[0]).type)
    elem, shape = elem_of(type_), vector_shape(type_)
    count = int(np.prod(shape)) if shape else 1
    element_offsets = np.arange(count, dtype=np.int64) * elem.size
    align = _int_attr(op, "alignment", elem.size)
    result = None if storing else p.slot(operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        given = np.asarray(env[pointer_slot], dtype=np.int64)
        if space != SHARED and not storing and mask is None and (given.ndim != 1 or given.shape[0] != rt.lanes):
            # a gather in a linalg.generic body (L0: one address per point of its iteration space), or one address
            # for every lane
            check_aligned(p, op_id, given, align, "global")
            values = elem.to_compute(global_read(p, op_id, given[..., None] + element_offsets, elem))
            env[result] = values.reshape((*given.shape, *shape)) if shape else values[..., 0]
            return
        lanes = rt.active_lanes(mask)
        pointers = widen(given, rt.lanes)[lanes]
        if storing:
            values = np.ascontiguousarray(elem.to_storage(lane_values(env, value_slot, rt.lanes)[lanes])).reshape(len(lanes), count)
        else:
            out = np.zeros((rt.lanes, count), dtype=elem.storage)
        if space == SHARED:
            for sp, offsets, these in shared_places(p, op_id, pointers, lanes, count * elem.size, align):
                addresses = offsets[:, None] + element_offsets
                who = np.broadcast_to(lanes[these][:, None], addresses.shape)
                count_banks(p, op_id, sp, addresses, lanes[these], elem.size, "write" if storing else "read")
                if storing:
                    sp.write(addresses, who, values[these], elem, rt, op_id)
                else:
                    out[lanes[these]] = sp.read(addresses, who, elem, rt, op_id)
        else:
            check_aligned(p, op_id, pointers, align, "global")
            addresses = pointers[:, None] + element_offsets
            if storing:
                rt.device.write(addresses, values, elem, lambda: p.op_name(op_id), p.op_location(op_id))
            elif lanes.size:
                out[lanes] = global_read(p, op_id, addresses, elem)
        if not storing:
            values = elem.to_compute(out)
            env[result] = values.reshape((rt.lanes, *shape)) if shape else values[:, 0]

    return run


def _type_bytes(type_: ir.Type) -> int:
    text = str(type_)
    match = re.fullmatch(r"!llvm\.array<(\d+) x (.*)>", text)
    if match:
        return int(match.group(1)) * _type_bytes(ir.Type.parse(match.group(2)))
    if isinstance(type_, ir.VectorType):
        return elem_of(type_).size * int(np.prod(vector_shape(type_)))
    return elem_of(type_).size


def _inner_type(type_: ir.Type, location: Any) -> ir.Type:
    match = re.fullmatch(r"!llvm\.array<(\d+) x (.*)>", str(type_))
    if match:
        return ir.Type.parse(match.group(2))
    if isinstance(type_, ir.VectorType):
        return ir.VectorType(type_).element_type
    raise InterpError(f"llvm.getelementptr into {type_} is not supported by the interpreter (arrays, vectors, scalars)",
                      location)


#: rawConstantIndices marks an index given as an operand with this value (LLVM::GEPOp::kDynamicIndex).
DYNAMIC_INDEX = -(2**31)


@handles("llvm.getelementptr")
def compile_gep(p: Program, op: Any) -> Any:
    """``base + sum(index_i * bytes of the type indexed at depth i)``; indices are signed (sign-extended)."""
    operation = op.operation
    base = p.slot(operation.operands[0])
    dynamic = iter(p.slot(v) for v in operation.operands[1:])
    element = ir.TypeAttr(operation.attributes["elem_type"]).value
    raw = list(ir.DenseI32ArrayAttr(operation.attributes["rawConstantIndices"]))
    steps, type_ = [], element
    for depth, index in enumerate(raw):
        if depth:
            type_ = _inner_type(type_, operation.location)
        size = _type_bytes(type_)
        steps.append((("slot", next(dynamic)) if index == DYNAMIC_INDEX else ("const", index), size))
    result = p.slot(operation.results[0])

    def run(env: list, mask: Any) -> None:
        address = np.asarray(env[base], dtype=np.int64)
        for (kind, index), size in steps:
            value = index if kind == "const" else np.asarray(env[index]).astype(np.int64)
            address = address + value * size
        env[result] = np.atleast_1d(address)

    return run


# ----------------------------------------------------------------------------
# structs


@handles("llvm.extractvalue")
def compile_extractvalue(p: Program, op: Any) -> Any:
    source, result = p.slot(op.operation.operands[0]), p.slot(op.operation.results[0])
    position = list(ir.DenseI64ArrayAttr(op.operation.attributes["position"]))

    def run(env: list, mask: Any) -> None:
        value = env[source]
        for index in position:
            value = value.fields[index]
        env[result] = value

    return run


@handles("llvm.insertvalue")
def compile_insertvalue(p: Program, op: Any) -> Any:
    container, value = (p.slot(v) for v in op.operation.operands)
    result = p.slot(op.operation.results[0])
    position = list(ir.DenseI64ArrayAttr(op.operation.attributes["position"]))

    def insert(struct: Struct, path: list, item: Any) -> Struct:
        fields = list(struct.fields)
        fields[path[0]] = item if len(path) == 1 else insert(fields[path[0]], path[1:], item)
        return Struct(fields)

    def run(env: list, mask: Any) -> None:
        env[result] = insert(env[container], position, env[value])

    return run


def zero_value(type_: ir.Type) -> Any:
    """The value the interpreter gives undef / poison / zero of ``type_``: zeros (structs field by field)."""
    text = str(type_)
    if text.startswith("!llvm.struct<("):
        inner = text[len("!llvm.struct<("):-2]
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(inner):
            depth += ch in "<(" and 1 or 0
            depth -= ch in ">)" and 1 or 0
            if ch == "," and depth == 0:
                parts.append(inner[start:i].strip())
                start = i + 1
        parts.append(inner[start:].strip())
        return Struct([zero_value(ir.Type.parse(part)) for part in parts if part])
    if text.startswith("!llvm.ptr"):
        return np.zeros(1, dtype=np.int64)
    elem = elem_of(type_)
    return np.zeros((1, *vector_shape(type_)), dtype=elem.compute)


@handles("llvm.mlir.undef", "llvm.mlir.poison")
def compile_undef(p: Program, op: Any) -> Any:
    result = p.slot(op.operation.results[0])
    value = zero_value(op.operation.results[0].type)

    def run(env: list, mask: Any) -> None:
        env[result] = value

    return run


# ----------------------------------------------------------------------------
# special registers and barriers

SREGS = {"tid": "thread", "ntid": "block", "ctaid": "group", "nctaid": "grid"}


@handles(*(f"nvvm.read.ptx.sreg.{name}.{axis}" for name in SREGS for axis in "xyz"),
         "nvvm.read.ptx.sreg.laneid", "nvvm.read.ptx.sreg.warpid", "nvvm.read.ptx.sreg.nwarpid",
         "nvvm.read.ptx.sreg.warpsize")
def compile_sreg(p: Program, op: Any) -> Any:
    parts = op.operation.name.split(".")
    name, axis = (parts[-2], parts[-1]) if parts[-1] in "xyz" else (parts[-1], "")
    result = p.slot(op.operation.results[0])
    dtype = elem_of(op.operation.results[0].type).compute

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        if axis in ("y", "z"):
            value = np.zeros(1) if name in ("tid", "ctaid") else np.ones(1)
        elif name == "tid":
            value = rt.tid
        elif name == "ntid":
            value = np.array([rt.block])
        elif name == "ctaid":
            value = rt.group_id
        elif name == "nctaid":
            value = np.array([rt.grid])
        elif name == "laneid":
            value = rt.tid % WARP
        elif name == "warpid":
            value = rt.tid // WARP
        elif name == "nwarpid":
            value = np.array([-(-rt.block // WARP)])
        else:
            value = np.array([WARP])
        env[result] = value.astype(dtype)

    return run


@handles("nvvm.barrier0", "nvvm.barrier")
def compile_nvvm_barrier(p: Program, op: Any) -> Any:
    """``bar.sync 0`` for the whole block; a named barrier or a thread count is not modelled (refused)."""
    operation = op.operation
    if operation.operands or operation.results or any(
            a.name in ("barrierId", "numberOfThreads", "reductionOp") for a in operation.attributes):
        raise InterpError(f"'{operation.name}' op with a barrier id, thread count or reduction is not supported by the "
                          "interpreter (bar.sync 0 of the whole block only)", operation.location)
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        p.rt.barrier(mask, op_id)

    return run


# ----------------------------------------------------------------------------
# warp shuffles and votes (PTX ISA 9.7.8.6 shfl.sync, 9.7.8.5 vote.sync)


def _members(p: Program, op_id: int, env: list, slot: int, mask: Any) -> np.ndarray:
    """Per lane, which threads of its warp its member mask names (lanes x 32), after the convergence checks:
    an active thread names itself, and every thread it names executes the op with it (PTX: every non-exited
    thread of the mask; threads past the end of the block count as exited)."""
    rt = p.rt
    member_mask = widen(np.asarray(env[slot]).astype(np.int64) & 0xFFFFFFFF, rt.lanes)
    lane = rt.tid % WARP
    active = np.ones(rt.lanes, dtype=bool) if mask is None else mask
    named = ((member_mask[:, None] >> np.arange(WARP)) & 1).astype(bool)
    exists = (rt.tid - lane)[:, None] + np.arange(WARP) < rt.block
    warp_lanes = np.minimum((rt.all_lanes - lane)[:, None] + np.arange(WARP), rt.lanes - 1)
    named &= exists  # a block's last warp may have fewer threads: those past the block count as exited
    missing = active[:, None] & named & ~active[warp_lanes]
    if (active & ~named[rt.all_lanes, lane]).any():
        at = int(np.argmax(active & ~named[rt.all_lanes, lane]))
        raise InterpError(f"{p.op_name(op_id)}: thread {int(rt.tid[at])} executes it with a member mask "
                          f"{int(member_mask[at]):#x} that does not name its own lane {int(lane[at])}", p.op_location(op_id))
    if missing.any():
        at, other = (int(x[0]) for x in np.nonzero(missing))
        raise InterpError(f"{p.op_name(op_id)}: thread {int(rt.tid[at])} names lane {other} in its member mask "
                          f"{int(member_mask[at]):#x}, which does not execute it with it (.sync: every named thread "
                          "executes the same instruction)", p.op_location(op_id))
    return named


@handles("nvvm.shfl.sync")
def compile_shfl(p: Program, op: Any) -> Any:
    operation = op.operation
    member_slot, value_slot, offset_slot, clamp_slot = (p.slot(v) for v in operation.operands)
    kind = _enum(op, "kind")
    pair = "return_value_and_is_valid" in operation.attributes
    result = p.slot(operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        named = _members(p, op_id, env, member_slot, mask)
        lane = rt.tid % WARP
        b = widen(np.asarray(env[offset_slot]).astype(np.int64), rt.lanes) & 0x1F
        c = widen(np.asarray(env[clamp_slot]).astype(np.int64), rt.lanes)
        clamp, segmask = c & 0x1F, (c >> 8) & 0x1F
        max_lane = (lane & segmask) | (clamp & ~segmask)
        min_lane = lane & segmask
        if kind == "up":
            j = lane - b
            valid = j >= max_lane
        else:
            j = {"down": lane + b, "bfly": lane ^ b, "idx": min_lane | (b & ~segmask)}[kind]
            valid = j <= max_lane
        j = np.where(valid, j, lane)
        source = rt.all_lanes - lane + j
        active = np.ones(rt.lanes, dtype=bool) if mask is None else mask
        outside = rt.tid - lane + j >= rt.block
        bad = active & (outside | ~named[rt.all_lanes, j] | ~active[np.minimum(source, rt.lanes - 1)])
        if bad.any():
            at = int(np.argmax(bad))
            raise InterpError(f"'nvvm.shfl.sync' op: thread {int(rt.tid[at])} reads lane {int(j[at])} of its warp, which "
                              "is not an active member of the shuffle (undefined value)", p.op_location(op_id))
        values = lane_values(env, value_slot, rt.lanes)
        out = values[np.minimum(source, rt.lanes - 1)]
        env[result] = Struct([out, valid]) if pair else out

    return run


@handles("nvvm.vote.sync")
def compile_vote(p: Program, op: Any) -> Any:
    operation = op.operation
    member_slot, predicate_slot = (p.slot(v) for v in operation.operands)
    kind = _enum(op, "kind")
    result = p.slot(operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        named = _members(p, op_id, env, member_slot, mask)
        lane = rt.tid % WARP
        first = rt.all_lanes - lane
        predicate = widen(np.asarray(env[predicate_slot]).astype(bool), rt.lanes)
        index = np.minimum(first[:, None] + np.arange(WARP), rt.lanes - 1)
        votes = predicate[index] & named  # lanes x warp lanes: the members' predicates
        if kind == "ballot":
            bits = (votes.astype(np.int64) << np.arange(WARP)).sum(axis=1)
            env[result] = bits.astype(np.uint32).view(np.int32)
        elif kind == "any":
            env[result] = votes.any(axis=1)
        elif kind == "all":
            env[result] = (votes | ~named).all(axis=1)
        else:  # uni: all members agree
            env[result] = (votes | ~named).all(axis=1) | ~votes.any(axis=1)

    return run


# ----------------------------------------------------------------------------
# mma.sync


def _mma_element(op: Any, operand: str, value: ir.Value) -> str:
    """The element type of A or B: a vector's, else the ``multiplicand<A|B>PtxType`` attribute (i32 registers)."""
    if isinstance(value.type, ir.VectorType):
        return str(ir.VectorType(value.type).element_type)
    text = _attr_text(op, f"multiplicand{operand}PtxType")
    return text.rstrip(">").split("<")[-1] if text else str(value.type)


def register_halves(values: np.ndarray, type_: ir.Type, elem: Elem) -> np.ndarray:
    """Two elements per lane (lanes, 2) of a 32-bit register: a 2-vector as it is, an i32's low then high half."""
    if isinstance(type_, ir.VectorType):
        return values.reshape(values.shape[0], 2)
    bits = np.ascontiguousarray(values.astype(np.int32)).view(np.uint32)
    halves = np.stack([bits & 0xFFFF, bits >> 16], axis=1).astype(np.uint16)
    return elem.to_compute(halves.view(elem.storage))


@handles("nvvm.mma.sync")
def compile_mma(p: Program, op: Any) -> Any:
    operation = op.operation
    location = operation.location
    sizes = list(ir.DenseI32ArrayAttr(operation.attributes["operandSegmentSizes"]))
    operands = list(operation.operands)
    a_values, b_values, c_values = operands[:sizes[0]], operands[sizes[0]:sizes[0] + sizes[1]], operands[sizes[0] + sizes[1]:]
    shape = tuple(int(x) for x in re.findall(r"[mnk] = (\d+)", _attr_text(op, "shape")))
    layouts = (_attr_text(op, "layoutA"), _attr_text(op, "layoutB"))
    elements = {_mma_element(op, "A", a_values[0]), _mma_element(op, "B", b_values[0])}
    what = f"'nvvm.mma.sync' op m{shape[0]}n{shape[1]}k{shape[2]}" if len(shape) == 3 else "'nvvm.mma.sync' op"
    if shape != (nv.MMA_M, nv.MMA_N, nv.MMA_K):
        raise InterpError(f"{what} is not a shape the interpreter knows the fragment layout of (m16n8k16)", location)
    if layouts != ("#nvvm.mma_layout<row>", "#nvvm.mma_layout<col>"):
        raise InterpError(f"{what}: only .row.col (layoutA = row, layoutB = col) exists for this shape", location)
    if len(elements) != 1 or not elements <= set(nv.MMA_INPUT_TYPES):
        raise InterpError(f"{what}: A and B of type {' and '.join(sorted(elements))} are not supported by the "
                          "interpreter (f16 or bf16 for both)", location)
    if (len(a_values), len(b_values), len(c_values)) != (4, 2, 4) or any(str(v.type) != "f32" for v in c_values):
        raise InterpError(f"{what}: the interpreter runs A in 4 registers, B in 2 and C as 4 f32 values", location)
    elem = elem_named(elements.pop())
    slots = [p.slot(v) for v in operands]
    types = [v.type for v in operands]
    result = p.slot(operation.results[0])
    op_id = p.op_id(op)
    a_flat = (nv.MMA_A[0] * nv.MMA_K + nv.MMA_A[1]).reshape(-1)
    b_flat = (nv.MMA_B[0] * nv.MMA_N + nv.MMA_B[1]).reshape(-1)
    c_flat = (nv.MMA_C[0] * nv.MMA_N + nv.MMA_C[1]).reshape(-1)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        warps = whole_warps(p, op_id, mask, "")

        def gather(first: int, count: int) -> np.ndarray:
            parts = [register_halves(lane_values(env, slots[i], rt.lanes), types[i], elem)
                     for i in range(first, first + count)]
            return np.concatenate(parts, axis=1).astype(np.float64).reshape(warps, -1)

        a = np.zeros((warps, nv.MMA_M * nv.MMA_K))
        b = np.zeros((warps, nv.MMA_K * nv.MMA_N))
        c = np.zeros((warps, nv.MMA_M * nv.MMA_N))
        a[:, a_flat] = gather(0, 4)
        b[:, b_flat] = gather(4, 2)
        c[:, c_flat] = np.stack([lane_values(env, slots[6 + i], rt.lanes) for i in range(4)], axis=1).astype(np.float64).reshape(warps, -1)
        d = np.matmul(a.reshape(warps, nv.MMA_M, nv.MMA_K), b.reshape(warps, nv.MMA_K, nv.MMA_N)) + c.reshape(warps, nv.MMA_M, nv.MMA_N)
        lanes_d = d.reshape(warps, -1)[:, c_flat].astype(np.float32).reshape(rt.lanes, nv.MMA_C_PER_LANE)
        env[result] = Struct([lanes_d[:, i] for i in range(nv.MMA_C_PER_LANE)])

    return run


FLOAT_RULES["nvvm.mma.sync"] = FloatRule(
    compile_mma, "IEEE 754 products and sums: exact products added to the accumulator and rounded once to f32; "
                 "NaN if any product or addend is NaN, for 0 * inf and for inf - inf")


# ----------------------------------------------------------------------------
# ldmatrix


@handles("nvvm.ldmatrix")
def compile_ldmatrix(p: Program, op: Any) -> Any:
    operation = op.operation
    location = operation.location
    num = _int_attr(op, "num")
    trans = _attr_text(op, "layout") == "#nvvm.mma_layout<col>"
    shape, element = _attr_text(op, "shape"), _attr_text(op, "eltType")
    if num not in nv.LDMATRIX_NUMS or (shape and "m = 8, n = 8" not in shape) or (element and "b16" not in element):
        raise InterpError(f"'nvvm.ldmatrix' op: only m8n8 b16 with num 1, 2 or 4 is modelled (num = {num}, {shape}, "
                          f"{element})", location)
    if address_space(operation.operands[0].type) != SHARED:
        raise InterpError("'nvvm.ldmatrix' op reads shared memory: its pointer must be !llvm.ptr<3>", location)
    pointer_slot, result = p.slot(operation.operands[0]), p.slot(operation.results[0])
    op_id = p.op_id(op)
    matrix = np.arange(num)[:, None]
    address_lanes = nv.ldmatrix_address_lane(matrix, np.arange(8)[None, :]).reshape(-1)  # (matrix, row) order
    lane = np.arange(WARP)[:, None]
    rows, cols = np.broadcast_arrays(*nv.ldmatrix_element(lane, np.arange(2)[None, :], trans))  # (32, 2) each
    u16 = elem_named("i16")

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        warps = whole_warps(p, op_id, mask, "")
        givers = (np.arange(warps)[:, None] * WARP + address_lanes[None, :]).reshape(-1)  # warps x (num * 8)
        pointers = widen(np.asarray(env[pointer_slot], dtype=np.int64), rt.lanes)[givers]
        data = np.zeros((len(givers), 8), dtype=np.int16)
        element_offsets = np.arange(8, dtype=np.int64) * nv.LDMATRIX_ELEMENT_BYTES
        for space, offsets, these in shared_places(p, op_id, pointers, givers, nv.LDMATRIX_ROW_BYTES,
                                                   nv.LDMATRIX_ROW_BYTES):
            addresses = offsets[:, None] + element_offsets
            count_banks(p, op_id, space, addresses, givers[these], nv.LDMATRIX_ELEMENT_BYTES, "read")  # a matrix per cycle
            data[these] = space.read(addresses, np.broadcast_to(givers[these][:, None], addresses.shape), u16, rt, op_id)
        matrices = data.view(np.uint16).reshape(warps, num, 8, 8)
        low, high = (matrices[:, :, rows[:, e], cols[:, e]].astype(np.uint32) for e in (0, 1))  # warps x num x 32
        words = (low | (high << 16)).view(np.int32).transpose(0, 2, 1).reshape(rt.lanes, num)
        env[result] = words[:, 0] if num == 1 else Struct([words[:, j] for j in range(num)])

    return run


# ----------------------------------------------------------------------------
# cp.async


class AsyncCopies:
    """Per thread of the batch: groups committed so far, and the copies whose bytes are still in flight:
    (op id, space, units, the thread of each unit, the group each unit's copy belongs to)."""

    def __init__(self, lanes: int) -> None:
        self.committed = np.zeros(lanes, dtype=np.int64)
        self.pending: list[tuple[int, Space, np.ndarray, np.ndarray, np.ndarray]] = []

    @staticmethod
    def of(rt: Any) -> AsyncCopies:
        state = getattr(rt, "cp_async", None)
        if state is None:
            state = rt.cp_async = AsyncCopies(rt.lanes)
        return state

    def issue(self, op_id: int, space: Space, units: np.ndarray, who: np.ndarray) -> None:
        if space.in_flight is None:
            space.in_flight = np.zeros(len(space.writer) if space.track else -(-len(space.bytes) // Space.UNIT) + 1,
                                       dtype=np.int32)
        space.in_flight[units] = op_id + 1
        self.pending.append((op_id, space, units, who, self.committed[who]))

    def wait(self, waiting: np.ndarray, keep: int) -> None:
        """Threads ``waiting`` (a mask) wait until at most their ``keep`` newest groups are pending."""
        still = []
        for op_id, space, units, who, group in self.pending:
            done = waiting[who] & nv.cp_async_retired(self.committed[who], group, keep)
            finished = units[done]
            space.in_flight[finished[space.in_flight[finished] == op_id + 1]] = 0
            space.mark_written(finished, who[done], op_id)  # the data lands now: other threads need a barrier after
            if not done.all():
                still.append((op_id, space, units[~done], who[~done], group[~done]))
        self.pending = still


@handles("nvvm.cp.async.shared.global")
def compile_cp_async(p: Program, op: Any) -> Any:
    operation = op.operation
    location = operation.location
    size = _int_attr(op, "size")
    modifier = _enum(op, "modifier")
    if size not in nv.CP_ASYNC_SIZES.get(modifier, ()):
        raise InterpError(f"'nvvm.cp.async.shared.global' op: cp.async.{modifier} copies "
                          f"{' or '.join(map(str, nv.CP_ASYNC_SIZES.get(modifier, ())))} bytes, not {size}", location)
    dst_slot, src_slot = p.slot(operation.operands[0]), p.slot(operation.operands[1])
    src_size_slot = p.slot(operation.operands[2]) if len(operation.operands) > 2 else None
    op_id = p.op_id(op)
    halves = size // 2
    byte = np.arange(size, dtype=np.int64)
    i8, i16 = elem_named("i8"), elem_named("i16")

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        lanes = rt.active_lanes(mask)
        if not lanes.size:
            return
        dst = widen(np.asarray(env[dst_slot], dtype=np.int64), rt.lanes)[lanes]
        src = widen(np.asarray(env[src_slot], dtype=np.int64), rt.lanes)[lanes]
        src_size = (np.full(len(lanes), size, dtype=np.int64) if src_size_slot is None
                    else widen(np.asarray(env[src_size_slot]).astype(np.int64), rt.lanes)[lanes])
        if ((src_size < 0) | (src_size > size)).any():
            bad = int(src_size[(src_size < 0) | (src_size > size)][0])
            raise InterpError(f"'nvvm.cp.async.shared.global' op: src-size {bad} is not in [0, {size}] (cp-size {size}; "
                              "a larger src-size is undefined behaviour)", p.op_location(op_id))
        reading = src_size > 0
        check_aligned(p, op_id, src[reading], size, "global source")
        inside = byte[None, :] < src_size[:, None]
        data = np.zeros((len(lanes), size), dtype=np.int8)
        if inside.any():
            data[inside] = global_read(p, op_id, (src[:, None] + byte)[inside], i8)
        words = np.ascontiguousarray(data).view(np.int16)  # (lanes, size / 2)
        state = AsyncCopies.of(rt)
        for space, offsets, these in shared_places(p, op_id, dst, lanes, size, size):
            addresses = offsets[:, None] + np.arange(halves, dtype=np.int64) * 2
            who = np.broadcast_to(lanes[these][:, None], addresses.shape)
            count_banks(p, op_id, space, addresses, lanes[these], 2, "write")
            space.write(addresses, who, words[these], i16, rt, op_id)
            state.issue(op_id, space, *space._units(addresses.reshape(-1), who.reshape(-1), 2))

    return run


@handles("nvvm.cp.async.commit.group")
def compile_commit_group(p: Program, op: Any) -> Any:
    def run(env: list, mask: Any) -> None:
        rt = p.rt
        AsyncCopies.of(rt).committed[rt.active_lanes(mask)] += 1

    return run


@handles("nvvm.cp.async.wait.group")
def compile_wait_group(p: Program, op: Any) -> Any:
    keep = _int_attr(op, "n")

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        state = getattr(rt, "cp_async", None)
        if state is not None:
            state.wait(np.ones(rt.lanes, dtype=bool) if mask is None else mask, keep)

    return run
