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


def test_two_accumulators_are_an_a_fragment_in_the_same_lanes() -> None:
    """D of two 16 x 8 products side by side, read as one 16 x 16 A: a_i of lane l is the c element
    a_from_accumulators names, by the two documented layouts."""
    for lane in range(32):
        a_places = a_fragment(np.arange(256).reshape(16, 16), lane)
        for i in range(8):
            tile, c = (int(x) for x in nvidia_mma.a_from_accumulators(np.array(i)))
            row, col = c_positions(lane)[c]
            assert a_places[i] == row * 16 + 8 * tile + col, (lane, i)


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


@pytest.mark.parametrize("k_major", [True, False], ids=["k-major-trans", "n-major"])
def test_the_b_row_addresses_give_the_mma_b_fragments(k_major: bool) -> None:
    """pagedir.targets.nvidia_mma.ldmatrix_b_row: ldmatrix.x4 of a 16 x 16 B (two n-tiles) stored K-major (with
    .trans) or N-major (without) gives each lane b0..b3 of n-tile 0, then of n-tile 1, as the PTX ISA lists them."""
    rng = np.random.default_rng(5)
    b = rng.integers(-2**15, 2**15, size=(16, 16)).astype(np.int16)
    stored = b if k_major else b.T  # rows of 16 elements: two 16-byte units each
    rows = np.zeros((64, 8), np.int16)
    rows[:32] = stored.reshape(32, 8)
    k, n = nvidia_mma.ldmatrix_b_row(np.arange(32), k_major)
    order = (k * 2 + n // 8) if k_major else (n * 2 + k // 8)
    words = run_ldmatrix(4, k_major, order, rows)
    halves = np.stack([words & 0xFFFF, words >> 16], axis=2).astype(np.uint16).view(np.int16).reshape(32, 8)
    for lane in range(32):
        assert halves[lane].tolist() == b_fragment(b[:, :8], lane) + b_fragment(b[:, 8:], lane), lane


def test_the_a_row_addresses_give_the_mma_a_fragments() -> None:
    a = np.random.default_rng(6).integers(-2**15, 2**15, size=(16, 16)).astype(np.int16)
    rows = np.zeros((64, 8), np.int16)
    rows[:32] = a.reshape(32, 8)
    row, col = nvidia_mma.ldmatrix_a_row(np.arange(32))
    words = run_ldmatrix(4, False, row * 2 + col // 8, rows)
    halves = np.stack([words & 0xFFFF, words >> 16], axis=2).astype(np.uint16).view(np.int16).reshape(32, 8)
    for lane in range(32):
        assert halves[lane].tolist() == a_fragment(a, lane), lane


def test_ldmatrix_needs_16_byte_aligned_rows() -> None:
    text = ldmatrix_kernel(4, False).replace("%bytes = arith.constant 16 : i32", "%bytes = arith.constant 18 : i32")
    with pytest.raises(InterpError, match="not 16-byte aligned"):
        execute(text, "ld", [np.zeros((64, 8), np.int16), np.arange(32, dtype=np.int32), np.zeros((32, 4), np.int32)])


# ----------------------------------------------------------------------------
# cp.async: zero fill and wait groups

CP_ASYNC = """
func.func @cp(%src: memref<64x8xi16>, %sizes: memref<32xi32>, %out: memref<32x8xi16>) {attrs} {{
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %t = gpu.thread_id x
  %lds = memref.alloc() : memref<64x8xi16, #gpu.address_space<workgroup>>
  %base = memref.extract_aligned_pointer_as_index %lds : memref<64x8xi16, #gpu.address_space<workgroup>> -> index
  %gbase = memref.extract_aligned_pointer_as_index %src : memref<64x8xi16> -> index
  %row_bytes = arith.constant 16 : index
  %at = arith.muli %t, %row_bytes : index
  %dst_index = arith.addi %base, %at : index
  %dst32 = arith.index_cast %dst_index : index to i32
  %dst = llvm.inttoptr %dst32 : i32 to !llvm.ptr<3>
  %src_index = arith.addi %gbase, %at : index
  %src64 = arith.index_cast %src_index : index to i64
  %gsrc = llvm.inttoptr %src64 : i64 to !llvm.ptr<1>
  %size = memref.load %sizes[%t] : memref<32xi32>
  nvvm.cp.async.shared.global %dst, %gsrc, 16, cache = cg, %size : !llvm.ptr<3>, !llvm.ptr<1>, i32
  {second}
  {wait}
  {barrier}
  %read = affine.apply affine_map<(d0) -> ({read})>(%t)
  %v = vector.load %lds[%read, %c0] : memref<64x8xi16, #gpu.address_space<workgroup>>, vector<8xi16>
  vector.store %v, %out[%t, %c0] : memref<32x8xi16>, vector<8xi16>
  return
}}
"""
#: A second copy, of source rows 32-63 to shared rows 32-63, in a group of its own.
SECOND = """nvvm.cp.async.commit.group
  %dst2 = llvm.getelementptr %dst[512] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  %src2 = llvm.getelementptr %gsrc[256] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i16
  nvvm.cp.async.shared.global %dst2, %src2, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>"""
SOURCE = np.arange(64 * 8, dtype=np.int16).reshape(64, 8) * 3 + 1


def run_cp_async(sizes=None, wait: str = "nvvm.cp.async.commit.group\n  nvvm.cp.async.wait.group 0", second: str = "",
                 read: str = "d0", barrier: str = "nvvm.barrier0") -> np.ndarray:
    text = CP_ASYNC.format(attrs=ATTRS.format(block=32, grid=1), second=second, wait=wait, read=read, barrier=barrier)
    sizes = np.full(32, 16, np.int32) if sizes is None else np.asarray(sizes, np.int32)
    return execute(text, "cp", [SOURCE, sizes, np.zeros((32, 8), np.int16)])[2]


def test_cp_async_copies_src_size_bytes_and_fills_the_rest_with_zeros() -> None:
    sizes = np.array([16, 0, 2, 4, 6, 8, 10, 12, 14] * 4, np.int32)[:32]
    got = run_cp_async(sizes)
    expected = np.where(np.arange(8)[None, :] * 2 < sizes[:, None], SOURCE[:32], 0)
    np.testing.assert_array_equal(got, expected)


def test_cp_async_src_size_0_reads_nothing() -> None:
    """A zero-filled row may point anywhere (a null page): nothing is read from it."""
    text = CP_ASYNC.format(attrs=ATTRS.format(block=32, grid=1), second="", read="d0", barrier="nvvm.barrier0",
                           wait="nvvm.cp.async.commit.group\n  nvvm.cp.async.wait.group 0")
    text = text.replace("%gsrc = llvm.inttoptr %src64 : i64 to", "%gsrc = llvm.mlir.zero :")
    got = execute(text, "cp", [SOURCE, np.zeros(32, np.int32), np.ones((32, 8), np.int16)])[2]
    np.testing.assert_array_equal(got, 0)


def test_reading_shared_memory_before_the_wait_is_a_race() -> None:
    for wait in ("", "nvvm.cp.async.wait.group 0", "nvvm.cp.async.commit.group"):  # uncommitted copies are not waited for
        with pytest.raises(InterpError, match=r"LDS race .* vector.load in thread \d+ reads byte \d+ of LDS buffer .* that "
                                              r"nvvm.cp.async.shared.global at .* copies into shared memory, before the "
                                              r"issuing thread waited for its group \(cp.async.wait.group\)"):
            run_cp_async(wait=wait)


def test_wait_group_1_leaves_the_newest_group_in_flight() -> None:
    wait_1 = "nvvm.cp.async.commit.group\n  nvvm.cp.async.wait.group 1"
    np.testing.assert_array_equal(run_cp_async(second=SECOND, wait=wait_1, read="d0"), SOURCE[:32])
    with pytest.raises(InterpError, match="before the issuing thread waited for its group"):
        run_cp_async(second=SECOND, wait=wait_1, read="d0 + 32")
    wait_0 = "nvvm.cp.async.commit.group\n  nvvm.cp.async.wait.group 0"
    np.testing.assert_array_equal(run_cp_async(second=SECOND, wait=wait_0, read="d0 + 32"), SOURCE[32:])


def test_another_thread_still_needs_the_barrier_after_the_wait() -> None:
    np.testing.assert_array_equal(run_cp_async(read="(d0 + 1) mod 32"), SOURCE[(np.arange(32) + 1) % 32])
    with pytest.raises(InterpError, match="LDS race .* since the last barrier"):
        run_cp_async(read="(d0 + 1) mod 32", barrier="")


@pytest.mark.parametrize("change, message", [
    (("%size = memref.load %sizes[%t] : memref<32xi32>", "%size = arith.constant 17 : i32"), r"src-size 17 is not in \[0, 16\]"),
    (("%at = arith.muli %t, %row_bytes : index", "%at0 = arith.muli %t, %row_bytes : index\n  %c8 = arith.constant 8 : index\n"
      "  %at = arith.addi %at0, %c8 : index"), "is not 16-byte aligned"),
])
def test_cp_async_operands_outside_the_ptx_rules_are_errors(change, message) -> None:
    text = CP_ASYNC.format(attrs=ATTRS.format(block=32, grid=1), second="", read="d0", barrier="nvvm.barrier0",
                           wait="nvvm.cp.async.commit.group\n  nvvm.cp.async.wait.group 0").replace(*change)
    with pytest.raises(InterpError, match=message):
        execute(text, "cp", [np.zeros((64, 8), np.int16), np.full(32, 16, np.int32), np.zeros((32, 8), np.int16)])


# ----------------------------------------------------------------------------
# special registers, shuffles, votes

SREGS = """
func.func @ids(%out: memref<2x64x6xi32>) {attrs} {{
  %t = gpu.thread_id x
  %b = gpu.block_id x
  {reads}
  return
}}
"""


def test_special_registers() -> None:
    names = ["tid.x", "ntid.x", "ctaid.x", "nctaid.x", "laneid", "warpid"]
    reads = "\n  ".join(f"%r{i} = nvvm.read.ptx.sreg.{name} : i32\n  %i{i} = arith.constant {i} : index\n  "
                        f"memref.store %r{i}, %out[%b, %t, %i{i}] : memref<2x64x6xi32>" for i, name in enumerate(names))
    got = execute(SREGS.format(attrs=ATTRS.format(block=64, grid=2), reads=reads), "ids", [np.zeros((2, 64, 6), np.int32)])[0]
    t = np.arange(64)
    for block in range(2):
        np.testing.assert_array_equal(got[block].T, [t, np.full(64, 64), np.full(64, block), np.full(64, 2), t % 32, t // 32])


SHUFFLE = """
func.func @shfl(%values: memref<64xf32>, %out: memref<64xf32>, %valid: memref<64xi1>) {attrs} {{
  %t = gpu.thread_id x
  %v = memref.load %values[%t] : memref<64xf32>
  %all = arith.constant -1 : i32
  %offset = arith.constant {offset} : i32
  %clamp = arith.constant {clamp} : i32
  %pair = nvvm.shfl.sync {kind} %all, %v, %offset, %clamp {{return_value_and_is_valid}} : f32 -> !llvm.struct<(f32, i1)>
  %r = llvm.extractvalue %pair[0] : !llvm.struct<(f32, i1)>
  %ok = llvm.extractvalue %pair[1] : !llvm.struct<(f32, i1)>
  memref.store %r, %out[%t] : memref<64xf32>
  memref.store %ok, %valid[%t] : memref<64xi1>
  return
}}
"""


def shuffle_expected(kind: str, offset: int, clamp: int) -> tuple[np.ndarray, np.ndarray]:
    """PTX ISA 9.7.8.6 shfl.sync, per lane: the source lane j and whether it is valid (else the lane's own value)."""
    lanes, sources, valids = [], [], []
    for thread in range(64):
        lane = thread % 32
        c, segmask = clamp & 0x1F, (clamp >> 8) & 0x1F
        max_lane = (lane & segmask) | (c & ~segmask)
        min_lane = lane & segmask
        if kind == "up":
            j, valid = lane - offset, lane - offset >= max_lane
        elif kind == "down":
            j, valid = lane + offset, lane + offset <= max_lane
        elif kind == "bfly":
            j, valid = lane ^ offset, (lane ^ offset) <= max_lane
        else:
            j = min_lane | (offset & ~segmask)
            valid = j <= max_lane
        sources.append(thread - lane + (j if valid else lane))
        valids.append(valid)
    return np.array(sources), np.array(valids)


@pytest.mark.parametrize("kind, offset, clamp", [
    ("bfly", 4, 0x1F), ("bfly", 16, 0x1F), ("down", 2, 0x1F), ("up", 8, 0), ("idx", 5, 0x1F),
    ("bfly", 4, 0x181F - 0x800), ("down", 1, 0x0F | (0x10 << 8)), ("idx", 3, 0x07 | (0x18 << 8)),  # width 16 and 8 segments
])
def test_shfl_sync_reads_the_documented_lane(kind: str, offset: int, clamp: int) -> None:
    values = np.arange(64, dtype=np.float32) * 1.5
    text = SHUFFLE.format(attrs=ATTRS.format(block=64, grid=1), kind=kind, offset=offset, clamp=clamp)
    got, valid = execute(text, "shfl", [values, np.zeros(64, np.float32), np.zeros(64, bool)])[1:]
    sources, valids = shuffle_expected(kind, offset, clamp)
    np.testing.assert_array_equal(got, values[sources])
    np.testing.assert_array_equal(valid, valids)


def test_shfl_sync_from_an_inactive_member_is_an_error() -> None:
    text = SHUFFLE.format(attrs=ATTRS.format(block=64, grid=1), kind="bfly", offset=1, clamp=0x1F)
    guarded = text.replace("  %pair = nvvm.shfl.sync", "  %c5 = arith.constant 5 : index\n  %low = arith.cmpi ult, %t, %c5 : index\n"
                           "  scf.if %low {\n  %pair = nvvm.shfl.sync").replace("  return\n}", "  }\n  return\n}")
    with pytest.raises(InterpError, match=r"nvvm.shfl.sync: thread 0 names lane 5 in its member mask 0xffffffff, which "
                                          r"does not execute it"):
        execute(guarded, "shfl", [np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(64, bool)])


def test_vote_sync_ballot_any_all() -> None:
    text = f"""
func.func @vote(%p: memref<64xi1>, %out: memref<64x3xi32>) {ATTRS.format(block=64, grid=1)} {{
  %t = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %pred = memref.load %p[%t] : memref<64xi1>
  %all = arith.constant -1 : i32
  %ballot = nvvm.vote.sync ballot %all, %pred -> i32
  %any = nvvm.vote.sync any %all, %pred -> i1
  %every = nvvm.vote.sync all %all, %pred -> i1
  %any32 = arith.extui %any : i1 to i32
  %every32 = arith.extui %every : i1 to i32
  memref.store %ballot, %out[%t, %c0] : memref<64x3xi32>
  memref.store %any32, %out[%t, %c1] : memref<64x3xi32>
  memref.store %every32, %out[%t, %c2] : memref<64x3xi32>
  return
}}
"""
    predicate = np.zeros(64, bool)
    predicate[[0, 3, 31]] = True
    predicate[32:] = True
    got = execute(text, "vote", [predicate, np.zeros((64, 3), np.int32)])[1]
    ballot = np.array([(1 << 0) | (1 << 3) | (1 << 31), -1]).astype(np.int64).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(got[:, 0], np.repeat(ballot, 32))
    np.testing.assert_array_equal(got[:, 1], 1)
    np.testing.assert_array_equal(got[:, 2], np.repeat([0, 1], 32))


# ----------------------------------------------------------------------------
# A hand-written NVVM kernel, end to end: cp.async -> ldmatrix -> mma.sync -> global stores

GEMM = """
gpu.module @nv {
  gpu.func @gemm(%a: memref<2x16x16xf16>, %b: memref<2x16x8xf16>, %c: memref<2x16x8xf32>, %d: memref<2x16x8xf32>)
      workgroup(%sa: memref<256xf16, #gpu.address_space<workgroup>>, %sb: memref<128xf16, #gpu.address_space<workgroup>>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 2, 1, 1>} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %cta = nvvm.read.ptx.sreg.ctaid.x : i32
    %lane = nvvm.read.ptx.sreg.laneid : i32
    %i1 = arith.constant 1 : i32
    %i2 = arith.constant 2 : i32
    %i4 = arith.constant 4 : i32
    %i8 = arith.constant 8 : i32
    %i16 = arith.constant 16 : i32
    %i128 = arith.constant 128 : i32
    %i256 = arith.constant 256 : i32
    %xa = memref.extract_aligned_pointer_as_index %a : memref<2x16x16xf16> -> index
    %xb = memref.extract_aligned_pointer_as_index %b : memref<2x16x8xf16> -> index
    %xc = memref.extract_aligned_pointer_as_index %c : memref<2x16x8xf32> -> index
    %xd = memref.extract_aligned_pointer_as_index %d : memref<2x16x8xf32> -> index
    %ya = arith.index_cast %xa : index to i64
    %yb = arith.index_cast %xb : index to i64
    %yc = arith.index_cast %xc : index to i64
    %yd = arith.index_cast %xd : index to i64
    %pa = llvm.inttoptr %ya : i64 to !llvm.ptr<1>
    %pb = llvm.inttoptr %yb : i64 to !llvm.ptr<1>
    %pc = llvm.inttoptr %yc : i64 to !llvm.ptr<1>
    %pd = llvm.inttoptr %yd : i64 to !llvm.ptr<1>
    %xsa = memref.extract_aligned_pointer_as_index %sa : memref<256xf16, #gpu.address_space<workgroup>> -> index
    %xsb = memref.extract_aligned_pointer_as_index %sb : memref<128xf16, #gpu.address_space<workgroup>> -> index
    %ysa = arith.index_cast %xsa : index to i32
    %ysb = arith.index_cast %xsb : index to i32
    %psa = llvm.inttoptr %ysa : i32 to !llvm.ptr<3>
    %psb = llvm.inttoptr %ysb : i32 to !llvm.ptr<3>

    // A: 32 rows of 16 bytes, one per thread; B: 16 rows, threads 0-15
    %a_block = arith.muli %cta, %i256 : i32
    %a_mine = arith.muli %tid, %i8 : i32
    %a_at = arith.addi %a_block, %a_mine : i32
    %a_src = llvm.getelementptr %pa[%a_at] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f16
    %a_dst = llvm.getelementptr %psa[%a_mine] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f16
    nvvm.cp.async.shared.global %a_dst, %a_src, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    %b_rows = arith.cmpi ult, %tid, %i16 : i32
    scf.if %b_rows {
      %b_block = arith.muli %cta, %i128 : i32
      %b_at = arith.addi %b_block, %a_mine : i32
      %b_src = llvm.getelementptr %pb[%b_at] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f16
      %b_dst = llvm.getelementptr %psb[%a_mine] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f16
      nvvm.cp.async.shared.global %b_dst, %b_src, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    }
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 0
    nvvm.barrier0

    // ldmatrix.x4: lane l gives row (j mod 2) * 8 + l mod 8, columns (j / 2) * 8.. of A, j = l / 8
    %j = arith.divui %lane, %i8 : i32
    %r = arith.remui %lane, %i8 : i32
    %j_row = arith.remui %j, %i2 : i32
    %j_col = arith.divui %j, %i2 : i32
    %row8 = arith.muli %j_row, %i8 : i32
    %row = arith.addi %row8, %r : i32
    %row_at = arith.muli %row, %i16 : i32
    %col_at = arith.muli %j_col, %i8 : i32
    %a_elem = arith.addi %row_at, %col_at : i32
    %a_row = llvm.getelementptr %psa[%a_elem] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f16
    %fa = nvvm.ldmatrix %a_row {num = 4 : i32, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
    // ldmatrix.x2.trans: lane l gives row l mod 16 of B (K x N row-major)
    %k = arith.remui %lane, %i16 : i32
    %b_elem = arith.muli %k, %i8 : i32
    %b_row = llvm.getelementptr %psb[%b_elem] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f16
    %fb = nvvm.ldmatrix %b_row {num = 2 : i32, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>
    %w0 = llvm.extractvalue %fa[0] : !llvm.struct<(i32, i32, i32, i32)>
    %w1 = llvm.extractvalue %fa[1] : !llvm.struct<(i32, i32, i32, i32)>
    %w2 = llvm.extractvalue %fa[2] : !llvm.struct<(i32, i32, i32, i32)>
    %w3 = llvm.extractvalue %fa[3] : !llvm.struct<(i32, i32, i32, i32)>
    %w4 = llvm.extractvalue %fb[0] : !llvm.struct<(i32, i32)>
    %w5 = llvm.extractvalue %fb[1] : !llvm.struct<(i32, i32)>
    %a0 = llvm.bitcast %w0 : i32 to vector<2xf16>
    %a1 = llvm.bitcast %w1 : i32 to vector<2xf16>
    %a2 = llvm.bitcast %w2 : i32 to vector<2xf16>
    %a3 = llvm.bitcast %w3 : i32 to vector<2xf16>
    %b0 = llvm.bitcast %w4 : i32 to vector<2xf16>
    %b1 = llvm.bitcast %w5 : i32 to vector<2xf16>

    // C and D: lane holds row g and g + 8, columns 2t, 2t + 1 (g = lane / 4, t = lane mod 4)
    %g = arith.divui %lane, %i4 : i32
    %t = arith.remui %lane, %i4 : i32
    %g8 = arith.addi %g, %i8 : i32
    %col = arith.muli %t, %i2 : i32
    %cd_block = arith.muli %cta, %i128 : i32
    %top0 = arith.muli %g, %i8 : i32
    %top1 = arith.addi %top0, %col : i32
    %top = arith.addi %top1, %cd_block : i32
    %low0 = arith.muli %g8, %i8 : i32
    %low1 = arith.addi %low0, %col : i32
    %low = arith.addi %low1, %cd_block : i32
    %c_top = llvm.getelementptr %pc[%top] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %c_low = llvm.getelementptr %pc[%low] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %c01 = llvm.load %c_top {alignment = 8 : i64} : !llvm.ptr<1> -> vector<2xf32>
    %c23 = llvm.load %c_low {alignment = 8 : i64} : !llvm.ptr<1> -> vector<2xf32>
    %c0 = vector.extract %c01[0] : f32 from vector<2xf32>
    %c1 = vector.extract %c01[1] : f32 from vector<2xf32>
    %c2 = vector.extract %c23[0] : f32 from vector<2xf32>
    %c3 = vector.extract %c23[1] : f32 from vector<2xf32>
    %acc = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0, %c1, %c2, %c3] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    %d0 = llvm.extractvalue %acc[0] : !llvm.struct<(f32, f32, f32, f32)>
    %d1 = llvm.extractvalue %acc[1] : !llvm.struct<(f32, f32, f32, f32)>
    %d2 = llvm.extractvalue %acc[2] : !llvm.struct<(f32, f32, f32, f32)>
    %d3 = llvm.extractvalue %acc[3] : !llvm.struct<(f32, f32, f32, f32)>
    %d01 = vector.from_elements %d0, %d1 : vector<2xf32>
    %d23 = vector.from_elements %d2, %d3 : vector<2xf32>
    %d_top = llvm.getelementptr %pd[%top] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %d_low = llvm.getelementptr %pd[%low] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    llvm.store %d01, %d_top {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<1>
    llvm.store %d23, %d_low {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<1>
    gpu.return
  }
}
"""


def test_a_hand_written_nvvm_kernel_runs_end_to_end() -> None:
    """Two blocks, each one warp: D = A x B + C of its own matrices, through shared memory."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 16, 16)).astype(np.float16)
    b = rng.standard_normal((2, 16, 8)).astype(np.float16)
    c = rng.standard_normal((2, 16, 8)).astype(np.float32)
    d = execute(GEMM, "gemm", [a, b, c, np.zeros((2, 16, 8), np.float32)])[3]
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64)) + c
    np.testing.assert_allclose(d, expected, rtol=1e-6, atol=1e-6)


def test_the_kernel_without_its_wait_reads_shared_memory_in_flight() -> None:
    with pytest.raises(InterpError, match="nvvm.ldmatrix in thread 0 reads byte 0 of workgroup attribution 0 .* before "
                                          "the issuing thread waited for its group"):
        execute(GEMM.replace("nvvm.cp.async.wait.group 0", ""), "gemm",
                [np.zeros((2, 16, 16), np.float16), np.zeros((2, 16, 8), np.float16), np.zeros((2, 16, 8), np.float32),
                 np.zeros((2, 16, 8), np.float32)])


def test_a_barrier_between_the_copy_and_the_wait_does_not_publish_the_data() -> None:
    """The copy lands when its thread waits: another thread reads it only after a barrier that follows the wait."""
    early = "nvvm.barrier0\n  nvvm.cp.async.commit.group\n  nvvm.cp.async.wait.group 0"
    with pytest.raises(InterpError, match="LDS race .* since the last barrier"):
        run_cp_async(wait=early, read="(d0 + 1) mod 32", barrier="")
    np.testing.assert_array_equal(run_cp_async(wait=early, read="(d0 + 1) mod 32"), SOURCE[(np.arange(32) + 1) % 32])


@pytest.mark.parametrize("stride, cycles", [(1, 0), (2, 4), (8, 28)])
def test_ldmatrix_bank_conflicts_count_a_matrix_per_cycle(stride: int, cycles: int) -> None:
    """Rows 16 bytes apart fill the 32 banks; 32 bytes apart, rows 0 and 4 of a matrix share banks (one extra cycle
    per matrix); 128 bytes apart, all 8 rows do (7 extra cycles per matrix)."""
    from pagedir.interp import lds_banks

    with lds_banks.tally() as counts:
        run_ldmatrix(4, False, (np.arange(32) * stride) % 64, np.zeros((64, 8), np.int16))
    ldmatrix = [c for (name, _, _), c in counts.ops.items() if name == "nvvm.ldmatrix"]
    assert [(c.instructions, c.cycles) for c in ldmatrix] == [(1, cycles)]


def test_a_block_of_16_threads_shuffles_within_its_threads() -> None:
    """A full member mask in a block of 16: lanes 16-31 do not exist (as if exited); a read from one is an error."""
    text = SHUFFLE.format(attrs=ATTRS.format(block=16, grid=1), kind="bfly", offset=8, clamp=0x1F)
    text = text.replace("memref<64xf32>", "memref<16xf32>").replace("memref<64xi1>", "memref<16xi1>")
    values = np.arange(16, dtype=np.float32)
    got = execute(text, "shfl", [values, np.zeros(16, np.float32), np.zeros(16, bool)])[1]
    np.testing.assert_array_equal(got, values[np.arange(16) ^ 8])
    with pytest.raises(InterpError, match="reads lane 16 of its warp, which is not an active member"):
        execute(text.replace("%offset = arith.constant 8", "%offset = arith.constant 16"), "shfl",
                [values, np.zeros(16, np.float32), np.zeros(16, bool)])


NVGPU_LDMATRIX = """
func.func @ldm(%out: memref<32x8xf16>) attributes {{rock.kernel, rock.block_size = 32 : i64, rock.grid_size = 1 : i64}} {{
  %tid = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %tile = memref.alloc() : memref<16x{width}xf16, #gpu.address_space<workgroup>>
  %r = affine.apply affine_map<(l) -> (l mod 8 + ((l floordiv 8) mod 2) * 8)>(%tid)
  %c = affine.apply affine_map<(l) -> ((l floordiv 16) * 8)>(%tid)
  %m = nvgpu.ldmatrix %tile[%r, %c] {{numTiles = 4 : i32, transpose = false}} : memref<16x{width}xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
  %flat = vector.shape_cast %m : vector<4x2xf16> to vector<8xf16>
  vector.store %flat, %out[%tid, %c0] : memref<32x8xf16>, vector<8xf16>
  return
}}
"""


@pytest.mark.parametrize("width, cycles", [(16, 4), (24, 0)])
def test_nvgpu_ldmatrix_bank_conflicts_count_a_matrix_per_cycle(width: int, cycles: int) -> None:
    """A 16 x 16 f16 tile has rows 32 bytes apart: rows 0 and 4 of each 8x8 matrix share banks (one extra cycle per
    matrix); padded to 24 columns (48 bytes) the 8 rows of a matrix fall in distinct banks."""
    from pagedir.interp import lds_banks

    with lds_banks.tally() as counts:
        execute(NVGPU_LDMATRIX.format(width=width), "ldm", [np.zeros((32, 8), np.float16)])
    ldmatrix = [c for (name, _, _), c in counts.ops.items() if name == "nvgpu.ldmatrix"]
    assert [(c.instructions, c.cycles) for c in ldmatrix] == [(1, cycles)]
