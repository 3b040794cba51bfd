"""Checking by execution: random paged data, a pass's input vs output, a kernel vs the reference.

* :class:`CheckCase`: inputs for one function and, optionally, the expected
  contents of some arguments. A function with ``rock.check = "<generator>"`` (what
  ``pagedir-gen`` marks its kernels with) gets its case from
  ``pagedir.interp.cases.<generator>.check_case(func_op, rng, device)``;
  attention-like functions (their arguments are ``q, k_table, v_table, [seq_lens],
  out``) get random Q, K/V cut into shuffled pages with null pointers past ragged
  ``seq_lens`` (NaN and Inf in the slots past them) and the reference output, and once more the edge
  case (:data:`EDGES`: lengths 0 and 1, null pages and ids outside the pool that hold keys, a NaN
  key; a dynamic batch also at 0 and 1 sequences, :func:`check_draws`); functions reading cache
  pools through ``rock.block_table_view`` get a server's cache (:func:`serving_case`); any other function gets random arrays of
  its argument types (i64 tables read through ``rock.deref`` point at random pages).
* :func:`check_pass` runs each function of a module before and after one pass on
  the same data (same seed, fresh device each) and compares every argument after
  the run. It returns a :class:`CheckResult` when they agree and raises
  :class:`CheckFailure` (an ``AssertionError``) naming the function, the argument,
  the worst element and the op of any interpreter error otherwise. An error while
  running the *input* of the pass is raised as is (:class:`InterpError`): there
  is nothing to compare against.

Comparison rule: an element passes when ``|got - expected| <= tolerance``, an
absolute tolerance by element type: f32 1e-5, f16 and bf16 2e-2 (the outputs are
of order 1: softmax-weighted averages of unit normals, copies), integers exact.
The relative error is reported but decides nothing: near zero it is large for
errors far below the tolerance. NaN or infinity against a number is a mismatch.
NaN against NaN matches only where the argument held NaN before the run (an
output both sides left untouched) or where the reference computes NaN (a row
that sees a NaN key): NaN must appear exactly where the math puts it; any other
NaN computed on both sides is a mismatch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir import reference
from pagedir.interp.inputs import host_array
from pagedir.interp.launch import (argument_count, as_module, check_arguments, functions, parsed, run_function,
                                   symbol_name)
from pagedir.interp.memory import Device, InterpError, check_memory_limit, elem_named
from pagedir.dialect.core import attr_value
from pagedir.dialect.ops_attention import attention_operands, optional_operands
from pagedir.dialect.types import element_bytes
from pagedir.dialect.ops_page_table import is_block_table_view
from pagedir.page_sources import source_of
from pagedir.kv_caches import POOL_LAYOUTS, POOL_TABLES
from pagedir.passes.ir_utils import find_ops
from pagedir.variants import VARIANTS, variant_attributes, variant_operands

TOLERANCE = {"f32": 1e-5, "f64": 1e-9, "f16": 2e-2, "bf16": 2e-2}


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


@dataclass
class Comparison:
    """One argument compared: worst absolute / relative error and where."""

    index: int
    type: str
    max_abs: float
    max_rel: float
    tolerance: float
    mismatches: int
    worst: tuple | None = None
    expected_value: float | None = None
    got_value: float | None = None

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def describe(self) -> str:
        text = f"argument {self.index} ({self.type}): {error_summary(self.max_abs, self.max_rel, self.tolerance)}"
        if not self.ok:
            text += (f"; {self.mismatches} elements differ by more than {self.tolerance:g}, worst at "
                     f"{list(self.worst)} (expected {self.expected_value!r}, got {self.got_value!r})")
        return text


def error_summary(max_abs: float, max_rel: float, tolerance: float) -> str:
    """The errors with the rule that decides: the absolute error against the tolerance; the relative one is informational."""
    verdict = "<=" if max_abs <= tolerance else ">"
    return f"max abs error {max_abs:.3g} {verdict} abs tolerance {tolerance:g} (max rel error {max_rel:.3g}, not checked)"


@dataclass
class FunctionCheck:
    name: str
    comparisons: list[Comparison]
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.comparisons)

    @property
    def max_abs(self) -> float:
        return max((c.max_abs for c in self.comparisons), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((c.max_rel for c in self.comparisons), default=0.0)


@dataclass
class CheckResult:
    """What :func:`check_pass` compared: per function, per argument."""

    pass_argument: str
    seed: int
    functions: list[FunctionCheck]
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.functions)

    def __bool__(self) -> bool:
        return self.ok

    def report(self) -> str:
        lines = []
        for f in self.functions:
            lines.append(f"@{f.name}: {'PASS' if f.ok else 'FAIL'}" + (f": {f.error}" if f.error else ""))
            lines.extend(f"  {c.describe()}" for c in f.comparisons if not c.ok or True)
        lines.extend(f"@{name}: skipped (takes LDS or private memref arguments)" for name in self.skipped)
        return "\n".join(lines)


class CheckFailure(AssertionError):
    """The output of a pass computes something else than its input (or fails to run)."""

    def __init__(self, message: str, result: CheckResult | None = None):
        super().__init__(message)
        self.result = result


# ----------------------------------------------------------------------------
# Comparing


def element_type_name(type_: ir.Type) -> str:
    return str(type_.element_type) if isinstance(type_, ir.MemRefType) else str(type_)


def compare(index: int, type_: ir.Type, expected: np.ndarray, got: np.ndarray, tolerance: float | None,
            initial: Any = None, reference: Any = None) -> Comparison:
    """``got`` against ``expected`` by the rule of the module docstring; ``initial``: the argument before the run;
    ``reference``: what the reference computes for it (its NaN are NaN the math gives), when known."""
    name = element_type_name(type_)
    expected = np.asarray(expected)
    got = np.asarray(got)
    if expected.shape != got.shape:
        expected = expected.reshape(got.shape)
    exact = got.dtype.kind in "iub" and expected.dtype.kind in "iub"
    limit = 0.0 if exact else (tolerance if tolerance is not None else TOLERANCE.get(name, 1e-5))
    e = expected.astype(np.float64)
    g = got.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(g) & (untouched_nan(initial, got.shape, name) | computed_nan(reference, got.shape))
    same = both_nan | (e == g)  # equal infinities too: inf - inf is NaN, not an error
    with np.errstate(invalid="ignore"):  # inf - inf and inf / inf are NaN, turned into inf below
        error = np.where(same, 0.0, np.abs(e - g))
        error = np.where(np.isnan(error), np.inf, error)
        relative = error / np.maximum(np.abs(e), 1e-6)
    relative = np.where(same, 0.0, relative)
    bad = error > limit
    comparison = Comparison(index, str(type_), float(error.max(initial=0.0)), float(relative.max(initial=0.0)), limit,
                            int(bad.sum()))
    if bad.any():
        worst = np.unravel_index(int(np.argmax(np.where(bad, error, -1.0))), error.shape)
        comparison.worst = tuple(int(i) for i in worst)
        comparison.expected_value = expected[worst].item()
        comparison.got_value = got[worst].item()
    return comparison


def computed_nan(reference: Any, shape: tuple) -> Any:
    """Where the reference computes NaN (a row that sees a NaN key); False everywhere when there is none."""
    if reference is None or np.size(reference) != int(np.prod(shape)):
        return False
    return np.isnan(np.asarray(reference, dtype=np.float64)).reshape(shape)


def untouched_nan(initial: Any, shape: tuple, element: str) -> Any:
    """Where the argument held NaN before the run (False everywhere when unknown or not floating point).

    A bf16 argument may have been given as its uint16 bit patterns (a pool from ``reference.block_caches``)."""
    if not isinstance(initial, np.ndarray) or initial.size != int(np.prod(shape)):
        return False
    if element == "bf16" and initial.dtype == np.uint16:
        initial = reference.bf16_values(initial)
    if initial.dtype.kind != "f":
        return False
    return np.isnan(initial.astype(np.float64)).reshape(shape)


# ----------------------------------------------------------------------------
# Data


def dtype_of(name: str) -> Any:
    return {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": "bf16"}.get(name)


def host_values(array: np.ndarray, name: str) -> np.ndarray:
    """Random float32 data rounded to the element type ``name`` (bf16 stays float32, rounded)."""
    if name == "bf16":
        return reference.round_bf16(array)
    if name == "f16":
        return array.astype(np.float16)
    return array.astype(np.float32)


def attention_signature(func: ir.Operation) -> bool:
    """Arguments (q, k_table, v_table, [seq_lens], out) as rock.attention's paged form takes them."""
    types = [a.type for a in list(func.regions[0].blocks[0].arguments)[: argument_count(func)]]
    if len(types) not in (4, 5) or not all(isinstance(t, ir.MemRefType) for t in types):
        return False
    q, k, v, out = types[0], types[1], types[2], types[-1]
    tables = all(t.rank == 3 and t.shape[2] == 1 and str(t.element_type) == "i64" for t in (k, v))
    return q.rank == 4 and list(q.shape) == list(out.shape) and tables


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
    dense = table_type.rank == 4  # dense K/V [B, Hkv, Sk, D] instead of page tables
    if dense:
        _, heads_kv, seq_k, _ = table_type.shape
    elif not derefs and "rock.paged_kv" in func.attributes:  # lowered: the views are gone, the kernel says what they were
        page_size, seq_k, heads_kv = ir.DenseI64ArrayAttr(func.attributes["rock.paged_kv"])
    else:
        page_size = ir.MemRefType(derefs[0].results[0].type).shape[2] if derefs else head_dim
        heads_kv = attrs.get("num_heads_kv", 1)
        stated = derefs[0].attributes["seq_len_k"] if derefs and "seq_len_k" in derefs[0].attributes else None
        seq_k = ir.IntegerAttr(stated).value if stated is not None else table_type.shape[1] * page_size // (heads_kv * head_dim)
    kv_name = str(ir.MemRefType(derefs[0].results[0].type).element_type if derefs and not dense else table_type.element_type)
    if not dense:  # the K and V pages to upload, refused before any is drawn (a table of a million pages per sequence)
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
    kept = []
    if dense:
        k_arg, v_arg = k, v
    else:
        k_cache = reference.paged_cache(device, k, page_size=page_size, seq_lens=seq_lens if nulls_ok else None, rng=rng,
                                        dtype=dtype_of(kv_name), placement=placement)
        v_cache = reference.paged_cache(device, v, page_size=page_size, seq_lens=seq_lens if nulls_ok else None, rng=rng,
                                        dtype=dtype_of(kv_name), placement=placement)
        if edges and nulls_ok and batch:  # a null page holding keys: they read 0 (docs/rock.md, rock.attention)
            k_ref, v_ref = (null_page(cache.table, ref, page_size) for cache, ref in ((k_cache, k_ref), (v_cache, v_ref)))
        k_arg, v_arg, kept = k_cache.table, v_cache.table, k_cache.pages + v_cache.pages
        if per_token:  # a page table per scale cache, each page the scales of one K page's tokens
            for name in ("k_scales", "v_scales"):
                cache = reference.paged_cache(device, scales[name][..., None], page_size=page_size // head_dim,
                                              seq_lens=seq_lens if nulls_ok else None, rng=rng, dtype=np.float32,
                                              placement=placement)
                scales[name], kept = cache.table, kept + cache.pages
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


