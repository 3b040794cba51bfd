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
launch) and the plan all evaluate the same text with :func:`evaluate` (a whole ``num_splits_formula``:
:func:`pagedir.backend.split_kv.split_count`).
"""

from __future__ import annotations

import functools
import re
from typing import Any

TOKEN = re.compile(r"\s*(?:(\d+)|arguments\[(\d+)\]\.shape\[(\d+)\]|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*%(),]))")
FUNCTIONS = {"min": 2, "max": 2}


class FormulaError(ValueError):
    """An expression outside the grammar, a name without a value, or a division by 0."""


def tokens(text: str) -> list[tuple[str, Any]]:
    """("int", n), ("size", (i, d)), ("name", s) or ("op", s) for each token of ``text``."""
    found, position, text = [], 0, text.rstrip()
    while position < len(text):
        match = TOKEN.match(text, position)
        if not match:
            raise FormulaError(f"plan expression {text!r}: unexpected {text[position:].strip()[:10]!r} at {position}")
        number, argument, dim, name, symbol = match.groups()
        found.append(("int", int(number)) if number is not None else ("size", (int(argument), int(dim))) if argument
                     else ("name", name) if name is not None else ("op", symbol))
        position = match.end()
    return found


class Parser:
    """Recursive descent over the grammar of the module docstring; nodes are tuples (see :func:`value`)."""

    def __init__(self, text: str):
        self.text, self.items, self.position = text, tokens(text), 0

    def peek(self) -> tuple[str, Any] | None:
        return self.items[self.position] if self.position < len(self.items) else None

    def take(self, kind: str, value: Any = None) -> Any:
        item = self.peek()
        if item is None:
            raise FormulaError(f"plan expression {self.text!r}: ends early")
        if item[0] != kind or (value is not None and item[1] != value):
            raise FormulaError(f"plan expression {self.text!r}: expected {value or kind} at token {self.position}, "
                               f"not {item[1]!r}")
        self.position += 1
        return item[1]

    def whole(self) -> tuple:
        node = self.expr()
        if self.peek() is not None:
            raise FormulaError(f"plan expression {self.text!r}: unexpected {self.peek()[1]!r} at token {self.position}")
        return node

    def expr(self) -> tuple:
        node = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            node = ("op", self.take("op"), node, self.term())
        return node

    def term(self) -> tuple:
        node = self.unary()
        while self.peek() in (("op", "*"), ("op", "//"), ("op", "%")):
            node = ("op", self.take("op"), node, self.unary())
        return node

    def unary(self) -> tuple:
        if self.peek() == ("op", "-"):
            self.take("op", "-")
            return ("op", "-", ("int", 0), self.unary())
        return self.atom()

    def atom(self) -> tuple:
        item = self.peek()
        if item is None:
            raise FormulaError(f"plan expression {self.text!r}: ends early")
        kind, value = item
        if kind in ("int", "size"):
            self.take(kind)
            return item
        if item == ("op", "("):
            self.take("op", "(")
            node = self.expr()
            self.take("op", ")")
            return node
        if kind == "name" and value in (*FUNCTIONS, "argmin") and self.position + 1 < len(self.items) \
                and self.items[self.position + 1] == ("op", "("):
            self.take("name")
            self.take("op", "(")
            variable = None
            if value == "argmin":  # argmin(NAME, lo, hi, cost)
                variable = self.take("name")
                self.take("op", ",")
            arguments = [self.expr()]
            for _ in range((3 if value == "argmin" else FUNCTIONS[value]) - 1):
                self.take("op", ",")
                arguments.append(self.expr())
            self.take("op", ")")
            return ("argmin", variable, *arguments) if value == "argmin" else ("call", value, *arguments)
        if kind == "name":
            self.take("name")
            return item
        raise FormulaError(f"plan expression {self.text!r}: unexpected {value!r} at token {self.position}")


@functools.lru_cache(maxsize=256)
def parse(text: str) -> tuple:
    """The tree of ``text``; FormulaError when it is not in the grammar."""
    return Parser(text).whole()


def value(node: tuple, names: dict[str, int], shapes: Any, text: str) -> int:
    """The value of a parsed ``node`` (of plan expression ``text``, for messages)."""
    kind = node[0]
    if kind == "int":
        return node[1]
    if kind == "size":
        argument, dim = node[1]
        return int(shapes[argument][dim])
    if kind == "name":
        if node[1] not in names:
            raise FormulaError(f"plan expression {text!r}: no value for {node[1]!r}")
        return names[node[1]]
    if kind == "call":
        return (min if node[1] == "min" else max)(value(node[2], names, shapes, text), value(node[3], names, shapes, text))
    if kind == "argmin":  # the smallest v in [lo, hi] with the least cost (lo when hi < lo)
        _, variable, low, high, cost = node
        first, last = value(low, names, shapes, text), value(high, names, shapes, text)
        scope = dict(names)

        def cost_of(v: int) -> tuple[int, int]:
            scope[variable] = v
            return value(cost, scope, shapes, text), v

        return min(range(first, max(first, last) + 1), key=cost_of)
    _, operator, left, right = node
    a, b = value(left, names, shapes, text), value(right, names, shapes, text)
    if operator in ("+", "-", "*"):
        return a + b if operator == "+" else a - b if operator == "-" else a * b
    if b == 0:
        raise FormulaError(f"plan expression {text!r}: division by 0")
    return a // b if operator == "//" else a % b


def evaluate(text: str, names: dict[str, int] | None = None, shapes: Any = None) -> int:
    """The value of plan expression ``text`` with ``names`` bound and ``shapes[i][d]`` for ``arguments[i].shape[d]``."""
    names = {name: int(number) for name, number in (names or {}).items()}
    return value(parse(text), names, shapes if shapes is not None else [], text)

