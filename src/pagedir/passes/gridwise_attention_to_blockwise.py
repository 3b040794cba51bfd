"""rock-gridwise-attention-to-blockwise: the flash-attention loop of one workgroup (L1 -> L2).

``rock.gridwise_attention_accel`` becomes, per workgroup (batch ``b``, KV head
``h``, query block ``qt``; see rock-attention-to-gridwise for the decomposition):

```
Q tile [G, Sq_t, D] <- q                       rock.blockwise_load_tile (dense), once
num_tiles = ceil(keys any row of the block may see / N)   tiles past seq_len are skipped
for t in [0, num_tiles):                       iter_args: per output chunk acc, m, l
  K tile [N, D] <- pages of k                  rock.blockwise_load_tile (paged, page table of rock.deref);
                                               keys >= seq_len are not read (valid), they give 0
  S[r, n] = (Q[r] . K[n]) * scale * log2(e)    selected to -inf where the key is past seq_len or (causal) in the future
  barrier
  V tile [N, D] <- pages of v                  keys >= seq_len not read either
  per output chunk (row r, VO columns d0.. of D):
    m' = max(m, max_n S[r, n]);  alpha = exp2(m - m');  p_n = exp2(S[r, n] - m')
    l' = l * alpha + sum_n p_n;  acc' = acc * alpha + sum_n p_n * V[n, d0..]   (causal: over visible n only)
  barrier
out[b, h * G + g, qt * Sq_t + i, d0..] = acc / l   (0 when l == 0: a fully masked row)
```

Serving forms. K/V from a ``rock.block_table_view`` load like ``rock.deref`` pages (the
view's table is the tile loads' page table); with a CSR table the sequence length is
``(pages - 1) * block_size + kv_last_page_len[b]`` (0 without pages, at most the capacity).
Packed queries (``q`` and ``out`` ``rock.varlen_view`` results): sequence ``b`` owns rows
``[cu[b], cu[b + 1])``, padded position ``p`` is row ``cu[b + 1] - Sq + p`` when ``p >= Sq -
(cu[b + 1] - cu[b])``; the Q tile reads those rows (absent positions are not read) and the
epilogue stores to them (absent positions are not stored). With split-KV the workspace keeps
the padded rows: a split writes only the present ones, the combine merges only those and
stores each to its packed row (it reads ``cu_seqlens_q`` and the packed ``out``, arguments of
the kernel); an absent position is neither read nor written.

Split-KV (``num_splits`` = S > 1). Workgroup ``w`` is split ``s = w mod S`` of
the workgroup ``w floordiv S`` above; it visits tiles ``[s * T, min((s + 1) * T,
num_tiles))`` with ``T = ceil(KV tiles / S)``, so a split wholly past seq_len (or,
causal, past the block's last visible key) runs no iteration and loads nothing.
Instead of ``out`` it writes, for each of its rows ``r`` (row of the whole output,
``(b * Hq + q head) * Sq + position``, ``R`` rows in all), the normalized partial
output ``acc / l`` (0 when the split saw no key) and its base-2 log-sum-exp
``m + log2(l)`` (``-inf`` when it saw none) to an f32 workspace appended to the
kernel's arguments (its layout: :mod:`pagedir.backend.split_kv`). Every split writes
every one of its rows, so the combine reads nothing the splits left unwritten. A second
kernel, ``@<kernel>_combine``, merges them (:mod:`pagedir.passes.split_combine`: the
workspace argument, its sizes known at launch, and the combine kernel).

Masked keys never contribute, whatever their slots hold (a stale cache slot may
hold NaN or Inf, and ``0 * NaN`` is NaN): keys past seq_len are not read at all,
since the tile loads carry ``valid = seq_len - key - 1 >= 0`` (the rest of the last
page and of the last tile, for dense K/V too); a masked score is selected, never
computed as ``-inf + NaN``; and with causal masking, where a hidden key is a later
query's live key, its V row is skipped by a select rather than weighted by 0.

Scores are base-2 (log2(e) folded into the scale), so the softmax is ``exp2``.
A running max of ``-inf`` (nothing seen yet) is replaced by 0 before it is
subtracted, so empty rows give ``alpha = p = 0`` rather than NaN.

Loops. On chips and types with a matrix form (matrix_tiles.problem_matrix_instruction) the
loop runs on the matrix cores (:class:`pagedir.passes.blockwise_gemm.MatrixLoop`), else on the
VALU (:class:`pagedir.passes.valu_loop.ValuLoop`); both ask this pass's Builder for the tile
loads, the scores' variants and masks, and hand its epilogue the chunks they end with. Without
the matrix loop, thread ``tid`` owns output chunks ``tid + k * block_size`` of ``VO`` columns
(:meth:`Builder.chunk_position`, :mod:`pagedir.passes.valu_loop` has the layout).

V from a D-major pool (vLLM's paged-attention value cache: a column's tokens side by side) on the
matrix cores is loaded as V^T ``[D, N]`` (the tile map takes ``(d, n)``), swizzled per 16-byte chunk;
the VALU loop keeps ``[N, D]``, the loads storing each token at its row. CDNA f16/bf16 loops with hidden
keys store V^T in a layout of their own (blockwise_gemm, "V stored transposed"; :meth:`Builder.build`
says why the two stay apart).

LDS. Q, K, V and the scores are i8 ``rock.alloc``s viewed with their types, so
``rock-annotate-liveness`` and ``rock-reuse-lds`` can place K and V (never live
together) on the same bytes. Tile loads end with a barrier (every thread sees
the tile). The barrier after the scores orders their writes before the output
phase reads them and closes the reads of K before V may reuse its bytes; the
barrier ending an iteration closes the reads of the scores and V before the next
iteration overwrites them or the page pointers placed on their bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mlir.ir as ir
from mlir.dialects import arith, memref, scf, vector
from mlir.dialects import math as mlir_math

from pagedir.backend import split_kv
from pagedir.dialect import rock
from pagedir.dialect.ops_attention import AttentionProblem, csr_lengths, is_deref, is_paged, read_problem
from pagedir.dialect.ops_page_table import slot_count_dim, varlen_parts
from pagedir.arch import ChipError, kernel_chip
from pagedir.page_sources import source_of
from pagedir.passes.base import ChipOptions, Pass, kernel_functions
from pagedir.targets import family_of
from pagedir.dialect.types import element_bytes
from pagedir.passes.blockwise_gemm import MatrixLoop
from pagedir.passes.families import lowering_of
from pagedir.passes.ir_utils import LOG2_E, apply, divided, f32_const, find_ops, index_const, lds_view, splat
from pagedir.passes.matrix_tiles import MatrixInstruction, problem_matrix_instruction, transposed_v, transposed_v_layout
from pagedir.passes.split_combine import (RowOf, add_workspace_argument, build_combine_kernel, offset, workspace_lse_base,
                                          workspace_parts)
from pagedir.passes.valu_loop import ValuLoop
from pagedir.variants import VARIANTS, KeyRange, Variant, active_variants, query_position, scaled, score_scale

#: Kernel unit attribute asking for the swizzled LDS tiles (the pass's ``lds-swizzle`` option).
LDS_SWIZZLE_ATTR = "rock.lds_swizzle"
#: Kernel unit attribute asking for direct global -> LDS loads of the K/V tiles (``lds-dma``).
LDS_DMA_ATTR = "rock.lds_dma"
#: Output columns a thread accumulates per chunk, at most (f32 registers).
MAX_CHUNK = 8


@dataclass(frozen=True)
class GridwiseAttentionToBlockwiseOptions(ChipOptions):
    #: Chip or target; empty means the kernel's ``rock.arch`` (none: the VALU loop, no matrix cores).
    arch: str = ""
    #: Store the matrix loop's Q, K and V tiles swizzled (blockwise_gemm: conflict-free LDS reads), as a
    #: kernel's ``rock.lds_swizzle`` unit attribute asks too.
    lds_swizzle: bool = False
    #: Load the matrix loop's K and V tiles with direct global -> LDS loads where the chip and the tile
    #: allow (``lds_dma`` on their loads: rock-blockwise-load), as a kernel's ``rock.lds_dma`` asks too.
    lds_dma: bool = False


class GridwiseAttentionToBlockwisePass(Pass):
    argument = "rock-gridwise-attention-to-blockwise"
    summary = "Flash-attention loop over KV tiles with LDS tiles and online softmax"
    Options = GridwiseAttentionToBlockwiseOptions

    def run(self, module: ir.Operation) -> bool:
        ok = True
        for func in kernel_functions(module):
            chip = None
            if self.options.arch or "rock.arch" in func.attributes:
                try:
                    chip = kernel_chip(func, self.options.arch)
                except ChipError as err:
                    func.location.emit_error(str(err))
                    ok = False
                    continue
            swizzle = self.options.lds_swizzle or LDS_SWIZZLE_ATTR in func.attributes
            dma = self.options.lds_dma or LDS_DMA_ATTR in func.attributes
            for op in find_ops(func, "rock.gridwise_attention_accel"):
                ok = lower_gridwise(op.opview, func, chip, swizzle, dma) and ok
        return ok


@dataclass(frozen=True)
class Plan:
    """Sizes of one workgroup's work, from the problem and the tiling attributes."""

    p: AttentionProblem
    block: int  # threads
    m: int  # query rows per tile (G x Sq_t)
    n: int  # KV tokens per tile
    causal: bool
    scale: float  # includes log2(e)
    splits: int = 1  # 0: chosen at launch, the workspace's dim 0 (a dynamic kernel)
    window: int | None = None  # window_left
    variants: tuple[Variant, ...] = ()  # the op's score variants, their operands the op's values

    @property
    def keys(self) -> KeyRange:
        """The keys each query sees (causal, window)."""
        return KeyRange(self.causal, self.window)

    @property
    def sized_at_launch(self) -> bool:
        """A split kernel whose workspace is ``[S, R * (D + 1)]`` with sizes the kernel reads from it:
        the split count chosen at launch (``?``), or a fixed count (a static dim 0) with dynamic sizes."""
        return self.splits == 0 or (self.splits > 1 and (self.p.batch is None or self.p.seq_k is None))

    @property
    def tiles_per_split(self) -> int:
        return math.ceil(self.kv_tiles / self.splits)

    @property
    def rows(self) -> int:  # R: rows of the whole output (b, q head, position)
        return self.p.batch * self.p.heads_q * self.p.seq_q

    @property
    def workspace_elements(self) -> int:  # partial outputs, then the LSEs
        return split_kv.workspace_elements(self.splits, self.rows, self.p.head_dim)

    @property
    def positions(self) -> int:  # query positions per tile (Sq_t)
        return self.m // self.p.group

    @property
    def query_blocks(self) -> int:
        return math.ceil(self.p.seq_q / self.positions)

    @property
    def kv_tiles(self) -> int | None:  # tiles covering the whole capacity (None: dynamic)
        return None if self.p.seq_k is None else math.ceil(self.p.seq_k / self.n)

    @property
    def chunk(self) -> int:  # VO: output columns per chunk
        width = max(1, min(MAX_CHUNK, self.m * self.p.head_dim // self.block))
        while self.p.head_dim % width:
            width //= 2
        return width

    @property
    def chunks(self) -> int:
        return self.m * self.p.head_dim // self.chunk


def lower_gridwise(op, func: ir.Operation, chip=None, swizzle: bool = False, dma: bool = False) -> bool:
    p = read_problem(op)
    m, n, block = op.m_per_block, op.n_per_block, op.block_size
    if m % p.group or m <= 0 or n <= 0 or block <= 0:
        op.location.emit_error(
            f"'rock.gridwise_attention_accel' op m_per_block {m} must be a positive multiple of the group size "
            f"{p.group}, n_per_block {n} and block_size {block} positive"
        )
        return False
    if (varlen_parts(op.q) is None) != (varlen_parts(op.out) is None) or (
            varlen_parts(op.q) is not None and varlen_parts(op.q)[1] != varlen_parts(op.out)[1]):
        op.location.emit_error("'rock.gridwise_attention_accel' op q and out must both be rock.varlen_view results "
                               "of the same cu_seqlens_q, or neither")
        return False
    packed_arguments = None
    if varlen_parts(op.q) is not None and op.num_splits != 1:  # the combine kernel reads cu_seqlens_q, writes out
        packed_arguments = [kernel_argument_number(func, value) for value in reversed(varlen_parts(op.out))]
        if None in packed_arguments:
            op.location.emit_error("'rock.gridwise_attention_accel' op packed queries with num_splits = "
                                   f"{op.num_splits}: the packed out and cu_seqlens_q must be arguments of the "
                                   "kernel, the combine kernel reads and writes them")
            return False
    scale = score_scale(op.scale, p.head_dim)
    values = {name: getattr(op, name) for variant in VARIANTS for name in variant.names()}
    plan = Plan(p, block, m, n, op.causal, scale * LOG2_E, op.num_splits, op.window_left, active_variants(values))
    joined = []  # the variants the combine kernel applies (sinks), their operands as the kernel's argument numbers
    for variant in plan.variants if plan.splits != 1 else ():
        if not variant.joins:
            continue
        numbers = {d.name: kernel_argument_number(func, values[d.name]) for d in variant.operands}
        for name, number in numbers.items():
            if number is None:
                op.location.emit_error(f"'rock.gridwise_attention_accel' op {name} must be an argument of the kernel "
                                       f"with num_splits = {plan.splits}: the combine kernel reads them")
                return False
        joined.append(type(variant).of({**values, **numbers}))
    workspace = add_workspace_argument(func, plan, op.location) if plan.splits != 1 else None
    matrix = problem_matrix_instruction(chip, p, block, m, n)
    # the loop on the family's matrix cores (FamilyLowering.matrix_loop: MatrixLoop, NVIDIA's MmaSyncLoop)
    loop = None if matrix is None else lowering_of(chip).matrix_loop
    with op.location, ir.InsertionPoint(op):
        builder = Builder(plan, op, workspace, matrix, swizzle, dma, loop)
        builder.build()
    # rock-pipeline moves PagePtrLoad and GlobalRead of the next tile ahead, or with direct-to-LDS loads
    # (GlobalToLDS stages) issues each tile's copies during the other tile's math where the family's waits
    # let them overlap it (TargetFamily.pipelined_direct_loads).
    direct = dma and matrix is not None
    if op.pipeline_depth != 1 and not (direct and not direct_loads_pipelined(op, p, plan, chip)):
        mark_kv_loop(builder.k_tile, op.pipeline_depth)
    if workspace is not None:
        build_combine_kernel(func, plan, op.out.type, op.location, joined, packed_arguments)
    op.operation.erase()
    return True


def direct_loads_pipelined(op, p: AttentionProblem, plan: Plan, chip) -> bool:
    """Whether rock-pipeline may issue the direct-to-LDS K and V tiles during each other's math: the family's
    waits let the copies overlap it (TargetFamily.pipelined_direct_loads), the copies pay for it on the chip
    (FamilyLowering.direct_copies_pipelined: AMD's take 16 bytes a lane, gfx950) and both tiles, with their page
    pointers, fit the chip's LDS together (they no longer share bytes); a remark says why not where they do not."""
    if not family_of(chip).pipelined_direct_loads or not lowering_of(chip).direct_copies_pipelined(chip):
        return False
    tile = plan.n * p.head_dim * element_bytes(p.kv_type)
    pointers = 8 * (math.ceil(tile // element_bytes(p.kv_type) / p.page_elements) + 1) if p.page_elements else 0
    if 2 * (tile + pointers) <= chip.lds_per_workgroup:
        return True
    from pagedir.passes.ir_utils import remark

    remark(op.operation, f"direct-to-LDS K/V tiles not pipelined: both tiles need {2 * (tile + pointers)} bytes of "
                         f"LDS at once, more than the {chip.lds_per_workgroup} of {chip.name}; lower n_per_block")
    return False


@dataclass
class ScoreAt:
    """Score ``row``, ``col`` of tile ``t`` for the variants' IR forms (:class:`pagedir.variants.ScoreSite`),
    in the tile's frame: key t * N + col is column col, i_pos is :meth:`Builder.causal_limit`."""

    builder: Builder
    dot: ir.Value
    scale: float
    t: ir.Value
    row: ir.Value
    col: ir.Value

    def head_value(self, operand: ir.Value) -> ir.Value:
        return memref.load(operand, [self.builder.query_head(self.row)])

    def key(self) -> ir.Value:
        return self.col

    def position(self) -> ir.Value:
        return self.builder.causal_limit(self.t, self.row)


def mark_kv_loop(k_tile: ir.Value, depth: int) -> None:
    """``rock.pipeline_depth`` on the KV loop (the loop around the K tile's load), for rock-pipeline."""
    for use in k_tile.uses:
        if use.owner.name == "rock.blockwise_load_tile" and use.owner.parent.name == "scf.for":
            use.owner.parent.attributes["rock.pipeline_depth"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), depth)
            return


def values_along_tokens(v: ir.Value) -> bool:
    """Whether V's pool holds a column's tokens side by side (:meth:`pagedir.page_sources.PageSource.contiguous_run`
    steps by D): vLLM's paged-attention value cache."""
    return is_paged(v) and source_of(v).contiguous_run(v.type.shape[2])[0] > 1


def kernel_argument_number(func: ir.Operation, value: ir.Value) -> int | None:
    """The position of ``value`` among ``func``'s arguments, None when it is not one."""
    for number, argument in enumerate(func.regions[0].blocks[0].arguments):
        if argument == value:
            return number
    return None


#: The bound a tile load states for an index whose range is known only at run time (workgroup ids are 32-bit).
DYNAMIC_BOUND = 2**31 - 1


def bound(extent: int | None, extra: int = 0) -> int:
    """``extent + extra`` as an exclusive index bound; DYNAMIC_BOUND for a dynamic extent."""
    return DYNAMIC_BOUND if extent is None else extent + extra


def reinterpret(view: ir.Value, shape: list[int]) -> ir.Value:
    """The same LDS bytes as ``view`` with another shape."""
    raw = view.owner.operands[0]
    view_type = ir.MemRefType.get(shape, ir.MemRefType(view.type).element_type, memory_space=raw.type.memory_space)
    return memref.view(view_type, raw, index_const(0), [])


class Builder:
    """Emits the blockwise kernel for one gridwise op at the current insertion point."""

    def __init__(self, plan: Plan, op, workspace: ir.Value | None = None, matrix: MatrixInstruction | None = None,
                 swizzle: bool = False, dma: bool = False, loop: type[MatrixLoop] | None = None):
        self.plan = plan
        self.swizzle = swizzle  # the matrix loop's tiles swizzled in LDS (matrix_tiles.tile_swizzle)
        self.dma = dma  # the matrix loop's K/V tiles loaded straight into LDS where they can be
        self.op = op
        self.workspace = workspace
        self.matrix = matrix  # the MFMA form of both products (blockwise_gemm), None: the VALU loop
        self.loop = loop  # the loop class on the matrix cores (with ``matrix``)
        self.f32 = ir.F32Type.get()
        self.index = ir.IndexType.get()

    def build(self) -> None:
        plan, p = self.plan, self.plan.p
        if self.workspace is not None:
            self.workspace, self.split_count, self.rows = workspace_parts(self.workspace, plan)
        self.tid = rock.workitem_id(self.index)
        self.b, self.h, self.qt = self.workgroup_coordinates()
        # With lds_swizzle the matrix loop's tiles are stored with swizzled rows, for conflict-free reads
        # (the loop's tile_swizzles: matrix_tiles.tile_swizzle, ldmatrix's rows on NVIDIA; it costs VGPRs for the
        # swizzled addresses: not the default).
        self.q_swizzle = self.k_swizzle = self.v_swizzle = None
        if self.matrix is not None and self.swizzle:
            self.q_swizzle, self.k_swizzle, self.v_swizzle = self.loop.tile_swizzles(self.matrix, p.head_dim,
                                                                                     element_bytes(p.element))
        q_tile = lds_view([p.group, plan.positions, p.head_dim], p.element)
        self.load_q(q_tile)
        self.q_rows = reinterpret(q_tile, [plan.m, p.head_dim])
        self.k_tile = lds_view([plan.n, p.head_dim], p.kv_type)
        # V^T [D, N] in LDS (a row of keys per column), in one of two layouts, never both:
        # * a D-major V pool (vLLM's paged-attention value cache) on any matrix core: the keys in their order,
        #   each 16-byte load along the tokens one LDS store, its 16-byte chunks xor-ed with the row; the
        #   products' key steps read it (blockwise_gemm.MatrixLoop.transposed_values);
        # * otherwise CDNA f16/bf16 loops with hidden keys (matrix_tiles.transposed_v, "V stored
        #   transposed"): the keys reordered so that a lane's 4 S keys of all blocks are one run, loaded along
        #   D through a 7-D view of the tile.
        # They stay two: the second layout puts the 8 consecutive tokens of one 16-byte pool load in two runs
        # 4 S keys apart (and swaps the runs of odd rows), so each load would become two stores or two 8-byte
        # loads; and it is laid out for 4 keys a lane of 16-bit elements, where the pool needs V^T on every
        # matrix core (WMMA's 8 or 16 keys a lane, f32's 16x16x4, fp8 caches).
        # (NVIDIA's mma.sync loop reads V with ldmatrix .trans from [N, D]: the loads store each token at its row.)
        self.v_pool_transposed = (self.matrix is not None and self.loop.reads_v_transposed
                                  and values_along_tokens(self.op.v))
        self.v_layout = None
        if self.v_pool_transposed:  # 16-byte chunks of a row xor the row: 8 lanes reading 8 rows hit 8 chunks' banks
            chunk = max(1, 16 // element_bytes(p.kv_type))
            self.v_swizzle = (chunk, 1, math.gcd(8, max(1, plan.n // chunk)), 1)
            self.v_tile = lds_view([p.head_dim, plan.n], p.kv_type)
        elif self.matrix is not None and self.loop.reads_v_transposed and transposed_v(self.matrix, plan.keys.hides_keys, self.swizzle, self.dma,
                                                      p.kv_type == p.element, element_bytes(p.element) * 8):
            # read as rows of V^T, loaded through a 7-D view of the same bytes
            self.v_layout = layout = transposed_v_layout(p.head_dim, plan.n, self.matrix.slices,
                                                         element_bytes(p.element) * 8)
            self.v_tile = lds_view([p.head_dim, plan.n], p.kv_type)
            view = ir.MemRefType.get(list(layout.shape), p.kv_type, ir.StridedLayoutAttr.get(0, list(layout.strides)),
                                     memory_space=ir.MemRefType(self.v_tile.type).memory_space)
            self.v_load_view = memref.reinterpret_cast(view, self.v_tile, [], [], [], [0], list(layout.shape),
                                                       list(layout.strides))
        else:
            self.v_tile = lds_view([plan.n, p.head_dim], p.kv_type)
        if self.matrix is None:  # the matrix loop keeps its scores in registers
            self.scores = lds_view([plan.m, plan.n], self.f32)
        self.seq_len = self.sequence_length()
        self.k_scale, self.v_scale = (None if s is None else memref.load(s, [index_const(0)])
                                      for s in (self.op.k_scale, self.op.v_scale))
        # Per-token-head scales (fp8 caches): a tile's N scales of K and of V, loaded with the tile.
        self.k_scale_tile = self.v_scale_tile = None
        if self.op.k_scales is not None:
            self.k_scale_tile, self.v_scale_tile = (lds_view([plan.n], self.f32) for _ in range(2))
        first, end = self.split_range(self.tiles_to_visit())
        first = self.after_window_start(first)
        places = None  # the output chunks are this thread's chunks of the VALU layout (chunk_position)
        if self.matrix is not None:
            final, places = self.loop(self, self.matrix).run(first, end)
        else:
            final = ValuLoop(self).run(first, end)
        if self.workspace is None:
            self.store_output(final, places)
        else:
            self.store_partials(final, places)

    # --- where this workgroup is -------------------------------------------------

    def workgroup_coordinates(self) -> tuple[ir.Value, ir.Value, ir.Value]:
        plan, p = self.plan, self.plan.p
        wg = rock.workgroup_id(self.index)
        if plan.sized_at_launch:  # S from the workspace's dim 0 (a constant when fixed)
            wg, self.split = divide_u32(wg, self.split_count)
        elif plan.splits > 1:
            self.split = apply(lambda w: w % plan.splits, wg)
            wg = apply(lambda w: ir.AffineExpr.get_floor_div(w, plan.splits), wg)
        per_batch = p.heads_kv * plan.query_blocks
        b = apply(lambda w: ir.AffineExpr.get_floor_div(w, per_batch), wg)
        h = apply(lambda w: ir.AffineExpr.get_floor_div(w, plan.query_blocks) % p.heads_kv, wg)
        qt = apply(lambda w: w % plan.query_blocks, wg)
        return b, h, qt

    def sequence_length(self) -> ir.Value:
        if (csr := csr_lengths(self.op.k)) is not None:
            return self.csr_sequence_length(*csr)
        if self.op.seq_lens is None:
            return index_const(self.plan.p.seq_k)
        length = memref.load(self.op.seq_lens, [self.b])
        return arith.index_cast(self.index, length)

    def csr_sequence_length(self, indptr: ir.Value, last_page_len: ir.Value) -> ir.Value:
        """``(pages - 1) * block_size + last_page_len[b]`` (0 without pages), at most the capacity."""
        block_size = self.plan.p.page_elements // self.plan.p.head_dim
        first = memref.load(indptr, [self.b])
        end = memref.load(indptr, [apply(lambda b: b + 1, self.b)])
        pages = arith.index_cast(self.index, arith.subi(end, first))
        last = arith.index_cast(self.index, memref.load(last_page_len, [self.b]))
        has_pages = arith.cmpi(arith.CmpIPredicate.sgt, pages, index_const(0))
        length = arith.select(has_pages, apply(lambda n, l: (n - 1) * block_size + l, pages, last), index_const(0))
        return arith.minsi(arith.maxsi(length, index_const(0)), self.capacity())

    def slots(self) -> ir.Value:
        """Block slots per sequence of a view with dynamic ``?`` pages, read at run time (slot_count_dim)."""
        table, dim = slot_count_dim(self.op.k)
        return memref.dim(table, index_const(dim))

    def capacity(self) -> ir.Value:
        """Keys per sequence (Sk): static, or slots * block_size for a dynamic view."""
        p = self.plan.p
        if p.seq_k is not None:
            return index_const(p.seq_k)
        return apply(lambda s: s * (p.page_elements // p.head_dim), self.slots())

    def tiles_to_visit(self) -> ir.Value:
        """KV tiles holding a key some row of this block may see: later tiles are skipped."""
        plan, p = self.plan, self.plan.p
        limit = self.seq_len
        if plan.causal:
            # The block's last query position i_max sees keys j <= i_max + seq_len - Sq.
            last = apply(lambda qt: qt * plan.positions + (plan.positions - 1), self.qt)
            i_max = arith.minui(last, index_const(p.seq_q - 1))
            limit = arith.minui(limit, plan.keys.causal_end(i_max, self.seq_len, p.seq_q))
        return apply(lambda keys: ir.AffineExpr.get_ceil_div(keys, plan.n), limit)

    def split_range(self, num_tiles: ir.Value) -> tuple[ir.Value | None, ir.Value]:
        """The tiles this workgroup visits: all of them (first None: from 0), or its split's share
        (empty for a split past the last tile)."""
        plan = self.plan
        if plan.splits == 1:
            return None, num_tiles
        if plan.sized_at_launch:  # ceil(tiles of the capacity / S) each, both known at launch
            kv_tiles = apply(lambda c: ir.AffineExpr.get_ceil_div(c, plan.n), self.capacity())
            per_split, _ = divide_u32(apply(lambda t, s: t + s - 1, kv_tiles, self.split_count), self.split_count)
            first = arith.muli(self.split, per_split)
            return first, arith.minui(arith.addi(first, per_split), num_tiles)
        first = apply(lambda s: s * plan.tiles_per_split, self.split)
        end = arith.minui(apply(lambda s: (s + 1) * plan.tiles_per_split, self.split), num_tiles)
        return first, end

    def after_window_start(self, first: ir.Value | None) -> ir.Value | None:
        """``first`` raised past the tiles wholly before the sliding window: they are never loaded.

        The block's first query position i_min = qt * Sq_t + seq_len - Sq sees keys
        j >= i_min - window_left, the block's later queries fewer: the first tile any row
        needs is max(0, i_min - window_left) floordiv N."""
        plan, p = self.plan, self.plan.p
        if plan.window is None:
            return first
        i_min = apply(lambda qt: qt * plan.positions, self.qt)
        start = plan.keys.first_in_window(i_min, self.seq_len, p.seq_q)
        window_first = apply(lambda j: ir.AffineExpr.get_floor_div(j, plan.n), start)
        return window_first if first is None else arith.maxui(first, window_first)

    # --- tile loads ------------------------------------------------------------------

    def varlen_rows(self) -> tuple[ir.Value, ir.Value] | None:
        """Packed queries (``rock.varlen_view``): (packed row of padded position 0, padding) of this
        workgroup's sequence: position ``p`` is row ``start + p``, present when ``p >= padding``."""
        if varlen_parts(self.op.q) is None:
            return None
        if not hasattr(self, "_varlen_rows"):
            cu = varlen_parts(self.op.q)[1]
            first = arith.index_cast(self.index, memref.load(cu, [self.b]))
            end = arith.index_cast(self.index, memref.load(cu, [apply(lambda b: b + 1, self.b)]))
            seq_q = self.plan.p.seq_q
            padding = apply(lambda f, e: seq_q - (e - f), first, end)
            self._varlen_rows = (apply(lambda e: e - seq_q, end), padding)
        return self._varlen_rows

    def load_q(self, q_tile: ir.Value) -> None:
        plan, p = self.plan, self.plan.p
        if (rows := self.varlen_rows()) is not None:
            b, h, qt, start, padding, g, i, d = (ir.AffineDimExpr.get(n) for n in range(8))
            position = qt * plan.positions + i
            rock.blockwise_load_tile(
                varlen_parts(self.op.q)[0], q_tile, [self.b, self.h, self.qt, *rows], None,
                map=ir.AffineMapAttr.get(ir.AffineMap.get(8, 0, [start + position, h * p.group + g, d])),
                block_size=plan.block, valid=ir.AffineMap.get(8, 0, [position - padding, p.seq_q - 1 - position]),
                lds_swizzle=self.lds_swizzle(self.q_swizzle),
            )
            return
        dims = [ir.AffineDimExpr.get(i) for i in range(6)]
        b, h, qt, g, i, d = dims
        tile_map = ir.AffineMap.get(6, 0, [b, h * p.group + g, qt * plan.positions + i, d])
        rock.blockwise_load_tile(
            self.op.q, q_tile, [self.b, self.h, self.qt], None,
            map=ir.AffineMapAttr.get(tile_map), block_size=plan.block,
            index_bounds=[bound(p.batch), p.heads_kv, plan.query_blocks], lds_swizzle=self.lds_swizzle(self.q_swizzle),
        )

    @staticmethod
    def lds_swizzle(swizzle: tuple[int, int, int, int] | None) -> list[int] | None:
        """``rock.blockwise_load_tile``'s ``lds_swizzle`` of a tile rotated by ``swizzle`` (None: not rotated)."""
        return None if swizzle is None else list(swizzle)

    def load_kv(self, source: ir.Value, tile: ir.Value, t: ir.Value) -> None:
        """Tile ``t`` of K or V; keys at or past seq_len are not read (``valid``) and give 0:
        their slots (the rest of the last page, the rest of the tile) may hold anything."""
        plan, p = self.plan, self.plan.p
        # The tile's dimensions in dest order: (key, column), or (column, key) for a V^T tile.
        transposed = tile == self.v_tile and (self.v_layout is not None or self.v_pool_transposed)
        dest = self.v_load_view if transposed and self.v_layout is not None else tile  # the 7-D view of V^T
        tile_dims = ir.MemRefType(dest.type).rank
        b, h, tt, length = (ir.AffineDimExpr.get(i) for i in range(4))
        n, d = self.tile_key_column(4, tile_dims, transposed)
        key = tt * plan.n + n
        indices, bounds = [self.b, self.h, t, self.seq_len], [bound(p.batch), p.heads_kv, bound(plan.kv_tiles), bound(p.seq_k, 1)]
        if is_paged(source) and p.seq_k is None:
            # Dynamic capacity: head h's pages start at page h * slots, an index of its own (the map stays linear).
            head_page = ir.AffineDimExpr.get(4)
            n, d = self.tile_key_column(5, tile_dims, transposed)
            key = tt * plan.n + n
            if not hasattr(self, "_head_page"):  # once: the V load of the iteration reuses K's
                self._head_page = arith.muli(self.h, self.slots())
            indices.append(self._head_page)
            bounds.append(DYNAMIC_BOUND)
            tile_map = ir.AffineMap.get(5 + tile_dims, 0, [b, head_page * p.page_elements + key * p.head_dim + d])
            table, page_size = source.owner.operands[1], p.page_elements
        elif is_paged(source):
            tile_map = ir.AffineMap.get(4 + tile_dims, 0, [b, (h * p.seq_k + key) * p.head_dim + d])
            # The ids a tile's pages come from: the pointer table of rock.deref, a view's block table.
            table = source.owner.operands[0 if is_deref(source) else 1]
            page_size = p.page_elements
        else:
            tile_map = ir.AffineMap.get(4 + tile_dims, 0, [b, h, key, d])
            table, page_size = None, None
        before_seq_len = ir.AffineMap.get(tile_map.n_dims, 0, [length - key - 1])  # key < seq_len
        swizzle = self.k_swizzle if tile == self.k_tile else self.v_swizzle if self.v_layout is None else self.v_layout.swizzle
        rock.blockwise_load_tile(
            source, dest, indices, table,
            map=ir.AffineMapAttr.get(tile_map), block_size=plan.block, page_size=page_size,
            index_bounds=bounds, valid=before_seq_len, lds_swizzle=self.lds_swizzle(swizzle),
            lds_dma=True if self.dma and self.matrix is not None else None,
        )

    def tile_key_column(self, first: int, tile_dims: int, transposed: bool) -> tuple:
        """(key in the tile, column) of the tile dims from dim ``first`` of a load map: ``(n, d)``; for a V^T
        tile ``(d, n)`` (a D-major pool's) or its 7-D view ``(column div 16 G, m, column mod G, slice, block,
        j, g)`` (the hidden keys' layout)."""
        dims = [ir.AffineDimExpr.get(first + i) for i in range(tile_dims)]
        if not transposed:
            return dims[0], dims[1]
        if self.v_layout is None:
            return dims[1], dims[0]
        high, m, low, slice_, block, j, g = dims
        group = self.v_layout.group
        return (slice_ * (self.plan.n // self.matrix.slices) + block * 16 + g * 4 + j,
                high * (16 * group) + m * group + low)

    def load_scales(self, source: ir.Value, tile: ir.Value, t: ir.Value) -> None:
        """The ``N`` per-token-head scales of tile ``t`` (``k_scales`` or ``v_scales``: the cache with a
        head dim of 1) into ``tile``, through the cache's page addressing (each page id read once per
        tile); keys at or past seq_len are not read (a stale slot may hold NaN) and give 0."""
        plan, p = self.plan, self.plan.p
        if p.seq_k is None:
            b, h, tt, length, head_page, n = (ir.AffineDimExpr.get(i) for i in range(6))
            page_size = source.type.shape[2]
            tile_map = ir.AffineMap.get(6, 0, [b, head_page * page_size + tt * plan.n + n])
            indices = [self.b, self.h, t, self.seq_len, arith.muli(self.h, self.slots())]
            bounds = [bound(p.batch), p.heads_kv, bound(plan.kv_tiles), bound(p.seq_k, 1), DYNAMIC_BOUND]
        else:
            b, h, tt, length, n = (ir.AffineDimExpr.get(i) for i in range(5))
            paged = is_paged(source)
            tile_map = ir.AffineMap.get(5, 0, [b, h * p.seq_k + tt * plan.n + n] if paged else [b, h, tt * plan.n + n])
            indices, bounds = [self.b, self.h, t, self.seq_len], [bound(p.batch), p.heads_kv, bound(plan.kv_tiles), bound(p.seq_k, 1)]
            page_size = source.type.shape[2] if paged else None
        table = source.owner.operands[0 if is_deref(source) else 1] if is_paged(source) else None
        key = ir.AffineDimExpr.get(2) * plan.n + ir.AffineDimExpr.get(tile_map.n_dims - 1)
        scale_before_seq_len = ir.AffineMap.get(tile_map.n_dims, 0, [ir.AffineDimExpr.get(3) - key - 1])  # key < seq_len
        rock.blockwise_load_tile(
            source, tile, indices, table,
            map=ir.AffineMapAttr.get(tile_map), block_size=plan.block, page_size=page_size,
            index_bounds=bounds, valid=scale_before_seq_len,
        )

    # --- scores (both loops) -----------------------------------------------------------

    def finish_score(self, dot: ir.Value, t: ir.Value, row: ir.Value, col: ir.Value) -> ir.Value:
        """The base-2 score of row ``row`` and key ``col`` of tile ``t`` from its dot product Q . K
        (both loops): modified by the variants, and ``-inf`` where the key is masked."""
        score = self.modified_score(dot, t, row, col)
        return arith.select(self.key_visible(t, row, col), score, f32_const(-math.inf))

    def modified_score(self, dot: ir.Value, t: ir.Value, row: ir.Value, col: ir.Value) -> ir.Value:
        """The base-2 score of ``dot`` = Q[row] . K[col]: ``scale * dot``, soft-capped (``cap *
        tanh(s / cap)``), plus the ALiBi bias ``slope[head] * (key - i_pos)``, times log2(e)."""
        plan = self.plan
        if self.k_scale is not None:  # K = k * k_scale: one multiply per score, not per key element
            dot = arith.mulf(dot, self.k_scale)
        if self.k_scale_tile is not None:  # K[n] = k[n] * k_scales[n]: one multiply per score too
            dot = arith.mulf(dot, memref.load(self.k_scale_tile, [col]))
        site = ScoreAt(self, dot, plan.scale, t, row, col)
        score = None
        for variant in plan.variants:
            score = variant.base2_score(score, site)
        return scaled(score, site)

    def query_head(self, row: ir.Value) -> ir.Value:
        """The query head of tile row ``row`` (rows are (head in the group, position))."""
        plan, p = self.plan, self.plan.p
        return apply(lambda h, r: h * p.group + ir.AffineExpr.get_floor_div(r, plan.positions), self.h, row)

    def key_visible(self, t: ir.Value, row: ir.Value, col: ir.Value) -> ir.Value:
        """Key ``t * N + col`` is before seq_len and, when causal, not after the row's query position
        (and, with a window, not before its start)."""
        plan = self.plan
        key = apply(lambda tt, c: tt * plan.n + c, t, col)
        visible = plan.keys.before_end(key, self.seq_len)
        if plan.keys.hides_keys:
            position = self.causal_limit(t, row)
            if (last := plan.keys.last_key(position)) is not None:
                visible = arith.andi(visible, arith.cmpi(arith.CmpIPredicate.sle, col, last))
            if (first := plan.keys.first_key(position)) is not None:
                visible = arith.andi(visible, arith.cmpi(arith.CmpIPredicate.sge, col, first))
        return visible

    def causal_limit(self, t: ir.Value, row: ir.Value) -> ir.Value:
        """The row's query position in the frame of tile ``t``'s columns, ``i_pos - t * N`` (signed):
        the last column it may see when causal, negative when none.

        Query position i = qt * Sq_t + row mod Sq_t sits at i_pos = i + seq_len - Sq; key
        j = t * N + col is column col."""
        plan, p = self.plan, self.plan.p
        offset = apply(lambda qt, r, tt: qt * plan.positions + r % plan.positions - tt * plan.n, self.qt, row, t)
        return query_position(offset, self.seq_len, p.seq_q)

    def thread_item(self, k: int, count: int) -> tuple[ir.Value, ir.Value, bool]:
        """Item ``tid + k * block_size`` of ``count``: (index, index clamped into range, whether
        some thread's index can pass the end, so that the clamp and a guard are needed)."""
        item = apply(lambda tid: tid + k * self.plan.block, self.tid)
        past_end = (k + 1) * self.plan.block > count
        clamped = arith.minui(item, index_const(count - 1)) if past_end else item
        return item, clamped, past_end

    def chunk_position(self, k: int) -> tuple[ir.Value, bool, ir.Value, ir.Value]:
        """(chunk index, whether it can pass the end, its row, its first column) of this thread's
        k-th output chunk; row and column come from the clamped index."""
        plan, p = self.plan, self.plan.p
        chunk, chunk_in, past_end = self.thread_item(k, plan.chunks)
        per_row = p.head_dim // plan.chunk
        row = apply(lambda c: ir.AffineExpr.get_floor_div(c, per_row), chunk_in)
        col = apply(lambda c: (c % per_row) * plan.chunk, chunk_in)
        return chunk, past_end, row, col

    # --- epilogue ----------------------------------------------------------------------

    def store_output(self, final: list[ir.Value], places: list | None = None) -> None:
        p = self.plan.p
        out = self.op.out
        for k in range(len(final) // 3):
            acc, running_max, total = final[3 * k : 3 * k + 3]
            head, position, stored, col = self.output_place(k, places)
            for variant in self.plan.variants:
                acc, total = variant.join(acc, running_max, total, RowOf(head))
            acc = self.scaled_values(acc)
            has_keys = arith.cmpf(arith.CmpFPredicate.OGT, total, f32_const(0.0))
            result = divided(acc, total, has_keys)
            if not isinstance(p.element, ir.F32Type):
                result = arith.truncf(ir.VectorType.get(ir.VectorType(acc.type).shape, p.element), result)
            out_ref, out_indices = out, [self.b, head, position, col]
            if (rows := self.varlen_rows()) is not None:  # packed outputs: absent positions are not stored
                start, padding = rows
                stored = arith.andi(stored, arith.cmpi(arith.CmpIPredicate.uge, position, padding))
                out_ref, out_indices = varlen_parts(out)[0], [apply(lambda s, q: s + q, start, position), head, col]
            if_op = scf.IfOp(stored)
            with ir.InsertionPoint(if_op.then_block):
                vector.store(result, out_ref, out_indices)
                scf.YieldOp([])

    def output_place(self, k: int, places: list | None) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        """(q head, query position, whether to store, first column) of output chunk ``k``: this thread's
        ``k``-th chunk, or ``places[k]`` = (tile row, first column, also required to store or None)."""
        if places is None:
            chunk, past_end, row, col = self.chunk_position(k)
            head, position, stored = self.output_position(row, chunk, past_end)
            return head, position, stored, col
        row, col, required = places[k]
        head, position, stored = self.output_position(row, None, False)
        return head, position, stored if required is None else arith.andi(stored, required), col

    def scaled_values(self, acc: ir.Value) -> ir.Value:
        """``acc`` (a sum of weighted V rows) times ``v_scale``: V = v * v_scale, applied once per output."""
        if self.v_scale is None:
            return acc
        return arith.mulf(acc, splat(self.v_scale, ir.VectorType(acc.type).shape[0]))

    def output_position(self, row: ir.Value, chunk: ir.Value, past_end: bool) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(q head, query position, whether to store) of a tile row: rows past Sq and chunks past the
        end are not stored."""
        plan, p = self.plan, self.plan.p
        head = apply(lambda h, r: h * p.group + ir.AffineExpr.get_floor_div(r, plan.positions), self.h, row)
        position = apply(lambda qt, r: qt * plan.positions + r % plan.positions, self.qt, row)
        stored = arith.cmpi(arith.CmpIPredicate.ult, position, index_const(p.seq_q))
        if past_end:
            stored = arith.andi(stored, arith.cmpi(arith.CmpIPredicate.ult, chunk, index_const(plan.chunks)))
        return head, position, stored

    def store_partials(self, final: list[ir.Value], places: list | None = None) -> None:
        """Split-KV epilogue: the split's normalized partial output and base-2 log-sum-exp of each
        of its rows, to the workspace (0 and -inf for a row that saw no key)."""
        plan, p = self.plan, self.plan.p
        d = p.head_dim
        lse_base = workspace_lse_base(self.split_count, self.rows, plan)
        for k in range(len(final) // 3):
            acc, running_max, total = final[3 * k : 3 * k + 3]
            acc = self.scaled_values(acc)
            head, position, stored, col = self.output_place(k, places)
            # Unordered: a sum of NaN (the split saw a NaN key) gives a NaN LSE, which the combine
            # passes on to the row, as one kernel would; only a sum of 0 means no key.
            has_keys = arith.cmpf(arith.CmpFPredicate.UNE, total, f32_const(0.0))
            partial = divided(acc, total, has_keys)
            lse = arith.select(has_keys, arith.addf(running_max, mlir_math.log2(total)), f32_const(-math.inf))
            if not plan.sized_at_launch:
                split_row = apply(lambda s, b, h, i: ((s * p.batch + b) * p.heads_q + h) * p.seq_q + i,
                                  self.split, self.b, head, position)
            else:  # R known at launch
                row = apply(lambda b, h, i: (b * p.heads_q + h) * p.seq_q + i, self.b, head, position)
                split_row = arith.addi(arith.muli(self.split, self.rows), row)
            if (rows := self.varlen_rows()) is not None:  # packed queries: absent positions are not written
                stored = arith.andi(stored, arith.cmpi(arith.CmpIPredicate.uge, position, rows[1]))
            if_op = scf.IfOp(stored)
            with ir.InsertionPoint(if_op.then_block):
                vector.store(partial, self.workspace, [apply(lambda r, c: r * d + c, split_row, col)])
                first_chunk = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, col, index_const(0)))
                with ir.InsertionPoint(first_chunk.then_block):  # one thread per row writes its LSE
                    memref.store(lse, self.workspace, [offset(lse_base, split_row)])
                    scf.YieldOp([])
                scf.YieldOp([])


def divide_u32(dividend: ir.Value, divisor: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(quotient, remainder) of two index values known to fit 32 bits (workgroup ids, tile and split
    counts), divided in 32 bits: a 64-bit division by a value known only at run time is a ~100-instruction
    expansion on AMDGPU, the 32-bit one a few."""
    i32 = ir.IntegerType.get_signless(32)
    a, b = arith.index_cast(i32, dividend), arith.index_cast(i32, divisor)
    quotient = arith.divui(a, b)
    remainder = arith.subi(a, arith.muli(quotient, b))
    index = ir.IndexType.get()
    return arith.index_cast(index, quotient), arith.index_cast(index, remainder)
