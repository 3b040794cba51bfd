"""The interpreter runs NVVM kernels (NVIDIA sm_80 / sm_90) with the PTX ISA's semantics.

The lane layouts the tests expect are written out here again, by hand, in the words of the PTX ISA
(release 8.7), not taken from pagedir.targets.nvidia_mma or the interpreter, so that neither can share a
mistake with the test:

* 9.7.14.5.8, mma.m16n8k16 with .f16 / .bf16 A and B, .f32 C and D: ``groupID = %laneid >> 2``,
  ``threadID_in_group = %laneid % 4``; A (a0..a7, two per .f16x2 register): row = groupID for ai where
  0 <= i < 2 || 4 <= i < 6, groupID + 8 otherwise; col = threadID_in_group * 2 + (i & 0x1) for i < 4, the
  same + 8 for i >= 4. B (b0..b3): row = threadID_in_group * 2 + (i & 0x1) for i < 2, + 8 for i >= 2;
  col = groupID. C/D (c0..c3): row = groupID for i < 2, groupID + 8 for i >= 2; col = threadID_in_group * 2
  + (i & 0x1).
* 9.7.14.5.15, ldmatrix .m8n8 .b16: threads 0-7 give the row addresses of matrix 0 (.x1), 8-15 those of
  matrix 1 (.x2), 16-31 those of matrices 2 and 3 (.x4); each thread receives, per matrix, a 32-bit register
  holding row ``laneid >> 2``, columns ``2 * (laneid % 4)`` and ``+ 1`` (low half first); .trans: the matrix is
  loaded column-major.
* cp.async: src-size bytes are copied, the rest of cp-size is zero-filled; cp.async.wait_group N lets the N
  most recent committed groups of the thread stay pending.
"""

from __future__ import annotations

import re

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp.launch import run
from pagedir.interp.memory import InterpError
from pagedir.reference import bf16_bits, bf16_values
from pagedir.targets import nvidia_mma

ATTRS = "attributes {{rock.kernel, rock.block_size = {block} : i64, rock.grid_size = {grid} : i64}}"
MMA_ATTRS = "layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>"
BF16_ATTRS = MMA_ATTRS + ", multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>"
STRUCT4 = "!llvm.struct<(f32, f32, f32, f32)>"


def execute(text: str, name: str, args: list) -> list:
    with make_context():
        return run(ir.Module.parse(text), name, args)


# ----------------------------------------------------------------------------
# The layouts, by hand from the PTX ISA text


def a_fragment(a: np.ndarray, lane: int) -> list:
    group, thread = lane >> 2, lane % 4
    values = []
    for i in range(8):
        row = group if (0 <= i < 2 or 4 <= i < 6) else group + 8
        col = thread * 2 + (i & 0x1) if i < 4 else thread * 2 + (i & 0x1) + 8
        values.append(a[row, col])
    return values


def b_fragment(b: np.ndarray, lane: int) -> list:
    group, thread = lane >> 2, lane % 4
    return [b[thread * 2 + (i & 0x1) if i < 2 else thread * 2 + (i & 0x1) + 8, group] for i in range(4)]


def c_positions(lane: int) -> list[tuple[int, int]]:
    group, thread = lane >> 2, lane % 4
    return [(group if i < 2 else group + 8, thread * 2 + (i & 0x1)) for i in range(4)]


def test_the_table_lists_the_documented_fragments() -> None:
    """Lane 0 holds A[0][0], A[0][1], A[8][0], A[8][1], A[0][8], A[0][9], A[8][8], A[8][9] (Figure 79);
    lane 5 holds B[2][1], B[3][1], B[10][1], B[11][1]; and so on for every lane and element."""
    index = np.arange(256).reshape(16, 16)
    assert a_fragment(index, 0) == [0, 1, 128, 129, 8, 9, 136, 137]
    assert b_fragment(np.arange(128).reshape(16, 8), 5) == [17, 25, 81, 89]
    for lane in range(32):
        assert [(int(r), int(c)) for r, c in zip(*(x[lane] for x in nvidia_mma.MMA_A))] == \
               [divmod(v, 16) for v in a_fragment(index, lane)]
        assert [(int(r), int(c)) for r, c in zip(*(x[lane] for x in nvidia_mma.MMA_B))] == \
               [divmod(v, 8) for v in b_fragment(np.arange(128).reshape(16, 8), lane)]
        assert [(int(r), int(c)) for r, c in zip(*(x[lane] for x in nvidia_mma.MMA_C))] == c_positions(lane)


