// Each chunk is processed on its own; outputs are joined with the marker and
// diagnostics give line numbers of this file.
// RUN: not pagedir-opt %s --split-input-file 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR --input-file %t.err
// Without splitting the whole file is one module, and its error stops everything.
// RUN: not pagedir-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE
// Another marker.
// RUN: not pagedir-opt %s --split-input-file='// =====' 2>&1 | FileCheck %s --check-prefix=OTHER

// CHECK-LABEL: func.func @first
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: // -----
// CHECK-NEXT: module {
// CHECK-LABEL: func.func @third
// CHECK-NOT: @second
func.func @first() {
  return
}

// -----

func.func @second() {
  // ERR: split-input-file.mlir:[[# @LINE + 1]]:8: error: 'rock.alloc' op the size of rock.alloc should be greater than zero, got 0 bytes
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
  return
}

// -----

// ERR: split-input-file.mlir:[[# @LINE + 1]]:23: error: expected non-function type
func.func @bad_syntax( {
  return
}

// -----

func.func @third() {
  return
}

// WHOLE: split-input-file.mlir:33:23: error: expected non-function type
// WHOLE-NOT: rock.alloc

// OTHER: split-input-file.mlir:33:23: error: expected non-function type
