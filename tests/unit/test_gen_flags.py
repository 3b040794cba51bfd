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


# ----------------------------------------------------------------------------
# Float attributes and constants read back as the f32 the flag names

import mlir.ir as ir  # noqa: E402
import numpy as np  # noqa: E402

import pagedir  # noqa: E402
from pagedir.cli.args import UserError  # noqa: E402
from pagedir.gen.checks import f32_literal  # noqa: E402

#: Every decade of the normal f32 range, its ends, and values that f32 (or a double) cannot hold exactly.
ACCEPTED_SCALES = [10.0**e for e in range(-37, 39)] + [
    1.1754943508222875e-38, 3.4028234663852886e38, 5e-5, 0.1, 1 / 3, 0.2, 16777217.0, 2.0**-126, 123456.789,
]


def f32_attribute_values(text: str, name: str) -> list[float]:
    """The f32 value of every ``name = ... : f32`` attribute and every f32 ``arith.constant`` of ``text``, as parsed."""
    values = []
    with pagedir.make_context():
        module = ir.Module.parse(text)

        def visit(op):
            attrs = op.attributes
            if name in attrs:
                values.append(ir.FloatAttr(attrs[name]).value)
            if op.name == "arith.constant" and str(op.result.type) == "f32":
                values.append(ir.FloatAttr(attrs["value"]).value)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
    return values


@pytest.mark.parametrize("form", [["attention"], ["attention", "--page-table", "blocks"], ["linalg-attention"]])
@pytest.mark.parametrize("flag", ["--scale", "--softcap"])
def test_float_flags_read_back_as_the_same_f32(form, flag, capsys):
    for value in ACCEPTED_SCALES:
        if flag == "--softcap" and value > 2.0e38:  # beyond --softcap's own limit
            continue
        text = generated(capsys, [*form, flag, repr(value)])
        read = f32_attribute_values(text, flag[2:])
        assert np.float32(value) in [np.float32(v) for v in read], (flag, value, read)


def test_f32_literal_reads_back_exactly_over_the_whole_f32_range():
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    rng = np.random.default_rng(0)
    values = [tiny, 1e-45, 3e-45, 1e-40, 2.0**-149 * 3, 1.17549435e-38, 1e-38, 0.1, 1 / 3, 1.0, 65504.0, 3e38,
              3.4028234663852886e38, 3.4028235e38, 0.0, 16777217.0, *(10.0 ** rng.uniform(-45, 38.5, 400))]
    values += [-v for v in values]
    with pagedir.make_context():
        for value in values:
            literal = f32_literal(value)
            read = ir.FloatAttr(ir.Attribute.parse(f"{literal} : f32")).value
            assert np.float32(read) == np.float32(value), (value, literal, read)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 3.5e38, -1e39])
def test_f32_literal_refuses_what_f32_cannot_hold(value):
    with pytest.raises(UserError, match=r"--scale .* is not a finite f32 value"):
        f32_literal(value, "--scale")


@pytest.mark.parametrize("value", ["inf", "nan", "1e39", "-1e-30", "1e-45"])
def test_scale_flags_refuse_values_that_are_no_normal_positive_f32(value, capsys):
    assert gen.main(["attention", f"--scale={value}"]) == 1
    assert "is not a finite positive f32 value" in capsys.readouterr().err


# ----------------------------------------------------------------------------
# pagedir-gen refuses what the compiler would refuse, for the same reason

from pagedir.cli.compile import compile_source  # noqa: E402

#: Flag sets the generator accepted and rock-attention-to-gridwise then refused (more splits than KV tiles).
REFUSED_BY_THE_COMPILER = [
    ["--seq-len-k", "32", "--num-splits", "3"],
    ["--seq-len-k", "16", "--seq-len-q", "16", "--num-heads-q", "6", "--num-heads-kv", "2", "--dense", "--num-splits", "2"],
    ["--seq-len-k", "1", "--page-size", "16", "--num-splits", "64", "--arch", "gfx90a"],
    ["--seq-len-k", "32", "--page-table", "blocks", "--num-splits", "8", "--dtype", "f32", "--arch", "gfx950"],
]


def compiler_reason(text: str, capsys) -> str:
    """What pagedir-compile says about ``text`` after "'rock.attention' op " (it must refuse it)."""
    with pytest.raises(UserError):
        compile_source(text, emit="llvm-dialect", cache=False, name="g.mlir")
    return capsys.readouterr().err.split("'rock.attention' op ", 1)[1].strip()


@pytest.mark.parametrize("flags", REFUSED_BY_THE_COMPILER, ids=[" ".join(f) for f in REFUSED_BY_THE_COMPILER])
def test_gen_refuses_what_the_compiler_refuses_with_its_reason(flags, capsys):
    assert gen.main(["attention", *flags]) == 1
    message = capsys.readouterr().err
    # The same kernel, written with one split (accepted), then given the splits asked for, as the compiler sees it.
    splits = flags[flags.index("--num-splits") + 1]
    text = generated(capsys, ["attention", *flags[: flags.index("--num-splits")], *flags[flags.index("--num-splits") + 2:],
                              "--num-splits", "1"])
    reason = compiler_reason(text.replace("rock.num_splits = 1", f"rock.num_splits = {splits}"), capsys)
    assert message == f"pagedir-gen: error: the compiler would refuse this kernel: {reason}\n"


def test_gen_accepts_as_many_splits_as_kv_tiles_and_the_compiler_too(capsys):
    text = generated(capsys, ["attention", "--seq-len-k", "32", "--num-splits", "2"])
    compile_source(text, emit="llvm-dialect", cache=False, name="g.mlir")
