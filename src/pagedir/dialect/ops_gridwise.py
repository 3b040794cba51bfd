"""rock.gridwise_attention_accel (L1): attention with its launch configuration and tiling."""

from __future__ import annotations

from pagedir.dialect.core import I64_ATTR, Attr
from pagedir.dialect.ops_attention import AttentionLike


class GridwiseAttentionAccelOp(AttentionLike):
    name = "gridwise_attention_accel"
    summary = "attention with its launch configuration and tiling chosen"
    description = """
Same operands and semantics as `rock.attention`. A workgroup computes
`m_per_block` query rows of one KV head's group (row r = (q head in group, query
position), so decode packs the group's query heads into one tile and reads K/V
once per group), iterating over KV tiles of `n_per_block` tokens.
"""
    attributes = AttentionLike.common_attributes + (
        Attr("block_size", I64_ATTR, doc="threads per workgroup"),
        Attr("grid_size", I64_ATTR, doc="workgroups"),
        Attr("m_per_block", I64_ATTR, doc="query rows per workgroup tile"),
        Attr("n_per_block", I64_ATTR, doc="KV tokens per tile"),
    )


OPS = (GridwiseAttentionAccelOp,)
