"""Loops of amdgcn assembly from its control-flow graph (pagedir.backend.loops), on hand-written
snippets whose blocks, back edges and counts are worked out in the comments; and the kernel
report's hot-loop count, which is the largest loop's instructions."""

from pagedir.backend.loops import basic_blocks, dominators, hot_loop, natural_loops
from pagedir.backend.report import instruction_statistics

# A rotated loop, the way LLVM lays out the KV loop: the entry jumps forward to the header H;
# the latch (L3) and a block of the body (L2) sit before the header in the text.
#   B0 entry [v_mov, s_branch H]        -> H
#   B1 L2    [v_add, v_mul]             -> B2 (falls through)
#   B2 L3    [s_add, s_cbranch_vccz X]  -> X, H
#   B3 H     [v_fma, v_fma, s_cbranch_execz L3] -> L3, B4
#   B4       [v_sub, s_branch L2]       -> L2
#   B5 X     [v_mov, s_endpgm]
# H dominates B2 (every path to L3 passes H), so B2 -> H is the back edge; the loop is
# {B1, B2, B3, B4}: 2 + 2 + 3 + 2 = 9 instructions. B3 -> L3 and B4 -> L2 jump backwards in
# the text but are no back edges (L2 and L3 do not dominate their sources).
ROTATED = [
    "\tv_mov_b32_e32 v0, 0",
    "\ts_branch .LBB0_4",
    ".LBB0_2:",
    "\tv_add_f32_e32 v1, v2, v3",
    "\tv_mul_f32_e32 v1, v1, v3",
    ".LBB0_3:",
    "\ts_add_u32 s0, s0, 1",
    "\ts_cbranch_vccz .LBB0_9",
    ".LBB0_4:",
    "\tv_fma_f32 v1, v2, v3, v1",
    "\tv_fma_f32 v1, v2, v3, v1",
    "\ts_cbranch_execz .LBB0_3",
    "\tv_sub_f32_e32 v1, v2, v3",
    "\ts_branch .LBB0_2",
    ".LBB0_9:",
    "\tv_mov_b32_e32 v0, 1",
    "\ts_endpgm",
]


def test_rotated_loop_blocks_dominators_and_count():
    blocks = basic_blocks(ROTATED)
    assert [b.labels for b in blocks] == [[], [".LBB0_2"], [".LBB0_3"], [".LBB0_4"], [], [".LBB0_9"]]
    assert [b.successors for b in blocks] == [[3], [2], [5, 3], [2, 4], [1], []]
    dom = dominators(blocks)
    assert dom[2] == {0, 3, 2}  # L3 is reached from L2 (after B4) and from H: H is its immediate dominator
    assert dom[1] == {0, 3, 4, 1}
    loops = natural_loops(blocks)
    assert [(loop.header, sorted(loop.blocks), loop.instructions) for loop in loops] == [(3, [1, 2, 3, 4], 9)]
    assert instruction_statistics(ROTATED)["loop_instructions"] == 9


# An epilogue placed after a backward jump: the loop (L1, 2 instructions) exits to L2, which
# ends the program; the other path from the entry runs an epilogue E placed last that jumps
# back to L2. L2 does not dominate E (E is reached from the entry without L2), so E -> L2 is
# no back edge: the only loop is L1's, 2 instructions (counting from the label L2 to the
# backward s_branch would give 5).
EPILOGUE_AFTER_JUMP = [
    "\tv_mov_b32_e32 v0, 0",
    "\ts_cbranch_scc1 .LBB0_3",
    ".LBB0_1:",
    "\tv_add_f32_e32 v1, v2, v1",
    "\ts_cbranch_scc0 .LBB0_1",
    ".LBB0_2:",
    "\ts_endpgm",
    ".LBB0_3:",
    "\tv_mul_f32_e32 v1, v2, v1",
    "\tv_mul_f32_e32 v1, v2, v1",
    "\tv_mul_f32_e32 v1, v2, v1",
    "\ts_branch .LBB0_2",
]


