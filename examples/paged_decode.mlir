// Paged decode attention: B=2 sequences, 8 query heads sharing 2 KV heads (GQA 4),
// head dim 128, pages of 16 tokens (2048 f16 elements), 8 pages per sequence
// (capacity 64 tokens per KV head), ragged sequence lengths.
func.func @paged_decode(%q: memref<2x8x1x128xf16>, %k_table: memref<2x8x1xi64>,
                        %v_table: memref<2x8x1xi64>, %seq_lens: memref<2xi32>,
                        %out: memref<2x8x1x128xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.deref"(%k_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  %v = "rock.deref"(%v_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, causal = false,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<2x8x2048xf16>, memref<2x8x2048xf16>, memref<2xi32>, memref<2x8x1x128xf16>) -> ()
  return
}
