"""Serving views at L0: rock.block_table_view (vLLM block tables, FlashInfer CSR tables) and
rock.varlen_view (packed variable-length queries).

Like ``rock.deref``, the view loads nothing: it describes how a page of the
logical K (or V) is addressed, and ``rock-blockwise-load`` reads the table when it
stages a tile's page addresses. Its result has the type of a ``rock.deref``
result, ``memref<B x P x S x T>`` with ``P = Hkv * max_blocks`` pages of ``S =
block_size * D`` elements, so every level that reads paged K/V reads both: virtual
page ``j`` of sequence ``b`` is KV head ``j floordiv max_blocks``'s rows of block
``id(b, j mod max_blocks)`` of the pool, and per sequence the logical K is
``[Hkv, max_blocks * block_size, D]``.

How the passes address the pages of each form: :mod:`pagedir.page_sources`
(:class:`~pagedir.page_sources.PageGeometry` turns a view into strides).
"""

from __future__ import annotations

from collections.abc import Iterator
import mlir.ir as ir

from pagedir.dialect.core import MEMREF, OPTIONAL, READ, STR_ATTR, Attr, OpDef, Operand, Result
from pagedir.page_sources import source_of, view_layouts, view_tables
from pagedir.page_sources.blocks import is_view

#: Pool layouts: ``nhd`` = [num_blocks, block_size, Hkv, D] (vLLM flash, FlashInfer NHD),
#: ``hnd`` = [num_blocks, Hkv, block_size, D] (FlashInfer HND), ``vllm-pa`` (vLLM's paged-attention
#: kernels); each stated by its page source.
KV_LAYOUTS = tuple(view_layouts())