def test_a_backward_jump_to_a_block_that_does_not_dominate_it_is_no_loop():
    loops = natural_loops(basic_blocks(EPILOGUE_AFTER_JUMP))
    assert [(loop.header, loop.instructions) for loop in loops] == [(1, 2)]
    assert instruction_statistics(EPILOGUE_AFTER_JUMP)["loop_instructions"] == 2


# The tail of a split kernel: a branch back to a block that ends the program (s_endpgm has no
# successor, so nothing loops through it).
#   B0 [s_and_saveexec, s_cbranch_execnz L34] -> L34, B1
#   B1 [s_andn2_saveexec, s_cbranch_execnz L35] -> L35, B2
#   B2 L33 [s_endpgm]
#   B3 L34 [v_mov, s_andn2_saveexec, s_cbranch_execz L33] -> L33, L35
#   B4 L35 [v_mov, s_endpgm]
ENDPGM_TAIL = [
    "\ts_and_saveexec_b64 s[0:1], s[66:67]",
    "\ts_cbranch_execnz .LBB0_34",
    "\ts_andn2_saveexec_b64 s[0:1], s[64:65]",
    "\ts_cbranch_execnz .LBB0_35",
    ".LBB0_33:",
    "\ts_endpgm",
    ".LBB0_34:",
    "\tv_mov_b32_e32 v0, v41",
    "\ts_andn2_saveexec_b64 s[0:1], s[64:65]",
    "\ts_cbranch_execz .LBB0_33",
    ".LBB0_35:",
    "\tv_mov_b32_e32 v0, v42",
    "\ts_endpgm",
]


def test_a_branch_back_to_the_end_of_the_program_is_no_loop():
    blocks = basic_blocks(ENDPGM_TAIL)
    assert [b.successors for b in blocks] == [[3, 1], [4, 2], [], [2, 4], []]
    assert natural_loops(blocks) == []
    assert hot_loop(ENDPGM_TAIL) is None
    assert instruction_statistics(ENDPGM_TAIL)["loop_instructions"] == 0


# Nested loops: the outer loop O holds an inner loop I and a block after it.
#   B0       [s_mov]                        -> O
#   B1 O     [v_mov, s_mov]                 -> I
#   B2 I     [v_fma, s_add, s_cbranch_scc1 I] -> I, B3
#   B3       [v_add, s_cbranch_scc0 O]      -> O, B4
#   B4       [s_endpgm]
# Inner: {B2}, 3 instructions; outer: {B1, B2, B3}, 2 + 3 + 2 = 7.
NESTED = [
    "\ts_mov_b32 s0, 0",
    ".LBB0_1:",
    "\tv_mov_b32_e32 v1, 0",
    "\ts_mov_b32 s1, 0",
    ".LBB0_2:",
    "\tv_fma_f32 v1, v2, v3, v1",
    "\ts_add_u32 s1, s1, 1",
    "\ts_cbranch_scc1 .LBB0_2",
    "\tv_add_f32_e32 v4, v4, v1",
    "\ts_cbranch_scc0 .LBB0_1",
    "\ts_endpgm",
]


def test_nested_loops_count_the_inner_loop_in_the_outer_one():
    loops = natural_loops(basic_blocks(NESTED))
    assert [(loop.header, sorted(loop.blocks), loop.instructions) for loop in loops] == [(1, [1, 2, 3], 7), (2, [2], 3)]
    loop, lines = hot_loop(NESTED)
    assert loop.header == 1
    assert lines == [2, 3, 5, 6, 7, 8, 9]  # body line indices of its 7 instructions
    assert instruction_statistics(NESTED)["loop_instructions"] == 7


