"""pagedir-gen's generators spell the same flag the same way, and --help shows the defaults."""

from __future__ import annotations

import pytest

from pagedir.cli import gen


def generated(capsys, argv: list[str]) -> str:
    assert gen.main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("kind", ["attention", "copy-kv"])
def test_seq_lens_is_the_flag_of_both_generators_and_ragged_its_alias(kind, capsys):
    with_seq_lens = generated(capsys, [kind, "--seq-lens"])
    assert "memref<2xi32>" in with_seq_lens  # the seq_lens argument, one length per sequence
    assert generated(capsys, [kind, "--ragged"]) == with_seq_lens
    assert "memref<2xi32>" not in generated(capsys, [kind])


@pytest.mark.parametrize(
    ("kind", "shown"),
    [
        ("attention", ["--seq-lens, --ragged", "--ragged is an alias", "(default: 128)", "(default: f16)",
                       "(default: gfx942)", "(default: paged_attention)"]),
        ("copy-kv", ["--seq-lens, --ragged", "--ragged is an alias", "(default: 256)", "(default: k)", "(default: f16)"]),
    ],
)
def test_help_shows_defaults_and_the_alias(kind, shown, capsys):
    assert gen.main([kind, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width
    for expected in shown:
        assert expected in text
    assert "(default: None)" not in text and "(default: False)" not in text
