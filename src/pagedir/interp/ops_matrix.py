"""Wave-level ops: amdgpu.mfma and amdgpu.wmma (one matrix product ``D = A x B + C`` per wave, its
operands spread over the lanes) and gpu.shuffle (a value from another lane of the wave).

Each lane holds a few elements of A (M x K), B (K x N) and C/D (M x N, f32) in
registers; the instruction gathers them across the wave, multiplies, and hands
each lane its elements of D. Which lane holds which element is fixed by the
hardware (AMD Instinct MI300 ISA, chapter 7 "Matrix Arithmetic Instructions";
AMD's matrix instruction calculator prints the same tables). Lane ``l`` counts
from 0 within its wave (lane ``l`` of a workgroup is thread ``l mod wave`` of
wave ``l div wave``), ``j`` is the element's index in the lane's operand vector:

* CDNA MFMA, one block (``blocks = 1``), ``m = n`` in {16, 32}, wave64: the 64
  lanes form ``64 / m`` groups of ``m`` lanes; group ``g = l div m`` holds the
  ``kl = k / (64 / m)`` consecutive K indices ``kl * g + j``:
  ``A[l mod m][kl * g + j]``, ``B[kl * g + j][l mod n]``; the accumulator holds
  rows in runs of 4: ``D[(j div 4) * (4 * 64 / n) + 4 * g + j mod 4][l mod n]``
  (16x16: ``D[4 * g + j][l mod 16]``, j < 4; 32x32: ``D[8 * (j div 4) + 4 * g + j mod 4][l mod 32]``, j < 16).
  This covers 16x16x16 f16/bf16 (the bf16 ``_1k`` form on gfx90a+), 16x16x4 f32,
  32x32x8 f16/bf16, 32x32x2 f32 and gfx950's 16x16x32 f16/bf16.
* RDNA3 (gfx11) WMMA 16x16x16, wave32, f32 accumulator: ``A[l mod 16][j]`` and
  ``B[j][l mod 16]``, j < 16, where lanes 16-31 must hold the same values as
  lanes 0-15 (anything else is refused here); ``D[2 * j + l div 16][l mod 16]``, j < 8.
* RDNA4 (gfx12) WMMA 16x16x16, wave32: ``A[l mod 16][8 * (l div 16) + j]``,
  ``B[8 * (l div 16) + j][l mod 16]``, ``D[8 * (l div 16) + j][l mod 16]``, j < 8.

Arithmetic: products of the f16/bf16/f32 inputs are exact and summed with the
accumulator in float64, rounded once to f32 (the hardware sums in f32 in an
order it does not document; float64 is within its rounding). NaN and Inf
propagate as in any sum (``0 x NaN`` is NaN). The instruction runs for whole
waves: a wave with only part of its lanes active is an error, as is a
workgroup that is not a whole number of waves. Broadcast and negation
modifiers (``cbsz``, ``abid``, ``blgp``, ``negate*``), several blocks, integer
and 8-bit float operands are refused rather than guessed.

gpu.shuffle (``xor``, ``idx``, ``down``, ``up``): lane ``l`` of a wave reads the value of
lane ``l xor offset``, ``offset``, ``l + offset`` or ``l - offset`` of the same wave
(the offset taken per lane); a source at or past ``width`` (or below 0) is out of range:
the lane keeps its own value and ``valid`` is false (MLIR leaves the value unspecified;
this is what the ROCDL lowering, a ``ds_bpermute`` of the lane's own address, gives).
Reading a lane that is not active is an error: its register holds no defined value.
"""

from __future__ import annotations

from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.interp.memory import InterpError
from pagedir.interp.ops_arith import FLOAT_RULES, FloatRule
from pagedir.interp.simt import Program, handles, vector_shape
from pagedir.targets import matrix_op_family


def _int_attr(op: Any, name: str) -> int:
    attributes = op.operation.attributes
    if name not in attributes:
        return 0
    attr = attributes[name]
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    if isinstance(attr, ir.UnitAttr):  # negateA, reducePrecision, ...
        return 1
    return 0 if str(attr).endswith(" none>") else 1  # blgp = #amdgpu<mfma_perm_b none>: no permutation


