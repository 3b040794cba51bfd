"""attention: an L0 paged attention kernel (rock.deref + rock.attention), like rocmlir-gen -operation attention.

Arguments of the generated ``func.func @paged_attention``: ``(q, k_table, v_table,
[seq_lens], out)``; with ``--dense`` K and V are dense ``[B, Hkv, Sk, D]`` instead
of page tables. ``--page-size`` counts tokens: a page holds ``page_size * D``
contiguous elements of one batch's ``[Hkv, Sk, D]`` cache, so the table has
``ceil(Hkv * Sk / page_size)`` pointers per sequence (a partly filled last page is
stated by ``rock.deref {seq_len_k}``). ``--seq-lens`` (alias ``--ragged``) adds
``seq_lens`` (keys past a sequence's length are masked; their pages may be null).

``--page-table blocks`` / ``csr`` take cache pools in place (``--kv-layout nhd``:
``[num_blocks, page_size, Hkv, D]``, ``hnd``: ``[num_blocks, Hkv, page_size, D]``, ``vllm-pa``:
vLLM's paged-attention caches, ``k_cache`` ``[num_blocks, Hkv, D/x, page_size, x]`` with ``x = 16
bytes / element size`` and ``v_cache`` ``[num_blocks, Hkv, D, page_size]``) viewed by ``rock.block_table_view``: ``(q, k_cache, v_cache, block_table, seq_lens,
out)`` or ``(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, out)``
with ``ceil(Sk / page_size)`` block slots per sequence (docs/serving.md). ``--dynamic``
writes ``?`` for the batch, the block slots, the pool's blocks, nnz and total_q: one kernel
for every batch size, its grid a formula of the argument sizes (``rock.grid_map``); with
pointer tables or ``--dense`` only the batch (and total_q) is ``?``.

``--varlen`` packs the queries, in every form: ``q`` and ``out`` ``[total_q, Hq, D]`` with
``cu_seqlens_q [B+1]`` right after ``q`` (``rock.varlen_view`` presents them as the padded
``[B, Hq, Sq, D]``); with pointer tables or ``--dense`` it implies ``seq_lens`` (a decode row and a
prefill chunk of one launch each have their own key length): ``(q, cu_seqlens_q, k_table,
v_table, seq_lens, ..., out)``.

Variants, in every form: ``--window N`` (``window_left``), ``--softcap X``, ``--alibi``
(argument ``alibi_slopes``), ``--sinks`` (argument ``sinks``), ``--kv-dtype`` (fp8 K/V,
pages or pools) with ``--kv-scale per-tensor`` (arguments ``k_scale``, ``v_scale``); the
arguments follow the lengths: ``(..., [seq_lens], [alibi_slopes], [sinks], [k_scale,
v_scale], out)``. ``--kv-scale per-token-head`` takes two scale caches instead of ``k_scale,
v_scale``, in the same place: ``k_scales, v_scales`` ``[B, Hkv, Sk]`` f32 (dense),
``k_scales_table, v_scales_table`` page tables of their own (pointers: each page the scales of
one K page's tokens), or ``k_scales_cache, v_scales_cache`` pools ``[num_blocks, page_size, Hkv]``
(nhd) / ``[num_blocks, Hkv, page_size]`` (hnd, vllm-pa) read through the cache's block table or CSR table.
"""

from __future__ import annotations

import argparse

from pagedir.errors import UserError
from pagedir.gen import checks
from pagedir.kv_caches import KV_CACHES, POOL_LAYOUTS, POOL_TABLES, VllmPagedAttention, memref_type
from pagedir.variants import F32_MAX, F32_MIN_NORMAL, VARIANTS, variant_attributes, variant_operands

DTYPES = ("f16", "bf16", "f32")
PAGE_TABLES = ("pointers", *POOL_TABLES)
KV_LAYOUTS = tuple(POOL_LAYOUTS)
#: --kv-dtype: fp8 K/V element types (MLIR names); gfx942 takes the FNUZ ones, gfx950 the OCP ones.
KV_DTYPES = {"fp8e4m3fnuz": "f8E4M3FNUZ", "fp8e5m2fnuz": "f8E5M2FNUZ", "fp8e4m3fn": "f8E4M3FN", "fp8e5m2": "f8E5M2"}
KV_SCALES = ("per-tensor", "per-token-head")


