// pagedir-gen's kernels checked end to end: the kernel as generated and lowered
// through rock-kernel-pipeline, on shuffled pages, against the reference.
// RUN: pagedir-gen copy-kv --batch 2 --num-heads-kv 2 --seq-len 48 --head-dim 32 --page-size 8 --tile-tokens 16 --layout k | pagedir-run --check - | FileCheck %s --check-prefix=F16
// RUN: pagedir-gen copy-kv --batch 2 --num-heads-kv 2 --seq-len 48 --head-dim 32 --page-size 8 --tile-tokens 16 --layout v | pagedir-run --check - | FileCheck %s --check-prefix=F16
// RUN: pagedir-gen copy-kv --batch 3 --num-heads-kv 2 --seq-len 64 --head-dim 16 --page-size 16 --layout k --seq-lens --dtype bf16 | pagedir-run --check - --seed 3 | FileCheck %s --check-prefix=RAGGED
// RUN: pagedir-gen copy-kv --batch 3 --num-heads-kv 2 --seq-len 64 --head-dim 16 --page-size 16 --layout v --seq-lens --dtype f32 | sed 's/rock.arch = "gfx942", //' | pagedir-run --check - --arch gfx1100 | FileCheck %s --check-prefix=F32
// RUN: pagedir-gen copy-kv --layout v --seq-lens | pagedir-run --check - --no-lower | FileCheck %s --check-prefix=NOLOWER
// RUN: pagedir-gen attention --ragged --num-heads-q 4 --num-heads-kv 2 | pagedir-run --check - | FileCheck %s --check-prefix=ATTN
// RUN: pagedir-gen copy-kv --seq-lens | pagedir-opt --rock-kernel-pipeline=arch=gfx942 | pagedir-run --check - | FileCheck %s --check-prefix=LOWERED
// RUN: pagedir-gen attention --ragged --num-heads-q 4 --num-heads-kv 2 --seq-len-k 128 --num-splits 4 | pagedir-run --check - | FileCheck %s --check-prefix=SPLIT

// F16: @copy_kv: PASS (levels L2 -> L6, seed 0)
// F16-NEXT: L2 as written: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS
// F16-NEXT: L6 after rock-kernel-pipeline: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS

// RAGGED: @copy_kv: PASS (levels L2 -> L6, seed 3)
// RAGGED-NEXT: L2 as written: {{.*}} <= abs tolerance 0.02 (max rel error {{.*}}, not checked): PASS
// RAGGED-NEXT: L6 after rock-kernel-pipeline: {{.*}} <= abs tolerance 0.02 (max rel error {{.*}}, not checked): PASS

// F32: @copy_kv: PASS (levels L2 -> L6, seed 0)
// F32: L6 after rock-kernel-pipeline: max abs error 0 <= abs tolerance 1e-05 (max rel error 0, not checked): PASS

// NOLOWER: @copy_kv: PASS (levels L2, seed 0)
// NOLOWER-NEXT: L2 as written: {{.*}}: PASS
// NOLOWER-NOT: L6

// ATTN: @paged_attention: PASS (levels L0 -> L6, seed 0)
// ATTN-NEXT: L0 as written: max abs error {{.*}} <= abs tolerance 0.02 (max rel error {{.*}}, not checked): PASS
// ATTN-NEXT: L6 after rock-kernel-pipeline: max abs error {{.*}} <= abs tolerance 0.02 (max rel error {{.*}}, not checked): PASS

// A split-KV kernel: the check runs its launch plan, the split kernel then its combine kernel.
// SPLIT: @paged_attention: PASS (levels L0 -> L6, seed 0)
// SPLIT-NEXT: L0 as written: max abs error {{.*}}: PASS
// SPLIT-NEXT: L6 after rock-kernel-pipeline (launches @paged_attention on 16 workgroups, then @paged_attention_combine on [[COMBINE:[0-9]+]] workgroups): max abs error {{.*}} <= abs tolerance 0.02 {{.*}}: PASS

// A kernel already at L6 (its gpu.func block holds the LDS and register buffers after the arguments).
// LOWERED: @copy_kv: PASS (levels L6, seed 0)
// LOWERED-NEXT: L6 as written: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS
