"""The elementwise steps between ``Q K^T`` and the softmax: the scale, the soft-cap, ALiBi, and the masks
(a select of -inf or an additive 0/-inf tensor), whose conditions are read as linear inequalities of
``linalg.index`` values and the sequence length."""

from __future__ import annotations

import mlir.ir as ir

from pagedir.passes.raise_attention.pattern import (
    Attention, IDENTITY, KEY_DIM, NEG_INF, NoMatch, argument_of, body, cast_of, describe, dims, dims0, expect_loops,
    float_constant, generic_inputs, identity, index_dim, kinds_of, maps_of, produced_by, producer, rank_of,
)
from pagedir.passes.raise_attention.softmax import splat_value
from pagedir.variants import KeyRange, Softcap


def score_steps(value: ir.Value, found: Attention) -> ir.Value:
    """Walk back over scale and mask generics to the Q K^T contraction, recording them in ``found``. A step that
    is not read is a blocker; the walk goes on from its scores (when one input is plainly them) so that the
    blockers below it are found too (explain=true lists them all; nothing is raised)."""
    while True:
        op = produced_by(value, "linalg.generic")
        rank = rank_of(value)  # 4, or 3 for heads folded into the batch
        if op is None or len(kinds_of(op)) != rank:  # Q K^T has 5 loops
            return value
        try:
            before = score_step(op, value, rank, found)
        except NoMatch as blocker:
            before = scores_operand(op, value)
            if before is None:
                raise
            found.blockers.append(blocker)
        if before is None:
            return value
        value = before


def scores_operand(op: ir.Operation, value: ir.Value) -> ir.Value | None:
    """The one input of ``op`` read through the identity with the scores' type, else None."""
    ins, _ = generic_inputs(op)
    rank = rank_of(value)
    same = [v for v, m in zip(ins, maps_of(op)) if v.type == value.type and dims0(m) == identity(rank)]
    return same[0] if len(same) == 1 else None


def score_step(op: ir.Operation, value: ir.Value, rank: int, found: Attention) -> ir.Value | None:
    """What the elementwise step ``op`` reads of the scores (None: not a step: the walk stops at ``value``)."""
    ins, _ = generic_inputs(op)
    if (cast := cast_of(op)) is not None:  # torch-mlir's extf/truncf between steps (docs/compile.md "Precision")
        if cast[1] == "arith.truncf":
            found.rounded.add(str(ir.ShapedType(value.type).element_type))
        return cast[0]
    if rank == 4 and ((kept := masked_fill(op, found)) is not None or (kept := mask_tensor_added(op, found)) is not None):
        return kept
    expect_loops(op, "the elementwise step on the scores", "p" * rank, [identity(rank)] * (len(ins) + 1))
    args, yielded, _ = body(op)
    step = producer(yielded)
    if step is None:
        return None
    if len(ins) == 1 and (cap := softcap_of(step, args[0])) is not None:
        return softcap_step(op, cap, found)
    if step.name in ("arith.mulf", "arith.divf") and len(ins) == 1:
        if any(produced_by(v, "math.tanh") is not None for v in step.operands):
            raise NoMatch("the scores are capped as c * tanh(s * k) with k != 1 / c: rock.attention's soft-cap is "
                          "c * tanh(s / c)", op)
        return scale_step(op, step, args, found)
    if step.name in ("arith.select", "arith.addf") and rank != 4:
        raise NoMatch("the scores of heads folded into the batch are masked: masks are read on [B, H, Sq, Sk] "
                      "scores only", op)
    if step.name == "arith.select" and len(ins) == 1:
        if step.operands[1] != args[0] or float_constant(step.operands[2]) != NEG_INF:
            raise NoMatch("the mask selects something else than the score or -inf", op)
        read_mask(op, step.operands[0], found)
        return ins[0]
    if step.name == "arith.addf" and len(ins) == 2:
        return additive_mask(op, ins, args, step, found)
    return None


