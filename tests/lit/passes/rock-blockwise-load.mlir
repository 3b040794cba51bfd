// RUN: pagedir-opt %s --rock-blockwise-load --split-input-file | FileCheck %s

// A K-like tile [D = 32, N = 16] of f16 from pages of 8 tokens (256 elements).
// The tile spans exactly two pages wherever it starts (origins are multiples
// of 512 elements), so the pointer buffer holds 2 pointers (16 bytes).

// CHECK-LABEL: func.func @k_tile
// CHECK-SAME: (%[[TABLE:.*]]: memref<2x8x1xi64>)
// CHECK-DAG: %[[REGS:.*]] = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
// CHECK-DAG: %[[PTR_BYTES:.*]] = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
// CHECK: %[[PTRS:.*]] = memref.view %[[PTR_BYTES]][%{{.*}}][] : memref<16xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
// CHECK: %[[PAGES:.*]] = "rock.deref"(%[[TABLE]])
// CHECK: %[[B:.*]] = affine.apply #{{.*}}(%[[BID:.*]])
// CHECK: %[[T:.*]] = affine.apply #{{.*}}(%[[BID]])
// The page pointers: one thread per page, null past the batch's 8 pages.
// CHECK: scf.execute_region no_inline {
// CHECK:   %[[TID:.*]] = "rock.workitem_id"()
// CHECK:   %[[FIRST:.*]] = affine.apply #[[FIRST_MAP:.*]](%[[B]], %[[T]])
// CHECK:   %[[BATCH:.*]] = affine.apply #{{.*}}(%[[B]], %[[T]])
// CHECK:   %[[IS_LOADER:.*]] = arith.cmpi ult, %[[TID]], %c2
// CHECK:   scf.if %[[IS_LOADER]] {
// CHECK:     %[[PAGE:.*]] = arith.addi %[[FIRST]], %[[TID]]
// CHECK:     %[[IN_TABLE:.*]] = arith.cmpi ult, %[[PAGE]], %c8
// CHECK:     %[[PTR:.*]] = scf.if %[[IN_TABLE]] -> (i64) {
// CHECK:       %[[LOADED:.*]] = memref.load %[[TABLE]][%[[BATCH]], %[[PAGE]], %{{.*}}] : memref<2x8x1xi64>
// CHECK:       scf.yield %[[LOADED]]
// CHECK:     } else {
// CHECK:       scf.yield %c0_i64
// CHECK:     memref.store %[[PTR]], %[[PTRS]][%[[TID]]]
// CHECK:   "rock.lds_barrier"()
// CHECK:   scf.yield
// CHECK: } {rock.stage = "PagePtrLoad"}
// Threads read in memory order: the tile is read as [N, D] with D in vectors of 8.
// CHECK: scf.execute_region no_inline {
// CHECK:   %[[FIRST2:.*]] = affine.apply #[[FIRST_MAP]](%[[B]], %[[T]])
// CHECK:   "rock.threadwise_read_into"(%[[PAGES]], %[[REGS]], %[[B]], %[[T]], %[[PTRS]], %[[FIRST2]])
// CHECK-SAME: block_size = 64 : i64
// CHECK-SAME: num_pages_per_batch = 8 : i64
// CHECK-SAME: page_size = 256 : i64, tile_shape = array<i64: 16, 32>, vector_dim = 1 : i64, vector_len = 8 : i64
// CHECK: } {rock.stage = "GlobalRead"}
// D is not contiguous in the [D, N] LDS tile: scalar stores.
// CHECK: scf.execute_region no_inline {
// CHECK:   scf.for
// CHECK-COUNT-8: memref.store %{{.*}}, %[[TILE:.*]][%{{.*}}, %{{.*}}] : memref<32x16xf16, #gpu.address_space<workgroup>>
// CHECK:   "rock.lds_barrier"()
// CHECK: } {rock.stage = "LDSWrite"}
// CHECK-NOT: rock.blockwise_load_tile
func.func @k_tile(%table: memref<2x8x1xi64>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x8x1xi64>) -> memref<2x8x256xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<32x16xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 4)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %table) {map = affine_map<(b, t, d, n) -> (b, (t * 16 + n) * 32 + d)>, block_size = 64, page_size = 256, index_bounds = array<i64: 2, 4>, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<2x8x256xf16>, memref<32x16xf16, #gpu.address_space<workgroup>>, index, index, memref<2x8x1xi64>) -> ()
  return
}

// -----

// A V-like tile [N = 12, D = 16] of f32 not aligned to pages of 8 tokens
// (128 elements). Tile t starts at token 12 t, i.e. 0 or 4 tokens into a page,
// so it touches at most 2 pages (16 bytes of pointers); a count that ignores
// where tiles start would reserve 3 (ceil(191 / 128) + 1).
// D is contiguous in the LDS tile: vector stores of 4 x f32; 48 vectors for 32
// threads leave the second row partly empty (guarded).

