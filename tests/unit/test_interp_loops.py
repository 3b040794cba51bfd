"""The interpreter's scf.for follows the op's semantics: the induction variable has the
type of the bounds (an i8 counter wraps like any i8), and ``unsigned`` compares the
bounds as unsigned numbers (a negative lower bound is a large one: no iteration)."""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp import ops_control
from pagedir.interp.memory import InterpError
from pagedir.interp.launch import run

ATTRIBUTES = "attributes {rock.kernel, rock.block_size = 1 : i64, rock.grid_size = 1 : i64}"


def run_kernel(body: str) -> np.ndarray:
    text = f"func.func @f(%out: memref<8xi32>) {ATTRIBUTES} {{\n{body}\n  return\n}}\n"
    with make_context():
        return run(ir.Module.parse(text), "f", [np.zeros(8, np.int32)])[0]


def test_i8_induction_variable_wraps_in_i8() -> None:
    out = run_kernel("""
  %c0 = arith.constant 0 : i8
  %c4 = arith.constant 4 : i8
  %c1 = arith.constant 1 : i8
  %c127 = arith.constant 127 : i8
  scf.for %k = %c0 to %c4 step %c1 : i8 {
    %s = arith.addi %k, %c127 : i8
    %w = arith.extsi %s : i8 to i32
    %i = arith.index_cast %k : i8 to index
    memref.store %w, %out[%i] : memref<8xi32>
  }""")
    assert out[:4].tolist() == [127, -128, -127, -126]


def test_unsigned_loop_with_a_negative_lower_bound_runs_no_iteration() -> None:
    out = run_kernel("""
  %lower = arith.constant -4 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : i32
  scf.for unsigned %k = %lower to %c4 step %c1 {
    memref.store %c100, %out[%c1] : memref<8xi32>
  }""")
    assert out.tolist() == [0] * 8


def test_unsigned_loop_counts_past_the_signed_maximum() -> None:
    out = run_kernel("""
  %lower = arith.constant 125 : i8
  %upper = arith.constant -126 : i8
  %c1 = arith.constant 1 : i8
  %base = arith.constant 125 : index
  scf.for unsigned %k = %lower to %upper step %c1 : i8 {
    %u = arith.extui %k : i8 to i32
    %i = arith.index_castui %k : i8 to index
    %slot = arith.subi %i, %base : index
    memref.store %u, %out[%slot] : memref<8xi32>
  }""")
    # 125, 126, 127, 128, 129 (the i8 bits 125 .. -127), stopping before 130 (-126).
    assert out[:5].tolist() == [125, 126, 127, 128, 129]
    assert out[5:].tolist() == [0, 0, 0]


def test_a_loop_past_the_iteration_limit_is_a_located_error_not_a_hang(monkeypatch) -> None:
    """A loop of 10**12 trips (or a while that never ends) stops at the op with an error."""
    with pytest.raises(InterpError, match=r"scf.for runs 1000000000000 iterations, more than the interpreter's limit"):
        run_kernel("""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000000 : index
  scf.for %k = %c0 to %big step %c1 {
    %v = arith.constant 1 : i32
    memref.store %v, %out[%c0] : memref<8xi32>
  }""")
    monkeypatch.setattr(ops_control, "MAX_LOOP_ITERATIONS", 100)  # the same rule, reached in milliseconds
    with pytest.raises(InterpError, match=r"scf.while has not finished after 100 iterations") as caught:
        run_kernel("""
  %t = arith.constant true
  scf.while : () -> () {
    scf.condition(%t)
  } do {
    scf.yield
  }""")
    assert ":4:3" in caught.value.where()
