"""rock-pipeline executed: the pipelined KV loop computes what the loop did, on the same data.

``check_pass`` runs the L3 kernel (after rock-blockwise-load) before and after rock-pipeline on
the interpreter, which also reports any LDS race between two threads: the next tile's pointer
buffer written while a thread still reads the current one would show. The cases cover the
loop's ranges the pass must get right: a sequence shorter than one tile, split-KV ranges (a
split with no tile, splits ending inside a page), a sliding window (tiles skipped at the
start), causal prefill, block tables (K and V share the table), the VALU loop, and a small
loop with tile ranges [lb, ub) drawn at random (empty, one tile, several).
"""

from __future__ import annotations

import argparse

import mlir.ir as ir
import pytest

from pagedir import driver
from pagedir.backend.report import global_waits_per_tile, kernel_reports
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp.check import apply_pass, check_pass
from pagedir.passes.ir_utils import find_ops

from test_attention import make_args as attention_args

#: name -> (generator overrides, chip). Lengths are drawn by the check (ragged, some under a tile).
CASES = {
    "decode-gqa8-d128": (dict(num_heads_q=16, num_heads_kv=2, head_dim=128, seq_len_k=192), "gfx942"),
    "decode-shorter-than-a-tile": (dict(seq_len_k=16, page_size=8), "gfx942"),
    "decode-splits": (dict(seq_len_k=256, num_splits=4), "gfx942"),
    "decode-window": (dict(seq_len_k=256, window=40), "gfx942"),
    "prefill-causal": (dict(seq_len_q=8, seq_len_k=96, causal=True), "gfx942"),
    "decode-blocks-bf16": (dict(seq_len_k=128, page_table="blocks", dtype="bf16"), "gfx942"),
    "decode-csr-f32": (dict(seq_len_k=96, page_table="csr", dtype="f32", seq_lens=False), "gfx942"),
    "decode-valu-loop": (dict(seq_len_k=128), "gfx1030"),
}


def make_args(**overrides) -> argparse.Namespace:
    """test_attention's arguments, with seq_lens (ragged lengths, some under a tile) and 64 keys."""
    return attention_args(**{"seq_len_k": 64, "seq_lens": True, **overrides})


def l3_module(overrides: dict, chip: str, depth: int = 2) -> ir.Module:
    """The kernel after rock-blockwise-load, its KV loop marked with ``depth``."""
    args = make_args(arch=chip, **overrides)
    module = ir.Module.parse(gen.generate(args))
    driver.run(module.operation, driver.CompileOptions(arch=chip, pipeline_depth=depth), start="L0", end="L2")
    driver.run_stages(module.operation, [driver.pass_stage("rock-blockwise-load")])
    return module


@pytest.mark.parametrize("name", list(CASES))
def test_pipelined_kernel_computes_what_the_loop_did(name: str) -> None:
    overrides, chip = CASES[name]
    with make_context():
        module = l3_module(overrides, chip)
        result = check_pass(module, "rock-pipeline", seed=len(name))
        assert result.ok and result.functions, result.report()
        pipelined = apply_pass(module.operation, "rock-pipeline")
        loops = [loop for loop in find_ops(pipelined.operation, "scf.for") if "rock.pipelined" in loop.attributes]
        assert len(loops) == 2  # the loop over [lb, ub - 1) and its last iteration
        # The main loop issues the next tile's reads after tile t's LDS write; the last iteration issues none.
        main, last = loops
        assert "GlobalRead" in stages(main) and "GlobalRead" not in stages(last)
        assert stages(main).index("GlobalRead") > stages(main).index("LDSWrite")


def stages(loop: ir.Operation) -> list[str]:
    """The stages at the top level of the loop body, in order."""
    return [ir.StringAttr(op.attributes["rock.stage"]).value for op in loop.regions[0].blocks[0].operations
            if "rock.stage" in op.attributes]


SUM_TILES = """
#tile = affine_map<(d0, d1, d2, d3) -> (d0, (d1 * 16 + d2) * 64 + d3)>
func.func @sum_tiles(%table: memref<2x8x1xi64>, %first: memref<2xi32>, %last: memref<2xi32>, %out: memref<2x256xf32>)
    attributes {rock.arch = "gfx942", rock.block_size = 256 : i64, rock.grid_size = 2 : i64, rock.kernel} {
  %pages = "rock.deref"(%table) : (memref<2x8x1xi64>) -> memref<2x8x1024xf16>
  %b = "rock.workgroup_id"() : () -> index
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %raw = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %raw[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<16x64xf16, #gpu.address_space<workgroup>>
  %lb_i = memref.load %first[%b] : memref<2xi32>
  %ub_i = memref.load %last[%b] : memref<2xi32>
  %lb = arith.index_cast %lb_i : i32 to index
  %ub = arith.index_cast %ub_i : i32 to index
  %zero = arith.constant 0.0 : f32
  %row = arith.divui %tid, %c64 : index
  %col = arith.remui %tid, %c64 : index
  %sum = scf.for %t = %lb to %ub step %c1 iter_args(%acc = %zero) -> (f32) {
    "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %table) {block_size = 256 : i64, index_bounds = array<i64: 2, 8>,
      map = #tile, operandSegmentSizes = array<i32: 1, 1, 2, 1>, page_size = 1024 : i64}
      : (memref<2x8x1024xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, index, index, memref<2x8x1xi64>) -> ()
    %v = memref.load %tile[%row, %col] : memref<16x64xf16, #gpu.address_space<workgroup>>
    %w = arith.extf %v : f16 to f32
    %next = arith.addf %acc, %w : f32
    "rock.lds_barrier"() : () -> ()
    scf.yield %next : f32
  } {rock.pipeline_depth = 2 : i64}
  memref.store %sum, %out[%b, %tid] : memref<2x256xf32>
  return
}
"""


