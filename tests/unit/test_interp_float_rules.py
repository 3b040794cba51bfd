"""The interpreter's float ops follow the rules of ops_arith.FLOAT_RULES (MLIR's LangRef, else IEEE 754).

Each op runs in a one-thread kernel over every pair of special values (NaN, +-0, +-inf and finite ones);
the expected result comes from the rule written out here in plain Python, not from numpy, so that a numpy
default that differs from the rule (np.maximum's NaN for maxnumf, its first operand for maximumf(-0, +0))
shows. Zeros are compared with their sign, NaN with NaN.
"""

from __future__ import annotations

import math

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp.launch import run
from pagedir.interp.ops_arith import FLOAT_RULES, PREDICATES
from pagedir.interp.simt import HANDLERS
from pagedir.reference import fp8_values

ATTRIBUTES = "attributes {rock.kernel, rock.block_size = 1 : i64, rock.grid_size = 1 : i64}"
NAN, INF = math.nan, math.inf
SPECIALS = [NAN, -0.0, 0.0, INF, -INF, 1.0, -2.5, 0.5, 3.0, 1e30, -1e-30]
EITHER = object()  # the rule lets the result be either operand (maxnumf of -0 and +0)


def run_ops(body: str, inputs: list[np.ndarray], out_type: str, out: np.ndarray, in_types: list[str] | None = None):
    """``body`` once per element i: ``%x``, ``%y``, ``%z`` are element i of the inputs, ``%r`` is stored."""
    n = len(out)
    in_types = in_types or ["f32"] * len(inputs)
    names = ["x", "y", "z"][: len(inputs)]
    params = ", ".join(f"%{v}s: memref<{n}x{t}>" for v, t in zip(names, in_types))
    loads = "\n".join(f"    %{v} = memref.load %{v}s[%i] : memref<{n}x{t}>" for v, t in zip(names, in_types))
    text = f"""func.func @f({params}, %out: memref<{n}x{out_type}>) {ATTRIBUTES} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {n} : index
  scf.for %i = %c0 to %n step %c1 {{
{loads}
    {body}
    memref.store %r, %out[%i] : memref<{n}x{out_type}>
  }}
  return
}}
"""
    with make_context():
        return run(ir.Module.parse(text), "f", [*inputs, out])[-1]


def pairs() -> tuple[np.ndarray, np.ndarray]:
    x, y = np.meshgrid(np.array(SPECIALS, np.float32), np.array(SPECIALS, np.float32), indexing="ij")
    return x.reshape(-1), y.reshape(-1)


def f32(value: float) -> float:
    """A Python float rounded to f32 (overflow to inf, as IEEE rounding does)."""
    if math.isnan(value) or math.isinf(value):
        return value
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def same(got: float, expected, close: bool = False) -> bool:
    if expected is EITHER:
        return got == 0.0
    if math.isnan(expected):
        return math.isnan(got)
    if math.isnan(got) or math.isinf(expected) or expected == 0:
        return got == expected and math.copysign(1, got) == math.copysign(1, expected)
    return math.isclose(got, expected, rel_tol=2e-7 if close else 0.0)


def assert_rule(name: str, args: list[np.ndarray], got: np.ndarray, oracle, close: bool = False) -> None:
    wrong = []
    for i, value in enumerate(got.tolist()):
        operands = [float(a[i]) for a in args]
        expected = oracle(*operands)
        if not same(float(value), expected, close):
            wrong.append(f"{name}({', '.join(map(repr, operands))}) = {value!r}, the rule says {expected!r}")
    assert not wrong, f"{FLOAT_RULES[name].rule}\n" + "\n".join(wrong[:12])


# ----------------------------------------------------------------------------
# The rules in plain Python


def add(x, y):
    if math.isinf(x) and math.isinf(y) and x != y:
        return NAN
    if x == 0 and y == 0:
        return -0.0 if math.copysign(1, x) < 0 and math.copysign(1, y) < 0 else 0.0
    return f32(x + y)


def mul(x, y):
    if math.isnan(x) or math.isnan(y) or (math.isinf(x) and y == 0) or (math.isinf(y) and x == 0):
        return NAN
    sign = math.copysign(1, x) * math.copysign(1, y)
    if math.isinf(x) or math.isinf(y):
        return math.copysign(INF, sign)
    return math.copysign(f32(abs(x) * abs(y)), sign)


