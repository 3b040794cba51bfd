"""How check_pass and pagedir-run --check compare outputs (NaN, and which tolerance decides), and the edge draw
every check makes."""

from __future__ import annotations

import argparse
import io
from contextlib import redirect_stderr, redirect_stdout

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import reference
from pagedir.cli import run as run_cli
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import EDGE_SIZES, EDGES, CheckFailure, check_draws, check_pass, compare, make_case
from pagedir.interp.memory import Device
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


def gen_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in {**dict(num_heads_q=4, num_heads_kv=2, head_dim=64), **overrides}.items():
        setattr(args, key, value)
    return args


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


def test_nan_where_the_reference_computes_nan_matches_and_nowhere_else() -> None:
    # A row that sees a NaN key is NaN by the math: NaN there on both sides matches; a number there, or a
    # NaN in a row the reference computes a number for, is a mismatch.
    reference = np.array([1, np.nan, 3, 4], np.float32)
    with make_context():
        f32 = ir.MemRefType.parse(F32)
        assert compare(1, f32, reference, reference.copy(), None, reference=reference).ok
        assert compare(1, f32, reference, np.array([1, 0, 3, 4], np.float32), None, reference=reference).worst == (1,)
        extra = compare(1, f32, reference, np.array([1, np.nan, np.nan, 4], np.float32), None, reference=reference)
        assert extra.mismatches == 1 and extra.worst == (2,)


#: rock.attention through a block table, as pagedir-gen writes it, with a bug planted before or after it.
PLANTED = """
func.func @paged_attention(%q: memref<2x4x1x64xf16>, %k_cache: memref<4x16x2x64xf16>, %v_cache: memref<4x16x2x64xf16>,
    %block_table: memref<2x2xi32>, %seq_lens: memref<2xi32>, %out: memref<2x4x1x64xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0 : i32
  BEFORE
  %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<4x16x2x64xf16>, memref<2x2xi32>) -> memref<2x4x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<4x16x2x64xf16>, memref<2x2xi32>) -> memref<2x4x1024xf16>
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 4, num_heads_kv = 2,
      causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x4x1x64xf16>, memref<2x4x1024xf16>, memref<2x4x1024xf16>, memref<2xi32>, memref<2x4x1x64xf16>) -> ()
  AFTER
  return
}
"""
EDGE_BUGS = {
    # A sequence of length 0 taken as a full one.
    "seq-len-0-as-full": ("""scf.for %b = %c0 to %c2 step %c1 {
    %n = memref.load %seq_lens[%b] : memref<2xi32>
    %empty = arith.cmpi eq, %n, %zero : i32
    %full = arith.constant 32 : i32
    %m = arith.select %empty, %full, %n : i32
    memref.store %m, %seq_lens[%b] : memref<2xi32>
  }""", ""),
    # A block id outside the pool read as block 0 instead of zeros.
    "ids-clamped-into-the-pool": ("""scf.for %b = %c0 to %c2 step %c1 {
    scf.for %s = %c0 to %c2 step %c1 {
      %id = memref.load %block_table[%b, %s] : memref<2x2xi32>
      %clamped = arith.maxsi %id, %zero : i32
      memref.store %clamped, %block_table[%b, %s] : memref<2x2xi32>
    }
  }""", ""),
    # NaN outputs (rows that see a NaN key) written as 0.
    "nan-rows-zeroed": ("", """%c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %zero_f16 = arith.constant 0.0 : f16
  scf.for %b = %c0 to %c2 step %c1 {
    scf.for %h = %c0 to %c4 step %c1 {
      scf.for %d = %c0 to %c64 step %c1 {
        %x = memref.load %out[%b, %h, %c0, %d] : memref<2x4x1x64xf16>
        %nan = arith.cmpf uno, %x, %x : f16
        %y = arith.select %nan, %zero_f16, %x : f16
        memref.store %y, %out[%b, %h, %c0, %d] : memref<2x4x1x64xf16>
      }
    }
  }"""),
}


