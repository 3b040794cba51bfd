// math.log2 (a split's log-sum-exp, m + log2(l)) becomes llvm.log2, which the AMDGPU backend
// selects to v_log_f32, not a call of the ROCm device library's __ocml_log2_f32: nothing links
// that library, and the call made the kernel an indirect caller (its registers unknown to the
// code object, callee-saved VGPRs and AGPRs kept across each call).
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-backend-pipeline{arch=gfx942})' | FileCheck %s
// The split decode kernel of `make demo`, from the generator to gfx942 ISA.
// RUN: pagedir-gen attention --batch 2 --num-heads-q 16 --num-heads-kv 2 --seq-len-k 512 --head-dim 128 --seq-lens --num-splits 0 --arch gfx942 | pagedir-compile - --arch gfx942 --emit=asm -o - | FileCheck %s --check-prefix=ASM

// CHECK-LABEL: llvm.func @log2(
// CHECK: %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.call_intrinsic "llvm.log2.f32"(%[[X]]) : (f32) -> f32
// CHECK-NOT: ocml

// ASM-LABEL: paged_attention:
// ASM: v_log_f32
// ASM-NOT: __ocml
// ASM: .set paged_attention.has_indirect_call, 0

module attributes {gpu.container_module} {
  gpu.module @log2_module {
    gpu.func @log2(%in: memref<64xf32>, %out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %x = memref.load %in[%tid] : memref<64xf32>
      %l = math.log2 %x : f32
      memref.store %l, %out[%tid] : memref<64xf32>
      gpu.return
    }
  }
}
