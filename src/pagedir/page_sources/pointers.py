"""A ``rock.deref`` table of device pointers: ``memref<B x P x 1 x i64>``, page ``p`` of sequence ``b`` at
``table[b, p, 0]`` (0: a null page, reads 0), each page ``S`` contiguous elements."""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
from mlir.dialects import arith, memref

from pagedir.reference import paged_cache
from pagedir.page_sources.base import (I64, CheckKv, PageSource, RunTimePages, defined_by, defining_op, dim_text,
                                       index_const, int_const)


class PointerSource(PageSource):
    name = "pointers"

    def __init__(self, value: ir.Value, table: ir.Value | None = None):
        """``table``: the page table of a paged source that is no ``rock.deref`` result (a kernel argument
        read through a ``rock.blockwise_load_tile``'s ``page_table``)."""
        super().__init__(value)
        self._table = table

    @staticmethod
    def matches(value: ir.Value) -> bool:
        return defined_by(value, "rock.deref")

    def stated_seq_len_k(self) -> int | None:
        op = defining_op(self.value)
        if op is None or op.name != "rock.deref" or "seq_len_k" not in op.attributes:
            return None
        return ir.IntegerAttr(op.attributes["seq_len_k"]).value

    def scale_cache_error(self, scales: ir.Value, num_heads_kv: int, head_dim: int) -> str | None:
        t, kv = scales.type, self.value
        if not PointerSource.matches(scales):
            return f"must be a rock.deref result like k and v, got {t}"
        pages, page_size = kv.type.shape[1], kv.type.shape[2]
        if page_size % head_dim:
            return f"needs pages of whole tokens: the cache's {page_size}-element pages hold no whole number of {head_dim}-element rows"
        wanted = [kv.type.shape[0], pages, page_size // head_dim]
        if t.rank != 3 or list(t.shape) != wanted:
            return f"must be memref<{'x'.join(dim_text(d) for d in wanted)}xf32> (one scale per token of each page), got {t}"
        scales_tokens, tokens = PointerSource(scales).stated_seq_len_k(), self.stated_seq_len_k()
        if scales_tokens != tokens:
            return f"seq_len_k {scales_tokens} differs from the cache's {tokens}"
        return None

    def batch_operands(self) -> list[tuple[ir.Value, int]]:
        return [(self.table, 0)]

    @property
    def table(self) -> ir.Value:
        return self._table if self._table is not None else self.value.owner.operands[0]

    def page_address(self, batch: ir.Value, page: ir.Value) -> ir.Value:
        return memref.load(self.table, [batch, page, index_const(0)])

    def read_entries(self, places, heads_slots=None) -> list[ir.Value]:
        index = ir.IndexType.get()
        return [memref.load(self.table, [batch, arith.index_castui(index, page), index_const(0)]) for batch, page in places]

    def entry_address(self, entry: ir.Value) -> ir.Value:
        return entry

    def entry_live(self, in_table: ir.Value, entry: ir.Value) -> ir.Value:
        non_null = arith.cmpi(arith.CmpIPredicate.ne, entry, int_const(I64, 0))
        return arith.andi(in_table, non_null)

    def entries_adjacent(self, rows, first_ptr: ir.Value, pages_per_row: int, page_bytes: int) -> ir.Value:
        """Each pointer is the first plus ``r * pages_per_row`` page strides (and in the table: a clamped
        page's pointer would not be)."""
        adjacent = self.entry_live(*rows[0])
        for r, (in_table, entry) in enumerate(rows[1:], start=1):
            expected = arith.addi(first_ptr, int_const(I64, r * pages_per_row * page_bytes))
            same = arith.andi(in_table, arith.cmpi(arith.CmpIPredicate.eq, entry, expected))
            adjacent = arith.andi(adjacent, same)
        return adjacent

    @staticmethod
    def check_kv(device, kv, refs, scales, *, page_size, seq_lens, rng, dtype, placement, null_page):
        """A page table per K and V (:func:`pagedir.reference.paged_cache`), and one per scale cache, each page the
        scales of one K page's tokens."""
        caches = [paged_cache(device, x, page_size=page_size, seq_lens=seq_lens, rng=rng, dtype=dtype,
                                        placement=placement) for x in kv]
        if null_page is not None:  # a null page holding keys: they read 0 (docs/rock.md, rock.attention)
            refs = tuple(PointerSource.null_first_page(cache.table, ref, null_page, page_size)
                         for cache, ref in zip(caches, refs))
        kept = caches[0].pages + caches[1].pages
        scales = dict(scales)
        for name in ("k_scales", "v_scales"):
            if name in scales:
                head_dim = kv[0].shape[-1]
                cache = paged_cache(device, scales[name][..., None], page_size=page_size // head_dim,
                                              seq_lens=seq_lens, rng=rng, dtype=np.float32, placement=placement)
                scales[name], kept = cache.table, kept + cache.pages
        return CheckKv((caches[0].table, caches[1].table), refs, scales, kept)

    @staticmethod
    def null_first_page(table: np.ndarray, ref: np.ndarray, b: int, page_size: int) -> np.ndarray:
        """A null pointer in ``table`` (``[B, P, 1]``) for the first page of sequence ``b``, and the reference ``ref``
        (``[B, Hkv, Sk, D]``) with that page's elements 0, as the page reads."""
        table[b, 0, 0] = 0
        ref = ref.copy()
        ref[b].reshape(-1)[:page_size] = 0
        return ref

    @property
    def run_time_operands(self) -> list[ir.Value]:
        return [self.table]

    def at_run_time(self, operands) -> RunTimePages:
        (table,) = operands
        return PointerPages(table, (table.shape[0], *self.value.type.shape[1:]), self.stated_seq_len_k())  # B may be '?'


class PointerPages(RunTimePages):
    def __init__(self, table, shape, seq_len_k):
        super().__init__(shape, seq_len_k)
        self.table = table

    def addresses(self, batch, page):
        return self.table.read((batch, page))
