"""rock-reuse-lds executed: buffers that share bytes inside loops and branches stay race-free.

Each kernel below is race-free as written, with one LDS buffer per value: 64
threads exchange values through LDS (each reads its neighbour's slot), and the
kernel's own barriers order every buffer against its own next use, across loop
back edges too. After rock-annotate-liveness, rock-reuse-lds packs the buffers;
``check_pass`` runs its input and output on the interpreter, which reports any
two threads touching the same LDS bytes without a barrier between them. Where
two buffers share bytes, the pass must add the barriers that keep them apart on
every path (the back edge of a loop included); where no barrier can be placed
(both inside one ``scf.if``), the buffers must not share bytes.
"""

from __future__ import annotations

import time

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp.check import apply_pass, check_pass
from pagedir.passes import reuse_lds

HEADER = """
#wg = #gpu.address_space<workgroup>
#next = affine_map<(t) -> ((t + 1) mod 64)>
"""

ATTRIBUTES = 'attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64}'

PROLOGUE = """
  %tid = "rock.workitem_id"() : () -> index
  %next = affine.apply #next(%tid)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
"""

ALLOCS = """
  %a_raw = "rock.alloc"() : () -> memref<256xi8, #wg>
  %b_raw = "rock.alloc"() : () -> memref<256xi8, #wg>
  %a = memref.view %a_raw[%c0][] : memref<256xi8, #wg> to memref<64xf32, #wg>
  %b = memref.view %b_raw[%c0][] : memref<256xi8, #wg> to memref<64xf32, #wg>
"""

