"""The GPU run: pagedir's kernels checked and timed on an NVIDIA GPU, next to the peers there.

    PYTHONPATH=src python benchmarks/gpu/run_gpu.py [--artefacts benchmarks/gpu/artefacts] [--out benchmarks/results/gpu]

Made for a machine with torch and Triton and no package registry: it reads only the repository
(``pagedir.runtime``: no compiler, no MLIR) and the folder ``make gpu-artefacts`` filled on the CPU
(the kernels, their plans, ``manifest.json``, vLLM's kernel source). In one run it

1. checks every kernel of the correctness matrix (:data:`cases.CHECKS`) against a float64 torch
   reference on the GPU: random data, shuffled blocks, NaN in every unused block and in the slots
   past each length, ``out`` filled with NaN; a dynamic kernel at another batch than the generator's;
2. times, with CUDA events after warm-up (the median of the repeats; the L2 cache flushed before
   each; a sleep kernel queued first so the host's launch work is not timed), pagedir on the
   shapes of :func:`cases.bench_cases` against the peers there: ``scaled_dot_product_attention``
   on the gathered dense K/V (its flash backend), FlexAttention with a paged block mask where it
   runs, and vLLM's Triton unified attention kernel (its carried source) where it compiles;
3. measures a device-to-device copy's bandwidth as the practical ceiling and states each decode
   time as GB/s of K/V read and as a fraction of it;

and writes ``results.json`` and ``RESULTS.md`` into ``--out``. Every failure is recorded with its
reason (a missing artefact, a peer that does not run) and the run goes on; ``--budget`` seconds
bound it (8 minutes on an H100 by default: what is left when it runs out is listed as not run).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import math
import os
import statistics
import sys
import time
import traceback
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "src"))

import cases  # noqa: E402

TOLERANCE = 2e-2  # f16/bf16 outputs of order 1 (softmax-weighted averages of unit normals)
COPY_BYTES = 2 * 2**30
FLUSH_BYTES = 256 * 2**20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="pagedir on an NVIDIA GPU: checks, timings against the peers, "
                                                 "the copy ceiling")
    parser.add_argument("--artefacts", default=os.path.join(HERE, "artefacts"), help="the folder make gpu-artefacts filled")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "results", "gpu"))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--budget", type=float, default=420.0, help="seconds for the whole run (timings stop there)")
    parser.add_argument("--quick", action="store_true", help="one timed shape of each kind")
    parser.add_argument("--skip-checks", action="store_true")
    parser.add_argument("--peers", default="sdpa,flex,vllm", help="comma-separated: sdpa, flex, vllm (or none)")
    args = parser.parse_args(argv)
    if args.warmup < 0 or args.repeats < 1:
        parser.error("--warmup must be >= 0 and --repeats >= 1")
    args.peers = [p for p in args.peers.split(",") if p and p != "none"]
    unknown = sorted(set(args.peers) - set(PEERS))
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)} (known: {', '.join(PEERS)})")
    return args


# ----------------------------------------------------------------------------- array helpers (numpy or torch)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def repeat_heads(x: Any, group: int) -> Any:
    return x.repeat_interleave(group, dim=0) if _is_torch(x) else x.repeat(group, axis=0)


def row_max(x: Any) -> Any:
    return x.amax(dim=-1, keepdim=True) if _is_torch(x) else x.max(axis=-1, keepdims=True)


def exp(x: Any) -> Any:
    if _is_torch(x):
        return x.exp()
    import numpy as np

    return np.exp(x)


def row_sum(x: Any) -> Any:
    return x.sum(dim=-1, keepdim=True) if _is_torch(x) else x.sum(axis=-1, keepdims=True)


def reference(q: Any, k: Any, v: Any, lengths: list[int], causal: bool, scale: float | None = None) -> Any:
    """Attention in the precision of its inputs (float64 here): q ``[B, Hq, Sq, D]``, dense k/v ``[B, Hkv,
    Sk, D]``; keys ``>= lengths[b]`` take no part (whatever they hold), with ``causal`` query ``i`` sees keys
    ``j <= i + lengths[b] - Sq``. numpy or torch arrays alike."""
    batch, heads_q, seq_q, dim = q.shape
    group = heads_q // k.shape[1]
    scale = 1.0 / math.sqrt(dim) if scale is None else scale
    out = q * 0
    for b in range(batch):
        n = int(lengths[b])
        keys, values = repeat_heads(k[b, :, :n], group), repeat_heads(v[b, :, :n], group)
        scores = (q[b] @ keys.swapaxes(-1, -2)) * scale  # [Hq, Sq, n]
        if causal:
            for i in range(seq_q):
                scores[:, i, i + n - seq_q + 1:] = -math.inf
        weights = exp(scores - row_max(scores))
        out[b] = (weights / row_sum(weights)) @ values
    return out


# ----------------------------------------------------------------------------- check inputs (numpy, then uploaded)


def rounded(values: Any, dtype: str) -> Any:
    """float32 numpy values rounded to f16 or bf16 (still float32: exact when stored as that type)."""
    import numpy as np

    if dtype == "f16":
        return values.astype(np.float16).astype(np.float32)
    bits = values.astype(np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
    return bits.astype(np.uint32).view(np.float32)


def check_inputs(kernel: dict, batch: int, seed: int = 0) -> dict:
    """Host (numpy float32) inputs of one check: dense q/k/v rounded to the kernel's dtype, the lengths,
    and the kernel's caches and tables for its form, NaN in every unused block and past every length."""
    import numpy as np

    o = kernel["options"]
    rng = np.random.default_rng(seed)
    hq, hkv, sq, sk, d, page = o["num_heads_q"], o["num_heads_kv"], o["seq_len_q"], o["seq_len_k"], o["head_dim"], o["page_size"]
    low = sq if o.get("causal") else 1
    lengths = rng.integers(low, sk + 1, size=batch)
    lengths[0] = sk
    if batch > 1:
        lengths[-1] = low
    q = rounded(rng.standard_normal((batch, hq, sq, d)).astype(np.float32), o["dtype"])
    k, v = (rounded(rng.standard_normal((batch, hkv, sk, d)).astype(np.float32), o["dtype"]) for _ in range(2))
    found = {"q": q, "k": k, "v": v, "lengths": lengths.astype(np.int32)}
    stale_k, stale_v = k.copy(), v.copy()
    for b in range(batch):
        stale_k[b, :, lengths[b]:] = np.nan
        stale_v[b, :, lengths[b]:] = np.nan
    form, table = kernel["form"], o["page_table"]
    if table == "pointers":
        found.update(pointer_pages(stale_k, stale_v, page, rng))
        return found
    slots = -(-sk // page)
    blocks = batch * slots
    used = -(-lengths // page)
    ids = iter(rng.permutation(blocks))
    block_table = rng.integers(0, blocks, size=(batch, slots)).astype(np.int32)  # unused slots: any block
    for b in range(batch):
        for slot in range(used[b]):
            block_table[b, slot] = next(ids)
    pools = []
    for dense in (stale_k, stale_v):
        pool = np.full((blocks, hkv, page, d), np.nan, dtype=np.float32)
        padded = np.concatenate([dense, np.full((batch, hkv, slots * page - sk, d), np.nan, np.float32)], axis=2)
        for b in range(batch):
            for slot in range(used[b]):
                pool[block_table[b, slot]] = padded[b, :, slot * page:(slot + 1) * page]
        pools.append(np.ascontiguousarray(pool.transpose(0, 2, 1, 3)) if o.get("kv_layout", "nhd") == "nhd" else pool)
    found.update(k_cache=pools[0], v_cache=pools[1], block_table=block_table, seq_lens=found["lengths"])
    if table == "csr":
        indptr = np.concatenate([[0], np.cumsum(used)]).astype(np.int32)
        indices = np.concatenate([block_table[b, :used[b]] for b in range(batch)])
        padding = rng.integers(0, blocks, size=batch * slots - len(indices))  # nnz as the static kernel has it
        found.update(kv_indptr=indptr, kv_indices=np.concatenate([indices, padding]).astype(np.int32),
                     kv_last_page_len=(lengths - (used - 1) * page).astype(np.int32))
    return found


def pointer_pages(k: Any, v: Any, page: int, rng: Any) -> dict:
    """The pointer form: each sequence's ``[Hkv, Sk, D]`` cut into pages of ``page * D`` elements (the last
    partly filled, NaN after), in a shuffled pool; the tables hold page ids, made addresses on upload."""
    import numpy as np

    batch, hkv, sk, d = k.shape
    pages = -(-hkv * sk // page)
    found = {}
    for name, dense in (("k", k), ("v", v)):
        flat = np.full((batch, pages * page * d), np.nan, np.float32)
        flat[:, : hkv * sk * d] = dense.reshape(batch, -1)
        ids = rng.permutation(batch * pages).reshape(batch, pages)
        pool = np.empty((batch * pages, page * d), np.float32)
        pool[ids.reshape(-1)] = flat.reshape(batch * pages, page * d)
        found[f"{name}_pages"] = pool
        found[f"{name}_page_ids"] = ids.reshape(batch, pages, 1).astype(np.int64)
    return found


def upload(inputs: dict, kernel: dict, torch: Any) -> dict:
    """The kernel's arguments on the GPU, by name (``out`` filled with NaN)."""
    o = kernel["options"]
    dtype = torch.float16 if o["dtype"] == "f16" else torch.bfloat16

    def device(array: Any, as_type: Any = None) -> Any:
        tensor = torch.from_numpy(array).cuda()
        return tensor.to(as_type) if as_type is not None else tensor

    found = {"q": device(inputs["q"], dtype)}
    found["out"] = torch.full_like(found["q"], float("nan"))
    if "seq_lens" in inputs:
        found["seq_lens"] = device(inputs["seq_lens"])
    for name in ("block_table", "kv_indptr", "kv_indices", "kv_last_page_len"):
        if name in inputs:
            found[name] = device(inputs[name])
    if kernel["form"] == "stacked":  # K and V in one allocation, [2, blocks, ...], as two views
        both = torch.stack([torch.from_numpy(inputs["k_cache"]), torch.from_numpy(inputs["v_cache"])]).to(dtype).cuda()
        found["k_cache"], found["v_cache"], found["_keep"] = both[0], both[1], both
    elif "k_cache" in inputs:
        found["k_cache"], found["v_cache"] = device(inputs["k_cache"], dtype), device(inputs["v_cache"], dtype)
    if "k_pages" in inputs:
        element = 2
        for name in ("k", "v"):
            pool = device(inputs[f"{name}_pages"], dtype)
            page_bytes = pool.shape[1] * element
            found[f"_{name}_pool"] = pool
            found[f"{name}_table"] = device(inputs[f"{name}_page_ids"]) * page_bytes + pool.data_ptr()
        found["seq_lens"] = device(inputs["lengths"])
    return found


def run_checks(manifest: dict, artefacts: str, torch: Any, launcher_of: Callable) -> list[dict]:
    results = []
    for kernel in manifest["kernels"]:
        if not kernel["name"].startswith("check-"):
            continue
        entry = {"name": kernel["name"]}
        if "error" in kernel:
            results.append({**entry, "status": "not built", "detail": kernel["error"]})
            continue
        try:
            launcher = launcher_of(kernel)
            batch = kernel["options"]["batch"] + (2 if kernel["options"].get("dynamic") else 0)
            inputs = check_inputs(kernel, batch)
            arguments = upload(inputs, kernel, torch)
            values = [arguments[name] for name in kernel["names"]]
            launcher(*values, stream=torch.cuda.current_stream().cuda_stream)
            torch.cuda.synchronize()
            got = arguments["out"].double()
            expected = reference(torch.from_numpy(inputs["q"]).double().cuda(), torch.from_numpy(inputs["k"]).double().cuda(),
                                 torch.from_numpy(inputs["v"]).double().cuda(), list(inputs["lengths"]),
                                 bool(kernel["options"].get("causal")))
            error = (got - expected).abs()
            worst = float(error.max()) if bool(torch.isfinite(got).all()) else math.inf
            entry.update(batch=batch, max_abs_error=worst, status="pass" if worst <= TOLERANCE else "FAIL",
                         detail=f"max |error| {worst:.3g} (tolerance {TOLERANCE})")
        except Exception as err:  # recorded; the next check runs
            entry.update(status="error", detail=f"{type(err).__name__}: {err}", traceback=traceback.format_exc()[-2000:])
        results.append(entry)
    return results


# ----------------------------------------------------------------------------- timing


class CudaTimer:
    """Median GPU time of a call, by CUDA events around each repeat (after ``warmup`` calls). Before each
    repeat the L2 is flushed and a sleep kernel queued, so neither cached data nor the host's launch work
    is timed."""

    def __init__(self, torch: Any, warmup: int, repeats: int):
        self.torch, self.warmup, self.repeats = torch, warmup, repeats
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")

    def __call__(self, call: Callable[[], Any]) -> list[float]:
        torch = self.torch
        for _ in range(self.warmup):
            call()
        times = []
        for _ in range(self.repeats):
            self.flush.zero_()
            torch.cuda._sleep(1_000_000)  # about 0.5 ms: the launch work queues behind it
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)  # microseconds
        return times


def copy_bandwidth(torch: Any, timer: Callable) -> float:
    """GB/s of a device-to-device copy (bytes read plus bytes written, per second)."""
    source = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    times = timer(lambda: target.copy_(source))
    del source, target
    return 2 * COPY_BYTES / (statistics.median(times) * 1e-6) / 1e9


def bench_inputs(case: cases.BenchCase, torch: Any) -> dict:
    """Random K/V pools (NHD, ``[blocks, 16, Hkv, 128]``) every sequence fills to ``seq_k``, through a
    shuffled block table; q ``[B, Hq, Sq, 128]``."""
    hq, hkv = cases.HEADS[case.heads]
    slots = case.seq_k // cases.PAGE
    blocks = case.batch * slots
    gen = torch.Generator(device="cuda").manual_seed(0)
    dtype = torch.float16
    k = torch.randn(blocks, cases.PAGE, hkv, cases.HEAD_DIM, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(blocks, cases.PAGE, hkv, cases.HEAD_DIM, device="cuda", dtype=dtype, generator=gen)
    table = torch.randperm(blocks, device="cuda", generator=gen).to(torch.int32).reshape(case.batch, slots)
    q = torch.randn(case.batch, hq, case.seq_q, cases.HEAD_DIM, device="cuda", dtype=dtype, generator=gen)
    lengths = torch.full((case.batch,), case.seq_k, dtype=torch.int32, device="cuda")
    return {"q": q, "k_cache": k, "v_cache": v, "block_table": table, "seq_lens": lengths, "out": torch.empty_like(q)}


def gathered(inputs: dict) -> tuple[Any, Any]:
    """Dense ``[B, Hkv, Sk, D]`` K and V gathered through the block table (what SDPA reads)."""
    table = inputs["block_table"].long()
    batch, slots = table.shape
    k = inputs["k_cache"][table].reshape(batch, slots * cases.PAGE, *inputs["k_cache"].shape[2:])
    v = inputs["v_cache"][table].reshape(batch, slots * cases.PAGE, *inputs["v_cache"].shape[2:])
    return k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous()


def pagedir_call(case: cases.BenchCase, inputs: dict, launcher: Any, torch: Any) -> Callable:
    values = [inputs[n] for n in ("q", "k_cache", "v_cache", "block_table", "seq_lens", "out")]
    size = launcher.workspace_bytes(*values)
    workspace = torch.empty(max(1, size), dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream

    def call():
        launcher(*values, workspace=workspace, stream=stream)

    launcher(*values, workspace=workspace, stream=stream)  # the call plan of these shapes, memoized
    started = time.perf_counter()
    for _ in range(20):
        call()
    call.host_us = (time.perf_counter() - started) / 20 * 1e6  # the runtime's Python work per call
    torch.cuda.synchronize()
    return call


def sdpa_call(case: cases.BenchCase, inputs: dict, torch: Any) -> Callable:
    """SDPA's flash backend on the gathered dense K/V (not timed: the gather). Where flash does not take
    grouped heads (``enable_gqa``), K and V are repeated to the query heads, and the call says so."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    k, v = gathered(inputs)
    q = inputs["q"]
    causal = case.mode == "prefill"

    def call():
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

    try:
        call()
        return call
    except RuntimeError:
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)

    def repeated():
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    repeated.note = "K/V repeated to the query heads (flash refused enable_gqa)"
    return repeated


def flex_call(case: cases.BenchCase, inputs: dict, torch: Any) -> Callable:
    """FlexAttention over the pools as one long KV sequence, a block mask per sequence from the block
    table (torch's experimental paged attention), compiled; KV blocks of one page (16 tokens)."""
    from torch.nn.attention.experimental._paged_attention import PagedAttention as TorchPaged
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    hq, hkv = cases.HEADS[case.heads]
    blocks = inputs["k_cache"].shape[0]
    paged = TorchPaged(blocks, cases.PAGE, case.batch, device="cuda")
    for b in range(case.batch):
        paged.reserve(torch.tensor(b, device="cuda"), torch.tensor(case.seq_k, device="cuda"))
    batch_idx = torch.arange(case.batch, device="cuda")
    k_cache = torch.zeros(1, hkv, blocks * cases.PAGE, cases.HEAD_DIM, dtype=torch.float16, device="cuda")
    v_cache = torch.zeros_like(k_cache)
    k, v = gathered(inputs)
    positions = torch.arange(case.seq_k, device="cuda").expand(case.batch, case.seq_k)
    paged.assign(batch_idx, positions, k, v, k_cache, v_cache)
    causal = case.mode == "prefill"
    offset = case.seq_k - case.seq_q

    def mask(b, h, q_idx, kv_idx):
        return (q_idx + offset >= kv_idx) if causal else (kv_idx >= 0)

    logical = create_block_mask(mask, case.batch, None, case.seq_q, case.seq_k, BLOCK_SIZE=(max(16, min(128, case.seq_q)), cases.PAGE))
    physical = paged.convert_logical_block_mask(logical)  # carries the mask_mod in physical positions
    compiled = torch.compile(flex_attention)
    q = inputs["q"]
    return lambda: compiled(q, k_cache, v_cache, block_mask=physical, enable_gqa=hq != hkv)


def vllm_call(case: cases.BenchCase, inputs: dict, torch: Any, vllm: dict) -> Callable:
    """vLLM's ``unified_attention`` called as its Triton backend calls it (3D kernel and reduce for small
    decode batches, else 2D), on the same pools and block table."""
    ops = vllm["module"]
    constants = vllm["constants"]
    hq, hkv = cases.HEADS[case.heads]
    tokens = case.batch * case.seq_q
    q = inputs["q"].transpose(1, 2).reshape(tokens, hq, cases.HEAD_DIM).contiguous()
    out = torch.empty_like(q)
    cu_seqlens_q = torch.arange(0, tokens + 1, case.seq_q, dtype=torch.int32, device="cuda")
    segments = constants["NUM_PAR_SOFTMAX_SEGMENTS"]
    padded = 1 << (cases.HEAD_DIM - 1).bit_length()
    scale = torch.ones(1, dtype=torch.float32, device="cuda")
    scratch = dict(softmax_segm_output=torch.empty(tokens, hq, segments, padded, dtype=torch.float32, device="cuda"),
                   softmax_segm_max=torch.empty(tokens, hq, segments, dtype=torch.float32, device="cuda"),
                   softmax_segm_expsum=torch.empty(tokens, hq, segments, dtype=torch.float32, device="cuda"))

    def call():
        ops.unified_attention(q=q, k=inputs["k_cache"], v=inputs["v_cache"], out=out, cu_seqlens_q=cu_seqlens_q,
                              max_seqlen_q=case.seq_q, seqused_k=inputs["seq_lens"], max_seqlen_k=case.seq_k,
                              softmax_scale=cases.HEAD_DIM ** -0.5, causal=True, window_size=(-1, -1),
                              block_table=inputs["block_table"], softcap=0, q_descale=None, k_descale=scale,
                              v_descale=scale, seq_threshold_3D=constants["MIN_LAUNCH_GRID_SIZE_2D"] // hkv,
                              num_par_softmax_segments=segments, **scratch)

    return call


PEERS = {"sdpa": "torch SDPA (flash) on gathered dense K/V", "flex": "FlexAttention, paged block mask (compiled)",
         "vllm": "vLLM Triton unified attention"}


def load_vllm(artefacts: str, manifest: dict) -> dict:
    """vLLM's carried unified-attention module, its vllm imports answered by small stand-ins (its logger,
    envs, platform, triton_utils and KV-quant enum); raises with the reason when it does not load."""
    import enum
    import importlib.util
    import logging
    import types

    import torch
    import triton
    import triton.language as tl

    info = manifest.get("vllm") or {}
    if "error" in info:
        raise RuntimeError(f"not carried: {info['error']}")
    root = os.path.join(artefacts, "vllm")

    def module(name: str, **attributes: Any) -> types.ModuleType:
        found = sys.modules.get(name) or types.ModuleType(name)
        found.__dict__.update(attributes)
        found.__path__ = []  # a package: its submodules load from the carried files
        sys.modules[name] = found
        return found

    class KVQuantMode(enum.IntEnum):
        NONE = 0
        FP8_PER_TENSOR = 1
        INT8_PER_TOKEN_HEAD = 2
        FP8_PER_TOKEN_HEAD = 3
        INT4_PER_TOKEN_HEAD = 4
        INT2_PER_TOKEN_HEAD = 5

    platform = types.SimpleNamespace(fp8_dtype=lambda: torch.float8_e4m3fn, is_rocm=lambda: False,
                                     is_cuda=lambda: True)
    for name in ("vllm", "vllm.v1", "vllm.v1.attention", "vllm.v1.attention.ops", "vllm.v1.attention.ops.triton_quant_kv"):
        module(name)
    module("vllm.envs", VLLM_BATCH_INVARIANT=False)
    module("vllm.logger", init_logger=logging.getLogger)
    module("vllm.platforms", current_platform=platform)
    module("vllm.triton_utils", tl=tl, triton=triton, HAS_TRITON=True)
    module("vllm.v1.kv_cache_interface", KVQuantMode=KVQuantMode)
    for relative in info["files"]:  # dependencies first, as build_artefacts.vllm_modules lists them
        name = relative[:-3].replace("/", ".")
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, relative))
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
    unified = sys.modules["vllm.v1.attention.ops.triton_unified_attention"]
    # vLLM's values where its backend's source did not give them (build_artefacts.constants_of).
    constants = {"MIN_LAUNCH_GRID_SIZE_2D": 128, "NUM_PAR_SOFTMAX_SEGMENTS": 16, **info.get("constants", {})}
    return {"module": unified, "constants": constants, "version": info.get("version")}


def run_timings(bench: list[cases.BenchCase], implementations: dict[str, Callable], timer: Callable,
                deadline: float, clock: Callable[[], float] = time.monotonic,
                progress: Callable[[list[dict]], None] = lambda rows: None) -> list[dict]:
    """Each case's median time per implementation (``implementations[name](case)`` gives the call, or
    raises with the reason it does not run). One implementation at a time over every case, in the
    order given (the slow compiles last), so that what the ``deadline`` leaves out is the last peer's;
    ``progress`` gets the rows so far after each implementation (the run writes them: a run stopped
    from outside keeps what it measured)."""
    rows = {case.name: {"name": case.name, "mode": case.mode, "heads": case.heads, "batch": case.batch,
                        "seq_k": case.seq_k, "seq_q": case.seq_q, "kv_bytes": case.kv_bytes(), "times": {}}
            for case in bench}
    for name, make in implementations.items():
        for case in bench:
            times = rows[case.name]["times"]
            if case.skipped:
                times[name] = {"skipped": case.skipped}
                continue
            if clock() > deadline:
                times[name] = {"skipped": "the run's time budget was spent"}
                continue
            try:
                call = make(case)
                measured = timer(call)
                times[name] = {"median_us": statistics.median(measured), "min_us": min(measured), "repeats": len(measured)}
                for attribute in ("host_us", "note"):
                    if hasattr(call, attribute):
                        times[name][attribute] = getattr(call, attribute)
            except Exception as err:  # this implementation does not run here: recorded, the others go on
                reason = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
                times[name] = {"skipped": f"{type(err).__name__}: {reason}"}
        progress(summarized(bench, rows))
    return summarized(bench, rows)


def summarized(bench: list[cases.BenchCase], rows: dict[str, dict]) -> list[dict]:
    """The rows with pagedir's decode GB/s and its time over the best peer's, where measured."""
    for case in bench:
        row = rows[case.name]
        median = row["times"].get("pagedir", {}).get("median_us")
        if case.mode == "decode" and median:
            row["pagedir_gbps"] = case.kv_bytes() / (median * 1e-6) / 1e9
        peers = [(t["median_us"], n) for n, t in row["times"].items() if n != "pagedir" and t.get("median_us")]
        if peers and median:
            best = min(peers)
            row["best_peer"], row["pagedir_vs_best_peer"] = best[1], median / best[0]
    return list(rows.values())


def write_results(results: dict, out: str) -> tuple[str, str]:
    os.makedirs(out, exist_ok=True)
    json_path, md_path = os.path.join(out, "results.json"), os.path.join(out, "RESULTS.md")
    with open(json_path, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1)
    with open(md_path, "w", encoding="utf-8") as handle:
        handle.write(cases.markdown_table(results))
    return json_path, md_path


def machine(torch: Any) -> dict:
    found = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        import triton

        found["triton"] = triton.__version__
    except ImportError:
        found["triton"] = "not installed"
    try:
        version = ctypes.c_int()
        ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(version))
        found["driver"] = f"CUDA {version.value // 1000}.{version.value % 1000 // 10}"
    except OSError:
        found["driver"] = "unknown"
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    import torch

    from pagedir.runtime import Launcher

    with open(os.path.join(args.artefacts, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    launchers: dict[str, Any] = {}

    def launcher_of(kernel: dict) -> Any:
        if kernel["name"] not in launchers:
            launchers[kernel["name"]] = Launcher.from_files(os.path.join(args.artefacts, kernel["artefact"]),
                                                            os.path.join(args.artefacts, kernel["plan"]),
                                                            names=kernel["names"])
        return launchers[kernel["name"]]

    results = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "machine": machine(torch), "arch": manifest.get("arch"), "peers": {p: PEERS[p] for p in args.peers},
               "implementations": ["pagedir", *args.peers], "skipped": []}
    timer = CudaTimer(torch, args.warmup, args.repeats)
    results["copy_gbps"] = copy_bandwidth(torch, timer)
    print(f"copy: {results['copy_gbps']:.0f} GB/s", file=sys.stderr)
    if not args.skip_checks:
        results["checks"] = run_checks(manifest, args.artefacts, torch, launcher_of)
        for check in results["checks"]:
            print(f"{check['name']}: {check['status']} {check.get('detail', '')}", file=sys.stderr)
    kernels = {k["name"]: k for k in manifest["kernels"]}
    vllm: dict | str = {}
    if "vllm" in args.peers:
        try:
            vllm = load_vllm(args.artefacts, manifest)
            results["peers"]["vllm"] += f" (vllm {vllm['version']})"
        except Exception as err:
            vllm = f"{type(err).__name__}: {err}"
    current: dict = {}

    def inputs_for(case: cases.BenchCase) -> dict:
        if current.get("case") is not case:
            current.clear()
            torch.cuda.empty_cache()
            current.update(case=case, inputs=bench_inputs(case, torch))
        return current["inputs"]

    def pagedir(case: cases.BenchCase) -> Callable:
        kernel = kernels.get(case.kernel)
        if kernel is None or "error" in kernel:
            raise RuntimeError(f"no artefact for {case.kernel}: {kernel.get('error') if kernel else 'not in the manifest'}")
        return pagedir_call(case, inputs_for(case), launcher_of(kernel), torch)

    def vllm_peer(case: cases.BenchCase) -> Callable:
        if isinstance(vllm, str):
            raise RuntimeError(vllm)
        return vllm_call(case, inputs_for(case), torch, vllm)

    every = {"pagedir": pagedir, "sdpa": lambda case: sdpa_call(case, inputs_for(case), torch), "vllm": vllm_peer,
             "flex": lambda case: flex_call(case, inputs_for(case), torch)}  # flex last: it compiles per shape
    implementations = {n: f for n, f in every.items() if n == "pagedir" or n in args.peers}
    bench = cases.bench_cases(args.quick)
    results["skipped"] = [{"name": c.name, "reason": c.skipped} for c in bench if c.skipped]
    write_results(results, args.out)  # the checks and the ceiling, kept if the run is stopped from outside

    def progress(rows: list[dict]) -> None:
        results["timings"] = rows
        write_results(results, args.out)

    results["timings"] = run_timings(bench, implementations, timer, started + args.budget, progress=progress)
    results["seconds"] = round(time.monotonic() - started, 1)
    paths = write_results(results, args.out)
    print(f"wrote {', '.join(paths)} in {results['seconds']} s", file=sys.stderr)
    failed = [c for c in results.get("checks", []) if c["status"] != "pass"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
