"""A ``rock.deref`` table of device pointers: ``memref<B x P x 1 x i64>``, page ``p`` of sequence ``b`` at
``table[b, p, 0]`` (0: a null page, reads 0), each page ``S`` contiguous elements."""

from __future__ import annotations

import mlir.ir as ir
from mlir.dialects import arith, memref

from pagedir.page_sources.base import I64, PageSource, RunTimePages, defined_by, defining_op, dim_text, index_const, int_const


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
