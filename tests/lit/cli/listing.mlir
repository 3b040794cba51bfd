// Listings and help.
// RUN: pagedir-opt --list-passes | FileCheck %s --check-prefix=PASSES
// RUN: pagedir-opt --show-dialects | FileCheck %s --check-prefix=DIALECTS
// RUN: pagedir-opt --show-dialect rock | FileCheck %s --check-prefix=ROCK
// RUN: not pagedir-opt --show-dialect nope 2>&1 | FileCheck %s --check-prefix=NO-DIALECT
// RUN: pagedir-opt --help | FileCheck %s --check-prefix=HELP
// RUN: pagedir-opt --help | wc -l | FileCheck %s --check-prefix=HELP-SHORT
// RUN: pagedir-opt --version | FileCheck %s --check-prefix=VERSION

// pagedir's passes first, then the upstream ones, each group alphabetical, options indented, in
// mlir-opt's format; the same for pipelines.
// PASSES: {{^}}Passes:
// PASSES-NEXT: {{^}}  --rock-annotate-liveness {{ *}}-   Mark the live ranges
// PASSES: {{^}}  --rock-buffer-load
// PASSES-NEXT: {{^}}    --arch=<str>
// PASSES: {{^}}  --rock-reuse-lds {{ *}}-   Pack LDS buffers whose live ranges do not overlap into shared allocations
// PASSES-NEXT: {{^}}    --arch=<str>
// PASSES: {{^}}  --rock-verify {{ *}}-   Run the Python verifiers of every rock op
// PASSES-NEXT: {{^}}Upstream Passes:
// PASSES: {{^}}  --canonicalize {{ *}}-   Canonicalize operations
// PASSES-NEXT: {{^}}    --disable-patterns=<string>
// PASSES: {{^}}    --max-iterations=<long> {{ *}}- Max. iterations between applying patterns / simplifying regions
// PASSES: {{^}}    --region-simplify=<value>
// PASSES-NEXT: {{^}}      =disabled
// PASSES: {{^}}  --convert-gpu-to-rocdl {{ *}}- {{.*}} (runs on each gpu.module)
// PASSES: {{^}}    --chipset=<string>
// PASSES: {{^}}  --cse {{ *}}-   Eliminate common sub-expressions
// PASSES-NOT: {{^}}  --rock-
// PASSES: {{^}}  --xevm-attach-target
// PASSES-NEXT: {{^}}    -O <uint>
// PASSES-NOT: {{^}}  --rock-
// PASSES: {{^}}Pass Pipelines:
// PASSES-NEXT: {{^}}  --rock-backend-pipeline
// PASSES: {{^}}  --rock-kernel-pipeline
// PASSES-NEXT: {{^}}    --arch=<str>
// PASSES: {{^}}Upstream Pass Pipelines:
// PASSES-NOT: {{^}}  --rock-
// PASSES: {{^}}  --sparsifier

// DIALECTS: Available Dialects: {{.*}}arith, {{.*}}gpu, {{.*}}memref, {{.*}}rocdl, rock, scf

// ROCK: # The `rock` dialect
// ROCK: ## `rock.alloc`
// ROCK: ## `rock.global_load`
// ROCK: ## `rock.deref`
// ROCK: | `table` | memref | single | read |
// ROCK: ## `rock.attention`
// ROCK: | `seq_lens` | memref | optional | read |

// NO-DIALECT: pagedir-opt: error: no reference for dialect 'nope' (pagedir defines: rock)

// --help names pagedir's passes; the upstream ones are for --list-passes.
// HELP: usage: pagedir-opt
// HELP: --split-input-file
// HELP: --verify-diagnostics
// HELP: upstream MLIR passes
// HELP: --rock-reuse-lds
// HELP: --rock-kernel-pipeline
// Not one line per upstream pass: under 100 lines in all.
// HELP-SHORT: {{^ *[0-9]{1,2}$}}

// VERSION: pagedir-opt {{[0-9]+\.[0-9]+\.[0-9]+}}
