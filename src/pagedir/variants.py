"""The score variants of ``rock.attention``, each declared once: which keys a query sees (causal,
sliding window, seq_len), the soft-cap, the ALiBi bias and the attention sinks.

Each variant (:data:`VARIANTS`, a :class:`Variant` subclass) owns what it adds to the op: its attributes
and operands (declared here, taken into rock.attention and rock.gridwise_attention_accel, carried from
one to the other by name), their verifier rules, pagedir-gen's flags and the values they write, the data
a check draws for its operands, its formula in numpy (the reference, and so the interpreter's
``rock.attention``) and in IR (the VALU and matrix loops' scores, the epilogue and the split-KV combine);
where rock-raise-attention recognises it in a linalg program, also the form it expects. A new variant is a
class here, its tests and a line in :data:`VARIANTS` (and docs/rock.md regenerated: the op's tables come
from the declarations). ``causal`` and ``scale`` are the op's own attributes
(the kernel's tiling depends on them); their formulas are here too (:class:`KeyRange`, :func:`score_scale`).

Query row ``i`` of ``Sq`` in a sequence of ``seq_len`` keys sits at the absolute position
``i_pos = i + seq_len - Sq`` (the queries are the sequence's last ``Sq`` tokens). The IR forms
take positions and keys in any one frame (absolute, or relative to a tile: both shifted alike).
The kernel computes scores in base 2: ``log2(e)`` is folded into its scale.

This module is below everything else of pagedir. It imports numpy and the MLIR bindings only in the
forms that use them: pagedir-gen's flags and checks (and so a runtime launching a cached kernel) load
neither.
"""

from __future__ import annotations

import argparse
import math
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    import mlir.ir as ir
    import numpy as np

LOG2_E = 1.4426950408889634
#: The largest f32 and the smallest normal one.
F32_MAX = 3.4028234663852886e38
F32_MIN_NORMAL = 1.1754943508222875e-38


def _index(value: int) -> ir.Value:
    import mlir.ir as ir
    from mlir.dialects import arith

    return arith.constant(ir.IndexType.get(), value)


def _f32(value: float) -> ir.Value:
    import mlir.ir as ir
    from mlir.dialects import arith

    return arith.constant(ir.F32Type.get(), value)


def _clamped_difference(value: ir.Value, subtrahend: int) -> ir.Value:
    """``max(0, value - subtrahend)`` of an unsigned index, without going below zero."""
    from mlir.dialects import arith

    enough = arith.cmpi(arith.CmpIPredicate.uge, value, _index(subtrahend))
    return arith.select(enough, arith.subi(value, _index(subtrahend)), _index(0))


def score_scale(scale: float | None, head_dim: int) -> float:
    """The scale of ``q.k`` (attribute ``scale``): by default ``1 / sqrt(D)``."""
    return 1.0 / math.sqrt(head_dim) if scale is None else scale


def query_position(i, seq_len, seq_q: int):
    """``i_pos = i + seq_len - Sq``: numpy (ints) or IR (index values; signed, negative when the
    query is before the sequence's first key)."""
    if isinstance(i, numbers.Integral):
        return i + seq_len - seq_q
    from mlir.dialects import arith

    return arith.subi(arith.addi(i, seq_len), _index(seq_q))


# ----------------------------------------------------------------------------
# What a variant declares, and what the loops give its IR form


@dataclass(frozen=True)
class Declared:
    """An attribute or an operand a variant adds to rock.attention (and rock.gridwise_attention_accel).
    ``kind``: an attribute's (``i64``, ``f32``); every variant operand is ``memref<Hq x f32>``, one value
    per query head. ``flag``: the pagedir-gen flag writing it."""

    name: str
    kind: str
    doc: str
    flag: str


class ScoreSite(Protocol):
    """What a loop gives a variant's IR form about one score (or, in the epilogue, one output row)."""

    dot: ir.Value  # Q[row] . K[key], unscaled
    scale: float  # the score scale times log2(e)

    def head_value(self, operand: ir.Value) -> ir.Value:
        """The f32 element of the per-head ``operand`` for the row's query head."""

    def key(self) -> ir.Value:
        """The key, in the frame of :meth:`position`."""

    def position(self) -> ir.Value:
        """The row's query position ``i_pos``, in the frame of :meth:`key` (signed)."""


