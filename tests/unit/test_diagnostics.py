"""Diagnostics: positions through nested locations, mlir-opt formatting, collection."""

from __future__ import annotations

import mlir.ir as ir

import pagedir
from pagedir.diagnostics import Diag, DiagnosticCollector, file_position


def test_format_like_mlir_opt_with_notes():
    diag = Diag("error", "bad thing", "in.mlir", 3, 5, [Diag("note", "see here", "in.mlir", 1, 1)])
    assert diag.format() == "in.mlir:3:5: error: bad thing\nin.mlir:1:1: note: see here"
    assert Diag("warning", "no place").format() == "<unknown>:0: warning: no place"


def test_file_position_through_name_callsite_and_fused_locations():
    with ir.Context():
        file_loc = ir.Location.file("a.mlir", 7, 9)
        assert file_position(file_loc) == ("a.mlir", 7, 9)
        assert file_position(ir.Location.name("x", childLoc=file_loc)) == ("a.mlir", 7, 9)
        assert file_position(ir.Location.callsite(file_loc, [ir.Location.file("b.mlir", 1, 1)])) == ("a.mlir", 7, 9)
        fused = ir.Location.fused([ir.Location.unknown(), file_loc])
        assert file_position(fused) == ("a.mlir", 7, 9)
        assert file_position(ir.Location.unknown()) == (None, None, None)


def test_collector_takes_what_was_emitted():
    ctx = pagedir.make_context()
    with ctx, DiagnosticCollector(ctx) as collector:
        loc = ir.Location.file("f.mlir", 2, 3)
        loc.emit_error("first")
        assert collector.has_errors
        taken = collector.take()
    assert [d.format() for d in taken] == ["f.mlir:2:3: error: first"]
    assert collector.diags == []


def test_collector_detaches_on_exit():
    ctx = pagedir.make_context()
    with ctx:
        with DiagnosticCollector(ctx) as collector:
            pass
        outer = []
        handler = ctx.attach_diagnostic_handler(lambda d: outer.append(d.message) or True)
        ir.Location.unknown().emit_error("after")
        handler.detach()
    assert collector.diags == [] and outer == ["after"]
