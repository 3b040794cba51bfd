"""What every part of rock-raise-attention's match shares: its failure (:class:`NoMatch`), its records
(:class:`Source`, :class:`Attention`) and the reading of linalg ops (producers, maps, iterator kinds, bodies)."""

from __future__ import annotations

from dataclasses import dataclass, field

import mlir.ir as ir



KEY_DIM = 3


class NoMatch(Exception):
    """The pattern failed here: ``op`` is where, the message says what."""

    def __init__(self, message: str, op: ir.Operation | None = None):
        super().__init__(message)
        self.op = op


@dataclass
class Source:
    """Where K or V comes from: the argument rock.attention reads, paged or dense."""

    memref: ir.Value  # dense K/V, the pointer table, or the cache pool
    page_elements: int | None = None  # pointer pages; None: dense [B, Hkv, Sk, D] or a pool
    layout: str | None = None  # a cache pool read through a block table ("nhd" or "hnd")
    table: ir.Value | None = None  # the block table, or kv_indices (csr)
    indptr: ir.Value | None = None  # csr: kv_indptr
    max_blocks: int = 0


@dataclass
class Attention:
    q: ir.Value = None
    k: Source = None
    v: Source = None
    heads_kv: int = 0
    scale: float = 1.0
    causal: bool = False
    seq_lens: ir.Value | None = None
    masked_by_len: bool = False
    causal_offset: str = ""  # "seq_len" or "Sk": what the causal bound adds to i - Sq
    csr_lengths: tuple[ir.Value, ir.Value, int] | None = None  # masks by (kv_indptr, kv_last_page_len, block size)
    window_left: int | None = None
    softcap: float | None = None
    alibi_slopes: ir.Value | None = None
    steps: list[str] = field(default_factory=list)
    rounded: set[str] = field(default_factory=set)  # element types the chain rounds to between steps (truncf)
    k_permutation: list[int] | None = None  # K is the transpose of the matched value by this (K^T folded into one)
    folded_heads: bool = False  # [B*H, S, D] operands (heads folded into the batch): H = 1, scores [N, Sq, Sk]
    blockers: list[NoMatch] = field(default_factory=list)  # every blocker found (explain=true lists them)


