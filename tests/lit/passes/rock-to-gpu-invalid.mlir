// RUN: pagedir-opt %s --rock-to-gpu --split-input-file --verify-diagnostics

// expected-error @+1 {{'func.func' op kernel needs the rock.grid_size attribute to become a gpu.func}}
func.func @no_grid() attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op kernel still uses a rock.deref view; run rock-buffer-load first}}
func.func @deref_in_use(%table: memref<1x2x1xi64>, %off: index, %ptr: i64) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.deref"(%table) : (memref<1x2x1xi64>) -> memref<1x2x64xf16>
  %x = "rock.global_load"(%pages, %off, %ptr) {page_size = 64, operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1x2x64xf16>, index, i64) -> f16
  return
}

// -----

// A gpu.func that names no chip could be compiled for any: an error instead.
// expected-error @+1 {{'func.func' op @no_chip names no chip: set rock.arch on the kernel or give the arch option}}
func.func @no_chip() attributes {rock.kernel, rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op kernel still uses a rock.block_table_view view; run rock-buffer-load first}}
func.func @view_in_use(%pool: memref<4x2x1x32xf16>, %table: memref<1x4xi32>, %off: index, %ptr: i64) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x2x1x32xf16>, memref<1x4xi32>) -> memref<1x4x64xf16>
  %x = "rock.global_load"(%pages, %off, %ptr) {page_size = 64, operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1x4x64xf16>, index, i64) -> f16
  return
}
