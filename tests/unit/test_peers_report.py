"""The side-by-side report of `make bench-peers` (benchmarks/peers_report.py) on made-up records:
winners, ratios to the best peer, the README rows. Needs neither triton nor vllm."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks import peers_report  # noqa: E402
from benchmarks.configs import Config  # noqa: E402

CONFIG = Config("attention", "gfx942", 128, 16, "decode", batch=2, heads_q=16, heads_kv=2, seq_k=512, splits=0,
                group="peers").as_dict()


def record(side, kernel, *, vgprs, occupancy, loads, workgroups, instructions=500, iterations=4.0, cold=0.5):
    counters = {"vgprs": vgprs, "agprs": 0, "sgprs": 40, "vgpr_spills": 0, "sgpr_spills": 0, "scratch_bytes": 0,
                "lds_bytes": 8192, "wave_size": 64, "workgroup_size": 256, "occupancy": occupancy,
                "occupancy_limits": {}, "waves_per_workgroup": 4, "mfma": 0, "wmma": 0, "matrix_flops": 0,
                "vector_loads": loads, "scalar_loads": 3, "barriers": 2, "instructions": instructions,
                "hot_loop": {"instructions": 100, "mfma": 0, "wmma": 0, "matrix_flops": 0}}
    launch = {"kernel": kernel, "grid": [workgroups], "workgroups": workgroups, "tokens_per_iteration": 32,
              "iterations": iterations, "nbytes": 1e6, "counters": counters, "per_kv_token": 100 * 4 / 32,
              "straight_line": False}
    return {"config": CONFIG, "status": "ok", "side": side, "kernel": kernel, "launches": [launch],
            "compile": {"cold_s": cold, "warm_s": 0.001}}


OURS = record("pagedir", "pagedir", vgprs=100, occupancy=4, loads={"dwordx4": 4}, workgroups=64)
PEER_A = record("vllm", "peer a", vgprs=80, occupancy=6, loads={"dword": 4}, workgroups=32, iterations=64)
PEER_B = record("vllm", "peer b", vgprs=90, occupancy=5, loads={"dwordx4": 2, "dword": 2}, workgroups=16)


def column(name):
    return next(c for c in peers_report.COLUMNS if c[0] == name)


def test_fewer_registers_win_and_more_waves_win():
    rows = [OURS, PEER_A, PEER_B]
    assert peers_report.winners(rows, column("VGPR")) == {1}
    assert peers_report.winners(rows, column("waves/SIMD")) == {1}
    # 16-byte loads beat 4-byte ones
    assert peers_report.winners(rows, column("vector loads")) == {0}
    # a tie wins for each
    assert peers_report.winners(rows, column("spills")) == {0, 1, 2}


def test_ratio_is_pagedir_over_the_best_peer_of_the_column():
    assert peers_report.ratio(OURS, [PEER_A, PEER_B], column("VGPR")) == f"{100 / 80:.2f}"
    assert peers_report.ratio(OURS, [PEER_A, PEER_B], column("waves/SIMD")) == f"{4 / 6:.2f}"
    assert peers_report.ratio(OURS, [PEER_A, PEER_B], column("workgroups")) == f"{64 / 32:.2f}"
    assert peers_report.ratio(OURS, [PEER_A], column("spills")) == "-"


def test_the_table_bolds_winners_and_closes_each_shape_with_the_ratio_row():
    wins = {}
    lines = peers_report.phase_table({CONFIG["name"]: [PEER_A, OURS, PEER_B]}, wins)
    assert lines[2].startswith("| **decode GQA 8, B=2 16/2 heads, Sk 512** | lower bound")
    assert lines[3].startswith("| pagedir |")  # pagedir first whatever the input order
    assert "| **80** |" in lines[4]
    assert lines[-1].startswith("| pagedir / best peer |")
    assert wins["VGPR"] == {"peer a": 1}


def test_readme_rows_show_pagedir_and_the_peer_the_model_finds_fastest():
    # peer a runs 64 latency-bound iterations, peer b 4: peer b is the faster by the model
    assert peers_report.model_estimate(PEER_B)["time_s"] < peers_report.model_estimate(PEER_A)["time_s"]
    rows = peers_report.headline([OURS, PEER_A, PEER_B]).splitlines()[2:]
    assert [row.split(" | ")[1] for row in rows] == ["pagedir", "peer b"]


def test_plot_rows_put_pagedir_first_with_each_kernels_model_time_and_loop_cost():
    rows = peers_report.plot_rows([PEER_A, OURS, PEER_B])
    assert len(rows) == 1
    shape, kernels = rows[0]
    assert shape == peers_report.shape_name(CONFIG)
    assert [k for k, _, _ in kernels] == ["pagedir", "peer a", "peer b"]
    times = {k: t for k, t, _ in kernels}
    assert times["pagedir"] == peers_report.model_estimate(OURS)["time_s"] * 1e6 > 0
    assert [p for _, _, p in kernels] == [100 * 4 / 32] * 3
    assert peers_report.plot_rows([OURS], arch="gfx1100") == []


def test_without_matplotlib_the_report_has_no_plots_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it raises ImportError
    assert peers_report.plots([OURS, PEER_A], str(tmp_path)) == []
    assert "matplotlib is not installed" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def straight_line(record_):
    launch = {**record_["launches"][0], "straight_line": True, "per_kv_token": 500 * 4 / 256, "kv_tokens": 256,
              "iterations": 1.0, "counters": {**record_["launches"][0]["counters"], "hot_loop": None}}
    return {**record_, "launches": [launch]}


def test_a_straight_line_kernel_has_no_loop_figure_and_its_whole_kernel_is_compared_with_whole_kernels():
    ours = straight_line(OURS)
    assert peers_report.loop_per_kv_token(ours) is None
    assert column("loop instr / KV token")[3](ours) == "-"
    # the whole kernel once (500 instructions) x 4 waves over the 256 tokens of the workgroup
    assert peers_report.workgroup_per_kv_token(ours) == 500 * 4 / 256
    # a peer's workgroup: 400 instructions outside its loop's 100 once, then 4 iterations of the loop
    assert peers_report.workgroup_per_kv_token(PEER_B) == (500 + 3 * 100) * 4 / (4 * 32)
    # the grid: 64 workgroups of 4 waves over B x KV heads x Sk tokens
    assert peers_report.grid_per_kv_token(ours) == 64 * 4 * 500 / (2 * 2 * 512)


def test_a_ragged_shape_takes_the_peer_records_of_the_same_shape_and_a_shape_without_peers_says_so():
    ragged = {**CONFIG, "ragged": True, "name": CONFIG["name"] + "-ragged"}
    other = {**CONFIG, "batch": 1, "name": "decode-b1-other"}
    ours = [{**OURS, "config": ragged}, {**OURS, "config": other}]
    records = peers_report.peer_records(ours, [PEER_A, PEER_B])
    borrowed = [r for r in records if r["config"] is ragged]
    assert [r["kernel"] for r in borrowed] == ["peer a", "peer b"]
    missing = [r for r in records if r["config"] is other]
    assert [r["status"] for r in missing] == ["not compiled"]
    lines = peers_report.phase_table({other["name"]: [ours[1], *missing]}, {})
    assert any(line.startswith("| vllm | not compiled: no peer record") for line in lines)


def with_streams(record_, rare_iterations=0.0):
    """A record with llvm-mca's instruction streams: the loop's common path of 10 instructions, 50 outside it,
    the rare path of 30."""
    launch = {**{k: v for k, v in record_["launches"][0].items() if k != "mca_cycles"},  # no figure of another test
              "mca_text": "\n".join(["v_nop"] * 10),
              "mca_outside_text": "\n".join(["s_nop 0"] * 50), "mca_rare_text": "\n".join(["v_nop"] * 30),
              "rare_iterations": rare_iterations, "kv_tokens": 128}
    return {**record_, "launches": [launch]}


def test_mca_compares_loop_bodies_with_loop_bodies_and_whole_workgroups_with_whole_workgroups(monkeypatch):
    monkeypatch.setattr(peers_report.mca, "cycles", lambda lines, arch: 2.0 * len(lines))  # 2 cycles an instruction
    looped = with_streams(PEER_B, rare_iterations=1.0)
    # the common path's 20 cycles x 4 waves / 32 tokens of an iteration
    assert peers_report.mca_per_kv_token(looped) == 20 * 4 / 32
    # outside once (100), 4 iterations of the common path (80), the rare arm's extra 40 on one masked tile
    assert peers_report.workgroup_mca_per_kv_token(looped) == (100 + 4 * 20 + 1 * 40) * 4 / 128
    # no loop: no loop figure; the whole kernel (its only stream) once over the workgroup's 256 tokens
    launch = {k: v for k, v in straight_line(OURS)["launches"][0].items() if k != "mca_cycles"}
    straight = {**OURS, "launches": [{**launch, "mca_text": "\n".join(["v_nop"] * 500)}]}
    assert peers_report.mca_per_kv_token(straight) is None
    assert column("mca cycles / KV token")[3](straight) == "-"
    assert peers_report.workgroup_mca_per_kv_token(straight) == 1000 * 4 / 256
    # a record kept without its streams has no figure
    assert peers_report.workgroup_mca_per_kv_token(PEER_A) is None


def test_the_llvm_mca_caveats_say_what_the_tool_found_does(monkeypatch):
    monkeypatch.setattr(peers_report.mca, "llvm_mca", lambda: "/usr/lib/llvm-22/bin/llvm-mca")
    monkeypatch.setattr(peers_report.mca, "version", lambda: "22.1.8")
    monkeypatch.setattr(peers_report.mca, "knows", lambda arch: arch == "gfx942")
    monkeypatch.setattr(peers_report.mca, "takes_buffers", lambda arch: True)
    other = {**CONFIG, "arch": "gfx950", "name": "other"}
    records = [with_streams(OURS), {**with_streams(PEER_B), "config": other}]
    note = peers_report.mca_note(records)
    assert "one wave alone" in note and "LLVM 22.1.8" in note
    assert "run as they are" in note and "rewritten" not in note and "global_" not in note
    assert "does not know gfx950 (no figure there)" in note
    assert "written before" not in note
    monkeypatch.setattr(peers_report.mca, "takes_buffers", lambda arch: False)
    note = peers_report.mca_note(records + [PEER_A])
    assert "each `buffer_*` runs as the `global_*` instruction" in note and "lgkmcnt" in note
    assert "1 records were written before their instruction streams were kept" in note
