// RUN: pagedir-opt %s --split-input-file --rock-attention-to-gridwise | FileCheck %s
// RUN: pagedir-opt %s --split-input-file --rock-attention-to-gridwise='block-size=128 n-per-block=16' | FileCheck %s --check-prefix=OPTS
// RUN: pagedir-opt %s --split-input-file --rock-attention-to-gridwise='pipeline-depth=1' | FileCheck %s --check-prefix=DEPTH1
// RUN: sed '/^\/\/ Dynamic sizes/,$d' %s | pagedir-opt --split-input-file --rock-attention-to-gridwise='n-per-block=16 num-splits=2' | FileCheck %s --check-prefix=SPLIT2

// Decode with GQA 4: one workgroup per (sequence, KV head) holds the 4 query
// heads of the group (m_per_block = 4), grid = B * Hkv; the kernel function
// records the launch configuration, and its pages (2048 elements, 64 tokens,
// 2 KV heads: rock.paged_kv, for a check once the rock.deref views are gone).
// On gfx942's matrix cores: 4 waves share the one 16-row block, 16 keys of a
// 64-key tile each.

// CHECK-LABEL: func.func @decode_gqa
// CHECK-SAME: rock.block_size = 256 : i64, rock.grid_size = 4 : i64
// CHECK-SAME: rock.paged_kv = array<i64: 2048, 64, 2>
// CHECK: %[[K:.*]] = "rock.deref"(%{{.*}})
// CHECK: %[[V:.*]] = "rock.deref"(%{{.*}})
// CHECK: "rock.gridwise_attention_accel"(%[[Q:[^,]+]], %[[K]], %[[V]], %[[LENS:[^,]+]], %[[OUT:[^)]+]])
// CHECK-SAME: block_size = 256 : i64
// CHECK-SAME: causal = false
// CHECK-SAME: grid_size = 4 : i64
// CHECK-SAME: m_per_block = 4 : i64
// CHECK-SAME: n_per_block = 64 : i64
// CHECK-SAME: num_heads_kv = 2 : i64, num_heads_q = 8 : i64
// Decode with a compute unit per workgroup: the KV loop is pipelined (rock-pipeline).
// CHECK-SAME: pipeline_depth = 2 : i64
// CHECK-NOT: "rock.attention"
// DEPTH1-LABEL: func.func @decode_gqa
// DEPTH1: "rock.gridwise_attention_accel"
// DEPTH1-NOT: pipeline_depth
// DEPTH1: return
// OPTS-LABEL: func.func @decode_gqa
// OPTS-SAME: rock.block_size = 128 : i64
// OPTS: "rock.gridwise_attention_accel"
// OPTS-SAME: n_per_block = 16 : i64
// num-splits=2: two workgroups per (sequence, KV head), recorded on the op and in the grid.
// SPLIT2-LABEL: func.func @decode_gqa
// SPLIT2-SAME: rock.grid_size = 8 : i64
// SPLIT2: "rock.gridwise_attention_accel"
// SPLIT2-SAME: grid_size = 8 : i64
// SPLIT2-SAME: num_splits = 2 : i64
func.func @decode_gqa(%q: memref<2x8x1x128xf16>, %k_table: memref<2x8x1xi64>, %v_table: memref<2x8x1xi64>,
                      %seq_lens: memref<2xi32>, %out: memref<2x8x1x128xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.deref"(%k_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  %v = "rock.deref"(%v_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, causal = false,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<2x8x2048xf16>, memref<2x8x2048xf16>, memref<2xi32>, memref<2x8x1x128xf16>) -> ()
  return
}

// -----

// Prefill, MHA, causal, explicit scale: on the matrix cores a tile takes 64 query
// positions (a 16-row block per wave), so 64 positions need 1 query block per
// (sequence, head): grid = 1 * 2 * 1.

