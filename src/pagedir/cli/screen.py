"""Reject the source text that MLIR's C++ parser cannot survive, with a located error, before parsing it.

MLIR 22 (as built in the bindings, with assertions) kills the process on:

* a dense array of ``index`` (``array<index: 1>``, also through a type alias):
  an assertion in ``Type::getIntOrFloatBitWidth``;
* deep nesting (10,000 ``[``, ``{b = ``, ``memref<`` or regions): the
  recursive parser, verifier or printer overflows the stack;
* a negative index in a reassociation (``tensor.collapse_shape %t [[0, -1]]``,
  also as ``reassociation = [[0, -1]]``): an assertion building its affine map;
* an integer outside the 64-bit range in a list of integers (``dimensions =
  [18446744073709551616]``, ``permutation = [...]``): the custom parsers of
  linalg ops hand a null attribute on;
* a position of ``llvm.extractvalue`` / ``llvm.insertvalue`` of 2**32 or more
  (``%s[4294967296]``, also as ``position = array<i64: ...>``): it is cut to
  32 bits, and the verifier indexes past the struct's fields;

and takes minutes on an integer literal of 100,000 digits (its parse is
quadratic). :func:`check_source` finds these in the text, skipping strings and
comments, and returns one problem per chunk at its ``line:col`` (that of the
op, as MLIR reports its errors, for the two list rules). What it misses is
still caught by :mod:`pagedir.cli.crash_guard`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Deepest nesting of ( [ { < accepted. Real IR stays under 30; MLIR's stack gives out in the thousands.
MAX_NESTING = 256
#: Longest integer literal accepted (digits): the widest value of an i16384.
MAX_INTEGER_DIGITS = 5000
#: The values an untyped integer of a list may take: MLIR reads them as i64.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_TOKENS = re.compile(
    r"""
      (?P<string>"(?:[^"\\\n]|\\.)*"?)                   # a string; an unterminated one ends at the line's end
    | (?P<comment>//[^\n]*)
    | (?P<arrow>->|>=)                                   # a '>' that closes nothing
    | (?P<array>\barray\s*<\s*(?P<element>!?[\w.$-]+))   # a dense array and its element type
    | (?P<open>[(\[{<])
    | (?P<close>[)\]}>])
    | (?P<number>(?<![\w$.])(?:0x[0-9a-fA-F]{%d,}|[0-9]{%d,}))
    | (?P<integer>(?<![\w$.%%#@!-])-?(?:0x[0-9a-fA-F]+|[0-9]+)(?![\w.]))
    """
    % (MAX_INTEGER_DIGITS + 1, MAX_INTEGER_DIGITS + 1),
    re.VERBOSE,
)
_PROPERTIES = re.compile(r"<\s*\{")  # '<{': an op's properties, a dictionary (not a dialect attribute's body)
_REASSOCIATION = re.compile(r"collapse_shape|expand_shape|reassociation")
_LLVM_POSITION = re.compile(r"llvm\.(?:extract|insert)value\b")
_POSITION_ARRAY = re.compile(r"\bposition\s*=\s*array<[^>]*$")  # generic form: '<{position = array<i64: 1, 2'

#: The largest position of an LLVM aggregate MLIR keeps whole (it stores them as 32-bit values).
MAX_LLVM_POSITION = 2**32 - 1
_OP_START = re.compile(r"[ \t]*(?:%[\w$.#:, %-]*=[ \t]*)?")  # before the op name: indent and results
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
    stack: list[str] = []  # the open brackets; '{' also for an op's '<{'
    for match in _TOKENS.finditer(text):
        kind = match.lastgroup
        if kind == "open":
            stack.append("{" if _PROPERTIES.match(text, match.start()) else match[0])
            if len(stack) > MAX_NESTING:
                return _at(text, match.start(), f"input nested deeper than {MAX_NESTING} levels of brackets")
        elif kind == "close":
            if stack:
                stack.pop()
        elif kind == "integer":
            if problem := _list_integer(text, match, stack):
                return problem
        elif kind == "array":
            stack.append("<")  # its '<'
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


def _list_integer(text: str, match: re.Match, stack: list[str]) -> SourceProblem | None:
    """An integer of a ``[...]`` list written in MLIR's own syntax (not in a dialect's ``<...>``), or a position
    of an LLVM aggregate, that crashes it."""
    digits = match[0].lstrip("-")
    value = int(digits, 16 if digits.startswith("0x") else 10) * (-1 if match[0].startswith("-") else 1)
    line_start = text.rfind("\n", 0, match.start()) + 1
    in_list = bool(stack) and stack[-1] == "[" and "<" not in stack  # MLIR's own syntax, not a type's
    position = in_list or _POSITION_ARRAY.search(text, line_start, match.start())
    if value > MAX_LLVM_POSITION and position and _LLVM_POSITION.search(text, line_start, match.start()):
        return _at_op(text, line_start, f"position {match[0]} of an LLVM aggregate is out of range "
                                        f"(at most {MAX_LLVM_POSITION})")
    if not in_list:
        return None
    if value < 0 and len(stack) > 1 and stack[-2] == "[" and _REASSOCIATION.search(text, line_start, match.start()):
        return _at_op(text, line_start, f"reassociation index {match[0]} is negative; indices count dimensions from 0")
    typed = text[match.end() :].lstrip(" \t").startswith(":")  # '[1 : i128]': the type says how wide
    if not typed and not INT64_MIN <= value <= INT64_MAX:
        return _at_op(text, line_start, f"integer {match[0]} of a list is outside the 64-bit range "
                                        f"({INT64_MIN} .. {INT64_MAX})")
    return None


def _at_op(text: str, line_start: int, message: str) -> SourceProblem:
    """``message`` at the op of the line starting at ``line_start`` (after its results), where MLIR puts op errors."""
    return _at(text, _OP_START.match(text, line_start).end(), message)


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
