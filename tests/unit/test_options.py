"""Pass and pipeline options: ``{key=value ...}`` text or dicts into frozen dataclasses."""

from __future__ import annotations

import dataclasses

import pytest

from pagedir.passes.base import OptionError, option_help, parse_option_values, split_option_text


@dataclasses.dataclass(frozen=True)
class Opts:
    #: Chip name.
    arch: str = ""
    #: Threads per workgroup.
    block_size: int = 256
    #: Verbose output.
    verbose: bool = False
    ratio: float = 0.5

    def __post_init__(self):
        if self.block_size & (self.block_size - 1):
            raise ValueError(f"block-size must be a power of two, got {self.block_size}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("arch=gfx950", [("arch", "gfx950")]),
        ("arch=gfx950 block-size=128", [("arch", "gfx950"), ("block-size", "128")]),
        ("arch=gfx950,block-size=128", [("arch", "gfx950"), ("block-size", "128")]),
        ("verbose", [("verbose", "true")]),
        ("arch='gfx942'", [("arch", "gfx942")]),
        ("", []),
    ],
)
def test_split_option_text(text, expected):
    assert split_option_text(text) == expected


def test_kebab_and_snake_keys_and_type_conversion():
    opts = parse_option_values("p", Opts, "arch=gfx942 block-size=64 verbose=true ratio=0.25")
    assert opts == Opts("gfx942", 64, True, 0.25)
    assert parse_option_values("p", Opts, "block_size=0x80").block_size == 128
    assert parse_option_values("p", Opts, {"block_size": 32}).block_size == 32


def test_defaults_when_no_options():
    assert parse_option_values("p", Opts, "") == Opts()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus=1", "'p' has no option 'bogus' (options: arch, block-size, verbose, ratio)"),
        ("block-size=many", "'p' option 'block-size' expects int, got 'many'"),
        ("verbose=maybe", "'p' option 'verbose' expects bool, got 'maybe'"),
        ("ratio=x", "'p' option 'ratio' expects float, got 'x'"),
        ("block-size=12", "'p': block-size must be a power of two, got 12"),
    ],
)
def test_bad_options_name_the_pass_option_and_value(text, message):
    with pytest.raises(OptionError) as err:
        parse_option_values("p", Opts, text)
    assert str(err.value) == message


def test_options_are_frozen():
    opts = parse_option_values("p", Opts, "arch=gfx90a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.arch = "gfx942"


def test_option_help_reads_field_comments():
    rows = {name: (kind, default, doc) for name, kind, default, doc in option_help(Opts)}
    assert rows["block-size"] == ("int", 256, "Threads per workgroup.")
    assert rows["arch"] == ("str", "", "Chip name.")
    assert rows["ratio"] == ("float", 0.5, "")
