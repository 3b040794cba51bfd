"""How K and V caches are allocated: the order of a block's dims in a pool (:data:`POOL_LAYOUTS`,
``--kv-layout``), two pools or one tensor holding both (:data:`KV_CACHES`, ``--kv-cache``), and how the kernel
of ``pagedir-gen attention`` takes them (:class:`KvForm`: dense, page pointers, or the tables of
:data:`POOL_TABLES` into the pools; ``--page-table``, :data:`PAGE_TABLES`).

A pool layout says where a pool's sizes lie in its shape, the strides of a contiguous pool (what
``rock.block_table_view`` reads, :class:`pagedir.page_sources.PageGeometry`), and the numpy conversions the
reference builders and ``pagedir-run --check`` use (from and to the heads-first ``[num_blocks, Hkv,
block_size, D]``); a 3-d pool (a per-token scale cache) is the layout without its D dim.

vLLM's FlashAttention backend allocates ``[2, num_blocks, ...pool]`` (:class:`Stacked0`), its Triton backend and
FlashInfer ``[num_blocks, 2, ...pool]`` (:class:`Stacked1`), where ``...pool`` is one block of a pool
(``[block_size, Hkv, D]`` nhd, ``[Hkv, block_size, D]`` hnd); K is index 0 of the stacked axis, V index 1. The
kernel takes such a tensor as one argument ``kv_cache`` and views K and V as ``memref.subview`` s of it: strided
pools (a stacked1 pool's block stride is twice its block's elements, a stacked0 V pool starts ``num_blocks``
blocks in), which ``rock.block_table_view`` reads in place (:class:`pagedir.page_sources.PageGeometry`).

Each layout, each cache form and each page-table form is a class and a line in its registry: a cache form gives
the generator's arguments and IR lines and the reference's converters between the tensor and the two pools; a
page-table form its arguments, its IR lines, its flag rules and the sizes the generator checks (its addressing is
its page source, :mod:`pagedir.page_sources`). Text, and numpy inside the converters (a leaf that loads nothing
at import): the page sources, the generator, the reference and ``pagedir-run --check`` all use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


class PoolLayout:
    """``nhd``: ``[num_blocks, block_size, Hkv, D]`` (vLLM's flash layout, FlashInfer NHD)."""

    name = "nhd"
    #: Where a pool of this layout keeps tokens and heads: the dims of a block after num_blocks.
    token_dim, head_dim = 1, 2
    #: Whether a token's D elements are one contiguous row (the rules of ``BlockSource``); else the layout's own
    #: page source states them.
    rows_contiguous = True

    def sizes(self, shape: list[int]) -> tuple[int, int, int, int]:
        """(num_blocks, block_size, Hkv, D) of a pool's 4-d shape."""
        return shape[0], shape[self.token_dim], shape[self.head_dim], shape[3]

    def shape(self, num_blocks: Any, block_size: int, heads: int, head_dim: int | None = None) -> list:
        """The pool's shape (without D, ``head_dim`` None: a scale pool)."""
        shape = [num_blocks, 0, 0]
        shape[self.token_dim], shape[self.head_dim] = block_size, heads
        return shape + ([head_dim] if head_dim is not None else [])

    def strides(self, block_size: int, heads: int, head_dim: int) -> tuple[int, int, int]:
        """(block, head, token) element strides of a contiguous pool."""
        token = heads * head_dim if self.token_dim < self.head_dim else head_dim
        head = head_dim if self.token_dim < self.head_dim else block_size * head_dim
        return block_size * heads * head_dim, head, token

    def from_heads_first(self, pool: Any) -> Any:
        """A contiguous pool of this layout from ``[num_blocks, Hkv, block_size, ...]``."""
        import numpy as np

        pool = np.asarray(pool)
        if self.token_dim < self.head_dim:
            return np.ascontiguousarray(np.swapaxes(pool, 1, 2))
        return pool

    def to_heads_first(self, pool: Any) -> Any:
        """``[num_blocks, Hkv, block_size, ...]`` of a pool of this layout (a view)."""
        import numpy as np

        pool = np.asarray(pool)
        return np.swapaxes(pool, 1, 2) if self.token_dim < self.head_dim else pool

    def kv_shapes(self, num_blocks: Any, block_size: int, heads: int, head_dim: int, element_bytes: int) -> tuple[list, list]:
        """The K and V pools' shapes (``element_bytes``: the cache's element size)."""
        shape = self.shape(num_blocks, block_size, heads, head_dim)
        return shape, shape

    def kv_from_heads_first(self, k_pool: Any, v_pool: Any, element_bytes: int | None = None) -> tuple[Any, Any]:
        """The K and V pools of this layout from ``[num_blocks, Hkv, block_size, D]`` ones (``element_bytes``: the
        device's element size where the arrays hold other values, fp8 as float32)."""
        return self.from_heads_first(k_pool), self.from_heads_first(v_pool)

    def flag_error(self, args: Any, element_bytes: int) -> str | None:
        """Why ``pagedir-gen attention``'s flags ``args`` do not fit pools of this layout (of elements of
        ``element_bytes``), else None."""
        return None


class HeadsFirst(PoolLayout):
    """``hnd``: ``[num_blocks, Hkv, block_size, D]`` (FlashInfer HND)."""

    name = "hnd"
    token_dim, head_dim = 2, 1


class VllmPagedAttention(HeadsFirst):
    """``vllm-pa``: vLLM's paged-attention caches (its ROCm backend), K ``[num_blocks, Hkv, D/x, block_size, x]``
    with ``x = 16 bytes / element size``, V ``[num_blocks, Hkv, D, block_size]``; a scale pool is hnd's
    ``[num_blocks, Hkv, block_size]``. The rank tells them apart; ``pagedir.page_sources.vllm_pa`` states
    how a kernel reads them."""

    name = "vllm-pa"
    rows_contiguous = False

    @staticmethod
    def chunk(element_bytes: int) -> int:
        """``x``: elements of 16 bytes."""
        return max(1, 16 // element_bytes)

    def kv_shapes(self, num_blocks, block_size, heads, head_dim, element_bytes):
        x = self.chunk(element_bytes)
        return [num_blocks, heads, head_dim // x, block_size, x], [num_blocks, heads, head_dim, block_size]

    def kv_from_heads_first(self, k_pool, v_pool, element_bytes=None):
        import numpy as np

        k_pool, v_pool = np.asarray(k_pool), np.asarray(v_pool)
        n, heads, block_size, head_dim = k_pool.shape
        x = self.chunk(element_bytes or k_pool.dtype.itemsize)
        if head_dim % x:
            raise ValueError(f"head_dim {head_dim} is not a multiple of x = {x} (16 bytes of {k_pool.dtype})")
        key = np.transpose(k_pool.reshape(n, heads, block_size, head_dim // x, x), (0, 1, 3, 2, 4))
        return np.ascontiguousarray(key), np.ascontiguousarray(np.swapaxes(v_pool, 2, 3))

    def flag_error(self, args, element_bytes):
        if args.kv_cache != "separate":
            return (f"--kv-cache {args.kv_cache} stacks K and V pools of one shape; --kv-layout vllm-pa's "
                    f"key and value caches differ (vLLM views kv_cache[0] and kv_cache[1]: two arguments)")
        x = self.chunk(element_bytes)
        for flag, value, what in (("--head-dim", args.head_dim, "the key cache's D/x chunks"),
                                  ("--page-size", args.page_size, "the value cache's 16-byte loads along a block's tokens")):
            if value % x:
                return (f"{flag} {value} must be a multiple of x = {x} with --kv-layout vllm-pa ({what} of "
                        f"{x} {args.kv_dtype or args.dtype} elements)")
        return None

    def to_heads_first(self, pool):
        """K (5-d), V (4-d) or a scale pool (3-d) as ``[num_blocks, Hkv, block_size, ...]`` (a copy for K)."""
        import numpy as np

        pool = np.asarray(pool)
        if pool.ndim == 5:
            n, heads, chunks, block_size, x = pool.shape
            return np.transpose(pool, (0, 1, 3, 2, 4)).reshape(n, heads, block_size, chunks * x)
        return np.swapaxes(pool, 2, 3) if pool.ndim == 4 else pool


#: The pool layouts, by name (the first is the default).
POOL_LAYOUTS: dict[str, PoolLayout] = {layout.name: layout for layout in (PoolLayout(), HeadsFirst(),
                                                                          VllmPagedAttention())}


class KvCache:
    """Two pools, ``k_cache`` and ``v_cache`` (the default)."""

    name = "separate"
    #: The stacked axis of the one tensor (None: two tensors).
    axis: int | None = None

    def arguments(self, pool_type: str, v_pool_type: str | None = None) -> list[tuple[str, str]]:
        """The kernel's cache arguments (name, type) for pools of type ``pool_type`` (V's ``v_pool_type`` where
        the layout gives it another shape: vllm-pa)."""
        return [("k_cache", pool_type), ("v_cache", v_pool_type or pool_type)]

    def views(self, pool_shape: list, element: str, v_shape: list | None = None) -> tuple[str, str, str]:
        """(IR lines defining ``%k_cache`` and ``%v_cache`` from the arguments, K's pool type, V's pool type)."""
        return "", memref_type(pool_shape, element), memref_type(v_shape or pool_shape, element)

    def stack(self, k_pool: Any, v_pool: Any) -> dict[str, Any]:
        """The arguments' arrays holding the two pools (by argument name)."""
        import numpy as np

        return {"k_cache": np.asarray(k_pool), "v_cache": np.asarray(v_pool)}

    def split(self, **arrays: Any) -> tuple[Any, Any]:
        """(K's pool, V's pool) of the arguments' arrays (views, no copy)."""
        import numpy as np

        return np.asarray(arrays["k_cache"]), np.asarray(arrays["v_cache"])


class StackedKvCache(KvCache):
    """One tensor ``kv_cache``, K at index 0 and V at index 1 of the stacked axis :attr:`axis`."""

    axis = 0

    def tensor_shape(self, pool_shape: list) -> list:
        shape = list(pool_shape)
        shape.insert(self.axis, 2)
        return shape

    def arguments(self, pool_type: str, v_pool_type: str | None = None) -> list[tuple[str, str]]:
        shape, element = parse_memref(pool_type)  # K and V of one shape (the generator refuses others)
        return [("kv_cache", memref_type(self.tensor_shape(shape), element))]

    def views(self, pool_shape: list, element: str, v_shape: list | None = None) -> tuple[str, str, str]:
        """``memref.subview`` s of ``%kv_cache``: a dynamic block count (``?``) is read with ``memref.dim``."""
        tensor = self.tensor_shape(pool_shape)
        tensor_type = memref_type(tensor, element)
        strides = [math.prod(pool_shape[i + 1:]) for i in range(len(pool_shape))]
        block_dim = 1 if self.axis == 0 else 0  # the blocks' dim in the tensor
        dynamic = pool_shape[0] == "?"
        if self.axis == 1:
            strides[0] *= 2  # a block of K, then a block of V
        block_elements = math.prod(pool_shape[1:])
        lines = ""
        if dynamic:
            lines += f"  %c{block_dim} = arith.constant {block_dim} : index\n"
            lines += f"  %num_blocks = memref.dim %kv_cache, %c{block_dim} : {tensor_type}\n"
        sizes = [str(d) for d in tensor]
        sizes[self.axis] = "1"
        if dynamic:
            sizes[block_dim] = "%num_blocks"
        types = []
        for index, name in enumerate(("k_cache", "v_cache")):
            offsets = ["0"] * len(tensor)
            offsets[self.axis] = str(index)
            if self.axis == 0:
                offset = "?" if dynamic and index else str(index * (0 if dynamic else pool_shape[0]) * block_elements)
            else:
                offset = str(index * block_elements)
            layout = f"strided<[{', '.join(map(str, strides))}]{'' if offset == '0' else f', offset: {offset}'}>"
            type_ = f"memref<{'x'.join(map(str, pool_shape))}x{element}, {layout}>"
            types.append(type_)
            lines += (f"  %{name} = memref.subview %kv_cache[{', '.join(offsets)}] [{', '.join(sizes)}] "
                      f"[{', '.join(['1'] * len(tensor))}] : {tensor_type} to {type_}\n")
        return lines, types[0], types[1]

    def stack(self, k_pool: Any, v_pool: Any) -> dict[str, Any]:
        import numpy as np

        return {"kv_cache": np.stack([np.asarray(k_pool), np.asarray(v_pool)], axis=self.axis)}

    def split(self, **arrays: Any) -> tuple[Any, Any]:
        import numpy as np

        kv_cache = np.asarray(arrays["kv_cache"])
        halves = np.moveaxis(kv_cache, self.axis, 0)  # a view: K and V are views of the tensor
        return halves[0], halves[1]


class Stacked0(StackedKvCache):
    """vLLM's FlashAttention backend: ``[2, num_blocks, ...pool]``."""

    name = "stacked0"
    axis = 0


class Stacked1(StackedKvCache):
    """vLLM's Triton backend, FlashInfer: ``[num_blocks, 2, ...pool]``."""

    name = "stacked1"
    axis = 1


def per_token_scales(args: Any) -> bool:
    """Whether the kernel takes per-token-head scale caches (``--kv-scale per-token-head``)."""
    return args.kv_scale == "per-token-head"


@dataclass
class KvText:
    """What a form writes into the kernel of ``pagedir-gen attention``."""

    #: K's and V's arguments (``(name, type)``; their tables too), before the lengths.
    arguments: list
    #: The length arguments rock.attention takes (``seq_lens``), or none.
    lengths: list
    #: The IR lines defining ``%k`` and ``%v`` (and ``%k_scales``, ``%v_scales``) from the arguments.
    lines: str
    #: rock.attention's K/V operand type.
    kv_type: str
    #: The per-token-head scale caches' arguments (after the variants'), and their operand type.
    scale_arguments: list
    scale_type: str


class KvForm:
    """How the kernel of ``pagedir-gen attention`` takes K and V (``--page-table``, or ``--dense``): its arguments
    and the IR lines presenting them as rock.attention's K/V operands (:meth:`text`), the flags it refuses
    (:meth:`flag_error`) and the tensors whose sizes the generator checks (:meth:`tensors`). ``args`` are the
    generator's flags."""

    name = ""
    #: What ``--page-table``'s help says of it.
    summary = ""
    #: Whether it reads cache pools through ``rock.block_table_view`` (``--kv-layout``, ``--kv-cache`` and
    #: ``--num-blocks`` apply; ``--dynamic`` makes the tables' and pools' sizes ``?`` too).
    pools = False

    def flag_error(self, args: Any) -> str | None:
        """Why the flags do not fit this form, else None."""
        return None

    def tensors(self, args: Any) -> list[tuple[str, list, str]]:
        """(what, shape, element type) of each tensor of the kernel whose size the generator checks."""
        raise NotImplementedError

    def text(self, args: Any, batch: Any, element: str, element_bytes: int) -> KvText:
        """The kernel's K/V parts for a batch of ``batch`` (a size or ``?``) and K/V elements of MLIR type
        ``element`` (``element_bytes`` each)."""
        raise NotImplementedError

    @staticmethod
    def seq_lens(args: Any, batch: Any) -> list[tuple[str, str]]:
        """``seq_lens`` when asked for, or implied by packed queries (a decode row and a prefill chunk of one
        launch have their own key lengths, the queries aligned to their ends)."""
        return [("seq_lens", f"memref<{batch}xi32>")] if args.seq_lens or args.varlen else []


class DenseKv(KvForm):
    """Dense ``k`` and ``v`` ``[B, Hkv, Sk, D]`` (``--dense``); scale caches ``[B, Hkv, Sk]``."""

    name = "dense"

    def tensors(self, args):
        return [("k and v", [args.batch, args.num_heads_kv, args.seq_len_k, args.head_dim], args.dtype)]

    def text(self, args, batch, element, element_bytes):
        shape = [batch, args.num_heads_kv, args.seq_len_k]
        kv_type, scale_type = memref_type([*shape, args.head_dim], element), memref_type(shape, "f32")
        scales = [("k_scales", scale_type), ("v_scales", scale_type)] if per_token_scales(args) else []
        return KvText([("k", kv_type), ("v", kv_type)], self.seq_lens(args, batch), "", kv_type, scales, scale_type)


class PointerTable(KvForm):
    """Tables ``k_table``, ``v_table`` ``[B, P, 1]`` of i64 page pointers read by ``rock.deref``: a page holds
    ``page_size * D`` contiguous elements of a sequence's ``[Hkv, Sk, D]`` cache (a partly filled last page is
    stated by ``seq_len_k``); a scale cache is a table of its own, each page the scales of a K page's tokens."""

    name = "pointers"
    summary = "i64 page pointers per (sequence, KV head, page) through rock.deref"

    @staticmethod
    def pages(args: Any) -> int:
        """Pages per sequence: the [Hkv, Sk, D] cache cut into pages, the last one partly filled when it does
        not divide."""
        return -(-args.num_heads_kv * args.seq_len_k // args.page_size)

    def tensors(self, args):
        pages = self.pages(args)
        return [("the page tables", [args.batch, pages, 1], "i64"),
                ("the paged k and v", [args.batch, pages, args.page_size * args.head_dim], args.dtype)]

    def text(self, args, batch, element, element_bytes):
        pages, sk = self.pages(args), args.seq_len_k
        table_type = memref_type([batch, pages, 1], "i64")
        kv_type = memref_type([batch, pages, args.page_size * args.head_dim], element)
        scale_type = memref_type([batch, pages, args.page_size], "f32")  # one scale per token of a page
        partial = (args.num_heads_kv * sk) % args.page_size != 0  # the last page partly filled: the capacity is stated
        tokens = f" {{seq_len_k = {sk}}}" if partial else ""
        views = [(name, kv_type) for name in ("k", "v")]
        scales = [(f"{kv}_scales_table", table_type) for kv in ("k", "v")] if per_token_scales(args) else []
        views += [(f"{kv}_scales", scale_type) for kv in ("k", "v")] if scales else []
        lines = "".join(f'  %{name} = "rock.deref"(%{name}_table){tokens} : ({table_type}) -> {type_}\n'
                        for name, type_ in views)
        return KvText([("k_table", table_type), ("v_table", table_type)], self.seq_lens(args, batch), lines, kv_type,
                      scales, scale_type)


class BlockTable(KvForm):
    """A vLLM block table ``[B, max_blocks]`` i32, with ``seq_lens`` (``--page-table blocks``), into cache pools
    (``k_cache``, ``v_cache`` of ``--kv-layout``, or one ``kv_cache`` of ``--kv-cache``) read in place by
    ``rock.block_table_view``; a scale cache is a pool of its own read through the cache's table."""

    name = "blocks"
    summary = "vLLM's int32 block table [B, max_blocks] into K and V cache pools, with seq_lens"
    pools = True
    #: Its page source (``module:class`` under :mod:`pagedir.page_sources`): the verifier's rules, the addresses,
    #: the interpreter's reading and the check's tables; :data:`pagedir.page_sources.FORMS` lists it from here.
    source = "blocks:BlockSource"

    @staticmethod
    def arguments(batch: Any, heads: int, slots: Any, nnz: Any, lengths_type: str) -> tuple[list, list[str], list]:
        """The kernel's arguments of this form: (its tables as ``(name, type)`` in argument order, the names
        ``rock.block_table_view`` reads after the pool in operand order, the length arguments ``rock.attention``
        takes) for ``heads`` KV heads. ``batch``, ``slots`` (block slots per sequence) and ``nnz`` are sizes or
        ``?``."""
        return [("block_table", f"memref<{batch}x{slots}xi32>")], ["block_table"], [("seq_lens", lengths_type)]

    @staticmethod
    def max_blocks(args: Any) -> int:
        """Block slots per sequence: enough for --seq-len-k tokens (the last block partly filled)."""
        return -(-args.seq_len_k // args.page_size)

    def num_blocks(self, args: Any) -> int:
        """Blocks in each pool: ``--num-blocks``, else enough for the batch."""
        return args.num_blocks if args.num_blocks is not None else args.batch * self.max_blocks(args)

    def tensors(self, args):
        hkv, d = args.num_heads_kv, args.head_dim
        found = [("the cache pools", [self.num_blocks(args), args.page_size, hkv, d], args.dtype)]
        cache = KV_CACHES[args.kv_cache]
        if cache.axis is not None:  # one tensor, twice a pool
            pool_shape = POOL_LAYOUTS[args.kv_layout].shape(self.num_blocks(args), args.page_size, hkv, d)
            found.append(("the kv_cache", cache.tensor_shape(pool_shape), args.dtype))
        return found + [("the block table", [args.batch, self.max_blocks(args)], "i32")]

    def text(self, args, batch, element, element_bytes):
        hkv, d, page = args.num_heads_kv, args.head_dim, args.page_size
        if args.dynamic:
            slots = blocks = nnz = "?"
        else:
            slots, blocks = self.max_blocks(args), self.num_blocks(args)
            nnz = batch * slots
        pages = "?" if args.dynamic else hkv * slots
        layout = POOL_LAYOUTS[args.kv_layout]
        k_shape, v_shape = layout.kv_shapes(blocks, page, hkv, d, element_bytes)
        kv_type = f"memref<{batch}x{pages}x{page * d}x{element}>"
        tables, viewed, lengths = self.arguments(batch, hkv, slots, nnz, f"memref<{batch}xi32>")
        view_operands = ", ".join(f"%{name}" for name in viewed)
        view_segments = ", ".join(["1"] * (1 + len(viewed)) + ["0"] * (3 - len(viewed)))
        view_types = ", ".join(dict(tables)[name] for name in viewed)
        cache = KV_CACHES[args.kv_cache]
        lines, k_pool_type, v_pool_type = cache.views(k_shape, element, v_shape)
        views = [("k", k_pool_type, kv_type), ("v", v_pool_type, kv_type)]
        scale_type = memref_type([batch, pages, page], "f32")  # one scale per token of a page
        scales = []
        if per_token_scales(args):  # one f32 per token and head, in a pool of the cache's layout
            pool_type = memref_type(layout.shape(blocks, page, hkv), "f32")
            scales = [(f"{kv}_scales_cache", pool_type) for kv in ("k", "v")]
            views += [(f"{kv}_scales", pool_type, scale_type) for kv in ("k", "v")]
        lines += "".join(
            f'  %{name} = "rock.block_table_view"(%{name}_cache, {view_operands}) {{layout = "{args.kv_layout}", '
            f"operandSegmentSizes = array<i32: {view_segments}>}}\n    : ({pool_type}, {view_types}) -> {type_}\n"
            for name, pool_type, type_ in views)
        arguments = [*cache.arguments(memref_type(k_shape, element), memref_type(v_shape, element)), *tables]
        return KvText(arguments, lengths, lines, kv_type, scales, scale_type)


class CsrTable(BlockTable):
    """FlashInfer's ``kv_indptr [B+1]``, ``kv_indices [nnz]``, ``kv_last_page_len [B]`` (``--page-table csr``):
    the lengths come from the table."""

    name = "csr"
    summary = "FlashInfer's kv_indptr, kv_indices, kv_last_page_len into the pools"
    source = "csr:CsrSource"

    @staticmethod
    def arguments(batch, heads, slots, nnz, lengths_type):
        b1 = "?" if batch == "?" else batch + 1
        tables = [("kv_indptr", f"memref<{b1}xi32>"), ("kv_indices", f"memref<{nnz}xi32>"),
                  ("kv_last_page_len", lengths_type)]
        return tables, ["kv_indices", "kv_indptr", "kv_last_page_len"], []

    def flag_error(self, args):
        if args.seq_lens:
            return "--seq-lens: csr page tables carry the lengths (kv_indptr and kv_last_page_len)"
        return None


#: The page-table forms that read cache pools (``rock.block_table_view``), by ``--page-table`` name (their
#: addressing: :mod:`pagedir.page_sources`).
POOL_TABLES: dict[str, BlockTable] = {form.name: form for form in (BlockTable(), CsrTable())}

#: ``--page-table`` forms, by name (the first is the default); ``--dense`` is :data:`DENSE`.
PAGE_TABLES: dict[str, KvForm] = {"pointers": PointerTable(), **POOL_TABLES}
DENSE = DenseKv()

#: ``--kv-cache`` forms, by name.
KV_CACHES: dict[str, KvCache] = {form.name: form for form in (KvCache(), Stacked0(), Stacked1())}


def memref_type(shape: list, element: str) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{element}>"


def parse_memref(type_: str) -> tuple[list, str]:
    """(shape, element type) of ``memref<AxBx...xT>`` text with the identity layout."""
    *shape, element = type_[len("memref<"):-1].split("x")
    return [d if d == "?" else int(d) for d in shape], element
