// A register-heavy kernel: eight 32x32 MFMA accumulators (8 x 16 f32 per lane) live
// across a loop need over 128 VGPRs, which leaves room for only 3 waves per SIMD
// on gfx942 (512 / 136 after rounding to 8): the report names VGPRs as the limit,
// and its VGPR count is the one in the kernel descriptor (the assembly comes first
// on stdout, the report follows on stderr).
// RUN: pagedir-compile %s --arch gfx942 -o - --report 2>&1 | FileCheck %s

// CHECK: .amdhsa_next_free_vgpr [[VGPRS:1[3-6][0-9]]]
// CHECK-LABEL: kernel mfma_chain (gfx942)
// CHECK-NEXT: VGPRs            [[VGPRS]]
// CHECK:      spills           0 VGPR, 0 SGPR
// CHECK:      occupancy        3 waves/SIMD (limits: waves 8, vgprs 3, sgprs 8, lds 8, workgroup 8)

module attributes {gpu.container_module} {
  gpu.module @mfma_chain_module {
    gpu.func @mfma_chain(%a: memref<64xvector<4xf16>>, %out: memref<64x32xvector<16xf32>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %av = memref.load %a[%tid] : memref<64xvector<4xf16>>
      %f0 = arith.constant 0.0 : f32
      %z0 = vector.broadcast %f0 : f32 to vector<16xf32>
      %f1 = arith.constant 1.0 : f32
      %z1 = vector.broadcast %f1 : f32 to vector<16xf32>
      %f2 = arith.constant 2.0 : f32
      %z2 = vector.broadcast %f2 : f32 to vector<16xf32>
      %f3 = arith.constant 3.0 : f32
      %z3 = vector.broadcast %f3 : f32 to vector<16xf32>
      %f4 = arith.constant 4.0 : f32
      %z4 = vector.broadcast %f4 : f32 to vector<16xf32>
      %f5 = arith.constant 5.0 : f32
      %z5 = vector.broadcast %f5 : f32 to vector<16xf32>
      %f6 = arith.constant 6.0 : f32
      %z6 = vector.broadcast %f6 : f32 to vector<16xf32>
      %f7 = arith.constant 7.0 : f32
      %z7 = vector.broadcast %f7 : f32 to vector<16xf32>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c0i = arith.constant 0 : i32
      %r:8 = scf.for %i = %c0 to %c32 step %c1 iter_args(%x0 = %z0, %x1 = %z1, %x2 = %z2, %x3 = %z3, %x4 = %z4, %x5 = %z5, %x6 = %z6, %x7 = %z7) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
        %ii = arith.addi %tid, %i : index
        %bv = memref.load %a[%ii] : memref<64xvector<4xf16>>
        %y0 = rocdl.mfma.f32.32x32x8f16 %av, %bv, %x0, %c0i, %c0i, %c0i : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
        %y1 = rocdl.mfma.f32.32x32x8f16 %av, %bv, %x1, %c0i, %c0i, %c0i : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
        %y2 = rocdl.mfma.f32.32x32x8f16 %av, %bv, %x2, %c0i, %c0i, %c0i : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
        %y3 = rocdl.mfma.f32.32x32x8f16 %av, %bv, %x3, %c0i, %c0i, %c0i : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
        %y4 = rocdl.mfma.f32.32x32x8f16 %av, %bv, %x4, %c0i, %c0i, %c0i : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
        %y5 = rocdl.mfma.f32.32x32x8f16 %av, %bv, %x5, %c0i, %c0i, %c0i : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
        %y6 = rocdl.mfma.f32.32x32x8f16 %av, %bv, %x6, %c0i, %c0i, %c0i : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
        %y7 = rocdl.mfma.f32.32x32x8f16 %av, %bv, %x7, %c0i, %c0i, %c0i : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
        scf.yield %y0, %y1, %y2, %y3, %y4, %y5, %y6, %y7 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
      }
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %c7 = arith.constant 7 : index
      memref.store %r#0, %out[%tid, %c0] : memref<64x32xvector<16xf32>>
      memref.store %r#1, %out[%tid, %c1] : memref<64x32xvector<16xf32>>
      memref.store %r#2, %out[%tid, %c2] : memref<64x32xvector<16xf32>>
      memref.store %r#3, %out[%tid, %c3] : memref<64x32xvector<16xf32>>
      memref.store %r#4, %out[%tid, %c4] : memref<64x32xvector<16xf32>>
      memref.store %r#5, %out[%tid, %c5] : memref<64x32xvector<16xf32>>
      memref.store %r#6, %out[%tid, %c6] : memref<64x32xvector<16xf32>>
      memref.store %r#7, %out[%tid, %c7] : memref<64x32xvector<16xf32>>
      gpu.return
    }
  }
}