@dataclass(frozen=True)
class LaunchSizes:
    """The sizes a kernel with dynamic (``?``) dims is checked at: one kernel, several launches."""

    batch: int
    max_blocks: int  # block slots per sequence
    num_blocks: int  # blocks in each cache pool

    def describe(self, pools: bool = True) -> str:
        """The sizes a launch used: the batch, and with cache pools (block-table views) their slots and blocks."""
        return f"batch {self.batch}, {self.max_blocks} block slots, {self.num_blocks} pool blocks" if pools else f"batch {self.batch}"


#: Two launches of one dynamic kernel: different batch sizes, block slots and pool sizes.
DYNAMIC_SIZES = (LaunchSizes(batch=2, max_blocks=4, num_blocks=11), LaunchSizes(batch=5, max_blocks=3, num_blocks=23))


def has_dynamic_arguments(func: ir.Operation) -> bool:
    return any(isinstance(a.type, ir.MemRefType) and not ir.MemRefType(a.type).has_static_shape
               for a in list(func.regions[0].blocks[0].arguments)[: argument_count(func)])


#: A third launch for a dynamic split kernel (``rock.num_splits``): one long sequence, where the cost model
#: picks more splits than at the two sizes above (count 0), or a fixed count's splits each get several
#: tiles where above some got none.
LONG_SEQUENCE_SIZES = LaunchSizes(batch=1, max_blocks=12, num_blocks=13)


