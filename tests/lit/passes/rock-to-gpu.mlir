// RUN: pagedir-opt %s --rock-to-gpu | FileCheck %s
// A kernel without rock.arch lowered for a chip records it on the gpu.func.
// RUN: sed 's/rock.kernel, rock.arch = "gfx942"/rock.kernel/' %s | pagedir-opt --rock-to-gpu=arch=gfx1100 | FileCheck %s --check-prefix=RECORD
// RECORD: gpu.func @copy
// RECORD-SAME: rock.arch = "gfx1100"

// The kernel keeps its arguments; LDS buffers become workgroup attributions,
// registers private ones; ids, barriers and returns become gpu ops; liveness
// markers and the unused deref view disappear.

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @copy_module {
// CHECK: gpu.func @copy(%[[TABLE:.*]]: memref<2x4x1xi64>, %[[OUT:.*]]: memref<64xf32>)
// CHECK-SAME: workgroup(%[[LDS:.*]] : memref<256xi8, #gpu.address_space<workgroup>>)
// CHECK-SAME: private(%[[REGS:.*]] : memref<1x4xf32, #gpu.address_space<private>>)
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 2, 1, 1>
// CHECK-SAME: rock.arch = "gfx942", rock.block_size = 64 : i64, rock.check = "copy_kv", rock.grid_size = 2 : i64
// CHECK-NOT: rock.kernel
// CHECK:   %[[VIEW:.*]] = memref.view %[[LDS]]
// CHECK:   %[[TID:.*]] = gpu.thread_id x
// CHECK:   %[[BID:.*]] = gpu.block_id x
// CHECK:   memref.store %{{.*}}, %[[VIEW]][%[[TID]]]
// CHECK:   gpu.barrier
// CHECK:   memref.load %[[REGS]]
// CHECK:   memref.store %{{.*}}, %[[OUT]][%[[BID]]]
// CHECK:   gpu.return
// CHECK-NOT: rock.
// CHECK-NOT: func.func
func.func @copy(%table: memref<2x4x1xi64>, %out: memref<64xf32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 2 : i64, rock.check = "copy_kv"} {
  %pages = "rock.deref"(%table) : (memref<2x4x1xi64>) -> memref<2x4x16xf32>
  %lds = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %regs = "rock.alloc"() : () -> memref<1x4xf32, #gpu.address_space<private>>
  %c0 = arith.constant 0 : index
  %view = memref.view %lds[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %tid = "rock.workitem_id"() : () -> index
  %bid = "rock.workgroup_id"() : () -> index
  %one = arith.constant 1.0 : f32
  "rock.live_in"(%lds) : (memref<256xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %one, %view[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  "rock.lds_barrier"() : () -> ()
  "rock.live_out"(%lds) : (memref<256xi8, #gpu.address_space<workgroup>>) -> ()
  %x = memref.load %regs[%c0, %c0] : memref<1x4xf32, #gpu.address_space<private>>
  memref.store %x, %out[%bid] : memref<64xf32>
  return
}

// -----

// A block-table view left without uses by rock-buffer-load disappears; the pool and the table
// stay kernel arguments.
// CHECK-LABEL: gpu.func @view_dropped
// CHECK-SAME: (%{{.*}}: memref<4x16x2x64xf16>, %{{.*}}: memref<1x4xi32>)
// CHECK-NOT: rock.block_table_view
// CHECK: gpu.return
func.func @view_dropped(%pool: memref<4x16x2x64xf16>, %table: memref<1x4xi32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x2x64xf16>, memref<1x4xi32>) -> memref<1x8x1024xf16>
  return
}

// -----

// A kernel for every batch size: its grid is the formula rock.grid_map of the argument sizes,
// so the gpu.func has no known_grid_size and carries the formula for the launch.
// CHECK-LABEL: gpu.func @dynamic_grid
// CHECK-SAME: (%{{.*}}: memref<?x16x2x64xf16>, %{{.*}}: memref<?x?xi32>) kernel
// CHECK-SAME: attributes {known_block_size = array<i32: 64, 1, 1>, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_map = #{{map[0-9]*}}, rock.grid_sizes = array<i64: 1, 0>}
func.func @dynamic_grid(%pool: memref<?x16x2x64xf16>, %table: memref<?x?xi32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_map = affine_map<(d0) -> (d0 * 2)>, rock.grid_sizes = array<i64: 1, 0>} {
  return
}
