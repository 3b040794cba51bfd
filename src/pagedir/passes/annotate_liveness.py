"""rock-annotate-liveness: mark the live ranges of LDS buffers with rock.live_in/rock.live_out.

Mirrors rocMLIR's AnnotateLiveness. For every workgroup-space ``rock.alloc`` of
a kernel function (``rock.kernel``), the ops that read or write it, through any
chain of views, are listed in program order (a pre-order walk, so ops nested in
``scf.for``/``scf.if``/stages count where they appear). Effects come from the
rock op declarations and the table of upstream ops in ``dialect/effects.py``;
an op using the buffer whose effects are unknown is an error, never a guess.

A live range runs from a write to the last read of the value it holds.
``rock.live_in`` goes right before the first write of a range and
``rock.live_out`` right after its last read. Buffers that are never accessed
get nothing. Annotations already present on a buffer are replaced, so the pass
can run again after the IR changed.

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

Overwrites. Only a write that surely replaces every byte of the buffer ends the
older value, so only such a *definite overwrite* after a read starts a new
range. Any other write (one that may not run, or that may leave bytes
untouched) is a use of the range open at it: the older value stays live across
it, up to the reads that may still see it. A write is a definite overwrite when:

1. Its *write run* (the outermost op around it, or the write itself, that holds
   no read of the buffer, followed by its sibling ops up to the next that holds
   a read) runs whenever the code around it runs: no ``scf.if``,
   ``scf.index_switch``, ``affine.if`` and no region op other than ``scf.for``,
   ``affine.for`` and ``scf.execute_region`` encloses it, and every region on
   the way has one block (loops are dealt with below). The range then opens
   before the run. Under a conditional, the run must run whenever the innermost
   conditional around it does, and the range it starts must end inside that
   conditional (rock-pipeline's next-tile pointers, written and read under
   ``lb < ub``): on the path that skips the write nothing of the range reads the
   buffer. A range that leaves the conditional makes the write an ordinary one.
2. The writes of the run provably cover every byte of the alloc, the
   threads ``0 .. rock.block_size - 1`` of the workgroup together. The pass
   proves it by evaluating the run for every thread at once: integer
   ``arith`` ops (in their own width, wrapping as the hardware does; unsigned
   ops and predicates on the unsigned bits), ``affine.apply``,
   ``rock.workitem_id`` (from the kernel's ``rock.block_size``), ``scf.for``
   with constant bounds (every iteration, ``unsigned`` ones compared so) and
   ``scf.if`` (each branch for the threads and iterations whose condition
   holds). A write counts when its bytes are known: ``memref.store`` and 1-D
   ``vector.store`` through the alloc or a ``memref.view`` of it (constant byte
   shift, static identity layout) with evaluated indices, and the whole operand
   of ``memref.copy`` (target) or of a rock op operand declared ``overwrites``
   (and ``rock.global_load_lds``'s lanes' bytes, by the kernel's wave size)
   (``rock.blockwise_load_tile``'s ``dest``). Anything the pass cannot evaluate
   (a loop bound, condition or index depending on a function argument, a loaded
   value, an outer loop's induction variable) leaves its writes uncounted.

Nothing is trusted beyond the op declarations: what our own lowerings emit
(page-pointer slots stored under ``tid < num_pages``, tile vectors stored by
every thread in rounds) is proved the same way as hand-written IR. Covering the
buffer together is enough because a race-free kernel reads another thread's
write only after a barrier that follows it: every later read sees a byte of
this run (or of a later write), none of the older value.

Ranges are then settled until nothing changes:

* Loops. When the first write and the last read of a range sit on different
  sides of a loop boundary, the marker inside the loop would bound only one
  iteration while the data is live across all of them: it moves out to the
  outermost loop that separates the two. A start moved out of a loop no longer
  overwrites (the loop may run zero times).
* A range whose start does not overwrite needs the value before it: it joins
  the range before it. The first range of a buffer instead opens before every
  loop around its start (the back edge brings the previous iteration's value
  to it) and before every conditional around its start that does not hold its
  end (the path skipping the write reads what was there before).
* Ranges of one buffer that overlap are merged into one.

Errors, reported on the alloc: a read with no earlier write in its range (``read
before write``), writes after the buffer's last read (``found a non closed
read-write pattern``), and one op both reading and writing the buffer (a range
cannot start and end at the same op).

Values carried over a back edge (``write A; for { read A; ...; write A }``: a
tile loaded for the next iteration into a second LDS buffer): a write inside a
loop whose body reads the buffer before the write and not after it feeds the
next iteration's reads. It neither ends the range open at it nor starts one,
and that range lasts to the end of the loop, so nothing else takes the bytes
while the loop runs. A carried write with no range open before it (no write
before the loop) is a read before write, as the first iteration reads nothing.

No options.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import mlir.ir as ir
import numpy as np

from pagedir.arch import MAX_WORKGROUP_SIZE, ChipError, kernel_chip
from pagedir.diagnostics import file_position
from pagedir.dialect import rock
from pagedir.dialect.effects import Access, UnknownEffects, accesses, overwritten_operands, walk_ops
from pagedir.dialect.types import element_bytes, is_lds, memref_bytes, strides_and_offset
from pagedir.passes.base import Pass, kernel_functions
from pagedir.passes.ir_utils import ProgramOrder

LOOP_OPS = frozenset({"scf.for", "scf.while", "scf.parallel", "scf.forall", "affine.for", "affine.parallel"})
CONDITIONAL_OPS = frozenset({"scf.if", "scf.index_switch", "affine.if"})
#: Region ops whose body runs whenever they do (a loop body may run zero times, but the
#: loop rule of the settling takes care of a range leaving a loop).
RUN_WITH_PARENT_OPS = frozenset({"scf.for", "affine.for", "scf.execute_region"})
MARKERS = frozenset({"rock.live_in", "rock.live_out"})
#: Evaluating a write run stops counting (conservatively) beyond this many lane-iterations.
EVALUATION_LIMIT = 1 << 20


class AnnotateLivenessPass(Pass):
    argument = "rock-annotate-liveness"
    summary = "Mark the live ranges of LDS buffers with rock.live_in/rock.live_out"

    def run(self, module: ir.Operation) -> bool:
        ok = True
        for func in kernel_functions(module):
            for alloc in lds_allocs(func):
                # Numbered again for each buffer: the markers of the previous one are new ops.
                ok = annotate(alloc, func, ProgramOrder(func)) and ok
        return ok


def lds_allocs(func: ir.Operation) -> list[ir.Operation]:
    """Workgroup-space ``rock.alloc`` ops of ``func`` in program order."""
    found: list[ir.Operation] = []
    walk_ops(func, lambda op: found.append(op) if op.name == "rock.alloc" and is_lds(op.results[0].type) else None)
    return found


@dataclass(frozen=True)
class Use:
    """One access of the buffer as the scan sees it: an op, or a run of sibling ops
    ``op .. last`` that together definitely overwrite it."""

    op: ir.Operation
    reads: bool
    writes: bool
    overwrites: bool = False
    last: ir.Operation | None = None
    #: For an overwrite under a conditional: the innermost one (it overwrites whenever that runs).
    guard: ir.Operation | None = None


@dataclass(frozen=True)
class LiveRange:
    """Ops bounding one range: ``live_in`` goes before ``start``, ``live_out`` after ``end``;
    ``overwrites``: the start replaces every byte, so the range needs nothing from before it."""

    start: ir.Operation
    end: ir.Operation
    overwrites: bool


def annotate(alloc: ir.Operation, func: ir.Operation, order: ProgramOrder) -> bool:
    buffer = alloc.results[0]
    try:
        found = list(accesses(buffer, func))
    except UnknownEffects as err:
        err.op.location.emit_error(
            f"'{err.op.name}' op uses LDS buffer {buffer.get_name()} but its memory effects are unknown"
        )
        return False
    uses = uses_of(alloc, func, found, order)
    while True:
        ranges = live_ranges(alloc, uses, order)
        if ranges is None:
            return False
        # A guarded overwrite starts a range only when the range ends under the same guard: on the
        # path skipping the write, nothing of the range reads the buffer.
        escaping = {id(start) for start, end in ranges if start.guard is not None and not order.contains(start.guard, end)}
        if not escaping:
            break
        uses = [Use(u.op, u.reads, u.writes) if id(u) in escaping else u for u in uses]
    ranges = [LiveRange(start.op, end, start.overwrites) for start, end in ranges]
    erase_markers(buffer)
    for live_range in settle(ranges, order):
        rock.live_in(buffer, loc=alloc.location, ip=ir.InsertionPoint(live_range.start))
        rock.live_out(buffer, loc=alloc.location, ip=ir.InsertionPoint.after(live_range.end))
    return True


# ----------------------------------------------------------------------------
# The scan: ranges in program order.


def live_ranges(alloc: ir.Operation, uses: list[Use], order: ProgramOrder) -> list[tuple[Use, ir.Operation]] | None:
    """The ranges of the use list as (opening use, last read), or None after reporting a malformed pattern.

    A write that a read earlier in the same loop body may see in the next iteration (no read follows it
    inside the loop, one precedes it: multi-buffered tiles, a value handed over the back edge) is carried:
    it neither ends the range open at it nor starts one, and the range lasts to the end of that loop."""
    name = alloc.results[0].get_name()
    reads = [u.op for u in uses if u.reads]
    ranges: list[tuple[Use, ir.Operation]] = []
    opened: Use | None = None  # the first write of the open range
    last_read: ir.Operation | None = None
    unread: list[ir.Operation] = []  # writes since the last read
    for use in uses:
        if use.writes and not use.reads and opened is not None and (loop := carrying_loop(use, reads, order)):
            last_read = loop if last_read is None else later_end(last_read, loop, order)
            continue
        if use.reads and use.writes:
            alloc.location.emit_error(
                f"'rock.alloc' op LDS buffer {name} is both read and written by one op, {describe(use.op)}; "
                "a live range cannot start and end at the same op"
            )
            return None
        if use.writes:
            if use.overwrites and last_read is not None:
                ranges.append((opened, last_read))
                opened = last_read = None
            if opened is None:
                opened = use
            unread.append(use.op)
            continue
        if opened is None:
            alloc.location.emit_error(
                f"'rock.alloc' op read before write: {describe(use.op)} reads LDS buffer {name} "
                "before any write of its live range (reading uninitialized memory)"
            )
            return None
        last_read, unread = use.op, []
    if unread:
        alloc.location.emit_error(
            f"'rock.alloc' op found a non closed read-write pattern: LDS buffer {name} is written by "
            f"{describe(unread[0])} but never read afterwards"
        )
        return None
    if opened is not None:
        ranges.append((opened, last_read))
    return ranges


def carrying_loop(write: Use, reads: list[ir.Operation], order: ProgramOrder) -> ir.Operation | None:
    """The outermost loop around the write whose body reads the buffer before it and not after it:
    the write's value reaches those reads through the back edge (None when there is no such loop)."""
    end = write.last or write.op
    found = None
    for parent in ancestors(write.op):
        if parent.name not in LOOP_OPS:
            continue
        inside = [r for r in reads if order.contains(parent, r)]
        if any(order.position[r] > order.last_inside[end] for r in inside):
            break
        if any(order.position[r] < order.position[write.op] for r in inside):
            found = parent
    return found


