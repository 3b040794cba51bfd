"""pagedir.runtime on the CPU: the plan evaluated at batch 0, 1 and large, the HIP path against a stub
library (tests/unit/hip_stub.c, compiled here with gcc) that records the kernarg bytes, grid, block and
LDS passed, a process that launches without loading the compiler, and PagedAttention on host arrays
(the interpreter) against pagedir.reference."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pagedir import reference
from pagedir.backend import split_kv
from pagedir.cli.compile import compile_source
from pagedir.gen import attention as gen
from pagedir.runtime import LaunchError, Launcher, PagedAttention, codeobject
from pagedir.runtime import plan as plans
from pagedir.runtime.arrays import ArrayError, describe

HERE = Path(__file__).parent
DECODE = dict(batch=2, num_heads_q=8, num_heads_kv=2, seq_len_k=64, head_dim=64, page_size=16, page_table="blocks",
              seq_lens=True)


def compiled(tmp_path_factory, **options) -> tuple[bytes, dict, list[str]]:
    attn = PagedAttention(cache_dir=str(tmp_path_factory.getbasetemp() / "cache"), **options)
    entry = compile_source(attn.source, arch="gfx942", emit="hsaco", plan=True,
                           cache_dir=str(tmp_path_factory.getbasetemp() / "cache"))
    return entry.artefact, json.loads(entry.plan_json), attn.names


@pytest.fixture(scope="module")
def dynamic_split(tmp_path_factory):
    """A dynamic blocks-form decode kernel whose split count is chosen at launch (hsaco, plan, names)."""
    return compiled(tmp_path_factory, **DECODE, dynamic=True, num_splits=0)


def build_stub(tmp_path_factory, source: str) -> str:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build the stub driver libraries")
    path = tmp_path_factory.getbasetemp() / f"lib{source[:-2]}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", str(path), str(HERE / source)], check=True)
    return str(path)


@pytest.fixture(scope="module")
def stub(tmp_path_factory) -> str:
    return build_stub(tmp_path_factory, "hip_stub.c")


@pytest.fixture(scope="module")
def cuda_stub(tmp_path_factory) -> str:
    return build_stub(tmp_path_factory, "cuda_stub.c")


class LaunchRecord(ctypes.Structure):
    _fields_ = [("function", ctypes.c_int), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_bytes", ctypes.c_uint), ("stream", ctypes.c_uint64), ("buffer_address", ctypes.c_uint64),
                ("size", ctypes.c_uint64), ("kernarg", ctypes.c_ubyte * 1024), ("used_kernel_params", ctypes.c_int),
                ("well_formed_extra", ctypes.c_int)]


def recorded(library: str) -> list[tuple[str, LaunchRecord]]:
    lib = ctypes.CDLL(library)  # the same handle the runtime loaded
    lib.stub_launch.restype = ctypes.POINTER(LaunchRecord)
    lib.stub_function_name.restype = ctypes.c_char_p
    return [(lib.stub_function_name(lib.stub_launch(i).contents.function).decode(), lib.stub_launch(i).contents)
            for i in range(lib.stub_launch_count())]


def reset(library: str) -> None:
    ctypes.CDLL(library).stub_reset()


class FakeDeviceArray:
    """A device array by ``__cuda_array_interface__`` (the pointer is never dereferenced here)."""

    def __init__(self, pointer: int, shape: tuple, typestr: str, strides: tuple | None = None):
        self.__cuda_array_interface__ = {"data": (pointer, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3}


def decode_arguments(batch: int, blocks: int = 20, slots: int = 4) -> list[FakeDeviceArray]:
    shapes = [((batch, 8, 1, 64), "<f2"), ((blocks, 16, 2, 64), "<f2"), ((blocks, 16, 2, 64), "<f2"),
              ((batch, slots), "<i4"), ((batch,), "<i4"), ((batch, 8, 1, 64), "<f2")]
    return [FakeDeviceArray(0x100000 * (i + 1), shape, typestr) for i, (shape, typestr) in enumerate(shapes)]


# ---------------------------------------------------------------------------- the plan at launch


@pytest.mark.parametrize("batch", [0, 1, 7, 4096])
def test_plan_grid_and_splits_follow_the_batch(dynamic_split, batch: int) -> None:
    artefact, plan, names = dynamic_split
    shapes = [a.__cuda_array_interface__["shape"] for a in decode_arguments(batch)]
    call = plans.call_plan(plan, shapes, names)
    rule = plan["kernels"][0]["num_splits_formula"]
    padded = shapes[:6] + [()]
    splits, values = split_kv.split_count(rule, padded)  # the compiler's own evaluation of the same formula
    assert call.num_splits == splits
    assert call.workspace_shape == (splits, batch * 2 * 8 * 65 // 2)  # [S, R * (D + 1)], R = B * Hq rows
    assert call.workspace_bytes == splits * batch * 8 * 65 * 4
    if batch == 0:
        assert call.launches == ()  # an empty batch launches nothing
        return
    split, combine = call.launches
    assert (split.symbol, combine.symbol) == ("paged_attention", "paged_attention_combine")
    assert split.grid == (batch * 2 * splits, 1, 1)  # one workgroup per (sequence, KV head, split)
    assert combine.grid == (-(-batch * 8 * 64 // 4 // 64), 1, 1)  # 64 threads, 4 columns each
    assert split.sizes == (batch, 20, 20, batch, 4, batch, batch, splits, batch * 8 * 65)
    assert split.lds_bytes == plan["kernels"][0]["lds_bytes"] and combine.lds_bytes == 0


@pytest.mark.parametrize("text", ["argmin(s, 1, 9, (s - 4) * (s - 4) // 3)", "argmin(s, 5, 2, s)", "-7 // 2 + 7 % -3",
                                  "max(arguments[1].shape[0], min(3, arguments[0].shape[2])) * n"])
def test_compiled_expressions_agree_with_the_plan_evaluator(text: str) -> None:
    from pagedir.backend import formula

    shapes = [(2, 3, 4), (5,)]
    assert plans.evaluate(text, {"n": 6}, shapes) == formula.evaluate(text, {"n": 6}, shapes)


def test_compiled_expressions_fail_as_the_plan_evaluator_does() -> None:
    from pagedir.backend import formula

    with pytest.raises(formula.FormulaError, match="division by 0"):
        plans.evaluate("4 // (n - n)", {"n": 1})
    with pytest.raises(formula.FormulaError, match="no value for 'm'"):
        plans.evaluate("m + 1", {})


def test_plan_refuses_shapes_that_do_not_fit(dynamic_split) -> None:
    artefact, plan, names = dynamic_split
    shapes = [a.__cuda_array_interface__["shape"] for a in decode_arguments(2)]
    shapes[0] = (2, 4, 1, 64)
    with pytest.raises(plans.PlanError, match=r"q: shape \(2, 4, 1, 64\) does not fit \?x8x1x64"):
        plans.call_plan(plan, shapes, names)
    shapes[0], shapes[3] = (2, 8, 1, 64), (2,)  # a rank the formulas would index past: refused before
    with pytest.raises(plans.PlanError, match=r"block_table: shape \(2,\) does not fit \?x\?"):
        plans.call_plan(plan, shapes, names)


# ---------------------------------------------------------------------------- HIP against the stub


def test_hip_launch_passes_the_abi_of_the_code_object(dynamic_split, stub) -> None:
    artefact, plan, names = dynamic_split
    launcher = Launcher(artefact, plan, names=names, library=stub)
    metadata = launcher.metadata
    assert metadata.version == 6 and metadata.target.endswith("gfx942")
    reset(stub)
    arguments = decode_arguments(3)
    call = launcher(*arguments, stream=0x5150)
    launches = recorded(stub)
    assert [name for name, _ in launches] == ["paged_attention", "paged_attention_combine"]
    workspace = None
    for (name, record), launch in zip(launches, call.launches):
        kernel = metadata.kernels[name]
        assert tuple(record.grid) == launch.grid and tuple(record.block) == launch.block == kernel.reqd_workgroup_size
        assert record.shared_bytes == 0  # the LDS is static: the code object's group segment
        assert kernel.group_segment_fixed_size == (4096 if name == "paged_attention" else 0)
        assert record.stream == 0x5150 and record.well_formed_extra and not record.used_kernel_params
        assert record.size == kernel.kernarg_segment_size == 8 * (7 + 9)
        assert not kernel.hidden  # pagedir's kernels use no hidden argument: the segment is the explicit one
        segment = bytes(record.kernarg[: record.size])
        words = [int.from_bytes(segment[offset: offset + 8], "little") for offset in range(0, len(segment), 8)]
        assert all(a.offset % 8 == 0 and a.size == 8 for a in kernel.explicit)
        pointers = [a.__cuda_array_interface__["data"][0] for a in arguments]
        assert words[:6] == pointers  # bare pointers in argument order, the workspace seventh
        workspace = workspace or words[6]
        assert words[6] == workspace >= 0x7F0000000000  # allocated through hipMalloc, shared by both kernels
        assert words[7:] == list(launch.sizes) == [3, 20, 20, 3, 4, 3, 3, call.num_splits, 3 * 8 * 65]


def test_each_call_launches_the_grid_of_its_own_shapes(dynamic_split, stub) -> None:
    artefact, plan, names = dynamic_split
    launcher = Launcher(artefact, plan, names=names, library=stub)
    grids = {}
    for batch in (2, 9, 2):  # the call plans are kept by shape: a repeated shape takes its own again
        reset(stub)
        call = launcher(*decode_arguments(batch))
        grids.setdefault(batch, []).append([tuple(r.grid) for _, r in recorded(stub)])
        assert grids[batch][-1] == [launch.grid for launch in call.launches]
        assert call.launches[0].sizes[0] == batch
    assert grids[2][0] == grids[2][1] != grids[9][0]


def test_the_workspace_allocated_grows_and_is_freed(dynamic_split, stub) -> None:
    artefact, plan, names = dynamic_split
    launcher = Launcher(artefact, plan, names=names, library=stub)
    lib = ctypes.CDLL(stub)
    reset(stub)
    for batch in (9, 2, 9):  # the largest so far is kept
        launcher(*decode_arguments(batch))
    assert (lib.stub_allocations(), lib.stub_frees()) == (1, 0)
    launcher(*decode_arguments(40))  # more than any call before: a larger one replaces it
    assert (lib.stub_allocations(), lib.stub_frees()) == (2, 1)
    launcher.close()
    assert lib.stub_frees() == 2 and launcher._workspace is None


def test_host_arrays_are_refused_by_the_launcher(dynamic_split, stub) -> None:
    artefact, plan, names = dynamic_split
    launcher = Launcher(artefact, plan, names=names, library=stub)
    arguments = decode_arguments(2)
    arguments[0] = np.zeros((2, 8, 1, 64), np.float16)
    with pytest.raises(LaunchError, match="q: a host array"):
        launcher(*arguments)


def test_a_given_workspace_is_passed_and_nothing_is_allocated(dynamic_split, stub) -> None:
    artefact, plan, names = dynamic_split
    launcher = Launcher(artefact, plan, names=names, library=stub)
    arguments = decode_arguments(2)
    size = launcher.workspace_bytes(*arguments)
    reset(stub)
    launcher(*arguments, workspace=FakeDeviceArray(0xABC000, (size,), "|u1"))
    assert launcher._workspace is None
    assert all(int.from_bytes(bytes(r.kernarg[48:56]), "little") == 0xABC000 for _, r in recorded(stub))
    with pytest.raises(LaunchError, match=f"workspace: {size - 1} bytes given, this call needs {size}"):
        launcher(*arguments, workspace=FakeDeviceArray(0xABC000, (size - 1,), "|u1"))


def test_hip_launch_refuses_what_it_cannot_pass_as_is(dynamic_split, stub) -> None:
    artefact, plan, names = dynamic_split
    launcher = Launcher(artefact, plan, names=names, library=stub)
    arguments = decode_arguments(2)
    arguments[3] = FakeDeviceArray(0x1000, (2, 4), "<i8")
    with pytest.raises(LaunchError, match="block_table: dtype i64, the kernel takes i32"):
        launcher(*arguments)
    arguments[3] = FakeDeviceArray(0x1000, (2, 4), "<i4", strides=(4, 8))
    with pytest.raises(ArrayError, match="block_table: a strided array"):
        launcher(*arguments)
    with pytest.raises(LaunchError, match="take 6 arguments"):
        launcher(*arguments[:5])


def test_hidden_arguments_are_written_at_their_metadata_offsets() -> None:
    # A kernel as LLVM describes one that reads its launch size (code object v5/v6): two explicit
    # arguments, then hidden arguments at the v5 offsets of the implicit block (which starts at 16).
    hidden = [("hidden_block_count_x", 0, 4), ("hidden_block_count_y", 4, 4), ("hidden_block_count_z", 8, 4),
              ("hidden_group_size_x", 12, 2), ("hidden_group_size_y", 14, 2), ("hidden_group_size_z", 16, 2),
              ("hidden_remainder_x", 18, 2), ("hidden_remainder_y", 20, 2), ("hidden_remainder_z", 22, 2),
              ("hidden_global_offset_x", 40, 8), ("hidden_grid_dims", 64, 2), ("hidden_hostcall_buffer", 80, 8),
              ("hidden_dynamic_lds_size", 120, 4)]
    arguments = (codeobject.KernelArgument(0, 8, "global_buffer"), codeobject.KernelArgument(8, 8, "by_value"),
                 *(codeobject.KernelArgument(16 + offset, size, kind) for kind, offset, size in hidden))
    kernel = codeobject.KernelMetadata("k", arguments, 16 + 256, 8, 0, 0, (64, 1, 1), 64)
    segment = codeobject.kernarg_segment(kernel, [0xDEADBEEF000, -1], (12, 3, 1), (64, 1, 1))
    assert len(segment) == 272
    value = {kind: int.from_bytes(segment[16 + offset: 16 + offset + size], "little") for kind, offset, size in hidden}
    assert int.from_bytes(segment[0:8], "little") == 0xDEADBEEF000 and segment[8:16] == b"\xff" * 8
    assert (value["hidden_block_count_x"], value["hidden_block_count_y"], value["hidden_block_count_z"]) == (12, 3, 1)
    assert (value["hidden_group_size_x"], value["hidden_group_size_y"], value["hidden_group_size_z"]) == (64, 1, 1)
    assert value["hidden_remainder_x"] == value["hidden_remainder_y"] == value["hidden_remainder_z"] == 0
    assert value["hidden_grid_dims"] == 2 and value["hidden_global_offset_x"] == 0
    assert value["hidden_hostcall_buffer"] == 0 and value["hidden_dynamic_lds_size"] == 0


def test_code_object_metadata_is_read_from_the_elf_note(dynamic_split) -> None:
    artefact, plan, names = dynamic_split
    found = codeobject.read(artefact)
    kernel = found.kernels["paged_attention"]
    assert [(a.offset, a.size, a.value_kind) for a in kernel.explicit] == \
        [(8 * i, 8, "global_buffer" if i < 7 else "by_value") for i in range(16)]
    assert kernel.kernarg_segment_align == 8 and kernel.wavefront_size == 64
    with pytest.raises(codeobject.CodeObjectError, match="not a 64-bit little-endian ELF"):
        codeobject.read(b"not an elf")


def test_launching_loads_neither_mlir_nor_llvmlite(dynamic_split, stub, tmp_path) -> None:
    artefact, plan, names = dynamic_split
    (tmp_path / "k.hsaco").write_bytes(artefact)
    (tmp_path / "k.plan.json").write_text(json.dumps(plan))
    script = f"""
