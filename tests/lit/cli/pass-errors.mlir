// Mistakes in pass flags and pipelines are errors with exit code 1, never tracebacks.
// RUN: not pagedir-opt %s --rock-buffer-load='bogus=1' 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not pagedir-opt %s --rock-backend-pipeline='index-bitwidth=many arch=gfx942' 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not pagedir-opt %s --no-such-pass 2>&1 | FileCheck %s --check-prefix=FLAG
// RUN: not pagedir-opt %s --rock-buffer 2>&1 | FileCheck %s --check-prefix=ABBREV
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(rock-verify' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(func.func(rock-verify))' 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(cse)' --rock-verify 2>&1 | FileCheck %s --check-prefix=BOTH

// OPTION: pagedir-opt: error: 'rock-buffer-load' has no option 'bogus' (options: arch)
// OPTION-NOT: Traceback
// VALUE: pagedir-opt: error: 'rock-backend-pipeline' option 'index-bitwidth' expects int, got 'many'
// UNKNOWN: error: 'no-such-pass' does not refer to a registered pass or pass pipeline
// FLAG: pagedir-opt: error: unrecognized arguments: --no-such-pass
// ABBREV: pagedir-opt: error: unrecognized arguments: --rock-buffer
// SYNTAX: pagedir-opt: error: <pass-pipeline>:1:27: expected ')' in 'builtin.module(rock-verify'
// NESTED: pagedir-opt: error: pagedir passes run on builtin.module, not nested under 'func.func'
// BOTH: pagedir-opt: error: --pass-pipeline cannot be combined with individual pass flags
func.func @f() {
  return
}
