"""Lock-step SIMT execution of a function: compile once to closures, run per batch of workgroups.

Every SSA value holds one entry per lane: a numpy array whose first axis has
length ``lanes`` (one lane per thread of the workgroups of the current batch) or
1 (the value is the same on every lane; numpy broadcasting does the rest).
Vectors add their shape after the lane axis.

Each block is compiled once into a list of closures ``f(env, mask)``: ``env``
is a list indexed by the value numbers given at compile time, ``mask`` is None
(every lane active) or a boolean array over lanes. Divergent ``scf.if`` runs
both sides under complementary masks; ``scf.for`` with bounds that differ
between lanes runs the longest trip count with a mask per iteration. Stores
only touch active lanes. A barrier reached by part of a workgroup is an error.

Several workgroups run side by side as one wide batch (their lanes
concatenated; LDS has one copy per workgroup), which is what makes the
interpreter fast: the per-op Python cost is paid once per batch. A batch holds
``MAX_LANES`` lanes; running with ``MAX_LANES`` at most one workgroup's threads
gives the plain one-workgroup-at-a-time execution, with the same results bit for
bit. Workgroups of a batch diverge like threads: a loop whose trip count differs
between workgroups runs masked iterations, and a barrier reached by some
workgroups of the batch (a workgroup-uniform branch) ends the race interval of
those workgroups only.

Handlers keep one interface: ``compile(program, op) -> closure(env, mask)``;
memory ops read 0 for inactive lanes and never touch memory for them, so a value
computed from an inactive lane's load cannot fail a check.
"""

from __future__ import annotations

from typing import Any, Callable

import mlir.ir as ir
import numpy as np

from pagedir.interp.memory import Device, Elem, InterpError, Space, elem_named

Closure = Callable[[list, Any], None]

#: Ops that end a block: their operands are the block's results.
TERMINATORS = frozenset({"scf.yield", "scf.condition", "func.return", "gpu.return", "affine.yield"})

#: op name -> compile function ``(program, op) -> closure or None``; filled by the ops_* modules.
HANDLERS: dict[str, Callable[[Program, Any], Closure | None]] = {}

#: Lanes of one batch (8 workgroups of 256 threads): wide enough that an op's Python cost is shared by
#: many lanes, narrow enough that its arrays stay in cache and that workgroups with different trip
#: counts (causal, ragged) waste few masked iterations. The prefill check B=1, 32/8 heads, 512x512
#: causal ran its L6 kernel in 52 / 22 / 16 / 19 / 23 s of CPU at 256 / 1024 / 2048 / 4096 / 16384 lanes.
MAX_LANES = 2048


def handles(*names: str):
    def register(fn):
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register


# ----------------------------------------------------------------------------
# Lane helpers


def widen(value: np.ndarray, lanes: int) -> np.ndarray:
    if value.shape[0] == lanes:
        return value
    return np.broadcast_to(value, (lanes, *value.shape[1:]))


def select(mask: np.ndarray, new: Any, old: Any) -> Any:
    """Per lane: ``new`` where ``mask``, else ``old`` (memref values must agree)."""
    if not isinstance(new, np.ndarray) or not isinstance(old, np.ndarray):
        if new is old:
            return new
        merged = getattr(new, "select", None)
        if merged is None:
            raise InterpError(f"cannot merge values of type {type(new).__name__} across divergent lanes")
        return merged(mask, old)
    shape = (mask.shape[0],) + (1,) * (max(new.ndim, old.ndim) - 1)
    return np.where(mask.reshape(shape), new, old)


def as_uniform(value: np.ndarray, mask: Any) -> int | None:
    """The lane-independent integer value, or None when the active lanes disagree."""
    if value.shape[0] == 1:
        return int(value[0])
    active = value if mask is None else value[mask]
    if active.size == 0:
        return None
    first = active[0]
    return int(first) if (active == first).all() else None


def elem_of(type_: ir.Type) -> Elem:
    if isinstance(type_, (ir.VectorType, ir.MemRefType)):
        type_ = type_.element_type
    return elem_named(str(type_))


def vector_shape(type_: ir.Type) -> tuple[int, ...]:
    return tuple(ir.VectorType(type_).shape) if isinstance(type_, ir.VectorType) else ()