# ----------------------------------------------------------------------------
# mma.sync on random matrices, one per warp


def mma_kernel(element: str, warps: int, guard: str = "") -> str:
    """Thread t loads its registers from a[t], b[t] (f16: vector<2xf16>, bf16: i32) and c[t], runs one
    mma.sync and stores its four D values in d[t]."""
    n = 32 * warps
    if element == "f16":
        reg, a_type, b_type, attrs = "vector<2xf16>", f"memref<{n}x4x2xf16>", f"memref<{n}x2x2xf16>", MMA_ATTRS
        load = lambda m, mt, r: f"vector.load %{m}[%t, %c{r}, %c0] : {mt}, vector<2xf16>"  # noqa: E731
    else:
        reg, a_type, b_type, attrs = "i32", f"memref<{n}x4xi32>", f"memref<{n}x2xi32>", BF16_ATTRS
        load = lambda m, mt, r: f"memref.load %{m}[%t, %c{r}] : {mt}"  # noqa: E731
    lines = [f"%a{r} = {load('a', a_type, r)}" for r in range(4)] + [f"%b{r} = {load('b', b_type, r)}" for r in range(2)]
    lines += [f"%cc{r} = memref.load %c[%t, %c{r}] : memref<{n}x4xf32>" for r in range(4)]
    mma = (f"%r = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%cc0, %cc1, %cc2, %cc3] {{{attrs}}} "
           f": ({reg}, {reg}, f32) -> {STRUCT4}")
    stores = []
    for r in range(4):
        stores += [f"%d{r} = llvm.extractvalue %r[{r}] : {STRUCT4}", f"memref.store %d{r}, %d[%t, %c{r}] : memref<{n}x4xf32>"]
    body = "\n    ".join(lines + ([guard.format(mma=mma)] if guard else [mma]) + stores)
    return f"""
func.func @mma(%a: {a_type}, %b: {b_type}, %c: memref<{n}x4xf32>, %d: memref<{n}x4xf32>) {ATTRS.format(block=n, grid=1)} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %t = gpu.thread_id x
    {body}
    return
}}
"""


def random_operands(rng: np.random.Generator, element: str, warps: int):
    a = rng.standard_normal((warps, 16, 16)).astype(np.float32)
    b = rng.standard_normal((warps, 16, 8)).astype(np.float32)
    c = rng.standard_normal((warps, 16, 8)).astype(np.float32)
    if element == "f16":
        a, b = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
    else:
        a, b = bf16_values(bf16_bits(a)), bf16_values(bf16_bits(b))
    return a, b, c


def lane_registers(a, b, c, element: str):
    warps = a.shape[0]
    a_lanes = np.array([a_fragment(a[w], lane) for w in range(warps) for lane in range(32)], np.float32)
    b_lanes = np.array([b_fragment(b[w], lane) for w in range(warps) for lane in range(32)], np.float32)
    c_lanes = np.array([[c[w][pos] for pos in c_positions(lane)] for w in range(warps) for lane in range(32)], np.float32)
    if element == "f16":
        return a_lanes.reshape(-1, 4, 2).astype(np.float16), b_lanes.reshape(-1, 2, 2).astype(np.float16), c_lanes
    pack = lambda x: (bf16_bits(x[..., 0]).astype(np.uint32) | (bf16_bits(x[..., 1]).astype(np.uint32) << 16)).view(np.int32)  # noqa: E731
    return pack(a_lanes.reshape(-1, 4, 2)), pack(b_lanes.reshape(-1, 2, 2)), c_lanes