# ----------------------------------------------------------------------------
# Settling: loops, ranges that need the value before them, overlaps.


def settle(ranges: list[LiveRange], order: ProgramOrder) -> list[LiveRange]:
    while True:
        widened = [widen_across_loops(r, order) for r in ranges]
        settled = merge_overlapping(join_the_value_before(widened, order), order)
        if settled == ranges:
            return settled
        ranges = settled


def widen_across_loops(live_range: LiveRange, order: ProgramOrder) -> LiveRange:
    """Move each end out of the outermost loop that holds it but not the other end, and the last
    read also out of the branches that hold it but not the start: a ``live_out`` inside one branch
    would leave the buffer live after the other branch."""
    start = outermost_loop_without(live_range.start, live_range.end, order)
    end = outermost_loop_without(live_range.end, live_range.start, order, LOOP_OPS | CONDITIONAL_OPS)
    return LiveRange(start, end, live_range.overwrites and start == live_range.start)


def outermost_loop_without(op: ir.Operation, other: ir.Operation, order: ProgramOrder,
                           kinds: frozenset[str] = LOOP_OPS) -> ir.Operation:
    chosen = op
    for parent in ancestors(op):
        if parent.name in kinds and not order.contains(parent, other):
            chosen = parent
    return chosen


def join_the_value_before(ranges: list[LiveRange], order: ProgramOrder) -> list[LiveRange]:
    """A range whose start does not overwrite joins the range before it; a first one opens
    before the loops and branches that may bring an older value to its start."""
    joined: list[LiveRange] = []
    for live_range in ranges:
        if live_range.overwrites:
            joined.append(live_range)
        elif joined:
            before = joined.pop()
            joined.append(LiveRange(before.start, later_end(before.end, live_range.end, order), before.overwrites))
        else:
            joined.append(open_before_older_values(live_range, order))
    return joined


