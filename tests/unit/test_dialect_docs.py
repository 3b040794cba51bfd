"""docs/rock.md is generated from the op declarations and must be regenerated when they change."""

from __future__ import annotations

from pathlib import Path

from pagedir.dialect.core import render_markdown
from pagedir.dialect.rock import NAMESPACE, OP_DEFS

DOC = Path(__file__).resolve().parents[2] / "docs" / "rock.md"


def test_rock_reference_is_up_to_date():
    expected = render_markdown(NAMESPACE, OP_DEFS)
    assert DOC.read_text() == expected, "docs/rock.md is stale: run `pagedir-opt --show-dialect rock > docs/rock.md`"


def test_reference_documents_every_op_and_operand():
    text = render_markdown(NAMESPACE, OP_DEFS)
    for op in OP_DEFS:
        assert f"## `{op.op_name()}`" in text
        for operand in op.operands:
            assert f"| `{operand.name}` |" in text
