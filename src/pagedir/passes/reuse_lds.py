"""rock-reuse-lds: pack LDS buffers whose live ranges do not overlap into shared allocations.

Mirrors rocMLIR's ReuseLDS. Input: rank-1 ``i8`` workgroup-space ``rock.alloc``
ops of a kernel function (``rock.kernel``) with ``rock.live_in``/``rock.live_out``
ranges (from ``rock-annotate-liveness``). Steps, one function each below:

A. Interference: walking the function in program order, buffers live at the same
   time interfere (the union over all their ranges). The annotations are checked
   on the way (operand not an LDS alloc, double ``live_in``, ``live_out`` without
   ``live_in``, a range never closed, a buffer accessed without any range).
B. Colouring: buffers sorted by byte size, ascending and stable; each takes the
   first run of consecutive colours none of its neighbours hold and that adds up
   to its size. A colour is created, 16-byte aligned, by the first buffer that
   needs it, so a bigger buffer chains several colours.
C. Groups: the colours of each buffer are merged into one group (groups stay runs
   of consecutive colours, so every buffer is contiguous); a colour's offset is the
   size of the colours before it in its group. The total is checked against the
   chip's LDS per workgroup (``pagedir.arch``).
D. Barriers: a ``rock.lds_barrier`` goes right before a ``live_in`` whose bytes were
   touched, since the last barrier, by a *different* buffer. A new range of the
   same buffer never gets one (ordering those is the job of the producer's
   barriers), and existing barriers clear the bytes of buffers no longer live.
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
returns the layout (steps A-C) without changing the IR, for reports.

Options: ``arch`` (chip or target string; empty: the kernel's ``rock.arch``; one
naming another chip than the kernel's, or neither, is an error: ``pagedir.arch.kernel_chip``).

Not modelled: interference is per buffer, not per range (two buffers that
overlap once are kept apart everywhere); a barrier needed inside ``scf.if`` is
placed before the ``scf.if`` (every thread must reach a barrier), which assumes
the previous occupant's accesses are not inside that same ``scf.if``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mlir.ir as ir
from mlir.dialects import arith, memref

from pagedir.arch import ChipError, get_chip, kernel_chip
from pagedir.diagnostics import file_position
from pagedir.dialect import rock
from pagedir.dialect.effects import UnknownEffects, accesses, walk_ops
from pagedir.dialect.types import is_lds, memref_bytes
from pagedir.passes.base import Pass, kernel_functions

ALIGNMENT = 16
#: Ops whose body may run on some threads only: a barrier inside them could hang the workgroup.
CONDITIONAL_OPS = frozenset({"scf.if", "scf.index_switch"})


@dataclass(frozen=True)
class ReuseLDSOptions:
    #: Chip or target string for the LDS limit; empty means each kernel's own ``rock.arch``.
    arch: str = ""

    def __post_init__(self) -> None:
        if self.arch:
            get_chip(self.arch)


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
    colours: list[list[int]] = field(default_factory=list)
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
    if len(layout.allocs) >= 2:
        for live_in in barrier_points(func, layout):
            rock.lds_barrier(loc=live_in.location, ip=ir.InsertionPoint(barrier_anchor(live_in)))
    erase_annotations(func)
    if len(layout.allocs) >= 2:
        rewrite(func, layout)
    return True


def plan(func: ir.Operation) -> LdsPlan:
    """Steps A-C for an annotated kernel function; raises :class:`PlanError` on invalid input."""
    allocs = [op for op in ops_in_order(func) if op.name == "rock.alloc" and is_lds(op.results[0].type)]
    layout = LdsPlan(allocs, [memref_bytes(a.results[0].type) for a in allocs], interference_graph(func, allocs))
    if len(allocs) < 2:
        layout.groups = list(layout.sizes)
        layout.group_of = list(range(len(allocs)))
        layout.offsets = [0] * len(allocs)
        return layout
    check_byte_buffers(allocs)
    check_every_access_annotated(func, allocs, layout.interference)
    colour_sizes = colour(layout)
    merge_colours(layout, colour_sizes)
    return layout


def ops_in_order(func: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []
    walk_ops(func, found.append)
    return found


# ----------------------------------------------------------------------------
# Step A: interference graph, checking the annotations on the way.


def interference_graph(func: ir.Operation, allocs: list[ir.Operation]) -> list[set[int]]:
    index = {alloc.results[0]: i for i, alloc in enumerate(allocs)}
    neighbours: list[set[int]] = [set() for _ in allocs]
    opened_by: dict[int, ir.Operation] = {}
    for op in ops_in_order(func):
        if op.name not in ("rock.live_in", "rock.live_out"):
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
            for other in opened_by:
                neighbours[which].add(other)
                neighbours[other].add(which)
            opened_by[which] = op
        else:
            if opened_by.pop(which, None) is None:
                raise PlanError(op, f"'rock.live_out' op LDS buffer {name} is not live: no rock.live_in opens this range")
    for which, live_in in opened_by.items():
        raise PlanError(
            live_in, f"'rock.live_in' op the live range of LDS buffer {allocs[which].results[0].get_name()} is never closed by rock.live_out"
        )
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


def colour(layout: LdsPlan) -> list[int]:
    """Give each buffer a run of consecutive colours; returns the byte size of each colour."""
    colour_sizes: list[int] = []
    layout.colours = [[] for _ in layout.allocs]
    by_size = sorted(range(len(layout.allocs)), key=lambda i: layout.sizes[i])  # sorted() is stable
    for i in by_size:
        forbidden = {c for n in layout.interference[i] for c in layout.colours[n]}
        run: list[int] = []
        collected = 0
        candidate = 0
        while collected < layout.sizes[i]:
            if candidate in forbidden:
                run, collected = [], 0
            else:
                if candidate == len(colour_sizes):
                    colour_sizes.append(align_up(layout.sizes[i] - collected))
                run.append(candidate)
                collected += colour_sizes[candidate]
            candidate += 1
        layout.colours[i] = run
    return colour_sizes


def merge_colours(layout: LdsPlan, colour_sizes: list[int]) -> None:
    """Merge each buffer's colours into the group of its first colour; fill groups and offsets."""
    group_root = list(range(len(colour_sizes)))
    members: list[list[int]] = [[c] for c in range(len(colour_sizes))]
    by_size = sorted(range(len(layout.allocs)), key=lambda i: layout.sizes[i])
    for i in by_size:
        root = group_root[layout.colours[i][0]]
        for c in layout.colours[i][1:]:
            absorbed = group_root[c]
            if absorbed == root:
                continue
            members[root].extend(members[absorbed])
            for m in members[absorbed]:
                group_root[m] = root
            members[absorbed] = []
    colour_offset = [0] * len(colour_sizes)
    group_index: dict[int, int] = {}
    for root, colours in enumerate(members):
        if not colours:
            continue
        group_index[root] = len(layout.groups)
        size = 0
        for c in colours:
            colour_offset[c] = size
            size += colour_sizes[c]
        layout.groups.append(size)
    for i in range(len(layout.allocs)):
        first = layout.colours[i][0]
        layout.group_of.append(group_index[group_root[first]])
        layout.offsets.append(colour_offset[first])


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


