"""A ``rock.block_table_view`` of a vLLM block table: a pool ``[num_blocks, block_size, Hkv, D]`` (nhd) or
``[num_blocks, Hkv, block_size, D]`` (hnd) read through ``table[b, slot]`` block ids.

Virtual page ``j`` of sequence ``b`` is KV head ``j floordiv max_blocks``'s rows of block
``id(b, j mod max_blocks)`` of the pool. :class:`PageGeometry` is the one place that turns a view into
strides: a page's base is ``pool + (id * block_stride + head * head_stride) * elem_bytes`` and the
element at offset ``o`` of a virtual page (token ``o floordiv D``, column ``o mod D``) lies ``(o floordiv
D) * token_stride + o mod D`` elements past it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

import mlir.ir as ir
import numpy as np
from mlir.dialects import affine, arith, memref

from pagedir.kv_caches import POOL_LAYOUTS
from pagedir.offset_width import offset_bits
from pagedir.page_sources.base import (I32, PageSource, RunTimePages, defined_by, index_const, int_const,
                                      value_bytes)


@dataclass(frozen=True)
class PageGeometry:
    """Where the pages of a block-table view lie in its pool (element strides)."""

    layout: str
    num_blocks: int | None  # None: dynamic (the pool's dim 0 at run time)
    block_size: int  # tokens per block
    heads_kv: int
    head_dim: int
    max_blocks: int | None  # block slots per sequence; None: dynamic (see slot_count_dim)
    csr: bool = False
    #: (block, head, token) element strides of a strided pool (a view of one half of a stacked K/V cache),
    #: None for a contiguous pool (the layout's own strides).
    strides: tuple[int, int, int] | None = None
    #: Elements from the pool's buffer to its element [0, 0, 0, 0]: 0, or None when known at run time.
    offset: int | None = 0

    @staticmethod
    def of_types(pool: ir.MemRefType, pages: ir.MemRefType, layout: str, csr: bool = False) -> PageGeometry:
        shape = list(pool.shape) + [1] * (4 - pool.rank)  # a 3-d scale pool: one value per (token, head)
        num_blocks, block_size, heads_kv, head_dim = pool_layout(layout).sizes(shape)
        num_blocks = None if pool.is_dynamic_dim(0) else num_blocks
        max_blocks = None if pages.is_dynamic_dim(1) else pages.shape[1] // max(heads_kv, 1)
        g = PageGeometry(layout, num_blocks, block_size, heads_kv, head_dim, max_blocks, csr)
        strides, offset = pool_strides(pool)
        if contiguous(pool) or strides is None or ir.ShapedType.get_dynamic_stride_or_offset() in strides:
            return g  # the layout's own strides (or a layout the verifier refuses: strided_pool_error)
        stated = (strides[0], strides[pool_layout(layout).head_dim], strides[pool_layout(layout).token_dim])
        if (stated, offset) == ((g.block_stride, g.head_stride, g.token_stride), 0):
            return g
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        return replace(g, strides=stated, offset=None if offset == dynamic else offset)

    @staticmethod
    def of(view: ir.Value) -> PageGeometry:
        """The geometry of a ``rock.block_table_view`` result, as the class of its layout states it."""
        op = view.owner
        layout = ir.StringAttr(op.attributes["layout"]).value
        return layout_form(layout).geometry_of(op.operands[0].type, view.type, layout, len(op.operands) == 4)

    @property
    def stride_triple(self) -> tuple[int, int, int]:
        """(block, head, token) element strides: a strided pool's, else the layout's contiguous ones."""
        return self.strides or pool_layout(self.layout).strides(self.block_size, self.heads_kv, self.head_dim)

    @property
    def block_stride(self) -> int:
        return self.stride_triple[0]

    @property
    def head_stride(self) -> int:
        return self.stride_triple[1]

    @property
    def token_stride(self) -> int:
        return self.stride_triple[2]

    @property
    def page_extent(self) -> int:
        """Elements from a page's base to the end of its last row: what one buffer descriptor covers."""
        return (self.block_size - 1) * self.token_stride + self.head_dim

    def element_offset(self, offset):
        """Offset in the pool, from the page base, of element ``offset`` of a virtual page (ints or arrays)."""
        if isinstance(offset, ir.AffineExpr):
            return ir.AffineExpr.get_floor_div(offset, self.head_dim) * self.token_stride + offset % self.head_dim
        return (offset // self.head_dim) * self.token_stride + offset % self.head_dim

    @property
    def contiguous_run(self) -> tuple[int, int]:
        """(step, count): elements ``o, o + step, ...`` of a virtual page (``count`` of them, from a multiple of
        ``count * step``) lie side by side in the pool: a token's row of D."""
        return 1, self.head_dim


def layout_form(layout: str) -> type[BlockSource]:
    """The class stating the rules and geometry of pool layout ``layout``."""
    from pagedir.page_sources import view_layouts  # the registry sits above the forms

    return view_layouts().get(layout, BlockSource)  # a layout the view refuses (it says why): read as nhd/hnd


def pool_layout(name: str):
    """The pool layout ``name``; a name the view's verifier refuses (it says why) is read as the last layout, so
    that the verifiers of the ops using the view still run."""
    return POOL_LAYOUTS.get(name) or list(POOL_LAYOUTS.values())[-1]


def contiguous(pool: ir.MemRefType) -> bool:
    """Whether ``pool`` has the identity layout (its strides are its layout's, whatever its dynamic sizes)."""
    return pool.affine_map == ir.AffineMap.get_identity(pool.rank, context=pool.context)


def pool_strides(pool: ir.MemRefType) -> tuple[list[int] | None, int]:
    """The element strides and offset of a pool's layout (offset: the dynamic sentinel when ``?``); (None, 0)
    for a layout map that is no strided layout."""
    try:
        strides, offset = pool.get_strides_and_offset()
    except RuntimeError:  # the bindings' "Failed to extract strides and offset"
        return None, 0
    return list(strides), offset


@dataclass
class BlockRead:
    """A virtual page's entry read from a block table (i32 values): its KV head, its block id, and whether
    the sequence owns the slot (CSR; None for a block table, where every slot is the sequence's)."""

    head: ir.Value
    block_id: ir.Value
    owned: ir.Value | None


def is_view(value: ir.Value) -> bool:
    return defined_by(value, "rock.block_table_view")


def strided_pool_error(pool: ir.MemRefType, layout: str) -> str | None:
    """Why the layout of ``pool`` is no pool the loads can read, else None: static positive strides (the
    offset may be ``?``: the V half of a stacked cache of ``?`` blocks), rows of D contiguous elements,
    strides and offset keeping the rows as aligned as a contiguous pool's (16-byte loads stay 16-byte
    loads), and no two elements at one address."""
    if contiguous(pool):
        return None
    strides, offset = pool_strides(pool)
    if strides is None:
        return f"pool {pool} must have a strided layout (its block, token and head strides), got a layout map that is none"
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if dynamic in strides:
        return f"pool {pool} must have static strides (only its offset may be '?'), got strides {dim_list(strides)}"
    names = ["block", "", "", "column"]
    names[pool_layout(layout).token_dim], names[pool_layout(layout).head_dim] = "token", "head"
    if any(stride <= 0 for stride in strides):
        bad = next(i for i, stride in enumerate(strides) if stride <= 0)
        return f"pool {pool}: the {names[bad]} stride {strides[bad]} must be positive"
    if pool.rank == 4:
        head_dim, elem_bytes = pool.shape[3], value_bytes(pool.element_type)
        if strides[3] != 1:
            return f"pool {pool} must hold each row of D = {head_dim} elements contiguously (column stride 1), got {strides[3]}"
        unit = math.gcd(head_dim, max(1, 16 // elem_bytes))
        for name, value in [*zip(names, strides[:3]), ("offset", offset)]:
            if value != dynamic and value % unit:
                return (f"pool {pool}: the {name}{' stride' if name != 'offset' else ''} {value} must be a multiple of "
                        f"{unit} elements ({unit * elem_bytes} bytes), as the rows of a contiguous pool are aligned")
    extents = [1 if pool.is_dynamic_dim(i) else pool.shape[i] for i in range(pool.rank)]
    span = 1  # elements the inner dims (by stride) span
    for i in sorted(range(pool.rank), key=lambda i: strides[i]):
        if extents[i] > 1 and strides[i] < span:
            return (f"pool {pool}: the {names[i]} stride {strides[i]} is smaller than the {span} elements the dims "
                    f"inside it span (two elements of the pool at one address)")
        span = max(span, strides[i] * (extents[i] - 1) + span)
    return None


def dim_list(values: list[int]) -> str:
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return "[" + ", ".join("?" if v == dynamic else str(v) for v in values) + "]"


class BlockSource(PageSource):
    """A block table ``memref<B x max_blocks x i32>``: slot ``s`` of sequence ``b`` is block ``table[b, s]``;
    an id outside ``[0, num_blocks)`` is a null page."""

    name = "blocks"
    #: max_blocks (the result's pages) may be ``?``: read at run time (:meth:`slot_count_dim`).
    dynamic_dims = frozenset({1})
    #: The pool layouts (``rock.block_table_view``'s ``layout``) whose rules this class states
    #: (:data:`pagedir.kv_caches.POOL_LAYOUTS`): ``nhd`` = [num_blocks, block_size, Hkv, D] (vLLM
    #: flash, FlashInfer NHD), ``hnd`` = [num_blocks, Hkv, block_size, D].
    layouts = tuple(name for name, layout in POOL_LAYOUTS.items() if layout.rows_contiguous)

    @staticmethod
    def matches(value: ir.Value) -> bool:
        return is_view(value) and len(value.owner.operands) == 2

    #: Bits of a block id in the table (rock.block_table_view's verifier).
    id_bits = I32

    def table_errors(self, g: PageGeometry) -> Iterator[str]:
        """Why the view's tables do not fit its result of geometry ``g`` (rock.block_table_view's verifier, after
        the pool and the result): a block table ``[B, max_blocks]``."""
        table, pages = self.table.type, self.value.type
        slots = "?" if g.max_blocks is None else g.max_blocks
        rows = "?" if pages.is_dynamic_dim(0) else pages.shape[0]
        if table.rank != 2 or list(table.shape) != [pages.shape[0], pages.shape[1] if g.max_blocks is None else g.max_blocks]:
            yield (f"block table must be memref<{rows}x{slots}xi{self.id_bits}> (batch x max_blocks of the result), "
                   f"got {table}")

    @staticmethod
    def pool_error(pool: ir.MemRefType, layout: str) -> str | None:
        """Why ``pool`` is no pool of ``layout``, else None (rock.block_table_view's verifier)."""
        if pool.rank not in (3, 4):
            return f"pool must be a 4-d memref ({layout}), or a 3-d scale pool, got {pool}"
        return strided_pool_error(pool, layout)

    @classmethod
    def geometry_of(cls, pool: ir.MemRefType, pages: ir.MemRefType, layout: str, csr: bool = False) -> PageGeometry:
        """The geometry of a view of ``pool`` (a layout of :attr:`layouts`) whose result is ``pages``."""
        return PageGeometry.of_types(pool, pages, layout, csr)

    @property
    def geometry(self) -> PageGeometry:
        return PageGeometry.of(self.value)

    @property
    def pool(self) -> ir.Value:
        return self.value.owner.operands[0]

    @property
    def table(self) -> ir.Value:
        return self.value.owner.operands[1]

    # --- the verifier -----------------------------------------------------------------------------

    def kv_shape(self, num_heads_kv: int, head_dim: int):
        g = self.geometry
        if (g.heads_kv, g.head_dim) != (num_heads_kv, head_dim):
            return (f"the cache pool holds {g.heads_kv} heads of dim {g.head_dim}, the attention "
                    f"{num_heads_kv} KV heads of dim {head_dim}")
        return super().kv_shape(num_heads_kv, head_dim)

    def scale_cache_error(self, scales: ir.Value, num_heads_kv: int, head_dim: int) -> str | None:
        """A view of an f32 pool ``[num_blocks, block_size, Hkv]`` (nhd) or ``[num_blocks, Hkv, block_size]``
        (hnd) through the cache's table (and lengths) in the cache's layout."""
        t, kv = scales.type, self.value
        if not is_view(scales):
            return f"must be a rock.block_table_view like k and v, got {t}"
        g, sg = self.geometry, PageGeometry.of(scales)
        pool = scales.owner.operands[0].type
        if pool.rank != 3:
            return f"pool must be memref<num_blocks x block_size x Hkv x f32> ({g.layout}) or hnd, got {pool}"
        if (sg.layout, sg.block_size, sg.heads_kv) != (g.layout, g.block_size, g.heads_kv):
            return (f"pool {pool} ({sg.layout}) must hold {g.heads_kv} KV heads of blocks of {g.block_size} tokens "
                    f"in the cache's layout {g.layout}")
        if list(scales.owner.operands)[1:] != list(kv.owner.operands)[1:]:
            return "must be read through the cache's block table (and csr lengths)"
        return None

    def batch_operands(self) -> list[tuple[ir.Value, int]]:
        return [(self.table, 0)]

    # --- addresses ---------------------------------------------------------------------------------

    def slot_count_dim(self) -> tuple[ir.Value, int]:
        """(memref, dim) whose size is a dynamic view's block slots per sequence: the block table's dim 1."""
        return self.table, 1

    def page_count(self) -> ir.Value:
        """Pages per sequence: static, or ``Hkv * slots`` of a dynamic view (read at run time)."""
        if not ir.MemRefType(self.value.type).is_dynamic_dim(1):
            return index_const(self.value.type.shape[1])
        table, dim = self.slot_count_dim()
        return arith.muli(memref.dim(table, index_const(dim)), index_const(self.geometry.heads_kv))

    def slots_per_sequence(self) -> ir.Value:
        """Block slots per sequence as an i32: static, or read at run time."""
        g = self.geometry
        i32 = ir.IntegerType.get_signless(32)
        if g.max_blocks is not None:
            return arith.constant(i32, g.max_blocks)
        table_of_slots, dim = self.slot_count_dim()
        return arith.index_cast(i32, memref.dim(table_of_slots, index_const(dim)))

    @property
    def divides_pages_across_lanes(self) -> bool:
        """A slot count known only at run time: a 32-bit division by it is a dozen scalar instructions."""
        return self.geometry.max_blocks is None

    def page_address(self, batch: ir.Value, page: ir.Value) -> ir.Value:
        """``pool + (id * block_stride + head * head_stride) * elem_bytes`` for the id of block slot ``page mod
        max_blocks``, head ``page floordiv max_blocks``; 0 (a null page) when the sequence does not own the
        slot or the id is outside the pool."""
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        (block,) = self.read_entries([(batch, arith.index_cast(i32, page))])
        return arith.select(self.block_live(block), self.entry_address(block), arith.constant(i64, 0))

    def split_pages(self, pages, heads_slots):
        """Each page's (head, slot) = (page floordiv slots, page mod slots), unless the caller has them."""
        if heads_slots is None:
            slots = self.slots_per_sequence()
            heads_slots = [(arith.divui(page, slots), arith.remui(page, slots)) for _, page in pages]
        return [head for head, _ in heads_slots], [block_slot for _, block_slot in heads_slots]

    def read_entries(self, places, heads_slots=None) -> list[BlockRead]:
        """The :class:`BlockRead` of each ``(batch, page)``; 32-bit arithmetic throughout (page counts fit: ids
        are i32). ``heads_slots``: see :meth:`split_pages`."""
        index = ir.IndexType.get()
        heads, block_slots = self.split_pages(places, heads_slots)
        return [BlockRead(head, memref.load(self.table, [batch, arith.index_castui(index, block_slot)]), None)
                for (batch, _), head, block_slot in zip(places, heads, block_slots)]

    def block_live(self, block: BlockRead) -> ir.Value:
        """Whether ``block`` names a page of the pool: the id inside it (unsigned: -1 is out) and the slot owned."""
        g = self.geometry
        i32 = ir.IntegerType.get_signless(32)
        num_blocks = (arith.index_cast(i32, memref.dim(self.pool, index_const(0))) if g.num_blocks is None
                      else arith.constant(i32, g.num_blocks))  # a dynamic pool: its size at run time
        in_pool = arith.cmpi(arith.CmpIPredicate.ult, block.block_id, num_blocks)
        return in_pool if block.owned is None else arith.andi(block.owned, in_pool)

    def entry_live(self, in_table: ir.Value, entry: BlockRead) -> ir.Value:
        return arith.andi(in_table, self.block_live(entry))

    def entry_address(self, block: BlockRead) -> ir.Value:
        """``pool + id * block_bytes + head * head_bytes``. The byte offset is 32-bit when every live page's
        fits (a static pool of at most 4 GiB: :func:`pagedir.offset_width.offset_bits` of its last byte), else
        the id's product is 32x32->64."""
        g = self.geometry
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        elem_bytes = value_bytes(ir.MemRefType(self.pool.type).element_type)
        head_offset = arith.muli(block.head, arith.constant(i32, g.head_stride * elem_bytes))  # < block bytes
        if g.num_blocks is not None and offset_bits(g.num_blocks * g.block_stride * elem_bytes - 1) == 32:
            in_block = arith.muli(block.block_id, arith.constant(i32, g.block_stride * elem_bytes))
            offset = arith.extui(i64, arith.addi(in_block, head_offset))
        else:
            in_block = arith.muli(arith.extui(i64, block.block_id), arith.constant(i64, g.block_stride * elem_bytes))
            offset = arith.addi(in_block, arith.extui(i64, head_offset))
        base = arith.index_cast(i64, memref.extract_aligned_pointer_as_index(self.pool))
        if g.offset is None:  # a strided pool placed at run time (the V half of a stacked cache of '?' blocks)
            start = memref.ExtractStridedMetadataOp(self.pool).results[1]
            base = arith.addi(base, arith.muli(arith.index_cast(i64, start), arith.constant(i64, elem_bytes)))
        elif g.offset:  # a strided pool (one half of a stacked K/V cache): its first element past the buffer's
            base = arith.addi(base, arith.constant(i64, g.offset * elem_bytes))
        return arith.addi(base, offset)

    def entries_adjacent(self, rows, first_ptr: ir.Value, pages_per_row: int, page_bytes: int) -> ir.Value:
        """Each block id is the first plus ``r * pages_per_row`` (32-bit), and the last row is live and of row
        0's head; the pages are monotone in ``r``, so every row between is too."""
        (_, first), (_, last) = rows[0], rows[-1]
        adjacent = self.entry_live(*rows[0])
        same_head = arith.cmpi(arith.CmpIPredicate.eq, last.head, first.head)
        adjacent = arith.andi(adjacent, arith.andi(self.entry_live(*rows[-1]), same_head))
        for r, (_, entry) in enumerate(rows[1:], start=1):
            expected = arith.addi(first.block_id, int_const(I32, r * pages_per_row))
            same = arith.cmpi(arith.CmpIPredicate.eq, entry.block_id, expected)
            adjacent = arith.andi(adjacent, same)
        return adjacent

    def page_offset(self, offset: ir.Value, page_size: int) -> tuple[ir.Value, int]:
        """A page is one head's rows of a block, rows token_stride apart in the pool: the row's place in the
        pool, and the page's extent."""
        g = self.geometry
        offset = affine.apply(ir.AffineMap.get(1, 0, [g.element_offset(ir.AffineDimExpr.get(0))]), [offset])
        return offset, g.page_extent

    def page_stride_and_extent(self, page_size: int) -> tuple[int, int]:
        g = self.geometry
        return g.block_stride, g.page_extent

    def contiguous_run(self, page_size: int) -> tuple[int, int]:
        return self.geometry.contiguous_run

    # --- the generator and the check's data ---------------------------------------------------------

    @staticmethod
    def fit_lengths(view: ir.Operation, seq_lens: np.ndarray, batch: int, slots: int,
                    block_size: int) -> tuple[np.ndarray, str | None]:
        """``pagedir-run --check``'s lengths shortened to what the view's tables can hold, or why none fit
        (its argument named by the caller): a block table holds any."""
        return seq_lens, None

    @staticmethod
    def check_tables(view: ir.Operation, block_table: np.ndarray, seq_lens: np.ndarray, block_size: int, batch: int,
                     slots: int, rng: np.random.Generator) -> list[np.ndarray]:
        """The arrays of the view's operands after the pool, placing each sequence's blocks as ``block_table``."""
        return [block_table]

    # --- the interpreter ---------------------------------------------------------------------------

    def run_time_geometry(self, pool, table) -> PageGeometry:
        """The geometry with its dynamic sizes (``?``) read from the arguments' shapes."""
        g = self.geometry
        slots = table.shape[self.slot_count_dim()[1]]
        return replace(g, num_blocks=g.num_blocks if g.num_blocks is not None else pool.shape[0],
                       max_blocks=g.max_blocks if g.max_blocks is not None else slots)

    def at_run_time(self, operands) -> RunTimePages:
        pool, table = operands
        g = self.run_time_geometry(pool, table)
        return BlockPages(pool, table, g, (table.shape[0], g.heads_kv * g.max_blocks, self.value.type.shape[2]))


class BlockPages(RunTimePages):
    """A view's pages at run time: ``pool + (id * block_stride + head * head_stride) * elem_bytes``."""

    def __init__(self, pool, table, geometry: PageGeometry, shape):
        super().__init__(shape)
        self.pool, self.table, self.geometry = pool, table, geometry

    def block_ids(self, batch: np.ndarray, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(block id, whether the sequence owns the slot) of each ``(batch, slot)``."""
        return self.table.read((batch, slot)), np.ones(slot.shape, dtype=np.bool_)

    def addresses(self, batch, page):
        g = self.geometry
        batch, page = np.asarray(batch, dtype=np.int64), np.asarray(page, dtype=np.int64)
        head, slot = page // g.max_blocks, page % g.max_blocks
        ids, owned = self.block_ids(batch, slot)
        live = owned & (ids >= 0) & (ids < g.num_blocks)
        element = ids * g.block_stride + head * g.head_stride
        return np.where(live, self.pool.base + element * self.pool.elem_size, 0)

    def element_offset(self, offset):
        return self.geometry.element_offset(offset)



def block_address(view: ir.Value, block: BlockRead) -> ir.Value:
    """The i64 address of ``block``'s page of the ``rock.block_table_view`` result ``view``
    (:meth:`BlockSource.entry_address`)."""
    return BlockSource(view).entry_address(block)
