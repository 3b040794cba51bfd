"""The chain from the output back to the scores: the element cast, the contractions ``P V`` and ``Q K^T``
(``linalg.generic`` or ``linalg.batch_matmul`` on collapsed views), and the softmax over the key dim
(``linalg.softmax``, or max, subtract and exp, sum, divide as generics)."""

from __future__ import annotations

import mlir.ir as ir

from pagedir.passes.raise_attention.pattern import (
    IDENTITY, KEY_DIM, NEG_INF, NoMatch, body, describe, dims, expect_loops, float_constant, generic_inputs,
    is_zero_fill, kinds_of, maps_of, produced_by, producer, through_extf,
)


def strip_cast(value: ir.Value) -> ir.Value:
    op = produced_by(value, "linalg.generic")
    if op is None:
        return value
    ins, _ = generic_inputs(op)
    if len(ins) != 1:
        return value
    # One input at the output is the cast (P V has two): its body must yield the cast of that input.
    args, yielded, ops = body(op)
    if len(ops) != 2 or ops[0].name not in ("arith.truncf", "arith.extf") or ops[0].operands[0] != args[0] \
            or yielded != ops[0].results[0]:
        what = "its init" if yielded == args[-1] else describe(yielded)
        raise NoMatch(f"the element cast of the output yields {what}, expected arith.truncf or arith.extf of its input", op)
    expect_loops(op, "the element cast of the output", "pppp", [IDENTITY, IDENTITY])
    return ins[0]


def contraction(value: ir.Value, *, transposed: bool, what: str) -> tuple[ir.Value, ir.Value]:
    """(lhs, rhs) of ``out[b,h,m,n] = sum_k lhs[b,h,m,k] * rhs[b,h,n,k]`` (transposed) or ``rhs[b,h,k,n]``."""
    expand = produced_by(value, "tensor.expand_shape")
    if expand is not None:
        return batch_matmul(expand, transposed=transposed, what=what)
    op = produced_by(value, "linalg.generic")
    if op is None:
        raise NoMatch(f"expected {what} (a linalg.generic or linalg.batch_matmul contraction), found "
                      f"{describe(value)}", producer(value))
    ins, outs = generic_inputs(op)
    kinds = kinds_of(op)
    maps = [dims(m) for m in maps_of(op)]
    if len(ins) != 2 or len(op.results) != 1 or len(kinds) != 5 or kinds.count("r") != 1 or any(m is None for m in maps):
        raise NoMatch(f"{what} is not a contraction of two 4-d tensors over one dim", op)
    args, yielded, _ = body(op)
    add = produced_by(yielded, "arith.addf")
    mul = produced_by(add.operands[1], "arith.mulf") if add is not None else None
    if mul is None or add.operands[0] != args[2] or {through_extf(v) for v in mul.operands} != {args[0], args[1]}:
        raise NoMatch(f"the body of {what} is not acc + a * b", op)
    if not is_zero_fill(outs[0]):
        raise NoMatch(f"{what} accumulates into something else than zeros", op)
    reduced = kinds.index("r")
    lhs_map, rhs_map, out_map = maps
    if sorted(out_map + [reduced]) != list(range(5)):
        raise NoMatch(f"the {what} contraction writes its result as {out_map}: expected each parallel dim once", op)
    b, h, m, n = out_map
    if lhs_map != [b, h, m, reduced]:
        raise NoMatch(f"the {what} contraction reads its left operand as {lhs_map}, expected [{b}, {h}, {m}, {reduced}] "
                      f"(contracting its last dim)", op)
    if rhs_map == [b, h, n, reduced]:
        is_transposed = True
    elif rhs_map == [b, h, reduced, n]:
        is_transposed = False
    else:
        raise NoMatch(f"the {what} contraction reads its right operand as {rhs_map}", op)
    rhs = ins[1]
    if transposed and not is_transposed:
        rhs = untransposed(rhs, what, op)
    elif is_transposed != transposed:
        raise NoMatch(f"{what} contracts dim 2 of its right operand; the key dim {KEY_DIM - 1} of V is expected", op)
    return ins[0], rhs