// CHECK-LABEL: func.func @v_tile_unaligned
// CHECK: "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
// CHECK: "rock.threadwise_read_into"
// CHECK-SAME: tile_shape = array<i64: 12, 16>, vector_dim = 1 : i64, vector_len = 4 : i64
// CHECK: } {rock.stage = "GlobalRead"}
// CHECK: scf.for %[[ROW:.*]] = %c0{{.*}} to %c2
// CHECK:   %[[V:.*]] = affine.apply #{{.*}}(%[[ROW]], %{{.*}})
// CHECK:   %[[IN_TILE:.*]] = arith.cmpi ult, %[[V]], %c48
// CHECK:   scf.if %[[IN_TILE]] {
// CHECK:     %[[VALUE:.*]] = vector.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<2x4xf32, #gpu.address_space<private>>, vector<4xf32>
// CHECK:     vector.store %[[VALUE]], %{{.*}} : memref<12x16xf32, #gpu.address_space<workgroup>>, vector<4xf32>
func.func @v_tile_unaligned(%table: memref<1x4x1xi64>, %t: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 32 : i64, rock.grid_size = 2 : i64} {
  %pages = "rock.deref"(%table) : (memref<1x4x1xi64>) -> memref<1x4x128xf32>
  %raw = "rock.alloc"() : () -> memref<768xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<768xi8, #gpu.address_space<workgroup>> to memref<12x16xf32, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%pages, %tile, %c0, %t, %table) {map = affine_map<(b, t, n, d) -> (b, (t * 12 + n) * 16 + d)>, block_size = 32, page_size = 128, index_bounds = array<i64: 1, 3>, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<1x4x128xf32>, memref<12x16xf32, #gpu.address_space<workgroup>>, index, index, memref<1x4x1xi64>) -> ()
  return
}

// -----

// More pages than threads: a V-like tile [N = 40, D = 8] of f16 from 1-token
// pages (8 elements, SGLang's layout) touches 40 pages; 16 threads stage them in
// ceil(40 / 16) = 3 rounds, thread t writing slots t, t + 16, t + 32. The last
// round covers only 8 slots: its slot is guarded. One barrier follows all rounds.

// CHECK: affine_map<(d0, d1) -> (d0 * 16 + d1)>
// CHECK-LABEL: func.func @one_token_pages
// CHECK-SAME: (%[[TABLE:.*]]: memref<2x96x1xi64>, %[[T:.*]]: index)
// CHECK: %[[PTR_BYTES:.*]] = "rock.alloc"() : () -> memref<320xi8, #gpu.address_space<workgroup>>
// CHECK: %[[PTRS:.*]] = memref.view %[[PTR_BYTES]][%{{.*}}][] : {{.*}} to memref<40xi64, #gpu.address_space<workgroup>>
// CHECK: scf.execute_region no_inline {
// CHECK:   %[[TID:.*]] = "rock.workitem_id"()
// CHECK:   %[[FIRST:.*]] = affine.apply #{{.*}}(%{{.*}}, %[[T]])
// CHECK:   %[[BATCH:.*]] = affine.apply #{{.*}}(%{{.*}}, %[[T]])
// CHECK:   scf.for %[[ROUND:.*]] = %{{.*}} to %c3 step %c1 {
// CHECK:     %[[SLOT:.*]] = affine.apply #{{.*}}(%[[ROUND]], %[[TID]])
// CHECK:     %[[IN_BUFFER:.*]] = arith.cmpi ult, %[[SLOT]], %c40
// CHECK:     scf.if %[[IN_BUFFER]] {
// CHECK:       %[[PAGE:.*]] = arith.addi %[[FIRST]], %[[SLOT]]
// CHECK:       %[[IN_TABLE:.*]] = arith.cmpi ult, %[[PAGE]], %c96
// CHECK:       %[[PTR:.*]] = scf.if %[[IN_TABLE]] -> (i64) {
// CHECK:         memref.load %[[TABLE]][%[[BATCH]], %[[PAGE]], %{{.*}}] : memref<2x96x1xi64>
// CHECK:       memref.store %[[PTR]], %[[PTRS]][%[[SLOT]]]
// CHECK:     }
// CHECK:   }
// CHECK-NEXT: "rock.lds_barrier"()
// CHECK-NEXT: scf.yield
// CHECK: } {rock.stage = "PagePtrLoad"}
// CHECK: "rock.threadwise_read_into"({{.*}}, %[[PTRS]], %{{[^,]*}})
// CHECK-SAME: tile_shape = array<i64: 40, 8>
func.func @one_token_pages(%table: memref<2x96x1xi64>, %t: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 16 : i64, rock.grid_size = 6 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x96x1xi64>) -> memref<2x96x8xf16>
  %raw = "rock.alloc"() : () -> memref<640xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<640xi8, #gpu.address_space<workgroup>> to memref<40x8xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%pages, %tile, %c0, %t, %table) {map = affine_map<(b, t, n, d) -> (b, (t * 40 + n) * 8 + d)>, block_size = 16, page_size = 8, index_bounds = array<i64: 2, 3>, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<2x96x8xf16>, memref<40x8xf16, #gpu.address_space<workgroup>>, index, index, memref<2x96x1xi64>) -> ()
  return
}

// -----

// 32 pages of 2 tokens (a K-like tile [D = 8, N = 64]) for 8 threads: 4 full
// rounds, no slot guard.

// CHECK-LABEL: func.func @rounds_without_a_partial_one
// CHECK: memref.view {{.*}} to memref<32xi64, #gpu.address_space<workgroup>>
// CHECK:   %[[TID:.*]] = "rock.workitem_id"()
// CHECK:   scf.for %[[ROUND:.*]] = %{{.*}} to %c4 step %c1 {
// CHECK-NEXT: %[[SLOT:.*]] = affine.apply #{{.*}}(%[[ROUND]], %[[TID]])
// CHECK-NEXT: %[[PAGE:.*]] = arith.addi %{{.*}}, %[[SLOT]]
// CHECK:      memref.store %{{.*}}, %{{.*}}[%[[SLOT]]] : memref<32xi64, #gpu.address_space<workgroup>>
// CHECK-NEXT: }
// CHECK-NEXT: "rock.lds_barrier"()
func.func @rounds_without_a_partial_one(%table: memref<1x64x1xi64>, %t: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 8 : i64, rock.grid_size = 2 : i64} {
  %pages = "rock.deref"(%table) : (memref<1x64x1xi64>) -> memref<1x64x16xf16>
  %raw = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<8x64xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%pages, %tile, %c0, %t, %table) {map = affine_map<(b, t, d, n) -> (b, (t * 64 + n) * 8 + d)>, block_size = 8, page_size = 16, index_bounds = array<i64: 1, 2>, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<1x64x16xf16>, memref<8x64xf16, #gpu.address_space<workgroup>>, index, index, memref<1x64x1xi64>) -> ()
  return
}