def div(x, y):
    if math.isnan(x) or math.isnan(y) or (x == 0 and y == 0) or (math.isinf(x) and math.isinf(y)):
        return NAN
    sign = math.copysign(1, x) * math.copysign(1, y)
    if y == 0 or math.isinf(x):
        return math.copysign(INF, sign)
    return math.copysign(f32(abs(x) / abs(y)), sign)


def rem(x, y):
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return NAN
    return math.fmod(x, y)  # exact; the sign of the dividend


def maximum(x, y, larger=True):
    if math.isnan(x) or math.isnan(y):
        return NAN
    if x == 0 and y == 0:  # -0 < +0
        negative = (math.copysign(1, x) < 0, math.copysign(1, y) < 0)
        return -0.0 if (all(negative) if larger else any(negative)) else 0.0
    return max(x, y) if larger else min(x, y)


def maxnum(x, y, larger=True):
    if math.isnan(x):
        return y
    if math.isnan(y):
        return x
    if x == 0 and y == 0 and math.copysign(1, x) != math.copysign(1, y):
        return EITHER
    return max(x, y) if larger else min(x, y)


def compare(predicate: str):
    def rule(x, y):
        unordered = math.isnan(x) or math.isnan(y)
        if predicate in ("false", "true"):
            return float(predicate == "true")
        if predicate == "ord":
            return float(not unordered)
        if predicate == "uno":
            return float(unordered)
        relation = {"eq": x == y, "ne": x != y and not unordered, "gt": x > y, "ge": x >= y, "lt": x < y,
                    "le": x <= y}[predicate[1:]]
        return float(unordered if predicate[0] == "u" else False) if unordered else float(relation)

    return rule


def unary(fn, specials: dict):
    """``fn`` on finite values (rounded to f32, compared closely), ``specials`` on the IEEE special cases."""

    def rule(x):
        if math.isnan(x):
            return NAN
        for key, value in specials.items():
            if key(x):
                return value(x) if callable(value) else value
        return f32(fn(x))

    return rule


def power(x, y):
    """C pow: pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN; a negative base and a non-integer exponent give
    NaN; pow(+-0, y < 0) = +inf (for y not an odd integer)."""
    if y == 0 or x == 1:
        return 1.0
    if math.isnan(x) or math.isnan(y):
        return NAN
    try:
        return f32(math.pow(x, y))
    except ValueError:
        return INF if x == 0 else NAN
    except OverflowError:
        return math.copysign(INF, x) if y == int(y) and int(y) % 2 else INF


def negative(x):
    return x < 0 or (x == 0 and math.copysign(1, x) < 0)


EXACT = {  # results that are exact values (compared exactly)
    "arith.addf": add,
    "arith.subf": lambda x, y: add(x, -y),
    "arith.mulf": mul,
    "arith.divf": div,
    "arith.remf": rem,
    "arith.maximumf": maximum,
    "arith.minimumf": lambda x, y: maximum(x, y, larger=False),
    "arith.maxnumf": maxnum,
    "arith.minnumf": lambda x, y: maxnum(x, y, larger=False),
    **{f"arith.cmpf {p}": compare(p) for p in PREDICATES},
    "math.copysign": lambda x, y: math.copysign(x, y) if not math.isnan(x) else NAN,
}
CLOSE = {  # correctly rounded or within an ulp or so on finite values, exact on the special ones
    "arith.negf": lambda x: -x,
    "math.absf": lambda x: abs(x),
    "math.exp": unary(math.exp, {lambda x: x == -INF: 0.0, lambda x: x == INF: INF, lambda x: x > 88.8: INF,
                                 lambda x: x < -104: 0.0}),
    "math.exp2": unary(lambda x: 2.0**x, {lambda x: x == -INF: 0.0, lambda x: x >= 128: INF, lambda x: x < -150: 0.0}),
    "math.expm1": unary(math.expm1, {lambda x: x == -INF: -1.0, lambda x: x >= 89: INF, lambda x: x == 0: lambda x: x}),
    "math.log": unary(math.log, {lambda x: x == 0: -INF, negative: NAN, lambda x: x == INF: INF}),
    "math.log2": unary(math.log2, {lambda x: x == 0: -INF, negative: NAN, lambda x: x == INF: INF}),
    "math.log10": unary(math.log10, {lambda x: x == 0: -INF, negative: NAN, lambda x: x == INF: INF}),
    "math.log1p": unary(math.log1p, {lambda x: x == 0: lambda x: x, lambda x: x == -1: -INF, lambda x: x < -1: NAN,
                                     lambda x: x == INF: INF}),
    "math.sqrt": unary(math.sqrt, {lambda x: x == 0: lambda x: x, negative: NAN, lambda x: x == INF: INF}),
    "math.rsqrt": unary(lambda x: 1 / math.sqrt(x), {lambda x: x == 0: lambda x: math.copysign(INF, x),
                                                     negative: NAN, lambda x: x == INF: 0.0}),
    "math.tanh": unary(math.tanh, {lambda x: x == 0: lambda x: x, lambda x: math.isinf(x): lambda x: math.copysign(1.0, x)}),
    "math.sin": unary(math.sin, {lambda x: x == 0: lambda x: x, lambda x: math.isinf(x): NAN}),
    "math.cos": unary(math.cos, {lambda x: math.isinf(x): NAN}),
    "math.ceil": unary(math.ceil, {lambda x: math.isinf(x) or x == 0: lambda x: x, lambda x: -1 < x < 0: -0.0}),
    "math.floor": unary(math.floor, {lambda x: math.isinf(x) or x == 0: lambda x: x}),
    "math.trunc": unary(math.trunc, {lambda x: math.isinf(x) or x == 0: lambda x: x, lambda x: -1 < x < 0: -0.0}),
    "math.roundeven": unary(round, {lambda x: math.isinf(x) or x == 0: lambda x: x, lambda x: -0.5 <= x < 0: -0.0}),
    "math.round": unary(lambda x: math.copysign(math.floor(abs(x) + 0.5), x),
                        {lambda x: math.isinf(x) or x == 0: lambda x: x, lambda x: -0.5 < x < 0: -0.0}),
    "math.powf": lambda x, y: power(x, y),
    "math.atan2": lambda x, y: NAN if math.isnan(x) or math.isnan(y) else f32(math.atan2(x, y)),
}