import sys
import pagedir.runtime
from pagedir.runtime import Launcher, PagedAttention
class A:
    def __init__(self, p, shape, t):
        self.__cuda_array_interface__ = dict(data=(p, False), shape=shape, typestr=t, strides=None, version=3)
args = [A(0x1000, (2, 8, 1, 64), "<f2"), A(0x2000, (20, 16, 2, 64), "<f2"), A(0x3000, (20, 16, 2, 64), "<f2"),
        A(0x4000, (2, 4), "<i4"), A(0x5000, (2,), "<i4"), A(0x6000, (2, 8, 1, 64), "<f2")]
launcher = Launcher.from_files({str(tmp_path / 'k.hsaco')!r}, {str(tmp_path / 'k.plan.json')!r}, library={stub!r})
print(len(launcher(*args).launches))
attn = PagedAttention.from_compiled(launcher.artefact, launcher.plan, {names!r}, library={stub!r})
attn(*args[:5], out=args[5])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("mlir", "llvmlite")))
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["2", "[]"]


# ---------------------------------------------------------------------------- CUDA against the stub


def ptx_of(plan: dict, extra_parameter: bool = False) -> str:
    """PTX entries with the parameters LLVM's NVPTX back end writes for the plan's kernels (bare pointers,
    then the i64 sizes; convert-gpu-to-nvvm use-bare-ptr-memref-call-conv), bodies left out."""
    entries = []
    for kernel in plan["kernels"]:
        params = [f"\t.param .u64 .ptr .align 1 {kernel['symbol']}_param_{i}" for i in range(len(kernel["arguments"]))]
        params += [f"\t.param .u64 {kernel['symbol']}_param_{len(params) + i}" for i in range(len(kernel["size_arguments"]))]
        params += ["\t.param .u32 extra"] if extra_parameter else []
        entries.append(f".visible .entry {kernel['symbol']}(\n" + ",\n".join(params) + "\n)\n{\n\tret;\n}\n")
    return ".version 8.0\n.target sm_90\n.address_size 64\n\n" + "\n".join(entries)


