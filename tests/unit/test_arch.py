"""Which chip a kernel is for: strict target strings, and the one rule every pass and tool applies.

The rule (:func:`pagedir.arch.kernel_chip`): the arch option when given, else the
kernel's ``rock.arch``; both given and naming different chips, or neither given,
is an error at the kernel. A lowering for a chip records it as ``rock.arch``.
"""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

import pagedir
from pagedir.arch import ChipError, get_chip, kernel_chip, parse_chip
from pagedir.cli import compile as compile_cli

GOOD_TARGETS = [
    ("gfx942", "gfx942"),
    ("gfx1100", "gfx1100"),
    ("amdgcn-amd-amdhsa:gfx942", "gfx942"),
    ("amdgcn-amd-amdhsa--gfx942", "gfx942"),
    ("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", "gfx942"),
    ("gfx942:sramecc+:xnack-", "gfx942"),
    ("gfx90a:xnack+", "gfx90a"),
    ("amdgcn-amd-amdhsa:gfx1201", "gfx1201"),
]


@pytest.mark.parametrize(("target", "chip"), GOOD_TARGETS)
def test_valid_targets_name_their_chip(target: str, chip: str) -> None:
    assert parse_chip(target) == chip
    assert get_chip(target).name == chip


BAD_TARGETS = [
    (" gfx942", "invalid target ' gfx942': expected a chip"),
    ("gfx942 ", "invalid target 'gfx942 ': expected a chip"),
    ("", "invalid target '': expected a chip"),
    ("garbage", "invalid target 'garbage': expected a chip"),
    ("xgfx942", "invalid target 'xgfx942': expected a chip"),
    ("gfx942-bogus", "invalid target 'gfx942-bogus': expected a chip"),
    ("amdgcn-amd-amdhsa:", "invalid target 'amdgcn-amd-amdhsa:': expected a chip"),
    ("x86_64-unknown-linux:gfx942", "invalid target 'x86_64-unknown-linux:gfx942': expected a chip"),
    ("gfx942:xnack", "invalid target 'gfx942:xnack': expected a chip"),
    ("gfx942:bogus+", "invalid target 'gfx942:bogus+': unknown feature 'bogus' (gfx942 takes sramecc+/-, xnack+/-)"),
    ("gfx942:xnack+:xnack-", "invalid target 'gfx942:xnack+:xnack-': feature 'xnack' is set twice"),
    ("gfx1100:xnack+", "invalid target 'gfx1100:xnack+': unknown feature 'xnack' (gfx1100 takes none)"),
    ("gfx999", "unknown chip 'gfx999'; known chips: gfx908, gfx90a, gfx942"),
]


@pytest.mark.parametrize(("target", "message"), BAD_TARGETS)
def test_bad_targets_are_refused_naming_the_value(target: str, message: str) -> None:
    with pytest.raises(ChipError) as err:
        get_chip(target)
    assert str(err.value).startswith(message)


def test_the_accepted_form_is_in_the_message() -> None:
    with pytest.raises(ChipError, match=r"amdgcn-amd-amdhsa--gfx942:sramecc\+:xnack-"):
        get_chip(" gfx942")


# ----------------------------------------------------------------------------
# kernel_chip: every combination of the arch option and the kernel's rock.arch.


#: The parsed modules stay alive while their ops are in use (an op outliving its module is freed memory).
_modules: list[ir.Module] = []


def kernel(arch_attr: str | None = None, *, name: str = "k", op: str = "func.func") -> ir.Operation:
    """A kernel function, with ``rock.arch = <arch_attr>`` (a literal attribute) when given."""
    attrs = "rock.kernel" + (f", rock.arch = {arch_attr}" if arch_attr is not None else "")
    if op == "gpu.func":
        text = f"gpu.module @m {{ gpu.func @{name}() kernel attributes {{{attrs}}} {{ gpu.return }} }}"
    else:
        text = f"func.func @{name}() attributes {{{attrs}}} {{ return }}"
    module = ir.Module.parse(text, context=pagedir.make_context())
    _modules.append(module)
    found = []
    module.operation.walk(lambda o: (found.append(o) if o.name == op else None) or ir.WalkResult.ADVANCE)
    return found[0]