def masked_fill(op: ir.Operation, found: Attention) -> ir.Value | None:
    """The scores of torch's ``scores.masked_fill(mask, -inf)``: ``select(mask, -inf, score)`` with the i1 mask a
    tensor input read through a projection of the score dims (a 2-d [Sq, Sk] mask, or [B, 1, 1, Sk]) and -inf a
    0-d tensor or a constant; the mask's own generics are read as conditions on the score's indices (None:
    not this form)."""
    ins, _ = generic_inputs(op)
    args, yielded, _ = body(op)
    select = produced_by(yielded, "arith.select")
    if select is None or len(ins) not in (2, 3) or select.operands[0] not in args[: len(ins)]:
        return None
    condition, chosen, other = select.operands
    negated = scalar_of(chosen, op) == NEG_INF
    score, fill = (other, chosen) if negated else (chosen, other)
    if score not in args[: len(ins)] or scalar_of(fill, op) != NEG_INF:
        return None
    maps = [dims0(m) for m in maps_of(op)]
    scores_index = args.index(score)
    if len(op.results) != 1:
        raise NoMatch(f"the mask has {len(op.results)} results, expected 1", op)
    if "r" in kinds_of(op) or maps[scores_index] != IDENTITY or maps[-1] != IDENTITY \
            or any(m is None for m in maps) or any(len(set(d for d in m if d is not None)) != len([d for d in m if d is not None]) for m in maps):
        raise NoMatch("the mask reads the scores through other maps than the identity", op)
    read_mask(op, condition, found, negated=negated)
    return ins[scores_index]


def mask_tensor_added(op: ir.Operation, found: Attention) -> ir.Value | None:
    """The scores of SDPA's ``scores + mask``, the mask a 0/-inf tensor read through a projection of the score dims
    and computed by a generic ``select(condition, 0, -inf)`` (None: not this form)."""
    ins, _ = generic_inputs(op)
    args, yielded, _ = body(op)
    add = produced_by(yielded, "arith.addf")
    maps = [dims0(m) for m in maps_of(op)]
    if add is None or len(ins) != 2 or set(add.operands) != set(args[:2]) or len(op.results) != 1 or "r" in kinds_of(op):
        return None
    for scores, mask in ((0, 1), (1, 0)):
        if maps[scores] != IDENTITY or maps[mask] == IDENTITY or maps[-1] != IDENTITY or maps[mask] is None:
            continue
        value, frame = element(args[mask], None)
        select = produced_by(value, "arith.select")
        if select is None or frame is None:
            raise NoMatch("the scores are added to a tensor that is not a 0/-inf mask computed from indices", op)
        chosen, other = (scalar_of(v, v.owner.owner if isinstance(v, ir.BlockArgument) else op) for v in select.operands[1:])
        if {chosen, other} != {0.0, NEG_INF}:
            raise NoMatch("the additive mask is not 0 or -inf", producer(value) or op)
        read_mask(op, select.operands[0], found, negated=chosen == NEG_INF, frame=frame)
        return ins[scores]
    return None


def scalar_of(value: ir.Value, op: ir.Operation) -> float | None:
    """The float ``value`` is: a constant, or a block argument reading a 0-d constant tensor (torch's -inf)."""
    if isinstance(value, ir.BlockArgument) and value.owner.owner == op:
        ins, _ = generic_inputs(op)
        if value.arg_number >= len(ins) or ir.ShapedType(ins[value.arg_number].type).rank != 0:
            return None
        return splat_value(ins[value.arg_number])
    return float_constant(value)


def softcap_of(step: ir.Operation, score: ir.Value) -> float | None:
    """``c`` of ``c * tanh(score / c)`` (or ``tanh(score * (1 / c))``), else None."""
    if step.name != "arith.mulf":
        return None
    for inner, outer in (step.operands, reversed(list(step.operands))):
        tanh = produced_by(inner, "math.tanh")
        cap = float_constant(outer)
        divided = producer(tanh.operands[0]) if tanh is not None else None
        if cap is None or divided is None or divided.operands[0] != score:
            continue
        by = float_constant(divided.operands[1])
        if by is not None and Softcap.is_capped(cap, divided.name, by):
            return cap
    return None


def softcap_step(op: ir.Operation, cap: float, found: Attention) -> ir.Value:
    if "scale" in found.steps or "softcap" in found.steps:
        raise NoMatch("the scores are scaled (or capped again) after the soft-cap: rock.attention caps the scaled "
                      "scores once", op)
    if not cap > 0:
        raise NoMatch(f"the soft-cap {cap} is not positive", op)
    found.softcap = cap
    found.steps.append("softcap")
    return generic_inputs(op)[0][0]


