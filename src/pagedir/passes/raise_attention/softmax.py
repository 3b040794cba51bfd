"""The chain from the output back to the scores: the element cast, the contractions ``P V`` and ``Q K^T``
(``linalg.generic`` or ``linalg.batch_matmul`` on collapsed views), and the softmax over the key dim
(``linalg.softmax``, or max, subtract and exp, sum, divide as generics)."""

from __future__ import annotations

import mlir.ir as ir

from pagedir.passes.raise_attention.pattern import (
    IDENTITY, KEY_DIM, NEG_INF, Attention, NoMatch, body, describe, dims, dims0, expect_loops, float_constant,
    generic_inputs, identity, is_zero_fill, kinds_of, maps_of, produced_by, producer, rank_of, through_casts,
    through_extf,
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
    rank = rank_of(value)
    expect_loops(op, "the element cast of the output", "p" * rank, [identity(rank)] * 2)
    return ins[0]


def contraction(value: ir.Value, *, transposed: bool, what: str, found: Attention | None = None) -> tuple[ir.Value, ir.Value]:
    """(lhs, rhs) of ``out[b,h,m,n] = sum_k lhs[b,h,m,k] * rhs[b,h,n,k]`` (transposed) or ``rhs[b,h,k,n]``."""
    value = through_casts(value, found) if found is not None else value
    expand = produced_by(value, "tensor.expand_shape")
    if expand is not None:
        return batch_matmul(expand, transposed=transposed, what=what, found=found)
    if found is not None and found.folded_heads:
        bmm = produced_by(value, "linalg.batch_matmul")
        if bmm is None:
            raise NoMatch(f"expected {what} (a linalg.batch_matmul on [B*H, S, D]), found {describe(value)}", producer(value))
        return batch_matmul(None, transposed=transposed, what=what, found=found, bmm=bmm)
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


def batch_matmul(expand: ir.Operation | None, *, transposed: bool, what: str, found: Attention | None = None,
                 bmm: ir.Operation | None = None) -> tuple[ir.Value, ir.Value]:
    """torch-mlir's bmm: [B, H, M, N] = expand(batch_matmul(collapse(lhs), [transpose](collapse(rhs)))), the result
    possibly cast (f16 operands accumulate in f32, truncf after). K^T is a transpose [0, 2, 1] of the collapsed K
    or the collapse of K transposed [0, 1, 3, 2] (then maybe scaled: SDPA scales Q and K^T by sqrt(scale)).
    ``bmm`` given: heads folded into the batch (3-d operands, no views; see :func:`folded_operand`)."""
    if bmm is None:
        bmm = produced_by(through_casts(expand.operands[0], found), "linalg.batch_matmul")
        if bmm is None or not default_batch_maps(bmm):
            raise NoMatch(f"expected {what}, found {describe(expand.operands[0])} under tensor.expand_shape", expand)
    elif not default_batch_maps(bmm):
        raise NoMatch(f"{what}: linalg.batch_matmul with maps other than the default", bmm)
    folded = expand is None
    if not is_zero_fill(collapsed_source(bmm.operands[2]) or bmm.operands[2]):
        raise NoMatch(f"{what} accumulates into something else than zeros", bmm)
    lhs = bmm.operands[0] if folded else collapsed_source(bmm.operands[0])
    rhs_value = bmm.operands[1]
    if transposed:
        rhs = transposed_rhs(rhs_value, folded, found)
        if rhs is None:
            raise NoMatch(f"{what}: the right operand of linalg.batch_matmul is not K^T (linalg.transpose [0, 2, 1] of "
                          f"the collapsed K, or the collapse of K transposed [0, 1, 3, 2])", bmm)
    else:
        rhs = rhs_value if folded else collapsed_source(rhs_value, heads_repeated=True)
    if lhs is None or rhs is None:
        raise NoMatch(f"{what}: the operands of linalg.batch_matmul are not [B*H, ...] views of 4-d tensors", bmm)
    return lhs, rhs


def transposed_rhs(value: ir.Value, folded: bool, found: Attention | None) -> ir.Value | None:
    """K of ``transpose(collapse(K), [0, 2, 1])`` or ``collapse(scaled(transpose(K, [0, 1, 3, 2])))``."""
    transpose = produced_by(through_casts(value, found), "linalg.transpose")
    if transpose is not None:
        if list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"])) != [0, 2, 1]:
            return None
        return transpose.operands[0] if folded else collapsed_source(transpose.operands[0])
    source = through_casts(value, found) if folded else collapsed_source(value)
    if source is None:
        return None
    if found is not None:
        source = operand_scales(source, found, "K^T")
    transpose = produced_by(source, "linalg.transpose")
    permutation = [0, 2, 1] if folded else [0, 1, 3, 2]
    if transpose is None:
        return None
    found_permutation = list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))
    if found_permutation != permutation:
        if folded or found is None or sorted(found_permutation) != [0, 1, 2, 3]:
            return None
        # torch-mlir folds K.transpose(1, 2) and the transpose of K^T into one: K is its input transposed by
        # this permutation with the last two dims swapped back (the K sources read it: gathers.block_gather).
        found.k_permutation = [found_permutation[d] for d in (0, 1, 3, 2)]
    return transpose.operands[0]


def operand_scales(value: ir.Value, found: Attention, what: str) -> ir.Value:
    """``value`` before element casts and scales by a positive constant (SDPA multiplies Q and K^T each by
    sqrt(scale)): each scale multiplies the scores, so it is recorded in ``found.scale``."""
    while True:
        value = through_casts(value, found)
        op = produced_by(value, "linalg.generic")
        if op is None or len(generic_inputs(op)[0]) != 1 or len(op.results) != 1:
            return value
        args, yielded, _ = body(op)
        step = producer(yielded)
        if step is None or step.name not in ("arith.mulf", "arith.divf") or args[0] not in step.operands:
            return value
        rank = len(kinds_of(op))
        expect_loops(op, f"the scale of {what}", "p" * rank, [list(range(rank))] * 2)
        other = step.operands[1] if step.operands[0] == args[0] else step.operands[0]
        constant = float_constant(other)
        if constant is None or (step.name == "arith.divf" and step.operands[0] != args[0]):
            raise NoMatch(f"{what} is scaled by something else than a constant ({step.name})", op)
        if constant <= 0:
            raise NoMatch(f"{what} is scaled by {constant}, not a positive constant", op)
        found.scale *= constant if step.name == "arith.mulf" else 1.0 / constant
        value = generic_inputs(op)[0][0]


def default_batch_maps(op: ir.Operation) -> bool:
    if "indexing_maps" not in op.attributes:
        return True
    return [dims(m) for m in maps_of(op)] == [[0, 1, 3], [0, 3, 2], [0, 1, 2]]


def collapsed_source(value: ir.Value, heads_repeated: bool = False) -> ir.Value | None:
    """The 4-d tensor of which ``value`` is the [B*H, X, Y] view (``heads_repeated``: or the 5-d
    [B, Hkv, G, X, Y] tensor, GQA's repeated heads collapsed with the batch at once)."""
    collapse = produced_by(value, "tensor.collapse_shape")
    if collapse is None:
        return None
    reassociation = str(collapse.attributes["reassociation"]).replace(" ", "")
    if reassociation == "[[0,1],[2],[3]]" or (heads_repeated and reassociation == "[[0,1,2],[3],[4]]"):
        return collapse.operands[0]
    return None


#: The lowest finite value of each float type: a max reduction may start from it instead of -inf (a row's
#: max is the same unless every score is -inf, and then both softmaxes are 0/0).
LOWEST_FINITE = {"f16": -65504.0, "bf16": -3.3895313892515355e38, "f32": -3.4028234663852886e38,
                 "f64": -1.7976931348623157e308}


def reduction(value: ir.Value, combine: str, init: float, what: str) -> tuple[ir.Value, int]:
    """(input, reduced dim) of a row reduction ``acc = combine(acc, x)`` from ``init`` (-inf: or the
    lowest finite value of the accumulator's type). The rows are [B, H, Sq] or [B, H, Sq, 1] (written
    through ``(d0, d1, d2, 0)``); torch-mlir's max has a second result, the argmax, which must be unused."""
    op = produced_by(value, "linalg.generic")
    if op is None:
        raise NoMatch(f"expected the softmax's {what} (a linalg.generic reduction), found {describe(value)}", producer(value))
    ins, outs = generic_inputs(op)
    kinds, maps = kinds_of(op), [dims0(m) for m in maps_of(op)]
    args, yielded, _ = body(op)
    step = producer(yielded)
    argmax_unused = len(op.results) == 2 and value == op.results[0] and not list(op.results[1].uses)
    if len(ins) != 1 or (len(op.results) != 1 and not argmax_unused) or len(kinds) not in (3, 4) or kinds.count("r") != 1 \
            or step is None or step.name not in combine.split("|") or set(step.operands) != {args[0], args[1]}:
        raise NoMatch(f"the softmax's {what} is not a single {combine} reduction", op)
    fill = produced_by(outs[0], "linalg.fill")
    start = float_constant(fill.operands[0]) if fill is not None else None
    lowest = LOWEST_FINITE.get(str(fill.operands[0].type)) if fill is not None and init == NEG_INF else None
    if start != init and (lowest is None or start != lowest):
        raise NoMatch(f"the softmax's {what} starts from {start}, expected {init}", op)
    rows = [d for d in range(len(kinds)) if kinds[d] == "p"]
    if maps[0] != identity(len(kinds)) or maps[1] not in (rows, rows + [None]):
        raise NoMatch(f"the softmax's {what} maps its tensors as {maps}", op)
    return ins[0], kinds.index("r")


