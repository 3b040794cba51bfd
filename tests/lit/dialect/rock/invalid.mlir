// Each verifier error of the rock ops, at the op's location.
// RUN: pagedir-opt %s --split-input-file --verify-diagnostics

func.func @alloc_empty() {
  // expected-error @+1 {{'rock.alloc' op the size of rock.alloc should be greater than zero, got 0 bytes}}
  %b = "rock.alloc"() : () -> memref<0xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @alloc_dynamic() {
  // expected-error @+1 {{'rock.alloc' op requires a static shape, got memref<?xi8, #gpu.address_space<workgroup>>}}
  %b = "rock.alloc"() : () -> memref<?xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @alloc_global() {
  // expected-error @+1 {{'rock.alloc' op requires a workgroup or private memory space, got memref<16xi8>}}
  %b = "rock.alloc"() : () -> memref<16xi8>
  return
}

// -----

func.func @alloc_not_memref() {
  // expected-error @+1 {{expected base type 'builtin.memref' but got 'builtin.integer'}}
  %b = "rock.alloc"() : () -> i32
  return
}

// -----

func.func @alloc_operands(%n: index) {
  // expected-error @+1 {{op expects exactly 0 operands, but got 1}}
  %b = "rock.alloc"(%n) : (index) -> memref<16xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @live_in_block_argument(%b: memref<16xi8, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{'rock.live_in' op operand of rock.live_in must be the result of a rock.alloc, got a block argument}}
  "rock.live_in"(%b) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

func.func @live_out_of_view() {
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %v = memref.view %b[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.live_out' op operand of rock.live_out must be the result of a rock.alloc, got a result of memref.view}}
  "rock.live_out"(%v) : (memref<16xf32, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

func.func @live_in_private() {
  %b = "rock.alloc"() : () -> memref<16xf32, #gpu.address_space<private>>
  // expected-error @below {{'rock.live_in' op operand of rock.live_in must be an LDS (workgroup) memref, got memref<16xf32, #gpu.address_space<private>>}}
  "rock.live_in"(%b) : (memref<16xf32, #gpu.address_space<private>>) -> ()
  return
}

// -----

func.func @deref_table_shape(%t: memref<2x8x2xi64>) {
  // expected-error @+1 {{'rock.deref' op page table must be a static memref<B x P x 1 x i64>, got memref<2x8x2xi64>}}
  %k = "rock.deref"(%t) : (memref<2x8x2xi64>) -> memref<2x8x2048xf16>
  return
}

// -----

func.func @deref_table_type(%t: memref<2x8x1xi32>) {
  // expected-error @+1 {{page table must be a static memref<B x P x 1 x i64>, got memref<2x8x1xi32>}}
  %k = "rock.deref"(%t) : (memref<2x8x1xi32>) -> memref<2x8x2048xf16>
  return
}

// -----

func.func @deref_result_rank(%t: memref<2x8x1xi64>) {
  // expected-error @+1 {{'rock.deref' op result must be a static memref<B x P x S x T>, got memref<2x8x16x128xf16>}}
  %k = "rock.deref"(%t) : (memref<2x8x1xi64>) -> memref<2x8x16x128xf16>
  return
}

// -----

func.func @deref_page_count(%t: memref<2x8x1xi64>) {
  // expected-error @+1 {{'rock.deref' op result batch and page counts [2, 4] must match the page table's [2, 8]}}
  %k = "rock.deref"(%t) : (memref<2x8x1xi64>) -> memref<2x4x2048xf16>
  return
}

// -----

func.func @deref_empty_page(%t: memref<2x8x1xi64>) {
  // expected-error @+1 {{'rock.deref' op page size (elements per page) must be positive, got 0}}
  %k = "rock.deref"(%t) : (memref<2x8x1xi64>) -> memref<2x8x0xf16>
  return
}

// -----

func.func @attention_gqa(%q: memref<1x6x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x6x1x64xf16>) {
  // expected-error @+1 {{'rock.attention' op num_heads_q (6) must be a multiple of num_heads_kv (4)}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 6, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x6x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1x6x1x64xf16>) -> ()
  return
}

// -----

func.func @attention_heads_attr(%q: memref<1x8x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x8x1x64xf16>) {
  // expected-error @+1 {{'rock.attention' op num_heads_q = 4 but the query has 8 heads}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x8x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1x8x1x64xf16>) -> ()
  return
}

// -----

func.func @attention_head_dim(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x128xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{'rock.attention' op k: K/V head dim 128 differs from the query head dim 64}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x128xf16>, memref<1x4x32x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

func.func @attention_out_shape(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x4x2x64xf16>) {
  // expected-error @+1 {{'rock.attention' op out shape [1, 4, 2, 64] must equal the query shape [1, 4, 1, 64]}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1x4x2x64xf16>) -> ()
  return
}

// -----

func.func @attention_element_types(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf32>, %v: memref<1x4x32x64xf16>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{'rock.attention' op k element type f32 differs from the query's f16}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf32>, memref<1x4x32x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

func.func @attention_kv_tokens(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x16x64xf16>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{'rock.attention' op k holds 32 tokens per sequence but v holds 16}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x16x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

// Paged K/V must hold a whole number of tokens: 8 pages x 100 elements is not a multiple of 2 x 128.
func.func @attention_paged_capacity(%q: memref<2x8x1x128xf16>, %kt: memref<2x8x1xi64>, %vt: memref<2x8x1xi64>, %out: memref<2x8x1x128xf16>) {
  %k = "rock.deref"(%kt) : (memref<2x8x1xi64>) -> memref<2x8x100xf16>
  %v = "rock.deref"(%vt) : (memref<2x8x1xi64>) -> memref<2x8x100xf16>
  // expected-error @+1 {{'rock.attention' op k: paged K/V hold 8 pages x 100 elements = 800 elements per batch, not a whole number of tokens of num_heads_kv x head_dim = 2 x 128}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<2x8x100xf16>, memref<2x8x100xf16>, memref<2x8x1x128xf16>) -> ()
  return
}

// -----

func.func @attention_paged_batch(%q: memref<2x8x1x128xf16>, %kt: memref<3x8x1xi64>, %vt: memref<2x8x1xi64>, %out: memref<2x8x1x128xf16>) {
  %k = "rock.deref"(%kt) : (memref<3x8x1xi64>) -> memref<3x8x2048xf16>
  %v = "rock.deref"(%vt) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  // expected-error @+1 {{'rock.attention' op k batch 3 differs from the query batch 2}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<3x8x2048xf16>, memref<2x8x2048xf16>, memref<2x8x1x128xf16>) -> ()
  return
}

// -----

func.func @attention_seq_lens(%q: memref<2x4x1x64xf16>, %k: memref<2x4x32x64xf16>, %v: memref<2x4x32x64xf16>, %lens: memref<2xi64>, %out: memref<2x4x1x64xf16>) {
  // expected-error @+1 {{'rock.attention' op seq_lens must be memref<2xi32>, got memref<2xi64>}}
  "rock.attention"(%q, %k, %v, %lens, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x4x1x64xf16>, memref<2x4x32x64xf16>, memref<2x4x32x64xf16>, memref<2xi64>, memref<2x4x1x64xf16>) -> ()
  return
}

// -----

func.func @attention_element_type(%q: memref<1x4x1x64xi8>, %k: memref<1x4x32x64xi8>, %v: memref<1x4x32x64xi8>, %out: memref<1x4x1x64xi8>) {
  // expected-error @+1 {{'rock.attention' op element type must be f16, bf16 or f32, got i8}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xi8>, memref<1x4x32x64xi8>, memref<1x4x32x64xi8>, memref<1x4x1x64xi8>) -> ()
  return
}

// -----

func.func @attention_scale_type(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{'rock.attention' op attribute 'scale' must be f32 float, got 1.250000e-01 : f64}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, scale = 0.125 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

func.func @attention_missing_heads(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{attribute "num_heads_kv" is expected but not provided}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

func.func @global_load_two_indices(%mem: memref<1xf16>, %i: index, %ptr: i64) {
  // expected-error @+1 {{'rock.global_load' op with a page_ptr expects exactly one index (the offset in the page), got 2}}
  %v = "rock.global_load"(%mem, %i, %i, %ptr) {operandSegmentSizes = array<i32: 1, 2, 0, 1>, page_size = 2048}
    : (memref<1xf16>, index, index, i64) -> vector<8xf16>
  return
}

// -----

func.func @global_load_page_size(%mem: memref<1xf16>, %i: index, %ptr: i64) {
  // expected-error @+1 {{'rock.global_load' op page_size 2044 must be a positive multiple of the vector width 8 of vector<8xf16>}}
  %v = "rock.global_load"(%mem, %i, %ptr) {operandSegmentSizes = array<i32: 1, 1, 0, 1>, page_size = 2044}
    : (memref<1xf16>, index, i64) -> vector<8xf16>
  return
}

// -----

func.func @global_load_no_page_size(%mem: memref<1xf16>, %i: index, %ptr: i64) {
  // expected-error @+1 {{'rock.global_load' op with a page_ptr requires a page_size attribute}}
  %v = "rock.global_load"(%mem, %i, %ptr) {operandSegmentSizes = array<i32: 1, 1, 0, 1>}
    : (memref<1xf16>, index, i64) -> vector<8xf16>
  return
}

// -----

func.func @global_load_element_type(%mem: memref<4xf32>, %i: index) {
  // expected-error @+1 {{'rock.global_load' op result element type f16 does not match the memref element type f32}}
  %v = "rock.global_load"(%mem, %i) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4xf32>, index) -> vector<4xf16>
  return
}

// -----

func.func @global_load_rank(%mem: memref<4x4xf32>, %i: index) {
  // expected-error @+1 {{'rock.global_load' op expects 2 indices for memref<4x4xf32>, got 1}}
  %v = "rock.global_load"(%mem, %i) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x4xf32>, index) -> f32
  return
}

// -----

// `valid` takes the same inputs as `map` (indices, then tile coordinates).
func.func @valid_inputs(%q: memref<64x64xf16>, %i: index) {
  %tile = "rock.alloc"() : () -> memref<16x64xf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.blockwise_load_tile' op valid must take the 3 inputs of map and no symbols, got (d0, d1) -> (d0 - d1)}}
  "rock.blockwise_load_tile"(%q, %tile, %i) {map = affine_map<(i, r, c) -> (i * 16 + r, c)>, valid = affine_map<(i, r) -> (i - r)>,
      block_size = 64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<64x64xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// `lds_swizzle` chunks: [chunk, rows per step, steps, multiplier], steps and multiplier powers of two.
func.func @swizzle_fields(%q: memref<64x64xf16>, %i: index) {
  %tile = "rock.alloc"() : () -> memref<16x64xf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.blockwise_load_tile' op lds_swizzle must be [chunk, rows per step, steps, multiplier], positive, the last two powers of two, got [8, 1, 3, 1]}}
  "rock.blockwise_load_tile"(%q, %tile, %i) {map = affine_map<(i, r, c) -> (i * 16 + r, c)>, lds_swizzle = array<i64: 8, 1, 3, 1>,
      block_size = 64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<64x64xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// The swizzled chunks must stay inside a row: chunk * steps * multiplier divides the row.
func.func @swizzle_past_the_row(%q: memref<64x64xf16>, %i: index) {
  %tile = "rock.alloc"() : () -> memref<16x64xf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.blockwise_load_tile' op lds_swizzle [8, 1, 16, 1]: chunk * steps * multiplier must divide the last dim of a static dest of rank >= 2, got memref<16x64xf16, #gpu.address_space<workgroup>>}}
  "rock.blockwise_load_tile"(%q, %tile, %i) {map = affine_map<(i, r, c) -> (i * 16 + r, c)>, lds_swizzle = array<i64: 8, 1, 16, 1>,
      block_size = 64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<64x64xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// operandSegmentSizes must split the operands into the declared groups (IRDL checks it for ops with
// more than one optional or variadic operand, as rock.attention now has).

func.func @segments_past_the_operands(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %s: memref<1xi32>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{element 10 in 'operandSegmentSizes' attribute must be equal to 1}}
  "rock.attention"(%q, %k, %v, %s, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 3>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1xi32>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

func.func @valid_no_result(%q: memref<64x64xf16>, %i: index) {
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  // expected-error @+1 {{'rock.threadwise_read_into' op valid must have at least one result, got (d0, d1, d2) -> ()}}
  "rock.threadwise_read_into"(%q, %regs, %i) {map = affine_map<(i, r, c) -> (i * 16 + r, c)>, valid = affine_map<(i, r, c) -> ()>, block_size = 64,
      tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}
    : (memref<64x64xf16>, memref<2x8xf16, #gpu.address_space<private>>, index) -> ()
  return
}

// -----

func.func @segments_too_few(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{'operandSegmentSizes' attribute for specifying operand segments must have 11 elements, but got 10}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

func.func @segments_not_i32(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{'operandSegmentSizes' attribute is expected to be a dense i32 array}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i8: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

func.func @segments_negative(%q: memref<1x4x1x64xf16>, %k: memref<1x4x32x64xf16>, %v: memref<1x4x32x64xf16>, %out: memref<1x4x1x64xf16>) {
  // expected-error @+1 {{'operandSegmentSizes' attribute for specifying operand segments must have non-negative values}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 4, num_heads_kv = 4, operandSegmentSizes = array<i32: 1, 1, 1, -1, 0, 0, 0, 0, 0, 0, 2>}
    : (memref<1x4x1x64xf16>, memref<1x4x32x64xf16>, memref<1x4x32x64xf16>, memref<1x4x1x64xf16>) -> ()
  return
}

// -----

func.func @segments_sum(%mem: memref<4xf32>, %i: index) {
  // IRDL checks the sum when the variadic and optional sizes are what is wrong.
  // expected-error @+1 {{sum of elements in 'operandSegmentSizes' attribute must be equal to the number of operands}}
  %v = "rock.global_load"(%mem, %i) {operandSegmentSizes = array<i32: 1, 3, 0, 0>} : (memref<4xf32>, index) -> f32
  return
}

// -----

// Launch attributes are launch sizes everywhere (passes, interpreter): integers in range.
// expected-error @+1 {{'func.func' op attribute 'rock.block_size' must be an integer in 1 .. 1024, got 9223372036854775807 : i64}}
func.func @block_size_too_large() attributes {rock.kernel, rock.block_size = 9223372036854775807 : i64, rock.grid_size = 1 : i64} {
  return
}

// -----

func.func @gridwise_zero_splits(%q: memref<1x2x1x64xf16>, %k: memref<1x1x128x64xf16>, %v: memref<1x1x128x64xf16>,
                                %out: memref<1x2x1x64xf16>) {
  // expected-error @+1 {{'rock.gridwise_attention_accel' op num_splits must be at least 1 (0: chosen at launch, with dynamic sizes only), got 0}}
  "rock.gridwise_attention_accel"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, num_splits = 0, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x128x64xf16>, memref<1x1x128x64xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op attribute 'rock.grid_size' must be an integer in 1 .. 4294967295, got 1099511627776 : i64}}
func.func @grid_size_past_32_bits() attributes {rock.kernel, rock.block_size = 64 : i64, rock.grid_size = 1099511627776 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op attribute 'rock.block_size' must be an integer in 1 .. 1024, got "64"}}
func.func @block_size_not_an_integer() attributes {rock.kernel, rock.block_size = "64", rock.grid_size = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op attribute 'rock.grid_size' must be an integer in 1 .. 4294967295, got 0 : i64}}
func.func @grid_size_zero() attributes {rock.kernel, rock.block_size = 64 : i64, rock.grid_size = 0 : i64} {
  return
}

// -----

func.func @gridwise_more_splits_than_tiles(%q: memref<1x2x1x64xf16>, %k: memref<1x1x128x64xf16>, %v: memref<1x1x128x64xf16>,
                                           %out: memref<1x2x1x64xf16>) {
  // expected-error @+1 {{'rock.gridwise_attention_accel' op num_splits 5 exceeds the 4 KV tiles of 32 tokens a sequence holds: a split takes at least one tile}}
  "rock.gridwise_attention_accel"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 5, m_per_block = 2, n_per_block = 32, num_splits = 5, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x128x64xf16>, memref<1x1x128x64xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Block tables hold i32 block ids.
func.func @view_table_i64(%pool: memref<8x16x2x128xf16>, %table: memref<2x4xi64>) {
  // expected-error @+1 {{'rock.block_table_view' op table must hold i32 block ids, got memref<2x4xi64>}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x128xf16>, memref<2x4xi64>) -> memref<2x8x2048xf16>
  return
}

// -----

// The result's pages are block_size x D elements of the pool: 16 x 128 = 2048, not 1024.
func.func @view_page_mismatch(%pool: memref<8x16x2x128xf16>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op result memref<2x8x1024xf16> must be memref<B x (Hkv * max_blocks) x (block_size * D)> for a pool of Hkv = 2, block_size = 16, D = 128}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x128xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  return
}

// -----

// 8 pages of 2 heads are 4 block slots per sequence: the table has 5.
func.func @view_table_shape(%pool: memref<8x2x16x128xf16>, %table: memref<2x5xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op block table must be memref<2x4xi32> (batch x max_blocks of the result), got memref<2x5xi32>}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "hnd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x16x128xf16>, memref<2x5xi32>) -> memref<2x8x2048xf16>
  return
}

// -----

func.func @view_layout(%pool: memref<8x16x2x128xf16>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op layout must be "nhd", "hnd" or "vllm-pa", got "nchw"}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nchw", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x128xf16>, memref<2x4xi32>) -> memref<2x8x2048xf16>
  return
}

// -----

func.func @view_pool_element(%pool: memref<8x16x2x128xf32>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op result must be memref<B x P x S x f32>, got memref<2x8x2048xf16>}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x128xf32>, memref<2x4xi32>) -> memref<2x8x2048xf16>
  return
}

// -----

// CSR: kv_indptr has B + 1 entries.
func.func @view_csr_indptr(%pool: memref<8x16x2x128xf16>, %indices: memref<8xi32>, %indptr: memref<2xi32>, %last: memref<2xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op kv_indptr must be memref<3xi32>, got memref<2xi32>}}
  %k = "rock.block_table_view"(%pool, %indices, %indptr, %last) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x16x2x128xf16>, memref<8xi32>, memref<2xi32>, memref<2xi32>) -> memref<2x8x2048xf16>
  return
}

// -----

// The pools' heads and head dim are the attention's.
func.func @attention_pool_heads(%q: memref<2x8x1x128xf16>, %kc: memref<8x16x4x128xf16>, %vc: memref<8x16x4x128xf16>, %table: memref<2x2xi32>, %lens: memref<2xi32>, %out: memref<2x8x1x128xf16>) {
  %k = "rock.block_table_view"(%kc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x4x128xf16>, memref<2x2xi32>) -> memref<2x8x2048xf16>
  %v = "rock.block_table_view"(%vc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x4x128xf16>, memref<2x2xi32>) -> memref<2x8x2048xf16>
  // expected-error @+1 {{'rock.attention' op k: the cache pool holds 4 heads of dim 128, the attention 2 KV heads of dim 128}}
  "rock.attention"(%q, %k, %v, %lens, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<2x8x2048xf16>, memref<2x8x2048xf16>, memref<2xi32>, memref<2x8x1x128xf16>) -> ()
  return
}

// -----

// CSR tables carry the lengths.
func.func @attention_csr_seq_lens(%q: memref<2x8x1x128xf16>, %kc: memref<8x16x2x128xf16>, %vc: memref<8x16x2x128xf16>, %indices: memref<8xi32>, %indptr: memref<3xi32>, %last: memref<2xi32>, %lens: memref<2xi32>, %out: memref<2x8x1x128xf16>) {
  %k = "rock.block_table_view"(%kc, %indices, %indptr, %last) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x16x2x128xf16>, memref<8xi32>, memref<3xi32>, memref<2xi32>) -> memref<2x8x2048xf16>
  %v = "rock.block_table_view"(%vc, %indices, %indptr, %last) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x16x2x128xf16>, memref<8xi32>, memref<3xi32>, memref<2xi32>) -> memref<2x8x2048xf16>
  // expected-error @+1 {{'rock.attention' op takes no seq_lens with csr page tables: the lengths come from kv_indptr and kv_last_page_len}}
  "rock.attention"(%q, %k, %v, %lens, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<2x8x2048xf16>, memref<2x8x2048xf16>, memref<2xi32>, memref<2x8x1x128xf16>) -> ()
  return
}

// -----

// seq_len_k = 40 tokens of 2 x 128 are 10240 elements: 3 pages of 2048 do not hold them.
func.func @attention_deref_seq_len_k(%q: memref<2x8x1x128xf16>, %kt: memref<2x3x1xi64>, %vt: memref<2x3x1xi64>, %out: memref<2x8x1x128xf16>) {
  %k = "rock.deref"(%kt) {seq_len_k = 40} : (memref<2x3x1xi64>) -> memref<2x3x2048xf16>
  %v = "rock.deref"(%vt) {seq_len_k = 40} : (memref<2x3x1xi64>) -> memref<2x3x2048xf16>
  // expected-error @+1 {{'rock.attention' op k: seq_len_k = 40 tokens of num_heads_kv x head_dim = 2 x 128 are 10240 elements per batch, which 3 pages of 2048 elements do not end in}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<2x3x2048xf16>, memref<2x3x2048xf16>, memref<2x8x1x128xf16>) -> ()
  return
}

// -----

func.func @varlen_cu_seqlens(%packed: memref<8x4x64xf16>, %cu: memref<2xi32>) {
  // expected-error @+1 {{'rock.varlen_view' op cu_seqlens_q must be memref<3xi32>, got memref<2xi32>}}
  %q = "rock.varlen_view"(%packed, %cu) : (memref<8x4x64xf16>, memref<2xi32>) -> memref<2x4x4x64xf16>
  return
}

// -----

func.func @varlen_heads(%packed: memref<8x4x64xf16>, %cu: memref<3xi32>) {
  // expected-error @+1 {{'rock.varlen_view' op result memref<2x2x4x64xf16> must have the heads and head dim of the packed memref<8x4x64xf16>}}
  %q = "rock.varlen_view"(%packed, %cu) : (memref<8x4x64xf16>, memref<3xi32>) -> memref<2x2x4x64xf16>
  return
}

// -----

// Dynamic sizes: only the pool's blocks, the batch, the block slots and nnz may be '?';
// the block size, Hkv and D are what the kernel is compiled for.
func.func @dynamic_block_size(%pool: memref<?x?x2x128xf16>, %table: memref<?x?xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op pool memref<?x?x2x128xf16> may be dynamic only in its blocks}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<?x?x2x128xf16>, memref<?x?xi32>) -> memref<?x?x2048xf16>
  return
}

// -----

// A static page count with a dynamic block table: the slots must be '?' in both or neither.
func.func @dynamic_table_static_pages(%pool: memref<?x16x2x128xf16>, %table: memref<?x?xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op block table must be memref<?x4xi32> (batch x max_blocks of the result), got memref<?x?xi32>}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<?x16x2x128xf16>, memref<?x?xi32>) -> memref<?x8x2048xf16>
  return
}

// -----

// A dynamic batch in the view but not in kv_indptr.
func.func @dynamic_csr_batch(%pool: memref<?x2x16x128xf16>, %indices: memref<?xi32>, %indptr: memref<3xi32>, %last: memref<?xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op kv_indptr must be memref<?xi32>, got memref<3xi32>}}
  %k = "rock.block_table_view"(%pool, %indices, %indptr, %last) {layout = "hnd", operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<?x2x16x128xf16>, memref<?xi32>, memref<3xi32>, memref<?xi32>) -> memref<?x?x2048xf16>
  return
}

// -----

// Sq of packed queries is static: it bounds each sequence's queries and sizes the grid.
func.func @dynamic_varlen_sq(%q: memref<?x8x128xf16>, %cu: memref<?xi32>) {
  // expected-error @+1 {{'rock.varlen_view' op result memref<?x8x?x128xf16> may be dynamic only in its batch}}
  %p = "rock.varlen_view"(%q, %cu) : (memref<?x8x128xf16>, memref<?xi32>) -> memref<?x8x?x128xf16>
  return
}

// -----

// The attention's head dim (or heads) cannot be dynamic.
func.func @dynamic_head_dim(%q: memref<?x8x1x?xf16>, %k: memref<2x2x16x128xf16>, %v: memref<2x2x16x128xf16>, %out: memref<?x8x1x?xf16>) {
  // expected-error @+1 {{'rock.attention' op q memref<?x8x1x?xf16> has a dynamic dim 3: only the batch (of q, out, seq_lens and k/v together) and a block-table view's pages may be dynamic}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x?xf16>, memref<2x2x16x128xf16>, memref<2x2x16x128xf16>, memref<?x8x1x?xf16>) -> ()
  return
}

// -----

// Dense K/V of a static batch against a dynamic query batch.
func.func @dynamic_q_static_kv(%q: memref<?x8x1x128xf16>, %k: memref<2x2x16x128xf16>, %v: memref<2x2x16x128xf16>, %out: memref<?x8x1x128xf16>) {
  // expected-error @+2 {{'rock.attention' op k batch 2 differs from the query batch ?}}
  // expected-error @+1 {{'rock.attention' op v batch 2 differs from the query batch ?}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x128xf16>, memref<2x2x16x128xf16>, memref<2x2x16x128xf16>, memref<?x8x1x128xf16>) -> ()
  return
}

// -----

// A pointer table may have a dynamic batch, not a dynamic page count.
func.func @deref_dynamic_pages(%table: memref<?x?x1xi64>) {
  // expected-error @+1 {{'rock.deref' op page table must be a static memref<B x P x 1 x i64>, got memref<?x?x1xi64>}}
  %k = "rock.deref"(%table) : (memref<?x?x1xi64>) -> memref<?x?x2048xf16>
  return
}

// -----

// Strided pools (a half of a stacked K/V cache): rows of D contiguous elements.
func.func @view_strided_columns(%pool: memref<8x16x2x64xf16, strided<[4096, 256, 128, 2]>>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op pool memref<8x16x2x64xf16, strided<[4096, 256, 128, 2]>> must hold each row of D = 64 elements contiguously (column stride 1), got 2}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x64xf16, strided<[4096, 256, 128, 2]>>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  return
}

// -----

// Strides known at run time: the page addresses and the loads' descriptors are compiled in.
func.func @view_dynamic_stride(%pool: memref<8x16x2x64xf16, strided<[?, 128, 64, 1]>>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op pool memref<8x16x2x64xf16, strided<[?, 128, 64, 1]>> must have static strides (only its offset may be '?'), got strides [?, 128, 64, 1]}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x64xf16, strided<[?, 128, 64, 1]>>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  return
}

// -----

// An offset that puts rows off the 16-byte alignment of a contiguous pool's rows.
func.func @view_misaligned_offset(%pool: memref<8x16x2x64xf16, strided<[4096, 128, 64, 1], offset: 4>>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op pool memref<8x16x2x64xf16, strided<[4096, 128, 64, 1], offset: 4>>: the offset 4 must be a multiple of 8 elements (16 bytes), as the rows of a contiguous pool are aligned}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x64xf16, strided<[4096, 128, 64, 1], offset: 4>>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  return
}

