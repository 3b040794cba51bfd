"""linalg-attention: an attention payload in upstream dialects (linalg on tensors), as torch-mlir and lighthouse write it.

The function takes memrefs, like the kernel ``rock-raise-attention`` makes of it:
``(q, k, v, [seq_lens], out)`` (dense K/V ``[B, Hkv, Sk, D]``) or ``(q, k_table,
v_table, [seq_lens], out)`` (``--page-size``: tables of ``B x P x 1`` i64 page
pointers, as ``rock.deref`` reads them). The body works on tensors between
``bufferization.to_tensor`` and ``bufferization.materialize_in_destination`` (the
boundary lighthouse's payloads have):

* paged K/V: a ``linalg.generic`` gathering every element of every page through
  its pointer (``tensor.extract`` of the table, ``llvm.inttoptr``, ``llvm.load``),
  then reshaped to ``[B, Hkv, Sk, D]`` (per batch the cache is flattened and cut
  into pages of ``page_size * D`` elements);
* GQA: ``linalg.broadcast`` of K/V heads then ``tensor.collapse_shape``
  (torch's ``repeat_interleave``);
* ``Q K^T``: ``linalg.generic`` contracting D (``--matmul generic``), or, as
  torch-mlir lowers ``bmm``, ``linalg.transpose`` of K and ``linalg.batch_matmul`` on
  ``[B*H, ...]`` (``--matmul batch-matmul``), accumulating in f32;
* the scale: ``arith.mulf`` by a constant in a ``linalg.generic``;
* masks (``--causal``, ``--seq-lens``): ``arith.select`` of -inf from
  ``linalg.index`` (``--mask select``) or an additive 0/-inf tensor (``--mask additive``);
* softmax: max-reduce, subtract, exp, sum-reduce, divide as ``linalg.generic``
  ops (``--softmax generic``) or ``linalg.softmax`` (``--softmax linalg``);
* ``P V`` like ``Q K^T``, then ``arith.truncf`` to the element type.

``rock.check = "linalg_attention"`` gives ``pagedir-run --check`` its data
(:mod:`pagedir.interp.cases.linalg_attention`): random Q/K/V, shuffled pages, sequence lengths under which
every query row sees at least one key (a row that sees none is 0/0 in the
payload). The check has no reference of its own: the payload as written is run
by the interpreter and the raised, lowered kernel compared with it.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np

from pagedir.errors import UserError
from pagedir.gen import checks
from pagedir.gen.attention import DTYPES, KV_LAYOUTS, add_shape_arguments, scale_value
from pagedir.kv_caches import KV_CACHES
from pagedir.variants import softcap_value

MATMUL_FORMS = ("generic", "batch-matmul")
SOFTMAX_FORMS = ("generic", "linalg")
MASK_FORMS = ("select", "additive")
#: The pool layouts this generator writes gathers for (``--kv-layout`` offers every layout of the registry,
#: :data:`pagedir.kv_caches.POOL_LAYOUTS`; the others are refused rather than written as one of these).
WRITTEN_LAYOUTS = ("nhd", "hnd")
#: The page-table forms this generator writes gathers for (``pagedir-gen attention`` takes every form of
#: :data:`pagedir.kv_caches.PAGE_TABLES`).
PAGE_TABLES = ("pointers", "blocks", "csr")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_shape_arguments(parser)
    parser.add_argument("--page-size", type=int, default=None,
                        help="tokens per page: gather K/V through page pointer tables (default: dense K/V; 16 with "
                             "--page-table blocks or csr)")
    parser.add_argument("--page-table", choices=PAGE_TABLES, default=None,
                        help="pointers: i64 page pointers (the default with --page-size); blocks: vLLM's int32 block "
                             "table [B, max_blocks] into K and V cache pools, with seq_lens; csr: FlashInfer's "
                             "kv_indptr, kv_indices, kv_last_page_len into the pools")
    parser.add_argument("--kv-layout", choices=("nhd", "hnd"), default="nhd",
                        help="pool layout for blocks/csr: nhd [num_blocks, page, Hkv, D], hnd [num_blocks, Hkv, page, D]")
    parser.add_argument("--num-blocks", type=int, default=None, metavar="N",
                        help="blocks in each pool (blocks/csr; default: B x max_blocks, enough for the batch)")
    parser.add_argument("--kv-cache", choices=tuple(KV_CACHES), default="separate",
                        help="blocks/csr: separate k_cache and v_cache pools, or one kv_cache gathered with K at index 0 "
                             "and V at 1 of its stacked axis: stacked0 [2, num_blocks, ...], stacked1 [num_blocks, 2, ...]")
    parser.add_argument("--dtype", choices=DTYPES, default="f16", help="element type of Q, K, V and out")
    parser.add_argument("--causal", action="store_true", help="query i sees keys j <= i + seq_len - Sq")
    parser.add_argument("--seq-lens", dest="seq_lens", action="store_true", help="take seq_lens (keys past them are masked)")
    parser.add_argument("--scale", type=scale_value, default=None, help="score scale (default 1/sqrt(D))")
    parser.add_argument("--window", type=int, default=None, metavar="N",
                        help="sliding window: a query at absolute position i sees keys j >= i - N (a select on j)")
    parser.add_argument("--softcap", type=softcap_value, default=None, metavar="X",
                        help="logits soft-cap: score = X * tanh(score / X) after the scale")
    parser.add_argument("--alibi", action="store_true",
                        help="take alibi_slopes (memref<Hq x f32>) and add the bias slope[h] * (key - query position) "
                             "to the scores")
    parser.add_argument("--matmul", choices=MATMUL_FORMS, default="generic", help="how Q K^T and P V are written")
    parser.add_argument("--softmax", choices=SOFTMAX_FORMS, default="generic", help="how the softmax is written")
    parser.add_argument("--mask", choices=MASK_FORMS, default="select", help="how masks are applied")
    parser.add_argument("--arch", default="gfx942", help="chip recorded as rock.arch (a known chip)")
    parser.add_argument("--name", default="attention", help="function name ([A-Za-z_][A-Za-z0-9_$.]*)")


def serving(args: argparse.Namespace) -> bool:
    """K/V gathered from cache pools through a block table or a CSR table."""
    return args.page_table in ("blocks", "csr")


def max_blocks(args: argparse.Namespace) -> int:
    """Block slots per sequence: enough for --seq-len-k tokens (the last block partly filled)."""
    return -(-args.seq_len_k // args.page_size)


def num_blocks(args: argparse.Namespace) -> int:
    return args.num_blocks if args.num_blocks is not None else args.batch * max_blocks(args)


def validate(args: argparse.Namespace) -> None:
    checks.positive_sizes(args, ("batch", "num_heads_q", "num_heads_kv", "seq_len_q", "seq_len_k", "head_dim"))
    if serving(args):
        if args.page_size is None:
            args.page_size = 16
        checks.positive_sizes(args, ("page_size",))
        if args.page_table == "csr" and args.seq_lens:
            raise UserError("--seq-lens: csr page tables carry the lengths (kv_indptr and kv_last_page_len)")
        args.seq_lens = args.page_table == "blocks"  # blocks: always seq_lens, as pagedir-gen attention
        if args.kv_layout not in WRITTEN_LAYOUTS:
            raise UserError(f"--kv-layout {args.kv_layout}: linalg-attention writes gathers from "
                            f"{' and '.join(WRITTEN_LAYOUTS)} pools only")
        if args.num_blocks is not None and args.num_blocks < 1:  # fewer than the table addresses: a server's pool
            raise UserError(f"--num-blocks must be at least 1 (block ids are range-checked), got {args.num_blocks}")
    elif args.num_blocks is not None:
        raise UserError("--num-blocks sizes the cache pools of --page-table blocks or csr")
    elif args.kv_cache != "separate":
        raise UserError(f"--kv-cache {args.kv_cache} stacks the cache pools of --page-table blocks or csr")
    elif args.page_table == "pointers" and args.page_size is None:
        raise UserError("--page-table pointers takes --page-size")
    if args.page_size is not None and not serving(args):
        checks.positive_sizes(args, ("page_size",))
        if (args.num_heads_kv * args.seq_len_k) % args.page_size:
            raise UserError(f"the cache of {args.num_heads_kv} heads x {args.seq_len_k} tokens is not a whole number of "
                            f"{args.page_size}-token pages")
    if args.num_heads_q % args.num_heads_kv:
        raise UserError(f"--num-heads-q {args.num_heads_q} must be a multiple of --num-heads-kv {args.num_heads_kv}")
    if args.window is not None and args.window < 0:
        raise UserError(f"--window must be 0 or more (keys before the query position it keeps), got {args.window}")
    if args.causal and args.seq_len_q > args.seq_len_k:
        raise UserError(f"--seq-len-q {args.seq_len_q} exceeds --seq-len-k {args.seq_len_k}")
    checks.symbol(args.name)
    checks.chip(args.arch)
    b, hq, hkv, sq, sk, d = args.batch, args.num_heads_q, args.num_heads_kv, args.seq_len_q, args.seq_len_k, args.head_dim
    if serving(args):
        sk = max_blocks(args) * args.page_size
        checks.tensor_fits("the cache pools", [num_blocks(args), args.page_size, hkv, d], args.dtype)
        checks.tensor_fits("the block table", [b, max_blocks(args)], "i32")
    checks.tensor_fits("the scores", [b, hq, sq, sk], "f32")
    checks.tensor_fits("k and v", [b, hq, sk, d], "f32")


def generate(args: argparse.Namespace) -> str:
    validate(args)
    import mlir.ir as ir

    from pagedir.context import make_context

    text = function_text(args)
    with make_context():
        ir.Module.parse(text)  # the generated text must parse
    return text


class Writer:
    """SSA lines with fresh names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.types: dict[str, str] = {}

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"%{stem}{self.count}"

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)


