// Every rock op parses, verifies and prints back in generic form; printing the
// output again gives the same text (round trip).
// RUN: pagedir-opt %s | FileCheck %s
// RUN: pagedir-opt %s | pagedir-opt | FileCheck %s
// RUN: pagedir-opt %s --mlir-print-op-generic | pagedir-opt | FileCheck %s

// CHECK-LABEL: func.func @memory_and_ids
// CHECK: %[[LDS:.*]] = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
// CHECK: %[[REGS:.*]] = "rock.alloc"() : () -> memref<4x8xf16, #gpu.address_space<private>>
// CHECK: "rock.live_in"(%[[LDS]]) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
// CHECK: "rock.lds_barrier"() : () -> ()
// CHECK: "rock.live_out"(%[[LDS]]) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
// CHECK: %{{\w+}} = "rock.workgroup_id"() : () -> index
// CHECK: %{{\w+}} = "rock.workitem_id"() : () -> index
func.func @memory_and_ids() {
  %lds = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %regs = "rock.alloc"() : () -> memref<4x8xf16, #gpu.address_space<private>>
  "rock.live_in"(%lds) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.lds_barrier"() : () -> ()
  "rock.live_out"(%lds) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  %bid = "rock.workgroup_id"() : () -> index
  %tid = "rock.workitem_id"() : () -> index
  return
}

// The L0 example of ARCHITECTURE.md: paged K/V through rock.deref, GQA, seq_lens.
// CHECK-LABEL: func.func @paged_attention
// CHECK-SAME: attributes {rock.arch = "gfx942", rock.kernel}
// CHECK: %[[K:.*]] = "rock.deref"(%{{\w+}}) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
// CHECK: %[[V:.*]] = "rock.deref"(%{{\w+}}) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
// CHECK: "rock.attention"(%{{\w+}}, %[[K]], %[[V]], %{{\w+}}, %{{\w+}})
// CHECK-SAME: causal = false, num_heads_kv = 2 : i64, num_heads_q = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>, scale = 1.250000e-01 : f32
func.func @paged_attention(%q: memref<2x8x1x128xf16>, %k_table: memref<2x8x1xi64>, %v_table: memref<2x8x1xi64>,
                           %seq_lens: memref<2xi32>, %out: memref<2x8x1x128xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.deref"(%k_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  %v = "rock.deref"(%v_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, causal = false, scale = 0.125 : f32,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<2x8x2048xf16>, memref<2x8x2048xf16>, memref<2xi32>, memref<2x8x1x128xf16>) -> ()
  return
}

// Dense K/V and no seq_lens: the optional operand is absent from the segment sizes.
// CHECK-LABEL: func.func @dense_attention
// CHECK: "rock.attention"(%{{\w+}}, %{{\w+}}, %{{\w+}}, %{{\w+}}) {causal = true, num_heads_kv = 4 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
func.func @dense_attention(%q: memref<1x4x16x64xf32>, %k: memref<1x4x32x64xf32>, %v: memref<1x4x32x64xf32>,
                           %out: memref<1x4x16x64xf32>) {
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, causal = true,
      operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x16x64xf32>, memref<1x4x32x64xf32>, memref<1x4x32x64xf32>, memref<1x4x16x64xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @gridwise
// CHECK: "rock.gridwise_attention_accel"
// CHECK-SAME: block_size = 256 : i64
// CHECK-SAME: grid_size = 4 : i64
// CHECK-SAME: m_per_block = 32 : i64
// CHECK-SAME: n_per_block = 64 : i64
func.func @gridwise(%q: memref<1x4x16x64xf32>, %k: memref<1x4x32x64xf32>, %v: memref<1x4x32x64xf32>,
                    %out: memref<1x4x16x64xf32>) {
  "rock.gridwise_attention_accel"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, causal = false,
      block_size = 256, grid_size = 4, m_per_block = 32, n_per_block = 64,
      operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x16x64xf32>, memref<1x4x32x64xf32>, memref<1x4x32x64xf32>, memref<1x4x16x64xf32>) -> ()
  return
}

// Paged and dense global loads.
// CHECK-LABEL: func.func @global_loads
// CHECK: "rock.global_load"(%{{\w+}}, %{{\w+}}, %{{\w+}}, %{{\w+}}) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 2048 : i64} : (memref<1xf16>, index, i1, i64) -> vector<8xf16>
// CHECK: "rock.global_load"(%{{\w+}}, %{{\w+}}, %{{\w+}}) {operandSegmentSizes = array<i32: 1, 2, 0, 0>} : (memref<4x8xf32>, index, index) -> f32
func.func @global_loads(%mem: memref<1xf16>, %off: index, %valid: i1, %ptr: i64, %dense: memref<4x8xf32>) {
  %v = "rock.global_load"(%mem, %off, %valid, %ptr) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 2048}
    : (memref<1xf16>, index, i1, i64) -> vector<8xf16>
  %s = "rock.global_load"(%dense, %off, %off) {operandSegmentSizes = array<i32: 1, 2, 0, 0>}
    : (memref<4x8xf32>, index, index) -> f32
  return
}

