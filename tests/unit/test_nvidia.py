"""The NVIDIA family (sm_80, sm_90): chips, CUDA occupancy, loads through pointers, PTX and cubin, --check.

The cubin tests run ptxas from the ``nvidia-cuda-nvcc`` wheel (pagedir's ``nvidia`` extra, installed
with the test environment).
"""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import interp
from pagedir.arch import ChipError, get_chip
from pagedir.backend.loops import hot_loop
from pagedir.backend.occupancy import occupancy
from pagedir.backend.report import kernel_bodies
from pagedir.cli import compile as compile_cli
from pagedir.cli import gen as gen_cli
from pagedir.cli import run as run_cli
from pagedir.cli.compile import compile_source
from pagedir.context import make_context
from pagedir.interp import InterpError
from pagedir.targets import family_of

DECODE = ["--batch", "2", "--num-heads-q", "16", "--num-heads-kv", "2", "--seq-len-q", "1", "--seq-len-k", "128",
          "--head-dim", "128", "--page-size", "16", "--seq-lens"]
PREFILL = ["--batch", "1", "--num-heads-q", "16", "--num-heads-kv", "2", "--seq-len-q", "256", "--seq-len-k", "256",
           "--head-dim", "128", "--page-size", "16", "--causal"]


def generate(tmp_path, argv: list[str], arch: str, name: str = "k.mlir") -> str:
    path = tmp_path / name
    assert gen_cli.main(["attention", *argv, "--arch", arch, "-o", str(path)]) == 0
    return str(path)


def test_nvidia_chips_and_targets() -> None:
    for name, sms in (("sm_80", 108), ("sm_90", 132)):
        chip = get_chip(name)
        assert (chip.family, chip.wave_size, chip.compute_units) == ("nvidia", 32, sms)
        assert get_chip(f"nvptx64-nvidia-cuda:{name}") == chip
    assert get_chip("sm_90").lds_per_workgroup == 227 * 1024
    with pytest.raises(ChipError, match="unknown chip 'sm_75'"):
        get_chip("sm_75")
    with pytest.raises(ChipError, match="invalid target 'sm_90:xnack-'"):
        get_chip("sm_90:xnack-")


def test_cuda_occupancy_reserves_shared_memory_per_block_and_caps_blocks() -> None:
    sm_80 = get_chip("sm_80")
    # 54 KiB per block + the 1 KiB CUDA reserves: 2 blocks in 164 KiB (3 without the reservation); 4 warps each
    assert occupancy(sm_80, vgprs=32, lds_bytes=54 * 1024, workgroup_size=128).waves_per_simd * 4 == 8
    # one-warp blocks: at most 32 per SM, so 32 warps, not 64
    assert occupancy(sm_80, vgprs=32, workgroup_size=32).waves_per_simd * 4 == 32
    # 128 registers: 256 per warp granule, 64K per SM -> 16 warps per SM (CUDA's calculator)
    assert occupancy(sm_80, vgprs=128, workgroup_size=128).waves_per_simd * 4 == 16


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("shape", [DECODE, PREFILL], ids=["decode", "prefill"])
def test_attention_compiles_to_ptx_and_cubin_without_spills(tmp_path, arch: str, shape: list[str]) -> None:
    text = open(generate(tmp_path, ["--dtype", "f16", *shape], arch)).read()
    ptx = compile_source(text, emit="ptx", report=True, cache=False)
    assert f".target {arch}" in ptx.artefact
    assert "ld.global.v4.b32" in ptx.artefact  # K/V/Q in 16-byte loads
    assert "call" not in ptx.artefact  # exp2 and friends are instructions, not library calls
    report = ptx.report_json
    assert '"vgpr_spills": 0' in report and '"scratch_bytes": 0' in report, report
    assert '"dwordx4"' in report
    cubin = compile_source(text, emit="cubin", cache=False).artefact
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_split_kv_kernels_compile_to_ptx_with_their_log_sum_exp(tmp_path, arch: str) -> None:
    # the split kernel writes log2 of its sum: NVPTX selects no llvm.log2 ("no libcall available for flog2")
    text = open(generate(tmp_path, ["--dtype", "f16", *DECODE, "--num-splits", "2"], arch)).read()
    ptx = compile_source(text, emit="ptx", cache=False).artefact
    assert ".entry paged_attention(\n" in ptx and ".entry paged_attention_combine(\n" in ptx
    assert "lg2.approx.f32" in ptx and "call" not in ptx


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_amd_kernels_keep_the_llvm_log2_intrinsic_and_cdna_takes_v_exp_f32(tmp_path, arch: str) -> None:
    # both AMD families lower math.log2 to the generic LLVM intrinsic; CDNA names its own exp2 (llvm.amdgcn.exp2:
    # v_exp_f32 without llvm.exp2's denormal fix-up), RDNA keeps llvm.exp2
    text = open(generate(tmp_path, ["--dtype", "f16", *DECODE, "--num-splits", "2"], arch)).read()
    llvm_ir = compile_source(text, emit="llvm-ir", cache=False).artefact
    assert "@llvm.log2." in llvm_ir and "lg2.approx" not in llvm_ir
    cdna = arch == "gfx942"
    assert ("@llvm.amdgcn.exp2.f32" in llvm_ir) is cdna and ("@llvm.exp2." in llvm_ir) is not cdna
    asm = compile_source(text, emit="asm", cache=False).artefact
    body = kernel_bodies(asm, ["paged_attention"])["paged_attention"]
    loop = [body[i] for i in hot_loop(body)[1]]
    # the fix-up adds 64 to a small argument and scales the result by 2^-64 with v_ldexp_f32
    assert any("v_exp_f32" in line for line in loop)
    assert any("v_ldexp_f32" in line for line in loop) is not cdna


