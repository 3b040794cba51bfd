"""Lower ``math`` ops that have an AMDGPU instruction to LLVM intrinsic calls.

``convert-gpu-to-rocdl`` turns ``math.exp2`` into a call of ``__ocml_exp2_f32``
from the ROCm device library, which nothing links here; the call would also
follow the calling convention, clobbering registers around every softmax
exponential. ``llvm.exp2`` is what that library function computes, and the AMDGPU
backend selects it to ``v_exp_f32`` with a denormal range fix-up, which CDNA leaves out:
it names ``llvm.amdgcn.exp2`` (``v_exp_f32`` alone, results below 2^-126 flushed to 0) as
its own intrinsic, since every exponential here is a weight ``exp2(x - max)`` of at most 1
summed beside the max's 1 (``Cdna.scalar_math_intrinsics``);
``math.log2``
(a split's log-sum-exp) likewise becomes ``llvm.log2`` (``v_log_f32``) instead of
``__ocml_log2_f32``, whose call made the split kernel an indirect caller with
callee-saved VGPRs and AGPRs:

```mlir
%p = math.exp2 %x : vector<4xf32>
// becomes (a family without an intrinsic of its own for it)
%p = llvm.call_intrinsic "llvm.exp2.v4f32"(%x) : (vector<4xf32>) -> vector<4xf32>
```

``math.tanh`` (the logits soft-cap) has no AMDGPU instruction, and
``convert-gpu-to-rocdl`` turns it into ``llvm.tanh``, which the AMDGPU backend
cannot select ("no libcall available for ftanh"). An f32 tanh is expanded the way
upstream's ``math-expand-ops`` does it, with ``llvm.exp2`` for the exponential:
``tanh(x) = copysign((1 - e) / (1 + e), x)`` with ``e = exp2(-2 log2(e) |x|)``
(``e`` in (0, 1], so nothing overflows; the absolute error stays near one f32 ulp of 1).

Only f32 (scalar or vector) is rewritten; other types keep the upstream lowering. A target family may name
its own scalar intrinsic for an op (``TargetFamily.scalar_math_intrinsics``: NVIDIA's ``lg2.approx.f32`` for
``math.log2``, which NVPTX cannot select as ``llvm.log2``; CDNA's ``llvm.amdgcn.exp2`` for ``math.exp2``); a
vector is then computed element by element.
"""

from __future__ import annotations

import mlir.ir as ir
from mlir.dialects import arith, llvm, vector
from mlir.dialects import math as mlir_math

#: math op -> LLVM intrinsic base name.
INTRINSICS = {"math.exp2": "llvm.exp2", "math.log2": "llvm.log2"}
#: math ops expanded into arithmetic and intrinsics (no instruction of their own).
EXPANDED = ("math.tanh",)
LOG2_E = 1.4426950408889634


def lower_math_to_intrinsics(module: ir.Operation) -> None:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if (op.name in INTRINSICS or op.name in EXPANDED) and _is_f32(op.results[0].type):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for op in found:
        result_type = op.results[0].type
        with op.location, ir.InsertionPoint(op):
            own = _family_intrinsics(op).get(op.name)
            if own is not None:
                result = _per_element(own, op.operands[0])
            elif op.name == "math.tanh":
                result = _tanh(op.operands[0])
            else:
                result = llvm.call_intrinsic(result_type, f"{INTRINSICS[op.name]}.{_suffix(result_type)}",
                                             list(op.operands), [], [])
        op.results[0].replace_all_uses_with(result)
        op.erase()


def _family_intrinsics(op: ir.Operation) -> dict[str, str]:
    """The scalar intrinsics of the family of the kernel holding ``op`` (its ``rock.arch``), {} if none."""
    from pagedir.arch import ChipError, get_chip
    from pagedir.targets import family_of

    parent = op.parent
    while parent is not None and "rock.arch" not in parent.attributes:
        parent = parent.parent
    if parent is None:
        return {}
    try:
        chip = get_chip(ir.StringAttr(parent.attributes["rock.arch"]).value)
    except ChipError:  # the passes before have reported it
        return {}
    return family_of(chip).scalar_math_intrinsics


def _per_element(intrinsic: str, x: ir.Value) -> ir.Value:
    f32 = ir.F32Type.get()
    if not isinstance(x.type, ir.VectorType):
        return llvm.call_intrinsic(f32, intrinsic, [x], [], [])
    lanes = ir.VectorType(x.type).shape[0]
    results = [llvm.call_intrinsic(f32, intrinsic, [vector.extract(x, [], [i])], [], []) for i in range(lanes)]
    return vector.from_elements(x.type, results)


def _tanh(x: ir.Value) -> ir.Value:
    """``copysign((1 - e) / (1 + e), x)``, ``e = exp2(-2 log2(e) |x|)`` (module docstring)."""
    type_ = x.type
    e = llvm.call_intrinsic(type_, f"llvm.exp2.{_suffix(type_)}",
                            [arith.mulf(mlir_math.absf(x), _constant(type_, -2.0 * LOG2_E))], [], [])
    one = _constant(type_, 1.0)
    return mlir_math.copysign(arith.divf(arith.subf(one, e), arith.addf(one, e)), x)


def _constant(type_: ir.Type, value: float) -> ir.Value:
    if isinstance(type_, ir.VectorType):
        return arith.constant(type_, ir.DenseElementsAttr.get_splat(type_, ir.FloatAttr.get(ir.F32Type.get(), value)))
    return arith.constant(type_, value)


def _is_f32(type_: ir.Type) -> bool:
    element = ir.VectorType(type_).element_type if isinstance(type_, ir.VectorType) else type_
    return isinstance(element, ir.F32Type)


def _suffix(type_: ir.Type) -> str:
    """LLVM's overload suffix: ``f32`` or ``v4f32``."""
    if isinstance(type_, ir.VectorType):
        return f"v{ir.VectorType(type_).shape[0]}f32"
    return "f32"