def launch_size_sets(func: ir.Operation) -> list[LaunchSizes | None]:
    """:data:`DYNAMIC_SIZES` for a function with dynamic arguments (and :data:`LONG_SEQUENCE_SIZES` when
    it splits), else ``[None]`` (its types say)."""
    if not has_dynamic_arguments(func):
        return [None]
    splits = func.attributes["rock.num_splits"] if "rock.num_splits" in func.attributes else None
    split = isinstance(splits, ir.IntegerAttr) and splits.value != 1
    return list(DYNAMIC_SIZES) + ([LONG_SEQUENCE_SIZES] if split else [])


def page_placements(func: ir.Operation) -> list[str]:
    """Where the pages of ``func``'s checks lie: every placement of :data:`pagedir.reference.PAGE_PLACEMENTS`
    (shuffled, adjacent, switching mid-sequence) for an attention function reading pages, else shuffled only
    (the placement draws nothing for it)."""
    def pointer_table(type_: ir.Type) -> bool:  # [B, P, 1] i64 (the signature of a lowered kernel has no rock.deref)
        return isinstance(type_, ir.MemRefType) and type_.rank == 3 and str(type_.element_type) == "i64"

    if "rock.check" in func.attributes:  # its generator draws its own case
        return ["shuffled"]
    attention = find_ops(func, "rock.attention", "rock.gridwise_attention_accel") or attention_signature(func)
    paged = bool(find_ops(func, "rock.block_table_view")) or bool(attention and (
        find_ops(func, "rock.deref") or any(pointer_table(a.type) for a in func.regions[0].blocks[0].arguments)))
    return list(reference.PAGE_PLACEMENTS) if paged else ["shuffled"]


