"""Workgroups run in lock-step batches: the same bits as one workgroup at a time, and every detector
still names the one workgroup (or sequence) at fault when its neighbours run beside it.

``simt.MAX_LANES`` sets how many lanes one batch holds; a batch of one workgroup is the plain
per-workgroup execution the batched one must reproduce.
"""

from __future__ import annotations

import argparse

import mlir.ir as ir
import numpy as np
import pytest

from pagedir import driver
from pagedir.context import make_context
from pagedir.gen import attention as gen
from pagedir.interp import simt
from pagedir.interp.check import make_case
from pagedir.interp.launch import find_function, launch_size, run, run_function
from pagedir.interp.memory import Device, InterpError


def attention_args(**overrides) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gen.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


def run_lowered(args: argparse.Namespace, lanes: int, seed: int = 0) -> tuple[np.ndarray, int]:
    """The output of the L6 kernel of ``args`` on its check case, batches of ``lanes`` lanes; and the
    workgroups per batch that makes."""
    with make_context():
        module = ir.Module.parse(gen.generate(args))
        l0 = find_function(module.operation, args.name)
        lowered = ir.Module.parse(module.operation.get_asm(enable_debug_info=True))
        driver.run(lowered.operation, driver.CompileOptions(), start="L0", end="L6")
        kernel = find_function(lowered.operation, args.name)
        _, block = launch_size(kernel)
        device = Device()
        case = make_case(l0, np.random.default_rng(seed), device)
        saved = simt.MAX_LANES
        simt.MAX_LANES = lanes
        try:
            outputs, _ = run_function(kernel, case.args, device=device)
        finally:
            simt.MAX_LANES = saved
        return outputs[-1], max(1, lanes // block)


@pytest.mark.parametrize("overrides", [
    # ragged: each sequence's KV loop runs its own number of tiles, null pages past seq_lens
    dict(batch=3, num_heads_q=4, num_heads_kv=2, seq_len_q=1, seq_len_k=96, head_dim=32, seq_lens=True),
    # causal prefill: each query block's KV loop stops at its own diagonal
    dict(batch=1, num_heads_q=4, num_heads_kv=2, seq_len_q=64, seq_len_k=64, head_dim=32, causal=True),
    # both, with a prefill shorter than the cache
    dict(batch=2, num_heads_q=2, num_heads_kv=1, seq_len_q=16, seq_len_k=80, head_dim=32, causal=True, seq_lens=True),
], ids=["ragged-decode", "causal-prefill", "causal-ragged"])
def test_lock_step_batches_give_the_bits_of_one_workgroup_at_a_time(overrides) -> None:
    args = attention_args(**overrides)
    alone, one = run_lowered(args, lanes=1)
    together, many = run_lowered(args, lanes=1 << 16)
    assert one == 1 and many > 1, "the two runs must differ in workgroups per batch"
    assert alone.dtype == together.dtype
    assert np.array_equal(alone.view(np.uint8), together.view(np.uint8))


KERNEL = """
func.func @k(%in: memref<{groups}x64xf32>, %out: memref<{groups}x64xf32>)
    attributes {{rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = {groups} : i64}} {{
  %tid = "rock.workitem_id"() : () -> index
  %wg = "rock.workgroup_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %raw = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %lds = memref.view %raw[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %x = memref.load %in[%wg, %tid] : memref<{groups}x64xf32>
  memref.store %x, %lds[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  %racy = arith.cmpi eq, %wg, %c3 : index
  scf.if %racy {{
  }} else {{
    "rock.lds_barrier"() : () -> ()
  }}
  %next = affine.apply affine_map<(t) -> ((t + 1) mod 64)>(%tid)
  %y = memref.load %lds[%next] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %y, %out[%wg, %tid] : memref<{groups}x64xf32>
  return
}}
"""


def test_a_race_in_one_workgroup_of_a_batch_names_that_workgroup() -> None:
    """Only workgroup 3 skips its barrier (a workgroup-uniform branch): the race is reported in
    workgroup 3 with the thread numbers inside it, though 8 workgroups share the batch."""
    groups = 8
    with make_context():
        module = ir.Module.parse(KERNEL.format(groups=groups))
        data = np.arange(groups * 64, dtype=np.float32).reshape(groups, 64)
        assert groups * 64 <= simt.MAX_LANES  # one batch
        with pytest.raises(InterpError) as err:
            run(module, "k", [data, np.zeros_like(data)])
    assert "LDS race in workgroup 3: memref.load in thread 0 reads byte 4" in err.value.message
    assert "that thread 1 wrote with memref.store" in err.value.message


def test_without_the_racy_workgroup_the_batch_rotates_every_workgroup() -> None:
    """The same kernel on 3 workgroups (0..2 all take the barrier) runs: each row rotated by one."""
    groups = 3
    with make_context():
        module = ir.Module.parse(KERNEL.format(groups=groups))
        data = np.arange(groups * 64, dtype=np.float32).reshape(groups, 64)
        _, out = run(module, "k", [data, np.zeros_like(data)])
    assert np.array_equal(out, np.roll(data, -1, axis=1))


def test_a_race_after_reads_is_found_when_the_write_comes_later_in_the_interval() -> None:
    """Reads are recorded lazily: a write over a unit another thread read since the barrier is still
    reported, naming the reading op."""
    text = """
func.func @k(%out: memref<64xf32>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 4 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %raw = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %lds = memref.view %raw[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %one, %lds[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  "rock.lds_barrier"() : () -> ()
  %next = affine.apply affine_map<(t) -> ((t + 1) mod 64)>(%tid)
  %y = memref.load %lds[%next] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %y, %lds[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %y, %out[%tid] : memref<64xf32>
  return
}
"""
    with make_context():
        with pytest.raises(InterpError) as err:
            run(ir.Module.parse(text), "k", [np.zeros(64, np.float32)])
    assert "LDS race in workgroup 0: memref.store in thread 0 writes byte 0" in err.value.message
    assert "that thread 63 read with memref.load" in err.value.message


GATHER = """
func.func @gather(%table: memref<1x4x1xi64>, %out: memref<4x64xf32>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 4 : i64} {
  %seq = "rock.workgroup_id"() : () -> index
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %pages = "rock.deref"(%table) : (memref<1x4x1xi64>) -> memref<1x4x64xf32>
  %ptr = memref.load %table[%c0, %seq, %c0] : memref<1x4x1xi64>
  %x = "rock.global_load"(%pages, %tid, %ptr) {page_size = 64, operandSegmentSizes = array<i32: 1, 1, 0, 1>}
    : (memref<1x4x64xf32>, index, i64) -> f32
  memref.store %x, %out[%seq, %tid] : memref<4x64xf32>
  return
}
"""


@pytest.mark.parametrize("to", ["gpu", "as-written"])
def test_a_null_page_in_one_sequence_is_found_in_a_batch_of_sequences(to) -> None:
    """Sequence 2 of 4 has a null page pointer; the other sequences' pages are mapped and share its
    batch: the run stops at the load, naming the null pointer (as written, and lowered to buffer loads)."""
    with make_context():
        module = ir.Module.parse(GATHER)
        if to == "gpu":
            driver.run_stages(module.operation, [driver.pass_stage("rock-buffer-load"), driver.pass_stage("rock-to-gpu")])
        device = Device()
        page = device.upload(np.arange(64, dtype=np.float32))
        table = np.full((1, 4, 1), page.address, dtype=np.int64)
        _, out = run(module, "gather", [table, np.zeros((4, 64), np.float32)], device=device)
        assert np.array_equal(out, np.tile(np.arange(64, dtype=np.float32), (4, 1)))  # all mapped: it runs
        table[0, 2, 0] = 0
        with pytest.raises(InterpError) as err:
            run(module, "gather", [table, np.zeros((4, 64), np.float32)], device=device)
    assert "reads unmapped device address 0x0 (4 bytes): a null pointer" in err.value.message


def test_an_out_of_bounds_index_in_one_workgroup_is_found_in_its_batch() -> None:
    text = """
func.func @k(%in: memref<64xf32>, %out: memref<4x64xf32>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 4 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %wg = "rock.workgroup_id"() : () -> index
  %c2 = arith.constant 2 : index
  %shift = arith.muli %wg, %c2 : index
  %last = arith.constant 3 : index
  %at_last = arith.cmpi eq, %wg, %last : index
  %i = arith.addi %tid, %shift : index
  %j = arith.select %at_last, %i, %tid : index
  %x = memref.load %in[%j] : memref<64xf32>
  memref.store %x, %out[%wg, %tid] : memref<4x64xf32>
  return
}
"""
    with make_context():
        with pytest.raises(InterpError) as err:
            run(ir.Module.parse(text), "k", [np.zeros(64, np.float32), np.zeros((4, 64), np.float32)])
    assert "memref.load index 64 is out of bounds of dimension 0 (size 64)" in err.value.message


def test_the_loop_limit_holds_for_a_trip_count_of_one_workgroup(monkeypatch) -> None:
    """Workgroup 2's loop runs past the limit while workgroups 0, 1 and 3 finish at once."""
    from pagedir.interp import ops_control

    monkeypatch.setattr(ops_control, "MAX_LOOP_ITERATIONS", 100)
    text = """
func.func @k(%out: memref<4xi32>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 4 : i64} {
  %wg = "rock.workgroup_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %long = arith.constant 1000 : index
  %is2 = arith.cmpi eq, %wg, %c2 : index
  %n = arith.select %is2, %long, %c1 : index
  %one = arith.constant 1 : i32
  scf.for %k = %c0 to %n step %c1 {
    memref.store %one, %out[%wg] : memref<4xi32>
  }
  return
}
"""
    with make_context():
        with pytest.raises(InterpError) as err:
            run(ir.Module.parse(text), "k", [np.zeros(4, np.int32)])
    assert "scf.for runs 1000 iterations, more than the interpreter's limit of 100 per loop" in err.value.message


# ----------------------------------------------------------------------------
# The faster paths of the hot ops compute the bits of the general ones


def test_rows_move_the_bytes_of_element_wise_accesses() -> None:
    from pagedir.interp.memory import gather, gather_rows, scatter_rows

    rng = np.random.default_rng(0)
    buffer = rng.integers(0, 256, 4096, dtype=np.uint8)
    for starts in (np.arange(0, 2048, 16), np.array([2, 18, 4000, 50, 100])):  # aligned rows, then any even offset
        elements = starts[:, None] + np.arange(8) * 2
        assert np.array_equal(gather_rows(buffer, starts, 8, np.dtype(np.uint16)), gather(buffer, elements, np.dtype(np.uint16)))
        values = rng.integers(0, 1 << 16, (len(starts), 8), dtype=np.uint16)
        scatter_rows(buffer, starts, values)
        assert np.array_equal(gather(buffer, elements, np.dtype(np.uint16)), values)


def test_sum_of_8_is_numpys_sum_bit_for_bit() -> None:
    from pagedir.interp.ops_arith import sum_of_8

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((20000, 8)) * np.exp(rng.uniform(-30, 30, (20000, 8)))).astype(np.float32)
    x[:10] = -0.0
    x[10:20, ::2] = np.inf
    assert np.array_equal(sum_of_8(x).view(np.uint32), x.sum(axis=1).view(np.uint32))
    assert np.array_equal(sum_of_8(x[:10]).view(np.uint32), np.zeros(10, np.uint32))  # -0.0 sums to +0.0


