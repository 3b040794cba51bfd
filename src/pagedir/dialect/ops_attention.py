"""Paged attention ops at L0: rock.deref and rock.attention."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import mlir.ir as ir

from pagedir.dialect.core import (
    BOOL_ATTR,
    F32_ATTR,
    I64_ATTR,
    MEMREF,
    OPTIONAL,
    READ,
    WRITE,
    Attr,
    OpDef,
    Operand,
    Result,
)
from pagedir.page_sources import PointerSource, source_of
from pagedir.page_sources.base import dim_text
from pagedir.dialect.types import element_bytes
from pagedir.variants import VARIANTS, variant_attributes, variant_operands


class DerefOp(OpDef):
    name = "deref"
    summary = "view a page table of device pointers as the concatenation of its pages"
    description = """
`table` is `memref<B x P x 1 x i64>`: P device addresses per batch. The result
`memref<B x P x S x T>` is the virtual concatenation of the pages, each S
contiguous elements of type T. Nothing is loaded here: the blockwise loader reads
the pages. Per batch, the logical K (or V) `[num_heads_kv, seq_len_k, head_dim]`
is flattened row-major and cut into the pages. With `seq_len_k`, that logical K
holds `seq_len_k` tokens and the last page is partly filled (its tail is never read).
"""
    operands = (Operand("table", MEMREF, effect=READ, doc="memref<B x P x 1 x i64> of page addresses"),)
    results = (Result("pages", MEMREF, "memref<B x P x S x T>"),)
    attributes = (Attr("seq_len_k", I64_ATTR, required=False,
                       doc="tokens per sequence when the last page is partly filled (default P*S / (Hkv*D))"),)
    example = '%k = "rock.deref"(%k_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>'

    def verify(self, op) -> Iterator[str]:
        """static table `memref<B x P x 1 x i64>`, result `memref<B x P x S x T>` with the
        same B and P and S > 0; B may be dynamic (`?`) in both."""
        table = op.operation.operands[0].type
        pages = op.operation.results[0].type
        i64 = ir.IntegerType.get_signless(64)
        # Only the batch may be dynamic ('?': one kernel for every batch size).
        if table.rank != 3 or any(table.is_dynamic_dim(d) for d in (1, 2)) or table.shape[2] != 1 or table.element_type != i64:
            yield f"page table must be a static memref<B x P x 1 x i64>, got {table}"
            return
        if pages.rank != 3 or any(pages.is_dynamic_dim(d) for d in (1, 2)):
            yield f"result must be a static memref<B x P x S x T>, got {pages}"
            return
        if list(pages.shape[:2]) != list(table.shape[:2]):
            yield (
                f"result batch and page counts {list(pages.shape[:2])} must match "
                f"the page table's {list(table.shape[:2])}"
            )
        if pages.shape[2] <= 0:
            yield f"page size (elements per page) must be positive, got {pages.shape[2]}"
        if op.seq_len_k is not None and op.seq_len_k <= 0:
            yield f"seq_len_k must be positive, got {op.seq_len_k}"


def is_deref(value: ir.Value) -> bool:
    return PointerSource.matches(value)


def is_paged(value: ir.Value) -> bool:
    """K/V in a paged form (:mod:`pagedir.page_sources`): ``[B, P, S]``."""
    return source_of(value).paged


FLOAT_TYPES = ("f16", "bf16", "f32")
#: fp8 K/V element types (with f16 or bf16 Q and out); which chip takes which: pagedir.arch.
FP8_TYPES = ("f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3FN", "f8E5M2")
#: The widest vector a thread loads (dwordx4): head dims and pages are multiples of it.
VECTOR_BITS = 128


#: The kinds of the variants' attributes (pagedir.variants.Declared).
ATTR_KINDS = {"i64": I64_ATTR, "f32": F32_ATTR}


class AttentionLike(OpDef):
    operands = (
        Operand("q", MEMREF, effect=READ, doc="memref<B x Hq x Sq x D x T>"),
        Operand("k", MEMREF, effect=READ, doc="dense memref<B x Hkv x Sk x D x T>, a rock.deref or rock.block_table_view result"),
        Operand("v", MEMREF, effect=READ, doc="dense memref<B x Hkv x Sk x D x T>, a rock.deref or rock.block_table_view result"),
        Operand("seq_lens", MEMREF, OPTIONAL, effect=READ, doc="memref<B x i32>: keys at positions >= seq_lens[b] are masked"),
        *(Operand(d.name, MEMREF, OPTIONAL, effect=READ, doc=d.doc) for d in variant_operands()),
        Operand("k_scale", MEMREF, OPTIONAL, effect=READ, doc="memref<1xf32>: K values are k * k_scale (fp8 caches)"),
        Operand("v_scale", MEMREF, OPTIONAL, effect=READ, doc="memref<1xf32>: V values are v * v_scale (fp8 caches)"),
        Operand("k_scales", MEMREF, OPTIONAL, effect=READ,
                doc="per (token, KV head) scales of K, f32 and paged like k: K[b, h, j] = k[b, h, j] * k_scales[b, h, j]"),
        Operand("v_scales", MEMREF, OPTIONAL, effect=READ,
                doc="per (token, KV head) scales of V, f32 and paged like v: V[b, h, j] = v[b, h, j] * v_scales[b, h, j]"),
        Operand("out", MEMREF, effect=WRITE, doc="memref<B x Hq x Sq x D x T>"),
    )
    common_attributes = (
        Attr("num_heads_q", I64_ATTR, doc="query heads Hq"),
        Attr("num_heads_kv", I64_ATTR, doc="key/value heads Hkv (GQA: q head h uses kv head h / (Hq / Hkv))"),
        Attr("causal", BOOL_ATTR, required=False, default=False, doc="query i sees keys j <= i + seq_len - Sq"),
        Attr("scale", F32_ATTR, required=False, doc="score scale, default 1/sqrt(D)"),
        *(Attr(d.name, ATTR_KINDS[d.kind], required=False, doc=d.doc) for d in variant_attributes()),
    )
    attributes = common_attributes

    def verify(self, op) -> Iterator[str]:
        """static shapes; q and out `memref<B x Hq x Sq x D x T>` with Hq = `num_heads_q`;
        Hq % Hkv == 0; T in f16/bf16/f32 for all of q/k/v/out; dense K/V
        `memref<B x Hkv x Sk x D x T>` or paged K/V holding a whole number of tokens
        (P*S divisible by Hkv*D); k and v with the same Sk; `seq_lens` `memref<B x i32>`;
        `window_left` in [0, 2**31 - 1]; `softcap` finite and > 0; `alibi_slopes` and `sinks` `memref<Hq x f32>`;
        fp8 K/V (both the same type) with an f16 or bf16 query; `k_scale` and `v_scale` `memref<1xf32>`;
        `k_scales` and `v_scales` (both or neither, fp8 K/V, no per-tensor scales) f32 scale caches
        shaped like k and v with a head dim of 1 (same pages, block table, layout or dense tokens)."""
        shape_errors = list(verify_attention_shapes(op))
        yield from shape_errors
        yield from verify_variants(op)
        if not shape_errors:
            yield from verify_scale_caches(op)


def kv_shape(value: ir.Value, num_heads_kv: int, head_dim: int) -> tuple[int, int, int] | str:
    """(batch, Hkv, Sk) of dense or paged K/V, or a message saying why the shape is wrong."""
    return source_of(value).kv_shape(num_heads_kv, head_dim)


@dataclass(frozen=True)
class AttentionProblem:
    """The sizes of a ``rock.attention`` or ``rock.gridwise_attention_accel`` (see :func:`read_problem`)."""

    batch: int | None  # None: dynamic (the kernel serves every batch size)
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_k: int | None  # None: dynamic capacity (a view with `?` block slots)
    head_dim: int
    element: ir.Type
    page_elements: int | None  # None for dense K/V
    kv_element: ir.Type | None = None  # K and V's element type when it differs (fp8)

    @property
    def kv_type(self) -> ir.Type:
        return self.kv_element or self.element

    @property
    def kv_vector_len(self) -> int:  # K/V elements per 128-bit load
        return VECTOR_BITS // (element_bytes(self.kv_type) * 8)

    @property
    def group(self) -> int:
        return self.heads_q // self.heads_kv

    @property
    def vector_len(self) -> int:
        return VECTOR_BITS // (element_bytes(self.element) * 8)


def read_problem(op) -> AttentionProblem:
    """The sizes of an attention op that passed its verifier, read from its operands."""
    batch, heads_q, seq_q, head_dim = op.q.type.shape
    batch = None if op.q.type.is_dynamic_dim(0) else batch
    heads_kv = op.num_heads_kv
    k_type, k = op.k.type, source_of(op.k)
    if k.paged:
        pages, page_elements = k_type.shape[1], k_type.shape[2]
        seq_k = k.stated_seq_len_k() or pages * page_elements // (heads_kv * head_dim)
        seq_k = None if k_type.is_dynamic_dim(1) else seq_k
    else:
        page_elements, seq_k = None, k_type.shape[2]
    kv_element = k_type.element_type
    return AttentionProblem(batch, heads_q, heads_kv, seq_q, seq_k, head_dim, op.q.type.element_type, page_elements,
                            kv_element if kv_element != op.q.type.element_type else None)


def verify_attention_shapes(op) -> Iterator[str]:
    q, k, v, seq_lens, out = op.q, op.k, op.v, op.seq_lens, op.out
    hq, hkv = op.num_heads_q, op.num_heads_kv
    for label, value in (("q", q), ("out", out)):
        if value.type.rank != 4:
            yield f"{label} must be memref<B x Hq x Sq x D x T>, got {value.type}"
            return
    dynamic_batch = q.type.is_dynamic_dim(0)
    for label, value in (("q", q), ("k", k), ("v", v), ("out", out), ("seq_lens", seq_lens)):
        if value is None or value.type.has_static_shape:
            continue
        # Dynamic: the batch (dim 0 of every operand) and what the K/V form allows (a view's pages: its op checks them).
        allowed = {0} if dynamic_batch else set()
        if label in ("k", "v"):
            allowed |= source_of(value).dynamic_dims
        fixed = [i for i in range(value.type.rank) if value.type.is_dynamic_dim(i) and i not in allowed]
        if fixed:
            what = "the batch (of q, out, seq_lens and k/v together) and a block-table view's pages"
            yield f"{label} {value.type} has a dynamic dim {fixed[0]}: only {what} may be dynamic"
            return
    if list(q.type.shape) != list(out.type.shape):
        yield f"out shape {list(out.type.shape)} must equal the query shape {list(q.type.shape)}"
    batch, heads_q, _, head_dim = q.type.shape
    if head_dim <= 0:
        yield f"head dim of q must be positive, got {head_dim}"
        return
    if hq <= 0 or hkv <= 0:
        yield f"num_heads_q ({hq}) and num_heads_kv ({hkv}) must be positive"
        return
    if heads_q != hq:
        yield f"num_heads_q = {hq} but the query has {heads_q} heads"
    if hq % hkv:
        yield f"num_heads_q ({hq}) must be a multiple of num_heads_kv ({hkv})"
    element = q.type.element_type
    if str(element) not in FLOAT_TYPES:
        yield f"element type must be f16, bf16 or f32, got {element}"
    if out.type.element_type != element:
        yield f"out element type {out.type.element_type} differs from the query's {element}"
    shapes = []
    for label, value in (("k", k), ("v", v)):
        kv_element = value.type.element_type
        if str(kv_element) in FP8_TYPES:
            if str(element) not in ("f16", "bf16"):
                yield f"{label} element type {kv_element} (fp8) needs an f16 or bf16 query, got {element}"
            if label == "v" and kv_element != k.type.element_type:
                yield f"v element type {kv_element} differs from k's {k.type.element_type}"
        elif kv_element != element:
            yield f"{label} element type {kv_element} differs from the query's {element}"
        shape = kv_shape(value, hkv, head_dim)
        if isinstance(shape, str):
            yield f"{label}: {shape}"
            return
        if shape[0] != batch:
            yield f"{label} batch {dim_text(shape[0])} differs from the query batch {dim_text(batch)}"
        if shape[1] != hkv:
            yield f"num_heads_kv = {hkv} but {label} has {shape[1]} heads"
        shapes.append(shape)
    if len(shapes) == 2 and shapes[0][2] != shapes[1][2]:
        tokens = ["?" if s[2] is None else s[2] for s in shapes]
        yield f"k holds {tokens[0]} tokens per sequence but v holds {tokens[1]}"
    if seq_lens is not None:
        t = seq_lens.type
        if t.rank != 1 or t.shape[0] != batch or t.element_type != ir.IntegerType.get_signless(32):
            yield f"seq_lens must be memref<{'?' if dynamic_batch else batch}xi32>, got {t}"
    yield from verify_carried_lengths(op)


def csr_lengths(value: ir.Value) -> tuple[ir.Value, ...] | None:
    """The operands giving each sequence's length when K/V's form carries them (CSR: kv_indptr and
    kv_last_page_len), else None."""
    return source_of(value).lengths()


def verify_carried_lengths(op) -> Iterator[str]:
    """A form that carries the sequence lengths (CSR) has K and V read the same lengths, and no seq_lens."""
    k, v = source_of(op.k), source_of(op.v)
    carrier = next((kv for kv in (k, v) if kv.lengths() is not None), None)
    if carrier is not None:
        yield from carrier.verify_lengths(k, v, op.seq_lens)


def verify_variants(op) -> Iterator[str]:
    """The score variants' rules (pagedir.variants), and their operands: one f32 per query head."""
    values = {d.name: getattr(op, d.name) for d in variant_attributes()}
    for variant in VARIANTS:
        yield from variant.verify(values)
    heads_q = op.num_heads_q
    f32 = ir.F32Type.get()
    for label in (d.name for d in variant_operands()):
        value = getattr(op, label)
        if value is None:
            continue
        t = value.type
        if not t.has_static_shape or t.rank != 1 or t.shape[0] != heads_q or t.element_type != f32:
            yield f"{label} must be memref<{heads_q}xf32> (one value per query head), got {t}"
    for label, value in (("k_scale", op.k_scale), ("v_scale", op.v_scale)):
        t = None if value is None else value.type
        if t is not None and (not t.has_static_shape or t.rank != 1 or t.shape[0] != 1 or t.element_type != f32):
            yield f"{label} must be memref<1xf32> (one scale per tensor), got {t}"


