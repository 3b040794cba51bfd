// RUN: pagedir-opt %s --rock-annotate-liveness --split-input-file | FileCheck %s
// Running the pass twice gives the same annotations (old ones are replaced).
// RUN: pagedir-opt %s --rock-annotate-liveness --rock-annotate-liveness --split-input-file | FileCheck %s

// Two ranges open together, a third after both closed: each live_in sits right
// before the first write, each live_out right after the last read.
// CHECK-LABEL: func.func @two_ranges
// CHECK: %[[A:.*]] = "rock.alloc"() : () -> memref<1024xi8
// CHECK: %[[B:.*]] = "rock.alloc"() : () -> memref<1024xi8
// CHECK: %[[C:.*]] = "rock.alloc"() : () -> memref<2048xi8
// CHECK: %[[VA:.*]] = memref.view %[[A]]
// CHECK: %[[VB:.*]] = memref.view %[[B]]
// CHECK: %[[VC:.*]] = memref.view %[[C]]
// CHECK-NEXT: "rock.live_in"(%[[A]])
// CHECK-NEXT: memref.store %{{.*}}, %[[VA]]
// CHECK-NEXT: "rock.live_in"(%[[B]])
// CHECK-NEXT: memref.store %{{.*}}, %[[VB]]
// CHECK-NEXT: memref.load %[[VA]]
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: memref.load %[[VB]]
// CHECK-NEXT: "rock.live_out"(%[[B]])
// CHECK-NEXT: "rock.live_in"(%[[C]])
// CHECK-NEXT: memref.store %{{.*}}, %[[VC]]
// CHECK-NEXT: memref.load %[[VC]]
// CHECK-NEXT: "rock.live_out"(%[[C]])
// CHECK-NEXT: return
func.func @two_ranges(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %a = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
  %vb = memref.view %b[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
  %vc = memref.view %c[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<512xf32, #gpu.address_space<workgroup>>
  memref.store %x, %va[%i] : memref<256xf32, #gpu.address_space<workgroup>>
  memref.store %x, %vb[%i] : memref<256xf32, #gpu.address_space<workgroup>>
  %1 = memref.load %va[%i] : memref<256xf32, #gpu.address_space<workgroup>>
  %2 = memref.load %vb[%i] : memref<256xf32, #gpu.address_space<workgroup>>
  memref.store %1, %vc[%i] : memref<512xf32, #gpu.address_space<workgroup>>
  %3 = memref.load %vc[%i] : memref<512xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// An op with no memory effects on buffers (gpu.printf) and a buffer that is never
// accessed: no annotations at all.
// CHECK-LABEL: func.func @no_access
// CHECK-NOT: rock.live_in
// CHECK-NOT: rock.live_out
// CHECK: return
func.func @no_access(%i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %a = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
  gpu.printf "%lld\n", %i : index
  return
}

// -----

// Many writes then many reads form one range: from the first write to the last read.
// CHECK-LABEL: func.func @many_writes_many_reads
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: %[[V:.*]] = memref.view %[[A]]
// CHECK-NEXT: "rock.live_in"(%[[A]])
// CHECK-NEXT: memref.store %{{.*}}, %[[V]][%c0]
// CHECK-NEXT: memref.store %{{.*}}, %[[V]][%c1]
// CHECK-NEXT: memref.store %{{.*}}, %[[V]][%c2]
// CHECK-NEXT: memref.load %[[V]][%c0]
// CHECK-NEXT: memref.load %[[V]][%c1]
// CHECK-NEXT: memref.load %[[V]][%c2]
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NOT: rock.live_
func.func @many_writes_many_reads(%x: f32) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %v = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %v[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %v[%c1] : memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %v[%c2] : memref<16xf32, #gpu.address_space<workgroup>>
  %1 = memref.load %v[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
  %2 = memref.load %v[%c1] : memref<16xf32, #gpu.address_space<workgroup>>
  %3 = memref.load %v[%c2] : memref<16xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// A write that overwrites the whole buffer after a read opens a new range of the
// same buffer: W R W R R gives two ranges (a vector of 16 floats at 0 covers all of
// memref<16xf32>).
// CHECK-LABEL: func.func @repeated_pattern
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: %[[V:.*]] = memref.view %[[A]]
// CHECK-NEXT: "rock.live_in"(%[[A]])
// CHECK-NEXT: vector.store %{{.*}}, %[[V]][%c0]
// CHECK-NEXT: %[[R1:.*]] = memref.load
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: vector.broadcast %[[R1]]
// CHECK-NEXT: "rock.live_in"(%[[A]])
// CHECK-NEXT: vector.store
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: return
func.func @repeated_pattern(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %all_x = vector.broadcast %x : f32 to vector<16xf32>
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %v = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  vector.store %all_x, %v[%c0] : memref<16xf32, #gpu.address_space<workgroup>>, vector<16xf32>
  %1 = memref.load %v[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  %all_1 = vector.broadcast %1 : f32 to vector<16xf32>
  vector.store %all_1, %v[%c0] : memref<16xf32, #gpu.address_space<workgroup>>, vector<16xf32>
  %2 = memref.load %v[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  %3 = memref.load %v[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// A write of one element of many does not end the older value: the second
// store may leave element 0 as the first range wrote it, so W R W R R is one range.
// CHECK-LABEL: func.func @partial_write_extends
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: %[[V:.*]] = memref.view %[[A]]
// CHECK-NEXT: "rock.live_in"(%[[A]])
// CHECK-NEXT: memref.store
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: return
func.func @partial_write_extends(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %v = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %v[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
  %1 = memref.load %v[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %1, %v[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  %2 = memref.load %v[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  %3 = memref.load %v[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// Accesses through a chain of views (view -> subview -> expand_shape ->
// collapse_shape -> cast) by vector ops count as accesses of the alloc.
// CHECK-LABEL: func.func @view_chain
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: %[[CAST:.*]] = memref.cast
// CHECK-NEXT: "rock.live_in"(%[[A]])
// CHECK-NEXT: vector.store %{{.*}}, %[[CAST]]
// CHECK-NEXT: vector.transfer_write
// CHECK-NEXT: vector.load
// CHECK-NEXT: vector.transfer_read
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: return
func.func @view_chain(%x: vector<4xf16>, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %f0 = arith.constant 0.0 : f16
  %a = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %v = memref.view %a[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<16x16xf16, #gpu.address_space<workgroup>>
  %s = memref.subview %v[0, 0] [8, 16] [1, 1] : memref<16x16xf16, #gpu.address_space<workgroup>> to memref<8x16xf16, strided<[16, 1]>, #gpu.address_space<workgroup>>
  %e = memref.expand_shape %s [[0], [1, 2]] output_shape [8, 4, 4] : memref<8x16xf16, strided<[16, 1]>, #gpu.address_space<workgroup>> into memref<8x4x4xf16, strided<[16, 4, 1]>, #gpu.address_space<workgroup>>
  %f = memref.collapse_shape %e [[0, 1], [2]] : memref<8x4x4xf16, strided<[16, 4, 1]>, #gpu.address_space<workgroup>> into memref<32x4xf16, strided<[4, 1]>, #gpu.address_space<workgroup>>
  %g = memref.cast %f : memref<32x4xf16, strided<[4, 1]>, #gpu.address_space<workgroup>> to memref<32x4xf16, strided<[?, 1]>, #gpu.address_space<workgroup>>
  vector.store %x, %g[%i, %c0] : memref<32x4xf16, strided<[?, 1]>, #gpu.address_space<workgroup>>, vector<4xf16>
  vector.transfer_write %x, %e[%i, %c0, %c0] {in_bounds = [true]} : vector<4xf16>, memref<8x4x4xf16, strided<[16, 4, 1]>, #gpu.address_space<workgroup>>
  %1 = vector.load %v[%i, %c0] : memref<16x16xf16, #gpu.address_space<workgroup>>, vector<4xf16>
  %2 = vector.transfer_read %s[%i, %c0], %f0 {in_bounds = [true]} : memref<8x16xf16, strided<[16, 1]>, #gpu.address_space<workgroup>>, vector<4xf16>
  return
}

// -----

// A store of element k in iteration k does not overwrite the buffer, so the
// value of earlier iterations stays live across the back edge: the range covers
// the loop. A write inside scf.if may not run: the read after it may see what was
// there before, so the range opens before the scf.if.
// CHECK-LABEL: func.func @nested_regions
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: %[[B:.*]] = "rock.alloc"
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.store
// CHECK-NEXT: memref.load
// CHECK-NEXT: }
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: "rock.live_in"(%[[B]])
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: memref.load
// CHECK-NEXT: "rock.live_out"(%[[B]])
func.func @nested_regions(%x: f32, %i: index, %cond: i1) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  %vb = memref.view %b[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %c4 step %c1 {
    memref.store %x, %va[%k] : memref<16xf32, #gpu.address_space<workgroup>>
    %1 = memref.load %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  }
  scf.if %cond {
    memref.store %x, %vb[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  }
  %2 = memref.load %vb[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// Written before a loop and read inside it: the data must survive every
// iteration, so the live_out moves after the loop.
// CHECK-LABEL: func.func @read_across_iterations
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: memref.store
// CHECK-NEXT: scf.for
// CHECK-NOT: rock.live_out
// CHECK: memref.load
// CHECK-NOT: rock.live_out
// CHECK: }
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: return
func.func @read_across_iterations(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %c4 step %c1 {
    %1 = memref.load %va[%k] : memref<16xf32, #gpu.address_space<workgroup>>
  }
  return
}

// -----

// Written inside a loop and read after it: the live_in moves before the loop.
// A loop body that reads the value written before the loop, then rewrites and
// rereads it, is one range covering the loop (the two overlapping ranges merge).
// CHECK-LABEL: func.func @write_in_loop_read_after
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: %[[B:.*]] = "rock.alloc"
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: memref.load
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: "rock.live_in"(%[[B]])
// CHECK-NEXT: memref.store
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
// CHECK-NEXT: memref.load
// CHECK-NEXT: }
// CHECK-NEXT: "rock.live_out"(%[[B]])
// CHECK-NEXT: return
func.func @write_in_loop_read_after(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  %vb = memref.view %b[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %c4 step %c1 {
    memref.store %x, %va[%k] : memref<16xf32, #gpu.address_space<workgroup>>
  }
  %1 = memref.load %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %1, %vb[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %c4 step %c1 {
    %2 = memref.load %vb[%k] : memref<16xf32, #gpu.address_space<workgroup>>
    memref.store %2, %vb[%k] : memref<16xf32, #gpu.address_space<workgroup>>
    %3 = memref.load %vb[%k] : memref<16xf32, #gpu.address_space<workgroup>>
  }
  return
}

// -----

// Rock ops count through their declared effects: rock.threadwise_read_into reads
// its lds_page_ptrs operand (and writes only its private dest, which is not LDS).
// CHECK-LABEL: func.func @rock_op_effects
// CHECK: %[[P:.*]] = "rock.alloc"() : () -> memref<16xi8
// CHECK: %[[REGS:.*]] = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
// CHECK: "rock.live_in"(%[[P]])
// CHECK-NEXT: memref.store
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: "rock.threadwise_read_into"
// CHECK-NEXT: "rock.live_out"(%[[P]])
// CHECK-NOT: "rock.live_in"(%[[REGS]])
func.func @rock_op_effects(%pages: memref<2x4x1024xf16>, %b: index, %t: index, %first: index, %ptr: i64) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %raw = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  %ptrs = memref.view %raw[%c0][] : memref<16xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
  memref.store %ptr, %ptrs[%t] : memref<2xi64, #gpu.address_space<workgroup>>
  "rock.lds_barrier"() : () -> ()
  "rock.threadwise_read_into"(%pages, %regs, %b, %t, %ptrs, %first) {map = affine_map<(b, t, n, d) -> (b, (t * 16 + n) * 64 + d)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, page_size = 1024, num_pages_per_batch = 4, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>} : (memref<2x4x1024xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// Functions without rock.kernel are left alone.
// CHECK-LABEL: func.func @not_a_kernel
// CHECK-NOT: rock.live_in
// CHECK: return
func.func @not_a_kernel(%x: f32, %i: index) {
  %c0 = arith.constant 0 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  %1 = memref.load %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// The write runs in even iterations only: odd iterations read the value of the
// iteration before, so A is live across the whole loop, and B (written by every
// thread, 64 threads covering its 64 floats) overwrites each iteration, its range
// staying in the body.
// CHECK-LABEL: func.func @write_in_even_iterations
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: %[[B:.*]] = "rock.alloc"
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: scf.for
// CHECK-NOT: rock.live_
// CHECK: scf.if
// CHECK-NEXT: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: %[[Y:.*]] = memref.load
// CHECK-NEXT: "rock.live_in"(%[[B]])
// CHECK-NEXT: memref.store %[[Y]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.load
// CHECK-NEXT: "rock.live_out"(%[[B]])
// CHECK-NEXT: }
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: return
func.func @write_in_even_iterations(%x: f32) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %a = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %vb = memref.view %b[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %c4 step %c1 {
    %parity = arith.remui %k, %c2 : index
    %even = arith.cmpi eq, %parity, %c0 : index
    scf.if %even {
      memref.store %x, %va[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    }
    "rock.lds_barrier"() : () -> ()
    %y = memref.load %va[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %y, %vb[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %vb[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
  }
  return
}

// -----

// Each iteration writes one row (every thread one float of it) and reads the
// other: the row of the iteration before stays live, so the range covers the loop.
// CHECK-LABEL: func.func @write_one_row
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: scf.for
// CHECK-NOT: rock.live_
// CHECK: }
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: return
func.func @write_one_row(%x: f32) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %a = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<2x64xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %c4 step %c1 {
    %row = arith.remui %k, %c2 : index
    memref.store %x, %va[%row, %tid] : memref<2x64xf32, #gpu.address_space<workgroup>>
    "rock.lds_barrier"() : () -> ()
    %other = arith.subi %c1, %row : index
    %y = memref.load %va[%other, %tid] : memref<2x64xf32, #gpu.address_space<workgroup>>
  }
  return
}

// -----

// Page pointers as rock-blockwise-load stages them: two slots stored by the
// threads tid < 2 of the stage. Together they overwrite the buffer, so the range
// opens before the stage in each iteration and ends after the reader.
// CHECK-LABEL: func.func @staged_slots
// CHECK: %[[P:.*]] = "rock.alloc"
// CHECK: scf.for
// CHECK-NEXT: "rock.live_in"(%[[P]])
// CHECK-NEXT: scf.execute_region
// CHECK: memref.load %{{.*}}[%c1]
// CHECK-NEXT: "rock.live_out"(%[[P]])
// CHECK-NEXT: }
func.func @staged_slots(%ptr: i64, %n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %raw = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %ptrs = memref.view %raw[%c0][] : memref<16xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %n step %c1 {
    scf.execute_region no_inline {
      %tid = "rock.workitem_id"() : () -> index
      %mine = arith.cmpi ult, %tid, %c2 : index
      scf.if %mine {
        memref.store %ptr, %ptrs[%tid] : memref<2xi64, #gpu.address_space<workgroup>>
      }
      "rock.lds_barrier"() : () -> ()
      scf.yield
    } {rock.stage = "PagePtrLoad"}
    %p0 = memref.load %ptrs[%c0] : memref<2xi64, #gpu.address_space<workgroup>>
    %p1 = memref.load %ptrs[%c1] : memref<2xi64, #gpu.address_space<workgroup>>
  }
  return
}

// -----

// An overwrite inside a loop that may run zero times overwrites nothing for the
// read after the loop: the second range joins the first, one range from the first
// write to the last read.
// CHECK-LABEL: func.func @overwrite_in_maybe_empty_loop
// CHECK: %[[A:.*]] = "rock.alloc"
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: vector.store
// CHECK-NEXT: memref.load
// CHECK-NEXT: scf.for
// CHECK-NEXT: vector.store
// CHECK-NEXT: }
// CHECK-NEXT: memref.load
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: return
func.func @overwrite_in_maybe_empty_loop(%x: vector<16xf32>, %i: index, %n: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  vector.store %x, %va[%c0] : memref<16xf32, #gpu.address_space<workgroup>>, vector<16xf32>
  %1 = memref.load %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %n step %c1 {
    vector.store %x, %va[%c0] : memref<16xf32, #gpu.address_space<workgroup>>, vector<16xf32>
  }
  %2 = memref.load %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// A buffer whose layout is no strided layout: the overwrite proof leaves its
// writes uncounted (nothing to prove them with), the range is found as usual.
// CHECK-LABEL: func.func @layout_map
// CHECK: %[[A:.*]] = "rock.alloc"()
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: memref.store
// CHECK-NEXT: memref.load
// CHECK-NEXT: "rock.live_out"(%[[A]])
func.func @layout_map(%in: memref<64xf32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %a = "rock.alloc"() : () -> memref<64xf32, affine_map<(d0) -> (d0 floordiv 2)>, #gpu.address_space<workgroup>>
  %x = memref.load %in[%tid] : memref<64xf32>
  memref.store %x, %a[%tid] : memref<64xf32, affine_map<(d0) -> (d0 floordiv 2)>, #gpu.address_space<workgroup>>
  %y = memref.load %a[%tid] : memref<64xf32, affine_map<(d0) -> (d0 floordiv 2)>, #gpu.address_space<workgroup>>
  memref.store %y, %in[%tid] : memref<64xf32>
  return
}

// -----

// extract_strided_metadata's base buffer is the buffer itself: a read through a
// view of it is a read of the buffer, and the range ends after it.
// CHECK-LABEL: func.func @read_through_metadata
// CHECK: %[[A:.*]] = "rock.alloc"()
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: memref.store
// CHECK: %[[R:.*]] = memref.reinterpret_cast
// CHECK-NEXT: memref.load %[[R]]
// CHECK-NEXT: "rock.live_out"(%[[A]])
func.func @read_through_metadata(%x: f32, %i: index) -> f32 attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  %base, %offset, %size, %stride = memref.extract_strided_metadata %va : memref<16xf32, #gpu.address_space<workgroup>> -> memref<f32, #gpu.address_space<workgroup>>, index, index, index
  %r = memref.reinterpret_cast %base to offset: [0], sizes: [16], strides: [1] : memref<f32, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  %y = memref.load %r[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  return %y : f32
}

// -----

// A value carried over the back edge (a tile loaded for the next iteration): A is written
// before the loop and at the end of each iteration, and read at the start of the next. Its
// range runs from the first write to the end of the loop; B lives within an iteration.
// CHECK-LABEL: func.func @carried_over_back_edge
// CHECK: %[[A:.*]] = "rock.alloc"() : () -> memref<256xi8
// CHECK: %[[B:.*]] = "rock.alloc"() : () -> memref<256xi8
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: memref.store
// CHECK: scf.for
// CHECK-NOT: rock.live_{{.*}}(%[[A]])
// CHECK: "rock.live_in"(%[[B]])
// CHECK: "rock.live_out"(%[[B]])
// CHECK-NOT: rock.live_{{.*}}(%[[A]])
// CHECK: }
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK-NEXT: return
func.func @carried_over_back_edge(%in: memref<4x64xf32>, %out: memref<4x64xf32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %vb = memref.view %b[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %w = memref.load %in[%c0, %tid] : memref<4x64xf32>
  memref.store %w, %va[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  "rock.lds_barrier"() : () -> ()
  scf.for %k = %c0 to %c4 step %c1 {
    %y = memref.load %va[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    %x = memref.load %in[%k, %tid] : memref<4x64xf32>
    "rock.lds_barrier"() : () -> ()
    memref.store %x, %vb[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    "rock.lds_barrier"() : () -> ()
    %z = memref.load %vb[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    %s = arith.addf %y, %z : f32
    memref.store %s, %out[%k, %tid] : memref<4x64xf32>
    memref.store %s, %va[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    "rock.lds_barrier"() : () -> ()
  }
  return
}

// -----

// An overwrite under a conditional whose reads are under the same conditional (the next tile's
// page pointers, issued only when there is a next tile): the range stays inside the scf.if.
// CHECK-LABEL: func.func @guarded_overwrite
// CHECK: %[[A:.*]] = "rock.alloc"() : () -> memref<256xi8
// CHECK: scf.for
// CHECK: scf.if
// CHECK: "rock.live_in"(%[[A]])
// CHECK-NEXT: memref.store
// CHECK: memref.load
// CHECK-NEXT: "rock.live_out"(%[[A]])
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @guarded_overwrite(%in: memref<4x64xf32>, %out: memref<4x64xf32>, %more: i1) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %c4 step %c1 {
    scf.if %more {
      %x = memref.load %in[%k, %tid] : memref<4x64xf32>
      memref.store %x, %va[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
      "rock.lds_barrier"() : () -> ()
      %y = memref.load %va[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %y, %out[%k, %tid] : memref<4x64xf32>
      "rock.lds_barrier"() : () -> ()
    }
  }
  return
}

// -----

// Direct-to-LDS loads (rock.global_load_lds): lane l of the 64-lane wave writes 4 bytes at element
// dest_offset + 2 l. Two loads (dest_offset 0 and 128) write all 512 bytes: the second pair is a
// definite overwrite, so the buffer has two live ranges.

// CHECK-LABEL: func.func @direct_loads_overwrite
// CHECK: "rock.live_in"(%[[RAW:.*]])
// CHECK-NEXT: "rock.global_load_lds"
// CHECK-NEXT: "rock.global_load_lds"
// CHECK: memref.load
// CHECK-NEXT: "rock.live_out"(%[[RAW]])
// CHECK: "rock.live_in"(%[[RAW]])
// CHECK-NEXT: "rock.global_load_lds"
// CHECK-NEXT: "rock.global_load_lds"
// CHECK: memref.load
// CHECK-NEXT: "rock.live_out"(%[[RAW]])
func.func @direct_loads_overwrite(%pages: memref<2x8x2048xf16>, %ptr: i64, %out: memref<2xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %true = arith.constant true
  %t = "rock.workitem_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %raw[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<256xf16, #gpu.address_space<workgroup>>
  "rock.global_load_lds"(%pages, %t, %tile, %c0, %true, %ptr) {bytes = 4, page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<2x8x2048xf16>, index, memref<256xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
  "rock.global_load_lds"(%pages, %t, %tile, %c128, %true, %ptr) {bytes = 4, page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<2x8x2048xf16>, index, memref<256xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
  "rock.lds_barrier"() : () -> ()
  %a = memref.load %tile[%t] : memref<256xf16, #gpu.address_space<workgroup>>
  memref.store %a, %out[%c0] : memref<2xf16>
  "rock.lds_barrier"() : () -> ()
  "rock.global_load_lds"(%pages, %t, %tile, %c0, %true, %ptr) {bytes = 4, page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<2x8x2048xf16>, index, memref<256xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
  "rock.global_load_lds"(%pages, %t, %tile, %c128, %true, %ptr) {bytes = 4, page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<2x8x2048xf16>, index, memref<256xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
  "rock.lds_barrier"() : () -> ()
  %b = memref.load %tile[%t] : memref<256xf16, #gpu.address_space<workgroup>>
  memref.store %b, %out[%c1] : memref<2xf16>
  return
}

// -----

// The same with one load per round: 256 of the 512 bytes, no definite overwrite: one range.

// CHECK-LABEL: func.func @direct_loads_half
// CHECK: "rock.live_in"
// CHECK-NOT: "rock.live_in"
// CHECK-NOT: "rock.live_out"
// CHECK: %{{.*}} = memref.load
// CHECK-NOT: "rock.live_in"
// CHECK-NOT: "rock.live_out"
// CHECK: %{{.*}} = memref.load
// CHECK-NEXT: "rock.live_out"
func.func @direct_loads_half(%pages: memref<2x8x2048xf16>, %ptr: i64, %out: memref<2xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %true = arith.constant true
  %t = "rock.workitem_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %raw[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<256xf16, #gpu.address_space<workgroup>>
  "rock.global_load_lds"(%pages, %t, %tile, %c0, %true, %ptr) {bytes = 4, page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<2x8x2048xf16>, index, memref<256xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
  "rock.lds_barrier"() : () -> ()
  %a = memref.load %tile[%t] : memref<256xf16, #gpu.address_space<workgroup>>
  memref.store %a, %out[%c0] : memref<2xf16>
  "rock.lds_barrier"() : () -> ()
  "rock.global_load_lds"(%pages, %t, %tile, %c0, %true, %ptr) {bytes = 4, page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<2x8x2048xf16>, index, memref<256xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
  "rock.lds_barrier"() : () -> ()
  %b = memref.load %tile[%t] : memref<256xf16, #gpu.address_space<workgroup>>
  memref.store %b, %out[%c1] : memref<2xf16>
  return
}