// -----

// A dense tile: no page pointers, the same read and write stages.

// CHECK-LABEL: func.func @dense_tile
// CHECK-NOT: rock.stage = "PagePtrLoad"
// CHECK: "rock.threadwise_read_into"(%{{.*}}, %{{.*}}, %{{.*}}) {block_size = 64 : i64, map = #{{.*}}, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, tile_shape = array<i64: 16, 64>, vector_dim = 1 : i64, vector_len = 8 : i64}
// CHECK: } {rock.stage = "GlobalRead"}
// CHECK: vector.store
// CHECK: } {rock.stage = "LDSWrite"}
func.func @dense_tile(%q: memref<64x64xf16>, %i: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 4 : i64} {
  %raw = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<16x64xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%q, %tile, %i) {map = affine_map<(i, r, c) -> (i * 16 + r, c)>, block_size = 64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<64x64xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// A tile whose keys past %len must not be read: `valid` travels to the
// threadwise read with the tile coordinates in read order. The map of keys
// (t * 16 + n) does not vary along the vector dimension d, so vectors stay 8 wide.
// A wave of 64 lanes reads 8 keys, all in one page of 16 keys: each wave reads
// its page's pointer itself (wave_size), no pointer buffer, no PagePtrLoad stage.

// CHECK: #[[VALID:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2 - d1 * 16 - d3 - 1)>
// CHECK-LABEL: func.func @keys_before_len
// CHECK-SAME: (%[[PAGES:[^:]*]]: memref<2x4x1024xf16>, %[[TABLE:[^:]*]]: memref<2x4x1xi64>, %[[B:[^:]*]]: index, %[[T:[^:]*]]: index, %[[LEN:[^:]*]]: index)
// CHECK-NOT: PagePtrLoad
// CHECK: "rock.threadwise_read_into"(%[[PAGES]], %{{[^,]*}}, %[[B]], %[[T]], %[[LEN]]) {{{.*}}operandSegmentSizes = array<i32: 1, 1, 3, 0, 0>
// CHECK-SAME: valid = #[[VALID]], vector_dim = 1 : i64, vector_len = 8 : i64, wave_size = 64 : i64
// CHECK: } {rock.stage = "GlobalRead"}
// CHECK-NOT: PagePtrLoad
func.func @keys_before_len(%pages: memref<2x4x1024xf16>, %table: memref<2x4x1xi64>, %b: index, %t: index, %len: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %tile = "rock.alloc"() : () -> memref<16x64xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %len, %table) {map = affine_map<(b, t, len, n, d) -> (b, (t * 16 + n) * 64 + d)>,
      valid = affine_map<(b, t, len, n, d) -> (len - t * 16 - n - 1)>, block_size = 64, page_size = 1024,
      index_bounds = array<i64: 2, 4, 65>, operandSegmentSizes = array<i32: 1, 1, 3, 1>}
    : (memref<2x4x1024xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, index, index, index, memref<2x4x1xi64>) -> ()
  return
}

// -----

// A validity that changes along the vector dimension (d < %width) reads one
// element per load: no vector may be valid for only part of its elements.

// CHECK-LABEL: func.func @valid_along_vector
// CHECK: "rock.threadwise_read_into"
// CHECK-SAME: vector_dim = 1 : i64, vector_len = 1 : i64
func.func @valid_along_vector(%q: memref<64x64xf16>, %i: index, %width: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 4 : i64} {
  %tile = "rock.alloc"() : () -> memref<16x64xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%q, %tile, %i, %width) {map = affine_map<(i, w, r, c) -> (i * 16 + r, c)>,
      valid = affine_map<(i, w, r, c) -> (w - c - 1)>, block_size = 64, operandSegmentSizes = array<i32: 1, 1, 2, 0>}
    : (memref<64x64xf16>, memref<16x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
  return
}

// -----

// A V-like tile [N = 8, D = 32] from cache pools viewed through a vLLM block table (nhd):
// the page address is pool + id * block_bytes + head * head_bytes, with block_stride =
// 4 tokens x 2 heads x 32 = 256 elements (512 bytes) and head_stride = D = 32 elements
// (64 bytes); the pool's 4 KiB fit 32 bits, so the byte offset is an i32 product widened
// once. Head and slot of the page in 32 bits. An id outside the pool's 8 blocks (-1
// padding) gives a null page.

