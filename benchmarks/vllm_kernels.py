"""vLLM's Triton paged-attention kernels, compiled for a named AMD chip without a GPU.

Runs in the peer environment (``make bench-peers``: pinned ``triton``, ``vllm`` and CPU
``torch``), never in the project's. Nothing here copies vLLM code: the kernels, their
launch wrappers and the wrappers' choices (tiles, warps, ``waves_per_eu``, 2D or 3D, the
launch grid) are vLLM's, called as vLLM's serving backends call them, on CPU tensors
of the configuration's shape. Two pieces make that work without a GPU:

* :class:`CompileOnlyDriver` is the Triton driver: it names the target
  (``GPUTarget("hip", arch, wave_size)``) and the device (the arch name, so each chip
  has its own compile cache in the JIT), and launches nothing.
* :func:`recording` replaces each kernel's ``run`` so that ``kernel[grid](...)`` compiles
  (``warmup=True``: the whole Triton pipeline down to amdgcn assembly and the code object)
  and records the grid the wrapper asked for, the compiled kernel and the seconds it took.

vLLM reads ``current_platform`` when a module is imported (``is_hip_`` in the decode
kernels); on this CPU-only machine that is not ROCm, so :func:`on_rocm` sets what the ROCm
platform would have set, for the calls it wraps.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

# Triton 3.9 warns once when this is unset and keeps fusion on; vLLM on ROCm compiles with it on.
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.driver import DriverBase  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402

#: Wave size per chip (CDNA: 64; RDNA: 32, what Triton's AMD backend compiles gfx11 for).
WAVE_SIZE = {"gfx942": 64, "gfx950": 64, "gfx1100": 32}
#: Compute units of the largest part of each chip (vLLM sizes its decode splits from them).
COMPUTE_UNITS = {"gfx942": 304, "gfx950": 256, "gfx1100": 96}


class CompileOnlyDriver(DriverBase):
    """A Triton driver for a named chip: it gives the target and a device key and runs nothing."""

    def __init__(self, arch: str) -> None:
        self.arch = arch

    @classmethod
    def is_active(cls) -> bool:
        return False

    def map_python_to_cpp_type(self, ty: str) -> str:
        raise NotImplementedError("compile only: nothing is launched")

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("hip", self.arch, WAVE_SIZE[self.arch])

    def get_current_device(self) -> str:
        return self.arch

    def get_current_stream(self, device: Any = None) -> None:
        return None

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")

    def get_benchmarker(self):
        raise NotImplementedError("compile only: nothing is timed on a device")

    def get_device_interface(self):
        return torch.cpu


@dataclass
class Launch:
    """One kernel launch a vLLM wrapper asked for."""

    kernel: str
    grid: tuple[int, ...]
    compiled: Any
    seconds: float
    #: The launch's constexpr arguments and options (tile sizes, warps, ...), for the report.
    constants: dict[str, Any] = field(default_factory=dict)

    @property
    def workgroups(self) -> int:
        return math.prod(self.grid)

    @property
    def asm(self) -> str:
        return self.compiled.asm["amdgcn"]


@contextlib.contextmanager
def recording(kernels: list[Any], launches: list[Launch]):
    """While active, ``kernel[grid](...)`` of each JITFunction in ``kernels`` compiles instead of launching."""

    def recorder(jit):
        def run(*args, grid, warmup, **kwargs):
            grid = tuple(grid(kwargs) if callable(grid) else grid)
            started = time.perf_counter()
            compiled = type(jit).run(jit, *args, grid=grid, warmup=True, **kwargs)
            seconds = time.perf_counter() - started
            constants = {k: v for k, v in kwargs.items() if isinstance(v, (bool, int, float)) and k.isupper()}
            for option in ("num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack"):
                if option in kwargs:
                    constants[option] = kwargs[option]
            launches.append(Launch(jit.__name__, grid, compiled, seconds, constants))
            return compiled

        return run

    for jit in kernels:
        jit.run = recorder(jit)
    try:
        yield launches
    finally:
        for jit in kernels:
            del jit.run


def import_ops():
    """vLLM's two Triton attention modules (unified, decode).

    ``vllm.triton_utils`` hands out placeholders instead of ``triton`` unless exactly one Triton
    driver is active, and without a GPU none is: while it is first imported, the AMD driver says
    it is active (nothing is asked of it).
    """
    from triton.backends import backends

    amd = backends["amd"].driver
    saved = amd.__dict__.get("is_active")
    amd.is_active = classmethod(lambda cls: True)
    try:
        from vllm.v1.attention.ops import triton_decode_attention, triton_unified_attention
    finally:
        amd.is_active = saved
    return triton_unified_attention, triton_decode_attention


@contextlib.contextmanager
def on_rocm(arch: str):
    """The Triton driver for ``arch`` and vLLM's ROCm choices (``is_hip_``) for the calls inside."""
    _, triton_decode_attention = import_ops()

    saved = triton_decode_attention.is_hip_
    driver.set_active(CompileOnlyDriver(arch))
    triton_decode_attention.is_hip_ = True
    try:
        yield
    finally:
        triton_decode_attention.is_hip_ = saved
        driver.reset_active() if driver._default is not None else setattr(driver, "_active", None)


