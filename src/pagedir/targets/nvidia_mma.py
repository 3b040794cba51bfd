"""NVIDIA warp-level matrix and async-copy semantics, as the PTX ISA documents them: one table, no lowering.

Which lane of a warp holds which element of an ``mma.sync`` operand, which lane gives which row address
to ``ldmatrix`` and which lane receives which elements, and the operand rules of ``cp.async``. The
compiler (its NVIDIA lowering) and the interpreter (:mod:`pagedir.interp.ops_nvvm`) both read these,
and the tests check them by execution against numpy, so a mistake here cannot hide in agreement between
the two. Source: NVIDIA, *Parallel Thread Execution ISA*, release 8.7 (the sections are named at each entry).

A leaf module: numpy and :mod:`pagedir.targets.base` only.

Notation (PTX ISA 9.7.14.5.8): ``groupID = laneid >> 2``, ``threadID_in_group = laneid % 4``; a 32-bit
register holding two 16-bit elements holds the lower-numbered element in its low half ("Elements (low
to high)").
"""

from __future__ import annotations

import numpy as np

from pagedir.targets.base import MatrixLayout

#: Threads of a warp (PTX ISA 5.1 "Special registers", ``WARP_SZ``); every warp-collective op below assumes it.
WARP = 32

# ---------------------------------------------------------------------------------------------------------
# mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32
# PTX ISA 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type".

MMA_M, MMA_N, MMA_K = 16, 8, 16
#: Element types of A and B (each ``.f16x2`` register: two elements), accumulators f32.
MMA_INPUT_TYPES = ("f16", "bf16")


