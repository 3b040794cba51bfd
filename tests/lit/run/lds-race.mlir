// Threads exchange values through LDS. With the barrier between the store and
// the load, the kernel runs as written and lowered with the same results; without
// it the race names both ops and --check fails with exit code 1.
// RUN: not pagedir-run --check %s 2>&1 | FileCheck %s
// RUN: pagedir-run --check %s --entry rotate | FileCheck %s --check-prefix=GOOD

// CHECK: @rotate: PASS (levels input -> L6, seed 0)
// CHECK-NEXT: input as written: ran; the reference of the lowered kernel
// CHECK-NEXT: L6 after rock-kernel-pipeline: max abs error 0 <= abs tolerance 1e-05 (max rel error 0, not checked): PASS
// GOOD: @rotate: PASS
// GOOD-NOT: rotate_racy
func.func @rotate(%in: memref<64xf32>, %out: memref<64xf32>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %raw = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %lds = memref.view %raw[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %x = memref.load %in[%tid] : memref<64xf32>
  memref.store %x, %lds[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  "rock.lds_barrier"() : () -> ()
  %next = affine.apply affine_map<(t) -> ((t + 1) mod 64)>(%tid)
  %y = memref.load %lds[%next] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %y, %out[%tid] : memref<64xf32>
  return
}

func.func @rotate_racy(%in: memref<64xf32>, %out: memref<64xf32>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %raw = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %lds = memref.view %raw[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %x = memref.load %in[%tid] : memref<64xf32>
  memref.store %x, %lds[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  %next = affine.apply affine_map<(t) -> ((t + 1) mod 64)>(%tid)
  // CHECK: lds-race.mlir:[[# @LINE + 2]]:8: error: LDS race in workgroup 0: memref.load in thread 0 reads byte 4 of LDS buffer rock.alloc of 256 bytes ({{.*}}) that thread 1 wrote with memref.store at {{.*}}lds-race.mlir:[[# @LINE - 2]]:3 since the last barrier
  // CHECK: lds-race.mlir:[[# @LINE + 1]]:8: error: LDS race in workgroup 0: memref.load in thread 0 reads byte 4 of workgroup attribution 0 of 256 bytes that thread 1 wrote with memref.store at {{.*}}lds-race.mlir:[[# @LINE - 3]]:3 since the last barrier
  %y = memref.load %lds[%next] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %y, %out[%tid] : memref<64xf32>
  return
}
// CHECK: @rotate_racy: FAIL (levels input -> L6, seed 0)
// CHECK-NEXT: input as written: FAIL: interpreter error at {{.*}}lds-race.mlir:38:8
// CHECK-NEXT: L6 after rock-kernel-pipeline: FAIL: interpreter error at {{.*}}lds-race.mlir:38:8
// CHECK-NOT: Traceback