// CHECK-LABEL: func.func @prefill_causal
// CHECK-SAME: rock.grid_size = 2 : i64
// CHECK: "rock.gridwise_attention_accel"
// CHECK-SAME: causal = true
// CHECK-SAME: m_per_block = 64 : i64
// CHECK-SAME: scale = 1.250000e-01 : f32
// Prefill keeps depth 1 (nothing recorded).
// CHECK-NOT: pipeline_depth
// CHECK: return
func.func @prefill_causal(%q: memref<1x2x64x64xf32>, %k_table: memref<1x8x1xi64>, %v_table: memref<1x8x1xi64>,
                          %out: memref<1x2x64x64xf32>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.deref"(%k_table) : (memref<1x8x1xi64>) -> memref<1x8x1024xf32>
  %v = "rock.deref"(%v_table) : (memref<1x8x1xi64>) -> memref<1x8x1024xf32>
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 2, causal = true, scale = 0.125 : f32,
      operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x64x64xf32>, memref<1x8x1024xf32>, memref<1x8x1024xf32>, memref<1x2x64x64xf32>) -> ()
  return
}

// -----

// Dense K/V and functions that are not kernels: only rock.kernel functions are lowered.

// CHECK-LABEL: func.func @dense
// CHECK-NOT: rock.paged_kv
// CHECK: "rock.gridwise_attention_accel"(%[[DQ:[^,]+]], %[[DK:[^,]+]], %[[DV:[^,]+]], %[[DOUT:[^)]+]])
// CHECK-SAME: m_per_block = 1 : i64
// CHECK-LABEL: func.func @not_a_kernel
// CHECK: "rock.attention"
func.func @dense(%q: memref<1x1x1x64xf16>, %k: memref<1x1x40x64xf16>, %v: memref<1x1x40x64xf16>,
                 %out: memref<1x1x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 1, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x1x64xf16>, memref<1x1x40x64xf16>, memref<1x1x40x64xf16>, memref<1x1x1x64xf16>) -> ()
  return
}
func.func @not_a_kernel(%q: memref<1x1x1x64xf16>, %k: memref<1x1x40x64xf16>, %v: memref<1x1x40x64xf16>,
                        %out: memref<1x1x1x64xf16>) {
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 1, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x1x64xf16>, memref<1x1x40x64xf16>, memref<1x1x40x64xf16>, memref<1x1x1x64xf16>) -> ()
  return
}

// -----

// Split-KV asked for by the kernel: rock.num_splits = 3 cuts 128 keys into 3 workgroups per
// (sequence, KV head): grid 1 * 1 * 3. Two 64-key tiles cannot make 3 splits, so the matrix
// tiling takes tiles of 32 (4 tiles), each shared by 2 waves (128 threads).

// CHECK-LABEL: func.func @split_by_attribute
// CHECK-SAME: rock.block_size = 128 : i64, rock.grid_size = 3 : i64
// CHECK: "rock.gridwise_attention_accel"
// CHECK-SAME: grid_size = 3 : i64
// CHECK-SAME: n_per_block = 32 : i64
// CHECK-SAME: num_splits = 3 : i64
// The option wins over the attribute.
// SPLIT2-LABEL: func.func @split_by_attribute
// SPLIT2: num_splits = 2 : i64
func.func @split_by_attribute(%q: memref<1x4x1x64xf16>, %k: memref<1x1x128x64xf16>, %v: memref<1x1x128x64xf16>,
                              %out: memref<1x4x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.num_splits = 3} {
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xf16>, memref<1x1x128x64xf16>, memref<1x1x128x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

// rock.num_splits = 0 chooses with the split cost model: batch 1 with one KV head is one
// workgroup, gfx942 has 304 compute units and 8192 tokens make 256 tiles of 32 (the matrix
// tiling's split-KV tile, 2 waves). One split per tile would leave the 8 output rows' 256 splits
// of partials to the combine's 4 workgroups; 64 splits of 4 tiles cost least. rock.split_map
// (no inputs: static sizes) holds the model's per-launch inputs, rock.split_model its constants.

// CHECK: #[[STATIC:map[0-9]*]] = affine_map<() -> (1, 256, 4128, 4)>
// CHECK-LABEL: func.func @split_chosen
// CHECK-SAME: rock.block_size = 128 : i64, rock.grid_size = 64 : i64
// CHECK-SAME: rock.split_map = #[[STATIC]], rock.split_model = {{{.*}}num_splits = 64 : i64, q_bytes = 2048 : i64, tile_bytes = 16384 : i64}
// CHECK: "rock.gridwise_attention_accel"
// CHECK-SAME: num_splits = 64 : i64
func.func @split_chosen(%q: memref<1x8x1x128xf16>, %k_table: memref<1x512x1xi64>, %v_table: memref<1x512x1xi64>,
                        %seq_lens: memref<1xi32>, %out: memref<1x8x1x128xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.num_splits = 0} {
  %k = "rock.deref"(%k_table) : (memref<1x512x1xi64>) -> memref<1x512x2048xf16>
  %v = "rock.deref"(%v_table) : (memref<1x512x1xi64>) -> memref<1x512x2048xf16>
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x8x1x128xf16>, memref<1x512x2048xf16>, memref<1x512x2048xf16>, memref<1xi32>, memref<1x8x1x128xf16>) -> ()
  return
}

