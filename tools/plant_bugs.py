#!/usr/bin/env python3
"""Plant known bugs in a scratch copy of the compiler: the tests must catch every one.

A test that passes with and without a bug proves nothing about it. Each plant
below is a bug the compiler had, or one next to it, written as exact text
substitutions in ``src/pagedir``. ``old`` must occur exactly once in its file,
so a refactor that moves the code makes the plant fail loudly (update it)
instead of planting nothing.

For each plant the script copies ``src``, ``tests/fixtures`` and ``tests/lit`` (whose lit.cfg.py
puts the ``src`` beside it first on PYTHONPATH) into a temporary directory,
substitutes there, and runs the plant's catchers with PYTHONPATH pointing at the
copy: pytest node ids, lit files, or shell pipelines of pagedir's tools (most
often ``pagedir-gen ... | pagedir-run --check -``). Every catcher must fail as a
test fails (exit code 1: pytest's failed tests, lit's failed files,
``pagedir-run --check``'s FAIL) with output matching the catcher's ``expect``,
so that it fails because of the planted bug and not a crash. Once, on the
unplanted copy, every catcher must pass. The result is a table: plant, catcher,
what it said, seconds.

    python tools/plant_bugs.py              every plant (minutes)
    python tools/plant_bugs.py NAME ...     only these plants
    python tools/plant_bugs.py --list       the plants and what each breaks

``make plant`` runs them all. Exit code 0 when every plant is caught and every
catcher passes on the clean copy, 1 otherwise (the output of each unexpected
run is printed).
"""

from __future__ import annotations

import argparse
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The console scripts (pytest, lit, pagedir-*) of the environment running this script.
BIN = Path(sys.executable).parent
COPIED = ("src", "tests/lit", "tests/fixtures")  # tests/fixtures: inputs of lit tests


class PlantError(Exception):
    """A plant cannot be applied: its text is not in the source exactly once."""


@dataclass(frozen=True)
class Edit:
    """Replace ``old``, which must occur exactly once in ``path`` (relative to src/pagedir), by ``new``."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Catcher:
    """A test that fails with the plant in and passes without it.

    ``target``: a pytest node id (``tests/unit/...``), a lit file
    (``tests/lit/...``), or a bash pipeline of pagedir's tools (``pipefail``,
    run in the scratch directory). ``expect``: a regular expression the output
    of the failing run must match.
    """

    target: str
    expect: str

    @property
    def kind(self) -> str:
        if self.target.startswith("tests/lit/"):
            return "lit"
        if self.target.startswith("tests/"):
            return "pytest"
        return "shell"


@dataclass(frozen=True)
class Plant:
    name: str
    #: The bug, in a sentence.
    what: str
    edits: tuple[Edit, ...]
    catchers: tuple[Catcher, ...]


@dataclass
class Outcome:
    catcher: Catcher
    #: "pass" (exit 0), "fail" (exit 1 and ``expect`` matched), "error" (anything else).
    status: str
    seconds: float
    #: The line that says why it failed (or passed).
    summary: str
    output: str


# ----------------------------------------------------------------------------
# The plants

GRIDWISE = "passes/gridwise_attention_to_blockwise.py"
SPLIT_COMBINE = "passes/split_combine.py"
VALU_LOOP = "passes/valu_loop.py"
GEMM = "passes/blockwise_gemm.py"
BUFFER_LOAD = "passes/buffer_load.py"
THREADWISE = "passes/threadwise_lowering.py"
REUSE_LDS = "passes/reuse_lds.py"
PIPELINE = "passes/pipeline.py"
BLOCKS = "page_sources/blocks.py"
MMA_SYNC = "passes/families/mma_sync_loop.py"
NVIDIA_LOWERING = "passes/families/nvidia.py"

#: An attention kernel with ragged lengths, checked by pagedir-run against the reference (NaN/Inf past seq_lens).
CHECK_ATTENTION = "pagedir-gen attention --ragged --num-heads-q 4 --num-heads-kv 2 | pagedir-run --check -"
#: The same split into 3 KV ranges and combined by a second kernel.
CHECK_SPLIT_ATTENTION = ("pagedir-gen attention --ragged --num-heads-q 4 --num-heads-kv 2 --seq-len-k 128 --num-splits 3"
                         " | pagedir-run --check -")
#: copy-kv with ragged lengths: with seed 3 some page pointers are null.
COPY_KV = "pagedir-gen copy-kv --batch 3 --num-heads-kv 2 --seq-len 64 --head-dim 16 --page-size 16 --seq-lens"
CHECK_COPY_KV = f"{COPY_KV} | pagedir-run --check - --seed 3"
#: The same on an RDNA chip (other descriptor flags, other range-check rules).
CHECK_COPY_KV_RDNA = f"{COPY_KV} --arch gfx1100 | pagedir-run --check - --seed 3"
#: How numpy's assert_allclose and assert_array_equal report wrong numbers.
WRONG_VALUES = r"Mismatched elements|nan location mismatch"
#: How pagedir-run --check reports a level that computes something else than the reference.
CHECK_FAILED = r"(as written|after rock-kernel-pipeline)( \(launches [^)]*\))?: .*FAIL"
UNMAPPED = r"reads unmapped device address"

REFERENCE_BY_ZERO = Edit(
    "reference.py",
    """    out = np.zeros(q.shape, dtype=np.float32)
    # Masked keys are dropped, never multiplied by a weight of 0: their slots may hold anything
    # (a stale cache slot can hold NaN or Inf, and 0 * NaN is NaN).
    for b in range(batch):
        keys = np.repeat(k[b, :, : lengths[b]], group, axis=0)  # [Hq, seq_len, D]
        values = np.repeat(v[b, :, : lengths[b]], group, axis=0)
        if not causal:
            out[b] = softmax_attention(q[b], keys, values, scale)
            continue
        for i in range(seq_q):
            _, end = KeyRange(causal=True).visible(query_position(i, int(lengths[b]), seq_q), int(lengths[b]))
            seen = max(0, end)
            out[b, :, i : i + 1] = softmax_attention(q[b, :, i : i + 1], keys[:, :seen], values[:, :seen], scale)
    return out