def scale_step(op: ir.Operation, step: ir.Operation, args: list[ir.Value], found: Attention) -> ir.Value:
    operand, other = step.operands
    if operand != args[0]:
        operand, other = other, operand
    constant = float_constant(other)
    if operand != args[0] or constant is None or (step.name == "arith.divf" and step.operands[0] != args[0]):
        raise NoMatch(f"the scores are scaled by something else than a constant ({step.name})", op)
    if constant <= 0:
        raise NoMatch(f"the scale {constant} is not positive (a negative scale flips the -inf of masked keys)", op)
    found.scale *= constant if step.name == "arith.mulf" else 1.0 / constant
    found.steps.append("scale")
    return generic_inputs(op)[0][0]


def additive_mask(op: ir.Operation, ins: list[ir.Value], args: list[ir.Value], step: ir.Operation, found: Attention) -> ir.Value:
    if set(step.operands) != set(args[:2]):
        raise NoMatch("the additive mask adds something else than the scores and a mask tensor", op)
    for scores, mask in ((ins[0], ins[1]), (ins[1], ins[0])):
        mask_op = produced_by(mask, "linalg.generic")
        if mask_op is not None and len(generic_inputs(mask_op)[0]) == 1:
            alibi_bias(mask_op, found)
            return scores
        if mask_op is None or generic_inputs(mask_op)[0]:
            continue
        expect_loops(mask_op, "the additive mask", "pppp", [IDENTITY])
        _, yielded, _ = body(mask_op)
        select = produced_by(yielded, "arith.select")
        if select is None or float_constant(select.operands[1]) != 0.0 or float_constant(select.operands[2]) != NEG_INF:
            raise NoMatch("the additive mask is not 0 or -inf", mask_op)
        read_mask(mask_op, select.operands[0], found)
        return scores
    raise NoMatch("the scores are added to a tensor that is not a 0/-inf mask computed from indices", op)


def alibi_bias(op: ir.Operation, found: Attention) -> None:
    """``bias[b, h, i, j] = slopes[h] * (j + r)``, ``r`` constant along a row (i, seq_len, constants): the
    softmax of a row does not change with ``r``, so this is rock.attention's ``slope[h] * (j - i_pos)``."""
    if "scale" in found.steps or "softcap" in found.steps:
        raise NoMatch("the ALiBi bias is added before the scale or the soft-cap: rock.attention adds it to the "
                      "scaled, capped scores", op)
    (slopes_tensor,), _ = generic_inputs(op)
    slopes = argument_of(slopes_tensor)
    args, yielded, _ = body(op)
    mul = produced_by(yielded, "arith.mulf")
    if slopes is None or dims(maps_of(op)[0]) != [1] or mul is None or args[0] not in mul.operands:
        raise NoMatch("the scores are added to a tensor that is neither a 0/-inf mask nor an ALiBi bias "
                      "slopes[h] * (j - i_pos) of a function argument", op)
    expect_loops(op, "the ALiBi bias", "pppp", [[1], IDENTITY])
    distance = mul.operands[1] if mul.operands[0] == args[0] else mul.operands[0]
    to_float = producer(distance)
    if to_float is None or to_float.name != "arith.sitofp":  # uitofp: a negative distance becomes huge
        raise NoMatch(f"the ALiBi distance is {describe(distance)}, not a signed integer converted to float", op)
    form = sequence_length(linear(to_float.operands[0], [], op), op, Attention())
    if form.get("j") != 1 or any(k not in ("j", "i", "len", "1") for k in form):
        raise NoMatch(f"the ALiBi bias is slopes[h] * ({pretty(form)}): rock.attention's is slopes[h] * (j - i_pos)", op)
    slopes_type = ir.MemRefType(slopes.type)
    if found.alibi_slopes is not None or list(slopes_type.shape) != [ir.RankedTensorType(op.results[0].type).shape[1]] \
            or str(slopes_type.element_type) != "f32":
        raise NoMatch(f"the ALiBi slopes {slopes_type} are not one f32 per query head (or a second bias)", op)
    found.alibi_slopes = slopes
    found.steps.append("alibi")


