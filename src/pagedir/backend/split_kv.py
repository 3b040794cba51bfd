"""Split-KV: the workspace's layout, the combine kernel's grid and the split count, for every user.

A split-KV attention kernel (``num_splits`` = S > 1, or 0: chosen at launch) cuts the KV
sequence of each workgroup into S ranges; split ``s`` writes, for each output row ``r``
(``(b * Hq + q head) * Sq + position``, R rows in all), its normalized partial output (D
f32) and its base-2 log-sum-exp (one f32) to a workspace, and a second kernel, the combine,
merges the S of each row (rock-gridwise-attention-to-blockwise builds both kernels:
:mod:`pagedir.passes.split_combine`). The facts about that workspace and that choice are
here, once, as integer functions (which take ints or affine expressions alike) and plan
expressions: the passes build the kernels and record the model with them, the launch plan
(:mod:`pagedir.backend.plan`) states them, the interpreter's launch evaluates them.

**The workspace** is f32, ``S * R * (D + 1)`` elements: the partial outputs first, row
``s * R + r`` at ``(s * R + r) * D`` (:func:`partial_at`), then the LSEs, from ``S * R * D``
(:func:`lse_base`), at ``S * R * D + s * R + r`` (:func:`lse_at`). A kernel whose sizes are
known at compile time takes it as ``memref<S * R * (D + 1) x f32>``; one whose count or sizes
are known at launch as ``memref<S x (R * (D + 1)) x f32>`` (``?`` where unknown), the same
layout row-major, so that its dims carry S and one split's elements (:func:`split_elements`;
R is :func:`rows_of` them). The plan writes its shape and bytes as :data:`WORKSPACE_SHAPE` and
:data:`WORKSPACE_BYTES`. The combine runs :func:`combine_workgroups` workgroups of
:data:`COMBINE_BLOCK` threads, each thread merging :data:`COMBINE_CHUNK` columns of a row.

**The split count** is a cost model of busy compute units against combine bytes. Splitting
the KV sequence of each workgroup into S ranges gives ``W * S`` workgroups (W without
splitting) that each read ``ceil(T / S)`` of the T KV tiles. The model charges:

* **the split kernel**: the bytes of the busiest compute unit at its share of the chip's
  bandwidth, ``BW / CU``. A CU runs ``ceil(W * S / CU)`` of the workgroups, each reading its
  tiles' K and V (``tile_bytes`` each) and its Q rows (``q_bytes``):
  ``ceil(W * S / CU) * (ceil(T / S) * tile_bytes + q_bytes) * CU / BW``.
  With every CU busy this is the KV bytes at full bandwidth; with fewer, the idle CUs'
  share is lost (a CU draws at most its share: the premise of filling the chip).
* **the combine** (S > 1 only): the partial outputs and log-sum-exps the splits write and the
  combine reads back, ``2 * S * partial_bytes / BW`` (``partial_bytes``: one split's, f32,
  ``R * (D + 1) * 4`` for the R output rows), plus one more kernel launch (``launch_seconds``).

S is the cheapest count in ``[1, T]``, the fewest splits on a tie (fewer partials, and the
same time means the extra splits bought nothing). The costs are counted in integers: the
bytes the busiest compute unit draws at its share ``BW / CU`` (a time, times ``BW / CU``; a
launch is ``launch_bytes = round(launch_seconds * BW / CU)``; the per-workgroup partials and
the combine's share are rounded up to whole bytes), written as plan expressions
(:mod:`pagedir.backend.formula`, :data:`SPLIT_EXPRESSION`). The inputs are recorded on the
kernel (``rock.split_model``) and in the launch plan, so a runtime evaluates the same
expression for a ``--dynamic`` kernel at launch, where W, T and R follow from the batch and
the block slots; the compiler and the interpreter evaluate it with the same evaluator
(:func:`split_count`).

Bandwidths are the parts' HBM/GDDR peaks (MI300X 5.3 TB/s, ...); only their ratio to the
launch cost matters, since every other term is bytes over the same bandwidth.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import mlir.ir as ir

from pagedir.backend import formula

# ----------------------------------------------------------------------------
# The workspace and the combine's grid (ints, or affine expressions of sizes known at launch)

#: Bytes of a workspace element (f32).
F32_BYTES = 4
#: f32 output columns a thread of the combine kernel merges (one 128-bit load per split).
COMBINE_CHUNK = 4
#: Threads per combine workgroup: one wave, so that few rows (decode at batch 1) still spread over
#: several compute units (8 rows of 128 columns: 4 workgroups).
COMBINE_BLOCK = 64
#: The plan's workspace shape and bytes, in the names of ``num_splits_formula`` (f32: dim 0 the count).
WORKSPACE_SHAPE = ("num_splits", f"partial_bytes // {F32_BYTES}")
WORKSPACE_BYTES = "num_splits * partial_bytes"


def floor_div(a, b: int):
    """``a floordiv b`` of an int or an affine expression."""
    return ir.AffineExpr.get_floor_div(a, b) if isinstance(a, ir.AffineExpr) else a // b


def split_elements(rows, head_dim: int):
    """One split's workspace elements: ``rows`` partial outputs of ``head_dim`` and their LSEs."""
    return rows * (head_dim + 1)


