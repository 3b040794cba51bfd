"""Simulated memories: global device memory, LDS with race detection, private registers.

Global memory (:class:`Device`) is one byte pool. Allocations start at
``BASE`` (so small integers and null are never mapped), are 256-byte aligned
and separated by unmapped gaps of ``GAP`` bytes, so a read running past an
allocation, or through a null page pointer, is an error naming the address.

LDS and private memory are :class:`Space` byte arrays, one per buffer and batch
of workgroups (a lane's buffer starts at ``lane_base``). An LDS space records, per
2-byte unit, the thread that last wrote it and the thread(s) that read it since
the last barrier: a read of a unit written by another thread, or a write over a
unit another thread read or wrote, is reported with both ops.

The interpreter simulates at most ``MEMORY_LIMIT`` bytes (global memory, and
LDS and private memory in all their copies); a larger allocation is an
:class:`InterpError` naming the bytes and the limit, before anything is allocated.

Values on the device are stored in their storage dtype (bf16 as uint16 bits);
:class:`Elem` converts between storage and the dtype the interpreter computes in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from pagedir.reference import FP8_FORMATS, bf16_bits, bf16_values, fp8_bits, fp8_values, round_fp8

BASE = 1 << 32
ALIGN = 256
GAP = 4096
#: Bytes of simulated memory in all: the pools cost about five times that in host memory.
MEMORY_LIMIT = 1 << 28


class InterpError(Exception):
    """A program error found while executing (unmapped address, race, unsupported op).

    ``location`` is an ``mlir.ir.Location`` (or None); :meth:`format` gives
    ``file:line:col: error: message`` as mlir-opt prints diagnostics.
    """

    def __init__(self, message: str, location: Any = None):
        super().__init__(message)
        self.message = message
        self.location = location

    def where(self) -> str:
        from pagedir.diagnostics import file_position

        if self.location is None:
            return "<unknown>:0"
        file, line, col = file_position(self.location)
        return f"{file}:{line}:{col}" if file is not None else "<unknown>:0"

    def format(self) -> str:
        return f"{self.where()}: error: {self.message}"

    def __str__(self) -> str:
        return self.format() if self.location is not None else self.message


def check_memory_limit(what: str, nbytes: int, in_use: int = 0, location: Any = None) -> None:
    """InterpError when ``nbytes`` more (``in_use`` already allocated) exceed MEMORY_LIMIT."""
    if nbytes + in_use > MEMORY_LIMIT:
        held = f" ({in_use} bytes already allocated)" if in_use else ""
        raise InterpError(f"{what}: {nbytes} bytes{held} exceed the interpreter's memory limit of {MEMORY_LIMIT} bytes",
                          location)


# ----------------------------------------------------------------------------
# Element types


@dataclass(frozen=True)
class Elem:
    """A scalar type: how it is stored in memory and computed with."""

    name: str
    storage: np.dtype
    compute: np.dtype

    @property
    def size(self) -> int:
        return self.storage.itemsize

    def to_compute(self, stored: np.ndarray) -> np.ndarray:
        if self.name == "bf16":
            return bf16_values(stored)
        if self.name in FP8_FORMATS:
            return fp8_values(stored, self.name)
        return stored

    def to_storage(self, values: np.ndarray) -> np.ndarray:
        if self.name == "bf16":
            return bf16_bits(np.asarray(values, dtype=np.float32))
        if self.name in FP8_FORMATS:
            return fp8_bits(values, self.name)
        return np.asarray(values).astype(self.storage, copy=False)

    def round(self, values: np.ndarray) -> np.ndarray:
        """Computed values rounded to this type (bf16 and fp8 results computed in f32)."""
        if self.name == "bf16":
            return bf16_values(bf16_bits(values))
        if self.name in FP8_FORMATS:
            return round_fp8(values, self.name)
        return values


_ELEMS = {
    "f16": Elem("f16", np.dtype(np.float16), np.dtype(np.float16)),
    "f32": Elem("f32", np.dtype(np.float32), np.dtype(np.float32)),
    "f64": Elem("f64", np.dtype(np.float64), np.dtype(np.float64)),
    "bf16": Elem("bf16", np.dtype(np.uint16), np.dtype(np.float32)),
    # fp8 lives as uint8 bit patterns, computed in float32 (decoded exactly by reference.fp8_values)
    **{name: Elem(name, np.dtype(np.uint8), np.dtype(np.float32)) for name in FP8_FORMATS},
    "i1": Elem("i1", np.dtype(np.bool_), np.dtype(np.bool_)),
    "i8": Elem("i8", np.dtype(np.int8), np.dtype(np.int8)),
    "i16": Elem("i16", np.dtype(np.int16), np.dtype(np.int16)),
    "i32": Elem("i32", np.dtype(np.int32), np.dtype(np.int32)),
    "i64": Elem("i64", np.dtype(np.int64), np.dtype(np.int64)),
    "index": Elem("index", np.dtype(np.int64), np.dtype(np.int64)),
}


def elem_named(name: str) -> Elem:
    try:
        return _ELEMS[name]
    except KeyError:
        raise InterpError(f"unsupported element type {name}") from None


def storage_array(values: Any, elem: Elem) -> np.ndarray:
    """A host array converted to how ``elem`` is stored (bf16 floats -> bits; ml_dtypes bf16 -> bits)."""
    array = np.asarray(values)
    if elem.name == "bf16":
        return bf16_bits(array)
    if elem.name in FP8_FORMATS and array.dtype != np.uint8:  # uint8 arrays are taken as bit patterns
        return fp8_bits(array, elem.name)
    return array.astype(elem.storage, copy=False)


# ----------------------------------------------------------------------------
# Global memory


class DeviceArray:
    """An allocation in a :class:`Device`: ``address`` (int) and ``read()``."""

    def __init__(self, device: Device, address: int, shape: tuple[int, ...], dtype: np.dtype):
        self.device = device
        self.address = int(address)
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def read(self) -> np.ndarray:
        """A copy of the contents, in the dtype it was uploaded with."""
        start = self.address - BASE
        raw = self.device._bytes[start : start + self.nbytes]
        return raw.view(self.dtype).reshape(self.shape).copy()

    def write(self, array: Any) -> None:
        data = np.ascontiguousarray(np.asarray(array).astype(self.dtype, copy=False)).reshape(-1)
        if data.nbytes != self.nbytes:
            raise ValueError(f"writing {data.nbytes} bytes into an allocation of {self.nbytes}")
        start = self.address - BASE
        self.device._bytes[start : start + self.nbytes] = data.view(np.uint8)

    def __repr__(self) -> str:
        return f"DeviceArray(address={self.address:#x}, shape={self.shape}, dtype={self.dtype})"


class Device:
    """Simulated global memory: a pool of allocations at device byte addresses."""

    def __init__(self) -> None:
        self._bytes = np.zeros(1 << 16, dtype=np.uint8)
        self._owner = np.zeros(1 << 16, dtype=np.int32)  # allocation number + 1; 0 = unmapped
        self._top = 0
        self.arrays: list[DeviceArray] = []

    def _grow(self, needed: int) -> None:
        size = len(self._bytes)
        if needed <= size:
            return
        while size < needed:
            size *= 2
        grown = np.zeros(size, dtype=np.uint8)
        grown[: len(self._bytes)] = self._bytes
        owner = np.zeros(size, dtype=np.int32)
        owner[: len(self._owner)] = self._owner
        self._bytes, self._owner = grown, owner

    def allocate(self, shape: tuple[int, ...], dtype: Any, what: str = "an allocation", location: Any = None) -> DeviceArray:
        dtype = np.dtype(dtype)
        count = 1
        for extent in shape:  # Python integers: a product of huge extents must not wrap around
            count *= int(extent)
        nbytes = max(1, count * dtype.itemsize)
        start = -(-self._top // ALIGN) * ALIGN
        check_memory_limit(what, nbytes, start, location)
        self._grow(start + nbytes + GAP)
        self._owner[start : start + nbytes] = len(self.arrays) + 1
        self._top = start + nbytes + GAP
        array = DeviceArray(self, BASE + start, tuple(shape), dtype)
        self.arrays.append(array)
        return array

    def upload(self, array: Any) -> DeviceArray:
        """Copy a host array into a new allocation (bf16 as ml_dtypes arrays is stored as uint16 bits)."""
        array = np.asarray(array)
        if array.dtype.name == "bfloat16":
            array = array.view(np.uint16)
        allocation = self.allocate(array.shape, array.dtype)
        allocation.write(array)
        return allocation

    # Accesses from the interpreter: ``addresses`` are absolute byte addresses (any shape).

    def check(self, addresses: np.ndarray, nbytes: int, what: Callable[[], str], location: Any) -> np.ndarray:
        """Offsets into the pool of ``addresses``; every byte must lie in one allocation."""
        offsets = np.asarray(addresses, dtype=np.int64) - BASE
        limit = len(self._owner) - nbytes
        inside = (offsets >= 0) & (offsets <= limit)
        owner_first = np.where(inside, self._owner[np.clip(offsets, 0, limit)], 0)
        if nbytes > 1:
            owner_last = np.where(inside, self._owner[np.clip(offsets + nbytes - 1, 0, limit + nbytes - 1)], 0)
        else:
            owner_last = owner_first
        bad = (owner_first == 0) | (owner_last != owner_first)
        if bad.any():
            address = int(np.asarray(addresses, dtype=np.int64)[bad].reshape(-1)[0])
            raise InterpError(f"{what()} reads unmapped device address {address:#x} ({nbytes} bytes){self.describe(address)}", location)
        return offsets

    def describe(self, address: int) -> str:
        if address == 0:
            return ": a null pointer"
        if address < BASE:
            return ": below every allocation (a null page pointer plus an offset?)"
        for array in reversed(self.arrays):
            if array.address <= address:
                end = array.address + array.nbytes
                if address < end:
                    return f": crosses the end of the allocation at {array.address:#x} ({array.nbytes} bytes)"
                return f": {address - end} bytes past the end of the allocation at {array.address:#x} ({array.nbytes} bytes)"
        return ""

    def read(self, addresses: np.ndarray, elem: Elem, what: Callable[[], str], location: Any) -> np.ndarray:
        """Stored values of type ``elem`` at ``addresses`` (same shape as ``addresses``)."""
        offsets = self.check(addresses, elem.size, what, location)
        return gather(self._bytes, offsets, elem.storage)

    def write(self, addresses: np.ndarray, values: np.ndarray, elem: Elem, what: Callable[[], str], location: Any) -> None:
        offsets = self.check(addresses, elem.size, lambda: what().replace(" reads", " writes"), location)
        scatter(self._bytes, offsets, np.asarray(values, dtype=elem.storage))


def gather(buffer: np.ndarray, offsets: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Values of ``dtype`` at byte ``offsets`` of a uint8 ``buffer``."""
    size = dtype.itemsize
    usable = len(buffer) - len(buffer) % size
    if size == 1 or not (offsets % size).any():
        return buffer[:usable].view(dtype)[offsets // size]
    byte_index = offsets[..., None] + np.arange(size)
    return np.ascontiguousarray(buffer[byte_index]).view(dtype)[..., 0]


def scatter(buffer: np.ndarray, offsets: np.ndarray, values: np.ndarray) -> None:
    dtype = values.dtype
    size = dtype.itemsize
    values = np.broadcast_to(values, offsets.shape)
    usable = len(buffer) - len(buffer) % size
    if size == 1 or not (offsets % size).any():
        buffer[:usable].view(dtype)[offsets // size] = values
        return
    byte_index = offsets[..., None] + np.arange(size)
    buffer[byte_index] = np.ascontiguousarray(values)[..., None].view(np.uint8)


def _rows_view(buffer: np.ndarray, width: int, aligned: bool) -> np.ndarray:
    """``buffer`` as rows of ``width`` bytes (numpy void items): one row per ``width`` bytes when
    ``aligned``, else one starting at every byte (a strided view, no copy)."""
    row = np.dtype((np.void, width))
    if aligned:
        return buffer[: len(buffer) - len(buffer) % width].view(row)
    return np.ndarray(shape=(max(0, len(buffer) - width + 1),), dtype=row, buffer=buffer, strides=(1,))


def gather_rows(buffer: np.ndarray, starts: np.ndarray, count: int, dtype: np.dtype, views: dict | None = None) -> np.ndarray:
    """``count`` consecutive values of ``dtype`` from each byte offset in ``starts`` (1-D): (len(starts), count).

    The same values as :func:`gather` of ``starts[:, None] + arange(count) * itemsize``, moved as one
    row per start, which costs a fraction of an element-wise gather. ``views`` caches the row views
    of ``buffer``."""
    width = count * dtype.itemsize
    aligned = not (starts % width).any()
    key = (width, aligned)
    view = views.get(key) if views is not None else None
    if view is None:
        view = _rows_view(buffer, width, aligned)
        if views is not None:
            views[key] = view
    rows = view[starts // width if aligned else starts]
    return rows.view(dtype).reshape(len(starts), count)


def scatter_rows(buffer: np.ndarray, starts: np.ndarray, values: np.ndarray) -> None:
    """Store row ``i`` of ``values`` (n, count) at byte offset ``starts[i]`` (the inverse of :func:`gather_rows`)."""
    values = np.ascontiguousarray(np.broadcast_to(values, (len(starts), values.shape[-1])))
    width = values.shape[1] * values.dtype.itemsize
    aligned = not (starts % width).any()
    row = np.dtype((np.void, width))
    _rows_view(buffer, width, aligned)[starts // width if aligned else starts] = values.view(row).reshape(-1)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


# ----------------------------------------------------------------------------
# LDS and private memory


class Space:
    """One LDS or private buffer for a batch of lanes: ``lanes_per_copy`` lanes share a copy.

    LDS: one copy per workgroup (``lanes_per_copy`` = block size); private: one
    per lane. ``lane_base`` is each lane's byte offset of its copy.
    """

    UNIT = 1  # race detection granularity in bytes: fp8 stores of two threads may share a 2-byte unit

    def __init__(self, kind: str, nbytes: int, num_lanes: int, lanes_per_copy: int, track: bool, name: str,
                 location: Any = None):
        copies = -(-num_lanes // lanes_per_copy)
        check_memory_limit(f"{name} ({copies} copies)", copies * nbytes, location=location)
        self.kind = kind
        self.name = name
        self.nbytes = nbytes
        self.bytes = np.full(copies * nbytes, 0xFF, dtype=np.uint8)  # uninitialised memory reads as NaN / -1
        self.lane_base = (np.arange(num_lanes, dtype=np.int64) // lanes_per_copy) * nbytes
        self.row_views: dict = {}  # views of ``bytes`` as rows, for gather_rows
        self.track = track
        if track:
            units = -(-len(self.bytes) // self.UNIT) + 1
            # Lane numbers of a batch (or -1 none, -2 several, -3 the workgroup) fit 32 bits.
            self.writer = np.full(units, -1, dtype=np.int32)
            self.writer_op = np.zeros(units, dtype=np.int32)
            self.reader = np.full(units, -1, dtype=np.int32)
            self.reader_op = np.zeros(units, dtype=np.int32)
            self.written = False  # a write since the last barrier: reads check the writers
            self.written_bytes = (0, 0)  # [first, end) of the bytes written since the last barrier (or more)
            self.read_since = False  # reader holds reads since the last barrier
            # Reads since the last barrier not yet merged into ``reader``: only a write needs them,
            # so a barrier usually drops them unmerged (most LDS traffic is reads between barriers).
            self.pending: list[tuple] = []
        # LDS bytes a direct-to-LDS load (ops_lds_dma) writes that its wave has not waited for yet: per
        # unit, the load's op id + 1 (0: none); any access of them is a race (ops_lds_dma.check_in_flight).
        self.in_flight: np.ndarray | None = None

    #: Deferred reads merged at once past this many (bounds the memory they hold).
    MAX_PENDING = 512

    def barrier(self, copies: np.ndarray | None = None) -> None:
        """Forget the accesses since the last barrier, of every copy or of ``copies`` (workgroups) only."""
        if not self.track:
            return
        if copies is not None:
            self._merge_pending()
            for copy in copies.tolist():  # the units starting inside the copy's bytes
                first, end = -(-copy * self.nbytes // self.UNIT), -(-(copy + 1) * self.nbytes // self.UNIT)
                self.writer[first:end] = -1
                self.reader[first:end] = -1
            return
        if self.written:
            self.writer.fill(-1)
            self.written = False
        if self.read_since:
            self.reader.fill(-1)
            self.read_since = False
        self.pending.clear()

    def read(self, offsets: np.ndarray, lanes: np.ndarray, elem: Elem, tracker: Any, op_id: int) -> np.ndarray:
        if self.in_flight is not None:
            tracker.check_in_flight(self, *self._units(offsets, lanes, elem.size), op_id, "reads")
        if self.track:
            self._read_units(lambda: self._units(offsets, lanes, elem.size), tracker, op_id,
                             lambda: (int(offsets.min()), int(offsets.max()) + elem.size) if offsets.size else (0, 0))
        return gather(self.bytes, offsets, elem.storage)

    def write(self, offsets: np.ndarray, lanes: np.ndarray, values: np.ndarray, elem: Elem, tracker: Any, op_id: int) -> None:
        if self.in_flight is not None:
            tracker.check_in_flight(self, *self._units(offsets, lanes, elem.size), op_id, "writes")
        if self.track:
            self._record(*self._units(offsets, lanes, elem.size), tracker, op_id, write=True)
        scatter(self.bytes, offsets, np.asarray(values, dtype=elem.storage))

    def read_rows(self, starts: np.ndarray, count: int, lanes: np.ndarray | None, elem: Elem, tracker: Any, op_id: int,
                  active: np.ndarray | None = None) -> np.ndarray:
        """``count`` consecutive elements from each byte offset in ``starts`` (1-D, one per lane in ``lanes``):
        the same as :meth:`read` of ``starts[:, None] + arange(count) * elem.size``, moved row by row.

        With ``active`` (a mask over every lane, ``starts`` one per lane, ``lanes`` None) all rows are
        read but only the active lanes count as readers. The arrays must stay unchanged after the call:
        reads are recorded lazily."""
        if self.in_flight is not None:
            on = np.arange(len(starts)) if active is None else np.nonzero(active)[0]
            who = lanes if active is None else on
            tracker.check_in_flight(self, *self._row_units(starts[on] if active is not None else starts, who, count, elem.size),
                                    op_id, "reads")
        if self.track:
            if active is None:
                units = lambda: self._row_units(starts, lanes, count, elem.size)  # noqa: E731
            else:
                def units() -> tuple[np.ndarray, np.ndarray]:
                    on = np.nonzero(active)[0]
                    return self._row_units(starts[on], on, count, elem.size)
            self._read_units(units, tracker, op_id, lambda: (int(starts.min()), int(starts.max()) + count * elem.size))
        return gather_rows(self.bytes, starts, count, elem.storage, self.row_views)

    def write_rows(self, starts: np.ndarray, lanes: np.ndarray, values: np.ndarray, elem: Elem, tracker: Any, op_id: int) -> None:
        """Row ``i`` of ``values`` (n, count) at byte offset ``starts[i]`` by lane ``lanes[i]``."""
        if self.in_flight is not None:
            tracker.check_in_flight(self, *self._row_units(starts, lanes, values.shape[-1], elem.size), op_id, "writes")
        if self.track:
            self._record(*self._row_units(starts, lanes, values.shape[-1], elem.size), tracker, op_id, write=True)
        scatter_rows(self.bytes, starts, np.asarray(values, dtype=elem.storage))

    def _units(self, offsets: np.ndarray, lanes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(units, lane of each) an access of ``size`` bytes per offset by ``lanes`` touches."""
        span = max(1, size // self.UNIT) if size % self.UNIT == 0 else -(-size // self.UNIT) + 1
        first = offsets.reshape(-1) // self.UNIT
        units = first[:, None] + np.arange(span)
        # only the units the bytes [offset, offset + size) touch: a 1-byte access (fp8) is one unit, not two
        units = np.minimum(units, ((offsets.reshape(-1) + size - 1) // self.UNIT)[:, None])
        who = np.broadcast_to(lanes.reshape(-1)[:, None], units.shape).reshape(-1)
        return units.reshape(-1), who

    def _row_units(self, starts: np.ndarray, lanes: np.ndarray, count: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_units` of the elements of rows (the same units in the same order)."""
        if count == 1 or size % self.UNIT or (starts % self.UNIT).any():
            return self._units(starts[:, None] + np.arange(count) * size, np.broadcast_to(lanes[:, None], (len(lanes), count)), size)
        return self._units(starts, lanes, count * size)

    def _read_units(self, units: Callable[[], tuple], tracker: Any, op_id: int, extent: Callable[[], tuple]) -> None:
        """A read checks the writes since the last barrier now (unless its bytes, ``extent()`` = [first, end),
        miss every byte written since); it is recorded as a reader lazily."""
        if self.written and _overlap(extent(), self.written_bytes):
            self._check_writers(*units(), tracker, op_id, write=False)
        self.pending.append((units, op_id))
        if len(self.pending) > self.MAX_PENDING:
            self._merge_pending()

    def _merge_pending(self) -> None:
        pending, self.pending = self.pending, []
        for units, op_id in pending:
            self._merge_readers(*units(), op_id)

    def _check_writers(self, units: np.ndarray, who: np.ndarray, tracker: Any, op_id: int, write: bool) -> None:
        writer = self.writer[units]
        conflict = (writer >= 0) & (writer != who)
        if conflict.any():
            i = int(np.argmax(conflict))
            tracker.race(self, units[i], int(who[i]), op_id, "writes" if write else "reads",
                         int(writer[i]), int(self.writer_op[units[i]]), "wrote")

    def _record(self, units: np.ndarray, who: np.ndarray, tracker: Any, op_id: int, write: bool) -> None:
        """Check an access of ``units`` by lanes ``who`` against the accesses since the last barrier."""
        if write and self.pending:
            self._merge_pending()
        if write or self.written:
            self._check_writers(units, who, tracker, op_id, write)
        if write:
            touched = (int(units.min()) * self.UNIT, (int(units.max()) + 1) * self.UNIT) if units.size else (0, 0)
            if self.written:
                touched = (min(touched[0], self.written_bytes[0]), max(touched[1], self.written_bytes[1]))
            self.written, self.written_bytes = True, touched
            reader = self.reader[units]
            conflict = (reader != -1) & (reader != who)
            if conflict.any():
                i = int(np.argmax(conflict))
                other = int(reader[i])
                tracker.race(self, units[i], int(who[i]), op_id, "writes", other, int(self.reader_op[units[i]]), "read")
            self.writer[units] = who
            back = self.writer[units]
            clash = back != who
            if clash.any():
                i = int(np.argmax(clash))
                tracker.race(self, units[i], int(who[i]), op_id, "writes", int(back[i]), op_id, "wrote")
            self.writer_op[units] = op_id
            return
        self._merge_readers(units, who, op_id)

    def mark_written(self, units: np.ndarray, who: np.ndarray, op_id: int) -> None:
        """Record ``units`` as written by lanes ``who`` now, without checking them against the accesses since the
        last barrier (an asynchronous copy whose data lands when its thread waits for it: the copy was checked
        when it was issued, and the other threads must pass a barrier after the wait before they read it)."""
        if not self.track or not units.size:
            return
        self.writer[units] = who
        self.writer_op[units] = op_id
        touched = (int(units.min()) * self.UNIT, (int(units.max()) + 1) * self.UNIT)
        if self.written:
            touched = (min(touched[0], self.written_bytes[0]), max(touched[1], self.written_bytes[1]))
        self.written, self.written_bytes = True, touched

    def _merge_readers(self, units: np.ndarray, who: np.ndarray, op_id: int) -> None:
        """Record lanes ``who`` as readers of ``units`` (-2 where several lanes read a unit)."""
        self.read_since = True
        previous = self.reader[units]
        merged = np.where((previous == -1) | (previous == who), who, -2)
        self.reader[units] = merged
        back = self.reader[units]
        self.reader[units[back != merged]] = -2
        self.reader_op[units] = op_id
