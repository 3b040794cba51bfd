"""Checks of pagedir-gen's options shared by the generators: each refusal names the value and the limit.

A generated kernel must compile and run as written, so the options are held to
what the lowering can express:

* sizes are positive, and every tensor the kernel takes or views holds at most
  ``2**31 - 1`` elements and fewer than ``2**32`` bytes: its indices, workgroup
  and thread ids are 32-bit values and a buffer descriptor's range is a 32-bit
  byte count (``num_records``);
* names are MLIR bare identifiers (``[A-Za-z_][A-Za-z0-9_$.]*``), so that
  ``@name`` parses;
* ``--arch`` names a known chip (:func:`pagedir.arch.get_chip`).

Errors are :class:`pagedir.errors.UserError` (``pagedir-gen: error: ...``, exit code 1).
"""

from __future__ import annotations

import argparse
import re

from pagedir.arch import MAX_WORKGROUP_SIZE, Chip, UnknownChipError, get_chip
from pagedir.errors import UserError
from pagedir.offset_width import I32_LIMIT, U32_LIMIT, fits_i32, fits_u32

#: Elements a tensor may hold: its linear index is a signed 32-bit value.
MAX_ELEMENTS = I32_LIMIT - 1
#: Bytes a tensor may span: a buffer descriptor's num_records is 32 bits.
MAX_BYTES = U32_LIMIT - 1
#: Threads per workgroup on every supported chip.
MAX_BLOCK_SIZE = MAX_WORKGROUP_SIZE
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4, "i64": 8}
BARE_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def option(name: str) -> str:
    return "--" + name.replace("_", "-")


def positive_sizes(args: argparse.Namespace, names: tuple[str, ...]) -> None:
    """Each size is at least 1 and at most MAX_ELEMENTS (no tensor could hold more)."""
    for name in names:
        value = getattr(args, name)
        if value <= 0:
            raise UserError(f"{option(name)} must be positive, got {value}")
        if not fits_i32(value):
            raise UserError(f"{option(name)} {value} exceeds the 32-bit index limit ({MAX_ELEMENTS})")


def tensor_fits(what: str, shape: list[int], dtype: str) -> None:
    """``shape`` of ``dtype`` within the 32-bit element and byte limits."""
    elements = 1
    for extent in shape:
        elements *= extent
    nbytes = elements * ELEMENT_BYTES[dtype]
    if not fits_i32(elements) or not fits_u32(nbytes):
        dims = "x".join(str(extent) for extent in shape)
        raise UserError(
            f"{what} {dims}x{dtype} holds {elements} elements ({nbytes} bytes); a kernel tensor is limited to "
            f"{MAX_ELEMENTS} elements and {MAX_BYTES} bytes (32-bit indices and buffer ranges)"
        )


def symbol(value: str, flag: str = "--name") -> None:
    if not BARE_IDENTIFIER.fullmatch(value):
        raise UserError(f"{flag} {value!r} is not a valid symbol name: use letters, digits, '_', '$' or '.', "
                        "not starting with a digit")


def chip(target: str) -> Chip:
    if not target.isprintable() or '"' in target or "\\" in target:  # it becomes an MLIR string literal
        raise UserError(f"--arch {target!r} holds a quote, a backslash or an unprintable character")
    try:
        return get_chip(target)
    except UnknownChipError as err:
        raise UserError(f"--arch: {err}") from None


def block_size(value: int) -> None:
    if value > MAX_BLOCK_SIZE:
        raise UserError(f"--block-size {value} exceeds the hardware limit of {MAX_BLOCK_SIZE} threads per workgroup")


def f32_literal(value: float, what: str = "value") -> str:
    """``value`` rounded to f32, as an MLIR float literal that reads back as exactly that f32.

    MLIR's literal needs a decimal point (``1e-30`` does not parse) and goes through a double
    before f32: the shortest f32 spelling is kept only when that double rounds back to the same
    f32, else the f32's exact double spelling is printed. ``what`` names the value in the refusal
    of a NaN, an infinity or a value beyond the f32 range.
    """
    import numpy as np  # here, not at import: keeps --help light

    with np.errstate(over="ignore"):
        rounded = np.float32(value)
    if not np.isfinite(rounded):
        raise UserError(f"{what} {value!r} is not a finite f32 value (|x| <= {float(np.finfo(np.float32).max)!r})")
    text = str(rounded)
    if np.float32(float(text)) != rounded:  # a double rounding away from the f32: spell it exactly
        text = repr(float(rounded))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def compiler_accepts(module, arch: str) -> None:
    """Each rock.attention of ``module`` (parsed, in its context) as rock-attention-to-gridwise takes it for
    ``arch``: what that pass would refuse (``--num-splits`` beyond the KV tiles, ...) is refused here, for
    the same reason, rather than generated."""
    from pagedir.passes.attention_to_gridwise import AttentionToGridwiseOptions, plan_attention
    from pagedir.passes.ir_utils import find_ops

    for op in find_ops(module.operation, "rock.attention"):
        errors, _, _ = plan_attention(op.opview, get_chip(arch), AttentionToGridwiseOptions(arch=arch))
        if errors:
            raise UserError(f"the compiler would refuse this kernel: {'; '.join(errors)}")
