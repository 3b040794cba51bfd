// RUN: pagedir-opt %s --rock-pipeline --split-input-file | FileCheck %s
// RUN: pagedir-opt %s --rock-pipeline='depth=1' --split-input-file | FileCheck %s --check-prefix=DEPTH1

// A loop over tiles [lb, ub) of 16 x 64 f16 (one page each) as rock-blockwise-load leaves it:
// PagePtrLoad (the tile's page pointer into LDS), GlobalRead (the tile into registers %regs),
// LDSWrite (%regs into the LDS tile), then the math reading the tile. With depth 2 the pass
// issues tile t + 1 during tile t, and runs the last tile in a copy of the loop that issues nothing.

// CHECK-LABEL: func.func @sum_tiles
// CHECK: %[[REGS:.*]] = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
// CHECK: %[[PTRS:.*]] = memref.view
// CHECK: %[[LB:.*]] = arith.index_cast
// CHECK: %[[UB:.*]] = arith.index_cast
// The prologue: tile lb's pointers and registers, only when the loop runs at all.
// CHECK: %[[ANY:.*]] = arith.cmpi ult, %[[LB]], %[[UB]] : index
// CHECK: %[[UB_1:.*]] = arith.subi %[[UB]], %{{.*}} : index
// CHECK: %[[LAST:.*]] = arith.maxsi %[[LB]], %[[UB_1]] : index
// CHECK: scf.if %[[ANY]] {
// CHECK:   memref.load %arg0
// CHECK:   memref.store %{{.*}}, %[[PTRS]]
// CHECK:   } {rock.stage = "PagePtrLoad"}
// CHECK:   "rock.threadwise_read_into"(%{{.*}}, %[[REGS]], %{{.*}}, %[[LB]], %[[PTRS]], %{{.*}})
// CHECK:   } {rock.stage = "GlobalRead"}
// CHECK: }
// Every thread is done reading tile lb's pointer before the first iteration writes tile lb + 1's.
// CHECK-NEXT: "rock.lds_barrier"()
// The loop over every tile but the last issues tile t + 1 on every path.
// CHECK-NEXT: %[[MAIN:.*]] = scf.for %[[T:.*]] = %[[LB]] to %[[LAST]] step %{{.*}} iter_args(%{{.*}} = %{{.*}})
// CHECK:   %[[NEXT:.*]] = arith.addi %[[T]], %{{.*}} : index
// First the next tile's page pointer ...
// CHECK:   scf.execute_region no_inline {
// CHECK:     affine.apply #{{.*}}(%{{.*}}, %[[NEXT]])
// CHECK:     memref.store %{{.*}}, %[[PTRS]]
// CHECK:   } {rock.stage = "PagePtrLoad"}
// ... then tile t's registers into LDS ...
// CHECK:   vector.load %[[REGS]]
// CHECK:   } {rock.stage = "LDSWrite"}
// ... and at once tile t + 1's reads into the same registers, in flight during tile t's math.
// CHECK:   "rock.threadwise_read_into"(%{{.*}}, %[[REGS]], %{{.*}}, %[[NEXT]], %[[PTRS]], %{{.*}})
// CHECK:   } {rock.stage = "GlobalRead"}
// CHECK:   memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<16x64xf16, #gpu.address_space<workgroup>>
// CHECK:   arith.addf
// CHECK-NOT: rock.stage
// CHECK: } {rock.pipelined = 2 : i64}
// The last tile: its registers into LDS and its math, nothing issued.
// CHECK-NEXT: %[[SUM:.*]] = scf.for %{{.*}} = %[[LAST]] to %[[UB]] step %{{.*}} iter_args(%{{.*}} = %[[MAIN]])
// CHECK-NOT: rock.stage = "PagePtrLoad"
// CHECK-NOT: rock.stage = "GlobalRead"
// CHECK:   } {rock.stage = "LDSWrite"}
// CHECK-NOT: rock.stage
// CHECK: } {rock.pipelined = 2 : i64}
// CHECK-NEXT: memref.store %[[SUM]]