def forget_compiled(kernels: list[Any]) -> None:
    """Drop the JIT's in-memory kernels, so the next call goes to Triton's compile (and its disk cache)."""
    for jit in kernels:
        jit.device_caches.clear()


def from_source(module: str, names: list[str]) -> dict[str, Any]:
    """Module-level constants and functions of an installed vLLM module, without importing it.

    The serving backends (``triton_attn``, ``triton_mla``) import vLLM's whole serving stack
    (transformers, pydantic, zmq, an HTTP client, ...); the launch choices this benchmark needs
    are a few of their module-level names. They are read from the installed file: each named
    assignment or ``def`` is compiled alone, in a namespace holding ``triton``.
    """
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"{module} is not installed")
    with open(spec.origin) as handle:
        tree = ast.parse(handle.read(), spec.origin)
    wanted = []
    for node in tree.body:
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        if isinstance(node, ast.FunctionDef):
            targets = [node.name]
        if set(targets) & set(names):
            wanted.append(node)
    namespace: dict[str, Any] = {"triton": triton}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), spec.origin, "exec"), namespace)
    missing = [name for name in names if name not in namespace]
    if missing:
        raise ImportError(f"{module} no longer defines {', '.join(missing)}")
    return {name: namespace[name] for name in names}


# ----------------------------------------------------------------------------
# The shapes, as vLLM's backends lay them out


DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


@dataclass(frozen=True)
class Shape:
    batch: int
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_k: int
    head_dim: int
    page_tokens: int
    dtype: str
    causal: bool