// Tile loads of the load path (L2 blockwise, L3 threadwise), paged source.
// CHECK-LABEL: func.func @tile_loads
// CHECK: "rock.blockwise_load_tile"(%{{\w+}}, %{{\w+}}, %{{\w+}}, %{{\w+}}, %{{\w+}})
// CHECK-SAME: operandSegmentSizes = array<i32: 1, 1, 2, 1>, page_size = 256 : i64
// CHECK: "rock.threadwise_read_into"(%{{\w+}}, %{{\w+}}, %{{\w+}}, %{{\w+}}, %{{\w+}}, %{{\w+}})
// CHECK-SAME: num_pages_per_batch = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>, page_size = 256 : i64, tile_shape = array<i64: 32, 16>, vector_dim = 1 : i64, vector_len = 8 : i64
func.func @tile_loads(%table: memref<2x8x1xi64>, %b: index, %t: index) {
  %pages = "rock.deref"(%table) : (memref<2x8x1xi64>) -> memref<2x8x256xf16>
  %tile = "rock.alloc"() : () -> memref<32x16xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %table) {map = affine_map<(b, t, d, n) -> (b, (t * 16 + n) * 32 + d)>,
      block_size = 64, page_size = 256, operandSegmentSizes = array<i32: 1, 1, 2, 1>}
    : (memref<2x8x256xf16>, memref<32x16xf16, #gpu.address_space<workgroup>>, index, index, memref<2x8x1xi64>) -> ()
  %ptrs = "rock.alloc"() : () -> memref<2xi64, #gpu.address_space<workgroup>>
  %regs = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %t, %ptrs, %t) {map = affine_map<(b, t, d, n) -> (b, (t * 16 + n) * 32 + d)>,
      block_size = 64, tile_shape = array<i64: 32, 16>, vector_dim = 1, vector_len = 8, page_size = 256, num_pages_per_batch = 8,
      operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>}
    : (memref<2x8x256xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @serving_views
// CHECK: "rock.block_table_view"(%{{.*}}, %{{.*}}) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x64xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
// CHECK: "rock.block_table_view"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {layout = "hnd", operandSegmentSizes = array<i32: 1, 1, 1, 1>}
// CHECK: "rock.varlen_view"(%{{.*}}, %{{.*}}) : (memref<8x4x64xf16>, memref<3xi32>) -> memref<2x4x4x64xf16>
func.func @serving_views(%pool: memref<8x16x2x64xf16>, %hnd: memref<8x2x16x64xf16>, %table: memref<2x4xi32>, %indices: memref<8xi32>,
                         %indptr: memref<3xi32>, %last: memref<2xi32>, %packed: memref<8x4x64xf16>) {
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x64xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  %v = "rock.block_table_view"(%hnd, %indices, %indptr, %last) {layout = "hnd", operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x2x16x64xf16>, memref<8xi32>, memref<3xi32>, memref<2xi32>) -> memref<2x8x1024xf16>
  %q = "rock.varlen_view"(%packed, %indptr) : (memref<8x4x64xf16>, memref<3xi32>) -> memref<2x4x4x64xf16>
  return
}

// -----

// A stacked K/V cache (vLLM Triton, FlashInfer: [num_blocks, 2, block_size, Hkv, D]): K and V are strided
// pools, subviews of the one tensor, their block stride twice a block's elements, V one block's elements in.
// CHECK-LABEL: func.func @stacked_views
// CHECK: "rock.block_table_view"(%{{.*}}, %{{.*}}) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x64xf16, strided<[4096, 128, 64, 1]>>, memref<2x4xi32>) -> memref<2x8x1024xf16>
// CHECK: "rock.block_table_view"(%{{.*}}, %{{.*}}) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<?x16x2x64xf16, strided<[2048, 128, 64, 1], offset: ?>>, memref<2x4xi32>) -> memref<2x8x1024xf16>
func.func @stacked_views(%kv: memref<8x2x16x2x64xf16>, %kv0: memref<2x?x16x2x64xf16>, %table: memref<2x4xi32>, %n: index) {
  %k_cache = memref.subview %kv[0, 0, 0, 0, 0] [8, 1, 16, 2, 64] [1, 1, 1, 1, 1] : memref<8x2x16x2x64xf16> to memref<8x16x2x64xf16, strided<[4096, 128, 64, 1]>>
  %v_cache = memref.subview %kv0[1, 0, 0, 0, 0] [1, %n, 16, 2, 64] [1, 1, 1, 1, 1] : memref<2x?x16x2x64xf16> to memref<?x16x2x64xf16, strided<[2048, 128, 64, 1], offset: ?>>
  %k = "rock.block_table_view"(%k_cache, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x64xf16, strided<[4096, 128, 64, 1]>>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<?x16x2x64xf16, strided<[2048, 128, 64, 1], offset: ?>>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  return
}

// -----

// vLLM's paged-attention caches in place: key [num_blocks, Hkv, D/x, block_size, x] (x = 8 f16), value
// [num_blocks, Hkv, D, block_size], read by rock.attention through one block table.
// CHECK-LABEL: func.func @vllm_pa_views
// CHECK: "rock.block_table_view"(%{{.*}}, %{{.*}}) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x8x16x8xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
// CHECK: "rock.block_table_view"(%{{.*}}, %{{.*}}) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x64x16xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
// CHECK: "rock.attention"
func.func @vllm_pa_views(%q: memref<2x4x1x64xf16>, %key_cache: memref<8x2x8x16x8xf16>, %value_cache: memref<8x2x64x16xf16>,
                         %table: memref<2x4xi32>, %lens: memref<2xi32>, %out: memref<2x4x1x64xf16>) {
  %k = "rock.block_table_view"(%key_cache, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x8x16x8xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  %v = "rock.block_table_view"(%value_cache, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x64x16xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  "rock.attention"(%q, %k, %v, %lens, %out) {num_heads_q = 4, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x4x1x64xf16>, memref<2x8x1024xf16>, memref<2x8x1024xf16>, memref<2xi32>, memref<2x4x1x64xf16>) -> ()
  return
}
