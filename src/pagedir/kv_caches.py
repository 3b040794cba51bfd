"""How K and V caches are allocated: the order of a block's dims in a pool (:data:`POOL_LAYOUTS`,
``--kv-layout``), and two pools or one tensor holding both (:data:`KV_CACHES`, ``--kv-cache``).

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

Each layout and each form is a class and a line in its registry: a form gives the generator's arguments and IR
lines, and the reference's converters between the tensor and the two pools. Text, and numpy inside the converters (a leaf that loads nothing at import): the
page sources, the generator, the reference and ``pagedir-run --check`` all use it.
"""

from __future__ import annotations

import math
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


class BlockTable:
    """A vLLM block table ``[B, max_blocks]`` i32, with ``seq_lens`` (``--page-table blocks``)."""

    name = "blocks"
    #: Its page source (``module:class`` under :mod:`pagedir.page_sources`): the verifier's rules, the addresses,
    #: the interpreter's reading and the check's tables; :data:`pagedir.page_sources.FORMS` lists it from here.
    source = "blocks:BlockSource"

    @staticmethod
    def arguments(batch: Any, slots: Any, nnz: Any, lengths_type: str) -> tuple[list, list[str], list]:
        """The kernel's arguments of this form: (its tables as ``(name, type)`` in argument order, the names
        ``rock.block_table_view`` reads after the pool in operand order, the length arguments ``rock.attention``
        takes). ``batch``, ``slots`` and ``nnz`` are sizes or ``?``."""
        return [("block_table", f"memref<{batch}x{slots}xi32>")], ["block_table"], [("seq_lens", lengths_type)]


class CsrTable(BlockTable):
    """FlashInfer's ``kv_indptr [B+1]``, ``kv_indices [nnz]``, ``kv_last_page_len [B]`` (``--page-table csr``):
    the lengths come from the table."""

    name = "csr"
    source = "csr:CsrSource"

    @staticmethod
    def arguments(batch, slots, nnz, lengths_type):
        b1 = "?" if batch == "?" else batch + 1
        tables = [("kv_indptr", f"memref<{b1}xi32>"), ("kv_indices", f"memref<{nnz}xi32>"),
                  ("kv_last_page_len", lengths_type)]
        return tables, ["kv_indices", "kv_indptr", "kv_last_page_len"], []


#: The page-table forms that read cache pools (``rock.block_table_view``), by ``--page-table`` name (their
#: addressing: :mod:`pagedir.page_sources`).
POOL_TABLES: dict[str, BlockTable] = {form.name: form for form in (BlockTable(), CsrTable())}

#: ``--kv-cache`` forms, by name.
KV_CACHES: dict[str, KvCache] = {form.name: form for form in (KvCache(), Stacked0(), Stacked1())}


def memref_type(shape: list, element: str) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{element}>"


def parse_memref(type_: str) -> tuple[list, str]:
    """(shape, element type) of ``memref<AxBx...xT>`` text with the identity layout."""
    *shape, element = type_[len("memref<"):-1].split("x")
    return [d if d == "?" else int(d) for d in shape], element