def untransposed(value: ir.Value, what: str, op: ir.Operation) -> ir.Value:
    transpose = produced_by(value, "linalg.transpose")
    if transpose is None or list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"])) not in ([0, 1, 3, 2], [0, 2, 1]):
        raise NoMatch(f"{what} contracts dim 2 of K: K^T expected", op)
    return transpose.operands[0]


def batch_matmul(expand: ir.Operation, *, transposed: bool, what: str) -> tuple[ir.Value, ir.Value]:
    """torch-mlir's bmm: [B, H, M, N] = expand(batch_matmul(collapse(lhs), [transpose](collapse(rhs))))."""
    bmm = produced_by(expand.operands[0], "linalg.batch_matmul")
    if bmm is None or not default_batch_maps(bmm):
        raise NoMatch(f"expected {what}, found {describe(expand.operands[0])} under tensor.expand_shape", expand)
    if not is_zero_fill(collapsed_source(bmm.operands[2]) or bmm.operands[2]):
        raise NoMatch(f"{what} accumulates into something else than zeros", bmm)
    lhs = collapsed_source(bmm.operands[0])
    rhs_value = bmm.operands[1]
    if transposed:
        transpose = produced_by(rhs_value, "linalg.transpose")
        if transpose is None or list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"])) != [0, 2, 1]:
            raise NoMatch(f"{what}: the right operand of linalg.batch_matmul is not K^T (linalg.transpose [0, 2, 1])", bmm)
        rhs_value = transpose.operands[0]
    rhs = collapsed_source(rhs_value)
    if lhs is None or rhs is None:
        raise NoMatch(f"{what}: the operands of linalg.batch_matmul are not [B*H, ...] views of 4-d tensors", bmm)
    return lhs, rhs


def default_batch_maps(op: ir.Operation) -> bool:
    if "indexing_maps" not in op.attributes:
        return True
    return [dims(m) for m in maps_of(op)] == [[0, 1, 3], [0, 3, 2], [0, 1, 2]]


def collapsed_source(value: ir.Value) -> ir.Value | None:
    """The 4-d tensor of which ``value`` is the [B*H, X, Y] view."""
    collapse = produced_by(value, "tensor.collapse_shape")
    if collapse is None or "[[0, 1], [2], [3]]" not in str(collapse.attributes["reassociation"]).replace(" ", "").replace(",", ", "):
        return None
    return collapse.operands[0]


#: The lowest finite value of each float type: a max reduction may start from it instead of -inf (a row's
#: max is the same unless every score is -inf, and then both softmaxes are 0/0).
LOWEST_FINITE = {"f16": -65504.0, "bf16": -3.3895313892515355e38, "f32": -3.4028234663852886e38,
                 "f64": -1.7976931348623157e308}


def reduction(value: ir.Value, combine: str, init: float, what: str) -> tuple[ir.Value, int]:
    """(input, reduced dim) of a row reduction ``acc = combine(acc, x)`` from ``init`` (-inf: or the
    lowest finite value of the accumulator's type)."""
    op = produced_by(value, "linalg.generic")
    if op is None:
        raise NoMatch(f"expected the softmax's {what} (a linalg.generic reduction), found {describe(value)}", producer(value))
    ins, outs = generic_inputs(op)
    kinds, maps = kinds_of(op), [dims(m) for m in maps_of(op)]
    args, yielded, _ = body(op)
    step = producer(yielded)
    if len(ins) != 1 or len(op.results) != 1 or len(kinds) != 4 or kinds.count("r") != 1 or step is None \
            or step.name not in combine.split("|") or set(step.operands) != {args[0], args[1]}:
        raise NoMatch(f"the softmax's {what} is not a single {combine} reduction", op)
    fill = produced_by(outs[0], "linalg.fill")
    start = float_constant(fill.operands[0]) if fill is not None else None
    lowest = LOWEST_FINITE.get(str(fill.operands[0].type)) if fill is not None and init == NEG_INF else None
    if start != init and (lowest is None or start != lowest):
        raise NoMatch(f"the softmax's {what} starts from {start}, expected {init}", op)
    if maps[0] != [0, 1, 2, 3] or maps[1] != [d for d in range(4) if kinds[d] == "p"]:
        raise NoMatch(f"the softmax's {what} maps its tensors as {maps}", op)
    return ins[0], kinds.index("r")


