"""rock.gridwise_attention_accel (L1): attention with its launch configuration and tiling."""

from __future__ import annotations

from collections.abc import Iterator

from pagedir.dialect.core import I64_ATTR, Attr
from pagedir.dialect.ops_attention import AttentionLike, read_problem


class GridwiseAttentionAccelOp(AttentionLike):
    name = "gridwise_attention_accel"
    summary = "attention with its launch configuration and tiling chosen"
    description = """
Same operands and semantics as `rock.attention`. A workgroup computes
`m_per_block` query rows of one KV head's group (row r = (q head in group, query
position), so decode packs the group's query heads into one tile and reads K/V
once per group), iterating over KV tiles of `n_per_block` tokens.

With `num_splits` = S > 1 the KV tiles of each (sequence, KV head, query block)
are cut into S ranges of `ceil(tiles / S)` tiles, one workgroup each (`grid_size`
counts them): each writes its partial output and log-sum-exp to a workspace, and a
combine kernel, launched after it, merges the partials into `out`
(rock-gridwise-attention-to-blockwise has the details).

`pipeline_depth` is how many KV tiles a workgroup has in flight: 1 loads a tile and
waits for it before its math; 2 requests tile t + 1's page pointers and K and V
before tile t's math (register staging, `rock-pipeline`). rock-attention-to-gridwise
chooses 2 for decode when every workgroup has a compute unit of its own, else 1.

With a dynamic batch (`?`: one kernel for every batch size) `grid_size` is absent:
the kernel function carries the grid as a formula of its argument sizes instead,
`rock.grid_map` (an affine map, e.g. `affine_map<(d0) -> ((d0 - 1) * 2)>`) applied to
the sizes `rock.grid_sizes` names (`array<i64: arg, dim, ...>`, one pair per map
input: dim `dim` of argument `arg`). The batch is q's dim 0, or `cu_seqlens_q`'s dim 0
minus 1 for packed queries, times the static `Hkv * ceil(Sq / (m_per_block / G))`;
the interpreter's launch and `pagedir-compile --plan` evaluate it. `rock.batch_sizes`
(`array<i64: arg, dim, extra, ...>`) names every argument dim that holds the batch plus
`extra` (q, out, the K/V tables, `kv_indptr` and `cu_seqlens_q` with extra 1, `seq_lens`):
the sizes a launch's arrays must agree on, which the lowered kernel no longer shows
(`pagedir-run` refuses arrays that disagree). Split-KV with
dynamic sizes has `num_splits = 0`: the split count is chosen at launch (the kernel's
`rock.split_map`, pagedir.backend.split_kv) and read from the workspace's dim 0;
the grid then depends on it even where the batch is static, so `grid_size` is absent
there too and `rock.grid_map` is a constant times the count.
"""
    attributes = AttentionLike.common_attributes + (
        Attr("block_size", I64_ATTR, doc="threads per workgroup"),
        Attr("grid_size", I64_ATTR, required=False,
             doc="workgroups; absent with a dynamic batch or a split count chosen at launch (the kernel's rock.grid_map gives them at launch)"),
        Attr("m_per_block", I64_ATTR, doc="query rows per workgroup tile"),
        Attr("n_per_block", I64_ATTR, doc="KV tokens per tile"),
        Attr("num_splits", I64_ATTR, required=False, default=1,
             doc="KV ranges computed by separate workgroups and combined by a second kernel; 1: no split; "
                 "0: chosen at launch (dynamic sizes)"),
        Attr("pipeline_depth", I64_ATTR, required=False, default=1,
             doc="KV tiles in flight: 1 loads a tile and waits for it; 2 issues tile t + 1's loads before tile t's "
                 "math (rock-pipeline)"),
    )

    def verify(self, op) -> Iterator[str]:
        """as `rock.attention`; `pipeline_depth` 1 or 2; `num_splits` at least 1 (0 with dynamic sizes) and at most
        the KV tiles of a sequence (when its capacity is static)."""
        shape_errors = list(super().verify(op))
        if shape_errors:
            yield from shape_errors
            return
        depth = op.pipeline_depth
        if not 1 <= depth <= 2:
            yield f"pipeline_depth must be 1 or 2, got {depth}"
            return
        splits = op.num_splits
        dynamic = op.q.type.is_dynamic_dim(0) or read_problem(op).seq_k is None
        if splits < 0 or (splits == 0 and not dynamic):
            yield f"num_splits must be at least 1 (0: chosen at launch, with dynamic sizes only), got {splits}"
            return
        n = op.n_per_block
        if op.grid_size is None and not op.q.type.is_dynamic_dim(0) and splits != 0:
            yield "grid_size is required with a static batch (unless the split count is chosen at launch)"
        if splits > 1 and n > 0 and read_problem(op).seq_k is not None:  # a dynamic capacity: checked at launch
            tiles = -(-read_problem(op).seq_k // n)
            if splits > tiles:
                yield (f"num_splits {splits} exceeds the {tiles} KV tiles of {n} tokens a sequence holds: "
                       "a split takes at least one tile")


OPS = (GridwiseAttentionAccelOp,)