def _elements(type_: Any) -> int:
    shape = vector_shape(type_)
    return int(np.prod(shape)) if shape else 1


@handles("amdgpu.mfma", "amdgpu.wmma")
def compile_matrix(p: Program, op: Any) -> Any:
    name = op.operation.name
    operands = op.operation.operands
    a_slot, b_slot, c_slot = (p.slot(v) for v in operands[:3])
    result = p.slot(op.operation.results[0])
    op_id = p.op_id(op)
    location = op.operation.location
    m, n, k = (_int_attr(op, key) for key in ("m", "n", "k"))
    shape = f"{m}x{n}x{k}"
    for modifier in ("cbsz", "abid", "blgp", "negateA", "negateB", "negateC", "reducePrecision", "subwordOffset", "clamp"):
        if _int_attr(op, modifier):
            raise InterpError(f"'{name}' op {shape} with {modifier} is not supported by the interpreter", location)
    if name == "amdgpu.mfma":
        if _int_attr(op, "blocks") not in (0, 1):
            raise InterpError(f"'{name}' op {shape} with blocks = {_int_attr(op, 'blocks')} is not supported by the "
                              "interpreter (one block only)", location)
    from pagedir.arch import ChipError, kernel_chip

    try:  # the lane layout is the family's (pagedir.targets); WMMA's depends on the chip
        layout = matrix_op_family(name).matrix_layout(name, m, n, k, lambda: kernel_chip(p.func))
    except ChipError as err:
        raise InterpError(str(err), location) from None
    if layout is None:
        raise InterpError(f"'{name}' op {shape} is not a shape the interpreter knows the lane layout of", location)
    for label, value, count in (("A", operands[0], layout.a_rows.shape[1]), ("B", operands[1], layout.b_rows.shape[1]),
                                ("C", operands[2], layout.d_rows.shape[1])):
        element = str(value.type.element_type if hasattr(value.type, "element_type") else value.type)
        if element not in ("f16", "bf16", "f32") or (label == "C" and element != "f32"):
            raise InterpError(f"'{name}' op {shape}: {label} of type {value.type} is not supported by the interpreter "
                              "(f16, bf16 or f32 inputs, f32 accumulators)", location)
        if _elements(value.type) != count:
            raise InterpError(f"'{name}' op {shape}: {label} has {_elements(value.type)} elements per lane, the "
                              f"instruction takes {count}", location)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        wave = p.wave_size
        if wave != layout.wave:
            raise InterpError(f"'{name}' op {shape} runs on wave{layout.wave}, this kernel's waves have {wave} lanes", location)
        if rt.block % wave:
            raise InterpError(f"'{name}' op {shape} in a workgroup of {rt.block} threads: not a whole number of "
                              f"{wave}-lane waves", location)
        waves = rt.lanes // wave
        if mask is not None:
            per_wave = mask.reshape(waves, wave)
            partial = per_wave.any(axis=1) & ~per_wave.all(axis=1)
            if partial.any():
                first = int(np.argmax(partial))
                raise InterpError(f"'{name}' op {shape} executed by {int(per_wave[first].sum())} of the {wave} lanes "
                                  f"of wave {first % (rt.block // wave)} (a matrix instruction needs the whole wave)",
                                  p.op_location(op_id))

        def lanes_of(slot: int) -> np.ndarray:
            value = np.asarray(env[slot], dtype=np.float64)
            value = np.broadcast_to(value, (rt.lanes, *value.shape[1:]))
            return value.reshape(waves, wave, -1)

        a, b, c = lanes_of(a_slot), lanes_of(b_slot), lanes_of(c_slot)
        if layout.replicated:
            half = layout.replicated
            for label, values in (("A", a), ("B", b)):
                if not np.array_equal(values[:, :half], values[:, half:], equal_nan=True):
                    raise InterpError(f"'{name}' op {shape}: lanes {half}-{wave - 1} must hold the same {label} values "
                                      f"as lanes 0-{half - 1}", p.op_location(op_id))
        a_matrix = a.reshape(waves, -1)[:, a_order].reshape(waves, layout.m, layout.k)
        b_matrix = b.reshape(waves, -1)[:, b_order].reshape(waves, layout.k, layout.n)
        c_matrix = c.reshape(waves, -1)[:, d_order].reshape(waves, layout.m, layout.n)
        d_matrix = np.matmul(a_matrix, b_matrix) + c_matrix
        d = d_matrix.reshape(waves, -1)[:, d_flat].astype(np.float32)
        env[result] = d.reshape(rt.lanes, *result_shape)

    result_shape = vector_shape(op.operation.results[0].type)
    a_order = _gather_order(layout.a_rows * layout.k + layout.a_cols, layout.m * layout.k)
    b_order = _gather_order(layout.b_rows * layout.n + layout.b_cols, layout.k * layout.n)
    d_flat = (layout.d_rows * layout.n + layout.d_cols).reshape(-1)
    d_order = _gather_order(d_flat, layout.m * layout.n)
    return run