#: name -> (body after the prologue, byte sizes of the LDS allocs after the pass).
KERNELS = {
    # A then B in every iteration: B's reads of iteration i and A's writes of
    # iteration i+1 meet across the back edge.
    "loop_alternating": ("""
  scf.for %k = %c0 to %c4 step %c1 {
    %x = memref.load %in[%k, %tid] : memref<4x64xf32>
    memref.store %x, %a[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %y = memref.load %a[%next] : memref<64xf32, #wg>
    %s = arith.addf %x, %y : f32
    memref.store %s, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    memref.store %z, %out[%k, %tid] : memref<4x64xf32>
  }
""", [256]),
    # A in an inner loop, B after it: B of outer iteration i meets A of the
    # first inner iteration of outer iteration i+1.
    "nested_loops": ("""
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c2 step %c1 {
      %row = affine.apply affine_map<(i, j) -> (i * 2 + j)>(%i, %j)
      %x = memref.load %in[%row, %tid] : memref<4x64xf32>
      memref.store %x, %a[%tid] : memref<64xf32, #wg>
      "rock.lds_barrier"() : () -> ()
      %y = memref.load %a[%next] : memref<64xf32, #wg>
      memref.store %y, %out[%row, %tid] : memref<4x64xf32>
      "rock.lds_barrier"() : () -> ()
    }
    %x = memref.load %out[%i, %tid] : memref<4x64xf32>
    memref.store %x, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    %row = affine.apply affine_map<(i) -> (i + 2)>(%i)
    %w = memref.load %out[%row, %tid] : memref<4x64xf32>
    %s = arith.addf %z, %w : f32
    memref.store %s, %out[%row, %tid] : memref<4x64xf32>
  }
""", [256]),
    # A's first write sits in an scf.if of the loop body: the barrier for the
    # back edge goes before the scf.if, still inside the loop.
    "write_in_if_in_loop": ("""
  %all = arith.cmpi ult, %tid, %c64 : index
  scf.for %k = %c0 to %c4 step %c1 {
    %x = memref.load %in[%k, %tid] : memref<4x64xf32>
    scf.if %all {
      memref.store %x, %a[%tid] : memref<64xf32, #wg>
    }
    "rock.lds_barrier"() : () -> ()
    %y = memref.load %a[%next] : memref<64xf32, #wg>
    memref.store %y, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    %s = arith.addf %x, %z : f32
    memref.store %s, %out[%k, %tid] : memref<4x64xf32>
  }
""", [256]),
    # A then B inside one scf.if: a barrier before the scf.if cannot order A's
    # reads against B's writes, and none may go inside it, so they keep apart.
    "both_in_one_if": ("""
  %all = arith.cmpi ult, %tid, %c64 : index
  scf.if %all {
    %x = memref.load %in[%c0, %tid] : memref<4x64xf32>
    memref.store %x, %a[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %y = memref.load %a[%next] : memref<64xf32, #wg>
    memref.store %y, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    memref.store %z, %out[%c0, %tid] : memref<4x64xf32>
  }
""", [256, 256]),
    # C is written before the loop and read in every iteration: it interferes with
    # A and B, which share bytes inside the loop (a barrier for the back edge).
    "live_across_loop": ("""
  %c_raw = "rock.alloc"() : () -> memref<256xi8, #wg>
  %c = memref.view %c_raw[%c0][] : memref<256xi8, #wg> to memref<64xf32, #wg>
  %w = memref.load %in[%c0, %tid] : memref<4x64xf32>
  memref.store %w, %c[%tid] : memref<64xf32, #wg>
  scf.for %k = %c0 to %c4 step %c1 {
    %x = memref.load %in[%k, %tid] : memref<4x64xf32>
    memref.store %x, %a[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %y = memref.load %a[%next] : memref<64xf32, #wg>
    %s = arith.addf %x, %y : f32
    memref.store %s, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    %v = memref.load %c[%next] : memref<64xf32, #wg>
    %t = arith.addf %z, %v : f32
    memref.store %t, %out[%k, %tid] : memref<4x64xf32>
  }
""", [256, 256]),
    # A carries a value over the back edge (a tile loaded for the next iteration): written before the
    # loop and at the end of each iteration, read at the start of the next. B is used in between,
    # after A's write: A is live across the back edge there, so B must not take its bytes, or B's
    # write destroys the value A's next read expects.
    "carried_to_next_iteration": ("""
  %w = memref.load %in[%c0, %tid] : memref<4x64xf32>
  memref.store %w, %a[%tid] : memref<64xf32, #wg>
  "rock.lds_barrier"() : () -> ()
  scf.for %k = %c0 to %c4 step %c1 {
    %y = memref.load %a[%next] : memref<64xf32, #wg>
    %x = memref.load %in[%k, %tid] : memref<4x64xf32>
    %s = arith.addf %x, %y : f32
    "rock.lds_barrier"() : () -> ()
    memref.store %s, %a[%tid] : memref<64xf32, #wg>
    memref.store %x, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    %t = arith.addf %y, %z : f32
    memref.store %t, %out[%k, %tid] : memref<4x64xf32>
    "rock.lds_barrier"() : () -> ()
  }
""", [256, 256]),
    # A guarded overwrite (a next tile's pointers issued under a condition): A is written and read
    # under the same scf.if, so its range stays there and B, used before the scf.if, shares A's bytes.
    "guarded_write_and_read": ("""
  %all = arith.cmpi ult, %c0, %c4 : index
  scf.for %k = %c0 to %c4 step %c1 {
    %x = memref.load %in[%k, %tid] : memref<4x64xf32>
    memref.store %x, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    scf.if %all {
      memref.store %z, %a[%tid] : memref<64xf32, #wg>
      "rock.lds_barrier"() : () -> ()
      %y = memref.load %a[%next] : memref<64xf32, #wg>
      memref.store %y, %out[%k, %tid] : memref<4x64xf32>
    }
    "rock.lds_barrier"() : () -> ()
  }
""", [256]),
}


def kernel_text(name: str) -> str:
    body, _ = KERNELS[name]
    return (f"{HEADER}func.func @{name}(%in: memref<4x64xf32>, %out: memref<4x64xf32>) {ATTRIBUTES} {{"
            f"{PROLOGUE}{ALLOCS}{body}  return\n}}\n")


def lds_pool_bytes(module: ir.Module) -> list[int]:
    """Byte sizes of the LDS allocs left after rock-reuse-lds."""
    sizes: list[int] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "rock.alloc":
            sizes.append(ir.MemRefType(op.results[0].type).shape[0])
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return sizes


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_reused_bytes_are_race_free_on_every_path(name: str) -> None:
    with make_context():
        annotated = apply_pass(ir.Module.parse(kernel_text(name)).operation, "rock-annotate-liveness")
        result = check_pass(annotated, "rock-reuse-lds", seed=1)
        assert result.ok and result.functions, result.report()
        # The packing this test exercises: shared bytes wherever the buffers may share them.
        assert lds_pool_bytes(apply_pass(annotated.operation, "rock-reuse-lds")) == KERNELS[name][1]


# ----------------------------------------------------------------------------
# Values that outlive a write which does not overwrite them.
#
# A write that may not run (inside scf.if) or that covers only part of the
# buffer leaves the older value of (the rest of) the buffer live: here A's
# value of one iteration is read in the next. rock-annotate-liveness must keep
# A live across the loop, so rock-reuse-lds must not give B A's bytes; if it
# does, B's write destroys what A's next read expects and the output differs.