def test_cuda_launch_passes_one_pointer_per_value(dynamic_split, cuda_stub) -> None:
    _, plan, names = dynamic_split
    launcher = Launcher(ptx_of(plan), plan, names=names, library=cuda_stub)
    assert launcher.target == "cuda"
    lib = ctypes.CDLL(cuda_stub)
    lib.stub_reset()
    lib.stub_set_param_count(16)
    arguments = decode_arguments(5)
    call = launcher(*arguments, stream=0x77)
    lib.stub_image_start.restype = ctypes.c_char_p
    assert lib.stub_image_start().startswith(b".version 8.0")

    class Record(ctypes.Structure):
        _fields_ = [("function", ctypes.c_int), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                    ("shared_bytes", ctypes.c_uint), ("stream", ctypes.c_uint64), ("used_extra", ctypes.c_int),
                    ("params", ctypes.c_uint64 * 32)]

    lib.stub_launch.restype = ctypes.POINTER(Record)
    records = [lib.stub_launch(i).contents for i in range(lib.stub_launch_count())]
    assert len(records) == 2 and lib.stub_allocations() == 1  # one workspace, by cuMemAlloc, for both kernels
    pointers = [a.__cuda_array_interface__["data"][0] for a in arguments]
    for record, launch in zip(records, call.launches):
        assert tuple(record.grid) == launch.grid and tuple(record.block) == launch.block
        assert record.shared_bytes == 0 and record.stream == 0x77 and not record.used_extra
        values = list(record.params[:16])
        assert values[:6] == pointers and values[6] == records[0].params[6] != 0
        assert values[7:] == list(launch.sizes)
    with pytest.raises(LaunchError, match="the PTX entry takes 17 parameters"):
        Launcher(ptx_of(plan, extra_parameter=True), plan, names=names, library=cuda_stub)


