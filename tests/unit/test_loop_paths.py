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
