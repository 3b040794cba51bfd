// RUN: pagedir-opt %s --split-input-file --verify-diagnostics --rock-gridwise-attention-to-blockwise

// A tile must hold whole groups of query heads: 3 rows cannot hold groups of 2.
func.func @partial_group(%q: memref<1x2x1x64xf16>, %k: memref<1x1x32x64xf16>, %v: memref<1x1x32x64xf16>,
                         %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  // expected-error @+1 {{'rock.gridwise_attention_accel' op m_per_block 3 must be a positive multiple of the group size 2, n_per_block 32 and block_size 64 positive}}
  "rock.gridwise_attention_accel"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 3, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1>}
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
      block_size = 64, grid_size = 2, m_per_block = 2, n_per_block = 32, num_splits = 2, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x64x64xf16>, memref<1x1x64x64xf16>, memref<2xf32>, memref<1x2x1x64xf16>) -> ()
  return
}
