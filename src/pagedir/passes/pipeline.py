"""rock-pipeline: software-pipeline the tile loads of a loop over KV tiles (L3 -> L3).

Mirrors rocMLIR's rock-pipeline, on the stages ``rock-blockwise-load`` leaves: a loop whose
body holds, per tile load, the stages that *issue* it (``PagePtrLoad``: page pointers into LDS;
``GlobalRead``: the tile's global loads into a private register buffer) and the stage that
*consumes* the registers (``LDSWrite``: registers into the LDS tile), with the tile's math after
it. Unpipelined, each iteration issues a load and waits for it at once. With depth 2 the loads
of tile ``t + 1`` are issued in iteration ``t``, right after the registers of tile ``t`` have
been written to LDS, so they are in flight during tile ``t``'s math (register staging: the LDS
tiles stay single-buffered, the register buffers carry tile ``t + 1`` across the back edge):

```
                                         if lb < ub: issue(lb)                    (prologue)
for t in [lb, ub):                       for t in [lb, last):      last = max(lb, ub - 1)
  issue(t)                                 pointers(t + 1)
  consume(t)                 becomes       consume(t); reads(t + 1)
  math(t)                                  math(t)
                                         for t in [last, ub): consume(t); math(t)   (the last tile)
```

The algorithm, per ``scf.for`` with ``rock.pipeline_depth = 2`` (or the ``depth`` option):

1. Find the load groups of the body: each ``GlobalRead`` stage with the issue stages right
   before it (a run of ``PagePtrLoad`` stages) and its consumer, the first later op of the body
   using one of the private buffers it writes.
2. Keep the groups that can move: every value their issue stages use is defined before the loop,
   is the induction variable or is a result of an earlier issue stage of the group; every LDS and
   private buffer they touch is used in the loop by the group alone (its issue stages and
   consumer), and any other buffer is global memory the loop does not write (the K and V loads
   share a block table). Other groups stay as they are (correct, only not overlapped).
3. Prologue: before the loop, under ``lb < ub`` (a split or window may leave nothing to visit),
   the issue stages of every group for tile ``lb``, one ``scf.if`` per group (``rock-reuse-lds``
   places no barrier inside a conditional, so two groups' pointer buffers could not share bytes),
   then a barrier (the first iteration writes the pointers a slow thread may still be reading).
4. Rotation, for tile ``t + 1`` (the induction variable replaced): the pointer stages of every
   group go to the top of the body, so their waits on the page table come before any tile load
   of the iteration is in flight; each ``GlobalRead`` goes right after its consumer, which has
   taken the registers of tile ``t``. A barrier goes to the top too when none follows the last
   consumer in the body.
5. Epilogue: the loop stops at ``last`` and a copy of it without the moved stages runs the last
   tile. The main loop thus issues on every path, and never a tile past ``ub``: behind a
   conditional issue the backend would have to assume no load followed and wait for all of them
   (``vmcnt(0)``); issuing tile ``ub - 1`` again would read it twice. Both loops get
   ``rock.pipelined`` (the depth done) in place of ``rock.pipeline_depth``, so the pass can run
   again and leave them alone.

Depth 1 leaves the loop as it is. The guards are uniform over the workgroup (``lb``, ``ub``
are), so the barriers inside the issue stages stay in uniform control flow. The pointer buffers
are written and read within one iteration (or the prologue) and the register buffers are
private, so no LDS buffer becomes loop-carried; ``rock-annotate-liveness`` sees the prologue's
guarded pointer write as the start of a range that ends inside the same guard.

Waits are the backend's. On gfx942 the consumer of tile ``t`` waits with ``s_waitcnt vmcnt(4)``:
for the four loads of tile ``t`` issued one iteration earlier, the four of the other tile stay in
flight (decode D 128, ``pagedir-compile --report``: "global waits"); the page-table loads still
wait with ``vmcnt(0)`` (vector loads: their wait counts every load before them).

Cost: each moved group keeps its register buffer live across the loop's math (the GlobalRead
buffer, ``rows x vector_len`` elements per thread: 16 VGPRs for a 64 x 128 f16 tile on 256
threads), its pointer buffer live across its consumer (``rock-reuse-lds`` can no longer place it
on the tile's bytes), and the loop body is there twice.

```mlir
scf.for %t = %lb to %ub step %c1 {
  scf.execute_region no_inline { ... %t ... } {rock.stage = "PagePtrLoad"}
  scf.execute_region no_inline { "rock.threadwise_read_into"(.., %regs, .., %t, ..) } {rock.stage = "GlobalRead"}
  scf.execute_region no_inline { ... %regs -> %tile ... } {rock.stage = "LDSWrite"}
  ... math on %tile ...
} {rock.pipeline_depth = 2 : i64}
// becomes
%any = arith.cmpi ult, %lb, %ub : index
%last = arith.maxsi %lb, (%ub - 1) : index
scf.if %any { PagePtrLoad(%lb) ; GlobalRead(%lb) }    // one per group
"rock.lds_barrier"()
%r = scf.for %t = %lb to %last step %c1 {
  %next = arith.addi %t, %c1 : index
  PagePtrLoad(%next)
  LDSWrite
  GlobalRead(%next)
  ... math on %tile ...
} {rock.pipelined = 2 : i64}
scf.for %t = %last to %ub step %c1 iter_args(... = %r) { LDSWrite ; ... math on %tile ... } {rock.pipelined = 2 : i64}
```

Direct-to-LDS tiles (``GlobalToLDS`` stages, ``lds_dma``): the copies land in the LDS tile itself, so
the next tile cannot be issued into a tile the math still reads. In a loop whose tiles all come that way
(K, then V) each tile is the other's second buffer: the wait at the end of each GlobalToLDS stage is
split off into an ``LDSWait`` stage that stays in place, V's issue stages move up to right after K's
wait, and K's for tile ``t + 1`` go right after V's wait (its barrier: every warp is done with Q K^T),
with the prologue and the peeled last tile as above. Each tile's copies are in flight during the other
tile's math; at each wait only its own are outstanding, so the wait keeps its count (``wait_group 0``).
The tiles no longer share LDS bytes (twice the LDS). Index arithmetic of the body that the moved
stages use (a csr table's or a dynamic kernel's offsets) is recomputed for their tile; the loop must
write no global memory. rock-gridwise-attention-to-blockwise asks for it where the family's waits let
the copies overlap (``TargetFamily.pipelined_direct_loads``: NVIDIA's cp.async, CDNA's ``buffer_load ... lds``)
and both tiles fit the chip's LDS (else a remark). On CDNA, LLVM waits (``vmcnt``) before an LDS read for
every direct-to-LDS load it cannot prove disjoint from it: rock-backend-lds-alias-scopes gives the two tiles'
copies and reads apart alias scopes, so the first read of one tile does not drain the other's copies
(docs/measurements.md).

Options: ``depth`` (0: each loop's ``rock.pipeline_depth``, 1 when it has none; 1 or 2).
Errors: a loop's ``rock.pipeline_depth`` other than 1 or 2, a pipelined loop whose step is not the
constant 1 (the next tile is ``t + 1``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mlir.ir as ir
from mlir.dialects import arith, scf

from pagedir.dialect import rock
from pagedir.dialect.effects import WRITE, UnknownEffects, accesses, is_view, memory_effects, view_source, walk_ops
from pagedir.dialect.types import memory_space
from pagedir.passes.base import Pass, kernel_functions
from pagedir.passes.ir_utils import find_ops, index_const
from pagedir.targets import FAMILIES

DEPTH_ATTR = "rock.pipeline_depth"
DONE_ATTR = "rock.pipelined"
#: Stages that issue a tile's loads (moved a tile ahead) and the one that ends the issue.
ISSUE_STAGES = frozenset({"PagePtrLoad", "GlobalRead"})
LAST_ISSUE_STAGE = "GlobalRead"
#: The direct-to-LDS stage (rock-blockwise-load's ``lds_dma`` path): the tile's copies, then the wait for them and
#: a barrier, which rock-pipeline splits off into a ``LDSWait`` stage of its own.
DMA_STAGE = "GlobalToLDS"
WAIT_STAGE = "LDSWait"
#: The ops that wait for a wave's (thread's) direct-to-LDS copies: each family's (``TargetFamily.dma_waits``).
DMA_WAITS = frozenset().union(*(family.dma_waits for family in FAMILIES.values()))
MAX_DEPTH = 2


@dataclass(frozen=True)
class PipelineOptions:
    #: Tiles in flight: 1 leaves the loop as it is, 2 issues tile t + 1's loads during tile t; 0 takes
    #: each loop's ``rock.pipeline_depth`` (1 when it has none).
    depth: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.depth <= MAX_DEPTH:
            raise ValueError(f"depth must be 0 (the loop's), 1 or 2, got {self.depth}")


class PipelinePass(Pass):
    argument = "rock-pipeline"
    summary = "Issue the tile loads of tile t + 1 during tile t of a KV loop (register staging)"
    Options = PipelineOptions

    def run(self, module: ir.Operation) -> bool:
        ok = True
        for func in kernel_functions(module):
            for loop in find_ops(func, "scf.for"):
                depth = self.options.depth or loop_depth(loop)
                if depth is None:
                    loop.location.emit_error(f"'scf.for' op {DEPTH_ATTR} must be 1 or 2, got {loop.attributes[DEPTH_ATTR]}")
                    ok = False
                elif depth > 1 and DONE_ATTR not in loop.attributes:
                    if not unit_step(loop):
                        loop.location.emit_error(f"'scf.for' op with {DEPTH_ATTR} = {depth} must step by 1 (one tile "
                                                 f"per iteration), got step {loop.operands[2].get_name()}")
                        ok = False
                        continue
                    pipeline_loop(loop, depth)
        return ok


def unit_step(loop: ir.Operation) -> bool:
    step = loop.operands[2].owner
    return (isinstance(step, ir.Operation | ir.OpView) and step.name == "arith.constant"
            and ir.IntegerAttr(step.attributes["value"]).value == 1)


def loop_depth(loop: ir.Operation) -> int | None:
    """The loop's ``rock.pipeline_depth`` (1 without one), None when it is not 1 or 2."""
    if DEPTH_ATTR not in loop.attributes:
        return 1
    attr = loop.attributes[DEPTH_ATTR]
    depth = ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else -1
    return depth if 1 <= depth <= MAX_DEPTH else None


