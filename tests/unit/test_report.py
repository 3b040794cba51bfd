"""The kernel report parser on hand-written amdgcn assembly (as LLVM 22 prints it)."""

import json

import pytest

from pagedir.backend.report import (add_kv_token_figures, classify, format_table, instruction_statistics, kernel_reports,
                                    to_json)

ASM = """\
\t.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
\t.text
\t.globl\tk
k:
\ts_load_dwordx4 s[0:3], s[4:5], 0x0  ; load kernel arguments
\tv_lshlrev_b32_e32 v1, 4, v0
.LBB0_1:
\tv_readfirstlane_b32 s4, v2
\tv_readfirstlane_b32 s5, v3
\ts_and_saveexec_b64 s[0:1], vcc
\tbuffer_load_dwordx4 v[6:9], v1, s[4:7], 0 offen
\ts_xor_b64 exec, exec, s[0:1]
\ts_cbranch_execnz .LBB0_1
\tbuffer_load_dword v10, v1, s[8:11], 0 offen
\tbuffer_load_dwordx2 v[12:13], v1, s[8:11], 0 offen
\tglobal_load_dwordx3 v[14:16], v1, s[2:3]
\tds_write_b128 v1, v[6:9]
\ts_barrier
\tds_read2_b32 v[2:3], v1 offset1:1
\tds_read_b64 v[4:5], v1
\ts_barrier
\tglobal_store_dwordx4 v0, v[2:5], s[6:7]
\ts_endpgm
.Lfunc_end0:
\t.section\t.rodata,"a",@progbits
\t.amdhsa_kernel k
\t\t.amdhsa_group_segment_fixed_size 16384
\t\t.amdhsa_private_segment_fixed_size 32
\t\t.amdhsa_next_free_vgpr 84
\t\t.amdhsa_next_free_sgpr 16
\t\t.amdhsa_accum_offset 68
\t.end_amdhsa_kernel
\t.set k.num_vgpr, 66
\t.set k.num_agpr, 16
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     16
    .args:
      - .address_space:  global
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
    .group_segment_fixed_size: 16384
    .max_flat_workgroup_size: 256
    .name:           k
    .reqd_workgroup_size:
      - 256
      - 1
      - 1
    .sgpr_count:     22
    .sgpr_spill_count: 2
    .vgpr_count:     84
    .vgpr_spill_count: 3
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
...
\t.end_amdgpu_metadata
"""


def test_resources_come_from_directives_and_metadata():
    (report,) = kernel_reports(ASM, "gfx942")
    assert report.name == "k"
    assert (report.vgprs, report.agprs, report.total_vgprs) == (66, 16, 84)
    assert (report.sgprs, report.next_free_sgpr) == (22, 16)
    assert (report.vgpr_spills, report.sgpr_spills) == (3, 2)
    assert (report.scratch_bytes, report.lds_bytes) == (32, 16384)
    assert (report.wave_size, report.workgroup_size) == (64, 256)


def test_vgprs_from_metadata_when_the_resource_symbols_are_expressions():
    # What LLVM prints for some kernels: no plain number in .set or in the descriptor.
    asm = ASM.replace("\t.set k.num_vgpr, 66", "\t.set k.num_vgpr, max(190, amdgpu.max_num_vgpr)")
    asm = asm.replace("\t.set k.num_agpr, 16", "\t.set k.num_agpr, max(0, amdgpu.max_num_agpr)")
    asm = asm.replace(".amdhsa_next_free_vgpr 84", ".amdhsa_next_free_vgpr max(totalnumvgprs(k.num_agpr, k.num_vgpr), 1, 0)")
    asm = asm.replace(".agpr_count:     16", ".agpr_count:     0").replace(".vgpr_count:     84", ".vgpr_count:     190")
    (report,) = kernel_reports(asm, "gfx942")
    assert (report.vgprs, report.agprs) == (190, 0)
    assert report.occupancy_limits["vgprs"] == 2


def test_occupancy_uses_unified_vgprs_and_lds():
    (report,) = kernel_reports(ASM, "gfx942")
    # 84 registers round to 88: 512 // 88 = 5; 16 KiB LDS: 4 groups x 4 waves / 4 SIMDs = 4.
    assert report.occupancy_limits["vgprs"] == 5
    assert report.occupancy_limits["lds"] == 4
    assert report.occupancy == 4


def test_instruction_statistics():
    (report,) = kernel_reports(ASM, "gfx942")
    assert report.buffer_loads == {"dwordx4": 1, "dword": 1, "dwordx2": 1}
    assert report.global_loads == {"dwordx3": 1}
    assert report.global_stores == {"dwordx4": 1}
    assert report.lds_writes == {"b128": 1}
    assert report.lds_reads == {"2xb32": 1, "b64": 1}
    assert report.barriers == 2
    assert report.waterfall_buffer_loads == 1


