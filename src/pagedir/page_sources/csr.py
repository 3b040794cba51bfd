"""A ``rock.block_table_view`` of a FlashInfer CSR page table: ``kv_indices`` ``memref<nnz x i32>``,
``kv_indptr`` ``memref<B+1 x i32>`` and ``kv_last_page_len`` ``memref<B x i32>``. Sequence ``b`` owns slots
``s < kv_indptr[b + 1] - kv_indptr[b]``, slot ``s`` being block ``kv_indices[kv_indptr[b] + s]``; a slot it
does not own is a null page. The pool and the pages are a block table's (:mod:`pagedir.page_sources.blocks`)."""

from __future__ import annotations

from collections.abc import Iterator

import mlir.ir as ir
import numpy as np
from mlir.dialects import arith, memref

from pagedir.reference import csr_from_block_table, csr_seq_lens
from pagedir.page_sources.base import PageSource, RunTimePages, before_invariant_loops, index_const
from pagedir.page_sources.blocks import BlockPages, BlockRead, BlockSource, is_view


class CsrSource(BlockSource):
    name = "csr"

    @staticmethod
    def matches(value: ir.Value) -> bool:
        return is_view(value) and len(value.owner.operands) == 4

    def lengths(self) -> tuple[ir.Value, ir.Value]:
        """(kv_indptr, kv_last_page_len): a sequence's length is ``(pages - 1) * block_size + last_page_len``."""
        return self.value.owner.operands[2], self.value.owner.operands[3]

    def verify_lengths(self, k: PageSource, v: PageSource, seq_lens: ir.Value | None) -> Iterator[str]:
        """Both views read the same kv_indptr and kv_last_page_len; no seq_lens."""
        if k.lengths() != v.lengths():
            yield "k and v must be csr views of the same kv_indptr and kv_last_page_len"
        if seq_lens is not None:
            yield "takes no seq_lens with csr page tables: the lengths come from kv_indptr and kv_last_page_len"

    def table_errors(self, g) -> Iterator[str]:
        """kv_indices ``[nnz]``, kv_indptr ``[B + 1]``, kv_last_page_len ``[B]``, all i32."""
        table, pages = self.table.type, self.value.type
        i32 = ir.IntegerType.get_signless(32)
        if table.rank != 1:
            yield f"kv_indices must be memref<nnz x i32>, got {table}"
        batch = pages.shape[0]
        for label, value, extra in zip(("kv_indptr", "kv_last_page_len"), self.lengths(), (1, 0)):
            t = value.type
            length = "?" if pages.is_dynamic_dim(0) else batch + extra
            if t.rank != 1 or t.element_type != i32 or (t.is_dynamic_dim(0) != pages.is_dynamic_dim(0)) or (
                    not t.is_dynamic_dim(0) and t.shape[0] != batch + extra):
                yield f"{label} must be memref<{length}xi32>, got {t}"

    def batch_operands(self) -> list[tuple[ir.Value, int]]:
        indptr, last_page_len = self.lengths()
        return [(indptr, 1), (last_page_len, 0)]

    def slot_count_dim(self) -> tuple[ir.Value, int]:
        """The length of kv_indices: no sequence owns more slots than nnz."""
        return self.table, 0

    #: Its scalar row checks cost more than the divisions across lanes save (the gfx942 decode kernel's KV
    #: loop takes more instructions per tile with the lanes' division).
    divides_pages_across_lanes = False

    def read_entries(self, places, heads_slots=None) -> list[BlockRead]:
        """A row's ``indptr`` pair is read once per batch value, before the loops it does not vary in; a slot
        the sequence does not own (or past kv_indices) reads position 0 and is not live."""
        table, indptr = self.table, self.value.owner.operands[2]
        i32, index = ir.IntegerType.get_signless(32), ir.IndexType.get()
        heads, block_slots = self.split_pages(places, heads_slots)
        rows: dict[ir.Value, tuple[ir.Value, ir.Value]] = {}  # batch -> (indptr[batch], its length)
        for batch, _ in places:
            if batch not in rows:
                with before_invariant_loops(batch):  # indptr is never written: read once, not per KV tile
                    start = memref.load(indptr, [batch])
                    rows[batch] = (start, arith.subi(memref.load(indptr, [arith.addi(batch, index_const(1))]), start))
        nnz = arith.index_cast(i32, memref.dim(table, index_const(0))) if table.type.is_dynamic_dim(0) \
            else arith.constant(i32, table.type.shape[0])
        positions, owned = [], []
        for (batch, _), block_slot in zip(places, block_slots):
            start, length = rows[batch]
            position = arith.addi(start, block_slot)
            owns = arith.cmpi(arith.CmpIPredicate.slt, block_slot, length)
            owned.append(arith.andi(owns, arith.cmpi(arith.CmpIPredicate.ult, position, nnz)))
            positions.append(arith.select(owned[-1], position, arith.constant(i32, 0)))  # never read past kv_indices
        ids = [memref.load(table, [arith.index_castui(index, position)]) for position in positions]
        return [BlockRead(head, block_id, owns) for head, block_id, owns in zip(heads, ids, owned)]

    @staticmethod
    def nnz(view: ir.Operation, batch: int, slots: int) -> int:
        """Entries of the view's kv_indices (the table's, a dynamic one ``batch * slots`` long)."""
        extent = ir.MemRefType(view.operands[1].type).shape[0]
        return batch * slots if extent == ir.ShapedType.get_dynamic_size() else extent

    @staticmethod
    def fit_lengths(view, seq_lens, batch, slots, block_size):
        """kv_indices lists each sequence's pages: a shorter one than the table can address holds shorter
        sequences, and one shorter than the batch none."""
        nnz = CsrSource.nnz(view, batch, slots)
        if nnz < batch and seq_lens.any():
            return seq_lens, (f"has room for {nnz} page ids, fewer than the {batch} sequences need (one each at "
                              f"least; the table addresses up to {batch * slots})")
        if (-(-seq_lens // block_size)).sum() > nnz:
            seq_lens = np.minimum(seq_lens, max(1, nnz // batch) * block_size).astype(np.int32)
        return seq_lens, None

    @staticmethod
    def check_tables(view, block_table, seq_lens, block_size, batch, slots, rng):
        indptr, indices, last = csr_from_block_table(block_table, seq_lens, block_size,
                                                     nnz=CsrSource.nnz(view, batch, slots), rng=rng)
        return [indices, indptr, last]

    def at_run_time(self, operands) -> RunTimePages:
        pool, table, indptr, last_page_len = operands
        g = self.run_time_geometry(pool, table)
        shape = (last_page_len.shape[0], g.heads_kv * g.max_blocks, self.value.type.shape[2])
        return CsrPages(pool, table, g, shape, indptr, last_page_len)


class CsrPages(BlockPages):
    def __init__(self, pool, table, geometry, shape, indptr, last_page_len):
        super().__init__(pool, table, geometry, shape)
        self.indptr, self.last_page_len = indptr, last_page_len

    def block_ids(self, batch, slot):
        start, end = self.indptr.read((batch,)), self.indptr.read((batch + 1,))
        position = start + slot
        owned = (slot < end - start) & (position >= 0) & (position < self.table.shape[0])
        ids = np.zeros(slot.shape, dtype=np.int64)
        ids[owned] = self.table.read((position[owned],))
        return ids, owned

    def seq_lens(self):
        batch = self.last_page_len.shape[0]
        indptr = self.indptr.read((np.arange(batch + 1),))
        last = self.last_page_len.read((np.arange(batch),))
        return csr_seq_lens(indptr, last, self.geometry.block_size)
