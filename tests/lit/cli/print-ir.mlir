// IR printing around passes, timing, as in mlir-opt (printed on stderr).
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-verify,func.func(cse))' --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-verify,func.func(cse))' --mlir-print-ir-before-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: pagedir-opt %s --rock-verify --mlir-timing -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIMING
// RUN: not pagedir-opt %S/Inputs/fails-in-upstream-pass.mlir --pass-pipeline='builtin.module(rock-verify,gpu-module-to-binary)' --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=FAILURE

// AFTER: // -----// IR Dump After RockVerifyPass (rock-verify) //----- //
// AFTER-NEXT: module {
// AFTER: arith.addi
// AFTER: arith.addi
// AFTER: // -----// IR Dump After CSE (cse) //----- //
// AFTER-NEXT: func.func @f
// AFTER-NEXT: arith.addi
// AFTER-NOT: arith.addi
// AFTER: return

// BEFORE: // -----// IR Dump Before RockVerifyPass (rock-verify) //----- //
// BEFORE: // -----// IR Dump Before CSE (cse) //----- //
// BEFORE-NOT: IR Dump After

// TIMING: Execution time report
// TIMING: RockVerifyPass
// TIMING: Total

// Only the failing pass is printed.
// FAILURE-NOT: IR Dump After RockVerifyPass
// FAILURE: // -----// IR Dump After GpuModuleToBinaryPass Failed (gpu-module-to-binary) //----- //
// FAILURE: gpu.module @kernels
// FAILURE: fails-in-upstream-pass.mlir:2:3: error: the `AMDGPU` target was not built
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  return %2 : i32
}
