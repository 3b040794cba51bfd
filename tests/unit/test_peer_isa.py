"""The counter both sides of the peer benchmark are read with (benchmarks/isa.py), on assembly text."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks import isa  # noqa: E402

# A kernel as Triton's AMD backend prints it: the label line carries a comment, no static LDS,
# a prologue load, then a loop of two loads and two MFMAs, and an epilogue loop without loads.
TRITON_STYLE = """\
\t.globl\tk
k:                               ; @k
\ts_load_dwordx2 s[2:3], s[0:1], 0x0
\ts_load_dword s4, s[0:1], 0x8
\tbuffer_load_dwordx4 v[0:3], v4, s[8:11], 0 offen
.LBB0_1:
\tglobal_load_dwordx4 v[4:7], v[8:9], off
\tbuffer_load_dword v10, v11, s[8:11], 0 offen
\tv_mfma_f32_16x16x16_f16 v[12:15], v[0:1], v[4:5], v[12:15]
\tv_mfma_f32_32x32x8_f16 v[16:31], v[0:1], v[4:5], v[16:31]
\ts_barrier
\tv_add_f32 v1, v2, v3
\ts_cbranch_scc1 .LBB0_1
.LBB0_2:
\tv_add_f32 v1, v2, v3
\ts_cbranch_vccnz .LBB0_2
\ts_endpgm
.Lfunc_end0:
\t.rodata
\t.amdhsa_kernel k
\t\t.amdhsa_group_segment_fixed_size 0
\t\t.amdhsa_next_free_vgpr 32
\t\t.amdhsa_next_free_sgpr 12
\t.end_amdhsa_kernel
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .name:           k
    .sgpr_count:     18
    .vgpr_count:     32
    .max_flat_workgroup_size: 256
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
...
\t.end_amdgpu_metadata
"""


def test_counts_a_kernel_whose_label_line_has_a_comment():
    counters = isa.count(TRITON_STYLE, "gfx942")["k"]
    assert counters["instructions"] == 13
    assert counters["mfma"] == 2 and counters["wmma"] == 0
    assert counters["scalar_loads"] == 2
    assert counters["vector_loads"] == {"dwordx4": 2, "dword": 1}
    assert counters["barriers"] == 1
    assert counters["waves_per_workgroup"] == 4


def test_the_hot_loop_is_the_one_with_the_loads_and_matrix_instructions():
    loop = isa.count(TRITON_STYLE, "gfx942")["k"]["hot_loop"]
    assert loop["instructions"] == 7
    assert loop["mfma"] == 2
    assert loop["matrix_flops"] == 2 * 16 * 16 * 16 + 2 * 32 * 32 * 8
    assert loop["vector_loads"] == 2 and loop["vector_load_bytes"] == 16 + 4
    counters = isa.count(TRITON_STYLE, "gfx942")["k"]
    # 7 instructions per wave, 4 waves, 16 tokens an iteration
    assert isa.per_kv_token(counters, 16) == 7 * 4 / 16
    assert isa.per_kv_token(counters, None) is None


def test_launch_lds_lowers_occupancy():
    alone = isa.count(TRITON_STYLE, "gfx942")["k"]
    with_lds = isa.count(TRITON_STYLE, "gfx942", launch_lds_bytes=32 * 1024)["k"]
    assert alone["lds_bytes"] == 0 and with_lds["lds_bytes"] == 32 * 1024
    # 64 KiB of LDS per CU hold two workgroups of 4 waves: 2 waves per SIMD
    assert with_lds["occupancy"] == 2 < alone["occupancy"]


def test_wmma_counts_on_rdna():
    text = TRITON_STYLE.replace("v_mfma_f32_16x16x16_f16", "v_wmma_f32_16x16x16_f16").replace("gfx942", "gfx1100")
    counters = isa.count(text, "gfx1100")["k"]
    assert counters["wmma"] == 1 and counters["mfma"] == 1
    assert isa.matrix_flops("v_wmma_f32_16x16x16_f16") == 8192
    assert isa.matrix_flops("v_add_f32") == 0


def test_llvm_mca_gets_the_common_path_and_the_rest_of_the_kernel_apart():
    body = isa.kernel_bodies(TRITON_STYLE, ["k"])["k"]
    texts = isa.simulated_texts(body)
    loop = texts["mca_text"].splitlines()
    outside = texts["mca_outside_text"].splitlines()
    assert len(loop) == 7 and loop[0].startswith("global_load_dwordx4") and loop[-1].startswith("s_cbranch_scc1")
    # the prologue's three loads, the epilogue loop and s_endpgm: every instruction not in the hot loop, once
    assert outside[0].startswith("s_load_dwordx2") and outside[-1] == "s_endpgm"
    assert len(outside) + len(loop) == isa.count(TRITON_STYLE, "gfx942")["k"]["instructions"]
    assert "mca_rare_text" not in texts  # no arm with more matrix instructions
    # a kernel without a loop: the whole kernel
    straight = [line for line in body if ".LBB0_1" not in line and ".LBB0_2" not in line]
    assert isa.simulated_texts(straight) == {"mca_text": "\n".join(isa.kernel_text(straight))}