def tensor(shape: list[int], element: str) -> str:
    return f"tensor<{'x'.join(str(s) for s in shape)}x{element}>"


def dims(names: str) -> str:
    return ", ".join(names)


def amap(domain: str, results: str) -> str:
    return f"affine_map<({dims(domain)}) -> ({dims(results)})>"


def iterators(kinds: str) -> str:
    return ", ".join('"parallel"' if k == "p" else '"reduction"' for k in kinds)


def function_text(args: argparse.Namespace) -> str:
    b, hq, hkv, sq, sk, d, t = (args.batch, args.num_heads_q, args.num_heads_kv, args.seq_len_q, args.seq_len_k,
                                args.head_dim, args.dtype)
    group = hq // hkv
    w = Writer()
    q_mem, kv_mem = f"memref<{b}x{hq}x{sq}x{d}x{t}>", f"memref<{b}x{hkv}x{sk}x{d}x{t}>"
    q_t, kv_t = tensor([b, hq, sq, d], t), tensor([b, hkv, sk, d], t)
    paged = args.page_size is not None and not serving(args)
    pool = None
    if serving(args):
        sk = max_blocks(args) * args.page_size
        kv_mem, kv_t = f"memref<{b}x{hkv}x{sk}x{d}x{t}>", tensor([b, hkv, sk, d], t)
        pool = Pool(args.kv_layout, num_blocks(args), args.page_size, hkv, d, t, b, max_blocks(args), args.kv_cache)
        caches = [("k_cache", pool.memref), ("v_cache", pool.memref)] if pool.axis is None else [("kv_cache", pool.stacked_memref)]
        params = [f"%q: {q_mem}", *[f"%{name}: {type_}" for name, type_ in caches],
                  *[f"%{name}: {type_}" for name, type_ in pool.tables(args.page_table)]]
    elif paged:
        pages = hkv * sk // args.page_size
        page_elements = args.page_size * d
        table_mem = f"memref<{b}x{pages}x1xi64>"
        params = [f"%q: {q_mem}", f"%k_table: {table_mem}", f"%v_table: {table_mem}"]
    else:
        params = [f"%q: {q_mem}", f"%k: {kv_mem}", f"%v: {kv_mem}"]
    if args.seq_lens:
        params.append(f"%seq_lens: memref<{b}xi32>")
    if args.alibi:
        params.append(f"%alibi_slopes: memref<{hq}xf32>")
    params.append(f"%out: {q_mem}")

    w.emit(f"%qt = bufferization.to_tensor %q restrict : {q_mem} to {q_t}")
    w.types["%qt"] = q_t
    if args.seq_lens:
        w.emit(f"%lens = bufferization.to_tensor %seq_lens restrict : memref<{b}xi32> to tensor<{b}xi32>")
    if args.alibi:
        w.emit(f"%slopes = bufferization.to_tensor %alibi_slopes restrict : memref<{hq}xf32> to tensor<{hq}xf32>")
    f32 = "f32"
    w.emit("%zero = arith.constant 0.000000e+00 : f32")
    w.emit("%neg_inf = arith.constant 0xFF800000 : f32")
    if pool is not None:
        for name, type_ in pool.tables(args.page_table):
            w.emit(f"%{name}_t = bufferization.to_tensor %{name} restrict : {type_} to {type_.replace('memref', 'tensor')}")
    kv = {}
    if pool is not None and pool.axis is not None:
        stacked_t = pool.stacked_memref.replace("memref", "tensor")
        w.emit(f"%kv_pool = bufferization.to_tensor %kv_cache restrict : {pool.stacked_memref} to {stacked_t}")
        w.emit("%stack0 = arith.constant 0 : index")
        w.emit("%stack1 = arith.constant 1 : index")
    for name in ("k", "v"):
        if pool is not None:
            if pool.axis is None:
                w.emit(f"%{name}_pool = bufferization.to_tensor %{name}_cache restrict : {pool.memref} to {pool.tensor}")
            kv[name] = gather_blocks(w, name, pool, args.page_table)
        elif paged:
            table_t = tensor([b, pages, 1], "i64")
            w.emit(f"%{name}_ptrs = bufferization.to_tensor %{name}_table restrict : {table_mem} to {table_t}")
            kv[name] = gather_pages(w, name, b, pages, page_elements, hkv, sk, d, t)
        else:
            w.emit(f"%{name}t = bufferization.to_tensor %{name} restrict : {kv_mem} to {kv_t}")
            kv[name] = f"%{name}t"
        w.types[kv[name]] = kv_t
        if group > 1:
            kv[name] = repeat_heads(w, kv[name], b, hkv, group, sk, d, t)
            w.types[kv[name]] = tensor([b, hq, sk, d], t)

    scores_t = tensor([b, hq, sq, sk], f32)
    scores = matmul(w, args.matmul, "%qt", kv["k"], [b, hq, sq, d], [b, hq, sk, d], transposed=True, lhs_element=t, rhs_element=t)
    scale = args.scale if args.scale is not None else 1.0 / math.sqrt(d)
    scaled = elementwise(w, [scores], [f32], scores_t, lambda a: [f"%s = arith.mulf {a[0]}, %scale : f32"],
                         prologue=[f"%scale = arith.constant {checks.f32_literal(scale, '--scale')} : f32"])
    if args.softcap is not None:
        cap = checks.f32_literal(args.softcap, "--softcap")
        scaled = elementwise(w, [scaled], [f32], scores_t, lambda a: [f"%capped = arith.divf {a[0]}, %cap : f32",
                                                                     "%t = math.tanh %capped : f32",
                                                                     "%s = arith.mulf %t, %cap : f32"],
                             prologue=[f"%cap = arith.constant {cap} : f32"])
    if args.alibi:
        scaled = add_alibi(w, args, scaled, b, hq, sq, sk, pool if args.page_table == "csr" else None)
    masked = apply_masks(w, args, scaled, b, hq, sq, sk, csr=pool if args.page_table == "csr" else None)
    probs = softmax(w, args.softmax, masked, b, hq, sq, sk)
    out32 = matmul(w, args.matmul, probs, kv["v"], [b, hq, sq, sk], [b, hq, sk, d], transposed=False, lhs_element=f32, rhs_element=t)
    result = out32
    if t != f32:
        result = elementwise(w, [out32], [f32], q_t, lambda a: [f"%s = arith.truncf {a[0]} : f32 to {t}"], out_element=t)
    w.emit(f"bufferization.materialize_in_destination {result} in restrict writable %out : ({q_t}, {q_mem}) -> ()")
    w.emit("return")
    body = "\n".join(w.lines)
    return (f'func.func @{args.name}({", ".join(params)}) attributes {{rock.arch = "{args.arch}", '
            f'rock.check = "linalg_attention"}} {{\n{body}\n}}\n')


