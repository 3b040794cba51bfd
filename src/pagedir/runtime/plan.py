"""A launch plan (``pagedir-compile --plan``) evaluated on the shapes of one call's arguments.

:func:`launches` turns the plan and the argument shapes into what a launch needs: per kernel,
in the plan's ``launch_order``, its grid (``grid``, or ``grid_formula`` evaluated), block, LDS
bytes and the i64 size arguments of a dynamic kernel (``size_arguments``: one per ``?`` size,
in argument then dim order), plus the workspace's shape and bytes (``num_splits_formula``, or
the static shape of the workspace argument). The expressions are evaluated by the plan's one
evaluator, :mod:`pagedir.backend.formula` (pure Python: nothing here imports the compiler).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pagedir.backend import formula

#: Call plans kept per launcher, by argument shapes (a serving loop repeats a few shapes).
MEMO_SIZE = 512

#: Element bytes of the plan's element types.
DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i32": 4, "i64": 8, "i1": 1,
               "f8E4M3FNUZ": 1, "f8E5M2FNUZ": 1, "f8E4M3FN": 1, "f8E5M2": 1}


class PlanError(ValueError):
    """Arguments that do not fit the plan (count, rank, a static size), or a plan this runtime cannot read."""


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a call."""

    symbol: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    lds_bytes: int
    #: The i64 values appended after the pointers (a dynamic kernel's ``?`` sizes, in order).
    sizes: tuple[int, ...]


@dataclass(frozen=True)
class CallPlan:
    """What one call launches: the kernels in order (an empty grid is left out), and the workspace."""

    launches: tuple[Launch, ...]
    #: Index of the workspace argument, None when the kernels take none.
    workspace_argument: int | None
    workspace_shape: tuple[int, ...] | None
    workspace_bytes: int
    num_splits: int | None


def python_of(node: tuple) -> str:
    """A parsed plan expression (:func:`pagedir.backend.formula.parse`) as Python source over ``names``
    and ``shapes``: the grammar's ``//`` and ``%`` are Python's (floor), ``argmin`` the least cost with the
    smallest ``s`` on a tie."""
    kind = node[0]
    if kind == "int":
        return str(node[1])
    if kind == "size":
        return f"int(shapes[{node[1][0]}][{node[1][1]}])"
    if kind == "name":
        return f"names[{node[1]!r}]"
    if kind == "call":
        return f"{node[1]}({python_of(node[2])}, {python_of(node[3])})"
    if kind == "argmin":
        _, variable, low, high, cost = node
        body = python_of(cost).replace(f"names[{variable!r}]", "_s")
        return (f"(lambda _lo, _hi: min(range(_lo, max(_lo, _hi) + 1), key=lambda _s: ({body}, _s)))"
                f"({python_of(low)}, {python_of(high)})")
    _, operator, left, right = node
    return f"({python_of(left)} {operator} {python_of(right)})"


_compiled: dict[str, Any] = {}


def evaluate(text: str, names: dict | None = None, shapes: Any = None) -> int:
    """:func:`pagedir.backend.formula.evaluate`, compiled to Python once per expression (the split count's
    ``argmin`` loops over every KV tile count: tree-walking it took milliseconds per call)."""
    code = _compiled.get(text)
    if code is None:
        code = _compiled[text] = compile(python_of(formula.parse(text)), f"<plan expression {text[:40]}>", "eval")
    try:
        # Globals, not locals: argmin's lambda reads them (a lambda does not see eval's locals).
        return int(eval(code, {"__builtins__": {}, "min": min, "max": max, "range": range, "int": int,
                               "names": names or {}, "shapes": shapes if shapes is not None else []}))
    except KeyError as err:
        raise formula.FormulaError(f"plan expression {text!r}: no value for {err.args[0]!r}") from None
    except ZeroDivisionError:
        raise formula.FormulaError(f"plan expression {text!r}: division by 0") from None


def load(plan: str | bytes | dict) -> dict:
    """A plan as a dict, from its JSON text or the dict itself."""
    if isinstance(plan, dict):
        found = plan
    else:
        found = json.loads(plan)
    if found.get("format") != 1:
        raise PlanError(f"launch plan format {found.get('format')!r}: this runtime reads format 1")
    return found


