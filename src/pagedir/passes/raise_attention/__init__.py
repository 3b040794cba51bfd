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
| one kv_cache | ``kv_cache[i, id, x, y, d]`` or ``kv_cache[id, i, x, y, d]`` (``[2, N, ...]`` / ``[N, 2, ...]``, ``i`` a constant 0 or 1) through either table | ``rock.block_table_view`` of a ``memref.subview`` at ``i`` (as ``pagedir-gen attention --kv-cache stacked0|stacked1``) |
| FlashInfer CSR | ``id = kv_indices[min(kv_indptr[b] + m, nnz - 1)]``, masked at the CSR length | ``rock.block_table_view`` (csr), no seq_lens |

torch-mlir's forms (``linalg-on-tensors``; the fixtures of tests/fixtures/torch): a function that takes
and returns tensors is first given its memref signature (``signature.py``; it keeps its tensors when
nothing is raised); element casts between the steps (``extf`` exact; ``truncf`` to the inputs' type a
rounding step, raised to the f32 computation: docs/compile.md "Precision"); ``linalg.batch_matmul`` with
the f32 result truncated before ``expand_shape``, K^T as the collapse of a 4-d transpose; GQA as a
yield-only generic reading ``(d0, d1, d3, d4)``, collapsed with the batch for P V; the max with an unused
argmax, rows ``[B, H, Sq, 1]`` read through ``(d0, d1, d2, 0)``, exp in a generic of its own; scales of
Q and K^T (SDPA's sqrt(scale) on each) and the f64 scale constant truncated in the body; SDPA's
``select(all_j(s == -inf), 0, P)`` (rock.attention's zeros); ``masked_fill`` as a select of a broadcast i1
tensor and a 0-d -inf, and SDPA's ``is_causal`` as an added 0/-inf tensor, the masks' own generics read
as conditions on the score indices (``masks.py`` frames); a block table widened by an ``extsi`` generic,
with the wrap ``id < 0 ? id + N : id``, and K^T as one transpose of the gather (torch-mlir folds
``transpose(1, 2)`` into it: ``Attention.k_permutation``); and heads folded into the batch
(``torch.bmm`` on ``[B*H, S, D]``: rock.attention on ``[B*H, 1, S, D]`` views).

Not read (a remark with ``explain=true``): linalg on memrefs (a bufferized payload:
raise before bufferizing), attention sinks, masks other than the three bounds (and any mask on heads
folded into the batch), K and V gathered in different forms. With ``explain=true`` the parts that do
not depend on each other (Q, K and V's sources, the shapes) are all checked, the walk goes on past a
score step it cannot read, and each blocker is a remark.

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

The files: this one holds the pass, the order of the match (:func:`match_attention`), the
checks across its parts and the replacement; ``signature.py`` the memref signature of tensor functions;
``pattern.py`` what every part shares (the
records, :class:`NoMatch`, reading linalg ops); ``softmax.py`` the cast, the contractions
and the softmax (steps 1-3, 5); ``masks.py`` the elementwise steps on the scores (step 4);
``gathers.py`` GQA and the gather forms (steps 6-7).

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

import math

import dataclasses
from collections.abc import Callable

import mlir.dialects.linalg  # noqa: F401 - linalg ops come back as their OpViews (inputs, outputs)
import mlir.ir as ir

from pagedir.passes.ir_utils import remark  # noqa: F401 (the raise's parts import it from here)
from pagedir.dialect import rock
from pagedir.dialect.rock import OP_DEFS_BY_NAME
from pagedir.passes.base import Pass
from pagedir.passes.raise_attention.gathers import (
    block_gather, dense_source, pointer_gather, repeated_heads, tensor_argument,
)
from pagedir.passes.raise_attention.masks import score_steps
from pagedir.passes.raise_attention.pattern import Attention, NoMatch, Source, describe, producer
from pagedir.passes.raise_attention.signature import takes_tensors, to_memref_signature
from pagedir.passes.raise_attention.softmax import contraction, operand_scales, softmax, strip_cast


@dataclasses.dataclass(frozen=True)
class RaiseOptions:
    #: Print a remark saying which part of the pattern failed where nothing is raised.
    explain: bool = False


class RaiseAttentionPass(Pass):
    """Options: ``explain`` (remarks for payloads not raised). Preconditions: none; linalg on
    tensors with a memref boundary is raised, anything else is left as it is."""

    argument = "rock-raise-attention"
    summary = "Recognise linalg attention payloads and replace them with rock.attention"
    Options = RaiseOptions

    def run(self, module: ir.Operation) -> bool:
        converted = tensor_functions(module)
        for sink in sinks(module):
            try:
                found = match_attention(sink)
            except NoMatch as failure:
                if self.options.explain:
                    for blocker in getattr(failure, "blockers", None) or [failure]:
                        remark(blocker.op or sink, f"not raised to rock.attention: {blocker}")
                continue
            replace(sink, found)
        for func, original in converted:  # nothing raised: the function stays as written
            if not any(op.name == "rock.attention" for op in walk_ops(func)):
                ir.InsertionPoint(func).insert(original)
                func.erase()
            else:
                original.erase()
        if self.options.explain:
            for op, reason in unraisable_payloads(module):
                remark(op, f"not raised to rock.attention: {reason}")
        return True


def tensor_functions(module: ir.Operation) -> list[tuple[ir.Operation, ir.Operation]]:
    """Rewrite each function that takes and returns tensors to its memref signature (signature.py), keeping a
    detached copy of it as written: (function, original)."""
    converted = []
    for op in list(module.regions[0].blocks[0].operations):
        func = op.operation
        if takes_tensors(func):
            original = func.clone()
            to_memref_signature(func)
            converted.append((func, original))
    return converted


def unraisable_payloads(module: ir.Operation) -> list[tuple[ir.Operation, str]]:
    """Functions computing in linalg with no tensor result written into a memref argument, and why the
    raise does not read them: linalg on memrefs (bufferized), or tensors in and out (torch style)."""
    found: list[tuple[ir.Operation, str]] = []
    for func in module.regions[0].blocks[0].operations:
        func = func.operation
        if func.name != "func.func" or not len(func.regions[0].blocks):
            continue
        ops = [op for op in walk_ops(func) if op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index")]
        if not ops or takes_tensors(func) \
                or any(op.name == "bufferization.materialize_in_destination" for op in walk_ops(func)):
            continue  # a function taking tensors got its remarks from the match
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


# ----------------------------------------------------------------------------
# The pattern, from the output back to Q, K and V (the parts: softmax.py, masks.py, gathers.py)


def match_attention(sink: ir.Operation) -> Attention:
    """The attention ``sink`` writes. Parts that do not depend on each other (Q, K and V's sources, the
    shapes) are all checked: a failure raises :class:`NoMatch` with every blocker in ``blockers``."""
    found = Attention()
    out = sink.operands[1]
    if not isinstance(out.type, ir.MemRefType) or out.type.rank not in (3, 4):
        raise NoMatch(f"the destination is {out.type}, not a 4-d memref [B, Hq, Sq, D] (or [B*H, Sq, D], heads folded "
                      f"into the batch)", sink)
    found.folded_heads = out.type.rank == 3
    value = strip_cast(sink.operands[0])
    probs, v = contraction(value, transposed=False, what="P V", found=found)
    scores = softmax(probs, found)
    scores = score_steps(scores, found)
    q, k = contraction(scores, transposed=True, what="Q K^T", found=found)
    found.q = attempt(found, lambda: tensor_argument(operand_scales(q, found, "Q"), "Q"))
    k_base, k_group = (attempt(found, lambda: repeated_heads(k, "K")) or (None, None)) if found.k_permutation is None \
        else (k, 1)
    v_base, v_group = attempt(found, lambda: repeated_heads(v, "V")) or (None, None)
    if k_group is not None and v_group is not None and k_group != v_group:
        found.blockers.append(NoMatch(f"K is repeated {k_group} times per head but V {v_group} times", producer(v) or sink))
    found.k = attempt(found, lambda: kv_source(k_base, "K", found.k_permutation)) if k_base is not None else None
    found.v = attempt(found, lambda: kv_source(v_base, "V")) if v_base is not None else None
    if not found.blockers:
        heads_q = 1 if found.folded_heads else ir.MemRefType(found.q.type).shape[1]
        found.heads_kv = heads_q // k_group
        attempt(found, lambda: check_shapes(found, out, sink))
    if found.blockers:
        failure = NoMatch(str(found.blockers[0]), found.blockers[0].op)
        failure.blockers = found.blockers
        raise failure
    return found


def attempt(found: Attention, part: Callable[[], object]) -> object:
    """``part()``, or None with its blocker recorded in ``found.blockers``."""
    try:
        return part()
    except NoMatch as blocker:
        found.blockers.append(blocker)
        return None


#: How K/V can reach the attention: each form returns its Source or None. A new page-table
#: form is one more function here.
GATHER_FORMS: tuple[Callable[[ir.Value], Source | None], ...] = (dense_source, pointer_gather, block_gather)


def kv_source(value: ir.Value, what: str, permutation: list[int] | None = None) -> Source:
    if permutation is not None:  # only a gather's reshapes can absorb the transpose
        if (found := block_gather(value, permutation)) is not None:
            return found
        raise NoMatch(f"{what} is {describe(value)} transposed by {permutation}: not a cache pool gathered through a "
                      f"block table and laid out as [B, Hkv, Sk, D]", producer(value))
    for form in GATHER_FORMS:
        if (found := form(value)) is not None:
            return found
    raise NoMatch(f"{what} is {describe(value)}: neither a function argument, a page gather through a pointer table, "
                  f"nor a cache pool gathered through a block table or a CSR table", producer(value))


def check_shapes(found: Attention, out: ir.Value, sink: ir.Operation) -> None:
    q_type = ir.MemRefType(found.q.type)
    if list(q_type.shape) != list(out.type.shape) or q_type.element_type != out.type.element_type:
        raise NoMatch(f"the output {out.type} differs from the query {q_type}", sink)
    narrower = sorted(t for t in found.rounded if t != str(q_type.element_type))
    if narrower:
        raise NoMatch(f"the chain rounds to {', '.join(narrower)} between steps, not to the inputs' "
                      f"{q_type.element_type}: rock.attention computes in f32 and would not round there", sink)
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
    pool = k.pool_shape()
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
    batch, heads_q = q_type.shape[0], 1 if found.folded_heads else q_type.shape[1]
    out = sink.operands[1]
    with ir.InsertionPoint(sink), sink.location:
        if found.folded_heads:  # [B*H, S, D] arguments: rock.attention reads them as [B*H, 1, S, D] (the same bytes)
            found.q, out = head_view(found.q), head_view(out)
            found.k, found.v = Source(head_view(found.k.memref)), Source(head_view(found.v.memref))
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
                  "out": out}
        operands = [values.get(decl.name) for decl in OP_DEFS_BY_NAME["rock.attention"].operands]
        rock.attention(*operands, num_heads_q=heads_q, num_heads_kv=found.heads_kv, causal=found.causal,
                       scale=found.scale, window_left=found.window_left, softcap=found.softcap)
    func = sink.parent
    while func.name != "func.func":
        func = func.parent
    sink.erase()
    erase_dead(func)
    leftover = [op.name for op in func.regions[0].blocks[0].operations
                if op.name not in ("rock.attention", "rock.deref", "rock.block_table_view", "func.return", "arith.constant",
                                   "memref.expand_shape", "memref.subview")]
    if not leftover:
        func.attributes["rock.kernel"] = ir.UnitAttr.get()


def head_view(memref: ir.Value) -> ir.Value:
    """``memref<N x S x D>`` as ``memref<N x 1 x S x D>`` (``memref.expand_shape``)."""
    from mlir.dialects import memref as memref_dialect

    shape = list(ir.MemRefType(memref.type).shape)
    viewed = [shape[0], 1, *shape[1:]]
    result = ir.MemRefType.get(viewed, ir.MemRefType(memref.type).element_type)
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d)
                                                        for d in group]) for group in ([0, 1], [2], [3])])
    return memref_dialect.expand_shape(result, memref, reassociation, [], viewed)


