// rock-backend-pipeline from pagedir-opt: gpu.func kernels to the LLVM dialect with
// ROCDL, bare-pointer arguments, 64-bit indices, and the chip's wave size recorded.
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-backend-pipeline{arch=gfx942})' | FileCheck %s
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-backend-pipeline{arch=gfx1100})' | FileCheck %s --check-prefix=RDNA
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(rock-backend-pipeline)' 2>&1 | FileCheck %s --check-prefix=NOARCH
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(rock-backend-pipeline{arch=gfx1})' 2>&1 | FileCheck %s --check-prefix=BADARCH

// CHECK: gpu.module @copy_module
// CHECK-LABEL: llvm.func @copy(
// CHECK-SAME: %[[IN:[a-z0-9]+]]: !llvm.ptr, %[[OUT:[a-z0-9]+]]: !llvm.ptr)
// CHECK-SAME: rocdl.kernel
// CHECK-SAME: rock.wave_size = 64 : i64
// The bare pointer is the descriptor's aligned pointer.
// CHECK: llvm.insertvalue %[[IN]], %{{.*}}[1]
// CHECK: rocdl.workitem.id.x
// CHECK-NEXT: llvm.sext {{.*}} : i32 to i64
// CHECK: %[[SRC:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %[[V:.*]] = llvm.load %[[SRC]] {{.*}} : !llvm.ptr -> vector<4xf32>
// CHECK: llvm.store %[[V]], %{{.*}} : vector<4xf32>, !llvm.ptr
// CHECK-NOT: gpu.func
// CHECK-NOT: memref.

// RDNA: rock.wave_size = 32 : i64

// NOARCH: needs arch=<chip> (e.g. arch=gfx942)
// BADARCH: unknown chip 'gfx1'; known chips: gfx908

module attributes {gpu.container_module} {
  gpu.module @copy_module {
    gpu.func @copy(%in: memref<256xf32>, %out: memref<256xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %i = arith.muli %tid, %c4 : index
      %v = vector.load %in[%i] : memref<256xf32>, vector<4xf32>
      vector.store %v, %out[%i] : memref<256xf32>, vector<4xf32>
      gpu.return
    }
  }
}
