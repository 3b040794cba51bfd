// RUN: pagedir-opt %s --split-input-file --verify-diagnostics --rock-gridwise-attention-to-blockwise

// A tile must hold whole groups of query heads: 3 rows cannot hold groups of 2.
func.func @partial_group(%q: memref<1x2x1x64xf16>, %k: memref<1x1x32x64xf16>, %v: memref<1x1x32x64xf16>,
                         %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  // expected-error @+1 {{'rock.gridwise_attention_accel' op m_per_block 3 must be a positive multiple of the group size 2, n_per_block 32 and block_size 64 positive}}
  "rock.gridwise_attention_accel"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 3, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x32x64xf16>, memref<1x1x32x64xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// With split-KV the combine kernel adds the sinks: it can read a kernel argument, not a
// buffer of the split kernel.
func.func @split_sinks_not_an_argument(%q: memref<1x2x1x64xf16>, %k: memref<1x1x64x64xf16>, %v: memref<1x1x64x64xf16>,
                                       %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %sinks = memref.alloc() : memref<2xf32>
  // expected-error @+1 {{'rock.gridwise_attention_accel' op sinks must be an argument of the kernel with num_splits = 2: the combine kernel reads them}}
  "rock.gridwise_attention_accel"(%q, %k, %v, %sinks, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 2, m_per_block = 2, n_per_block = 32, num_splits = 2, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x64x64xf16>, memref<1x1x64x64xf16>, memref<2xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Packed queries with split-KV: the combine kernel writes the packed out, so it must be an argument.
func.func @varlen_split_local_out(%arg0: memref<4x2x32xf16>, %arg1: memref<3xi32>, %arg2: memref<16x8x1x32xf16>, %arg3: memref<16x8x1x32xf16>, %arg4: memref<2x8xi32>, %arg5: memref<2xi32>) attributes {rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 2 : i64, rock.kernel} {
  %out = memref.alloc() : memref<4x2x32xf16>
  %0 = "rock.varlen_view"(%arg0, %arg1) : (memref<4x2x32xf16>, memref<3xi32>) -> memref<2x2x2x32xf16>
  %1 = "rock.varlen_view"(%out, %arg1) : (memref<4x2x32xf16>, memref<3xi32>) -> memref<2x2x2x32xf16>
  %2 = "rock.block_table_view"(%arg2, %arg4) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x8x1x32xf16>, memref<2x8xi32>) -> memref<2x8x256xf16>
  %3 = "rock.block_table_view"(%arg3, %arg4) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x8x1x32xf16>, memref<2x8xi32>) -> memref<2x8x256xf16>
  // expected-error @+1 {{'rock.gridwise_attention_accel' op packed queries with num_splits = 2: the packed out and cu_seqlens_q must be arguments of the kernel, the combine kernel reads and writes them}}
  "rock.gridwise_attention_accel"(%0, %2, %3, %arg5, %1) {block_size = 64 : i64, causal = false, grid_size = 4 : i64, num_splits = 2 : i64, m_per_block = 4 : i64, n_per_block = 32 : i64, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>} : (memref<2x2x2x32xf16>, memref<2x8x256xf16>, memref<2x8x256xf16>, memref<2xi32>, memref<2x2x2x32xf16>) -> ()
  return
}