def barrier_points(func: ir.Operation, layout: LdsPlan) -> list[ir.Operation]:
    """The ``live_in`` ops that need a barrier before them."""
    owner_of = {alloc.results[0]: i for i, alloc in enumerate(layout.allocs)}
    live: set[int] = set()
    dirty: dict[int, int] = {}  # colour -> buffer that touched it since the last barrier
    needed: list[ir.Operation] = []
    for op in ops_in_order(func):
        if op.name == "rock.lds_barrier":
            dirty = {c: who for c, who in dirty.items() if c in live}
        elif op.name == "rock.live_in":
            which = owner_of[op.operands[0]]
            colours = layout.colours[which]
            if any(dirty.get(c, which) != which for c in colours):
                needed.append(op)
                dirty = {c: who for c, who in dirty.items() if c in live}
            live.update(colours)
            dirty.update(dict.fromkeys(colours, which))
        elif op.name == "rock.live_out":
            live.difference_update(layout.colours[owner_of[op.operands[0]]])
    return needed


def barrier_anchor(live_in: ir.Operation) -> ir.Operation:
    """``live_in`` itself, or the outermost directly enclosing conditional op."""
    anchor = live_in
    parent = live_in.parent
    while parent is not None and parent.name in CONDITIONAL_OPS:
        anchor = parent
        parent = parent.parent
    return anchor


# ----------------------------------------------------------------------------
# Step E: pooled allocs at the entry, a view per old alloc.


def erase_annotations(func: ir.Operation) -> None:
    for op in ops_in_order(func):
        if op.name in ("rock.live_in", "rock.live_out"):
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