class Variant:
    """A score variant, declared once. An instance is the variant as one op (or one call of the
    reference) has it: :meth:`of` reads it from the values of its attributes and operands by name
    (numbers and numpy arrays for the reference, attribute values and IR values for the kernel), its
    fields (a frozen dataclass) those values in the order it declares them."""

    attributes: ClassVar[tuple[Declared, ...]] = ()
    operands: ClassVar[tuple[Declared, ...]] = ()  # memref<Hq x f32> each
    #: Whether it acts in the epilogue (:meth:`join`): a split-KV combine kernel then reads its operands.
    joins: ClassVar[bool] = False

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(d.name for d in cls.attributes + cls.operands)

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Variant | None:
        """The variant given ``values`` (its attributes' and operands' values by name; absent or None:
        not given), or None where it is off."""
        given = [values.get(name) for name in cls.names()]
        return None if all(value is None for value in given) else cls(*given)

    # --- rock.attention's verifier ------------------------------------------------------

    @classmethod
    def verify(cls, values: Mapping[str, Any]) -> Iterator[str]:
        """Messages for attribute values out of range (the operands' types are checked by the op)."""
        return iter(())

    # --- pagedir-gen ------------------------------------------------------------------

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Its flags."""

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> dict[str, Any]:
        """Its attributes' values (None: not written) and whether each operand is taken, by name."""
        return {}

    @classmethod
    def check_flags(cls, args: argparse.Namespace) -> str | None:
        """Why the flags' values are refused, or None."""
        return None

    # --- the data a check draws ---------------------------------------------------------

    @staticmethod
    def draw(operand: str, heads_q: int, rng: np.random.Generator) -> np.ndarray:
        """Operand ``operand`` (``[Hq]`` float32) for a check, drawn as models have it."""
        raise NotImplementedError(operand)

    # --- numpy (the reference): one query row, its visible keys first..end-1 --------------

    def scores(self, scores: np.ndarray, first: int, end: int, position: int) -> np.ndarray:
        """``[Hq, end - first]`` float32 scores (scaled, and modified by the variants before) modified."""
        return scores

    def row_max(self, top: np.ndarray) -> np.ndarray:
        """The rows' maxima ``[Hq]`` the softmax subtracts."""
        return top

    def total(self, total: np.ndarray, top: np.ndarray) -> np.ndarray:
        """The rows' denominators (relative to ``exp(top)``)."""
        return total

    # --- IR (the loops and the combine) ---------------------------------------------------

    def base2_score(self, score: ir.Value | None, site: ScoreSite) -> ir.Value | None:
        """The base-2 score modified (``score`` None: not scaled yet, :func:`scaled`)."""
        return score

    def join(self, acc: ir.Value, running_max: ir.Value, total: ir.Value, site: ScoreSite) -> tuple[ir.Value, ir.Value]:
        """The epilogue of a row (``running_max`` base 2): (acc, total) before the division."""
        return acc, total


def scaled(score: ir.Value | None, site: ScoreSite) -> ir.Value:
    """``score``, or the plain base-2 score ``dot * scale`` where no variant made it yet."""
    from mlir.dialects import arith

    return arith.mulf(site.dot, _f32(site.scale)) if score is None else score


# ----------------------------------------------------------------------------
# Which keys a query sees


