"""The cases of attention functions: random Q and K/V in the function's form (dense, page pointers, cache pools
read through a block or CSR table) and the reference output (:func:`attention_case`, :func:`serving_case`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir import reference
from pagedir.dialect.core import attr_value
from pagedir.dialect.ops_attention import attention_operands, optional_operands
from pagedir.dialect.ops_page_table import is_block_table_view
from pagedir.dialect.types import element_bytes
from pagedir.interp.check_data import (CheckCase, dtype_of, fp8_quantized, fp8_quantized_per_token, host_values,
                                       full_sequence, ids_outside_the_pool, nan_keys, edge_lengths, packed_attention,
                                       place_pool, random_argument, scale_pool, variant_inputs, varlen_query_lengths)
from pagedir.interp.check_draws import DYNAMIC_SIZES, EDGES, LaunchSizes
from pagedir.interp.launch import argument_count
from pagedir.interp.memory import Device, InterpError, check_memory_limit, elem_named
from pagedir.kv_caches import POOL_TABLES
from pagedir.page_sources import DenseSource, PageGeometry, PointerSource, source_of
from pagedir.passes.ir_utils import find_ops
from pagedir.variants import variant_attributes, variant_operands

def _attention_attrs(func: ir.Operation) -> dict[str, Any]:
    """num_heads_kv, causal, scale from the attention op, or from func attributes rock.num_heads_kv..."""
    ops = find_ops(func, "rock.attention", "rock.gridwise_attention_accel")
    source = ops[0].attributes if ops else func.attributes
    prefix = "" if ops else "rock."
    attrs: dict[str, Any] = {}
    if f"{prefix}num_heads_kv" in source:
        attrs["num_heads_kv"] = ir.IntegerAttr(source[f"{prefix}num_heads_kv"]).value
    if f"{prefix}causal" in source:
        attrs["causal"] = ir.BoolAttr(source[f"{prefix}causal"]).value
    if f"{prefix}scale" in source:
        attrs["scale"] = ir.FloatAttr(source[f"{prefix}scale"]).value
    for d in variant_attributes():
        if f"{prefix}{d.name}" in source:
            attrs[d.name] = attr_value(source[f"{prefix}{d.name}"])
    if ops:  # the optional operands present: seq_lens, alibi_slopes, sinks, ...
        operands = attention_operands(ops[0])
        attrs["optional"] = [name for name in optional_operands() if operands[name] is not None]
    attrs["known"] = bool(ops) or "num_heads_kv" in attrs
    return attrs


def attention_variant_arguments(func: ir.Operation) -> dict[str, ir.Value]:
    """The variant operands (alibi_slopes, sinks, k_scale, v_scale) of the function's attention op,
    by name, that are arguments of the function (the data drawn for them); per-token-head scale caches
    (``k_scales``, ``v_scales``) by name too, as the pool their view reads."""
    ops = find_ops(func, "rock.attention", "rock.gridwise_attention_accel")
    if not ops:
        return {}
    found = {}
    for name, value in attention_operands(ops[0]).items():
        if name in (*(d.name for d in variant_operands()), "k_scale", "v_scale") and isinstance(value, ir.BlockArgument):
            found[name] = value
        if name in ("k_scales", "v_scales") and value is not None and is_block_table_view(value):
            found[name] = value.owner.operands[0]
    return found


def _resolve(extent: int, value: int) -> int:
    return value if extent == ir.ShapedType.get_dynamic_size() else extent


def attention_case(func: ir.Operation, rng: np.random.Generator, device: Device, sizes: LaunchSizes | None = None,
                   placement: str = "shuffled") -> CheckCase:
    """Random Q, paged K/V (pages placed by ``placement``, :data:`pagedir.reference.PAGE_PLACEMENTS`; null past
    ragged seq_lens) or dense K/V, NaN out, the reference result; a dynamic batch is ``sizes.batch``.
    ``placement`` :data:`EDGES`: the edge draw (shuffled pages; :func:`edge_lengths`, a null page that
    holds keys, a NaN and an Inf key)."""
    edges, placement = placement == EDGES, "shuffled" if placement == EDGES else placement
    args = list(func.regions[0].blocks[0].arguments)[: argument_count(func)]
    varlen = find_ops(func, "rock.varlen_view")  # packed q and out: (q, cu_seqlens_q, k, v, ...)
    q_type = ir.MemRefType(varlen[0].results[0].type) if varlen else args[0].type
    table_type, out_type = args[2 if varlen else 1].type, q_type
    optional = _attention_attrs(func).get("optional")
    has_lens = "seq_lens" in optional if optional is not None else len(args) == 5
    batch, heads_q, seq_q, head_dim = q_type.shape
    batch = _resolve(batch, (sizes or DYNAMIC_SIZES[0]).batch)
    name = str(q_type.element_type)
    derefs = find_ops(func, "rock.deref")
    attrs = _attention_attrs(func)
    # K's argument: dense [B, Hkv, Sk, D], else a table of page pointers (a rock.deref's; a lowered kernel's own)
    form = DenseSource if table_type.rank == 4 else PointerSource
    if not form.paged:
        (_, heads_kv, seq_k, _), page_size = table_type.shape, None
    elif not derefs and "rock.paged_kv" in func.attributes:  # lowered: the views are gone, the kernel says what they were
        page_size, seq_k, heads_kv = ir.DenseI64ArrayAttr(func.attributes["rock.paged_kv"])
    else:
        page_size = ir.MemRefType(derefs[0].results[0].type).shape[2] if derefs else head_dim
        heads_kv = attrs.get("num_heads_kv", 1)
        stated = derefs[0].attributes["seq_len_k"] if derefs and "seq_len_k" in derefs[0].attributes else None
        seq_k = ir.IntegerAttr(stated).value if stated is not None else table_type.shape[1] * page_size // (heads_kv * head_dim)
    kv_name = str(ir.MemRefType(derefs[0].results[0].type).element_type if derefs and form.paged else table_type.element_type)
    if form.paged:  # the K and V pages to upload, refused before any is drawn (a table of a million pages per sequence)
        pages = batch * -(-heads_kv * seq_k * head_dim // page_size)
        check_memory_limit(f"the K and V pages of the check's case ({pages // max(1, batch)} a sequence, {batch} sequences)",
                           2 * pages * page_size * elem_named(kv_name).size,
                           location=derefs[0].location if derefs else func.location)
    q = host_values(rng.standard_normal((batch, heads_q, seq_q, head_dim)), name)
    k = host_values(rng.standard_normal((batch, heads_kv, seq_k, head_dim)), name)
    v = host_values(rng.standard_normal((batch, heads_kv, seq_k, head_dim)), name)
    seq_lens = rng.integers(1, seq_k + 1, size=batch).astype(np.int32) if has_lens else None
    if has_lens and batch > 1:
        seq_lens[0] = seq_k  # one full sequence, the others ragged
        if 1 < seq_q and 1 < seq_k:  # and one shorter than the queries (causal: rows that see no key)
            seq_lens[-1] = rng.integers(1, min(seq_q, seq_k))
    if has_lens and batch > 2 and "rock.num_splits" in func.attributes:
        seq_lens[1] = 1  # split-KV: a sequence of one key, shorter than any split (the others see none)
    if edges and has_lens:
        seq_lens = edge_lengths(batch, seq_k, rng)
    nulls_ok = attrs["known"]
    if nulls_ok:  # slots past seq_lens hold NaN/Inf, as a reused cache's may: masked keys must not be read
        k, v = reference.fill_stale(k, seq_lens), reference.fill_stale(v, seq_lens)
    if edges and nulls_ok:
        k = nan_keys(k, seq_k if seq_lens is None else seq_lens, seq_q)
    scales = {}
    per_token = "k_scales" in (attrs.get("optional") or [])
    if kv_name in reference.FP8_FORMATS and per_token:  # per (token, head): the scales are caches of their own
        (k, k_ref, k_scales), (v, v_ref, v_scales) = (fp8_quantized_per_token(x, kv_name) for x in (k, v))
        scales = {"k_scales": k_scales, "v_scales": v_scales}
    elif kv_name in reference.FP8_FORMATS:  # quantized: the device gets fp8 bits, the reference their values
        (k, k_ref, k_scale), (v, v_ref, v_scale) = (fp8_quantized(x, kv_name, "k_scale" in (attrs.get("optional") or []))
                                                   for x in (k, v))
        if "k_scale" in (attrs.get("optional") or []):
            scales = {"k_scale": k_scale, "v_scale": v_scale}
    else:
        k_ref, v_ref = k, v
    placed = form.check_kv(device, (k, v), (k_ref, v_ref), scales, page_size=page_size,
                           seq_lens=seq_lens if nulls_ok else None, rng=rng, dtype=dtype_of(kv_name), placement=placement,
                           null_page=full_sequence(np.arange(batch)) if edges and nulls_ok and batch else None)
    (k_arg, v_arg), (k_ref, v_ref), scales, kept = placed.arguments, placed.refs, placed.scales, placed.keep_alive
    out = np.full((batch, *out_type.shape[1:]), np.nan, dtype=np.float32)
    queries, q_lens = [q], None
    if varlen:  # packed rows: a prefill chunk, a decode row, any others; rows past the last stay NaN
        q = host_values(rng.standard_normal((batch * seq_q, heads_q, head_dim)), name)
        q_lens = varlen_query_lengths(batch, seq_q, rng, edges)
        queries = [q, np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)]
        out = np.full(q.shape, np.nan, dtype=np.float32)
    variants = variant_inputs(optional or [], heads_q, rng)  # drawn last: the other data do not change with them
    call = queries + [k_arg, v_arg] + ([seq_lens] if has_lens else []) + list(variants.values()) + list(scales.values()) + [out]
    expected = {}
    if attrs["known"]:
        options = dict(causal=attrs.get("causal", False), scale=attrs.get("scale"),
                       **{d.name: attrs.get(d.name) for d in variant_attributes()}, **variants)
        expected[len(call) - 1] = (reference.attention(q, k_ref, v_ref, seq_lens=seq_lens, **options) if q_lens is None
                                   else packed_attention(q, q_lens, out, k_ref, v_ref, seq_lens, **options))
    return CheckCase(args=call, expected=expected, keep_alive=kept)


def serving_case(func: ir.Operation, rng: np.random.Generator, device: Device, sizes: LaunchSizes | None = None,
                 placement: str = "shuffled") -> CheckCase:
    """Random Q and K/V placed in cache pools through a block table (or a CSR table) as a server
    would: shuffled block ids (or ids in ``placement``'s order: :func:`pagedir.reference.block_id_order`), sequence 1's first block shared with sequence 0 (prefix sharing),
    lengths that end inside a block, NaN/Inf past them and NaN in unused blocks; the reference result.

    The arguments are read from the ``rock.block_table_view`` ops (K's first): their pools and
    tables, then ``q`` (first argument), ``out`` (the last argument of q's type) and ``seq_lens``
    (a ``memref<B x i32>`` the views do not read). Others get random data of their type."""

    edges, placement = placement == EDGES, "shuffled" if placement == EDGES else placement
    args = list(func.regions[0].blocks[0].arguments)[: argument_count(func)]
    views = find_ops(func, "rock.block_table_view")
    # K's view and V's (the cache pools; 3-d pools are per-token-head scale caches, drawn with their caches)
    caches = [view for view in views if ir.MemRefType(view.operands[0].type).rank >= 4]  # vllm-pa: a 5-d K pool
    k_view, v_view = caches[0], caches[-1]
    varlen = find_ops(func, "rock.varlen_view")  # packed q and out (in that order)
    g = PageGeometry.of(k_view.results[0])
    v_blocks = PageGeometry.of(v_view.results[0]).num_blocks
    if None not in (v_blocks, g.num_blocks) and v_blocks != g.num_blocks:  # one block table places both: its ids name a block of each pool
        raise InterpError(f"cannot draw cache pools of {g.num_blocks} (k) and {v_blocks} (v) blocks: the block table "
                          f"places K and V in blocks of the same ids", v_view.location)
    pool_type = ir.MemRefType(k_view.operands[0].type)
    name = str(pool_type.element_type)
    type_batch = ir.MemRefType(k_view.results[0].type).shape[0]
    sizes = sizes or DYNAMIC_SIZES[0]  # what the '?' sizes are at this launch (a static type keeps its own)
    batch = _resolve(type_batch, sizes.batch)
    slots = g.max_blocks if g.max_blocks is not None else sizes.max_blocks
    g = replace(g, num_blocks=g.num_blocks if g.num_blocks is not None else max(sizes.num_blocks, batch * slots),
                max_blocks=slots)
    q_arg = args[0]
    out_arg = [a for a in args if a.type == q_arg.type][-1]
    q_type = ir.MemRefType(varlen[0].results[0].type if varlen else q_arg.type)
    seq_q = q_type.shape[2]
    view_operands = set()
    for view in views + varlen:
        view_operands.update(view.operands)
    lens_args = [a for a in args if a not in view_operands and isinstance(a.type, ir.MemRefType)
                 and list(a.type.shape) == [type_batch] and str(a.type.element_type) == "i32"]
    seq_k = g.max_blocks * g.block_size
    seq_lens = rng.integers(1, seq_k + 1, size=batch).astype(np.int32)
    if batch > 1:
        seq_lens[0] = seq_k  # one full sequence, the others ending anywhere (inside a block too)
        if 1 < seq_q and 1 < seq_k:  # and one shorter than the queries (causal: rows that see no key)
            seq_lens[-1] = rng.integers(1, min(seq_q, seq_k))
        if seq_lens[1] < g.block_size:  # sequence 1 shares sequence 0's first block: it reaches past it
            seq_lens[1] = min(seq_k, g.block_size + int(rng.integers(0, g.block_size)))
    if batch > 2 and "rock.num_splits" in func.attributes:
        seq_lens[2] = 1  # split-KV: a sequence of one key, shorter than any split (the others see none)
    if edges:
        seq_lens = edge_lengths(batch, seq_k, rng)
    if g.num_blocks < batch * slots:  # a pool smaller than the table can address: the sequences share it
        if g.num_blocks < 1 and batch > 0:
            raise InterpError(f"the cache pool's {g.num_blocks} blocks cannot hold a block for each of the "
                              f"{batch} sequences (the first two share one)")
        seq_lens = np.minimum(seq_lens, max(1, g.num_blocks // batch) * g.block_size).astype(np.int32)
        seq_lens[g.num_blocks + 1:] = 0  # a block each for the first (sequences 0 and 1 share one), none for the rest
    form = source_of(k_view.results[0])  # the page-table form: what its tables hold
    seq_lens, problem = form.fit_lengths(k_view, seq_lens, batch, slots, g.block_size)
    if problem is not None:
        table = k_view.operands[1]
        name = POOL_TABLES[form.name].arguments(1, 1, 1, 1, "")[1][0]  # the view's table operand
        raise InterpError(f"{name} (argument {args.index(table)}, {table.type}) {problem}", table.location)
    shape = (batch, g.heads_kv, seq_k, g.head_dim)
    q_name = str(q_type.element_type)
    k = host_values(rng.standard_normal(shape), q_name)
    v = host_values(rng.standard_normal(shape), q_name)
    if batch > 1:  # prefix sharing: the shared block holds the same tokens for both
        k[1, :, : g.block_size], v[1, :, : g.block_size] = k[0, :, : g.block_size], v[0, :, : g.block_size]
    k, v = reference.fill_stale(k, seq_lens), reference.fill_stale(v, seq_lens)
    if edges:
        k = nan_keys(k, seq_lens, seq_q)
    variant_args = attention_variant_arguments(func)
    scales: dict[str, np.ndarray] = {}
    k_ref, v_ref = k, v
    per_token = "k_scales" in variant_args
    if name in reference.FP8_FORMATS and per_token:  # per (token, head): the scales go to pools of their own
        (k_bits, k_ref, k_scales), (v_bits, v_ref, v_scales) = (fp8_quantized_per_token(x, name) for x in (k, v))
        k, v = reference.fp8_values(k_bits, name), reference.fp8_values(v_bits, name)
    elif name in reference.FP8_FORMATS:  # fp8 pools hold fp8 values (encoded on upload), the reference their scaled values
        (k_bits, k_ref, k_scale), (v_bits, v_ref, v_scale) = (fp8_quantized(x, name, "k_scale" in variant_args)
                                                             for x in (k, v))
        k, v = reference.fp8_values(k_bits, name), reference.fp8_values(v_bits, name)
        scales = {"k_scale": k_scale, "v_scale": v_scale}
    caches = reference.block_caches(k, v, g.block_size, seq_lens=seq_lens, layout=g.layout, num_blocks=g.num_blocks,
                                    rng=rng, dtype=dtype_of(name), share_first_block=batch > 1, placement=placement,
                                    element_bytes=element_bytes(pool_type.element_type))
    if per_token:  # the scale pools through the caches' block table
        scales = {label: scale_pool(x, caches.block_table, seq_lens, g.block_size, g.layout, g.num_blocks)
                  for label, x in (("k_scales", k_scales), ("v_scales", v_scales))}
    if edges and batch:  # owned slots naming no block of the pool: null pages, they read 0
        k_ref, v_ref = (ids_outside_the_pool(caches.block_table, ref, seq_lens, g.block_size, g.num_blocks)
                        for ref in (k_ref, v_ref))
    values: dict[Any, Any] = {}
    for pool, array in ((k_view.operands[0], caches.k_pool), (v_view.operands[0], caches.v_pool)):
        place_pool(values, pool, array)
    tables = form.check_tables(k_view, caches.block_table, seq_lens, g.block_size, batch, slots, rng)
    values.update(zip(list(k_view.operands)[1:], tables))
    for lens in lens_args:
        values[lens] = seq_lens
    attrs = _attention_attrs(func)
    q_shape = [_resolve(extent, batch * seq_q if varlen else batch) if i == 0 else extent
               for i, extent in enumerate(q_arg.type.shape)]
    values[q_arg] = host_values(rng.standard_normal(tuple(q_shape)), name)
    values[out_arg] = np.full(tuple(q_shape), np.nan, dtype=np.float32)
    q_lens = None
    if varlen:
        q_lens = varlen_query_lengths(batch, q_type.shape[2], rng, edges)
        values[varlen[0].operands[1]] = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    drawn = {**variant_inputs(list(variant_args), q_type.shape[1], rng), **scales}
    variants = {d.name: drawn[d.name] for d in variant_operands() if d.name in variant_args}
    for variant, argument in variant_args.items():
        values[argument] = drawn[variant]
    call = [values[a] if a in values else random_argument(a.type, rng) for a in args[: args.index(out_arg) + 1]]
    expected = {}
    if attrs["known"]:
        causal, scale = attrs.get("causal", False), attrs.get("scale")
        variants.update({d.name: attrs.get(d.name) for d in variant_attributes()})
        k, v = k_ref, v_ref
        if q_lens is None:
            expected[args.index(out_arg)] = reference.attention(values[q_arg], k, v, seq_lens=seq_lens, causal=causal,
                                                                scale=scale, **variants)
        else:  # each sequence on its own, its queries aligned to the end of its keys; rows past the last stay NaN
            expected[args.index(out_arg)] = packed_attention(values[q_arg], q_lens, values[out_arg], k, v, seq_lens,
                                                             causal=causal, scale=scale, **variants)
    return CheckCase(args=call, expected=expected)
