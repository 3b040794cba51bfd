"""The interpreter runs amdgpu.mfma / amdgpu.wmma with the hardware's lane layout.

The layouts below are written out by hand from AMD's documentation, not taken from
the interpreter or the compiler, so that neither can share a mistake with the test:

* ROCm blog "Introduction to Matrix Core Programming on AMD CDNA3 and CDNA4
  architecture" (rocm.blogs.amd.com, 2025), section 5: the HIP kernels index, per thread
  ``t``, ``A + 4 * (t / 16) + 16 * (t % 16) + i`` and ``B + i * 16 + t % 16 + (t / 16) * 64``,
  and store ``C + i * 16 + t % 16 + (t / 16) * 64`` for ``v_mfma_f32_16x16x16f16``; for the
  32x32 forms ``C[t % 32 + (t / 32) * 4 * 32 + 32 * k + i * 32 * 8] = c_reg[i * 4 + k]`` and
  ``A + (t / 32) * KL + (t % 32) * K`` (KL values of A per lane).
* AMD matrix instruction calculator (ROCm/amd_matrix_instruction_calculator), register
  layout of ``v_mfma_f32_16x16x16f16``: ``A[0][0..3]`` in lane 0 (v0 low, v0 high, v1 low,
  v1 high), ``A[0][4..7]`` in lane 16; ``v_mfma_f32_16x16x4f32``: ``A[i][k]`` in lane
  ``16 * k + i``, ``B[k][j]`` in lane ``16 * k + j``, D as for 16x16x16.
* GPUOpen "How to accelerate AI applications on RDNA 3 using WMMA": ``a_frag[e] = a[16 *
  lane + e]``, ``b_frag[e] = b[16 * e + lane]`` (lane = t % 16, both halves of the wave
  loaded alike), ``c[16 * (2 * e + t / 16) + lane] = c_frag[e]`` (f32 accumulators).

Each test gives every lane the operand values that the table says it holds, runs one
instruction, and reads back D from the lanes the table names.
"""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp.inputs import ACCEPTED
from pagedir.interp.launch import run
from pagedir.interp.memory import InterpError

MFMA_16x16x16 = dict(m=16, n=16, k=16, per_lane_a=4, per_lane_d=4)


