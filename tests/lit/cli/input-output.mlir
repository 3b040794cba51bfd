// Input from a file or stdin, output to stdout or -o, several top-level ops, print flags.
// RUN: pagedir-opt %s | FileCheck %s
// RUN: pagedir-opt - < %s | FileCheck %s
// RUN: cat %s | pagedir-opt | FileCheck %s
// RUN: pagedir-opt %s -o %t && FileCheck %s --input-file %t
// RUN: pagedir-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: pagedir-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUG
// RUN: not pagedir-opt %s -o %t.missing-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=NO-OUTPUT

// Two top-level functions are wrapped into one module, as mlir-opt does.
// CHECK: module {
// CHECK-LABEL: func.func @first
// CHECK: "rock.lds_barrier"() : () -> ()
// CHECK-LABEL: func.func @second
// CHECK: arith.addi
func.func @first() {
  "rock.lds_barrier"() : () -> ()
  return
}

func.func @second(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  return %0 : i32
}

// GENERIC: "func.func"() <{function_type = () -> (), sym_name = "first"}>
// GENERIC: "func.return"() : () -> ()

// Locations are those of this file.
// DEBUG: loc("{{.*}}input-output.mlir":17:3)

// NO-OUTPUT: pagedir-opt: error: could not write '{{.*}}out.mlir': No such file or directory