def read_mask(op: ir.Operation, condition: ir.Value, found: Attention, negated: bool = False,
              frame: "Frame" = None) -> None:
    """Each conjunct of ``condition`` (``negated``: of its negation, the keys torch's masked_fill hides) is
    ``j < seq_len``, ``j <= i + seq_len - Sq`` or ``j >= i + seq_len - Sq - W``."""
    if "softcap" in found.steps:
        raise NoMatch("the scores are masked before the soft-cap: tanh turns -inf into -cap, a key that still counts", op)
    scores_shape = list(ir.RankedTensorType(op.results[0].type).shape)
    seq_q, seq_k = scores_shape[2], scores_shape[3]
    if negated:
        hidden = conjuncts(condition, "arith.ori", frame)
        forms = [{k: -c for k, c in inequality(v, op, f).items()} for v, f in hidden]
        forms = [{**form, "1": form.get("1", 0) + 1} for form in forms]  # not (f <= 0) is -f + 1 <= 0
    else:
        forms = [inequality(v, op, f) for v, f in conjuncts(condition, frame=frame) if not always_true(v)]
    for form in forms:
        form = {k: c for k, c in form.items() if c}
        if "b" in form or "h" in form:
            raise NoMatch(f"the mask depends on the {'batch' if 'b' in form else 'head'} index other than through "
                          f"seq_lens", op)
        form = sequence_length(form, op, found)
        length = "len" if "len" in form else None
        constant = form.get("1", 0)
        terms = {k: c for k, c in form.items() if c}
        if form.get("j") == -1 and form.get("i") == 1 and set(form) <= {"j", "i", "len", "1"} \
                and form.get("len", 1 if length else 0) == (1 if length else 0):
            sliding_window(form, seq_q, seq_k, op, found)  # i + len - Sq - W - j <= 0: j >= i_pos - W
            continue
        if form.get("j", 0) < 0:
            raise NoMatch(f"the mask keeps keys with {pretty(form)} <= 0, a lower bound on the key that is not a "
                          f"sliding window j >= i + seq_len - {seq_q} - W", op)
        if form.get("j") != 1 or any(k not in ("j", "i", "len", "1") for k in form):
            raise NoMatch(f"the mask condition {pretty(form)} <= 0 is not a key bound", op)
        if form.get("i", 0) == 0 and length and form.get("len") == -1 and constant == 1:
            found.masked_by_len = True  # j - len + 1 <= 0: j < seq_len
        elif form.get("i", 0) == 0 and not length and constant == 1 - seq_k:
            continue  # j < Sk: always true
        elif terms == KeyRange.causal_form(seq_q, None):
            if found.causal_offset == "Sk":
                raise NoMatch("the causal mask and the window place the query at different positions", op)
            found.causal, found.causal_offset = True, "seq_len"
            found.masked_by_len = True  # j <= i + len - Sq implies j < len for i < Sq
        elif terms == KeyRange.causal_form(seq_q, seq_k):
            if found.causal_offset == "seq_len":
                raise NoMatch("the causal mask and the window place the query at different positions", op)
            found.causal, found.causal_offset = True, "Sk"
        else:
            raise NoMatch(f"the mask keeps keys with {pretty(form)} <= 0, which is neither j < seq_len nor the "
                          f"causal j <= i + seq_len - {seq_q}", op)
    found.steps.append("mask")


def sliding_window(form: dict, seq_q: int, seq_k: int, op: ir.Operation, found: Attention) -> None:
    """``j >= i + seq_len - Sq - W`` (``seq_len`` = Sk without a length read): window_left = W."""
    offset = "seq_len" if "len" in form else "Sk"
    window = KeyRange.window_of(form, seq_q, None if offset == "seq_len" else seq_k)
    if window < 0:
        raise NoMatch(f"the sliding window keeps keys from {-window} after the query position: a window is >= 0", op)
    if found.window_left is not None and found.window_left != window:
        raise NoMatch(f"two sliding windows: {found.window_left} and {window} keys", op)
    if found.causal_offset and found.causal_offset != offset:
        raise NoMatch("the causal mask and the window place the query at different positions", op)
    found.window_left, found.causal_offset = window, offset


def pretty(form: dict) -> str:
    def name(key) -> str:
        return key if isinstance(key, str) else f"%arg{key[1].arg_number}[b + {key[2]}]"

    order = {"j": 0, "i": 1, "len": 2, "1": 4}  # a fixed order: the terms come from sets
    terms = sorted(form.items(), key=lambda item: (order.get(item[0], 3), name(item[0])))
    return " + ".join(f"{c}*{name(k)}" if k != "1" else str(c) for k, c in terms if c) or "0"