def _gather_order(flat: np.ndarray, size: int) -> np.ndarray:
    """For each element of a row-major matrix of ``size`` elements, the (lane, j) position in the wave's
    lanes x operand elements that holds it (``flat``: the matrix element of each position; every element
    is held by some lane, by the last of several that hold it, as a scatter of the lanes would leave it)."""
    order = np.full(size, -1, dtype=np.int64)
    order[flat.reshape(-1)] = np.arange(flat.size)
    if (order < 0).any():
        raise ValueError("a matrix layout that leaves elements to no lane")
    return order


SHUFFLE_MODES = {"xor": lambda lane, offset: lane ^ offset, "idx": lambda lane, offset: offset,
                 "down": lambda lane, offset: lane + offset, "up": lambda lane, offset: lane - offset}


@handles("gpu.shuffle")
def compile_shuffle(p: Program, op: Any) -> Any:
    value_slot, offset_slot, width_slot = (p.slot(v) for v in op.operation.operands[:3])
    result, valid = (p.slot(r) for r in op.operation.results)
    mode = str(op.operation.attributes["mode"]).split()[-1].rstrip(">")
    source_of = SHUFFLE_MODES.get(mode)
    if source_of is None:
        raise InterpError(f"'gpu.shuffle' op mode {mode} is not supported by the interpreter", op.operation.location)
    op_id = p.op_id(op)

    def run(env: list, mask: Any) -> None:
        rt = p.rt
        wave = p.wave_size
        lane = rt.tid % wave
        first = rt.all_lanes - lane  # the wave's lane 0, as an index into the batch
        offset = np.broadcast_to(np.asarray(env[offset_slot], dtype=np.int64).reshape(-1), (rt.lanes,))
        width = np.broadcast_to(np.asarray(env[width_slot], dtype=np.int64).reshape(-1), (rt.lanes,))
        source = source_of(lane, offset)
        inside = (source >= 0) & (source < np.minimum(width, wave))
        source_lane = np.where(inside, first + np.clip(source, 0, wave - 1), rt.all_lanes)
        if source_lane.max() >= rt.lanes or (rt.tid - lane + np.clip(source, 0, wave - 1) >= rt.block)[inside].any():
            raise InterpError("'gpu.shuffle' op reads a lane past the end of the workgroup", p.op_location(op_id))
        if mask is not None:
            reading = mask & inside
            if (~mask[source_lane] & reading).any():
                at = int(np.argmax(~mask[source_lane] & reading))
                raise InterpError(f"'gpu.shuffle' op: thread {int(rt.tid[at])} reads lane "
                                  f"{int(source[at])} of its wave, which is not active", p.op_location(op_id))
        values = np.asarray(env[value_slot])
        values = np.broadcast_to(values, (rt.lanes, *values.shape[1:]))
        env[result] = values[source_lane]
        env[valid] = inside

    return run


FLOAT_RULES["amdgpu.mfma"] = FLOAT_RULES["amdgpu.wmma"] = FloatRule(
    compile_matrix, "IEEE 754 products and sums: exact products added to the accumulator and rounded once to f32; "
                    "NaN if any product or addend is NaN, for 0 * inf and for inf - inf (a NaN or inf in A's row or "
                    "B's column reaches the whole row or column of D)")