# ----------------------------------------------------------------------------
# 1. and 2.: the load groups of the body that can move.


@dataclass
class LoadGroup:
    issue: list[ir.Operation]  # PagePtrLoad stages, then the GlobalRead stage
    consumer: ir.Operation
    buffers: set = field(default_factory=set)  # every buffer the issue stages use (views followed back)


def stage_name(op: ir.Operation) -> str | None:
    if op.name != "scf.execute_region" or "rock.stage" not in op.attributes:
        return None
    return ir.StringAttr(op.attributes["rock.stage"]).value


def load_groups(body: ir.Block) -> list[LoadGroup]:
    ops = [op.operation for op in body.operations]
    groups = []
    for i, op in enumerate(ops):
        if stage_name(op) != LAST_ISSUE_STAGE:
            continue
        first = i
        while first > 0 and stage_name(ops[first - 1]) in ISSUE_STAGES - {LAST_ISSUE_STAGE}:
            first -= 1
        registers = {view_source(v) for v in written_buffers(op) if memory_space(v.type) == "private"}
        consumer = next((later for later in ops[i + 1:] if registers & used_buffers(later)), None)
        if consumer is None:
            continue
        issue = ops[first:i + 1]
        groups.append(LoadGroup(issue, consumer, set().union(*(used_buffers(s) for s in issue))))
    return [g for g in groups if movable(g, body, ops)]