def open_before_older_values(live_range: LiveRange, order: ProgramOrder) -> LiveRange:
    start = live_range.start
    for parent in ancestors(live_range.start):
        is_branch = parent.name in CONDITIONAL_OPS
        if (is_branch and not order.contains(parent, live_range.end)) or (not is_branch and parent.name != "scf.execute_region"):
            start = parent  # a loop (any other region op counts as one), or a branch the range leaves
    end = start if order.contains(start, live_range.end) else live_range.end
    return LiveRange(start, end, False)


def later_end(a: ir.Operation, b: ir.Operation, order: ProgramOrder) -> ir.Operation:
    return b if order.last_inside[b] > order.last_inside[a] else a


def merge_overlapping(ranges: list[LiveRange], order: ProgramOrder) -> list[LiveRange]:
    """Ranges in program order with those that overlap (after widening) joined."""
    merged: list[LiveRange] = []
    for live_range in ranges:
        if merged and order.position[live_range.start] <= order.last_inside[merged[-1].end]:
            last = merged.pop()
            merged.append(LiveRange(last.start, later_end(last.end, live_range.end, order), last.overwrites))
            continue
        merged.append(live_range)
    return merged


def ancestors(op: ir.Operation) -> list[ir.Operation]:
    """The ops enclosing ``op`` inside its function, innermost first."""
    found = []
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        found.append(parent)
        parent = parent.parent
    return found