// CHECK-LABEL: func.func @blocks_nhd_v_tile
// CHECK-SAME: (%[[POOL:.*]]: memref<8x4x2x32xf16>, %[[TABLE:.*]]: memref<2x4xi32>)
// CHECK: %[[PTRS:.*]] = memref.view %{{.*}} to memref<2xi64, #gpu.address_space<workgroup>>
// CHECK: scf.execute_region no_inline {
// CHECK:   %[[PAGE:.*]] = arith.addi %{{.*}}, %[[TID:.*]] : index
// CHECK:   %[[IN_TABLE:.*]] = arith.cmpi ult, %[[PAGE]], %c8
// CHECK:   %[[PTR:.*]] = scf.if %[[IN_TABLE]] -> (i64) {
// CHECK:     %[[PAGE32:.*]] = arith.index_cast %[[PAGE]] : index to i32
// CHECK:     %[[HEAD:.*]] = arith.divui %[[PAGE32]], %c4_i32 : i32
// CHECK:     %[[SLOT:.*]] = arith.remui %[[PAGE32]], %c4_i32 : i32
// CHECK:     %[[SLOT_INDEX:.*]] = arith.index_castui %[[SLOT]] : i32 to index
// CHECK:     %[[ID:.*]] = memref.load %[[TABLE]][%{{.*}}, %[[SLOT_INDEX]]] : memref<2x4xi32>
// CHECK:     %[[IN_POOL:.*]] = arith.cmpi ult, %[[ID]], %c8_i32 : i32
// CHECK:     %[[HEAD_BYTES:.*]] = arith.muli %[[HEAD]], %c64_i32 : i32
// CHECK:     %[[BLOCK_BYTES:.*]] = arith.muli %[[ID]], %c512_i32 : i32
// CHECK:     %[[OFFSET:.*]] = arith.addi %[[BLOCK_BYTES]], %[[HEAD_BYTES]] : i32
// CHECK:     %[[WIDE:.*]] = arith.extui %[[OFFSET]] : i32 to i64
// CHECK:     %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[POOL]]
// CHECK:     %[[BASE64:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK:     %[[ADDRESS:.*]] = arith.addi %[[BASE64]], %[[WIDE]] : i64
// CHECK:     %[[LIVE:.*]] = arith.select %[[IN_POOL]], %[[ADDRESS]], %c0_i64 : i64
// CHECK:     scf.yield %[[LIVE]] : i64
// CHECK:   memref.store %[[PTR]], %[[PTRS]][%[[TID]]]
// CHECK: } {rock.stage = "PagePtrLoad"}
// CHECK: "rock.threadwise_read_into"
// CHECK-SAME: num_pages_per_batch = 8 : i64
// CHECK-SAME: page_size = 128 : i64
func.func @blocks_nhd_v_tile(%pool: memref<8x4x2x32xf16>, %block_table: memref<2x4xi32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.block_table_view"(%pool, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x4x2x32xf16>, memref<2x4xi32>) -> memref<2x8x128xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<8x32xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %h = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 2)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %h, %t, %block_table) {map = affine_map<(b, h, t, n, d) -> (b, (h * 16 + t * 8 + n) * 32 + d)>, block_size = 64, page_size = 128, index_bounds = array<i64: 2, 2, 2>, operandSegmentSizes = array<i32: 1, 1, 3, 1>} : (memref<2x8x128xf16>, memref<8x32xf16, #gpu.address_space<workgroup>>, index, index, index, memref<2x4xi32>) -> ()
  return
}

// -----

// The V half of a stacked cache [num_blocks, 2, block_size, Hkv, D] (vLLM Triton, FlashInfer): a strided
// pool whose blocks lie 2 x 4 x 2 x 32 = 512 elements (1024 bytes) apart, starting one block's 256
// elements (512 bytes) into the tensor; the same loads, the page address the pool's strides and offset.

// CHECK-LABEL: func.func @stacked_v_tile
// CHECK-SAME: (%[[POOL:.*]]: memref<8x4x2x32xf16, strided<[512, 64, 32, 1], offset: 256>>
// CHECK:     %[[ID:.*]] = memref.load
// CHECK:     arith.muli %{{.*}}, %c64_i32 : i32
// CHECK:     arith.muli %[[ID]], %c1024_i32 : i32
// CHECK:     %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[POOL]]
// CHECK:     %[[BASE64:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK:     %[[START:.*]] = arith.addi %[[BASE64]], %c512_i64 : i64
// CHECK:     arith.addi %[[START]], %{{.*}} : i64
// CHECK: } {rock.stage = "PagePtrLoad"}
func.func @stacked_v_tile(%pool: memref<8x4x2x32xf16, strided<[512, 64, 32, 1], offset: 256>>, %block_table: memref<2x4xi32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.block_table_view"(%pool, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x4x2x32xf16, strided<[512, 64, 32, 1], offset: 256>>, memref<2x4xi32>) -> memref<2x8x128xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<8x32xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %h = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 2)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %h, %t, %block_table) {map = affine_map<(b, h, t, n, d) -> (b, (h * 16 + t * 8 + n) * 32 + d)>, block_size = 64, page_size = 128, index_bounds = array<i64: 2, 2, 2>, operandSegmentSizes = array<i32: 1, 1, 3, 1>} : (memref<2x8x128xf16>, memref<8x32xf16, #gpu.address_space<workgroup>>, index, index, index, memref<2x4xi32>) -> ()
  return
}

// -----

// The V half of a stacked cache [2, num_blocks, block_size, Hkv, D] of '?' blocks (vLLM FlashAttention,
// --dynamic): its offset, num_blocks blocks in, is read at run time.