// -----

// Tokens 32 elements apart with rows of 64: two tokens' rows overlap.
func.func @view_overlapping_rows(%pool: memref<8x2x16x64xf16, strided<[4096, 2048, 32, 1]>>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op pool memref<8x2x16x64xf16, strided<[4096, 2048, 32, 1]>>: the token stride 32 is smaller than the 64 elements the dims inside it span (two elements of the pool at one address)}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "hnd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x16x64xf16, strided<[4096, 2048, 32, 1]>>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  return
}

// -----

// vLLM's paged-attention key cache splits D into 16-byte chunks: x = 16 / 2 bytes = 8 for f16.
func.func @view_vllm_pa_key_chunk(%pool: memref<8x2x8x16x4xf16>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op vllm-pa key pool memref<8x2x8x16x4xf16> must be [num_blocks, Hkv, D/x, block_size, x] with x = 16 bytes / 2-byte elements = 8, got x = 4}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x8x16x4xf16>, memref<2x4xi32>) -> memref<2x8x512xf16>
  return
}

// -----

// The value cache is read 16 bytes (8 bf16 tokens) at a time along a block's tokens: blocks of 4 tokens would split a load.
func.func @view_vllm_pa_value_block(%pool: memref<8x2x32x4xbf16>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op vllm-pa value pool memref<8x2x32x4xbf16> ([num_blocks, Hkv, D, block_size]) has block_size 4, not a multiple of the 8 tokens of one 16-byte load}}
  %v = "rock.block_table_view"(%pool, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x32x4xbf16>, memref<2x4xi32>) -> memref<2x8x128xbf16>
  return
}

