"""rock-raise-attention: recognise attention written in linalg on tensors and replace it with rock.attention.

The way in for payloads of the upstream stack (torch-mlir, lighthouse, IREE-style
linalg). The pass walks back from each ``bufferization.materialize_in_destination``
into a 4-D function argument and recognises, in this order:

1. an optional element cast (``arith.truncf``/``extf`` in a parallel ``linalg.generic``);
2. ``P V``: a contraction of the key dimension (see *contractions*);
3. the softmax over the key dimension: ``linalg.softmax``, or the numerically safe
   form as ``linalg.generic`` ops: max-reduce, subtract and exp, sum-reduce, divide
   (an exp of the scores without the max subtracted is refused: it overflows where
   rock.attention does not);
4. any number of elementwise steps before the softmax: a scale (``arith.mulf``/``divf``
   by a positive constant), a soft-cap ``c * tanh(s / c)`` (after every scale, before
   every mask: ``softcap``), a mask (``arith.select`` of -inf, or ``arith.addf`` of a
   0/-inf tensor) whose condition, read as linear inequalities of ``linalg.index``
   values and the sequence length (``seq_lens[b]``, or FlashInfer's
   ``(kv_indptr[b + 1] - kv_indptr[b] - 1) * block + kv_last_page_len[b]``), is
   ``j < seq_len``, the causal ``j <= i + seq_len - Sq`` and/or the sliding window
   ``j >= i + seq_len - Sq - W`` (``window_left = W``; ``seq_len`` = Sk without lengths);
5. ``Q K^T``: a contraction of the head dim with K transposed (a transposed-K
   map, ``linalg.transpose`` of K, or K^T in a ``linalg.batch_matmul``);
6. GQA on K and V: ``linalg.broadcast`` of a new dim after the heads folded into them
   by ``tensor.collapse_shape`` (torch's ``repeat_interleave``: q head h uses kv
   head h / G, as rock.attention's GQA);
7. the sources: Q a ``bufferization.to_tensor`` of an argument; K and V each one of
   :data:`GATHER_FORMS`: a dense argument, or a page gather through a pointer table
   (a ``linalg.generic`` loading ``table[b, p] + s`` elements with ``llvm.load``,
   laid end to end as [Hkv, Sk, D]), which becomes ``rock.deref`` of the table, or
   a cache pool gathered through a block table or a CSR table (:func:`block_gather`),
   which becomes ``rock.block_table_view``. A new page-table form is one more
   function in :data:`GATHER_FORMS`.

Patterns covered (each with a lit case in tests/lit/passes/rock-raise-attention.mlir,
near-misses in rock-raise-attention-invalid.mlir):

| part | recognised as | becomes |
|---|---|---|
| Q K^T, P V | ``linalg.generic`` contraction (transposed-K map, or ``linalg.transpose`` of K); ``linalg.batch_matmul`` on collapsed ``[B*H, ...]`` views | rock.attention |
| softmax | max, subtract + exp, sum, divide as generics; ``linalg.softmax`` over the key dim | (rock.attention's own) |
| scale | mulf/divf by a positive constant, anywhere before the softmax and the cap | ``scale`` |
| masks | select of -inf or a 0/-inf additive tensor: ``j < seq_len``, causal, window | ``seq_lens``, ``causal``, ``window_left`` |
| soft-cap | ``c * tanh(s / c)`` (or ``tanh(s * (1/c))``) in one generic | ``softcap`` |
| ALiBi | ``addf`` of a bias tensor ``slopes[h] * sitofp(j + r)``, ``r`` constant along a row (softmax ignores it), after scale and cap | ``alibi_slopes`` |
| GQA | ``linalg.broadcast`` of dim 2 folded into the heads (repeat_interleave) | ``num_heads_kv`` |
| dense K/V | ``bufferization.to_tensor`` of an argument | the argument |
| pointer pages | ``llvm.load`` of ``table[b, p] + s * bytes`` | ``rock.deref`` |
| vLLM block table | ``pool[id, x, y, d]``, ``id = table[b, m]`` (generic input or ``tensor.extract``), reshaped to [B, Hkv, Sk, D]; nhd or hnd by which pool dim joins the slots | ``rock.block_table_view`` (blocks) |
| FlashInfer CSR | ``id = kv_indices[min(kv_indptr[b] + m, nnz - 1)]``, masked at the CSR length | ``rock.block_table_view`` (csr), no seq_lens |

Not read (a remark with ``explain=true``): linalg on memrefs (a bufferized payload:
raise before bufferizing), functions that take and return tensors (rock.attention
writes a memref argument), attention sinks, masks other than
the three bounds, K and V gathered in different forms.

Every ``linalg.generic`` of the chain is read only with the iterator types and indexing maps its
part has (all parallel and identity maps for the elementwise steps, one reduction over the key dim
for the softmax's max and sum from -inf, or the lowest finite value, and 0): a reduction iterator or a
permuted map in an elementwise step computes something else, and is a remark. Masks compare signed
(unsigned only between an index, a length read and a constant >= 0: a negative bound wraps around).

*Contractions*: ``linalg.generic`` whose body adds the product of its (possibly
``arith.extf``-ed) inputs to the output over one reduction dim, with plain-dim
maps ``(b, h, m, k) x (b, h, n, k) -> (b, h, m, n)`` (or ``(b, h, k, n)``);
``linalg.batch_matmul`` on ``[B*H, ...]`` views made by ``tensor.collapse_shape``
and read back by ``tensor.expand_shape`` (torch-mlir's lowering of ``bmm``).
Accumulators start from a zero ``linalg.fill``.

Tensors or memrefs: the pass raises on tensors, before any bufferization. Use-def
chains of tensors are the pattern itself; after bufferization the same chain is
spread over memref writes and aliasing, which would have to be re-derived. The
memrefs rock.attention takes are those at the tensor boundary
(``bufferization.to_tensor`` sources, the ``materialize_in_destination``
destination), so nothing is left to bufferize: the tensor ops become dead and are
erased, and a function left with nothing but the attention is marked ``rock.kernel``.

What is not recognised stays untouched. With ``explain=true`` the pass prints a
remark at the op where matching stopped, saying which part failed (the bindings
cannot emit remarks, so it is written as ``file:line:col: remark: ...`` on stderr).
Semantics: a query row that sees no key is 0/0 (NaN) in the payload and zeros in
rock.attention; everywhere else both compute softmax(scale * Q K^T + mask) V.

```mlir
%qt = bufferization.to_tensor %q restrict : memref<2x8x1x128xf16> to tensor<...>
...  // Q K^T, scale, masks, softmax, P V as linalg.generic
bufferization.materialize_in_destination %o in restrict writable %out : (...) -> ()
// becomes
"rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, causal = true, scale = ...}
```
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import mlir.dialects.linalg  # noqa: F401 - linalg ops come back as their OpViews (inputs, outputs)
import mlir.ir as ir

from pagedir.diagnostics import file_position
from pagedir.dialect import rock
from pagedir.dialect.rock import OP_DEFS_BY_NAME
from pagedir.passes.base import Pass

KEY_DIM = 3


class NoMatch(Exception):
    """The pattern failed here: ``op`` is where, the message says what."""

    def __init__(self, message: str, op: ir.Operation | None = None):
        super().__init__(message)
        self.op = op


@dataclasses.dataclass(frozen=True)
class RaiseOptions:
    #: Print a remark saying which part of the pattern failed where nothing is raised.
    explain: bool = False


@dataclass
class Source:
    """Where K or V comes from: the argument rock.attention reads, paged or dense."""

    memref: ir.Value  # dense K/V, the pointer table, or the cache pool
    page_elements: int | None = None  # pointer pages; None: dense [B, Hkv, Sk, D] or a pool
    layout: str | None = None  # a cache pool read through a block table ("nhd" or "hnd")
    table: ir.Value | None = None  # the block table, or kv_indices (csr)
    indptr: ir.Value | None = None  # csr: kv_indptr
    max_blocks: int = 0


@dataclass
class Attention:
    q: ir.Value = None
    k: Source = None
    v: Source = None
    heads_kv: int = 0
    scale: float = 1.0
    causal: bool = False
    seq_lens: ir.Value | None = None
    masked_by_len: bool = False
    causal_offset: str = ""  # "seq_len" or "Sk": what the causal bound adds to i - Sq
    csr_lengths: tuple[ir.Value, ir.Value, int] | None = None  # masks by (kv_indptr, kv_last_page_len, block size)
    window_left: int | None = None
    softcap: float | None = None
    alibi_slopes: ir.Value | None = None
    steps: list[str] = field(default_factory=list)


class RaiseAttentionPass(Pass):
    """Options: ``explain`` (remarks for payloads not raised). Preconditions: none; linalg on
    tensors with a memref boundary is raised, anything else is left as it is."""

    argument = "rock-raise-attention"
    summary = "Recognise linalg attention payloads and replace them with rock.attention"
    Options = RaiseOptions

    def run(self, module: ir.Operation) -> bool:
        for sink in sinks(module):
            try:
                found = match_attention(sink)
            except NoMatch as failure:
                if self.options.explain:
                    remark(failure.op or sink, f"not raised to rock.attention: {failure}")
                continue
            replace(sink, found)
        if self.options.explain:
            for op, reason in unraisable_payloads(module):
                remark(op, f"not raised to rock.attention: {reason}")
        return True


def unraisable_payloads(module: ir.Operation) -> list[tuple[ir.Operation, str]]:
    """Functions computing in linalg with no tensor result written into a memref argument, and why the
    raise does not read them: linalg on memrefs (bufferized), or tensors in and out (torch style)."""
    found: list[tuple[ir.Operation, str]] = []
    for func in module.regions[0].blocks[0].operations:
        func = func.operation
        if func.name != "func.func" or not len(func.regions[0].blocks):
            continue
        ops = [op for op in walk_ops(func) if op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index")]
        if not ops or any(op.name == "bufferization.materialize_in_destination" for op in walk_ops(func)):
            continue
        on_memrefs = next((op for op in ops if any(isinstance(v.type, ir.MemRefType) for v in op.operands)), None)
        returned = [op for op in func.regions[0].blocks[0].operations if op.name == "func.return"]
        if on_memrefs is not None:
            found.append((on_memrefs, f"{on_memrefs.name} works on memrefs: the payload is bufferized, and the raise "
                                      f"reads attention from the use-def chains of tensors; run rock-raise-attention "
                                      f"before bufferization (rock-kernel-pipeline runs it first)"))
        elif returned and any(isinstance(v.type, ir.RankedTensorType) for v in returned[0].operation.operands):
            found.append((returned[0].operation,
                          "the function takes and returns tensors: rock.attention reads and writes memref arguments; "
                          "take q, k, v and out as memrefs (bufferization.to_tensor) and write the result into out "
                          "with bufferization.materialize_in_destination"))
    return found


def walk_ops(op: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(inner: ir.Operation) -> ir.WalkResult:
        found.append(inner)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


def sinks(module: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "bufferization.materialize_in_destination":
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


def remark(op: ir.Operation, message: str) -> None:
    file, line, col = file_position(op.location)
    where = f"{file}:{line}:{col}" if file else "<unknown>"
    print(f"{where}: remark: {message}", file=sys.stderr)


# ----------------------------------------------------------------------------
# Reading the IR


def producer(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def produced_by(value: ir.Value, name: str) -> ir.Operation | None:
    op = producer(value)
    return op if op is not None and op.name == name else None


def maps_of(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def kinds_of(op: ir.Operation) -> list[str]:
    return ["r" if "reduction" in str(a) else "p" for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def dims(amap: ir.AffineMap) -> list[int] | None:
    """The dims of a map of plain dimensions, else None."""
    if not all(isinstance(e, ir.AffineDimExpr) for e in amap.results):
        return None
    return [e.position for e in amap.results]


def body(op: ir.Operation) -> tuple[list[ir.Value], ir.Value, list[ir.Operation]]:
    """(block arguments, the single yielded value, the body's ops)."""
    block = op.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    return list(block.arguments), ops[-1].operands[0], ops


def through_extf(value: ir.Value) -> ir.Value:
    """The value an ``arith.extf`` widens (exact; a truncf is not looked through: it rounds)."""
    op = produced_by(value, "arith.extf")
    return op.operands[0] if op is not None else value


IDENTITY = [0, 1, 2, 3]


def expect_loops(op: ir.Operation, what: str, kinds: str, maps: list[list[int]]) -> None:
    """``op`` has one result, iterates as ``kinds`` (``p``/``r`` per loop) and indexes its operands
    through exactly ``maps``: the pattern reads the body as one value per element of the result, so
    a reduction loop (the result is the last step's) or a permuted map (another element's inputs)
    changes what it computes."""
    found_kinds, found_maps = "".join(kinds_of(op)), maps_of(op)
    names = {"p": "parallel", "r": "reduction"}
    if len(op.results) != 1:
        raise NoMatch(f"{what} has {len(op.results)} results, expected 1", op)
    if found_kinds != kinds:
        raise NoMatch(f"{what} iterates as [{', '.join(names[k] for k in found_kinds)}], expected "
                      f"[{', '.join(names[k] for k in kinds)}]", op)
    if [dims(m) for m in found_maps] != maps:
        shown = ", ".join(f"({', '.join(str(e) for e in m.results)})" for m in found_maps)
        expected = ", ".join(f"({', '.join(f'd{d}' for d in m)})" for m in maps)
        raise NoMatch(f"{what} indexes its operands as [{shown}], expected [{expected}]", op)


def float_constant(value: ir.Value) -> float | None:
    op = produced_by(value, "arith.constant")
    if op is None:
        return None
    attr = op.attributes["value"]
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def generic_inputs(op: ir.Operation) -> tuple[list[ir.Value], list[ir.Value]]:
    view = op.opview
    return list(view.inputs), list(view.outputs)


def is_zero_fill(value: ir.Value) -> bool:
    fill = produced_by(value, "linalg.fill")
    return fill is not None and float_constant(fill.operands[0]) == 0.0


# ----------------------------------------------------------------------------
# The pattern, from the output back to Q, K and V


def match_attention(sink: ir.Operation) -> Attention:
    found = Attention()
    out = sink.operands[1]
    if not isinstance(out.type, ir.MemRefType) or out.type.rank != 4:
        raise NoMatch(f"the destination is {out.type}, not a 4-d memref [B, Hq, Sq, D]", sink)
    value = strip_cast(sink.operands[0])
    probs, v = contraction(value, transposed=False, what="P V")
    scores = softmax(probs)
    scores = score_steps(scores, found)
    q, k = contraction(scores, transposed=True, what="Q K^T")
    found.q = tensor_argument(q, "Q")
    k_base, k_group = repeated_heads(k, "K")
    v_base, v_group = repeated_heads(v, "V")
    if k_group != v_group:
        raise NoMatch(f"K is repeated {k_group} times per head but V {v_group} times", producer(v) or sink)
    found.k, found.v = kv_source(k_base, "K"), kv_source(v_base, "V")
    heads_q = ir.MemRefType(found.q.type).shape[1]
    found.heads_kv = heads_q // k_group
    check_shapes(found, out, sink)
    return found


def strip_cast(value: ir.Value) -> ir.Value:
    op = produced_by(value, "linalg.generic")
    if op is None:
        return value
    ins, _ = generic_inputs(op)
    args, yielded, ops = body(op)
    if len(ins) == 1 and len(ops) == 2 and ops[0].name in ("arith.truncf", "arith.extf") and ops[0].operands[0] == args[0] \
            and yielded == ops[0].results[0]:
        expect_loops(op, "the element cast of the output", "pppp", [IDENTITY, IDENTITY])
        return ins[0]
    return value


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


def describe(value: ir.Value) -> str:
    op = producer(value)
    return op.name if op is not None else f"a block argument of type {value.type}"


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


# ----------------------------------------------------------------------------
# Scale and masks


NEG_INF = float("-inf")


def score_steps(value: ir.Value, found: Attention) -> ir.Value:
    """Walk back over scale and mask generics to the Q K^T contraction, recording them in ``found``."""
    while True:
        op = produced_by(value, "linalg.generic")
        if op is None or len(kinds_of(op)) != 4:  # Q K^T has 5 loops
            return value
        ins, _ = generic_inputs(op)
        expect_loops(op, "the elementwise step on the scores", "pppp", [IDENTITY] * (len(ins) + 1))
        args, yielded, _ = body(op)
        step = producer(yielded)
        if step is None:
            return value
        if len(ins) == 1 and (cap := softcap_of(step, args[0])) is not None:
            value = softcap_step(op, cap, found)
        elif step.name in ("arith.mulf", "arith.divf") and len(ins) == 1:
            if any(produced_by(v, "math.tanh") is not None for v in step.operands):
                raise NoMatch("the scores are capped as c * tanh(s * k) with k != 1 / c: rock.attention's soft-cap is "
                              "c * tanh(s / c)", op)
            value = scale_step(op, step, args, found)
        elif step.name == "arith.select" and len(ins) == 1:
            if step.operands[1] != args[0] or float_constant(step.operands[2]) != NEG_INF:
                raise NoMatch("the mask selects something else than the score or -inf", op)
            read_mask(op, step.operands[0], found)
            value = ins[0]
        elif step.name == "arith.addf" and len(ins) == 2:
            value = additive_mask(op, ins, args, step, found)
        else:
            return value


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
        if by is not None and (divided.name == "arith.divf" and by == cap or
                               divided.name == "arith.mulf" and abs(by * cap - 1.0) <= 1e-6):
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


def read_mask(op: ir.Operation, condition: ir.Value, found: Attention) -> None:
    """Each conjunct of ``condition`` is ``j < seq_len``, ``j <= i + seq_len - Sq`` or ``j >= i + seq_len - Sq - W``."""
    if "softcap" in found.steps:
        raise NoMatch("the scores are masked before the soft-cap: tanh turns -inf into -cap, a key that still counts", op)
    scores_shape = list(ir.RankedTensorType(op.results[0].type).shape)
    seq_q, seq_k = scores_shape[2], scores_shape[3]
    for conjunct in conjuncts(condition):
        form = sequence_length(inequality(conjunct, op), op, found)
        length = "len" if "len" in form else None
        constant = form.get("1", 0)
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
        elif form.get("i") == -1 and length and form.get("len") == -1 and constant == seq_q:
            if found.causal_offset == "Sk":
                raise NoMatch("the causal mask and the window place the query at different positions", op)
            found.causal, found.causal_offset = True, "seq_len"
            found.masked_by_len = True  # j <= i + len - Sq implies j < len for i < Sq
        elif form.get("i") == -1 and not length and constant == seq_q - seq_k:
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
    window = -form.get("1", 0) - seq_q if offset == "seq_len" else seq_k - seq_q - form.get("1", 0)
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


def conjuncts(value: ir.Value) -> list[ir.Value]:
    op = produced_by(value, "arith.andi")
    return conjuncts(op.operands[0]) + conjuncts(op.operands[1]) if op is not None else [value]


def inequality(value: ir.Value, mask_op: ir.Operation) -> tuple[dict[str, int], ir.Value | None]:
    """``cmpi`` as a linear form ``f(i, j, len) <= 0``, and the seq_lens memref ``len`` reads."""
    cmp = produced_by(value, "arith.cmpi")
    if cmp is None:
        raise NoMatch(f"the mask condition is {describe(value)}, not an integer comparison", mask_op)
    predicate = str(cmp.attributes["predicate"])
    names = {"0": "eq", "1": "ne", "2": "slt", "3": "sle", "4": "sgt", "5": "sge", "6": "ult", "7": "ule", "8": "ugt", "9": "uge"}
    predicate = names.get(predicate.split(":")[0].strip(), predicate)
    lens: list[ir.Value] = []
    lhs, rhs = linear(cmp.operands[0], lens, mask_op), linear(cmp.operands[1], lens, mask_op)
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


def linear(value: ir.Value, lens: list[ir.Value], mask_op: ir.Operation) -> dict[str, int]:
    op = producer(value)
    if op is None:
        raise NoMatch("the mask reads a block argument in its condition", mask_op)
    if op.name == "linalg.index":
        dim = ir.IntegerAttr(op.attributes["dim"]).value
        if dim == 2:
            return {"i": 1}
        if dim == KEY_DIM:
            return {"j": 1}
        raise NoMatch(f"the mask depends on dim {dim} of the scores other than through seq_lens", mask_op)
    if op.name == "arith.constant":
        return {"1": ir.IntegerAttr(op.attributes["value"]).value}
    if op.name == "arith.index_cast":
        return linear(op.operands[0], lens, mask_op)
    if op.name in ("arith.addi", "arith.subi"):
        a, b = linear(op.operands[0], lens, mask_op), linear(op.operands[1], lens, mask_op)
        sign = 1 if op.name == "arith.addi" else -1
        return {k: a.get(k, 0) + sign * b.get(k, 0) for k in set(a) | set(b)}
    if op.name == "arith.muli":
        a, b = linear(op.operands[0], lens, mask_op), linear(op.operands[1], lens, mask_op)
        if set(b) == {"1"} or set(a) == {"1"}:
            factor, form = (b["1"], a) if set(b) == {"1"} else (a["1"], b)
            return {k: c * factor for k, c in form.items()}
        raise NoMatch("the mask condition multiplies two non-constant values", mask_op)
    if op.name == "tensor.extract":
        offset = batch_offset(op.operands[1]) if len(op.operands) == 2 else None
        if offset is None:
            raise NoMatch("the mask reads a tensor other than at [b] or [b + 1]", mask_op)
        source = argument_of(op.operands[0])
        if source is None:
            raise NoMatch("the mask reads sequence lengths that are not a function argument", mask_op)
        lens.append(source)
        return {("at", source, offset): 1}
    raise NoMatch(f"the mask condition uses {op.name}", mask_op)


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


# ----------------------------------------------------------------------------
# GQA and the sources of Q, K, V


def repeated_heads(value: ir.Value, what: str) -> tuple[ir.Value, int]:
    """(the [B, Hkv, Sk, D] tensor, G) of ``collapse(broadcast(x, dims = [2]), [[0], [1, 2], [3], [4]])``; G = 1 without
    (another collapse is not GQA: an hnd block gather folds its slots and tokens with one)."""
    collapse = produced_by(value, "tensor.collapse_shape")
    broadcast = produced_by(collapse.operands[0], "linalg.broadcast") if collapse is not None else None
    if broadcast is None:
        return value, 1
    shape = list(ir.RankedTensorType(broadcast.results[0].type).shape)
    reassociation = str(collapse.attributes["reassociation"]).replace(" ", "")
    added = list(ir.DenseI64ArrayAttr(broadcast.attributes["dimensions"]))
    if added != [2] or reassociation != "[[0],[1,2],[3],[4]]":
        raise NoMatch(f"{what} heads are repeated by a broadcast of dims {added} folded as {reassociation}: query head h "
                      f"would use kv head h % {shape[2]}, not h / {shape[2]} as in repeat_interleave (rock.attention's "
                      f"GQA)", broadcast)
    return broadcast.operands[0], shape[2]


def tensor_argument(value: ir.Value, what: str) -> ir.Value:
    op = produced_by(value, "bufferization.to_tensor")
    if op is None or not isinstance(op.operands[0], ir.BlockArgument):
        raise NoMatch(f"{what} is {describe(value)}, not a function argument (bufferization.to_tensor)", producer(value))
    return op.operands[0]


def dense_source(value: ir.Value) -> Source | None:
    op = produced_by(value, "bufferization.to_tensor")
    return Source(op.operands[0]) if op is not None and isinstance(op.operands[0], ir.BlockArgument) else None


def pointer_gather(value: ir.Value) -> Source | None:
    """expand(collapse(pages)) with ``pages[b, p, s] = load(inttoptr(table[b, p, 0] + s * bytes))``."""
    expand = produced_by(value, "tensor.expand_shape")
    collapse = produced_by(expand.operands[0], "tensor.collapse_shape") if expand is not None else None
    gather = produced_by(collapse.operands[0], "linalg.generic") if collapse is not None else None
    if gather is None or generic_inputs(gather)[0] or kinds_of(gather) != ["p", "p", "p"] \
            or [dims(m) for m in maps_of(gather)] != [[0, 1, 2]] or len(gather.results) != 1:
        return None
    _, yielded, _ = body(gather)
    load = produced_by(yielded, "llvm.load")
    pointer = produced_by(load.operands[0], "llvm.inttoptr") if load is not None else None
    address = produced_by(pointer.operands[0], "arith.addi") if pointer is not None else None
    if address is None:
        return None
    page_elements = ir.RankedTensorType(gather.results[0].type).shape[2]
    element_bytes = ir.RankedTensorType(gather.results[0].type).element_type.width // 8
    for base, offset in (address.operands, reversed(list(address.operands))):
        extract = produced_by(base, "tensor.extract")
        table = produced_by(extract.operands[0], "bufferization.to_tensor") if extract is not None else None
        if table is None or not isinstance(table.operands[0], ir.BlockArgument):
            continue
        index_dims = [index_dim(v) for v in list(extract.operands)[1:]]
        page = produced_by(extract.operands[3], "arith.constant") if len(extract.operands) == 4 else None
        if index_dims[:2] != [0, 1] or page is None or ir.IntegerAttr(page.attributes["value"]).value != 0 \
                or offset_of(offset) != (2, element_bytes):
            return None
        return Source(table.operands[0], page_elements)
    return None


def index_dim(value: ir.Value) -> int | None:
    op = produced_by(value, "linalg.index")
    return ir.IntegerAttr(op.attributes["dim"]).value if op is not None else None


def offset_of(value: ir.Value) -> tuple[int | None, int | None]:
    """(dim, bytes) of ``index_cast(linalg.index dim) * bytes``."""
    mul = produced_by(value, "arith.muli")
    if mul is None:
        return None, None
    for index, size in (mul.operands, reversed(list(mul.operands))):
        cast = produced_by(index, "arith.index_cast")
        constant = produced_by(size, "arith.constant")
        if cast is not None and constant is not None:
            return index_dim(cast.operands[0]), ir.IntegerAttr(constant.attributes["value"]).value
    return None, None


RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape", "linalg.transpose")


def block_gather(value: ir.Value) -> Source | None:
    """A cache pool read through a block table or a CSR table, reshaped to [B, Hkv, Sk, D].

    The gather is a parallel ``linalg.generic`` over ``[B, max_blocks, x, y, D]`` yielding
    ``pool[id, x, y, d]`` (``tensor.extract``), ``id`` being ``table[b, m]`` (an input of the
    generic, as torch-mlir lowers ``pool[block_table]``, or a ``tensor.extract``) or
    ``kv_indices[kv_indptr[b] + m]`` (csr; the slot may be clamped to the table with ``minsi``).
    Reshapes and transposes then have to lay the dims out as ``[b, head, (m, token), d]``: the
    pool's token dim decides the layout (dim 1: nhd, dim 2: hnd)."""
    chain: list[ir.Operation] = []
    op = producer(value)
    while op is not None and op.name in RESHAPES:
        chain.append(op)
        op = producer(op.operands[0])
    if not chain or op is None or op.name != "linalg.generic" or kinds_of(op) != ["p"] * 5 \
            or dims(maps_of(op)[-1]) != list(range(5)) or len(op.results) != 1:
        return None
    found = gathered_pool(op)
    if found is None:
        return None
    source, axes = found
    groups = [[axis] for axis in axes]  # each dim of a tensor of the chain: the gather axes it folds, outer first
    extents = dict(zip(axes, ir.RankedTensorType(op.results[0].type).shape))
    for reshape in reversed(chain):
        groups = reshaped_groups(reshape, groups, extents)
        if groups is None:
            return None
    token = {"x": "nhd", "y": "hnd"}
    if len(groups) != 4 or groups[0] != ["b"] or groups[3] != ["d"] or len(groups[2]) != 2 or groups[2][0] != "m" \
            or groups[2][1] not in token or groups[1] != [{"x": "y", "y": "x"}[groups[2][1]]]:
        names = {"b": "b", "m": "slot", "x": "pool dim 1", "y": "pool dim 2", "d": "d"}
        laid = ", ".join("(" * (len(g) > 1) + ", ".join(names[a] for a in g) + ")" * (len(g) > 1) for g in groups)
        raise NoMatch(f"the gather of cache pool %arg{source.memref.arg_number} is reshaped to [{laid}]; "
                      f"[B, Hkv, Sk, D] takes [b, head, (slot, token), d] (a head's tokens block by block)", chain[0])
    source.layout = token[groups[2][1]]
    return source


def gathered_pool(op: ir.Operation) -> tuple[Source, list[str]] | None:
    """(the Source, the axis each dim of the gather's output is: b, m, x, y or d) of ``pool[id, x, y, d]``."""
    ins, _ = generic_inputs(op)
    args, yielded, _ = body(op)
    element = produced_by(yielded, "tensor.extract")
    pool = argument_of(element.operands[0]) if element is not None else None
    if pool is None or ir.MemRefType(pool.type).rank != 4 or len(element.operands) != 5:
        return None
    pool_dims = [index_dim(v) for v in list(element.operands)[2:]]
    block_id = cast_source(element.operands[1])
    batch_dim = slot_dim = None
    source = Source(pool)
    if block_id in args[: len(ins)]:  # table[b, m] as an input of the generic
        table = argument_of(ins[args.index(block_id)])
        reads = dims(maps_of(op)[args.index(block_id)])
        if table is None or reads is None or len(reads) != 2:
            return None
        batch_dim, slot_dim = reads
        source.table = table
    elif (extract := produced_by(block_id, "tensor.extract")) is not None:
        table = argument_of(extract.operands[0])
        if table is None:
            return None
        if ir.MemRefType(table.type).rank == 2:  # table[b, m]
            batch_dim, slot_dim = (index_dim(v) for v in list(extract.operands)[1:])
            source.table = table
        else:  # kv_indices[kv_indptr[b] + m]
            slot = csr_slot(extract.operands[1], ir.MemRefType(table.type).shape[0])
            if slot is None:
                return None
            source.indptr, batch_dim, slot_dim = slot
            source.table = table
    names = {batch_dim: "b", slot_dim: "m", pool_dims[0]: "x", pool_dims[1]: "y", pool_dims[2]: "d"}
    if None in names or sorted(names) != list(range(5)):
        return None
    axes = [names[d] for d in range(5)]
    shape = list(ir.RankedTensorType(op.results[0].type).shape)
    pool_shape = ir.MemRefType(pool.type).shape
    if [shape[axes.index(a)] for a in "xyd"] != list(pool_shape[1:]):
        return None  # part of a block: the view reads whole blocks
    for table in (source.table, source.indptr):
        if table is not None and str(ir.MemRefType(table.type).element_type) != "i32":
            raise NoMatch(f"the gather reads block ids from {table.type}: rock.block_table_view takes i32 tables "
                          f"(vLLM's block table, FlashInfer's kv_indptr and kv_indices)", op)
    batch, source.max_blocks = shape[axes.index("b")], shape[axes.index("m")]
    table_shape = list(ir.MemRefType(source.table.type).shape)
    if source.indptr is None and table_shape != [batch, source.max_blocks]:
        return None
    if source.indptr is not None and list(ir.MemRefType(source.indptr.type).shape) != [batch + 1]:
        return None
    return source, axes


def argument_of(value: ir.Value) -> ir.Value | None:
    """The function argument a ``bufferization.to_tensor`` reads."""
    op = produced_by(value, "bufferization.to_tensor")
    return op.operands[0] if op is not None and isinstance(op.operands[0], ir.BlockArgument) else None


def cast_source(value: ir.Value) -> ir.Value:
    op = produced_by(value, "arith.index_cast")
    return op.operands[0] if op is not None else value


def csr_slot(value: ir.Value, nnz: int) -> tuple[ir.Value, int, int] | None:
    """(kv_indptr, batch dim, slot dim) of ``kv_indptr[b] + m``, optionally ``min(..., c >= nnz - 1)``."""
    clamp = producer(value)
    if clamp is not None and clamp.name in ("arith.minsi", "arith.minui"):
        for slot, bound in (clamp.operands, reversed(list(clamp.operands))):
            constant = produced_by(bound, "arith.constant")
            if constant is not None and ir.IntegerAttr(constant.attributes["value"]).value >= nnz - 1:
                value = slot
                break
        else:
            return None
    add = produced_by(value, "arith.addi")
    if add is None:
        return None
    for start, offset in (add.operands, reversed(list(add.operands))):
        extract = produced_by(cast_source(start), "tensor.extract")
        indptr = argument_of(extract.operands[0]) if extract is not None else None
        if indptr is not None and len(extract.operands) == 2 and index_dim(offset) is not None:
            batch = index_dim(extract.operands[1])
            return (indptr, batch, index_dim(offset)) if batch is not None else None
    return None


def reshaped_groups(op: ir.Operation, groups: list[list[str]], extents: dict[str, int]) -> list[list[str]] | None:
    """The dims of ``op``'s result as groups of gather axes, from those of its operand (None: a reshape
    that splits an axis)."""
    if op.name == "linalg.transpose":
        permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        return [groups[p] for p in permutation]
    reassociation = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
    if op.name == "tensor.collapse_shape":
        return [[axis for d in group for axis in groups[d]] for group in reassociation]
    sizes = list(ir.RankedTensorType(op.results[0].type).shape)  # expand: each result dim takes whole axes
    result: list[list[str]] = []
    for source_dim, group in enumerate(reassociation):
        axes = list(groups[source_dim])
        for d in group:
            taken, size = [], 1
            while axes and size < sizes[d]:
                taken.append(axes.pop(0))
                size *= extents[taken[-1]]
            if not taken or size != sizes[d]:
                return None
            result.append(taken)
        if axes:
            return None
    return result


#: How K/V can reach the attention: each form returns its Source or None. A new page-table
#: form is one more function here.
GATHER_FORMS: tuple[Callable[[ir.Value], Source | None], ...] = (dense_source, pointer_gather, block_gather)


def kv_source(value: ir.Value, what: str) -> Source:
    for form in GATHER_FORMS:
        if (found := form(value)) is not None:
            return found
    raise NoMatch(f"{what} is {describe(value)}: neither a function argument, a page gather through a pointer table, "
                  f"nor a cache pool gathered through a block table or a CSR table", producer(value))


def check_shapes(found: Attention, out: ir.Value, sink: ir.Operation) -> None:
    q_type = ir.MemRefType(found.q.type)
    if list(q_type.shape) != list(out.type.shape) or q_type.element_type != out.type.element_type:
        raise NoMatch(f"the output {out.type} differs from the query {q_type}", sink)
    for source, what in ((found.k, "K"), (found.v, "V")):
        memref = ir.MemRefType(source.memref.type)
        if source.page_elements is None and memref.element_type != q_type.element_type:
            raise NoMatch(f"{what} has element type {memref.element_type}, the query {q_type.element_type}", sink)
    if found.causal is False and found.masked_by_len is False:
        found.seq_lens = None
    if found.causal_offset == "Sk" and (found.seq_lens is not None or found.csr_lengths is not None):
        raise NoMatch("the causal mask (or window) is offset by Sk - Sq while keys are masked by sequence lengths: "
                      "rock.attention's query position is i + seq_len - Sq", sink)
    if found.causal_offset == "seq_len" and found.seq_lens is None and found.csr_lengths is None:
        raise NoMatch("the window places the query at i + seq_len - Sq but no key is masked past seq_len", sink)
    if found.seq_lens is not None and not found.masked_by_len:
        raise NoMatch("the masks read seq_lens but do not mask keys past it", sink)
    check_tables(found, sink)


def check_tables(found: Attention, sink: ir.Operation) -> None:
    """K and V read through one kind of table; a CSR gather masks keys past the CSR length of its own
    tables (rock.attention takes the lengths from kv_indptr and kv_last_page_len)."""
    k, v = found.k, found.v
    if (k.layout is None) != (v.layout is None) or (k.indptr is None) != (v.indptr is None):
        raise NoMatch("K and V are gathered in different forms", sink)
    if k.layout is not None and k.max_blocks != v.max_blocks:
        raise NoMatch(f"K is gathered through {k.max_blocks} block slots per sequence, V through {v.max_blocks}", sink)
    if found.csr_lengths is not None and k.indptr is None:
        raise NoMatch("the masks read a CSR length but K and V are not gathered through a CSR table", sink)
    if k.indptr is None:
        return
    if k.indptr != v.indptr or k.table != v.table:
        raise NoMatch("K and V are gathered through different CSR tables: rock.attention reads one", sink)
    if found.seq_lens is not None:
        raise NoMatch("the masks read seq_lens while K and V are gathered through a CSR table, whose lengths "
                      "rock.attention uses", sink)
    pool = ir.MemRefType(k.memref.type).shape
    block = pool[1] if k.layout == "nhd" else pool[2]
    if found.csr_lengths is None or not found.masked_by_len or found.causal_offset == "Sk":
        raise NoMatch("the CSR gather reads keys past each sequence's length (its last slots belong to other "
                      "sequences) but the masks do not stop at (kv_indptr[b + 1] - kv_indptr[b] - 1) * "
                      f"{block} + kv_last_page_len[b]", sink)
    indptr, last, masked_block = found.csr_lengths
    if str(ir.MemRefType(last.type).element_type) != "i32":
        raise NoMatch(f"kv_last_page_len is {last.type}: rock.block_table_view takes i32", sink)
    if indptr != k.indptr or masked_block != block:
        raise NoMatch(f"the mask's CSR length counts {masked_block}-token pages of %arg{indptr.arg_number}, "
                      f"the gather {block}-token blocks of %arg{k.indptr.arg_number}", sink)


# ----------------------------------------------------------------------------
# Replacing


def replace(sink: ir.Operation, found: Attention) -> None:
    q_type = ir.MemRefType(found.q.type)
    element = q_type.element_type
    batch, heads_q = q_type.shape[0], q_type.shape[1]
    with ir.InsertionPoint(sink), sink.location:
        kv = []
        for source in (found.k, found.v):
            if source.layout is not None:
                kv.append(block_table_view(source, batch, found.csr_lengths))
                continue
            if source.page_elements is None:
                kv.append(source.memref)
                continue
            table = ir.MemRefType(source.memref.type)
            pages = ir.MemRefType.get([batch, table.shape[1], source.page_elements], element)
            kv.append(rock.deref(pages, source.memref))
        values = {"q": found.q, "k": kv[0], "v": kv[1], "seq_lens": found.seq_lens, "alibi_slopes": found.alibi_slopes,
                  "out": sink.operands[1]}
        operands = [values.get(decl.name) for decl in OP_DEFS_BY_NAME["rock.attention"].operands]
        rock.attention(*operands, num_heads_q=heads_q, num_heads_kv=found.heads_kv, causal=found.causal,
                       scale=found.scale, window_left=found.window_left, softcap=found.softcap)
    func = sink.parent
    while func.name != "func.func":
        func = func.parent
    sink.erase()
    erase_dead(func)
    leftover = [op.name for op in func.regions[0].blocks[0].operations
                if op.name not in ("rock.attention", "rock.deref", "rock.block_table_view", "func.return", "arith.constant")]
    if not leftover:
        func.attributes["rock.kernel"] = ir.UnitAttr.get()


def block_table_view(source: Source, batch: int, csr_lengths: tuple | None) -> ir.Value:
    pool = ir.MemRefType(source.memref.type)
    _, x, y, head_dim = pool.shape
    block, heads = (x, y) if source.layout == "nhd" else (y, x)
    pages = ir.MemRefType.get([batch, heads * source.max_blocks, block * head_dim], pool.element_type)
    last = csr_lengths[1] if source.indptr is not None else None
    return rock.block_table_view(pages, source.memref, source.table, source.indptr, last, layout=source.layout)


#: Ops without side effects: dead once the attention no longer reads them.
PURE_DIALECTS = ("linalg.", "tensor.", "arith.", "math.", "bufferization.to_tensor")


def erase_dead(func: ir.Operation) -> None:
    changed = True
    while changed:
        changed = False
        for op in reversed(list(func.regions[0].blocks[0].operations)):
            operation = op.operation
            if operation.name.startswith(PURE_DIALECTS) and all(not list(r.uses) for r in operation.results):
                operation.erase()
                changed = True
