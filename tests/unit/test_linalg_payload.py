"""The interpreter runs linalg-attention payloads per the ops' semantics: they compute pagedir.reference's attention."""

from __future__ import annotations

import numpy as np
import pytest

from pagedir import reference
from pagedir.cli.gen import build_parser
from pagedir.gen import linalg_attention
from pagedir.interp import Device, run
from pagedir.interp.launch import as_module, find_function

CASES = [
    [],
    ["--causal", "--seq-lens", "--seq-len-q", "4", "--seq-len-k", "16"],
    ["--page-size", "16", "--seq-lens", "--mask", "additive", "--softmax", "linalg"],
    ["--matmul", "batch-matmul", "--seq-len-q", "8", "--seq-len-k", "32", "--causal", "--dtype", "f32"],
    ["--num-heads-kv", "8", "--dtype", "bf16", "--seq-lens"],
]


@pytest.mark.parametrize("flags", CASES, ids=lambda f: " ".join(f) or "default")
def test_payload_computes_attention(flags):
    args = build_parser().parse_args(["linalg-attention", "--head-dim", "32", *flags])
    module = as_module(linalg_attention.generate(args))
    func = find_function(module, "attention")
    device = Device()
    rng = np.random.default_rng(3)
    case = linalg_attention.check_case(func, rng, device)
    outputs = run(module, "attention", case.args, device=device)
    q = case.args[0].astype(np.float32)
    # Redraw K/V as the case drew them (same seed, same order) to know the dense values behind the pages.
    again = np.random.default_rng(3)
    b, hq, sq, d = q.shape
    hkv = args.num_heads_kv
    sk = args.seq_len_k
    again.standard_normal((b, hq, sq, d))
    name = args.dtype
    from pagedir.interp.check import host_values

    k = host_values(again.standard_normal((b, hkv, sk, d)), name).astype(np.float32)
    v = host_values(again.standard_normal((b, hkv, sk, d)), name).astype(np.float32)
    seq_lens = case.args[3] if args.seq_lens else None
    expected = reference.attention(q, k, v, seq_lens=seq_lens, causal=args.causal, scale=args.scale)
    tolerance = 1e-5 if name == "f32" else 2e-2
    assert np.abs(outputs[-1].astype(np.float32) - expected).max() <= tolerance
    assert not np.isnan(outputs[-1]).any()


@pytest.mark.parametrize("flags", CASES, ids=lambda f: " ".join(f) or "default")
def test_raise_keeps_what_the_payload_computes(flags):
    """rock-raise-attention's output (rock.attention, run by the reference) computes what the payload does."""
    from pagedir.interp.check import check_pass
    from pagedir.passes.ir_utils import find_ops

    args = build_parser().parse_args(["linalg-attention", "--head-dim", "32", *flags])
    module = as_module(linalg_attention.generate(args))
    from pagedir.interp.check import apply_pass

    with module.context:  # the rock verifiers build types from the ambient context
        raised = apply_pass(module, "rock-raise-attention")
        assert find_ops(raised.operation, "rock.attention"), "the payload was not raised"
        assert not find_ops(raised.operation, "linalg.generic", "linalg.softmax", "linalg.batch_matmul")
        assert check_pass(module, "rock-raise-attention", seed=1).ok
