// A kernel that loads through its page pointers without the validity operand:
// a null pointer in the page table is an error at the load (exit code 1), both
// as written and lowered to a gpu.func, whose ops keep the locations of this file.
// RUN: %PYTHON -c "import numpy as np; np.savez('%t.npz', arg0=np.array([[[0], [0]]], np.int64), arg1=np.zeros((2, 64), np.float32))"
// RUN: not pagedir-run %s --entry gather --inputs %t.npz 2>&1 | FileCheck %s --check-prefix=L4
// RUN: pagedir-opt %s --rock-buffer-load --rock-to-gpu --mlir-print-debuginfo -o %t.l6.mlir
// RUN: not pagedir-run %t.l6.mlir --entry gather --inputs %t.npz 2>&1 | FileCheck %s --check-prefix=L6

func.func @gather(%table: memref<1x2x1xi64>, %out: memref<2x64xf32>)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 2 : i64} {
  %page = "rock.workgroup_id"() : () -> index
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %pages = "rock.deref"(%table) : (memref<1x2x1xi64>) -> memref<1x2x64xf32>
  %ptr = memref.load %table[%c0, %page, %c0] : memref<1x2x1xi64>
  // L4: null-page.mlir:[[# @LINE + 2]]:8: error: rock.global_load reads unmapped device address 0x0 (4 bytes): a null pointer
  // L6: null-page.mlir:[[# @LINE + 1]]:8: error: rocdl.raw.ptr.buffer.load reads unmapped device address 0x0 (4 bytes): a null pointer
  %x = "rock.global_load"(%pages, %tid, %ptr) {page_size = 64, operandSegmentSizes = array<i32: 1, 1, 0, 1>}
    : (memref<1x2x64xf32>, index, i64) -> f32
  memref.store %x, %out[%page, %tid] : memref<2x64xf32>
  return
}
// L4-NOT: Traceback
// L6-NOT: Traceback
