// rock-backend-pipeline from pagedir-opt: gpu.func kernels to the LLVM dialect with
// ROCDL, bare-pointer arguments, 64-bit indices (on CDNA, in the gpu.module of a kernel asking for
// waves with a software-pipelined loop, index arithmetic computed in 32 bits where its range provably
// fits them: a thread's element, not a block id's byte offset), and the chip's wave size recorded.
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
// CHECK-NEXT: llvm.mul %{{.*}} : i64
// CHECK: %[[SRC:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %[[V:.*]] = llvm.load %[[SRC]] {{.*}} : !llvm.ptr -> vector<4xf32>
// CHECK: llvm.store %[[V]], %{{.*}} : vector<4xf32>, !llvm.ptr
// CHECK-NOT: gpu.func
// CHECK-NOT: memref.

// A pipelined kernel asking for waves: tid * 4 < 256 multiplied in 32 bits, extended for the address;
// a block id read from memory times the block's 8192 elements may pass 2^32: the product stays 64-bit.
// CHECK: gpu.module @pipelined_module
// CHECK-LABEL: llvm.func @block_offset(
// CHECK: rocdl.workitem.id.x
// CHECK-NEXT: llvm.sext {{.*}} : i32 to i64
// CHECK-NEXT: %[[TID:.*]] = llvm.trunc %{{.*}} : i64 to i32
// CHECK-NEXT: %[[I:.*]] = llvm.mul %[[TID]], %{{.*}} : i32
// CHECK-NEXT: llvm.zext %[[I]] : i32 to i64
// CHECK: %[[ID:.*]] = llvm.zext %{{.*}} : i32 to i64
// CHECK: %[[OFF:.*]] = llvm.mul %[[ID]], %{{.*}} : i64
// CHECK: llvm.getelementptr {{.*}}[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f16

// RDNA: rock.wave_size = 32 : i64
// RDNA keeps 64-bit index arithmetic (TargetFamily.narrows_indices): tid * 4 multiplied in 64 bits.
// RDNA-LABEL: llvm.func @block_offset(
// RDNA: %[[TID:.*]] = llvm.sext %{{.*}} : i32 to i64
// RDNA-NEXT: llvm.mul %[[TID]], %{{.*}} : i64

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
  gpu.module @pipelined_module {
    gpu.func @block_offset(%pool: memref<4294975488xf16>, %ids: memref<4xi32>, %out: memref<256xf16>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, rock.lds_occupancy} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c8192 = arith.constant 8192 : index
      %tid = gpu.thread_id x
      %i = arith.muli %tid, %c4 : index
      scf.for %t = %c0 to %c4 step %c1 {
        %id = memref.load %ids[%t] : memref<4xi32>
        %block = arith.index_castui %id : i32 to index
        %first = arith.muli %block, %c8192 : index
        %x = memref.load %pool[%first] : memref<4294975488xf16>
        memref.store %x, %out[%i] : memref<256xf16>
      } {rock.pipelined = 2 : i64}
      gpu.return
    }
  }
}