# ----------------------------------------------------------------------------
# Runtime state of one batch of workgroups


class Runtime:
    """What the closures read while running one batch: lanes, ids, memories."""

    def __init__(self, program: Program, device: Device, grid: int, block: int, first_group: int, groups: int):
        self.program = program
        self.device = device
        self.grid = grid
        self.block = block
        self.groups = groups
        self.lanes = groups * block
        lane = np.arange(self.lanes, dtype=np.int64)
        self.tid = lane % block
        self.group_id = lane // block + first_group
        self.group_first_lane = np.arange(groups, dtype=np.int64) * block
        self.all_lanes = lane
        self.spaces: dict[int, Space] = {}
        self.lds_spaces: list[Space] = []

    def space(self, key: int, kind: str, nbytes: int, name: str, location: Any = None) -> Space:
        """The LDS (one copy per workgroup) or private (one per lane) buffer of an allocating op."""
        space = self.spaces.get(key)
        if space is None:
            per_copy = self.block if kind == "lds" else 1
            space = Space(kind, nbytes, self.lanes, per_copy, track=kind == "lds", name=name, location=location)
            self.spaces[key] = space
            if kind == "lds":
                self.lds_spaces.append(space)
        return space

    def active_lanes(self, mask: Any) -> np.ndarray:
        return self.all_lanes if mask is None else np.nonzero(mask)[0]

    def barrier(self, mask: Any, op_id: int) -> None:
        if mask is not None:
            per_group = mask.reshape(self.groups, self.block)
            partial = per_group.any(axis=1) & ~per_group.all(axis=1)
            if partial.any():
                group = int(np.argmax(partial))
                count = int(per_group[group].sum())
                raise InterpError(
                    f"{self.program.op_name(op_id)} reached by {count} of {self.block} threads of workgroup "
                    f"{int(self.group_id[group * self.block])} (a barrier in divergent control flow)",
                    self.program.op_location(op_id),
                )
            arrived = np.nonzero(per_group.all(axis=1))[0]
            if len(arrived) < self.groups:
                # Workgroups of the batch that did not reach this barrier (a workgroup-uniform branch)
                # keep their accesses since their own last barrier.
                for space in self.lds_spaces:
                    space.barrier(arrived)
                return
        for space in self.lds_spaces:
            space.barrier()

    def check_in_flight(self, space: Space, units: np.ndarray, who: np.ndarray, op_id: int, action: str) -> None:
        """An access of LDS ``units`` by lanes ``who`` while a direct-to-LDS load still writes some of them (its
        wave has not waited for it: ``pagedir.interp.ops_lds_dma``; or a ``cp.async`` whose thread has not
        waited for its group: ``pagedir.interp.ops_nvvm``) is a race."""
        pending = space.in_flight[units]
        if not pending.any():
            return
        i = int(np.argmax(pending != 0))
        lane, program = int(who[i]), self.program
        dma_op = int(pending[i]) - 1
        byte = int(units[i]) * Space.UNIT - int(space.lane_base[lane])
        if program.op_name(dma_op).startswith("nvvm.cp.async"):  # pagedir.interp.ops_nvvm: per-thread groups
            how = "copies into shared memory, before the issuing thread waited for its group (cp.async.wait.group)"
        else:
            how = "loads into LDS, before its wave waited for that load (s_waitcnt vmcnt)"
        raise InterpError(
            f"LDS race in workgroup {int(self.group_id[lane])}: {program.op_name(op_id)} in thread {int(self.tid[lane])} "
            f"{action} byte {byte} of {space.name} that {program.op_name(dma_op)} at {program.op_where(dma_op)} {how}",
            program.op_location(op_id),
        )

    def race(self, space: Space, unit: int, lane: int, op_id: int, action: str, other: int, other_op: int, other_action: str) -> None:
        program = self.program
        copy_lane = lane if lane >= 0 else other
        byte = unit * Space.UNIT - int(space.lane_base[copy_lane]) if copy_lane >= 0 else unit * Space.UNIT
        group = int(self.group_id[copy_lane]) if copy_lane >= 0 else int(self.group_id[0])

        def thread(number: int) -> str:
            if number == -3:
                return "the workgroup"
            return "another thread" if number < 0 else f"thread {int(self.tid[number])}"

        by_other = thread(other)
        raise InterpError(
            f"LDS race in workgroup {group}: {program.op_name(op_id)} in {thread(lane)} {action} "
            f"byte {int(byte)} of {space.name} that {by_other} {other_action} with "
            f"{program.op_name(other_op)} at {program.op_where(other_op)} since the last barrier",
            program.op_location(op_id),
        )