# ----------------------------------------------------------------------------
# Definite overwrites: write runs that run unconditionally and cover the buffer.


def uses_of(alloc: ir.Operation, func: ir.Operation, found: list[Access], order: ProgramOrder) -> list[Use]:
    """The accesses in program order, each write run that definitely overwrites the buffer as one use."""
    reads = [a.op for a in found if a.reads]
    writes = {a.op for a in found if a.writes}
    proved: dict[ir.Operation, bool] = {}

    def overwrites(run: list[ir.Operation]) -> bool:
        if run[0] not in proved:
            proved[run[0]] = runs_with(run[0], guard_of(run[0])) and covers(run, alloc, func, writes)
        return proved[run[0]]

    uses: list[Use] = []
    for access in found:
        if uses and uses[-1].overwrites and order.position[uses[-1].op] <= order.position[access.op] <= order.last_inside[uses[-1].last]:
            continue  # inside the write run already counted
        run = write_run(access, reads, order) if access.writes and not access.reads else None
        if run is not None and overwrites(run):
            uses.append(Use(run[0], reads=False, writes=True, overwrites=True, last=run[-1], guard=guard_of(run[0])))
        else:
            uses.append(Use(access.op, access.reads, access.writes))
    return uses


def write_run(access: Access, reads: list[ir.Operation], order: ProgramOrder) -> list[ir.Operation]:
    """The write's run: the outermost op around it (or the write) that holds no read of the
    buffer, and the sibling ops after that one up to the next that holds a read."""
    first = access.op
    for parent in ancestors(access.op):
        if any(order.contains(parent, r) for r in reads):
            break
        first = parent
    siblings = [op.operation for op in first.block.operations]
    run = siblings[siblings.index(first) :]
    for i, op in enumerate(run):
        if any(order.contains(op, r) for r in reads):
            return run[:i]
    return run


