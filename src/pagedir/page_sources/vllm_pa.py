"""The pool layout of vLLM's own paged_attention kernels (its ROCm backend): ``rock.block_table_view`` with
``layout = "vllm-pa"``, read in place through a block table or a CSR table like an nhd/hnd pool.

* key ``[num_blocks, Hkv, D/x, block_size, x]`` with ``x = 16 bytes / element size``: each 16-byte chunk of
  a token's head vector is contiguous, the chunks of one token ``block_size * x`` elements apart. A K tile
  stays one 16-byte load per chunk (the loads run along D as for nhd), each at its chunk's address.
* value ``[num_blocks, Hkv, D, block_size]``: D-major, 16 contiguous bytes are ``16 / element size``
  consecutive tokens of one head-dim element. A V tile is read with 16-byte loads along the tokens
  (:attr:`VllmPaGeometry.contiguous_run`), each load one store to the V^T tile of the matrix loop (or its
  elements to their ``[N, D]`` places for the VALU loop): no other LDS pass. Its block size
  must be a multiple of those tokens, so that no load straddles two blocks.
* a 3-d pool ``[num_blocks, Hkv, block_size]`` is its per-token-head f32 scale cache (an hnd scale pool).

The pool's rank says which: the same formula covers them all, ``x = 1`` for the value (and scale) pool. Its
shapes and numpy conversions are :class:`pagedir.kv_caches.VllmPagedAttention`. The matrix loop reads the
value cache into a V^T tile (rock-gridwise-attention-to-blockwise); the pools must be contiguous (each a
whole tensor of its own: vLLM's ``kv_cache[0]`` and ``kv_cache[1]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import mlir.ir as ir

from pagedir.kv_caches import VllmPagedAttention
from pagedir.page_sources.base import value_bytes
from pagedir.page_sources.blocks import BlockSource, PageGeometry


def chunk_elements(element_type: ir.Type) -> int:
    """``x``: elements of one 16-byte chunk (of the key cache; of a load along the value cache's tokens)."""
    return VllmPagedAttention.chunk(value_bytes(element_type))


@dataclass(frozen=True)
class VllmPaGeometry(PageGeometry):
    """A head's ``block_size x D`` rows in a block lie as ``[D/x, block_size, x]`` (``x = 1``: ``[D, block_size]``)."""

    x: int = 1

    @property
    def block_stride(self) -> int:
        return self.block_size * self.heads_kv * self.head_dim

    @property
    def head_stride(self) -> int:
        return self.block_size * self.head_dim

    @property
    def token_stride(self) -> int:
        return self.x

    @property
    def page_extent(self) -> int:
        return self.block_size * self.head_dim

    def element_offset(self, offset):
        """Token ``t = o floordiv D``, column ``d = o mod D``: ``(d floordiv x) * block_size * x + t * x + d mod x``."""
        d = offset % self.head_dim
        if isinstance(offset, ir.AffineExpr):
            token, chunk = ir.AffineExpr.get_floor_div(offset, self.head_dim), ir.AffineExpr.get_floor_div(d, self.x)
        else:
            token, chunk = offset // self.head_dim, d // self.x
        return chunk * (self.block_size * self.x) + token * self.x + d % self.x

    @property
    def contiguous_run(self) -> tuple[int, int]:
        """A key chunk (x elements of a row), or a value column (block_size tokens, D elements apart)."""
        if self.x > 1 or self.head_dim == 1:
            return 1, self.x if self.head_dim > 1 else self.block_size
        return self.head_dim, self.block_size


class VllmPaSource(BlockSource):
    """The rules of the ``vllm-pa`` layout; the views themselves are block-table or CSR sources (their
    :attr:`~BlockSource.geometry` is this class's :meth:`geometry_of`)."""

    layouts = ("vllm-pa",)

    @staticmethod
    def matches(value: ir.Value) -> bool:
        return False  # a layout, not a page-table form: BlockSource and CsrSource claim the views

    @staticmethod
    def pool_error(pool: ir.MemRefType, layout: str) -> str | None:
        """A contiguous 5-d key pool whose last dim is ``x``, 4-d value pool whose block size is a multiple of
        ``x`` (a 16-byte load along the tokens stays in its block), or 3-d scale pool."""
        x = chunk_elements(pool.element_type)
        if pool.rank in (3, 4, 5) and pool.affine_map != ir.AffineMap.get_identity(pool.rank):
            return (f"vllm-pa pool {pool} must be contiguous (the identity layout): vLLM's key and value caches "
                    f"are each a whole tensor (kv_cache[0] and kv_cache[1] are two kernel arguments)")
        if pool.rank == 5:
            if pool.shape[4] != x:
                return (f"vllm-pa key pool {pool} must be [num_blocks, Hkv, D/x, block_size, x] with x = 16 bytes / "
                        f"{value_bytes(pool.element_type)}-byte elements = {x}, got x = {pool.shape[4]}")
            return None
        if pool.rank == 4:
            if pool.shape[3] % x:
                return (f"vllm-pa value pool {pool} ([num_blocks, Hkv, D, block_size]) has block_size {pool.shape[3]}, "
                        f"not a multiple of the {x} tokens of one 16-byte load")
            return None
        if pool.rank == 3:
            return None
        return (f"pool must be a 5-d key pool [num_blocks, Hkv, D/x, block_size, x], a 4-d value pool "
                f"[num_blocks, Hkv, D, block_size] or a 3-d scale pool [num_blocks, Hkv, block_size] (vllm-pa), got {pool}")

    @classmethod
    def geometry_of(cls, pool: ir.MemRefType, pages: ir.MemRefType, layout: str, csr: bool = False) -> PageGeometry:
        shape = list(pool.shape)
        if pool.rank == 5:
            _, heads_kv, chunks, block_size, x = shape
            head_dim = chunks * x
        else:
            _, heads_kv, head_dim, block_size = shape if pool.rank == 4 else [*shape[:2], 1, shape[2]]
            x = 1
        num_blocks = None if pool.is_dynamic_dim(0) else shape[0]
        max_blocks = None if pages.is_dynamic_dim(1) else pages.shape[1] // max(heads_kv, 1)
        return VllmPaGeometry(layout, num_blocks, block_size, heads_kv, head_dim, max_blocks, csr, x=x)