#: A dynamic kernel's edge draw: four sequences (:func:`edge_lengths`, :func:`varlen_query_lengths`).
EDGE_SIZES = LaunchSizes(batch=4, max_blocks=3, num_blocks=13)
#: Launches of a kernel with a dynamic batch at no sequence (0 workgroups) and at one.
EMPTY_BATCH = LaunchSizes(batch=0, max_blocks=2, num_blocks=3)
ONE_SEQUENCE = LaunchSizes(batch=1, max_blocks=2, num_blocks=3)


def check_draws(func: ir.Operation) -> list[tuple[LaunchSizes | None, str]]:
    """Every (launch sizes, placement) a check of ``func`` runs: each launch size set (:func:`launch_size_sets`)
    with each page placement (:func:`page_placements`); then for an attention function the edge draw
    (:data:`EDGES`), and with a dynamic batch launches at batch 0 and batch 1 (unless a size set has it)."""
    draws = [(sizes, placement) for sizes in launch_size_sets(func) for placement in page_placements(func)]
    attention = find_ops(func, "rock.attention", "rock.gridwise_attention_accel", "rock.block_table_view")
    if "rock.check" in func.attributes or not (attention or attention_signature(func)):
        return draws
    dynamic = has_dynamic_arguments(func)
    draws.append((EDGE_SIZES if dynamic else None, EDGES))
    first = list(func.regions[0].blocks[0].arguments)[0].type
    if dynamic and isinstance(first, ir.MemRefType) and first.is_dynamic_dim(0):  # q's (or packed q's) batch
        draws.append((EMPTY_BATCH, "shuffled"))
        if all(sizes is None or sizes.batch != 1 for sizes, _ in draws):
            draws.append((ONE_SEQUENCE, "shuffled"))
    return draws


def draw_label(placement: str) -> str:
    """How a check names a draw besides its sizes: its page placement, or the edge draw (empty for shuffled pages)."""
    return {"shuffled": "", EDGES: "edge case"}.get(placement, f"{placement} pages")


def _resolve(extent: int, value: int) -> int:
    return value if extent == ir.ShapedType.get_dynamic_size() else extent