// -----

func.func @view_vllm_pa_rank(%pool: memref<8x2x4x16x8x1xf16>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op pool must be a 5-d key pool [num_blocks, Hkv, D/x, block_size, x], a 4-d value pool [num_blocks, Hkv, D, block_size] or a 3-d scale pool [num_blocks, Hkv, block_size] (vllm-pa), got memref<8x2x4x16x8x1xf16>}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x4x16x8x1xf16>, memref<2x4xi32>) -> memref<2x8x512xf16>
  return
}

// -----

// A 5-d pool is vllm-pa's key cache only: as nhd it is refused, not read with the wrong strides.
func.func @view_nhd_five_d(%pool: memref<8x2x8x16x8xf16>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op pool must be a 4-d memref (nhd), or a 3-d scale pool, got memref<8x2x8x16x8xf16>}}
  %k = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x8x16x8xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  return
}

// -----

// A strided view (half of a stacked tensor) is no vLLM paged-attention cache: each cache is a tensor of its own.
func.func @view_vllm_pa_strided(%pool: memref<8x2x32x16xf16, strided<[2048, 512, 16, 1], offset: 8192>>, %table: memref<2x4xi32>) {
  // expected-error @+1 {{'rock.block_table_view' op vllm-pa pool memref<8x2x32x16xf16, strided<[2048, 512, 16, 1], offset: 8192>> must be contiguous (the identity layout): vLLM's key and value caches are each a whole tensor (kv_cache[0] and kv_cache[1] are two kernel arguments)}}
  %v = "rock.block_table_view"(%pool, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x32x16xf16, strided<[2048, 512, 16, 1], offset: 8192>>, memref<2x4xi32>) -> memref<2x8x512xf16>
  return
}