// CHECK-LABEL: func.func @stacked_dynamic_v_tile
// CHECK-SAME: (%[[POOL:.*]]: memref<?x4x2x32xf16, strided<[256, 64, 32, 1], offset: ?>>
// CHECK:     %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[POOL]]
// CHECK:     %[[BASE64:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK:     %{{.*}}, %[[OFFSET:.*]], %{{.*}}:4, %{{.*}}:4 = memref.extract_strided_metadata %[[POOL]]
// CHECK:     %[[OFFSET64:.*]] = arith.index_cast %[[OFFSET]] : index to i64
// CHECK:     %[[BYTES:.*]] = arith.muli %[[OFFSET64]], %c2_i64 : i64
// CHECK:     arith.addi %[[BASE64]], %[[BYTES]] : i64
// CHECK: } {rock.stage = "PagePtrLoad"}
func.func @stacked_dynamic_v_tile(%pool: memref<?x4x2x32xf16, strided<[256, 64, 32, 1], offset: ?>>, %block_table: memref<2x4xi32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.block_table_view"(%pool, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<?x4x2x32xf16, strided<[256, 64, 32, 1], offset: ?>>, memref<2x4xi32>) -> memref<2x8x128xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<8x32xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %h = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 2)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %h, %t, %block_table) {map = affine_map<(b, h, t, n, d) -> (b, (h * 16 + t * 8 + n) * 32 + d)>, block_size = 64, page_size = 128, index_bounds = array<i64: 2, 2, 2>, operandSegmentSizes = array<i32: 1, 1, 3, 1>} : (memref<2x8x128xf16>, memref<8x32xf16, #gpu.address_space<workgroup>>, index, index, index, memref<2x4xi32>) -> ()
  return
}

// -----

// The same tile through a FlashInfer CSR table (hnd: head_stride = block_size x D = 128):
// slot s of sequence b is kv_indices[kv_indptr[b] + s] when s < kv_indptr[b + 1] - kv_indptr[b];
// the position is clamped into kv_indices and a slot the sequence does not own is a null page.

// CHECK-LABEL: func.func @csr_hnd_k_tile
// CHECK-SAME: (%[[POOL:.*]]: memref<8x2x4x32xf16>, %[[INDICES:.*]]: memref<6xi32>, %[[INDPTR:.*]]: memref<3xi32>, %{{.*}}: memref<2xi32>)
// CHECK: scf.execute_region no_inline {
// CHECK:   scf.if %{{.*}} -> (i64) {
// CHECK:     %[[HEAD:.*]] = arith.divui %{{.*}}, %c4_i32 : i32
// CHECK:     %[[SLOT:.*]] = arith.remui %{{.*}}, %c4_i32 : i32
// CHECK:     %[[START:.*]] = memref.load %[[INDPTR]][%[[B:.*]]] : memref<3xi32>
// CHECK:     %[[NEXT:.*]] = arith.addi %[[B]], %c1
// CHECK:     %[[END:.*]] = memref.load %[[INDPTR]][%[[NEXT]]] : memref<3xi32>
// CHECK:     %[[COUNT:.*]] = arith.subi %[[END]], %[[START]] : i32
// CHECK:     %[[POSITION:.*]] = arith.addi %[[START]], %[[SLOT]] : i32
// CHECK:     %[[OWNED:.*]] = arith.cmpi slt, %[[SLOT]], %[[COUNT]] : i32
// CHECK:     %[[IN_INDICES:.*]] = arith.cmpi ult, %[[POSITION]], %c6_i32 : i32
// CHECK:     %[[USABLE:.*]] = arith.andi %[[OWNED]], %[[IN_INDICES]] : i1
// CHECK:     %[[CLAMPED:.*]] = arith.select %[[USABLE]], %[[POSITION]], %{{.*}} : i32
// CHECK:     %[[CLAMPED_INDEX:.*]] = arith.index_castui %[[CLAMPED]] : i32 to index
// CHECK:     %[[ID:.*]] = memref.load %[[INDICES]][%[[CLAMPED_INDEX]]] : memref<6xi32>
// CHECK:     %[[IN_POOL:.*]] = arith.cmpi ult, %[[ID]], %c8_i32 : i32
// CHECK:     %[[LIVE:.*]] = arith.andi %[[USABLE]], %[[IN_POOL]] : i1
// CHECK:     arith.muli %[[HEAD]], %c256_i32 : i32
// CHECK:     arith.muli %[[ID]], %c512_i32 : i32
// CHECK:     memref.extract_aligned_pointer_as_index %[[POOL]]
// CHECK:     arith.select %[[LIVE]], %{{.*}}, %c0_i64 : i64
// CHECK: } {rock.stage = "PagePtrLoad"}
func.func @csr_hnd_k_tile(%pool: memref<8x2x4x32xf16>, %indices: memref<6xi32>, %indptr: memref<3xi32>, %last: memref<2xi32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.block_table_view"(%pool, %indices, %indptr, %last) {layout = "hnd", operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x2x4x32xf16>, memref<6xi32>, memref<3xi32>, memref<2xi32>) -> memref<2x8x128xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<8x32xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %h = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 2)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %h, %t, %indices) {map = affine_map<(b, h, t, n, d) -> (b, (h * 16 + t * 8 + n) * 32 + d)>, block_size = 64, page_size = 128, index_bounds = array<i64: 2, 2, 2>, operandSegmentSizes = array<i32: 1, 1, 3, 1>} : (memref<2x8x128xf16>, memref<8x32xf16, #gpu.address_space<workgroup>>, index, index, index, memref<6xi32>) -> ()
  return
}

// -----

// A dynamic block table (one kernel for every batch): the tile's map takes head h's first
// page, h * slots, as an index of its own, so it stays linear. The pages of the table
// (Hkv x slots) and the pool's blocks are read with memref.dim; head and slot of a page
// come from a run-time division (32-bit); threadwise_read_into has no num_pages_per_batch (past
// the table the staged pointers are null).

