"""The roofline model's arithmetic (benchmarks/roofline.py): chip figures, lower bound, kernel estimate."""

import math
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks import roofline  # noqa: E402
from benchmarks.roofline import CHIPS, LATENCY_S, LAUNCH_S, Launch  # noqa: E402

MI300X = CHIPS["gfx942"]


@pytest.mark.parametrize("arch", sorted(CHIPS))
def test_clock_simds_and_lanes_reproduce_the_published_vector_peak(arch):
    chip = CHIPS[arch]
    derived = chip.simds * chip.clock_hz * chip.valu_lanes * 2 * 2
    assert derived == pytest.approx(chip.valu_flops, rel=0.01)


def test_mi300x_figures_are_the_published_ones():
    assert (MI300X.compute_units, MI300X.hbm_bytes_per_s) == (304, 5.3e12)
    assert MI300X.matrix_flops == pytest.approx(1307e12, rel=0.001)
    assert MI300X.valu_flops == pytest.approx(163e12, rel=0.005)
    # 1307 TFLOPs over 1216 SIMDs at 2.1 GHz: a 16x16x16 f16 MFMA (8192 FLOPs) holds its SIMD 16 cycles.
    assert 8192 / MI300X.matrix_flops_per_simd_cycle == pytest.approx(16, rel=0.01)
    assert MI300X.valu_cycles == 4


def test_causal_keys_seen_average_over_the_query_rows():
    assert roofline.keys_seen(1, 512, False) == 512
    # Sq = Sk = 4: rows see 1, 2, 3, 4 keys.
    assert roofline.keys_seen(4, 4, True) == 2.5
    # decode with a causal flag sees every key
    assert roofline.keys_seen(1, 512, True) == 512


def test_attention_flops_count_both_products():
    # one row, one key, head dim 1: a multiply-add in each product
    assert roofline.attention_flops(1, 1, 1, 1, 1, False) == 4
    assert roofline.attention_flops(2, 16, 1, 512, 128, False) == 4 * 2 * 16 * 512 * 128


def test_lower_bound_takes_the_slower_of_memory_and_compute():
    bound = roofline.lower_bound(MI300X, nbytes=5.3e12 * 1e-3, flops=1307.4e12 * 2e-3)
    assert bound["memory_s"] == pytest.approx(1e-3)
    assert bound["compute_s"] == pytest.approx(2e-3)
    assert bound["bound_s"] == pytest.approx(2e-3) and bound["limit"] == "compute"
    assert roofline.lower_bound(MI300X, 5.3e12, 1.0)["limit"] == "memory"


def test_few_waves_are_latency_bound_per_iteration():
    # 4 workgroups of 4 waves, 16 loop iterations, a few KiB: one round, 16 latencies.
    launch = Launch(workgroups=4, waves_per_workgroup=4, occupancy=4, instructions=100, matrix_instructions=0,
                    matrix_flops=0, loop_instructions=50, iterations=16, nbytes=4096)
    part = roofline.estimate_launch(MI300X, launch)
    assert part["rounds"] == 1 and part["busy_cus"] == 4
    assert part["memory_s"] == pytest.approx(16 * LATENCY_S)
    # one wave per SIMD: (100 + 15 * 50) VALU issues of 4 cycles at 2.1 GHz
    assert part["compute_s"] == pytest.approx(850 * 4 / 2.1e9)
    assert part["time_s"] == pytest.approx(16 * LATENCY_S + LAUNCH_S)
    assert part["limit"] == "memory"


def test_waits_that_drain_loads_just_issued_are_charged_their_latency():
    # The same loop; its waits at vmcnt(0) come right after its loads (two of them: a direct-to-LDS tile's
    # page pointers, then its copies), or 2000 instructions later (a tile issued an iteration ahead).
    def memory_s(distances, occupancy=4):
        launch = Launch(workgroups=4, waves_per_workgroup=4, occupancy=occupancy, instructions=100,
                        matrix_instructions=0, matrix_flops=0, loop_instructions=50, iterations=16, nbytes=4096,
                        drain_distances=distances)
        return roofline.estimate_launch(MI300X, launch)["memory_s"]

    assert memory_s(()) == pytest.approx(16 * LATENCY_S)  # one latency an iteration, as before
    assert memory_s((0, 0)) == pytest.approx(2 * 16 * LATENCY_S)
    assert memory_s((2000,)) == pytest.approx(16 * LATENCY_S)
    # 100 instructions of a wave among 4 (VGPR-limited) waves: 100 x 4 cycles x 4 waves of 2100 cycles hidden
    assert memory_s((0, 100)) == pytest.approx((1 + (1 - 1600 / 2100)) * 16 * LATENCY_S)
    assert memory_s((0, 100), occupancy=2) > memory_s((0, 100), occupancy=4)