def serving_case(func: ir.Operation, rng: np.random.Generator, device: Device, sizes: LaunchSizes | None = None,
                 placement: str = "shuffled") -> CheckCase:
    """Random Q and K/V placed in cache pools through a block table (or a CSR table) as a server
    would: shuffled block ids (or ids in ``placement``'s order: :func:`pagedir.reference.block_id_order`), sequence 1's first block shared with sequence 0 (prefix sharing),
    lengths that end inside a block, NaN/Inf past them and NaN in unused blocks; the reference result.

    The arguments are read from the ``rock.block_table_view`` ops (K's first): their pools and
    tables, then ``q`` (first argument), ``out`` (the last argument of q's type) and ``seq_lens``
    (a ``memref<B x i32>`` the views do not read). Others get random data of their type."""
    from pagedir.dialect.ops_page_table import PageGeometry

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
        name = POOL_TABLES[form.name].arguments(1, 1, 1, "")[1][0]  # the view's table operand
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


# ----------------------------------------------------------------------------
# The edge draw

#: The draw that reaches the edges, made once per attention function besides the page placements (its pages
#: shuffled): sequences of length 0, the capacity and 1 (:func:`edge_lengths`), a packed sequence without
#: queries, null pages and block ids outside the pool in slots a sequence owns (they read 0), a NaN and an
#: Inf key some rows see (those rows compute NaN, the others not).
EDGES = "edges"


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


def null_page(table: np.ndarray, ref: np.ndarray, page_size: int) -> np.ndarray:
    """A null pointer in ``table`` (``[B, P, 1]``) for the first page of the full sequence, and the reference
    ``ref`` (``[B, Hkv, Sk, D]``) with that page's elements 0, as the page reads."""
    b = full_sequence(table[:, 0, 0])
    table[b, 0, 0] = 0
    ref = ref.copy()
    ref[b].reshape(-1)[:page_size] = 0
    return ref


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


def generic_case(func: ir.Operation, rng: np.random.Generator, device: Device) -> CheckCase:
    """Random data of each argument's type; page tables (read by rock.deref) point at random pages."""
    args = list(func.regions[0].blocks[0].arguments)[: argument_count(func)]
    deref_of = {}
    for deref in find_ops(func, "rock.deref"):
        deref_of[deref.operands[0]] = ir.MemRefType(deref.results[0].type)
    call, keep = [], []
    for argument in args:
        type_ = argument.type
        if argument in deref_of:
            pages_type = deref_of[argument]
            batch, num_pages, page_size = pages_type.shape
            name = str(pages_type.element_type)
            dense = host_values(rng.standard_normal((batch, 1, num_pages * page_size, 1)), name)
            cache = reference.paged_cache(device, dense, page_size=page_size, rng=rng, dtype=dtype_of(name))
            call.append(cache.table)
            keep.extend(cache.pages)
            continue
        if isinstance(type_, ir.MemRefType):
            name = str(type_.element_type)
            shape = tuple(type_.shape)
            if dtype_of(name) is not None:
                call.append(host_values(rng.standard_normal(shape), name))
            elif name == "i1":
                call.append(rng.integers(0, 2, size=shape).astype(np.bool_))
            else:
                call.append(rng.integers(0, 8, size=shape))
            continue
        call.append(0 if isinstance(type_, (ir.IndexType, ir.IntegerType)) else 1.0)
    return CheckCase(args=call, keep_alive=keep)


#: The ``rock.check`` values: the generators of ``pagedir-gen`` whose kernels get a case of their own,
#: each drawn by the module of that name in :mod:`pagedir.interp.cases` (``check_case``).
CASE_GENERATORS = ("copy_kv", "linalg_attention")


def case_generators() -> list[str]:
    """The ``rock.check`` values, sorted."""
    return sorted(CASE_GENERATORS)


def case_generator(func: ir.Operation) -> Any:
    """The :mod:`pagedir.interp.cases` module ``rock.check`` names; a located error for anything else."""
    attr = func.attributes["rock.check"]
    known = case_generators()
    name = ir.StringAttr(attr).value if isinstance(attr, ir.StringAttr) else None
    if name not in known:
        raise InterpError(f"@{symbol_name(func)} has rock.check = {attr}: no such case generator "
                          f"(known: {', '.join(known)})", func.location)
    return importlib.import_module(f"pagedir.interp.cases.{name}")