@dataclass(frozen=True)
class KeyRange:
    """Which keys query position ``i_pos`` sees: ``j < seq_len``; ``causal``: ``j <= i_pos``;
    ``window_left`` W: ``j >= i_pos - W``. The keys seen are a range ``[first, end)``."""

    causal: bool = False
    window_left: int | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> KeyRange:
        return cls(bool(values.get("causal")), values.get("window_left"))

    @property
    def hides_keys(self) -> bool:
        """Whether some key before seq_len is hidden from some query."""
        return self.causal or self.window_left is not None

    # --- numpy -----------------------------------------------------------------------

    def visible(self, position: int, seq_len: int) -> tuple[int, int]:
        """``(first, end)`` of the keys position ``position`` sees (empty when ``end <= first``)."""
        first = 0 if self.window_left is None else max(0, position - self.window_left)
        end = min(seq_len, position + 1) if self.causal else seq_len
        return first, end

    # --- IR ----------------------------------------------------------------------------

    # ``position`` sees keys ``first_key <= key <= last_key`` besides seq_len, both in its frame (signed;
    # None where the side is open). The loops compare their keys with them: a hidden key is skipped.

    def last_key(self, position: ir.Value) -> ir.Value | None:
        """``position`` itself when causal."""
        return position if self.causal else None

    def first_key(self, position: ir.Value) -> ir.Value | None:
        """``position - W`` with a window (may be negative)."""
        return self.window_first(position) if self.window_left is not None else None

    def window_first(self, position: ir.Value) -> ir.Value:
        from mlir.dialects import arith

        return arith.subi(position, _index(self.window_left))

    @staticmethod
    def before_end(key: ir.Value, seq_len: ir.Value) -> ir.Value:
        """``key < seq_len`` (absolute key)."""
        from mlir.dialects import arith

        return arith.cmpi(arith.CmpIPredicate.ult, key, seq_len)

    def causal_end(self, i: ir.Value, seq_len: ir.Value, seq_q: int) -> ir.Value:
        """``max(0, i_pos + 1)``: the end of the keys row ``i`` sees when causal (unsigned)."""
        from mlir.dialects import arith

        return _clamped_difference(arith.addi(arith.addi(i, seq_len), _index(1)), seq_q)

    def first_in_window(self, i: ir.Value, seq_len: ir.Value, seq_q: int) -> ir.Value:
        """``max(0, i_pos - W)``: the first key row ``i`` sees in its window (unsigned)."""
        from mlir.dialects import arith

        return _clamped_difference(arith.addi(i, seq_len), seq_q + self.window_left)

    # --- linear forms ------------------------------------------------------------------
    # The linalg raise reads a mask's conditions as linear forms ``f <= 0`` of the query row ``i``, the
    # key ``j``, the sequence length ``len`` and ``1`` (dicts of coefficients, zeros left out); a
    # program without a length read places its queries against the capacity Sk instead.

    @staticmethod
    def position_form(seq_q: int, seq_k: int | None) -> dict[str, int]:
        """``i_pos``: ``i + len - Sq``, or ``i + Sk - Sq`` (``seq_k`` given: no length read)."""
        return {"i": 1, "len": 1, "1": -seq_q} if seq_k is None else {"i": 1, "1": seq_k - seq_q}

    @staticmethod
    def causal_form(seq_q: int, seq_k: int | None) -> dict[str, int]:
        """The causal mask ``j - i_pos <= 0``."""
        form = {"j": 1, **{k: -c for k, c in KeyRange.position_form(seq_q, seq_k).items()}}
        return {k: c for k, c in form.items() if c}

    @staticmethod
    def window_of(form: dict[str, int], seq_q: int, seq_k: int | None) -> int:
        """W of the window mask ``i_pos - W - j <= 0`` given as ``form`` (its ``i``, ``j`` and ``len``
        terms already checked)."""
        return KeyRange.position_form(seq_q, seq_k)["1"] - form.get("1", 0)


# ----------------------------------------------------------------------------
# The variants


#: The largest window_left: past any sequence (index arithmetic on it stays far from overflow).
MAX_WINDOW = 2**31 - 1


@dataclass(frozen=True)
class Window(Variant):
    """The sliding window (attribute ``window_left`` W): query position ``i_pos`` sees keys ``j >= i_pos -
    W``. Its formula is :class:`KeyRange`'s (the loops skip the tiles wholly before the window)."""

    window_left: int

    attributes = (Declared("window_left", "i64", "sliding window: query at absolute position i_pos sees keys "
                           "j >= i_pos - window_left", "--window"),)

    @classmethod
    def verify(cls, values: Mapping[str, Any]) -> Iterator[str]:
        window = values.get("window_left")
        if window is not None and not 0 <= window <= MAX_WINDOW:
            yield f"window_left must be between 0 and {MAX_WINDOW}, got {window}"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--window", type=int, default=None, metavar="N",
                            help="sliding window: a query at absolute position i sees keys j >= i - N (window_left)")

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> dict[str, Any]:
        return {"window_left": args.window}

    @classmethod
    def check_flags(cls, args: argparse.Namespace) -> str | None:
        if args.window is not None and not 0 <= args.window <= MAX_WINDOW:
            return f"--window must be between 0 and {MAX_WINDOW} (keys before the query position it keeps), got {args.window}"
        return None


#: The largest softcap: the kernel's base-2 scores are softcap * log2(e) * tanh(..), a finite f32.
MAX_SOFTCAP = F32_MAX / LOG2_E


