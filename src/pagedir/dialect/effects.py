"""Memory effects of the ops pagedir sees, and the accesses of a buffer through its views.

The Python API cannot query ``MemoryEffectOpInterface``, so effects come from
two places: the declarations of rock ops (``Operand.effect``) and the table
below for the upstream ops we use. :func:`memory_effects` returns ``None`` for
an op whose effects are unknown: callers must treat that as an error rather
than guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import mlir.ir as ir

from pagedir.dialect import op_def_of
from pagedir.dialect.core import declared_effects, declared_overwrites

READ, WRITE = "read", "write"

# Upstream ops that only create a view of operand 0 (the source), without accessing memory
# (extract_strided_metadata's first result is the source's base buffer).
VIEW_OPS = frozenset(
    {
        "memref.extract_strided_metadata",
        "memref.view",
        "memref.subview",
        "memref.expand_shape",
        "memref.collapse_shape",
        "memref.cast",
        "memref.reinterpret_cast",
        "memref.transpose",
        "memref.memory_space_cast",
        "memref.assume_alignment",
    }
)

# Upstream ops that take a memref but do not touch its contents. Not
# extract_aligned_pointer_as_index: what reads the buffer through the integer it
# gives cannot be followed, so its effects are unknown.
NO_ACCESS_OPS = frozenset({"memref.dim", "memref.dealloc"})

# name -> list of (operand index, effect); operand index counts from the start of the op's operands.
UPSTREAM_EFFECTS: dict[str, tuple[tuple[int, str], ...]] = {
    "memref.load": ((0, READ),),
    "memref.store": ((1, WRITE),),
    "memref.copy": ((0, READ), (1, WRITE)),
    "memref.atomic_rmw": ((1, READ), (1, WRITE)),
    "vector.load": ((0, READ),),
    "vector.store": ((1, WRITE),),
    "vector.maskedload": ((0, READ),),
    "vector.maskedstore": ((0, WRITE),),
    "vector.transfer_read": ((0, READ),),
    "vector.transfer_write": ((1, WRITE),),
    "vector.gather": ((0, READ),),
    "vector.scatter": ((0, WRITE),),
    "affine.load": ((0, READ),),
    "affine.store": ((1, WRITE),),
    "nvgpu.ldmatrix": ((0, READ),),
}


def memory_effects(op: ir.Operation) -> list[tuple[ir.Value, str]] | None:
    """(value, 'read'|'write') pairs for ``op``; [] for ops without memory effects on operands;
    None when the effects are unknown."""
    op_def = op_def_of(op)
    if op_def is not None:
        if op_def.marker:
            return []
        return declared_effects(op_def, op)
    name = op.name
    if name in UPSTREAM_EFFECTS:
        operands = list(op.operands)
        return [(operands[i], kind) for i, kind in UPSTREAM_EFFECTS[name]]
    if name in VIEW_OPS or name in NO_ACCESS_OPS:
        return []
    if not any(isinstance(v.type, ir.MemRefType) for v in op.operands):
        return []  # no memref operand: nothing to say about buffers
    return None


#: Upstream ops that write every element of an operand each time they run (operand indices).
UPSTREAM_OVERWRITES: dict[str, tuple[int, ...]] = {"memref.copy": (1,)}


def overwritten_operands(op: ir.Operation) -> list[ir.Value]:
    """Operands of ``op`` whose every element each run of ``op`` writes (the workgroup together,
    for rock ops): declared with ``overwrites`` on rock ops, from the table above for upstream ops."""
    op_def = op_def_of(op)
    if op_def is not None:
        return [] if op_def.marker else declared_overwrites(op_def, op)
    operands = list(op.operands)
    return [operands[i] for i in UPSTREAM_OVERWRITES.get(op.name, ())]


def is_view(op: ir.Operation) -> bool:
    return op.name in VIEW_OPS


def view_source(value: ir.Value) -> ir.Value:
    """Follow views back to the buffer they look into."""
    while isinstance(value.owner, ir.Operation | ir.OpView) and is_view(value.owner.operation):
        value = value.owner.operation.operands[0]
    return value


def root_alloc(value: ir.Value) -> ir.Operation | None:
    """The ``rock.alloc`` a value is a view of, or None."""
    source = view_source(value)
    owner = source.owner
    if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "rock.alloc":
        return owner.operation
    return None


@dataclass
class Access:
    """One op accessing a buffer: the op, whether it reads and/or writes, and the value it uses."""

    op: ir.Operation
    reads: bool
    writes: bool
    through: ir.Value


class UnknownEffects(Exception):
    """An op uses the buffer but its effects are unknown (carries the op)."""

    def __init__(self, op: ir.Operation):
        super().__init__(f"unknown memory effects of '{op.name}'")
        self.op = op


def aliases(buffer: ir.Value) -> list[ir.Value]:
    """``buffer`` and every view derived from it (transitively)."""
    found, work = [], [buffer]
    while work:
        value = work.pop()
        found.append(value)
        for use in value.uses:
            user = use.owner
            if is_view(user) and user.operands[0] == value:
                work.extend(r for r in user.results if isinstance(r.type, ir.MemRefType))
    return found


def walk_ops(root: ir.Operation, fn: Callable[[ir.Operation], None]) -> None:
    """Pre-order walk of every op nested in ``root`` (not ``root`` itself), in program order.

    The walk is the bindings' own (a Python loop over regions, blocks and ops costs
    several times more per op); an exception ``fn`` raises stops it and propagates
    unchanged (the bindings would turn it into a RuntimeError).
    """
    raised: list[BaseException] = []
    is_root = True

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal is_root
        if is_root:  # pre-order: the root comes first
            is_root = False
            return ir.WalkResult.ADVANCE
        try:
            fn(op)
        except BaseException as err:  # noqa: BLE001 - re-raised below, after the walk
            raised.append(err)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    if raised:
        raise raised[0]


def accesses(buffer: ir.Value, scope: ir.Operation) -> Iterator[Access]:
    """Ops inside ``scope`` that read or write ``buffer`` through any view, in program order.

    Raises :class:`UnknownEffects` for an op that uses the buffer and whose effects are unknown.
    """
    views = set(aliases(buffer))
    # The ops using a view, from the use lists: the walk below only puts them in program order.
    users = {use.owner.operation for view in views for use in view.uses}
    result: list[Access] = []

    def visit(op: ir.Operation) -> None:
        if op not in users:
            return
        used = [v for v in op.operands if v in views]
        if is_view(op):
            return
        effects = memory_effects(op)
        if effects is None:
            raise UnknownEffects(op)
        reads = writes = False
        for value, kind in effects:
            if value in views:
                reads |= kind == READ
                writes |= kind == WRITE
        if reads or writes:
            result.append(Access(op, reads, writes, used[0]))

    walk_ops(scope, visit)
    yield from result