def second_write_of_a(guarded_store: str) -> str:
    """A written by every thread and read; B written from it and read; then
    ``guarded_store`` writes B's value ``%z`` into A for some threads, and A is read."""
    return ALLOCS + """
  %x = memref.load %in[%c0, %tid] : memref<4x64xf32>
  memref.store %x, %a[%tid] : memref<64xf32, #wg>
  "rock.lds_barrier"() : () -> ()
  %y = memref.load %a[%next] : memref<64xf32, #wg>
  memref.store %y, %b[%tid] : memref<64xf32, #wg>
  "rock.lds_barrier"() : () -> ()
  %z = memref.load %b[%next] : memref<64xf32, #wg>
  "rock.lds_barrier"() : () -> ()""" + guarded_store + """
  "rock.lds_barrier"() : () -> ()
  %w = memref.load %a[%next] : memref<64xf32, #wg>
  memref.store %w, %out[%c0, %tid] : memref<4x64xf32>
"""


KEPT_VALUES = {
    # A is written in even iterations only; odd iterations read the previous one's.
    "write_in_even_iterations": ALLOCS + """
  scf.for %k = %c0 to %c4 step %c1 {
    %x = memref.load %in[%k, %tid] : memref<4x64xf32>
    %parity = arith.remui %k, %c2 : index
    %even = arith.cmpi eq, %parity, %c0 : index
    scf.if %even {
      memref.store %x, %a[%tid] : memref<64xf32, #wg>
    }
    "rock.lds_barrier"() : () -> ()
    %y = memref.load %a[%next] : memref<64xf32, #wg>
    %s = arith.addf %x, %y : f32
    memref.store %s, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    memref.store %z, %out[%k, %tid] : memref<4x64xf32>
  }
""",
    # A second write of A that only some threads (or none) run: the other
    # slots keep the first write's value, which B must not overwrite.
    # Under an i8 condition that wraps: tid + 100 is negative in i8 from tid 28 on.
    "write_under_wrapping_i8_condition": second_write_of_a("""
  %t8 = arith.index_cast %tid : index to i8
  %c100_i8 = arith.constant 100 : i8
  %c0_i8 = arith.constant 0 : i8
  %shifted = arith.addi %t8, %c100_i8 : i8
  %low = arith.cmpi sge, %shifted, %c0_i8 : i8
  scf.if %low {
    memref.store %z, %a[%tid] : memref<64xf32, #wg>
  }"""),
    # Under an unsigned maximum: maxui(tid - 40, 0) is a huge number below tid 40.
    "write_under_unsigned_max": second_write_of_a("""
  %c40 = arith.constant 40 : index
  %d = arith.subi %tid, %c40 : index
  %m = arith.maxui %d, %c0 : index
  %small = arith.cmpi slt, %m, %c64 : index
  scf.if %small {
    memref.store %z, %a[%tid] : memref<64xf32, #wg>
  }"""),
    # In an unsigned loop from -4 (a large unsigned number) to 4: no iteration.
    "write_in_unsigned_loop_that_never_runs": second_write_of_a("""
  %minus4 = arith.constant -4 : index
  scf.for unsigned %k = %minus4 to %c4 step %c1 {
    memref.store %z, %a[%tid] : memref<64xf32, #wg>
  }"""),
    # Each iteration writes one row of A and reads the row the iteration before wrote.
    "write_one_row_read_the_other": """
  %a_raw = "rock.alloc"() : () -> memref<512xi8, #wg>
  %b_raw = "rock.alloc"() : () -> memref<256xi8, #wg>
  %a = memref.view %a_raw[%c0][] : memref<512xi8, #wg> to memref<2x64xf32, #wg>
  %b = memref.view %b_raw[%c0][] : memref<256xi8, #wg> to memref<64xf32, #wg>
  scf.for %k = %c0 to %c4 step %c1 {
    %x = memref.load %in[%k, %tid] : memref<4x64xf32>
    %row = arith.remui %k, %c2 : index
    memref.store %x, %a[%row, %tid] : memref<2x64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %first = arith.cmpi eq, %k, %c0 : index
    %other = arith.subi %c1, %row : index
    %older = arith.select %first, %row, %other : index
    %y = memref.load %a[%older, %next] : memref<2x64xf32, #wg>
    %s = arith.addf %x, %y : f32
    memref.store %s, %b[%tid] : memref<64xf32, #wg>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %b[%next] : memref<64xf32, #wg>
    memref.store %z, %out[%k, %tid] : memref<4x64xf32>
  }
""",
}


