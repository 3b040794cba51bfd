// --help documents the two modes, the npz naming, the check and the exit codes.
// RUN: pagedir-run --help | FileCheck %s

// CHECK: usage: pagedir-run [-h] [--entry NAME] [--inputs IN.npz] [--outputs OUT.npz]
// CHECK: --entry NAME
// CHECK: --inputs IN.npz
// CHECK: --outputs OUT.npz
// CHECK: --seed N           seed of the random data, 0 <= N < 2**32 (default 0)
// CHECK: --check
// CHECK: --arch CHIP
// CHECK: --no-lower
// CHECK: inputs and outputs:
// CHECK: named arg0, arg1, ...
// CHECK: checking:
// CHECK: rock-kernel-pipeline
// CHECK: f32 1e-5, f16/bf16 2e-2
// CHECK: relative error
// CHECK-NEXT: is printed but not checked
// CHECK: NaN against a number fails
// CHECK: memory limit of
// CHECK-NEXT: 256 MiB
// CHECK: A failed run leaves --outputs as it was.
// CHECK: exit codes:
// CHECK: PAGEDIR_TRACEBACK=1