def rows_of(elements, head_dim: int):
    """The output rows R of one split's ``elements`` (:func:`split_elements`)."""
    return floor_div(elements, head_dim + 1)


def partial_bytes(rows, head_dim: int):
    """The bytes one split writes and the combine reads back (the cost model's ``partial_bytes``)."""
    return split_elements(rows, head_dim) * F32_BYTES


def workspace_elements(splits, rows, head_dim: int):
    """The workspace's f32 elements for ``splits`` splits of ``rows`` output rows."""
    return splits * split_elements(rows, head_dim)


def lse_base(splits, rows, head_dim: int):
    """Where the LSEs start: after the ``S * R * D`` partial outputs."""
    return splits * rows * head_dim


def partial_at(split, rows, row, head_dim: int, col):
    """The element of column ``col`` of split ``split``'s partial output of ``row``."""
    return (split * rows + row) * head_dim + col


def lse_at(base, split, rows, row):
    """The element of split ``split``'s LSE of ``row``, the LSEs starting at ``base`` (:func:`lse_base`)."""
    return base + split * rows + row


def combine_workgroups(rows, head_dim: int):
    """Workgroups of the combine kernel for ``rows`` output rows of ``head_dim`` columns."""
    return floor_div(rows * (head_dim // COMBINE_CHUNK) + (COMBINE_BLOCK - 1), COMBINE_BLOCK)


# ----------------------------------------------------------------------------
# The split count

#: Peak memory bandwidth in bytes per second of the largest part with each chip (Chip.compute_units).
BANDWIDTH = {
    "gfx908": 1.23e12, "gfx90a": 1.6e12, "gfx942": 5.3e12, "gfx950": 8.0e12, "gfx1030": 0.512e12,
    "gfx1100": 0.96e12, "gfx1101": 0.624e12, "gfx1200": 0.64e12, "gfx1201": 0.64e12,
}
#: What one more kernel launch on the same stream costs (the combine kernel): a few microseconds.
LAUNCH_SECONDS = 3e-6


#: The inputs that depend on the launch's sizes, in the order of a kernel's ``rock.split_map`` results.
LAUNCH_INPUTS = ("workgroups", "kv_tiles", "partial_bytes", "combine_workgroups")


@dataclass(frozen=True)
class SplitInputs:
    """What the split count depends on, for one launch."""

    workgroups: int  # W: workgroups without splitting
    kv_tiles: int  # T: KV tiles of a sequence's capacity
    tile_bytes: int  # K and V bytes of one KV tile
    q_bytes: int  # Q bytes a workgroup reads once
    partial_bytes: int  # workspace bytes one split writes (all rows), read back by the combine
    combine_workgroups: int  # workgroups of the combine kernel
    compute_units: int
    bandwidth: float  # bytes per second
    launch_seconds: float = LAUNCH_SECONDS
    #: The combine runs whatever the count (a kernel whose count is chosen at launch writes the workspace
    #: even with one split); else only with splits.
    combine_always: bool = False


#: Whether the combine runs with ``s`` splits (1 or 0): with splits, or always.
COMBINES = "max(combine_always, min(1, s - 1))"
#: The split kernel's cost with ``s`` splits, in bytes its busiest compute unit draws at its bandwidth
#: share: ``ceil(W * s / C) * (ceil(T / s) * tile_bytes + q_bytes + ceil(partial_bytes / W))`` (the
#: partials only when the combine runs; ``max(1, W)``: defined for an empty batch).
SPLIT_COST = (f"(workgroups * s + compute_units - 1) // compute_units * ((kv_tiles + s - 1) // s * tile_bytes + q_bytes "
              f"+ {COMBINES} * ((partial_bytes + max(1, workgroups) - 1) // max(1, workgroups)))")
#: The combine's cost in the same unit: its partials read back by ``busy = min(C, combine workgroups)``
#: compute units, ``ceil(s * partial_bytes / busy)``, and one more launch (``launch_bytes``).
COMBINE_COST = (f"{COMBINES} * ((s * partial_bytes + max(1, min(compute_units, combine_workgroups)) - 1) "
                "// max(1, min(compute_units, combine_workgroups)) + launch_bytes)")
#: The split count: the cheapest in ``[1, max(1, T)]``, the fewest on a tie (a plan expression).
SPLIT_EXPRESSION = f"argmin(s, 1, max(1, kv_tiles), {SPLIT_COST} + {COMBINE_COST})"


def launch_bytes(m: SplitInputs) -> int:
    """What one compute unit draws at its bandwidth share in the time of one more kernel launch."""
    return round(m.launch_seconds * m.bandwidth / m.compute_units)


def names(m: SplitInputs, splits: int | None = None) -> dict[str, int]:
    """The names of the model's expressions (all integers), with ``s`` = ``splits`` when given."""
    values = {name: getattr(m, name) for name in (*LAUNCH_INPUTS, "tile_bytes", "q_bytes", "compute_units")}
    values.update(launch_bytes=launch_bytes(m), combine_always=int(m.combine_always))
    return values if splits is None else {**values, "s": splits}


def split_seconds(m: SplitInputs, splits: int) -> float:
    """The split kernel's time with ``splits`` splits: its busiest compute unit at its bandwidth share."""
    return formula.evaluate(SPLIT_COST, names(m, splits)) * m.compute_units / m.bandwidth


def combine_seconds(m: SplitInputs, splits: int) -> float:
    """The combine's time: the partials read back by its workgroups at their bandwidth share, one
    more launch (0 without splitting)."""
    return formula.evaluate(COMBINE_COST, names(m, splits)) * m.compute_units / m.bandwidth


def estimate_seconds(m: SplitInputs, splits: int) -> float:
    return split_seconds(m, splits) + combine_seconds(m, splits)


def choose_splits(m: SplitInputs) -> int:
    """The cheapest split count in ``[1, T]`` (the fewest on a tie): :data:`SPLIT_EXPRESSION`, evaluated as
    a runtime evaluates the plan's."""
    return formula.evaluate(SPLIT_EXPRESSION, names(m))


def explain(m: SplitInputs, splits: int) -> dict:
    """The model's inputs and its estimate for ``splits`` (and for no split), for the plan and reports."""
    kv_bytes = m.workgroups * m.kv_tiles * m.tile_bytes
    return {
        "inputs": asdict(m),
        "num_splits": splits,
        "workgroups": m.workgroups * splits,
        "busy_compute_units": min(m.compute_units, m.workgroups * splits),
        "split_us": round(split_seconds(m, splits) * 1e6, 3),
        "combine_us": round(combine_seconds(m, splits) * 1e6, 3),
        "unsplit_us": round(estimate_seconds(m, 1) * 1e6, 3),
        "combine_bytes": 2 * splits * m.partial_bytes if splits > 1 or m.combine_always else 0,
        "kv_bytes": kv_bytes,
    }


def plan_constants(kernel: ir.Operation) -> dict[str, int]:
    """The constants of a plan's ``num_splits_formula`` (integers, as its expression takes them)."""
    launch = SplitInputs(workgroups=0, kv_tiles=0, partial_bytes=0, combine_workgroups=0, combine_always=True,
                         **model_constants(kernel))
    return {name: value for name, value in names(launch).items() if name not in LAUNCH_INPUTS}


def model_constants(kernel: ir.Operation) -> dict[str, Any]:
    """The inputs that do not depend on the sizes, from the kernel's ``rock.split_model``."""
    model = ir.DictAttr(kernel.attributes["rock.split_model"])
    names = ("tile_bytes", "q_bytes", "compute_units", "bandwidth", "launch_seconds")
    return {name: (ir.FloatAttr(model[name]).value if name in ("bandwidth", "launch_seconds")
                   else ir.IntegerAttr(model[name]).value) for name in names}


def split_count(rule: dict[str, Any], shapes: Any) -> tuple[int, dict[str, int]]:
    """A plan's ``num_splits_formula`` on the argument ``shapes``: the split count and the named values
    (its ``inputs`` evaluated on the shapes, its ``constants``), as a runtime evaluates them."""
    names = {**{name: int(number) for name, number in rule["constants"].items()},
             **{name: formula.evaluate(text, shapes=shapes) for name, text in rule["inputs"].items()}}
    return formula.evaluate(rule["expression"], names, shapes), names