// The option overrides the loop's depth: 1 leaves the loop as it is.
// DEPTH1-LABEL: func.func @sum_tiles
// DEPTH1-NOT: scf.if
// DEPTH1: scf.for
// DEPTH1: rock.stage = "PagePtrLoad"
// DEPTH1: rock.stage = "GlobalRead"
// DEPTH1: rock.stage = "LDSWrite"
// DEPTH1: } {rock.pipeline_depth = 2 : i64}

#map = affine_map<(d0, d1) -> (d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, (d1 * 16 + d2) * 64 + d3)>
#map3 = affine_map<(d0, d1) -> (d0 * 256 + d1)>
#map4 = affine_map<(d0) -> ((d0 mod 8) * 8)>
#map5 = affine_map<(d0) -> (d0 floordiv 8)>
func.func @sum_tiles(%arg0: memref<2x8x1xi64>, %arg1: memref<2xi32>, %arg2: memref<2xi32>, %arg3: memref<2x256xf32>) attributes {rock.arch = "gfx942", rock.block_size = 256 : i64, rock.grid_size = 2 : i64, rock.kernel} {
  %0 = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
  %1 = "rock.alloc"() : () -> memref<8xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %view = memref.view %1[%c0][] : memref<8xi8, #gpu.address_space<workgroup>> to memref<1xi64, #gpu.address_space<workgroup>>
  %2 = "rock.deref"(%arg0) : (memref<2x8x1xi64>) -> memref<2x8x1024xf16>
  %3 = "rock.workgroup_id"() : () -> index
  %4 = "rock.workitem_id"() : () -> index
  %c0_0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %5 = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %view_1 = memref.view %5[%c0_0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<16x64xf16, #gpu.address_space<workgroup>>
  %6 = memref.load %arg1[%3] : memref<2xi32>
  %7 = memref.load %arg2[%3] : memref<2xi32>
  %8 = arith.index_cast %6 : i32 to index
  %9 = arith.index_cast %7 : i32 to index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.000000e+00 : f32
  %10 = arith.divui %4, %c64 : index
  %11 = arith.remui %4, %c64 : index
  %12 = scf.for %arg4 = %8 to %9 step %c1 iter_args(%arg5 = %cst) -> (f32) {
    scf.execute_region no_inline {
      %16 = "rock.workitem_id"() : () -> index
      %17 = affine.apply #map(%3, %arg4)
      %18 = affine.apply #map1(%3, %arg4)
      %c1_2 = arith.constant 1 : index
      %19 = arith.cmpi ult, %16, %c1_2 : index
      scf.if %19 {
        %20 = arith.addi %17, %16 : index
        %c8 = arith.constant 8 : index
        %21 = arith.cmpi ult, %20, %c8 : index
        %22 = scf.if %21 -> (i64) {
          %c0_3 = arith.constant 0 : index
          %23 = memref.load %arg0[%18, %20, %c0_3] : memref<2x8x1xi64>
          scf.yield %23 : i64
        } else {
          %c0_i64 = arith.constant 0 : i64
          scf.yield %c0_i64 : i64
        }
        memref.store %22, %view[%16] : memref<1xi64, #gpu.address_space<workgroup>>
      }
      "rock.lds_barrier"() : () -> ()
      scf.yield
    } {rock.stage = "PagePtrLoad"}
    scf.execute_region no_inline {
      %16 = affine.apply #map(%3, %arg4)
      "rock.threadwise_read_into"(%2, %0, %3, %arg4, %view, %16) {block_size = 256 : i64, map = #map2, num_pages_per_batch = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>, page_size = 1024 : i64, tile_shape = array<i64: 16, 64>, vector_dim = 1 : i64, vector_len = 8 : i64} : (memref<2x8x1024xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, index, memref<1xi64, #gpu.address_space<workgroup>>, index) -> ()
      scf.yield
    } {rock.stage = "GlobalRead"}
    scf.execute_region no_inline {
      %16 = "rock.workitem_id"() : () -> index
      %c0_2 = arith.constant 0 : index
      %c1_3 = arith.constant 1 : index
      %c1_4 = arith.constant 1 : index
      scf.for %arg6 = %c0_2 to %c1_3 step %c1_4 {
        %17 = affine.apply #map3(%arg6, %16)
        %c128 = arith.constant 128 : index
        %18 = arith.cmpi ult, %17, %c128 : index
        scf.if %18 {
          %19 = affine.apply #map4(%17)
          %20 = affine.apply #map5(%17)
          %c0_5 = arith.constant 0 : index
          %21 = vector.load %0[%arg6, %c0_5] : memref<1x8xf16, #gpu.address_space<private>>, vector<8xf16>
          vector.store %21, %view_1[%20, %19] : memref<16x64xf16, #gpu.address_space<workgroup>>, vector<8xf16>
        }
      }
      "rock.lds_barrier"() : () -> ()
      scf.yield
    } {rock.stage = "LDSWrite"}
    %13 = memref.load %view_1[%10, %11] : memref<16x64xf16, #gpu.address_space<workgroup>>
    %14 = arith.extf %13 : f16 to f32
    %15 = arith.addf %arg5, %14 : f32
    "rock.lds_barrier"() : () -> ()
    scf.yield %15 : f32
  } {rock.pipeline_depth = 2 : i64}
  memref.store %12, %arg3[%3, %4] : memref<2x256xf32>
  return
}

// -----

// Depth 1 on the loop: nothing moves.
// CHECK-LABEL: func.func @depth_one
// CHECK: scf.for
// CHECK-NEXT: scf.execute_region no_inline
// CHECK: rock.stage = "PagePtrLoad"
// CHECK: rock.stage = "GlobalRead"
// CHECK: rock.stage = "LDSWrite"
// CHECK: } {rock.pipeline_depth = 1 : i64}
// DEPTH1-LABEL: func.func @depth_one

#map = affine_map<(d0, d1) -> (d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, (d1 * 16 + d2) * 64 + d3)>
#map3 = affine_map<(d0, d1) -> (d0 * 256 + d1)>
#map4 = affine_map<(d0) -> ((d0 mod 8) * 8)>
#map5 = affine_map<(d0) -> (d0 floordiv 8)>
func.func @depth_one(%arg0: memref<2x8x1xi64>, %arg1: memref<2xi32>, %arg2: memref<2xi32>, %arg3: memref<2x256xf32>) attributes {rock.arch = "gfx942", rock.block_size = 256 : i64, rock.grid_size = 2 : i64, rock.kernel} {
  %0 = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
  %1 = "rock.alloc"() : () -> memref<8xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %view = memref.view %1[%c0][] : memref<8xi8, #gpu.address_space<workgroup>> to memref<1xi64, #gpu.address_space<workgroup>>
  %2 = "rock.deref"(%arg0) : (memref<2x8x1xi64>) -> memref<2x8x1024xf16>
  %3 = "rock.workgroup_id"() : () -> index
  %4 = "rock.workitem_id"() : () -> index
  %c0_0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %5 = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %view_1 = memref.view %5[%c0_0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<16x64xf16, #gpu.address_space<workgroup>>
  %6 = memref.load %arg1[%3] : memref<2xi32>
  %7 = memref.load %arg2[%3] : memref<2xi32>
  %8 = arith.index_cast %6 : i32 to index
  %9 = arith.index_cast %7 : i32 to index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.000000e+00 : f32
  %10 = arith.divui %4, %c64 : index
  %11 = arith.remui %4, %c64 : index
  %12 = scf.for %arg4 = %8 to %9 step %c1 iter_args(%arg5 = %cst) -> (f32) {
    scf.execute_region no_inline {
      %16 = "rock.workitem_id"() : () -> index
      %17 = affine.apply #map(%3, %arg4)
      %18 = affine.apply #map1(%3, %arg4)
      %c1_2 = arith.constant 1 : index
      %19 = arith.cmpi ult, %16, %c1_2 : index
      scf.if %19 {
        %20 = arith.addi %17, %16 : index
        %c8 = arith.constant 8 : index
        %21 = arith.cmpi ult, %20, %c8 : index
        %22 = scf.if %21 -> (i64) {
          %c0_3 = arith.constant 0 : index
          %23 = memref.load %arg0[%18, %20, %c0_3] : memref<2x8x1xi64>
          scf.yield %23 : i64
        } else {
          %c0_i64 = arith.constant 0 : i64
          scf.yield %c0_i64 : i64
        }
        memref.store %22, %view[%16] : memref<1xi64, #gpu.address_space<workgroup>>
      }
      "rock.lds_barrier"() : () -> ()
      scf.yield
    } {rock.stage = "PagePtrLoad"}
    scf.execute_region no_inline {
      %16 = affine.apply #map(%3, %arg4)
      "rock.threadwise_read_into"(%2, %0, %3, %arg4, %view, %16) {block_size = 256 : i64, map = #map2, num_pages_per_batch = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>, page_size = 1024 : i64, tile_shape = array<i64: 16, 64>, vector_dim = 1 : i64, vector_len = 8 : i64} : (memref<2x8x1024xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, index, memref<1xi64, #gpu.address_space<workgroup>>, index) -> ()
      scf.yield
    } {rock.stage = "GlobalRead"}
    scf.execute_region no_inline {
      %16 = "rock.workitem_id"() : () -> index
      %c0_2 = arith.constant 0 : index
      %c1_3 = arith.constant 1 : index
      %c1_4 = arith.constant 1 : index
      scf.for %arg6 = %c0_2 to %c1_3 step %c1_4 {
        %17 = affine.apply #map3(%arg6, %16)
        %c128 = arith.constant 128 : index
        %18 = arith.cmpi ult, %17, %c128 : index
        scf.if %18 {
          %19 = affine.apply #map4(%17)
          %20 = affine.apply #map5(%17)
          %c0_5 = arith.constant 0 : index
          %21 = vector.load %0[%arg6, %c0_5] : memref<1x8xf16, #gpu.address_space<private>>, vector<8xf16>
          vector.store %21, %view_1[%20, %19] : memref<16x64xf16, #gpu.address_space<workgroup>>, vector<8xf16>
        }
      }
      "rock.lds_barrier"() : () -> ()
      scf.yield
    } {rock.stage = "LDSWrite"}
    %13 = memref.load %view_1[%10, %11] : memref<16x64xf16, #gpu.address_space<workgroup>>
    %14 = arith.extf %13 : f16 to f32
    %15 = arith.addf %arg5, %14 : f32
    "rock.lds_barrier"() : () -> ()
    scf.yield %15 : f32
  } {rock.pipeline_depth = 1 : i64}
  memref.store %12, %arg3[%3, %4] : memref<2x256xf32>
  return
}

// -----

// Direct-to-LDS tiles (GlobalToLDS stages: cp.async copies, their wait and a barrier): tiles %a and %b
// are each other's second buffer. Each wait is split off into an LDSWait stage that stays in place; b's
// copies move up to right after a's wait, a's for tile t + 1 go right after b's wait, a's for tile lb
// into a prologue, and the last tile runs in a copy of the loop without a's copies.

// CHECK-LABEL: func.func @direct_tiles
// CHECK: %[[A:.*]] = memref.view %{{.*}} to memref<16x64xf16
// CHECK: %[[B:.*]] = memref.view %{{.*}} to memref<16x64xf16
// CHECK: scf.if %{{.*}} {
// CHECK:   "rock.global_load_lds"(%{{.*}}, %{{.*}}, %[[A]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:   nvvm.cp.async.commit.group
// CHECK-NOT: nvvm.cp.async.wait.group
// CHECK:   } {rock.stage = "GlobalToLDS"}
// CHECK: %[[MAIN:.*]] = scf.for %[[T:.*]] = %{{.*}} to %[[LAST:.*]] step
// CHECK:   %[[NEXT:.*]] = arith.addi %[[T]], %{{.*}} : index
// CHECK:   nvvm.cp.async.wait.group 0
// CHECK:   } {rock.stage = "LDSWait"}
// CHECK:   "rock.global_load_lds"(%{{.*}}, %{{.*}}, %[[B]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:   } {rock.stage = "GlobalToLDS"}
// CHECK:   memref.load %[[A]]
// CHECK:   nvvm.cp.async.wait.group 0
// CHECK:   } {rock.stage = "LDSWait"}
// CHECK:   affine.apply #{{.*}}(%[[NEXT]])
// CHECK:   "rock.global_load_lds"(%{{.*}}, %{{.*}}, %[[A]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:   } {rock.stage = "GlobalToLDS"}
// CHECK:   memref.load %[[B]]
// CHECK: } {rock.pipelined = 2 : i64}
// CHECK-NEXT: scf.for %{{.*}} = %[[LAST]] to
// CHECK:   } {rock.stage = "LDSWait"}
// CHECK:   "rock.global_load_lds"(%{{.*}}, %{{.*}}, %[[B]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:   } {rock.stage = "LDSWait"}
// CHECK-NOT: rock.global_load_lds
// CHECK: } {rock.pipelined = 2 : i64}

// DEPTH1-LABEL: func.func @direct_tiles
// DEPTH1-NOT: rock.stage = "LDSWait"
// DEPTH1: } {rock.pipeline_depth = 2 : i64}

#offset = affine_map<(d0) -> (d0 * 1024)>
func.func @direct_tiles(%src: memref<8192xf16>, %lb: index, %ub: index, %ptr: i64, %out: memref<256xf32>) attributes {rock.arch = "sm_90", rock.block_size = 128 : i64, rock.grid_size = 1 : i64, rock.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.constant true
  %raw_a = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %a = memref.view %raw_a[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<16x64xf16, #gpu.address_space<workgroup>>
  %raw_b = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %b = memref.view %raw_b[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<16x64xf16, #gpu.address_space<workgroup>>
  %tid = "rock.workitem_id"() : () -> index
  %cst = arith.constant 0.000000e+00 : f32
  %sum = scf.for %t = %lb to %ub step %c1 iter_args(%acc = %cst) -> (f32) {
    scf.execute_region no_inline {
      %off = affine.apply #offset(%t)
      "rock.global_load_lds"(%src, %off, %a, %c0, %true, %ptr) {page_size = 8192 : i64, bytes = 16 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<8192xf16>, index, memref<16x64xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
      nvvm.cp.async.commit.group
      nvvm.cp.async.wait.group 0
      "rock.lds_barrier"() : () -> ()
      scf.yield
    } {rock.stage = "GlobalToLDS"}
    %x = memref.load %a[%c0, %tid] : memref<16x64xf16, #gpu.address_space<workgroup>>
    scf.execute_region no_inline {
      %off = affine.apply #offset(%t)
      "rock.global_load_lds"(%src, %off, %b, %c0, %true, %ptr) {page_size = 8192 : i64, bytes = 16 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<8192xf16>, index, memref<16x64xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
      nvvm.cp.async.commit.group
      nvvm.cp.async.wait.group 0
      "rock.lds_barrier"() : () -> ()
      scf.yield
    } {rock.stage = "GlobalToLDS"}
    %y = memref.load %b[%c0, %tid] : memref<16x64xf16, #gpu.address_space<workgroup>>
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %s = arith.addf %xf, %yf : f32
    %r = arith.addf %acc, %s : f32
    scf.yield %r : f32
  } {rock.pipeline_depth = 2 : i64}
  memref.store %sum, %out[%tid] : memref<256xf32>
  return
}