@pytest.mark.parametrize("name", sorted({**EXACT, **CLOSE}))
def test_elementwise_op_follows_its_rule(name: str) -> None:
    rule = EXACT.get(name) or CLOSE[name]
    binary = rule.__code__.co_argcount - len(rule.__defaults__ or ()) == 2
    x, y = pairs() if binary else (np.array(SPECIALS, np.float32), None)
    if name.startswith("arith.cmpf"):
        body = f"%c = arith.cmpf {name.split()[1]}, %x, %y : f32\n    %r = arith.extui %c : i1 to i32"
        got = run_ops(body, [x, y], "i32", np.zeros(len(x), np.int32)).astype(np.float64)
    else:
        operands = "%x, %y" if binary else "%x"
        got = run_ops(f"%r = {name} {operands} : f32", [x, y] if binary else [x], "f32", np.zeros(len(x), np.float32))
    assert_rule(name, [x, y] if binary else [x], got, rule, close=name in CLOSE)


def test_select_returns_the_chosen_operand_unchanged() -> None:
    x, y = pairs()
    body = ("%i32 = arith.index_cast %i : index to i32\n    %one = arith.constant 1 : i32\n"
            "    %odd = arith.andi %i32, %one : i32\n    %c = arith.trunci %odd : i32 to i1\n"
            "    %r = arith.select %c, %x, %y : f32")
    got = run_ops(body, [x, y], "f32", np.zeros(len(x), np.float32))
    chosen = np.where(np.arange(len(x)) % 2 == 1, x, y)
    assert np.array_equal(got.view(np.uint32), chosen.view(np.uint32))


@pytest.mark.parametrize("body", [
    "%r = math.fma %x, %y, %z : f32",
    "%v = vector.from_elements %x, %y, %z : vector<3xf32>\n"
    "    %vx = vector.extract_strided_slice %v {offsets = [0], sizes = [1], strides = [1]} : vector<3xf32> to vector<1xf32>\n"
    "    %vy = vector.extract_strided_slice %v {offsets = [1], sizes = [1], strides = [1]} : vector<3xf32> to vector<1xf32>\n"
    "    %vz = vector.extract_strided_slice %v {offsets = [2], sizes = [1], strides = [1]} : vector<3xf32> to vector<1xf32>\n"
    "    %vr = vector.fma %vx, %vy, %vz : vector<1xf32>\n    %r = vector.extract %vr[0] : f32 from vector<1xf32>",
], ids=["math.fma", "vector.fma"])
def test_fma_rounds_once_and_follows_the_special_cases(body: str) -> None:
    x, y = pairs()
    z = np.resize(np.array([NAN, -0.0, 0.0, INF, -INF, 1.0, -1e30], np.float32), len(x))
    got = run_ops(body, [x, y, z], "f32", np.zeros(len(x), np.float32))

    def rule(a, b, c):
        product = mul(a, b)
        if math.isnan(product) or math.isnan(c):
            return NAN
        if math.isinf(product) or math.isinf(c):
            return add(product, c)
        if a * b == 0 and c == 0:  # an exact zero product keeps the sign rule of addition
            return add(math.copysign(0.0, math.copysign(1, a) * math.copysign(1, b)), c)
        return f32(a * b + c)  # one rounding of the exact value (a * b exact in float64)

    wrong = [(a, b, c, g) for a, b, c, g in zip(x.tolist(), y.tolist(), z.tolist(), got.tolist())
             if not same(g, rule(a, b, c))]
    assert not wrong, wrong[:8]