def softmax(probs: ir.Value) -> ir.Value:
    """The scores the softmax over the key dim reads."""
    named = produced_by(probs, "linalg.softmax")
    if named is not None:
        dim = ir.IntegerAttr(named.attributes["dimension"]).value
        if dim != KEY_DIM:
            raise NoMatch(f"the softmax reduces over dim {dim}, the P V matmul contracts dim {KEY_DIM}", named)
        return named.operands[0]
    div = row_binary(probs, "arith.divf", "the softmax's division")
    exps, sums = div
    summed, sum_dim = reduction(sums, "arith.addf", 0.0, "sum")
    if summed != exps:
        raise NoMatch("the softmax divides by the sum of something else than its numerator", producer(sums))
    if sum_dim != KEY_DIM:
        raise NoMatch(f"the softmax reduces over dim {sum_dim}, the P V matmul contracts dim {KEY_DIM}", producer(sums))
    exp_op = produced_by(exps, "linalg.generic")
    args, yielded, _ = body(exp_op) if exp_op is not None else ([], None, [])
    exp = produced_by(yielded, "math.exp") if yielded is not None else None
    if exp is None:
        raise NoMatch(f"expected exp in the softmax, found {describe(exps)}", producer(exps))
    if produced_by(exp.operands[0], "arith.subf") is None:
        raise NoMatch("the softmax exponentiates the scores without subtracting their row max (exp overflows where "
                      "rock.attention's safe softmax does not)", exp_op)
    scores, row_max = row_binary(exps, "arith.subf", "the softmax's subtraction", inner="math.exp")
    maxed, max_dim = reduction(row_max, "arith.maximumf|arith.maxnumf", float("-inf"), "max")
    if maxed != scores:
        raise NoMatch("the softmax subtracts the max of something else than its scores", producer(row_max))
    if max_dim != KEY_DIM:
        raise NoMatch(f"the softmax reduces over dim {max_dim}, the P V matmul contracts dim {KEY_DIM}", producer(row_max))
    return scores


def row_binary(value: ir.Value, name: str, what: str, inner: str | None = None) -> tuple[ir.Value, ir.Value]:
    """(x, row) of ``f(x[b,h,i,j], row[b,h,i])`` with ``f`` = ``name`` (then ``inner``, if given)."""
    op = produced_by(value, "linalg.generic")
    if op is None:
        raise NoMatch(f"expected {what}, found {describe(value)}", producer(value))
    ins, _ = generic_inputs(op)
    maps = [dims(m) for m in maps_of(op)]
    args, yielded, _ = body(op)
    step = produced_by(yielded, inner) if inner else producer(yielded)
    if inner and step is not None:
        step = producer(step.operands[0])
    if len(ins) != 2 or step is None or step.name != name or list(step.operands) != args[:2]:
        raise NoMatch(f"{what} is not {name} of its two inputs", op)
    if maps[0] != [0, 1, 2, 3] or maps[1] != [0, 1, 2]:
        raise NoMatch(f"{what} reads its row operand as {maps[1]}, expected [0, 1, 2] (rows of dim {KEY_DIM})", op)
    expect_loops(op, what, "pppp", [IDENTITY, [0, 1, 2], IDENTITY])
    return ins[0], ins[1]