def gather_pages(w: Writer, name: str, b: int, pages: int, page_elements: int, hkv: int, sk: int, d: int, t: str) -> str:
    """``pages[b, p, s] = *(table[b, p] + s)``, then per batch the pages laid end to end as [Hkv, Sk, D]."""
    size = checks.ELEMENT_BYTES[t]
    gathered_t = tensor([b, pages, page_elements], t)
    empty = w.fresh("empty")
    w.emit(f"{empty} = tensor.empty() : {gathered_t}")
    gathered = w.fresh(f"{name}_pages")
    w.emit(f"{gathered} = linalg.generic {{indexing_maps = [{amap('bps', 'bps')}], iterator_types = [{iterators('ppp')}]}}"
           f" outs({empty} : {gathered_t}) {{")
    w.emit(f"^bb0(%o: {t}):")
    w.emit("  %b = linalg.index 0 : index")
    w.emit("  %p = linalg.index 1 : index")
    w.emit("  %s = linalg.index 2 : index")
    w.emit("  %c0 = arith.constant 0 : index")
    w.emit(f"  %page = tensor.extract %{name}_ptrs[%b, %p, %c0] : {tensor([b, pages, 1], 'i64')}")
    w.emit("  %s64 = arith.index_cast %s : index to i64")
    w.emit(f"  %bytes = arith.constant {size} : i64")
    w.emit("  %offset = arith.muli %s64, %bytes : i64")
    w.emit("  %address = arith.addi %page, %offset : i64")
    w.emit("  %ptr = llvm.inttoptr %address : i64 to !llvm.ptr<1>")
    w.emit(f"  %x = llvm.load %ptr : !llvm.ptr<1> -> {t}")
    w.emit(f"  linalg.yield %x : {t}")
    w.emit(f"}} -> {gathered_t}")
    flat = w.fresh(f"{name}_flat")
    w.emit(f"{flat} = tensor.collapse_shape {gathered} [[0], [1, 2]] : {gathered_t} into {tensor([b, pages * page_elements], t)}")
    dense = w.fresh(f"{name}_dense")
    w.emit(f"{dense} = tensor.expand_shape {flat} [[0], [1, 2, 3]] output_shape [{b}, {hkv}, {sk}, {d}] : "
           f"{tensor([b, pages * page_elements], t)} into {tensor([b, hkv, sk, d], t)}")
    return dense