def movable(group: LoadGroup, body: ir.Block, ops: list[ir.Operation]) -> bool:
    loop = body.owner
    iv = body.arguments[0]
    produced = {result for stage in group.issue for result in stage.results}
    for value in outside_values(group.issue):
        if value != iv and value not in produced and defined_inside(value, loop):
            return False
    own = set(group.issue) | {group.consumer}
    shared = set().union(*(group.buffers & used_buffers(op) for op in ops if op not in own))
    return all(read_only_memory(buffer, loop) for buffer in shared)


def read_only_memory(buffer: ir.Value, loop: ir.Operation) -> bool:
    """Global memory the loop never writes (K and V, their tables, shared by the K and V loads):
    reading it a tile earlier reads the same values. LDS and registers are the group's own."""
    if memory_space(buffer.type) in ("workgroup", "private"):
        return False
    try:
        return not any(access.writes for access in accesses(buffer, loop))
    except UnknownEffects:
        return False


def outside_values(stages: list[ir.Operation]) -> list[ir.Value]:
    """The values the stages use that none of their own ops defines."""
    inside: set = set()
    used: list[ir.Value] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        for result in op.results:
            inside.add(result)
        for region in op.regions:
            for block in region.blocks:
                inside.update(block.arguments)
        used.extend(op.operands)
        return ir.WalkResult.ADVANCE

    for stage in stages:
        stage.walk(visit, ir.WalkOrder.PRE_ORDER)
    return [v for v in used if v not in inside]


