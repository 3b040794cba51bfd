"""Attention variants: sliding window, logits soft-cap, ALiBi slopes, attention sinks.

The reference is checked against the plain-loop semantics and against cases whose
answer follows from the definitions; the kernels go from ``pagedir-gen`` through
``pagedir-run --check`` (NaN/Inf in the slots past seq_len, shuffled pages with
null pointers past it) in decode and prefill, paged and dense, split and not.
The window's KV tiles before it are shown never loaded: their pages point at
unmapped memory, and the bytes read from the pages are counted.
"""

from __future__ import annotations

import math
import os

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import interp, reference
from pagedir.cli import gen as gen_cli
from pagedir.cli import run as run_cli
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import TOLERANCE, host_values, make_case
from pagedir.interp.memory import Device
from pagedir.passes.ir_utils import find_ops

from test_attention import lower, make_args

# ----------------------------------------------------------------------------
# The reference, from the definitions


def random_inputs(seed: int, batch=2, heads_q=4, heads_kv=2, seq_q=5, seq_k=40, head_dim=16):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch, heads_q, seq_q, head_dim)).astype(np.float32)
    k = rng.standard_normal((batch, heads_kv, seq_k, head_dim)).astype(np.float32)
    v = rng.standard_normal((batch, heads_kv, seq_k, head_dim)).astype(np.float32)
    return rng, q, k, v


REFERENCE_VARIANTS = {
    "window-causal": dict(window_left=7, causal=True),
    "window-0-causal": dict(window_left=0, causal=True),
    "window-not-causal": dict(window_left=3),
    "softcap": dict(softcap=0.5, causal=True),
    "alibi": dict(alibi_slopes=[0.5, 0.25, 0.125, 1.0]),
    "sinks": dict(sinks=[2.0, -1.0, 0.0, 5.0], causal=True),
    "all": dict(window_left=4, softcap=2.0, alibi_slopes=[0.5, 0.25, 0.125, 1.0], sinks=[1.0, -1.0, 0.0, 3.0], causal=True),
}


@pytest.mark.parametrize("name", list(REFERENCE_VARIANTS))
def test_reference_variants_match_the_plain_loops(name: str) -> None:
    _, q, k, v = random_inputs(1)
    variant = REFERENCE_VARIANTS[name]
    lens = np.array([40, 3])  # the second sequence shorter than the queries: causal rows without keys
    got = reference.attention(q, k, v, seq_lens=lens, **variant)
    want = reference.attention_loops(q, k, v, seq_lens=lens, **variant)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    assert np.abs(got - reference.attention(q, k, v, seq_lens=lens, causal=variant.get("causal", False))).max() > 0.05


def test_window_0_causal_sees_only_the_query_position() -> None:
    _, q, k, v = random_inputs(2)
    out = reference.attention(q, k, v, seq_lens=[40, 20], causal=True, window_left=0)
    for b, length in enumerate((40, 20)):
        for i in range(5):
            np.testing.assert_allclose(out[b, :, i], np.repeat(v[b, :, i + length - 5], 2, axis=0), atol=1e-6)


def test_window_without_causal_keeps_later_keys() -> None:
    # Decode-aligned query 0 of 1 sits at position 39: window 10 keeps keys 29..39, whatever causal says.
    _, q, k, v = random_inputs(3, seq_q=1)
    windowed = reference.attention(q, k, v, window_left=10)
    np.testing.assert_allclose(windowed, reference.attention(q, k[:, :, 29:], v[:, :, 29:]), atol=1e-6)


def test_sink_joins_the_denominator_only() -> None:
    # One visible key (window 0): weight e^s / (e^s + e^sink), and nothing of the sink reaches the values.
    _, q, k, v = random_inputs(4, seq_q=1, heads_q=2, heads_kv=2)
    sinks = np.array([0.3, -2.0], dtype=np.float32)
    out = reference.attention(q, k, v, window_left=0, causal=True, sinks=sinks)
    score = np.einsum("hd,hd->h", q[0, :, 0], k[0, :, -1]) / math.sqrt(16)
    weight = np.exp(score) / (np.exp(score) + np.exp(sinks))
    np.testing.assert_allclose(out[0, :, 0], weight[:, None] * v[0, :, -1], atol=1e-6)