class BlockTableViewOp(OpDef):
    name = "block_table_view"
    summary = "view a cache pool through a block table (vLLM) or a CSR page table (FlashInfer)"
    description = """
`pool` is `memref<num_blocks x block_size x Hkv x D x T>` (`layout = "nhd"`),
`memref<num_blocks x Hkv x block_size x D x T>` (`layout = "hnd"`), or one of vLLM's
paged-attention caches (`layout = "vllm-pa"`): the key cache `memref<num_blocks x Hkv x D/x x
block_size x x x T>` with `x = 16 bytes / element size`, the value cache `memref<num_blocks x Hkv
x D x block_size x T>` (its block_size a multiple of x: one 16-byte load along its tokens stays in
a block). A 3-d pool `[num_blocks, block_size, Hkv]` (or `[num_blocks, Hkv, block_size]`, hnd and
vllm-pa) is a scale cache, read as D = 1 (one f32 per token and KV head: `rock.attention`'s
`k_scales`/`v_scales`). Blocks form:
`table` is the `memref<B x max_blocks x i32>` block table, block slot `s` of
sequence `b` is block `table[b, s]`. CSR form (with `kv_indptr` and
`kv_last_page_len`): `table` is `kv_indices` `memref<nnz x i32>`, sequence `b`
owns slots `s < kv_indptr[b + 1] - kv_indptr[b]`, slot `s` being block
`kv_indices[kv_indptr[b] + s]`, and its length is `(pages - 1) * block_size +
kv_last_page_len[b]` (0 without pages).

The result `memref<B x (Hkv * max_blocks) x (block_size * D) x T>` is read like a
`rock.deref` result: virtual page `j` of sequence `b` holds KV head
`j floordiv max_blocks`'s `block_size x D` rows of block slot `j mod max_blocks`,
so per sequence the logical K (or V) is `[Hkv, max_blocks * block_size, D]`. A slot
the sequence does not own, or whose id is outside `[0, num_blocks)`, is a null
page (reads 0). Nothing is loaded here: `rock-blockwise-load` reads the ids, once
per tile, and stages the page addresses `pool + (id * block_stride + head *
head_stride) * elem_bytes`; loads inside a page step by the layout's token stride
(`Hkv * D` for nhd, `D` for hnd; vllm-pa: a key's 16-byte chunks lie `block_size * x` apart,
a value's tokens are contiguous and are read 16 bytes along the tokens).

Dynamic sizes (one kernel for every batch): the pool's `num_blocks`, the batch `B`
(of the result, the table, `kv_indptr` and `kv_last_page_len` together), the block
slots `max_blocks` (the table's dim 1 and the result's pages together) and `nnz` may
be `?`. A result with `?` pages has `max_blocks` read at run time: the block
table's dim 1, or for CSR the length of `kv_indices` (a bound on any sequence's
pages). The id range check reads `num_blocks` from the pool.

Strided pools: the pool's memref layout may be `strided<[block, ., ., 1], offset: o>`
(the dims in the layout's order): the block, token and head strides and the offset are
the layout's, in place of a contiguous pool's. This is how one tensor holding K and V
is read in place: K and V are `memref.subview`s of it, e.g. of vLLM FlashAttention's
`kv_cache [2, num_blocks, block_size, Hkv, D]` (V: `offset: num_blocks x block_size x
Hkv x D`, `?` with `?` blocks) or of FlashInfer's `[num_blocks, 2, block_size, Hkv, D]`
(block stride `2 x block_size x Hkv x D`, V at `offset: block_size x Hkv x D`); page
addresses become `pool + (offset + id * block_stride + head * head_stride) *
elem_bytes`, the loads are unchanged. The strides must be static and positive (the offset
may be `?`), D contiguous (stride 1), the strides and a static offset multiples of
`gcd(D, 16 / elem_bytes)` elements (rows as aligned as a contiguous pool's: 16-byte loads
stay 16-byte loads), and no two elements may share an address. vllm-pa pools are contiguous
(vLLM's key and value caches are two tensors of their own).
"""
    operands = (
        Operand("pool", MEMREF, effect=READ, doc="the K or V cache pool, nhd or hnd (contiguous or strided), or vllm-pa"),
        Operand("table", MEMREF, effect=READ, doc="block table memref<B x max_blocks x i32>, or kv_indices memref<nnz x i32>"),
        Operand("kv_indptr", MEMREF, OPTIONAL, effect=READ, doc="CSR: memref<B+1 x i32>, sequence b's slots in kv_indices"),
        Operand("kv_last_page_len", MEMREF, OPTIONAL, effect=READ, doc="CSR: memref<B x i32>, tokens in each last page"),
    )
    results = (Result("pages", MEMREF, "memref<B x (Hkv * max_blocks) x (block_size * D) x T>"),)
    attributes = (Attr("layout", STR_ATTR, doc='"nhd", "hnd" or "vllm-pa"'),)
    example = """%k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<64x16x2x128xf16>, memref<2x4xi32>) -> memref<2x8x2048xf16>"""

    def verify(self, op) -> Iterator[str]:
        """layout nhd, hnd or vllm-pa, its pool rule (page_sources); a pool of the result's element type;
        i32 tables; the result `[B, Hkv * max_blocks, block_size * D]` matching the pool and the table. Dynamic (`?`):
        the pool's blocks, the batch, the block slots (the result's pages with them), nnz."""
        pool, table, pages = op.pool.type, op.table.type, op.operation.results[0].type
        forms = view_layouts()
        if op.layout not in forms:
            names = [f'"{name}"' for name in forms]
            names = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
            yield f'layout must be {names}, got "{op.layout}"'
            return
        form = forms[op.layout]
        if (problem := form.pool_error(pool, op.layout)) is not None:
            yield problem
            return
        if pages.rank != 3 or pages.element_type != pool.element_type:
            yield f"result must be memref<B x P x S x {pool.element_type}>, got {pages}"
            return
        for label, value, static in (("pool", pool, range(1, pool.rank)), ("result", pages, [2])):
            if any(value.is_dynamic_dim(i) for i in static):
                yield f"{label} {value} may be dynamic only in its {'blocks' if label == 'pool' else 'batch and pages'}"
                return
        tables = view_tables(op.operation.results[0])
        if table.element_type != ir.IntegerType.get_signless(tables.id_bits):
            yield f"table must hold i{tables.id_bits} block ids, got {table}"
        csr = (op.kv_indptr is not None, op.kv_last_page_len is not None)
        if csr[0] != csr[1]:
            yield "a csr view needs both kv_indptr and kv_last_page_len"
            return
        g = form.geometry_of(pool, pages, op.layout)
        if (not pages.is_dynamic_dim(1) and pages.shape[1] % g.heads_kv) or pages.shape[2] != g.block_size * g.head_dim:
            yield (f"result {pages} must be memref<B x (Hkv * max_blocks) x (block_size * D)> for a pool of "
                   f"Hkv = {g.heads_kv}, block_size = {g.block_size}, D = {g.head_dim}")
            return
        yield from tables(op.operation.results[0]).table_errors(g)