def test_workgroup_size_falls_back_to_max_flat_size():
    asm = ASM.replace(".reqd_workgroup_size:\n      - 256\n      - 1\n      - 1\n", "")
    asm = asm.replace(".max_flat_workgroup_size: 256", ".max_flat_workgroup_size: 128")
    (report,) = kernel_reports(asm, "gfx942")
    assert report.workgroup_size == 128


def test_no_waterfall_without_backward_branch_over_the_load():
    body = [
        "\tv_readfirstlane_b32 s4, v2",
        "\tbuffer_load_dwordx4 v[6:9], v1, s[4:7], 0 offen",
        ".LBB0_2:",
        "\ts_add_u32 s0, s0, 1",
        "\ts_cbranch_scc1 .LBB0_2",
    ]
    assert instruction_statistics(body)["waterfall_buffer_loads"] == 0


def test_matrix_instructions_conversions_and_the_largest_loop():
    body = [
        "\tv_cvt_f32_f16_e32 v1, v2",
        ".LBB0_1:",  # outer loop: 8 instructions, the inner one included
        "\tv_mfma_f32_16x16x16_f16 v[0:3], v[4:5], v[6:7], v[0:3]",
        ".LBB0_2:",  # inner loop: 3 instructions
        "\tv_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]",
        "\tv_cvt_pk_bf16_f32 v1, v2, v3",
        "\ts_cbranch_scc1 .LBB0_2",
        "\tv_mfma_f32_16x16x4_f32 a[0:3], v1, v2, a[0:3]",
        "\ts_cbranch_execz .LBB0_3",  # forward: no loop
        "\tv_add_f32_e32 v1, v2, v3",
        ".LBB0_3:",
        "\ts_branch .LBB0_1",
        "\ts_endpgm",
    ]
    stats = instruction_statistics(body)
    assert stats["matrix_instructions"] == 3
    assert stats["conversions"] == 2
    assert stats["loop_instructions"] == 8
    assert instruction_statistics(body[:5] + body[-1:])["loop_instructions"] == 0  # no backward branch


@pytest.mark.parametrize(
    ("mnemonic", "expected"),
    [
        ("buffer_load_dwordx4", ("buffer_loads", "dwordx4")),
        ("buffer_load_b128", ("buffer_loads", "dwordx4")),
        ("buffer_load_b96", ("buffer_loads", "dwordx3")),
        ("buffer_load_ushort", ("buffer_loads", "short")),
        ("buffer_load_d16_b16", ("buffer_loads", "short")),
        ("buffer_store_dword", ("buffer_stores", "dword")),
        ("global_load_dwordx2", ("global_loads", "dwordx2")),
        ("global_store_b64", ("global_stores", "dwordx2")),
        ("flat_load_dword", ("flat_loads", "dword")),
        ("ds_read_b128", ("lds_reads", "b128")),
        ("ds_load_b128", ("lds_reads", "b128")),
        ("ds_read2_b64", ("lds_reads", "2xb64")),
        ("ds_read2st64_b32", ("lds_reads", "2xb32")),
        ("ds_load_2addr_stride64_b32", ("lds_reads", "2xb32")),
        ("ds_read_u16_d16_hi", ("lds_reads", "b16")),
        ("ds_write_b32", ("lds_writes", "b32")),
        ("ds_store_2addr_b64", ("lds_writes", "2xb64")),
        ("ds_write2_b32", ("lds_writes", "2xb32")),
        ("ds_add_u32", None),
        ("s_load_dwordx4", None),
        ("v_add_u32_e32", None),
    ],
)
def test_classify(mnemonic, expected):
    assert classify(mnemonic) == expected


def test_rdna_wave32_from_descriptor_when_metadata_lacks_it():
    asm = ASM.replace("    .wavefront_size: 64\n", "").replace(
        "\t\t.amdhsa_accum_offset 68\n", "\t\t.amdhsa_accum_offset 68\n\t\t.amdhsa_wavefront_size32 1\n"
    )
    (report,) = kernel_reports(asm, "gfx942")
    assert report.wave_size == 32


def test_json_and_table_carry_the_figures():
    reports = kernel_reports(ASM, "gfx942")
    data = json.loads(to_json(reports))
    assert data["kernels"][0]["lds_bytes"] == 16384
    assert data["kernels"][0]["buffer_loads"]["dwordx4"] == 1
    table = format_table(reports)
    assert "VGPRs            66 arch + 16 acc = 84" in table
    assert "occupancy        4 waves/SIMD" in table
    assert "waterfall loads  1" in table


# ----------------------------------------------------------------------------
# Per KV token figures and llvm-mca's cycles (pagedir.backend.mca), with a stand-in llvm-mca.


def fake_llvm_mca(tmp_path, cycles_per_instruction: int = 3, knows: bool = True) -> str:
    """An llvm-mca that answers like the real one: ``--version``, a probe on stdin (a chip it knows, or not),
    and ``Total Cycles`` = ``cycles_per_instruction`` x instructions x ``-iterations`` for a file."""
    import sys

    tool = tmp_path / "llvm-mca"
    tool.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
