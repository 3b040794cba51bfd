// The README's decode kernel (f16, D = 128, pages of 16 tokens, GQA 8) from L0 to
// gfx942 ISA: KV data only in 16-byte buffer loads from per-page descriptors with
// a uniform (readfirstlane) pointer, no waterfall loop, no spills, no scratch, and
// the softmax exponentials as v_exp_f32 rather than library calls.
// RUN: pagedir-gen attention --batch 2 --num-heads-q 16 --num-heads-kv 2 --seq-len-k 512 --head-dim 128 --page-size 16 --dtype f16 --ragged -o %t.mlir
// RUN: pagedir-compile %t.mlir --arch gfx942 --emit=asm --report -o %t.s --dump-dir %t.dump 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=ASM < %t.s
// RUN: ls %t.dump | FileCheck %s --check-prefix=DUMP
// The same kernel split as `make demo` splits it: the report covers the split kernel and its combine kernel.
// RUN: pagedir-gen attention --batch 2 --num-heads-q 16 --num-heads-kv 2 --seq-len-k 512 --head-dim 128 --page-size 16 --dtype f16 --ragged --num-splits 0 -o %t.split.mlir
// RUN: pagedir-compile %t.split.mlir --arch gfx942 --emit=asm --report -o %t.split.s 2>&1 | FileCheck %s --check-prefix=SPLIT

// REPORT: kernel paged_attention (gfx942)
// REPORT: spills           0 VGPR, 0 SGPR
// REPORT: scratch          0 bytes
// REPORT: workgroup size   256
// REPORT: buffer loads     {{[0-9]+}} x dwordx4{{$}}
// REPORT: waterfall loads  0

// ASM-LABEL: paged_attention:
// ASM: v_readfirstlane_b32
// ASM: buffer_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}], 0 offen
// ASM: v_exp_f32
// ASM-NOT: s_swappc_b64
// ASM-NOT: buffer_load_dword{{ |x2|x3}}

// DUMP: rock-attention-to-gridwise
// DUMP: rock-gridwise-attention-to-blockwise
// DUMP: rock-to-gpu

// SPLIT: kernel paged_attention (gfx942)
// SPLIT: spills           0 VGPR, 0 SGPR
// SPLIT: buffer loads     {{[0-9]+}} x dwordx4{{$}}
// SPLIT: waterfall loads  0
// SPLIT: kernel paged_attention_combine (gfx942)
// SPLIT: spills           0 VGPR, 0 SGPR
// SPLIT: scratch          0 bytes