# ----------------------------------------------------------------------------
# Compilation


class Program:
    """A function compiled to closures; run it with :meth:`execute`."""

    def __init__(self, func_op: Any):
        self.func = func_op.operation if hasattr(func_op, "operation") else func_op
        self.slots: dict[ir.Value, int] = {}
        self.ops: list[tuple[str, Any]] = []
        self.rt: Runtime | None = None
        self.executed = 0  # thread-instructions executed (active lanes x ops), for the benchmark
        self.count_instructions = False
        self._wave_size: int | None = None
        block = self.func.regions[0].blocks[0]
        self.args = list(block.arguments)
        self.arg_slots = [self.slot(a) for a in self.args]
        self.body, _ = self.compile_block(block)

    @property
    def wave_size(self) -> int:
        """Lanes per wave of the function's chip, looked up when an op first needs it (a function
        naming no chip runs as long as nothing depends on the wave size)."""
        if self._wave_size is None:
            from pagedir.interp.launch import wave_size

            self._wave_size = wave_size(self.func)
        return self._wave_size

    @wave_size.setter
    def wave_size(self, lanes: int) -> None:
        self._wave_size = lanes

    # values and ops

    def slot(self, value: ir.Value) -> int:
        number = self.slots.get(value)
        if number is None:
            number = self.slots[value] = len(self.slots)
        return number

    def op_id(self, op: Any) -> int:
        operation = op.operation if hasattr(op, "operation") else op
        self.ops.append((operation.name, operation.location))
        return len(self.ops) - 1

    def op_name(self, op_id: int) -> str:
        return self.ops[op_id][0]

    def op_location(self, op_id: int) -> Any:
        return self.ops[op_id][1]

    def op_where(self, op_id: int) -> str:
        return InterpError("", self.ops[op_id][1]).where()

    # blocks and regions

    def compile_block(self, block: ir.Block) -> tuple[list[Closure], list[int]]:
        closures: list[Closure] = []
        results: list[int] = []
        for op in block.operations:
            name = op.operation.name
            if name in TERMINATORS:
                results = [self.slot(v) for v in op.operation.operands]
                continue
            handler = HANDLERS.get(name)
            if handler is None:
                raise InterpError(f"the interpreter does not support {name}", op.operation.location)
            closure = handler(self, op)
            if closure is not None:
                closures.append(self._counted(closure) if self.count_instructions else closure)
        return closures, results

    def _counted(self, closure: Closure) -> Closure:
        def run(env: list, mask: Any) -> None:
            self.executed += self.rt.lanes if mask is None else int(mask.sum())
            closure(env, mask)

        return run

    def compile_region(self, region: ir.Region) -> tuple[list[int], list[Closure], list[int]]:
        """(argument slots, closures, result slots) of a single-block region."""
        blocks = list(region.blocks)
        if len(blocks) != 1:
            raise InterpError(f"regions with {len(blocks)} blocks are not supported", region.owner.location)
        block = blocks[0]
        closures, results = self.compile_block(block)
        return [self.slot(a) for a in block.arguments], closures, results

    # running

    def execute(self, args: list[Any], device: Device, grid: int, block: int, setup: Callable[[Runtime, list], None] | None = None) -> None:
        per_batch = max(1, MAX_LANES // max(1, block))
        for first in range(0, grid, per_batch):
            groups = min(per_batch, grid - first)
            self.rt = Runtime(self, device, grid, block, first, groups)
            env: list[Any] = [None] * len(self.slots)
            for slot, value in zip(self.arg_slots, args):
                env[slot] = value
            if setup is not None:
                setup(self.rt, env)
            with np.errstate(all="ignore"):
                run_closures(self.body, env, None)


def run_closures(closures: list[Closure], env: list, mask: Any) -> None:
    for closure in closures:
        closure(env, mask)
