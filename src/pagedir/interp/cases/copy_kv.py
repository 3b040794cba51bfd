"""The case of a copy-kv kernel (``rock.check = "copy_kv"``, :mod:`pagedir.gen.copy_kv`):
build the cache, scatter its pages, compare ``out``.
"""

from __future__ import annotations

import numpy as np


def kernel_shapes(func_op) -> dict[str, object]:
    """B, H, S, D, pages per batch, page elements and the element type name, read from the kernel."""
    import mlir.ir as ir

    from pagedir.interp.launch import argument_count

    # A gpu.func's entry block also holds its workgroup and private buffers after the arguments.
    arguments = list(func_op.regions[0].blocks[0].arguments)[: argument_count(func_op)]
    table, out = arguments[0].type, arguments[-1].type
    deref = None
    for op in func_op.regions[0].blocks[0].operations:
        if op.operation.name == "rock.deref":
            deref = op.operation
    page = ir.MemRefType(deref.results[0].type).shape[2] if deref is not None else None
    b, h, s, d = out.shape
    return {
        "batch": b,
        "heads": h,
        "seq_len": s,
        "head_dim": d,
        "pages": table.shape[1],
        "page": page if page is not None else h * s * d // table.shape[1],
        "dtype": str(out.element_type),
        "seq_lens": len(arguments) == 3,
    }


def reference(dense: np.ndarray, seq_lens: np.ndarray | None, null_tokens: np.ndarray) -> np.ndarray:
    """out[b, h, s, :] = dense[b, h, s, :], zero past seq_lens[b] and where the page is null."""
    seq_len = dense.shape[2]
    expected = dense.copy()
    expected[null_tokens] = 0
    if seq_lens is not None:
        live = np.arange(seq_len)[None, :] < seq_lens[:, None]
        expected *= live[:, None, :, None]
    return expected


def check_case(func_op, rng: np.random.Generator, device):
    """Inputs (a shuffled set of pages, random seq_lens with null pages past them) and the expected out."""
    from pagedir.interp.check import CheckCase

    shape = kernel_shapes(func_op)
    b, h, s, d = shape["batch"], shape["heads"], shape["seq_len"], shape["head_dim"]
    pages, page = shape["pages"], shape["page"]
    dense = rounded(rng.standard_normal((b, h, s, d)).astype(np.float32), shape["dtype"])
    seq_lens = rng.integers(1, s + 1, size=b).astype(np.int32) if shape["seq_lens"] else None
    # A page is unused when every token it holds is past the sequence: its pointer is null.
    elements = np.arange(pages * page)
    tokens = np.where(elements < h * s * d, elements // d % s, s)  # past the cache (a partly filled last page): none
    lowest_token = tokens.reshape(pages, page).min(axis=1)
    null = np.zeros((b, pages), dtype=bool)
    if seq_lens is not None:
        null = lowest_token[None, :] >= seq_lens[:, None]
    # a partly filled last page: NaN past the cache (the kernel must not copy it)
    flat = np.concatenate([dense.reshape(b, -1), np.full((b, pages * page - h * s * d), np.nan, np.float32)], axis=1)
    table, kept = scatter_pages(flat.reshape(b, pages, page), null, shape["dtype"], rng, device)
    null_tokens = np.repeat(null, page, axis=1)[:, : h * s * d].reshape(b, h, s, d)
    expected = reference(dense, seq_lens, null_tokens)
    out = np.zeros((b, h, s, d), dtype=np.float32)
    args = [table] + ([seq_lens] if seq_lens is not None else []) + [out]
    return CheckCase(args=args, expected={len(args) - 1: expected}, keep_alive=kept)


def scatter_pages(pages: np.ndarray, null: np.ndarray, dtype: str, rng: np.random.Generator, device):
    """Upload each non-null page [b, p] on its own, in a random order; (page table of addresses, buffers)."""
    batch, count, _ = pages.shape
    table = np.zeros((batch, count, 1), dtype=np.int64)
    kept = []
    for slot in rng.permutation(batch * count):
        b, p = divmod(int(slot), count)
        if null[b, p]:
            continue
        buffer = device.upload(storage(pages[b, p], dtype))
        kept.append(buffer)
        table[b, p, 0] = buffer.address
    return table, kept


def rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    """f32 values rounded to ``dtype`` (still f32)."""
    if dtype == "f16":
        return values.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        return bf16_values(bf16_bits(values))
    return values.astype(np.float32)


def storage(values: np.ndarray, dtype: str) -> np.ndarray:
    """How ``dtype`` elements lie in memory: f16/f32 arrays, bf16 as uint16 bit patterns."""
    if dtype == "bf16":
        return bf16_bits(values)
    return np.ascontiguousarray(values.astype(np.float16 if dtype == "f16" else np.float32))


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round f32 to the nearest bf16 (ties to even); the upper 16 bits."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)
