// The interpreter runs memrefs laid out row-major (arguments: row-major from
// offset 0, as host arrays are uploaded); any other layout is a located error
// with exit code 1, never a traceback, and never read as row-major.
// RUN: not pagedir-run %s --entry permuted_argument 2>&1 | FileCheck %s --check-prefix=ARGUMENT
// RUN: not pagedir-run %s --entry folded_lds 2>&1 | FileCheck %s --check-prefix=LDS
// RUN: not pagedir-run %s --entry offset_argument 2>&1 | FileCheck %s --check-prefix=OFFSET

// ARGUMENT: layouts.mlir:[[# @LINE + 2]]:1: error: argument 0 has type memref<8x8xf32, affine_map<(d0, d1) -> (d1, d0)>>: the interpreter runs memref arguments with the identity (row-major, offset 0) layout
// ARGUMENT-NOT: Traceback
func.func @permuted_argument(%in: memref<8x8xf32, affine_map<(d0, d1) -> (d1, d0)>>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 1 : i64, rock.grid_size = 1 : i64} {
  return
}

// LDS: layouts.mlir:[[# @LINE + 4]]:8: error: 'rock.alloc' op allocates memref<64xf32, affine_map<(d0) -> (d0 floordiv 2)>, #gpu.address_space<workgroup>>: the interpreter allocates memrefs with the identity layout
// LDS-NOT: Traceback
func.func @folded_lds(%in: memref<64xf32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %a = "rock.alloc"() : () -> memref<64xf32, affine_map<(d0) -> (d0 floordiv 2)>, #gpu.address_space<workgroup>>
  %x = memref.load %in[%tid] : memref<64xf32>
  memref.store %x, %a[%tid] : memref<64xf32, affine_map<(d0) -> (d0 floordiv 2)>, #gpu.address_space<workgroup>>
  %y = memref.load %a[%tid] : memref<64xf32, affine_map<(d0) -> (d0 floordiv 2)>, #gpu.address_space<workgroup>>
  memref.store %y, %in[%tid] : memref<64xf32>
  return
}

// OFFSET: layouts.mlir:[[# @LINE + 2]]:1: error: argument 0 has type memref<4xf32, strided<[1], offset: 2>>: the interpreter runs memref arguments with the identity (row-major, offset 0) layout
// OFFSET-NOT: Traceback
func.func @offset_argument(%in: memref<4xf32, strided<[1], offset: 2>>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 1 : i64, rock.grid_size = 1 : i64} {
  return
}