def defined_inside(value: ir.Value, loop: ir.Operation) -> bool:
    owner = value.owner if isinstance(value, ir.OpResult) else value.owner.owner
    while owner is not None:
        if owner == loop:
            return True
        owner = owner.parent
    return False


def used_buffers(op: ir.Operation) -> set:
    """The root buffers of the memref operands of ``op`` and of the ops nested in it."""
    found: set = set()

    def visit(inner: ir.Operation) -> ir.WalkResult:
        found.update(view_source(v) for v in inner.operands if isinstance(v.type, ir.MemRefType))
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


def written_buffers(stage: ir.Operation) -> list[ir.Value]:
    """Memref operands of the stage's ops that write: the GlobalRead's register buffer (its op's
    ``dest``, the second operand of ``rock.threadwise_read_into``, or a store's target)."""
    found: list[ir.Value] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "rock.threadwise_read_into":
            found.append(op.operands[1])
        elif op.name in ("memref.store", "vector.store"):
            found.append(op.operands[1])
        return ir.WalkResult.ADVANCE

    stage.walk(visit)
    return found


# ----------------------------------------------------------------------------
# 3. to 5.: prologue, rotation, marking.


def pipeline_loop(loop: ir.Operation, depth: int) -> None:
    body = loop.regions[0].blocks[0]
    if DEPTH_ATTR in loop.attributes:
        del loop.attributes[DEPTH_ATTR]
    loop.attributes[DONE_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64, loop.context), depth)
    if any(stage_name(op.operation) == DMA_STAGE for op in body.operations):
        pipeline_direct_loads(loop, body)
        return
    groups = load_groups(body)
    if not groups:
        return
    lower, upper, iv = loop.operands[0], loop.operands[1], body.arguments[0]
    with loop.location:
        # 3. The prologue, one conditional per group: rock-reuse-lds may need a barrier between two groups.
        with ir.InsertionPoint(loop):
            any_tile = arith.cmpi(arith.CmpIPredicate.ult, lower, upper)
            last = arith.maxsi(lower, arith.subi(upper, index_const(1)))  # the last tile (lb when none)
        for group in groups:
            with ir.InsertionPoint(loop):
                prologue = scf.IfOp(any_tile)
            with ir.InsertionPoint(prologue.then_block):
                copy_stages(group.issue, {iv: lower})
                scf.YieldOp([])
        # 4. The rotation: iteration t issues tile t + 1 on every path (the backend can then wait with
        # vmcnt(N > 0) for the tile issued one iteration earlier; behind a conditional issue it would
        # have to assume none followed and wait for everything).
        with ir.InsertionPoint(body.operations[0]):
            next_tile = arith.addi(iv, index_const(1))
        top = ir.InsertionPoint.after(next_tile.owner)
        if any(early_stages(g) for g in groups):
            # The pointers of tile lb + 1 are written at the top of the first iteration: every thread
            # must be done reading those of tile lb (the prologue's GlobalRead) first; likewise in
            # later iterations, unless the body has a barrier after its last consumer.
            with ir.InsertionPoint(loop):
                rock.lds_barrier()
            if not barrier_after(groups, body):
                with top:
                    rock.lds_barrier()
        issued: dict = {}
        with top:
            for group in groups:
                issued[id(group)] = copy_stages(early_stages(group), {iv: next_tile})
        ahead: list[ir.Operation] = []  # every clone issuing tile t + 1
        for group in groups:
            with ir.InsertionPoint.after(group.consumer):
                ahead += copy_stages(group.issue[len(early_stages(group)):], issued[id(group)])[AHEAD]
            for stage in group.issue:
                stage.erase()
        # 5. The epilogue: the last tile runs in a copy of the loop without the issue stages, so the
        # main loop stops one tile early and never issues a tile past ub.
        peel_last_iteration(loop, last, upper, ahead)


