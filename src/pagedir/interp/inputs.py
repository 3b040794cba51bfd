"""What a run accepts as arguments: host arrays of the argument's dtype and shape, sizes that agree.

A run refuses an argument rather than convert it by value: a uint16 array of bf16 bit patterns
given to an f16 kernel, or vLLM's 5-d key cache given where a 4-d pool is expected, would
otherwise run and compute nonsense. The rules, checked before anything is uploaded:

* dtype (:data:`ACCEPTED`): the element type's own numpy dtype; bf16 also takes uint16 bit
  patterns (and ml_dtypes ``bfloat16``), fp8 uint8 bit patterns, and both take float32
  (rounded to the nearest value of the type: what ``--outputs`` writes for them).
* shape: a memref argument takes an array of its rank whose static sizes equal the type's; a
  scalar argument takes a 0-d array, or a Python number of its kind.
* sizes (:func:`size_groups`): the ``?`` sizes the function's attention op relates are equal:
  the batch of q, the K/V tables (block table rows, ``kv_indptr`` less one, ``kv_last_page_len``,
  ``cu_seqlens_q`` less one), ``seq_lens`` and out; a lowered kernel, which no longer holds that
  op, records them in ``rock.batch_sizes`` (rock-attention-to-gridwise).

Arguments are named as ``--inputs`` names them, ``arg<i>``, with the function's own name for
them (``%seq_lens``) where the source text is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.interp.memory import DeviceArray, InterpError
from pagedir.reference import FP8_FORMATS


class InputError(InterpError):
    """An argument given to a run does not fit the function: its dtype, shape or sizes."""


#: Element type -> the numpy dtypes an argument of it takes (the first: what generated data use).
ACCEPTED = {
    "f16": ("float16",),
    "f32": ("float32",),
    "f64": ("float64",),
    "bf16": ("float32", "uint16", "bfloat16"),  # float32 rounded to nearest even; uint16 and bfloat16 as bits
    **{name: ("float32", "uint8") for name in FP8_FORMATS},  # float32 rounded; uint8 as bit patterns
    "i1": ("bool",),
    "i8": ("int8",),
    "i16": ("int16",),
    "i32": ("int32",),
    "i64": ("int64",),
    "index": ("int64",),
}


def element_name(type_: ir.Type) -> str:
    return str(type_.element_type if isinstance(type_, ir.MemRefType) else type_)


def accepted(type_: ir.Type) -> tuple[str, ...]:
    return ACCEPTED.get(element_name(type_), ())


def host_array(value: Any, type_: ir.Type) -> Any:
    """Data a case generator drew for an argument of ``type_``, in a dtype the argument accepts
    (float32 out arrays of an f16 kernel become float16, int64 ids of an i32 table int32)."""
    if not isinstance(value, np.ndarray) or not accepted(type_) or value.dtype.name in accepted(type_):
        return value
    return value.astype(accepted(type_)[0])


def argument_names(func: ir.Operation, count: int, source: str | None = None, filename: str | None = None) -> list[str]:
    """``arg<i>`` per argument, with its name in ``source`` (the text ``func`` was parsed from, as
    ``filename`` when given) when the argument's location points at one: ``arg4 (%seq_lens)``."""
    from pagedir.diagnostics import file_position

    lines = source.splitlines() if source is not None else []
    names = []
    for index, argument in enumerate(list(func.regions[0].blocks[0].arguments)[:count]):
        name = f"arg{index}"
        file, line, col = file_position(argument.location)
        if filename is not None and file != filename:
            line = None  # a location into another file
        if line is not None and col is not None and 0 < line <= len(lines):
            word = re.match(r"%([\w$.-]+)", lines[line - 1][col - 1 :])
            if word and word.group(1) != name:
                name += f" (%{word.group(1)})"
        names.append(name)
    return names


def check_dtypes(func: ir.Operation, args: list, names: list[str]) -> None:
    """Each numpy argument has a dtype its element type accepts (:data:`ACCEPTED`); a Python number is
    a scalar argument's value of its kind, within the range of an integer type."""
    arguments = list(func.regions[0].blocks[0].arguments)
    for index, value in enumerate(args):
        type_, where = arguments[index].type, arguments[index].location
        if isinstance(value, DeviceArray):
            continue
        wanted = accepted(type_)
        if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
            check_number(names[index], value, type_, where)
            continue
        dtype = np.asarray(value).dtype if isinstance(value, (np.ndarray, np.generic)) else None
        if dtype is None:
            raise InputError(f"{names[index]} is a {type(value).__name__}; the argument is {type_} "
                             f"(give a numpy array of {' or '.join(wanted)})", where)
        if dtype.name not in wanted:
            raise InputError(f"{names[index]} has dtype {dtype}; the argument is {type_}, which takes "
                             f"{' or '.join(wanted)}{dtype_note(element_name(type_))}", where)


