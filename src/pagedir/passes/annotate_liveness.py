"""rock-annotate-liveness: mark the live ranges of LDS buffers with rock.live_in/rock.live_out.

Mirrors rocMLIR's AnnotateLiveness. For every workgroup-space ``rock.alloc`` of
a kernel function (``rock.kernel``), the ops that read or write it, through any
chain of views, are listed in program order (a pre-order walk, so ops nested in
``scf.for``/``scf.if``/stages count where they appear). Effects come from the
rock op declarations and the table of upstream ops in ``dialect/effects.py``;
an op using the buffer whose effects are unknown is an error, never a guess.

A live range is one or more writes followed by one or more reads; a write after
a read opens the next range. ``rock.live_in`` goes right before the first write
of a range and ``rock.live_out`` right after its last read. Buffers that are
never accessed get nothing. Annotations already present on a buffer are
replaced, so the pass can run again after the IR changed.

```mlir
%a = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
%v = memref.view %a[%c0][] : ... to memref<256xf32, #gpu.address_space<workgroup>>
memref.store %x, %v[%i] : memref<256xf32, #gpu.address_space<workgroup>>
%y = memref.load %v[%j] : memref<256xf32, #gpu.address_space<workgroup>>
// becomes
"rock.live_in"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
memref.store %x, %v[%i] : ...
%y = memref.load %v[%j] : ...
"rock.live_out"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
```

Errors, reported on the alloc: a read with no earlier write in its range (``read
before write``), writes never read at the end of the function (``found a non
closed read-write pattern``), and one op both reading and writing the buffer
(a range cannot start and end at the same op).

Loops. When the first write and the last read of a range sit on different sides
of a loop boundary (a write before ``scf.for`` read inside it, or a write inside
read after it), the marker inside the loop would bound only one iteration,
while the data is live across all of them. Such a marker is moved out to the
outermost loop that separates the two, so the range covers the whole loop;
ranges of one buffer that then overlap are merged into one.

Not modelled: loop-carried liveness inside one loop body, i.e. a value written
in iteration i and read in iteration i+1 (``for { read A; write A }``). The
scan sees program order only, so that pattern is reported as a non closed
read-write pattern (or, when a write before the loop feeds the first read, it
folds into a range covering the loop). This is safe for the IR our pipeline
produces (docs/levels.md): every LDS tile and page-pointer buffer is written and
then read within one iteration of the KV loop, with ``rock.lds_barrier`` between
the stages, so no value in LDS crosses an iteration.

Not modelled either: a write that may not run. A write inside ``scf.if`` opens
a range as if it always ran, but on the path that skips it the reads that follow
see the older value (of an earlier range, or of the previous iteration when the
write is in a loop), which rock-reuse-lds may then have overwritten with another
buffer. Our pipeline's one such write (the page pointers, stored by the threads
that hold one) runs in every iteration on some threads of the workgroup, which
this pass cannot tell from a condition that skips it on all of them.

No options.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlir.ir as ir

from pagedir.diagnostics import file_position
from pagedir.dialect import rock
from pagedir.dialect.effects import UnknownEffects, accesses, walk_ops
from pagedir.dialect.types import is_lds
from pagedir.passes.base import Pass, kernel_functions

LOOP_OPS = frozenset({"scf.for", "scf.while", "scf.parallel", "scf.forall", "affine.for", "affine.parallel"})
MARKERS = frozenset({"rock.live_in", "rock.live_out"})


class AnnotateLivenessPass(Pass):
    argument = "rock-annotate-liveness"
    summary = "Mark the live ranges of LDS buffers with rock.live_in/rock.live_out"

    def run(self, module: ir.Operation) -> bool:
        ok = True
        for func in kernel_functions(module):
            order = ProgramOrder(func)
            for alloc in lds_allocs(func):
                ok = annotate(alloc, func, order) and ok
        return ok


def lds_allocs(func: ir.Operation) -> list[ir.Operation]:
    """Workgroup-space ``rock.alloc`` ops of ``func`` in program order."""
    found: list[ir.Operation] = []
    walk_ops(func, lambda op: found.append(op) if op.name == "rock.alloc" and is_lds(op.results[0].type) else None)
    return found


class ProgramOrder:
    """Pre-order position of every op of a function, and the last position inside each op."""

    def __init__(self, func: ir.Operation):
        self.position: dict[ir.Operation, int] = {}
        self.last_inside: dict[ir.Operation, int] = {}
        self._number(func)

    def _number(self, root: ir.Operation) -> int:
        last = self.position.get(root, -1)
        for region in root.regions:
            for block in region.blocks:
                for op in block.operations:
                    op = op.operation
                    self.position[op] = len(self.position)
                    last = self._number(op)
        self.last_inside[root] = last
        return last

    def contains(self, outer: ir.Operation, inner: ir.Operation) -> bool:
        return self.position.get(outer, -1) <= self.position[inner] <= self.last_inside[outer]


@dataclass
class LiveRange:
    """Ops bounding one range: ``live_in`` goes before ``start``, ``live_out`` after ``end``."""

    start: ir.Operation
    end: ir.Operation


def annotate(alloc: ir.Operation, func: ir.Operation, order: ProgramOrder) -> bool:
    buffer = alloc.results[0]
    try:
        found = list(accesses(buffer, func))
    except UnknownEffects as err:
        err.op.location.emit_error(
            f"'{err.op.name}' op uses LDS buffer {buffer.get_name()} but its memory effects are unknown"
        )
        return False
    ranges = live_ranges(alloc, found)
    if ranges is None:
        return False
    erase_markers(buffer)
    for live_range in merge_overlapping([widen_across_loops(r, order) for r in ranges], order):
        rock.live_in(buffer, loc=alloc.location, ip=ir.InsertionPoint(live_range.start))
        rock.live_out(buffer, loc=alloc.location, ip=ir.InsertionPoint.after(live_range.end))
    return True


def live_ranges(alloc: ir.Operation, found: list) -> list[LiveRange] | None:
    """The write...read ranges of the access list, or None after reporting a malformed pattern."""
    name = alloc.results[0].get_name()
    ranges: list[LiveRange] = []
    first_write = last_read = None
    for access in found:
        if access.reads and access.writes:
            alloc.location.emit_error(
                f"'rock.alloc' op LDS buffer {name} is both read and written by one op, {describe(access.op)}; "
                "a live range cannot start and end at the same op"
            )
            return None
        if access.writes:
            if last_read is not None:
                ranges.append(LiveRange(first_write, last_read))
                first_write = last_read = None
            if first_write is None:
                first_write = access.op
            continue
        if first_write is None:
            alloc.location.emit_error(
                f"'rock.alloc' op read before write: {describe(access.op)} reads LDS buffer {name} "
                "before any write of its live range (reading uninitialized memory)"
            )
            return None
        last_read = access.op
    if first_write is not None and last_read is None:
        alloc.location.emit_error(
            f"'rock.alloc' op found a non closed read-write pattern: LDS buffer {name} is written by "
            f"{describe(first_write)} but never read afterwards"
        )
        return None
    if first_write is not None:
        ranges.append(LiveRange(first_write, last_read))
    return ranges


def widen_across_loops(live_range: LiveRange, order: ProgramOrder) -> LiveRange:
    """Move each end out of the outermost loop that holds it but not the other end."""
    return LiveRange(
        outermost_loop_without(live_range.start, live_range.end, order),
        outermost_loop_without(live_range.end, live_range.start, order),
    )


def outermost_loop_without(op: ir.Operation, other: ir.Operation, order: ProgramOrder) -> ir.Operation:
    chosen = op
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name in LOOP_OPS and not order.contains(parent, other):
            chosen = parent
        parent = parent.parent
    return chosen


def merge_overlapping(ranges: list[LiveRange], order: ProgramOrder) -> list[LiveRange]:
    """Ranges in program order with those that overlap (after widening) joined."""
    merged: list[LiveRange] = []
    for live_range in ranges:
        if merged and order.position[live_range.start] <= order.last_inside[merged[-1].end]:
            if order.last_inside[live_range.end] > order.last_inside[merged[-1].end]:
                merged[-1].end = live_range.end
            continue
        merged.append(live_range)
    return merged


def erase_markers(buffer: ir.Value) -> None:
    for use in list(buffer.uses):
        if use.owner.name in MARKERS:
            use.owner.erase()


def describe(op: ir.Operation) -> str:
    """``'memref.load' at line 12`` (or without the line for ops without a file location)."""
    _, line, _ = file_position(op.location)
    return f"'{op.name}' at line {line}" if line is not None else f"'{op.name}'"