#: Where a value read by the mask is evaluated: the linear form of each loop dim of the generic whose body
#: holds it (None: the scores' own generic, dims b, h, i, j).
Frame = list[dict] | None
SCORE_DIMS = [{"b": 1}, {"h": 1}, {"i": 1}, {"j": 1}]


def conjuncts(value: ir.Value, joint: str = "arith.andi", frame: Frame = None) -> list[tuple[ir.Value, Frame]]:
    value, frame = element(value, frame)
    op = produced_by(value, joint)
    if op is None:
        return [(value, frame)]
    return conjuncts(op.operands[0], joint, frame) + conjuncts(op.operands[1], joint, frame)


def always_true(value: ir.Value) -> bool:
    """An i1 constant true, or an input of a generic reading a splat true tensor (SDPA ands its mask with one)."""
    if isinstance(value, ir.BlockArgument) and isinstance(value.owner.owner, (ir.Operation, ir.OpView)) \
            and value.owner.owner.name == "linalg.generic":
        ins, _ = generic_inputs(value.owner.owner.operation)
        value = ins[value.arg_number] if value.arg_number < len(ins) else value
    constant = produced_by(value, "arith.constant")
    if constant is None:
        return False
    attr = constant.attributes["value"]
    if isinstance(attr, ir.DenseIntElementsAttr) and ir.DenseElementsAttr(attr).is_splat:
        attr = ir.DenseElementsAttr(attr).get_splat_value()
    return isinstance(attr, (ir.IntegerAttr, ir.BoolAttr)) and str(attr.type) == "i1" and ir.IntegerAttr(attr).value != 0


def element(value: ir.Value, frame: Frame) -> tuple[ir.Value, Frame]:
    """A block argument of a generic read as the value its input tensor's producer yields at the mapped indices
    (torch-mlir builds masks in generics of their own, from aranges), with that producer's frame."""
    while isinstance(value, ir.BlockArgument) and isinstance(value.owner.owner, (ir.Operation, ir.OpView)) \
            and value.owner.owner.name == "linalg.generic":
        op = value.owner.owner.operation
        ins, _ = generic_inputs(op)
        if value.arg_number >= len(ins):
            return value, frame
        shape = list(ir.ShapedType(ins[value.arg_number].type).shape)
        indices = [dim_form(e, frame) if size != 1 else {"1": 0}  # the only index of a size-1 dim is 0
                   for e, size in zip(maps_of(op)[value.arg_number].results, shape)]
        found = tensor_element(ins[value.arg_number], indices)
        if found is None:
            return value, frame
        value, frame = found
    return value, frame


def dim_form(expr: ir.AffineExpr, frame: Frame) -> dict | None:
    if isinstance(expr, ir.AffineDimExpr):
        return dict((frame or SCORE_DIMS)[expr.position])
    if isinstance(expr, ir.AffineConstantExpr):
        return {"1": expr.value}
    return None


def tensor_element(tensor: ir.Value, indices: list[dict | None]) -> tuple[ir.Value, Frame] | None:
    """(the yielded value, the frame) of ``tensor[indices]`` through reshapes to a parallel generic, else None."""
    if any(i is None for i in indices):
        return None
    op = producer(tensor)
    while op is not None and op.name in ("tensor.expand_shape", "tensor.collapse_shape"):
        groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
        if op.name == "tensor.expand_shape":  # the source index of a group is its result indices, row-major
            sizes = list(ir.RankedTensorType(op.results[0].type).shape)
            merged = []
            for group in groups:
                form: dict = {}
                for d in group:
                    stride = 1
                    for later in group[group.index(d) + 1:]:
                        stride *= sizes[later]
                    for k, c in indices[d].items():
                        form[k] = form.get(k, 0) + c * stride
                merged.append(form)
            indices = merged
        else:  # collapse: only unit dims may join a group (no division of an index)
            sizes = list(ir.RankedTensorType(op.operands[0].type).shape)
            split = []
            for group, form in zip(groups, indices):
                wide = [d for d in group if sizes[d] != 1]
                if len(wide) > 1:
                    return None
                split += [form if d in wide or (not wide and d == group[-1]) else {"1": 0} for d in group]
            indices = split
        op = producer(op.operands[0])
    if op is None:
        return None
    if op.name == "bufferization.to_tensor":
        return op.results[0], [{"read": indices}]
    if op.name != "linalg.generic" or "r" in kinds_of(op) or len(op.results) != 1 \
            or dims(maps_of(op)[-1]) != list(range(len(kinds_of(op)))):
        return None
    return body(op)[1], indices