def add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    """The attention problem's sizes, shared with ``pagedir-gen linalg-attention``."""
    parser.add_argument("--batch", type=int, default=2, help="sequences (B)")
    parser.add_argument("--num-heads-q", type=int, default=8, help="query heads (Hq)")
    parser.add_argument("--num-heads-kv", type=int, default=2, help="key/value heads (Hkv); Hq / Hkv query heads share one")
    parser.add_argument("--seq-len-q", type=int, default=1, help="query positions (Sq; 1 for decode)")
    parser.add_argument("--seq-len-k", type=int, default=64, help="KV capacity per sequence in tokens (Sk)")
    parser.add_argument("--head-dim", type=int, default=128, help="head dimension (D)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_shape_arguments(parser)
    parser.add_argument("--page-size", type=int, default=16, help="tokens per page")
    parser.add_argument("--dtype", choices=DTYPES, default="f16", help="element type of Q, K, V and out")
    parser.add_argument("--causal", action="store_true", help="query i sees keys j <= i + seq_len - Sq")
    parser.add_argument("--seq-lens", "--ragged", dest="seq_lens", action="store_true",
                        help="take seq_lens (ragged sequences, null pages past them); --ragged is an alias")
    parser.add_argument("--dense", action="store_true", help="dense K/V [B, Hkv, Sk, D] instead of pages")
    parser.add_argument("--scale", type=scale_value, default=None,
                        help="score scale, a finite positive f32 value (default 1/sqrt(D))")
    parser.add_argument("--arch", default="gfx942", help="chip or target recorded as rock.arch (a known chip)")
    parser.add_argument("--name", default="paged_attention", help="function name ([A-Za-z_][A-Za-z0-9_$.]*)")
    parser.add_argument("--page-table", choices=PAGE_TABLES, default="pointers",
                        help="pointers: i64 page pointers per (sequence, KV head, page) through rock.deref; blocks: "
                             "vLLM's int32 block table [B, max_blocks] into K and V cache pools, with seq_lens; "
                             "csr: FlashInfer's kv_indptr, kv_indices, kv_last_page_len into the pools")
    parser.add_argument("--kv-layout", choices=KV_LAYOUTS, default="nhd",
                        help="pool layout for blocks/csr: nhd [num_blocks, page, Hkv, D], hnd [num_blocks, Hkv, page, D], "
                             "vllm-pa: vLLM's paged-attention caches, k_cache [num_blocks, Hkv, D/x, page, x] "
                             "(x = 16 bytes / element size) and v_cache [num_blocks, Hkv, D, page]")
    parser.add_argument("--kv-cache", choices=list(KV_CACHES), default="separate",
                        help="blocks/csr: separate k_cache and v_cache pools; or one tensor kv_cache holding both, K at "
                             "index 0 and V at 1 of its stacked axis: stacked0 [2, num_blocks, ...] (vLLM "
                             "FlashAttention), stacked1 [num_blocks, 2, ...] (vLLM Triton, FlashInfer)")
    parser.add_argument("--num-blocks", type=int, default=None, metavar="N",
                        help="blocks in each pool (blocks/csr; at least 1: a pool sized by memory, its ids range-checked; "
                             "default: B x max_blocks, enough for the batch)")
    parser.add_argument("--varlen", action="store_true",
                        help="packed queries: q and out [B * Sq, Hq, D] with cu_seqlens_q [B+1] (sequence b's rows "
                             "start at cu_seqlens_q[b], at most Sq of them; causal aligned to the end of each "
                             "sequence); with pointer tables or --dense it implies --seq-lens (each sequence's "
                             "key length)")
    for variant in VARIANTS:  # --window, --softcap, --alibi, --sinks
        variant.add_arguments(parser)
    parser.add_argument("--kv-dtype", choices=list(KV_DTYPES), default=None,
                        help="fp8 K/V cache (Q and out stay --dtype, f16 or bf16); default: --dtype")
    parser.add_argument("--kv-scale", choices=KV_SCALES, default=None,
                        help="per-tensor: take k_scale and v_scale (memref<1xf32>), K = k * k_scale, V = v * v_scale; "
                             "per-token-head: take scale caches paged like K/V (f32, one scale per token and KV "
                             "head), K[b, h, j] = k[b, h, j] * k_scales[b, h, j]")
    parser.add_argument("--dynamic", action="store_true",
                        help="batch, max blocks per sequence, pool blocks (and total query tokens with --varlen) are "
                             "'?' in the types: one kernel serves every batch size, its grid a formula of the argument "
                             "sizes (blocks and csr; with pointer tables or --dense the batch and total_q only)")
    parser.add_argument("--lds-swizzle", action="store_true",
                        help="record rock.lds_swizzle on the kernel: the matrix-core loop stores its Q/K/V tiles "
                             "swizzled in LDS (conflict-free reads; more VGPRs)")
    parser.add_argument("--lds-dma", action="store_true",
                        help="record rock.lds_dma on the kernel: the matrix-core loop loads its K/V tiles with direct "
                             "global -> LDS loads where the chip and tile allow (gfx90a/gfx942/gfx950)")
    parser.add_argument("--num-splits", type=int, default=None, metavar="N",
                        help="split-KV: record rock.num_splits = N on the kernel (0: chosen by the split cost model "
                             "from the chip's compute units, with --dynamic at launch; with --dynamic, N >= 2 is fixed and "
                             "the grid is a formula of the batch; default: no split)")
    parser.add_argument("--pipeline-depth", type=int, default=None, metavar="N", choices=(1, 2),
                        help="KV tiles in flight: record rock.pipeline_depth = N on the kernel (1: load a tile and wait "
                             "for it; 2: issue tile t + 1's loads before tile t's math; default: chosen by "
                             "rock-attention-to-gridwise)")


#: --scale is an f32 attribute: a positive normal f32 value.


def scale_value(text: str) -> float:
    """--scale: a score scale is a positive normal f32 value (the attribute is f32)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not F32_MIN_NORMAL <= value <= F32_MAX:  # NaN fails every comparison; 1e400 reads as inf
        raise argparse.ArgumentTypeError(f"{text} is not a finite positive f32 value ({F32_MIN_NORMAL!r} .. {F32_MAX!r})")
    return value


def validate(args: argparse.Namespace) -> None:
    checks.positive_sizes(args, ("batch", "num_heads_q", "num_heads_kv", "seq_len_q", "seq_len_k", "head_dim", "page_size"))
    if args.num_heads_q % args.num_heads_kv:
        raise UserError(f"--num-heads-q {args.num_heads_q} must be a multiple of --num-heads-kv {args.num_heads_kv}")
    serving = args.page_table != "pointers"
    if serving and args.dense:
        raise UserError(f"--dense takes no page table, got --page-table {args.page_table}")
    if args.page_table == "csr" and args.seq_lens:
        raise UserError("--seq-lens: csr page tables carry the lengths (kv_indptr and kv_last_page_len)")
    if args.num_blocks is not None and not serving:
        raise UserError("--num-blocks sizes the cache pools of --page-table blocks or csr")
    if args.kv_cache != "separate" and not serving:
        raise UserError(f"--kv-cache {args.kv_cache} stacks the cache pools of --page-table blocks or csr")
    if args.num_blocks is not None and args.num_blocks < 1:  # fewer than the table addresses: a server's pool
        raise UserError(f"--num-blocks must be at least 1 (block ids are range-checked), got {args.num_blocks}")
    if args.kv_layout == "vllm-pa" and serving:
        if args.kv_cache != "separate":
            raise UserError(f"--kv-cache {args.kv_cache} stacks K and V pools of one shape; --kv-layout vllm-pa's "
                            f"key and value caches differ (vLLM views kv_cache[0] and kv_cache[1]: two arguments)")
        x = vllm_pa_chunk(args)
        for flag, value, what in (("--head-dim", args.head_dim, "the key cache's D/x chunks"),
                                  ("--page-size", args.page_size, "the value cache's 16-byte loads along a block's tokens")):
            if value % x:
                raise UserError(f"{flag} {value} must be a multiple of x = {x} with --kv-layout vllm-pa ({what} of "
                                f"{x} {args.kv_dtype or args.dtype} elements)")
    if args.causal and args.seq_len_q > args.seq_len_k:
        raise UserError(f"--seq-len-q {args.seq_len_q} exceeds --seq-len-k {args.seq_len_k}")
    checks.symbol(args.name)
    checks.chip(args.arch)
    validate_kv_dtype(args)
    for variant in VARIANTS:
        if (message := variant.check_flags(args)) is not None:
            raise UserError(message)
    if args.num_splits is not None and args.num_splits < 0:
        raise UserError(f"--num-splits must be 0 (choose) or positive, got {args.num_splits}")
    b, hq, hkv, sq, sk, d = args.batch, args.num_heads_q, args.num_heads_kv, args.seq_len_q, args.seq_len_k, args.head_dim
    checks.tensor_fits("q and out", [b, hq, sq, d], args.dtype)
    if args.dense:
        checks.tensor_fits("k and v", [b, hkv, sk, d], args.dtype)
    elif serving:
        checks.tensor_fits("the cache pools", [num_blocks(args), args.page_size, hkv, d], args.dtype)
        cache = KV_CACHES[args.kv_cache]
        if cache.axis is not None:  # one tensor, twice a pool
            pool_shape = POOL_LAYOUTS[args.kv_layout].shape(num_blocks(args), args.page_size, hkv, d)
            checks.tensor_fits("the kv_cache", cache.tensor_shape(pool_shape), args.dtype)
        checks.tensor_fits("the block table", [b, max_blocks(args)], "i32")
    else:
        pages = pointer_pages(args)
        checks.tensor_fits("the page tables", [b, pages, 1], "i64")
        checks.tensor_fits("the paged k and v", [b, pages, args.page_size * d], args.dtype)


def validate_kv_dtype(args: argparse.Namespace) -> None:
    if args.kv_dtype is None:
        if args.kv_scale is not None:
            raise UserError("--kv-scale needs an fp8 --kv-dtype")
        return
    if args.dtype not in ("f16", "bf16"):
        raise UserError(f"--kv-dtype {args.kv_dtype} needs --dtype f16 or bf16 for Q and out, got {args.dtype}")
    from pagedir.arch import get_chip

    chip = get_chip(args.arch)
    if KV_DTYPES[args.kv_dtype] not in chip.fp8_types:
        formats = ", ".join(name for name, t in KV_DTYPES.items() if t in chip.fp8_types) or "none"
        raise UserError(f"--kv-dtype {args.kv_dtype} is not supported on {chip.name} (its fp8 formats: {formats})")
    if args.head_dim % 16:
        raise UserError(f"--head-dim {args.head_dim} must be a multiple of 16 with an fp8 K/V (16 values per 16-byte load)")


def variant_parts(args: argparse.Namespace) -> tuple[list[tuple[str, str]], str, str]:
    """The variants' (arguments after the lengths, their operand segments, their attributes); the fp8
    scales' arguments and segments follow them."""
    per_head = f"memref<{args.num_heads_q}xf32>"
    values = {name: value for variant in VARIANTS for name, value in variant.from_flags(args).items()}
    taken = [bool(values[d.name]) for d in variant_operands()]
    arguments = [(d.name, per_head) for d, wanted in zip(variant_operands(), taken) if wanted]
    scaled = args.kv_scale == "per-tensor"
    arguments += [("k_scale", "memref<1xf32>"), ("v_scale", "memref<1xf32>")] if scaled else []
    per_token = args.kv_scale == "per-token-head"
    segments = ", ".join(str(int(wanted)) for wanted in [*taken, scaled, scaled, per_token, per_token])
    attributes = ""
    for d in variant_attributes():
        value = values[d.name]
        if value is not None:
            text = str(value) if d.kind == "i64" else f"{checks.f32_literal(value, d.flag)} : f32"
            attributes += f", {d.name} = {text}"
    return arguments, segments, attributes


def kv_element_bytes(args: argparse.Namespace) -> int:
    """Bytes of a K/V cache element."""
    return 1 if args.kv_dtype else {"f16": 2, "bf16": 2, "f32": 4}[args.dtype]


def vllm_pa_chunk(args: argparse.Namespace) -> int:
    """``x`` of vLLM's paged-attention caches: elements of the K/V type in 16 bytes."""
    return VllmPagedAttention.chunk(kv_element_bytes(args))


def pointer_pages(args: argparse.Namespace) -> int:
    """Pages per sequence of the pointer form: the [Hkv, Sk, D] cache cut into pages, the last one
    partly filled when it does not divide."""
    return -(-args.num_heads_kv * args.seq_len_k // args.page_size)


def max_blocks(args: argparse.Namespace) -> int:
    """Block slots per sequence: enough for --seq-len-k tokens (the last block partly filled)."""
    return -(-args.seq_len_k // args.page_size)


def num_blocks(args: argparse.Namespace) -> int:
    return args.num_blocks if args.num_blocks is not None else args.batch * max_blocks(args)


def generate(args: argparse.Namespace) -> str:
    validate(args)
    import mlir.ir as ir

    from pagedir.context import make_context

    text = function_text(args)
    with make_context():
        module = ir.Module.parse(text)  # the generated text must parse (names are kept by returning the text itself)
        checks.compiler_accepts(module, args.arch)
    return text


def scale_cache_parts(args: argparse.Namespace, kv_type: str, view: str = "") -> tuple[list[tuple[str, str]], str, str]:
    """With ``--kv-scale per-token-head``: (the scale caches' arguments, the lines viewing them, the
    operands' types). A scale cache is the K (or V) cache with a head dim of 1 in f32: dense ``[B, Hkv,
    Sk]``; for pointers a page table of its own, each page one scale per token of a K page; for the
    block-table forms a pool ``[num_blocks, block_size, Hkv]`` (nhd) or ``[num_blocks, Hkv,
    block_size]`` (hnd) read through the cache's table (``view``: that view's operands and segments)."""
    if args.kv_scale != "per-token-head":
        return [], "", ""
    shape = kv_type[len("memref<"):-1].split("x")[:3]
    if args.dense:
        scale_type = "memref<" + "x".join(shape) + "xf32>"
        return [("k_scales", scale_type), ("v_scales", scale_type)], "", f", {scale_type}, {scale_type}"
    shape[2] = str(args.page_size)  # one scale per token of a page
    scale_type = "memref<" + "x".join(shape) + "xf32>"
    if not view:
        table_type = f"memref<{shape[0]}x{shape[1]}x1xi64>"
        partial = (args.num_heads_kv * args.seq_len_k) % args.page_size != 0
        tokens = f" {{seq_len_k = {args.seq_len_k}}}" if partial else ""
        lines = "".join(f'  %{kv}_scales = "rock.deref"(%{kv}_scales_table){tokens} : ({table_type}) -> {scale_type}\n'
                        for kv in ("k", "v"))
        return [("k_scales_table", table_type), ("v_scales_table", table_type)], lines, f", {scale_type}, {scale_type}"
    view_operands, view_segments, view_types, blocks = view.split(";")
    hkv, page = args.num_heads_kv, args.page_size
    pool_shape = POOL_LAYOUTS[args.kv_layout].shape(blocks, page, hkv)  # one f32 per token and head
    pool_type = "memref<" + "x".join(map(str, pool_shape)) + "xf32>"
    lines = "".join(
        f'  %{kv}_scales = "rock.block_table_view"(%{kv}_scales_cache, {view_operands}) {{layout = "{args.kv_layout}", '
        f"operandSegmentSizes = array<i32: {view_segments}>}}\n    : ({pool_type}, {view_types}) -> {scale_type}\n"
        for kv in ("k", "v"))
    return [("k_scales_cache", pool_type), ("v_scales_cache", pool_type)], lines, f", {scale_type}, {scale_type}"


def function_text(args: argparse.Namespace) -> str:
    # --dynamic with pointer tables or dense K/V: the batch is '?' (their pages per sequence, or Sk, are compiled in).
    b, hq, hkv = "?" if args.dynamic else args.batch, args.num_heads_q, args.num_heads_kv
    sq, sk, d, t = args.seq_len_q, args.seq_len_k, args.head_dim, args.dtype
    q_type = f"memref<{b}x{hq}x{sq}x{d}x{t}>"
    has_lens = takes_seq_lens(args)
    lens = f"%seq_lens: memref<{b}xi32>, " if has_lens else ""
    lens_operand = ", %seq_lens" if has_lens else ""
    lens_type = f", memref<{b}xi32>" if has_lens else ""
    extras, extra_segments, variant_attrs = variant_parts(args)
    lens += "".join(f"%{name}: {type_}, " for name, type_ in extras)
    lens_operand += "".join(f", %{name}" for name, _ in extras)
    lens_type += "".join(f", {type_}" for _, type_ in extras)
    segments = f"1, 1, 1, {1 if has_lens else 0}, {extra_segments}, 1"
    scale = f", scale = {checks.f32_literal(args.scale, '--scale')} : f32" if args.scale is not None else ""
    scale += variant_attrs
    kv_t = KV_DTYPES[args.kv_dtype] if args.kv_dtype else t
    if args.page_table != "pointers" and not args.dense:
        return serving_function_text(args)
    queries, padded = f"%q: {q_type}, ", ""
    q_name, out_name, out_type = "q", "out", q_type
    if args.varlen:  # packed rows viewed as the padded q and out (the same view as the serving forms')
        queries, out_type, padded = varlen_parts(args, q_type)
        q_name, out_name = "q_padded", "out_padded"
    if args.dense:
        kv_type = f"memref<{b}x{hkv}x{sk}x{d}x{kv_t}>"
        scale_args, scale_lines, scale_types = scale_cache_parts(args, kv_type)
        lens += "".join(f"%{name}: {type_}, " for name, type_ in scale_args)
        params = f"{queries}%k: {kv_type}, %v: {kv_type}, {lens}%out: {out_type}"
        derefs = ""
    else:
        pages = pointer_pages(args)
        table_type = f"memref<{b}x{pages}x1xi64>"
        kv_type = f"memref<{b}x{pages}x{args.page_size * d}x{kv_t}>"
        scale_args, scale_lines, scale_types = scale_cache_parts(args, kv_type)
        lens += "".join(f"%{name}: {type_}, " for name, type_ in scale_args)
        params = f"{queries}%k_table: {table_type}, %v_table: {table_type}, {lens}%out: {out_type}"
        partial = (hkv * sk) % args.page_size != 0  # the last page partly filled: the capacity is stated
        tokens = f" {{seq_len_k = {sk}}}" if partial else ""
        derefs = (
            f'  %k = "rock.deref"(%k_table){tokens} : ({table_type}) -> {kv_type}\n'
            f'  %v = "rock.deref"(%v_table){tokens} : ({table_type}) -> {kv_type}\n'
        ) + scale_lines
    if scale_args:
        lens_operand += ", %k_scales, %v_scales"
        lens_type += scale_types
    splits = f", rock.num_splits = {args.num_splits}" if args.num_splits is not None else ""
    splits += f", rock.pipeline_depth = {args.pipeline_depth}" if getattr(args, "pipeline_depth", None) else ""
    splits += (", rock.lds_swizzle" if getattr(args, "lds_swizzle", False) else "") + \
        (", rock.lds_dma" if getattr(args, "lds_dma", False) else "")
    return f"""func.func @{args.name}({params}) attributes {{rock.kernel, rock.arch = "{args.arch}"{splits}}} {{
{padded}{derefs}  "rock.attention"(%{q_name}, %k, %v{lens_operand}, %{out_name}) {{num_heads_q = {hq}, num_heads_kv = {hkv},
      causal = {str(args.causal).lower()}{scale}, operandSegmentSizes = array<i32: {segments}>}}
    : ({q_type}, {kv_type}, {kv_type}{lens_type}, {q_type}) -> ()
  return
}}
"""


def takes_seq_lens(args: argparse.Namespace) -> bool:
    """seq_lens with pointer tables or dense K/V: asked for, or implied by packed queries (a decode row
    and a prefill chunk of one launch have their own key lengths, the queries aligned to their ends)."""
    return args.seq_lens or args.varlen


def varlen_parts(args: argparse.Namespace, q_type: str) -> tuple[str, str, str]:
    """Packed queries of the pointer and dense forms: (the q and cu_seqlens_q parameters, the packed
    out type, the rock.varlen_view ops presenting q and out as ``q_type``). total_q and B+1 are '?'
    with --dynamic."""
    b, hq, d, t = args.batch, args.num_heads_q, args.head_dim, args.dtype
    total_q, b1 = ("?", "?") if args.dynamic else (b * args.seq_len_q, b + 1)
    packed_type, cu_type = f"memref<{total_q}x{hq}x{d}x{t}>", f"memref<{b1}xi32>"
    views = "".join(f'  %{name}_padded = "rock.varlen_view"(%{name}, %cu_seqlens_q) : ({packed_type}, {cu_type}) '
                    f"-> {q_type}\n" for name in ("q", "out"))
    return f"%q: {packed_type}, %cu_seqlens_q: {cu_type}, ", packed_type, views


def serving_function_text(args: argparse.Namespace) -> str:
    """``(q, k_cache, v_cache, block_table, seq_lens, out)`` or ``(q, k_cache, v_cache, kv_indptr,
    kv_indices, kv_last_page_len, out)``: the pools viewed in place by rock.block_table_view.
    With ``--dynamic`` the batch, the block slots, the pool's blocks, nnz and total_q are ``?``."""
    hq, hkv = args.num_heads_q, args.num_heads_kv
    sq, d, t, page = args.seq_len_q, args.head_dim, args.dtype, args.page_size
    if args.dynamic:
        b = slots = blocks = nnz = total_q = b1 = "?"
    else:
        b, slots, blocks = args.batch, max_blocks(args), num_blocks(args)
        nnz, total_q, b1 = b * slots, b * sq, b + 1
    pages = "?" if args.dynamic else hkv * slots
    q_type = f"memref<{b}x{hq}x{sq}x{d}x{t}>"
    kv_t = KV_DTYPES[args.kv_dtype] if args.kv_dtype else t
    k_shape, v_shape = POOL_LAYOUTS[args.kv_layout].kv_shapes(blocks, page, hkv, d, kv_element_bytes(args))
    kv_type = f"memref<{b}x{pages}x{page * d}x{kv_t}>"
    extras, extra_segments, variant_attrs = variant_parts(args)
    lens_type = f"memref<{b}xi32>"
    tables, viewed, lengths = POOL_TABLES[args.page_table].arguments(b, slots, nnz, lens_type)
    view_operands = ", ".join(f"%{name}" for name in viewed)
    view_segments = ", ".join(["1"] * (1 + len(viewed)) + ["0"] * (3 - len(viewed)))
    view_types = ", ".join(dict(tables)[name] for name in viewed)
    packed = [("q", f"memref<{total_q}x{hq}x{d}x{t}>"), ("cu_seqlens_q", f"memref<{b1}xi32>")] if args.varlen else []
    queries = packed or [("q", q_type)]
    out_type = packed[0][1] if packed else q_type
    scale_args, scale_lines, scale_types = scale_cache_parts(
        args, kv_type, f"{view_operands};{view_segments};{view_types};{blocks}")
    cache = KV_CACHES[args.kv_cache]
    pool_lines, k_pool_type, v_pool_type = cache.views(k_shape, kv_t, v_shape)
    arguments = [*queries, *cache.arguments(memref_type(k_shape, kv_t), memref_type(v_shape, kv_t)), *tables, *lengths,
                 *extras, *scale_args, ("out", out_type)]
    params = ", ".join(f"%{name}: {type_}" for name, type_ in arguments)
    q_name, out_name = ("q_padded", "out_padded") if packed else ("q", "out")
    padded = "".join(
        f'  %{name}_padded = "rock.varlen_view"(%{name}, %cu_seqlens_q) : ({packed[0][1]}, {packed[1][1]}) -> {q_type}\n'
        for name in ("q", "out")) if packed else ""
    views = pool_lines + "".join(
        f'  %{kv} = "rock.block_table_view"(%{kv}_cache, {view_operands}) {{layout = "{args.kv_layout}", '
        f"operandSegmentSizes = array<i32: {view_segments}>}}\n    : ({kv_pool_type}, {view_types}) -> {kv_type}\n"
        for kv, kv_pool_type in (("k", k_pool_type), ("v", v_pool_type))) + scale_lines
    lens_operand = (", %seq_lens" if lengths else "") + "".join(f", %{name}" for name, _ in extras)
    lens_types = (f", {lens_type}" if lengths else "") + "".join(f", {type_}" for _, type_ in extras)
    if scale_args:
        lens_operand += ", %k_scales, %v_scales"
        lens_types += scale_types
    segments = f"1, 1, 1, {1 if lengths else 0}, {extra_segments}, 1"
    scale = (f", scale = {checks.f32_literal(args.scale, '--scale')} : f32" if args.scale is not None else "") + variant_attrs
    splits = f", rock.num_splits = {args.num_splits}" if args.num_splits is not None else ""
    splits += f", rock.pipeline_depth = {args.pipeline_depth}" if getattr(args, "pipeline_depth", None) else ""
    splits += (", rock.lds_swizzle" if getattr(args, "lds_swizzle", False) else "") + \
        (", rock.lds_dma" if getattr(args, "lds_dma", False) else "")
    return f"""func.func @{args.name}({params}) attributes {{rock.kernel, rock.arch = "{args.arch}"{splits}}} {{
{padded}{views}  "rock.attention"(%{q_name}, %k, %v{lens_operand}, %{out_name}) {{num_heads_q = {hq}, num_heads_kv = {hkv},
      causal = {str(args.causal).lower()}{scale}, operandSegmentSizes = array<i32: {segments}>}}
    : ({q_type}, {kv_type}, {kv_type}{lens_types}, {q_type}) -> ()
  return
}}
"""
