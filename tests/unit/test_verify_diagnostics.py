"""The --verify-diagnostics matcher: expected-* comments against emitted diagnostics."""

from __future__ import annotations

import pytest

from pagedir.cli import opt
from pagedir.diagnostics import Diag, ExpectationError, parse_expectations, verify_diagnostics


def check(text: str, diags: list[Diag]) -> list[str]:
    return [d.format() for d in verify_diagnostics(diags, parse_expectations(text), "f.mlir")]


def err(line: int, message: str, severity: str = "error", notes=()) -> Diag:
    return Diag(severity, message, "f.mlir", line, 3, list(notes))


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("// expected-error @+1 {{boom}}\nop", 2),
        ("op\n// expected-error @-1 {{boom}}", 1),
        ("op // expected-error {{boom}}", 1),
        ("op\n// expected-error @above {{boom}}", 1),
        ("op\n// expected-note @above {{x}}\n// expected-error @above {{boom}}", 1),
        ("// expected-error @below {{boom}}\n// expected-note @below {{x}}\nop", 3),
        ("\n\n// expected-error@+2 {{boom}}\n\nop", 5),
    ],
)
def test_designators_pick_the_line(text, line):
    expectations = [e for e in parse_expectations(text) if e.severity == "error"]
    assert [e.line for e in expectations] == [line]


def test_all_matched_gives_no_problems():
    text = "// expected-error @+1 {{is bad}}\nop\n// expected-warning @-1 {{careful}}"
    assert check(text, [err(2, "op is bad"), err(2, "be careful", "warning")]) == []


def test_substring_not_regex_without_re():
    assert check("op // expected-error {{a.c}}", [err(1, "abc")]) != []
    assert check("op // expected-error {{a.c}}", [err(1, "xa.cx")]) == []


def test_regex_parts_inside_re_text():
    text = "op // expected-error-re {{got {{[0-9]+}} bytes (max {{.*}})}}"
    assert check(text, [err(1, "got 42 bytes (max 65536)")]) == []
    assert check(text, [err(1, "got many bytes (max 65536)")]) != []


def test_unexpected_and_missing_are_reported_like_mlir_opt():
    problems = check("// expected-error @+1 {{other text}}\nop", [err(2, "op failed")])
    assert problems == [
        "f.mlir:2:3: error: unexpected error: op failed",
        'f.mlir:1:4: error: expected error "other text" was not produced',
    ]


def test_severity_must_match():
    assert check("op // expected-warning {{boom}}", [err(1, "boom")]) == [
        "f.mlir:1:3: error: unexpected error: boom",
        'f.mlir:1:7: error: expected warning "boom" was not produced',
    ]


def test_each_expectation_matches_once():
    problems = check("op // expected-error {{boom}}", [err(1, "boom"), err(1, "boom")])
    assert problems == ["f.mlir:1:3: error: unexpected error: boom"]


def test_notes_are_checked_except_the_current_operation_note():
    notes = [err(1, "see current operation: %0 = ...", "note"), err(1, "declared here", "note")]
    assert check("op // expected-error {{boom}}\n", [err(1, "boom", notes=notes)]) == [
        "f.mlir:1:3: error: unexpected note: declared here"
    ]
    text = "op // expected-error {{boom}}\n// expected-note @-1 {{declared here}}"
    assert check(text, [err(1, "boom", notes=notes)]) == []


def test_unknown_locations_match_at_unknown():
    assert check("// expected-error @unknown {{nowhere}}", [Diag("error", "from nowhere")]) == []
    assert check("", [Diag("error", "from nowhere")]) == ["<unknown>:0: error: unexpected error: from nowhere"]


def test_diagnostic_in_another_file_does_not_match_by_line():
    other = Diag("error", "boom", "other.mlir", 1, 1)
    assert check("op // expected-error {{boom}}", [other]) != []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("// expected-error @+5 {{x}}", "points outside the file"),
        ("op // expected-error-re {{{{[}}}}", "invalid regex"),
        ("op\n// expected-error @below {{x}}", "has no line below it"),
    ],
)
def test_malformed_expectations(text, message):
    with pytest.raises(ExpectationError, match=message):
        parse_expectations(text)


def test_end_to_end_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.mlir"
    good.write_text(
        'func.func @f() {\n  // expected-error @+1 {{greater than zero}}\n'
        '  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>\n  return\n}\n'
    )
    assert opt.main([str(good), "--verify-diagnostics"]) == 0
    bad = tmp_path / "bad.mlir"
    bad.write_text(good.read_text().replace("@+1", "@+2"))
    assert opt.main([str(bad), "--verify-diagnostics"]) == 1
    err_text = capsys.readouterr().err
    assert f"{bad}:3:8: error: unexpected error: 'rock.alloc' op the size of rock.alloc" in err_text
    assert f'{bad}:2:6: error: expected error "greater than zero" was not produced' in err_text
