"""Diagnostics as mlir-opt prints them: ``file:line:col: error: message``."""

from __future__ import annotations

from dataclasses import dataclass, field

import mlir.ir as ir

_SEVERITY = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.NOTE: "note",
    ir.DiagnosticSeverity.REMARK: "remark",
}


@dataclass
class Diag:
    """One diagnostic with its resolved position (file, line, col may be None for unknown locations)."""

    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    notes: list[Diag] = field(default_factory=list)

    def format(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}: " if self.file is not None else "<unknown>:0: "
        text = f"{where}{self.severity}: {self.message}"
        for note in self.notes:
            text += "\n" + note.format()
        return text


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


class DiagnosticCollector:
    """Collects every diagnostic emitted in a context while active (``with`` block)."""

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

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diags)
