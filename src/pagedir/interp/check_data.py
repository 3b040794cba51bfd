"""The values a check's case is made of: random data of an element type, fp8 quantization, the variants'
operands, the edge draw's lengths and broken pages, cache pools placed in their arguments, and the
reference of packed queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir import reference
from pagedir.interp.memory import InterpError
from pagedir.kv_caches import POOL_LAYOUTS
from pagedir.variants import VARIANTS

@dataclass
class CheckCase:
    """Arguments for one run and what some of them must hold afterwards."""

    #: One entry per function argument: numpy arrays (uploaded), DeviceArrays, scalars.
    args: list[Any]
    #: Argument index -> expected contents after the run (compared with ``tolerance``).
    expected: dict[int, np.ndarray] = field(default_factory=dict)
    #: Absolute tolerance; None = by element type (TOLERANCE).
    tolerance: float | None = None
    #: Device arrays the arguments point at (pages): kept alive with the case.
    keep_alive: list[Any] = field(default_factory=list)


def dtype_of(name: str) -> Any:
    return {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": "bf16"}.get(name)


def host_values(array: np.ndarray, name: str) -> np.ndarray:
    """Random float32 data rounded to the element type ``name`` (bf16 stays float32, rounded)."""
    if name == "bf16":
        return reference.round_bf16(array)
    if name == "f16":
        return array.astype(np.float16)
    return array.astype(np.float32)


def random_argument(type_: ir.Type, rng: np.random.Generator) -> Any:
    """Random data of a memref or scalar type: floats of the element type, small integers, booleans."""
    if isinstance(type_, ir.MemRefType):
        name = str(type_.element_type)
        shape = tuple(type_.shape)
        if dtype_of(name) is not None:
            return host_values(rng.standard_normal(shape), name)
        if name == "i1":
            return rng.integers(0, 2, size=shape).astype(np.bool_)
        return rng.integers(0, 8, size=shape)
    return 0 if isinstance(type_, (ir.IndexType, ir.IntegerType)) else 1.0


def variant_inputs(names: list[str], heads_q: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The variants' operands among ``names``, drawn as each variant says (ALiBi slopes as models use
    them, sink logits around the scores' size), in the variants' order."""
    return {d.name: variant.draw(d.name, heads_q, rng) for variant in VARIANTS for d in variant.operands
            if d.name in names}


def fp8_quantized(values: np.ndarray, name: str, scaled: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fp8 bits, the values they stand for, the per-tensor scale) of ``values`` in format ``name``.

    With a scale, as serving stacks quantize a cache: scale = amax / the format's largest value, bits =
    fp8(values / scale), standing for fp8 values * scale; without, the values themselves rounded.
    NaN/Inf (stale slots) stay NaN/Inf (NaN where the format has no infinity)."""
    finite = np.abs(values[np.isfinite(values)])
    largest = np.nanmax(np.abs(reference.fp8_table(name)[np.isfinite(reference.fp8_table(name))]))
    scale = np.float32(finite.max() / largest if scaled and finite.size and finite.max() > 0 else 1.0)
    bits = reference.fp8_bits(values / scale, name)
    return bits, reference.fp8_values(bits, name) * scale, np.array([scale], dtype=np.float32)


def fp8_quantized_per_token(values: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fp8 bits, the values they stand for, the scales ``[B, Hkv, Sk]``) of ``values`` ``[B, Hkv, Sk, D]``
    quantized per (token, KV head) as vLLM's per-token-head quantization does: scale = amax of the
    token's row / the format's largest value (1 for a row of zeros), bits = fp8(values / scale). A
    stale row (NaN/Inf) gets a NaN scale: a kernel that reads a scale past seq_len sees NaN."""
    table = reference.fp8_table(name)
    largest = np.nanmax(np.abs(table[np.isfinite(table)]))
    with np.errstate(invalid="ignore"):
        amax = np.abs(values).max(axis=-1)
    scales = np.where(amax > 0, amax / largest, 1.0).astype(np.float32)
    scales[~np.isfinite(amax)] = np.nan
    with np.errstate(invalid="ignore"):
        bits = reference.fp8_bits(values / scales[..., None], name)
    return bits, reference.fp8_values(bits, name) * scales[..., None], scales


