"""The textual pipeline parser and how pagedir-opt turns elements into steps."""

from __future__ import annotations

import pytest

import pagedir
from pagedir.cli import opt
from pagedir.passes import Pass
from pagedir.pipeline_text import PipelineSyntaxError, parse_pipeline


def texts(pipeline: str) -> list[str]:
    return [element.text() for element in parse_pipeline(pipeline)]


def test_nested_elements_and_options():
    (module,) = parse_pipeline("builtin.module(rock-annotate-liveness,func.func(canonicalize),rock-reuse-lds{arch=gfx942})")
    assert module.name == "builtin.module" and module.has_nested
    assert [e.text() for e in module.nested] == ["rock-annotate-liveness", "func.func(canonicalize)", "rock-reuse-lds{arch=gfx942}"]


def test_options_keep_inner_braces_and_spaces():
    assert texts("a{x=1 y={2,3}} , b") == ["a{x=1 y={2,3}}", "b"]


def test_empty_nested_pipeline():
    (element,) = parse_pipeline("func.func()")
    assert element.has_nested and element.nested == []
    assert element.text() == "func.func()"


@pytest.mark.parametrize(
    ("pipeline", "column", "message"),
    [
        ("a,,b", 3, "expected a pass or operation name"),
        ("a)", 2, "unexpected ')'"),
        ("a{x", 4, "unbalanced '{'"),
        ("builtin.module(a", 17, "expected ')'"),
        ("", 1, "expected a pass or operation name"),
    ],
)
def test_syntax_errors_give_the_column(pipeline, column, message):
    with pytest.raises(PipelineSyntaxError) as err:
        parse_pipeline(pipeline)
    assert (err.value.column, err.value.message) == (column, message)


def test_steps_flatten_builtin_module_and_keep_upstream_text():
    with pagedir.make_context():
        steps = opt.pipeline_steps(parse_pipeline("builtin.module(rock-verify,func.func(cse),canonicalize{max-iterations=2})"))
    assert isinstance(steps[0], Pass) and steps[0].argument == "rock-verify"
    assert steps[1:] == ["func.func(cse)", "canonicalize{max-iterations=2}"]


def test_pagedir_pass_nested_under_another_op_is_refused():
    with pytest.raises(opt.UserError, match="not nested under 'func.func'"):
        opt.pipeline_steps(parse_pipeline("func.func(rock-verify)"))


def test_named_pipeline_expands_with_options():
    steps = opt.pipeline_steps(parse_pipeline("rock-backend-pipeline{arch=gfx942}"))
    assert any(isinstance(s, str) and "chipset=gfx942" in s for s in steps)


def test_named_pipeline_bad_option_is_a_user_error():
    with pytest.raises(opt.UserError, match="'rock-backend-pipeline' has no option 'chip'"):
        opt.pipeline_steps(parse_pipeline("rock-backend-pipeline{chip=gfx942}"))


def test_upstream_pass_flags_nest_on_their_op_like_mlir_opt():
    steps, rest = opt.extract_pass_flags([
        "--promote-buffers-to-stack", "--affine-scalrep", "--cse", "in.mlir",
        "--convert-gpu-to-rocdl=chipset=gfx942", "--rock-verify", "--affine-scalrep{}",
    ])
    assert rest == ["in.mlir"]
    # Adjacent passes on the same op share one nest; a pass between them ends it.
    assert steps == [
        "func.func(promote-buffers-to-stack,affine-scalrep)",
        "cse",
        "gpu.module(convert-gpu-to-rocdl{chipset=gfx942})",
        "rock-verify",
        "func.func(affine-scalrep)",
    ]
