// User errors: located diagnostics or one-line messages, exit code 1, never a traceback.
// RUN: not pagedir-opt %S/Inputs/malformed.mlir 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not pagedir-opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: printf '\377\376\000garbage' | not pagedir-opt 2>&1 | FileCheck %s --check-prefix=BINARY
// RUN: printf 'func.func @f( {' | not pagedir-opt - 2>&1 | FileCheck %s --check-prefix=STDIN
// RUN: not pagedir-opt --bogus-flag %s 2>&1 | FileCheck %s --check-prefix=FLAG

// MALFORMED: malformed.mlir:3:10: error: use of undeclared SSA value name
// MALFORMED-NOT: Traceback
// MISSING: pagedir-opt: error: could not open input file '{{.*}}does-not-exist.mlir': No such file or directory
// BINARY: pagedir-opt: error: input '<stdin>' is not UTF-8 text (invalid byte at offset 0)
// STDIN: <stdin>:1:14: error: expected non-function type
// FLAG: pagedir-opt: error: unrecognized arguments: --bogus-flag
