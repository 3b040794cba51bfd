// Ops of unknown dialects are errors unless --allow-unregistered-dialect.
// RUN: pagedir-opt %s --allow-unregistered-dialect | FileCheck %s
// RUN: not pagedir-opt %s 2>&1 | FileCheck %s --check-prefix=ERR

// CHECK: "mydialect.op"() : () -> ()
// ERR: unregistered.mlir:8:17: error: operation being parsed with an unregistered dialect
func.func @f() {
  "mydialect.op"() : () -> ()
  return
}
