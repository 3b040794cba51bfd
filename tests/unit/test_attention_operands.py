"""rock.attention's operands are read by name, through the one declaration of its operand groups
(``AttentionLike.operands``): the checks, the interpreter, the passes and the generator follow it."""

from __future__ import annotations

import argparse
import re

import mlir.ir as ir
import pytest

from pagedir.context import make_context
from pagedir.dialect.core import MEMREF, OPTIONAL, Operand
from pagedir.dialect.ops_attention import AttentionLike, attention_operands, optional_operands
from pagedir.dialect.ops_page_table import batch_dims
from pagedir.gen import attention as gen
from pagedir.interp import check
from pagedir.passes.ir_utils import find_ops


def generated(**overrides) -> str:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in {**dict(num_heads_q=4, num_heads_kv=2, head_dim=64), **overrides}.items():
        setattr(args, key, value)
    return gen.generate(args)


def attention_of(text: str) -> tuple[ir.Module, ir.Operation, ir.Operation]:
    module = ir.Module.parse(text, make_context())
    op = find_ops(module.operation, "rock.attention")[0]
    func = op.parent
    while func.name != "func.func":
        func = func.parent
    return module, func, op


def readings(func: ir.Operation, op: ir.Operation) -> dict:
    """What each reader of the op's operands makes of them."""
    return {
        "optional": check._attention_attrs(func)["optional"],
        "variant arguments": check.attention_variant_arguments(func),
        "by name": {name: value for name, value in attention_operands(op).items() if name != "dummy"},
        "batch dims": batch_dims(op),
        "accessors": (op.opview.seq_lens, op.opview.sinks, op.opview.out),
    }


def test_every_reader_follows_a_new_optional_operand_in_the_declaration(monkeypatch):
    """A new optional operand group declared before seq_lens (absent from this op): the readers that
    kept their own copy of the list, or counted positions, would now read alibi_slopes as seq_lens."""
    module, func, op = attention_of(generated(seq_lens=True, alibi=True, sinks=True))
    before = readings(func, op)
    assert before["optional"] == ["seq_lens", "alibi_slopes", "sinks"]
    declared = AttentionLike.operands
    monkeypatch.setattr(AttentionLike, "operands", (*declared[:3], Operand("dummy", MEMREF, OPTIONAL), *declared[3:]))
    sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    with module.context:
        op.attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([*sizes[:3], 0, *sizes[3:]])
    assert optional_operands()[0] == "dummy"
    assert attention_operands(op)["dummy"] is None
    assert readings(func, op) == before


@pytest.mark.parametrize("variant", [
    dict(seq_lens=True, alibi=True, sinks=True),
    dict(kv_dtype="fp8e4m3fnuz", kv_scale="per-tensor", seq_lens=True),
    dict(dense=True, alibi=True),
], ids=["lens-alibi-sinks", "fp8-per-tensor", "dense-alibi"])
def test_the_generator_passes_each_argument_as_the_operand_of_its_name(variant):
    """pagedir-gen names the kernel's arguments after the operands they feed: each lands in the slot
    the declaration gives that name."""
    text = generated(**variant)
    names = re.findall(r"%(\w+):", text.split(")", 1)[0])
    module, _, op = attention_of(text)  # the module keeps its ops alive
    fed = {name: names[ir.BlockArgument(value).arg_number] for name, value in attention_operands(op).items()
           if value is not None and isinstance(value.owner, ir.Block)}
    assert fed and all(name == argument for name, argument in fed.items()), fed
