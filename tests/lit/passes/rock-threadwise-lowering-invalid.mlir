// RUN: pagedir-opt %s --rock-threadwise-lowering --split-input-file --verify-diagnostics

// Pages of 100 elements cannot hold whole vectors of 8: a vector would straddle two pages.
func.func @page_not_multiple_of_vector(%pages: memref<1x8x100xf16>, %ptrs: memref<2xi64, #gpu.address_space<workgroup>>, %first: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %regs = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
  // expected-error @+1 {{'rock.threadwise_read_into' op page size 100 is not a multiple of the vector width 8: a vector would straddle two pages}}
  "rock.threadwise_read_into"(%pages, %regs, %c0, %ptrs, %first) {map = affine_map<(b, n, d) -> (b, n * 64 + d)>, block_size = 64, tile_shape = array<i64: 2, 64>, vector_dim = 1, vector_len = 8, page_size = 100, num_pages_per_batch = 8, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (memref<1x8x100xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// A validity that changes along the vector dimension would hold for part of a vector.
func.func @valid_along_vector(%q: memref<64x64xf16>, %i: index, %width: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  // expected-error @+1 {{'rock.threadwise_read_into' op valid (d0, d1, d2, d3) -> (d1 - d3 - 1) depends on the vector dimension 1 of vectors of 8 elements: a load would be valid for part of its vector}}
  "rock.threadwise_read_into"(%q, %regs, %i, %width) {map = affine_map<(i, w, r, c) -> (i * 16 + r, c)>, valid = affine_map<(i, w, r, c) -> (w - c - 1)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>} : (memref<64x64xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index) -> ()
  return
}

// -----

// No rock.arch and no arch option: the wave size is unknown, so is the uniformity proof.
// expected-error @+1 {{'func.func' op @no_chip names no chip: set rock.arch on the kernel or give the arch option (known chips: gfx908,}}
func.func @no_chip(%pages: memref<2x4x1024xf16>, %ptrs: memref<2xi64, #gpu.address_space<workgroup>>, %b: index, %t: index, %first: index) attributes {rock.kernel, rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %t, %ptrs, %first) {map = affine_map<(b, t, n, d) -> (b, (t * 16 + n) * 64 + d)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, page_size = 1024, num_pages_per_batch = 4, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>} : (memref<2x4x1024xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}
