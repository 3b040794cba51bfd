"""pagedir.reference: attention against a loop version and properties; paged caches and vLLM tables."""

from __future__ import annotations

import numpy as np
import pytest

from pagedir import reference


def _qkv(rng, batch=2, heads_q=4, heads_kv=2, seq_q=3, seq_k=10, head_dim=8):
    q = rng.standard_normal((batch, heads_q, seq_q, head_dim)).astype(np.float32)
    k = rng.standard_normal((batch, heads_kv, seq_k, head_dim)).astype(np.float32)
    v = rng.standard_normal((batch, heads_kv, seq_k, head_dim)).astype(np.float32)
    return q, k, v


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("ragged", [False, True])
def test_matches_loops(causal, ragged):
    rng = np.random.default_rng(1)
    q, k, v = _qkv(rng)
    seq_lens = np.array([7, 2], dtype=np.int32) if ragged else None
    fast = reference.attention(q, k, v, seq_lens=seq_lens, causal=causal, scale=0.3)
    slow = reference.attention_loops(q, k, v, seq_lens=seq_lens, causal=causal, scale=0.3)
    assert fast.dtype == np.float32
    np.testing.assert_allclose(fast, slow, atol=2e-6)


def test_fully_masked_rows_are_zero():
    rng = np.random.default_rng(2)
    q, k, v = _qkv(rng, seq_q=4)
    # Batch 1 has one key; causal with Sq = 4 leaves rows 0..2 without keys.
    out = reference.attention(q, k, v, seq_lens=np.array([10, 1]), causal=True)
    assert np.all(out[1, :, :3] == 0)
    assert np.all(np.abs(out[1, :, 3]) > 0)
    np.testing.assert_allclose(out[1, :, 3], np.repeat(v[1, :, 0], 2, axis=0), rtol=1e-6)
    assert np.all(reference.attention(q, k, v, seq_lens=np.array([0, 0])) == 0)


@pytest.mark.parametrize("causal", [False, True])
def test_keys_past_seq_len_are_dropped_whatever_they_hold(causal):
    # Keys past seq_len are masked: NaN/Inf left in their slots must not reach the output (0 * NaN is NaN).
    rng = np.random.default_rng(9)
    q, k, v = _qkv(rng, seq_q=3, seq_k=10)
    seq_lens = np.array([7, 4])
    out = reference.attention(q, reference.fill_stale(k, seq_lens), reference.fill_stale(v, seq_lens), seq_lens=seq_lens, causal=causal)
    assert np.all(np.isfinite(out))
    for b, length in enumerate(seq_lens):
        cut = reference.attention(q[b : b + 1], k[b : b + 1, :, :length], v[b : b + 1, :, :length], causal=causal)
        np.testing.assert_allclose(out[b : b + 1], cut, atol=1e-6)


def test_fill_stale_plants_nan_and_inf_in_every_slot_past_seq_len():
    dense = np.ones((2, 2, 6, 4), dtype=np.float16)
    stale = reference.fill_stale(dense, np.array([6, 2]))
    assert stale.dtype == np.float16 and np.all(dense == 1)
    np.testing.assert_array_equal(stale[0], 1)
    np.testing.assert_array_equal(stale[1, :, :2], 1)
    past = stale[1, :, 2:]
    assert np.all(~np.isfinite(past)) and np.isnan(past).any() and np.isposinf(past).any() and np.isneginf(past).any()
    # Every key past seq_len holds NaN and both infinities among its D slots.
    assert all(np.isnan(key).any() and np.isinf(key).any() for key in past.reshape(-1, 4))


def test_causally_masked_keys_are_dropped_whatever_they_hold():
    # The last key is visible to the last query row only: NaN in its K and V must spare the other rows.
    rng = np.random.default_rng(10)
    q, k, v = _qkv(rng, seq_q=3, seq_k=10)
    seq_lens = np.array([10, 6])
    poisoned_k, poisoned_v = k.copy(), v.copy()
    for b, length in enumerate(seq_lens):
        poisoned_k[b, :, length - 1] = np.nan
        poisoned_v[b, :, length - 1] = np.inf
    out = reference.attention(q, poisoned_k, poisoned_v, seq_lens=seq_lens, causal=True)
    clean = reference.attention(q, k, v, seq_lens=seq_lens, causal=True)
    np.testing.assert_allclose(out[:, :, :-1], clean[:, :, :-1], atol=1e-6)
    assert np.all(np.isnan(out[:, :, -1]))  # the row that sees the poisoned key is poisoned, as in the loops
    assert np.all(np.isnan(reference.attention_loops(q, poisoned_k, poisoned_v, seq_lens=seq_lens, causal=True)[:, :, -1]))


def test_softmax_rows_sum_to_one():
    # With V = ones the output is the sum of the softmax weights of each row.
    rng = np.random.default_rng(3)
    q, k, _ = _qkv(rng)
    ones = np.ones_like(k)
    out = reference.attention(q, k, ones, seq_lens=np.array([5, 10]))
    np.testing.assert_allclose(out, 1.0, rtol=1e-6)


def test_key_permutation_invariance():
    rng = np.random.default_rng(4)
    q, k, v = _qkv(rng)
    order = rng.permutation(k.shape[2])
    out = reference.attention(q, k, v)
    permuted = reference.attention(q, k[:, :, order], v[:, :, order])
    np.testing.assert_allclose(out, permuted, atol=1e-6)


def test_gqa_equals_repeated_heads():
    rng = np.random.default_rng(5)
    q, k, v = _qkv(rng, heads_q=6, heads_kv=2)
    grouped = reference.attention(q, k, v, causal=True)
    repeated = reference.attention(q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1), causal=True)
    np.testing.assert_allclose(grouped, repeated, atol=0)
    # Head 2 uses kv head 0 and head 3 kv head 1.
    single = reference.attention(q[:, 3:4], k[:, 1:2], v[:, 1:2], causal=True)
    np.testing.assert_allclose(grouped[:, 3:4], single, atol=1e-6)


