"""rock-verify: run the Python verifiers of every rock op.

IRDL checks the structure of rock ops when they are parsed (operand and result
kinds, required attributes); everything else (shapes, optional attributes,
cross-operand rules) lives in the ``verify`` method of each op declaration and
runs here, with the launch attributes ``rock.block_size`` / ``rock.grid_size`` on
any op (the dialect's discardable attributes: every pass and the interpreter read
them as launch sizes). ``pagedir-opt`` runs this pass after parsing and after every pass.
"""

from __future__ import annotations

import os
import traceback

import mlir.ir as ir

from pagedir.arch import MAX_GRID_SIZE, MAX_WORKGROUP_SIZE
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
            if op.name == "func.func" or op.name == "gpu.func":
                for message in launch_attribute_errors(op):
                    op.location.emit_error(message)
                    ok = False
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


#: Launch attributes and their ranges: threads per workgroup, workgroups per grid.
LAUNCH_LIMITS = {"rock.block_size": MAX_WORKGROUP_SIZE, "rock.grid_size": MAX_GRID_SIZE}


def launch_attribute_errors(func: ir.Operation) -> list[str]:
    """Messages for ``rock.block_size`` / ``rock.grid_size`` that are not integers in 1 .. their limit."""
    messages = []
    for name, limit in LAUNCH_LIMITS.items():
        if name not in func.attributes:
            continue
        attr = func.attributes[name]
        value = ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None
        if value is None or not 1 <= value <= limit:
            messages.append(f"'{func.name}' op attribute '{name}' must be an integer in 1 .. {limit}, got {attr}")
    return messages


class RockVerifyPass(Pass):
    argument = "rock-verify"
    summary = "Run the Python verifiers of every rock op"

    def run(self, module: ir.Operation) -> bool:
        return verify_rock_ops(module)
