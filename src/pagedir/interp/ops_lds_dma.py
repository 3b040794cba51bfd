"""Direct global -> LDS loads (``rocdl.raw.ptr.buffer.load.lds``) and the wait for them (``rocdl.s.waitcnt``).

The semantics implemented, from AMD's documentation (MI300 ISA guide, "Global, Scratch and
Buffer loads to LDS"; LLVM's ``llvm.amdgcn.raw.ptr.buffer.load.lds``), not from pagedir's
lowering:

* ``rocdl.raw.ptr.buffer.load.lds %rsrc, %lds, %size, %voffset, %soffset, %offset, %aux``: each
  active lane reads ``size`` bytes from the buffer at ``voffset + offset`` (range-checked against the
  descriptor like any raw buffer load: an out-of-range dword reads 0) plus ``soffset`` and the
  descriptor's base, and the data is written to LDS, not to registers, at
  ``LDS_ADDR = M0 base + inst_offset + lane * size`` where ``lane`` is the lane's number in its wave,
  the M0 base is ``%lds`` (it must be the same in every active lane of a wave: M0 is one scalar
  register) and ``inst_offset`` is ``%offset``. Sizes: 4 bytes (gfx90a, gfx942, gfx950), 12 and 16
  (gfx950 only). 1 and 2 bytes exist on the hardware but are not modelled (an error here).
* The LDS write happens when the load completes, which the issuing wave only knows after an
  ``s_waitcnt`` whose ``vmcnt`` lets no more than N vector memory instructions stay outstanding:
  ``rocdl.s.waitcnt`` (gfx9 encoding of the 16-bit immediate: vmcnt = bits 3:0 and 15:14, expcnt
  6:4, lgkmcnt 11:8) retires every direct-to-LDS load of the wave but the newest N. Only these loads
  are counted, so a wait retires no load the hardware would still have in flight (the model can only
  report a race the hardware might not have, never miss one).
* Until its wave retires it, a load's LDS bytes are *in flight*: any LDS access to them (by any
  thread, the issuing one included) is reported as a race. The interpreter writes the data at issue
  (so values never depend on timing) and records the lane as the writer, so that the other threads
  of the workgroup also need a barrier after the wait before they read it (the usual LDS race rule).

LDS pointers. ``memref.extract_aligned_pointer_as_index`` of an LDS memref gives its byte offset in
the workgroup's LDS tagged with the buffer it lies in (``ops_memory.lds_pointer``): the interpreter keeps
each LDS allocation apart, so a pointer names the allocation in its bits above
:data:`LDS_POINTER_SHIFT` (an LDS offset never reaches them: 160 KiB at most). Arithmetic on the
pointer moves inside the allocation, as on the hardware.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pagedir.interp.buffer_descriptor import BufferResource, components_in_range, descriptor_error
from pagedir.interp.memory import InterpError, Space, elem_named
from pagedir.interp.ops_gpu import chip_family, program_chip
from pagedir.interp.ops_memory import LDS_POINTER_SHIFT, MemRef
from pagedir.interp.simt import Program, handles, widen


def lds_space(rt: Any, pointer: int, where: Any) -> tuple[Space, int]:
    """(allocation, byte offset in it) of an interpreter LDS pointer."""
    tag, offset = pointer >> LDS_POINTER_SHIFT, pointer & ((1 << LDS_POINTER_SHIFT) - 1)
    if not 1 <= tag <= len(rt.lds_spaces):
        raise InterpError(f"LDS pointer {pointer:#x} does not point into an LDS allocation", where)
    return rt.lds_spaces[tag - 1], offset


class Waves:
    """Per wave of the batch: its direct-to-LDS loads in flight, oldest first: (op id, space, units)."""

    def __init__(self) -> None:
        self.in_flight: dict[int, list[tuple[int, Space, np.ndarray]]] = {}

    @staticmethod
    def of(rt: Any) -> Waves:
        waves = getattr(rt, "lds_dma_waves", None)
        if waves is None:
            waves = rt.lds_dma_waves = Waves()
        return waves

    def issue(self, wave: int, op_id: int, space: Space, units: np.ndarray) -> None:
        if space.in_flight is None:
            space.in_flight = np.zeros(len(space.writer) if space.track else -(-len(space.bytes) // Space.UNIT) + 1,
                                       dtype=np.int32)
        space.in_flight[units] = op_id + 1
        self.in_flight.setdefault(wave, []).append((op_id, space, units))

    def wait(self, wave: int, keep: int) -> None:
        """The wave waits until at most ``keep`` of its loads are outstanding: the older ones complete."""
        loads = self.in_flight.get(wave, [])
        done, self.in_flight[wave] = (loads[:-keep], loads[-keep:]) if keep else (loads, [])
        for op_id, space, units in done:
            still = space.in_flight[units] == op_id + 1
            space.in_flight[units[still]] = 0


def wave_ids(p: Program, lanes: np.ndarray) -> np.ndarray:
    """The batch-wide wave number of each lane (waves never span workgroups)."""
    rt, wave = p.rt, p.wave_size
    per_group = -(-rt.block // wave)
    return (lanes // rt.block) * per_group + rt.tid[lanes] // wave


@handles("rocdl.raw.ptr.buffer.load.lds")
def compile_buffer_load_lds(p: Program, op: Any) -> Any:
    operation = op.operation
    rsrc, lds, size, voffset, soffset, offset, _aux = (p.slot(v) for v in operation.operands)
    chip = program_chip(p)
    family = chip_family(p)
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        where = p.op_location(op_id)
        name = "" if chip is None else chip.name
        nbytes = int(np.asarray(env[size]).reshape(-1)[0])
        if chip is None or nbytes not in chip.lds_dma_sizes:  # the sizes per chip: Chip.lds_dma_sizes
            raise InterpError(f"{operation.name}: {nbytes}-byte loads to LDS are not modelled on {name or 'this chip'} "
                              f"(gfx90a/gfx942: 4 bytes, gfx950: 4, 12, 16; RDNA has none)", where)
        r: BufferResource = env[rsrc]
        if why := descriptor_error(r, family):
            raise InterpError(f"{operation.name}: descriptor {why}", where)
        lanes = rt.active_lanes(mask)
        if lanes.size == 0:
            return
        waves = wave_ids(p, lanes)
        base = widen(np.asarray(env[lds], dtype=np.int64), rt.lanes)[lanes]
        first = np.concatenate([[True], waves[1:] != waves[:-1]])
        if (base != np.repeat(base[first], np.diff(np.append(np.nonzero(first)[0], len(lanes))))).any():
            raise InterpError(f"{operation.name}: the LDS base (M0) differs between lanes of one wave", where)
        inst_offset = int(np.asarray(env[offset]).reshape(-1)[0])
        voff = (widen(np.asarray(env[voffset], dtype=np.int64), rt.lanes)[lanes] & 0xFFFFFFFF) + inst_offset
        soff = widen(np.asarray(env[soffset], dtype=np.int64), rt.lanes)[lanes] & 0xFFFFFFFF
        words = np.arange(nbytes // 4, dtype=np.int64) * 4
        lane_r = BufferResource(*(widen(np.atleast_1d(f), rt.lanes)[lanes] for f in (r.base, r.stride, r.num_records, r.flags)))
        inside = components_in_range(lane_r, family, voff, soff, words, 4)
        addresses = (lane_r.base + soff + voff).reshape(-1, 1) + words[None]
        data = global_dwords(p, op_id, addresses, inside)
        lane_in_wave = rt.tid[lanes] % p.wave_size
        for pointer in np.unique(base):
            space, start = lds_space(rt, int(pointer), where)
            these = base == pointer
            at = start + inst_offset + lane_in_wave[these] * nbytes
            if (at < 0).any() or (at + nbytes > space.nbytes).any():
                raise InterpError(f"{operation.name}: LDS bytes [{int(at.min())}, {int(at.max()) + nbytes}) past the "
                                  f"{space.nbytes} bytes of {space.name}", where)
            offsets = (space.lane_base[lanes[these]] + at)[:, None] + words[None]
            land(p, op_id, space, offsets, lanes[these], data[these])

    return run


def global_dwords(p: Program, op_id: int, addresses: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """The device dwords at ``addresses`` where ``inside`` (0 elsewhere, memory untouched: out of range)."""
    out = np.zeros(addresses.shape, dtype=elem_named("i32").storage)
    if inside.any():
        out[inside] = p.rt.device.read(addresses[inside], elem_named("i32"), lambda: p.op_name(op_id), p.op_location(op_id))
    return out


def land(p: Program, op_id: int, space: Space, offsets: np.ndarray, lanes: np.ndarray, words: np.ndarray,
         per_thread: bool = False) -> None:
    """Write the dwords ``words`` (lanes x dwords) of direct-to-LDS loads at the byte ``offsets`` of ``space`` by
    ``lanes``, and keep them in flight for their waves until a wait retires the load; ``per_thread`` (NVIDIA's
    cp.async): for their threads, in the thread's next cp.async group, until a ``cp.async.wait.group``."""
    rt = p.rt
    who = np.broadcast_to(lanes[:, None], offsets.shape).reshape(-1)
    space.write(offsets.reshape(-1), who, words.reshape(-1), elem_named("i32"), rt, op_id)
    units, issuers = space._units(offsets.reshape(-1), who, 4)
    if per_thread:
        from pagedir.interp.ops_nvvm import AsyncCopies

        AsyncCopies.of(rt).issue(op_id, space, units, issuers)
        return
    issuing = wave_ids(p, issuers)
    state = Waves.of(rt)
    for wave in np.unique(issuing):
        state.issue(int(wave), op_id, space, units[issuing == wave])


