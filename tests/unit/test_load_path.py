"""The paged load path end to end: copy-kv through rock-blockwise-load .. rock-to-gpu to ISA."""

from __future__ import annotations

import argparse

import mlir.ir as ir
import pytest

from pagedir import driver
from pagedir.backend import kernel_reports
from pagedir.context import make_context
from pagedir.gen import copy_kv

LOAD_PASSES = ("rock-blockwise-load", "rock-threadwise-lowering", "rock-buffer-load", "rock-to-gpu")


def copy_kv_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    copy_kv.add_arguments(parser)
    args = parser.parse_args([])
    defaults = dict(batch=1, num_heads_kv=2, seq_len=64, head_dim=64, page_size=16, tile_tokens=16)
    for key, value in {**defaults, **overrides}.items():
        setattr(args, key, value)
    return args


def lower(text: str, passes=LOAD_PASSES) -> ir.Module:
    module = ir.Module.parse(text)
    driver.run_stages(module.operation, [driver.pass_stage(argument) for argument in passes])
    return module


def to_asm(module: ir.Module, chip: str) -> str:
    """L6 -> rock-backend-pipeline -> LLVM -> assembly."""
    return driver.run(module.operation, driver.CompileOptions(arch=chip), start="L6", end="asm")["asm"]


def compile_report(chip: str, **overrides):
    with make_context():
        module = lower(copy_kv.generate(copy_kv_args(arch=chip, **overrides)))
        asm = to_asm(module, chip)
    (report,) = kernel_reports(asm, chip)
    return report, asm


@pytest.mark.parametrize("layout", ["k", "v"])
def test_gfx942_f16_reads_pages_with_16_byte_buffer_loads_without_waterfall(layout: str) -> None:
    report, asm = compile_report("gfx942", layout=layout, dtype="f16")
    assert report.buffer_loads == {"dwordx4": 1}
    assert report.waterfall_buffer_loads == 0
    assert "v_readfirstlane_b32" in asm  # the page pointer, taken once per wave


def test_gfx942_f32_tile_rows_are_16_byte_loads() -> None:
    report, _ = compile_report("gfx942", layout="v", dtype="f32", head_dim=32)
    assert set(report.buffer_loads) == {"dwordx4"}
    assert report.waterfall_buffer_loads == 0


def test_pages_smaller_than_a_wave_fall_back_to_per_lane_descriptors() -> None:
    # 64 lanes x 8 halves = 8 tokens of 64 per wave, pages of 4 tokens: lanes of a
    # wave read two pages, no single descriptor serves them, LLVM loops over pages.
    report, _ = compile_report("gfx942", layout="k", dtype="f16", page_size=4)
    assert report.buffer_loads == {"dwordx4": 1}
    assert report.waterfall_buffer_loads == 1


@pytest.mark.parametrize("block_size", [32, 64])
def test_page_pointer_rounds_unroll_into_one_table_read_each(block_size: int) -> None:
    # 128 one-token pages per tile: 128 / block_size staging rounds, each one page-table read per thread.
    report, _ = compile_report("gfx942", dtype="f16", head_dim=8, page_size=1, seq_len=256, tile_tokens=128,
                               block_size=block_size)
    assert report.global_loads == {"dwordx2": 128 // block_size}


def test_gfx1100_uses_rdna_descriptor_flags() -> None:
    with make_context():
        args = copy_kv_args(arch="gfx1100", dtype="f16")
        module = lower(copy_kv.generate(args), LOAD_PASSES[:3])
        assert "arith.constant 822243328 : i32" in str(module)
        assert "159744" not in str(module)
    report, asm = compile_report("gfx1100", dtype="f16")
    assert "buffer_load_b128" in asm
    assert report.waterfall_buffer_loads == 0


def test_unsupported_page_size_is_a_located_error() -> None:
    # Pages of 100 halves cannot hold whole 8-half vectors.
    text = """
    func.func @k(%pages: memref<1x8x100xf16>, %ptrs: memref<2xi64, #gpu.address_space<workgroup>>, %first: index)
        attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
      %c0 = arith.constant 0 : index
      %regs = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
      "rock.threadwise_read_into"(%pages, %regs, %c0, %ptrs, %first) {map = affine_map<(b, n, d) -> (b, n * 64 + d)>,
        block_size = 64, tile_shape = array<i64: 2, 64>, vector_dim = 1, vector_len = 8, page_size = 100,
        num_pages_per_batch = 8, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}
        : (memref<1x8x100xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
      return
    }"""
    with make_context():
        with pytest.raises(driver.StageError, match="page size 100 is not a multiple of the vector width 8") as failure:
            lower(text, ["rock-threadwise-lowering"])
        assert failure.value.stage.name == "rock-threadwise-lowering"


DENSE_COPY = """
func.func @dense_copy(%q: memref<64x64xf16>, %out: memref<64x64xf16>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 4 : i64} {
  %i = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<16x64xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%q, %tile, %i) {map = affine_map<(i, r, c) -> (i * 16 + r, c)>, block_size = 64,
      operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<64x64xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, index) -> ()
  %tid = "rock.workitem_id"() : () -> index
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  scf.for %r = %c0 to %c16 step %c1 {
    %x = memref.load %tile[%r, %tid] : memref<16x64xf16, #gpu.address_space<workgroup>>
    %row = affine.apply affine_map<(i, r) -> (i * 16 + r)>(%i, %r)
    memref.store %x, %out[%row, %tid] : memref<64x64xf16>
  }
  return
}
"""


def test_dense_tile_reads_through_one_uniform_descriptor() -> None:
    with make_context():
        asm = to_asm(lower(DENSE_COPY), "gfx942")
    (report,) = kernel_reports(asm, "gfx942")
    assert set(report.buffer_loads) == {"dwordx4"}
    assert report.waterfall_buffer_loads == 0
