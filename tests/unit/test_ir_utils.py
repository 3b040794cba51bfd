"""The shared IR helpers the passes walk functions with: order of the ops found, program order, errors."""

from __future__ import annotations

import mlir.ir as ir
import pytest

from pagedir.context import make_context
from pagedir.dialect.effects import walk_ops
from pagedir.passes.ir_utils import ProgramOrder, find_ops

NESTED = """
func.func @f(%c: i1) {
  %a = arith.constant 0 : index
  scf.if %c {
    %b = arith.constant 1 : index
    scf.if %c {
      %d = arith.constant 2 : index
    }
  } else {
    %e = arith.constant 3 : index
  }
  scf.execute_region {
    scf.yield
  }
  return
}
"""


@pytest.fixture
def func():
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(NESTED)
        yield module.body.operations[0].operation


def describe(op: ir.Operation) -> str:
    """The op's name, with the value of a constant: the ops of NESTED told apart."""
    if op.name == "arith.constant":
        return f"c{ir.IntegerAttr(op.attributes['value']).value}"
    return op.name


def test_walk_ops_visits_nested_ops_in_pre_order_without_the_root(func):
    seen = []
    walk_ops(func, lambda op: seen.append(describe(op)))
    assert seen == ["c0", "scf.if", "c1", "scf.if", "c2", "scf.yield", "scf.yield", "c3", "scf.yield",
                    "scf.execute_region", "scf.yield", "func.return"]


def test_walk_ops_passes_on_what_its_callback_raises(func):
    class Stop(Exception):
        pass

    seen = []

    def visit(op: ir.Operation) -> None:
        seen.append(describe(op))
        if op.name == "scf.if":
            raise Stop(op)

    with pytest.raises(Stop):
        walk_ops(func, visit)
    assert seen == ["c0", "scf.if"]  # the walk stops at the first raise


def test_find_ops_takes_several_names_and_returns_post_order(func):
    found = [describe(op) for op in find_ops(func, "scf.if", "arith.constant")]
    assert found == ["c0", "c1", "c2", "scf.if", "c3", "scf.if"]
    assert [describe(op) for op in find_ops(func, "func.func")] == ["func.func"]  # the root counts


def test_program_order_positions_and_last_position_inside(func):
    order = ProgramOrder(func)
    ops = {}
    walk_ops(func, lambda op: ops.setdefault(describe(op), op))
    outer_if, execute = ops["scf.if"], ops["scf.execute_region"]
    inner_if = find_ops(outer_if, "scf.if")[0]
    assert [order.position[ops[name]] for name in ("c0", "scf.if", "c1", "c2", "c3", "scf.execute_region")] == [0, 1, 2, 4, 7, 9]
    assert order.position[inner_if] == 3
    assert order.last_inside[outer_if] == 8  # the yield after c3, in the else region
    assert order.last_inside[inner_if] == 5
    assert order.last_inside[execute] == 10
    assert order.last_inside[ops["c2"]] == 4  # an op holding nothing: its own position
    assert order.last_inside[func] == 11 and func not in order.position
    assert order.contains(outer_if, ops["c3"]) and order.contains(outer_if, outer_if)
    assert not order.contains(inner_if, ops["c3"]) and not order.contains(outer_if, execute)
    assert order.contains(func, ops["func.return"])


def test_program_order_of_a_region_without_terminator(func):
    """A module's last op is a function: the module's last position is the function's last one."""
    module = func.parent
    order = ProgramOrder(module)
    assert order.position[func] == 0
    assert order.last_inside[module] == order.last_inside[func] == 12