@handles("rock.global_load_lds")
def compile_global_load_lds(p: Program, op: Any) -> Any:
    """``rock.global_load_lds`` (docs/rock.md): lane l of a wave copies ``bytes`` bytes of its page from element
    ``offset`` (0 when invalid or past the page) to dest element ``dest_offset + l * bytes / element bytes``."""
    from pagedir.interp.ops_rock import segments

    operation = op.operation
    _, offset, dest, dest_offset, valid, page_ptr = (part[0] if part else None for part in segments(op))
    slots = {name: p.slot(v) for name, v in (("offset", offset), ("dest", dest), ("dest_offset", dest_offset),
                                              ("page_ptr", page_ptr))}
    valid_slot = p.slot(valid) if valid is not None else None
    attrs = operation.attributes
    nbytes, page_size = int(attrs["bytes"].value), int(attrs["page_size"].value)
    family = chip_family(p)
    per_thread = family is not None and family.direct_to_lds == "cp.async"  # waited for by cp.async.wait.group
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        where = p.op_location(op_id)
        lanes = rt.active_lanes(mask)
        if lanes.size == 0:
            return
        m: MemRef = env[slots["dest"]]
        size = m.elem.size
        waves = wave_ids(p, lanes)
        base = widen(np.asarray(env[slots["dest_offset"]], dtype=np.int64), rt.lanes)[lanes]
        pointer = widen(np.asarray(env[slots["page_ptr"]], dtype=np.int64), rt.lanes)[lanes]
        for name, value in (("dest_offset", base), ("page_ptr", pointer)):
            for wave in np.unique(waves):
                if np.unique(value[waves == wave]).size > 1:
                    raise InterpError(f"{operation.name}: {name} differs between lanes of one wave", where)
        element = widen(np.asarray(env[slots["offset"]], dtype=np.int64), rt.lanes)[lanes]
        ok = (pointer != 0) & (element >= 0) & (element * size + nbytes <= page_size * size)
        if valid_slot is not None:
            ok &= widen(np.asarray(env[valid_slot]).astype(bool), rt.lanes)[lanes]
        words = np.arange(nbytes // 4, dtype=np.int64) * 4
        addresses = (pointer + element * size)[:, None] + words[None]
        data = global_dwords(p, op_id, addresses, np.broadcast_to(ok[:, None], addresses.shape))
        lane_in_wave = rt.tid[lanes] % p.wave_size
        starts = widen(np.asarray(m.origin, dtype=np.int64), rt.lanes)[lanes] + (base + lane_in_wave * (nbytes // size)) * size
        space = m.space
        if (starts - space.lane_base[lanes] < 0).any() or (starts - space.lane_base[lanes] + nbytes > space.nbytes).any():
            raise InterpError(f"{operation.name}: LDS bytes past the {space.nbytes} bytes of {space.name}", where)
        land(p, op_id, space, starts[:, None] + words[None], lanes, data, per_thread)

    return run


def vmcnt(bitfield: int) -> int:
    """The vmcnt of a gfx9 ``s_waitcnt`` immediate: bits 3:0, and 15:14 above them."""
    return (bitfield & 0xF) | (((bitfield >> 14) & 0x3) << 4)


@handles("rocdl.s.waitcnt")
def compile_waitcnt(p: Program, op: Any) -> Any:
    bitfield = int(op.operation.attributes["bitfield"].value)
    keep = vmcnt(bitfield)
    family = chip_family(p)
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        state = getattr(rt, "lds_dma_waves", None)
        if state is None:
            return
        if family is None or family.waitcnt_encoding != "gfx9":
            raise InterpError("rocdl.s.waitcnt: only the gfx9 (CDNA) encoding is modelled", p.op_location(op_id))
        for wave in np.unique(wave_ids(p, rt.active_lanes(mask))):
            state.wait(int(wave), keep)

    return run
