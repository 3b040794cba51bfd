// RUN: pagedir-opt %s --rock-blockwise-load --split-input-file --verify-diagnostics

func.func @private_dest(%q: memref<64x64xf16>, %i: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 4 : i64} {
  %tile = "rock.alloc"() : () -> memref<16x64xf16, #gpu.address_space<private>>
  // expected-error @+1 {{'rock.blockwise_load_tile' op dest must be in LDS (workgroup memory), got memref<16x64xf16, #gpu.address_space<private>>}}
  "rock.blockwise_load_tile"(%q, %tile, %i) {map = affine_map<(i, r, c) -> (i * 16 + r, c)>, block_size = 64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<64x64xf16>, memref<16x64xf16, #gpu.address_space<private>>, index) -> ()
  return
}

// -----

func.func @not_linear(%table: memref<1x4x1xi64>, %t: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.deref"(%table) : (memref<1x4x1xi64>) -> memref<1x4x128xf16>
  %raw = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<8x16xf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.blockwise_load_tile' op map must be affine-linear in the tile coordinates, got (d1 * 8 + d2) * 16 + d3 mod 8}}
  "rock.blockwise_load_tile"(%pages, %tile, %c0, %t, %table) {map = affine_map<(b, t, n, d) -> (b, (t * 8 + n) * 16 + d mod 8)>, block_size = 64, page_size = 128, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<1x4x128xf16>, memref<8x16xf16, #gpu.address_space<workgroup>>, index, index, memref<1x4x1xi64>) -> ()
  return
}

// -----

func.func @batch_from_tile(%table: memref<2x4x1xi64>, %t: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x4x1xi64>) -> memref<2x4x128xf16>
  %raw = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<8x16xf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.blockwise_load_tile' op the batch result d2 floordiv 4 of map must not depend on the tile coordinates}}
  "rock.blockwise_load_tile"(%pages, %tile, %c0, %t, %table) {map = affine_map<(b, t, n, d) -> (n floordiv 4, (t * 8 + n) * 16 + d)>, block_size = 64, page_size = 128, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<2x4x128xf16>, memref<8x16xf16, #gpu.address_space<workgroup>>, index, index, memref<2x4x1xi64>) -> ()
  return
}

// -----

func.func @half_paged(%table: memref<1x4x1xi64>, %t: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.deref"(%table) : (memref<1x4x1xi64>) -> memref<1x4x128xf16>
  %raw = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<8x16xf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.blockwise_load_tile' op a paged load needs both page_table and page_size}}
  "rock.blockwise_load_tile"(%pages, %tile, %c0, %t, %table) {map = affine_map<(b, t, n, d) -> (b, (t * 8 + n) * 16 + d)>, block_size = 64, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<1x4x128xf16>, memref<8x16xf16, #gpu.address_space<workgroup>>, index, index, memref<1x4x1xi64>) -> ()
  return
}

// -----

// A block table of i64 ids (a pointer table's type) is refused where the view is verified.
func.func @view_of_i64_ids(%pool: memref<8x4x2x32xf16>, %table: memref<2x4xi64>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  // expected-error @+1 {{'rock.block_table_view' op table must hold i32 block ids, got memref<2x4xi64>}}
  %pages = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x4x2x32xf16>, memref<2x4xi64>) -> memref<2x8x128xf16>
  return
}