def scale_pool(scales: np.ndarray, block_table: np.ndarray, seq_lens: np.ndarray, block_size: int, layout: str,
               num_blocks: int) -> np.ndarray:
    """The scale cache pool ``[num_blocks, block_size, Hkv]`` (nhd) or ``[num_blocks, Hkv, block_size]``
    (hnd) holding ``scales`` ``[B, Hkv, Sk]`` in the blocks the K/V caches' ``block_table`` gives each
    sequence (up to seq_len, as :func:`reference.block_caches` fills them); NaN elsewhere."""
    batch, heads_kv, seq_k = scales.shape
    pool = np.full((num_blocks, heads_kv, block_size), np.nan, dtype=np.float32)
    for b in range(batch):
        for slot in range(-(-int(seq_lens[b]) // block_size)):
            tokens = scales[b, :, slot * block_size : (slot + 1) * block_size]
            pool[block_table[b, slot], :, : tokens.shape[1]] = tokens
    return POOL_LAYOUTS[layout].from_heads_first(pool)


def place_pool(values: dict[Any, Any], pool: ir.Value, array: np.ndarray) -> None:
    """Give ``pool`` (an argument, or a ``memref.subview`` of one: a half of a stacked K/V cache) the contents
    ``array``: a subview's argument is NaN wherever no pool placed in it lies (its other halves)."""
    owner = pool.owner
    if isinstance(owner, ir.Block):
        values[pool] = array
        return
    if owner.name != "memref.subview" or not isinstance(owner.operands[0].owner, ir.Block):
        raise InterpError(f"cannot draw the cache pool {pool.type}: a pool must be an argument or a memref.subview "
                          f"of one, got {owner.name}", owner.location)
    subview = owner.opview
    source = subview.operands[0]
    sizes = list(subview.static_sizes)
    steps = [1 if size == 1 else step for step, size in zip(subview.static_strides, subview.static_sizes)]  # one element
    if ir.ShapedType.get_dynamic_stride_or_offset() in [*subview.static_offsets, *steps]:
        raise InterpError("cannot draw a cache pool through a memref.subview with dynamic offsets or strides",
                          owner.location)
    if min(steps) < 1:  # a step of 0 reads one element over and over: no pool of distinct blocks to draw
        raise InterpError(f"cannot draw a cache pool through a memref.subview of steps {steps}: a step must be "
                          f"at least 1", owner.location)
    dynamic = iter(extent for extent, stated in zip(array.shape, ir.MemRefType(pool.type).shape)
                   if stated == ir.ShapedType.get_dynamic_size())
    sizes = [next(dynamic) if size == ir.ShapedType.get_dynamic_size() else size for size in sizes]
    if source not in values:
        # a dynamic dim of the argument is as long as the subview's dim there (a memref.dim of it)
        shape = [size if extent == ir.ShapedType.get_dynamic_size() else extent
                 for extent, size in zip(ir.MemRefType(source.type).shape, sizes)]
        nan = reference.bf16_bits(np.float32(np.nan)) if array.dtype == np.uint16 else np.nan  # bf16 pools hold bits
        values[source] = np.full(shape, nan, dtype=array.dtype)
    # static steps (every other block of the tensor ...) pick every step-th element from the offset on
    region = tuple(slice(offset, offset + (size - 1) * step + 1, step)
                   for offset, size, step in zip(subview.static_offsets, sizes, steps))
    values[source][region] = array.reshape(values[source][region].shape)  # the dropped dims are of size 1


def varlen_query_lengths(batch: int, max_q: int, rng: np.random.Generator, edges: bool = False) -> np.ndarray:
    """Queries per sequence of a packed batch: a prefill chunk of ``max_q``, a decode row, then any. The
    edge draw: no query for the empty sequence 0 (:func:`edge_lengths`) and for sequence 3, which has keys;
    ``max_q`` for the full sequence 1, 1 for sequence 2."""
    lengths = rng.integers(1, max_q + 1, size=batch)
    lengths[:1] = max_q
    if batch > 1:
        lengths[1] = 1
    if edges:
        lengths[:4] = [0, max_q, 1, 0][:batch]
    return lengths


def edge_lengths(batch: int, seq_k: int, rng: np.random.Generator) -> np.ndarray:
    """Sequence lengths of the edge draw: 0 (no key, no page: an empty CSR sequence too), the capacity, 1,
    then any (one sequence: the capacity)."""
    lengths = rng.integers(1, seq_k + 1, size=batch).astype(np.int32)
    lengths[:3] = ([0, seq_k, 1] if batch > 1 else [seq_k])[:batch]
    return lengths


def full_sequence(lengths: Any) -> int:
    """The sequence of the edge draw that holds the capacity (:func:`edge_lengths`)."""
    return 1 if np.size(lengths) > 1 else 0


def nan_keys(k: np.ndarray, lengths: Any, seq_q: int) -> np.ndarray:
    """``k`` with a NaN in one element of a live key of the last KV head of the full sequence, and the key
    before it all +Inf (its scores are NaN): with causal masking only the later rows see them."""
    lengths = np.broadcast_to(np.asarray(lengths), (k.shape[0],))
    if not k.shape[0]:
        return k
    b = full_sequence(lengths)
    length = int(lengths[b])
    key = min(length - 1, max(0, length - seq_q + seq_q // 2))  # query rows i >= Sq // 2 see it
    k = k.copy()
    if length:
        k[b, -1, key, 0] = np.nan
    if key:
        k[b, -1, key - 1, :] = np.inf
    return k


def ids_outside_the_pool(table: np.ndarray, ref: np.ndarray, lengths: np.ndarray, block_size: int,
                         num_blocks: int) -> np.ndarray:
    """Block ids outside the pool in slots the full sequence owns (-1 in its first, ``num_blocks`` in its
    second when it owns three or more), and the reference ``ref`` with their tokens 0, as they read."""
    b = full_sequence(lengths)
    owned = -(-int(lengths[b]) // block_size)
    ref = ref.copy()
    for slot, block in ((0, -1), (1, num_blocks))[: 1 if owned < 3 else 2]:
        if slot < owned:
            table[b, slot] = block
            ref[b, :, slot * block_size : (slot + 1) * block_size] = 0
    return ref


def packed_attention(q: np.ndarray, q_lens: np.ndarray, out: np.ndarray, k: np.ndarray, v: np.ndarray,
                     seq_lens: np.ndarray | None, **options: Any) -> np.ndarray:
    """The reference for packed queries ``[total_q, Hq, D]``: each sequence on its own, its ``q_lens[b]``
    rows aligned to the end of its keys; rows past the last keep ``out``'s contents."""
    packed, first = np.array(out), 0
    for b, count in enumerate(q_lens):
        rows = q[first : first + count]  # [count, Hq, D]
        lens = seq_lens[b : b + 1] if seq_lens is not None else None
        result = reference.attention(np.swapaxes(rows, 0, 1)[None], k[b : b + 1], v[b : b + 1], seq_lens=lens, **options)
        packed[first : first + count] = np.swapaxes(result[0], 0, 1)
        first += count
    return packed
