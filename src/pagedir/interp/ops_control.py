"""scf (for, if, while, execute_region) and affine.apply / min / max."""

from __future__ import annotations

from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.interp.memory import InterpError
from pagedir.interp.simt import Program, as_uniform, elem_of, handles, run_closures, select, widen


#: Iterations one loop may run in one execution: far more than any kernel the interpreter
#: can finish (10**7 iterations of an empty body take minutes); past it a loop is reported
#: at its location instead of running for hours.
MAX_LOOP_ITERATIONS = 1 << 24


def too_many_iterations(what: str, location: Any) -> InterpError:
    return InterpError(f"{what}, more than the interpreter's limit of {MAX_LOOP_ITERATIONS} per loop", location)


@handles("scf.for")
def compile_for(p: Program, op: Any) -> Any:
    """Bounds compare signed, or unsigned with ``unsignedCmp``; the induction variable has
    the bounds' type (an i8 counter computes in i8 like every other i8 value)."""
    operands = [p.slot(v) for v in op.operation.operands]
    lower, upper, step, inits = operands[0], operands[1], operands[2], operands[3:]
    (iv, *carried_args), body, yields = p.compile_region(op.operation.regions[0])
    results = [p.slot(r) for r in op.operation.results]
    op_id = p.op_id(op)
    counter = LoopCounter(elem_of(op.operation.operands[0].type).compute, "unsignedCmp" in op.operation.attributes)

    def run(env: list, mask: Any) -> None:
        carried = [env[s] for s in inits]
        lo, hi, st = as_uniform(env[lower], mask), as_uniform(env[upper], mask), as_uniform(env[step], mask)
        if lo is not None and hi is not None and st is not None:
            lo, hi, st = counter.number(lo), counter.number(hi), counter.number(st)
            if st <= 0:
                raise InterpError(f"scf.for step must be positive, got {st}", p.op_location(op_id))
            if len(range(lo, hi, st)) > MAX_LOOP_ITERATIONS:
                raise too_many_iterations(f"scf.for runs {len(range(lo, hi, st))} iterations", p.op_location(op_id))
            for i in range(lo, hi, st):
                env[iv] = counter.value([i])
                for s, v in zip(carried_args, carried):
                    env[s] = v
                run_closures(body, env, mask)
                carried = [env[s] for s in yields]
        else:
            carried = _divergent_for(p, env, mask, op_id, counter, lower, upper, step, iv, carried_args, body, yields, carried)
        for s, v in zip(results, carried):
            env[s] = v

    return run


class LoopCounter:
    """How an scf.for reads its bounds and makes its induction variable: bounds are exact
    Python integers (unsigned ones as such), the variable the bounds' dtype."""

    def __init__(self, dtype: np.dtype, unsigned: bool):
        self.dtype = np.dtype(dtype)
        self.integer = self.dtype.kind == "i"
        self.modulus = 1 << (8 * self.dtype.itemsize) if self.integer else None
        self.unsigned = unsigned and self.integer

    def number(self, value: int) -> int:
        return int(value) % self.modulus if self.unsigned else int(value)

    def value(self, numbers: list[int]) -> np.ndarray:
        if not self.integer:
            return np.array(numbers, dtype=np.int64)
        unsigned = np.dtype(f"u{self.dtype.itemsize}")
        return np.array([n % self.modulus for n in numbers], dtype=unsigned).astype(self.dtype)