def workspace_index(plan: dict) -> int | None:
    """The argument the workspace is passed as (the split kernel's last memref), or None."""
    for kernel in plan["kernels"]:
        for argument in kernel["arguments"]:
            if argument["workspace"]:
                return argument["index"]
    return None


def user_arguments(plan: dict) -> list[dict]:
    """The arguments a caller gives: the first kernel's, less the workspace."""
    first = _kernel(plan, plan["launch_order"][0])
    return [a for a in first["arguments"] if not a["workspace"]]


def _kernel(plan: dict, symbol: str) -> dict:
    for kernel in plan["kernels"]:
        if kernel["symbol"] == symbol:
            return kernel
    raise PlanError(f"launch plan: launch_order names @{symbol}, which is not among its kernels")


def check_shapes(plan: dict, shapes: list[tuple[int, ...]], names: list[str] | None = None) -> None:
    """The user arguments' count, ranks and static sizes as the plan states them (before any expression
    reads them; the workspace follows from them)."""
    arguments = user_arguments(plan)
    if len(shapes) != len(arguments):
        raise PlanError(f"the kernels take {len(arguments)} arguments, got {len(shapes)}")
    for position, (argument, shape) in enumerate(zip(arguments, shapes)):
        expected = argument["shape"]
        name = names[position] if names and position < len(names) else f"argument {argument['index']}"
        if len(shape) != len(expected) or any(e is not None and e != s for e, s in zip(expected, shape)):
            wanted = "x".join("?" if e is None else str(e) for e in expected)
            raise PlanError(f"{name}: shape {tuple(shape)} does not fit {wanted} ({argument['dtype']})")


def workspace_for(plan: dict, shapes: list[tuple[int, ...]]) -> tuple[int | None, tuple[int, ...] | None, int, int | None]:
    """(workspace argument, its shape, its bytes, the split count) for the user arguments' ``shapes``
    (the workspace's own shape is not needed: it follows from the others)."""
    index = workspace_index(plan)
    if index is None:
        return None, None, 0, None
    kernel = _kernel(plan, plan["launch_order"][0])
    rule = kernel.get("num_splits_formula")
    padded = list(shapes[:index]) + [()] + list(shapes[index:])  # the workspace's own shape is never read here
    if rule is None:
        shape = tuple(kernel["arguments"][index]["shape"])
        splits = (kernel.get("split_model") or {}).get("num_splits")
        return index, shape, kernel["workspace_bytes"] or _count(shape) * 4, splits
    names = {**{n: int(v) for n, v in rule["constants"].items()},
             **{n: evaluate(text, shapes=padded) for n, text in rule["inputs"].items()}}
    splits = evaluate(rule["expression"], names, padded)
    names["num_splits"] = splits
    shape = tuple(evaluate(text, names, padded) for text in rule["workspace_shape"])
    return index, shape, evaluate(rule["workspace_bytes"], names, padded), splits


def call_plan(plan: dict, shapes: list[tuple[int, ...]], names: list[str] | None = None) -> CallPlan:
    """The launches of one call on arguments of ``shapes`` (the user's, without the workspace)."""
    check_shapes(plan, shapes, names)
    index, workspace_shape, workspace_bytes, splits = workspace_for(plan, shapes)
    full = list(shapes)
    if index is not None:
        full.insert(index, workspace_shape)
    launches = []
    for symbol in plan["launch_order"]:
        kernel = _kernel(plan, symbol)
        if kernel["grid"] is not None:
            grid = tuple(int(g) for g in kernel["grid"])
        else:
            grid = (evaluate(kernel["grid_formula"]["expression"], shapes=full), 1, 1)
        if 0 in grid:  # an empty batch: nothing to launch
            continue
        sizes = tuple(int(full[s["argument"]][s["dim"]]) for s in kernel["size_arguments"])
        launches.append(Launch(symbol, grid, tuple(int(b) for b in kernel["block"]), int(kernel["lds_bytes"]), sizes))
    return CallPlan(tuple(launches), index, workspace_shape, workspace_bytes, splits)


def _count(shape: Any) -> int:
    total = 1
    for extent in shape:
        total *= int(extent)
    return total