def a_lanes_16x16x16(a: np.ndarray) -> np.ndarray:
    """Lane t element i of A: ``A + 4 * (t / 16) + 16 * (t % 16) + i`` (row-major 16 x 16)."""
    flat = a.reshape(-1)
    return np.array([[flat[4 * (t // 16) + 16 * (t % 16) + i] for i in range(4)] for t in range(64)])


def b_lanes_16x16x16(b: np.ndarray) -> np.ndarray:
    """Lane t element i of B: ``B + i * 16 + t % 16 + (t / 16) * 64``."""
    flat = b.reshape(-1)
    return np.array([[flat[i * 16 + t % 16 + (t // 16) * 64] for i in range(4)] for t in range(64)])


def d_from_lanes_16x16(d_lanes: np.ndarray) -> np.ndarray:
    """D from the lanes: ``C + i * 16 + t % 16 + (t / 16) * 64 = c_reg[i]``."""
    flat = np.zeros(256)
    for t in range(64):
        for i in range(4):
            flat[i * 16 + t % 16 + (t // 16) * 64] = d_lanes[t][i]
    return flat.reshape(16, 16)


def d_from_lanes_32x32(d_lanes: np.ndarray) -> np.ndarray:
    """``C[t % 32 + (t / 32) * 4 * 32 + 32 * k + i * 32 * 8] = c_reg[i * 4 + k]``."""
    flat = np.zeros(1024)
    for t in range(64):
        for i in range(4):
            for k in range(4):
                flat[t % 32 + (t // 32) * 4 * 32 + 32 * k + i * 32 * 8] = d_lanes[t][i * 4 + k]
    return flat.reshape(32, 32)


def run_matrix_op(op: str, attrs: str, in_type: str, per_lane_ab: int, per_lane_d: int, a_lanes, b_lanes, c_lanes,
                  arch: str = "gfx942", wave: int = 64) -> np.ndarray:
    """One instruction: lane t takes a_lanes[t], b_lanes[t], c_lanes[t] and writes its D values to out[t]."""
    scalar = per_lane_ab == 1 and in_type == "f32"
    ab_type = in_type if scalar else f"vector<{per_lane_ab}x{in_type}>"
    load = ("memref.load {name}[%t, %c0] : memref<{w}x1x{e}>" if scalar
            else "vector.load {name}[%t, %c0] : memref<{w}x{n}x{e}>, {v}")
    text = f"""
func.func @f(%a: memref<{wave}x{per_lane_ab}x{in_type}>, %b: memref<{wave}x{per_lane_ab}x{in_type}>,
             %c: memref<{wave}x{per_lane_d}xf32>, %out: memref<{wave}x{per_lane_d}xf32>)
    attributes {{rock.kernel, rock.arch = "{arch}", rock.block_size = {wave} : i64, rock.grid_size = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %t = "rock.workitem_id"() : () -> index
  %va = {load.format(name='%a', w=wave, n=per_lane_ab, e=in_type, v=ab_type)}
  %vb = {load.format(name='%b', w=wave, n=per_lane_ab, e=in_type, v=ab_type)}
  %vc = vector.load %c[%t, %c0] : memref<{wave}x{per_lane_d}xf32>, vector<{per_lane_d}xf32>
  %d = {op} {attrs} %va * %vb + %vc{" blgp = none" if op == "amdgpu.mfma" else ""} : {ab_type}, {ab_type}, vector<{per_lane_d}xf32>
  vector.store %d, %out[%t, %c0] : memref<{wave}x{per_lane_d}xf32>, vector<{per_lane_d}xf32>
  return
}}
"""
    a_lanes, b_lanes = (np.asarray(x).astype(ACCEPTED[in_type][0]) for x in (a_lanes, b_lanes))  # exact values
    with make_context():
        module = ir.Module.parse(text)
        results = run(module, "f", [a_lanes, b_lanes, c_lanes, np.zeros((wave, per_lane_d), np.float32)])
    return results[3]


def exact_f16(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Small integers: exact in f16 and bf16, so sums of products are exact in f32 too."""
    return rng.integers(-8, 9, size=shape).astype(np.float32)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_mfma_16x16x16_follows_the_documented_lane_layout(dtype: str) -> None:
    rng = np.random.default_rng(1)
    a, b, c = exact_f16(rng, (16, 16)), exact_f16(rng, (16, 16)), exact_f16(rng, (16, 16))
    c_lanes = np.array([[c.reshape(-1)[i * 16 + t % 16 + (t // 16) * 64] for i in range(4)] for t in range(64)])
    d_lanes = run_matrix_op("amdgpu.mfma", "16x16x16", dtype, 4, 4,
                            a_lanes_16x16x16(a), b_lanes_16x16x16(b), c_lanes.astype(np.float32))
    np.testing.assert_array_equal(d_from_lanes_16x16(d_lanes), a @ b + c)


def test_mfma_16x16x16_register_table_spot_entries() -> None:
    # The calculator's table: A[0][0..3] in lane 0, A[0][4..7] in lane 16, A[5][8..11] in lane 37; D[r][c] of
    # lane t is element i with r = 4 * (t / 16) + i, c = t % 16 (lane 0: D[0..3][0], lane 63: D[12..15][15]).
    a = np.zeros((16, 16), np.float32)
    b = np.eye(16, dtype=np.float32)
    a_lanes = np.zeros((64, 4), np.float32)
    a_lanes[0] = [1, 2, 3, 4]  # A[0][0..3]
    a_lanes[16] = [5, 6, 7, 8]  # A[0][4..7]
    a_lanes[37] = [9, 10, 11, 12]  # A[5][8..11]
    a[0, 0:8] = [1, 2, 3, 4, 5, 6, 7, 8]
    a[5, 8:12] = [9, 10, 11, 12]
    d_lanes = run_matrix_op("amdgpu.mfma", "16x16x16", "f16", 4, 4,
                            a_lanes, b_lanes_16x16x16(b), np.zeros((64, 4), np.float32))
    # D = A: lane 0 holds D[0..3][0] = A[0][0], 0, 0, 0; lane 5 holds D[0..3][5] = A[0][5] = 6, ...
    assert d_lanes[0].tolist() == [1, 0, 0, 0]
    assert d_lanes[5].tolist() == [6, 0, 0, 0]
    assert d_lanes[16 + 9].tolist() == [0, 10, 0, 0]  # D[5][9] is element 1 of lane 16 + 9
    assert d_lanes[63].tolist() == [0, 0, 0, 0]


def test_mfma_16x16x4_f32_follows_the_documented_lane_layout() -> None:
    rng = np.random.default_rng(2)
    a, b = exact_f16(rng, (16, 4)), exact_f16(rng, (4, 16))
    a_lanes = np.array([[a[t % 16][t // 16]] for t in range(64)], np.float32)  # A[i][k] in lane 16 * k + i
    b_lanes = np.array([[b[t // 16][t % 16]] for t in range(64)], np.float32)  # B[k][j] in lane 16 * k + j
    d_lanes = run_matrix_op("amdgpu.mfma", "16x16x4", "f32", 1, 4,
                            a_lanes, b_lanes, np.zeros((64, 4), np.float32))
    np.testing.assert_array_equal(d_from_lanes_16x16(d_lanes), a @ b)


def test_mfma_32x32x8_f16_follows_the_documented_lane_layout() -> None:
    rng = np.random.default_rng(3)
    a, b = exact_f16(rng, (32, 8)), exact_f16(rng, (8, 32))
    a_lanes = np.array([[a.reshape(-1)[(t // 32) * 4 + (t % 32) * 8 + i] for i in range(4)] for t in range(64)], np.float32)
    b_lanes = np.array([[b.reshape(-1)[i * 32 + t % 32 + (t // 32) * 4 * 32] for i in range(4)] for t in range(64)], np.float32)
    d_lanes = run_matrix_op("amdgpu.mfma", "32x32x8", "f16", 4, 16,
                            a_lanes, b_lanes, np.zeros((64, 16), np.float32))
    np.testing.assert_array_equal(d_from_lanes_32x32(d_lanes), a @ b)


def test_wmma_gfx1100_follows_the_documented_lane_layout() -> None:
    rng = np.random.default_rng(4)
    a, b = exact_f16(rng, (16, 16)), exact_f16(rng, (16, 16))
    a_lanes = np.array([[a.reshape(-1)[16 * (t % 16) + e] for e in range(16)] for t in range(32)], np.float32)
    b_lanes = np.array([[b.reshape(-1)[16 * e + t % 16] for e in range(16)] for t in range(32)], np.float32)
    d_lanes = run_matrix_op("amdgpu.wmma", "16x16x16", "f16", 16, 8,
                            a_lanes, b_lanes, np.zeros((32, 8), np.float32), arch="gfx1100", wave=32)
    d = np.zeros(256)
    for t in range(32):
        for e in range(8):
            d[16 * (2 * e + t // 16) + t % 16] = d_lanes[t][e]
    np.testing.assert_array_equal(d.reshape(16, 16), a @ b)


def test_mfma_products_with_nan_follow_ieee() -> None:
    # 0 x NaN is NaN on the matrix cores too: a NaN in B's column 3 poisons all of D's column 3.
    a = np.zeros((16, 16), np.float32)
    b = np.ones((16, 16), np.float32)
    b[7, 3] = np.nan
    d_lanes = run_matrix_op("amdgpu.mfma", "16x16x16", "f16", 4, 4,
                            a_lanes_16x16x16(a), b_lanes_16x16x16(b), np.zeros((64, 4), np.float32))
    d = d_from_lanes_16x16(d_lanes)
    assert np.isnan(d[:, 3]).all() and not np.isnan(np.delete(d, 3, axis=1)).any()


def test_mfma_infinities_follow_ieee() -> None:
    # inf x 0 is NaN, inf x 1 is inf, and inf plus an accumulator of -inf is NaN (ops_arith.FLOAT_RULES).
    a = np.zeros((16, 16), np.float32)
    a[2, 5] = np.inf
    b = np.ones((16, 16), np.float32)
    b[5, 1] = 0
    c = np.zeros((16, 16), np.float32)
    c[2, 0] = -np.inf
    c_lanes = np.array([[c.reshape(-1)[i * 16 + t % 16 + (t // 16) * 64] for i in range(4)] for t in range(64)])
    d = d_from_lanes_16x16(run_matrix_op("amdgpu.mfma", "16x16x16", "f16", 4, 4, a_lanes_16x16x16(a),
                                         b_lanes_16x16x16(b), c_lanes.astype(np.float32)))
    assert np.isnan(d[2, 0]) and np.isnan(d[2, 1]) and (d[2, 2:] == np.inf).all()
    assert (np.delete(d, 2, axis=0) == 0).all()


def test_wmma_lanes_that_do_not_repeat_their_half_are_refused() -> None:
    a_lanes = np.ones((32, 16), np.float32)
    a_lanes[20, 0] = 2.0
    with pytest.raises(InterpError, match="lanes 16-31 must hold the same A values"):
        run_matrix_op("amdgpu.wmma", "16x16x16", "f16", 16, 8,
                      a_lanes, np.ones((32, 16), np.float32), np.zeros((32, 8), np.float32), arch="gfx1100", wave=32)


SHUFFLE = """
func.func @f(%a: memref<64xf32>, %out: memref<64xf32>, %ok: memref<64xi32>)
    attributes {{rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64}} {{
  %t = "rock.workitem_id"() : () -> index
  %v = memref.load %a[%t] : memref<64xf32>
  %offset = arith.constant {offset} : i32
  %width = arith.constant {width} : i32
  %s, %valid = gpu.shuffle {mode} %v, %offset, %width : f32
  memref.store %s, %out[%t] : memref<64xf32>
  %flag = arith.extui %valid : i1 to i32
  memref.store %flag, %ok[%t] : memref<64xi32>
  return
}}
"""


@pytest.mark.parametrize(("mode", "offset", "width", "source"), [
    ("xor", 16, 64, lambda lane: lane ^ 16),
    ("xor", 32, 64, lambda lane: lane ^ 32),
    ("idx", 5, 64, lambda lane: 5),
    ("down", 3, 64, lambda lane: lane + 3),
    ("xor", 16, 32, lambda lane: lane ^ 16),
])
def test_shuffle_reads_the_lane_the_mode_names(mode: str, offset: int, width: int, source) -> None:
    a = np.arange(64, dtype=np.float32) * 10
    with make_context():
        module = ir.Module.parse(SHUFFLE.format(mode=mode, offset=offset, width=width))
        _, out, ok = run(module, "f", [a, np.zeros(64, np.float32), np.zeros(64, np.int32)])
    lanes = np.arange(64)
    sources = np.array([source(lane) for lane in lanes])
    inside = (sources >= 0) & (sources < width)
    # Out of range (lanes past the width, or past the wave for down): the lane keeps its value, valid false.
    np.testing.assert_array_equal(out, np.where(inside, a[np.clip(sources, 0, 63)], a))
    np.testing.assert_array_equal(ok, inside.astype(np.int32))