def paged_kv(shape: Shape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """K and V caches as the Triton backend views them, and the block table.

    The backend allocates ``(blocks, heads_kv, page_tokens, 2 * head_dim)`` and views it
    ``transpose(1, 2).split(head_dim, -1)``: K and V ``(blocks, page_tokens, heads_kv, head_dim)``
    with interleaved strides. Every sequence owns ``seq_k / page_tokens`` pages, in order.
    """
    pages_per_seq = -(-shape.seq_k // shape.page_tokens)
    blocks = shape.batch * pages_per_seq
    cache = torch.empty(blocks, shape.heads_kv, shape.page_tokens, 2 * shape.head_dim, dtype=DTYPES[shape.dtype])
    key, value = cache.transpose(1, 2).split(shape.head_dim, dim=-1)
    table = torch.arange(blocks, dtype=torch.int32).reshape(shape.batch, pages_per_seq)
    return key, value, table


def unified_attention(shape: Shape, arch: str, force_2d: bool = False) -> list[Launch]:
    """``unified_attention`` as ``TritonAttentionImpl.forward`` calls it: the 3D kernel and its reduce
    when the batch is small and the queries short (decode), else the 2D kernel. ``force_2d``: the
    2D kernel whatever the shape (what the backend launches once the batch reaches its threshold)."""
    ops, _ = import_ops()
    backend = from_source("vllm.v1.attention.backends.triton_attn", ["MIN_LAUNCH_GRID_SIZE_2D", "NUM_PAR_SOFTMAX_SEGMENTS"])

    dtype = DTYPES[shape.dtype]
    tokens = shape.batch * shape.seq_q
    query = torch.empty(tokens, shape.heads_q, shape.head_dim, dtype=dtype)
    out = torch.empty_like(query)
    key, value, table = paged_kv(shape)
    cu_seqlens_q = torch.arange(0, tokens + 1, shape.seq_q, dtype=torch.int32)
    seq_lens = torch.full((shape.batch,), shape.seq_k, dtype=torch.int32)
    # TritonAttentionMetadataBuilder: the 3D path below MIN_LAUNCH_GRID_SIZE_2D / heads_kv sequences,
    # NUM_PAR_SOFTMAX_SEGMENTS segments, f32 scratch for the partial outputs.
    segments = backend["NUM_PAR_SOFTMAX_SEGMENTS"]
    padded = triton.next_power_of_2(shape.head_dim)
    scale = torch.ones(1, dtype=torch.float32).expand(shape.batch, shape.heads_kv)
    launches: list[Launch] = []
    kernels = [ops.kernel_unified_attention, ops.reduce_segments]
    with on_rocm(arch), recording(kernels, launches):
        ops.unified_attention(
            q=query, k=key, v=value, out=out, cu_seqlens_q=cu_seqlens_q, max_seqlen_q=shape.seq_q,
            seqused_k=seq_lens, max_seqlen_k=shape.seq_k, softmax_scale=shape.head_dim**-0.5,
            causal=shape.causal, window_size=(-1, -1), block_table=table, softcap=0, q_descale=None,
            k_descale=scale, v_descale=scale,
            seq_threshold_3D=0 if force_2d else backend["MIN_LAUNCH_GRID_SIZE_2D"] // shape.heads_kv,
            num_par_softmax_segments=segments,
            softmax_segm_output=torch.empty(tokens, shape.heads_q, segments, padded, dtype=torch.float32),
            softmax_segm_max=torch.empty(tokens, shape.heads_q, segments, dtype=torch.float32),
            softmax_segm_expsum=torch.empty(tokens, shape.heads_q, segments, dtype=torch.float32),
        )
    for launch in launches:
        if launch.kernel == "kernel_unified_attention":
            launch.kernel += "_3d" if launch.constants.get("IS_3D") else "_2d"
    return launches


def decode_attention(shape: Shape, arch: str, force_2d: bool = False) -> list[Launch]:
    """``decode_attention_fwd`` (the grouped stage-1 kernel for GQA, the per-head one without, then
    the stage-2 reduce) with the KV splits vLLM's Triton MLA backend chooses for this length and chip."""
    _, ops = import_ops()
    backend = from_source("vllm.v1.attention.backends.mla.triton_mla",
                          ["_MIN_WORK_PER_SPLIT", "_SPLIT_OCCUPANCY_MULTIPLIER", "_compute_num_kv_splits"])

    if shape.seq_q != 1:
        return []
    dtype = DTYPES[shape.dtype]
    query = torch.empty(shape.batch, shape.heads_q, shape.head_dim, dtype=dtype)
    key, value, table = paged_kv(shape)
    splits = backend["_compute_num_kv_splits"](shape.seq_k, COMPUTE_UNITS[arch])
    logits = torch.empty(shape.batch, shape.heads_q, splits, shape.head_dim + 1, dtype=torch.float32)
    seq_lens = torch.full((shape.batch,), shape.seq_k, dtype=torch.int32)
    one = torch.ones(1, dtype=torch.float32)
    launches: list[Launch] = []
    kernels = [ops._fwd_kernel_stage1, ops._fwd_grouped_kernel_stage1, ops._fwd_kernel_stage2]
    with on_rocm(arch), recording(kernels, launches):
        ops.decode_attention_fwd(query, key, value, torch.empty_like(query),
                                 torch.empty(shape.batch, shape.heads_q, dtype=dtype), table, seq_lens, logits,
                                 splits, shape.head_dim**-0.5, shape.page_tokens, k_scale=one, v_scale=one)
    for launch in launches:
        launch.constants["num_kv_splits"] = splits
    return launches


#: The peers: name -> the function calling its vLLM wrapper.
PEERS = {"vllm-unified": unified_attention, "vllm-decode": decode_attention}


def all_jit_functions() -> list[Any]:
    found = []
    for module in import_ops():
        found += [v for v in vars(module).values() if isinstance(v, triton.runtime.jit.JITFunction)]
    return found


def compile_peer(peer: str, shape: Shape, arch: str, cache_dir: str, force_2d: bool = False) -> dict[str, Any]:
    """Compile one peer's launches at ``shape`` twice: cold (an empty Triton cache) and warm (its hit).

    Returns ``{"launches": [{kernel, grid, workgroups, constants, asm, cold_s, warm_s}]}``; no launches
    when the wrapper does not serve the shape (the decode kernels and prefill).
    """
    from triton import knobs

    knobs.cache.dir = cache_dir
    jits = all_jit_functions()
    forget_compiled(jits)
    cold = PEERS[peer](shape, arch, force_2d)
    forget_compiled(jits)
    warm = PEERS[peer](shape, arch, force_2d)
    launches = []
    for first, again in zip(cold, warm):
        launches.append({"kernel": first.kernel, "grid": list(first.grid), "workgroups": first.workgroups,
                         "constants": first.constants, "asm": first.asm, "cold_s": first.seconds,
                         "warm_s": again.seconds, "shared_bytes": first.compiled.metadata.shared,
                         "num_warps": first.compiled.metadata.num_warps})
    return {"launches": launches}


def versions() -> dict[str, str]:
    import vllm

    return {"triton": triton.__version__, "vllm": vllm.__version__, "torch": torch.__version__}


if __name__ == "__main__":  # a quick look: python benchmarks/vllm_kernels.py [arch]
    import sys
    import tempfile

    arch = sys.argv[1] if len(sys.argv) > 1 else "gfx942"
    with tempfile.TemporaryDirectory() as cache:
        for peer in PEERS:
            result = compile_peer(peer, Shape(2, 16, 2, 1, 512, 128, 16, "f16", False), arch, os.path.join(cache, peer))
            for launch in result["launches"]:
                print(peer, launch["kernel"], launch["grid"], f"{launch['cold_s']:.2f} s cold, {launch['warm_s']:.3f} s warm",
                      launch["constants"])
