"""The case of a linalg-attention payload (``rock.check = "linalg_attention"``, :mod:`pagedir.gen.linalg_attention`).

Random Q/K/V, shuffled pages, sequence lengths under which every query row sees
at least one key (a row that sees none is 0/0 in the payload). The check has no
reference of its own: the payload as written is run by the interpreter and the
raised, lowered kernel compared with it.
"""

from __future__ import annotations

import numpy as np


def check_case(func_op, rng: np.random.Generator, device):
    """Random Q/K/V (pages shuffled in memory), seq_lens under which every query row sees a key, out NaN.

    No expected output: ``pagedir-run --check`` compares the raised and lowered kernel
    with the payload as the interpreter runs it.
    """
    import mlir.ir as ir

    from pagedir.interp.launch import argument_count

    arguments = list(func_op.regions[0].blocks[0].arguments)[: argument_count(func_op)]
    types = [ir.MemRefType(a.type) for a in arguments]
    if len(types) > 4 and types[-2].rank == 1 and str(types[-2].element_type) == "f32":  # alibi_slopes before out
        from pagedir.interp.check import variant_inputs

        case = drawn_case(func_op, types[:-2] + types[-1:], rng, device)
        case.args.insert(len(case.args) - 1, variant_inputs(["alibi_slopes"], types[0].shape[1], rng)["alibi_slopes"])
        return case
    return drawn_case(func_op, types, rng, device)


def drawn_case(func_op, types: list, rng: np.random.Generator, device):
    """The case of a payload with the arguments ``types`` (alibi_slopes set aside)."""
    from pagedir import reference
    from pagedir.interp.check import dtype_of, host_values
    from pagedir.interp.memory import InterpError

    q_type, k_type, out_type = types[0], types[1], types[-1]
    if len(types) > 4 and str(types[3].element_type) == "i32" and types[3].rank == 2 or \
            len(types) == 7 and types[3].rank == types[4].rank == 1 or k_type.rank == 5:
        return serving_case(func_op, types, rng)
    has_lens = len(types) == 5
    batch, heads_q, seq_q, head_dim = q_type.shape
    name = str(q_type.element_type)
    paged = str(k_type.element_type) == "i64"
    if paged:
        heads_kv, seq_k, page_elements = paged_shape(func_op, k_type, head_dim)
        if heads_kv is None:
            raise InterpError("rock.check = \"linalg_attention\": cannot tell the pages' shape from the gather",
                              func_op.location)
    else:
        _, heads_kv, seq_k, _ = k_type.shape
    q = host_values(rng.standard_normal((batch, heads_q, seq_q, head_dim)), name)
    k = host_values(rng.standard_normal((batch, heads_kv, seq_k, head_dim)), name)
    v = host_values(rng.standard_normal((batch, heads_kv, seq_k, head_dim)), name)
    kept = []
    if paged:
        caches = [reference.paged_cache(device, x, page_size=page_elements, rng=rng, dtype=dtype_of(name)) for x in (k, v)]
        k, v = caches[0].table, caches[1].table
        kept = caches[0].pages + caches[1].pages
    call = [q, k, v]
    if has_lens:  # causal: at least Sq keys, so that the first query row sees one
        call.append(rng.integers(min(seq_q, seq_k), seq_k + 1, size=batch).astype(np.int32))
    call.append(np.full(tuple(out_type.shape), np.nan, dtype=np.float32))
    return _case(call, kept)