def recorded(func: ir.Operation) -> str | None:
    return ir.StringAttr(func.attributes["rock.arch"]).value if "rock.arch" in func.attributes else None


def test_option_only_gives_its_chip_and_records_it() -> None:
    func = kernel()
    assert kernel_chip(func, "gfx1100").name == "gfx1100"
    assert recorded(func) == "gfx1100"


def test_option_only_records_the_target_as_written() -> None:
    func = kernel()
    assert kernel_chip(func, "amdgcn-amd-amdhsa--gfx942:xnack-").name == "gfx942"
    assert recorded(func) == "amdgcn-amd-amdhsa--gfx942:xnack-"


def test_attribute_only_gives_its_chip() -> None:
    func = kernel('"gfx1100"')
    assert kernel_chip(func).name == "gfx1100"
    assert kernel_chip(func, "").name == "gfx1100"
    assert recorded(func) == "gfx1100"


def test_attribute_may_be_a_full_target() -> None:
    assert kernel_chip(kernel('"amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"')).name == "gfx90a"


def test_both_naming_the_same_chip_keep_the_kernels_attribute() -> None:
    func = kernel('"amdgcn-amd-amdhsa:gfx942"')
    assert kernel_chip(func, "gfx942:xnack-").name == "gfx942"
    assert recorded(func) == "amdgcn-amd-amdhsa:gfx942"


def test_both_naming_different_chips_is_an_error_naming_both() -> None:
    func = kernel('"gfx942"', name="paged")
    with pytest.raises(ChipError) as err:
        kernel_chip(func, "gfx1100")
    assert str(err.value) == "'func.func' op @paged is for gfx942 (rock.arch = \"gfx942\"), not for gfx1100 (arch = \"gfx1100\")"
    assert recorded(func) == "gfx942"  # nothing the user wrote is overwritten


def test_different_chips_of_one_family_are_still_different() -> None:
    with pytest.raises(ChipError, match=r"is for gfx942 .*not for gfx950"):
        kernel_chip(kernel('"amdgcn-amd-amdhsa:gfx942"'), "gfx950")


def test_gpu_func_kernels_follow_the_same_rule() -> None:
    with pytest.raises(ChipError, match=r"^'gpu.func' op @g is for gfx1100 \(rock.arch = \"gfx1100\"\), not for gfx942"):
        kernel_chip(kernel('"gfx1100"', name="g", op="gpu.func"), "gfx942")


def test_neither_is_an_error_at_the_kernel() -> None:
    with pytest.raises(ChipError) as err:
        kernel_chip(kernel(name="bare"))
    assert str(err.value).startswith(
        "'func.func' op @bare names no chip: set rock.arch on the kernel or give the arch option (known chips: gfx908"
    )


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        ('"gfx1234"', "'func.func' op @k has rock.arch = \"gfx1234\": unknown chip 'gfx1234'; known chips:"),
        ('" gfx942"', "'func.func' op @k has rock.arch = \" gfx942\": invalid target ' gfx942': expected a chip"),
        ('"gfx942:bogus+"', "'func.func' op @k has rock.arch = \"gfx942:bogus+\": invalid target 'gfx942:bogus+': unknown feature"),
        ("942", "'func.func' op @k has rock.arch = 942 : i64: expected a string naming a chip"),
    ],
)
def test_a_bad_attribute_is_an_error_even_with_an_option(attr: str, message: str) -> None:
    for option in ("", "gfx942"):
        with pytest.raises(ChipError) as err:
            kernel_chip(kernel(attr), option)
        assert str(err.value).startswith(message)


@pytest.mark.parametrize("option", [" gfx942", "gfx942:bogus+", "gfx999", "garbage"])
def test_a_bad_option_is_an_error_and_records_nothing(option: str) -> None:
    func = kernel()
    with pytest.raises(ChipError, match=repr(option).replace("+", r"\+")):
        kernel_chip(func, option)
    assert recorded(func) is None