def scale_cache_shape(scales: ir.Value, kv: ir.Value, num_heads_kv: int, head_dim: int) -> str | None:
    """Why the scale cache ``scales`` does not fit the K (or V) cache ``kv``, else None. A scale cache
    is the cache with a head dim of 1 in f32, in the cache's form (:meth:`pagedir.page_sources.PageSource.scale_cache_error`)."""
    t, f32 = scales.type, ir.F32Type.get()
    if t.element_type != f32:
        return f"element type must be f32, got {t.element_type}"
    return source_of(kv).scale_cache_error(scales, num_heads_kv, head_dim)


def verify_scale_caches(op) -> Iterator[str]:
    """``k_scales`` and ``v_scales``: per-token-head scales of fp8 K/V, shaped like their caches."""
    present = (op.k_scales is not None, op.v_scales is not None)
    if not any(present):
        return
    if not all(present):
        yield "k_scales and v_scales go together: one was given without the other"
        return
    if str(op.k.type.element_type) not in FP8_TYPES:
        yield f"k_scales and v_scales scale fp8 K/V, but k is {op.k.type.element_type}"
    if op.k_scale is not None or op.v_scale is not None:
        yield "takes per-tensor (k_scale, v_scale) or per-token-head (k_scales, v_scales) scales, not both"
    head_dim = op.q.type.shape[3]
    for label, scales, kv in (("k_scales", op.k_scales, op.k), ("v_scales", op.v_scales, op.v)):
        problem = scale_cache_shape(scales, kv, op.num_heads_kv, head_dim)
        if problem is not None:
            yield f"{label} {problem} (cache {kv.type})"


