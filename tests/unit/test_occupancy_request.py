"""The decode loop on the matrix cores asks LLVM for the waves per SIMD its LDS allows
(rock.lds_occupancy -> rocdl.waves_per_eu -> "amdgpu-waves-per-eu"), and the code generator drops
the request when meeting it would spill."""

from __future__ import annotations


import mlir.ir as ir
import pytest
from test_matrix_kernels import assembly

from pagedir import driver
from pagedir.arch import get_chip
from pagedir.backend import codegen
from pagedir.backend.report import kernel_reports
from pagedir.context import make_context
from pagedir.gen import attention as gen
from test_attention import make_args

REQUEST = '"amdgpu-waves-per-eu"'


def test_the_split_decode_kernel_gets_the_waves_its_lds_allows():
    # make demo's kernel with one KV tile in flight: 32-key tiles, 2 waves, 8192 bytes of LDS: 4 waves
    # per SIMD by LDS. Left to itself LLVM took 137 VGPRs (3 waves); asked, it fits 128 without spilling.
    asm = assembly("gfx942", num_splits=0, pipeline_depth=1)
    report = next(r for r in kernel_reports(asm, "gfx942") if r.name == "paged_attention")
    assert report.occupancy_limits["lds"] == 4
    assert report.vgprs + report.agprs <= 128
    assert report.occupancy == 4
    assert report.vgpr_spills == report.sgpr_spills == report.scratch_bytes == 0


def test_make_demos_kernel_keeps_two_tiles_in_flight_at_the_waves_its_lds_allows():
    # make demo's kernel as it is built: depth 2 (a CU per workgroup), the next K/V tiles in 32 VGPRs across
    # the loop. 152 VGPRs (3 waves) before the backend computed index math in 32 bits and exp2 on v_exp_f32.
    asm = assembly("gfx942", num_splits=0)
    report = next(r for r in kernel_reports(asm, "gfx942") if r.name == "paged_attention")
    assert report.occupancy_limits["lds"] == 4
    assert report.vgprs + report.agprs <= 128
    assert report.occupancy == 4
    assert report.vgpr_spills == report.sgpr_spills == report.scratch_bytes == 0
    # the loop still issues the next tiles' loads and waits for them without draining
    assert report.loop_instructions > 0
    assert report.global_waits_per_tile > 0 and report.draining_waits_per_tile == 0


def llvm_ir(arch: str, **overrides) -> str:
    args = make_args(arch=arch, **overrides)
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        return driver.run(module.operation, driver.CompileOptions(arch=arch, emit="llvm-ir"), start="L0",
                          end="llvm-ir-opt")["llvm-ir-opt"]


@pytest.mark.parametrize(("overrides", "asks"), [
    ({"num_splits": 0, "seq_lens": True, "pipeline_depth": 1}, True),
    ({"seq_lens": True, "pipeline_depth": 1}, True),
    ({"batch": 64, "num_heads_q": 64, "num_heads_kv": 8, "seq_lens": True}, True),  # 512 workgroups: depth 1
    ({"seq_lens": True}, False),  # 4 workgroups, a CU each: two tiles in flight, unsplit: no request
    ({"seq_lens": True, "num_splits": 0}, True),  # make demo's kernel: two tiles in flight, split: asked
    # hidden-key products with V read transposed fit the waves LDS allows (they spilled reading it 2 bytes at a time)
    ({"seq_len_q": 64, "seq_len_k": 64, "causal": True}, True),
    ({"seq_len_q": 64, "seq_len_k": 64, "causal": True, "lds_swizzle": True}, False),  # its own V layout: none
    ({"seq_lens": True, "window": 100}, False),  # 4 workgroups, a CU each: two tiles in flight, unsplit
])
def test_which_kernels_ask(overrides, asks):
    text = llvm_ir("gfx942", **{"num_heads_q": 16, "num_heads_kv": 2, "seq_len_k": 512, "head_dim": 128, **overrides})
    assert (REQUEST in text) is asks


def test_a_request_that_would_spill_is_dropped():
    # The D 64 decode kernel's LDS allows 8 waves; asked for them (64 VGPRs) LLVM spills (a block table's:
    # the pointer table's kernel fits 64 VGPRs since its page reads are scalar and grouped).
    text = llvm_ir("gfx942", num_heads_q=8, num_heads_kv=2, seq_len_k=512, head_dim=64, pipeline_depth=1,
                   page_table="blocks")
    assert '"amdgpu-waves-per-eu"="4"' in text  # its own request: 4 waves, which it meets
    asking = text.replace('"amdgpu-waves-per-eu"="4"', '"amdgpu-waves-per-eu"="8"')
    chip = get_chip("gfx942")
    module = codegen.optimize(asking, chip)
    forced = codegen.target_machine(chip).emit_assembly(codegen._copy(module))
    assert kernel_reports(forced, chip)[0].vgpr_spills > 0  # what the request alone gives
    (report,) = kernel_reports(codegen.emit_assembly(module, chip), chip)
    assert report.vgpr_spills == report.sgpr_spills == report.scratch_bytes == 0
    assert report.occupancy >= 5
