"""make_context(): an MLIR context with the upstream dialects and the rock dialect."""

from __future__ import annotations

import mlir.ir as ir

from pagedir.dialect import load_dialects


def make_context(context: ir.Context | None = None, *, allow_unregistered: bool = False) -> ir.Context:
    """Return ``context`` (or a new one) with every dialect pagedir uses loaded; idempotent."""
    context = context or ir.Context()
    load_dialects(context)
    if allow_unregistered:
        context.allow_unregistered_dialects = True
    return context