def test_softcap_bounds_the_scores() -> None:
    # A cap of 1e-3 flattens every score to about 0: the weights are uniform, the output is the mean value.
    _, q, k, v = random_inputs(5, seq_q=1)
    out = reference.attention(q, k * 100, v, softcap=1e-3)
    np.testing.assert_allclose(out, np.repeat(v.mean(axis=2, keepdims=True), 2, axis=1), atol=1e-3)


def test_alibi_is_relative_to_the_query_position() -> None:
    # Decode with seq_len 40: the bias is slope * (j - 39), so adding it is the same as adding
    # slope * j (softmax ignores a per-row constant) and a steep slope picks the last key.
    _, q, k, v = random_inputs(6, seq_q=1)
    steep = reference.attention(q, k, v, alibi_slopes=[100.0] * 4)
    np.testing.assert_allclose(steep, np.repeat(v[:, :, -1:], 2, axis=1), atol=1e-5)


# ----------------------------------------------------------------------------
# Kernels through pagedir-run --check

KERNEL_CASES = {
    # name: pagedir-gen flags (all with seq_lens: NaN/Inf past them, null pages)
    "decode-window": "--seq-len-k 128 --window 40",
    "decode-softcap": "--softcap 0.2",
    "decode-alibi": "--alibi",
    "decode-sinks": "--sinks",
    "decode-all-bf16": "--seq-len-k 128 --window 50 --softcap 1.5 --alibi --sinks --dtype bf16",
    "prefill-window-causal": "--seq-len-q 9 --seq-len-k 96 --causal --window 20",
    "prefill-all-causal": "--seq-len-q 6 --seq-len-k 64 --causal --window 9 --softcap 0.5 --alibi --sinks",
    "dense-decode-all": "--dense --seq-len-k 80 --window 30 --softcap 0.7 --alibi --sinks",
    "dense-prefill-all": "--dense --seq-len-q 7 --seq-len-k 48 --causal --window 5 --softcap 3 --alibi --sinks --dtype f32",
    "split-decode-sinks": "--seq-len-k 128 --num-splits 3 --sinks",
    "split-decode-all": "--seq-len-k 256 --num-splits 4 --window 70 --softcap 1.5 --alibi --sinks",
    "split-prefill-window-sinks": "--seq-len-q 9 --seq-len-k 128 --causal --num-splits 2 --window 30 --sinks",
    # serving forms: cache pools through a vLLM block table or a FlashInfer CSR table, packed queries
    "blocks-prefill-all": "--page-table blocks --seq-len-q 5 --causal --window 20 --softcap 2 --alibi --sinks",
    "csr-hnd-decode-window-sinks": "--page-table csr --kv-layout hnd --window 30 --alibi --sinks",
    "blocks-varlen-all": "--page-table blocks --varlen --seq-len-q 4 --causal --window 7 --softcap 1 --alibi --sinks",
}


def generate(tmp_path, flags: str) -> str:
    path = tmp_path / "kernel.mlir"
    lengths = [] if "csr" in flags else ["--seq-lens"]  # a CSR table carries the lengths
    argv = ["attention", "--num-heads-q", "4", "--num-heads-kv", "2", "--head-dim", "64", *lengths, *flags.split(),
            "-o", str(path)]
    assert gen_cli.main(argv) == 0
    return str(path)


@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_variant_kernels_pass_pagedir_run_check(name: str, tmp_path, capsys) -> None:
    path = generate(tmp_path, KERNEL_CASES[name])
    assert run_cli.main(["--check", path, "--seed", str(len(name))]) == 0
    out = capsys.readouterr().out
    assert "L6 after rock-kernel-pipeline" in out and "FAIL" not in out


def without_variants(text: str) -> str:
    """The kernel text without window_left and softcap (same arguments)."""
    import re

    return re.sub(r", (window_left = \d+|softcap = [^:]+ : f32)", "", text)


@pytest.mark.parametrize("flags", ["--window 10", "--softcap 0.2", "--window 3 --causal --seq-len-q 4"])
def test_a_kernel_ignoring_the_variant_fails_the_check(flags: str, tmp_path) -> None:
    # The data pagedir-run --check draws make each variant matter: the same kernel without the
    # attribute, run on the variant's case, is far from its reference.
    text = open(generate(tmp_path, f"--dense --seq-len-k 64 {flags}")).read()
    with make_context():
        module = ir.Module.parse(text)
        func = find_ops(module.operation, "func.func")[0]
        case = make_case(func, np.random.default_rng(0), Device())
        plain = ir.Module.parse(without_variants(text))
        lower(plain)
        got = interp.run(plain, "paged_attention", case.args, device=Device())[-1]
    out_index = len(case.args) - 1
    assert np.abs(np.asarray(got, dtype=np.float32) - case.expected[out_index]).max() > 10 * TOLERANCE["f16"]


