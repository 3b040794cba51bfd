"""rock-attention-to-gridwise: check rock.attention and choose its tiling (L0 -> L1).

Mirrors rocMLIR's AttentionToGridwise: the op is replaced by
``rock.gridwise_attention_accel`` with the same operands and attributes plus the
launch configuration, and the kernel function gets ``rock.block_size`` and
``rock.grid_size``.

The work decomposition (what the blockwise pass implements):

* A workgroup owns one KV head ``h`` of one sequence ``b`` and a block of
  ``m_per_block`` query rows. Rows are (query head in the group, query position):
  every query head of the KV head's group sits in the same tile, so K and V are
  read from the pages once per group (vLLM's ROCm decode kernel packs heads the
  same way). A tile holds the whole group for ``m_per_block / G`` query positions.
* The workgroup walks the sequence in KV tiles of ``n_per_block`` tokens.
* Grid: ``B * Hkv * ceil(Sq / (m_per_block / G))`` workgroups, times ``num_splits``.
  With a dynamic batch (``?``: one kernel for every batch size) the grid is a formula of
  the argument sizes instead of ``rock.grid_size``: ``rock.grid_map`` (an affine map) of
  the sizes ``rock.grid_sizes`` names (argument, dim pairs): q's dim 0, or for packed
  queries ``cu_seqlens_q``'s dim 0 minus 1, times ``Hkv * ceil(Sq / (m_per_block / G))``.
  Sq is static (for packed queries the longest query a sequence may have), so the grid
  never depends on a value inside a tensor. Split-KV there chooses its count at launch
  (``num_splits`` 0 on the op) or takes a fixed one (rock-gridwise-attention-to-blockwise
  multiplies the grid map by it); a fixed count past the tiles of a static capacity is refused
  as for a static kernel.

Split-KV (flash decoding): with few sequences and KV heads the grid above leaves
most compute units idle (batch 1, one KV head: one workgroup). ``num_splits`` = S
cuts each workgroup's KV tiles into S ranges computed by S workgroups and merged
by a combine kernel (rock-gridwise-attention-to-blockwise). S comes from the
``num-splits`` option, else the kernel's ``rock.num_splits`` attribute, else 1
(today's kernel, nothing recorded). A count of 0 asks for the cost model's choice
(``pagedir.backend.split_kv``): the cheapest S in ``[1, KV tiles]`` of the split kernel's
busiest compute unit at its share of the bandwidth plus the combine's read of the partials
by its workgroups and one more launch, with the chip's compute units
(``pagedir.arch.Chip.compute_units``, or the ``compute-units`` option). A split kernel gets
``rock.split_model`` (the model's constants and the count, 0: at launch) and
``rock.split_map`` / ``rock.split_sizes``: the model's per-launch inputs (workgroups, KV
tiles, partial bytes, combine workgroups) as an affine map of argument sizes (no inputs
with static sizes), which the launch plan writes and the interpreter evaluates at launch.

Default tuning (overridable with ``block-size``, ``m-per-block``,
``n-per-block``, like rocMLIR's perf_config): decode packs the group and nothing
else; prefill takes query positions until 16 rows. On chips whose matrix cores
the blockwise loop uses (``matrix_tiles.problem_matrix_instruction``; fp8 K/V do not) the block is up
to 4 waves (256 threads on CDNA, 128 on RDNA) and the KV tile 64 keys, 32 with split-KV (more
workgroups) and causal prefill (registers), halved while a K tile would pass 16 KB (K or V with its page
pointers keeps 3 workgroups per CU) or there are fewer tiles than splits; prefill
takes query positions until 64 rows (a 16-row block per wave), decode's one row
block is shared by the 4 waves, 16 keys of the tile each; whole waves that would
have nothing to do are not launched.
Elsewhere (the VALU loop) the block gets one thread per four output elements (64
to 256 threads), and a KV tile gives each thread at least one score when the
tile is short of rows.

Pipeline depth (``pipeline_depth`` on the op, recorded when not 1): 2 has the KV loop issue tile
t + 1's loads during tile t's math (``rock-pipeline``). Chosen for decode when every workgroup
has a compute unit of its own (the registers holding the next tile cost waves per SIMD, which
only matter when workgroups share one); else 1. The ``pipeline-depth`` option, else the kernel's
``rock.pipeline_depth``, overrides the choice.

Checks, each a located error naming the value and the limit: element type, head
dim (a multiple of the 128-bit vector width, at most 256), page size (a multiple
of the vector width, so no vector straddles two pages), the GQA ratio and the
tiling's divisibility, and the LDS the tiles need on the chip: the bytes live at
once (Q and scores, plus the larger of K and V with their page pointers), which
no placement by ``rock-reuse-lds`` can go below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mlir.ir as ir

from pagedir.arch import Chip
from pagedir.backend import split_kv
from pagedir.dialect import rock
from pagedir.dialect.ops_attention import VECTOR_BITS, AttentionProblem, is_deref, read_problem
from pagedir.dialect.ops_page_table import batch_dims, slot_count_dim
from pagedir.dialect.types import element_bytes
from pagedir.passes.base import ChipOptions, Pass
from pagedir.passes.matrix_tiles import (MATRIX_WAVES, MFMA_TILE_KEYS, TILE, key_slices, matrix_lds_bytes, padded_rows,
                                          problem_matrix_instruction, transposed_v)
from pagedir.passes.ir_utils import enclosing_function, lower_kernel_ops, pow2_ceil
from pagedir.variants import variant_attributes

MAX_HEAD_DIM = 256
#: Query rows a prefill tile aims for; decode packs the whole group instead. 16 rows keep an f16
#: D=128 prefill kernel at 208 VGPRs (2 waves per SIMD on gfx942); 32 need 256 VGPRs + 128 AGPRs.
PREFILL_ROWS = 16
MAX_BLOCK_SIZE = 256
MIN_BLOCK_SIZE = 64


@dataclass(frozen=True)
class AttentionToGridwiseOptions(ChipOptions):
    #: Chip or target; empty means the kernel's ``rock.arch`` (another chip than it names is an error).
    arch: str = ""
    #: Threads per workgroup; 0 chooses.
    block_size: int = 0
    #: Query rows per workgroup tile (a multiple of the GQA group); 0 chooses.
    m_per_block: int = 0
    #: KV tokens per tile; 0 chooses.
    n_per_block: int = 0
    #: KV splits: -1 takes the kernel's ``rock.num_splits`` (else 1), 0 chooses from the compute units.
    num_splits: int = -1
    #: Compute units to fill when choosing the splits; 0 means the chip's.
    compute_units: int = 0
    #: KV tiles in flight (rock-pipeline): 1 or 2; 0 takes the kernel's ``rock.pipeline_depth``, else chooses.
    pipeline_depth: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pipeline_depth not in (0, 1, 2):
            raise ValueError(f"pipeline-depth must be 1, 2 or 0 (choose), got {self.pipeline_depth}")
        if self.num_splits < -1:
            raise ValueError(f"num-splits must be positive, 0 (choose) or -1 (the kernel's), got {self.num_splits}")
        for name in ("block_size", "m_per_block", "n_per_block", "compute_units"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name.replace('_', '-')} must be positive or 0 (choose), got {getattr(self, name)}")


@dataclass(frozen=True)
class Tiling:
    block_size: int
    m_per_block: int
    n_per_block: int
    grid_size: int
    num_splits: int = 1


class AttentionToGridwisePass(Pass):
    argument = "rock-attention-to-gridwise"
    summary = "Validate rock.attention and choose its tiling: rock.gridwise_attention_accel"
    Options = AttentionToGridwiseOptions

    def run(self, module: ir.Operation) -> bool:
        return lower_kernel_ops(module, self.options.arch, "rock.attention",
                                lambda op, chip: lower_attention(op, chip, self.options))


def plan_attention(op, chip: Chip, options: AttentionToGridwiseOptions) -> tuple[list[str], Tiling | None, int | None]:
    """What this pass makes of ``op``: (why it refuses it, each reason as it reports it; else the tiling and
    the KV tiles in flight). pagedir-gen asks it too, so that it refuses what the compiler would, alike."""
    func = enclosing_function(op.operation)
    problem = read_problem(op)
    errors = list(check_problem(problem)) + list(check_fp8(problem, chip))
    tiling = None
    if not errors:
        wanted = requested_splits(func, options)
        tiling = choose_tiling(problem, options, chip, 1 if wanted is None else wanted, bool(op.causal))
        errors.extend(check_tiling(problem, tiling))
    if not errors:
        errors.extend(check_lds(problem, tiling, chip))
    if not errors:
        splits = requested_splits(func, options)
        if splits is None:
            errors.append(f"has rock.num_splits = {func.attributes['rock.num_splits']} on its kernel: expected a "
                          "non-negative integer (0: chosen from the compute units)")
        elif problem.batch is None or problem.seq_k is None:
            errors.extend(check_dynamic(op, splits))
            if not errors and splits != 1:  # 0: chosen at launch (rock.split_map), else fixed
                tiling = dynamic_split_tiling(tiling, splits)
                errors.extend(check_splits(problem, tiling))
        else:
            tiling = split_tiling(problem, tiling, splits, split_constants(problem, tiling, chip, options))
            errors.extend(check_splits(problem, tiling))
    depth = None
    if not errors:
        depth = pipeline_depth(func, options, problem, tiling, options.compute_units or chip.compute_units)
        if depth is None:
            errors.append(f"has rock.pipeline_depth = {func.attributes['rock.pipeline_depth']} on its kernel: "
                          "expected 1 or 2")
    return errors, tiling, depth


def lower_attention(op, chip: Chip, options: AttentionToGridwiseOptions) -> bool:
    errors, tiling, depth = plan_attention(op, chip, options)
    func = enclosing_function(op.operation)
    problem = read_problem(op)
    if errors:
        for message in errors:
            op.location.emit_error(f"'rock.attention' op {message}")
        return False
    # Both ops declare their operands once (AttentionLike): carried over by name, in that order.
    operands = [group[0] if group else None for group in op.op_def.operands_of(op.operation).values()]
    with op.location, ir.InsertionPoint(op):
        rock.gridwise_attention_accel(
            *operands,
            num_heads_q=op.num_heads_q, num_heads_kv=op.num_heads_kv, causal=op.causal, scale=op.scale,
            **{d.name: getattr(op, d.name) for d in variant_attributes()},
            block_size=tiling.block_size, grid_size=tiling.grid_size,
            m_per_block=tiling.m_per_block, n_per_block=tiling.n_per_block,
            num_splits=tiling.num_splits if tiling.num_splits != 1 else None,
            pipeline_depth=depth if depth != 1 else None,
        )
    i64 = ir.IntegerType.get_signless(64)
    func.attributes["rock.block_size"] = ir.IntegerAttr.get(i64, tiling.block_size)
    swizzled = "rock.lds_swizzle" in func.attributes or "rock.lds_dma" in func.attributes
    if asks_lds_occupancy(problem, tiling, chip, bool(op.causal) or op.window_left is not None, depth, swizzled):
        func.attributes["rock.lds_occupancy"] = ir.UnitAttr.get()
    if tiling.grid_size is not None:
        func.attributes["rock.grid_size"] = ir.IntegerAttr.get(i64, tiling.grid_size)
    else:
        record_grid_formula(func, op, tiling)
    if tiling.num_splits != 1:
        record_split_model(func, op, tiling, split_constants(problem, tiling, chip, options))
    if is_deref(op.k) and problem.seq_k is not None:
        # What the rock.deref views say, which rock-to-gpu drops: a check of the lowered kernel draws its pages.
        func.attributes["rock.paged_kv"] = ir.DenseI64ArrayAttr.get([problem.page_elements, problem.seq_k, problem.heads_kv])
    op.operation.erase()
    return True


def check_problem(p: AttentionProblem):
    vector_len = p.vector_len
    if p.head_dim > MAX_HEAD_DIM:
        yield f"head dim {p.head_dim} is too large: at most {MAX_HEAD_DIM} is supported"
    if p.head_dim % vector_len:
        yield (f"head dim {p.head_dim} must be a multiple of the vector width {vector_len} "
               f"({VECTOR_BITS} bits of {p.element})")
    kv_vector_len = p.kv_vector_len
    if p.kv_element is not None and p.head_dim % kv_vector_len:
        yield (f"head dim {p.head_dim} must be a multiple of the K/V vector width {kv_vector_len} "
               f"({VECTOR_BITS} bits of {p.kv_type})")
    if p.page_elements is not None and p.page_elements % kv_vector_len:
        yield (f"page size {p.page_elements} elements is not a multiple of the vector width {kv_vector_len} "
               f"({VECTOR_BITS} bits of {p.kv_type}): a vector would straddle two pages")


def check_fp8(p: AttentionProblem, chip: Chip):
    """fp8 K/V only in the formats the chip converts in hardware."""
    if p.kv_element is None or str(p.kv_element) in chip.fp8_types:
        return
    supported = ", ".join(chip.fp8_types) if chip.fp8_types else "no fp8 format"
    yield (f"fp8 K/V of type {p.kv_element} is not supported on {chip.name} (it converts {supported}; "
           "gfx942 takes f8E4M3FNUZ and f8E5M2FNUZ, gfx950 f8E4M3FN and f8E5M2)")


def choose_tiling(p: AttentionProblem, options: AttentionToGridwiseOptions, chip: Chip | None = None,
                  splits: int = 1, causal: bool = False) -> Tiling:
    group = p.group
    if options.m_per_block:
        m = options.m_per_block
    elif p.seq_q == 1:
        m = group
    else:
        m = group * max(1, min(p.seq_q, PREFILL_ROWS // group))
    wave = chip.wave_size if chip is not None else 0
    if problem_matrix_instruction(chip, p, MATRIX_WAVES * wave, m, TILE) is not None:
        if not options.m_per_block and p.seq_q > 1:
            m = group * max(1, min(p.seq_q, MATRIX_PREFILL_ROWS // group))
        return matrix_tiling(p, m, options, splits, causal, wave)
    outputs_per_thread = 4
    block = options.block_size or min(MAX_BLOCK_SIZE, max(MIN_BLOCK_SIZE, pow2_ceil(m * p.head_dim // outputs_per_thread)))
    n = options.n_per_block or (64 if m * 32 < block else 32)
    grid = None if p.batch is None else p.batch * workgroups_per_sequence(p, m)
    # Shorter tiles where the chosen one does not fit the chip's LDS (f32 at D 256: 64 keys of K are 64 KiB)
    # or gives fewer tiles than the splits asked for, as the matrix tiling does.
    while not options.n_per_block and n > TILE and (
            (chip is not None and peak_lds_bytes(lds_bytes(p, Tiling(block, m, n, grid))) > chip.lds_per_workgroup)
            or (p.seq_k is not None and math.ceil(p.seq_k / n) < splits)):
        n //= 2
    return Tiling(block, m, n, grid)


#: Query rows of a prefill tile on the matrix cores: a 16-row block per wave.
MATRIX_PREFILL_ROWS = 4 * TILE


def matrix_tiling(p: AttentionProblem, m: int, options: AttentionToGridwiseOptions, splits: int, causal: bool,
                  wave: int) -> Tiling:
    """The matrix loop's tiling (module docstring): up to 4 waves, 16 keys per wave of a row block;
    32-key tiles for split-KV (``splits`` 0: chosen, or more than 1) and causal prefill, shorter ones
    when ``splits`` asks for more splits than tiles."""
    row_blocks = padded_rows(m) // TILE
    waves = MATRIX_WAVES
    # Split-KV wants many workgroups: 32-key tiles (2 waves each) make twice the splits of 64. A causal
    # wave with the whole tile's keys holds the diagonal tiles' product beside the plain one: 64 keys
    # of both spill, 32 keys do not (docs/measurements.md).
    short = splits != 1 or (causal and row_blocks >= waves)
    n = options.n_per_block or (2 * TILE if short else 4 * TILE)
    while not options.n_per_block and n > TILE and (n * p.head_dim * element_bytes(p.element) > MFMA_TILE_KEYS
                                                    or (p.seq_k is not None and math.ceil(p.seq_k / n) < splits)):
        n //= 2
    busy = min(waves, row_blocks * key_slices(waves, row_blocks, n))
    block = options.block_size or busy * wave
    grid = None if p.batch is None else p.batch * workgroups_per_sequence(p, m)
    return Tiling(block, m, n, grid)


def asks_lds_occupancy(p: AttentionProblem, t: Tiling, chip: Chip | None, hides_keys: bool, depth: int = 1,
                       swizzled: bool = False) -> bool:
    """Whether the kernel asks the code generator for the waves per SIMD its LDS allows
    (``rock.lds_occupancy``, backend/kernel_attrs.py): the decode loop on the matrix cores (one row
    block), where LLVM otherwise spends registers on latency: asked, the split decode kernel gets
    the wave its LDS allows for a few more loop instructions. A loop with the hidden-key products
    (causal, window) asks when it reads V transposed (matrix_tiles.transposed_v: not with
    ``rock.lds_swizzle`` / ``rock.lds_dma``, ``swizzled``): it then fits; with V read two bytes at a
    time it spilled when asked, and keeps LLVM's choice. Any other request that would spill is
    dropped by the code generator. At depth 2 (the next K/V tiles held in registers, every workgroup
    a compute unit of its own: the waves count only beside other kernels on the GPU) only a split-KV
    kernel asks: with the backend's 32-bit index arithmetic, which such a request brings on CDNA
    (driver.BackendNarrowIndicesPass), and v_exp_f32 it fits without a spill for a few loop
    instructions (make demo's kernel: 128 VGPRs and 4 waves for 5 more); an unsplit one (4
    workgroups of the README's size) gained its wave for 21 more loop instructions and partial waits
    on its K/V loads. The counts behind these choices: docs/measurements.md."""
    matrix = problem_matrix_instruction(chip, p, t.block_size, t.m_per_block, t.n_per_block)
    if matrix is None or matrix.wmma or (depth != 1 and t.num_splits == 1):
        return False
    if hides_keys:
        return transposed_v(matrix, hides_keys, swizzled, swizzled, p.kv_type == p.element, element_bytes(p.element) * 8)
    return matrix.row_blocks == 1


def workgroups_per_sequence(p: AttentionProblem, m: int) -> int:
    """Workgroups of one sequence: one per KV head and block of query positions."""
    positions = m // p.group if m % p.group == 0 else 1
    return p.heads_kv * math.ceil(p.seq_q / positions)


def check_dynamic(op, splits: int):
    """A dynamic kernel: its batch must be read from an argument (the grid formula's input); a split count
    chosen at launch (0) also needs the block slots (the cost model's KV tiles)."""
    if batch_dimension(op) is None:
        yield ("has a dynamic batch that is not read from a kernel argument (q, or the cu_seqlens_q of a "
               "rock.varlen_view): the grid could not be derived from the argument sizes")
    if splits == 0 and read_problem(op).seq_k is None and not isinstance(slot_count_dim(op.k)[0].owner, ir.Block):
        yield ("has dynamic block slots that are not read from a kernel argument (the block table, or kv_indices): "
               "the split count chosen at launch could not be derived from the argument sizes")


def batch_dimension(op) -> tuple[int, int, int] | None:
    """(argument number, dim, offset): the batch is ``dim`` of that argument's size plus ``offset``
    (q's dim 0, or cu_seqlens_q's dim 0 - 1 for packed queries); None when q is not built from an argument."""
    from pagedir.dialect.ops_page_table import varlen_parts

    source, offset = op.q, 0
    if (parts := varlen_parts(op.q)) is not None:
        source, offset = parts[1], -1
    if not isinstance(source.owner, ir.Block):
        return None
    return ir.BlockArgument(source).arg_number, 0, offset


def record_grid_formula(func: ir.Operation, op, tiling: Tiling) -> None:
    """``rock.grid_map`` / ``rock.grid_sizes``: the workgroups as an affine map of argument sizes
    (input i is dim ``grid_sizes[2i + 1]`` of argument ``grid_sizes[2i]``), evaluated at launch."""
    problem = read_problem(op)
    per_sequence = workgroups_per_sequence(problem, tiling.m_per_block)
    if problem.batch is not None:  # a static batch (the split count alone is chosen at launch): a constant map
        func.attributes["rock.grid_map"] = ir.AffineMapAttr.get(ir.AffineMap.get(0, 0, [
            ir.AffineConstantExpr.get(problem.batch * per_sequence)]))
        func.attributes["rock.grid_sizes"] = ir.DenseI64ArrayAttr.get([])
        return
    argument, dim, offset = batch_dimension(op)
    batch = ir.AffineDimExpr.get(0) + offset if offset else ir.AffineDimExpr.get(0)
    func.attributes["rock.grid_map"] = ir.AffineMapAttr.get(ir.AffineMap.get(1, 0, [batch * per_sequence]))
    func.attributes["rock.grid_sizes"] = ir.DenseI64ArrayAttr.get([argument, dim])
    # The argument dims that must hold the same batch: the lowered kernel no longer shows which they are.
    func.attributes["rock.batch_sizes"] = ir.DenseI64ArrayAttr.get([x for dims in batch_dims(op) for x in dims])


def requested_splits(func: ir.Operation, options: AttentionToGridwiseOptions) -> int | None:
    """The split count asked for (0: choose); None when ``rock.num_splits`` is not a count."""
    if options.num_splits >= 0:
        return options.num_splits
    if "rock.num_splits" not in func.attributes:
        return 1
    attr = func.attributes["rock.num_splits"]
    if not isinstance(attr, ir.IntegerAttr) or attr.value < 0:
        return None
    return attr.value


def pipeline_depth(func: ir.Operation, options: AttentionToGridwiseOptions, p: AttentionProblem, t: Tiling,
                   compute_units: int) -> int | None:
    """KV tiles in flight: the option, else the kernel's ``rock.pipeline_depth``, else the choice (None when the
    attribute is not 1 or 2). The choice is 2 for decode (Sq = 1: memory-bound) when every workgroup has a compute
    unit of its own (the grid, splits included, at most ``compute_units``): the registers that hold tile t + 1
    during tile t's math may cost a wave per SIMD, which only matters when workgroups share a CU. Prefill
    keeps 1: its math hides less of a tile's latency than it needs registers (depth 2 costs prefill waves;
    docs/measurements.md). A grid known only at launch keeps 1."""
    if options.pipeline_depth:
        return options.pipeline_depth
    if "rock.pipeline_depth" in func.attributes:
        attr = func.attributes["rock.pipeline_depth"]
        return attr.value if isinstance(attr, ir.IntegerAttr) and attr.value in (1, 2) else None
    return 2 if p.seq_q == 1 and t.grid_size is not None and t.grid_size <= compute_units else 1


def dynamic_split_tiling(t: Tiling, splits: int) -> Tiling:
    """``t`` of a dynamic kernel with ``splits`` KV splits (0: chosen at launch): a static grid (the
    batch known, the capacity not) multiplied by a fixed count; a dynamic one is a formula
    (gridwise-attention-to-blockwise multiplies ``rock.grid_map`` by the count)."""
    if splits == 0:  # the count is known at launch only: so is the grid, even where the batch is static
        return Tiling(t.block_size, t.m_per_block, t.n_per_block, None, splits)
    grid = t.grid_size * splits if t.grid_size is not None and splits > 1 else t.grid_size
    return Tiling(t.block_size, t.m_per_block, t.n_per_block, grid, splits)


def split_tiling(p: AttentionProblem, t: Tiling, splits: int, constants: dict) -> Tiling:
    """``t`` with ``splits`` KV splits (0: chosen by the cost model, :mod:`pagedir.backend.split_kv`),
    the grid multiplied."""
    if splits == 0:
        splits = split_kv.choose_splits(static_split_inputs(p, t, constants))
    return Tiling(t.block_size, t.m_per_block, t.n_per_block, t.grid_size * splits, splits)


def split_constants(p: AttentionProblem, t: Tiling, chip: Chip, options: AttentionToGridwiseOptions) -> dict:
    """The cost model's inputs that do not depend on the batch or the capacity."""
    return {
        "tile_bytes": 2 * t.n_per_block * p.head_dim * element_bytes(p.kv_type),
        "q_bytes": t.m_per_block * p.head_dim * element_bytes(p.element),
        "compute_units": options.compute_units or chip.compute_units,
        "bandwidth": split_kv.BANDWIDTH.get(chip.name, split_kv.BANDWIDTH["gfx942"]),
        "launch_seconds": split_kv.LAUNCH_SECONDS,
    }


def static_split_inputs(p: AttentionProblem, t: Tiling, constants: dict) -> split_kv.SplitInputs:
    rows = p.batch * p.heads_q * p.seq_q
    return split_kv.SplitInputs(workgroups=t.grid_size // max(1, t.num_splits), kv_tiles=math.ceil(p.seq_k / t.n_per_block),
                                  partial_bytes=split_kv.partial_bytes(rows, p.head_dim),
                                  combine_workgroups=split_kv.combine_workgroups(rows, p.head_dim), **constants)


def record_split_model(func: ir.Operation, op, t: Tiling, constants: dict) -> None:
    """``rock.split_model`` (the cost model's constants, and the split count chosen, 0: at launch) and
    ``rock.split_map`` / ``rock.split_sizes``: the per-launch inputs (workgroups, kv_tiles,
    partial_bytes, combine_workgroups) as an affine map of argument sizes, like ``rock.grid_map``
    (a static kernel's map has no inputs)."""
    p = read_problem(op)
    per_sequence_rows = p.heads_q * p.seq_q
    inputs: list[int] = []
    if p.batch is None:
        argument, dim, offset = batch_dimension(op)
        inputs += [argument, dim]
        batch = ir.AffineDimExpr.get(0) + offset if offset else ir.AffineDimExpr.get(0)
    else:
        batch = ir.AffineConstantExpr.get(p.batch)
    if p.seq_k is None:
        table, dim = slot_count_dim(op.k)
        inputs += [ir.BlockArgument(table).arg_number, dim]
        capacity = ir.AffineDimExpr.get(len(inputs) // 2 - 1) * (p.page_elements // p.head_dim)
    else:
        capacity = ir.AffineConstantExpr.get(p.seq_k)
    # ceil(x / n) as (x + n - 1) floordiv n: the plan writes the map as Python (floordiv: //)
    results = [batch * workgroups_per_sequence(p, t.m_per_block),
               ir.AffineExpr.get_floor_div(capacity + (t.n_per_block - 1), t.n_per_block),
               split_kv.partial_bytes(batch * per_sequence_rows, p.head_dim),
               split_kv.combine_workgroups(batch * per_sequence_rows, p.head_dim)]
    func.attributes["rock.split_map"] = ir.AffineMapAttr.get(ir.AffineMap.get(len(inputs) // 2, 0, results))
    func.attributes["rock.split_sizes"] = ir.DenseI64ArrayAttr.get(inputs)
    i64, f64 = ir.IntegerType.get_signless(64), ir.F64Type.get()
    entries = {k: ir.FloatAttr.get(f64, v) if isinstance(v, float) else ir.IntegerAttr.get(i64, v) for k, v in constants.items()}
    entries["num_splits"] = ir.IntegerAttr.get(i64, t.num_splits)
    func.attributes["rock.split_model"] = ir.DictAttr.get(entries)


def check_splits(p: AttentionProblem, t: Tiling):
    if p.seq_k is None:
        return
    tiles = math.ceil(p.seq_k / t.n_per_block)
    if t.num_splits > tiles:
        yield (f"num_splits {t.num_splits} exceeds the {tiles} KV tiles of {t.n_per_block} tokens a sequence of "
               f"{p.seq_k} holds: a split takes at least one tile")


def check_tiling(p: AttentionProblem, t: Tiling):
    if t.m_per_block % p.group:
        yield (f"m_per_block {t.m_per_block} must be a multiple of the query heads per KV head "
               f"({p.heads_q} / {p.heads_kv} = {p.group}): a tile holds whole groups")
    if t.block_size > 1024:
        yield f"block size {t.block_size} exceeds the hardware limit of 1024 threads"


def lds_bytes(p: AttentionProblem, t: Tiling) -> dict[str, int]:
    """LDS the blockwise kernel allocates, per buffer, before rock-reuse-lds."""
    eb, kv_eb = element_bytes(p.element), element_bytes(p.kv_type)
    needs = {
        "q": t.m_per_block * p.head_dim * eb,
        "k": t.n_per_block * p.head_dim * kv_eb,
        "v": t.n_per_block * p.head_dim * kv_eb,
        "scores": t.m_per_block * t.n_per_block * 4,
    }
    if p.page_elements is not None:
        # A tile of n tokens spans at most n * D elements plus one page boundary on each side.
        pointers = math.ceil(t.n_per_block * p.head_dim / p.page_elements) + 1
        needs["k_page_ptrs"] = needs["v_page_ptrs"] = 8 * pointers
    return needs


def peak_lds_bytes(needs: dict[str, int]) -> int:
    """Bytes live at once at the kernel's busiest point: Q and the scores stay live through an
    iteration, the K tile (with its page pointers) and the V tile (with its) never are together."""
    k_side = needs["k"] + needs.get("k_page_ptrs", 0)
    v_side = needs["v"] + needs.get("v_page_ptrs", 0)
    return needs["q"] + needs["scores"] + max(k_side, v_side)


def check_lds(p: AttentionProblem, t: Tiling, chip):
    needs = lds_bytes(p, t)
    peak = peak_lds_bytes(needs)
    matrix = problem_matrix_instruction(chip, p, t.block_size, t.m_per_block, t.n_per_block)
    if matrix is not None:
        # The matrix loop keeps the scores in registers; Q is read once before the loop, K and V never
        # live together, the slices' exchange comes after the loop: any of them can take the others' bytes.
        del needs["scores"]
        needs["exchange"] = matrix_lds_bytes(t.m_per_block, p.head_dim, matrix.slices)
        peak = max(needs["q"], needs["k"] + needs.get("k_page_ptrs", 0), needs["v"] + needs.get("v_page_ptrs", 0),
                   needs["exchange"])
    if peak > chip.lds_per_workgroup:
        parts = ", ".join(f"{k} {v}" for k, v in needs.items())
        yield (f"requires too much LDS memory: {peak} bytes live at once (hardware max for {chip.name} is "
               f"{chip.lds_per_workgroup} bytes; {parts}); lower m_per_block or n_per_block")