// -----

// Variants: window_left and softcap carry over, alibi_slopes and sinks stay
// between seq_lens and out.

// CHECK-LABEL: func.func @variants
// CHECK-SAME: %[[Q:[^:]+]]: memref<2x4x1x64xf16>, %[[K:[^:]+]]: memref<2x2x64x64xf16>, %[[V:[^:]+]]: memref<2x2x64x64xf16>, %[[LENS:[^:]+]]: memref<2xi32>, %[[SLOPES:[^:]+]]: memref<4xf32>, %[[SINKS:[^:]+]]: memref<4xf32>, %[[OUT:[^:]+]]: memref<2x4x1x64xf16>
// CHECK: "rock.gridwise_attention_accel"(%[[Q]], %[[K]], %[[V]], %[[LENS]], %[[SLOPES]], %[[SINKS]], %[[OUT]])
// CHECK-SAME: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1>
// CHECK-SAME: softcap = 3.000000e+01 : f32
// CHECK-SAME: window_left = 16 : i64
func.func @variants(%q: memref<2x4x1x64xf16>, %k: memref<2x2x64x64xf16>, %v: memref<2x2x64x64xf16>, %seq_lens: memref<2xi32>,
                    %slopes: memref<4xf32>, %sinks: memref<4xf32>, %out: memref<2x4x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  "rock.attention"(%q, %k, %v, %seq_lens, %slopes, %sinks, %out) {num_heads_q = 4, num_heads_kv = 2, window_left = 16, softcap = 30.0 : f32,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1>}
    : (memref<2x4x1x64xf16>, memref<2x2x64x64xf16>, memref<2x2x64x64xf16>, memref<2xi32>, memref<4xf32>, memref<4xf32>, memref<2x4x1x64xf16>) -> ()
  return
}

// -----

// Dynamic sizes (the chunks from here on are not split with a fixed count; the last one splits at launch).
// A packed-query kernel for every batch size: no rock.grid_size, the grid is the formula
// rock.grid_map of the argument sizes rock.grid_sizes names: B = dim 0 of cu_seqlens_q
// (argument 1) minus 1, times Hkv = 2 query-block tiles. Sq (4) stays static.
// rock.batch_sizes: the dims that hold B, (argument, dim, extra): cu_seqlens_q's dim 0 (B + 1),
// block_table's and seq_lens' dim 0 (q and out are packed rows, not B).

// CHECK: #[[GRID:map[0-9]*]] = affine_map<(d0) -> ((d0 - 1) * 2)>
// CHECK-LABEL: func.func @dynamic_varlen
// CHECK-SAME: rock.batch_sizes = array<i64: 1, 0, 1, 4, 0, 0, 5, 0, 0>,
// CHECK-SAME: rock.block_size = 256 : i64, rock.grid_map = #[[GRID]], rock.grid_sizes = array<i64: 1, 0>
// CHECK-NOT: rock.grid_size =
// CHECK: "rock.gridwise_attention_accel"
// CHECK-NOT: grid_size
// CHECK-SAME: (memref<?x8x4x64xf16>, memref<?x?x1024xf16>, memref<?x?x1024xf16>, memref<?xi32>, memref<?x8x4x64xf16>) -> ()
func.func @dynamic_varlen(%q: memref<?x8x64xf16>, %cu_seqlens_q: memref<?xi32>, %k_cache: memref<?x16x2x64xf16>, %v_cache: memref<?x16x2x64xf16>, %block_table: memref<?x?xi32>, %seq_lens: memref<?xi32>, %out: memref<?x8x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %q_padded = "rock.varlen_view"(%q, %cu_seqlens_q) : (memref<?x8x64xf16>, memref<?xi32>) -> memref<?x8x4x64xf16>
  %out_padded = "rock.varlen_view"(%out, %cu_seqlens_q) : (memref<?x8x64xf16>, memref<?xi32>) -> memref<?x8x4x64xf16>
  %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  "rock.attention"(%q_padded, %k, %v, %seq_lens, %out_padded) {num_heads_q = 8, num_heads_kv = 2,
      causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x4x64xf16>, memref<?x?x1024xf16>, memref<?x?x1024xf16>, memref<?xi32>, memref<?x8x4x64xf16>) -> ()
  return
}