def inequality(value: ir.Value, mask_op: ir.Operation, frame: Frame = None) -> tuple[dict[str, int], ir.Value | None]:
    """``cmpi`` as a linear form ``f(i, j, len) <= 0``, and the seq_lens memref ``len`` reads."""
    value, frame = element(value, frame)
    cmp = produced_by(value, "arith.cmpi")
    if cmp is None:
        raise NoMatch(f"the mask condition is {describe(value)}, not an integer comparison", mask_op)
    predicate = str(cmp.attributes["predicate"])
    names = {"0": "eq", "1": "ne", "2": "slt", "3": "sle", "4": "sgt", "5": "sge", "6": "ult", "7": "ule", "8": "ugt", "9": "uge"}
    predicate = names.get(predicate.split(":")[0].strip(), predicate)
    lens: list[ir.Value] = []
    lhs, rhs = linear(cmp.operands[0], lens, mask_op, frame), linear(cmp.operands[1], lens, mask_op, frame)
    if predicate.startswith("u") and not (non_negative(lhs) and non_negative(rhs)):
        raise NoMatch(f"the mask compares {pretty(lhs)} and {pretty(rhs)} unsigned ({predicate}): a bound below 0, as "
                      f"early query rows have, wraps around to a large one", mask_op)
    diff = {k: lhs.get(k, 0) - rhs.get(k, 0) for k in set(lhs) | set(rhs)}
    if predicate in ("sgt", "sge", "ugt", "uge"):
        diff = {k: -c for k, c in diff.items()}
    if predicate in ("slt", "ult", "sgt", "ugt"):
        diff["1"] = diff.get("1", 0) + 1  # x < 0 is x + 1 <= 0 for integers
    elif predicate not in ("sle", "ule", "sge", "uge"):
        raise NoMatch(f"the mask compares with {predicate}", mask_op)
    return {k: c for k, c in diff.items() if c}


def non_negative(form: dict) -> bool:
    """An index, a length read, or a constant >= 0: unsigned and signed comparisons agree on them."""
    if len(form) != 1:
        return False
    (key, coefficient), = form.items()
    return coefficient >= 0 if key == "1" else coefficient == 1


def linear(value: ir.Value, lens: list[ir.Value], mask_op: ir.Operation, frame: Frame = None) -> dict[str, int]:
    value, frame = element(value, frame)
    op = producer(value)
    if op is None:
        raise NoMatch("the mask reads a block argument in its condition", mask_op)
    if op.name == "bufferization.to_tensor" and frame and "read" in frame[0]:  # seq_lens[b] as a tensor input
        return length_read(op, frame[0]["read"], lens, mask_op)
    if op.name == "linalg.index":
        dim = ir.IntegerAttr(op.attributes["dim"]).value
        if frame is not None:
            return dict(frame[dim])
        if dim == 2:
            return {"i": 1}
        if dim == KEY_DIM:
            return {"j": 1}
        raise NoMatch(f"the mask depends on dim {dim} of the scores other than through seq_lens", mask_op)
    if op.name == "arith.constant":
        return {"1": ir.IntegerAttr(op.attributes["value"]).value}
    if op.name in ("arith.index_cast", "arith.extsi"):  # exact: a sign extension keeps the value
        return linear(op.operands[0], lens, mask_op, frame)
    if op.name in ("arith.addi", "arith.subi"):
        a, b = linear(op.operands[0], lens, mask_op, frame), linear(op.operands[1], lens, mask_op, frame)
        sign = 1 if op.name == "arith.addi" else -1
        return {k: a.get(k, 0) + sign * b.get(k, 0) for k in set(a) | set(b)}
    if op.name == "arith.muli":
        a, b = linear(op.operands[0], lens, mask_op, frame), linear(op.operands[1], lens, mask_op, frame)
        if set(b) == {"1"} or set(a) == {"1"}:
            factor, form = (b["1"], a) if set(b) == {"1"} else (a["1"], b)
            return {k: c * factor for k, c in form.items()}
        raise NoMatch("the mask condition multiplies two non-constant values", mask_op)
    if op.name == "tensor.extract":
        if frame is not None:
            raise NoMatch("the mask extracts from a tensor inside a generic of its own", mask_op)
        offset = batch_offset(op.operands[1]) if len(op.operands) == 2 else None
        if offset is None:
            raise NoMatch("the mask reads a tensor other than at [b] or [b + 1]", mask_op)
        source = argument_of(op.operands[0])
        if source is None:
            raise NoMatch("the mask reads sequence lengths that are not a function argument", mask_op)
        lens.append(source)
        return {("at", source, offset): 1}
    raise NoMatch(f"the mask condition uses {op.name}", mask_op)


