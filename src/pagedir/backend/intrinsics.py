"""Lower ``math`` ops that have an AMDGPU instruction to LLVM intrinsic calls.

``convert-gpu-to-rocdl`` turns ``math.exp2`` into a call of ``__ocml_exp2_f32``
from the ROCm device library, which nothing links here; the call would also
follow the calling convention, clobbering registers around every softmax
exponential. ``llvm.exp2`` is what that library function computes, and the AMDGPU
backend selects it to ``v_exp_f32`` (with its denormal range fix-up):

```mlir
%p = math.exp2 %x : vector<4xf32>
// becomes
%p = llvm.call_intrinsic "llvm.exp2.v4f32"(%x) : (vector<4xf32>) -> vector<4xf32>
```

Only f32 (scalar or vector) is rewritten; other types keep the upstream lowering.
"""

from __future__ import annotations

import mlir.ir as ir
from mlir.dialects import llvm

#: math op -> LLVM intrinsic base name.
INTRINSICS = {"math.exp2": "llvm.exp2"}


def lower_math_to_intrinsics(module: ir.Operation) -> None:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in INTRINSICS and _is_f32(op.results[0].type):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in found:
        result_type = op.results[0].type
        with op.location, ir.InsertionPoint(op):
            call = llvm.call_intrinsic(result_type, f"{INTRINSICS[op.name]}.{_suffix(result_type)}",
                                       list(op.operands), [], [])
        op.results[0].replace_all_uses_with(call)
        op.erase()


def _is_f32(type_: ir.Type) -> bool:
    element = ir.VectorType(type_).element_type if isinstance(type_, ir.VectorType) else type_
    return isinstance(element, ir.F32Type)


def _suffix(type_: ir.Type) -> str:
    """LLVM's overload suffix: ``f32`` or ``v4f32``."""
    if isinstance(type_, ir.VectorType):
        return f"v{ir.VectorType(type_).shape[0]}f32"
    return "f32"