def producer(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def produced_by(value: ir.Value, name: str) -> ir.Operation | None:
    op = producer(value)
    return op if op is not None and op.name == name else None


def maps_of(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def kinds_of(op: ir.Operation) -> list[str]:
    return ["r" if "reduction" in str(a) else "p" for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def dims(amap: ir.AffineMap) -> list[int] | None:
    """The dims of a map of plain dimensions, else None."""
    if not all(isinstance(e, ir.AffineDimExpr) for e in amap.results):
        return None
    return [e.position for e in amap.results]


def body(op: ir.Operation) -> tuple[list[ir.Value], ir.Value, list[ir.Operation]]:
    """(block arguments, the single yielded value, the body's ops)."""
    block = op.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    return list(block.arguments), ops[-1].operands[0], ops


def through_extf(value: ir.Value) -> ir.Value:
    """The value an ``arith.extf`` widens (exact; a truncf is not looked through: it rounds)."""
    op = produced_by(value, "arith.extf")
    return op.operands[0] if op is not None else value


IDENTITY = [0, 1, 2, 3]


def identity(rank: int) -> list[int]:
    return list(range(rank))


def rank_of(value: ir.Value) -> int:
    return ir.ShapedType(value.type).rank


def expect_loops(op: ir.Operation, what: str, kinds: str, maps: list[list[int | None]]) -> None:
    """``op`` has one result, iterates as ``kinds`` (``p``/``r`` per loop) and indexes its operands
    through exactly ``maps``: the pattern reads the body as one value per element of the result, so
    a reduction loop (the result is the last step's) or a permuted map (another element's inputs)
    changes what it computes."""
    found_kinds, found_maps = "".join(kinds_of(op)), maps_of(op)
    names = {"p": "parallel", "r": "reduction"}
    if len(op.results) != 1:
        raise NoMatch(f"{what} has {len(op.results)} results, expected 1", op)
    if found_kinds != kinds:
        raise NoMatch(f"{what} iterates as [{', '.join(names[k] for k in found_kinds)}], expected "
                      f"[{', '.join(names[k] for k in kinds)}]", op)
    if [dims0(m) for m in found_maps] != maps:  # None in ``maps``: a constant 0 (a size-1 dim read at 0)
        shown = ", ".join(f"({', '.join(str(e) for e in m.results)})" for m in found_maps)
        expected = ", ".join(f"({', '.join('0' if d is None else f'd{d}' for d in m)})" for m in maps)
        raise NoMatch(f"{what} indexes its operands as [{shown}], expected [{expected}]", op)


def float_constant(value: ir.Value) -> float | None:
    """The value of a float constant, also one rounded to its use's type by ``arith.truncf`` (torch-mlir
    writes the scale as an f64 constant truncated in the body: the payload multiplies by the rounded value)."""
    cast = producer(value)
    if cast is not None and cast.name in ("arith.truncf", "arith.extf"):
        inner = float_constant(cast.operands[0])
        return None if inner is None else rounded_to(inner, str(value.type))
    op = produced_by(value, "arith.constant")
    if op is None:
        return None
    attr = op.attributes["value"]
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def rounded_to(number: float, element: str) -> float:
    import numpy as np

    from pagedir import reference

    if element == "f16":
        with np.errstate(over="ignore"):  # a constant past f16's range rounds to inf, as truncf does
            return float(np.float16(number))
    if element == "bf16":
        return float(reference.round_bf16(np.array([number], dtype=np.float32))[0])
    if element == "f32":
        return float(np.float32(number))
    return number


def dims0(amap: ir.AffineMap) -> list[int | None] | None:
    """The dims of a map of plain dimensions and constant zeros (None for a 0: a broadcast size-1 dim)."""
    found: list[int | None] = []
    for e in amap.results:
        if isinstance(e, ir.AffineDimExpr):
            found.append(e.position)
        elif isinstance(e, ir.AffineConstantExpr) and e.value == 0:
            found.append(None)
        else:
            return None
    return found


def cast_of(op: ir.Operation | None) -> tuple[ir.Value, str] | None:
    """(input, op name) of an elementwise ``linalg.generic`` (every loop parallel, identity maps) whose body
    is one ``arith.extf`` or ``arith.truncf`` of its input."""
    if op is None or op.name != "linalg.generic" or len(op.results) != 1:
        return None
    ins, _ = generic_inputs(op)
    if len(ins) != 1:
        return None
    args, yielded, ops = body(op)
    rank = len(kinds_of(op))
    if len(ops) != 2 or ops[0].name not in ("arith.extf", "arith.truncf") or ops[0].operands[0] != args[0] \
            or yielded != ops[0].results[0] or "r" in kinds_of(op) \
            or [dims(m) for m in maps_of(op)] != [list(range(rank))] * 2:
        return None
    return ins[0], ops[0].name


def through_casts(value: ir.Value, found: "Attention | None" = None) -> ir.Value:
    """``value`` before any element casts (extf: exact; truncf: a rounding step, recorded in ``found.rounded``:
    the raise computes the chain in f32, docs/compile.md "Precision")."""
    while (cast := cast_of(producer(value))) is not None:
        if cast[1] == "arith.truncf" and found is not None:
            found.rounded.add(str(ir.ShapedType(value.type).element_type))
        value = cast[0]
    return value


def generic_inputs(op: ir.Operation) -> tuple[list[ir.Value], list[ir.Value]]:
    view = op.opview
    return list(view.inputs), list(view.outputs)


def is_zero_fill(value: ir.Value) -> bool:
    fill = produced_by(value, "linalg.fill")
    return fill is not None and float_constant(fill.operands[0]) == 0.0


def describe(value: ir.Value) -> str:
    op = producer(value)
    return op.name if op is not None else f"a block argument of type {value.type}"


NEG_INF = float("-inf")


def index_dim(value: ir.Value) -> int | None:
    op = produced_by(value, "linalg.index")
    return ir.IntegerAttr(op.attributes["dim"]).value if op is not None else None


def argument_of(value: ir.Value) -> ir.Value | None:
    """The function argument a ``bufferization.to_tensor`` reads."""
    op = produced_by(value, "bufferization.to_tensor")
    return op.operands[0] if op is not None and isinstance(op.operands[0], ir.BlockArgument) else None