# ----------------------------------------------------------------------------
# The window skips tiles: bytes read grow with the window, not with seq_len


class CountingDevice(Device):
    """A device that counts the bytes read inside the ranges registered in ``watched``."""

    def __init__(self) -> None:
        super().__init__()
        self.watched: list[tuple[int, int]] = []
        self.bytes_read = 0

    def read(self, addresses, elem, what, location):
        flat = np.asarray(addresses, dtype=np.int64).reshape(-1)
        inside = np.zeros(flat.shape, dtype=bool)
        for start, end in self.watched:
            inside |= (flat >= start) & (flat < end)
        self.bytes_read += int(inside.sum()) * elem.size
        return super().read(addresses, elem, what, location)


def run_windowed_decode(seq_k: int, window: int, seq_lens: list[int], n_per_block: int = 32, num_splits: int = 1):
    """(output, reference, K/V bytes read) of a decode kernel (8 query heads on 1 KV head, D 128, pages
    of 16) whose pages wholly before the KV tile holding each sequence's window start point at unmapped
    memory (the tile is loaded whole: its keys before the window are masked, not unread)."""
    args = make_args(num_heads_q=8, num_heads_kv=1, head_dim=128, seq_len_k=seq_k, window=window, batch=len(seq_lens))
    args.seq_lens = True
    rng = np.random.default_rng(7)
    b, d = len(seq_lens), 128
    q = host_values(rng.standard_normal((b, 8, 1, d)), "f16")
    k = host_values(rng.standard_normal((b, 1, seq_k, d)), "f16")
    v = host_values(rng.standard_normal((b, 1, seq_k, d)), "f16")
    lens = np.array(seq_lens, dtype=np.int32)
    k, v = reference.fill_stale(k, lens), reference.fill_stale(v, lens)
    device = CountingDevice()
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        options = dict(n_per_block=n_per_block) | ({"num_splits": num_splits} if num_splits > 1 else {})
        lower(module, **options)
        caches = [reference.paged_cache(device, x, 16, seq_lens=lens, rng=rng) for x in (k, v)]
        for cache in caches:
            device.watched += [(page.address, page.address + page.nbytes) for page in cache.pages]
            for batch, length in enumerate(seq_lens):
                # Pages wholly before the tile holding the window's first key (length - 1 - window).
                first_tile_key = max(0, length - 1 - window) // n_per_block * n_per_block
                cache.table[batch, np.arange(seq_k // 16) * 16 + 16 <= first_tile_key, 0] = 0xDEAD0000
        out = np.full((b, 8, 1, d), np.nan, dtype=np.float16)
        got = interp.run(module, args.name, [q, caches[0].table, caches[1].table, lens, out], device=device)[-1]
    expected = reference.attention(q, k, v, seq_lens=lens, window_left=window)
    return np.asarray(got, dtype=np.float32), expected, device.bytes_read


def test_window_256_at_8192_reads_the_window_not_the_sequence() -> None:
    # Query at position 8191 sees keys 7935..8191 (257 keys); tiles of 32 keys: tiles 247..255 are
    # loaded, 9 tiles of K and of V, 128 x f16 each; the 247 tiles before are not (unmapped pages).
    got, expected, bytes_read = run_windowed_decode(8192, 256, [8192])
    np.testing.assert_allclose(got, expected, atol=2e-2, rtol=0)
    tile_bytes = 32 * 128 * 2
    assert bytes_read == 2 * 9 * tile_bytes
    assert 9 * 32 <= 257 + 2 * 32  # within 2 tiles of the window


def test_window_tiles_skipped_with_ragged_lengths_and_splits() -> None:
    # seq_len 1000 (window ends inside a tile) and 300; 8 splits of 32 tiles: the splits before
    # the window run no iteration, the one holding its start begins at the window's first tile.
    got, expected, _ = run_windowed_decode(1024, 100, [1000, 300], num_splits=8)
    np.testing.assert_allclose(got, expected, atol=2e-2, rtol=0)


# ----------------------------------------------------------------------------
# Flags and diagnostics


@pytest.mark.parametrize(("flags", "message"), [
    (["--window", "-1"], "--window must be between 0 and 2147483647"),
    (["--window", str(2**63)], "--window must be between 0 and 2147483647"),
    (["--softcap", "0"], "is not a soft-cap: a finite positive f32 value"),
    (["--softcap", "inf"], "is not a soft-cap: a finite positive f32 value"),
    (["--softcap", "3e38"], "is not a soft-cap: a finite positive f32 value (1.1754943508222875e-38 .. 2.35866e+38)"),
])
def test_gen_refuses_bad_variant_values(flags: list[str], message: str, capsys) -> None:
    assert gen_cli.main(["attention", *flags]) != 0
    assert message in capsys.readouterr().err


def test_gen_arguments_follow_seq_lens() -> None:
    args = make_args(alibi=True, sinks=True, window=5, softcap=2.5)
    args.seq_lens = True
    text = gen.generate(args)
    assert "%seq_lens: memref<2xi32>, %alibi_slopes: memref<4xf32>, %sinks: memref<4xf32>, %out:" in text
    assert "window_left = 5, softcap = 2.5 : f32" in text
    assert "operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1>" in text


# ----------------------------------------------------------------------------
# A new variant: a class in pagedir.variants and a line in its registry

#: A constant added to every score, appended to a copy of pagedir/variants.py with nothing else changed.
SCORE_BIAS = '''

@dataclass(frozen=True)
class ScoreBias(Variant):
    bias: float

    attributes = (Declared("score_bias", "f32", "a constant added to every score", "--score-bias"),)

    @classmethod
    def verify(cls, values):
        if values.get("score_bias") is not None and not math.isfinite(values["score_bias"]):
            yield f"score_bias must be finite, got {values['score_bias']}"

    @classmethod
    def add_arguments(cls, parser):
        parser.add_argument("--score-bias", type=float, default=None)

    @classmethod
    def from_flags(cls, args):
        return {"score_bias": args.score_bias}

    def scores(self, scores, first, end, position):
        import numpy as np

        return scores + np.float32(self.bias)

    def base2_score(self, score, site):
        from mlir.dialects import arith

        return arith.addf(scaled(score, site), _f32(self.bias * LOG2_E))


VARIANTS = (*VARIANTS, ScoreBias)
'''


def test_a_variant_declared_in_the_registry_alone_reaches_the_op_the_reference_and_the_kernels(tmp_path) -> None:
    # Against the sinks a constant bias changes the softmax: the kernels (decode, causal prefill on the
    # matrix loop, split with its combine) pass the check only if their loops add it as the reference does.
    import pathlib
    import shutil
    import subprocess
    import sys

    import pagedir

    copy = tmp_path / "src" / "pagedir"
    shutil.copytree(pathlib.Path(pagedir.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "variants.py", "a") as source:
        source.write(SCORE_BIAS)
    script = f"""
import sys
import numpy as np
from pagedir import reference
from pagedir.cli import gen, opt, run
q, k, v = (np.random.default_rng(0).standard_normal((1, 2, 1, 8)).astype(np.float32) for _ in range(3))
assert not np.allclose(reference.attention(q, k, v, sinks=[0, 0], score_bias=-3.0), reference.attention(q, k, v, sinks=[0, 0]))
for flags in (["--arch", "gfx942"], ["--seq-len-q", "9", "--seq-len-k", "96", "--causal"], ["--seq-len-k", "128", "--num-splits", "3"]):
    path = "{tmp_path}/kernel.mlir"
    assert gen.main(["attention", "--num-heads-q", "4", "--num-heads-kv", "2", "--head-dim", "64", "--seq-lens",
                     "--score-bias", "-6", "--sinks", *flags, "-o", path]) == 0
    assert "score_bias = -6.0 : f32" in open(path).read()
    assert run.main(["--check", path]) == 0
text = open(path).read().replace("score_bias = -6.0", "score_bias = 0x7FC00000")
open(path, "w").write(text)
assert opt.main([path]) == 1  # the verifier's rule: NaN is refused
"""
    result = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(copy.parent)},
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": PASS (levels L0 -> L6" in result.stdout and "FAIL" not in result.stdout
    assert "score_bias must be finite, got nan" in result.stderr