@pytest.mark.parametrize("kind", ["add", "mul", "maxnumf", "minnumf", "maximumf", "minimumf"])
def test_vector_reduction_follows_the_rule_of_its_op(kind: str) -> None:
    x, y = pairs()
    body = (f"%v = vector.from_elements %x, %y : vector<2xf32>\n"
            f"    %r = vector.reduction <{kind}>, %v : vector<2xf32> into f32")
    got = run_ops(body, [x, y], "f32", np.zeros(len(x), np.float32))
    start = {"add": lambda a, b: add(add(0.0, a), b)}  # from +0.0
    rule = start.get(kind) or EXACT.get(f"arith.{kind}") or {"mul": mul}[kind]
    assert_rule(f"vector.reduction <{kind}>", [x, y], got, rule)


# ----------------------------------------------------------------------------
# Conversions

F32_EDGES = np.array([NAN, -0.0, 0.0, INF, -INF, 1.0, 65504.0, 65520.0, 65519.996, 1 + 2**-11, 1 + 3 * 2**-11,
                      3.3895314e38, 3.4e38, 1 + 2**-8, 1 + 3 * 2**-8, -1e-30, 2**-24, 2**-25], np.float32)


def round_to(x: float, bits: int, emin: int, largest: float, has_inf: bool = True) -> float:
    """x rounded to nearest even in a binary format of ``bits`` significant bits, minimum normal exponent
    ``emin``; magnitudes past ``largest`` by half an ulp overflow (to inf, or NaN without inf)."""
    if math.isnan(x) or math.isinf(x):
        return x if has_inf else NAN
    if x == 0:
        return x
    exponent = max(math.frexp(abs(x))[1] - 1, emin)
    ulp = 2.0 ** (exponent - bits + 1)
    scaled = abs(x) / ulp
    rounded = round(scaled) * ulp  # Python's round is to nearest even
    top_ulp = 2.0 ** (math.frexp(largest)[1] - bits)
    if rounded > largest or (abs(x) >= largest + top_ulp / 2 and rounded >= largest + top_ulp):
        return math.copysign(INF if has_inf else NAN, x)
    return math.copysign(rounded, x)


@pytest.mark.parametrize("target, decode, rule", [
    ("f16", lambda out: out.astype(np.float64), lambda x: round_to(x, 11, -14, 65504.0)),
    ("bf16", lambda out: out.astype(np.float64), lambda x: round_to(x, 8, -126, 3.3895314e38)),
])
def test_truncf_rounds_to_nearest_even_keeps_nan_and_overflows_to_inf(target, decode, rule) -> None:
    got = run_ops(f"%r = arith.truncf %x : f32 to {target}", [F32_EDGES], target,
                  np.zeros(len(F32_EDGES), np.float32 if target == "bf16" else np.float16))
    assert_rule("arith.truncf", [F32_EDGES], decode(got), rule)