def _divergent_for(p, env, mask, op_id, counter, lower, upper, step, iv, carried_args, body, yields, carried):
    """Lanes with their own bounds: run the longest trip count, each lane active for its own trips."""
    lanes = p.rt.lanes
    lo, hi, st = ([counter.number(x) for x in widen(env[s], lanes)] for s in (lower, upper, step))
    active_steps = st if mask is None else [x for x, on in zip(st, mask) if on]
    if any(x <= 0 for x in active_steps):
        raise InterpError("scf.for step must be positive", p.op_location(op_id))
    trips = np.array([max(0, -((a - b) // (c if c > 0 else 1))) for a, b, c in zip(lo, hi, st)], dtype=np.int64)
    if mask is not None:
        trips = np.where(mask, trips, 0)
    if int(trips.max(initial=0)) > MAX_LOOP_ITERATIONS:
        raise too_many_iterations(f"scf.for runs {int(trips.max(initial=0))} iterations", p.op_location(op_id))
    for k in range(int(trips.max(initial=0))):
        live = trips > k
        env[iv] = counter.value([a + k * c for a, c in zip(lo, st)])
        for s, v in zip(carried_args, carried):
            env[s] = v
        run_closures(body, env, live)
        carried = [select(live, env[s], old) for s, old in zip(yields, carried)]
    return carried


@handles("scf.if")
def compile_if(p: Program, op: Any) -> Any:
    operation = op.operation
    condition = p.slot(operation.operands[0])
    _, then_body, then_yields = p.compile_region(operation.regions[0])
    has_else = len(operation.regions) > 1 and len(list(operation.regions[1].blocks)) > 0
    else_body, else_yields = ([], [])
    if has_else:
        _, else_body, else_yields = p.compile_region(operation.regions[1])
    results = [p.slot(r) for r in operation.results]

    def branch(env: list, mask: Any, body: list, yields: list) -> list:
        run_closures(body, env, mask)
        return [env[s] for s in yields]

    def run(env: list, mask: Any) -> None:
        cond = env[condition]
        if cond.shape[0] == 1:
            taken = bool(cond[0])
        else:
            then_mask = cond if mask is None else (cond & mask)
            if not then_mask.any():
                taken = False
            elif (then_mask == (True if mask is None else mask)).all():
                taken = True
            else:
                taken = None
        if taken is True:
            values = branch(env, mask, then_body, then_yields)
        elif taken is False:
            values = branch(env, mask, else_body, else_yields) if has_else else []
        else:
            else_mask = ~cond if mask is None else (~cond & mask)
            then_values = branch(env, then_mask, then_body, then_yields)
            values = then_values
            if has_else and else_mask.any():
                else_values = branch(env, else_mask, else_body, else_yields)
                values = [select(cond, t, e) for t, e in zip(then_values, else_values)]
        for s, v in zip(results, values):
            env[s] = v

    return run


@handles("scf.execute_region")
def compile_execute_region(p: Program, op: Any) -> Any:
    _, body, yields = p.compile_region(op.operation.regions[0])
    results = [p.slot(r) for r in op.operation.results]

    def run(env: list, mask: Any) -> None:
        run_closures(body, env, mask)
        for s, y in zip(results, yields):
            env[s] = env[y]

    return run


@handles("scf.while")
def compile_while(p: Program, op: Any) -> Any:
    operation = op.operation
    inits = [p.slot(v) for v in operation.operands]
    before_args, before, condition = p.compile_region(operation.regions[0])
    after_args, after, yields = p.compile_region(operation.regions[1])
    results = [p.slot(r) for r in operation.results]
    location = operation.location

    def run(env: list, mask: Any) -> None:
        values = [env[s] for s in inits]
        active = mask
        finished: list | None = None
        iterations = 0
        while True:
            iterations += 1
            if iterations > MAX_LOOP_ITERATIONS:
                raise too_many_iterations(f"scf.while has not finished after {MAX_LOOP_ITERATIONS} iterations", location)
            for s, v in zip(before_args, values):
                env[s] = v
            run_closures(before, env, active)
            cond, forwarded = env[condition[0]], [env[s] for s in condition[1:]]
            if cond.shape[0] == 1 and active is None:
                if not cond[0]:
                    finished = forwarded
                    break
                stay = None
            else:
                lanes = p.rt.lanes
                stay = widen(cond, lanes) & (True if active is None else active)
                leaving = (True if active is None else active) & ~stay
                finished = forwarded if finished is None else [select(leaving, f, old) for f, old in zip(forwarded, finished)]
                if not stay.any():
                    break
            for s, v in zip(after_args, forwarded):
                env[s] = v
            run_closures(after, env, stay)
            values = [env[s] for s in yields]
            active = stay
        for s, v in zip(results, finished):
            env[s] = v

    return run


# ----------------------------------------------------------------------------
# affine


def affine_source(expr: ir.AffineExpr, num_dims: int) -> str:
    """Python source of an affine expression over ``a[0..]`` (dims, then symbols)."""
    if isinstance(expr, ir.AffineConstantExpr):
        return f"({expr.value})"
    if isinstance(expr, ir.AffineDimExpr):
        return f"a[{expr.position}]"
    if isinstance(expr, ir.AffineSymbolExpr):
        return f"a[{num_dims + expr.position}]"
    for kind, template in (
        (ir.AffineAddExpr, "({} + {})"),
        (ir.AffineMulExpr, "({} * {})"),
        (ir.AffineModExpr, "({} % {})"),
        (ir.AffineFloorDivExpr, "({} // {})"),
        (ir.AffineCeilDivExpr, "(-((-{}) // {}))"),
    ):
        if isinstance(expr, kind):
            return template.format(affine_source(expr.lhs, num_dims), affine_source(expr.rhs, num_dims))
    raise InterpError(f"unsupported affine expression {expr}")


def affine_function(affine_map: ir.AffineMap) -> Any:
    """``f(list of operand arrays) -> list of result arrays`` (floor division and non-negative mod)."""
    sources = [affine_source(e, affine_map.n_dims) for e in affine_map.results]
    return eval(f"lambda a: [{', '.join(sources)}]")  # noqa: S307 - text built above from the map


def _as_int(values: list) -> list:
    return [np.asarray(v, dtype=np.int64) if not isinstance(v, np.ndarray) else v for v in values]


@handles("affine.apply")
def compile_affine_apply(p: Program, op: Any) -> Any:
    fn = affine_function(ir.AffineMapAttr(op.operation.attributes["map"]).value)
    operands = [p.slot(v) for v in op.operation.operands]
    result = p.slot(op.operation.results[0])

    def run(env: list, mask: Any) -> None:
        value = fn([env[s] for s in operands])[0]
        env[result] = value if isinstance(value, np.ndarray) else np.array([value], dtype=np.int64)

    return run


@handles("affine.min", "affine.max")
def compile_affine_min_max(p: Program, op: Any) -> Any:
    fn = affine_function(ir.AffineMapAttr(op.operation.attributes["map"]).value)
    operands = [p.slot(v) for v in op.operation.operands]
    result = p.slot(op.operation.results[0])
    reduce = np.minimum if op.operation.name == "affine.min" else np.maximum

    def run(env: list, mask: Any) -> None:
        values = _as_int(fn([env[s] for s in operands]))
        out = values[0]
        for v in values[1:]:
            out = reduce(out, v)
        env[result] = np.atleast_1d(out).astype(np.int64)

    return run
