"""rock-reuse-lds: pack LDS buffers whose live ranges do not overlap into shared allocations.

Mirrors rocMLIR's ReuseLDS. Input: rank-1 ``i8`` workgroup-space ``rock.alloc``
ops of a kernel function (``rock.kernel``) with ``rock.live_in``/``rock.live_out``
ranges (from ``rock-annotate-liveness``). Steps, one function each below:

A. Interference: buffers that may be live at the same time interfere (the union
   over all their ranges). Liveness follows the control flow, not the text: a
   region of ``scf.if`` starts from the state before it, a loop body from the
   state before the loop joined with the state at its end (iterated to a fixpoint,
   so the back edge counts), and the state after a loop joins the state before
   it (zero iterations). The annotations are first checked in program order
   (operand not an LDS alloc, double ``live_in``, ``live_out`` without
   ``live_in``, a range never closed, a buffer accessed without any range).
B. Placement: each buffer gets a byte offset (its bytes: its size rounded up to 16),
   two ways. Colour runs (rocMLIR's): buffers by increasing size take the first run
   of consecutive colours no neighbour holds that adds up to their size (a colour
   is created, 16-byte aligned, by the first buffer needing it), colours laid out
   run after run. First fit by decreasing size (program order among equal sizes):
   the lowest offset where its bytes overlap those of no interfering buffer placed
   before it (O(n^2 log n)). Steps B-D run for both; first fit is kept only when
   it needs no more bytes and no more barriers, and fewer bytes or fewer barriers
   inside loops (one outside runs once: not worth another layout). The colour runs
   put small buffers with small ones, which the kernel's own barriers often order
   already, where first fit puts them in a big buffer's bytes. The bytes are cut
   at every buffer's start and end into segments, the colours of step D: two
   buffers share a colour exactly when they share bytes.
C. Groups: buffers whose bytes overlap, directly or through others, share one
   pooled alloc; a buffer that shares bytes with none gets its own. Offsets are
   relative to the pool. The total is checked against the chip's LDS per
   workgroup (``pagedir.arch``).
D. Barriers: the same flow tracks, per colour, the buffers that may have touched
   it since the last barrier (a buffer touches its colours from its ``live_in``
   on; a barrier clears what is not live). A ``live_in`` whose colours may have
   been touched by a *different* buffer needs a barrier on every path from that
   buffer's accesses, the back edge of a loop included. In program order, each
   such ``live_in`` gets one ``rock.lds_barrier`` at the outermost point that
   removes the hazard: before an enclosing loop (run once, not every iteration)
   or right before the ``live_in`` (at the top of the loop body for a hazard
   across the back edge). Never inside ``scf.if``/``scf.index_switch``: the
   condition may differ between threads and every thread must reach a barrier,
   so those are hoisted out. When no such point removes the hazard (both buffers
   used inside one ``scf.if``), the two buffers are made to interfere and steps
   B-D run again (each round adds an edge, so the rounds end). A new range of the same buffer never gets a barrier (ordering
   those is the job of the producer's barriers).
E. Rewrite: one ``rock.alloc`` per group at the function entry; each old alloc
   becomes ``arith.constant <offset> : index`` + ``memref.view`` at its position;
   the annotations are erased.

```mlir
%a = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
%c = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
"rock.live_in"(%a) ... "rock.live_out"(%a) ... "rock.live_in"(%c) ... "rock.live_out"(%c)
// becomes
%pool = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
%c0 = arith.constant 0 : index
%a = memref.view %pool[%c0][] : memref<1024xi8, #wg> to memref<1024xi8, #wg>
%c0_0 = arith.constant 0 : index
%c = memref.view %pool[%c0_0][] : memref<1024xi8, #wg> to memref<1024xi8, #wg>
...  "rock.lds_barrier"() (right before the first write of %c) ...
```

With fewer than two LDS buffers the annotations are only dropped. :func:`plan`
returns the layout (steps A-D) without changing the IR, for reports.

Options: ``arch`` (chip or target string; empty: the kernel's ``rock.arch``; one
naming another chip than the kernel's, or neither, is an error: ``pagedir.arch.kernel_chip``).

Not modelled: interference is per buffer, not per range (two buffers that
overlap once are kept apart everywhere). Loops are assumed to run the same
number of iterations on every thread of a workgroup (a barrier inside a loop
requires it, as do the barriers the kernel already has); a region op other than
``scf.if``, ``scf.index_switch`` and ``scf.execute_region`` is treated as a loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import mlir.ir as ir
from mlir.dialects import arith, memref

from pagedir.arch import ChipError, kernel_chip
from pagedir.diagnostics import file_position
from pagedir.dialect import rock
from pagedir.dialect.effects import UnknownEffects, accesses, walk_ops
from pagedir.dialect.types import is_lds, memref_bytes
from pagedir.passes.base import ChipOptions, Pass, kernel_functions

ALIGNMENT = 16
#: Ops that run one of their regions, or none.
CONDITIONAL_OPS = frozenset({"scf.if", "scf.index_switch", "affine.if"})
#: Ops that run each of their regions once, in order. Any other op with regions counts as a loop.
ONCE_OPS = frozenset({"scf.execute_region"})
#: Ops every thread of a workgroup runs the body of alike (the loops with a trip count the
#: kernel's own barriers already require to be uniform): a barrier may go inside them. Not
#: inside a conditional, whose condition may differ between threads: a barrier there could hang.
UNIFORM_OPS = frozenset({"scf.for", "scf.while", "affine.for", *ONCE_OPS})
MARKERS = ("rock.live_in", "rock.live_out")


@dataclass(frozen=True)
class ReuseLDSOptions(ChipOptions):
    #: Chip or target string for the LDS limit; empty means each kernel's own ``rock.arch``.
    arch: str = ""


class ReuseLDSPass(Pass):
    argument = "rock-reuse-lds"
    summary = "Pack LDS buffers whose live ranges do not overlap into shared allocations"
    Options = ReuseLDSOptions

    def run(self, module: ir.Operation) -> bool:
        ok = True
        for func in kernel_functions(module):
            ok = reuse_lds(func, self.options.arch) and ok
        return ok


class PlanError(ValueError):
    """The LDS buffers or their annotations cannot be planned; ``op`` is where to report it."""

    def __init__(self, op: ir.Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


@dataclass
class LdsPlan:
    """Where each LDS buffer of a function goes.

    ``allocs[i]`` (program order) lands in group ``group_of[i]`` at byte
    ``offsets[i]``; ``groups[g]`` is the byte size of the pooled alloc ``g``.
    """

    allocs: list[ir.Operation]
    sizes: list[int]
    interference: list[set[int]]
    #: The byte segments (step B) each buffer covers: buffers sharing one share bytes.
    colours: list[list[int]] = field(default_factory=list)
    #: (op, live_in): a ``rock.lds_barrier`` goes right before ``op``, for the range ``live_in`` opens.
    barriers: list[tuple[ir.Operation, ir.Operation]] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    group_of: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)

    @property
    def bytes_before(self) -> int:
        return sum(self.sizes)

    @property
    def bytes_after(self) -> int:
        return sum(self.groups)

    @property
    def bytes_saved(self) -> int:
        return self.bytes_before - self.bytes_after


def reuse_lds(func: ir.Operation, arch: str) -> bool:
    try:
        layout = plan(func)
        check_limit(func, layout, arch)
    except PlanError as err:
        err.op.location.emit_error(err.message)
        return False
    for before, live_in in layout.barriers:
        rock.lds_barrier(loc=live_in.location, ip=ir.InsertionPoint(before))
    erase_annotations(func)
    if len(layout.allocs) >= 2:
        rewrite(func, layout)
    return True


def plan(func: ir.Operation) -> LdsPlan:
    """Steps A-D for an annotated kernel function; raises :class:`PlanError` on invalid input."""
    allocs = [op for op in ops_in_order(func) if op.name == "rock.alloc" and is_lds(op.results[0].type)]
    check_ranges(func, allocs)
    flow = ControlFlow(func, allocs)
    layout = LdsPlan(allocs, [memref_bytes(a.results[0].type) for a in allocs], interference_graph(flow, len(allocs)))
    if len(allocs) < 2:
        layout.groups = list(layout.sizes)
        layout.group_of = list(range(len(allocs)))
        layout.offsets = [0] * len(allocs)
        return layout
    check_byte_buffers(allocs)
    check_every_access_annotated(func, allocs, layout.interference)
    # The colour runs stay unless first fit needs no more bytes and no more barriers, and fewer bytes or
    # fewer barriers in loops.
    best = None
    for placement in (colour_runs, first_fit):
        trial = LdsPlan(allocs, layout.sizes, [set(n) for n in layout.interference])
        if settle(flow, trial, placement):
            pool_groups(trial)
            if best is None or better(trial, best):
                best = trial
    return best


def better(layout: LdsPlan, than: LdsPlan) -> bool:
    """No more bytes and no more barriers than ``than`` (in loops or not), and fewer bytes or fewer barriers
    in loops. A barrier outside every loop runs once: not worth another layout, whose extra pool costs
    address instructions (in the loop too)."""
    mine, theirs = costs(layout), costs(than)
    return all(m <= t for m, t in zip(mine, theirs)) and mine[:2] < theirs[:2]


def costs(layout: LdsPlan) -> tuple[int, int, int]:
    """Bytes, barriers inside a loop, barriers."""
    in_loops = sum(any(a.name not in ONCE_OPS for a in ancestors(before)) for before, _ in layout.barriers)
    return layout.bytes_after, in_loops, len(layout.barriers)


def settle(flow: ControlFlow, layout: LdsPlan, placement: Callable[[LdsPlan], list[int] | None]) -> bool:
    """Steps B and D until every buffer sharing bytes with another is ordered by barriers; False when
    ``placement`` gives up (returns None) on some round."""
    while True:
        if not place(layout, placement):
            return False
        unordered = place_barriers(flow, layout)
        if not unordered:
            return True
        # No barrier can order them: keep them apart and place again. They share bytes, so they did not
        # interfere: each round adds an edge, and the rounds end.
        assert not any(b in layout.interference[a] for a, b in unordered), "interfering buffers share LDS bytes"
        for a, b in unordered:
            layout.interference[a].add(b)
            layout.interference[b].add(a)


def ops_in_order(func: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []
    walk_ops(func, found.append)
    return found


# ----------------------------------------------------------------------------
# The control flow of the markers and barriers, and one forward analysis over it.


@dataclass(frozen=True)
class FlowState:
    """What may hold at one program point, over every path that reaches it."""

    #: Buffers whose range may be open.
    live: frozenset[int] = frozenset()
    #: (colour, buffer) pairs: the buffer may have accessed the colour since the last barrier.
    touched: frozenset[tuple[int, int]] = frozenset()

    def join(self, other: FlowState) -> FlowState:
        return FlowState(self.live | other.live, self.touched | other.touched)

    def after_barrier(self) -> FlowState:
        """Accesses before the barrier are ordered; a buffer still live goes on touching its colours."""
        return FlowState(self.live, frozenset(t for t in self.touched if t[1] in self.live))


def join_all(states: list[FlowState]) -> FlowState:
    joined = states[0]
    for state in states[1:]:
        joined = joined.join(state)
    return joined


@dataclass
class Node:
    """A marker, a barrier, or an op with regions: ``regions[r][b]`` holds the nodes of block ``b`` of region ``r``."""

    op: ir.Operation
    kind: str  # "rock.live_in", "rock.live_out", "rock.lds_barrier" or "regions"
    buffer: int = -1
    regions: list[list[list[Node]]] = field(default_factory=list)


class ControlFlow:
    """The markers and barriers of a function, nested as its regions are.

    :meth:`run` applies a transfer function forward along every path: each region
    of a conditional starts from the state before it (and, with an empty else,
    the state before it also flows past it); a loop's regions run in order from
    the state before the loop joined with the state after its last region, until
    nothing changes, and the loop leaves with any of those states (zero
    iterations included); the blocks of a multi-block region may follow each
    other in any order. Ops with regions holding no marker or barrier are left out.
    """

    def __init__(self, func: ir.Operation, allocs: list[ir.Operation]):
        self.index = {alloc.results[0]: i for i, alloc in enumerate(allocs)}
        #: The live_in nodes in program order.
        self.live_ins: list[Node] = []
        self.body = [self._nodes(block) for block in func.regions[0].blocks]

    def _nodes(self, block: ir.Block) -> list[Node]:
        nodes: list[Node] = []
        for op in block.operations:
            op = op.operation
            if op.name in MARKERS:
                nodes.append(Node(op, op.name, self.index[op.operands[0]]))
                if op.name == "rock.live_in":
                    self.live_ins.append(nodes[-1])
            elif op.name == "rock.lds_barrier":
                nodes.append(Node(op, op.name))
            elif len(op.regions):
                regions = [[self._nodes(b) for b in region.blocks] for region in op.regions]
                if any(nested for blocks in regions for nested in blocks):
                    nodes.append(Node(op, "regions", regions=regions))
        return nodes

    def run(self, step: Callable[[Node, FlowState], FlowState]) -> None:
        """Call ``step(node, state before it)`` at every node; it returns the state after the node."""
        self._region(self.body, FlowState(), step)

    def _block(self, nodes: list[Node], state: FlowState, step: Callable) -> FlowState:
        for node in nodes:
            state = step(node, state)
            if node.regions:
                state = self._regions(node, state, step)
        return state

    def _regions(self, node: Node, state: FlowState, step: Callable) -> FlowState:
        name = node.op.name
        if name in CONDITIONAL_OPS:
            ends = [self._region(blocks, state, step) for blocks in node.regions if blocks]
            return join_all(ends + ([state] if len(ends) < len(node.regions) else []))
        if name in ONCE_OPS:
            for blocks in node.regions:
                state = self._region(blocks, state, step)
            return state
        entry = state
        while True:
            ends = []
            current = entry
            for blocks in node.regions:
                current = self._region(blocks, current, step)
                ends.append(current)
            again = entry.join(current)
            if again == entry:
                return join_all([state, *ends])
            entry = again

    def _region(self, blocks: list[list[Node]], state: FlowState, step: Callable) -> FlowState:
        if len(blocks) == 1:
            return self._block(blocks[0], state, step)
        entry = state
        while True:
            again = join_all([state, *[self._block(nodes, entry, step) for nodes in blocks]])
            if again == entry:
                return entry
            entry = again


def states_at_live_ins(flow: ControlFlow, colours: list[list[int]], barriers_before: set[ir.Operation]) -> dict[ir.Operation, FlowState]:
    """The state at each ``live_in`` (after a barrier placed right before it), given a barrier before each op of ``barriers_before``."""
    seen: dict[ir.Operation, FlowState] = {}

    def step(node: Node, state: FlowState) -> FlowState:
        if node.kind == "rock.lds_barrier" or node.op in barriers_before:
            state = state.after_barrier()
        if node.kind == "rock.live_in":
            seen[node.op] = seen[node.op].join(state) if node.op in seen else state
            mine = {(c, node.buffer) for c in colours[node.buffer]}
            return FlowState(state.live | {node.buffer}, state.touched | mine)
        if node.kind == "rock.live_out":
            return FlowState(state.live - {node.buffer}, state.touched)
        return state

    flow.run(step)
    return seen


# ----------------------------------------------------------------------------
# Step A: interference graph, after checking the annotations.


def check_ranges(func: ir.Operation, allocs: list[ir.Operation]) -> None:
    """In program order, every range of an LDS buffer is opened once and closed once."""
    index = {alloc.results[0]: i for i, alloc in enumerate(allocs)}
    opened_by: dict[int, ir.Operation] = {}
    for op in ops_in_order(func):
        if op.name not in MARKERS:
            continue
        buffer = op.operands[0]
        which = index.get(buffer)
        if which is None:
            raise PlanError(op, f"'{op.name}' op operand {buffer.get_name()} is not the result of a workgroup rock.alloc")
        name = buffer.get_name()
        if op.name == "rock.live_in":
            if which in opened_by:
                raise PlanError(
                    op, f"'rock.live_in' op LDS buffer {name} is already live: the range opened at {where(opened_by[which])} has no rock.live_out"
                )
            opened_by[which] = op
        elif opened_by.pop(which, None) is None:
            raise PlanError(op, f"'rock.live_out' op LDS buffer {name} is not live: no rock.live_in opens this range")
    for which, live_in in opened_by.items():
        raise PlanError(
            live_in, f"'rock.live_in' op the live range of LDS buffer {allocs[which].results[0].get_name()} is never closed by rock.live_out"
        )


def interference_graph(flow: ControlFlow, count: int) -> list[set[int]]:
    """Buffers that may be live together: at each ``live_in``, its buffer and every buffer that may be live there."""
    neighbours: list[set[int]] = [set() for _ in range(count)]
    seen = states_at_live_ins(flow, [[] for _ in range(count)], set())
    for live_in in flow.live_ins:
        for other in seen[live_in.op].live - {live_in.buffer}:
            neighbours[live_in.buffer].add(other)
            neighbours[other].add(live_in.buffer)
    return neighbours


def check_byte_buffers(allocs: list[ir.Operation]) -> None:
    for alloc in allocs:
        type_ = alloc.results[0].type
        if type_.element_type != ir.IntegerType.get_signless(8):
            raise PlanError(alloc, f"'rock.alloc' op LDS buffer element type must be i8, but it's '{type_.element_type}' in {type_}")
        if type_.rank != 1:
            raise PlanError(alloc, f"'rock.alloc' op rank should be 1, but it's {type_.rank} in {type_}")


def check_every_access_annotated(func: ir.Operation, allocs: list[ir.Operation], neighbours: list[set[int]]) -> None:
    """A buffer without any range would be overlaid with everything: refuse it when it is accessed."""
    for alloc in allocs:
        buffer = alloc.results[0]
        if any(use.owner.name == "rock.live_in" for use in buffer.uses):
            continue
        try:
            used = next(iter(accesses(buffer, func)), None) is not None
        except UnknownEffects:
            used = True
        if used:
            raise PlanError(
                alloc,
                f"'rock.alloc' op LDS buffer {buffer.get_name()} is accessed but has no live range "
                "(run rock-annotate-liveness first)",
            )


# ----------------------------------------------------------------------------
# Steps B and C: colours, groups and offsets.


def align_up(size: int) -> int:
    return -(-size // ALIGNMENT) * ALIGNMENT


def place(layout: LdsPlan, placement: Callable[[LdsPlan], list[int] | None] | None = None) -> bool:
    """Step B: a byte offset per buffer from ``placement`` (default :func:`first_fit`); False, and the
    layout unchanged, when it gives up. The bytes are then cut into segments at every buffer's start and
    end: the colours the barrier step tracks (two buffers share one exactly when they share bytes)."""
    offsets = (placement or first_fit)(layout)
    if offsets is None:
        return False
    layout.offsets = offsets
    ends = sorted({o for i, o in enumerate(layout.offsets) for o in (o, o + align_up(layout.sizes[i]))})
    segment = {byte: k for k, byte in enumerate(ends)}
    layout.colours = [list(range(segment[o], segment[o + align_up(size)]))
                      for o, size in zip(layout.offsets, layout.sizes)]
    return True


def first_fit(layout: LdsPlan) -> list[int]:
    """First fit by decreasing size (program order among equal sizes): each buffer takes the lowest offset
    where its bytes (its size rounded up to ``ALIGNMENT``) overlap those of no interfering buffer placed
    before it. Time O(n^2 log n) for n buffers."""
    count = len(layout.sizes)
    offsets: list[int | None] = [None] * count
    for i in sorted(range(count), key=lambda i: (-layout.sizes[i], i)):
        need = align_up(layout.sizes[i])
        taken = sorted((offsets[n], offsets[n] + align_up(layout.sizes[n])) for n in layout.interference[i]
                       if offsets[n] is not None)
        offset = 0
        for start, end in taken:
            if start >= offset + need:
                break  # the gap before this neighbour holds the buffer
            offset = max(offset, end)
        offsets[i] = offset
    return [int(o) for o in offsets]


def colour_runs(layout: LdsPlan) -> list[int] | None:
    """rocMLIR's colouring: buffers by increasing size (program order among equal sizes) each take the
    first run of consecutive colours that no interfering buffer holds and that adds up to its size; a
    colour is created, 16-byte aligned, by the first buffer that needs it. The colours a buffer spans
    join its first colour's group (groups stay runs of consecutive colours, in order), the groups are
    laid end to end and a buffer starts at its first colour. None, so that the caller takes first fit,
    should two interfering buffers share bytes: each round of :func:`plan` must keep neighbours apart
    for the rounds to end."""
    count = len(layout.sizes)
    colour_sizes: list[int] = []
    runs: list[list[int]] = [[] for _ in range(count)]
    by_size = sorted(range(count), key=lambda i: layout.sizes[i])
    for i in by_size:
        forbidden = {c for n in layout.interference[i] for c in runs[n]}
        collected, candidate = 0, 0
        while collected < layout.sizes[i]:
            if candidate in forbidden:
                runs[i], collected = [], 0
            else:
                if candidate == len(colour_sizes):
                    colour_sizes.append(align_up(layout.sizes[i] - collected))
                runs[i].append(candidate)
                collected += colour_sizes[candidate]
            candidate += 1
    members = [[c] for c in range(len(colour_sizes))]
    root_of = list(range(len(colour_sizes)))
    for i in by_size:
        for c in runs[i][1:]:
            root, absorbed = root_of[runs[i][0]], root_of[c]
            if absorbed != root:
                members[root] += members[absorbed]
                for m in members[absorbed]:
                    root_of[m] = root
                members[absorbed] = []
    start, end = [0] * len(colour_sizes), 0
    for c in (c for group in members for c in group):
        start[c], end = end, end + colour_sizes[c]
    offsets = [start[run[0]] if run else 0 for run in runs]
    spans = [range(o, o + align_up(size)) for o, size in zip(offsets, layout.sizes)]
    if any(spans[a] and spans[b] and spans[a].start < spans[b].stop and spans[b].start < spans[a].stop
           for a in range(count) for b in layout.interference[a]):
        return None
    return offsets


def pool_groups(layout: LdsPlan) -> None:
    """Step C: buffers whose bytes chain-overlap share one pooled alloc; the others get their own. Offsets
    become relative to the pool; a buffer of 0 bytes goes in the first pool."""
    spans = sorted((o, o + align_up(size), i) for i, (o, size) in enumerate(zip(layout.offsets, layout.sizes)))
    layout.groups, layout.group_of = [], [0] * len(layout.allocs)
    bases: list[int] = []
    for start, end, i in spans:
        if end == start:
            continue
        if not bases or start >= bases[-1] + layout.groups[-1]:
            bases.append(start)
            layout.groups.append(0)
        layout.groups[-1] = max(layout.groups[-1], end - bases[-1])
        layout.group_of[i] = len(bases) - 1
    if not layout.groups:
        layout.groups = [0]
    layout.offsets = [o - bases[g] if align_up(size) else 0
                      for o, size, g in zip(layout.offsets, layout.sizes, layout.group_of)]


def check_limit(func: ir.Operation, layout: LdsPlan, arch: str) -> None:
    try:
        chip = kernel_chip(func, arch)
    except ChipError as err:
        raise PlanError(func, str(err)) from None
    if layout.bytes_after > chip.lds_per_workgroup:
        raise PlanError(
            func,
            f"'func.func' op {function_name(func)} requires too much LDS memory: {layout.bytes_after} bytes "
            f"(hardware max for {chip.name} is {chip.lds_per_workgroup} bytes)",
        )


# ----------------------------------------------------------------------------
# Step D: barriers where bytes are recycled by a different buffer.


def place_barriers(flow: ControlFlow, layout: LdsPlan) -> set[tuple[int, int]]:
    """Fill ``layout.barriers``; returns the pairs of buffers sharing bytes that no barrier can order (empty when done)."""
    layout.barriers = []
    planned: set[ir.Operation] = set()
    seen = states_at_live_ins(flow, layout.colours, planned)
    for live_in in flow.live_ins:
        if not recyclers(live_in, seen, layout):
            continue
        for before in barrier_positions(live_in.op):
            if before in planned:
                continue
            trial = states_at_live_ins(flow, layout.colours, planned | {before})
            if not recyclers(live_in, trial, layout):
                planned.add(before)
                layout.barriers.append((before, live_in.op))
                seen = trial
                break
        else:
            return {(live_in.buffer, other) for other in recyclers(live_in, seen, layout)}
    return set()


def recyclers(live_in: Node, seen: dict[ir.Operation, FlowState], layout: LdsPlan) -> set[int]:
    """The other buffers that may have touched the bytes of ``live_in``'s buffer since the last barrier."""
    mine = set(layout.colours[live_in.buffer])
    return {who for colour_, who in seen[live_in.op].touched if colour_ in mine and who != live_in.buffer}