# A waterfall loop inside the KV loop, and the KV loop's latch after it:
#   B0       [s_mov]                                            -> K
#   B1 K     [v_add, s_mov_b64 (save exec)]                     -> W
#   B2 W     [readfirstlane, v_cmp, and_saveexec, buffer_load, s_xor, s_cbranch_execnz W] -> W, B3
#   B3       [s_mov_b64 (restore exec), s_cbranch_scc1 K]       -> K, B4
#   B4       [s_endpgm]
# The waterfall loop is {B2}, 6; the KV loop {B1, B2, B3}, 2 + 6 + 2 = 10: the hot loop.
WATERFALL_INSIDE = [
    "\ts_mov_b32 s0, 0",
    ".LBB0_1:",
    "\tv_add_u32_e32 v2, 16, v2",
    "\ts_mov_b64 s[8:9], exec",
    ".LBB0_2:",
    "\tv_readfirstlane_b32 s4, v2",
    "\tv_cmp_eq_u32_e32 vcc, s4, v2",
    "\ts_and_saveexec_b64 s[10:11], vcc",
    "\tbuffer_load_dwordx4 v[6:9], v1, s[4:7], 0 offen",
    "\ts_xor_b64 exec, exec, s[10:11]",
    "\ts_cbranch_execnz .LBB0_2",
    "\ts_mov_b64 exec, s[8:9]",
    "\ts_cbranch_scc1 .LBB0_1",
    "\ts_endpgm",
]


def test_a_waterfall_loop_counts_inside_the_kv_loop():
    loops = natural_loops(basic_blocks(WATERFALL_INSIDE))
    assert [(loop.header, loop.instructions) for loop in loops] == [(1, 10), (2, 6)]
    stats = instruction_statistics(WATERFALL_INSIDE)
    assert stats["loop_instructions"] == 10
    assert stats["waterfall_buffer_loads"] == 1


# A KV loop whose latch is an s_cbranch_execnz (LLVM's form when the exit condition is divergent), with a
# readfirstlane of a wave-uniform bound (not the descriptor) before a load of a uniform descriptor: no waterfall.
UNIFORM_BOUND_IN_LOOP = [
    "\ts_mov_b32 s0, 0",
    ".LBB0_1:",
    "\tv_readfirstlane_b32 s2, v3",
    "\ts_add_i32 s2, s2, 1",
    "\tbuffer_load_dwordx4 v[6:9], v1, s[4:7], 0 offen",
    "\tv_and_b32_e32 v6, s2, v6",
    "\ts_cbranch_execnz .LBB0_1",
    "\ts_endpgm",
]


def test_a_readfirstlane_of_another_value_in_an_exec_latched_loop_is_no_waterfall():
    assert instruction_statistics(UNIFORM_BOUND_IN_LOOP)["waterfall_buffer_loads"] == 0
    # The same loop reading its descriptor with readfirstlane is one.
    waterfall = [line.replace("v_readfirstlane_b32 s2, v3", "v_readfirstlane_b32 s5, v3") for line in UNIFORM_BOUND_IN_LOOP]
    assert instruction_statistics(waterfall)["waterfall_buffer_loads"] == 1


# Two entries into one cycle (irreducible): neither A nor B dominates the other, so there is no
# back edge and no natural loop. LLVM does not emit this for the kernels; it is counted as no loop.
IRREDUCIBLE = [
    "\ts_cbranch_scc1 .LBB0_2",
    ".LBB0_1:",
    "\tv_add_f32_e32 v1, v2, v1",
    ".LBB0_2:",
    "\tv_mul_f32_e32 v1, v2, v1",
    "\ts_cbranch_vccnz .LBB0_1",
    "\ts_endpgm",
]


def test_a_cycle_with_two_entries_is_no_natural_loop():
    blocks = basic_blocks(IRREDUCIBLE)
    assert [b.successors for b in blocks] == [[2, 1], [2], [1, 3], []]
    assert natural_loops(blocks) == []
    assert instruction_statistics(IRREDUCIBLE)["loop_instructions"] == 0


def test_labels_without_instructions_name_one_block_and_unreachable_blocks_hold_no_loop():
    body = [
        "\ts_branch .LBB0_3",
        ".LBB0_1:",  # unreachable: a loop of its own that no path enters
        "\tv_add_f32_e32 v1, v2, v1",
        "\ts_branch .LBB0_1",
        ".LBB0_2:",
        ".LBB0_3:",
        "\t; a comment line",
        "\ts_endpgm",
    ]
    blocks = basic_blocks(body)
    assert [b.labels for b in blocks] == [[], [".LBB0_1"], [".LBB0_2", ".LBB0_3"]]
    assert [b.successors for b in blocks] == [[2], [1], []]
    assert natural_loops(blocks) == []
