"""arith, math and the register-only vector ops (no memory).

Integers compute in their own width (numpy wraps like the hardware), index in
int64, i1 as bool; f16 in float16, f32 in float32, bf16 in float32 rounded to
bf16 after every op. Unsigned predicates and ops reinterpret the bits.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import mlir.ir as ir
import numpy as np

from pagedir.interp.memory import Elem, InterpError, elem_named
from pagedir.interp.simt import Program, elem_of, handles, vector_shape
from pagedir.reference import FP8_FORMATS, fp8_table

UNSIGNED = {np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16, np.dtype(np.int32): np.uint32,
            np.dtype(np.int64): np.uint64, np.dtype(np.bool_): np.bool_}


def unsigned(x: np.ndarray) -> np.ndarray:
    return x.astype(UNSIGNED[x.dtype], copy=False) if x.dtype in UNSIGNED else x


def result_info(op: Any) -> tuple[Elem, tuple[int, ...]]:
    type_ = op.operation.results[0].type
    return elem_of(type_), vector_shape(type_)


def cast(values: np.ndarray, elem: Elem) -> np.ndarray:
    """Values converted to ``elem``'s compute dtype (wrapping ints, rounding bf16)."""
    out = np.asarray(values)
    if out.dtype == np.float64 and elem.compute == np.float32 and elem.storage != elem.compute:
        out = _round_to_odd_f32(out)  # bf16, fp8: rounded once from the value, not twice through f32
    out = out.astype(elem.compute, copy=False)
    return elem.round(out) if elem.storage != elem.compute else out  # bf16, fp8: rounded


def _round_to_odd_f32(values: np.ndarray) -> np.ndarray:
    """float64 values rounded to float32 toward the odd neighbour when inexact: rounding that to a type of at
    most 22 significant bits (bf16, fp8) to nearest even is then the correct rounding of the float64 value."""
    nearest = values.astype(np.float32)
    bits = nearest.view(np.uint32)
    inexact = (nearest.astype(np.float64) != values) & np.isfinite(nearest)
    other = np.where(np.abs(nearest.astype(np.float64)) > np.abs(values), bits - np.uint32(1), bits + np.uint32(1))
    return np.where(inexact & (bits % 2 == 0), other, bits).astype(np.uint32).view(np.float32)


def to_bits(values: np.ndarray, elem: Elem) -> np.ndarray:
    if elem.storage != elem.compute:  # bf16, fp8: encoded
        return np.ascontiguousarray(elem.to_storage(values))
    return np.ascontiguousarray(values, dtype=elem.storage)


def from_bits(bits: np.ndarray, elem: Elem) -> np.ndarray:
    return elem.to_compute(bits) if elem.storage != elem.compute else bits  # bf16, fp8: decoded


