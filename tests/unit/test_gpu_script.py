"""The parts of the GPU run (benchmarks/gpu) that run without a GPU: its options, the float64 reference
it checks against, the check inputs (NaN in every unused block, the tables placing each sequence's
tokens), the timing loop and the report, with a fake timer in place of CUDA events."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))

import cases  # noqa: E402
import run_gpu  # noqa: E402

from pagedir import reference  # noqa: E402


def test_options_are_checked() -> None:
    args = run_gpu.parse_args(["--peers", "sdpa,vllm", "--repeats", "5"])
    assert args.peers == ["sdpa", "vllm"] and args.repeats == 5 and args.budget < 480
    assert run_gpu.parse_args(["--peers", "none"]).peers == []
    with pytest.raises(SystemExit):
        run_gpu.parse_args(["--peers", "sdpa,cudnn"])
    with pytest.raises(SystemExit):
        run_gpu.parse_args(["--repeats", "0"])


@pytest.mark.parametrize("causal", [False, True])
def test_reference_matches_pagedir_reference(causal: bool) -> None:
    rng = np.random.default_rng(3)
    q = rng.standard_normal((3, 8, 4, 32))
    k, v = rng.standard_normal((3, 2, 20, 32)), rng.standard_normal((3, 2, 20, 32))
    lengths = [20, 9, 4]
    k[1, :, 9:] = np.nan  # past a length: must take no part
    expected = reference.attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32),
                                   seq_lens=lengths, causal=causal)
    got = run_gpu.reference(q, k, v, lengths, causal)
    assert got.dtype == np.float64 and np.isfinite(got).all()
    assert np.abs(got - expected).max() < 1e-5


@pytest.mark.parametrize("name", ["check-blocks-hnd-decode-f16-static", "check-csr-nhd-prefill-bf16-static-split2",
                                  "check-pointers-decode-bf16-dynamic-split0"])
def test_check_inputs_place_every_token_and_nan_elsewhere(name: str) -> None:
    kernel = next(k.to_json() for k in cases.CHECKS if k.name == name)
    found = run_gpu.check_inputs(kernel, batch=4, seed=1)
    o = kernel["options"]
    lengths = found["lengths"]
    assert lengths[0] == o["seq_len_k"] and lengths.min() >= (o["seq_len_q"] if o["causal"] else 1)
    if o["page_table"] == "pointers":
        for name_ in ("k", "v"):
            pages, ids = found[f"{name_}_pages"], found[f"{name_}_page_ids"][..., 0]
            flat = pages[ids].reshape(4, -1)[:, : o["num_heads_kv"] * o["seq_len_k"] * o["head_dim"]]
            dense = flat.reshape(found[name_].shape)
            for b in range(4):
                assert np.array_equal(dense[b, :, : lengths[b]], found[name_][b, :, : lengths[b]])
                assert np.isnan(dense[b, :, lengths[b]:]).all()
        return
    layout = o["kv_layout"]
    for pool, dense in ((found["k_cache"], found["k"]), (found["v_cache"], found["v"])):
        gathered = reference.blocks_dense(pool, found["block_table"], layout=layout)
        used = set()
        for b in range(4):
            assert np.array_equal(gathered[b, :, : lengths[b]], dense[b, :, : lengths[b]])
            assert np.isnan(gathered[b, :, lengths[b]: -(-lengths[b] // 16) * 16]).all()  # the rest of a last block
            used |= set(found["block_table"][b, : -(-lengths[b] // 16)].tolist())
        unused = sorted(set(range(pool.shape[0])) - used)
        assert unused and np.isnan(pool[unused]).all()  # NaN in every unused block
    if o["page_table"] == "csr":
        assert np.array_equal(reference.csr_seq_lens(found["kv_indptr"], found["kv_last_page_len"], 16), lengths)
        assert len(found["kv_indices"]) == 4 * -(-o["seq_len_k"] // 16)


def test_rounding_is_exact_in_the_stored_type() -> None:
    values = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    assert np.array_equal(run_gpu.rounded(values, "bf16"), reference.round_bf16(values))
    assert np.array_equal(run_gpu.rounded(values, "f16"), values.astype(np.float16).astype(np.float32))


def test_timings_and_report_with_a_fake_timer(tmp_path) -> None:
    bench = cases.bench_cases()
    names = {c.name for c in bench}
    assert len([c for c in bench if c.mode == "decode"]) == 32 and "prefill-gqa-b1-sk8192-sq8192" in names
    skipped = [c for c in bench if c.skipped]
    assert skipped and all(c.kv_bytes() > cases.KV_BUDGET_BYTES for c in skipped)

    speeds = {"pagedir": 2.0e12, "sdpa": 1.6e12}  # bytes per second each fake implementation reaches

    def implementation(name):
        def make(case):
            if name == "vllm":
                raise RuntimeError("not carried: no vllm environment")
            return case.kv_bytes() / speeds[name] * 1e6  # the fake timer reads this back as microseconds
        return make

    clock = iter(range(10**6))  # one tick per measurement: the deadline falls inside the third implementation
    measured = len(bench) - len(skipped)
    written = []
    rows = run_gpu.run_timings(bench, {n: implementation(n) for n in ("pagedir", "sdpa", "vllm")},
                               timer=lambda us: [us, us * 1.1, us * 0.9], deadline=2 * measured + 8,
                               clock=lambda: next(clock), progress=lambda rows: written.append(len(rows)))
    assert written == [len(bench)] * 3  # after each implementation: what a stopped run keeps
    row = next(r for r in rows if r["name"] == "decode-gqa-b8-sk4096")
    assert row["pagedir_gbps"] == pytest.approx(2000) and row["best_peer"] == "sdpa"
    assert row["pagedir_vs_best_peer"] == pytest.approx(0.8)
    assert row["times"]["vllm"]["skipped"] == "RuntimeError: not carried: no vllm environment"
    spent = [r for r in rows if r["times"]["vllm"].get("skipped") == "the run's time budget was spent"]
    assert len(spent) == measured - 9  # past the deadline the rest is listed, not dropped
    assert all("median_us" in r["times"]["sdpa"] for r in rows if r["name"] not in {c.name for c in skipped})
    results = {"date": "2026-01-01 00:00 UTC", "machine": {"device": "Fake GPU", "driver": "CUDA 0.0"}, "arch": "sm_90",
               "copy_gbps": 2500.0, "implementations": ["pagedir", "sdpa", "vllm"], "timings": rows,
               "peers": {"sdpa": run_gpu.PEERS["sdpa"], "vllm": run_gpu.PEERS["vllm"]},
               "checks": [{"name": "check-a", "status": "pass"}, {"name": "check-b", "status": "FAIL", "detail": "max 1"}],
               "skipped": [{"name": c.name, "reason": c.skipped} for c in skipped]}
    json_path, md_path = run_gpu.write_results(results, str(tmp_path))
    assert json.loads(open(json_path).read())["copy_gbps"] == 2500.0
    table = open(md_path).read()
    assert "Fake GPU" in table and "2500 GB/s" in table and "1 of 2 checks pass" in table and "check-b: FAIL" in table
    assert "| decode-gqa-b8-sk4096 | " in table and "| 2000 | 80% |" in table
    assert "Not run: " in table and "exceeds the run's budget" in table
    assert "Peers: sdpa: torch SDPA (flash) on gathered dense K/V; vllm: vLLM Triton unified attention." in table
    del results["checks"]
    assert "Correctness: not checked in this run." in cases.markdown_table(results)


def test_build_artefacts_compiles_each_kernel_and_lists_failures(tmp_path) -> None:
    import build_artefacts

    from pagedir.runtime import Launcher

    out = tmp_path / "artefacts"
    only = "check-blocks-nhd-decode-f16-static"
    assert build_artefacts.main(["--arch", "gfx942", "--emit", "hsaco", "--out", str(out), "--only", only,
                                 "--vllm-python", str(tmp_path / "none")]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    (kernel,) = manifest["kernels"]
    assert kernel["names"] == ["q", "k_cache", "v_cache", "block_table", "seq_lens", "out"]
    launcher = Launcher.from_files(str(out / kernel["artefact"]), str(out / kernel["plan"]), names=kernel["names"])
    assert launcher.target == "hip" and launcher.plan["launch_order"] == ["paged_attention"]
    assert "no vllm environment" in manifest["vllm"]["error"]
    assert build_artefacts.main(["--arch", "gfx000", "--emit", "hsaco", "--out", str(out), "--only", only,
                                 "--vllm-python", ""]) == 0
    (failed,) = json.loads((out / "manifest.json").read_text())["kernels"]
    assert "gfx000" in failed["error"] and "artefact" not in failed  # listed with its error; the GPU run reports it


def test_vllm_constants_are_read_without_importing(tmp_path) -> None:
    import build_artefacts

    source = tmp_path / "triton_attn.py"
    source.write_text("import vllm_is_not_here\nMIN_LAUNCH_GRID_SIZE_2D = 128\nNUM_PAR_SOFTMAX_SEGMENTS: int = 16\nOTHER = 3\n")
    assert build_artefacts.constants_of(str(source)) == {"MIN_LAUNCH_GRID_SIZE_2D": 128, "NUM_PAR_SOFTMAX_SEGMENTS": 16}


def host_arguments(kernel: dict, inputs: dict) -> dict:
    """The check's inputs as host arrays of the kernel's types (bf16 as bit patterns), stacked caches as
    two views of one array."""
    convert = (lambda a: a.astype(np.float16)) if kernel["options"]["dtype"] == "f16" else reference.bf16_bits
    found = {name: inputs[name] for name in ("seq_lens", "block_table", "kv_indptr", "kv_indices", "kv_last_page_len")
             if name in inputs}
    found["q"] = convert(inputs["q"])
    if kernel["form"] == "stacked":
        both = convert(np.stack([inputs["k_cache"], inputs["v_cache"]]))
        found["k_cache"], found["v_cache"] = both[0], both[1]
    else:
        found["k_cache"], found["v_cache"] = convert(inputs["k_cache"]), convert(inputs["v_cache"])
    return found


@pytest.mark.parametrize("name", [k.name for k in cases.CHECKS if k.options["page_table"] != "pointers"])
def test_check_cases_pass_on_the_interpreter(name: str) -> None:
    # The GPU run's check, as it runs there, with the kernels compiled for gfx942 and run by the interpreter
    # (PagedAttention on host arrays): its inputs, its reference and its tolerance agree with pagedir's kernels.
    # (The pointer form takes device addresses in its tables: it runs on the GPU only.)
    from pagedir.runtime import PagedAttention

    kernel = next(k.to_json() for k in cases.CHECKS if k.name == name)
    attn = PagedAttention(**{**kernel["options"], "arch": "gfx942"})
    batch = kernel["options"]["batch"] + (2 if kernel["options"]["dynamic"] else 0)
    inputs = run_gpu.check_inputs(kernel, batch)
    arguments = host_arguments(kernel, inputs)
    out = attn(*[arguments[n] for n in attn.names[:-1]])
    got = reference.bf16_values(out) if kernel["options"]["dtype"] == "bf16" else out.astype(np.float32)
    expected = run_gpu.reference(*(inputs[n].astype(np.float64) for n in ("q", "k", "v")), list(inputs["lengths"]),
                                 kernel["options"]["causal"])
    assert np.isfinite(got).all() and np.abs(got - expected).max() <= run_gpu.TOLERANCE


def test_vllm_kernel_is_carried_with_the_ops_modules_it_imports(tmp_path) -> None:
    import build_artefacts

    ops = tmp_path / "vllm" / "v1" / "attention" / "ops"
    (ops / "triton_quant_kv").mkdir(parents=True)
    (ops / "triton_unified_attention.py").write_text(
        "import torch\nimport vllm.envs as envs\nfrom vllm.triton_utils import tl, triton\n"
        "from vllm.v1.attention.ops.triton_quant_kv._helpers import cdiv_fn\n"
        "def later():\n    from vllm.v1.attention.ops.triton_quant_kv import get_backend\n")
    (ops / "triton_quant_kv" / "_helpers.py").write_text("from vllm.v1.attention.ops.common import x\n")
    (ops / "common.py").write_text("from vllm.distributed import y\n")
    files, unstubbed = build_artefacts.vllm_modules(str(tmp_path), build_artefacts.VLLM_KERNEL)
    assert files == ["vllm/v1/attention/ops/common.py", "vllm/v1/attention/ops/triton_quant_kv/_helpers.py",
                     "vllm/v1/attention/ops/triton_unified_attention.py"]  # dependencies first
    assert unstubbed == ["vllm.distributed"]  # no stand-in: the GPU run lists vLLM as not run, with this