class AttentionOp(AttentionLike):
    name = "attention"
    summary = "out = softmax(scale * Q K^T + mask) V with K/V dense or paged"
    description = """
Q and out are `memref<B x Hq x Sq x D x T>`; K and V are dense `memref<B x Hkv x Sk x D x T>`
or `rock.deref` results holding Sk = P*S / (Hkv*D) tokens per sequence. The optional
`seq_lens` masks keys at positions >= seq_lens[b] (their pages may be null). The
softmax is computed in f32; a fully masked row gives zeros. Semantics:
`pagedir.reference.attention`. A null page reads 0 at every level: a null pointer in a
`rock.deref` table, or for a `rock.block_table_view` a slot the sequence does not own or an
id outside `[0, num_blocks)`. Its keys below seq_lens[b] are not masked: they take part with
K = V = 0 (score 0 before the variants). B may be 0 (a dynamic batch): nothing is read or written.

Variants, each optional and combinable. Query i of a sequence of seq_len keys sits at
the absolute position i_pos = i + seq_len - Sq (aligned to the end, as for `causal`).
Per score, in this order: `s = scale * q.k`; `softcap`: `s = softcap * tanh(s / softcap)`;
`alibi_slopes`: `s += slope[h] * (j - i_pos)`; then masking: keys >= seq_len, with
`causal` keys j > i_pos, with `window_left` keys j < i_pos - window_left. `sinks`: the
logit `sinks[h]` joins the softmax denominator (`sum_j exp(s_j) + exp(sinks[h])`)
without a value of its own. KV tiles wholly before the window are not loaded.

fp8 KV cache: K and V may be `f8E4M3FNUZ`/`f8E5M2FNUZ` (gfx942) or `f8E4M3FN`/`f8E5M2` (gfx950)
with Q and out f16 or bf16; `k_scale` and `v_scale` (`memref<1xf32>`, per tensor, any element
type) make the keys and values `k * k_scale` and `v * v_scale`. Per token and KV head instead,
`k_scales` and `v_scales` are f32 scale caches paged like K and V (a head dim of 1): `K[b, h, j] =
k[b, h, j] * k_scales[b, h, j]`, likewise V (vLLM's and aiter's per-token-head quantization). Their
forms follow the cache's: for `rock.block_table_view` K/V a view of a pool `[num_blocks, block_size,
Hkv]` (nhd) or `[num_blocks, Hkv, block_size]` (hnd) through the same block table (or CSR table)
in the same layout, result `memref<B x (Hkv * max_blocks) x block_size x f32>`; for `rock.deref`
K/V a `rock.deref` of a page table of its own with the cache's page count, each page the scales of
one K page's tokens (`memref<B x P x (S / D) x f32>`, the same `seq_len_k`); for dense K/V
`memref<B x Hkv x Sk x f32>`. A tile's scales are loaded with it, once per tile and never past
seq_len; K's scale multiplies each score once, V's each probability once before P V (a key's V
scale weights its row and cannot be taken out of the sum).
"""
    example = """"rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, causal = false,
    operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>} : (...) -> ()"""


OPS = (DerefOp, AttentionOp)


def optional_operands() -> tuple[str, ...]:
    """The optional operands of the attention ops (``seq_lens``, the variants, the fp8 scales), in their
    declared order: the one list the generators, the interpreter and the checks take them from."""
    return tuple(decl.name for decl in AttentionLike.operands if decl.arity == OPTIONAL)


def attention_operands(operation: ir.Operation) -> dict[str, ir.Value | None]:
    """The operands of a ``rock.attention`` or ``rock.gridwise_attention_accel`` by declared name
    (None for an absent optional one), read through its ``operandSegmentSizes``."""
    return {name: group[0] if group else None
            for name, group in operation.opview.op_def.operands_of(operation).items()}