@dataclass(frozen=True)
class Pool:
    """A K or V cache pool (nhd [num_blocks, block, Hkv, D] or hnd [num_blocks, Hkv, block, D]) and its tables."""

    layout: str
    num_blocks: int
    block: int
    heads: int
    head_dim: int
    element: str
    batch: int
    max_blocks: int
    cache: str = "separate"  # --kv-cache: stacked forms gather K and V from one tensor

    @property
    def axis(self) -> int | None:
        """The stacked axis of the one ``kv_cache`` tensor (None: two pools)."""
        return KV_CACHES[self.cache].axis

    @property
    def stacked_memref(self) -> str:
        shape = self.shape
        shape.insert(self.axis, 2)
        return f"memref<{'x'.join(map(str, shape))}x{self.element}>"

    def element_of(self, name: str) -> str:
        """The ``tensor.extract`` reading element ``[%id, %x, %y, %d]`` of K's or V's pool (``name``: k or v)."""
        if self.axis is None:
            return f"tensor.extract %{name}_pool[%id, %x, %y, %d] : {self.tensor}"
        indices = ["%id", "%x", "%y", "%d"]
        indices.insert(self.axis, "%stack0" if name == "k" else "%stack1")
        return f"tensor.extract %kv_pool[{', '.join(indices)}] : {self.stacked_memref.replace('memref', 'tensor')}"

    @property
    def shape(self) -> list[int]:
        inner = [self.block, self.heads] if self.layout == "nhd" else [self.heads, self.block]
        return [self.num_blocks, *inner, self.head_dim]

    @property
    def memref(self) -> str:
        return f"memref<{'x'.join(map(str, self.shape))}x{self.element}>"

    @property
    def tensor(self) -> str:
        return tensor(self.shape, self.element)

    def tables(self, form: str) -> list[tuple[str, str]]:
        """The table arguments in pagedir-gen attention's order."""
        b = self.batch
        if form == "blocks":
            return [("block_table", f"memref<{b}x{self.max_blocks}xi32>")]
        return [("kv_indptr", f"memref<{b + 1}xi32>"), ("kv_indices", f"memref<{b * self.max_blocks}xi32>"),
                ("kv_last_page_len", f"memref<{b}xi32>")]


