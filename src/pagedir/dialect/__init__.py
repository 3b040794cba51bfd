"""The rock dialect, declared in Python (see :mod:`pagedir.dialect.core`)."""

from __future__ import annotations

import mlir.ir as ir
from mlir.dialects import irdl
from mlir.dialects._ods_common import _cext

_cext.globals.append_dialect_search_prefix("pagedir.dialect")


def load_dialects(context: ir.Context) -> None:
    """Load the rock dialect into ``context`` once (idempotent per context)."""
    from pagedir.dialect import rock

    if context.is_registered_operation("rock.alloc"):
        return
    with context, ir.Location.unknown(context):
        irdl.load_dialects(ir.Module.parse(rock.IRDL_TEXT))


def op_def_of(op: ir.Operation | ir.OpView):
    """The declaration of a rock op, or None for other ops."""
    from pagedir.dialect.rock import OP_DEFS_BY_NAME

    return OP_DEFS_BY_NAME.get(op.name)
