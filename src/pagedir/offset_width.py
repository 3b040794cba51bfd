"""Whether a value fits 32 bits: the one rule behind every such choice of the compiler.

Each choice is asked as "can the largest value this quantity takes be held": the
largest byte offset a buffer load forms (an invalid lane's offset is num_records,
and its load reaches ``load_bytes - 1`` further), the largest byte offset of a live
page in a pool, the largest linear index of a tensor. A quantity whose largest
value fits is computed in 32 bits; otherwise in 64 (or refused where the hardware
field has 32 bits). Asking for the largest value, not for a count, keeps the
off-by-one in one place: ``n`` bytes have offsets up to ``n - 1``.

* :func:`fits_u32`: unsigned 32-bit fields and arithmetic (buffer offsets and
  num_records, page and block byte offsets, tensor byte counts);
* :func:`fits_i32`: signed 32-bit indices (linear element indices with 32-bit
  ``index``);
* :func:`offset_bits`: the width of unsigned arithmetic that computes an offset
  of at most ``largest`` without wrapping;
* :func:`records_limit`: the largest num_records that keeps every byte offset of
  a ``load_bytes`` load (the invalid lane's at num_records included) in 32 bits.
"""

from __future__ import annotations

#: Values of an unsigned 32-bit field: [0, U32_LIMIT).
U32_LIMIT = 1 << 32
#: Values of a signed 32-bit index that are offsets: [0, I32_LIMIT).
I32_LIMIT = 1 << 31


def fits_u32(largest: int) -> bool:
    """Whether every value from 0 to ``largest`` is an unsigned 32-bit value."""
    return largest < U32_LIMIT


def fits_i32(largest: int) -> bool:
    """Whether every value from 0 to ``largest`` is a non-negative signed 32-bit value."""
    return largest < I32_LIMIT


def offset_bits(largest: int) -> int:
    """32 when unsigned 32-bit arithmetic computes every offset up to ``largest`` without wrapping, else 64."""
    return 32 if fits_u32(largest) else 64


def records_limit(load_bytes: int) -> int:
    """The largest num_records for which an invalid lane's ``load_bytes`` load at num_records stays in
    32 bits: ``fits_u32(records_limit(n) + n - 1)`` holds and one more does not."""
    return U32_LIMIT - load_bytes
