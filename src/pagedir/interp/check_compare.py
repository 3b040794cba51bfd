"""The check's comparison of an argument after a run with what it must hold.

An element passes when ``|got - expected| <= tolerance``, an absolute tolerance by element type
(:data:`TOLERANCE`: f32 1e-5, f16 and bf16 2e-2; the outputs are of order 1: softmax-weighted averages of unit
normals, copies), integers exact. The relative error is reported but decides nothing: near zero it is large for
errors far below the tolerance. NaN or infinity against a number is a mismatch. NaN against NaN matches only
where the argument held NaN before the run (an output both sides left untouched) or where the reference
computes NaN (a row that sees a NaN key): NaN must appear exactly where the math puts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir import reference

TOLERANCE = {"f32": 1e-5, "f64": 1e-9, "f16": 2e-2, "bf16": 2e-2}


@dataclass
class Comparison:
    """One argument compared: worst absolute / relative error and where."""

    index: int
    type: str
    max_abs: float
    max_rel: float
    tolerance: float
    mismatches: int
    worst: tuple | None = None
    expected_value: float | None = None
    got_value: float | None = None

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def describe(self) -> str:
        text = f"argument {self.index} ({self.type}): {error_summary(self.max_abs, self.max_rel, self.tolerance)}"
        if not self.ok:
            text += (f"; {self.mismatches} elements differ by more than {self.tolerance:g}, worst at "
                     f"{list(self.worst)} (expected {self.expected_value!r}, got {self.got_value!r})")
        return text


def error_summary(max_abs: float, max_rel: float, tolerance: float) -> str:
    """The errors with the rule that decides: the absolute error against the tolerance; the relative one is informational."""
    verdict = "<=" if max_abs <= tolerance else ">"
    return f"max abs error {max_abs:.3g} {verdict} abs tolerance {tolerance:g} (max rel error {max_rel:.3g}, not checked)"


def element_type_name(type_: ir.Type) -> str:
    return str(type_.element_type) if isinstance(type_, ir.MemRefType) else str(type_)


def compare(index: int, type_: ir.Type, expected: np.ndarray, got: np.ndarray, tolerance: float | None,
            initial: Any = None, reference: Any = None) -> Comparison:
    """``got`` against ``expected`` by the rule of the module docstring; ``initial``: the argument before the run;
    ``reference``: what the reference computes for it (its NaN are NaN the math gives), when known."""
    name = element_type_name(type_)
    expected = np.asarray(expected)
    got = np.asarray(got)
    if expected.shape != got.shape:
        expected = expected.reshape(got.shape)
    exact = got.dtype.kind in "iub" and expected.dtype.kind in "iub"
    limit = 0.0 if exact else (tolerance if tolerance is not None else TOLERANCE.get(name, 1e-5))
    e = expected.astype(np.float64)
    g = got.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(g) & (untouched_nan(initial, got.shape, name) | computed_nan(reference, got.shape))
    same = both_nan | (e == g)  # equal infinities too: inf - inf is NaN, not an error
    with np.errstate(invalid="ignore"):  # inf - inf and inf / inf are NaN, turned into inf below
        error = np.where(same, 0.0, np.abs(e - g))
        error = np.where(np.isnan(error), np.inf, error)
        relative = error / np.maximum(np.abs(e), 1e-6)
    relative = np.where(same, 0.0, relative)
    bad = error > limit
    comparison = Comparison(index, str(type_), float(error.max(initial=0.0)), float(relative.max(initial=0.0)), limit,
                            int(bad.sum()))
    if bad.any():
        worst = np.unravel_index(int(np.argmax(np.where(bad, error, -1.0))), error.shape)
        comparison.worst = tuple(int(i) for i in worst)
        comparison.expected_value = expected[worst].item()
        comparison.got_value = got[worst].item()
    return comparison


def computed_nan(reference: Any, shape: tuple) -> Any:
    """Where the reference computes NaN (a row that sees a NaN key); False everywhere when there is none."""
    if reference is None or np.size(reference) != int(np.prod(shape)):
        return False
    return np.isnan(np.asarray(reference, dtype=np.float64)).reshape(shape)


def untouched_nan(initial: Any, shape: tuple, element: str) -> Any:
    """Where the argument held NaN before the run (False everywhere when unknown or not floating point).

    A bf16 argument may have been given as its uint16 bit patterns (a pool from ``reference.block_caches``)."""
    if not isinstance(initial, np.ndarray) or initial.size != int(np.prod(shape)):
        return False
    if element == "bf16" and initial.dtype == np.uint16:
        initial = reference.bf16_values(initial)
    if initial.dtype.kind != "f":
        return False
    return np.isnan(initial.astype(np.float64)).reshape(shape)