// CHECK-LABEL: func.func @dynamic_blocks_k_tile
// CHECK-SAME: (%[[POOL:.*]]: memref<?x4x2x32xf16>, %[[TABLE:.*]]: memref<?x?xi32>, %[[HEAD_PAGE:.*]]: index)
// CHECK: scf.execute_region no_inline {
// CHECK:   %[[SLOTS:.*]] = memref.dim %[[TABLE]], %c1
// CHECK:   %[[PAGES:.*]] = arith.muli %[[SLOTS]], %c2
// CHECK:   arith.cmpi ult, %{{.*}}, %[[PAGES]] : index
// CHECK:   %[[SLOTS2:.*]] = memref.dim %[[TABLE]], %c1
// CHECK:   %[[SLOTS32:.*]] = arith.index_cast %[[SLOTS2]] : index to i32
// CHECK:   arith.divui %{{.*}}, %[[SLOTS32]] : i32
// CHECK:   arith.remui %{{.*}}, %[[SLOTS32]] : i32
// CHECK:   %[[BLOCKS:.*]] = memref.dim %[[POOL]], %c0
// CHECK:   %[[BLOCKS32:.*]] = arith.index_cast %[[BLOCKS]] : index to i32
// CHECK:   arith.cmpi ult, %{{.*}}, %[[BLOCKS32]] : i32
// CHECK: } {rock.stage = "PagePtrLoad"}
// CHECK: "rock.threadwise_read_into"
// CHECK-NOT: num_pages_per_batch
// CHECK-SAME: page_size = 128 : i64
func.func @dynamic_blocks_k_tile(%pool: memref<?x4x2x32xf16>, %block_table: memref<?x?xi32>, %head_page: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_map = affine_map<(d0) -> (d0 * 4)>, rock.grid_sizes = array<i64: 1, 0>} {
  %pages = "rock.block_table_view"(%pool, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<?x4x2x32xf16>, memref<?x?xi32>) -> memref<?x?x128xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<512xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<512xi8, #gpu.address_space<workgroup>> to memref<8x32xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 2)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %head_page, %block_table) {map = affine_map<(b, t, hp, n, d) -> (b, hp * 128 + (t * 8 + n) * 32 + d)>, block_size = 64, page_size = 128, index_bounds = array<i64: 2147483647, 2147483647, 2147483647>, operandSegmentSizes = array<i32: 1, 1, 3, 1>} : (memref<?x?x128xf16>, memref<8x32xf16, #gpu.address_space<workgroup>>, index, index, index, memref<?x?xi32>) -> ()
  return
}

// -----

// A swizzled tile (lds_swizzle = [4, 1, 4, 1]: row r's chunk k of 4 elements is stored as chunk
// k xor (r mod 4)): each thread's 8-element vector goes to LDS as two chunks of 4, each at its
// swizzled column (the registers are read as they were loaded).