def guard_of(op: ir.Operation) -> ir.Operation | None:
    """The innermost conditional around ``op`` (None: none)."""
    return next((parent for parent in ancestors(op) if parent.name in CONDITIONAL_OPS), None)


def runs_with(op: ir.Operation, guard: ir.Operation | None = None) -> bool:
    """``op`` runs whenever ``guard`` (None: the function, or inside a loop body, the iteration) does."""
    parent = op.parent
    while parent is not None:
        if guard is not None and parent == guard:
            return True
        if any(len(region.blocks) != 1 for region in parent.regions):
            return False
        if parent.name == "func.func":
            return True
        if parent.name not in RUN_WITH_PARENT_OPS:
            return False
        parent = parent.parent
    return False


class Unknown(Exception):
    """A value the evaluation of a write run cannot know."""


def covers(run: list[ir.Operation], alloc: ir.Operation, func: ir.Operation, writes: set[ir.Operation]) -> bool:
    """Whether the writes of ``run``, all threads together, surely write every byte of ``alloc``."""
    alloc_type = ir.MemRefType(alloc.results[0].type)
    if not alloc_type.has_static_shape:
        return False
    threads = int(ir.IntegerAttr(func.attributes["rock.block_size"]).value) if "rock.block_size" in func.attributes else 0
    if threads > MAX_WORKGROUP_SIZE:  # not a launchable kernel (rock-verify says so): prove nothing
        return False
    evaluation = BlockEvaluation(alloc.results[0], memref_bytes(alloc_type), threads, writes)
    evaluation.wave = kernel_wave_size(func)
    lanes = np.ones(max(threads, 1), dtype=bool)
    env: dict = {}
    for op in run:
        evaluation.run(op, env, lanes)
    return bool(evaluation.written.all())


def kernel_wave_size(func: ir.Operation) -> int | None:
    """The wave size of the kernel's chip (``rock.arch``), None when it names none (no error here)."""
    try:
        return kernel_chip(func).wave_size
    except ChipError:
        return None