def test_another_familys_artefact_is_refused(tmp_path, capsys) -> None:
    path = generate(tmp_path, ["--dtype", "f16", *DECODE], "sm_90")
    assert compile_cli.main([path, "--emit=hsaco", "-o", str(tmp_path / "k.hsaco")]) == 1
    assert "--emit=hsaco is not made for sm_90" in capsys.readouterr().err
    amd = generate(tmp_path, ["--dtype", "f16", *DECODE], "gfx942", "amd.mlir")
    assert compile_cli.main([amd, "--emit=cubin", "-o", str(tmp_path / "k.cubin")]) == 1
    assert "--emit=cubin is not made for gfx942" in capsys.readouterr().err
    assert not (tmp_path / "k.hsaco").exists() and not (tmp_path / "k.cubin").exists()


@pytest.mark.parametrize("argv", [
    ["--page-table", "pointers", "--dtype", "f16", "--batch", "2", "--num-heads-q", "4", "--num-heads-kv", "2",
     "--seq-len-q", "1", "--seq-len-k", "64", "--seq-lens", "--head-dim", "64", "--page-size", "16"],
    ["--page-table", "blocks", "--dtype", "bf16", "--batch", "1", "--num-heads-q", "2", "--num-heads-kv", "1",
     "--seq-len-q", "32", "--seq-len-k", "48", "--causal", "--dynamic", "--head-dim", "64", "--page-size", "16"],
    ["--page-table", "pointers", "--dtype", "f16", "--batch", "2", "--num-heads-q", "16", "--num-heads-kv", "2",
     "--seq-len-q", "1", "--seq-len-k", "128", "--seq-lens", "--head-dim", "128", "--page-size", "16"],
    ["--page-table", "pointers", "--dtype", "bf16", "--batch", "2", "--num-heads-q", "16", "--num-heads-kv", "2",
     "--seq-len-q", "1", "--seq-len-k", "128", "--seq-lens", "--head-dim", "128", "--page-size", "16", "--lds-swizzle"],
], ids=["pointers-decode-f16", "blocks-prefill-bf16-dynamic", "decode-d128-pipelined", "decode-d128-swizzled"])
def test_check_runs_the_nvidia_lowering(tmp_path, capsys, argv: list[str]) -> None:
    path = generate(tmp_path, argv, "sm_90")
    assert run_cli.main([path, "--check"]) == 0
    out = capsys.readouterr().out
    assert "L6 after rock-kernel-pipeline" in out and "FAIL" not in out


