// fp8 -> f32 (fp8 KV caches): rock-backend-pipeline turns arith.extf into the chip's packed
// conversions (convert-arith-to-amdgpu: amdgpu.ext_packed_fp8, 4 fp8 in, 2 f32 out each) and
// the slices it cuts into shuffles. 16 fp8 values arrive in one 16-byte load.
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-backend-pipeline{arch=gfx942})' | FileCheck %s
// RUN: pagedir-compile %s --arch gfx942 --emit=asm -o - | FileCheck %s --check-prefix=ASM
// RUN: sed 's/f8E4M3FNUZ/f8E4M3FN/g' %s | pagedir-compile - --arch gfx950 --emit=asm -o - | FileCheck %s --check-prefix=ASM
// RUN: sed 's/f8E4M3FNUZ/f8E5M2FNUZ/g' %s | pagedir-compile - --arch gfx942 --emit=asm -o - | FileCheck %s --check-prefix=BF8
// RUN: sed 's/f8E4M3FNUZ/f8E5M2/g' %s | pagedir-compile - --arch gfx950 --emit=asm -o - | FileCheck %s --check-prefix=BF8

// CHECK-LABEL: llvm.func @widen(
// CHECK: %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<16xi8>
// CHECK-COUNT-8: rocdl.cvt.pk.f32.fp8
// CHECK-NOT: vector.
// CHECK-NOT: amdgpu.

// ASM: global_load_dwordx4
// ASM-COUNT-4: v_cvt_pk_f32_fp8_e32
// ASM-NOT: global_load_{{ubyte|dword }}

// BF8: global_load_dwordx4
// BF8-COUNT-4: v_cvt_pk_f32_bf8_e32

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @widen(%in: memref<256xf8E4M3FNUZ>, %out: memref<1024xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %i = arith.muli %tid, %c16 : index
      %v = vector.load %in[%i] : memref<256xf8E4M3FNUZ>, vector<16xf8E4M3FNUZ>
      %w = arith.extf %v : vector<16xf8E4M3FNUZ> to vector<16xf32>
      vector.store %w, %out[%i] : memref<1024xf32>, vector<16xf32>
      gpu.return
    }
  }
}
