// Every upstream pass of the bindings is a flag, as in mlir-opt: options as =OPTS
// or {OPTS}, op-specific passes nested on their op, in order with pagedir passes.
// RUN: pagedir-opt %s --canonicalize --cse | FileCheck %s --check-prefix=FOLD
// RUN: pagedir-opt %s --canonicalize='max-iterations=3' --cse --dump-pass-pipeline 2>&1 -o /dev/null | FileCheck %s --check-prefix=QUOTED
// RUN: pagedir-opt %s --canonicalize{max-iterations=3} --cse --dump-pass-pipeline 2>&1 -o /dev/null | FileCheck %s --check-prefix=QUOTED
// RUN: pagedir-opt %s --promote-buffers-to-stack | FileCheck %s --check-prefix=NESTED
// RUN: pagedir-opt %s --promote-buffers-to-stack --affine-loop-invariant-code-motion --cse --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=NESTED-DUMP
// RUN: pagedir-opt %s --rock-annotate-liveness --canonicalize --rock-reuse-lds | FileCheck %s --check-prefix=MIXED
// RUN: pagedir-opt %s --rock-annotate-liveness --canonicalize --rock-reuse-lds --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=MIXED-DUMP
// RUN: pagedir-opt %s --convert-gpu-to-rocdl='chipset=gfx942' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPU-DUMP

// QUOTED: Pass Manager with 2 passes:
// QUOTED-NEXT: builtin.module(canonicalize{{{.*}}max-iterations=3 {{.*}}},cse)

// NESTED-DUMP: Pass Manager with 2 passes:
// NESTED-DUMP-NEXT: builtin.module(func.func(promote-buffers-to-stack{{{.*}}},affine-loop-invariant-code-motion),cse)

// MIXED-DUMP: Pass Manager with 3 passes:
// MIXED-DUMP-NEXT: builtin.module(rock-annotate-liveness,canonicalize{{{.*}}},rock-reuse-lds{{.*}})

// GPU-DUMP: Pass Manager with 1 passes:
// GPU-DUMP-NEXT: builtin.module(gpu.module(convert-gpu-to-rocdl{{{.*}}chipset=gfx942{{.*}}}))

// 2 + 3 folds to 5 and the two equal products become one.
// FOLD-LABEL: func.func @fold
// FOLD-SAME: (%[[A:.*]]: i32)
// FOLD-NEXT: %[[C5:.*]] = arith.constant 5 : i32
// FOLD-NEXT: %[[P:.*]] = arith.muli %[[A]], %[[C5]] : i32
// FOLD-NEXT: return %[[P]], %[[P]] : i32, i32
func.func @fold(%a: i32) -> (i32, i32) {
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %s = arith.addi %c2, %c3 : i32
  %x = arith.muli %a, %s : i32
  %y = arith.muli %a, %s : i32
  return %x, %y : i32, i32
}

// promote-buffers-to-stack runs on func.func: the flag nests it on each function.
// NESTED-LABEL: func.func @small_buffer
// NESTED-NEXT: memref.alloca() : memref<4xf32>
// NESTED-NOT: memref.alloc(
func.func @small_buffer(%x: f32, %i: index) -> f32 {
  %m = memref.alloc() : memref<4xf32>
  memref.store %x, %m[%i] : memref<4xf32>
  %v = memref.load %m[%i] : memref<4xf32>
  return %v : f32
}

// Canonicalization between the rock passes folds the index, keeps the live
// ranges it cannot see into, and rock-reuse-lds packs both buffers at offset 0.
// MIXED-LABEL: func.func @mixed
// MIXED-DAG: %[[I:.*]] = arith.constant 3 : index
// MIXED-DAG: %[[POOL:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// MIXED-NOT: "rock.alloc"
// MIXED: %[[A:.*]] = memref.view %[[POOL]]
// MIXED: %[[B:.*]] = memref.view %[[POOL]]
// MIXED: memref.store %{{.*}}, %[[A]][%[[I]]]
// MIXED: memref.load %[[A]][%[[I]]]
// MIXED: "rock.lds_barrier"
// MIXED: memref.store %{{.*}}, %[[B]][%[[I]]]
func.func @mixed(%x: i8) -> i8 attributes {rock.kernel, rock.arch = "gfx942"} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %i = arith.addi %c1, %c2 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  memref.store %1, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  return %2 : i8
}