def length_read(op: ir.Operation, indices: list[dict], lens: list[ir.Value], mask_op: ir.Operation) -> dict:
    """``seq_lens[b + c]`` read as an input tensor of the mask's generics (indices: linear forms)."""
    source = argument_of(op.results[0])
    index = {k: c for k, c in indices[0].items() if c} if len(indices) == 1 else None
    if index == {} and source is not None and list(ir.MemRefType(source.type).shape) == [1]:
        index = {"b": 1}  # one sequence: seq_lens[0] is seq_lens[b] (its size-1 dim was read as 0)
    if source is None or index is None or index.get("b") != 1 or set(index) - {"b", "1"}:
        raise NoMatch("the mask reads a tensor other than a function argument at [b] or [b + 1]", mask_op)
    lens.append(source)
    return {("at", source, index.get("1", 0)): 1}


def batch_offset(value: ir.Value) -> int | None:
    """``c`` of the index ``linalg.index 0 + c``, else None."""
    if index_dim(value) == 0:
        return 0
    add = produced_by(value, "arith.addi")
    if add is None:
        return None
    for base, step in (add.operands, reversed(list(add.operands))):
        constant = produced_by(step, "arith.constant")
        inner = batch_offset(base)
        if constant is not None and inner is not None:
            return inner + ir.IntegerAttr(constant.attributes["value"]).value
    return None


def sequence_length(form: dict, op: ir.Operation, found: Attention) -> dict:
    """``form`` with its reads of length tensors folded into one ``len`` term: ``seq_lens[b]``, or
    FlashInfer's ``(kv_indptr[b + 1] - kv_indptr[b] - 1) * block + kv_last_page_len[b]``."""
    atoms = {k: c for k, c in form.items() if isinstance(k, tuple)}
    rest = {k: c for k, c in form.items() if not isinstance(k, tuple)}
    if not atoms:
        return rest
    if len(atoms) == 1:
        (_, lens, offset), coefficient = next(iter(atoms.items()))
        if offset != 0:
            raise NoMatch(f"the mask reads the lengths at [b + {offset}]", op)
        if found.seq_lens is not None and found.seq_lens != lens:
            raise NoMatch("the masks read two different sequence-length tensors", op)
        found.seq_lens = lens
        return {**rest, "len": coefficient}
    ends = [(k, c) for k, c in atoms.items() if k[2] == 1]
    if len(atoms) != 3 or len(ends) != 1:
        raise NoMatch("the mask reads length tensors in a form that is neither seq_lens[b] nor the CSR length "
                      "(kv_indptr[b + 1] - kv_indptr[b] - 1) * block + kv_last_page_len[b]", op)
    (_, indptr, _), pages = ends[0]
    last = [k for k in atoms if k[1] != indptr]
    coefficient = atoms[last[0]] if len(last) == 1 and last[0][2] == 0 else 0
    block = pages // coefficient if coefficient and pages % coefficient == 0 else 0
    if block <= 0 or atoms.get(("at", indptr, 0)) != -pages:
        raise NoMatch("the mask's length is not the CSR length (kv_indptr[b + 1] - kv_indptr[b] - 1) * block + "
                      "kv_last_page_len[b]", op)
    lengths = (indptr, last[0][1], block)
    if found.csr_lengths is not None and found.csr_lengths != lengths:
        raise NoMatch("the masks read two different CSR lengths", op)
    found.csr_lengths = lengths
    return {**rest, "1": rest.get("1", 0) + coefficient * block, "len": coefficient}
