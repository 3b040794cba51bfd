"""rock-verify: run the Python verifiers of every rock op.

IRDL checks the structure of rock ops when they are parsed (operand and result
kinds, required attributes); everything else (shapes, optional attributes,
cross-operand rules) lives in the ``verify`` method of each op declaration and
runs here. ``pagedir-opt`` runs this pass after parsing and after every pass.
"""

from __future__ import annotations

import os
import traceback

import mlir.ir as ir

from pagedir.dialect.rock import OP_DEFS_BY_NAME
from pagedir.passes.base import Pass


def verify_rock_ops(root: ir.Operation) -> bool:
    """Emit an error at the location of every rock op violating an invariant; True when none does."""
    ok = True
    advance = ir.WalkResult.ADVANCE

    def visit(op: ir.Operation) -> ir.WalkResult:
        # Called for every op of the module after every pass: other ops cost one dict lookup.
        nonlocal ok
        op_def = OP_DEFS_BY_NAME.get(op.name)
        if op_def is None:
            return advance
        try:
            messages = op_def.verify_op(op.opview)
        except Exception as err:  # a verifier bug; an exception after emitted errors would abort a pass run
            if os.environ.get("PAGEDIR_TRACEBACK"):
                traceback.print_exc()
            # "internal error" makes the tools report a bug (exit code 2), not a user error.
            messages = [f"internal error in the verifier of '{op.name}': {type(err).__name__}: {err}"]
        for message in messages:
            op.location.emit_error(message)
            ok = False
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return ok


class RockVerifyPass(Pass):
    argument = "rock-verify"
    summary = "Run the Python verifiers of every rock op"

    def run(self, module: ir.Operation) -> bool:
        return verify_rock_ops(module)
