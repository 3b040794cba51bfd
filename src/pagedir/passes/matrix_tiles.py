"""How the attention kernel's flash loop uses the matrix cores: the product of the chip's family and the
waves' split of the work (:class:`MatrixInstruction`, :func:`problem_matrix_instruction`), the LDS the
slices' merge takes, and the layout of the Q, K and V tiles in LDS (their swizzles, and V stored
transposed). rock-attention-to-gridwise sizes the tiling with it, rock-gridwise-attention-to-blockwise
lays out the tiles, and the loop (:class:`pagedir.passes.blockwise_gemm.MatrixLoop`, whose module
docstring has the lane layouts these follow) reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mlir.ir as ir

from pagedir.arch import Chip
from pagedir.targets import MatrixForm, family_of
from pagedir.targets.base import TILE

#: Waves of a workgroup on the matrix cores: one per SIMD.
MATRIX_WAVES = 4
#: f32 padding of each row of the slices' exchange (bank-conflict-free stores).
EXCHANGE_PAD = 4
#: Bytes of a K (or V) tile the default tiling stays within: with its page pointers, 3 workgroups per 64 KB CU.
MFMA_TILE_KEYS = 16 * 1024


@dataclass(frozen=True)
class MatrixInstruction:
    """The chip's matrix product (:class:`pagedir.targets.MatrixForm`: ``TILE x TILE x k`` with ``per_lane``
    A and B values per lane, its lane layout), and how the workgroup's waves share the work: ``slices``
    waves per row block take the keys of a KV tile."""

    form: MatrixForm
    row_blocks: int  # Mp / 16
    slices: int
    waves: int

    @property
    def k(self) -> int:
        return self.form.k

    @property
    def per_lane(self) -> int:
        return self.form.per_lane

    @property
    def wave(self) -> int:
        return self.form.wave

    @property
    def wmma(self) -> bool:
        return self.form.wmma

    @property
    def replicated(self) -> bool:
        return self.form.replicated

    @property
    def busy_waves(self) -> int:
        return min(self.waves, self.row_blocks * self.slices)

    @property
    def groups(self) -> int:
        """Lane groups of 16 in a wave (``g = l div 16`` counts them)."""
        return self.wave // TILE

    @property
    def acc(self) -> int:
        """f32 accumulator values per lane: a 16 x 16 tile over the wave."""
        return TILE * TILE // self.wave


def problem_matrix_instruction(chip: Chip | None, p, block: int, m: int, n: int) -> MatrixInstruction | None:
    """:func:`matrix_instruction` for an attention problem: fp8 K/V (kept fp8 in LDS and converted
    where the VALU loop reads them) take the VALU loop and its tiling."""
    if p.kv_type != p.element:
        return None
    return matrix_instruction(chip, p.element, block, m, n, p.head_dim)


def matrix_instruction(chip: Chip | None, element: ir.Type, block: int, m: int, n: int, head_dim: int) -> MatrixInstruction | None:
    """The chip family's matrix form (``TargetFamily.matrix_form``) and the wave split for this tiling, or
    None (the VALU loop: f32 on RDNA, which has no f32 WMMA, and chips without matrix cores)."""
    form = None if chip is None else family_of(chip).matrix_form(chip, element)
    if form is None:
        return None
    if block % form.wave or n % TILE or head_dim % TILE:
        return None
    if form.max_head_dim is not None and head_dim > form.max_head_dim:
        return None
    waves, row_blocks = block // form.wave, padded_rows(m) // TILE
    return MatrixInstruction(form, row_blocks, key_slices(waves, row_blocks, n), waves)


def key_slices(waves: int, row_blocks: int, n: int) -> int:
    """Waves sharing one row block: as many as the waves per row block, each taking a whole number of
    16-key blocks of the tile (a power of two dividing both); 1 when the row blocks outnumber the waves."""
    slices = 1
    while row_blocks * slices * 2 <= waves and n % (TILE * slices * 2) == 0:
        slices *= 2
    return slices


def column_group(d_tiles: int, element_bits: int) -> int:
    """G: the d-tiles whose V columns a lane reads with one LDS read per key row (up to 16 bytes, a
    power of two dividing the d-tiles; 1 keeps the plain mapping, column ``16 dt + q``)."""
    group = 1
    while group * 2 * element_bits <= 128 and d_tiles % (group * 2) == 0:
        group *= 2
    return group


def padded_rows(m: int) -> int:
    return math.ceil(m / TILE) * TILE


def matrix_lds_bytes(m: int, head_dim: int, slices: int) -> int:
    """LDS of the merge of the slices after the loop: one slice's output rows and (max, sum) per row, in
    f32 (none with one slice)."""
    return (m * (head_dim + EXCHANGE_PAD) + 2 * m) * 4 if slices > 1 else 0


# --- LDS layout of the Q, K and V tiles ----------------------------------------------------
#
# The tiles' rows are stored swizzled (``rock.blockwise_load_tile``'s ``lds_swizzle = [c, s, n, m]``:
# row r's chunk k of c elements stored as chunk ``k xor ((r div s) mod n) m``) so that the loop's LDS reads
# are free of bank conflicts without padding bytes. The reads (CDNA LDS: 32 banks of 4 bytes, bank
# = (byte address div 4) mod 32; a wave's read is served in groups of lanes moving at most 128
# bytes: 32 lanes of <= 4 bytes, 16 of 8, 8 of 16; two lanes of one group on one bank at different
# dwords cost a cycle each) are, lane l, q = l mod 16, g = l div 16: Q's and K's fragments
# ``K[key q][kl g + j]`` (16 rows, one column: unswizzled, every row of D 128 f16 starts in bank 0,
# 16-way), V's ``V[key acc g + j][q]`` (two key rows in a group of 32 lanes: 2-way unswizzled). The
# swizzle taken is the one with the widest chunk (the fewest LDS stores: 16 bytes keeps them
# ds_write_b128), then the fewest flips n (the fewest distinct addresses a lane keeps), that the model
# below finds free of conflicts (the least conflicted one if none is). An xor leaves the offsets
# within an aligned block of n chunks, so the reads' constant column offsets mostly still fold into
# the instructions. pagedir.interp.lds_banks counts the same reads independently in the interpreter
# (``pagedir-run --lds-banks``).

#: Chunk widths tried, in bytes, widest first.
SWIZZLE_CHUNK_BYTES = (16, 8, 4)


def paired_k_reads(instruction: MatrixInstruction, head_dim: int) -> bool:
    """Whether a lane reads its K values of two MFMA steps at once (``MatrixLoop.step_column``): 4 values
    per lane per step (CDNA f16/bf16), D a multiple of 32."""
    return not instruction.wmma and instruction.per_lane == 4 and head_dim % 32 == 0


def tile_reads(instruction: MatrixInstruction, which: str, head_dim: int) -> list[tuple[int, int, int, int]]:
    """One wave's read of the ``which`` ("q", "k" or "v") tile in the loop: per lane (lane, row, column,
    elements). Q's rows are read like K's (a query row per q), 4 values a step when K's are paired."""
    paired = paired_k_reads(instruction, head_dim)
    reads = []
    for lane in range(instruction.wave):
        q, g = lane % TILE, lane // TILE
        if which in "qk":
            column = 0 if instruction.replicated else 8 * g if paired else instruction.per_lane * g
            count = 8 if paired and which == "k" else instruction.per_lane
            reads.append((lane, q, column, count))
        else:  # the first key of a lane's step; gfx11 reads one key row in every lane
            row = 0 if instruction.replicated else instruction.acc * g
            reads.append((lane, row, q, 1))
    return reads