def gather_blocks(w: Writer, name: str, pool: Pool, form: str) -> str:
    """torch's ``pool[block_table]`` (blocks) or ``pool[kv_indices[kv_indptr[b] + m]]`` (csr) as a
    ``linalg.generic`` over ``[B, max_blocks, <the pool's block dims>]``, then reshaped to [B, Hkv, Sk, D].

    blocks reads the id as an input of the generic (torch-mlir's ``aten.index.Tensor``), csr with
    ``tensor.extract`` of kv_indptr and kv_indices (the slot clamped to the table, as an index_select
    of a padded range would be); both extract the element of the pool."""
    b, mb, t = pool.batch, pool.max_blocks, pool.element
    block_dims = pool.shape[1:]
    gathered_t = tensor([b, mb, *block_dims], t)
    empty = w.fresh("empty")
    w.emit(f"{empty} = tensor.empty() : {gathered_t}")
    gathered = w.fresh(f"{name}_blocks")
    out_map = amap("bmxyd", "bmxyd")
    if form == "blocks":
        table_t = tensor([b, mb], "i32")
        w.emit(f"{gathered} = linalg.generic {{indexing_maps = [{amap('bmxyd', 'bm')}, {out_map}], "
               f"iterator_types = [{iterators('ppppp')}]}} ins(%block_table_t : {table_t}) outs({empty} : {gathered_t}) {{")
        w.emit(f"^bb0(%id32: i32, %o: {t}):")
    else:
        w.emit(f"{gathered} = linalg.generic {{indexing_maps = [{out_map}], iterator_types = [{iterators('ppppp')}]}}"
               f" outs({empty} : {gathered_t}) {{")
        w.emit(f"^bb0(%o: {t}):")
        w.emit("  %b = linalg.index 0 : index")
        w.emit("  %m = linalg.index 1 : index")
        w.emit(f"  %start32 = tensor.extract %kv_indptr_t[%b] : {tensor([b + 1], 'i32')}")
        w.emit("  %start = arith.index_cast %start32 : i32 to index")
        w.emit("  %slot = arith.addi %start, %m : index")
        w.emit(f"  %last_slot = arith.constant {b * mb - 1} : index")
        w.emit("  %in_table = arith.minsi %slot, %last_slot : index")
        w.emit(f"  %id32 = tensor.extract %kv_indices_t[%in_table] : {tensor([b * mb], 'i32')}")
    w.emit("  %id = arith.index_cast %id32 : i32 to index")
    w.emit("  %x = linalg.index 2 : index")
    w.emit("  %y = linalg.index 3 : index")
    w.emit("  %d = linalg.index 4 : index")
    w.emit(f"  %e = {pool.element_of(name)}")
    w.emit(f"  linalg.yield %e : {t}")
    w.emit(f"}} -> {gathered_t}")
    hkv, sk, d = pool.heads, mb * pool.block, pool.head_dim
    if pool.layout == "nhd":  # [B, MB, block, Hkv, D] -> [B, Sk, Hkv, D] -> [B, Hkv, Sk, D]
        tokens_t = tensor([b, sk, hkv, d], t)
        tokens = w.fresh(f"{name}_tokens")
        w.emit(f"{tokens} = tensor.collapse_shape {gathered} [[0], [1, 2], [3], [4]] : {gathered_t} into {tokens_t}")
        empty = w.fresh("empty")
        w.emit(f"{empty} = tensor.empty() : {tensor([b, hkv, sk, d], t)}")
        dense = w.fresh(f"{name}_dense")
        w.emit(f"{dense} = linalg.transpose ins({tokens} : {tokens_t}) outs({empty} : {tensor([b, hkv, sk, d], t)}) "
               f"permutation = [0, 2, 1, 3]")
        return dense
    heads_t = tensor([b, hkv, mb, pool.block, d], t)  # [B, MB, Hkv, block, D] -> [B, Hkv, MB, block, D] -> [B, Hkv, Sk, D]
    empty = w.fresh("empty")
    w.emit(f"{empty} = tensor.empty() : {heads_t}")
    heads = w.fresh(f"{name}_heads")
    w.emit(f"{heads} = linalg.transpose ins({gathered} : {gathered_t}) outs({empty} : {heads_t}) permutation = [0, 2, 1, 3, 4]")
    dense = w.fresh(f"{name}_dense")
    w.emit(f"{dense} = tensor.collapse_shape {heads} [[0], [1], [2, 3], [4]] : {heads_t} into {tensor([b, hkv, sk, d], t)}")
    return dense