def test_drain_distances_count_back_to_the_last_load_around_the_back_edge():
    from benchmarks.isa import drain_distances

    assert drain_distances(["buffer_load_dword v1", "v_add", "s_waitcnt vmcnt(0)", "v_mul", "s_branch .L"]) == [1]
    # a wait that keeps loads in flight does not drain; nothing outstanding: nothing to wait for
    assert drain_distances(["s_waitcnt vmcnt(4)", "v_add", "buffer_load_dword v1", "v_mul"]) == []
    assert drain_distances(["s_waitcnt vmcnt(0)", "v_add", "global_load_dwordx2 v[1:2]", "s_waitcnt vmcnt(0)",
                            "v_mul", "buffer_load_dwordx4 v2, s[0:3], 0 offen lds", "v_add", "v_add"]) == [2, 0]
    assert drain_distances(["s_waitcnt vmcnt(0)", "s_waitcnt vmcnt(0)", "buffer_load_dword v1"]) == [0]


def test_waves_beyond_the_slots_run_in_rounds_and_share_simds():
    # 1216 SIMDs x 2 waves = 2432 slots; 3000 workgroups of 1 wave: 2 rounds, 3 waves on some SIMDs.
    launch = Launch(workgroups=3000, waves_per_workgroup=1, occupancy=2, instructions=10, matrix_instructions=0,
                    matrix_flops=0)
    part = roofline.estimate_launch(MI300X, launch)
    assert part["rounds"] == 2
    assert part["compute_s"] == pytest.approx(3 * 10 * 4 / 2.1e9)


def test_matrix_and_valu_issue_overlap_and_the_loop_repeats():
    # 8 MFMA of 16 cycles per iteration (128 cycles) against 40 other instructions (160 cycles).
    flops = 8 * 8192
    launch = Launch(workgroups=1, waves_per_workgroup=1, occupancy=8, instructions=48, matrix_instructions=8,
                    matrix_flops=flops, loop_instructions=48, loop_matrix_instructions=8, loop_matrix_flops=flops,
                    iterations=10)
    part = roofline.estimate_launch(MI300X, launch)
    assert part["compute_s"] == pytest.approx(10 * 160 / 2.1e9, rel=0.01)
    matrix_heavy = Launch(**{**launch.__dict__, "loop_matrix_instructions": 40, "matrix_instructions": 40,
                             "matrix_flops": 40 * 8192, "loop_matrix_flops": 40 * 8192})
    assert roofline.estimate_launch(MI300X, matrix_heavy)["compute_s"] == pytest.approx(10 * 40 * 16 / 2.1e9, rel=0.01)


def test_bandwidth_caps_many_waves_and_launches_add_up():
    launch = Launch(workgroups=1216, waves_per_workgroup=1, occupancy=8, instructions=10, matrix_instructions=0,
                    matrix_flops=0, iterations=1, nbytes=5.3e9)
    part = roofline.estimate_launch(MI300X, launch)
    assert part["memory_s"] == pytest.approx(1e-3)
    total = roofline.estimate(MI300X, [launch, launch])
    assert total["time_s"] == pytest.approx(2 * part["time_s"])
    assert math.isclose(total["launches"][0]["time_s"], part["time_s"])


def test_masked_tiles_are_the_diagonal_tiles_of_each_block_of_query_positions():
    # 16 positions per workgroup, 32-key tiles, Sq = Sk: a workgroup hides keys p0+1 .. p0+15, one tile
    assert roofline.masked_tiles(2048, 2048, 16, 32) == 1
    # 48 positions: keys p0+1 .. p0+47 span two tiles (0-1 for p0 = 0, 1-2 for p0 = 48)
    assert roofline.masked_tiles(96, 96, 48, 32) == (2 + 2) / 2
    # one position per workgroup (decode-like): nothing hidden
    assert roofline.masked_tiles(4, 4, 1, 32) == 0


def test_the_common_path_runs_every_iteration_and_the_masked_arm_only_on_masked_tiles():
    # a kernel of 300 instructions, 200 of them the loop's blocks: a common path of 50, an arm of 120 more
    launch = Launch(workgroups=1, waves_per_workgroup=1, occupancy=8, instructions=300, matrix_instructions=0,
                    matrix_flops=0, loop_instructions=50, iterations=32, loop_all_instructions=200,
                    rare_instructions=120, rare_iterations=1)
    assert roofline.wave_instructions(launch) == 100 + 32 * 50 + 120
    assert roofline.estimate_launch(MI300X, launch)["compute_s"] == pytest.approx((100 + 32 * 50 + 120) * 4 / 2.1e9)