def test_a_cached_kernel_launches_without_loading_the_compiler(stub, tmp_path) -> None:
    options = dict(DECODE, dynamic=True, num_splits=0, num_heads_q=16)  # a kernel no other test compiled
    cache = tmp_path / "cache"
    PagedAttention(**options, cache_dir=str(cache)).compile()  # here: the compile fills the cache
    script = f"""
import sys
from pagedir.runtime import PagedAttention
class A:
    def __init__(self, p, shape, t):
        self.__cuda_array_interface__ = dict(data=(p, False), shape=shape, typestr=t, strides=None, version=3)
attn = PagedAttention(**{options!r}, cache_dir={str(cache)!r}, library={stub!r})
attn(A(0x1000, (3, 16, 1, 64), "<f2"), A(0x2000, (20, 16, 2, 64), "<f2"), A(0x3000, (20, 16, 2, 64), "<f2"),
     A(0x4000, (3, 4), "<i4"), A(0x5000, (3,), "<i4"), out=A(0x6000, (3, 16, 1, 64), "<f2"))
print(len(attn.compile().call_plan([(3, 16, 1, 64), (20, 16, 2, 64), (20, 16, 2, 64), (3, 4), (3,), (3, 16, 1, 64)]).launches))
print(sorted(m for m in sys.modules if m.split(".")[0] in ("mlir", "llvmlite")))
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["2", "[]"]


def test_bad_options_are_the_generators_errors() -> None:
    from pagedir.errors import UserError

    with pytest.raises(UserError, match="--num-heads-q 6 must be a multiple of --num-heads-kv 4"):
        PagedAttention(num_heads_q=6, num_heads_kv=4)


# ---------------------------------------------------------------------------- PagedAttention on host arrays


def floats(array: np.ndarray) -> np.ndarray:
    """f32 values of f16 arrays and bf16 bit patterns (uint16)."""
    return reference.bf16_values(array) if array.dtype == np.uint16 else array.astype(np.float32)


def run_blocks(layout: str, dtype: str, **options) -> tuple[np.ndarray, np.ndarray]:
    attn = PagedAttention(**{**DECODE, "seq_len_k": 40, "num_heads_q": 4, "dtype": dtype, "kv_layout": layout, **options})
    rng = np.random.default_rng(1)
    batch = 3 if attn.options.dynamic else 2  # a dynamic kernel: another batch than the generator's
    k, v = (rng.standard_normal((batch, 2, 40, 64)).astype(np.float32) for _ in range(2))
    sq = attn.options.seq_len_q
    q = rng.standard_normal((batch, 4, sq, 64)).astype(np.float32)
    lens = np.array([40, 17, sq][:batch], dtype=np.int32)
    storage = np.float16 if dtype == "f16" else None
    caches = reference.block_caches(k, v, 16, seq_lens=lens, layout=layout, dtype=storage or "bf16")  # NaN in unused blocks
    q_in = q.astype(np.float16) if dtype == "f16" else reference.bf16_bits(q)
    if attn.options.page_table == "csr":
        indptr, indices, last = reference.csr_from_block_table(caches.block_table, lens, 16, nnz=batch * 3)
        out = attn(q_in, caches.k_pool, caches.v_pool, indptr, indices, last)
    else:
        out = attn(q_in, caches.k_pool, caches.v_pool, caches.block_table, caches.seq_lens)
    expected = reference.attention(floats(q_in),
                                   reference.blocks_dense(floats(caches.k_pool), caches.block_table, layout=layout),
                                   reference.blocks_dense(floats(caches.v_pool), caches.block_table, layout=layout),
                                   seq_lens=lens, causal=attn.options.causal)
    got = reference.bf16_values(out) if dtype == "bf16" else out.astype(np.float32)
    return got, expected


@pytest.mark.parametrize(("layout", "dtype", "options"), [
    ("nhd", "f16", dict(dynamic=True, num_splits=0)),  # split count chosen at launch, batch 3 != the generator's 2
    ("hnd", "bf16", dict(page_table="csr", seq_lens=False, num_splits=2)),
    ("nhd", "f16", dict(seq_len_q=4, causal=True, dynamic=True)),
])
def test_paged_attention_on_host_arrays_runs_the_kernels_on_the_interpreter(layout, dtype, options) -> None:
    got, expected = run_blocks(layout, dtype, **options)
    assert np.isfinite(got).all()  # the NaN in unused blocks and past each length never reach the output
    assert np.abs(got - expected).max() < 2e-2


def test_paged_attention_states_the_workspace_a_call_needs(tmp_path) -> None:
    attn = PagedAttention(**DECODE, dynamic=True, num_splits=0, cache_dir=str(tmp_path))
    pools = np.zeros((20, 16, 2, 64), np.float16)
    arguments = (np.zeros((7, 8, 1, 64), np.float16), pools, pools, np.zeros((7, 4), np.int32), np.zeros(7, np.int32))
    size = attn.workspace_bytes(*arguments)
    call = plans.call_plan(attn.compile().plan, [a.shape for a in arguments] + [(7, 8, 1, 64)])
    assert size == call.workspace_bytes == call.num_splits * 7 * 8 * 65 * 4 > 0


def test_paged_attention_binds_arguments_by_the_kernel_names() -> None:
    attn = PagedAttention(**{**DECODE, "page_table": "csr", "seq_lens": False})
    assert attn.names == ["q", "k_cache", "v_cache", "kv_indptr", "kv_indices", "kv_last_page_len", "out"]
    with pytest.raises(TypeError, match="missing argument"):
        attn(np.zeros((2, 8, 1, 64), np.float16))
    with pytest.raises(TypeError, match="no argument 'block_table'"):
        attn(np.zeros((2, 8, 1, 64), np.float16), block_table=None)
    with pytest.raises(TypeError, match="unknown option 'pages'"):
        PagedAttention(pages=3)


def test_numpy_arrays_are_read_through_dlpack_without_a_copy() -> None:
    array = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    found = describe(array)
    assert (found.pointer, found.shape, found.dtype, found.device) == (array.ctypes.data, (2, 3, 4), "f16", "cpu")
    with pytest.raises(ArrayError, match="strided"):
        describe(array.transpose(1, 0, 2))


def test_an_empty_batch_launches_nothing_and_allocates_nothing(dynamic_split, stub) -> None:
    artefact, plan, names = dynamic_split
    launcher = Launcher(artefact, plan, names=names, library=stub)
    reset(stub)
    call = launcher(*decode_arguments(0))
    assert call.launches == () and call.workspace_bytes == 0
    assert recorded(stub) == [] and ctypes.CDLL(stub).stub_allocations() == 0


class FakeTorchTensor:
    """What the runtime reads of a torch tensor (``data_ptr``, ``shape``, ``stride``, ``dtype``, ``device``)."""

    def __init__(self, pointer: int, shape: tuple, dtype: str, strides: tuple | None = None, device: str = "cuda"):
        self.shape, self._pointer, self._strides = shape, pointer, strides
        self.dtype = type("dtype", (), {"__str__": lambda _: f"torch.{dtype}"})()
        self.device = type("device", (), {"type": device})()

    def data_ptr(self) -> int:
        return self._pointer

    def stride(self) -> tuple:
        from pagedir.runtime.arrays import row_major

        return self._strides or row_major(self.shape)


FakeTorchTensor.__module__ = "torch"


def test_torch_tensors_are_read_by_data_ptr_without_a_copy() -> None:
    found = describe(FakeTorchTensor(0xBEEF00, (4, 1, 8), "bfloat16", strides=(8, 1, 1)))  # a dim of 1: any stride
    assert (found.pointer, found.shape, found.dtype, found.device) == (0xBEEF00, (4, 1, 8), "bf16", "cuda")
    with pytest.raises(ArrayError, match=r"k_cache: a strided tensor .* pass \.contiguous\(\)"):
        describe(FakeTorchTensor(0x1000, (4, 8), "float16", strides=(1, 4)), "k_cache")
