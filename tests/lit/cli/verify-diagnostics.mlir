// Expected diagnostics: every designator, plain and regex text, notes.
// RUN: pagedir-opt %s --split-input-file --verify-diagnostics
// A mismatch is reported like mlir-opt does, and fails.
// RUN: not pagedir-opt %S/Inputs/diagnostics-mismatch.mlir --split-input-file --verify-diagnostics 2>&1 | FileCheck %s
// Without --verify-diagnostics the errors are plain errors.
// RUN: not pagedir-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=PLAIN

// PLAIN: verify-diagnostics.mlir:[[# @LINE + 3]]:8: error: 'rock.alloc' op the size of rock.alloc should be greater than zero
func.func @offset_below() {
  // expected-error @+1 {{should be greater than zero, got 0 bytes}}
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @offset_above() {
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
  // expected-error @-1 {{'rock.alloc' op the size}}
  return
}

// -----

func.func @above_and_below() {
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
  // expected-error @above {{got 0 bytes}}
  // expected-error @below {{requires a workgroup or private memory space, got memref<0xi8>}}
  // expected-error @below {{got 0 bytes}}
  %c = "rock.alloc"() : () -> memref<0xi8>
  return
}

// -----

func.func @regex() {
  // expected-error-re @+1 {{got {{[0-9]+}} bytes for memref<{{.*}}xi8, #gpu.address_space<{{workgroup|private}}>>}}
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<private>>
  return
}

// -----

// Parse errors are diagnostics too; the verifier note "see current operation" is not checked.
func.func @parse_error() {
  // expected-error @+1 {{expected base type 'builtin.memref' but got 'builtin.integer'}}
  %b = "rock.alloc"() : () -> i32
  return
}

// -----

func.func @same_line() {
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>> // expected-error {{greater than zero}}
  return
}

// CHECK: diagnostics-mismatch.mlir:2:8: error: unexpected error: 'rock.alloc' op the size of rock.alloc should be greater than zero
// CHECK: diagnostics-mismatch.mlir:10:8: error: unexpected error: 'rock.alloc' op the size
// CHECK: diagnostics-mismatch.mlir:9:6: error: expected error "this text is not in the message" was not produced
// CHECK: diagnostics-mismatch.mlir:18:8: error: unexpected error: 'rock.alloc' op the size
// CHECK: diagnostics-mismatch.mlir:17:6: error: expected warning "greater than zero" was not produced