def check_number(name: str, value: bool | int | float, type_: ir.Type, where: Any) -> None:
    """A Python number is the value of a scalar argument: a bool (or 0, 1) for i1, an int within the range
    of another integer type, an int or a float for a float type."""
    kind = type(value).__name__
    if isinstance(type_, ir.MemRefType):
        raise InputError(f"{name} is a Python {kind}; the argument is {type_} (give an array of "
                         f"{' or '.join(accepted(type_))})", where)
    element = element_name(type_)
    if element == "i1":
        fits = kind == "bool" or value in (0, 1)
    elif isinstance(type_, (ir.IntegerType, ir.IndexType)):
        dtype = np.iinfo(accepted(type_)[0])
        fits = kind == "int" and dtype.min <= value <= dtype.max
    else:
        fits = kind in ("int", "float")
    if not fits:
        raise InputError(f"{name} is the Python {kind} {value!r}, not a value of the scalar {type_}", where)


def dtype_note(element: str) -> str:
    if element == "bf16":
        return " (uint16: bf16 bit patterns; float32: rounded to bf16)"
    if element in FP8_FORMATS:
        return f" (uint8: {element} bit patterns; float32: rounded to {element})"
    return ""


def check_shapes(func: ir.Operation, args: list, names: list[str]) -> None:
    """Each array has its memref argument's rank and static sizes (a scalar argument a 0-d array), and
    the ``?`` sizes :func:`size_groups` relates agree. DeviceArrays are checked when bound (bytes)."""
    arguments = list(func.regions[0].blocks[0].arguments)
    shapes: dict[int, tuple] = {}
    for index, value in enumerate(args):
        if isinstance(value, DeviceArray) or not hasattr(value, "shape"):
            continue
        type_, shape = arguments[index].type, tuple(np.shape(value))
        if isinstance(type_, ir.MemRefType):
            sizes = ["?" if type_.is_dynamic_dim(d) else type_.shape[d] for d in range(type_.rank)]
            if len(shape) != type_.rank or any(s != "?" and s != n for s, n in zip(sizes, shape)):
                raise InputError(f"{names[index]} has shape {list(shape)}; the argument is {type_}, which takes shape "
                                 f"[{', '.join(str(s) for s in sizes)}]", arguments[index].location)
            shapes[index] = shape
        elif shape != ():
            raise InputError(f"{names[index]} has shape {list(shape)}; the argument is a scalar {type_} (give a 0-d array)",
                             arguments[index].location)
    for group in size_groups(func):
        given = [(term, shapes[term.argument][term.dim] - term.extra) for term in group.terms if term.argument in shapes]
        if not given:
            continue
        first, size = given[0]
        for term, other in given[1:]:
            if other != size:
                must = f"{group.what} + {term.extra} = {size + term.extra}" if term.extra else f"{size}"
                raise InputError(
                    f"{names[term.argument]} has shape {list(shapes[term.argument])} where {group.what} is {size} "
                    f"({names[first.argument]} has shape {list(shapes[first.argument])}): its dim {term.dim} must be {must}",
                    arguments[term.argument].location)


@dataclass(frozen=True)
class Term:
    """Dim ``dim`` of argument ``argument`` holds the size plus ``extra``."""

    argument: int
    dim: int
    extra: int = 0


@dataclass(frozen=True)
class SizeGroup:
    what: str  # "the batch"
    terms: tuple[Term, ...]  # in argument order: the first gives the size the others are held to


def size_groups(func: ir.Operation) -> list[SizeGroup]:
    """The batch of each attention op of ``func`` (L0 ``rock.attention``, L1 ``rock.gridwise_attention_accel``)
    as dims of its arguments (:func:`pagedir.dialect.ops_page_table.batch_dims`); for a lowered kernel, where
    those ops are gone, the dims its ``rock.batch_sizes`` records (``arg, dim, extra`` triples)."""
    from pagedir.dialect.ops_page_table import batch_dims
    from pagedir.passes.ir_utils import find_ops

    groups = [batch_dims(op) for op in find_ops(func, "rock.attention", "rock.gridwise_attention_accel")]
    if not groups and "rock.batch_sizes" in func.attributes:
        flat = list(ir.DenseI64ArrayAttr(func.attributes["rock.batch_sizes"]))
        groups = [[tuple(flat[i : i + 3]) for i in range(0, len(flat), 3)]]
    return [SizeGroup("the batch", tuple(Term(*dims) for dims in group)) for group in groups]


def check_inputs(func: ir.Operation, args: list, names: list[str] | None = None, exact: bool = True) -> None:
    """:class:`InputError` for an argument that does not fit ``func``: its dtype (``exact``), shape or sizes."""
    names = names or [f"arg{i}" for i in range(len(args))]
    if exact:
        check_dtypes(func, args, names)
    check_shapes(func, args, names)
