"""The rock dialect: OpView classes and snake_case builders, derived from the declarations.

This module is named after the dialect namespace so that the bindings find its
OpViews for parsed ops (``pagedir.dialect`` is a registered dialect search prefix).

Builders take result types first (where the op has results), then operands in
declaration order (``None`` for an absent optional operand, a list for a
variadic one), then attributes as keywords; ``loc`` and ``ip`` are keyword-only.
They return the single result, or the op when it has none.
"""

from __future__ import annotations

import inspect
from typing import Any

import mlir.ir as ir
from mlir.dialects._ods_common import _cext

from pagedir.dialect import ops_attention, ops_core, ops_gridwise, ops_load, ops_page_table
from pagedir.dialect.core import OpDef, build, dialect_irdl, make_opview_class

NAMESPACE = "rock"

#: Every op of the dialect, in documentation order.
OP_DEFS: tuple[type[OpDef], ...] = ops_core.OPS + ops_attention.OPS + ops_page_table.OPS + ops_gridwise.OPS + ops_load.OPS
OP_DEFS_BY_NAME: dict[str, type[OpDef]] = {op.op_name(): op for op in OP_DEFS}

IRDL_TEXT = dialect_irdl(NAMESPACE, OP_DEFS)


@_cext.register_dialect
class _Dialect(ir.Dialect):
    DIALECT_NAMESPACE = NAMESPACE


def _register(op_def: type[OpDef]) -> type:
    cls = make_opview_class(op_def, ir.OpView)
    cls.__module__ = __name__
    return _cext.register_operation(_Dialect)(cls)


OPVIEWS: dict[str, type] = {op.op_name(): _register(op) for op in OP_DEFS}
globals().update({cls.__name__: cls for cls in OPVIEWS.values()})


def _make_builder(op_def: type[OpDef]):
    result_names = [f"{r.name}_type" for r in op_def.results]
    operand_names = [o.name for o in op_def.operands]

    def builder(*args: Any, loc: ir.Location | None = None, ip: ir.InsertionPoint | None = None, **attrs: Any):
        expected = len(result_names) + len(operand_names)
        if len(args) != expected:
            raise TypeError(f"{op_def.name}() takes {expected} positional arguments, got {len(args)}")
        result_types, operands = args[: len(result_names)], args[len(result_names) :]
        known = {a.name for a in op_def.attributes}
        unknown = set(attrs) - known
        if unknown:
            raise TypeError(f"{op_def.name}() got unknown attributes {sorted(unknown)}")
        op = build(op_def, operands, result_types, attrs, loc=loc, ip=ip)
        if len(op.results) == 1:
            return op.results[0]
        return op.opview

    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in result_names + operand_names]
    params += [
        inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY, default=None if not a.required else inspect.Parameter.empty)
        for a in op_def.attributes
    ]
    params += [
        inspect.Parameter("loc", inspect.Parameter.KEYWORD_ONLY, default=None),
        inspect.Parameter("ip", inspect.Parameter.KEYWORD_ONLY, default=None),
    ]
    builder.__signature__ = inspect.Signature(params)
    builder.__name__ = builder.__qualname__ = op_def.name
    builder.__doc__ = op_def.summary
    builder.__module__ = __name__
    return builder


BUILDERS = {op.name: _make_builder(op) for op in OP_DEFS}
globals().update(BUILDERS)

__all__ = sorted([*BUILDERS, *(cls.__name__ for cls in OPVIEWS.values()), "OP_DEFS", "IRDL_TEXT"])