// -----

// Split-KV with dynamic sizes: the split count is chosen at launch (num_splits = 0 on the op).
// rock.split_map gives the cost model's per-launch inputs from the argument sizes rock.split_sizes
// names (q's dim 0: the batch; the block table's dim 1: the slots): workgroups without splitting
// (B * Hkv), KV tiles of the capacity (slots * 16 tokens in 32-key tiles), the partials' bytes
// (B * 8 rows * 65 * 4) and the combine's workgroups (B * 8 * 16 chunks / 64); rock.split_model
// holds the constants (gfx942: 304 compute units, 5.3 TB/s).

// CHECK: #[[SPLITS:map[0-9]*]] = affine_map<(d0, d1) -> (d0 * 2, (d1 * 16 + 31) floordiv 32, d0 * 2080, d0 * 2)>
// CHECK-LABEL: func.func @dynamic_split
// CHECK-SAME: rock.split_map = #[[SPLITS]]
// CHECK-SAME: rock.split_model = {bandwidth = 5.300000e+12 : f64, compute_units = 304 : i64, launch_seconds = 3.000000e-06 : f64, num_splits = 0 : i64, q_bytes = 512 : i64, tile_bytes = 8192 : i64}
// CHECK-SAME: rock.split_sizes = array<i64: 0, 0, 3, 1>
// CHECK: "rock.gridwise_attention_accel"
// CHECK-SAME: n_per_block = 32 : i64, num_heads_kv = 2 : i64, num_heads_q = 8 : i64, num_splits = 0 : i64
func.func @dynamic_split(%q: memref<?x8x1x64xf16>, %k_cache: memref<?x16x2x64xf16>, %v_cache: memref<?x16x2x64xf16>, %block_table: memref<?x?xi32>, %seq_lens: memref<?xi32>, %out: memref<?x8x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.num_splits = 0} {
  %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x64xf16>, memref<?x?x1024xf16>, memref<?x?x1024xf16>, memref<?xi32>, memref<?x8x1x64xf16>) -> ()
  return
}

// -----

// A fixed split count with dynamic sizes: num_splits = 3 on the op and in rock.split_model (the
// plan's count), the grid map still B * Hkv (rock-gridwise-attention-to-blockwise multiplies it by 3).

// CHECK: #[[FIXED_GRID:map[0-9]*]] = affine_map<(d0) -> (d0 * 2)>
// CHECK-LABEL: func.func @dynamic_fixed_split
// CHECK-SAME: rock.grid_map = #[[FIXED_GRID]]
// CHECK-SAME: rock.split_model = {{{.*}}num_splits = 3 : i64
// CHECK: "rock.gridwise_attention_accel"
// CHECK-SAME: n_per_block = 32 : i64, num_heads_kv = 2 : i64, num_heads_q = 8 : i64, num_splits = 3 : i64
func.func @dynamic_fixed_split(%q: memref<?x8x1x64xf16>, %k_cache: memref<?x16x2x64xf16>, %v_cache: memref<?x16x2x64xf16>, %block_table: memref<?x?xi32>, %seq_lens: memref<?xi32>, %out: memref<?x8x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.num_splits = 3} {
  %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x64xf16>, memref<?x?x1024xf16>, memref<?x?x1024xf16>, memref<?xi32>, memref<?x8x1x64xf16>) -> ()
  return
}
