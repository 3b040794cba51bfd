"""Reference semantics of paged attention in numpy, and builders of paged caches.

* :func:`attention` is the meaning of ``rock.attention`` (and of every level the
  kernel pipeline lowers it to): ``out = softmax(scale * Q K^T + mask) V`` with the
  softmax in float32, GQA, ``seq_lens`` masking and causal masking; a fully masked
  row gives zeros.
* :func:`paged_cache` cuts dense K (or V) ``[B, Hkv, Sk, D]`` into pages the way
  ``rock.deref`` reads them (per batch ``[Hkv, Sk, D]`` row-major, flattened, cut
  into pages of ``tokens_per_page * D`` elements), uploads the pages to a device
  memory in shuffled order and returns the ``[B, P, 1]`` table of their i64 device
  addresses, with null (0) for pages wholly past ``seq_lens``.
* :func:`fill_stale` fills the slots past ``seq_lens`` with NaN and Inf, as stale
  slots of a reused cache may hold (checks use it: masked keys must not be read).
* :func:`block_caches` scatters dense K and V into cache pools through a block table (a server's cache:
  shuffled and shared blocks, NaN in unused ones); :func:`stack_kv_cache` and :func:`split_kv_cache` turn
  the two pools into the one tensor vLLM and FlashInfer allocate and back.
* :func:`from_vllm` turns a vLLM block table (int32 block indices into a KV cache
  of ``[num_blocks, ...]`` blocks) into such pointer tables.

bf16: numpy has no bfloat16, so bf16 data lives on the device as its uint16 bit
patterns; :func:`bf16_bits` and :func:`bf16_values` convert at the edges (round to
nearest even, like the hardware's conversion).

This module uses nothing else of pagedir but the score variants' formulas
(:mod:`pagedir.variants`; the device is anything with
``upload(array) -> obj`` where ``obj.address`` is an int).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pagedir.kv_caches import POOL_LAYOUTS
from pagedir.variants import VARIANTS, KeyRange, active_variants, query_position, score_scale

# ----------------------------------------------------------------------------
# bf16 as uint16 bit patterns


def bf16_bits(values: Any) -> np.ndarray:
    """float values -> uint16 bf16 bit patterns (round to nearest even; NaN stays NaN)."""
    array = np.asarray(values)
    if array.dtype == np.uint16:
        return array
    if array.dtype.name == "bfloat16":  # ml_dtypes arrays, when that package is present
        return array.view(np.uint16)
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    rounded = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(array.astype(np.float32))
    return np.where(nan, np.uint16(0x7FC0), rounded).astype(np.uint16)


def bf16_values(bits: Any) -> np.ndarray:
    """uint16 bf16 bit patterns -> float32 values (exact)."""
    array = np.asarray(bits)
    if array.dtype.name == "bfloat16":
        array = array.view(np.uint16)
    return (array.astype(np.uint32) << 16).view(np.float32)


def round_bf16(values: Any) -> np.ndarray:
    """float32 values rounded to the nearest bf16 value (still float32)."""
    return bf16_values(bf16_bits(values))


def as_float32(array: Any) -> np.ndarray:
    """Any float array (f16, f32, ml_dtypes bf16) as float32."""
    array = np.asarray(array)
    if array.dtype.name == "bfloat16":
        return bf16_values(array)
    return array.astype(np.float32)


# ----------------------------------------------------------------------------
# fp8 as uint8 bit patterns

#: fp8 formats by MLIR type name: (exponent bits, mantissa bits, exponent bias, special codes).
#: FNUZ (AMD gfx942): no infinities, no negative zero, 0x80 is the only NaN. OCP E4M3FN (gfx950):
#: no infinities, S.1111.111 is NaN. OCP E5M2: IEEE-like, S.11111.00 is infinite, S.11111.xx NaN.
FP8_FORMATS = {
    "f8E4M3FNUZ": (4, 3, 8, "fnuz"),
    "f8E5M2FNUZ": (5, 2, 16, "fnuz"),
    "f8E4M3FN": (4, 3, 7, "fn"),
    "f8E5M2": (5, 2, 15, "ieee"),
}


def fp8_table(name: str) -> np.ndarray:
    """The float32 value of each of the 256 codes of fp8 format ``name`` (NaN where a code is NaN)."""
    exp_bits, man_bits, bias, special = FP8_FORMATS[name]
    codes = np.arange(256, dtype=np.int64)
    sign = np.where(codes >> 7, -1.0, 1.0)
    exponent = (codes >> man_bits) & ((1 << exp_bits) - 1)
    mantissa = codes & ((1 << man_bits) - 1)
    magnitude = np.where(exponent == 0, mantissa * 2.0 ** (1 - bias - man_bits),
                         (1 + mantissa / 2.0**man_bits) * 2.0 ** (exponent - bias))
    values = (sign * magnitude).astype(np.float32)
    top = exponent == (1 << exp_bits) - 1
    if special == "fnuz":
        values[0x80] = np.nan
    elif special == "fn":
        values[top & (mantissa == (1 << man_bits) - 1)] = np.nan
    else:
        values[top & (mantissa == 0)] = sign[top & (mantissa == 0)] * np.inf
        values[top & (mantissa != 0)] = np.nan
    return values


def fp8_values(bits: Any, name: str) -> np.ndarray:
    """uint8 fp8 bit patterns of format ``name`` -> float32 values (exact)."""
    return fp8_table(name)[np.asarray(bits).astype(np.uint8)]


def fp8_bits(values: Any, name: str) -> np.ndarray:
    """float values -> uint8 fp8 bit patterns: round to nearest, ties to even, finite values past
    the largest saturating to it; NaN to NaN; +-Inf to +-Inf where the format has them, else NaN."""
    table = fp8_table(name)
    array = np.asarray(values, dtype=np.float32)
    positive = np.array([code for code in range(128) if np.isfinite(table[code])], dtype=np.int64)
    magnitudes = table[positive]  # increasing with the code
    size = np.abs(array).reshape(-1)
    above = np.clip(np.searchsorted(magnitudes, size), 1, len(positive) - 1)
    below = above - 1
    gap_below, gap_above = size - magnitudes[below], magnitudes[above] - size
    tie = gap_below == gap_above
    pick = np.where(tie, np.where(positive[below] % 2 == 0, below, above), np.where(gap_below < gap_above, below, above))
    pick = np.where(size >= magnitudes[-1], len(positive) - 1, pick)  # saturate
    codes = positive[pick]
    negative = np.signbit(array.reshape(-1)) & ~((FP8_FORMATS[name][3] == "fnuz") & (codes == 0))
    codes = codes | np.where(negative, 0x80, 0)
    nan_code = np.flatnonzero(np.isnan(table))[0]
    codes = np.where(np.isnan(size), nan_code, codes)
    infinite = np.isinf(size)
    if np.isinf(table).any():
        codes = np.where(infinite, np.where(array.reshape(-1) < 0, 0xFC, 0x7C), codes)
    else:
        codes = np.where(infinite, nan_code, codes)
    return codes.astype(np.uint8).reshape(array.shape)


def round_fp8(values: Any, name: str) -> np.ndarray:
    """float values rounded to fp8 format ``name`` (float32)."""
    return fp8_values(fp8_bits(values, name), name)


# ----------------------------------------------------------------------------
# Attention


def attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    seq_lens: Any = None,
    causal: bool = False,
    scale: float | None = None,
    **variants: Any,
) -> np.ndarray:
    """Paged-attention semantics on dense tensors: q ``[B, Hq, Sq, D]``, k/v ``[B, Hkv, Sk, D]``.

    q head ``h`` uses kv head ``h // (Hq // Hkv)``. Keys at positions ``>= seq_lens[b]``
    are masked; with ``causal`` query ``i`` sees keys ``j <= i + seq_lens[b] - Sq``
    (``seq_lens[b] = Sk`` when not given). ``scale`` defaults to ``1/sqrt(D)``.
    Masked keys do not take part at all: whatever their K and V slots hold (NaN,
    Inf) never reaches the output. Computed in float32; a row with every key
    masked gives zeros. Returns float32 ``[B, Hq, Sq, D]``.

    Variants (:func:`variant_attention`), by their attributes' and operands' names (pagedir.variants):
    ``window_left``, ``softcap``, ``alibi_slopes`` and ``sinks`` (``[Hq]`` each).
    """
    check_variant_names(variants)
    if any(value is not None for value in variants.values()):
        return variant_attention(q, k, v, seq_lens=seq_lens, causal=causal, scale=scale, **variants)
    q, k, v = as_float32(q), as_float32(k), as_float32(v)
    batch, heads_q, seq_q, head_dim = q.shape
    heads_kv, seq_k = k.shape[1], k.shape[2]
    if heads_q % heads_kv:
        raise ValueError(f"num_heads_q ({heads_q}) must be a multiple of num_heads_kv ({heads_kv})")
    group = heads_q // heads_kv
    scale = np.float32(score_scale(scale, head_dim))
    lengths = np.full(batch, seq_k, dtype=np.int64) if seq_lens is None else np.asarray(seq_lens, dtype=np.int64)
    out = np.zeros(q.shape, dtype=np.float32)
    # Masked keys are dropped, never multiplied by a weight of 0: their slots may hold anything
    # (a stale cache slot can hold NaN or Inf, and 0 * NaN is NaN).
    for b in range(batch):
        keys = np.repeat(k[b, :, : lengths[b]], group, axis=0)  # [Hq, seq_len, D]
        values = np.repeat(v[b, :, : lengths[b]], group, axis=0)
        if not causal:
            out[b] = softmax_attention(q[b], keys, values, scale)
            continue
        for i in range(seq_q):
            _, end = KeyRange(causal=True).visible(query_position(i, int(lengths[b]), seq_q), int(lengths[b]))
            seen = max(0, end)
            out[b, :, i : i + 1] = softmax_attention(q[b, :, i : i + 1], keys[:, :seen], values[:, :seen], scale)
    return out


def check_variant_names(variants: dict[str, Any]) -> None:
    """The keywords of the variants are their attributes' and operands' names (pagedir.variants)."""
    known = {name for variant in VARIANTS for name in variant.names()}
    if unknown := sorted(set(variants) - known):
        raise TypeError(f"attention() got an unexpected keyword argument {unknown[0]!r}")


def variant_attention(q: Any, k: Any, v: Any, *, seq_lens: Any = None, causal: bool = False, scale: float | None = None,
                      **variants: Any) -> np.ndarray:
    """Attention with the score modifications of ``rock.attention``, from their definitions.

    Query ``i`` of sequence ``b`` sits at the absolute position ``i_pos = i + seq_len - Sq``.
    It sees keys ``j < seq_len``, with ``causal`` only ``j <= i_pos``, with ``window_left``
    only ``j >= i_pos - window_left``. Per head ``h`` and visible key ``j``:
    ``s = scale * q.k``; ``softcap``: ``s = softcap * tanh(s / softcap)``; ``alibi_slopes``:
    ``s += slope[h] * (j - i_pos)``. The weights are ``exp(s_j) / (sum_j exp(s_j) +
    exp(sinks[h]))`` (no sink term without ``sinks``): the sink takes part in the
    denominator only. A row without visible keys gives zeros, sinks or not. Each variant's formula is
    its class's in pagedir.variants, applied in their order there.
    """
    check_variant_names(variants)
    q, k, v = as_float32(q), as_float32(k), as_float32(v)
    batch, heads_q, seq_q, head_dim = q.shape
    heads_kv, seq_k = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    scale = np.float32(score_scale(scale, head_dim))
    lengths = np.full(batch, seq_k, dtype=np.int64) if seq_lens is None else np.asarray(seq_lens, dtype=np.int64)
    keys_seen = KeyRange.of({**variants, "causal": causal})
    modified = active_variants(variants)
    out = np.zeros(q.shape, dtype=np.float32)
    for b in range(batch):
        length = int(lengths[b])
        for i in range(seq_q):
            position = query_position(i, length, seq_q)
            first, end = keys_seen.visible(position, length)
            if end <= first:
                continue
            keys = np.repeat(k[b, :, first:end], group, axis=0)  # [Hq, L, D]: only visible keys, never masked by 0
            values = np.repeat(v[b, :, first:end], group, axis=0)
            scores = np.einsum("hd,hld->hl", q[b, :, i], keys).astype(np.float32) * scale
            for variant in modified:
                scores = variant.scores(scores, first, end, position)
            top = scores.max(axis=-1)
            for variant in modified:
                top = variant.row_max(top)
            weights = np.exp(scores - top[:, None])
            total = weights.sum(axis=-1)
            for variant in modified:
                total = variant.total(total, top)
            out[b, :, i] = np.einsum("hl,hld->hd", weights, values) / total[:, None]
    return out


def softmax_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: np.float32) -> np.ndarray:
    """``softmax(scale * q k^T) v`` per head over every key given (float32; zeros when there is none)."""
    if k.shape[1] == 0:
        return np.zeros(q.shape, dtype=np.float32)
    with np.errstate(invalid="ignore"):  # a NaN or Inf key a row sees makes the row NaN, as the math says
        scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale  # [H, S, L]
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return (np.matmul(weights, v) / weights.sum(axis=-1, keepdims=True)).astype(np.float32)


def attention_loops(q: Any, k: Any, v: Any, *, seq_lens: Any = None, causal: bool = False, scale: float | None = None,
                    window_left: int | None = None, softcap: float | None = None, alibi_slopes: Any = None,
                    sinks: Any = None) -> np.ndarray:
    """The same semantics written as plain loops, one query row at a time (slow; for tests)."""
    q, k, v = as_float32(q), as_float32(k), as_float32(v)
    batch, heads_q, seq_q, head_dim = q.shape
    heads_kv, seq_k = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    scale = 1.0 / np.sqrt(head_dim) if scale is None else scale
    out = np.zeros(q.shape, dtype=np.float32)
    for b in range(batch):
        length = seq_k if seq_lens is None else int(seq_lens[b])
        for h in range(heads_q):
            kv = h // group
            for i in range(seq_q):
                position = i + length - seq_q
                visible = [j for j in range(seq_k) if j < length and (not causal or j <= position)
                           and (window_left is None or j >= position - window_left)]
                if not visible:
                    continue
                scores = [float(np.dot(q[b, h, i], k[b, kv, j])) * scale for j in visible]
                if softcap is not None:
                    scores = [softcap * math.tanh(s / softcap) for s in scores]
                if alibi_slopes is not None:
                    scores = [s + float(alibi_slopes[h]) * (j - position) for s, j in zip(scores, visible)]
                sink = [] if sinks is None else [float(sinks[h])]
                top = max(scores + sink)
                weights = [np.exp(s - top) for s in scores]
                total = sum(weights) + sum(math.exp(s - top) for s in sink)
                for weight, j in zip(weights, visible):
                    out[b, h, i] += (weight / total) * v[b, kv, j]
    return out


# ----------------------------------------------------------------------------
# Paged caches


@dataclass
class PagedCache:
    """A paged K or V cache on a device: the table and the pages it points at."""

    #: ``[B, P, 1]`` int64 device addresses (0 = null page).
    table: np.ndarray
    #: Elements per page (the ``S`` of ``rock.deref``'s ``memref<B x P x S x T>``).
    page_size: int
    #: Device arrays of the pages (keep them alive as long as the table is used).
    pages: list[Any] = field(default_factory=list)


#: What a stale slot of a cache may hold; :func:`fill_stale` writes them in turn.
STALE_VALUES = (np.nan, np.inf, -np.inf)


def fill_stale(dense: Any, seq_lens: Any) -> np.ndarray:
    """A copy of K or V ``[B, Hkv, Sk, D]`` whose slots past ``seq_lens[b]`` hold NaN, +Inf and -Inf in turn.

    A real cache's slots past a sequence's length hold whatever was there before
    (vLLM zeroes them for this reason); every key of them is masked, so none of
    it may reach the output. ``seq_lens`` None: nothing is past, a plain copy.
    """
    stale = np.array(dense)
    if seq_lens is None:
        return stale
    for b, length in enumerate(np.asarray(seq_lens, dtype=np.int64)):
        slots = stale[b, :, length:]
        slots[...] = np.resize(np.array(STALE_VALUES, dtype=stale.dtype), slots.size).reshape(slots.shape)
    return stale


def null_pages(batch_flat_tokens: np.ndarray, seq_lens: Any, page_size: int) -> np.ndarray:
    """``[B, P]`` booleans: page p of batch b holds only tokens at positions >= seq_lens[b]."""
    tokens = batch_flat_tokens.reshape(-1, page_size)  # [P, S] token position of each element
    first_token = tokens.min(axis=1)
    lengths = np.asarray(seq_lens, dtype=np.int64)
    return first_token[None, :] >= lengths[:, None]


def paged_cache(
    device: Any,
    dense: Any,
    tokens_per_page: int | None = None,
    *,
    page_size: int | None = None,
    seq_lens: Any = None,
    rng: np.random.Generator | None = None,
    dtype: Any = None,
    placement: str = "shuffled",
) -> PagedCache:
    """Upload dense K or V ``[B, Hkv, Sk, D]`` as shuffled pages; returns the pointer table.

    Give the page size in tokens (``tokens_per_page``: pages of ``tokens * D``
    elements) or in elements (``page_size``, as in the IR). Per batch the cache
    ``[Hkv, Sk, D]`` is flattened row-major and cut into ``P = ceil(Hkv*Sk*D / S)`` pages
    (the last one partly filled, its tail zeros, when ``S`` does not divide).
    Pages are uploaded in a random order (``rng``), so consecutive pages live at
    unrelated addresses; pages wholly past ``seq_lens`` are not uploaded and get a
    null pointer. ``dtype`` is the element type stored on the device (numpy dtype,
    or ``"bf16"`` for uint16 bit patterns); default: the array's own. ``placement``
    (:data:`PAGE_PLACEMENTS`): "adjacent" uploads each sequence's pages back to back
    (page ``p + 1`` right after page ``p``), "switching" alternates runs of
    :data:`SWITCH_RUN` adjacent pages with runs of as many pages uploaded one by one
    in a random order, so a sequence switches between the two mid-way.
    """
    if placement not in PAGE_PLACEMENTS:
        raise ValueError(f"unknown page placement {placement!r} (known: {', '.join(PAGE_PLACEMENTS)})")
    dense = np.asarray(dense)
    batch, heads_kv, seq_k, head_dim = dense.shape
    if page_size is None:
        if tokens_per_page is None:
            raise ValueError("give tokens_per_page or page_size")
        page_size = tokens_per_page * head_dim
    per_batch = heads_kv * seq_k * head_dim
    if page_size <= 0:
        raise ValueError(f"page_size must be positive, got {page_size}")
    stored = to_device_dtype(dense, dtype)
    num_pages = -(-per_batch // page_size)  # the last page partly filled when it does not divide
    flat = np.zeros((batch, num_pages * page_size), dtype=stored.dtype)
    flat[:, :per_batch] = stored.reshape(batch, per_batch)
    flat = flat.reshape(batch, num_pages, page_size)
    token_of = np.concatenate([(np.arange(per_batch) // head_dim) % seq_k,
                               np.full(num_pages * page_size - per_batch, seq_k)])
    null = np.zeros((batch, num_pages), dtype=bool)
    if seq_lens is not None:
        null = null_pages(token_of, seq_lens, page_size)
    rng = rng if rng is not None else np.random.default_rng(0)
    table = np.zeros((batch, num_pages, 1), dtype=np.int64)
    pages = []
    if placement != "shuffled":
        for b, run in adjacent_runs(~null, placement, rng):  # each run of pages in one allocation
            block = device.upload(np.ascontiguousarray(flat[b, run[0] : run[-1] + 1]))
            pages.append(block)
            table[b, run, 0] = block.address + np.arange(len(run)) * page_size * stored.dtype.itemsize
        return PagedCache(table=table, page_size=page_size, pages=pages)
    for slot in rng.permutation(batch * num_pages):
        b, p = divmod(int(slot), num_pages)
        if null[b, p]:
            continue
        page = device.upload(np.ascontiguousarray(flat[b, p]))
        pages.append(page)
        table[b, p, 0] = page.address
    return PagedCache(table=table, page_size=page_size, pages=pages)


#: Where a checked cache's pages lie: shuffled (unrelated addresses), adjacent (each sequence's pages
#: back to back), switching (runs of adjacent pages alternating with shuffled ones).
PAGE_PLACEMENTS = ("shuffled", "adjacent", "switching")
#: Pages per run of a "switching" placement (not a multiple of a tile's pages, so runs start mid-tile).
SWITCH_RUN = 6


def adjacent_runs(live: np.ndarray, placement: str, rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    """(sequence, consecutive page indices) to upload as one allocation each, in upload order: per sequence
    each stretch of live pages ``live[b]`` (null pages cut them: a head's pages past its length) as one run
    ("adjacent"), or cut into runs of SWITCH_RUN pages alternately whole and cut into single pages
    ("switching"); the single pages in a random order."""
    runs, singles = [], []
    for b in range(live.shape[0]):
        pages = np.nonzero(live[b])[0]
        stretches = np.split(pages, np.nonzero(np.diff(pages) != 1)[0] + 1) if pages.size else []
        chunk = 0
        for stretch in stretches:
            step = SWITCH_RUN if placement == "switching" else max(len(stretch), 1)
            for start in range(0, len(stretch), step):
                run = stretch[start : start + step]
                if placement == "switching" and chunk % 2:
                    singles += [(b, run[i : i + 1]) for i in range(len(run))]
                else:
                    runs.append((b, run))
                chunk += 1
    return runs + [singles[i] for i in rng.permutation(len(singles))]


def block_id_order(num_blocks: int, placement: str, rng: np.random.Generator) -> np.ndarray:
    """The order block ids are handed to the sequences' slots: shuffled, in order ("adjacent": each sequence's
    ids consecutive), or runs of SWITCH_RUN ids alternately in order and shuffled ("switching")."""
    if placement == "shuffled":
        return rng.permutation(num_blocks)
    ids = np.arange(num_blocks)
    if placement == "switching":
        for start in range(SWITCH_RUN, num_blocks, 2 * SWITCH_RUN):
            ids[start : start + SWITCH_RUN] = rng.permutation(ids[start : start + SWITCH_RUN])
    return ids


def to_device_dtype(array: np.ndarray, dtype: Any) -> np.ndarray:
    """``array`` converted to the element type stored on the device (``"bf16"``: uint16 bits)."""
    if dtype is None:
        return array.view(np.uint16) if array.dtype.name == "bfloat16" else array
    if isinstance(dtype, str) and dtype == "bf16":
        return bf16_bits(array)
    return np.asarray(array).astype(dtype)


VLLM_LAYOUTS = ("vllm", "vllm-pa", "nhd", "hnd")


def vllm_dense(cache: Any, block_table: Any, *, kind: str, layout: str = "nhd", num_tokens: int | None = None) -> np.ndarray:
    """Gather a vLLM cache through its block table into dense ``[B, Hkv, Sk, D]`` (``Sk`` = blocks x block size).

    Layouts of ``cache`` (``[num_blocks, ...]``):

    * ``"nhd"``: ``[num_blocks, block_size, Hkv, D]`` (flash-attention layout), K and V alike;
    * ``"hnd"``: ``[num_blocks, Hkv, block_size, D]``;
    * ``"vllm-pa"`` (or ``"vllm"``): the original paged-attention kernels' layout, K ``[num_blocks, Hkv, D/x,
      block_size, x]`` and V ``[num_blocks, Hkv, D, block_size]`` (``kind`` says which).

    Block indices < 0 (unused slots) give zeros.
    """
    cache = np.asarray(cache)
    table = np.asarray(block_table, dtype=np.int64)
    layout = "vllm-pa" if layout == "vllm" else layout
    if layout in POOL_LAYOUTS and (layout != "vllm-pa" or cache.ndim == {"k": 5, "v": 4}.get(kind)):
        blocks = POOL_LAYOUTS[layout].to_heads_first(cache)  # -> [n, Hkv, bs, D]
    else:
        raise ValueError(f"unknown vLLM layout {layout!r} (known: {', '.join(VLLM_LAYOUTS)}) or kind {kind!r}")
    _, heads_kv, block_size, head_dim = blocks.shape
    batch, max_blocks = table.shape
    gathered = blocks[np.clip(table, 0, None)]  # [B, max_blocks, Hkv, bs, D]
    gathered = np.where((table >= 0)[:, :, None, None, None], gathered, 0)
    dense = np.transpose(gathered, (0, 2, 1, 3, 4)).reshape(batch, heads_kv, max_blocks * block_size, head_dim)
    if num_tokens is not None:
        dense = dense[:, :, :num_tokens]
    return np.ascontiguousarray(dense)


def from_vllm(
    device: Any,
    key_cache: Any,
    value_cache: Any,
    block_table: Any,
    seq_lens: Any,
    *,
    layout: str = "nhd",
    tokens_per_page: int | None = None,
    rng: np.random.Generator | None = None,
    dtype: Any = None,
) -> tuple[PagedCache, PagedCache]:
    """K and V pointer tables for ``rock.attention`` from a vLLM block table.

    A vLLM block holds one slice of tokens of *all* KV heads, while a pagedir page
    holds consecutive elements of the per-batch ``[Hkv, Sk, D]`` cache, so the data
    is regathered (``vllm_dense``) and uploaded as new pages of ``tokens_per_page``
    tokens (default: vLLM's block size); pages wholly past ``seq_lens`` are null.
    ``Sk`` is ``max_blocks * block_size``.
    """
    dense_k = vllm_dense(key_cache, block_table, kind="k", layout=layout)
    dense_v = vllm_dense(value_cache, block_table, kind="v", layout=layout)
    block_size = dense_k.shape[2] // np.asarray(block_table).shape[1]
    tokens = tokens_per_page or block_size
    rng = rng if rng is not None else np.random.default_rng(0)
    k = paged_cache(device, dense_k, tokens, seq_lens=seq_lens, rng=rng, dtype=dtype)
    v = paged_cache(device, dense_v, tokens, seq_lens=seq_lens, rng=rng, dtype=dtype)
    return k, v


# ----------------------------------------------------------------------------
# Serving page tables consumed in place: block tables (vLLM) and CSR tables (FlashInfer)

KV_LAYOUTS = tuple(POOL_LAYOUTS)


@dataclass
class BlockCaches:
    """K and V cache pools with the block table that places each sequence's tokens in them.

    ``k_pool``/``v_pool``: ``[num_blocks, block_size, Hkv, D]`` (``nhd``), ``[num_blocks, Hkv,
    block_size, D]`` (``hnd``), or vLLM's paged-attention caches (``vllm-pa``: K ``[num_blocks, Hkv, D/x,
    block_size, x]``, V ``[num_blocks, Hkv, D, block_size]``, :func:`pool_to_vllm_pa`); ``block_table``:
    int32 ``[B, max_blocks]``; ``seq_lens``: int32 ``[B]``.
    """

    k_pool: np.ndarray
    v_pool: np.ndarray
    block_table: np.ndarray
    seq_lens: np.ndarray
    layout: str

    def kv_cache(self, form: str = "stacked1") -> np.ndarray:
        """K and V in the one tensor of ``form`` (:func:`stack_kv_cache`)."""
        return stack_kv_cache(self.k_pool, self.v_pool, form)


def stack_kv_cache(k_pool: Any, v_pool: Any, form: str = "stacked1") -> np.ndarray:
    """The one tensor holding K and V pools as an engine allocates it (``pagedir-gen attention --kv-cache``):
    ``stacked0`` ``[2, num_blocks, ...]`` (vLLM FlashAttention), ``stacked1`` ``[num_blocks, 2, ...]`` (vLLM
    Triton, FlashInfer), ``...`` a block of the pools' layout; K at index 0, V at 1."""
    return _stacked(form).stack(k_pool, v_pool)["kv_cache"]