def softcap_value(text: str) -> float:
    """--softcap: a positive normal f32 value, at most MAX_SOFTCAP."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not F32_MIN_NORMAL <= value <= MAX_SOFTCAP:  # NaN fails every comparison
        raise argparse.ArgumentTypeError(f"{text} is not a soft-cap: a finite positive f32 value "
                                         f"({F32_MIN_NORMAL!r} .. {MAX_SOFTCAP:.6g})")
    return value


@dataclass(frozen=True)
class Softcap(Variant):
    """The soft-cap (attribute ``softcap``) of the scaled score: ``s = cap * tanh(s / cap)``."""

    cap: float

    attributes = (Declared("softcap", "f32", "logits soft-cap: s = softcap * tanh(s / softcap) after the scale",
                           "--softcap"),)

    @classmethod
    def verify(cls, values: Mapping[str, Any]) -> Iterator[str]:
        softcap = values.get("softcap")
        if softcap is not None and not 0 < softcap <= MAX_SOFTCAP:  # NaN fails too
            yield f"softcap must be a finite value > 0 and at most {MAX_SOFTCAP:.6g}, got {softcap}"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--softcap", type=softcap_value, default=None, metavar="X",
                            help="logits soft-cap: score = X * tanh(score / X) after the scale (a finite f32 > 0)")

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> dict[str, Any]:
        return {"softcap": args.softcap}

    def capped(self, scores: np.ndarray) -> np.ndarray:
        """numpy: float32 scores capped."""
        import numpy as np

        cap = np.float32(self.cap)
        return cap * np.tanh(scores / cap)

    def scores(self, scores: np.ndarray, first: int, end: int, position: int) -> np.ndarray:
        return self.capped(scores)

    def base2_score(self, score: ir.Value | None, site: ScoreSite) -> ir.Value:
        """IR: the base-2 capped score of the dot product (the scale includes log2(e): it is taken out
        inside tanh and put back outside); a score made by a variant before is capped in base 2."""
        from mlir.dialects import arith
        from mlir.dialects import math as mlir_math

        if score is None:
            score = mlir_math.tanh(arith.mulf(site.dot, _f32(site.scale / LOG2_E / self.cap)))
        else:
            score = mlir_math.tanh(arith.mulf(score, _f32(1.0 / LOG2_E / self.cap)))
        return arith.mulf(score, _f32(self.cap * LOG2_E))

    @staticmethod
    def is_capped(outer: float, inner: str, by: float) -> bool:
        """Whether ``outer * tanh(s <inner> by)`` (``inner`` an arith op name) is the soft-cap with
        ``cap = outer``: ``s / cap``, or ``s * (1 / cap)`` up to f32 rounding (the linalg raise)."""
        return inner == "arith.divf" and by == outer or inner == "arith.mulf" and abs(by * outer - 1.0) <= 1e-6


@dataclass(frozen=True)
class Alibi(Variant):
    """The ALiBi bias (operand ``alibi_slopes``, ``[Hq]``): ``s += slope[h] * (j - i_pos)``, after the
    soft-cap."""

    slopes: Any  # [Hq] float32 values (numpy) or the memref (IR)

    operands = (Declared("alibi_slopes", "per_head",
                         "memref<Hq x f32>: ALiBi, score of q head h for key j += slope[h] * (j - i_pos)", "--alibi"),)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--alibi", action="store_true",
                            help="take alibi_slopes (memref<Hq x f32>): score += slope[h] * (key - query position)")

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> dict[str, Any]:
        return {"alibi_slopes": args.alibi}

    @staticmethod
    def draw(operand: str, heads_q: int, rng: np.random.Generator) -> np.ndarray:
        """Slopes as models use them: 2^-x, x in [0, 8)."""
        import numpy as np

        return np.exp2(-rng.uniform(0.0, 8.0, heads_q)).astype(np.float32)

    @staticmethod
    def bias(slopes: np.ndarray, first: int, end: int, position: int) -> np.ndarray:
        """numpy: ``[Hq, end - first]`` float32 biases of keys ``first..end-1`` for ``position``."""
        import numpy as np

        distance = np.arange(first, end, dtype=np.float32) - np.float32(position)
        return slopes[:, None] * distance[None, :]

    def scores(self, scores: np.ndarray, first: int, end: int, position: int) -> np.ndarray:
        import numpy as np

        return scores + self.bias(np.asarray(self.slopes, dtype=np.float32), first, end, position)

    def base2_score(self, score: ir.Value | None, site: ScoreSite) -> ir.Value:
        score = scaled(score, site)
        slope = site.head_value(self.slopes)
        return self.base2_biased(score, slope, site.key(), site.position())

    @staticmethod
    def base2_biased(score: ir.Value, slope: ir.Value, key: ir.Value, position: ir.Value) -> ir.Value:
        """IR: the base-2 ``score`` plus the bias of ``key`` for ``position`` (index values in one
        frame; ``slope`` the f32 slope of the row's head)."""
        import mlir.ir as ir
        from mlir.dialects import arith

        f32 = ir.F32Type.get()
        distance = arith.sitofp(f32, arith.index_cast(ir.IntegerType.get_signless(32), arith.subi(key, position)))
        return arith.addf(score, arith.mulf(arith.mulf(slope, _f32(LOG2_E)), distance))


@dataclass(frozen=True)
class Sinks(Variant):
    """Attention sinks (operand ``sinks``, ``[Hq]`` logits): a head's sink joins its softmax
    denominator and no value, ``exp(s_j) / (sum_j exp(s_j) + exp(sink))``. A row without visible
    keys still gives zeros."""

    sink: Any  # [Hq] float32 logits (numpy) or the memref (IR)

    operands = (Declared("sinks", "per_head",
                         "memref<Hq x f32>: per q head a logit joining the softmax denominator, attached to no value",
                         "--sinks"),)
    joins = True

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sinks", action="store_true",
                            help="take sinks (memref<Hq x f32>): a logit per query head joining the softmax denominator")

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> dict[str, Any]:
        return {"sinks": args.sinks}

    @staticmethod
    def draw(operand: str, heads_q: int, rng: np.random.Generator) -> np.ndarray:
        """Sink logits around the scores' size."""
        import numpy as np

        return rng.normal(0.0, 2.0, heads_q).astype(np.float32)

    def row_max(self, top: np.ndarray) -> np.ndarray:
        """numpy: the rows' max over their scores and their sink."""
        import numpy as np

        return np.maximum(top, np.asarray(self.sink, dtype=np.float32))

    def total(self, total: np.ndarray, top: np.ndarray) -> np.ndarray:
        """numpy: the rows' denominators (relative to ``exp(top)``) with the sink's weight."""
        import numpy as np

        return total + np.exp(np.asarray(self.sink, dtype=np.float32) - top)

    def join(self, acc: ir.Value, running_max: ir.Value, total: ir.Value, site: ScoreSite) -> tuple[ir.Value, ir.Value]:
        """IR: (acc, total) rescaled to the max of ``running_max`` and the sink logit (natural units,
        made base-2 here), with the sink's weight added to the total. A running max of -inf (no key
        seen) gives alpha 0, total = 1 and acc stays 0."""
        import mlir.ir as ir
        from mlir.dialects import arith, vector
        from mlir.dialects import math as mlir_math

        sink = arith.mulf(site.head_value(self.sink), _f32(LOG2_E))
        new_max = arith.maximumf(running_max, sink)  # a NaN sink reaches the row
        alpha = mlir_math.exp2(arith.subf(running_max, new_max))
        total = arith.addf(arith.mulf(total, alpha), mlir_math.exp2(arith.subf(sink, new_max)))
        alpha = vector.broadcast(ir.VectorType.get(ir.VectorType(acc.type).shape, alpha.type), alpha)
        return arith.mulf(acc, alpha), total


#: The variants, in the order the op declares their attributes and operands and the scores apply them.
VARIANTS: tuple[type[Variant], ...] = (Window, Softcap, Alibi, Sinks)


def variant_attributes() -> tuple[Declared, ...]:
    return tuple(d for variant in VARIANTS for d in variant.attributes)


def variant_operands() -> tuple[Declared, ...]:
    return tuple(d for variant in VARIANTS for d in variant.operands)


def active_variants(values: Mapping[str, Any]) -> tuple[Variant, ...]:
    """The variants ``values`` (by attribute and operand name) turn on, in :data:`VARIANTS`' order."""
    return tuple(v for v in (variant.of(values) for variant in VARIANTS) if v is not None)
