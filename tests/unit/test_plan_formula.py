"""The plan expressions (pagedir.backend.formula): the grammar a runtime evaluates, and every expression
pagedir's plans hold evaluated at every batch size, 0 included."""

from __future__ import annotations

import json

import pytest

from pagedir.backend import formula, split_kv
from pagedir.cli import compile as compile_cli
from pagedir.gen import attention as gen

from test_dynamic import make_args


@pytest.mark.parametrize(("text", "value"), [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("10 - 4 - 3", 3), ("7 // 2 * 2", 6), ("-7 // 2", -4), ("7 % 3", 1),
    ("-7 % 3", 2), ("min(4, max(2, 9))", 4), ("arguments[1].shape[0] * 2 + a", 13), ("-(a - 8)", 3),
    ("argmin(s, 1, 6, (s - 4) * (s - 4))", 4), ("argmin(s, 1, 6, (s - 3) * (s - 3) * (s - 5) * (s - 5))", 3),
    ("argmin(s, 1, 0, s)", 1),
])
def test_the_grammar(text: str, value: int) -> None:
    # Floor division and modulo round toward minus infinity; argmin takes the fewest on a tie, lo when hi < lo.
    assert formula.evaluate(text, {"a": 5}, [(3,), (4, 2)]) == value


@pytest.mark.parametrize(("text", "message"), [
    ("4 // (a - 5)", "division by 0"), ("4 % 0", "division by 0"), ("b + 1", "no value for 'b'"),
    ("2 ** 3", "expected"), ("lambda s: s", "unexpected"), ("1.5 * 2", "unexpected"), ("min(1)", "expected"),
    ("(1 + 2", "ends early"), ("1 +", "ends early"),
])
def test_what_is_not_an_expression_is_refused(text: str, message: str) -> None:
    with pytest.raises(formula.FormulaError, match=message):
        formula.evaluate(text, {"a": 5})


FORMS = {
    "chosen-at-launch": dict(page_table="blocks", num_splits=0),
    "fixed-split": dict(page_table="csr", num_splits=3),
    "varlen-csr": dict(page_table="csr", varlen=True, seq_len_q=3),
    "pointers-split": dict(page_table="pointers", seq_lens=True, seq_len_k=100, num_splits=0),
    "dense": dict(dense=True, seq_lens=True, seq_len_k=48),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_every_plan_expression_is_defined_at_every_batch(form: str) -> None:
    # Each expression of the plan (grids, split inputs and count, workspace) evaluates at batch 0, 1 and 4096
    # with the sizes a runtime passes: an empty batch gives 0 workgroups, never a division by 0.
    plan = json.loads(compile_cli.compile_source(gen.generate(make_args(**FORMS[form])), plan=True, cache=False).plan_json)
    for batch in (0, 1, 4096):
        arguments = plan["kernels"][0]["arguments"]
        shapes = [[(batch + (1 if size is None and a["index"] == 1 and FORMS[form].get("varlen") else 0))
                   if size is None else size for size in a.get("shape", [])] for a in arguments]
        rule = plan["kernels"][0].get("num_splits_formula")
        if rule:
            splits, names = split_kv.split_count(rule, shapes)
            assert splits >= 1
            workspace = [formula.evaluate(text, {**names, "num_splits": splits}) for text in rule["workspace_shape"]]
            assert formula.evaluate(rule["workspace_bytes"], {**names, "num_splits": splits}) == workspace[0] * workspace[1] * 4
            shapes[rule["workspace_argument"]] = workspace
        grids = [formula.evaluate(k["grid_formula"]["expression"], shapes=shapes) for k in plan["kernels"]]
        assert all(grid == 0 for grid in grids) if batch == 0 else all(grid > 0 for grid in grids), (batch, grids)