def repeat_heads(w: Writer, value: str, b: int, hkv: int, group: int, sk: int, d: int, t: str) -> str:
    """torch's ``repeat_interleave(group, dim=1)``: broadcast a new dim after the heads, fold it into them."""
    wide_t = tensor([b, hkv, group, sk, d], t)
    empty = w.fresh("empty")
    w.emit(f"{empty} = tensor.empty() : {wide_t}")
    wide = w.fresh("repeated")
    w.emit(f"{wide} = linalg.broadcast ins({value} : {tensor([b, hkv, sk, d], t)}) outs({empty} : {wide_t}) dimensions = [2]")
    folded = w.fresh("heads")
    w.emit(f"{folded} = tensor.collapse_shape {wide} [[0], [1, 2], [3], [4]] : {wide_t} into {tensor([b, hkv * group, sk, d], t)}")
    return folded


def filled(w: Writer, shape: list[int], value: str) -> tuple[str, str]:
    """(an empty f32 tensor, the same filled with ``value``)."""
    type_ = tensor(shape, "f32")
    empty, init = w.fresh("empty"), w.fresh("init")
    w.emit(f"{empty} = tensor.empty() : {type_}")
    w.emit(f"{init} = linalg.fill ins({value} : f32) outs({empty} : {type_}) -> {type_}")
    return empty, init


def matmul(w: Writer, form: str, lhs: str, rhs: str, lhs_shape: list[int], rhs_shape: list[int], *,
           transposed: bool, lhs_element: str, rhs_element: str) -> str:
    """``lhs @ rhs^T`` (transposed: Q K^T contracting D) or ``lhs @ rhs`` (P V contracting Sk), in f32."""
    b, h, m, k = lhs_shape
    n = rhs_shape[2] if transposed else rhs_shape[3]
    lhs_t, rhs_t = tensor(lhs_shape, lhs_element), tensor(rhs_shape, rhs_element)
    _, init = filled(w, [b, h, m, n], "%zero")
    out_t = tensor([b, h, m, n], "f32")
    if form == "generic":
        rhs_map = amap("bhmnk", "bhnk") if transposed else amap("bhmnk", "bhkn")
        result = w.fresh("mm")
        w.emit(f"{result} = linalg.generic {{indexing_maps = [{amap('bhmnk', 'bhmk')}, {rhs_map}, {amap('bhmnk', 'bhmn')}], "
               f"iterator_types = [{iterators('ppppr')}]}} ins({lhs}, {rhs} : {lhs_t}, {rhs_t}) outs({init} : {out_t}) {{")
        w.emit(f"^bb0(%a: {lhs_element}, %b: {rhs_element}, %acc: f32):")
        operands = []
        for name, element in (("%a", lhs_element), ("%b", rhs_element)):
            if element != "f32":
                w.emit(f"  {name}32 = arith.extf {name} : {element} to f32")
                name = f"{name}32"
            operands.append(name)
        w.emit(f"  %ab = arith.mulf {operands[0]}, {operands[1]} : f32")
        w.emit("  %sum = arith.addf %acc, %ab : f32")
        w.emit("  linalg.yield %sum : f32")
        w.emit(f"}} -> {out_t}")
        w.types[result] = out_t
        return result
    # torch-mlir: aten.bmm on [B*H, ...] views; K^T as linalg.transpose.
    lhs3_t = tensor([b * h, m, k], lhs_element)
    lhs3 = w.fresh("lhs")
    w.emit(f"{lhs3} = tensor.collapse_shape {lhs} [[0, 1], [2], [3]] : {lhs_t} into {lhs3_t}")
    rhs3_t = tensor([b * h, rhs_shape[2], rhs_shape[3]], rhs_element)
    rhs3 = w.fresh("rhs")
    w.emit(f"{rhs3} = tensor.collapse_shape {rhs} [[0, 1], [2], [3]] : {rhs_t} into {rhs3_t}")
    if transposed:
        kt_t = tensor([b * h, k, n], rhs_element)
        empty, kt = w.fresh("empty"), w.fresh("kt")
        w.emit(f"{empty} = tensor.empty() : {kt_t}")
        w.emit(f"{kt} = linalg.transpose ins({rhs3} : {rhs3_t}) outs({empty} : {kt_t}) permutation = [0, 2, 1]")
        rhs3, rhs3_t = kt, kt_t
    init3_t = tensor([b * h, m, n], "f32")
    init3 = w.fresh("acc")
    w.emit(f"{init3} = tensor.collapse_shape {init} [[0, 1], [2], [3]] : {out_t} into {init3_t}")
    product = w.fresh("bmm")
    w.emit(f"{product} = linalg.batch_matmul ins({lhs3}, {rhs3} : {lhs3_t}, {rhs3_t}) outs({init3} : {init3_t}) -> {init3_t}")
    result = w.fresh("mm")
    w.emit(f"{result} = tensor.expand_shape {product} [[0, 1], [2], [3]] output_shape [{b}, {h}, {m}, {n}] : "
           f"{init3_t} into {out_t}")
    w.types[result] = out_t
    return result


