"""copy-kv: a kernel gathering a paged KV cache into the dense tensor [B, H, S, D].

The kernel (L2) reads the cache tile by tile through ``rock.blockwise_load_tile``,
one tile of ``--tile-tokens`` tokens of one KV head per workgroup, as the attention
kernel reads K (``--layout k``: LDS tile ``[D, N]``) or V (``--layout v``: ``[N, D]``),
then writes the tile to ``out``. Arguments: ``(table: memref<B x P x 1 x i64>,
[seq_lens: memref<B x i32>], out: memref<B x H x S x D x T>)``. Page ``p`` of batch
``b`` holds elements ``[p * page, (p + 1) * page)`` of the batch's ``[H, S, D]``
row-major cache, with ``page = page_size * D`` (``--page-size`` counts tokens); when the pages do not divide
the cache, the last is partly filled (``rock.deref {seq_len_k}``, as attention's pointer form states it).

Semantics (what ``pagedir-run --check`` compares): ``out[b, h, s, :]`` is the cached
vector of token ``s`` of head ``h``, or zeros when ``s >= seq_lens[b]`` or its page
pointer is null.
"""

from __future__ import annotations

import argparse
import math

from pagedir.errors import UserError
from pagedir.gen import checks

DTYPES = ("f16", "bf16", "f32")
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", type=int, default=2, help="sequences (B)")
    parser.add_argument("--num-heads-kv", type=int, default=2, help="KV heads (H)")
    parser.add_argument("--seq-len", type=int, default=64, help="tokens per sequence (S)")
    parser.add_argument("--head-dim", type=int, default=64, help="head dimension (D)")
    parser.add_argument("--page-size", type=int, default=16, help="tokens per page")
    parser.add_argument("--tile-tokens", type=int, default=16, help="tokens per tile (N)")
    parser.add_argument("--layout", choices=("k", "v"), default="k", help="k: [D, N] tiles, v: [N, D] tiles")
    parser.add_argument("--dtype", choices=DTYPES, default="f16", help="element type of the cache and out")
    parser.add_argument("--seq-lens", "--ragged", dest="seq_lens", action="store_true",
                        help="take seq_lens (ragged sequences, null pages); --ragged is an alias")
    parser.add_argument("--block-size", type=int, default=256, help=f"threads per workgroup (at most {checks.MAX_BLOCK_SIZE})")
    parser.add_argument("--arch", default="gfx942", help="chip or target (a known chip)")


def validate(args: argparse.Namespace) -> None:
    checks.positive_sizes(args, ("batch", "num_heads_kv", "seq_len", "head_dim", "page_size", "tile_tokens", "block_size"))
    checks.block_size(args.block_size)
    chip = checks.chip(args.arch)
    b, h, s, d = args.batch, args.num_heads_kv, args.seq_len, args.head_dim
    pages = page_count(args)
    checks.tensor_fits("out", [b, h, s, d], args.dtype)
    checks.tensor_fits("the page table", [b, pages, 1], "i64")
    checks.tensor_fits("the paged cache", [b, pages, args.page_size * d], args.dtype)
    tile_bytes = args.tile_tokens * d * ELEMENT_BYTES[args.dtype]
    if tile_bytes > chip.lds_per_workgroup:
        raise UserError(
            f"a tile of --tile-tokens {args.tile_tokens} x --head-dim {d} {args.dtype} takes {tile_bytes} bytes of LDS; "
            f"{chip.name} has {chip.lds_per_workgroup} bytes per workgroup"
        )