if "--version" in args:
    print("LLVM (http://llvm.org/):\\n  LLVM version 99.1.0")
elif args[-1] == "-":
    sys.stdin.read()
    if not {knows}:
        print("'gfx942' is not a recognized processor for this target (ignoring processor)", file=sys.stderr)
else:
    iterations = int(next(a for a in args if a.startswith("-iterations=")).split("=")[1])
    lines = [line for line in open(args[-1]) if line.strip()]
    print("Iterations:", iterations)
    print("Total Cycles:", {cycles_per_instruction} * len(lines) * iterations)
""")
    tool.chmod(0o755)
    return str(tool)


def test_per_kv_token_figures_divide_the_common_path_of_the_workgroups_waves_by_the_kv_tile(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVM_MCA", fake_llvm_mca(tmp_path))
    reports = kernel_reports(ASM, "gfx942")
    add_kv_token_figures(reports, ASM, {"k": 32})
    (report,) = reports
    assert report.loop_common_instructions == 6  # the waterfall loop: 2 readfirstlane, saveexec, load, xor, branch
    waves = 256 // 64
    assert report.loop_instructions_per_kv_token == 6 * waves / 32
    assert report.mca_cycles_per_iteration == 3 * 6  # the stand-in's 3 cycles an instruction, per iteration
    assert report.mca_cycles_per_kv_token == 3 * 6 * waves / 32
    table = format_table(reports)
    assert "  per KV token     0.75 loop instrs (common path x 4 waves / 32-token KV tile)\n" in table
    assert "  llvm-mca         18.0 cycles per loop iteration (common path, one wave), 2.25 per KV token; LLVM 99.1.0\n" \
        in table
    data = json.loads(to_json(reports))["kernels"][0]
    assert (data["kv_tile_tokens"], data["mca_cycles_per_kv_token"]) == (32, 2.25)


def test_the_report_says_in_one_line_when_no_llvm_mca_can_give_cycles(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVM_MCA", str(tmp_path / "missing"))
    reports = kernel_reports(ASM, "gfx942")
    add_kv_token_figures(reports, ASM, {})  # no tiling known: cycles, no per token figure
    table = format_table(reports)
    assert "  per KV token     - (KV tile not known)\n" in table
    assert "  llvm-mca         not found (install llvm-19 or newer, or set LLVM_MCA)\n" in table
    tool = fake_llvm_mca(tmp_path, knows=False)
    monkeypatch.setenv("LLVM_MCA", tool)
    reports = kernel_reports(ASM, "gfx942")
    add_kv_token_figures(reports, ASM, {})
    assert f"  llvm-mca         {tool} does not know gfx942\n" in format_table(reports)
    (tmp_path / "known").mkdir()  # another tool (what a tool answers is kept per path)
    monkeypatch.setenv("LLVM_MCA", fake_llvm_mca(tmp_path / "known", cycles_per_instruction=2))
    reports = kernel_reports(ASM, "gfx942")
    add_kv_token_figures(reports, ASM, {})
    assert "  llvm-mca         12.0 cycles per loop iteration (common path, one wave); LLVM 99.1.0\n" in format_table(reports)


def test_pagedir_compile_reports_per_kv_token_from_the_kernels_tiling(tmp_path, monkeypatch):
    import mlir.ir as ir

    from pagedir import driver
    from pagedir.cli import compile as compile_cli
    from pagedir.context import make_context
    from pagedir.gen import attention as gen
    from pagedir.passes.ir_utils import find_ops
    from test_attention import make_args

    text = gen.generate(make_args(seq_len_k=512, head_dim=128))
    with make_context():  # the tiling rock-attention-to-gridwise chooses
        module = ir.Module.parse(text)
        driver.run(module.operation, driver.CompileOptions(arch="gfx942"), start="L0", end="L1")
        (gridwise,) = find_ops(module.operation, "rock.gridwise_attention_accel")
        tile = ir.IntegerAttr(gridwise.attributes["n_per_block"]).value
    monkeypatch.setenv("LLVM_MCA", fake_llvm_mca(tmp_path))
    entry = compile_cli.compile_source(text, arch="gfx942", report=True, cache=False)
    (kernel,) = json.loads(entry.report_json)["kernels"]
    waves = kernel["workgroup_size"] // kernel["wave_size"]
    assert kernel["loop_common_instructions"] > 0 and kernel["kv_tile_tokens"] == tile
    assert kernel["loop_instructions_per_kv_token"] == kernel["loop_common_instructions"] * waves / tile
    assert kernel["mca_cycles_per_kv_token"] == 3 * kernel["loop_common_instructions"] * waves / tile
    assert f"per KV token     {kernel['loop_instructions_per_kv_token']:.2f} loop instrs" in entry.report_table