def make_case(func: ir.Operation, rng: np.random.Generator, device: Device, sizes: LaunchSizes | None = None,
              placement: str = "shuffled") -> CheckCase:
    """The case of ``func``; ``sizes`` gives its dynamic (``?``) sizes (default: the first of DYNAMIC_SIZES),
    ``placement`` where its pages lie (:func:`page_placements`)."""
    check_arguments(func)  # before any data is drawn for them
    if "rock.check" in func.attributes:
        case = case_generator(func).check_case(func, rng, device)
    elif find_ops(func, "rock.block_table_view"):
        case = serving_case(func, rng, device, sizes, placement)
    elif (find_ops(func, "rock.attention", "rock.gridwise_attention_accel") and attention_reads_arguments(func)) \
            or attention_signature(func):
        case = attention_case(func, rng, device, sizes, placement)
    elif has_dynamic_arguments(func):
        raise InterpError(f"@{symbol_name(func)} has arguments with dynamic sizes: the check draws data for attention "
                          "kernels only (pass arrays with pagedir-run --inputs)", func.location)
    else:
        case = generic_case(func, rng, device)
    if PAYLOAD_CASE in func.attributes:
        payload_inputs(case, func)
    # In dtypes the arguments take (pagedir.interp.run refuses others): the same values the upload stores.
    case.args = [host_array(value, argument.type) for value, argument in zip(case.args, func.regions[0].blocks[0].arguments)]
    return case


#: Marks (in memory only) a raised function drawing the case of the linalg payload it was raised from.
PAYLOAD_CASE = "rock.payload_case"


def payload_inputs(case: CheckCase, func: ir.Operation) -> None:
    """Data a payload's own semantics are defined on: a payload gathers and multiplies every key slot of the
    table, masked ones by 0 (0 * NaN is NaN), so stale NaN/Inf become 0 and every table id names a block
    of the pool; a row that sees no key is 0/0 in the payload (zeros in rock.attention), so each sequence
    keeps at least Sq keys. The payload's output is the reference (no expected result)."""
    arguments = list(func.regions[0].blocks[0].arguments)
    lengths = set()
    for attention in find_ops(func, "rock.attention"):
        seq_q = ir.MemRefType(attention.operands[0].type).shape[2]
        lengths |= {arguments.index(v) for v in attention.operands[3:] if isinstance(v, ir.BlockArgument)
                    and v in arguments and ir.MemRefType(v.type).rank == 1 and str(ir.MemRefType(v.type).element_type) == "i32"}
    tables = {}
    for view in find_ops(func, "rock.block_table_view"):
        blocks = ir.MemRefType(view.operands[0].type).shape[0]
        for table in view.operands[1:3]:
            if isinstance(table, ir.BlockArgument) and table in arguments:
                tables[arguments.index(table)] = blocks
    for index, value in enumerate(case.args):
        array = np.asarray(value)
        if index in tables:
            case.args[index] = np.mod(array, tables[index]).astype(array.dtype)
        elif index in lengths:
            case.args[index] = np.maximum(array, seq_q).astype(array.dtype)
        elif array.dtype.kind == "f":
            case.args[index] = np.where(np.isfinite(array), array, 0).astype(array.dtype)
        elif array.dtype == np.uint16 and str(ir.ShapedType(arguments[index].type).element_type) == "bf16":
            case.args[index] = np.where((array & 0x7F80) == 0x7F80, 0, array).astype(np.uint16)  # bf16 bits: NaN, Inf
    case.expected = {}


def attention_reads_arguments(func: ir.Operation) -> bool:
    """The attention ops read q from an argument or from a rock view of one (rock.varlen_view's packed rows),
    not from a reshape: heads folded into the batch are expanded by memref.expand_shape, and those arguments
    get random data of their shape."""
    def from_argument(q: ir.Value) -> bool:
        return isinstance(q, ir.BlockArgument) or q.owner.name.startswith("rock.")

    return all(from_argument(op.operands[0]) for op in find_ops(func, "rock.attention", "rock.gridwise_attention_accel"))


def runnable(func: ir.Operation) -> bool:
    """Host-callable: every memref argument lives in global memory."""
    from pagedir.dialect.types import memory_space

    for argument in list(func.regions[0].blocks[0].arguments)[: argument_count(func)]:
        if isinstance(argument.type, ir.MemRefType) and memory_space(argument.type) not in (None, "global"):
            return False
    return len(func.regions[0].blocks) > 0