// CHECK-LABEL: func.func @swizzled_tile
// CHECK: scf.execute_region no_inline {
// CHECK:   scf.for
// CHECK:     %[[COLUMN:.*]] = affine.apply #{{.*}}(%[[VECTOR:[^,)]+]])
// CHECK:     %[[ROW:.*]] = affine.apply #{{.*}}(%[[VECTOR]])
// CHECK:     %[[FLIP:.*]] = affine.apply #[[ROW_MOD_4:.*]](%[[ROW]])
// CHECK:     %[[CHUNK:.*]] = affine.apply #[[CHUNK_OF:.*]](%[[COLUMN]])
// CHECK:     %[[MOVED:.*]] = arith.xori %[[CHUNK]], %[[FLIP]] : index
// CHECK:     %[[AT:.*]] = affine.apply #{{.*}}(%[[MOVED]], %[[COLUMN]])
// CHECK:     %[[LOW:.*]] = vector.load %{{.*}}[%{{.*}}, %c0{{.*}}] : memref<1x8xf16, #gpu.address_space<private>>, vector<4xf16>
// CHECK:     vector.store %[[LOW]], %[[TILE:.*]][%[[ROW]], %[[AT]]] : memref<16x32xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK:     %[[NEXT:.*]] = arith.addi %[[COLUMN]], %c4
// CHECK:     %[[FLIP2:.*]] = affine.apply #[[ROW_MOD_4]](%[[ROW]])
// CHECK:     %[[CHUNK2:.*]] = affine.apply #[[CHUNK_OF]](%[[NEXT]])
// CHECK:     %[[MOVED2:.*]] = arith.xori %[[CHUNK2]], %[[FLIP2]] : index
// CHECK:     %[[AT2:.*]] = affine.apply #{{.*}}(%[[MOVED2]], %[[NEXT]])
// CHECK:     %[[HIGH:.*]] = vector.load %{{.*}}[%{{.*}}, %c4{{.*}}] : memref<1x8xf16, #gpu.address_space<private>>, vector<4xf16>
// CHECK:     vector.store %[[HIGH]], %[[TILE]][%[[ROW]], %[[AT2]]]
// CHECK:   "rock.lds_barrier"()
// CHECK: } {rock.stage = "LDSWrite"}
func.func @swizzled_tile(%src: memref<16x32xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %raw = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %raw[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<16x32xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%src, %tile) {map = affine_map<(n, d) -> (n, d)>, block_size = 64, lds_swizzle = array<i64: 4, 1, 4, 1>, operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x32xf16>, memref<16x32xf16, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// A unit-stride dimension of 4 f16 (8 bytes) continued in the source by the dimension before it
// (coefficient 4 = its extent), as in the 7-D view of a transposed V tile at D 64: the two are read as
// one dimension of 8 (16-byte vectors; tile_shape puts 1 for the outer one), and each vector is stored
// as two pieces of 4 at consecutive outer coordinates (LDS strides 32 and 16 elements: one point a store).

// CHECK: #[[LOW:.*]] = affine_map<(d0) -> (d0 mod 4)>
// CHECK: #[[OUTER:.*]] = affine_map<(d0) -> (d0 floordiv 4)>
// CHECK: #[[NEXT:.*]] = affine_map<(d0) -> (d0 floordiv 4 + 1)>
// CHECK-LABEL: func.func @merged_vector
// CHECK: "rock.threadwise_read_into"({{.*}}tile_shape = array<i64: 1, 16, 8>, vector_dim = 2 : i64, vector_len = 8 : i64}
// CHECK: } {rock.stage = "GlobalRead"}
// CHECK: %[[L:.*]] = affine.apply #[[LOW]](%[[X:[^,)]+]])
// CHECK: %[[M:.*]] = affine.apply #[[OUTER]](%[[X]])
// CHECK: %[[E0:.*]] = memref.load %{{.*}}[%{{.*}}, %c0{{.*}}]
// CHECK: memref.store %[[E0]], %[[VIEW:[a-z_0-9]+]][%[[M]], %[[L]], %[[KEY:[a-z_0-9]+]]]
// CHECK-COUNT-3: memref.store
// CHECK: %[[M1:.*]] = affine.apply #[[NEXT]](%[[X]])
// CHECK: %[[E4:.*]] = memref.load %{{.*}}[%{{.*}}, %c4{{.*}}]
// CHECK: memref.store %[[E4]], %[[VIEW]][%[[M1]], %[[L]], %[[KEY]]]
// CHECK-COUNT-3: memref.store
// CHECK-NOT: memref.store
// CHECK: } {rock.stage = "LDSWrite"}
func.func @merged_vector(%src: memref<16x8xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %raw = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %raw[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<8x16xf16, #gpu.address_space<workgroup>>
  %view = memref.reinterpret_cast %tile to offset: [0], sizes: [2, 4, 16], strides: [16, 32, 1] : memref<8x16xf16, #gpu.address_space<workgroup>> to memref<2x4x16xf16, strided<[16, 32, 1]>, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%src, %view) {map = affine_map<(m, l, n) -> (n, m * 4 + l)>, block_size = 64, operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x8xf16>, memref<2x4x16xf16, strided<[16, 32, 1]>, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// lds_dma: a V-like [32, 128] f16 tile from pages of 16 tokens, 128 threads (2 waves) on gfx942.
// A wave's direct-to-LDS load moves 64 lanes x 4 bytes = one 128-element row; the 32 loads are
// dealt to the waves in turn (16 each). Every load's page pointer and offsets are read first,
// then every load is issued, then the wave waits for all of them (s_waitcnt vmcnt(0): 3952),
// then the barrier. No registers: no GlobalRead / LDSWrite stages.

// CHECK-LABEL: func.func @dma_v_tile
// CHECK-NOT: #gpu.address_space<private>
// CHECK: } {rock.stage = "PagePtrLoad"}
// CHECK: scf.execute_region no_inline {
// CHECK:   %[[TID:.*]] = "rock.workitem_id"()
// CHECK:   %[[WAVE:.*]] = affine.apply #{{.*}}(%[[TID]])
// CHECK:   %[[LANE:.*]] = affine.apply #{{.*}}(%[[TID]])
// CHECK:   %[[PTR0:.*]] = memref.load %[[PTRS:.*]][%{{.*}}] : memref<2xi64, #gpu.address_space<workgroup>>
// CHECK:   %[[NONNULL:.*]] = arith.cmpi ne, %[[PTR0]], %c0_i64
// CHECK-COUNT-15: memref.load %[[PTRS]]
// CHECK:   "rock.global_load_lds"(%{{.*}}, %{{.*}}, %[[TILE:.*]], %{{.*}}, %{{.*}}, %[[PTR0]]) {bytes = 4 : i64, {{.*}}page_size = 2048 : i64}
// CHECK-COUNT-15: "rock.global_load_lds"
// CHECK-NEXT:   rocdl.s.waitcnt 3952
// CHECK-NEXT:   "rock.lds_barrier"()
// CHECK: } {rock.stage = "GlobalToLDS"}
// CHECK-NOT: rock.threadwise_read_into
func.func @dma_v_tile(%table: memref<2x8x1xi64>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 128 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<8192xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<8192xi8, #gpu.address_space<workgroup>> to memref<32x128xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 4)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %table) {map = affine_map<(b, t, n, d) -> (b, (t * 32 + n) * 128 + d)>, block_size = 128, page_size = 2048, index_bounds = array<i64: 2, 4>, lds_dma, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<2x8x2048xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index, memref<2x8x1xi64>) -> ()
  return
}

// -----

// lds_dma on gfx1100: RDNA has no direct-to-LDS loads; the register path.

// CHECK-LABEL: func.func @dma_on_rdna
// CHECK: {rock.stage = "GlobalRead"}
// CHECK: {rock.stage = "LDSWrite"}
// CHECK-NOT: rock.global_load_lds
func.func @dma_on_rdna(%table: memref<2x8x1xi64>) attributes {rock.kernel, rock.arch = "gfx1100", rock.block_size = 64 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<8192xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<8192xi8, #gpu.address_space<workgroup>> to memref<32x128xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 4)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %t, %table) {map = affine_map<(b, t, n, d) -> (b, (t * 32 + n) * 128 + d)>, block_size = 64, page_size = 2048, index_bounds = array<i64: 2, 4>, lds_dma, operandSegmentSizes = array<i32: 1, 1, 2, 1>} : (memref<2x8x2048xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index, memref<2x8x1xi64>) -> ()
  return
}

// -----

// A V tile [N = 16, D = 32] of vLLM's paged-attention value cache ([num_blocks, Hkv, D, block_size],
// layout "vllm-pa"): 16 contiguous bytes are 8 tokens of one column, so the vectors run along the
// tokens (vector_dim 0 of the tile read as [N, D]: a wave's lanes take one group of 8 tokens, in
// one page, and its pointers are read per wave) with 8 elements (16 bytes), though the validity
// (key < len) changes along them: rock-threadwise-lowering masks them point by point. The
// registers go to their [n + i, d] places of the [N, D] tile (the tile the P V product reads);
// lds_dma falls back to this path (a lane's 4 bytes would be two rows of the pool).

// CHECK-DAG: #[[COLUMN:map[0-9]*]] = affine_map<(d0) -> (d0 mod 32)>
// CHECK-DAG: #[[TOKENS:map[0-9]*]] = affine_map<(d0) -> ((d0 floordiv 32) * 8)>
// CHECK-LABEL: func.func @vllm_pa_v_tile
// CHECK-NOT: rock.stage = "PagePtrLoad"
// CHECK: "rock.threadwise_read_into"
// CHECK-SAME: tile_shape = array<i64: 16, 32>
// CHECK-SAME: vector_dim = 0 : i64, vector_len = 8 : i64, wave_size = 64 : i64
// CHECK: } {rock.stage = "GlobalRead"}
// CHECK: %[[VEC:.*]] = affine.apply #{{.*}}(%{{.*}}, %{{.*}})
// CHECK: %[[COL:.*]] = affine.apply #[[COLUMN]](%[[VEC]])
// CHECK: %[[TOKEN:.*]] = affine.apply #[[TOKENS]](%[[VEC]])
// CHECK: %[[X0:.*]] = memref.load %[[REGS:.*]][%{{.*}}, %c0{{.*}}] : memref<1x8xf16, #gpu.address_space<private>>
// CHECK: memref.store %[[X0]], %[[TILE:.*]][%[[TOKEN]], %[[COL]]] : memref<16x32xf16, #gpu.address_space<workgroup>>
// CHECK: %[[X1:.*]] = memref.load %[[REGS]][%{{.*}}, %c1{{.*}}]
// CHECK: %[[TOKEN1:.*]] = arith.addi %[[TOKEN]], %c1
// CHECK: memref.store %[[X1]], %[[TILE]][%[[TOKEN1]], %[[COL]]]
// CHECK-COUNT-6: memref.store
// CHECK: } {rock.stage = "LDSWrite"}
// CHECK-NOT: GlobalToLDS
func.func @vllm_pa_v_tile(%pool: memref<8x2x32x16xf16>, %block_table: memref<2x4xi32>, %len: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.block_table_view"(%pool, %block_table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x32x16xf16>, memref<2x4xi32>) -> memref<2x8x512xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<16x32xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %h = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 2)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %h, %t, %len, %block_table) {map = affine_map<(b, h, t, l, n, d) -> (b, (h * 64 + t * 16 + n) * 32 + d)>, valid = affine_map<(b, h, t, l, n, d) -> (l - t * 16 - n - 1)>, block_size = 64, page_size = 512, index_bounds = array<i64: 2, 2, 4, 65>, lds_dma, operandSegmentSizes = array<i32: 1, 1, 4, 1>} : (memref<2x8x512xf16>, memref<16x32xf16, #gpu.address_space<workgroup>>, index, index, index, index, memref<2x4xi32>) -> ()
  return
}

// -----

// A K tile of vLLM's 5-d key cache ([num_blocks, Hkv, D/x, block_size, x], x = 8 f16): each 16-byte
// chunk of a row is contiguous, so the tile is read like an nhd one, 8 columns per vector.

// CHECK-LABEL: func.func @vllm_pa_k_tile
// CHECK: "rock.threadwise_read_into"
// CHECK-SAME: tile_shape = array<i64: 16, 32>
// CHECK-SAME: vector_dim = 1 : i64, vector_len = 8 : i64, wave_size = 64 : i64
// CHECK: vector.store %{{.*}}, %{{.*}} : memref<16x32xf16, #gpu.address_space<workgroup>>, vector<8xf16>
func.func @vllm_pa_k_tile(%pool: memref<8x2x4x16x8xf16>, %block_table: memref<2x4xi32>, %len: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 8 : i64} {
  %pages = "rock.block_table_view"(%pool, %block_table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x4x16x8xf16>, memref<2x4xi32>) -> memref<2x8x512xf16>
  %bid = "rock.workgroup_id"() : () -> index
  %raw = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<16x32xf16, #gpu.address_space<workgroup>>
  %b = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%bid)
  %h = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)>(%bid)
  %t = affine.apply affine_map<(d0) -> (d0 mod 2)>(%bid)
  "rock.blockwise_load_tile"(%pages, %tile, %b, %h, %t, %len, %block_table) {map = affine_map<(b, h, t, l, n, d) -> (b, (h * 64 + t * 16 + n) * 32 + d)>, valid = affine_map<(b, h, t, l, n, d) -> (l - t * 16 - n - 1)>, block_size = 64, page_size = 512, index_bounds = array<i64: 2, 2, 4, 65>, operandSegmentSizes = array<i32: 1, 1, 4, 1>} : (memref<2x8x512xf16>, memref<16x32xf16, #gpu.address_space<workgroup>>, index, index, index, index, memref<2x4xi32>) -> ()
  return
}
