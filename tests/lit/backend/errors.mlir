// User errors of pagedir-compile: a message (located when it concerns the IR), exit code 1, no traceback.

// RUN: not pagedir-compile %S/Inputs/paged-load-gfx942.mlir --arch gfx999 -o %t 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: error: unknown chip 'gfx999'; known chips: {{.*}}gfx90a, gfx942, gfx950, {{.*}}gfx1100, {{.*}}gfx1201
// CHIP-NOT: Traceback

// RUN: not pagedir-compile %S/Inputs/paged-load-gfx942.mlir -o %t 2>&1 | FileCheck %s --check-prefix=NOARCH
// NOARCH: paged-load-gfx942.mlir:3:5: error: 'gpu.func' op @paged_load names no chip: set rock.arch on the kernel or give the arch option (known chips:

// RUN: not pagedir-compile %S/Inputs/not-a-kernel.mlir --arch gfx942 -o %t 2>&1 | FileCheck %s --check-prefix=NOKERNEL
// NOKERNEL: not-a-kernel.mlir:1:1: error: input has no GPU kernel: expected a func.func with rock.kernel or a gpu.module holding a gpu.func kernel

// RUN: env PAGEDIR_MLIR_TRANSLATE=/nonexistent not pagedir-compile %S/Inputs/paged-load-gfx942.mlir --arch gfx942 -o %t 2>&1 | FileCheck %s --check-prefix=TRANSLATE
// TRANSLATE: error: PAGEDIR_MLIR_TRANSLATE=/nonexistent is not an executable mlir-translate
// TRANSLATE-NOT: Traceback

// A kernel tiled for 64-lane waves cannot run on wave32 gfx1100; the error points at the kernel.
// RUN: not pagedir-compile %S/Inputs/wave64-kernel.mlir --arch gfx1100 -o %t 2>&1 | FileCheck %s --check-prefix=WAVE
// WAVE: wave64-kernel.mlir:3:5: error: gpu.func @tiled assumes rock.wave_size = 64 but gfx1100 runs waves of 32 lanes
// RUN: pagedir-compile %S/Inputs/wave64-kernel.mlir --arch gfx942 -o %t

// A kernel built for one chip is not compiled for another.
// RUN: sed 's/rock.wave_size = 64/rock.arch = "amdgcn-amd-amdhsa:gfx942"/' %S/Inputs/wave64-kernel.mlir > %t.arch.mlir
// RUN: not pagedir-compile %t.arch.mlir --arch gfx950 -o %t 2>&1 | FileCheck %s --check-prefix=ARCH
// ARCH: arch.mlir:3:5: error: 'gpu.func' op @tiled is for gfx942 (rock.arch = "amdgcn-amd-amdhsa:gfx942"), not for gfx950 (arch = "gfx950")
// Without --arch the kernel's own rock.arch is used.
// RUN: pagedir-compile %t.arch.mlir -o - | FileCheck %s --check-prefix=OWNARCH
// OWNARCH: .amdgcn_target "amdgcn-amd-amdhsa--gfx942"

// A linalg payload is raised to a kernel first; its function's rock.arch decides the chip like a
// kernel's does, and one without rock.arch or --arch is the rule's error at the function.
// RUN: pagedir-gen linalg-attention --arch gfx950 --head-dim 32 -o %t.payload.mlir
// RUN: pagedir-compile %t.payload.mlir --no-cache -o - | FileCheck %s --check-prefix=PAYLOAD
// PAYLOAD: .amdgcn_target "amdgcn-amd-amdhsa--gfx950
// RUN: sed 's/rock.arch = "gfx950", //' %t.payload.mlir > %t.payload-noarch.mlir
// RUN: not pagedir-compile %t.payload-noarch.mlir --no-cache -o %t 2>&1 | FileCheck %s --check-prefix=PAYLOAD-NOARCH
// PAYLOAD-NOARCH: payload-noarch.mlir:1:1: error: 'func.func' op @attention names no chip: set rock.arch on the kernel or give the arch option (known chips:
// PAYLOAD-NOARCH-NOT: Traceback
// A payload that is not attention is left as written; the error says why, where the raise stopped.
// RUN: not pagedir-compile %S/Inputs/not-attention.mlir --no-cache -o %t 2>&1 | FileCheck %s --check-prefix=NOTATTENTION
// NOTATTENTION: not-attention.mlir:38:11: error: not raised to rock.attention: the softmax's subtraction iterates as [parallel, parallel, parallel, reduction], expected [parallel, parallel, parallel, parallel]

// RUN: not pagedir-compile %t.does-not-exist.mlir --arch gfx942 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: error: could not open input file '{{.*}}does-not-exist.mlir': No such file or directory

// RUN: echo "gpu.module @m {" | not pagedir-compile - --arch gfx942 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error:
