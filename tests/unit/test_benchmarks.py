"""The benchmark machinery on one tiny configuration: every JSON field the report reads is there."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks import report  # noqa: E402
from benchmarks.bench import measure_config  # noqa: E402
from benchmarks.configs import Config  # noqa: E402


def test_one_configuration_measured_and_reported(tmp_path):
    config = Config("copy-kv", "gfx942", 16, 8, batch=1, heads_kv=1, seq_k=32, interpret=True)
    record = measure_config(config, repeat=1)
    assert record["status"] == "ok", record.get("error")
    stages = {s["name"]: s for s in record["compile"]["stages"]}
    assert {"rock-blockwise-load", "rock-reuse-lds", "mlir-translate", "llvm-O3", "llvm-codegen"} <= set(stages)
    assert set(record["compile"]["totals"]) == {"ours", "upstream", "translate", "llvm", "ratio"}
    kernel = record["kernel"]
    for field in ("vgprs", "sgprs", "agprs", "vgpr_spills", "scratch_bytes", "lds_bytes", "lds_before_reuse",
                  "lds_after_reuse", "occupancy", "buffer_loads", "barriers", "grid", "block"):
        assert field in kernel
    interp = record["interp"]
    assert interp["passed"] and interp["thread_instructions"] > 0
    # The gather reads every cached byte once and writes out once.
    assert interp["bytes"]["pages_read"] == interp["bytes"]["pages_distinct"] == record["bytes_required"]["kv"]
    assert interp["bytes"]["arguments_written"][-1] == record["bytes_required"]["out"]

    missing = measure_config(Config("no-such-kernel", "gfx942", 16, 8), repeat=1)
    assert missing["status"] == "not available"

    records = [record, missing]
    json.dumps(records)
    machine = report.machine(quick=True, repeat=1, seconds=0.0)
    text = report.markdown(machine, records, plots=[])
    assert config.name in text and "not available" in text
    readme = tmp_path / "README.md"
    readme.write_text("# x\n")
    report.update_readme(str(readme), machine, records, "benchmarks/results")
    report.update_readme(str(readme), machine, records, "benchmarks/results")
    assert readme.read_text().count("## Benchmarks") == 1


def test_split_configuration_counts_the_workgroups_of_every_launch():
    config = Config("attention", "gfx942", 32, 16, "decode", batch=1, heads_q=4, heads_kv=1, seq_k=128, splits=4,
                    interpret=True, group="split")
    record = measure_config(config, repeat=1)
    assert record["status"] == "ok", record.get("error")
    kernel = record["kernel"]
    assert kernel["num_splits"] == 4
    assert [launch["name"] for launch in kernel["launches"]] == ["paged_attention", "paged_attention_combine"]
    split, combine = kernel["launches"]
    assert split["grid"] == 4 and kernel["grid"] == 4  # one (sequence, KV head) x 4 splits
    assert kernel["workgroups"] == split["grid"] + combine["grid"]
    assert kernel["workspace_bytes"] == 4 * 4 * (32 + 1) * 4  # splits x query rows x (D + LSE) x f32
    interp = record["interp"]
    assert interp["passed"]
    workspace, out = interp["workspace_argument"], interp["out_argument"]
    # Every workspace slot is written once by the splits; out is written once, by the combine kernel.
    assert interp["bytes"]["arguments_written"][workspace] == kernel["workspace_bytes"]
    assert interp["bytes"]["arguments_written"][out] == record["bytes_required"]["out"]
    text = report.split_table([record])
    assert f"| {config.name} | 4 | paged_attention x 4, then paged_attention_combine x {combine['grid']} | " \
           f"{4 + combine['grid']} | 304 |" in text
    assert "| workgroups |" in report.summary_table([record])
    # Pipelined (4 workgroups on 304 compute units): the quality table shows the depth and the hot loop's
    # waits on global data, those draining to vmcnt(0) in parentheses (here one tile per split: no KV loop).
    assert kernel["pipeline_depth"] == 2
    waits, drains = kernel["global_waits_per_tile"], kernel["draining_waits_per_tile"]
    assert f"| 2 | {waits} ({drains}) |" in report.quality_table([record])
