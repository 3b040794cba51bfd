// Mistakes in pass flags and pipelines are errors with exit code 1, never tracebacks.
// RUN: not pagedir-opt %s --rock-buffer-load='bogus=1' 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not pagedir-opt %s --rock-backend-pipeline='index-bitwidth=many arch=gfx942' 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not pagedir-opt %s --no-such-pass 2>&1 | FileCheck %s --check-prefix=FLAG
// RUN: not pagedir-opt %s --rock-buffer 2>&1 | FileCheck %s --check-prefix=ABBREV
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(rock-verify' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(func.func(rock-verify))' 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(cse)' --rock-verify 2>&1 | FileCheck %s --check-prefix=BOTH
// Upstream pass flags: a bad option value or name is one line, an unknown pass gets the closest name.
// RUN: not pagedir-opt %s --canonicalize='max-iterations=x' 2>&1 | FileCheck %s --check-prefix=UPSTREAM-VALUE
// RUN: not pagedir-opt %s --canonicalize='max-iterations=x' 2>&1 | wc -l | FileCheck %s --check-prefix=ONE-LINE
// RUN: not pagedir-opt %s --canonicalize{bogus=1} 2>&1 | FileCheck %s --check-prefix=UPSTREAM-OPTION
// RUN: not pagedir-opt %s --canonicalize{bogus=1} 2>&1 | wc -l | FileCheck %s --check-prefix=ONE-LINE
// RUN: not pagedir-opt %s --canonicalise --cse 2>&1 | FileCheck %s --check-prefix=SUGGEST
// RUN: not pagedir-opt %s --rock-reuse-ld 2>&1 | FileCheck %s --check-prefix=SUGGEST-ROCK
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(convert-gpu-to-rocdl)' 2>&1 | FileCheck %s --check-prefix=NOT-NESTED
// A pipeline the inliner parses only when it runs (it printed the error and went on, exit code 0):
// RUN: not pagedir-opt %s --inline='default-pipeline=bogus' 2>&1 | FileCheck %s --check-prefix=LAZY
// RUN: not pagedir-opt %s --pass-pipeline='builtin.module(inline{default-pipeline=canonicalize{bogus=1}})' 2>&1 | FileCheck %s --check-prefix=LAZY-OPTION
// RUN: not pagedir-opt %s --inline='default-pipeline={cse,no-such-pass}' 2>&1 | FileCheck %s --check-prefix=LAZY-SECOND
// RUN: pagedir-opt %s --inline='default-pipeline={canonicalize{max-iterations=3}}' 2>&1 | FileCheck %s --check-prefix=LAZY-OK

// OPTION: pagedir-opt: error: 'rock-buffer-load' has no option 'bogus' (options: arch)
// OPTION-NOT: Traceback
// VALUE: pagedir-opt: error: 'rock-backend-pipeline' option 'index-bitwidth' expects int, got 'many'
// UNKNOWN: error: 'no-such-pass' does not refer to a registered pass or pass pipeline
// FLAG: pagedir-opt: error: unrecognized arguments: --no-such-pass
// ABBREV: pagedir-opt: error: unrecognized arguments: --rock-buffer
// SYNTAX: pagedir-opt: error: <pass-pipeline>:1:27: expected ')' in 'builtin.module(rock-verify'
// NESTED: pagedir-opt: error: pagedir passes run on builtin.module, not nested under 'func.func'
// BOTH: pagedir-opt: error: --pass-pipeline cannot be combined with individual pass flags

// UPSTREAM-VALUE: pagedir-opt: error: invalid options for 'canonicalize' ('max-iterations=x'): for the --max-iterations option: 'x' value invalid for long argument
// UPSTREAM-OPTION: pagedir-opt: error: invalid options for 'canonicalize' ('bogus=1'): no such option bogus
// ONE-LINE: {{^ *}}1{{$}}
// SUGGEST: pagedir-opt: error: unrecognized arguments: --canonicalise (did you mean '--canonicalize'?)
// SUGGEST-ROCK: pagedir-opt: error: unrecognized arguments: --rock-reuse-ld (did you mean '--rock-reuse-lds'?)
// As in mlir-opt, only flags nest implicitly: a pipeline names the op.
// NOT-NESTED: pagedir-opt: error: cannot add 'convert-gpu-to-rocdl': Can't add pass 'ConvertGpuOpsToROCDLOps' restricted to 'gpu.module' {{.*}} did you intend to nest?
// LAZY: pagedir-opt: error: invalid options for 'inline' ('default-pipeline=bogus'): 'bogus' does not refer to a registered pass or pass pipeline
// LAZY-OPTION: pagedir-opt: error: invalid options for 'inline' ('default-pipeline=canonicalize{bogus=1}'): no such option bogus
// LAZY-SECOND: pagedir-opt: error: invalid options for 'inline' ('default-pipeline=cse,no-such-pass'): 'no-such-pass' does not refer
// LAZY-OK-NOT: error
// LAZY-OK: func.func @f()
func.func @f() {
  return
}
