"""Reject the source text that MLIR's C++ parser cannot survive, with a located error, before parsing it.

MLIR 22 (as built in the bindings, with assertions) kills the process on:

* a dense array of ``index`` (``array<index: 1>``, also through a type alias):
  an assertion in ``Type::getIntOrFloatBitWidth``;
* deep nesting (10,000 ``[``, ``{b = ``, ``memref<`` or regions): the
  recursive parser, verifier or printer overflows the stack;

and takes minutes on an integer literal of 100,000 digits (its parse is
quadratic). :func:`check_source` finds these in the text, skipping strings and
comments, and returns one problem per chunk at its ``line:col``. What it misses
is still caught by :mod:`pagedir.cli.crash_guard`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Deepest nesting of ( [ { < accepted. Real IR stays under 30; MLIR's stack gives out in the thousands.
MAX_NESTING = 256
#: Longest integer literal accepted (digits): the widest value of an i16384.
MAX_INTEGER_DIGITS = 5000

_TOKENS = re.compile(
    r"""
      (?P<string>"(?:[^"\\\n]|\\.)*"?)                   # a string; an unterminated one ends at the line's end
    | (?P<comment>//[^\n]*)
    | (?P<arrow>->|>=)                                   # a '>' that closes nothing
    | (?P<array>\barray\s*<\s*(?P<element>!?[\w.$-]+))   # a dense array and its element type
    | (?P<open>[(\[{<])
    | (?P<close>[)\]}>])
    | (?P<number>(?<![\w$.])(?:0x[0-9a-fA-F]{%d,}|[0-9]{%d,}))
    """
    % (MAX_INTEGER_DIGITS + 1, MAX_INTEGER_DIGITS + 1),
    re.VERBOSE,
)
_TYPE_ALIAS = re.compile(r"^!(?P<name>[\w.$-]+)\s*=\s*(?P<value>!?[\w.$-]+)\s*(?://.*)?$", re.MULTILINE)


@dataclass(frozen=True)
class SourceProblem:
    """Why the text cannot be given to MLIR, at a 1-based line and column of the text."""

    line: int
    col: int
    message: str


def check_source(text: str) -> SourceProblem | None:
    """The first construct of ``text`` that would crash or stall MLIR's parser, or None."""
    index_types = _index_type_names(text)
    depth = 0
    for match in _TOKENS.finditer(text):
        kind = match.lastgroup
        if kind == "open":
            depth += 1
            if depth > MAX_NESTING:
                return _at(text, match.start(), f"input nested deeper than {MAX_NESTING} levels of brackets")
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif kind == "array":
            depth += 1  # its '<'
            element = match["element"]
            if element in index_types:
                return _at(
                    text, match.start(),
                    f"'array<{element}' is a dense array of index, which MLIR cannot hold; use array<i64: ...>",
                )
        elif kind == "number":
            digits = len(match[0]) - (2 if match[0].startswith("0x") else 0)
            return _at(text, match.start(), f"integer literal of {digits} digits is too long (at most {MAX_INTEGER_DIGITS})")
    return None


def _index_type_names(text: str) -> set[str]:
    """``index`` and every type alias (``!t = index``, ``!u = !t``) that names it."""
    aliases = {f"!{m['name']}": m["value"] for m in _TYPE_ALIAS.finditer(text)}
    names = {"index"}
    for alias in aliases:
        seen, value = {alias}, aliases[alias]
        while value in aliases and value not in seen:
            seen.add(value)
            value = aliases[value]
        if value == "index":
            names.add(alias)
    return names


def _at(text: str, offset: int, message: str) -> SourceProblem:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return SourceProblem(line, col, message)