def constant_value(attr: ir.Attribute, type_: ir.Type) -> np.ndarray:
    """The value of a constant attribute as a lane-uniform array (leading axis of 1)."""
    elem = elem_of(type_)
    shape = vector_shape(type_)
    if isinstance(attr, ir.DenseElementsAttr):
        if attr.is_splat:
            splat = attr.get_splat_value()
            scalar = splat.value if hasattr(splat, "value") else splat
            array = np.full(shape, scalar)
        else:
            array = np.array(attr)
        return cast(array.reshape((1, *shape)), elem)
    if isinstance(attr, ir.BoolAttr):
        return np.array([attr.value], dtype=np.bool_)
    if isinstance(attr, (ir.IntegerAttr, ir.FloatAttr)):
        value = attr.value
        if elem.name == "i1":
            return np.array([bool(value & 1)], dtype=np.bool_)
        if isinstance(attr, ir.IntegerAttr) and elem.compute.kind == "i":
            bits = elem.compute.itemsize * 8
            value = ((int(value) + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
        return cast(np.full((1, *shape), value), elem)
    raise InterpError(f"unsupported constant {attr}")


def tensor_constant(attr: ir.Attribute, type_: ir.RankedTensorType) -> Any:
    from pagedir.interp.ops_linalg import Tensor  # ops_linalg imports this module

    elem = elem_named(str(type_.element_type))
    dense = ir.DenseElementsAttr(attr)
    if dense.is_splat:
        splat = dense.get_splat_value()
        array = np.full(tuple(type_.shape), splat.value if hasattr(splat, "value") else splat)
    else:
        array = np.array(dense).reshape(tuple(type_.shape))
    return Tensor(cast(array, elem), elem)


@handles("arith.constant", "llvm.mlir.constant")
def compile_constant(p: Program, op: Any) -> Any:
    result = p.slot(op.operation.results[0])
    type_ = op.operation.results[0].type
    if isinstance(type_, ir.RankedTensorType):  # a tensor constant (torch-mlir's 0-d -inf, its tensors of zeros)
        value = tensor_constant(op.operation.attributes["value"], ir.RankedTensorType(type_))
    else:
        value = constant_value(op.operation.attributes["value"], type_)

    def run(env: list, mask: Any) -> None:
        env[result] = value

    return run


def _binary(fn):
    def compile_(p: Program, op: Any) -> Any:
        a, b = (p.slot(v) for v in op.operation.operands[:2])
        result = p.slot(op.operation.results[0])
        elem, _ = result_info(op)
        bf16 = elem.name == "bf16"
        boolean = elem.name == "i1"

        def run(env: list, mask: Any) -> None:
            out = fn(env[a], env[b])
            if bf16:
                out = elem.round(out.astype(np.float32, copy=False))
            elif boolean:
                out = out.astype(np.bool_, copy=False)
            env[result] = out

        return run

    return compile_


def _trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    safe = np.where(y == 0, 1, y)
    q = np.abs(x) // np.abs(safe)
    return np.where((x < 0) != (safe < 0), -q, q).astype(np.result_type(x, y))


def _trunc_rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x - _trunc_div(x, y) * y).astype(np.result_type(x, y))


def _ceil_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    safe = np.where(y == 0, 1, y)
    return (-((-x) // safe)).astype(np.result_type(x, y))


def _shift_amount(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.asarray(y).astype(x.dtype) & (x.dtype.itemsize * 8 - 1)


BINARY = {
    "arith.addi": lambda x, y: x + y if x.dtype != np.bool_ else x ^ y,
    "arith.subi": lambda x, y: x - y if x.dtype != np.bool_ else x ^ y,
    "arith.muli": lambda x, y: x * y if x.dtype != np.bool_ else x & y,
    "arith.divsi": _trunc_div,
    "arith.divui": lambda x, y: (unsigned(x) // np.where(y == 0, 1, unsigned(y))).astype(x.dtype),
    "arith.remsi": _trunc_rem,
    "arith.remui": lambda x, y: (unsigned(x) % np.where(y == 0, 1, unsigned(y))).astype(x.dtype),
    "arith.floordivsi": lambda x, y: x // np.where(y == 0, 1, y),
    "arith.ceildivsi": _ceil_div,
    "arith.ceildivui": lambda x, y: ((unsigned(x) + unsigned(y) - 1) // np.where(y == 0, 1, unsigned(y))).astype(x.dtype),
    "arith.andi": lambda x, y: x & y,
    "arith.ori": lambda x, y: x | y,
    "arith.xori": lambda x, y: x ^ y,
    "arith.shli": lambda x, y: x << _shift_amount(x, y),
    "arith.shrsi": lambda x, y: x >> _shift_amount(x, y),
    "arith.shrui": lambda x, y: (unsigned(x) >> unsigned(_shift_amount(x, y))).astype(x.dtype),
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.maxui": lambda x, y: np.maximum(unsigned(x), unsigned(y)).astype(x.dtype),
    "arith.minui": lambda x, y: np.minimum(unsigned(x), unsigned(y)).astype(x.dtype),
}
for _name, _fn in BINARY.items():
    handles(_name)(_binary(_fn))


UNARY = {"math.absi": np.abs}


def _unary(fn):
    def compile_(p: Program, op: Any) -> Any:
        a = p.slot(op.operation.operands[0])
        result = p.slot(op.operation.results[0])
        elem, _ = result_info(op)

        def run(env: list, mask: Any) -> None:
            out = fn(env[a])
            env[result] = elem.round(out) if elem.name == "bf16" else out

        return run

    return compile_


for _name, _fn in UNARY.items():
    handles(_name)(_unary(_fn))


@handles("math.fma", "vector.fma")
def compile_fma(p: Program, op: Any) -> Any:
    a, b, c = (p.slot(v) for v in op.operation.operands[:3])
    result = p.slot(op.operation.results[0])
    elem, _ = result_info(op)
    wide = np.float64 if elem.compute == np.float32 else np.float32
    if elem.name == "f32" and all(_extended_from_half(v) for v in op.operation.operands[:2]):
        return _compile_exact_product_fma(a, b, c, result)

    def run(env: list, mask: Any) -> None:
        # fused: one rounding, emulated by computing in a wider type (in place: the same sums, fewer copies)
        x, y = np.broadcast_arrays(env[a], env[b])
        exact = x.astype(wide)
        exact *= y
        exact = exact + env[c]
        env[result] = cast(exact, elem)

    return run


def _extended_from_half(value: ir.Value) -> bool:
    """``value`` is an ``arith.extf`` of f16 or bf16 (at most 11 significant bits)."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) and not isinstance(owner, ir.Operation):
        return False  # a block argument
    owner = owner.operation
    return owner.name == "arith.extf" and elem_of(owner.operands[0].type).name in ("f16", "bf16")


def _compile_exact_product_fma(a: int, b: int, c: int, result: int) -> Any:
    """f32 fma of two extended halves in f32: their product is exact in f32 (22 significant bits, no
    overflow or underflow from half ranges), and rounding ``product + c`` to f64 and then f32 gives the
    correctly rounded f32 sum (53 >= 2 * 24 + 2 bits), so f32 arithmetic computes the same fused result."""

    def run(env: list, mask: Any) -> None:
        product, addend = env[a] * env[b], env[c]
        if product.shape == np.broadcast_shapes(product.shape, addend.shape):
            product += addend  # a fresh array: adding in place saves a copy
            env[result] = product
        else:
            env[result] = product + addend

    return run


CMPI = {
    0: lambda x, y: x == y, 1: lambda x, y: x != y,
    2: lambda x, y: x < y, 3: lambda x, y: x <= y, 4: lambda x, y: x > y, 5: lambda x, y: x >= y,
    6: lambda x, y: unsigned(x) < unsigned(y), 7: lambda x, y: unsigned(x) <= unsigned(y),
    8: lambda x, y: unsigned(x) > unsigned(y), 9: lambda x, y: unsigned(x) >= unsigned(y),
}


@handles("arith.cmpi", "arith.cmpf")
def compile_cmp(p: Program, op: Any) -> Any:
    a, b = (p.slot(v) for v in op.operation.operands)
    result = p.slot(op.operation.results[0])
    predicate = ir.IntegerAttr(op.operation.attributes["predicate"]).value
    fn = (CMPI if op.operation.name == "arith.cmpi" else CMPF)[predicate]

    def run(env: list, mask: Any) -> None:
        env[result] = np.asarray(fn(env[a], env[b]), dtype=np.bool_)

    return run


@handles("arith.select")
def compile_select(p: Program, op: Any) -> Any:
    c, a, b = (p.slot(v) for v in op.operation.operands)
    result = p.slot(op.operation.results[0])
    rank = 1 + len(vector_shape(op.operation.results[0].type))
    if isinstance(op.operation.results[0].type, ir.MemRefType):
        from pagedir.interp.simt import select

        def run_memref(env: list, mask: Any) -> None:
            cond = env[c]
            env[result] = (env[a] if cond[0] else env[b]) if cond.shape[0] == 1 else select(cond, env[a], env[b])

        return run_memref

    def run(env: list, mask: Any) -> None:
        cond = env[c]
        if cond.ndim < rank:
            cond = cond.reshape(cond.shape + (1,) * (rank - cond.ndim))
        env[result] = np.where(cond, env[a], env[b])

    return run


def _cast_op(convert):
    def compile_(p: Program, op: Any) -> Any:
        if "roundingmode" in op.operation.attributes and "to_nearest_even" not in str(op.operation.attributes["roundingmode"]):
            raise InterpError(f"{op.operation.name} with rounding mode {op.operation.attributes['roundingmode']} is not "
                              "supported by the interpreter (only to_nearest_even)", op.operation.location)
        a = p.slot(op.operation.operands[0])
        result = p.slot(op.operation.results[0])
        source = elem_of(op.operation.operands[0].type)
        target, _ = result_info(op)

        def run(env: list, mask: Any) -> None:
            env[result] = convert(env[a], source, target)

        return run

    return compile_


def _signed(x, source, target):
    return cast(x, target) if target.name != "i1" else (x & 1).astype(np.bool_)


def _zero_extend(x, source, target):
    if target.name == "i1":
        return (x & 1).astype(np.bool_)
    return unsigned(x).astype(target.compute)


def _to_float(x, source, target):
    return cast(x.astype(np.float64), target)


def _saturated(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Toward zero; NaN 0 and out of range the type's nearest bound (LLVM: poison), as v_cvt_i32_f32 gives."""
    limits = np.iinfo(dtype)
    whole = np.trunc(np.where(np.isnan(x), 0, x).astype(np.float64))
    inside = np.clip(whole, limits.min, limits.max)  # int64's bounds are not float64 values: set them apart
    with np.errstate(invalid="ignore"):
        out = inside.astype(dtype)
    out = np.where(whole >= float(limits.max), limits.max, out)
    return np.where(whole <= float(limits.min), limits.min, out).astype(dtype)


def _from_float(x, source, target):
    return _saturated(x, target.compute)


def _from_float_unsigned(x, source, target):
    return _saturated(x, np.dtype(UNSIGNED[target.compute])).astype(target.compute)


def _unsigned_to_float(x, source, target):
    return cast(unsigned(x).astype(np.float64), target)


#: Every f16 bit pattern as float32: extending f16 by table look-up is exact and faster than numpy's conversion.
F16_AS_F32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def _extend_float(x, target):
    if x.dtype == np.float16 and target.compute == np.float32:
        return np.take(F16_AS_F32, x.view(np.uint16))
    return cast(x, target)


def _bitcast(x, source, target):
    return from_bits(to_bits(x, source).view(target.storage), target)


CASTS = {
    "arith.index_cast": _signed, "arith.extsi": _signed, "arith.trunci": _signed,
    "arith.index_castui": _zero_extend, "arith.extui": _zero_extend,
    "arith.bitcast": _bitcast,
}
for _name, _fn in CASTS.items():
    handles(_name)(_cast_op(_fn))


# ----------------------------------------------------------------------------
# Float rules


def _maximumf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # np.maximum propagates NaN but returns its first operand for -0 and +0; -0 + +0 is +0, -0 + -0 is -0
    return np.where((x == 0) & (y == 0), x + y, np.maximum(x, y))


def _minimumf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where((x == 0) & (y == 0), -(-x - y), np.minimum(x, y))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (1.0 / np.sqrt(x)).astype(x.dtype)


def _ordered(x, y):
    return ~np.isnan(x) & ~np.isnan(y)


def _truncate_float(x, source, target):
    out = cast(x, target)
    if target.name not in FP8_FORMATS:
        return out  # f16 and bf16 have infinities: the rounding itself overflows to them
    # The fp8 encoding saturates (what a KV cache writer does); truncf rounds, so a magnitude at least half an
    # ulp past the largest finite value (a tie goes to the even code) overflows: to inf if the format has one
    table = fp8_table(target.name)
    largest = int(np.flatnonzero(np.isfinite(table[:128]))[-1])
    top, below = float(table[largest]), float(table[largest - 1])
    threshold = top + (top - below) / 2
    size = np.abs(np.asarray(x, dtype=np.float64))
    overflow = (size > threshold) | ((size == threshold) & (largest % 2 == 1)) | np.isinf(size)
    beyond = np.where(np.signbit(x), -np.inf, np.inf) if np.isinf(table).any() else np.nan
    return np.where(overflow, beyond, out).astype(out.dtype)


def _fold(fn):
    """A vector.reduction kind as ``fn`` folded over the elements (x: lanes x elements)."""
    return lambda x: functools.reduce(fn, (x[:, i] for i in range(1, x.shape[1])), x[:, 0])


IEEE = "IEEE 754, rounded to nearest even (the LangRef's default rounding mode): "
PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une",
              "uno", "true")
CMPF_RULE = ('LangRef: "The u prefix indicates *unordered* comparison, not unsigned comparison, so \\"une\\" means '
             'unordered or not equal": an o predicate is false and a u predicate true when an operand is NaN; '
             "-0 == +0; -inf < finite < +inf")


class FloatRule(NamedTuple):
    """How the interpreter runs one float op: ``fn`` (elementwise on numpy arrays: ``(x, y)`` for binary ops
    and predicates, ``(x)`` for unary ones, ``(x, source, target)`` for casts, ``(lanes x elements)`` for
    reductions; for math.fma and arith.select their handler), and ``rule``: what it gives for NaN, signed
    zeros and infinities, in the LangRef's words where its description says, else IEEE 754's as LLVM
    lowers the op."""

    fn: Callable[..., Any]
    rule: str


#: Every float op the interpreter runs and the rule it follows (tests/unit/test_interp_float_rules.py checks
#: each against NaN, +-0, +-inf and finite values). The lowered kernel runs the same ops through LLVM,
#: so where L0 and L6 agree the interpreter must follow these rules, not numpy's defaults.
FLOAT_RULES: dict[str, FloatRule] = {
    "arith.addf": FloatRule(np.add, IEEE + "NaN if an operand is NaN or for inf + -inf; -0 + -0 = -0, x + -x = +0"),
    "arith.subf": FloatRule(np.subtract, IEEE + "NaN if an operand is NaN or for inf - inf; -0 - +0 = -0, x - x = +0"),
    "arith.mulf": FloatRule(np.multiply, IEEE + "NaN if an operand is NaN or for 0 * inf; the sign is the xor of "
                                                "the signs (-0 * +0 = -0)"),
    "arith.divf": FloatRule(np.divide, IEEE + "NaN if an operand is NaN, for 0 / 0 and inf / inf; x / 0 = inf "
                                              "and x / inf = 0 with the xor of the signs"),
    "arith.remf": FloatRule(np.fmod, 'LangRef: "The remainder has the same sign as the dividend (lhs operand)" '
                                     "(LLVM frem, C fmod): NaN if an operand is NaN, for x rem 0 and inf rem y; "
                                     "x rem inf = x; -0 rem y = -0"),
    "arith.maximumf": FloatRule(_maximumf, 'LangRef: "Returns the maximum of the two arguments, treating -0.0 as '
                                           'less than +0.0. If one of the arguments is NaN, then the result is also '
                                           'NaN."'),
    "arith.minimumf": FloatRule(_minimumf, 'LangRef: "Returns the minimum of the two arguments, treating -0.0 as '
                                           'less than +0.0. If one of the arguments is NaN, then the result is also '
                                           'NaN."'),
    "arith.maxnumf": FloatRule(np.fmax, 'LangRef: "Returns the maximum of the two arguments. If the arguments are '
                                        '-0.0 and +0.0, then the result is either of them. If one of the arguments '
                                        'is NaN, then the result is the other argument."'),
    "arith.minnumf": FloatRule(np.fmin, 'LangRef: "Returns the minimum of the two arguments. If the arguments are '
                                        '-0.0 and +0.0, then the result is either of them. If one of the arguments '
                                        'is NaN, then the result is the other argument."'),
    **{f"arith.cmpf {name}": FloatRule(fn, CMPF_RULE) for name, fn in zip(PREDICATES, (
        lambda x, y: np.zeros(np.broadcast(x, y).shape, bool),
        lambda x, y: x == y, lambda x, y: x > y, lambda x, y: x >= y, lambda x, y: x < y, lambda x, y: x <= y,
        lambda x, y: (x != y) & _ordered(x, y), _ordered,
        lambda x, y: (x == y) | ~_ordered(x, y), lambda x, y: ~(x <= y), lambda x, y: ~(x < y),
        lambda x, y: ~(x >= y), lambda x, y: ~(x > y), lambda x, y: x != y,
        lambda x, y: ~_ordered(x, y), lambda x, y: np.ones(np.broadcast(x, y).shape, bool)))},
    "arith.select": FloatRule(compile_select, 'LangRef: "If the value of the first operand (the condition) is `1`, '
                                              'then the second operand is returned": the chosen value unchanged '
                                              "(NaN, -0 and inf pass through)"),
    "arith.negf": FloatRule(np.negative, "flips the sign bit: -(+0) = -0, -(-inf) = +inf, -NaN is NaN"),
    "math.absf": FloatRule(np.abs, "clears the sign bit: |-0| = +0, |-inf| = +inf, |NaN| is NaN"),
    "math.exp": FloatRule(np.exp, "IEEE 754 exp: exp(-inf) = +0, exp(+inf) = +inf, exp(+-0) = 1, NaN gives NaN"),
    "math.exp2": FloatRule(np.exp2, "IEEE 754 exp2: exp2(-inf) = +0, exp2(+inf) = +inf, exp2(+-0) = 1, NaN gives NaN"),
    "math.expm1": FloatRule(np.expm1, "IEEE 754 expm1: expm1(-inf) = -1, expm1(+-0) = +-0, NaN gives NaN"),
    "math.log": FloatRule(np.log, "IEEE 754 log: log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN gives NaN"),
    "math.log2": FloatRule(np.log2, "IEEE 754 log2: log2(+-0) = -inf, log2(x < 0) = NaN, log2(+inf) = +inf"),
    "math.log10": FloatRule(np.log10, "IEEE 754 log10: log10(+-0) = -inf, log10(x < 0) = NaN, log10(+inf) = +inf"),
    "math.log1p": FloatRule(np.log1p, "IEEE 754 log1p: log1p(-1) = -inf, log1p(x < -1) = NaN, log1p(+-0) = +-0"),
    "math.sqrt": FloatRule(np.sqrt, "IEEE 754 squareRoot: sqrt(-0) = -0, sqrt(x < 0) = NaN, sqrt(+inf) = +inf"),
    "math.rsqrt": FloatRule(_rsqrt, "IEEE 754 rSqrt: rsqrt(+0) = +inf, rsqrt(-0) = -inf, rsqrt(x < 0) = NaN, "
                                    "rsqrt(+inf) = +0"),
    "math.tanh": FloatRule(np.tanh, "IEEE 754 tanh: tanh(+-0) = +-0, tanh(+-inf) = +-1, NaN gives NaN"),
    "math.sin": FloatRule(np.sin, "IEEE 754 sin: sin(+-0) = +-0, sin(+-inf) = NaN"),
    "math.cos": FloatRule(np.cos, "IEEE 754 cos: cos(+-0) = 1, cos(+-inf) = NaN"),
    "math.ceil": FloatRule(np.ceil, "IEEE 754 roundToIntegralTowardPositive: +-0, +-inf and NaN unchanged, "
                                    "ceil(-0.5) = -0"),
    "math.floor": FloatRule(np.floor, "IEEE 754 roundToIntegralTowardNegative: +-0, +-inf and NaN unchanged"),
    "math.trunc": FloatRule(np.trunc, "IEEE 754 roundToIntegralTowardZero: +-0, +-inf and NaN unchanged, "
                                      "trunc(-0.5) = -0"),
    "math.roundeven": FloatRule(np.rint, "IEEE 754 roundToIntegralTiesToEven: +-0, +-inf and NaN unchanged"),
    "math.round": FloatRule(lambda x: np.copysign(np.floor(np.abs(x) + x.dtype.type(0.5)), x).astype(x.dtype),
                            "IEEE 754 roundToIntegralTiesToAway (LangRef: halfway cases away from zero): "
                            "+-0, +-inf and NaN unchanged, round(-0.4) = -0"),
    "math.powf": FloatRule(np.power, "C pow (LLVM llvm.pow): pow(x, +-0) = 1 even for NaN x, pow(1, y) = 1 even "
                                     "for NaN y, pow(x < 0, non-integer) = NaN"),
    "math.copysign": FloatRule(np.copysign, "IEEE 754 copySign: the magnitude of x with the sign bit of y (-0, NaN too)"),
    "math.atan2": FloatRule(np.arctan2, "C atan2: atan2(+-0, +0) = +-0, atan2(+-0, -0) = +-pi, NaN gives NaN"),
    **{name: FloatRule(compile_fma, "IEEE 754 fusedMultiplyAdd: x * y + z rounded once; NaN if an operand is "
                                    "NaN, for 0 * inf and for inf - inf") for name in ("math.fma", "vector.fma")},
    "arith.extf": FloatRule(lambda x, source, target: _extend_float(x, target),
                            'LangRef: "Cast a floating-point value to a larger floating-point-typed value": exact; '
                            "NaN stays NaN, +-0 and +-inf are kept; fp8 codes decode by their format (FNUZ: 0x80 "
                            "is NaN; E4M3FN: S.1111.111 is NaN; E5M2: S.11111.00 is inf)"),
    "arith.truncf": FloatRule(_truncate_float, 'LangRef: "If the value cannot be exactly represented, it is '
                                               'rounded using the provided rounding mode or the default one" (to '
                                               "nearest, ties to even, once from the source value); NaN stays NaN; "
                                               "a magnitude past the largest finite value by half an ulp (ties to "
                                               "even) overflows to +-inf, to NaN in fp8 formats without inf "
                                               "(LLVM's APFloat); FNUZ has no -0: -0 gives +0"),
    "arith.sitofp": FloatRule(_to_float, "the signed integer rounded once to nearest even (overflow to inf)"),
    "arith.uitofp": FloatRule(_unsigned_to_float, "the unsigned integer rounded once to nearest even"),
    "arith.fptosi": FloatRule(_from_float, 'LangRef: "to the nearest (rounding towards zero) signed integer '
                                           'value"; NaN and values out of range are poison in LLVM: the interpreter '
                                           "gives what v_cvt_i32_f32 gives, NaN 0 and the nearest bound"),
    "arith.fptoui": FloatRule(_from_float_unsigned, 'LangRef: "to the nearest (rounding towards zero) unsigned integer value"; '
                                           "NaN and values out of range (negative ones too) are poison in LLVM: "
                                           "the interpreter gives NaN 0 and the nearest bound, as v_cvt_u32_f32"),
    "vector.reduction <add>": FloatRule(lambda x: x.sum(axis=1), "arith.addf over the elements and the accumulator, "
                                                                  "from +0.0 (VectorToLLVM's neutral start value, so "
                                                                  "a sum of -0s is +0)"),
    "vector.reduction <mul>": FloatRule(lambda x: x.prod(axis=1), "arith.mulf over the elements and the accumulator"),
    "vector.reduction <maxnumf>": FloatRule(lambda x: np.fmax.reduce(x, axis=1), "arith.maxnumf over the elements "
                                            "and the accumulator: NaN only if every one is NaN"),
    "vector.reduction <minnumf>": FloatRule(lambda x: np.fmin.reduce(x, axis=1), "arith.minnumf over the elements "
                                            "and the accumulator: NaN only if every one is NaN"),
    "vector.reduction <maximumf>": FloatRule(_fold(_maximumf), "arith.maximumf over the elements and the "
                                                               "accumulator: NaN if any one is NaN, -0 < +0"),
    "vector.reduction <minimumf>": FloatRule(_fold(_minimumf), "arith.minimumf over the elements and the "
                                                               "accumulator: NaN if any one is NaN, -0 < +0"),
}
for _name in ("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.maximumf",
              "arith.minimumf", "arith.maxnumf", "arith.minnumf", "math.powf", "math.copysign", "math.atan2"):
    handles(_name)(_binary(FLOAT_RULES[_name].fn))
for _name in ("arith.negf", "math.absf", "math.exp", "math.exp2", "math.expm1", "math.log", "math.log2",
              "math.log10", "math.log1p", "math.sqrt", "math.rsqrt", "math.tanh", "math.sin", "math.cos",
              "math.ceil", "math.floor", "math.trunc", "math.roundeven", "math.round"):
    handles(_name)(_unary(FLOAT_RULES[_name].fn))
for _name in ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui"):
    handles(_name)(_cast_op(FLOAT_RULES[_name].fn))
CMPF = {number: FLOAT_RULES[f"arith.cmpf {name}"].fn for number, name in enumerate(PREDICATES)}


# ----------------------------------------------------------------------------
# vector (registers)


@handles("vector.broadcast", "vector.splat")
def compile_broadcast(p: Program, op: Any) -> Any:
    a = p.slot(op.operation.operands[0])
    result = p.slot(op.operation.results[0])
    elem, shape = result_info(op)
    source_rank = len(vector_shape(op.operation.operands[0].type))

    def run(env: list, mask: Any) -> None:
        x = env[a]
        lanes = x.shape[0]
        x = x.reshape((lanes,) + (1,) * (len(shape) - source_rank) + x.shape[1:])
        env[result] = np.broadcast_to(x, (lanes, *shape))

    return run


def _positions(p: Program, op: Any, static: list[int]) -> list:
    """Static positions as ints, dynamic ones as value slots (marked by the dynamic sentinel)."""
    dynamic = iter(op.dynamic_position)
    out = []
    for value in static:
        out.append(("slot", p.slot(next(dynamic))) if value == ir.ShapedType.get_dynamic_size() else ("const", value))
    return out


def _index(p: Program, op_id: int, env: list, positions: list, shape: tuple, lanes: int, mask: Any) -> tuple:
    """A numpy index of the positions into vectors of ``shape`` (lanes first); each active lane's in bounds."""
    values = [v if kind == "const" else env[v] for kind, v in positions]
    in_bounds(p, op_id, values, shape, mask)
    if all(isinstance(v, int) or v.shape[0] == 1 for v in values):
        return (slice(None), *[v if isinstance(v, int) else int(v[0]) for v in values])
    # Inactive lanes may hold any position: clipped, their results are never used.
    return (np.arange(lanes), *[v if isinstance(v, int) else np.clip(v.astype(np.int64), 0, extent - 1)
                                for v, extent in zip(values, shape)])


def in_bounds(p: Program, op_id: int, values: list, shape: tuple, mask: Any) -> None:
    """An interpreter error at the op for a position outside ``shape`` (out-of-bounds positions give poison)."""
    for dim, (value, extent) in enumerate(zip(values, shape)):
        position = np.asarray(value, dtype=np.int64).reshape(-1)
        if mask is not None and position.shape[0] == mask.shape[0]:
            position = position[mask]
        outside = (position < 0) | (position >= extent)
        if outside.any():
            vector = "x".join(str(e) for e in shape)
            raise InterpError(f"{p.op_name(op_id)} position {int(position[outside][0])} is out of bounds of dimension "
                              f"{dim} (size {extent}) of a vector of shape {vector}", p.op_location(op_id))


@handles("vector.extract")
def compile_extract(p: Program, op: Any) -> Any:
    source = p.slot(op.operation.operands[0])
    result = p.slot(op.operation.results[0])
    positions = _positions(p, op, list(op.static_position))
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        x = env[source]
        env[result] = x[_index(p, op_id, env, positions, x.shape[1:], x.shape[0], mask)]

    return run


@handles("vector.insert")
def compile_insert(p: Program, op: Any) -> Any:
    value, dest = p.slot(op.operation.operands[0]), p.slot(op.operation.operands[1])
    result = p.slot(op.operation.results[0])
    positions = _positions(p, op, list(op.static_position))
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        x, v = env[dest], env[value]
        lanes = max(x.shape[0], v.shape[0])
        out = np.array(np.broadcast_to(x, (lanes, *x.shape[1:])))
        out[_index(p, op_id, env, positions, x.shape[1:], lanes, mask)] = v
        env[result] = out

    return run


@handles("vector.extractelement")
def compile_extractelement(p: Program, op: Any) -> Any:
    operands = [p.slot(v) for v in op.operation.operands]
    result = p.slot(op.operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        x = env[operands[0]]
        if len(operands) == 1:
            env[result] = x[:, 0]
            return
        env[result] = x[_index(p, op_id, env, [("slot", operands[1])], x.shape[1:], x.shape[0], mask)]

    return run


@handles("vector.insertelement")
def compile_insertelement(p: Program, op: Any) -> Any:
    operands = [p.slot(v) for v in op.operation.operands]
    result = p.slot(op.operation.results[0])
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        v, x = env[operands[0]], env[operands[1]]
        lanes = max(x.shape[0], v.shape[0])
        out = np.array(np.broadcast_to(x, (lanes, *x.shape[1:])))
        position = [("slot", operands[2])] if len(operands) > 2 else [("const", 0)]
        out[_index(p, op_id, env, position, x.shape[1:], lanes, mask)] = v
        env[result] = out

    return run


def _kind(op: Any) -> str:
    text = str(op.operation.attributes["kind"])
    return text[text.index("<") + 1 : text.index(">")]


REDUCTIONS = {
    "add": lambda x: x.sum(axis=1), "mul": lambda x: x.prod(axis=1),
    "minsi": lambda x: x.min(axis=1), "maxsi": lambda x: x.max(axis=1),
    "minui": lambda x: unsigned(x).min(axis=1), "maxui": lambda x: unsigned(x).max(axis=1),
    **{kind: FLOAT_RULES[f"vector.reduction <{kind}>"].fn for kind in ("minnumf", "maxnumf", "minimumf", "maximumf")},
    "and": lambda x: np.bitwise_and.reduce(x, axis=1), "or": lambda x: np.bitwise_or.reduce(x, axis=1),
    "xor": lambda x: np.bitwise_xor.reduce(x, axis=1),
}
COMBINE = {
    "add": np.add, "mul": np.multiply, "minsi": np.minimum, "maxsi": np.maximum,
    "minui": lambda x, y: np.minimum(unsigned(x), unsigned(y)), "maxui": lambda x, y: np.maximum(unsigned(x), unsigned(y)),
    **{kind: FLOAT_RULES[f"arith.{kind}"].fn for kind in ("minnumf", "maxnumf", "minimumf", "maximumf")},
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def sum_of_8(x: np.ndarray) -> np.ndarray:
    """``x.sum(axis=1)`` of 8 float32 columns, bit for bit: numpy adds 8 values as a pairwise tree
    onto a +0.0, here done column-wise, which is several times faster than numpy's row-wise loop."""
    c = [x[:, i] for i in range(8)]
    out = ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]))
    out += np.float32(0.0)
    return out


@handles("vector.reduction")
def compile_reduction(p: Program, op: Any) -> Any:
    operands = [p.slot(v) for v in op.operation.operands]
    result = p.slot(op.operation.results[0])
    elem, _ = result_info(op)
    kind = _kind(op)
    reduce, combine = REDUCTIONS[kind], COMBINE[kind]
    widen_float = elem.compute.kind == "f" and kind in ("add", "mul")

    def run(env: list, mask: Any) -> None:
        x = env[operands[0]]
        x = x.reshape(x.shape[0], -1)
        if widen_float:
            x = x.astype(np.float32, copy=False)
        out = sum_of_8(x) if kind == "add" and x.shape[1] == 8 and x.dtype == np.float32 else reduce(x)
        if len(operands) > 1:
            out = combine(out, env[operands[1]])
        env[result] = cast(out, elem)

    return run


@handles("vector.shape_cast")
def compile_shape_cast(p: Program, op: Any) -> Any:
    a = p.slot(op.operation.operands[0])
    result = p.slot(op.operation.results[0])
    _, shape = result_info(op)

    def run(env: list, mask: Any) -> None:
        x = env[a]
        env[result] = x.reshape((x.shape[0], *shape))

    return run


@handles("vector.bitcast")
def compile_vector_bitcast(p: Program, op: Any) -> Any:
    a = p.slot(op.operation.operands[0])
    result = p.slot(op.operation.results[0])
    source = elem_of(op.operation.operands[0].type)
    target, shape = result_info(op)

    def run(env: list, mask: Any) -> None:
        x = env[a]
        bits = np.ascontiguousarray(to_bits(x, source))
        env[result] = from_bits(bits.view(target.storage).reshape((x.shape[0], *shape)), target)

    return run


def _int_list(attr: ir.Attribute) -> list[int]:
    if isinstance(attr, ir.ArrayAttr):
        return [ir.IntegerAttr(a).value for a in attr]
    return list(ir.DenseI64ArrayAttr(attr))


@handles("vector.extract_strided_slice")
def compile_extract_strided_slice(p: Program, op: Any) -> Any:
    a = p.slot(op.operation.operands[0])
    result = p.slot(op.operation.results[0])
    attrs = op.operation.attributes
    offsets, sizes, strides = (_int_list(attrs[n]) for n in ("offsets", "sizes", "strides"))
    index = (slice(None), *[slice(o, o + s * st, st) for o, s, st in zip(offsets, sizes, strides)])

    def run(env: list, mask: Any) -> None:
        env[result] = env[a][index]

    return run


@handles("vector.insert_strided_slice")
def compile_insert_strided_slice(p: Program, op: Any) -> Any:
    value, dest = p.slot(op.operation.operands[0]), p.slot(op.operation.operands[1])
    result = p.slot(op.operation.results[0])
    attrs = op.operation.attributes
    offsets, strides = _int_list(attrs["offsets"]), _int_list(attrs["strides"])
    source_shape = vector_shape(op.operation.operands[0].type)
    lead = len(offsets) - len(source_shape)
    index = (
        slice(None),
        *offsets[:lead],
        *[slice(o, o + s * st, st) for o, s, st in zip(offsets[lead:], source_shape, strides)],
    )

    def run(env: list, mask: Any) -> None:
        x, v = env[dest], env[value]
        lanes = max(x.shape[0], v.shape[0])
        out = np.array(np.broadcast_to(x, (lanes, *x.shape[1:])))
        out[index] = v
        env[result] = out

    return run


@handles("vector.transpose")
def compile_transpose(p: Program, op: Any) -> Any:
    a = p.slot(op.operation.operands[0])
    result = p.slot(op.operation.results[0])
    permutation = [0] + [1 + i for i in _int_list(op.operation.attributes["permutation"])]

    def run(env: list, mask: Any) -> None:
        env[result] = np.transpose(env[a], permutation)

    return run


@handles("vector.from_elements")
def compile_from_elements(p: Program, op: Any) -> Any:
    operands = [p.slot(v) for v in op.operation.operands]
    result = p.slot(op.operation.results[0])
    _, shape = result_info(op)

    def run(env: list, mask: Any) -> None:
        values = [env[s] for s in operands]
        lanes = max(v.shape[0] for v in values)
        stacked = np.stack([np.broadcast_to(v, (lanes,)) for v in values], axis=1)
        env[result] = stacked.reshape((lanes, *shape))

    return run


@handles("vector.step")
def compile_step(p: Program, op: Any) -> Any:
    result = p.slot(op.operation.results[0])
    _, shape = result_info(op)
    value = np.arange(shape[0], dtype=np.int64)[None]

    def run(env: list, mask: Any) -> None:
        env[result] = value

    return run


@handles("vector.create_mask")
def compile_create_mask(p: Program, op: Any) -> Any:
    operands = [p.slot(v) for v in op.operation.operands]
    result = p.slot(op.operation.results[0])
    _, shape = result_info(op)

    def run(env: list, mask: Any) -> None:
        bounds = [env[s] for s in operands]
        lanes = max(b.shape[0] for b in bounds)
        out = np.ones((lanes, *shape), dtype=np.bool_)
        for dim, bound in enumerate(bounds):
            coords = np.arange(shape[dim]).reshape((1,) + (1,) * dim + (-1,) + (1,) * (len(shape) - dim - 1))
            out &= coords < bound.reshape((-1,) + (1,) * len(shape))
        env[result] = out

    return run


@handles("vector.constant_mask")
def compile_constant_mask(p: Program, op: Any) -> Any:
    result = p.slot(op.operation.results[0])
    _, shape = result_info(op)
    sizes = _int_list(op.operation.attributes["mask_dim_sizes"])
    value = np.zeros((1, *shape), dtype=np.bool_)
    value[(slice(None), *[slice(0, s) for s in sizes])] = True

    def run(env: list, mask: Any) -> None:
        env[result] = value

    return run


@handles("vector.outerproduct")
def compile_outerproduct(p: Program, op: Any) -> Any:
    operands = [p.slot(v) for v in op.operation.operands]
    result = p.slot(op.operation.results[0])
    elem, shape = result_info(op)

    def run(env: list, mask: Any) -> None:
        a, b = env[operands[0]], env[operands[1]]
        out = a[:, :, None] * b[:, None, :] if len(shape) == 2 else a * b.reshape(-1, 1)
        if len(operands) > 2:
            out = out + env[operands[2]]
        env[result] = cast(out, elem)

    return run


@handles("vector.contract")
def compile_contract(p: Program, op: Any) -> Any:
    """Any vector.contract with kind add: an einsum over its indexing maps (computed in f32)."""
    a, b, c = (p.slot(v) for v in op.operation.operands[:3])
    result = p.slot(op.operation.results[0])
    elem, _ = result_info(op)
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.operation.attributes["indexing_maps"])]
    letters = "abcdefghijklmnopqrstuvw"

    def subscript(affine_map: ir.AffineMap) -> str:
        return "z" + "".join(letters[ir.AffineDimExpr(e).position] for e in affine_map.results)

    spec = f"{subscript(maps[0])},{subscript(maps[1])}->{subscript(maps[2])}"

    def run(env: list, mask: Any) -> None:
        x, y, acc = env[a], env[b], env[c]
        lanes = max(x.shape[0], y.shape[0])
        x, y = np.broadcast_to(x, (lanes, *x.shape[1:])), np.broadcast_to(y, (lanes, *y.shape[1:]))
        total = np.einsum(spec, x.astype(np.float32), y.astype(np.float32)) + acc
        env[result] = cast(total, elem) if elem.compute.kind == "f" else total.astype(elem.compute)

    return run