def elementwise(w: Writer, inputs: list[str], elements: list[str], out_type: str, body, *, prologue: list[str] = (),
                maps: list[str] | None = None, out_element: str = "f32", indices: int = 0) -> str:
    """A parallel ``linalg.generic`` over ``out_type``; ``body(args)`` gives lines, the last defining ``%s``."""
    for line in prologue:
        w.emit(line)
    rank = out_type.count("x")
    domain = "abcdefgh"[:rank]
    maps = maps or [amap(domain, domain)] * len(inputs)
    empty = w.fresh("empty")
    w.emit(f"{empty} = tensor.empty() : {out_type}")
    result = w.fresh("ew")
    ins = f" ins({', '.join(inputs)} : {', '.join(tensor_type_of(w, v) for v in inputs)})" if inputs else ""
    w.emit(f"{result} = linalg.generic {{indexing_maps = [{', '.join([*maps, amap(domain, domain)])}], "
           f"iterator_types = [{iterators('p' * rank)}]}}{ins} outs({empty} : {out_type}) {{")
    names = [f"%in{i}" for i in range(len(inputs))]
    w.emit(f"^bb0({', '.join(f'{n}: {e}' for n, e in zip([*names, '%o'], [*elements, out_element]))}):")
    for line in body(names):
        w.emit("  " + line)
    w.emit(f"  linalg.yield %s : {out_element}")
    w.emit(f"}} -> {out_type}")
    w.types[result] = out_type
    return result


def tensor_type_of(w: Writer, value: str) -> str:
    return w.types[value]


def length_lines(args: argparse.Namespace, b: int, sk: int, csr: Pool | None) -> list[str]:
    """Body lines defining ``%len``, the sequence length of batch ``linalg.index 0``: seq_lens[b], the CSR
    length, or Sk."""
    if args.seq_lens:
        return ["%bi = linalg.index 0 : index", f"%len32 = tensor.extract %lens[%bi] : tensor<{b}xi32>",
                "%len = arith.index_cast %len32 : i32 to index"]
    if csr:  # FlashInfer's length: (pages - 1) * page_size + kv_last_page_len[b]
        return ["%bi = linalg.index 0 : index", "%c1 = arith.constant 1 : index", "%bn = arith.addi %bi, %c1 : index",
                f"%first32 = tensor.extract %kv_indptr_t[%bi] : tensor<{b + 1}xi32>",
                f"%end32 = tensor.extract %kv_indptr_t[%bn] : tensor<{b + 1}xi32>",
                f"%tail32 = tensor.extract %kv_last_page_len_t[%bi] : tensor<{b}xi32>",
                "%first = arith.index_cast %first32 : i32 to index", "%end = arith.index_cast %end32 : i32 to index",
                "%tail = arith.index_cast %tail32 : i32 to index", "%pages = arith.subi %end, %first : index",
                "%full = arith.subi %pages, %c1 : index", f"%block = arith.constant {csr.block} : index",
                "%full_tokens = arith.muli %full, %block : index", "%len = arith.addi %full_tokens, %tail : index"]
    return [f"%len = arith.constant {sk} : index"]


def add_alibi(w: Writer, args: argparse.Namespace, scores: str, b: int, hq: int, sq: int, sk: int,
              csr: Pool | None) -> str:
    """scores + bias, the ALiBi bias tensor ``bias[b, h, i, j] = slopes[h] * (j - i_pos)`` (query i at
    i_pos = i + seq_len - Sq), as a model builds it from arange and adds it to the scores."""
    scores_t = tensor([b, hq, sq, sk], "f32")

    def bias(a: list[str]) -> list[str]:
        return ["%i = linalg.index 2 : index", "%j = linalg.index 3 : index", *length_lines(args, b, sk, csr),
                "%shifted = arith.addi %i, %len : index", f"%sq = arith.constant {sq} : index",
                "%position = arith.subi %shifted, %sq : index", "%distance = arith.subi %j, %position : index",
                "%distance64 = arith.index_cast %distance : index to i64",
                "%distance_f = arith.sitofp %distance64 : i64 to f32", f"%s = arith.mulf {a[0]}, %distance_f : f32"]

    w.types["%slopes"] = tensor([hq], "f32")
    biases = elementwise(w, ["%slopes"], ["f32"], scores_t, bias, maps=[amap("abcd", "b")])
    return elementwise(w, [scores, biases], ["f32", "f32"], scores_t, lambda a: [f"%s = arith.addf {a[0]}, {a[1]} : f32"])