def run_case(func: ir.Operation, seed: int, case_func: ir.Operation | None = None,
             sizes: LaunchSizes | None = None, placement: str = "shuffled") -> tuple[list[np.ndarray], CheckCase]:
    """Draw the case of ``case_func`` (default ``func``) from ``seed`` (``sizes``, ``placement``) on a fresh device
    and run ``func`` on it."""
    device = Device()
    case = make_case(case_func or func, np.random.default_rng(seed), device, sizes, placement)
    outputs, _ = run_function(func, case.args, device=device)
    return outputs, case


# ----------------------------------------------------------------------------
# check_pass


def apply_pass(module: ir.Operation, pass_argument: str, options: Any = None) -> ir.Module:
    """A copy of ``module`` (locations kept) with the pass applied; CheckFailure with the diagnostics if it fails."""
    from pagedir import driver

    with module.context:
        copy = ir.Module.parse(module.get_asm(enable_debug_info=True))
    try:
        driver.run_stages(copy.operation, [driver.pass_stage(pass_argument, options)])
    except driver.StageError as err:
        messages = [f"{diag.where()}: {diag.message}" for diag in err.diags]
        raise CheckFailure(f"{pass_argument} failed: {'; '.join(messages)}") from None
    return copy


def check_pass(module: Any, pass_argument: str, seed: int = 0, *, options: Any = None, tolerance: float | None = None) -> CheckResult:
    """Run every host-callable function of ``module`` before and after ``pass_argument`` on the same data.

    Returns a :class:`CheckResult` when all outputs agree; raises :class:`CheckFailure`
    (with the result attached) when an output differs or the transformed function
    fails to run (the message names the op and its location).
    """
    holder = parsed(module)  # parsed text lives as long as this
    before = as_module(holder)
    after = apply_pass(before, pass_argument, options).operation
    after_functions = {symbol_name(f): f for f in functions(after)}
    result = CheckResult(pass_argument, seed, [])
    combines = {ir.StringAttr(f.attributes["rock.combine"]).value for f in functions(before) if "rock.combine" in f.attributes}
    for func in functions(before):
        name = symbol_name(func)
        if not len(func.regions[0].blocks):
            continue
        if name in combines and has_dynamic_arguments(func):  # its sizes follow the split kernel's launch,
            continue  # which runs it (launch_plan): no case of its own
        if not runnable(func):
            result.skipped.append(name)
            continue
        lowered = after_functions.get(name)
        if lowered is None:
            result.functions.append(FunctionCheck(name, [], error=f"@{name} is missing after {pass_argument}"))
            continue
        # A dynamic function: every launch size set; a paged one: shuffled, adjacent and switching pages; an
        # attention function: the edge draw too (check_draws).
        for sizes, placement in check_draws(func):
            expected, case = run_case(func, seed, sizes=sizes, placement=placement)
            label = " ".join(filter(None, [draw_label(placement), sizes.describe() if sizes is not None else ""]))
            try:
                got, _ = run_case(lowered, seed, case_func=func, sizes=sizes, placement=placement)
            except InterpError as err:
                result.functions.append(FunctionCheck(name, [], error=f"{err.format()} ({label or 'shuffled pages'})"))
                continue
            arguments = list(func.regions[0].blocks[0].arguments)
            comparisons = [compare(i, arguments[i].type, e, g, tolerance if tolerance is not None else case.tolerance,
                                   initial=case.args[i], reference=case.expected.get(i))
                           for i, (e, g) in enumerate(zip(expected, got))]
            result.functions.append(FunctionCheck(f"{name} ({draw_label(placement)})" if draw_label(placement) else name,
                                                  comparisons))
    if not result.ok:
        failing = [f for f in result.functions if not f.ok]
        lines = [f"{pass_argument} changed what the code computes (seed {seed}):"]
        for f in failing:
            if f.error:
                lines.append(f"  @{f.name}: {f.error}")
            lines.extend(f"  @{f.name}: {c.describe()}" for c in f.comparisons if not c.ok)
        raise CheckFailure("\n".join(lines), result)
    return result
