// rock-kernel-pipeline takes the L0 function to a gpu.func kernel (L6) with the
// same arguments, its launch configuration, pooled LDS, buffer loads per page, the
// products on gfx942's matrix cores (4 waves of 64) and no rock op left.
// RUN: pagedir-gen attention --batch 2 --num-heads-q 8 --num-heads-kv 2 --seq-len-q 1 --seq-len-k 64 --head-dim 64 --page-size 16 --ragged -o %t.mlir
// RUN: pagedir-opt %t.mlir --rock-kernel-pipeline='arch=gfx942' | FileCheck %s
// RUN: pagedir-gen attention --batch 2 --num-heads-q 8 --num-heads-kv 2 --seq-len-q 1 --seq-len-k 64 --head-dim 64 --page-size 16 --ragged --arch gfx1100 -o %t.rdna.mlir
// RUN: pagedir-opt %t.rdna.mlir --pass-pipeline='builtin.module(rock-kernel-pipeline{arch=gfx1100})' | FileCheck %s --check-prefix=RDNA

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @paged_attention_module
// CHECK: gpu.func @paged_attention(%[[Q:[^:]+]]: memref<2x8x1x64xf16>, %[[KT:[^:]+]]: memref<2x8x1xi64>, %[[VT:[^:]+]]: memref<2x8x1xi64>, %[[LENS:[^:]+]]: memref<2xi32>, %[[OUT:[^:]+]]: memref<2x8x1x64xf16>)
// CHECK-SAME: workgroup(%{{[^ ]+}} : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>>
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>
// CHECK: memref.load %[[LENS]]
// rock-pipeline's prologue: the first tile's K and V reads (each wave reads its page pointers from the
// table itself, no barrier between them and the loads), then one barrier before the loop.
// CHECK: memref.load %[[KT]]
// CHECK-NOT: gpu.barrier
// CHECK: rocdl.make.buffer.rsrc %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : <1> to <8>
// CHECK: rocdl.raw.ptr.buffer.load %{{.*}} : vector<4xi32>
// CHECK: memref.load %[[VT]]
// CHECK-NOT: gpu.barrier
// CHECK: rocdl.raw.ptr.buffer.load
// CHECK: gpu.barrier
// CHECK: scf.for
// Iteration t: K of tile t stored to LDS, then K of tile t + 1 requested before the scores of tile t;
// V of tile t stored, then V of tile t + 1 requested before the output update.
// CHECK: gpu.barrier
// CHECK: memref.load %[[KT]]
// CHECK-NOT: gpu.barrier
// CHECK: rocdl.raw.ptr.buffer.load %{{.*}} : vector<4xi32>
// CHECK: amdgpu.mfma 16x16x16
// CHECK: math.exp2
// CHECK: gpu.barrier
// CHECK: memref.load %[[VT]]
// CHECK-NOT: gpu.barrier
// CHECK: rocdl.raw.ptr.buffer.load
// CHECK: math.exp2
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK-NOT: rock.
// CHECK: gpu.return

// RDNA: gpu.func @paged_attention
// RDNA: arith.constant 822243328 : i32