LOAD_KERNEL = """
func.func @load(%base: i64, %out: memref<4xi32>) attributes {rock.kernel, rock.arch = "sm_90", rock.block_size = 2 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %lane0 = arith.cmpi eq, %tid, %c0 : index
  %far = arith.index_cast %tid : index to i64
  %step = arith.constant 1000000001 : i64
  %apart = arith.muli %far, %step : i64
  %addr = arith.addi %base, %apart : i64
  %x = scf.if %lane0 -> (vector<4xi32>) {
    %p = llvm.inttoptr %addr : i64 to !llvm.ptr<1>
    %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
    scf.yield %v : vector<4xi32>
  } else {
    %z = arith.constant dense<0> : vector<4xi32>
    scf.yield %z : vector<4xi32>
  }
  scf.if %lane0 {
    vector.store %x, %out[%c0] : memref<4xi32>, vector<4xi32>
  }
  return
}
"""


def run_load(offset: int) -> np.ndarray:
    with make_context():
        module = ir.Module.parse(LOAD_KERNEL)
        device = interp.Device()
        words = device.upload(np.arange(1, 9, dtype=np.int32))
        return interp.run(module, "load", [words.address + offset, np.zeros(4, np.int32)], device=device)[-1]


def test_interpreter_pointer_load_reads_vectors_and_refuses_misaligned_addresses() -> None:
    # lane 1's address is unmapped and misaligned, but lane 1 is not active in the guarded region: only lane 0 reads
    assert list(run_load(16)) == [5, 6, 7, 8]
    with pytest.raises(InterpError, match="is not 16-byte aligned"):
        run_load(4)


def test_nvidia_family_lowers_through_nvvm() -> None:
    family = family_of(get_chip("sm_90"))
    assert family.buffer_flags is None and not family.scalar_unit
    _, passes = family.lowering_passes(get_chip("sm_90"), 64)
    assert passes == ["convert-math-to-llvm", "convert-nvgpu-to-nvvm", "convert-gpu-to-nvvm{index-bitwidth=64 use-bare-ptr-memref-call-conv=true}"]


# ----------------------------------------------------------------------------
# The tensor-core loop (mma.sync m16n8k16)


def test_attention_runs_on_mma_sync_in_the_hot_loop(tmp_path) -> None:
    text = open(generate(tmp_path, ["--dtype", "bf16", *DECODE], "sm_90")).read()
    ptx = compile_source(text, emit="ptx", cache=False).artefact
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx
    report = compile_source(text, emit="ptx", report=True, cache=False).report_json
    assert '"matrix_instructions": 0' not in report and '"vgpr_spills": 0' in report


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_mma_sync_causally_hidden_nan_keys_spare_the_other_rows(dtype: str) -> None:
    # Only the last query row sees the last key: NaN in its K and V must not reach the other rows through
    # 0 x NaN in the P V product (the hidden-key products of the diagonal tiles).
    from test_attention import TOLERANCE, make_args, run_attention

    args = make_args(seq_len_q=4, seq_len_k=48, causal=True, arch="sm_90", dtype=dtype)
    got, expected = run_attention(args, np.array([48, 21], dtype=np.int32), poison_last_key=True)
    assert np.all(np.isnan(expected[:, :, -1])) and np.all(np.isfinite(expected[:, :, :-1]))
    np.testing.assert_allclose(got[:, :, :-1], expected[:, :, :-1], atol=TOLERANCE[args.dtype], rtol=0)


@pytest.mark.parametrize("overrides", [dict(seq_len_k=40), dict(seq_len_q=5, seq_len_k=48, causal=True, num_heads_q=8)],
                         ids=["decode", "prefill-causal"])
def test_mma_sync_keys_past_seq_len_never_reach_the_output(overrides: dict) -> None:
    from test_attention import TOLERANCE, make_args, run_attention

    args = make_args(arch="sm_90", head_dim=128, **overrides)
    got, expected = run_attention(args, np.array([overrides["seq_len_k"], 7], dtype=np.int32), stale=True)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, atol=TOLERANCE[args.dtype], rtol=0)


# ----------------------------------------------------------------------------
# cp.async (--lds-dma)


