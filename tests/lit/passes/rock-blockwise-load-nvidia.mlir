// RUN: pagedir-opt %s --rock-blockwise-load --split-input-file | FileCheck %s

// lds_dma on sm_90: a V-like [32, 128] f16 tile from pages of 16 tokens, 128 threads (4 warps). A warp's
// copy is 32 lanes x 16 bytes = 256 elements, two whole rows of one page: 16 copies dealt to the warps
// in turn (4 each), each lane at its own row and column (its validity and page pointer from its row).
// Then every thread commits its copies as one group, waits for it (cp.async.wait_group 0) and meets
// the others at the barrier. No registers: no GlobalRead / LDSWrite stages.

// CHECK-LABEL: func.func @cp_async_v_tile
// CHECK-NOT: #gpu.address_space<private>
// CHECK: } {rock.stage = "PagePtrLoad"}
// CHECK: scf.execute_region no_inline {
// CHECK:   %[[TID:.*]] = "rock.workitem_id"()
// CHECK:   %[[WARP:.*]] = affine.apply #{{.*}}(%[[TID]])
// CHECK:   %[[LANE:.*]] = affine.apply #{{.*}}(%[[TID]])
// CHECK:   %[[COPY:.*]] = affine.apply #{{.*}}(%[[WARP]])
// CHECK-NEXT: %[[FIRST:.*]] = affine.apply #{{.*}}(%[[COPY]])
// CHECK-NEXT: %[[START:.*]] = affine.apply #{{.*}}(%[[FIRST]], %[[LANE]])
// CHECK:   %[[ROW:.*]] = affine.apply #{{.*}}(%[[START]])
// CHECK:   %[[PTR:.*]] = memref.load %[[PTRS:.*]][%{{.*}}] : memref<2xi64, #gpu.address_space<workgroup>>
// CHECK:   %[[NONNULL:.*]] = arith.cmpi ne, %[[PTR]], %c0_i64
// CHECK:   "rock.global_load_lds"(%{{.*}}, %{{.*}}, %[[TILE:.*]], %[[FIRST]], %[[NONNULL]], %[[PTR]]) {bytes = 16 : i64, {{.*}}page_size = 2048 : i64}
// CHECK-COUNT-3: "rock.global_load_lds"
// CHECK-NEXT:   nvvm.cp.async.commit.group
// CHECK-NEXT:   nvvm.cp.async.wait.group 0
// CHECK-NEXT:   "rock.lds_barrier"()
// CHECK: } {rock.stage = "GlobalToLDS"}
// CHECK-NOT: rocdl.
// CHECK-NOT: rock.threadwise_read_into
func.func @cp_async_v_tile(%table: memref<2x8x1xi64>) attributes {rock.kernel, rock.arch = "sm_90", rock.block_size = 128 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<8192xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<8192xi8, #gpu.address_space<workgroup>> to memref<32x128xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 4)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %table) {map = affine_map<(b, t, n, d) -> (b, (t * 32 + n) * 128 + d)>, block_size = 128, page_size = 2048, index_bounds = array<i64: 2, 4>, lds_dma, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<2x8x2048xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index, memref<2x8x1xi64>) -> ()
  return
}

// -----

// A swizzled tile (16-byte chunks, row r's chunk k at k xor (r mod 8)): each lane copies into its linear LDS
// place the global elements that place holds, the column moved by the same xor (its own inverse).

// CHECK-LABEL: func.func @cp_async_swizzled
// CHECK:   } {rock.stage = "PagePtrLoad"}
// CHECK:   %[[TID:.*]] = "rock.workitem_id"()
// CHECK:   %[[WARP:.*]] = affine.apply #{{.*}}(%[[TID]])
// CHECK:   %[[COPY:.*]] = affine.apply #{{.*}}(%[[WARP]])
// CHECK-NEXT:   %[[FIRST:.*]] = affine.apply #{{.*}}(%[[COPY]])
// CHECK-NEXT:   %[[START:.*]] = affine.apply #{{.*}}(%[[FIRST]], %{{.*}})
// CHECK-NEXT:   %[[ROW:.*]] = affine.apply #{{.*}}(%[[START]])
// CHECK-NEXT:   %[[COLUMN:.*]] = affine.apply #{{.*}}(%[[START]])
// CHECK-NEXT:   %[[FLIP:.*]] = affine.apply #{{.*}}(%[[ROW]])
// CHECK-NEXT:   %[[CHUNK:.*]] = affine.apply #{{.*}}(%[[COLUMN]])
// CHECK-NEXT:   %[[MOVED:.*]] = arith.xori %[[CHUNK]], %[[FLIP]] : index
// CHECK-NEXT:   %[[SWIZZLED:.*]] = affine.apply #{{.*}}(%[[MOVED]], %[[COLUMN]])
// CHECK-NEXT:   affine.apply #{{.*}}(%{{.*}}, %{{.*}}, %[[ROW]], %[[SWIZZLED]])
// CHECK:   "rock.global_load_lds"({{.*}}) {bytes = 16 : i64
// CHECK:   nvvm.cp.async.commit.group
// CHECK-NEXT:   nvvm.cp.async.wait.group 0
// CHECK: } {rock.stage = "GlobalToLDS"}
// CHECK-NOT: rock.threadwise_read_into
func.func @cp_async_swizzled(%table: memref<2x8x1xi64>) attributes {rock.kernel, rock.arch = "sm_90", rock.block_size = 128 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<8192xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<8192xi8, #gpu.address_space<workgroup>> to memref<32x128xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 4)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %table) {map = affine_map<(b, t, n, d) -> (b, (t * 32 + n) * 128 + d)>, block_size = 128, page_size = 2048, index_bounds = array<i64: 2, 4>, lds_dma, lds_swizzle = array<i64: 8, 1, 8, 1>, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<2x8x2048xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index, memref<2x8x1xi64>) -> ()
  return
}
