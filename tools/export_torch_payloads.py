#!/usr/bin/env python3
"""Export attention written the usual PyTorch ways to linalg on tensors with torch-mlir: the test fixtures.

Writes tests/fixtures/torch/<name>.mlir, one function each (named <name>), exactly as
``torch_mlir.fx.export_and_import(program, output_type="linalg-on-tensors")`` prints it, under a
comment naming the torch and torch-mlir versions. The test suite reads these files and never imports
torch; run this script (in an environment with ``torch`` and ``torch-mlir``, e.g. ``pip install
'pagedir[torch]'``) to regenerate them after a torch-mlir upgrade::

    python tools/export_torch_payloads.py            # every fixture
    python tools/export_torch_payloads.py -o DIR gqa_decode_f16 paged_decode_f16

The forms: the six ways of SIX (docs/compile.md, "Attention payloads in linalg"), each
in f16, f32 and bf16; held-back variants written the same ways at other shapes (``*_alt``); and near
misses that compute something other than rock.attention and must stay unraised (``miss_*``).

Two torch-mlir limits are written around: ``k_cache[block_table]`` with an int32 table does not lower
(the table is widened with ``.long()`` first, as torch does anyway for an index), and vLLM's
per-sequence reference loop does not export with static shapes (the paged decode gathers every
sequence's whole block-table row and masks positions >= seq_lens instead).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "torch"
DTYPES = {"f16": torch.float16, "f32": torch.float32, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Shape:
    batch: int = 2
    heads_q: int = 4
    heads_kv: int = 2
    seq_q: int = 1
    seq_k: int = 32
    head_dim: int = 32
    block: int = 8  # paged forms: tokens per block
    blocks: int = 16  # paged forms: blocks in the pool


DECODE = Shape()
PREFILL = Shape(batch=1, heads_q=4, heads_kv=4, seq_q=8, seq_k=16)
ALT = Shape(batch=1, heads_q=8, heads_kv=2, seq_q=1, seq_k=48, head_dim=64, block=16, blocks=8)
ALT_PREFILL = Shape(batch=2, heads_q=2, heads_kv=1, seq_q=4, seq_k=12, head_dim=16)


# ----------------------------------------------------------------------------
# The forms, as a PyTorch user writes them


def repeat_kv(k: torch.Tensor, groups: int) -> torch.Tensor:
    return k.repeat_interleave(groups, 1)


class GqaDecode(torch.nn.Module):
    """repeat_interleave, q @ k^T * scale, softmax(-1), @ v."""

    def __init__(self, softmax_dim: int = -1, tile: bool = False):
        super().__init__()
        self.softmax_dim, self.tile = softmax_dim, tile

    def forward(self, q, k, v):
        groups = q.shape[1] // k.shape[1]
        if self.tile:  # near miss: groups laid out as h % Hkv (torch's repeat), not h / G
            k, v = k.repeat(1, groups, 1, 1), v.repeat(1, groups, 1, 1)
        else:
            k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        scores = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1]))
        return scores.softmax(self.softmax_dim) @ v


class SdpaGqa(torch.nn.Module):
    def __init__(self, causal: bool = False):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=True)


class RepeatSdpa(torch.nn.Module):
    def forward(self, q, k, v):
        groups = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups))


class CausalPrefill(torch.nn.Module):
    """masked_fill(mask, -inf) with the mask built from aranges (the last query sees every key)."""

    def __init__(self, side: str = "future"):
        super().__init__()
        self.side = side

    def forward(self, q, k, v):
        sq, sk = q.shape[2], k.shape[2]
        groups = q.shape[1] // k.shape[1]
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        rows = torch.arange(sq).unsqueeze(1) + (sk - sq)
        cols = torch.arange(sk).unsqueeze(0)
        hidden = {"future": cols > rows,
                  "past": cols < rows,  # the other side: keys j >= i + Sk - Sq, a sliding window of 0 keys back
                  "diagonal": cols >= rows}  # near miss: a query does not see its own key
        mask = hidden[self.side]
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class PagedDecode(torch.nn.Module):
    """vLLM-style: K/V pools [blocks, block, Hkv, D] (NHD) gathered through block_table [B, max_blocks]
    (int32, widened: torch-mlir does not lower an int32 index tensor), positions >= seq_lens masked."""

    def __init__(self, causal: bool = False):
        super().__init__()
        self.causal = causal

    def forward(self, q, k_cache, v_cache, block_table, seq_lens):
        batch, max_blocks = block_table.shape
        block, heads_kv, head_dim = k_cache.shape[1:]
        ids = block_table.long()
        k = k_cache[ids].reshape(batch, max_blocks * block, heads_kv, head_dim).transpose(1, 2)
        v = v_cache[ids].reshape(batch, max_blocks * block, heads_kv, head_dim).transpose(1, 2)
        groups = q.shape[1] // heads_kv
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        scores = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(head_dim))
        positions = torch.arange(max_blocks * block).view(1, 1, 1, -1)
        lengths = seq_lens.view(-1, 1, 1, 1)
        hidden = positions >= lengths
        if self.causal:  # the queries are the last Sq tokens of each sequence
            rows = torch.arange(q.shape[2]).view(1, 1, -1, 1) + lengths - q.shape[2]
            hidden = hidden | (positions > rows)
        scores = scores.masked_fill(hidden, float("-inf"))
        return scores.softmax(-1) @ v


class FoldedBmm(torch.nn.Module):
    """Heads folded into the batch: torch.bmm on [B*H, S, D]."""

    def forward(self, q, k, v):
        scores = torch.bmm(q, k.transpose(1, 2)) * (q.shape[-1] ** -0.5)
        return torch.bmm(torch.softmax(scores, dim=-1), v)


# ----------------------------------------------------------------------------
# Example inputs


def dense_inputs(shape: Shape, dtype: torch.dtype) -> tuple:
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(shape.batch, shape.heads_q, shape.seq_q, shape.head_dim, generator=gen).to(dtype)
    k = torch.randn(shape.batch, shape.heads_kv, shape.seq_k, shape.head_dim, generator=gen).to(dtype)
    return q, k, k.clone()


def paged_inputs(shape: Shape, dtype: torch.dtype) -> tuple:
    gen = torch.Generator().manual_seed(0)
    max_blocks = shape.seq_k // shape.block
    q = torch.randn(shape.batch, shape.heads_q, shape.seq_q, shape.head_dim, generator=gen).to(dtype)
    pool = torch.randn(shape.blocks, shape.block, shape.heads_kv, shape.head_dim, generator=gen).to(dtype)
    table = torch.randperm(shape.blocks, generator=gen)[: shape.batch * max_blocks].view(shape.batch, max_blocks)
    seq_lens = torch.full((shape.batch,), shape.seq_k - 3)
    return q, pool, pool.clone(), table.to(torch.int32), seq_lens.to(torch.int32)


def folded_inputs(shape: Shape, dtype: torch.dtype) -> tuple:
    q, k, v = dense_inputs(Shape(shape.batch, shape.heads_q, shape.heads_q, shape.seq_q, shape.seq_k, shape.head_dim), dtype)
    fold = lambda t: t.reshape(-1, *t.shape[2:])  # noqa: E731
    return fold(q), fold(k), fold(v)


@dataclass(frozen=True)
class Form:
    module: Callable[[], torch.nn.Module]
    inputs: Callable[[Shape, torch.dtype], tuple]
    shape: Shape
    what: str


SIX = {
    "gqa_decode": Form(GqaDecode, dense_inputs, DECODE, "repeat_interleave, q @ k^T * scale, softmax(-1), @ v"),
    "sdpa_gqa": Form(SdpaGqa, dense_inputs, DECODE, "F.scaled_dot_product_attention(enable_gqa=True)"),
    "repeat_sdpa": Form(RepeatSdpa, dense_inputs, DECODE, "repeat_interleave + F.scaled_dot_product_attention"),
    "causal_prefill": Form(CausalPrefill, dense_inputs, PREFILL, "causal prefill, masked_fill(mask, -inf)"),
    "paged_decode": Form(PagedDecode, paged_inputs, DECODE, "k_cache[block_table] (NHD pool), positions >= seq_lens masked"),
    "bmm_folded": Form(FoldedBmm, folded_inputs, Shape(heads_q=4, heads_kv=4), "torch.bmm on [B*H, S, D]"),
}
HELD_BACK = {
    "gqa_decode_alt": Form(GqaDecode, dense_inputs, ALT, SIX["gqa_decode"].what),
    "sdpa_gqa_alt": Form(SdpaGqa, dense_inputs, ALT_PREFILL, SIX["sdpa_gqa"].what + ", prefill"),
    "causal_prefill_alt": Form(CausalPrefill, dense_inputs, ALT_PREFILL, SIX["causal_prefill"].what + ", GQA"),
    "sdpa_causal_alt": Form(lambda: SdpaGqa(causal=True), dense_inputs, Shape(batch=1, heads_q=4, heads_kv=2, seq_q=8, seq_k=8,
                                                                               head_dim=16),
                            "F.scaled_dot_product_attention(is_causal=True, enable_gqa=True), Sq = Sk"),
    "past_masked_alt": Form(lambda: CausalPrefill(side="past"), dense_inputs, PREFILL,
                            "masked_fill of the keys before the diagonal (the mask on the other side)"),
    "paged_decode_alt": Form(PagedDecode, paged_inputs, ALT, SIX["paged_decode"].what),
    "paged_prefill_alt": Form(lambda: PagedDecode(causal=True), paged_inputs,
                              Shape(batch=2, heads_q=4, heads_kv=4, seq_q=4, seq_k=32, head_dim=32, block=8, blocks=16),
                              "paged prefill: the queries are the last Sq tokens, masked_fill(j >= len | j > i + len - Sq)"),
    "bmm_folded_alt": Form(FoldedBmm, folded_inputs, Shape(batch=1, heads_q=2, heads_kv=2, seq_q=4, seq_k=24, head_dim=64),
                           SIX["bmm_folded"].what + ", prefill"),
}
MISSES = {
    "miss_softmax_dim": Form(lambda: GqaDecode(softmax_dim=-2), dense_inputs, PREFILL, "softmax over the query dim"),
    "miss_sdpa_causal_top_left": Form(lambda: SdpaGqa(causal=True), dense_inputs, ALT_PREFILL,
                                      "SDPA's is_causal with Sq < Sk: aligned top-left (j <= i), not at the end"),
    "miss_mask_diagonal": Form(lambda: CausalPrefill(side="diagonal"), dense_inputs, PREFILL,
                               "causal mask that also hides the diagonal"),
    "miss_gqa_tiled": Form(lambda: GqaDecode(tile=True), dense_inputs, DECODE, "k.repeat(1, G, 1, 1): groups interleaved"),
}


def fixtures() -> dict[str, tuple[Form, str]]:
    """name -> (form, dtype): the six forms in every dtype, the held-back variants and misses in f16."""
    table = {f"{name}_{dtype}": (form, dtype) for name, form in SIX.items() for dtype in DTYPES}
    table.update({f"{name}_f16": (form, "f16") for name, form in {**HELD_BACK, **MISSES}.items()})
    return table


def export(name: str, form: Form, dtype: str) -> str:
    from torch_mlir import fx

    module = fx.export_and_import(form.module(), *form.inputs(form.shape, DTYPES[dtype]),
                                  output_type="linalg-on-tensors", func_name=name)
    import torch_mlir

    version = getattr(torch_mlir, "__version__", None) or _dist_version("torch-mlir")
    header = (f"// {form.what} ({dtype}, {form.shape}).\n"
              f"// Exported by tools/export_torch_payloads.py with torch {torch.__version__}, torch-mlir {version}:\n"
              f"// torch_mlir.fx.export_and_import(..., output_type=\"linalg-on-tensors\"). Do not edit; regenerate.\n")
    return header + str(module)


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="fixtures to export (default: all)")
    parser.add_argument("-o", "--output-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--list", action="store_true", help="print the fixture names and exit")
    args = parser.parse_args(argv)
    table = fixtures()
    if args.list:
        print("\n".join(table))
        return 0
    unknown = [n for n in args.names if n not in table]
    if unknown:
        parser.error(f"unknown fixture(s) {', '.join(unknown)}; --list prints them")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name in args.names or table:
        form, dtype = table[name]
        (args.output_dir / f"{name}.mlir").write_text(export(name, form, dtype))
        print(f"wrote {args.output_dir / f'{name}.mlir'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
