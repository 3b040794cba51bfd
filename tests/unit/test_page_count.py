"""Exact page counts of rock-blockwise-load against enumeration, and against rocMLIR's formula.

rocMLIR sizes the page-pointer buffer with ceil(((d - 1) * k_global + k - 1) / page) + 1,
(d, k) = per-block extents of the gemm operand view [G, K, D]. For K (gemm0) the
reduction dim is the head dimension and the formula is the flat span plus one page;
for V (gemm1) the reduction dim is the sequence and k_global = seq_len, which
assumes a layout V does not have: the count explodes.
"""

from __future__ import annotations

import argparse
import math

import mlir.ir as ir
import numpy as np
import pytest
from mlir.passmanager import PassManager

from pagedir.context import make_context
from pagedir.dialect.ops_attention import read_problem
from pagedir.gen import attention
from pagedir.passes import add_pass
from pagedir.passes.attention_to_gridwise import AttentionToGridwiseOptions, choose_tiling, lds_bytes
from pagedir.passes.blockwise_load import pages_per_tile
from pagedir.passes.ir_utils import find_ops, linear_form


def enumerated_pages(heads: int, seq_len: int, head_dim: int, tile_tokens: int, page_tokens: int) -> int:
    """Largest span of page slots any (head, tile) touches, by listing every position of every tile."""
    page = page_tokens * head_dim
    worst = 0
    for head in range(heads):
        for tile in range(math.ceil(seq_len / tile_tokens)):
            tokens = tile * tile_tokens + np.arange(tile_tokens)
            flat = ((head * seq_len + tokens)[:, None] * head_dim + np.arange(head_dim)[None, :]).ravel()
            worst = max(worst, int(flat.max() // page - flat.min() // page + 1))
    return worst


def pass_pages(layout: str, heads: int, seq_len: int, head_dim: int, tile_tokens: int, page_tokens: int) -> int:
    coords = "(h, t, d, n)" if layout == "k" else "(h, t, n, d)"
    tile_shape = [head_dim, tile_tokens] if layout == "k" else [tile_tokens, head_dim]
    with ir.Context():
        affine_map = ir.Attribute.parse(
            f"affine_map<{coords} -> ((h * {seq_len} + t * {tile_tokens} + n) * {head_dim} + d)>"
        ).value
        form = linear_form(affine_map.results[0], 2, 2)
        bounds = [heads, math.ceil(seq_len / tile_tokens)]
        return pages_per_tile(form, tile_shape, page_tokens * head_dim, bounds)


def rocmlir_pages(layout: str, seq_len: int, head_dim: int, tile_tokens: int, page_tokens: int) -> int:
    if layout == "k":
        k_global, d_per_block, k_per_block = head_dim, tile_tokens, head_dim
    else:
        k_global, d_per_block, k_per_block = seq_len, head_dim, tile_tokens
    span = (d_per_block - 1) * k_global + (k_per_block - 1)
    return math.ceil(span / (page_tokens * head_dim)) + 1


CASES = {
    # name: (heads, seq_len, head_dim, tile_tokens, page_tokens)
    "tile_larger_than_page": (2, 128, 64, 32, 8),
    "page_larger_than_tile": (2, 128, 64, 8, 32),
    "tile_not_aligned_to_page": (2, 96, 64, 12, 8),
    "equal": (4, 256, 128, 16, 16),
}


@pytest.mark.parametrize("layout", ["k", "v"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_count_is_exact(layout: str, case: str) -> None:
    heads, seq_len, head_dim, tile_tokens, page_tokens = CASES[case]
    expected = enumerated_pages(heads, seq_len, head_dim, tile_tokens, page_tokens)
    assert pass_pages(layout, *CASES[case]) == expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_rocmlir_formula_over_counts_v(case: str) -> None:
    heads, seq_len, head_dim, tile_tokens, page_tokens = CASES[case]
    exact = pass_pages("v", *CASES[case])
    formula = rocmlir_pages("v", seq_len, head_dim, tile_tokens, page_tokens)
    assert formula > exact


def test_known_numbers() -> None:
    # 32 tokens of 64 over pages of 8 tokens: 4 pages exactly; rocMLIR reserves 5 for K and 66 for V.
    assert pass_pages("k", *CASES["tile_larger_than_page"]) == 4
    assert rocmlir_pages("k", 128, 64, 32, 8) == 5
    assert rocmlir_pages("v", 128, 64, 32, 8) == 17
    # 8-token tiles inside 32-token pages never cross a page.
    assert pass_pages("v", *CASES["page_larger_than_tile"]) == 1
    # 12-token tiles start 0 or 4 tokens into an 8-token page: 2 pages, never 3.
    assert pass_pages("v", *CASES["tile_not_aligned_to_page"]) == 2


def test_without_bounds_every_reachable_residue_counts() -> None:
    # Tiles of 12 tokens with pages of 8: origins are multiples of 4 tokens, so a
    # tile can start 4 tokens into a page and still touch only 2 pages.
    with ir.Context():
        affine_map = ir.Attribute.parse("affine_map<(t, n, d) -> ((t * 12 + n) * 16 + d)>").value
        form = linear_form(affine_map.results[0], 1, 2)
        assert pages_per_tile(form, [12, 16], 128, None) == 2
        # Starting at any token (a tile index of unknown stride) can reach 3 pages.
        any_start = ir.Attribute.parse("affine_map<(t, n, d) -> ((t + n) * 16 + d)>").value
        assert pages_per_tile(linear_form(any_start.results[0], 1, 2), [12, 16], 128, None) == 3


def pointer_buffers(page_tokens: int, head_dim: int, tile_tokens: int) -> tuple[int, list[int]]:
    """(bytes of one page-pointer buffer in rock-attention-to-gridwise's LDS budget, bytes of the
    pointer buffers rock-blockwise-load allocates) for a 2-head, 240-token paged attention."""
    parser = argparse.ArgumentParser()
    attention.add_arguments(parser)
    args = parser.parse_args(["--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-k", "240",
                              "--head-dim", str(head_dim), "--page-size", str(page_tokens)])
    with make_context():
        module = ir.Module.parse(attention.generate(args))
        (op,) = find_ops(module.operation, "rock.attention")
        problem = read_problem(op.opview)
        budget = lds_bytes(problem, choose_tiling(problem, AttentionToGridwiseOptions(n_per_block=tile_tokens)))
        pm = PassManager("builtin.module")
        add_pass(pm, "rock-attention-to-gridwise", n_per_block=tile_tokens)
        add_pass(pm, "rock-gridwise-attention-to-blockwise")
        add_pass(pm, "rock-blockwise-load")
        pm.run(module.operation)
        views = [ir.MemRefType(view.result.type) for view in find_ops(module.operation, "memref.view")]
        return budget["k_page_ptrs"], [8 * view.shape[0] for view in views if isinstance(view.element_type, ir.IntegerType)]


@pytest.mark.parametrize("tile_tokens", [16, 48, 128])
@pytest.mark.parametrize("head_dim", [8, 64])
@pytest.mark.parametrize("page_tokens", [1, 2, 3, 5])
def test_lds_budget_bounds_the_pointer_buffers(page_tokens: int, head_dim: int, tile_tokens: int) -> None:
    # The LDS check before tiling must never accept a kernel whose pointer buffers outgrow it.
    budget, allocated = pointer_buffers(page_tokens, head_dim, tile_tokens)
    assert len(allocated) == 2  # K and V
    assert max(allocated) <= budget
    # At most one pointer of slack: a tile of n tokens spans n * D / page elements plus one page boundary.
    assert budget - max(allocated) <= 8