# ----------------------------------------------------------------------------
# pagedir-compile --arch: a bad target is one clear line, exit code 1.


@pytest.mark.parametrize(
    ("arch", "message"),
    [
        (" gfx942", "error: invalid target ' gfx942': expected a chip (gfx942) or a target"),
        ("gfx942 ", "error: invalid target 'gfx942 ': expected a chip (gfx942) or a target"),
        ("gfx942:bogus+", "error: invalid target 'gfx942:bogus+': unknown feature 'bogus' (gfx942 takes sramecc+/-, xnack+/-)"),
    ],
)
def test_compile_refuses_a_bad_arch(arch: str, message: str, tmp_path, capsys) -> None:
    source = tmp_path / "k.mlir"
    source.write_text('func.func @k() attributes {rock.kernel, rock.arch = "gfx942"} { return }\n')
    assert compile_cli.main([str(source), "--arch", arch, "-o", str(tmp_path / "k.s")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"pagedir-compile: {message}")
    assert err.count("\n") == 1, err
    assert not (tmp_path / "k.s").exists()


def test_check_never_runs_a_kernel_lowered_for_another_chip(tmp_path, capsys) -> None:
    # Lowered for gfx1100 while it says gfx942, the kernel would carry RDNA descriptor flags and WMMA ops that
    # the interpreter (following rock.arch, as the hardware would) reads as CDNA's: the lowering must stop first.
    from pagedir.cli import gen, run

    source = tmp_path / "gfx942.mlir"
    assert gen.main(["attention", "--ragged", "--num-heads-q", "4", "--num-heads-kv", "2", "--arch", "gfx942",
                     "-o", str(source)]) == 0
    assert run.main(["--check", str(source), "--arch", "gfx1100"]) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == (f"{source}:1:1: error: 'func.func' op @paged_attention is for gfx942 "
                                            "(rock.arch = \"gfx942\"), not for gfx1100 (arch = \"gfx1100\")")
    assert captured.out == ""  # nothing ran


def test_compile_accepts_a_target_with_features(tmp_path, capsys) -> None:
    source = tmp_path / "k.mlir"
    source.write_text(
        'gpu.module @m { gpu.func @k(%out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>,'
        ' rock.arch = "gfx942"} { gpu.return } }\n'
    )
    assert compile_cli.main([str(source), "--arch", "gfx942:sramecc+:xnack-", "-o", "-"]) == 0, capsys.readouterr().err
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx942' in capsys.readouterr().out


# ----------------------------------------------------------------------------
# The interpreter's waves are the kernel's chip's: readfirstlane per wave of 64 or 32 lanes.

FIRST_LANE = """
func.func @first_lane(%out: memref<64xi32>) attributes {rock.kernel, ATTRS rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %lane = arith.index_cast %tid : index to i32
  %first = rocdl.readfirstlane %lane : i32
  memref.store %first, %out[%tid] : memref<64xi32>
  return
}
"""


def first_lane_kernel(attrs: str) -> ir.Module:
    return ir.Module.parse(FIRST_LANE.replace("ATTRS", attrs), context=pagedir.make_context())


@pytest.mark.parametrize(("arch", "wave"), [("gfx942", 64), ("amdgcn-amd-amdhsa--gfx1100", 32)])
def test_interpreter_waves_follow_the_kernels_chip(arch: str, wave: int) -> None:
    from pagedir.interp import run

    (out,) = run(first_lane_kernel(f'rock.arch = "{arch}",'), "first_lane", [np.zeros(64, np.int32)])
    assert out.tolist() == [lane - lane % wave for lane in range(64)]


def test_interpreter_refuses_a_wave_op_in_a_kernel_naming_no_chip() -> None:
    from pagedir.interp import InterpError, run

    with pytest.raises(InterpError, match="'func.func' op @first_lane names no chip"):
        run(first_lane_kernel(""), "first_lane", [np.zeros(64, np.int32)])