#: Key under which :func:`copy_stages` lists the clones it made.
AHEAD = "clones"


def peel_last_iteration(loop: ir.Operation, last: ir.Value, upper: ir.Value, ahead: list[ir.Operation]) -> None:
    """``loop`` over [lb, last) and a copy of it over [last, ub) after it, without the ``ahead`` stages."""
    for stage in ahead:
        stage.attributes["rock.ahead"] = ir.UnitAttr.get()
    epilogue = loop.clone(ip=ir.InsertionPoint.after(loop))
    loop.operands[1] = last
    epilogue.operands[0] = last
    epilogue.operands[1] = upper
    for result, init in zip(loop.results, range(3, 3 + len(loop.results))):
        for use in list(result.uses):
            if use.owner != epilogue:
                use.owner.operands[use.operand_number] = epilogue.results[result.result_number]
        epilogue.operands[init] = result
    for stage in find_ops(epilogue, "scf.execute_region"):
        if "rock.ahead" in stage.attributes:
            stage.erase()
    for stage in ahead:
        del stage.attributes["rock.ahead"]


def barrier_after(groups: list[LoadGroup], body: ir.Block) -> bool:
    """Whether the body has a barrier (at its top level) after the last consumer: it closes the reads of
    the pointers of tile t + 1 (behind the consumers) before the next iteration writes those of t + 2."""
    ops = [op.operation for op in body.operations]
    last = max(ops.index(group.consumer) for group in groups)
    return any(op.name == "rock.lds_barrier" for op in ops[last + 1:])


def early_stages(group: LoadGroup) -> list[ir.Operation]:
    """The issue stages before the GlobalRead (page pointers), which go to the top of the iteration:
    their waits on the page table then come before any tile load of the iteration is in flight."""
    return group.issue[:-1]


def copy_stages(stages: list[ir.Operation], replaced: dict) -> dict:
    """Clones of ``stages`` at the insertion point, their operands in ``replaced`` (the induction
    variable: the tile to issue) replaced; the clones' results replace the originals' in later stages.
    Returns ``replaced`` with those results added, and the clones under :data:`AHEAD`."""
    replaced = dict(replaced)
    replaced[AHEAD] = list(replaced.get(AHEAD, []))
    for stage in stages:
        clone = stage.clone()
        substitute(clone, replaced)
        replaced.update(zip(stage.results, clone.results))
        replaced[AHEAD].append(clone)
    return replaced


def substitute(op: ir.Operation, replaced: dict) -> None:
    def visit(inner: ir.Operation) -> ir.WalkResult:
        for i, operand in enumerate(inner.operands):
            if operand in replaced:
                inner.operands[i] = replaced[operand]
        return ir.WalkResult.ADVANCE

    op.walk(visit)


# ----------------------------------------------------------------------------
# Direct-to-LDS tiles (GlobalToLDS stages): the copies land in the tile itself, so tile t + 1 cannot be
# issued into a tile that tile t's math still reads. The tiles of the loop (K, then V) are each other's
# second buffer: the copies of tile j are issued right after the wait for tile j - 1 (its barrier: every
# wave is done with the math that read tile j's buffer in the iteration before), and the first tile's
# copies for t + 1 right after the last wait of iteration t:
#
#   if lb < ub: ptrs K(lb); copy K(lb)                                          (prologue)
#   for t in [lb, last):  wait K; ptrs V(t); copy V(t); S = Q K^T ...; wait V; ptrs K(t + 1); copy K(t + 1); O += P V
#   for t in [last, ub):  wait K; ptrs V(t); copy V(t); S = Q K^T ...; wait V; O += P V          (the last tile)
#
# Each tile's copies are in flight during the other tile's math; at each wait only that tile's copies are
# outstanding, so the waits keep their count (vmcnt(0), cp.async.wait_group 0) and drain nothing else.


