// copy-kv through the load path to gfx942 ISA: the KV data arrive in 16-byte
// buffer loads from per-page descriptors, without a waterfall loop.
// RUN: pagedir-gen copy-kv --batch 2 --num-heads-kv 2 --seq-len 64 --head-dim 128 --page-size 16 --tile-tokens 32 --layout k --dtype f16 -o %t.k.mlir
// RUN: pagedir-opt %t.k.mlir --rock-blockwise-load --rock-threadwise-lowering --rock-buffer-load --rock-to-gpu -o %t.k6.mlir
// RUN: pagedir-compile %t.k6.mlir --arch gfx942 --emit=asm --report -o %t.k.s 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=ASM < %t.k.s
// RUN: pagedir-gen copy-kv --batch 2 --num-heads-kv 2 --seq-len 64 --head-dim 128 --page-size 16 --tile-tokens 32 --layout v --dtype f16 --seq-lens -o %t.v.mlir
// RUN: pagedir-opt %t.v.mlir --rock-blockwise-load --rock-threadwise-lowering --rock-buffer-load --rock-to-gpu | pagedir-compile --arch gfx942 --emit=asm --report -o %t.v.s 2>&1 | FileCheck %s --check-prefix=REPORT

// REPORT: kernel copy_kv (gfx942)
// REPORT: buffer loads {{ +[0-9]+}} x dwordx4{{$}}
// REPORT: waterfall loads  0

// ASM-LABEL: copy_kv:
// ASM: v_readfirstlane_b32
// ASM: buffer_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}], 0 offen