@pytest.mark.parametrize("name", sorted(KEPT_VALUES))
def test_value_kept_by_a_write_that_does_not_cover_it(name: str) -> None:
    text = (f"{HEADER}func.func @{name}(%in: memref<4x64xf32>, %out: memref<4x64xf32>) {ATTRIBUTES} {{"
            f"{PROLOGUE}{KEPT_VALUES[name]}  return\n}}\n")
    with make_context():
        annotated = apply_pass(ir.Module.parse(text).operation, "rock-annotate-liveness")
        result = check_pass(annotated, "rock-reuse-lds", seed=1)
        assert result.ok and result.functions, result.report()
        # A stays live across the loop, so A and B keep their own bytes.
        after = apply_pass(annotated.operation, "rock-reuse-lds")
        assert sorted(lds_pool_bytes(after)) == sorted(lds_pool_bytes(annotated))


# ----------------------------------------------------------------------------
# Placement: byte ranges of interfering buffers never overlap, on any interference graph, in bounded time.


def random_layout(rng, count: int) -> reuse_lds.LdsPlan:
    """``count`` buffers of random sizes, live over random ranges of a timeline (two buffers interfere when
    their ranges meet), plus random extra edges (loops make graphs that are not interval graphs)."""
    sizes = [int(rng.choice([16, 32, 48, 64, 100, 256, 1000, 4096])) for _ in range(count)]
    starts = rng.integers(0, 4 * count, size=count)
    ends = starts + rng.integers(1, 2 * count + 1, size=count)
    interference = [set() for _ in range(count)]
    for a in range(count):
        for b in range(a + 1, count):
            if (starts[a] < ends[b] and starts[b] < ends[a]) or rng.random() < 0.05:
                interference[a].add(b)
                interference[b].add(a)
    return reuse_lds.LdsPlan([None] * count, sizes, interference)


def byte_range(layout: reuse_lds.LdsPlan, i: int) -> range:
    return range(layout.offsets[i], layout.offsets[i] + reuse_lds.align_up(layout.sizes[i]))


@pytest.mark.parametrize("seed", range(6))
def test_interfering_buffers_get_disjoint_bytes_on_random_graphs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for count in rng.integers(2, 40, size=40):
        layout = random_layout(rng, int(count))
        reuse_lds.place(layout)
        for a in range(len(layout.sizes)):
            assert layout.offsets[a] % reuse_lds.ALIGNMENT == 0
            for b in range(a + 1, len(layout.sizes)):
                share_bytes = bool(set(byte_range(layout, a)) & set(byte_range(layout, b)))
                # the barrier step knows shared bytes by shared colours: the two must agree
                assert share_bytes == bool(set(layout.colours[a]) & set(layout.colours[b])), (a, b)
                assert not (share_bytes and b in layout.interference[a]), (
                    f"interfering buffers {a} {byte_range(layout, a)} and {b} {byte_range(layout, b)} overlap")
        total = max(r.stop for r in map(lambda i: byte_range(layout, i), range(len(layout.sizes))))
        assert total <= sum(reuse_lds.align_up(s) for s in layout.sizes)
        reuse_lds.pool_groups(layout)
        assert layout.bytes_after == total or len(layout.groups) > 1
        assert all(0 <= o and o + s <= layout.groups[g]
                   for o, s, g in zip(layout.offsets, layout.sizes, layout.group_of))


@pytest.mark.parametrize("seed", range(3))
def test_colour_runs_keep_interfering_buffers_apart_on_random_graphs(seed: int) -> None:
    # The colour runs never give up: plan keeps them wherever first fit is not strictly better.
    rng = np.random.default_rng(seed)
    for count in rng.integers(2, 40, size=40):
        layout = random_layout(rng, int(count))
        assert reuse_lds.place(layout, reuse_lds.colour_runs), "colour runs overlap interfering buffers"
        for a in range(len(layout.sizes)):
            for b in layout.interference[a]:
                assert not set(byte_range(layout, a)) & set(byte_range(layout, b)), (
                    f"interfering buffers {a} {byte_range(layout, a)} and {b} {byte_range(layout, b)} overlap")


@pytest.mark.parametrize("placement", [reuse_lds.first_fit, reuse_lds.colour_runs])
def test_placement_of_many_buffers_is_fast(placement) -> None:
    rng = np.random.default_rng(7)
    layout = random_layout(rng, 400)
    start = time.perf_counter()
    assert reuse_lds.place(layout, placement)
    reuse_lds.pool_groups(layout)
    assert time.perf_counter() - start < 5.0
