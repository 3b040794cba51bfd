"""The score variants of ``rock.attention``, each declared once: which keys a query sees (causal,
sliding window, seq_len), the soft-cap, the ALiBi bias and the attention sinks.

Each declaration gives the variant's formula in two forms that say the same thing: a numpy form
for the reference (and so the interpreter's ``rock.attention``) and an IR form for the kernel's
loops (the VALU loop, the matrix loop, the split-KV combine), which take the loop's arith values;
where rock-raise-attention recognises the variant in a linalg program, also the form it expects.

Query row ``i`` of ``Sq`` in a sequence of ``seq_len`` keys sits at the absolute position
``i_pos = i + seq_len - Sq`` (the queries are the sequence's last ``Sq`` tokens). The IR forms
take positions and keys in any one frame (absolute, or relative to a tile: both shifted alike).
The kernel computes scores in base 2: ``log2(e)`` is folded into its scale.

This module is below everything else of pagedir: it uses numpy and the MLIR bindings only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mlir.ir as ir
import numpy as np
from mlir.dialects import arith, vector
from mlir.dialects import math as mlir_math

LOG2_E = 1.4426950408889634


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _f32(value: float) -> ir.Value:
    return arith.constant(ir.F32Type.get(), value)


def _clamped_difference(value: ir.Value, subtrahend: int) -> ir.Value:
    """``max(0, value - subtrahend)`` of an unsigned index, without going below zero."""
    enough = arith.cmpi(arith.CmpIPredicate.uge, value, _index(subtrahend))
    return arith.select(enough, arith.subi(value, _index(subtrahend)), _index(0))


def score_scale(scale: float | None, head_dim: int) -> float:
    """The scale of ``q.k`` (attribute ``scale``): by default ``1 / sqrt(D)``."""
    return 1.0 / math.sqrt(head_dim) if scale is None else scale


def query_position(i, seq_len, seq_q: int):
    """``i_pos = i + seq_len - Sq``: numpy (ints) or IR (index values; signed, negative when the
    query is before the sequence's first key)."""
    if isinstance(i, ir.Value):
        return arith.subi(arith.addi(i, seq_len), _index(seq_q))
    return i + seq_len - seq_q


@dataclass(frozen=True)
class KeyRange:
    """Which keys query position ``i_pos`` sees: ``j < seq_len``; ``causal``: ``j <= i_pos``;
    ``window_left`` W: ``j >= i_pos - W``. The keys seen are a range ``[first, end)``."""

    causal: bool = False
    window_left: int | None = None

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
        return arith.subi(position, _index(self.window_left))

    @staticmethod
    def before_end(key: ir.Value, seq_len: ir.Value) -> ir.Value:
        """``key < seq_len`` (absolute key)."""
        return arith.cmpi(arith.CmpIPredicate.ult, key, seq_len)

    def causal_end(self, i: ir.Value, seq_len: ir.Value, seq_q: int) -> ir.Value:
        """``max(0, i_pos + 1)``: the end of the keys row ``i`` sees when causal (unsigned)."""
        return _clamped_difference(arith.addi(arith.addi(i, seq_len), _index(1)), seq_q)

    def first_in_window(self, i: ir.Value, seq_len: ir.Value, seq_q: int) -> ir.Value:
        """``max(0, i_pos - W)``: the first key row ``i`` sees in its window (unsigned)."""
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


@dataclass(frozen=True)
class Softcap:
    """The soft-cap (attribute ``softcap``) of the scaled score: ``s = cap * tanh(s / cap)``."""

    cap: float

    def capped(self, scores: np.ndarray) -> np.ndarray:
        """numpy: float32 scores capped."""
        cap = np.float32(self.cap)
        return cap * np.tanh(scores / cap)

    def base2_score(self, dot: ir.Value, scale: float) -> ir.Value:
        """IR: the base-2 capped score of ``dot`` (``scale`` includes log2(e): it is taken out inside
        tanh and put back outside)."""
        score = mlir_math.tanh(arith.mulf(dot, _f32(scale / LOG2_E / self.cap)))
        return arith.mulf(score, _f32(self.cap * LOG2_E))

    @staticmethod
    def is_capped(outer: float, inner: str, by: float) -> bool:
        """Whether ``outer * tanh(s <inner> by)`` (``inner`` an arith op name) is the soft-cap with
        ``cap = outer``: ``s / cap``, or ``s * (1 / cap)`` up to f32 rounding (the linalg raise)."""
        return inner == "arith.divf" and by == outer or inner == "arith.mulf" and abs(by * outer - 1.0) <= 1e-6


class Alibi:
    """The ALiBi bias (operand ``alibi_slopes``, ``[Hq]``): ``s += slope[h] * (j - i_pos)``, after the
    soft-cap."""

    operand = "alibi_slopes"  # of rock.attention, and reference.attention's keyword

    @staticmethod
    def bias(slopes: np.ndarray, first: int, end: int, position: int) -> np.ndarray:
        """numpy: ``[Hq, end - first]`` float32 biases of keys ``first..end-1`` for ``position``."""
        distance = np.arange(first, end, dtype=np.float32) - np.float32(position)
        return slopes[:, None] * distance[None, :]

    @staticmethod
    def base2_biased(score: ir.Value, slope: ir.Value, key: ir.Value, position: ir.Value) -> ir.Value:
        """IR: the base-2 ``score`` plus the bias of ``key`` for ``position`` (index values in one
        frame; ``slope`` the f32 slope of the row's head)."""
        f32 = ir.F32Type.get()
        distance = arith.sitofp(f32, arith.index_cast(ir.IntegerType.get_signless(32), arith.subi(key, position)))
        return arith.addf(score, arith.mulf(arith.mulf(slope, _f32(LOG2_E)), distance))


class Sinks:
    """Attention sinks (operand ``sinks``, ``[Hq]`` logits): a head's sink joins its softmax
    denominator and no value, ``exp(s_j) / (sum_j exp(s_j) + exp(sink))``. A row without visible
    keys still gives zeros."""

    operand = "sinks"  # of rock.attention, and reference.attention's keyword

    @staticmethod
    def row_max(top: np.ndarray, sink: np.ndarray) -> np.ndarray:
        """numpy: the rows' max over their scores and their sink."""
        return np.maximum(top, sink)

    @staticmethod
    def total(total: np.ndarray, sink: np.ndarray, top: np.ndarray) -> np.ndarray:
        """numpy: the rows' denominators (relative to ``exp(top)``) with the sink's weight."""
        return total + np.exp(sink - top)

    @staticmethod
    def join(acc: ir.Value, running_max: ir.Value, total: ir.Value, sink: ir.Value) -> tuple[ir.Value, ir.Value]:
        """IR: (acc, total) rescaled to the max of ``running_max`` and the sink logit (natural units,
        made base-2 here), with the sink's weight added to the total. A running max of -inf (no key
        seen) gives alpha 0, total = 1 and acc stays 0."""
        sink = arith.mulf(sink, _f32(LOG2_E))
        new_max = arith.maximumf(running_max, sink)  # a NaN sink reaches the row
        alpha = mlir_math.exp2(arith.subf(running_max, new_max))
        total = arith.addf(arith.mulf(total, alpha), mlir_math.exp2(arith.subf(sink, new_max)))
        alpha = vector.broadcast(ir.VectorType.get(ir.VectorType(acc.type).shape, alpha.type), alpha)
        return arith.mulf(acc, alpha), total