@pytest.mark.parametrize("target, largest, has_inf", [
    ("f8E4M3FNUZ", 240.0, False), ("f8E5M2FNUZ", 57344.0, False), ("f8E4M3FN", 448.0, False), ("f8E5M2", 57344.0, True),
])
def test_truncf_to_fp8_overflows_as_mlir_rounds(target: str, largest: float, has_inf: bool) -> None:
    bits = 4 if "E4M3" in target else 3
    emin = {"f8E4M3FNUZ": -7, "f8E5M2FNUZ": -15, "f8E4M3FN": -6, "f8E5M2": -14}[target]
    top_ulp = 2.0 ** (math.frexp(largest)[1] - bits)
    values = np.array([NAN, 0.0, 1.0, 1.0625, 1.1875, largest, largest + top_ulp / 2 - 1, largest + top_ulp / 2,
                       largest + top_ulp, 1e6, -1e6, INF, -INF, 2.0 ** (emin - bits), -2.0 ** (emin - bits) / 4], np.float32)
    got = run_ops(f"%r = arith.truncf %x : f32 to {target}", [values], target, np.zeros(len(values), np.uint8))
    decoded = fp8_values(got.astype(np.uint8), target) if got.dtype == np.uint8 else got
    fnuz = target.endswith("FNUZ")
    # a tie at largest + half an ulp goes to the even code: up (overflow) when the largest code is odd
    odd_largest = target != "f8E4M3FN"

    def rule(x):
        if abs(x) == largest + top_ulp / 2:
            return math.copysign(INF if has_inf else NAN, x) if odd_largest else math.copysign(largest, x)
        out = round_to(x, bits, emin, largest, has_inf)
        return 0.0 if fnuz and out == 0 else out  # FNUZ has no -0

    assert_rule("arith.truncf", [values], decoded.astype(np.float64), rule)


def test_extf_is_exact_and_keeps_nan_zero_signs_and_inf() -> None:
    halves = np.array([NAN, -0.0, 0.0, INF, -INF, 65504.0, 2**-24, -1.5], np.float16)
    got = run_ops("%r = arith.extf %x : f16 to f32", [halves], "f32", np.zeros(len(halves), np.float32), ["f16"])
    assert_rule("arith.extf", [halves.astype(np.float64)], got, lambda x: x)
    codes = np.arange(256, dtype=np.uint8)
    for fmt in ("f8E4M3FNUZ", "f8E5M2"):
        got = run_ops(f"%r = arith.extf %x : {fmt} to f32", [codes], "f32", np.zeros(256, np.float32), [fmt])
        assert_rule("arith.extf", [fp8_values(codes, fmt).astype(np.float64)], got, lambda x: x)


def test_fptosi_and_fptoui_truncate_and_saturate() -> None:
    values = np.array([NAN, -0.0, 2.7, -2.7, INF, -INF, 3e9, -3e9, 2147483520.0, -2147483648.0], np.float32)
    got = run_ops("%r = arith.fptosi %x : f32 to i32", [values], "i32", np.zeros(len(values), np.int32))
    assert got.tolist() == [0, 0, 2, -2, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 2147483520, -(2**31)]
    got = run_ops("%r = arith.fptoui %x : f32 to i32", [values], "i32", np.zeros(len(values), np.int32))
    assert (got.view(np.uint32)).tolist() == [0, 0, 2, 0, 2**32 - 1, 0, 3000000000, 0, 2147483520, 0]


def test_sitofp_to_bf16_rounds_once() -> None:
    # 2^30 + 2^22 + 1 is just above a bf16 midpoint; through f32 it lands on the midpoint and ties to even
    values = np.array([2**30 + 2**22 + 1, -(2**30 + 2**22 + 1), 2**30 + 2**22, 7, 0], np.int32)
    got = run_ops("%r = arith.sitofp %x : i32 to bf16", [values], "bf16", np.zeros(len(values), np.float32), ["i32"])
    assert got.tolist() == [2**30 + 2**23, -(2**30 + 2**23), 2**30, 7.0, 0.0]


def test_every_float_op_the_interpreter_runs_has_a_rule() -> None:
    float_ops = {"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf", "arith.cmpf",
                 "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.extf", "arith.truncf",
                 "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.select", "math.fma"}
    float_ops |= {name for name in HANDLERS if name.startswith("math.") and name != "math.absi"}
    float_ops |= {"amdgpu.mfma", "amdgpu.wmma", "nvvm.mma.sync", "vector.fma"}
    named = {name.split()[0] for name in FLOAT_RULES}
    assert float_ops <= named, float_ops - named
    assert all(FLOAT_RULES[name].rule for name in FLOAT_RULES)
    tested = set(EXACT) | set(CLOSE) | {"arith.select", "math.fma", "vector.fma", "arith.truncf", "arith.extf", "arith.fptosi",
                                        "arith.fptoui", "arith.sitofp"}
    tested |= {f"vector.reduction <{k}>" for k in ("add", "mul", "maxnumf", "minnumf", "maximumf", "minimumf")}
    tested |= {"amdgpu.mfma", "amdgpu.wmma"}  # test_interp_matrix.py: NaN and inf through the matrix cores
    tested |= {"nvvm.mma.sync"}  # test_nvvm_interp.py
    assert set(FLOAT_RULES) - tested <= {"arith.uitofp"}, set(FLOAT_RULES) - tested