@pytest.mark.parametrize("bug", list(EDGE_BUGS))
def test_a_bug_at_an_edge_fails_the_edge_draw_of_the_check(bug: str, tmp_path) -> None:
    # The page placements' draws (lengths >= 1, ids in the pool, no NaN in a live key) pass the planted
    # function; the edge draw, which every --check makes, fails it.
    before, after = EDGE_BUGS[bug]
    path = tmp_path / "planted.mlir"
    path.write_text(PLANTED.replace("BEFORE", before).replace("AFTER", after))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run_cli.main(["--check", "--no-lower", str(path)])
    runs = [line for line in out.getvalue().splitlines() if line.startswith("@")]
    assert code == 1, out.getvalue() + err.getvalue()
    assert runs == ["@paged_attention: PASS (levels L0, seed 0)", "@paged_attention: PASS (levels L0, seed 0, adjacent pages)",
                    "@paged_attention: PASS (levels L0, seed 0, switching pages)",
                    "@paged_attention: FAIL (levels L0, seed 0, edge case)"], out.getvalue()


def test_the_edge_draw_holds_the_zero_cases() -> None:
    # Lengths 0, full and 1; -1 and num_blocks in owned slots (an empty CSR sequence for length 0); no query
    # for a packed sequence; NaN exactly in the rows that see the NaN key (causal: the later rows only).
    with make_context():
        module = ir.Module.parse(gen.generate(gen_args(page_table="csr", varlen=True, seq_len_q=5, causal=True,
                                                       page_size=4, seq_len_k=16, batch=4)))
        func = module.body.operations[0]
        assert (None, EDGES) in check_draws(func)
        case = make_case(func, np.random.default_rng(0), Device(), None, EDGES)
    q, cu, k_pool, v_pool, indptr, indices, last, out = case.args
    lengths = reference.csr_seq_lens(indptr, last, 4)
    assert list(lengths[:3]) == [0, 16, 1] and list(np.diff(cu)) == [0, 5, 1, 0]
    owned = indices[indptr[1] : indptr[2]]
    assert owned[0] == -1 and owned[1] == k_pool.shape[0]
    expected = case.expected[len(case.args) - 1]
    nan_rows = np.isnan(expected[:6]).any(axis=-1)  # sequence 1's 5 rows, then sequence 2's one
    assert nan_rows.tolist() == [[False] * 4] + [[False, False, True, True]] * 4 + [[False] * 4]


def test_dynamic_kernels_are_checked_at_batch_0_and_1() -> None:
    with make_context():
        module = ir.Module.parse(gen.generate(gen_args(page_table="blocks", dynamic=True)))
        draws = check_draws(module.body.operations[0])
    assert [sizes.batch for sizes, _ in draws[-3:]] == [EDGE_SIZES.batch, 0, 1] and draws[-3][1] == EDGES


@pytest.mark.parametrize("lds_dma", [False, True])
def test_a_lowered_kernel_is_checked_on_pages_of_its_own_size(lds_dma: bool, tmp_path) -> None:
    # Pointer tables lose their rock.deref views at L6: the check of the kernel as written must still draw pages
    # of 16 tokens (not one token each) and lengths up to the capacity, or the kernel reads past the pages it got.
    from pagedir import driver

    with make_context():
        module = ir.Module.parse(gen.generate(gen_args(seq_lens=True, page_size=16, seq_len_k=64, lds_dma=lds_dma)))
        driver.run(module.operation, driver.CompileOptions(arch="gfx942"), end="L6")
        path = tmp_path / "lowered.mlir"
        path.write_text(str(module))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run_cli.main(["--check", "--seed", "2", str(path)])
    runs = [line for line in out.getvalue().splitlines() if line.startswith("@")]
    assert code == 0, out.getvalue() + err.getvalue()
    assert runs[-1] == "@paged_attention: PASS (levels L6, seed 2, edge case)", out.getvalue()