def page_count(args: argparse.Namespace) -> int:
    """Pages per sequence: the [H, S, D] cache cut into pages, the last one partly filled when they do not divide it."""
    return -(-args.num_heads_kv * args.seq_len // args.page_size)


def generate(args: argparse.Namespace) -> str:
    validate(args)
    from pagedir.context import make_context  # keep `pagedir-gen --help` light

    import mlir.ir as ir

    text = kernel_text(args)
    with make_context():
        module = ir.Module.parse(text)
        return str(module)


def kernel_text(args: argparse.Namespace) -> str:
    b, h, s, d, n = args.batch, args.num_heads_kv, args.seq_len, args.head_dim, args.tile_tokens
    elem = args.dtype
    page = args.page_size * d
    pages = page_count(args)
    tiles = math.ceil(s / n)
    block = args.block_size
    lds = "#gpu.address_space<workgroup>"
    tile_shape = f"{d}x{n}" if args.layout == "k" else f"{n}x{d}"
    tile_type = f"memref<{tile_shape}x{elem}, {lds}>"
    tile_coords = "(b, h, t, d, n)" if args.layout == "k" else "(b, h, t, n, d)"
    tile_index = "[%d, %n]" if args.layout == "k" else "[%n, %d]"
    pages_type = f"memref<{b}x{pages}x{page}x{elem}>"
    table_type = f"memref<{b}x{pages}x1xi64>"
    out_type = f"memref<{b}x{h}x{s}x{d}x{elem}>"
    tokens = f" {{seq_len_k = {s}}}" if (h * s) % args.page_size else ""  # the last page partly filled
    seq_arg = f"%seq_lens: memref<{b}xi32>, " if args.seq_lens else ""
    if args.seq_lens:
        keep = f"""
          %len_i32 = memref.load %seq_lens[%b] : memref<{b}xi32>
          %len = arith.index_cast %len_i32 : i32 to index
          %live = arith.cmpi ult, %s, %len : index
          %zero = arith.constant 0.0 : {elem}
          %x_live = arith.select %live, %x, %zero : {elem}"""
    else:
        keep = ""
    return f"""
func.func @copy_kv(%table: {table_type}, {seq_arg}%out: {out_type}) attributes {{
    rock.kernel, rock.arch = "{args.arch}", rock.block_size = {block} : i64,
    rock.grid_size = {b * h * tiles} : i64, rock.check = "copy_kv", rock.layout = "{args.layout}"}} {{
  %pages = "rock.deref"(%table){tokens} : ({table_type}) -> {pages_type}
  %bid = "rock.workgroup_id"() : () -> index
  %b = affine.apply affine_map<(w) -> (w floordiv {h * tiles})>(%bid)
  %h = affine.apply affine_map<(w) -> ((w floordiv {tiles}) mod {h})>(%bid)
  %t = affine.apply affine_map<(w) -> (w mod {tiles})>(%bid)
  %c0 = arith.constant 0 : index
  %raw = "rock.alloc"() : () -> memref<{n * d * ELEMENT_BYTES[elem]}xi8, {lds}>
  %tile = memref.view %raw[%c0][] : memref<{n * d * ELEMENT_BYTES[elem]}xi8, {lds}> to {tile_type}
  "rock.blockwise_load_tile"(%pages, %tile, %b, %h, %t, %table) {{
      map = affine_map<{tile_coords} -> (b, (h * {s} + t * {n} + n) * {d} + d)>,
      block_size = {block} : i64, page_size = {page} : i64, index_bounds = array<i64: {b}, {h}, {tiles}>,
      operandSegmentSizes = array<i32: 1, 1, 3, 1>}}
    : ({pages_type}, {tile_type}, index, index, index, {table_type}) -> ()
  // Each thread copies elements tid, tid + block_size, ... of the tile to out (d fastest).
  %tid = "rock.workitem_id"() : () -> index
  %count = arith.constant {n * d} : index
  %step = arith.constant {block} : index
  scf.for %e = %tid to %count step %step {{
    %n = affine.apply affine_map<(e) -> (e floordiv {d})>(%e)
    %d = affine.apply affine_map<(e) -> (e mod {d})>(%e)
    %s = affine.apply affine_map<(t, n) -> (t * {n} + n)>(%t, %n)
    %c_s = arith.constant {s} : index
    %in_seq = arith.cmpi ult, %s, %c_s : index
    scf.if %in_seq {{
      %x = memref.load %tile{tile_index} : {tile_type}{keep}
      memref.store {"%x_live" if args.seq_lens else "%x"}, %out[%b, %h, %s, %d] : {out_type}
    }}
  }}
  return
}}
"""
