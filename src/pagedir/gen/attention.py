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

Each form (``--dense``, ``--page-table``) writes its own arguments, IR lines and flag rules
(:class:`pagedir.kv_caches.KvForm`); this module writes the queries, the variants and ``rock.attention``.
"""

from __future__ import annotations

import argparse

from pagedir.errors import UserError
from pagedir.gen import checks
from pagedir.kv_caches import DENSE, KV_CACHES, PAGE_TABLES as FORMS, POOL_LAYOUTS, POOL_TABLES, KvForm
from pagedir.variants import F32_MAX, F32_MIN_NORMAL, VARIANTS, variant_attributes, variant_operands

DTYPES = ("f16", "bf16", "f32")
PAGE_TABLES = tuple(FORMS)
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
    parser.add_argument("--page-table", choices=PAGE_TABLES, default=PAGE_TABLES[0],
                        help="; ".join(f"{name}: {form.summary}" for name, form in FORMS.items()))
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
    form = kv_form(args)
    if args.dense and args.page_table != PAGE_TABLES[0]:
        raise UserError(f"--dense takes no page table, got --page-table {args.page_table}")
    if (message := form.flag_error(args)) is not None:
        raise UserError(message)
    if args.num_blocks is not None and not form.pools:
        raise UserError(f"--num-blocks sizes the cache pools of --page-table {pool_forms()}")
    if args.kv_cache != "separate" and not form.pools:
        raise UserError(f"--kv-cache {args.kv_cache} stacks the cache pools of --page-table {pool_forms()}")
    if args.num_blocks is not None and args.num_blocks < 1:  # fewer than the table addresses: a server's pool
        raise UserError(f"--num-blocks must be at least 1 (block ids are range-checked), got {args.num_blocks}")
    if form.pools and (message := POOL_LAYOUTS[args.kv_layout].flag_error(args, kv_element_bytes(args))) is not None:
        raise UserError(message)
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
    checks.tensor_fits("q and out", [args.batch, args.num_heads_q, args.seq_len_q, args.head_dim], args.dtype)
    for what, shape, dtype in form.tensors(args):
        checks.tensor_fits(what, shape, dtype)


def kv_form(args: argparse.Namespace) -> KvForm:
    """How the kernel takes K and V: ``--dense``, else ``--page-table``'s form."""
    return DENSE if args.dense else FORMS[args.page_table]


def pool_forms() -> str:
    """The ``--page-table`` forms reading cache pools, as a sentence names them."""
    *first, last = POOL_TABLES
    return f"{', '.join(first)} or {last}" if first else last


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


def generate(args: argparse.Namespace) -> str:
    validate(args)
    import mlir.ir as ir

    from pagedir.context import make_context

    text = function_text(args)
    with make_context():
        module = ir.Module.parse(text)  # the generated text must parse (names are kept by returning the text itself)
        checks.compiler_accepts(module, args.arch)
    return text


def function_text(args: argparse.Namespace) -> str:
    """The kernel: its queries (packed with ``--varlen``), K/V in their form (:func:`kv_form`), the lengths, the
    variants' arguments, the scale caches, ``out``. With ``--dynamic`` the batch and total_q are ``?`` (and a
    form reading cache pools makes its tables' and pools' sizes ``?`` too)."""
    b, hq, hkv = "?" if args.dynamic else args.batch, args.num_heads_q, args.num_heads_kv
    sq, d, t = args.seq_len_q, args.head_dim, args.dtype
    q_type = f"memref<{b}x{hq}x{sq}x{d}x{t}>"
    kv_t = KV_DTYPES[args.kv_dtype] if args.kv_dtype else t
    kv = kv_form(args).text(args, b, kv_t, kv_element_bytes(args))
    extras, extra_segments, variant_attrs = variant_parts(args)
    queries, out_type, padded = [("q", q_type)], q_type, ""
    q_name, out_name = "q", "out"
    if args.varlen:  # packed rows viewed as the padded q and out
        queries, out_type, padded = varlen_parts(args, q_type)
        q_name, out_name = "q_padded", "out_padded"
    arguments = [*queries, *kv.arguments, *kv.lengths, *extras, *kv.scale_arguments, ("out", out_type)]
    params = ", ".join(f"%{name}: {type_}" for name, type_ in arguments)
    operands = [*kv.lengths, *extras] + ([("k_scales", kv.scale_type), ("v_scales", kv.scale_type)]
                                         if kv.scale_arguments else [])
    lens_operand = "".join(f", %{name}" for name, _ in operands)
    lens_types = "".join(f", {type_}" for _, type_ in operands)
    segments = f"1, 1, 1, {1 if kv.lengths else 0}, {extra_segments}, 1"
    scale = f", scale = {checks.f32_literal(args.scale, '--scale')} : f32" if args.scale is not None else ""
    scale += variant_attrs
    splits = f", rock.num_splits = {args.num_splits}" if args.num_splits is not None else ""
    splits += f", rock.pipeline_depth = {args.pipeline_depth}" if getattr(args, "pipeline_depth", None) else ""
    splits += (", rock.lds_swizzle" if getattr(args, "lds_swizzle", False) else "") + \
        (", rock.lds_dma" if getattr(args, "lds_dma", False) else "")
    return f"""func.func @{args.name}({params}) attributes {{rock.kernel, rock.arch = "{args.arch}"{splits}}} {{
{padded}{kv.lines}  "rock.attention"(%{q_name}, %k, %v{lens_operand}, %{out_name}) {{num_heads_q = {hq}, num_heads_kv = {hkv},
      causal = {str(args.causal).lower()}{scale}, operandSegmentSizes = array<i32: {segments}>}}
    : ({q_type}, {kv.kv_type}, {kv.kv_type}{lens_types}, {q_type}) -> ()
  return
}}
"""


def varlen_parts(args: argparse.Namespace, q_type: str) -> tuple[list[tuple[str, str]], str, str]:
    """Packed queries: (the q and cu_seqlens_q arguments, the packed out type, the rock.varlen_view ops
    presenting q and out as ``q_type``). total_q and B+1 are '?' with --dynamic."""
    b, hq, d, t = args.batch, args.num_heads_q, args.head_dim, args.dtype
    total_q, b1 = ("?", "?") if args.dynamic else (b * args.seq_len_q, b + 1)
    packed_type, cu_type = f"memref<{total_q}x{hq}x{d}x{t}>", f"memref<{b1}xi32>"
    views = "".join(f'  %{name}_padded = "rock.varlen_view"(%{name}, %cu_seqlens_q) : ({packed_type}, {cu_type}) '
                    f"-> {q_type}\n" for name in ("q", "out"))
    return [("q", packed_type), ("cu_seqlens_q", cu_type)], packed_type, views
