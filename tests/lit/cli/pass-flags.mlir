// Pass flags run in the order given, with options as =OPTS or {OPTS};
// --pass-pipeline mixes pagedir passes, pipelines and upstream passes.
// RUN: pagedir-opt %s --rock-buffer-load='arch=gfx950' --rock-verify --rock-to-gpu{arch=gfx942} --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=FLAGS
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-verify,func.func(canonicalize),rock-buffer-load{arch=gfx942})' --dump-pass-pipeline 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(func.func(cse))' | FileCheck %s --check-prefix=CSE
// RUN: pagedir-opt %s --rock-backend-pipeline='arch=gfx942' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=NAMED

// FLAGS: Pass Manager with 3 passes:
// FLAGS-NEXT: builtin.module(rock-buffer-load{arch=gfx950},rock-verify,rock-to-gpu{arch=gfx942})

// PIPELINE: Pass Manager with 3 passes:
// PIPELINE-NEXT: builtin.module(rock-verify,func.func(canonicalize{{{.*}}}),rock-buffer-load{arch=gfx942})

// A named pipeline expands to its passes, options forwarded.
// NAMED: Pass Manager with
// NAMED-SAME: passes:
// NAMED-NEXT: builtin.module({{.*}}chipset=gfx942

// CSE-LABEL: func.func @twice
// CSE: %[[SUM:.*]] = arith.addi
// CSE-NOT: arith.addi
// CSE: return %[[SUM]], %[[SUM]]
func.func @twice(%a: i32) -> (i32, i32) {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  return %0, %1 : i32, i32
}
