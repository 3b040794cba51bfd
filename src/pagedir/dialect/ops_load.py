"""Tiled load path ops: rock.blockwise_load_tile (L2) and rock.threadwise_read_into (L3)."""

from __future__ import annotations

from pagedir.dialect.core import (
    I64_ARRAY_ATTR,
    I64_ATTR,
    INDEX,
    MAP_ATTR,
    MEMREF,
    OPTIONAL,
    READ,
    VARIADIC,
    WRITE,
    Attr,
    OpDef,
    Operand,
)


class BlockwiseLoadTileOp(OpDef):
    name = "blockwise_load_tile"
    summary = "the workgroup loads one tile of a (possibly paged) source into LDS or registers"
    description = """
`map` takes (indices..., tile coordinates...) to source coordinates. For a dense
source they index `source`; for a paged source (a `rock.deref` result, with
`page_table` and `page_size`) the map yields (batch, flat element position in the
batch's concatenation of pages). `dest` has the tile's shape.
"""
    operands = (
        Operand("source", MEMREF, effect=READ, doc="dense memref or rock.deref result"),
        Operand("dest", MEMREF, effect=WRITE, doc="LDS or private memref shaped like the tile"),
        Operand("indices", INDEX, VARIADIC, doc="tile indices fed to map"),
        Operand("page_table", MEMREF, OPTIONAL, effect=READ, doc="memref<B x P x 1 x i64> (paged)"),
    )
    attributes = (
        Attr("map", MAP_ATTR, doc="(indices..., tile coords...) -> source coordinates"),
        Attr("block_size", I64_ATTR, doc="threads per workgroup"),
        Attr("page_size", I64_ATTR, required=False, doc="elements per page (paged)"),
        Attr("index_bounds", I64_ARRAY_ATTR, required=False, doc="upper bounds of indices (exact page counts)"),
    )


class ThreadwiseReadIntoOp(OpDef):
    name = "threadwise_read_into"
    summary = "each thread reads its share of a tile into its registers"
    operands = (
        Operand("source", MEMREF, effect=READ),
        Operand("dest", MEMREF, effect=WRITE, doc="private registers"),
        Operand("indices", INDEX, VARIADIC),
        Operand("lds_page_ptrs", MEMREF, OPTIONAL, effect=READ, doc="LDS memref of i64 page pointers"),
        Operand("first_page_index", INDEX, OPTIONAL, doc="page index held in lds_page_ptrs[0]"),
    )
    attributes = (
        Attr("map", MAP_ATTR),
        Attr("block_size", I64_ATTR),
        Attr("tile_shape", I64_ARRAY_ATTR),
        Attr("vector_dim", I64_ATTR, doc="tile dimension read in vectors"),
        Attr("vector_len", I64_ATTR, doc="elements per vector (at most 128 bits)"),
        Attr("page_size", I64_ATTR, required=False),
        Attr("num_pages_per_batch", I64_ATTR, required=False),
    )


OPS = (BlockwiseLoadTileOp, ThreadwiseReadIntoOp)