@pytest.mark.parametrize("pointers", ["per-wave", "lds"])
@pytest.mark.parametrize("seed", range(4))
def test_pipelined_loop_over_random_tile_ranges(seed: int, pointers: str) -> None:
    # first and last are drawn in [0, 8): empty ranges, single tiles and several tiles. On gfx942 each wave
    # reads its page pointers itself; a kernel naming no chip stages them in LDS, where the next tile's
    # pointers overwrite the prologue's once every thread has passed the barrier that closes it.
    text = SUM_TILES if pointers == "per-wave" else SUM_TILES.replace('rock.arch = "gfx942", ', "")
    with make_context():
        module = apply_pass(ir.Module.parse(text).operation, "rock-blockwise-load")
        stages = [ir.StringAttr(op.attributes["rock.stage"]).value
                  for op in find_ops(module.operation, "scf.execute_region") if "rock.stage" in op.attributes]
        assert ("PagePtrLoad" in stages) == (pointers == "lds")
        result = check_pass(module, "rock-pipeline", seed=seed)
        assert result.ok and result.functions, result.report()


def test_depth_is_chosen_recorded_and_overridable() -> None:
    with make_context():
        def depth_of(overrides: dict, **options) -> int:
            module = ir.Module.parse(gen.generate(make_args(arch="gfx942", **overrides)))
            driver.run(module.operation, driver.CompileOptions(arch="gfx942", **options), start="L0", end="L1")
            op = find_ops(module.operation, "rock.gridwise_attention_accel")[0]
            return ir.IntegerAttr(op.attributes["pipeline_depth"]).value if "pipeline_depth" in op.attributes else 1

        assert depth_of({}) == 2  # 2 workgroups on 304 compute units
        assert depth_of({}, pipeline_depth=1) == 1
        assert depth_of(dict(batch=512)) == 1  # 1024 workgroups share the compute units: keep the waves
        assert depth_of(dict(batch=512), pipeline_depth=2) == 2
        assert depth_of(dict(batch=512, pipeline_depth=2)) == 2  # the kernel's rock.pipeline_depth
        assert depth_of(dict(seq_len_q=8, causal=True)) == 1  # prefill: registers before latency


def test_gfx942_decode_waits_for_the_tile_issued_an_iteration_earlier() -> None:
    # Decode B=2, 16/2 heads, D 128, pages of 16 f16 tokens: K and V tiles of 4 dwordx4 per thread.
    def hot_loop_waits(depth: int) -> tuple[int, int, str]:
        with make_context():
            module = ir.Module.parse(gen.generate(make_args(num_heads_q=16, num_heads_kv=2, head_dim=128, seq_len_k=512)))
            asm = driver.run(module.operation, driver.CompileOptions(arch="gfx942", pipeline_depth=depth), start="L0")["asm"]
        report = [r for r in kernel_reports(asm, "gfx942") if r.name == "paged_attention"][0]
        return report.global_waits_per_tile, report.draining_waits_per_tile, asm

    waits, drains, _ = hot_loop_waits(1)
    assert drains >= 2  # K and V each wait for everything in flight before their LDS store
    waits, drains, asm = hot_loop_waits(2)
    # The page pointers are scalar loads and K and V of tile t were issued during tile t - 1: one wait
    # on global data per tile, at its top.
    assert waits == 1


def test_global_waits_count_runs_and_drains() -> None:
    body = """
.LBB0_1:
	s_waitcnt vmcnt(7)
	ds_write_b128 v1, v[2:5]
	s_waitcnt vmcnt(4)
	ds_write_b128 v1, v[6:9]
	s_barrier
	buffer_load_dwordx4 v[2:5], v0, s[8:11], 0 offen
	s_waitcnt vmcnt(0)
	v_add_f32 v1, v2, v3
	s_cbranch_scc0 .LBB0_1
""".splitlines()
    assert global_waits_per_tile(body) == (2, 1)
    assert global_waits_per_tile(["\ts_waitcnt vmcnt(0)"]) == (0, 0)  # no loop