def split_kv_cache(kv_cache: Any, form: str = "stacked1") -> tuple[np.ndarray, np.ndarray]:
    """(K pool, V pool) of a stacked ``kv_cache`` (:func:`stack_kv_cache`): views, no copy."""
    return _stacked(form).split(kv_cache=kv_cache)


def _stacked(form: str):
    from pagedir.kv_caches import KV_CACHES

    stacked = {name: cache for name, cache in KV_CACHES.items() if cache.axis is not None}
    if form not in stacked:
        raise ValueError(f"unknown stacked K/V cache {form!r} (known: {', '.join(stacked)})")
    return stacked[form]


def block_caches(
    k: Any,
    v: Any,
    block_size: int,
    *,
    seq_lens: Any,
    layout: str = "nhd",
    num_blocks: int | None = None,
    rng: np.random.Generator | None = None,
    dtype: Any = None,
    share_first_block: bool = False,
    fill: float = np.nan,
    placement: str = "shuffled",
    element_bytes: int | None = None,
) -> BlockCaches:
    """Scatter dense K and V ``[B, Hkv, Sk, D]`` into cache pools through a shuffled block table.

    Sequence ``b`` gets ``ceil(seq_lens[b] / block_size)`` blocks of shuffled ids (``rng``);
    its remaining table slots hold ids of other blocks (any id: a kernel must not
    read past ``seq_lens``). Unused blocks hold ``fill`` (NaN), and the rest of a
    last block what the dense tensors hold there. With ``share_first_block``,
    sequence 1's first block is sequence 0's (prefix sharing): their first
    ``block_size`` tokens must be equal. ``num_blocks`` defaults to ``B * max_blocks``
    (``max_blocks = ceil(Sk / block_size)``); ``dtype`` and ``placement`` (the order of the
    ids, :func:`block_id_order`) as in :func:`paged_cache`. ``element_bytes``: the device's element
    size where the pools hold other values (fp8 values as float32), for vllm-pa's ``x``.
    """
    if layout not in KV_LAYOUTS:
        raise ValueError(f"unknown layout {layout!r} (known: {', '.join(KV_LAYOUTS)})")
    k, v = np.asarray(k), np.asarray(v)
    batch, heads_kv, seq_k, head_dim = k.shape
    lengths = np.asarray(seq_lens, dtype=np.int64)
    max_blocks = -(-seq_k // block_size)
    num_blocks = batch * max_blocks if num_blocks is None else num_blocks
    used = [-(-int(n) // block_size) for n in lengths]
    shared = share_first_block and batch > 1 and used[0] > 0 and used[1] > 0
    if shared and not (np.array_equal(k[0, :, :block_size], k[1, :, :block_size], equal_nan=True)
                       and np.array_equal(v[0, :, :block_size], v[1, :, :block_size], equal_nan=True)):
        raise ValueError("share_first_block: the first block of tokens of sequences 0 and 1 differ")
    needed = sum(used) - (1 if shared else 0)
    if needed > num_blocks:
        raise ValueError(f"the sequences need {needed} blocks, the pool has {num_blocks}")
    rng = rng if rng is not None else np.random.default_rng(0)
    if placement not in PAGE_PLACEMENTS:
        raise ValueError(f"unknown page placement {placement!r} (known: {', '.join(PAGE_PLACEMENTS)})")
    ids = iter(block_id_order(num_blocks, placement, rng))
    table = rng.integers(0, num_blocks, size=(batch, max_blocks)).astype(np.int32)  # unused slots: any block
    padded = max_blocks * block_size
    pools = []
    for dense in (k, v):
        stored = to_device_dtype(dense, dtype)
        filler = to_device_dtype(np.full(1, fill, dtype=np.float32), dtype if dtype is not None else stored.dtype)
        pools.append(np.full((num_blocks, heads_kv, block_size, head_dim), filler[0], dtype=stored.dtype))
    k_pool, v_pool = pools
    for b in range(batch):
        for slot in range(used[b]):
            if shared and b == 1 and slot == 0:
                table[1, 0] = table[0, 0]
                continue
            table[b, slot] = next(ids)
    for pool, dense in zip(pools, (k, v)):
        stored = to_device_dtype(dense, dtype)
        tokens = np.concatenate([stored, np.zeros((batch, heads_kv, padded - seq_k, head_dim), stored.dtype)], axis=2)
        for b in range(batch):
            for slot in range(used[b]):
                pool[table[b, slot]] = tokens[b, :, slot * block_size : (slot + 1) * block_size]
    k_pool, v_pool = POOL_LAYOUTS[layout].kv_from_heads_first(k_pool, v_pool, element_bytes)
    return BlockCaches(k_pool, v_pool, table, lengths.astype(np.int32), layout)


def blocks_dense(pool: Any, block_table: Any, *, layout: str = "nhd") -> np.ndarray:
    """Dense ``[B, Hkv, max_blocks * block_size, D]`` gathered from a pool through a block table
    (what ``rock.block_table_view`` presents; ids outside the pool give zeros)."""
    pool = np.asarray(pool)
    table = np.asarray(block_table, dtype=np.int64)
    table = np.where((table >= 0) & (table < pool.shape[0]), table, -1)
    kind = "v" if layout == "vllm-pa" and pool.ndim == 4 else "k"  # vllm-pa: the rank tells K from V
    return vllm_dense(pool, table, kind=kind, layout=layout)


def csr_from_block_table(block_table: Any, seq_lens: Any, block_size: int, *, nnz: int | None = None,
                         rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FlashInfer's ``(kv_indptr [B+1], kv_indices [nnz], kv_last_page_len [B])`` for the same pages.

    Sequence ``b`` keeps its first ``ceil(seq_lens[b] / block_size)`` block ids; ``nnz``
    (default: exactly their count) pads ``kv_indices`` with ids no sequence owns (random
    ones from ``rng``, else 0). A sequence of length 0 has no page and ``last_page_len`` 0.
    """
    table = np.asarray(block_table, dtype=np.int64)
    lengths = np.asarray(seq_lens, dtype=np.int64)
    pages = -(-lengths // block_size)
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = np.concatenate([table[b, : pages[b]] for b in range(len(lengths))] + [np.zeros(0, np.int64)])
    nnz = len(indices) if nnz is None else nnz
    if nnz < len(indices):
        raise ValueError(f"the sequences own {len(indices)} pages, more than nnz = {nnz}")
    pad = rng.integers(0, max(1, int(table.max(initial=0)) + 1), size=nnz - len(indices)) if rng is not None \
        else np.zeros(nnz - len(indices), np.int64)
    last = np.where(pages > 0, lengths - (pages - 1) * block_size, 0)
    return indptr, np.concatenate([indices, pad]).astype(np.int32), last.astype(np.int32)


def csr_seq_lens(kv_indptr: Any, kv_last_page_len: Any, block_size: int) -> np.ndarray:
    """Sequence lengths of a CSR page table: ``(pages - 1) * block_size + last`` (0 without pages)."""
    pages = np.diff(np.asarray(kv_indptr, dtype=np.int64))
    last = np.asarray(kv_last_page_len, dtype=np.int64)
    return np.where(pages > 0, (pages - 1) * block_size + last, 0)


def csr_block_table(kv_indptr: Any, kv_indices: Any, max_blocks: int) -> np.ndarray:
    """The block table ``[B, max_blocks]`` of a CSR page table (-1 in slots a sequence does not own)."""
    indptr = np.asarray(kv_indptr, dtype=np.int64)
    indices = np.asarray(kv_indices, dtype=np.int64)
    table = np.full((len(indptr) - 1, max_blocks), -1, dtype=np.int64)
    for b in range(len(indptr) - 1):
        owned = indices[indptr[b] : indptr[b + 1]][:max_blocks]
        table[b, : len(owned)] = owned
    return table


def vllm_key_cache_to_pool(key_cache: Any, layout: str = "hnd") -> np.ndarray:
    """vLLM's 5-D key cache ``[num_blocks, Hkv, D/x, block_size, x]`` as a pool of ``layout`` (a copy).

    The 5-D layout splits D; no view of it has rows of D contiguous elements, so it
    is converted once (e.g. when the cache is allocated), not per step."""
    cache = np.asarray(key_cache)
    n, heads, d_outer, block_size, x = cache.shape
    hnd = np.transpose(cache, (0, 1, 3, 2, 4)).reshape(n, heads, block_size, d_outer * x)
    return np.ascontiguousarray(hnd if layout == "hnd" else np.transpose(hnd, (0, 2, 1, 3)))


def vllm_value_cache_to_pool(value_cache: Any, layout: str = "hnd") -> np.ndarray:
    """vLLM's value cache ``[num_blocks, Hkv, D, block_size]`` as a pool of ``layout`` (a copy)."""
    hnd = np.transpose(np.asarray(value_cache), (0, 1, 3, 2))
    return np.ascontiguousarray(hnd if layout == "hnd" else np.transpose(hnd, (0, 2, 1, 3)))


def pool_to_vllm_pa(pool: Any, kind: str, layout: str = "nhd", element_bytes: int | None = None) -> np.ndarray:
    """A K (``kind = "k"``) or V (``"v"``) pool of ``layout`` (nhd or hnd) as vLLM's paged-attention cache (a
    copy): K ``[num_blocks, Hkv, D/x, block_size, x]`` with ``x = 16 bytes / element size``, V ``[num_blocks,
    Hkv, D, block_size]``; what ``pagedir-gen attention --kv-layout vllm-pa`` reads in place. The inverse of
    :func:`vllm_key_cache_to_pool` and :func:`vllm_value_cache_to_pool`. ``element_bytes``: the size ``x``
    counts in, where the pool holds the values in another type (default: its own)."""
    hnd = POOL_LAYOUTS[layout].to_heads_first(pool)
    k_cache, v_cache = POOL_LAYOUTS["vllm-pa"].kv_from_heads_first(hnd, hnd, element_bytes)
    return k_cache if kind == "k" else v_cache