class VarlenViewOp(OpDef):
    name = "varlen_view"
    summary = "view packed variable-length queries (or outputs) as a padded [B, Hq, Sq, D] tensor"
    description = """
`packed` is `memref<total_q x Hq x D x T>` holding the query rows (or output rows) of
every sequence one after the other, sequence `b` owning rows
`[cu_seqlens_q[b], cu_seqlens_q[b + 1])`; `cu_seqlens_q` is `memref<B+1 x i32>`. The
result `memref<B x Hq x Sq x D x T>` presents them right-aligned: position `p` of
sequence `b` is packed row `cu_seqlens_q[b + 1] - Sq + p` when `p >= Sq - q_len(b)`,
and absent otherwise (reads 0, writes are dropped). Right alignment makes
`rock.attention`'s causal rule (query `i` sees keys `j <= i + seq_len - Sq`) the rule
aligned to the end of each sequence: the last query of every sequence sees every key.
Sq is the longest query a sequence may have. Nothing is loaded here. `total_q` and `B`
may be dynamic (`?`; `B` in `cu_seqlens_q` and the result together), Sq never: it
is the launch-time bound on a sequence's queries that sizes the grid.
"""
    operands = (
        Operand("packed", MEMREF, effect=READ, doc="memref<total_q x Hq x D x T>"),
        Operand("cu_seqlens_q", MEMREF, effect=READ, doc="memref<B+1 x i32>: sequence b's rows start at [b]"),
    )
    results = (Result("padded", MEMREF, "memref<B x Hq x Sq x D x T>"),)
    example = """%q = "rock.varlen_view"(%q_packed, %cu_seqlens_q) : (memref<40x8x128xf16>, memref<3xi32>) -> memref<2x8x32x128xf16>"""

    def verify(self, op) -> Iterator[str]:
        """packed `[total_q, Hq, D]`, cu_seqlens_q `[B+1]` i32, result `[B, Hq, Sq, D]` of the packed
        element type; only total_q and B may be dynamic (`?`), B in cu_seqlens_q and the result together."""
        packed, cu, padded = op.packed.type, op.cu_seqlens_q.type, op.operation.results[0].type
        if packed.rank != 3 or padded.rank != 4 or padded.element_type != packed.element_type:
            yield f"expects packed memref<total_q x Hq x D x T> and a result memref<B x Hq x Sq x D x T>, got {packed} and {padded}"
            return
        for label, value, static in (("packed", packed, (1, 2)), ("result", padded, (1, 2, 3))):
            if any(value.is_dynamic_dim(i) for i in static):
                yield f"{label} {value} may be dynamic only in its {'rows' if label == 'packed' else 'batch'}"
                return
        if [padded.shape[1], padded.shape[3]] != [packed.shape[1], packed.shape[2]]:
            yield f"result {padded} must have the heads and head dim of the packed {packed}"
        dynamic = padded.is_dynamic_dim(0)
        if cu.rank != 1 or cu.element_type != ir.IntegerType.get_signless(32) or cu.is_dynamic_dim(0) != dynamic or (
                not dynamic and cu.shape[0] != padded.shape[0] + 1):
            yield f"cu_seqlens_q must be memref<{'?' if dynamic else padded.shape[0] + 1}xi32>, got {cu}"


def varlen_parts(value: ir.Value) -> tuple[ir.Value, ir.Value] | None:
    """(packed, cu_seqlens_q) of a ``rock.varlen_view`` result, else None."""
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "rock.varlen_view":
        return None
    return owner.operands[0], owner.operands[1]


def slot_count_dim(view: ir.Value) -> tuple[ir.Value, int]:
    """(memref, dim) whose size is a dynamic view's block slots per sequence (see
    :meth:`pagedir.page_sources.BlockSource.slot_count_dim`)."""
    return source_of(view).slot_count_dim()


def batch_dims(attention: ir.Operation) -> list[tuple[int, int, int]]:
    """``(argument, dim, extra)``, in argument order, for each argument of the enclosing function whose dim
    ``dim`` is the batch of ``attention`` (``rock.attention`` or ``rock.gridwise_attention_accel``) plus
    ``extra``: q and out (or ``cu_seqlens_q``, extra 1, through ``rock.varlen_view``), K and V (dense,
    ``rock.deref``'s table, the block table, or ``kv_indptr`` (extra 1) and ``kv_last_page_len``),
    ``seq_lens`` and the per-token-head scale caches. The sizes a run's arrays must agree on."""
    operation = attention.operation
    operands, found, start = list(operation.operands), set(), 0
    names = list(operation.opview.op_def.operands_of(operation))  # the operand groups, as declared
    batched = {names.index(name) for name in ("q", "k", "v", "seq_lens", "k_scales", "v_scales", "out")}
    for group, size in enumerate(ir.DenseI32ArrayAttr(operation.attributes["operandSegmentSizes"])):
        for value in operands[start : start + size] if group in batched else []:
            owner = value.owner if not isinstance(value.owner, ir.Block) else None
            name = owner.name if owner is not None else None
            if name == "rock.varlen_view":
                parts = [(owner.operands[1], 1)]
            else:
                parts = source_of(value).batch_operands()
            found.update((ir.BlockArgument(v).arg_number, 0, extra) for v, extra in parts if isinstance(v.owner, ir.Block))
        start += size
    return sorted(found)


def is_block_table_view(value: ir.Value) -> bool:
    return is_view(value)


OPS = (BlockTableViewOp, VarlenViewOp)
