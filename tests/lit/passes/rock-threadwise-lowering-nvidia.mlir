// RUN: pagedir-opt %s --rock-threadwise-lowering | FileCheck %s

// A per-wave paged read on NVIDIA (no scalar unit): the warp's first lane is the warp index times
// 32 as it is, with no readfirstlane (nothing to keep in scalar registers); the rows' pointers are
// read from the table at the warp's pages, and each load is valid where its page is live.

// CHECK-LABEL: func.func @paged_read_per_warp
// CHECK-SAME: (%[[TABLE:.*]]: memref<2x4x1xi64>, %[[B:.*]]: index, %[[T:.*]]: index)
// CHECK-NOT: rocdl
// CHECK: %[[ENTRY_TID:.*]] = "rock.workitem_id"()
// CHECK: %[[WARP:.*]] = affine.apply #{{.*}}(%[[ENTRY_TID]])
// CHECK: %[[FIRST_LANE:.*]] = arith.muli %[[WARP]], %c32
// CHECK: affine.apply #{{.*}}(%c0{{.*}}, %[[FIRST_LANE]])
// CHECK: %[[PTR0:.*]] = memref.load %[[TABLE]][%[[B]], %{{.*}}, %c0{{.*}}] : memref<2x4x1xi64>
// CHECK: %[[PTR1:.*]] = memref.load %[[TABLE]][%[[B]], %{{.*}}, %c0{{.*}}] : memref<2x4x1xi64>
// CHECK: "rock.global_load"(%{{.*}}, %{{.*}}, %{{.*}}, %[[PTR0]])
// CHECK: "rock.global_load"(%{{.*}}, %{{.*}}, %{{.*}}, %[[PTR1]])
// CHECK-NOT: rocdl
func.func @paged_read_per_warp(%table: memref<2x4x1xi64>, %b: index, %t: index) attributes {rock.kernel, rock.arch = "sm_90", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x4x1xi64>) -> memref<2x4x1024xf16>
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %t) {map = affine_map<(b, t, n, d) -> (b, (t * 16 + n) * 64 + d)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, page_size = 1024, num_pages_per_batch = 4, wave_size = 32, operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>} : (memref<2x4x1024xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index) -> ()
  return
}