def d_from_lanes(d_lanes: np.ndarray, warps: int) -> np.ndarray:
    d = np.zeros((warps, 16, 8), np.float32)
    for w in range(warps):
        for lane in range(32):
            for i, pos in enumerate(c_positions(lane)):
                d[w][pos] = d_lanes[32 * w + lane, i]
    return d


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_mma_sync_computes_a_times_b_plus_c(element: str) -> None:
    rng = np.random.default_rng(7 if element == "f16" else 8)
    warps = 2
    a, b, c = random_operands(rng, element, warps)
    a_lanes, b_lanes, c_lanes = lane_registers(a, b, c, element)
    d_lanes = execute(mma_kernel(element, warps), "mma", [a_lanes, b_lanes, c_lanes, np.zeros((64, 4), np.float32)])[3]
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64)) + c
    np.testing.assert_allclose(d_from_lanes(d_lanes, warps), expected, rtol=1e-6, atol=1e-6)


def test_mma_sync_passes_nan_and_inf_through() -> None:
    """IEEE products and sums: inf * 0 is NaN, inf + finite is inf, a NaN addend stays NaN."""
    a, b, c = (np.ones(s, np.float32) for s in ((1, 16, 16), (1, 16, 8), (1, 16, 8)))
    a[0, 3, 5], b[0, 5, 2] = np.inf, 0.0  # row 3: inf, but NaN in column 2
    c[0, 12, 0] = np.nan
    d_lanes = execute(mma_kernel("f16", 1), "mma", [*lane_registers(a, b, c, "f16"), np.zeros((32, 4), np.float32)])[3]
    d = d_from_lanes(d_lanes, 1)[0]
    expected = np.full((16, 8), 17.0, np.float32)
    expected[:, 2] = 16.0  # one product of each row is 0 in column 2
    expected[3], expected[3, 2], expected[12, 0] = np.inf, np.nan, np.nan
    np.testing.assert_array_equal(d, expected)


def test_mma_sync_in_part_of_a_warp_is_an_error() -> None:
    guard = """%lanes = arith.constant 16 : index
    %low = arith.cmpi ult, %t, %lanes : index
    scf.if %low {{
      {mma}
    }}"""
    text = mma_kernel("f16", 1, guard=guard)
    text = re.sub(r"    %d\d = llvm.extractvalue.*\n    memref.store.*\n", "", text)
    a, b, c = random_operands(np.random.default_rng(1), "f16", 1)
    with pytest.raises(InterpError, match=r"nvvm.mma.sync.* executed by 16 of the 32 threads of warp 0"):
        execute(text, "mma", [*lane_registers(a, b, c, "f16"), np.zeros((32, 4), np.float32)])


# ----------------------------------------------------------------------------
# ldmatrix

LDMATRIX = """
func.func @ld(%rows: memref<64x8xi16>, %order: memref<32xi32>, %out: memref<32x{num}xi32>) {attrs} {{
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %t = gpu.thread_id x
  %lds = memref.alloc() : memref<64x8xi16, #gpu.address_space<workgroup>>
  %t2 = arith.addi %t, %c32 : index
  %v0 = vector.load %rows[%t, %c0] : memref<64x8xi16>, vector<8xi16>
  vector.store %v0, %lds[%t, %c0] : memref<64x8xi16, #gpu.address_space<workgroup>>, vector<8xi16>
  %v1 = vector.load %rows[%t2, %c0] : memref<64x8xi16>, vector<8xi16>
  vector.store %v1, %lds[%t2, %c0] : memref<64x8xi16, #gpu.address_space<workgroup>>, vector<8xi16>
  gpu.barrier
  %row = memref.load %order[%t] : memref<32xi32>
  %bytes = arith.constant 16 : i32
  %offset = arith.muli %row, %bytes : i32
  %base = memref.extract_aligned_pointer_as_index %lds : memref<64x8xi16, #gpu.address_space<workgroup>> -> index
  %base32 = arith.index_cast %base : index to i32
  %at = arith.addi %base32, %offset : i32
  %ptr = llvm.inttoptr %at : i32 to !llvm.ptr<3>
  %m = nvvm.ldmatrix %ptr {{num = {num} : i32, layout = #nvvm.mma_layout<{layout}>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>}} : (!llvm.ptr<3>) -> {result}
  {stores}
  return
}}
"""


