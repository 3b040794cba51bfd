// User errors: a message (located when there is a location), exit code 1, no traceback.
// RUN: not pagedir-run %s --entry f 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not pagedir-run %t.missing.mlir --entry f 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: pagedir-gen copy-kv > %t.copy.mlir
// RUN: not pagedir-run %t.copy.mlir --entry copy 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not pagedir-run --check %t.copy.mlir --entry copy 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not pagedir-run %t.copy.mlir 2>&1 | FileCheck %s --check-prefix=NO-ENTRY
// RUN: echo junk > %t.junk.npz
// RUN: not pagedir-run %t.copy.mlir --entry copy_kv --inputs %t.junk.npz 2>&1 | FileCheck %s --check-prefix=NPZ
// RUN: %PYTHON -c "import numpy as np; np.savez('%t.few.npz', arg0=np.zeros((2, 2, 1), np.int64), out=np.zeros(4))"
// RUN: not pagedir-run %t.copy.mlir --entry copy_kv --inputs %t.few.npz 2>&1 | FileCheck %s --check-prefix=NAMES
// RUN: %PYTHON -c "import numpy as np; np.savez('%t.shape.npz', arg0=np.zeros((2, 2, 1), np.int64), arg1=np.zeros((2, 2, 64, 64), np.float16))"
// RUN: not pagedir-run %t.copy.mlir --entry copy_kv --inputs %t.shape.npz 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not pagedir-run --check %t.copy.mlir --arch gfx1 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not pagedir-run --check %t.copy.mlir --outputs %t.out.npz 2>&1 | FileCheck %s --check-prefix=FLAGS

// MALFORMED: errors.mlir:[[# @LINE + 2]]:19: error: use of value '%x' expects different type than prior uses: 'f32' vs 'memref<4xf32>'
func.func @f(%x: memref<4xf32>) {
  %y = arith.addf %x, %x : f32
  return
}
// MALFORMED-NOT: Traceback

// MISSING: pagedir-run: error: could not open input file '{{.*}}.missing.mlir': No such file or directory
// ENTRY: pagedir-run: error: no function @copy in the module (functions: copy_kv)
// ENTRY-NOT: Traceback
// NO-ENTRY: pagedir-run: error: --entry NAME is required without --check
// NPZ: pagedir-run: error: inputs '{{.*}}.junk.npz' is not an .npz archive
// NAMES: pagedir-run: error: inputs '{{.*}}.few.npz': missing arg1; unknown out (@copy_kv takes 2 arguments: arg0 .. arg1)
// SHAPE: copy.mlir:9:22: error: inputs '{{.*}}.shape.npz': arg0 has shape [2, 2, 1]; the argument is memref<2x8x1xi64>, which takes shape [2, 8, 1]
// CHIP: pagedir-run: error: unknown chip 'gfx1'
// FLAGS: pagedir-run: error: --inputs and --outputs are for a plain run