@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_fma_of_extended_halves_in_f32_is_the_f64_fused_result(half) -> None:
    """vector.fma of extf'd halves takes the f32 path; its bits equal the f64-emulated fma's."""
    rng = np.random.default_rng(1)
    n = 4096
    a = rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))
    b = rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))
    c = (rng.standard_normal(n) * np.exp(rng.uniform(-20, 20, n))).astype(np.float32)
    a, b = (x.astype(np.float16 if half == "f16" else np.float32) for x in (a, b))  # bf16: rounded from float32
    text = f"""
func.func @f(%a: memref<{n}x{half}>, %b: memref<{n}x{half}>, %c: memref<{n}xf32>, %out: memref<{n}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {n} : index
  scf.for %i = %c0 to %cn step %c1 {{
    %x = memref.load %a[%i] : memref<{n}x{half}>
    %y = memref.load %b[%i] : memref<{n}x{half}>
    %z = memref.load %c[%i] : memref<{n}xf32>
    %xf = arith.extf %x : {half} to f32
    %yf = arith.extf %y : {half} to f32
    %r = math.fma %xf, %yf, %z : f32
    memref.store %r, %out[%i] : memref<{n}xf32>
  }}
  return
}}
"""
    with make_context():
        *inputs, out = run(ir.Module.parse(text), "f", [a, b, c, np.zeros(n, np.float32)])
    x, y = (np.asarray(v, dtype=np.float32).astype(np.float64) for v in inputs[:2])
    expected = (x * y + c.astype(np.float64)).astype(np.float32)
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))
