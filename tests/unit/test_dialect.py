"""The dialect framework: declarations -> IRDL, OpViews, builders, effects, verifiers."""

from __future__ import annotations

from pathlib import Path

import mlir.ir as ir
import pytest

import pagedir
from pagedir.dialect import op_def_of, rock
from pagedir.dialect.core import (
    I64,
    I64_ATTR,
    INDEX,
    MEMREF,
    OPTIONAL,
    READ,
    VARIADIC,
    WRITE,
    Attr,
    OpDef,
    Operand,
    Result,
    declared_effects,
    dialect_irdl,
)
from pagedir.passes.verify import verify_rock_ops

FIXED_SURFACE = ["alloc", "live_in", "live_out", "lds_barrier", "workgroup_id", "workitem_id", "deref", "attention", "global_load"]


class _ToyOp(OpDef):
    name = "toy"
    operands = (
        Operand("src", MEMREF, effect=READ),
        Operand("idx", INDEX, VARIADIC),
        Operand("ptr", I64, OPTIONAL),
        Operand("dst", MEMREF, effect=WRITE),
    )
    results = (Result("out", INDEX),)
    attributes = (Attr("count", I64_ATTR), Attr("extra", I64_ATTR, required=False))


def test_irdl_has_one_constraint_per_slot_and_only_required_attributes():
    text = _ToyOp.irdl()
    assert "irdl.operands(src: %c0, idx: variadic %c1, ptr: optional %c2, dst: %c3)" in text
    assert "irdl.results(out: %c4)" in text
    assert '"count" = %c5' in text
    assert "extra" not in text  # IRDL 22 has no optional attributes: checked in Python


def test_irdl_text_loads_into_a_context():
    with ir.Context() as ctx, ir.Location.unknown():
        from mlir.dialects import irdl

        irdl.load_dialects(ir.Module.parse(dialect_irdl("toy", [_ToyOp])))
        assert ctx.is_registered_operation("toy.toy")


@pytest.mark.parametrize("name", FIXED_SURFACE)
def test_fixed_surface_ops_are_registered_with_opviews_and_builders(name):
    ctx = pagedir.make_context()
    assert ctx.is_registered_operation(f"rock.{name}")
    assert f"rock.{name}" in rock.OPVIEWS
    assert callable(getattr(rock, name))


def test_parsed_ops_come_back_as_their_opview_with_declaration():
    with pagedir.make_context():
        module = ir.Module.parse('func.func @f() { %t = "rock.workitem_id"() : () -> index\n return }')
        op = module.body.operations[0].regions[0].blocks[0].operations[0]
        assert isinstance(op, rock.WorkitemIdOp)
        assert op_def_of(op).name == "workitem_id"


def test_builders_take_loc_and_ip_keyword_only_and_reject_unknown_attributes():
    with pagedir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            with pytest.raises(TypeError, match="unknown attributes"):
                rock.workgroup_id(ir.IndexType.get(), bogus=1)
            with pytest.raises(TypeError):
                rock.workgroup_id(ir.IndexType.get(), ir.Location.unknown())
            value = rock.workgroup_id(ir.IndexType.get(), loc=ir.Location.name("here"))
        assert isinstance(value, ir.Value)
        assert "here" in str(value.owner.location)


def test_effects_come_from_declarations_with_segments():
    source = """
    func.func @f(%mem: memref<4xf32>, %q: memref<1x4x1x64xf16>, %k: memref<1x4x8x64xf16>, %o: memref<1x4x1x64xf16>, %i: index) {
      %v = "rock.global_load"(%mem, %i) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4xf32>, index) -> f32
      "rock.attention"(%q, %k, %k, %o) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
        : (memref<1x4x1x64xf16>, memref<1x4x8x64xf16>, memref<1x4x8x64xf16>, memref<1x4x1x64xf16>) -> ()
      return
    }"""
    with pagedir.make_context():
        module = ir.Module.parse(source)
        load, attention = list(module.body.operations[0].regions[0].blocks[0].operations)[:2]
        args = module.body.operations[0].regions[0].blocks[0].arguments
        assert declared_effects(op_def_of(load), load.operation) == [(args[0], READ)]
        effects = declared_effects(op_def_of(attention), attention.operation)
        assert [kind for _, kind in effects] == [READ, READ, READ, WRITE]
        assert effects[-1][0] == args[3]


def test_optional_attribute_defaults_and_kinds_are_checked_in_python():
    source = """
    func.func @f(%q: memref<1x4x1x64xf16>, %k: memref<1x4x8x64xf16>, %o: memref<1x4x1x64xf16>) {
      "rock.attention"(%q, %k, %k, %o) {num_heads_q = 4, num_heads_kv = 4, causal = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
        : (memref<1x4x1x64xf16>, memref<1x4x8x64xf16>, memref<1x4x8x64xf16>, memref<1x4x1x64xf16>) -> ()
      return
    }"""
    ctx = pagedir.make_context()
    messages = []
    with ctx:
        ctx.attach_diagnostic_handler(lambda d: messages.append(d.message) or True)
        module = ir.Module.parse(source)
        assert not verify_rock_ops(module.operation)
    assert messages == ["'rock.attention' op attribute 'causal' must be bool, got 1 : i64"]


def test_valid_example_verifies_and_round_trips():
    text = (Path(__file__).resolve().parents[2] / "examples" / "paged_decode.mlir").read_text()
    with pagedir.make_context():
        module = ir.Module.parse(text)
        assert verify_rock_ops(module.operation)
        printed = str(module)
        assert str(ir.Module.parse(printed)) == printed