""",
    """    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    keys, queries = np.arange(seq_k)[None, None, :], np.arange(seq_q)[None, :, None]
    valid = keys < lengths[:, None, None]
    if causal:
        valid = valid & (keys <= queries + lengths[:, None, None] - seq_q)
    valid = valid[:, None]
    scores = np.where(valid, scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    weights = np.where(valid, np.exp(scores - row_max), 0.0).astype(np.float32)
    total = weights.sum(axis=-1, keepdims=True)
    out = np.matmul(weights, v)  # PLANTED: masked keys weighted by 0
    return np.where(total > 0, out / np.where(total > 0, total, 1.0), 0.0).astype(np.float32)
""",
)

PLANTS = {plant.name: plant for plant in (
    # --- masked keys ---------------------------------------------------------------
    Plant(
        "attention-k-reads-past-seq-len",
        "rock-gridwise-attention-to-blockwise drops the valid map from the K tile load: keys past seq_len are read",
        (Edit(GRIDWISE, "valid=before_seq_len,", "valid=None if tile == self.k_tile else before_seq_len,  # PLANTED"),),
        (Catcher("tests/unit/test_attention.py::test_pages_past_seq_len_are_never_read[False]", UNMAPPED),),
    ),
    Plant(
        "attention-v-reads-past-seq-len",
        "rock-gridwise-attention-to-blockwise drops the valid map from the V tile load: NaN/Inf past seq_len times 0",
        (Edit(GRIDWISE, "valid=before_seq_len,", "valid=None if tile == self.v_tile else before_seq_len,  # PLANTED"),),
        (Catcher("tests/unit/test_attention.py::test_keys_past_seq_len_never_reach_the_output[decode]", r"are not finite"),
         Catcher(CHECK_ATTENTION, CHECK_FAILED)),
    ),
    Plant(
        "block-id-past-the-pool-read",
        "a block table view's range check lets ids >= num_blocks through: an owned slot past the pool is read",
        (Edit(BLOCKS, "in_pool = arith.cmpi(arith.CmpIPredicate.ult, block.block_id, num_blocks)",
              "in_pool = arith.cmpi(arith.CmpIPredicate.sge, block.block_id, arith.constant(i32, 0))  # PLANTED"),),
        (Catcher("tests/unit/test_serving_forms.py::test_a_block_id_outside_the_pool_reads_zeros_at_every_level[blocks]",
                 rf"{UNMAPPED}|{WRONG_VALUES}"),
         Catcher("pagedir-gen attention --page-table blocks --num-heads-q 4 --num-heads-kv 2 | pagedir-run --check -",
                 rf"{UNMAPPED}|{CHECK_FAILED}")),
    ),
    Plant(
        "attention-causal-v-weighted-by-zero",
        "rock-gridwise-attention-to-blockwise weights causally hidden V rows by 0 instead of skipping them",
        (Edit(VALU_LOOP, "            if last is not None:\n", "            if False:  # PLANTED\n"),
         Edit(GEMM, "return arith.select(sees_non_finite, self.mfma(v_t, probs, acc), self.mfma(sanitized, probs, acc))",
              "return self.mfma(v_t, probs, acc)  # PLANTED")),
        (Catcher("tests/unit/test_attention.py::test_causally_masked_keys_never_reach_the_output[False]", WRONG_VALUES),
         Catcher("tests/unit/test_attention.py::test_causally_masked_keys_never_reach_the_output_without_matrix_cores",
                 WRONG_VALUES)),
    ),
    Plant(
        "attention-causal-diagonal-on-matrix-cores",
        "rock-gridwise-attention-to-blockwise runs P V on the matrix cores in tiles with causally hidden keys too",
        (Edit(GEMM, "return arith.cmpi(arith.CmpIPredicate.sgt, last_key, first_position)",
              "return arith.cmpi(arith.CmpIPredicate.slt, last_key, last_key)  # PLANTED"),),
        (Catcher("tests/unit/test_attention.py::test_causally_masked_keys_never_reach_the_output[False]", WRONG_VALUES),),
    ),
    Plant(
        "transposed-v-read-without-the-flip",
        "the matrix loop reads V^T's runs without the row's xor flip the loader stored them with: a lane takes "
        "another lane group's keys",
        (Edit(GEMM, "moved = arith.xori(self.lane_g, flip)", "moved = self.lane_g  # PLANTED"),),
        (Catcher("tests/unit/test_transposed_v.py::test_kernels_with_hidden_keys_match_the_reference"
                 "[gfx942-f16-prefill-causal]", CHECK_FAILED),),
    ),
    Plant(
        "valu-alpha-from-the-raw-max",
        "the VALU loop rescales by alpha = exp2(m - m') from the raw running max: a row that has seen no key yet "
        "gets exp2(-inf - -inf) = NaN",
        (Edit(VALU_LOOP, "alpha = mlir_math.exp2(arith.subf(running_max, safe_max))",
              "alpha = mlir_math.exp2(arith.subf(running_max, new_max))  # PLANTED"),),
        (Catcher("tests/unit/test_attention.py::test_valu_loop_with_causal_and_window_masks_matches_the_reference"
                 "[prefill-causal-f16]", r"L6 after rock-kernel-pipeline: .*FAIL"),
         Catcher("tests/unit/test_attention.py::test_valu_loop_with_causal_and_window_masks_matches_the_reference"
                 "[prefill-causal-f32]", r"L6 after rock-kernel-pipeline: .*FAIL")),
    ),
    Plant(
        "reference-weights-masked-keys-by-zero",
        "reference.attention multiplies masked keys by a weight of 0 (NaN in a stale slot makes the row NaN)",
        (REFERENCE_BY_ZERO,),
        (Catcher("tests/unit/test_attention.py::test_keys_past_seq_len_never_reach_the_output[decode]",
                 r"np\.isfinite\(expected\)"),
         Catcher(CHECK_ATTENTION, CHECK_FAILED)),
    ),
    # --- page pointers ---------------------------------------------------------------
    Plant(
        "page-pointers-one-round",
        "rock-blockwise-load stages one page pointer per thread: slots past block_size are never written",
        (Edit("passes/blockwise_load.py", "rounds = -(-plan.num_pages // block_size)", "rounds = 1  # PLANTED"),),
        (Catcher("tests/unit/test_copy_kv.py::test_more_pages_per_tile_than_threads[1-32]",
                 r"descriptor base address .* does not fit|reads unmapped|Mismatched elements"),
         Catcher("tests/lit/run/many-pages-per-tile.mlir", r"error: rocdl|: FAIL \(levels")),
    ),
    Plant(
        "merged-vector-pieces-at-one-row",
        "rock-blockwise-load stores every piece of a vector read across two tile dimensions at the first "
        "piece's outer coordinate (the transposed V tile at D 64: half its columns never written)",
        (Edit("passes/blockwise_load.py", "ir.AffineDimExpr.get(0) + first, inner)", "ir.AffineDimExpr.get(0), inner)"),),
        (Catcher("tests/unit/test_transposed_v.py::test_kernels_with_hidden_keys_match_the_reference[gfx942-f16-prefill-d64]",
                 r"FAIL"),
         Catcher("tests/lit/passes/rock-blockwise-load.mlir", r"error: Couldn.t match")),
    ),
    # --- LDS reuse -------------------------------------------------------------------
    Plant(
        "reuse-lds-barriers-in-program-order",
        "rock-reuse-lds lets no access flow along a loop's back edge: no barrier orders the last buffer of an "
        "iteration before the first of the next",
        (Edit(REUSE_LDS, "again = entry.join(current)",
              "again = entry.join(FlowState(current.live, entry.touched))  # PLANTED"),),
        (Catcher("tests/unit/test_reuse_lds.py::test_reused_bytes_are_race_free_on_every_path[loop_alternating]",
                 r"LDS race"),),
    ),
    Plant(
        "reuse-lds-no-interference-in-loops",
        "rock-reuse-lds builds interference only from ranges opened outside loops. Not a wrong result: the barrier "
        "step finds a buffer still live in the bytes it recycles and restores the interference, at the cost of an "
        "LDS allocation per buffer, which the packing assertion catches",
        (Edit(REUSE_LDS, "    for live_in in flow.live_ins:\n        for other in seen[live_in.op].live",
              "    for live_in in [n for n in flow.live_ins if not any(a.name == 'scf.for' for a in ancestors(n.op))]:"
              "  # PLANTED\n        for other in seen[live_in.op].live"),),
        (Catcher("tests/unit/test_reuse_lds.py::test_reused_bytes_are_race_free_on_every_path[live_across_loop]",
                 r"assert \[[0-9, ]+\] == \[[0-9, ]+\]"),),
    ),
    Plant(
        "reuse-lds-neighbour-first-unit-only",
        "rock-reuse-lds keeps a buffer off only the first 16 bytes of each interfering buffer placed before it: "
        "two buffers live together share the rest",
        (Edit(REUSE_LDS, "taken = sorted((offsets[n], offsets[n] + align_up(layout.sizes[n]))",
              "taken = sorted((offsets[n], offsets[n] + ALIGNMENT)  # PLANTED\n                       "),),
        (Catcher("tests/lit/passes/rock-reuse-lds.mlir", r"interfering buffers share LDS bytes|error: Couldn't match"),
         Catcher("tests/unit/test_reuse_lds.py::test_interfering_buffers_get_disjoint_bytes_on_random_graphs[0]",
                 r"interfering buffers \d+ range\(\d+, \d+\) and \d+ range\(\d+, \d+\) overlap")),
    ),
    Plant(
        "reuse-lds-colour-runs-first-colour-only",
        "rock-reuse-lds's colour runs keep a buffer off only the first colour of each interfering buffer: the "
        "layout is refused and first fit taken, which silently costs barriers where the colour runs needed fewer",
        (Edit(REUSE_LDS, "forbidden = {c for n in layout.interference[i] for c in runs[n]}",
              "forbidden = {c for n in layout.interference[i] for c in runs[n][:1]}  # PLANTED"),),
        (Catcher("tests/unit/test_reuse_lds.py::test_colour_runs_keep_interfering_buffers_apart_on_random_graphs[0]",
                 r"colour runs overlap interfering buffers"),),
    ),
    Plant(
        "reuse-lds-first-fit-only",
        "rock-reuse-lds places by first fit alone: as many bytes, but small buffers land in big ones' bytes where "
        "the kernel's own barriers do not order them, and more barriers are inserted",
        (Edit(REUSE_LDS, "for placement in (colour_runs, first_fit):", "for placement in (first_fit,):  # PLANTED"),),
        (Catcher("tests/lit/passes/rock-reuse-lds.mlir", r"error: Couldn't match"),),
    ),
    Plant(
        "liveness-unbounded-integers",
        "rock-annotate-liveness proves overwrites with integers that never wrap: an i8 condition false on the "
        "hardware counts as true, a partial write ends the older value's range and its bytes are given away",
        (Edit("passes/annotate_liveness.py", "return wrap(ARITH[name](a, b), bits)", "return ARITH[name](a, b)  # PLANTED"),),
        (Catcher("tests/unit/test_reuse_lds.py::test_value_kept_by_a_write_that_does_not_cover_it"
                 "[write_under_wrapping_i8_condition]", r"changed what the code computes"),),
    ),
    # --- the interpreter's float rules ----------------------------------------------------
    Plant(
        "interp-maxnumf-propagates-nan",
        "the interpreter runs arith.maxnumf as np.maximum: a NaN operand wins, where MLIR returns the other operand",
        (Edit("interp/ops_arith.py", '"arith.maxnumf": FloatRule(np.fmax,', '"arith.maxnumf": FloatRule(np.maximum,  # PLANTED'),),
        (Catcher("tests/unit/test_interp_float_rules.py::test_elementwise_op_follows_its_rule[arith.maxnumf]",
                 r"arith\.maxnumf\(nan, .*the rule says"),),
    ),
    # --- the interpreter's NVIDIA semantics (PTX ISA; pagedir.targets.nvidia_mma) --------------
    Plant(
        "nvidia-mma-a-registers-swapped",
        "the mma.sync m16n8k16 table swaps A's second and third registers (rows 8-15 of columns 0-7 for rows 0-7 "
        "of columns 8-15): every product mixes up A's quarters",
        (Edit("targets/nvidia_mma.py", "row = group + 8 * ((i >> 1) & 1)", "row = group + 8 * (i >> 2)  # PLANTED"),),
        (Catcher("tests/unit/test_nvvm_interp.py::test_the_table_lists_the_documented_fragments", r"E\s+assert \["),
         Catcher("tests/unit/test_nvvm_interp.py::test_mma_sync_computes_a_times_b_plus_c[bf16]", WRONG_VALUES)),
    ),
    Plant(
        "nvidia-ldmatrix-trans-ignored",
        "ldmatrix .trans loads each 8x8 matrix row-major like the plain form",
        (Edit("targets/nvidia_mma.py", "return (col, row) if trans else (row, col)", "return (row, col)  # PLANTED"),),
        (Catcher("tests/unit/test_nvvm_interp.py::test_ldmatrix_gives_each_lane_the_documented_elements[2-trans]",
                 r"AssertionError"),
         Catcher("tests/unit/test_nvvm_interp.py::test_a_hand_written_nvvm_kernel_runs_end_to_end", WRONG_VALUES)),
    ),
    Plant(
        "nvidia-cp-async-wait-retires-every-group",
        "cp.async.wait_group N completes every committed group, not all but the N newest: a read of the newest "
        "group's bytes is not caught",
        (Edit("targets/nvidia_mma.py", "return group < committed - keep", "return group < committed  # PLANTED"),),
        (Catcher("tests/unit/test_nvvm_interp.py::test_wait_group_1_leaves_the_newest_group_in_flight", r"DID NOT RAISE"),),
    ),
    Plant(
        "nvidia-mma-in-a-partial-warp",
        "the interpreter runs mma.sync / ldmatrix for a warp some of whose threads are inactive (.sync.aligned: "
        "undefined on the hardware) instead of reporting it",
        (Edit("interp/ops_nvvm.py", "        if partial.any():\n", "        if False:  # PLANTED\n"),),
        (Catcher("tests/unit/test_nvvm_interp.py::test_mma_sync_in_part_of_a_warp_is_an_error", r"DID NOT RAISE"),),
    ),
    Plant(
        "nvidia-cp-async-ignores-src-size",
        "cp.async copies all cp-size bytes whatever its src-size: zero-filled rows read the source",
        (Edit("interp/ops_nvvm.py", "inside = byte[None, :] < src_size[:, None]", "inside = byte[None, :] < size + 0 * src_size[:, None]  # PLANTED"),),
        (Catcher("tests/unit/test_nvvm_interp.py::test_cp_async_copies_src_size_bytes_and_fills_the_rest_with_zeros",
                 WRONG_VALUES),
         Catcher("tests/unit/test_nvvm_interp.py::test_cp_async_src_size_0_reads_nothing", UNMAPPED)),
    ),
    # --- the chip --------------------------------------------------------------------
    Plant(
        "chip-option-overrides-the-kernel",
        "an arch option naming another chip than the kernel's rock.arch silently wins: a gfx942 kernel is lowered "
        "with gfx1100's descriptor flags and wave size and still says gfx942",
        (Edit("arch.py", """raise ChipError(f'{what} is for {own.name} (rock.arch = "{recorded}"), not for {asked.name} """
                         """(arch = "{option}")')""", "return asked  # PLANTED"),),
        (Catcher("tests/unit/test_arch.py::test_check_never_runs_a_kernel_lowered_for_another_chip",
                 r"interpreter error|set bits reserved on CDNA|not a shape the interpreter knows the lane layout of"),
         Catcher("tests/lit/attention/chip.mlir", r"filecheck error: .*|error: .*expected string not found")),
    ),
    # --- buffer descriptors and loads --------------------------------------------------
    Plant(
        "buffer-load-no-32-bit-check",
        "rock-buffer-load accepts pages whose num_records or offsets leave 32 bits (caught by lit only: a 4 GiB "
        "page cannot be executed)",
        (Edit(BUFFER_LOAD, "if why := out_of_32_bits(what, num_records, result_bytes(result.type, element)):",
              "if why := None:  # PLANTED"),),
        (Catcher("tests/lit/passes/rock-buffer-load-invalid.mlir", r"expected error .*32-bit buffer range.* was not produced"),),
    ),
    Plant(
        "buffer-load-offset-as-soffset",
        "rock-buffer-load passes the byte offset as soffset, outside CDNA's range check: invalid lanes read past the page",
        (Edit(BUFFER_LOAD, "rsrc, offset, zero32, zero32)", "rsrc, zero32, offset, zero32)  # PLANTED"),),
        (Catcher("tests/unit/test_copy_kv.py::test_ragged_sequences_and_null_pages[k]", UNMAPPED),
         Catcher(CHECK_COPY_KV, UNMAPPED)),
    ),
    Plant(
        "buffer-load-swapped-flags",
        "rock-buffer-load builds RDNA descriptor flags for CDNA chips and CDNA flags for RDNA chips",
        (Edit(BUFFER_LOAD, "lower_global_load(op, family_of(chip).buffer_flags)",
              "lower_global_load(op, family_of(chip).buffer_flags ^ 0x00027000 ^ 0x31027000)  # PLANTED"),),
        (Catcher("tests/unit/test_copy_kv.py::test_dtypes[f16]", r"set bits reserved on CDNA"),
         Catcher(CHECK_COPY_KV_RDNA, CHECK_FAILED)),
    ),
    Plant(
        "mma-sync-hidden-v-weighted-by-zero",
        "the mma.sync loop weights causally hidden V rows by 0 instead of leaving them out (0 x NaN is NaN)",
        (Edit(MMA_SYNC, "return arith.select(sees_non_finite, self.product(a, b, acc), self.product(a, sanitized, acc))",
              "return self.product(a, b, acc)  # PLANTED"),),
        (Catcher("tests/unit/test_nvidia.py::test_mma_sync_causally_hidden_nan_keys_spare_the_other_rows[f16]",
                 WRONG_VALUES),),
    ),
    Plant(
        "mma-sync-p-rows-swapped",
        "the mma.sync loop hands P to the second product with its two rows' registers swapped",
        (Edit(MMA_SYNC, "for part in (low[0:2], low[2:4], high[0:2], high[2:4])",
              "for part in (low[2:4], low[0:2], high[2:4], high[0:2])"),),  # PLANTED
        (Catcher("tests/unit/test_nvidia.py::test_mma_sync_keys_past_seq_len_never_reach_the_output[prefill-causal]",
                 WRONG_VALUES),
         Catcher(f"{CHECK_ATTENTION.replace(' | ', ' --arch sm_90 --seq-len-q 20 --causal | ')}", CHECK_FAILED)),
    ),
    Plant(
        "nvgpu-ldmatrix-ignores-transpose",
        "the interpreter's nvgpu.ldmatrix reads .trans matrices as stored (V's B registers of the mma.sync loop)",
        (Edit("interp/ops_nvgpu.py", 'trans = ir.BoolAttr(operation.attributes["transpose"]).value',
              "trans = False  # PLANTED"),),
        (Catcher("tests/unit/test_nvidia.py::test_interpreter_nvgpu_ldmatrix_follows_the_ptx_fragment_rule[True]",
                 WRONG_VALUES),
         Catcher(f"{CHECK_ATTENTION.replace(' | ', ' --arch sm_90 | ')}", CHECK_FAILED)),
    ),
    Plant(
        "mma-sync-ldmatrix-ignores-swizzle",
        "the mma.sync loop's ldmatrix reads a swizzled tile at the unswizzled column",
        (Edit(MMA_SYNC, "        if swizzle is not None:\n            column = swizzled_column(swizzle, row, column)",
              "        if False:  # PLANTED\n            column = swizzled_column(swizzle, row, column)"),),
        (Catcher("tests/unit/test_nvidia.py::test_check_runs_the_nvidia_lowering[decode-d128-swizzled]", r"FAIL"),),
    ),
    Plant(
        "cp-async-no-wait",
        "rock-blockwise-load's cp.async copies are committed but never waited for before the barrier",
        (Edit(NVIDIA_LOWERING, "        nvvm.cp_async_wait_group(0)\n", ""),),
        (Catcher("tests/unit/test_nvidia.py::test_check_runs_the_cp_async_copies[pointers-decode-f16]",
                 r"LDS race|FAIL"),),
    ),
    Plant(
        "cp-async-no-zero-fill",
        "rock-buffer-load's cp.async copies all 16 bytes of invalid pieces (null pages, keys past seq_len)",
        (Edit(NVIDIA_LOWERING, "size = arith.select(valid, arith.constant(i32, op.bytes), arith.constant(i32, 0))",
              "size = arith.constant(i32, op.bytes)  # PLANTED"),),
        (Catcher("tests/unit/test_nvidia.py::test_check_runs_the_cp_async_copies[pointers-decode-f16]",
                 rf"{UNMAPPED}|FAIL"),),
    ),
    Plant(
        "pointer-load-unguarded",
        "rock-buffer-load's NVIDIA loads ignore their validity: null pages and keys past seq_len are read",
        (Edit(NVIDIA_LOWERING, "        if op.valid is None:\n            value = load_pointer_split(",
              "        if True:  # PLANTED\n            value = load_pointer_split("),),
        (Catcher("tests/unit/test_nvidia.py::test_check_runs_the_nvidia_lowering[pointers-decode-f16]",
                 rf"{UNMAPPED}|FAIL"),
         Catcher(f"{CHECK_ATTENTION.replace(' | ', ' --arch sm_90 | ')}", rf"{UNMAPPED}|{CHECK_FAILED}"),
         Catcher("tests/lit/passes/rock-buffer-load-nvidia.mlir", r"error: Couldn.t match")),
    ),
    Plant(
        "pointer-load-pieces-overlap",
        "rock-buffer-load's NVIDIA loads wider than 16 bytes read every piece at the first piece's address (caught by "
        "lit only: the kernels' vectors are at most 16 bytes)",
        (Edit(NVIDIA_LOWERING, "at = address if first_lane == 0 else", "at = address if True else"),),  # PLANTED
        (Catcher("tests/lit/passes/rock-buffer-load-nvidia.mlir", r"error: Couldn.t match"),),
    ),
    Plant(
        "buffer-load-half-page-records",
        "rock-buffer-load's descriptors cover half a page (num_records): the rest reads 0",
        (Edit(BUFFER_LOAD, "num_records = op.page_size * elem_bytes", "num_records = op.page_size * elem_bytes // 2  # PLANTED"),),
        (Catcher("tests/unit/test_copy_kv.py::test_dtypes[f16]", WRONG_VALUES),
         Catcher(CHECK_ATTENTION, CHECK_FAILED)),
    ),
    Plant(
        "threadwise-no-null-page-guard",
        "rock-threadwise-lowering's paged loads are valid through a null page pointer",
        (Edit(THREADWISE, "arith.andi(arith.andi(in_table, in_buffer), non_null)",
              "arith.andi(in_table, in_buffer)"),
         Edit("page_sources/pointers.py", "        return arith.andi(in_table, non_null)\n", "        return in_table  # PLANTED\n")),
        (Catcher("tests/unit/test_copy_kv.py::test_ragged_sequences_and_null_pages[k]", UNMAPPED),
         Catcher(CHECK_COPY_KV, UNMAPPED)),
    ),
    Plant(
        "threadwise-offset-not-within-page",
        "rock-threadwise-lowering's in-page offset is the flat offset, not taken modulo the page size",
        (Edit(THREADWISE, "[ir.AffineDimExpr.get(0) % page_size]), [flat])",
              "[ir.AffineDimExpr.get(0)]), [flat])  # PLANTED"),),
        (Catcher("tests/unit/test_copy_kv.py::test_page_sizes[8]", WRONG_VALUES),
         Catcher(CHECK_ATTENTION, CHECK_FAILED)),
    ),
    Plant(
        "threadwise-nhd-rows-contiguous",
        "rock-threadwise-lowering reads a page of an nhd block-table view as contiguous rows (the hnd stride)",
        (Edit(BLOCKS, "        offset = affine.apply(ir.AffineMap.get(1, 0, [g.element_offset(ir.AffineDimExpr.get(0))]), [offset])\n",
              "        pass  # PLANTED\n"),),
        (Catcher("tests/unit/test_serving_forms.py::test_serving_forms_match_the_reference[blocks-nhd-decode-gqa-f16]",
                 CHECK_FAILED),
         Catcher("pagedir-gen attention --page-table blocks --kv-layout nhd --seq-lens | pagedir-run --check -",
                 CHECK_FAILED)),
    ),
    Plant(
        "blockwise-block-id-without-head-offset",
        "a block-table view's page address (rock-blockwise-load, rock-threadwise-lowering) is at head 0 of its block",
        (Edit(BLOCKS, "arith.constant(i32, g.head_stride * elem_bytes)", "arith.constant(i32, 0 * elem_bytes)"),),
        (Catcher("tests/unit/test_serving_forms.py::test_serving_forms_match_the_reference[csr-hnd-decode-gqa-f16]",
                 CHECK_FAILED),),
    ),
    Plant(
        "stacked-pool-offset-dropped",
        "the page address of a strided pool leaves out its offset: a stacked cache's V is read from K's half",
        (Edit(BLOCKS, "            base = arith.addi(base, arith.constant(i64, g.offset * elem_bytes))",
              "            pass  # PLANTED"),),
        (Catcher("tests/unit/test_stacked_kv.py::test_stacked_caches_match_the_reference"
                 "[stacked1-nhd-blocks-static-decode-f16]", r"L6 after rock-kernel-pipeline.*FAIL"),
         Catcher("tests/lit/passes/rock-blockwise-load.mlir", r"%c512_i64")),
    ),
    Plant(
        "stacked-pool-contiguous-strides",
        "a strided pool is read with its layout's contiguous strides: stacked1's blocks twice as far apart are not",
        (Edit(BLOCKS, "        if (stated, offset) == ((g.block_stride, g.head_stride, g.token_stride), 0):",
              "        if True:  # PLANTED"),),
        (Catcher("tests/unit/test_stacked_kv.py::test_stacked_caches_match_the_reference"
                 "[stacked1-hnd-csr-dynamic-causal-prefill-bf16]", r"FAIL"),),
    ),
    # --- split-KV --------------------------------------------------------------------
    Plant(
        "split-ranges-start-at-tile-0",
        "rock-gridwise-attention-to-blockwise starts every split at tile 0: the splits' ranges overlap",
        (Edit(GRIDWISE, "first = apply(lambda s: s * plan.tiles_per_split, self.split)",
              "first = apply(lambda s: s * 0, self.split)  # PLANTED"),),
        (Catcher("tests/unit/test_split_kv.py::test_split_kernel_matches_reference[decode-2-splits-f16]", WRONG_VALUES),
         Catcher(CHECK_SPLIT_ATTENTION, CHECK_FAILED)),
    ),
    Plant(
        "split-range-not-bounded-by-seq-len",
        "rock-gridwise-attention-to-blockwise lets a split visit its whole range, past seq_len",
        (Edit(GRIDWISE, "end = arith.minui(apply(lambda s: (s + 1) * plan.tiles_per_split, self.split), num_tiles)",
              "end = apply(lambda s: (s + 1) * plan.tiles_per_split, self.split)  # PLANTED"),),
        (Catcher("tests/lit/passes/rock-gridwise-attention-to-blockwise.mlir",
                 r"error: Couldn't match .*arith\.minui"),),
    ),
    Plant(
        "split-combine-unweighted",
        "the combine kernel averages the splits' partial outputs instead of weighting them by their LSE",
        (Edit(SPLIT_COMBINE, "weight = mlir_math.exp2(arith.subf(lse, safe_max))", "weight = f32_const(1.0)  # PLANTED"),),
        (Catcher("tests/unit/test_split_kv.py::test_split_kernel_matches_reference[decode-2-splits-f16]", WRONG_VALUES),
         Catcher(CHECK_SPLIT_ATTENTION, CHECK_FAILED)),
    ),
    Plant(
        "raise-exp-any-iterators",
        "rock-raise-attention reads the softmax's subtract-and-exp generic whatever its iterator types and result map",
        (Edit("passes/raise_attention/softmax.py", '    expect_loops(op, what, "p" * rank, [identity(rank), row_map, identity(rank)])\n',
              "    pass  # PLANTED\n"),),
        (Catcher("tests/unit/test_raise_mutations.py::test_no_mutant_is_raised_wrongly[" + " ".join(
            ["--batch", "2", "--num-heads-q", "4", "--num-heads-kv", "2", "--head-dim", "8", "--seq-len-q", "2",
             "--seq-len-k", "8", "--causal", "--seq-lens"]) + "]", r"mutants raised to a kernel computing something else"),
         Catcher("tests/lit/passes/rock-raise-attention-invalid.mlir", r"Couldn't match \"math.exp\"")),
    ),
    Plant(
        "raise-stacked-one-half",
        "rock-raise-attention views K and V of a stacked kv_cache both at index 0 of the stacked axis",
        (Edit("passes/raise_attention/gathers.py", "    return stacked[0]\n", "    return stacked[0][0], 0  # PLANTED\n"),),
        (Catcher("tests/unit/test_linalg_payload.py::test_stacked_gather_raised_kernel_passes_check["
                 "--page-table csr --kv-cache stacked1]", r"assert \[0, 0\] == \[0, 1\]"),
         Catcher("tests/lit/passes/rock-raise-attention.mlir", r"error: Couldn.t match \"%\[\[VC:\.\+\]\] = memref.subview %\[\[KV\]\]\[1, ")),
    ),
    Plant(
        "raise-masked-fill-kept",
        "rock-raise-attention reads torch's masked_fill(mask, -inf) as keeping the masked keys instead of hiding them",
        (Edit("passes/raise_attention/masks.py", "read_mask(op, condition, found, negated=negated)",
              "read_mask(op, condition, found)  # PLANTED"),),
        (Catcher("tests/lit/frontends/torch/rock-raise-attention.mlir", r"error: CAUSAL-PREFILL-[A-Z0-9-]*: "),),
    ),
    Plant(
        "payload-check-against-reference",
        "pagedir-run --check of a torch payload compares with the numpy reference, not with the payload run as written",
        (Edit("interp/check.py", "            case.args[index] = np.mod(array, tables[index]).astype(array.dtype)\n",
              "            case.args[index] = array  # PLANTED\n"),
         Edit("interp/check.py", "    case.expected = {}\n\n\ndef attention_reads_arguments", "\n\ndef attention_reads_arguments")),
        (Catcher("tests/unit/test_torch_payloads.py::test_check_against_the_payload_passes[paged_decode_f16]",
                 r"assert (1|False)"),),
    ),
    Plant(
        "split-nan-sum-is-no-key",
        "a split whose sum is NaN (a NaN key its row sees) reports no key, so the combine drops the NaN",
        (Edit(GRIDWISE, "has_keys = arith.cmpf(arith.CmpFPredicate.UNE, total, f32_const(0.0))",
              "has_keys = arith.cmpf(arith.CmpFPredicate.OGT, total, f32_const(0.0))  # PLANTED"),),
        (Catcher("tests/unit/test_split_kv.py::test_causally_hidden_keys_never_reach_a_split", WRONG_VALUES),),
    ),
    Plant(
        "pipeline-no-barrier-after-prologue",
        "rock-pipeline writes tile lb + 1's page pointers while a thread still reads tile lb's from the prologue",
        (Edit(PIPELINE, "            with ir.InsertionPoint(loop):\n                rock.lds_barrier()\n",
              "            pass  # PLANTED\n"),),
        (Catcher("tests/unit/test_pipeline.py::test_pipelined_loop_over_random_tile_ranges[0-lds]", r"LDS race"),),
    ),
    Plant(
        "pipeline-direct-copies-before-the-wait",
        "rock-pipeline issues the first tile's copies of tile t + 1 before the last wait of iteration t, into the tile "
        "that tile t's math still reads",
        (Edit(PIPELINE, "with ir.InsertionPoint.after(loads[-1].wait):",
              "with ir.InsertionPoint.after(loads[-1].issue[-1]):  # PLANTED"),),
        (Catcher("tests/unit/test_pipelined_direct_loads.py::"
                 "test_pipelined_cp_async_tiles_give_the_reference_result[decode-f16-pointers-static]", r"LDS race"),),
    ),
    Plant(
        "pipeline-direct-wait-dropped",
        "rock-pipeline drops the wait it splits off a direct-to-LDS stage: a tile is read while its copies are in "
        "flight",
        (Edit(PIPELINE, "    for op in ops[start:-1]:\n        op.move_before(terminator.operation)\n",
              "    ops[start].erase()  # PLANTED\n    for op in ops[start + 1:-1]:\n"
              "        op.move_before(terminator.operation)\n"),),
        (Catcher("tests/unit/test_pipelined_direct_loads.py::"
                 "test_pipelined_buffer_lds_tiles_give_the_reference_result[row-major]",
                 r"before its wave waited for that load"),),
    ),
    Plant(
        "pipeline-direct-barrier-dropped",
        "rock-pipeline keeps the wait of a direct-to-LDS stage but not its barrier: a wave reads another wave's copies "
        "before that wave waited for them",
        (Edit(PIPELINE, "    for op in ops[start:-1]:\n        op.move_before(terminator.operation)\n",
              "    for op in ops[start:-1]:\n        op.move_before(terminator.operation)\n"
              "        if op.name == \"rock.lds_barrier\":\n            op.erase()  # PLANTED\n"),),
        (Catcher("tests/unit/test_pipelined_direct_loads.py::"
                 "test_pipelined_buffer_lds_tiles_give_the_reference_result[swizzled]",
                 r"LDS race|before its wave waited"),),
    ),
    Plant(
        "lds-scopes-overlapping-regions-apart",
        "rock-backend-lds-alias-scopes declares every two regions apart: copies into one region get noalias scopes",
        (Edit("backend/lds_scopes.py", "    return a[0] != b[0] or a[2] <= b[1] or b[2] <= a[1]",
              "    return a != b  # PLANTED"),),
        (Catcher("tests/lit/backend/lds-alias-scopes.mlir", r"error: Couldn.t match|excluded string found"),),
    ),
    Plant(
        "lds-scopes-view-size-in-elements-as-bytes",
        "rock-backend-lds-alias-scopes reads a typed view's size (its elements) as its bytes: an access inside an f16 "
        "tile's second half is declared apart from the tile's copies",
        (Edit("backend/lds_scopes.py", " and gep_element_bytes(op) == 1 and holds_bytes(view) else None",
              " and gep_element_bytes(op) == 1 else None  # PLANTED"),),
        (Catcher("tests/lit/backend/lds-alias-scopes.mlir", r"excluded string found"),),
    ),
    Plant(
        "lds-scopes-select-data-arm",
        "rock-backend-lds-alias-scopes gives a select of an LDS address and a plain integer the address's region",
        (Edit("backend/lds_scopes.py", "return UNKNOWN if frozenset() in arms else union(arms)",
              "return union(arms)  # PLANTED"),),
        (Catcher("tests/lit/backend/lds-alias-scopes.mlir", r"error: Couldn.t match"),),
    ),
    Plant(
        "pipeline-last-tile-issued-again",
        "rock-pipeline's last iteration issues its own tile again instead of running in a copy without issue stages",
        (Edit(PIPELINE, "next_tile = arith.addi(iv, index_const(1))",
              "next_tile = arith.minui(arith.addi(iv, index_const(1)), arith.subi(upper, index_const(1)))  # PLANTED"),
         Edit(PIPELINE, "        peel_last_iteration(loop, last, upper, ahead)\n", "        pass  # PLANTED\n")),
        (Catcher("tests/unit/test_variants.py::test_window_256_at_8192_reads_the_window_not_the_sequence",
                 r"assert \d+ == "),),
    ),
    # --- 32-bit offsets ----------------------------------------------------------------
    Plant(
        "dense-dynamic-offset-wraps",
        "rock-buffer-load forms a dynamic dense buffer's byte offset from its base in 32 bits: byte 2^32 + x reads byte x",
        (Edit(BUFFER_LOAD, "        start, offset = row_start, inner",
              "        start, offset = arith.constant(i64, 0), arith.addi(row_start, inner)  # PLANTED"),),
        (Catcher("tests/unit/test_offset_width.py::test_dense_rows_past_4_gib_read_their_own_bytes[2049-2048-64]",
                 WRONG_VALUES),
         Catcher("tests/lit/passes/rock-buffer-load.mlir", r"error: Couldn't match")),
    ),
    Plant(
        "dense-window-unchecked",
        "rock-buffer-load lets a lane outside the 4 GiB window around its wave's first lane wrap to another row",
        (Edit(BUFFER_LOAD, "inside = arith.cmpi(arith.CmpIPredicate.ult, offset, records) if divergent else None",
              "inside = None  # PLANTED"),),
        (Catcher("tests/unit/test_offset_width.py::test_lanes_more_than_2_gib_from_the_waves_first_read_zero_not_another_row",
                 WRONG_VALUES),
         Catcher("tests/lit/passes/rock-buffer-load.mlir", r"error: Couldn't match")),
    ),
    Plant(
        "block-product-32-bit-to-8-gib",
        "block_address multiplies block ids by the block bytes in 32 bits for pools up to 8 GiB: ids >= 524288 wrap",
        (Edit(BLOCKS, "offset_bits(g.num_blocks * g.block_stride * elem_bytes - 1) == 32:",
              "g.num_blocks * g.block_stride * elem_bytes <= 1 << 33:  # PLANTED"),),
        (Catcher("tests/unit/test_offset_width.py::test_block_addresses_of_a_4_9_gb_pool_do_not_wrap[524288]",
                 r"assert np\.int64\(\d+\) == "),
         Catcher("tests/unit/test_offset_width.py::test_the_32_bit_choices_at_their_boundaries[a 4.9 GB pool]",
                 r"assert 32 == 64"),
         Catcher("tests/lit/passes/rock-threadwise-lowering.mlir", r"error: Couldn't match .*extui")),
    ),
    # --- the score variants (their formulas: variants.py) ------------------------------
    Plant(
        "window-one-key-short-in-the-reference",
        "the reference's sliding window starts one key after i_pos - window_left",
        (Edit("variants.py", "first = 0 if self.window_left is None else max(0, position - self.window_left)",
              "first = 0 if self.window_left is None else max(0, position - self.window_left + 1)  # PLANTED"),),
        (Catcher("tests/unit/test_variants.py::test_reference_variants_match_the_plain_loops[window-causal]",
                 WRONG_VALUES),),
    ),
    Plant(
        "window-one-key-short-in-the-kernel",
        "the kernel's sliding window starts one key after i_pos - window_left",
        (Edit("variants.py", "return arith.subi(position, _index(self.window_left))",
              "return arith.subi(position, _index(self.window_left - 1))  # PLANTED"),),
        (Catcher("tests/unit/test_variants.py::test_variant_kernels_pass_pagedir_run_check[prefill-window-causal]",
                 r"assert 1 == 0"),),
    ),
    Plant(
        "softcap-kernel-in-natural-units",
        "the kernel's soft-capped score is cap * tanh(..) without log2(e), among base-2 scores",
        (Edit("variants.py", "return arith.mulf(score, _f32(self.cap * LOG2_E))",
              "return arith.mulf(score, _f32(self.cap))  # PLANTED"),),
        (Catcher("tests/unit/test_variants.py::test_variant_kernels_pass_pagedir_run_check[decode-softcap]",
                 r"assert 1 == 0"),),
    ),
    Plant(
        "combine-skips-the-variants-it-joins",
        "the split-KV combine kernel leaves out the variants acting in the epilogue (the sinks)",
        (Edit(SPLIT_COMBINE, "for variant in joined:", "for variant in joined[:0]:  # PLANTED"),),
        (Catcher("tests/unit/test_variants.py::test_variant_kernels_pass_pagedir_run_check[split-decode-sinks]",
                 r"assert 1 == 0"),),
    ),
    # --- the arrays a run takes ------------------------------------------------------
    Plant(
        "run-converts-inputs-by-value",
        "pagedir-run converts --inputs arrays of another dtype by value (uint16 bf16 bits read as f16 numbers)",
        (Edit("cli/run.py", "exact=True, names=names)", "exact=False, names=names)  # PLANTED"),),
        (Catcher("tests/unit/test_run_inputs.py::test_an_array_of_another_dtype_is_refused_not_converted[bf16-bits-for-f16]",
                 r"assert 0 == 1"),),
    ),
    Plant(
        "lowered-kernel-without-batch-sizes",
        "rock-attention-to-gridwise does not record rock.batch_sizes: a lowered kernel runs on sizes that disagree",
        (Edit("passes/attention_to_gridwise.py", 'func.attributes["rock.batch_sizes"] = ',
              'func.attributes["rock.batch_sizes_planted"] = '),),
        (Catcher("tests/unit/test_run_inputs.py::test_a_size_that_disagrees_with_the_batch_is_an_error_naming_both"
                 "[varlen-long-cu-seqlens-lowered]", r"error: memref.load index 2 is out of bounds"),),
    ),
    Plant(
        "lowered-kernel-without-paged-kv",
        "rock-attention-to-gridwise does not record rock.paged_kv: a check of the lowered kernel draws one-token pages",
        (Edit("passes/attention_to_gridwise.py", 'func.attributes["rock.paged_kv"] = ',
              'func.attributes["rock.paged_kv_planted"] = '),),
        (Catcher("tests/unit/test_check_compare.py::test_a_lowered_kernel_is_checked_on_pages_of_its_own_size[True]",
                 r"buffer.load(.lds)? reads unmapped device address"),),
    ),
    Plant(
        "vllm-pa-tokens-unmasked",
        "a vector along vLLM's value cache's tokens keeps the tokens past seq_len: stale NaN reaches the output",
        (Edit("passes/threadwise_lowering.py", "kept = arith.andi(as_words, vector.from_elements(word_type, masks))",
              "kept = as_words"),),
        (Catcher("tests/unit/test_vllm_pa.py::test_vllm_pa_caches_in_place_match_the_reference[blocks-decode-f16-gfx942]",
                 r"nan location mismatch"),),
    ),
    Plant(
        "vllm-pa-v-transposed-on-mma-sync",
        "NVIDIA's mma.sync loop gets vLLM's value cache as a V^T tile, which its ldmatrix reads as [N, D]",
        (Edit("passes/gridwise_attention_to_blockwise.py",
              "self.v_pool_transposed = (self.matrix is not None and self.loop.reads_v_transposed",
              "self.v_pool_transposed = (self.matrix is not None"),),
        (Catcher("tests/unit/test_vllm_pa.py::test_vllm_pa_kernels_on_nvidia_pass_the_check[decode]",
                 r"'nvgpu.ldmatrix' op reads past the \d+ bytes"),),
    ),
    Plant(
        "cp-async-from-a-d-major-pool",
        "cp.async copies 16 bytes of a tile row from vLLM's value cache, whose row elements are D apart",
        (Edit(NVIDIA_LOWERING, "return row_source_fallback(op, elem, CP_ASYNC_BYTES)", "return None"),),
        (Catcher("tests/unit/test_vllm_pa.py::test_vllm_pa_kernels_on_nvidia_pass_the_check[cp-async-decode]",
                 r"is not 16-byte aligned"),),
    ),
    Plant(
        "runtime-size-arguments-reversed",
        "pagedir.runtime passes a dynamic kernel's i64 size arguments in reverse order",
        (Edit("runtime/launcher.py", "values = pointers + list(launch.sizes)",
              "values = pointers + list(reversed(launch.sizes))"),),
        (Catcher("tests/unit/test_runtime.py::test_hip_launch_passes_the_abi_of_the_code_object", r"assert \[\d"),
         Catcher("tests/unit/test_runtime.py::test_cuda_launch_passes_one_pointer_per_value", r"assert \[\d")),
    ),
    Plant(
        "runtime-hidden-group-size-from-grid",
        "pagedir.runtime writes the grid into the hidden group-size arguments of an AMDGPU kernarg segment",
        (Edit("runtime/codeobject.py", 'values[f"hidden_group_size_{name}"] = block[axis]',
              'values[f"hidden_group_size_{name}"] = grid[axis]'),),
        (Catcher("tests/unit/test_runtime.py::test_hidden_arguments_are_written_at_their_metadata_offsets",
                 r"assert \(12, 3, 1\) == \(64, 1, 1\)"),),
    ),
    Plant(
        "runtime-call-plans-kept-by-count",
        "pagedir.runtime keeps call plans by the number of arguments, not their shapes: a new batch launches an old grid",
        (Edit("runtime/launcher.py", "key = tuple(tuple(shape) for shape in shapes)", "key = len(shapes)"),
         Edit("runtime/launcher.py", "found = plans.call_plan(self.plan, list(key), self.names)",
              "found = plans.call_plan(self.plan, list(shapes), self.names)")),
        (Catcher("tests/unit/test_runtime.py::test_each_call_launches_the_grid_of_its_own_shapes", r"assert 2 == 9"),),
    ),
    Plant(
        "narrow-indices-everywhere",
        "rock-backend-narrow-indices narrows every CDNA gpu.module, not only those of pipelined kernels asking for waves",
        (Edit("driver.py", 'if "rock.lds_occupancy" in kernel.attributes and _has_pipelined_loop(kernel) and',
              'if True and'),),
        (Catcher("tests/lit/backend/pipeline.mlir", r"error: CHECK-NEXT: expected string not found|error: Couldn.t match"),),
    ),
)}