@dataclass
class DirectLoad:
    issue: list[ir.Operation]  # PagePtrLoad stages, then the GlobalToLDS stage (its copies)
    wait: ir.Operation  # the LDSWait stage split off it
    tile: ir.Value  # the LDS buffer the copies write
    buffers: set = field(default_factory=set)


def pipeline_direct_loads(loop: ir.Operation, body: ir.Block) -> bool:
    """Schedule the loop's direct-to-LDS tiles as above; False (the loop left as it is) where it cannot."""
    loads = direct_loads(body)
    if loads is None or not direct_loads_movable(loads, body):
        return False
    for load in loads:
        load.wait = split_wait(load.issue[-1])
    lower, upper, iv = loop.operands[0], loop.operands[1], body.arguments[0]
    with loop.location:
        with ir.InsertionPoint(loop):
            any_tile = arith.cmpi(arith.CmpIPredicate.ult, lower, upper)
            last = arith.maxsi(lower, arith.subi(upper, index_const(1)))
            prologue = scf.IfOp(any_tile)
        first_chain = index_chain(loads[0].issue, loop)
        with ir.InsertionPoint(prologue.then_block):
            copy_stages(loads[0].issue, copy_stages(first_chain, {iv: lower}))
            scf.YieldOp([])
        ops = [op.operation for op in body.operations]
        for before, load in zip(loads, loads[1:]):  # tile j's copies right after tile j - 1's wait
            point = before.wait
            for op in index_chain(load.issue, loop) + load.issue:
                if op in load.issue or ops.index(op) > ops.index(before.issue[-1]):
                    op.move_after(point)
                    point = op
        with ir.InsertionPoint(body.operations[0]):
            following = arith.addi(iv, index_const(1))
        with ir.InsertionPoint.after(loads[-1].wait):
            ahead = copy_stages(loads[0].issue, copy_stages(first_chain, {iv: following}))[AHEAD][len(first_chain):]
        for stage in loads[0].issue:
            stage.erase()
        peel_last_iteration(loop, last, upper, ahead)  # the last tile: no copies past it
    return True


def direct_loads(body: ir.Block) -> list[DirectLoad] | None:
    """The body's direct-to-LDS tile loads in order, None when it also loads tiles through registers."""
    ops = [op.operation for op in body.operations]
    if any(stage_name(op) == LAST_ISSUE_STAGE for op in ops):
        return None
    loads = []
    for i, op in enumerate(ops):
        if stage_name(op) != DMA_STAGE:
            continue
        first = i
        while first > 0 and stage_name(ops[first - 1]) == "PagePtrLoad":
            first -= 1
        issue = ops[first:i + 1]
        tiles = {view_source(copy.operands[2]) for copy in find_ops(op, "rock.global_load_lds")}
        if len(tiles) != 1:
            return None
        loads.append(DirectLoad(issue, op, tiles.pop(), set().union(*(used_buffers(s) for s in issue))))
    return loads


def direct_loads_movable(loads: list[DirectLoad], body: ir.Block) -> bool:
    """Every load's stages use only values from before the loop, the induction variable and their own; its
    buffers (pointers, tile) are touched between the wait before its new place and its own wait only by its
    stages; the first tile, issued a tile ahead, is not touched after the last wait."""
    loop = body.owner
    iv = body.arguments[0]
    ops = [op.operation for op in body.operations]
    for load in loads:
        if index_chain(load.issue, loop) is None or not split_point(load.issue[-1]):
            return False
    if len({load.tile for load in loads}) != len(loads) or any(load.tile in other.buffers - {other.tile}
                                                               for load in loads for other in loads):
        return False

    if not writes_no_global_memory(loop):  # then a tile read early holds the same values
        return False

    def touched(load: DirectLoad, start: int, end: int) -> bool:
        own = set(load.issue)
        lds = {b for b in load.buffers if memory_space(b.type) == "workgroup"}
        return any(lds & used_buffers(op) for op in ops[start:end] if op not in own)

    for before, load in zip(loads, loads[1:]):  # moved up to right after the wait of the tile before it
        if touched(load, ops.index(before.issue[-1]) + 1, ops.index(load.issue[-1])):
            return False
    first, final = loads[0], loads[-1]
    after_last_wait = ops.index(final.issue[-1]) + 1
    return not touched(first, after_last_wait, len(ops)) and not touched(first, 0, ops.index(first.issue[0]))