def test_lds_dma_copies_kv_tiles_with_cp_async(tmp_path) -> None:
    text = open(generate(tmp_path, ["--dtype", "f16", *DECODE, "--lds-dma"], "sm_90")).read()
    ptx = compile_source(text, emit="ptx", report=True, cache=False)
    for instruction in ("cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group", "mma.sync"):
        assert instruction in ptx.artefact, instruction
    assert '"async 128bit"' in ptx.report_json and '"vgpr_spills": 0' in ptx.report_json
    assert compile_source(text, emit="cubin", cache=False).artefact[:4] == b"\x7fELF"


@pytest.mark.parametrize("argv", [
    ["--page-table", "pointers", "--dtype", "f16", "--batch", "2", "--num-heads-q", "4", "--num-heads-kv", "2",
     "--seq-len-q", "1", "--seq-len-k", "64", "--seq-lens", "--head-dim", "64", "--page-size", "16"],
    ["--page-table", "blocks", "--dtype", "bf16", "--batch", "1", "--num-heads-q", "2", "--num-heads-kv", "1",
     "--seq-len-q", "32", "--seq-len-k", "48", "--causal", "--head-dim", "128", "--page-size", "16"],
], ids=["pointers-decode-f16", "blocks-prefill-bf16"])
def test_check_runs_the_cp_async_copies(tmp_path, capsys, argv: list[str]) -> None:
    # null pages and keys past seq_len are zero-filled, never read; the tile is read only after the wait
    path = generate(tmp_path, [*argv, "--lds-dma"], "sm_90")
    assert run_cli.main([path, "--check"]) == 0
    out = capsys.readouterr().out
    assert "L6 after rock-kernel-pipeline" in out and "FAIL" not in out


def test_benchmark_report_has_nvidia_rows() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks import report
    from benchmarks.bench import measure_config
    from benchmarks.configs import Config

    config = Config("attention", "sm_90", 32, 16, "decode", batch=1, heads_q=4, heads_kv=1, seq_k=64, lds="cp.async",
                    group="nvidia")
    record = measure_config(config, repeat=1)
    assert record["status"] == "ok", record.get("error")
    row = next(line for line in report.nvidia_table([record]).splitlines() if config.name in line)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    registers, spills, mma, copies = int(cells[1]), int(cells[2]), int(cells[5]), int(cells[6])
    assert registers > 0 and spills == 0 and mma > 0 and copies > 0
    assert float(cells[8]) > 0  # the roofline lower bound, in microseconds


LDMATRIX_KERNEL = """
func.func @ldm(%src: memref<16x16xf16>, %out: memref<32x8xf16>) attributes {rock.kernel, rock.arch = "sm_90", rock.block_size = 32 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %raw = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %raw[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<16x16xf16, #gpu.address_space<workgroup>>
  %half = arith.constant 16 : index
  %in_tile = arith.cmpi ult, %tid, %half : index
  scf.if %in_tile {
    %row = vector.load %src[%tid, %c0] : memref<16x16xf16>, vector<16xf16>
    vector.store %row, %tile[%tid, %c0] : memref<16x16xf16, #gpu.address_space<workgroup>>, vector<16xf16>
  }
  "rock.lds_barrier"() : () -> ()
  %r = affine.apply affine_map<(l) -> (l mod 8 + ((l floordiv 8) mod 2) * 8)>(%tid)
  %c = affine.apply affine_map<(l) -> ((l floordiv 16) * 8)>(%tid)
  %m = nvgpu.ldmatrix %tile[%r, %c] {numTiles = 4 : i32, transpose = TRANSPOSE} : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
  %flat = vector.shape_cast %m : vector<4x2xf16> to vector<8xf16>
  vector.store %flat, %out[%tid, %c0] : memref<32x8xf16>, vector<8xf16>
  return
}
"""