# ----------------------------------------------------------------------------
# Scratch copies


def make_scratch(directory: Path, plant: Plant | None) -> Path:
    """Copy src, tests/lit and tests/fixtures into ``directory``, apply ``plant`` there (None: unplanted); returns ``directory``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "Output")
    for part in COPIED:
        shutil.copytree(REPO / part, directory / part, ignore=ignore)
    for edit in plant.edits if plant else ():
        apply_edit(directory / "src" / "pagedir", edit)
    return directory


def apply_edit(package: Path, edit: Edit) -> None:
    """Substitute ``edit`` in ``package / edit.path``; the old text must occur exactly once, the result must compile."""
    path = package / edit.path
    text = path.read_text()
    count = text.count(edit.old)
    if count != 1:
        raise PlantError(f"src/pagedir/{edit.path}: the text to replace occurs {count} times, expected once "
                         f"(update the plant):\n{edit.old}")
    path.write_text(text.replace(edit.old, edit.new))
    try:
        py_compile.compile(str(path), doraise=True)
    except py_compile.PyCompileError as err:
        raise PlantError(f"src/pagedir/{edit.path}: the planted text does not compile: {err.msg}") from None


def environment(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(scratch / "src")
    env["PATH"] = os.pathsep.join((str(BIN), env.get("PATH", "")))
    env["PAGEDIR_CACHE_DIR"] = str(scratch / "cache")  # a compile of the planted copy is never shared
    env.pop("PAGEDIR_TRACEBACK", None)
    return env


def command(catcher: Catcher, scratch: Path) -> tuple[list[str], Path]:
    """(argv, working directory) running ``catcher`` against ``scratch``."""
    if catcher.kind == "pytest":
        return [sys.executable, "-m", "pytest", "-q", "-x", "--tb=short", "-p", "no:cacheprovider", catcher.target], REPO
    if catcher.kind == "lit":
        return [str(BIN / "lit"), "-v", str(scratch / catcher.target)], scratch
    return ["bash", "-o", "pipefail", "-c", catcher.target], scratch


def run_catcher(catcher: Catcher, scratch: Path) -> Outcome:
    argv, cwd = command(catcher, scratch)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=environment(scratch), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    output = done.stdout + done.stderr
    if done.returncode == 0:
        return Outcome(catcher, "pass", seconds, "passed", output)
    line = failure_line(output.replace(f"{scratch}/", ""), catcher.expect)
    if done.returncode == 1 and line is not None:
        return Outcome(catcher, "fail", seconds, line, output)
    why = f"exit code {done.returncode}" + ("" if line else f", no line matches {catcher.expect!r}")
    return Outcome(catcher, "error", seconds, why, output)


def failure_line(output: str, expect: str) -> str | None:
    """The first line matching ``expect``, preferring pytest's ``E`` lines (the error, not the test's source); shortened."""
    lines = [line for line in output.splitlines() if re.search(expect, line)]
    if not lines:
        return None
    line = next((line for line in lines if line.startswith("E ")), lines[0]).removeprefix("# | ")
    line = " ".join(line.split())
    return line if len(line) <= 120 else line[:117] + "..."


def checks_scratch(scratch: Path) -> None:
    """The tools run from ``scratch``: pagedir must import from its copy, not the checkout or the install."""
    done = subprocess.run([sys.executable, "-c", "import pagedir; print(pagedir.__file__)"],
                          env=environment(scratch), capture_output=True, text=True, check=True)
    imported = Path(done.stdout.strip()).resolve()
    if not imported.is_relative_to(scratch.resolve()):
        raise PlantError(f"pagedir imports from {imported}, not from the scratch copy {scratch}")


# ----------------------------------------------------------------------------
# The run


def run_plants(plants: list[Plant], root: Path, report=print) -> bool:
    """Check the catchers pass on a clean copy, then that each plant's catchers fail; ``report`` gets table rows."""
    clean = make_scratch(root / "clean", None)
    checks_scratch(clean)
    report(row("plant", "catcher", "result", "seconds", "why"))
    ok = True
    catchers = {c.target: c for p in plants for c in p.catchers}
    for catcher in catchers.values():
        ok = report_outcome("(none: clean copy)", run_catcher(catcher, clean), expected="pass", report=report) and ok
    for plant in plants:
        try:
            scratch = make_scratch(root / plant.name, plant)
        except PlantError as err:
            report(row(plant.name, "", "NOT PLANTED", "", str(err)))
            ok = False
            continue
        for catcher in plant.catchers:
            ok = report_outcome(plant.name, run_catcher(catcher, scratch), expected="fail", report=report) and ok
    return ok


