"""Diagnostics as mlir-opt prints them (``file:line:col: error: message``) and
the ``--verify-diagnostics`` checker.

Expected diagnostics are written in the input as comments, like MLIR's::

    // expected-error @+1 {{must be greater than zero}}
    %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
    // expected-note @above {{declared here}}
    // expected-error-re {{requires {{[0-9]+}} bytes}}

The designator is ``@+N``, ``@-N``, ``@above`` (the last line without an
expectation), ``@below`` (the next line without one) or ``@unknown`` (a
diagnostic without a file location); none means the comment's own line. The
text between ``{{`` and ``}}`` must occur in the message; with ``-re`` the
text is literal except for ``{{regex}}`` parts. Every diagnostic must be
expected and every expectation met, otherwise each mismatch is reported as an
error, as mlir-opt does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import mlir.ir as ir

_SEVERITY = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.NOTE: "note",
    ir.DiagnosticSeverity.REMARK: "remark",
}

#: The note MLIR attaches to verifier errors; mlir-opt leaves it out under --verify-diagnostics.
CURRENT_OPERATION_NOTE = "see current operation:"

#: How a diagnostic reporting a bug in pagedir begins: a Python exception that could only
#: leave a pass or verifier as an error (one was already emitted). The tools exit with 2 on it.
INTERNAL_ERROR = "internal error"


@dataclass
class Diag:
    """One diagnostic with its resolved position (file, line, col are None for unknown locations)."""

    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    notes: list[Diag] = field(default_factory=list)

    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.file is not None else "<unknown>:0"

    def format(self) -> str:
        text = f"{self.where()}: {self.severity}: {self.message}"
        for note in self.notes:
            text += "\n" + note.format()
        return text

    def flatten(self) -> list[Diag]:
        """This diagnostic followed by its notes (each checked on its own by --verify-diagnostics)."""
        return [self, *self.notes]

    @property
    def is_internal(self) -> bool:
        """A bug in pagedir reported as a diagnostic (see :data:`INTERNAL_ERROR`)."""
        return self.severity == "error" and self.message.startswith(INTERNAL_ERROR)


def has_internal_errors(diags: list[Diag]) -> bool:
    return any(d.is_internal for top in diags for d in top.flatten())


def file_position(loc: ir.Location) -> tuple[str | None, int | None, int | None]:
    """(file, line, col) of the first file location inside ``loc`` (through fused/name/callsite)."""
    try:
        if loc.is_a_file():
            return loc.filename, loc.start_line, loc.start_col
        if loc.is_a_name():
            return file_position(loc.child_loc)
        if loc.is_a_callsite():
            return file_position(loc.callee)
        if loc.is_a_fused():
            for inner in loc.locations:
                found = file_position(inner)
                if found[0] is not None:
                    return found
    except (AttributeError, ValueError):
        pass
    return None, None, None


def from_mlir(diagnostic) -> Diag:
    """Convert a bindings diagnostic (handler argument or MLIRError entry)."""
    severity = _SEVERITY.get(diagnostic.severity, "error")
    file, line, col = file_position(diagnostic.location)
    notes = [from_mlir(n) for n in diagnostic.notes]
    return Diag(severity, diagnostic.message, file, line, col, notes)


def from_mlir_error(error: ir.MLIRError) -> list[Diag]:
    """The diagnostics an ``MLIRError`` carries, or one located-nowhere error with its message."""
    diags = [from_mlir(d) for d in error.error_diagnostics]
    return diags or [Diag("error", str(error))]


@dataclass
class SourceDiagnostic:
    """An error found before MLIR saw the text, shaped like the bindings' ``DiagnosticInfo``
    so that it travels in an ``ir.MLIRError`` like a parser error."""

    location: ir.Location
    message: str
    severity: Any = ir.DiagnosticSeverity.ERROR
    notes: list[Any] = field(default_factory=list)


def source_error(file: str, line: int, col: int, message: str, context: ir.Context | None = None) -> ir.MLIRError:
    """An ``MLIRError`` holding one error at ``file:line:col``, as ``Operation.parse`` raises them."""
    location = ir.Location.file(file, line, col, context=context)
    return ir.MLIRError("Unable to parse operation assembly", [SourceDiagnostic(location, message)])


@contextmanager
def errors_to_handlers(context: ir.Context) -> Iterator[None]:
    """Let errors emitted while active reach the attached handlers (a :class:`DiagnosticCollector`).

    By default the bindings capture the errors emitted during ``PassManager.run``
    and hand them over only when the run fails; an upstream pass that emits an
    error and still succeeds (``lower-affine`` on ``d0 mod -1``) makes them abort
    the process ("unhandled captured errors"). Run pass managers inside this.
    """
    previous = context.emit_error_diagnostics
    context.emit_error_diagnostics = True
    try:
        yield
    finally:
        context.emit_error_diagnostics = previous


def run_pass_manager(pm: Any, op: ir.Operation, collector: DiagnosticCollector) -> list[Diag]:
    """Run ``pm`` on ``op``; the diagnostics emitted (with an error for a failure that emitted none).

    Empty or without errors means success. ``collector`` must be active on ``op``'s context.
    """
    with errors_to_handlers(op.context):
        try:
            pm.run(op)
        except ir.MLIRError as err:
            diags = collector.take() + from_mlir_error(err)
            if any(d.severity == "error" for d in diags[:-1]) and not err.error_diagnostics:
                diags.pop()  # the bare "Failure while executing pass pipeline": the errors say why
            return diags
    return collector.take()


class DiagnosticCollector:
    """Collects every diagnostic emitted in a context while active (``with`` block).

    Errors raised inside ``PassManager.run`` or a parse are captured by the
    bindings and come back on the ``MLIRError`` instead (:func:`from_mlir_error`).
    """

    def __init__(self, context: ir.Context):
        self.context = context
        self.diags: list[Diag] = []
        self._handler = None

    def __enter__(self) -> DiagnosticCollector:
        self._handler = self.context.attach_diagnostic_handler(self._on_diagnostic)
        return self

    def __exit__(self, *exc) -> None:
        if self._handler is not None:
            self._handler.detach()
            self._handler = None

    def _on_diagnostic(self, diagnostic) -> bool:
        self.diags.append(from_mlir(diagnostic))
        return True

    def take(self) -> list[Diag]:
        diags, self.diags = self.diags, []
        return diags

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diags)


class ErrorCounter:
    """Counts the errors emitted in ``context`` that no handler attached later takes (no
    :class:`DiagnosticCollector` active): MLIR prints those itself, and a tool that printed an
    error must not exit with 0, whatever path the error came by."""

    def __init__(self, context: ir.Context):
        self.count = 0
        self._handler = context.attach_diagnostic_handler(self._on_diagnostic)

    def _on_diagnostic(self, diagnostic) -> bool:
        if diagnostic.severity == ir.DiagnosticSeverity.ERROR:
            self.count += 1
        return False  # not handled: printed as before


# ----------------------------------------------------------------------------
# --verify-diagnostics

_EXPECTED = re.compile(
    r"expected-(?P<severity>error|warning|note|remark)(?P<re>-re)?"
    r" *(?:@(?P<designator>[+-][0-9]+|above|below|unknown))? *\{\{(?P<text>.*)\}\}\s*$"
)


@dataclass
class Expected:
    """One ``expected-*`` comment: where it was written, the line it applies to, and its text."""

    severity: str
    text: str
    is_regex: bool
    line: int | None  # None: the diagnostic has no file location (@unknown)
    comment_line: int
    comment_col: int
    matched: bool = False
    pattern: re.Pattern | None = None

    def __post_init__(self) -> None:
        if self.is_regex:
            self.pattern = re.compile(_regex_of(self.text))

    def matches(self, message: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message


def _regex_of(text: str) -> str:
    """``-re`` text: literal, except ``{{regex}}`` parts (MLIR's convention)."""
    parts, pos = [], 0
    while (start := text.find("{{", pos)) != -1:
        end = text.find("}}", start + 2)
        if end == -1:
            break
        parts.append(re.escape(text[pos:start]))
        parts.append(f"(?:{text[start + 2 : end]})")
        pos = end + 2
    parts.append(re.escape(text[pos:]))
    return "".join(parts)


class ExpectationError(ValueError):
    """A malformed ``expected-*`` comment (bad regex, designator out of the file)."""

    def __init__(self, message: str, line: int, col: int):
        super().__init__(message)
        self.line, self.col = line, col


def parse_expectations(text: str) -> list[Expected]:
    """Every ``expected-*`` comment of ``text`` (line numbers count from 1 in ``text``)."""
    expectations: list[Expected] = []
    waiting_for_next_line: list[Expected] = []
    last_plain_line = 0
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        match = _EXPECTED.search(line)
        if match is None:
            # A line without an expectation: @below ones waiting apply here, @above ones refer to it.
            for pending in waiting_for_next_line:
                pending.line = number
            waiting_for_next_line = []
            last_plain_line = number
            continue
        designator = match["designator"] or ""
        col = match.start() + 1
        target: int | None = number
        if designator.startswith(("+", "-")):
            target = number + int(designator)
            if not 1 <= target <= len(lines):
                raise ExpectationError(f"expected diagnostic offset {designator} points outside the file", number, col)
        elif designator == "above":
            target = last_plain_line
        elif designator == "unknown":
            target = None
        try:
            expected = Expected(match["severity"], match["text"], bool(match["re"]), target, number, col)
        except re.error as err:
            raise ExpectationError(f"invalid regex in expected diagnostic: {err}", number, col) from None
        if designator == "below":
            waiting_for_next_line.append(expected)
        expectations.append(expected)
    if waiting_for_next_line:
        first = waiting_for_next_line[0]
        raise ExpectationError("expected diagnostic @below has no line below it", first.comment_line, first.comment_col)
    return expectations


def verify_diagnostics(diags: list[Diag], expectations: list[Expected], file: str) -> list[Diag]:
    """Match diagnostics against expectations; return the mismatches as errors to print (empty: all matched).

    A diagnostic matches an unmatched expectation of the same severity on its line
    (``@unknown``: no file location) whose text it contains. Notes are checked
    like any diagnostic, except the "see current operation" note that MLIR adds.
    """
    problems: list[Diag] = []
    for diag in (d for top in diags for d in top.flatten()):
        if diag.severity == "note" and diag.message.startswith(CURRENT_OPERATION_NOTE):
            continue
        line = diag.line if diag.file == file else None
        for expected in expectations:
            if expected.matched or expected.severity != diag.severity or expected.line != line:
                continue
            if expected.matches(diag.message):
                expected.matched = True
                break
        else:
            problems.append(Diag("error", f"unexpected {diag.severity}: {diag.message}", diag.file, diag.line, diag.col))
    for expected in expectations:
        if not expected.matched:
            problems.append(
                Diag(
                    "error",
                    f'expected {expected.severity} "{expected.text}" was not produced',
                    file,
                    expected.comment_line,
                    expected.comment_col,
                )
            )
    return problems