def mma_a_position(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of A (16 x 16) in element ``a_i`` (i < 8; register i // 2) of ``lane``:
    row = groupID for 0 <= i < 2 or 4 <= i < 6, else groupID + 8; col = threadID_in_group * 2 + (i & 1),
    plus 8 for i >= 4."""
    group, thread = lane >> 2, lane % 4
    row = group + 8 * ((i >> 1) & 1)
    col = thread * 2 + (i & 1) + 8 * (i >> 2)
    return row, col


def mma_b_position(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of B (16 x 8) in element ``b_i`` (i < 4; register i // 2) of ``lane``:
    row = threadID_in_group * 2 + (i & 1), plus 8 for i >= 2; col = groupID."""
    group, thread = lane >> 2, lane % 4
    return thread * 2 + (i & 1) + 8 * (i >> 1), group + 0 * i


def mma_c_position(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of C and D (16 x 8, f32) in ``c_i`` / ``d_i`` (i < 4) of ``lane``:
    row = groupID for i < 2, else groupID + 8; col = threadID_in_group * 2 + (i & 1)."""
    group, thread = lane >> 2, lane % 4
    return group + 8 * (i >> 1), thread * 2 + (i & 1)


#: Elements per lane of A, B and C/D.
MMA_A_PER_LANE, MMA_B_PER_LANE, MMA_C_PER_LANE = 8, 4, 4


def _table(position, count: int) -> tuple[np.ndarray, np.ndarray]:
    lane = np.arange(WARP)[:, None]
    i = np.arange(count)[None, :]
    row, col = position(lane, i)
    return np.broadcast_to(row, (WARP, count)).copy(), np.broadcast_to(col, (WARP, count)).copy()


#: (rows, cols) index arrays of shape (32, elements per lane), element j of lane l: the table above.
MMA_A = _table(mma_a_position, MMA_A_PER_LANE)
MMA_B = _table(mma_b_position, MMA_B_PER_LANE)
MMA_C = _table(mma_c_position, MMA_C_PER_LANE)


def a_from_accumulators(i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n-tile, c index) of the accumulator element that holds the same (row, col) as ``a_i`` in the same lane,
    when two 16 x 8 accumulators side by side (n-tiles 0 and 1) are read as one 16 x 16 A: a product's D feeds
    the next product's A without leaving the lane (S = Q K^T, then P V)."""
    return i >> 2, i & 3


def mma_layout() -> MatrixLayout:
    """The m16n8k16 table as a :class:`MatrixLayout` (A 16x16, B 16x8, D 16x8; wave = warp)."""
    return MatrixLayout(MMA_M, MMA_N, MMA_K, WARP, MMA_A, MMA_B, MMA_C)


# ---------------------------------------------------------------------------------------------------------
# ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16
# PTX ISA 9.7.14.5.15 "Warp-level matrix load instruction: ldmatrix".
#
# Each of ``num`` 8x8 matrices of 16-bit elements is 8 rows of 16 contiguous bytes; row r of matrix j
# starts at the shared address held by lane 8 * j + r (x1: lanes 0-7 give addresses, x2: 0-15, x4: 0-31;
# the other lanes' addresses are not used). Every row address is 16-byte aligned. The destination has one
# 32-bit register per matrix: register j of lane l holds two elements of matrix j, from row groupID and
# columns threadID_in_group * 2 and + 1; with .trans each matrix is read column-major, so those are
# column groupID, rows threadID_in_group * 2 and + 1 of the matrix as stored.

LDMATRIX_NUMS = (1, 2, 4)
LDMATRIX_ROW_BYTES = 16
LDMATRIX_ELEMENT_BYTES = 2


def ldmatrix_address_lane(matrix: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The lane whose address operand gives row ``row`` (< 8) of matrix ``matrix`` (< num)."""
    return 8 * matrix + row


def ldmatrix_element(lane: np.ndarray, element: np.ndarray, trans: bool) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of the stored 8x8 matrix that ``element`` (0: low half, 1: high half) of each
    destination register of ``lane`` receives (the same for every matrix: register j from matrix j)."""
    row, col = lane >> 2, (lane % 4) * 2 + element
    return (col, row) if trans else (row, col)


# Which rows feed the mma.sync fragments (a consequence of the two tables above, checked by the tests):
# * A (16 x 16, row-major, K contiguous): ldmatrix.x4, lane l gives the row of matrix j = l // 8 at
#   A[(j % 2) * 8 + l % 8][(j // 2) * 8]; register j is then a_{2j}, a_{2j+1}.
# * B stored K-major (B[k][n], n contiguous: a V tile of P x V): ldmatrix.x2.trans, lane l (< 16) gives
#   B[l % 16][0]; registers 0 and 1 are b0 b1 and b2 b3. x4.trans reads the n-tiles 0-7 and 8-15 at once:
#   lane l gives B[(j % 2) * 8 + l % 8][(j // 2) * 8].
# * B stored N-major (B[k][n] at n * K + k, k contiguous: a K tile of Q x K^T): ldmatrix.x2 without .trans,
#   lane l (< 16) gives the row of n = l % 8 at k = (l // 8) * 8; x4: n-tile (j // 2), k half (j % 2).


def ldmatrix_a_row(lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of A (16 x 16, K contiguous) whose 16 bytes ``lane`` addresses for ldmatrix.x4."""
    j = lane // 8
    return (j % 2) * 8 + lane % 8, (j // 2) * 8


def ldmatrix_b_row(lane: np.ndarray, k_major: bool) -> tuple[np.ndarray, np.ndarray]:
    """(k, n) of B (16 x 8 per n-tile; x4: two n-tiles) whose 16 bytes ``lane`` addresses: K-major storage
    with .trans, N-major without (register pairs: b0 b1, b2 b3 of n-tile 0, then of n-tile 1)."""
    j = lane // 8
    if k_major:
        return (j % 2) * 8 + lane % 8, (j // 2) * 8
    return (j % 2) * 8, (j // 2) * 8 + lane % 8


# ---------------------------------------------------------------------------------------------------------
# cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}; cp.async.commit_group; cp.async.wait_group N
# PTX ISA 9.7.9.25.3 "Data Movement and Conversion Instructions: cp.async", "cp.async.commit_group",
# "cp.async.wait_group / cp.async.wait_all".
#
# * Per thread, not per warp: the executing thread copies cp-size bytes from the global address src to
#   the shared address dst, both aligned to cp-size. With src-size (at most cp-size), only
#   src-size bytes are read and the remaining cp-size - src-size bytes of dst are written with zeros
#   (src-size 0: nothing is read). src-size above cp-size is undefined behaviour.
# * The copy is asynchronous: nothing but the async-group mechanism guarantees its completion.
#   cp.async.commit_group puts every cp.async the thread issued since its last commit into a new group
#   (possibly empty); cp.async.wait_group N waits until at most the N most recent groups of the thread
#   are pending and every earlier group is complete (N = 0: all of them). Copies not yet committed are
#   not waited for. Other threads see the data only through the usual synchronisation (bar.sync) after
#   the issuing thread's wait.

#: Cache modifier -> the cp-size values it takes (.cg caches at L2 only and takes 16 bytes only).
CP_ASYNC_SIZES = {"ca": (4, 8, 16), "cg": (16,)}


def cp_async_retired(committed: np.ndarray, group: np.ndarray, keep: int) -> np.ndarray:
    """Whether a copy in group ``group`` (0-based, per thread) is complete after ``cp.async.wait_group keep``
    by a thread that has committed ``committed`` groups: the ``keep`` most recent may still be pending."""
    return group < committed - keep