def report_outcome(name: str, outcome: Outcome, expected: str, report) -> bool:
    verdict = {"pass": "passes", "fail": "CAUGHT", "error": "ERROR"}[outcome.status]
    if outcome.status != expected:
        verdict = "NOT CAUGHT" if outcome.status == "pass" else verdict + " (unexpected)"
    report(row(name, outcome.catcher.target, verdict, f"{outcome.seconds:.1f}", outcome.summary))
    if outcome.status != expected:
        report(outcome.output)
    return outcome.status == expected


def row(*cells: str) -> str:
    widths = (38, 100, 10, 7)
    padded = [cell.ljust(width) if len(cell) <= width else cell for cell, width in zip(cells, widths)]
    return "  ".join(padded + list(cells[len(widths):])).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Plant known bugs in a scratch copy of src/pagedir; the tests must catch each.")
    parser.add_argument("names", nargs="*", metavar="NAME", help="plants to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the plants and exit")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies and print where they are")
    args = parser.parse_args(argv)
    if args.list:
        for plant in PLANTS.values():
            print(f"{plant.name}: {plant.what}")
        return 0
    if unknown := [name for name in args.names if name not in PLANTS]:
        parser.error(f"unknown plant {', '.join(unknown)} (--list shows them)")
    plants = [PLANTS[name] for name in args.names] if args.names else list(PLANTS.values())
    root = Path(tempfile.mkdtemp(prefix="pagedir-plants-"))
    start = time.perf_counter()
    try:
        ok = run_plants(plants, root)
    finally:
        if args.keep:
            print(f"scratch copies kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{len(plants)} plants, {time.perf_counter() - start:.0f} s: "
          f"{'every plant caught' if ok else 'SOME PLANTS NOT CAUGHT, or a catcher fails on the clean copy'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
