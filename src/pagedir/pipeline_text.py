"""Parse textual pass pipelines that mix pagedir passes and upstream ones.

Python passes cannot be named inside an upstream textual pipeline, so
``pagedir-opt`` parses ``builtin.module(a,b{k=v},func.func(canonicalize))``
itself: each element is a name, optional ``{options}`` and optional nested
``(elements)``. pagedir passes and pipelines become Python passes; every other
element is handed to ``PassManager.add`` as text.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class PipelineSyntaxError(ValueError):
    """A malformed pipeline string: ``message`` found at 1-based ``column`` of ``text``."""

    def __init__(self, message: str, text: str, column: int):
        super().__init__(f"{message} at column {column} of pipeline '{text}'")
        self.message, self.text, self.column = message, text, column


@dataclass
class Element:
    name: str
    options: str = ""
    nested: list[Element] = field(default_factory=list)
    has_nested: bool = False

    def text(self) -> str:
        out = self.name
        if self.options:
            out += "{" + self.options + "}"
        if self.has_nested:
            out += "(" + ",".join(e.text() for e in self.nested) + ")"
        return out


def parse_pipeline(text: str) -> list[Element]:
    """Parse a comma-separated list of pipeline elements."""
    parser = _Parser(text)
    elements = parser.elements(top=True)
    if parser.pos != len(text):
        parser.fail(f"unexpected '{text[parser.pos]}'")
    return elements


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def fail(self, message: str):
        raise PipelineSyntaxError(message, self.text, self.pos + 1)

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def elements(self, top: bool = False) -> list[Element]:
        result = []
        self.skip_space()
        if self.pos < len(self.text) and self.text[self.pos] == ")" and not top:
            return result
        while True:
            result.append(self.element())
            self.skip_space()
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                self.pos += 1
                continue
            return result

    def element(self) -> Element:
        self.skip_space()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "-_."):
            self.pos += 1
        name = self.text[start : self.pos]
        if not name:
            self.fail("expected a pass or operation name")
        element = Element(name)
        self.skip_space()
        if self.pos < len(self.text) and self.text[self.pos] == "{":
            element.options = self.braced()
            self.skip_space()
        if self.pos < len(self.text) and self.text[self.pos] == "(":
            self.pos += 1
            element.nested = self.elements()
            element.has_nested = True
            self.skip_space()
            if self.pos >= len(self.text) or self.text[self.pos] != ")":
                self.fail("expected ')'")
            self.pos += 1
        return element

    def braced(self) -> str:
        depth, start = 0, self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            depth += char == "{"
            depth -= char == "}"
            self.pos += 1
            if depth == 0:
                return self.text[start + 1 : self.pos - 1].strip()
        self.fail("unbalanced '{'")
        return ""  # unreachable