def barrier_positions(live_in: ir.Operation) -> list[ir.Operation]:
    """The ops a barrier for ``live_in`` may go right before, outermost first.

    ``live_in`` itself and the loops and conditionals around it (a barrier before a
    loop runs once, not every iteration), up to the enclosing stage or function;
    only those outside every conditional (see ``UNIFORM_OPS``).
    """
    positions = []
    op = live_in
    while True:
        if all(a.name in UNIFORM_OPS for a in ancestors(op)):
            positions.append(op)
        if op.parent.name in ONCE_OPS or op.parent.name == "func.func":
            return positions[::-1]
        op = op.parent


def ancestors(op: ir.Operation) -> list[ir.Operation]:
    """The ops enclosing ``op`` inside its function."""
    found = []
    parent = op.parent
    while parent.name != "func.func":
        found.append(parent)
        parent = parent.parent
    return found


# ----------------------------------------------------------------------------
# Step E: pooled allocs at the entry, a view per old alloc.


def erase_annotations(func: ir.Operation) -> None:
    for op in ops_in_order(func):
        if op.name in MARKERS:
            op.erase()


def rewrite(func: ir.Operation, layout: LdsPlan) -> None:
    entry = func.regions[0].blocks[0]
    at_entry = ir.InsertionPoint(entry.operations[0])
    pools = []
    for g, size in enumerate(layout.groups):
        first_member = layout.allocs[layout.group_of.index(g)]
        with first_member.location:
            space = first_member.results[0].type.memory_space
            pool_type = ir.MemRefType.get([size], ir.IntegerType.get_signless(8), memory_space=space)
            pools.append(rock.alloc(pool_type, ip=at_entry))
    index = ir.IndexType.get()
    for alloc, g, offset in zip(layout.allocs, layout.group_of, layout.offsets):
        old = alloc.results[0]
        with alloc.location, ir.InsertionPoint(alloc):
            byte_shift = arith.constant(index, offset)
            view = memref.view(old.type, pools[g], byte_shift, [])
        old.replace_all_uses_with(view)
        alloc.erase()


def where(op: ir.Operation) -> str:
    _, line, _ = file_position(op.location)
    return f"line {line}" if line is not None else "an unknown location"


def function_name(func: ir.Operation) -> str:
    return "@" + ir.StringAttr(func.attributes["sym_name"]).value
