"""benchmarks/loop_paths.py: the instructions a wave runs per iteration of the hot loop, per path."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.loop_paths import path_counts  # noqa: E402

#: A loop whose uniform branch picks one of two sides (3 instructions or 1) and whose exec branch skips
#: a block when no lane is left: a wave with active lanes runs that block.
BODY = """
  s_mov_b32 s0, 0
.LBB0_1:
  v_add_u32_e32 v0, 1, v0
  s_cmp_eq_u32 s1, 0
  s_cbranch_scc1 .LBB0_3
  s_add_u32 s2, s2, 1
  s_add_u32 s3, s3, 1
  s_branch .LBB0_4
.LBB0_3:
  s_add_u32 s2, s2, 2
.LBB0_4:
  s_and_saveexec_b64 s[4:5], vcc
  s_cbranch_execz .LBB0_6
  buffer_load_dwordx4 v[0:3], v4, s[8:11], 0 offen
.LBB0_6:
  s_add_u32 s0, s0, 1
  s_cmp_lt_u32 s0, 8
  s_cbranch_scc1 .LBB0_1
  s_endpgm
""".splitlines()


def test_each_side_of_a_uniform_branch_is_one_path_and_exec_branches_run_their_lanes() -> None:
    counts = path_counts(BODY)
    # header (3) + a side (3 with its branch, or 1) + the exec guard (2) + the load (1) + the latch (3)
    assert counts["longest"]["instructions"] == 3 + 3 + 2 + 1 + 3
    assert counts["shortest"]["instructions"] == 3 + 1 + 2 + 1 + 3
    assert counts["longest"]["memory"] == counts["shortest"]["memory"] == 1
    assert counts["loop"]["instructions"] == 3 + 3 + 1 + 2 + 1 + 3


#: A KV loop like causal prefill's: an adjacent-page choice (uniform, no matrix instruction either side:
#: 2 instructions or 1) and a masked-tile choice whose arm runs the product three times (3 MFMAs and 4 more
#: instructions) where the plain side runs it once; LLVM's structurizer ends the plain side with an
#: ``execnz`` back to the loop that active lanes always take.
MASKED = """
  s_mov_b32 s0, 0
  s_branch .LBB0_2
.LBB0_1:
  s_add_u32 s0, s0, 1
  s_cmp_lt_u32 s0, 8
  s_cbranch_scc0 .LBB0_9
.LBB0_2:
  s_cmp_eq_u32 s1, 0
  s_cbranch_scc1 .LBB0_4
  v_add_u32_e32 v4, 1, v4
  s_branch .LBB0_5
.LBB0_4:
  s_nop 0
.LBB0_5:
  buffer_load_dwordx4 v[0:3], v4, s[8:11], 0 offen
  s_cmp_eq_u32 s2, 0
  s_cbranch_scc1 .LBB0_7
  v_mfma_f32_16x16x16_f16 v[8:11], v[0:1], v[2:3], v[8:11]
  s_cbranch_execnz .LBB0_1
  s_branch .LBB0_8
.LBB0_7:
.LBB0_8:
  v_cndmask_b32_e32 v0, 0, v0, vcc
  v_cndmask_b32_e32 v1, 0, v1, vcc
  v_mfma_f32_16x16x16_f16 v[8:11], v[0:1], v[2:3], v[8:11]
  v_mfma_f32_16x16x16_f16 v[12:15], v[0:1], v[2:3], v[12:15]
  v_mfma_f32_16x16x16_f16 v[16:19], v[0:1], v[2:3], v[16:19]
  v_cmp_eq_f32_e32 vcc, 0, v16
  v_cndmask_b32_e32 v8, v8, v12, vcc
  s_branch .LBB0_1
.LBB0_9:
  s_endpgm
""".splitlines()


def test_the_masked_arm_is_counted_apart_from_the_common_path():
    from pagedir.backend.report import format_table, instruction_statistics, kernel_reports

    stats = instruction_statistics(MASKED)
    # the latch (3), the page choice (2; +2 page by page or +1 adjacent), the load and the mask choice (3),
    # the plain product and its execnz (2)
    assert stats["loop_common_instructions"] == 3 + 2 + 2 + 3 + 2
    assert stats["loop_common_shortest"] == 3 + 2 + 1 + 3 + 2
    assert stats["loop_common_matrix"] == 1
    # the masked arm: the same, with the 8 instructions of the three products instead of the plain one's 2
    assert stats["loop_rare_instructions"] == 3 + 2 + 2 + 3 + 8
    assert stats["loop_rare_matrix"] == 3
    # every block once, as before: the dead s_branch after the execnz too
    assert stats["loop_instructions"] == 3 + 2 + 2 + 1 + 3 + 2 + 1 + 8
    asm = "\n".join(["paged_attention:", *MASKED, ".Lfunc_end0:", "\t.amdhsa_kernel paged_attention",
                     "\t\t.amdhsa_next_free_vgpr 20", "\t.end_amdhsa_kernel"])
    text = format_table(kernel_reports(asm, "gfx942"))
    assert "  loop instrs      22\n" in text  # the line a script reads is unchanged
    assert "  loop paths       common 11-12 (1 matrix), rare arm 18 (3 matrix)\n" in text


def test_a_loop_without_a_masked_arm_has_one_common_path():
    stats = path_counts(BODY)
    from pagedir.backend.report import instruction_statistics

    assert instruction_statistics(BODY)["loop_rare_instructions"] == 0
    assert instruction_statistics(BODY)["loop_common_instructions"] == stats["longest"]["instructions"]
