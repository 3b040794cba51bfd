// A kernel is lowered and compiled for one chip: the arch option when given, else
// its rock.arch; a kernel recording one chip is never lowered or compiled for
// another (an error at the kernel naming both), and a lowering for a chip records
// it as rock.arch on the func.func and the gpu.func.
// RUN: pagedir-gen attention --batch 1 --num-heads-q 2 --num-heads-kv 1 --seq-len-k 32 --head-dim 64 --page-size 16 --arch gfx942 -o %t.gfx942.mlir

// Lowering a gfx942 kernel for gfx1100 stops at the first pass, at the kernel.
// RUN: not pagedir-opt %t.gfx942.mlir --rock-kernel-pipeline=arch=gfx1100 -o %t.out 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not pagedir-opt %t.gfx942.mlir --pass-pipeline='builtin.module(rock-kernel-pipeline{arch=gfx1100})' 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: gfx942.mlir:1:1: error: 'func.func' op @paged_attention is for gfx942 (rock.arch = "gfx942"), not for gfx1100 (arch = "gfx1100")
// MISMATCH-NOT: error:
// Each pass of the pipeline applies the same rule.
// RUN: not pagedir-opt %t.gfx942.mlir --rock-attention-to-gridwise --rock-gridwise-attention-to-blockwise --rock-blockwise-load --rock-annotate-liveness --rock-reuse-lds=arch=gfx950 2>&1 | FileCheck %s --check-prefix=REUSE
// REUSE: error: 'func.func' op @paged_attention is for gfx942 (rock.arch = "gfx942"), not for gfx950 (arch = "gfx950")

// So does pagedir-compile: --arch naming another chip than the kernel's is refused at the kernel.
// RUN: not pagedir-compile %t.gfx942.mlir --arch gfx1100 -o %t.s 2>&1 | FileCheck %s --check-prefix=COMPILE
// COMPILE: gfx942.mlir:1:1: error: 'func.func' op @paged_attention is for gfx942 (rock.arch = "gfx942"), not for gfx1100 (arch = "gfx1100")
// COMPILE-NOT: Traceback
// The same chip written as a full target is the same chip.
// RUN: pagedir-compile %t.gfx942.mlir --arch amdgcn-amd-amdhsa--gfx942:sramecc+:xnack- -o - | FileCheck %s --check-prefix=SAME
// SAME: .amdgcn_target "amdgcn-amd-amdhsa--gfx942

// A kernel without rock.arch takes the pipeline's chip and records it: the
// gpu.func says gfx1100 (with RDNA descriptor flags), pagedir-compile without
// --arch compiles it for gfx1100, and compiling it for gfx942 is an error at the kernel.
// RUN: sed 's/, rock.arch = "gfx942"//' %t.gfx942.mlir > %t.bare.mlir
// RUN: pagedir-opt %t.bare.mlir --rock-kernel-pipeline=arch=gfx1100 -o %t.rdna.mlir
// RUN: FileCheck %s --check-prefix=RECORDED < %t.rdna.mlir
// RECORDED: gpu.func @paged_attention
// RECORDED-SAME: rock.arch = "gfx1100"
// RECORDED: arith.constant 822243328 : i32
// RUN: pagedir-compile %t.rdna.mlir -o - | FileCheck %s --check-prefix=OWN
// OWN: .amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
// RUN: not pagedir-compile %t.rdna.mlir --arch gfx942 -o %t.s 2>&1 | FileCheck %s --check-prefix=LOWERED
// LOWERED: rdna.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'gpu.func' op @paged_attention is for gfx1100 (rock.arch = "gfx1100"), not for gfx942 (arch = "gfx942")

// Neither an option nor rock.arch: an error at the kernel, not a guess.
// RUN: not pagedir-opt %t.bare.mlir --rock-kernel-pipeline 2>&1 | FileCheck %s --check-prefix=NOCHIP
// RUN: not pagedir-compile %t.bare.mlir -o %t.s 2>&1 | FileCheck %s --check-prefix=NOCHIP
// NOCHIP: bare.mlir:1:1: error: 'func.func' op @paged_attention names no chip: set rock.arch on the kernel or give the arch option (known chips: gfx908,