def test_low_precision_inputs_computed_in_f32():
    rng = np.random.default_rng(6)
    q, k, v = _qkv(rng)
    half = reference.attention(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16))
    exact = reference.attention(q.astype(np.float16).astype(np.float32), k.astype(np.float16).astype(np.float32),
                                v.astype(np.float16).astype(np.float32))
    assert half.dtype == np.float32
    np.testing.assert_array_equal(half, exact)


def test_bf16_bits_round_to_nearest_even():
    values = np.array([1.0, 1.00390625, 1.01171875, -2.5, np.inf], dtype=np.float32)
    bits = reference.bf16_bits(values)
    assert bits.dtype == np.uint16
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0); 1 + 3*2^-8 rounds up to 1 + 2^-6.
    np.testing.assert_array_equal(reference.bf16_values(bits), [1.0, 1.0, 1.015625, -2.5, np.inf])


class _Pool:
    """A stand-in device: consecutive addresses, remembers what was uploaded where."""

    def __init__(self):
        self.memory = {}
        self.next = 4096

    def upload(self, array):
        class _Page:
            pass

        page = _Page()
        page.address = self.next
        self.memory[self.next] = np.array(array)
        self.next += 4096
        return page


def _gather(pool, table, page_size, dtype):
    pages = [pool.memory[a] if a else np.zeros(page_size, dtype) for a in table[:, :, 0].ravel()]
    return np.stack(pages).reshape(table.shape[0], -1)


def test_paged_cache_layout_shuffle_and_nulls():
    rng = np.random.default_rng(7)
    dense = rng.standard_normal((2, 2, 16, 4)).astype(np.float16)
    pool = _Pool()
    cache = reference.paged_cache(pool, dense, 4, seq_lens=np.array([16, 5]), rng=rng)
    assert cache.page_size == 16 and cache.table.shape == (2, 8, 1) and cache.table.dtype == np.int64
    # Batch 1 keeps tokens 0..4 of each head: pages 0-1 (head 0) and 4-5 (head 1); the rest are null.
    assert list(cache.table[1, :, 0] != 0) == [True, True, False, False, True, True, False, False]
    assert np.all(cache.table[0] != 0)
    flat = _gather(pool, cache.table, 16, np.float16)
    live = np.array(cache.table[:, :, 0] != 0).repeat(16, axis=1)
    np.testing.assert_array_equal(flat[live], dense.reshape(2, -1)[live])
    # Shuffled: the pages of batch 0 are not at increasing addresses.
    assert list(cache.table[0, :, 0]) != sorted(cache.table[0, :, 0])


def test_paged_cache_last_page_partly_filled():
    # 6 tokens x 4 = 24 elements in pages of 16: two pages, the second holding 8 elements then zeros.
    pool = _Pool()
    dense = np.arange(1, 25, dtype=np.float32).reshape(1, 1, 6, 4)
    cache = reference.paged_cache(pool, dense, page_size=16)
    assert cache.table.shape == (1, 2, 1)
    flat = _gather(pool, cache.table, 16, np.float32)
    np.testing.assert_array_equal(flat.reshape(-1), np.concatenate([dense.reshape(-1), np.zeros(8, np.float32)]))


@pytest.mark.parametrize("layout", ["nhd", "hnd", "vllm"])
def test_vllm_block_table_to_pointer_tables(layout):
    rng = np.random.default_rng(8)
    batch, heads, head_dim, block_size, blocks_per_seq = 2, 2, 8, 4, 3
    dense_k = rng.standard_normal((batch, heads, blocks_per_seq * block_size, head_dim)).astype(np.float32)
    dense_v = rng.standard_normal(dense_k.shape).astype(np.float32)
    # Scatter the dense caches into 10 blocks through a shuffled block table.
    table = rng.permutation(10)[: batch * blocks_per_seq].reshape(batch, blocks_per_seq).astype(np.int32)
    nhd_k = np.zeros((10, block_size, heads, head_dim), np.float32)
    nhd_v = np.zeros_like(nhd_k)
    for b in range(batch):
        for i, block in enumerate(table[b]):
            tokens = slice(i * block_size, (i + 1) * block_size)
            nhd_k[block] = dense_k[b, :, tokens].transpose(1, 0, 2)
            nhd_v[block] = dense_v[b, :, tokens].transpose(1, 0, 2)
    if layout == "nhd":
        key_cache, value_cache = nhd_k, nhd_v
    elif layout == "hnd":
        key_cache, value_cache = nhd_k.transpose(0, 2, 1, 3), nhd_v.transpose(0, 2, 1, 3)
    else:
        x = 4
        key_cache = nhd_k.reshape(10, block_size, heads, head_dim // x, x).transpose(0, 2, 3, 1, 4)
        value_cache = nhd_v.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(reference.vllm_dense(key_cache, table, kind="k", layout=layout), dense_k)
    np.testing.assert_array_equal(reference.vllm_dense(value_cache, table, kind="v", layout=layout), dense_v)
    pool = _Pool()
    k, v = reference.from_vllm(pool, key_cache, value_cache, table, np.array([12, 6]), layout=layout)
    assert k.page_size == block_size * head_dim
    np.testing.assert_array_equal(_gather(pool, k.table, k.page_size, np.float32)[0], dense_k[0].ravel())
    assert np.count_nonzero(v.table[1, :, 0] == 0) == 2  # tokens 8..11 of each head in batch 1 are past 6