def block_table_view(source: Source, batch: int, csr_lengths: tuple | None) -> ir.Value:
    element = ir.MemRefType(source.memref.type).element_type
    _, x, y, head_dim = source.pool_shape()
    block, heads = (x, y) if source.layout == "nhd" else (y, x)
    pages = ir.MemRefType.get([batch, heads * source.max_blocks, block * head_dim], element)
    last = csr_lengths[1] if source.indptr is not None else None
    pool = source.memref if source.stack is None else stacked_pool(source)
    return rock.block_table_view(pages, pool, source.table, source.indptr, last, layout=source.layout)


def stacked_pool(source: Source) -> ir.Value:
    """The pool of a kv_cache, read in place as ``pagedir-gen attention --kv-cache stacked0|stacked1`` does: a
    ``memref.subview`` at the index of the stacked axis, the pool strided through the whole tensor."""
    from mlir.dialects import memref as memref_dialect

    tensor = ir.MemRefType(source.memref.type)
    shape, (axis, index) = list(tensor.shape), source.stack
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    pool_strides = [s for d, s in enumerate(strides) if d != axis]
    offset = f", offset: {index * strides[axis]}" if index else ""
    pool_type = ir.Type.parse(f"memref<{'x'.join(map(str, source.pool_shape()))}x{tensor.element_type}, "
                              f"strided<[{', '.join(map(str, pool_strides))}]{offset}>>")
    offsets, sizes = [0] * len(shape), list(shape)
    offsets[axis], sizes[axis] = index, 1
    return memref_dialect.subview(source.memref, offsets, sizes, [1] * len(shape), result_type=pool_type)


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