def serving_case(func_op, types: list, rng: np.random.Generator):
    """Random Q, pools of random data (finite everywhere: the payload multiplies the values of masked
    keys by 0), shuffled block ids with sequence 1's first block shared with sequence 0's, lengths that
    end inside a block and under which every query row sees a key; as a block table or a CSR table."""
    from pagedir.interp.check import host_values
    from pagedir.interp.memory import InterpError

    q_type, pool_type, out_type = types[0], types[1], types[-1]
    batch, _, seq_q, head_dim = q_type.shape
    name = str(q_type.element_type)
    axis = stacked_axis(func_op) if pool_type.rank == 5 else None  # one kv_cache tensor: a table comes one earlier
    if pool_type.rank == 5 and axis is None:
        raise InterpError("rock.check = \"linalg_attention\": cannot tell the stacked axis of the kv cache from the gather",
                          func_op.location)
    pool_shape = list(pool_type.shape)
    if axis is not None:
        del pool_shape[axis]
        types = [q_type, None, *types[1:]]  # the tables where two pools would put them
    num_blocks = pool_shape[0]
    csr = len(types) == 7
    slots = types[4].shape[0] // batch if csr else types[3].shape[1]
    block = block_size(func_op, pool_shape, slots, batch, head_dim)
    if block is None:
        raise InterpError("rock.check = \"linalg_attention\": cannot tell the block size from the gather", func_op.location)
    seq_k = slots * block
    lens = rng.integers(min(seq_q, seq_k), seq_k + 1, size=batch).astype(np.int32)
    if num_blocks >= batch * slots:
        ids = rng.permutation(num_blocks)[: batch * slots].reshape(batch, slots).astype(np.int32)
    else:  # a pool smaller than the table: sequences share blocks
        ids = rng.integers(0, num_blocks, size=(batch, slots)).astype(np.int32)
    if batch > 1:
        ids[1, 0] = ids[0, 0]  # prefix sharing: two sequences read one block
    if axis is None:
        pools = [host_values(rng.standard_normal(tuple(pool_type.shape)), name) for _ in range(2)]
    else:
        pools = [host_values(rng.standard_normal(tuple(pool_type.shape)), name)]
    q = host_values(rng.standard_normal(tuple(q_type.shape)), name)
    out = np.full(tuple(out_type.shape), np.nan, dtype=np.float32)
    if not csr:
        return _case([q, *pools, ids, lens, out], [])
    from pagedir import reference

    indptr, indices, last = reference.csr_from_block_table(ids, lens, block, nnz=types[4].shape[0], rng=rng)
    return _case([q, *pools, indptr, indices, last, out], [])


def stacked_axis(func_op) -> int | None:
    """The stacked axis (0 or 1) of a 5-d kv_cache: where the gathers' ``tensor.extract`` of it has a constant index."""
    from pagedir.passes.ir_utils import find_ops

    for op in find_ops(func_op, "tensor.extract"):
        indices = list(op.operands)[1:]
        if len(indices) == 5:
            for axis in (0, 1):
                owner = indices[axis].owner
                if hasattr(owner, "name") and owner.name == "arith.constant":
                    return axis
    return None


def block_size(func_op, pool_shape, slots: int, batch: int, head_dim: int) -> int | None:
    """Tokens per block: the pool dim (1 in nhd, 2 in hnd) that, times the slots, is the key dim of the
    [B, Hkv, Sk, D] tensor the gather is reshaped to; the other pool dim is its Hkv."""
    from pagedir.passes.ir_utils import find_ops

    outer, inner = pool_shape[1], pool_shape[2]
    for op in find_ops(func_op, "tensor.collapse_shape", "linalg.transpose"):
        shape = list(op.results[0].type.shape)
        if len(shape) != 4 or shape[0] != batch or shape[3] != head_dim:
            continue
        for block, heads in ((outer, inner), (inner, outer)):
            if shape[1:3] == [heads, slots * block]:
                return block
    return None


def _case(call: list, kept: list):
    from pagedir.interp.check import CheckCase

    return CheckCase(args=call, keep_alive=kept)


def paged_shape(func_op, table_type, head_dim: int) -> tuple[int | None, int, int]:
    """(Hkv, Sk, elements per page) from the gather's ``tensor.expand_shape`` to [B, Hkv, Sk, D]."""
    from pagedir.passes.ir_utils import find_ops

    pages = table_type.shape[1]
    for expand in find_ops(func_op, "tensor.expand_shape"):
        shape = list(expand.results[0].type.shape)
        source = list(expand.operands[0].type.shape)
        if len(shape) == 4 and len(source) == 2 and shape[3] == head_dim and source[1] % pages == 0:
            return shape[1], shape[2], source[1] // pages
    return None, 0, 0