def softmax(probs: ir.Value, found: Attention | None = None) -> ir.Value:
    """The scores the softmax over the key dim reads."""
    if found is not None:
        probs = through_casts(probs, found)
    key = rank_of(probs) - 1  # KEY_DIM, or 2 for heads folded into the batch
    named = produced_by(probs, "linalg.softmax")
    if named is not None:
        dim = ir.IntegerAttr(named.attributes["dimension"]).value
        if dim != key:
            raise NoMatch(f"the softmax reduces over dim {dim}, the P V matmul contracts dim {key}", named)
        return named.operands[0]
    probs, guarded = empty_rows_zeroed(probs) if key == KEY_DIM else (probs, None)
    div = row_binary(probs, "arith.divf", "the softmax's division")
    exps, sums = div
    summed, sum_dim = reduction(sums, "arith.addf", 0.0, "sum")
    if summed != exps:
        raise NoMatch("the softmax divides by the sum of something else than its numerator", producer(sums))
    if sum_dim != key:
        raise NoMatch(f"the softmax reduces over dim {sum_dim}, the P V matmul contracts dim {key}", producer(sums))
    exp_op = produced_by(exps, "linalg.generic")
    args, yielded, _ = body(exp_op) if exp_op is not None else ([], None, [])
    exp = produced_by(yielded, "math.exp") if yielded is not None else None
    if exp is None:
        raise NoMatch(f"expected exp in the softmax, found {describe(exps)}", producer(exps))
    if exp.operands[0] == args[0] and len(generic_inputs(exp_op)[0]) == 1:  # torch-mlir: exp in a generic of its own
        expect_loops(exp_op, "the softmax's exp", "p" * (key + 1), [identity(key + 1)] * 2)
        exps, inner = generic_inputs(exp_op)[0][0], None
        subtract = produced_by(exps, "linalg.generic")
        if subtract is None or len(generic_inputs(subtract)[0]) != 2:
            raise NoMatch("the softmax exponentiates the scores without subtracting their row max (exp overflows where "
                          "rock.attention's safe softmax does not)", exp_op)
    else:
        inner = "math.exp"
        if produced_by(exp.operands[0], "arith.subf") is None:
            raise NoMatch("the softmax exponentiates the scores without subtracting their row max (exp overflows where "
                          "rock.attention's safe softmax does not)", exp_op)
    scores, row_max = row_binary(exps, "arith.subf", "the softmax's subtraction", inner=inner)
    maxed, max_dim = reduction(row_max, "arith.maximumf|arith.maxnumf", float("-inf"), "max")
    if maxed != scores:
        raise NoMatch("the softmax subtracts the max of something else than its scores", producer(row_max))
    if max_dim != key:
        raise NoMatch(f"the softmax reduces over dim {max_dim}, the P V matmul contracts dim {key}", producer(row_max))
    if guarded is not None and guarded != scores:
        raise NoMatch("the softmax zeroes the rows where something else than its scores is all -inf", producer(guarded))
    return scores


def empty_rows_zeroed(probs: ir.Value) -> tuple[ir.Value, ir.Value | None]:
    """(P, scores) of SDPA's safe softmax ``select(all_j(scores == -inf), 0, P)``: a row that sees no key is 0,
    as in rock.attention; (probs, None) for any other op."""
    op = produced_by(probs, "linalg.generic")
    if op is None or len(generic_inputs(op)[0]) != 3:
        return probs, None
    (flags, zeros, kept), _ = generic_inputs(op)
    args, yielded, _ = body(op)
    select = produced_by(yielded, "arith.select")
    if select is None or list(select.operands) != args[:3]:
        return probs, None
    expect_loops(op, "the softmax's zeroing of empty rows", "pppp", [[0, 1, 2, None], IDENTITY, IDENTITY, IDENTITY])
    if splat_value(zeros) != 0.0:
        raise NoMatch("the softmax replaces empty rows by something else than 0", op)
    every = produced_by(flags, "linalg.generic")
    if every is None or len(generic_inputs(every)[0]) != 1:
        raise NoMatch(f"the flag of empty rows is {describe(flags)}, not a reduction", op)
    f_args, f_yielded, _ = body(every)
    conjunction = produced_by(f_yielded, "arith.andi")
    fill = produced_by(generic_inputs(every)[1][0], "linalg.fill")
    true = produced_by(fill.operands[0], "arith.constant") if fill is not None else None
    if conjunction is None or set(conjunction.operands) != set(f_args[:2]) or true is None \
            or ir.IntegerAttr(true.attributes["value"]).value == 0 or kinds_of(every) != ["p", "p", "p", "r"] \
            or [dims0(m) for m in maps_of(every)] != [IDENTITY, [0, 1, 2, None]]:
        raise NoMatch("the flag of empty rows is not 'every key of the row' (an and-reduction from true over the keys)", every)
    expect_loops(every, "the flag of empty rows", "pppr", [IDENTITY, [0, 1, 2, None]])
    test = produced_by(generic_inputs(every)[0][0], "linalg.generic")
    t_args, t_yielded, _ = body(test) if test is not None else ([], None, [])
    compare = produced_by(t_yielded, "arith.cmpf") if t_yielded is not None else None
    if compare is None or "r" in kinds_of(test) or [dims(m) for m in maps_of(test)] != [IDENTITY, IDENTITY] \
            or str(compare.attributes["predicate"]).split(":")[0].strip() not in ("1", "oeq") \
            or through_extf(compare.operands[0]) != t_args[0] or float_constant(compare.operands[1]) != NEG_INF:
        raise NoMatch("the flag of empty rows does not test the scores for -inf", test or every)
    expect_loops(test, "the test of the scores for -inf", "pppp", [IDENTITY, IDENTITY])
    return kept, generic_inputs(test)[0][0]


def splat_value(value: ir.Value) -> float | None:
    """The float of a splat ``arith.constant dense<x>`` tensor, else None."""
    op = produced_by(value, "arith.constant")
    if op is None or not isinstance(op.attributes["value"], ir.DenseFPElementsAttr):
        return None
    attr = ir.DenseElementsAttr(op.attributes["value"])
    return ir.FloatAttr(attr.get_splat_value()).value if attr.is_splat else None


def row_binary(value: ir.Value, name: str, what: str, inner: str | None = None) -> tuple[ir.Value, ir.Value]:
    """(x, row) of ``f(x[b,h,i,j], row[b,h,i])`` with ``f`` = ``name`` (then ``inner``, if given). The row
    is a [B, H, Sq] tensor, or [B, H, Sq, 1] read through ``(d0, d1, d2, 0)`` (torch-mlir keeps the dim;
    an ``expand_shape`` of [B, H, Sq] rows is looked through)."""
    op = produced_by(value, "linalg.generic")
    if op is None:
        raise NoMatch(f"expected {what}, found {describe(value)}", producer(value))
    ins, _ = generic_inputs(op)
    maps = [dims0(m) for m in maps_of(op)]
    args, yielded, _ = body(op)
    step = produced_by(yielded, inner) if inner else producer(yielded)
    if inner and step is not None:
        step = producer(step.operands[0])
    if len(ins) != 2 or step is None or step.name != name or list(step.operands) != args[:2]:
        raise NoMatch(f"{what} is not {name} of its two inputs", op)
    rank = rank_of(value)
    rows = identity(rank - 1)
    if maps[0] != identity(rank) or maps[1] not in (rows, rows + [None]):
        shown = "(" + ", ".join("0" if d is None else f"d{d}" for d in maps[1]) + ")"
        raise NoMatch(f"{what} reads its row operand as {shown}, expected rows ({', '.join(f'd{d}' for d in rows)}) "
                      f"of the key dim {rank - 1}", op)
    row_map = maps[1] if maps[1] == rows + [None] else rows  # [B, H, Sq] rows, or [B, H, Sq, 1] read at 0
    expect_loops(op, what, "p" * rank, [identity(rank), row_map, identity(rank)])
    row = ins[1]
    expand = produced_by(row, "tensor.expand_shape")
    kept_dim = "[" + ",".join(f"[{d}]" for d in range(rank - 2)) + f",[{rank - 2},{rank - 1}]]"
    if maps[1] == rows + [None] and expand is not None \
            and str(expand.attributes["reassociation"]).replace(" ", "") == kept_dim:
        row = expand.operands[0]
    return ins[0], row