#: Body ops a moved stage may have recomputed for its own tile: index arithmetic and sizes, no effects.
PURE_INDEX_OPS = ("arith.", "affine.apply", "index.", "memref.dim")


def index_chain(stages: list[ir.Operation], loop: ir.Operation) -> list[ir.Operation] | None:
    """The ops of the loop body (in body order) computing the values from inside the loop that ``stages`` use
    (the KV loop's tile offsets of a csr table or a dynamic kernel): pure index arithmetic of the induction
    variable and values from before the loop. None when some value is not such."""
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0]
    produced = {result for stage in stages for result in stage.results}
    pending = [v for v in outside_values(stages) if v != iv and v not in produced and defined_inside(v, loop)]
    chain: list[ir.Operation] = []
    while pending:
        value = pending.pop()
        if not isinstance(value, ir.OpResult):
            return None  # a block argument: a value carried by the loop
        op = value.owner.operation
        if op in chain:
            continue
        if op.parent.operation != loop.operation or op.regions or not op.name.startswith(PURE_INDEX_OPS):
            return None
        chain.append(op)
        pending += [v for v in op.operands if v != iv and defined_inside(v, loop)]
    ops = [op.operation for op in body.operations]
    return sorted(chain, key=ops.index)


#: LLVM ops on values only, in a loop before the LLVM lowering (the matrix products of the NVIDIA family).
LLVM_VALUE_OPS = frozenset({"llvm.extractvalue", "llvm.insertvalue", "llvm.mlir.undef", "llvm.mlir.poison",
                            "llvm.mlir.zero", "llvm.bitcast"})


def writes_no_global_memory(loop: ir.Operation) -> bool:
    """No op of the loop writes memory outside LDS and registers. Unlike :func:`read_only_memory` per buffer, an
    address taken as an integer (``memref.extract_aligned_pointer_as_index``: a block table's page addresses)
    is allowed: only an op whose effects are known to be reads or LDS writes can use it at this level."""
    ok = True

    def visit(op: ir.Operation) -> None:
        nonlocal ok
        if op.name.startswith("llvm."):  # the NVVM products' structs are values; any other LLVM op may write
            ok &= op.name in LLVM_VALUE_OPS
            return
        if op.name == "memref.extract_aligned_pointer_as_index" or is_view(op):
            return
        if not any(isinstance(v.type, ir.MemRefType) for v in op.operands):
            return
        effects = memory_effects(op)
        ok &= effects is not None and all(kind != WRITE or memory_space(v.type) in ("workgroup", "private")
                                          for v, kind in effects)

    walk_ops(loop, visit)
    return ok


def split_point(stage: ir.Operation) -> ir.Operation | None:
    """The first wait of a GlobalToLDS stage's copies (at its top level), None when it has none."""
    block = stage.regions[0].blocks[0]
    return next((op.operation for op in block.operations if op.operation.name in DMA_WAITS), None)


def split_wait(stage: ir.Operation) -> ir.Operation:
    """Move the wait and what follows it (the barrier) out of ``stage`` into a ``LDSWait`` stage after it."""
    from pagedir.passes.ir_utils import open_stage

    block = stage.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    start = ops.index(split_point(stage))
    with ir.InsertionPoint.after(stage):
        wait_block = open_stage(WAIT_STAGE, stage.location)
    with ir.InsertionPoint(wait_block):
        terminator = scf.YieldOp([])
    for op in ops[start:-1]:
        op.move_before(terminator.operation)
    return wait_block.owner
