// math.tanh (the logits soft-cap) has no AMDGPU instruction and llvm.tanh no AMDGPU
// lowering: rock-backend-pipeline expands an f32 tanh, scalar or vector, into
// copysign((1 - e) / (1 + e), x) with e = exp2(-2 log2(e) |x|), the exponential on llvm.exp2.
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-backend-pipeline{arch=gfx942})' | FileCheck %s
// RUN: pagedir-compile %s --arch gfx942 --emit=asm -o - | FileCheck %s --check-prefix=ASM
// An attention kernel with a soft-cap, from the generator to gfx942 and gfx950 ISA.
// RUN: pagedir-gen attention --seq-lens --softcap 30 --arch gfx942 | pagedir-compile - --arch gfx942 --emit=asm -o - | FileCheck %s --check-prefix=ASM
// RUN: pagedir-gen attention --seq-lens --softcap 30 --arch gfx950 | pagedir-compile - --arch gfx950 --emit=asm -o - | FileCheck %s --check-prefix=ASM

// CHECK-LABEL: llvm.func @softcap(
// CHECK: %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: %[[ABS:.*]] = llvm.intr.fabs(%[[X]]) : (f32) -> f32
// CHECK: %[[ARG:.*]] = llvm.fmul %[[ABS]], %{{.*}} : f32
// CHECK: %[[E:.*]] = llvm.call_intrinsic "llvm.exp2.f32"(%[[ARG]]) : (f32) -> f32
// CHECK: %[[NUM:.*]] = llvm.fsub %{{.*}}, %[[E]] : f32
// CHECK: %[[DEN:.*]] = llvm.fadd {{.*}}%[[E]]
// CHECK: %[[Q:.*]] = llvm.fdiv %[[NUM]], %[[DEN]] : f32
// CHECK: llvm.intr.copysign(%[[Q]], %[[X]]) : (f32, f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.exp2.v4f32"
// CHECK: llvm.intr.copysign(%{{.*}}, %{{.*}}) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NOT: tanh

// ASM: v_exp_f32
// ASM-NOT: tanh
// ASM-NOT: __ocml

module attributes {gpu.container_module} {
  gpu.module @softcap_module {
    gpu.func @softcap(%in: memref<256xf32>, %out: memref<256xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %x = memref.load %in[%tid] : memref<256xf32>
      %t = math.tanh %x : f32
      memref.store %t, %out[%tid] : memref<256xf32>
      %c4 = arith.constant 4 : index
      %i = arith.muli %tid, %c4 : index
      %v = vector.load %in[%i] : memref<256xf32>, vector<4xf32>
      %tv = math.tanh %v : vector<4xf32>
      vector.store %tv, %out[%i] : memref<256xf32>, vector<4xf32>
      gpu.return
    }
  }
}
