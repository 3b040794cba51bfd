"""How check_pass and pagedir-run --check compare outputs: NaN, and which tolerance decides."""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp.check import CheckFailure, check_pass, compare
from pagedir.reference import bf16_bits

F32 = "memref<4xf32>"

#: Writes 0/0 into the first element of its output, leaves the others as they were.
NAN_KERNEL = """
func.func @nan(%x: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %nan = arith.divf %zero, %zero : f32
  memref.store %nan, %out[%c0] : memref<4xf32>
  return
}
"""


def compare_f32(expected, got, initial=None):
    with make_context():
        return compare(1, ir.MemRefType.parse(F32), np.array(expected, np.float32), np.array(got, np.float32), None,
                       initial=None if initial is None else np.array(initial, np.float32))


def test_nan_against_a_number_is_a_mismatch() -> None:
    assert not compare_f32([1, 2, 3, 4], [1, 2, np.nan, 4]).ok
    assert not compare_f32([1, 2, np.nan, 4], [1, 2, 3, 4], initial=[np.nan] * 4).ok


def test_nan_against_nan_matches_only_where_the_output_was_nan_before_the_run() -> None:
    untouched = compare_f32([1, np.nan, 3, 4], [1, np.nan, 3, 4], initial=[0, np.nan, 0, 0])
    assert untouched.ok
    computed = compare_f32([1, np.nan, 3, 4], [1, np.nan, 3, 4], initial=[0, 0, 0, 0])
    assert computed.mismatches == 1 and computed.worst == (1,)
    assert not compare_f32([np.nan] * 4, [np.nan] * 4).ok  # nothing known about the argument before the run


def test_a_bf16_argument_given_as_bits_keeps_its_untouched_nan() -> None:
    # Pools from reference.block_caches hold bf16 as uint16 bit patterns, NaN in the blocks no sequence owns;
    # the runs give back decoded values. An untouched NaN slot is the same slot on both sides.
    initial = bf16_bits([1.0, np.nan, 2.0, np.nan])
    with make_context():
        pool = ir.MemRefType.parse("memref<4xbf16>")
        untouched = compare(1, pool, np.array([1, np.nan, 2, np.nan], np.float32),
                            np.array([1, np.nan, 2, np.nan], np.float32), None, initial=initial)
        assert untouched.ok, untouched.describe()
        computed = compare(1, pool, np.array([np.nan, np.nan, 2, np.nan], np.float32),
                           np.array([np.nan, np.nan, 2, np.nan], np.float32), None, initial=initial)
        assert computed.mismatches == 1 and computed.worst == (0,)


def test_check_pass_fails_a_function_that_computes_nan_on_both_sides() -> None:
    # The output drawn at random holds numbers; both runs write NaN over the first one.
    with make_context():
        module = ir.Module.parse(NAN_KERNEL)
        with pytest.raises(CheckFailure, match=r"argument 1 \(memref<4xf32>\): .* 1 elements differ by more than 1e-05, "
                                               r"worst at \[0\] \(expected nan, got nan\)"):
            check_pass(module, "rock-annotate-liveness")


def test_the_report_says_the_absolute_tolerance_decides() -> None:
    comparison = compare_f32([0.001, 1, 1, 1], [0.0013, 1, 1, 1])  # rel error 0.3, abs error 3e-4 > 1e-5
    assert comparison.describe().startswith(
        "argument 1 (memref<4xf32>): max abs error 0.0003 > abs tolerance 1e-05 (max rel error 0.3, not checked)")
    with make_context():
        f16 = compare(1, ir.MemRefType.parse("memref<4xf16>"), np.array([0.001, 1, 1, 1], np.float16),
                      np.array([0.0013, 1, 1, 1], np.float16), None)
    assert f16.ok  # the same errors pass f16's tolerance of 0.02, and the report says why
    assert "max abs error 0.000299 <= abs tolerance 0.02 (max rel error 0.299, not checked)" in f16.describe()


def test_equal_infinities_match_and_others_do_not() -> None:
    # A log-sum-exp of -inf (a split that saw no key) on both sides is the same value, not an error of inf.
    same = compare_f32([-np.inf, np.inf, 3, 4], [-np.inf, np.inf, 3, 4])
    assert same.ok and same.max_abs == 0.0
    assert not compare_f32([-np.inf, 2, 3, 4], [np.inf, 2, 3, 4]).ok
    assert not compare_f32([-np.inf, 2, 3, 4], [-1e30, 2, 3, 4]).ok