def ldmatrix_kernel(num: int, trans: bool) -> str:
    """Shared memory holds 64 rows of 8 i16; lane l gives the address of row order[l]."""
    if num == 1:
        result, stores = "i32", "memref.store %m, %out[%t, %c0] : memref<32x1xi32>"
    else:
        result = f"!llvm.struct<({', '.join(['i32'] * num)})>"
        stores = "\n  ".join(f"%w{j} = llvm.extractvalue %m[{j}] : {result}\n  %i{j} = arith.constant {j} : index\n  "
                             f"memref.store %w{j}, %out[%t, %i{j}] : memref<32x{num}xi32>" for j in range(num))
    return LDMATRIX.format(num=num, layout="col" if trans else "row", result=result, stores=stores,
                           attrs=ATTRS.format(block=32, grid=1))


def run_ldmatrix(num: int, trans: bool, order: np.ndarray, rows: np.ndarray) -> np.ndarray:
    out = execute(ldmatrix_kernel(num, trans), "ld", [rows, order.astype(np.int32), np.zeros((32, num), np.int32)])[2]
    return np.asarray(out).astype(np.int32).view(np.uint32)


@pytest.mark.parametrize("trans", [False, True], ids=["row", "trans"])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_ldmatrix_gives_each_lane_the_documented_elements(num: int, trans: bool) -> None:
    rng = np.random.default_rng(num + 10 * trans)
    rows = rng.integers(-2**15, 2**15, size=(64, 8)).astype(np.int16)
    order = rng.permutation(64)[:32]  # lane l points at row order[l]: the lane, not the row, decides the place
    words = run_ldmatrix(num, trans, order, rows)
    stored = rows.view(np.uint16)
    for j in range(num):
        matrix = stored[order[8 * j:8 * j + 8]]  # threads 8j..8j+7 give the rows of matrix j
        if trans:
            matrix = matrix.T  # loaded column-major
        for lane in range(32):
            low, high = matrix[lane >> 2, 2 * (lane % 4)], matrix[lane >> 2, 2 * (lane % 4) + 1]
            assert words[lane, j] == int(low) | (int(high) << 16), (j, lane)


def test_ldmatrix_x1_ignores_the_addresses_of_lanes_8_to_31() -> None:
    rows = np.arange(64 * 8, dtype=np.int16).reshape(64, 8)
    order = np.arange(32)
    first = run_ldmatrix(1, False, order, rows)
    order[8:] = 63 - order[8:]
    np.testing.assert_array_equal(run_ldmatrix(1, False, order, rows), first)


def test_ldmatrix_round_trips_the_mma_fragments() -> None:
    """ldmatrix.x4 of the four 8x8 quarters of a row-major A (rows 0-7 / 8-15 x cols 0-7 / 8-15) gives each lane
    its a0..a7, and ldmatrix.x2.trans of the two 8-row halves of a row-major B (K x N) its b0..b3."""
    rng = np.random.default_rng(3)
    a = rng.integers(-2**15, 2**15, size=(16, 16)).astype(np.int16)
    b = rng.integers(-2**15, 2**15, size=(16, 8)).astype(np.int16)
    rows = np.zeros((64, 8), np.int16)
    rows[0:16], rows[16:32], rows[32:48] = a[:, :8], a[:, 8:], b
    quarter = {0: 0, 1: 8, 2: 16, 3: 24}  # matrix j: rows 0-7 / 8-15 of the left then the right half
    order = np.array([quarter[lane // 8] + lane % 8 for lane in range(32)])
    words = run_ldmatrix(4, False, order, rows)
    halves = np.stack([words & 0xFFFF, words >> 16], axis=2).astype(np.uint16).view(np.int16).reshape(32, 8)
    for lane in range(32):
        assert halves[lane].tolist() == a_fragment(a, lane), lane
    words = run_ldmatrix(2, True, 32 + np.arange(32) % 16, rows)
    halves = np.stack([words & 0xFFFF, words >> 16], axis=2).astype(np.uint16).view(np.int16).reshape(32, 4)
    for lane in range(32):
        assert halves[lane].tolist() == b_fragment(b, lane), lane


def test_ldmatrix_needs_16_byte_aligned_rows() -> None:
    text = ldmatrix_kernel(4, False).replace("%bytes = arith.constant 16 : i32", "%bytes = arith.constant 18 : i32")
    with pytest.raises(InterpError, match="not 16-byte aligned"):
        execute(text, "ld", [np.zeros((64, 8), np.int16), np.arange(32, dtype=np.int32), np.zeros((32, 4), np.int32)])