@pytest.mark.parametrize("transpose", [False, True])
def test_interpreter_nvgpu_ldmatrix_follows_the_ptx_fragment_rule(transpose: bool) -> None:
    # matrix j is the 8x8 block (rows 8 (j mod 2), columns 8 (j div 2)) of the tile (lane 8 j + r gives its row r);
    # PTX ISA ldmatrix: register j of lane l holds row l div 4, columns 2 (l mod 4) and + 1 of matrix j, with
    # .trans column l div 4, rows 2 (l mod 4) and + 1
    tile = (np.arange(256, dtype=np.float32).reshape(16, 16) / 8).astype(np.float16)
    with make_context():
        module = ir.Module.parse(LDMATRIX_KERNEL.replace("TRANSPOSE", str(transpose).lower()))
        got = interp.run(module, "ldm", [tile, np.zeros((32, 8), np.float16)])[-1]
    expected = np.zeros((32, 8), np.float16)
    for lane in range(32):
        for j in range(4):
            block = tile[8 * (j % 2):8 * (j % 2) + 8, 8 * (j // 2):8 * (j // 2) + 8]
            for e in range(2):
                row, col = lane // 4, 2 * (lane % 4) + e
                expected[lane, 2 * j + e] = block[col, row] if transpose else block[row, col]
    np.testing.assert_array_equal(got, expected)


def test_swizzled_tiles_take_ldmatrix_bank_conflicts_away(tmp_path, capsys) -> None:
    # D 128: rows of 256 bytes put an ldmatrix phase's 8 rows in the same 4 banks; swizzled, 8 different chunks
    import re

    cycles = {}
    for swizzle in ([], ["--lds-swizzle"]):
        path = generate(tmp_path, ["--dtype", "f16", "--batch", "1", "--num-heads-q", "8", "--num-heads-kv", "1",
                                   "--seq-len-q", "1", "--seq-len-k", "64", "--head-dim", "128", "--page-size", "16",
                                   *swizzle], "sm_90", f"k{len(swizzle)}.mlir")
        assert run_cli.main([path, "--check", "--lds-banks"]) == 0
        cycles[bool(swizzle)] = int(re.search(r"reads (\d+) cycles", capsys.readouterr().out).group(1))
    assert cycles[True] * 10 < cycles[False], cycles


def test_cubin_runs_hmma_ldsm_and_ldgsts_in_the_hot_loop(tmp_path) -> None:
    # the machine code (nvdisasm of ptxas's cubin): tensor-core HMMA, LDSM (ldmatrix) and LDGSTS (cp.async)
    # inside the KV loop, whose SASS instructions the report counts
    from pagedir.backend import ptx_report, ptxas

    text = open(generate(tmp_path, ["--dtype", "bf16", *DECODE, "--lds-dma", "--lds-swizzle"], "sm_90")).read()
    cubin = compile_source(text, emit="cubin", cache=False).artefact
    lines = ptx_report.sass_loop_lines(ptx_report.sass_bodies(ptxas.disassemble(cubin))["paged_attention"])
    loop = ptx_report.hot_loop(lines)
    hot = [lines[i] for i in loop[1]]
    for opcode in ("HMMA.16816.F32.BF16", "LDSM.16.M88.4", "LDSM.16.MT88.4", "LDGSTS.E.BYPASS.128"):
        assert any(line.startswith(opcode) for line in hot), opcode
    report = compile_source(text, emit="ptx", report=True, cache=False).report_json
    assert f'"loop_instructions": {loop[0].instructions},' in report


def test_cubin_without_ptxas_names_the_package(tmp_path, capsys, monkeypatch) -> None:
    from pagedir.backend import ptxas

    path = generate(tmp_path, ["--dtype", "f16", *DECODE], "sm_90")
    monkeypatch.delenv(ptxas.PTXAS_ENV, raising=False)
    monkeypatch.setattr(ptxas, "find_tool", lambda name: None)
    assert compile_cli.main([path, "--emit=cubin", "--no-cache", "-o", str(tmp_path / "k.cubin")]) == 1
    err = capsys.readouterr().err
    assert f"pip install '{ptxas.NVCC_REQUIREMENT}'" in err and "--emit=ptx gives the PTX without it" in err
    monkeypatch.setenv(ptxas.PTXAS_ENV, str(tmp_path / "no-ptxas"))
    assert compile_cli.main([path, "--emit=cubin", "--no-cache", "-o", str(tmp_path / "k.cubin")]) == 1
    assert f"cannot run {tmp_path / 'no-ptxas'}" in capsys.readouterr().err
    assert not (tmp_path / "k.cubin").exists()
