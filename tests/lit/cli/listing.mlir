// Listings and help.
// RUN: pagedir-opt --list-passes | FileCheck %s --check-prefix=PASSES
// RUN: pagedir-opt --show-dialects | FileCheck %s --check-prefix=DIALECTS
// RUN: pagedir-opt --show-dialect rock | FileCheck %s --check-prefix=ROCK
// RUN: not pagedir-opt --show-dialect nope 2>&1 | FileCheck %s --check-prefix=NO-DIALECT
// RUN: pagedir-opt --help | FileCheck %s --check-prefix=HELP
// RUN: pagedir-opt --version | FileCheck %s --check-prefix=VERSION

// PASSES: Available Passes:
// PASSES: --rock-buffer-load
// PASSES-NEXT: --arch=<str>
// PASSES: --rock-verify {{ *}}- Run the Python verifiers of every rock op
// PASSES: Available Pass Pipelines:
// PASSES: --rock-backend-pipeline
// PASSES: --rock-kernel-pipeline
// PASSES-NEXT: --arch=<str>

// DIALECTS: Available Dialects: {{.*}}arith, {{.*}}gpu, {{.*}}memref, {{.*}}rocdl, rock, scf

// ROCK: # The `rock` dialect
// ROCK: ## `rock.alloc`
// ROCK: ## `rock.global_load`
// ROCK: ## `rock.deref`
// ROCK: | `table` | memref | single | read |
// ROCK: ## `rock.attention`
// ROCK: | `seq_lens` | memref | optional | read |

// NO-DIALECT: pagedir-opt: error: no reference for dialect 'nope' (pagedir defines: rock)

// HELP: usage: pagedir-opt
// HELP: --split-input-file
// HELP: --verify-diagnostics
// HELP: --rock-reuse-lds
// HELP: --rock-kernel-pipeline

// VERSION: pagedir-opt {{[0-9]+\.[0-9]+\.[0-9]+}}