def conflict_cycles(reads: list[tuple[int, int, int, int]], columns: int, elem_bytes: int, swizzle: tuple[int, int, int, int]) -> int:
    """Extra cycles of ``reads`` from rows of ``columns`` elements stored with ``swizzle``, by the model
    above: a lane's elements are read a chunk at a time, in pieces of at most 16 bytes."""
    chunk, rows, count, multiplier = swizzle
    cycles = 0
    elements = reads[0][3]
    per_read = min(elements, chunk)
    for first in range(0, elements, per_read):
        for piece in range(0, per_read * elem_bytes, 16):
            size = min(16, per_read * elem_bytes - piece)
            per_group = 128 // (16 if size > 8 else 8 if size > 4 else 4)
            groups: dict[int, dict[int, set[int]]] = {}
            for lane, row, column, _ in reads:
                d = column + first
                moved = ((d // chunk) ^ (row // rows % count * multiplier)) * chunk + d % chunk
                start = (row * columns + moved) * elem_bytes + piece
                for dword in range(start // 4, (start + size - 1) // 4 + 1):
                    groups.setdefault(lane // per_group, {}).setdefault(dword % 32, set()).add(dword)
            cycles += sum(max(len(d) for d in banks.values()) - 1 for banks in groups.values())
    return cycles


def tile_swizzle(instruction: MatrixInstruction, which: str, head_dim: int, elem_bytes: int) -> tuple[int, int, int, int]:
    """``lds_swizzle`` (chunk elements, rows per step, steps, multiplier) of the ``which`` ("q", "k" or
    "v") tile: see above."""
    reads = tile_reads(instruction, which, head_dim)
    candidates = []
    for chunk_bytes in SWIZZLE_CHUNK_BYTES:
        chunk = max(1, chunk_bytes // elem_bytes)
        chunks = head_dim // chunk if head_dim % chunk == 0 else 0
        count = 1
        while count <= chunks and chunks % count == 0:
            candidates += [(chunk, rows, count, multiplier) for rows in (1, 2, 4, 8, 16)
                           for multiplier in (1, 2, 4, 8) if chunks % (count * multiplier) == 0 and (count > 1 or rows == multiplier == 1)]
            count *= 2
    costs = [(conflict_cycles(reads, head_dim, elem_bytes, c), i) for i, c in enumerate(candidates)]
    return candidates[min(costs)[1]]


# --- V stored transposed --------------------------------------------------------------------
#
# With the plain column mapping (G = 1: a loop with hidden keys) the A operand ``V^T`` wants one element
# of each of 4 key rows per lane: from a row-major V tile, 4 two-byte LDS reads and 2 v_perm_b32 per
# MFMA. So CDNA f16/bf16 loops with hidden keys store V transposed: ``V^T``, a row of keys per column
# of V, laid out for one wide read per d-tile and lane, few address registers and no bank conflicts:
#
# * keys: a row holds a wave slice's keys in the order ``(g, block, j)`` (key ``16 block + 4 g + j``
#   of the slice at place ``4 S g + 4 block + j``, S blocks of 16 keys), so the keys a lane takes in
#   all the slice's blocks (``4 g + j`` of each) are one run of ``4 S``: one ``ds_read_b128`` per
#   d-tile for two blocks, 4 of them into each block's MFMA;
# * columns: the output columns are grouped as the grouped reads do (G d-tiles, module docstring:
#   accumulator ``dt``'s element ``m`` is column ``16 G (dt div G) + G m + dt mod G``), and the row of
#   column ``c`` is ``16 dt + m`` of it: a lane reads row ``16 dt + q``, and the 8 consecutive columns
#   of a lane's 16-byte global load land 16 rows apart (constant offsets from one address);
# * swizzle: a lane's run ``g`` of row ``r`` is stored at run ``g xor ((r div 2) mod 4)``: the 8 lanes
#   of a 16-byte read (rows q..q+7) hit 8 distinct bank groups, the stores of 16 lanes of one key
#   (16 consecutive rows) at most 2 to a bank.
#
# The tile is loaded through a strided 7-D view of that layout (:func:`transposed_v_layout`) whose
# ``lds_swizzle`` moves the run index. Measured counts: docs/measurements.md.


@dataclass(frozen=True)
class TransposedV:
    """The transposed V tile (module section above): ``group`` G; the 7-D load view ``[column div 16G,
    m, column mod G, slice, block, j, g]`` (``shape``, ``strides`` over rows of ``keys``) and its
    ``lds_swizzle``; ``run``: keys of a lane's run (4 S)."""

    group: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    swizzle: tuple[int, int, int, int]
    run: int


def transposed_v_layout(head_dim: int, keys: int, slices: int, element_bits: int) -> TransposedV:
    group = column_group(head_dim // TILE, element_bits)
    slice_keys = keys // slices
    blocks = slice_keys // TILE
    shape = (head_dim // (TILE * group), TILE, group, slices, blocks, 4, 4)
    strides = (TILE * group * keys, keys, TILE * keys, slice_keys, 4, 1, 4 * blocks)
    # flip = (row div 2) mod 4 of the row 16 (G hi + lo) + m: (m div 2) mod 4, m the view's 2nd index
    rows_per_m = group * slices * blocks * 4  # view rows (all but the last index) per step of m
    return TransposedV(group, shape, strides, (1, 2 * rows_per_m, 4, 1), 4 * blocks)


def transposed_v(instruction: MatrixInstruction, hides_keys: bool, swizzle: bool, dma: bool, same_type: bool,
                 element_bits: int) -> bool:
    """Whether the matrix loop's V tile is stored transposed: CDNA's 16x16x16 f16/bf16 MFMA (4 keys a lane)
    with the plain column mapping of a loop with hidden keys, a V tile of the elements the products take
    (no fp8 cache), loaded through registers (the direct-to-LDS loads write rows as they lie) and not
    otherwise swizzled (``--lds-swizzle`` keeps its own V layout)."""
    return (hides_keys and not instruction.wmma and instruction.per_lane == 4 and element_bits == 16 and same_type
            and not swizzle and not dma)