class BlockEvaluation:
    """Runs the ops of a write run for all threads at once (one lane per thread), recording the bytes surely written.

    Values are numpy arrays over the lanes; ``env`` maps the values known so far.
    Whatever cannot be evaluated raises :class:`Unknown` and the ops depending on
    it are skipped: their writes are not counted, which only makes the answer
    more conservative.
    """

    def __init__(self, buffer: ir.Value, size: int, threads: int, writes: set[ir.Operation]):
        self.buffer = buffer
        self.threads = threads
        self.lanes = max(threads, 1)
        self.writes = writes
        self.written = np.zeros(size, dtype=bool)
        self.budget = EVALUATION_LIMIT
        self.wave: int | None = None  # lanes per wave (direct-to-LDS loads), None: unknown

    def run(self, op: ir.Operation, env: dict, active: np.ndarray) -> None:
        self.budget -= self.lanes
        if self.budget < 0 or not active.any():
            return
        try:
            if op in self.writes:
                self.record(op, env, active)
            elif op.name == "scf.for":
                self.run_loop(op, env, active)
            elif op.name == "scf.if":
                condition = self.value(op.operands[0], env).astype(bool)
                self.run_region(op.regions[0], env, active & condition)
                if len(op.regions[1].blocks):
                    self.run_region(op.regions[1], env, active & ~condition)
            elif op.name == "scf.execute_region":
                self.run_region(op.regions[0], env, active)
        except Unknown:
            return

    def run_region(self, region: ir.Region, env: dict, active: np.ndarray) -> None:
        if len(region.blocks) != 1:
            return
        for op in region.blocks[0].operations:
            self.run(op.operation, env, active)

    def run_loop(self, op: ir.Operation, env: dict, active: np.ndarray) -> None:
        lower, upper, step = (self.uniform(op.operands[i], env, active) for i in range(3))
        bits = bit_width(op.operands[0].type)
        if "unsignedCmp" in op.attributes:
            lower, upper, step = (int(as_unsigned(np.array([v]), bits)[0]) for v in (lower, upper, step))
        if step <= 0:
            raise Unknown
        induction = op.regions[0].blocks[0].arguments[0]
        for i in range(lower, upper, step):
            iteration = dict(env)
            iteration[induction] = wrap(np.full(self.lanes, i, dtype=np.int64), bits)
            self.run_region(op.regions[0], iteration, active)
            if self.budget < 0:
                return

    def uniform(self, value: ir.Value, env: dict, active: np.ndarray) -> int:
        values = self.value(value, env)[active]
        if values.min() != values.max():
            raise Unknown
        return int(values[0])

    def record(self, op: ir.Operation, env: dict, active: np.ndarray) -> None:
        """Mark the bytes of the buffer ``op`` writes in every active lane."""
        for whole in overwritten_operands(op):
            if (placement := self.placement(whole)) is not None:
                offset, shape, size = placement
                self.written[offset : offset + int(np.prod(shape)) * size] = True
        if op.name == "memref.store":
            self.record_elements(op.operands[1], list(op.operands[2:]), 1, env, active)
        elif op.name == "rock.global_load_lds" and self.wave:
            self.record_direct_load(op, env, active)
        elif op.name == "vector.store":
            vector_type = ir.VectorType(op.operands[0].type)
            if vector_type.rank == 1:
                self.record_elements(op.operands[1], list(op.operands[2:]), vector_type.shape[0], env, active)

    def record_direct_load(self, op: ir.Operation, env: dict, active: np.ndarray) -> None:
        """``rock.global_load_lds``: lane l of a wave writes ``bytes`` at dest element ``dest_offset + l *
        bytes / element bytes`` (invalid lanes write zeros: still written)."""
        dest, dest_offset = op.operands[2], op.operands[3]
        placement = self.placement(dest)
        if placement is None:
            return
        offset, shape, size = placement
        nbytes = int(ir.IntegerAttr(op.attributes["bytes"]).value)
        lanes = np.arange(self.lanes) % self.wave
        first = self.value(dest_offset, env) + lanes * (nbytes // size)
        inside = active & (first >= 0) & ((first + nbytes // size) <= int(np.prod(shape)))
        for element in first[inside]:
            start = offset + int(element) * size
            self.written[start : start + nbytes] = True

    def record_elements(self, target: ir.Value, indices: list[ir.Value], count: int, env: dict, active: np.ndarray) -> None:
        """``count`` consecutive elements along the last dimension of ``target`` from ``indices``."""
        placement = self.placement(target)
        if placement is None:
            return
        offset, shape, size = placement
        index = [self.value(i, env)[active] for i in indices]
        inside = np.ones(len(index[0]) if index else 1, dtype=bool)
        linear = np.zeros_like(inside, dtype=np.int64)
        for j, (position, extent) in enumerate(zip(index, shape)):
            last = count if j == len(shape) - 1 else 1
            inside &= (position >= 0) & (position + last <= extent)
            linear = linear * extent + position
        for first in linear[inside]:
            start = offset + int(first) * size
            self.written[start : start + count * size] = True

    def placement(self, view: ir.Value) -> tuple[int, list[int], int] | None:
        """(byte offset, shape, element bytes) of a row-major view of the buffer, or None when unknown."""
        type_ = ir.MemRefType(view.type)
        if not type_.has_static_shape:
            return None
        row_major = [int(np.prod(type_.shape[j + 1 :])) for j in range(type_.rank)]
        if strides_and_offset(type_) != (row_major, 0):
            return None
        shape, size = list(type_.shape), element_bytes(type_.element_type)
        if view == self.buffer:
            return 0, shape, size
        owner = view.owner
        if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "memref.view" or len(owner.operands) != 2:
            return None
        if owner.operands[0] != self.buffer:
            return None
        try:
            shift = self.value(owner.operands[1], {})
        except Unknown:
            return None
        return int(shift[0]), shape, size

    def value(self, value: ir.Value, env: dict) -> np.ndarray:
        """The lane values of an integer or index ``value``; raises :class:`Unknown`."""
        if value in env:
            return env[value]
        owner = value.owner
        if not isinstance(owner, ir.Operation | ir.OpView):
            raise Unknown  # a block argument the evaluation does not enumerate
        op = owner.operation
        if op.name not in EVALUATED:
            raise Unknown
        args = [self.value(v, env) for v in op.operands]
        result = np.broadcast_to(np.asarray(self.evaluate(op, args), dtype=np.int64), (self.lanes,))
        env[value] = result
        return result

    def evaluate(self, op: ir.Operation, args: list[np.ndarray]):
        """The result of ``op`` in its own width (see :func:`wrap`)."""
        name = op.name
        if name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, ir.BoolAttr):
                return -1 if attr.value else 0
            if not isinstance(attr, ir.IntegerAttr):
                raise Unknown
            return ir.IntegerAttr(attr).value
        if name == "rock.workitem_id":
            if not self.threads:
                raise Unknown
            return np.arange(self.threads)
        if name == "affine.apply":
            affine_map = ir.AffineMapAttr(op.attributes["map"]).value
            return affine_value(affine_map.results[0], args, affine_map.n_dims)
        bits = bit_width(op.results[0].type)
        if name == "arith.select":
            return np.where(args[0].astype(bool), args[1], args[2])
        if name in ("arith.index_cast", "arith.extsi", "arith.trunci"):
            return wrap(args[0], bits)  # sign-extends (nothing to do) or truncates
        if name in ("arith.index_castui", "arith.extui"):
            return wrap(as_unsigned(args[0], bit_width(op.operands[0].type)), bits)  # zero-extends or truncates
        operand_bits = bit_width(op.operands[0].type)
        if name == "arith.cmpi":
            return -compare(int(ir.IntegerAttr(op.attributes["predicate"]).value), args[0], args[1], operand_bits)
        if name in ARITH:
            a, b = args
            if name in UNSIGNED_ARITH:
                a, b = as_unsigned(a, operand_bits), as_unsigned(b, operand_bits)
            if name in DIVISIONS and ((b == 0).any() or (a < 0).any() or (b < 0).any()):
                raise Unknown  # zero divisors and signed rounding: leave them to the hardware
            return wrap(ARITH[name](a, b), bits)
        raise Unknown


ARITH: dict[str, Callable] = {
    "arith.addi": operator.add,
    "arith.subi": operator.sub,
    "arith.muli": operator.mul,
    "arith.divui": operator.floordiv,
    "arith.divsi": operator.floordiv,
    "arith.floordivsi": operator.floordiv,
    "arith.remui": operator.mod,
    "arith.remsi": operator.mod,
    "arith.minui": np.minimum,
    "arith.minsi": np.minimum,
    "arith.maxui": np.maximum,
    "arith.maxsi": np.maximum,
    "arith.andi": operator.and_,
    "arith.ori": operator.or_,
    "arith.xori": operator.xor,
}
#: Ops that read their operands' bits as unsigned numbers.
UNSIGNED_ARITH = frozenset({"arith.divui", "arith.remui", "arith.minui", "arith.maxui"})
DIVISIONS = frozenset({"arith.divui", "arith.remui", "arith.divsi", "arith.remsi", "arith.floordivsi"})

#: The ops whose integer results the evaluation computes.
EVALUATED = frozenset({*ARITH, "arith.constant", "rock.workitem_id", "affine.apply", "arith.index_cast",
                       "arith.index_castui", "arith.extui", "arith.extsi", "arith.trunci", "arith.select",
                       "arith.cmpi"})

#: arith.cmpi predicates by their enum value (eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge).
CMPI = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
        operator.lt, operator.le, operator.gt, operator.ge)  # fmt: skip


def compare(predicate: int, a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    if predicate >= 6:
        a, b = as_unsigned(a, bits), as_unsigned(b, bits)
    return CMPI[predicate](a, b).astype(np.int64)


# Integer values are kept as the hardware holds them: the bits of their own width
# read as a signed number (an i8 100 + 100 is -56, an i1 true is -1); ops that
# read bits as unsigned convert first. A value of the evaluation that skipped
# this would prove writes under conditions that wrap on the hardware.


def bit_width(type_: ir.Type) -> int:
    if isinstance(type_, ir.IndexType):
        return 64  # the interpreter's and the backend's index width
    if isinstance(type_, ir.IntegerType):
        return ir.IntegerType(type_).width
    raise Unknown


def wrap(values, bits: int) -> np.ndarray:
    """``values`` cut to ``bits`` bits, read as signed (int64 arithmetic wraps at 64 by itself)."""
    values = np.asarray(values, dtype=np.int64)
    if bits >= 64:
        return values
    half = 1 << (bits - 1)
    return (values + half) % (1 << bits) - half


def as_unsigned(values: np.ndarray, bits: int) -> np.ndarray:
    """The bits of ``values`` read as an unsigned number (Unknown past int64)."""
    if bits >= 64:
        if (values < 0).any():
            raise Unknown
        return values
    return values % (1 << bits)


def affine_value(expr: ir.AffineExpr, args: list[np.ndarray], num_dims: int) -> np.ndarray:
    if isinstance(expr, ir.AffineConstantExpr):
        return np.int64(expr.value)
    if isinstance(expr, ir.AffineDimExpr):
        return args[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return args[num_dims + expr.position]
    lhs = affine_value(expr.lhs, args, num_dims)
    rhs = affine_value(expr.rhs, args, num_dims)
    if isinstance(expr, ir.AffineAddExpr):
        return lhs + rhs
    if isinstance(expr, ir.AffineMulExpr):
        return lhs * rhs
    if np.any(rhs <= 0):
        raise Unknown
    if isinstance(expr, ir.AffineModExpr):
        return np.mod(lhs, rhs)
    if isinstance(expr, ir.AffineFloorDivExpr):
        return np.floor_divide(lhs, rhs)
    if isinstance(expr, ir.AffineCeilDivExpr):
        return -np.floor_divide(-lhs, rhs)
    raise Unknown


def erase_markers(buffer: ir.Value) -> None:
    for use in list(buffer.uses):
        if use.owner.name in MARKERS:
            use.owner.erase()


def describe(op: ir.Operation) -> str:
    """``'memref.load' at line 12`` (or without the line for ops without a file location)."""
    _, line, _ = file_position(op.location)
    return f"'{op.name}' at line {line}" if line is not None else f"'{op.name}'"
