"""The integer expressions of a launch plan, and their one evaluator.

A plan's launch-time values (a dynamic kernel's grid, a split count chosen at launch, the
inputs of that choice, the workspace's shape) are expressions a runtime evaluates on the
sizes of the arguments it passes. They are integer arithmetic in this grammar, so a C++ or
Rust runtime evaluates them in a few dozen lines (docs/compile.md, "Plan expressions"):

    expr   := term (("+" | "-") term)*
    term   := unary (("*" | "//" | "%") unary)*
    unary  := "-" unary | atom
    atom   := INT | NAME | "arguments[" INT "].shape[" INT "]" | "(" expr ")"
            | ("min" | "max") "(" expr "," expr ")"
            | "argmin" "(" NAME "," expr "," expr "," expr ")"

Values are integers (64-bit signed suffices for the plans pagedir writes). ``a // b`` and
``a % b`` round toward minus infinity (with the non-negative values plans divide, C's ``/``
and ``%`` give the same); a divisor of 0 is an error, and a plan's expressions never divide by
a value that can be 0. ``argmin(s, lo, hi, cost)`` is the smallest integer ``s`` in ``[lo, hi]``
with the least ``cost`` (``cost`` is evaluated with ``s`` bound; ``lo`` when ``hi < lo``): a loop.
``arguments[i].shape[d]`` is dim ``d`` of argument ``i``.

pagedir's compiler (the split count of a static kernel), its interpreter (a dynamic kernel's
launch) and the plan all evaluate the same text with :func:`evaluate`.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

TOKEN = re.compile(r"\s*(?:(\d+)|(arguments\[(\d+)\]\.shape\[(\d+)\])|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*%(),]))")


class FormulaError(ValueError):
    """An expression outside the grammar, a name without a value, or a division by 0."""


def tokens(text: str) -> list[tuple[str, Any]]:
    found, position = [], 0
    text = text.rstrip()
    while position < len(text):
        match = TOKEN.match(text, position)
        if not match:
            raise FormulaError(f"plan expression {text!r}: unexpected {text[position:].strip()[:10]!r} at {position}")
        number, size, argument, dim, name, symbol = match.groups()
        if number is not None:
            found.append(("int", int(number)))
        elif size is not None:
            found.append(("size", (int(argument), int(dim))))
        elif name is not None:
            found.append(("name", name))
        else:
            found.append(("op", symbol))
        position = match.end()
    return found


@functools.lru_cache(maxsize=256)
def parse(text: str) -> Callable[[dict[str, int], Any], int]:
    """``text`` as a function of (names, argument shapes) -> int; FormulaError when it is not in the grammar."""
    items = tokens(text)
    position = 0

    def peek() -> tuple[str, Any] | None:
        return items[position] if position < len(items) else None

    def take(kind: str, value: Any = None) -> Any:
        nonlocal position
        item = peek()
        if item is None or item[0] != kind or (value is not None and item[1] != value):
            raise FormulaError(f"plan expression {text!r}: expected {value or kind} at token {position}")
        position += 1
        return item[1]

    def expr() -> Callable:
        left = term()
        while peek() in (("op", "+"), ("op", "-")):
            operator, right = take("op"), term()
            left = (lambda a, b: lambda n, s: a(n, s) + b(n, s))(left, right) if operator == "+" else \
                (lambda a, b: lambda n, s: a(n, s) - b(n, s))(left, right)
        return left

    def term() -> Callable:
        left = unary()
        while peek() in (("op", "*"), ("op", "//"), ("op", "%")):
            operator, right = take("op"), unary()
            left = (lambda op, a, b: lambda n, s: arithmetic(op, a(n, s), b(n, s), text))(operator, left, right)
        return left

    def unary() -> Callable:
        if peek() == ("op", "-"):
            take("op", "-")
            inner = unary()
            return lambda n, s: -inner(n, s)
        return atom()

    def atom() -> Callable:
        item = peek()
        if item is None:
            raise FormulaError(f"plan expression {text!r}: ends early")
        kind, value = item
        if kind == "int":
            take("int")
            return lambda n, s: value
        if kind == "size":
            take("size")
            return lambda n, s: int(s[value[0]][value[1]])
        if kind == "op" and value == "(":
            take("op", "(")
            inner = expr()
            take("op", ")")
            return inner
        if kind == "name" and value in ("min", "max") and position + 1 < len(items) and items[position + 1] == ("op", "("):
            take("name")
            take("op", "(")
            a = expr()
            take("op", ",")
            b = expr()
            take("op", ")")
            pick = min if value == "min" else max
            return lambda n, s: pick(a(n, s), b(n, s))
        if kind == "name" and value == "argmin":
            take("name")
            take("op", "(")
            variable = take("name")
            take("op", ",")
            low = expr()
            take("op", ",")
            high = expr()
            take("op", ",")
            cost = expr()
            take("op", ")")

            def argmin(n: dict[str, int], s: Any) -> int:
                first, last = low(n, s), high(n, s)
                return min(range(first, max(first, last) + 1), key=lambda v: (cost({**n, variable: v}, s), v))

            return argmin
        if kind == "name":
            take("name")

            def lookup(n: dict[str, int], s: Any) -> int:
                if value not in n:
                    raise FormulaError(f"plan expression {text!r}: no value for {value!r}")
                return n[value]

            return lookup
        raise FormulaError(f"plan expression {text!r}: unexpected {value!r} at token {position}")

    result = expr()
    if position != len(items):
        raise FormulaError(f"plan expression {text!r}: unexpected {items[position][1]!r} at token {position}")
    return result


def arithmetic(operator: str, a: int, b: int, text: str) -> int:
    if operator == "*":
        return a * b
    if b == 0:
        raise FormulaError(f"plan expression {text!r}: division by 0")
    return a // b if operator == "//" else a % b


def evaluate(text: str, names: dict[str, int] | None = None, shapes: Any = None) -> int:
    """The value of plan expression ``text`` with ``names`` bound and ``shapes[i][d]`` for ``arguments[i].shape[d]``."""
    names = {name: int(value) for name, value in (names or {}).items()}
    return int(parse(text)(names, shapes if shapes is not None else []))


def split_count(formula: dict[str, Any], shapes: Any) -> tuple[int, dict[str, int]]:
    """A plan's ``num_splits_formula`` on the argument ``shapes``: the split count and the named values
    (its ``inputs`` evaluated on the shapes, its ``constants``), as a runtime evaluates them."""
    names = {**{name: int(value) for name, value in formula["constants"].items()},
             **{name: evaluate(text, shapes=shapes) for name, text in formula["inputs"].items()}}
    return evaluate(formula["expression"], names, shapes), names