def apply_masks(w: Writer, args: argparse.Namespace, scores: str, b: int, hq: int, sq: int, sk: int, *,
                csr: Pool | None = None) -> str:
    """Keys j past seq_lens[b] (or the CSR length), or (causal) past i + seq_len - Sq, get -inf."""
    if not (args.causal or args.seq_lens or csr or args.window is not None):
        return scores
    scores_t = tensor([b, hq, sq, sk], "f32")

    def visible(lines: list[str]) -> str:
        lines += ["%i = linalg.index 2 : index", "%j = linalg.index 3 : index", *length_lines(args, b, sk, csr)]
        if args.seq_lens or csr:
            lines += ["%in_len = arith.cmpi slt, %j, %len : index"]
        if args.causal:
            lines += ["%shifted = arith.addi %i, %len : index", f"%sq = arith.constant {sq} : index",
                      "%last = arith.subi %shifted, %sq : index", "%causal_ok = arith.cmpi sle, %j, %last : index"]
        if args.window is not None:  # keys j >= i + len - Sq - W
            lines += ["%pos = arith.addi %i, %len : index", f"%sq_w = arith.constant {sq + args.window} : index",
                      "%window_start = arith.subi %pos, %sq_w : index", "%window_ok = arith.cmpi sge, %j, %window_start : index"]
        conditions = [c for c, on in (("%in_len", args.seq_lens or csr), ("%causal_ok", args.causal),
                                      ("%window_ok", args.window is not None)) if on]
        for n, condition in enumerate(conditions[1:]):
            lines += [f"%ok{n} = arith.andi {conditions[0] if n == 0 else f'%ok{n - 1}'}, {condition} : i1"]
        return conditions[0] if len(conditions) == 1 else f"%ok{len(conditions) - 2}"

    if args.mask == "select":
        def body(a: list[str]) -> list[str]:
            lines: list[str] = []
            ok = visible(lines)
            return lines + [f"%s = arith.select {ok}, {a[0]}, %neg_inf : f32"]

        return elementwise(w, [scores], ["f32"], scores_t, body)

    def mask_body(a: list[str]) -> list[str]:
        lines: list[str] = []
        ok = visible(lines)
        return lines + [f"%s = arith.select {ok}, %zero, %neg_inf : f32"]

    additive = elementwise(w, [], [], scores_t, mask_body)
    return elementwise(w, [scores, additive], ["f32", "f32"], scores_t, lambda a: [f"%s = arith.addf {a[0]}, {a[1]} : f32"])


def softmax(w: Writer, form: str, scores: str, b: int, hq: int, sq: int, sk: int) -> str:
    scores_t = tensor([b, hq, sq, sk], "f32")
    if form == "linalg":
        empty, result = w.fresh("empty"), w.fresh("softmax")
        w.emit(f"{empty} = tensor.empty() : {scores_t}")
        w.emit(f"{result} = linalg.softmax dimension(3) ins({scores} : {scores_t}) outs({empty} : {scores_t}) -> {scores_t}")
        w.types[result] = scores_t
        return result
    row_max = reduce(w, scores, "%neg_inf", "arith.maximumf", b, hq, sq, sk)
    row_map = amap("abcd", "abc")
    exps = elementwise(w, [scores, row_max], ["f32", "f32"], scores_t,
                       lambda a: [f"%d = arith.subf {a[0]}, {a[1]} : f32", "%s = math.exp %d : f32"],
                       maps=[amap("abcd", "abcd"), row_map])
    row_sum = reduce(w, exps, "%zero", "arith.addf", b, hq, sq, sk)
    return elementwise(w, [exps, row_sum], ["f32", "f32"], scores_t, lambda a: [f"%s = arith.divf {a[0]}, {a[1]} : f32"],
                       maps=[amap("abcd", "abcd"), row_map])


def reduce(w: Writer, value: str, init: str, combine: str, b: int, hq: int, sq: int, sk: int) -> str:
    rows_t = tensor([b, hq, sq], "f32")
    _, start = filled(w, [b, hq, sq], init)
    result = w.fresh("row")
    w.emit(f"{result} = linalg.generic {{indexing_maps = [{amap('abcd', 'abcd')}, {amap('abcd', 'abc')}], "
           f"iterator_types = [{iterators('pppr')}]}} ins({value} : {tensor([b, hq, sq, sk], 'f32')}) outs({start} : {rows_t}) {{")
    w.emit("^bb0(%x: f32, %acc: f32):")
    w.emit(f"  %s = {combine} %acc, %x : f32")
    w.emit("  linalg.yield %s : f32")
    w.emit(f"}} -> {rows_t}")
    w.types[result] = rows_t
    return result
