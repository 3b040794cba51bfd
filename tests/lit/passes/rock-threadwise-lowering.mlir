// RUN: pagedir-opt %s --rock-threadwise-lowering --split-input-file | FileCheck %s
// The wave size is the chip's: kernels without rock.arch lowered for gfx1100 record
// it and prove uniformity for waves of 32 lanes.
// RUN: sed 's/rock.kernel, rock.arch = "gfx942"/rock.kernel/' %s | pagedir-opt --rock-threadwise-lowering=arch=gfx1100 --split-input-file | FileCheck %s --check-prefix=WAVE32

// Paged read of a [16 tokens, 64] f16 tile from pages of 16 tokens (1024
// elements): per vector, page and offset from the flat position, the pointer
// from LDS at the clamped local index, validity = in table AND in buffer AND
// non-null. Every wave of 64 threads reads 8 tokens of one page, so the loads
// are marked uniform.

// CHECK: #[[DIV:.*]] = affine_map<(d0) -> (d0 floordiv 1024)>
// CHECK: #[[MOD:.*]] = affine_map<(d0) -> (d0 mod 1024)>
// CHECK-LABEL: func.func @paged_read
// CHECK-SAME: (%[[PAGES:.*]]: memref<2x4x1024xf16>, %[[PTRS:.*]]: memref<2xi64, #gpu.address_space<workgroup>>, %[[B:.*]]: index, %[[T:.*]]: index, %[[FIRST:.*]]: index)
// CHECK: %[[REGS:.*]] = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
// CHECK: %[[TID:.*]] = "rock.workitem_id"()
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %c2{{.*}} step
// CHECK:   %[[V:.*]] = affine.apply #{{.*}}(%[[ROW]], %[[TID]])
// CHECK:   %[[D:.*]] = affine.apply #{{.*}}(%[[V]])
// CHECK:   %[[N:.*]] = affine.apply #{{.*}}(%[[V]])
// CHECK:   %[[FLAT:.*]] = affine.apply #{{.*}}(%[[B]], %[[T]], %[[N]], %[[D]])
// CHECK:   %[[PAGE:.*]] = affine.apply #[[DIV]](%[[FLAT]])
// CHECK:   %[[OFFSET:.*]] = affine.apply #[[MOD]](%[[FLAT]])
// CHECK:   %[[LOCAL:.*]] = arith.subi %[[PAGE]], %[[FIRST]]
// CHECK:   %[[LOW:.*]] = arith.maxsi %[[LOCAL]], %c0
// CHECK:   %[[SLOT:.*]] = arith.minsi %[[LOW]], %c1
// CHECK:   %[[PTR:.*]] = memref.load %[[PTRS]][%[[SLOT]]]
// CHECK:   %[[IN_TABLE:.*]] = arith.cmpi ult, %[[PAGE]], %c4
// CHECK:   %[[IN_BUFFER:.*]] = arith.cmpi eq, %[[LOCAL]], %[[SLOT]]
// CHECK:   %[[NON_NULL:.*]] = arith.cmpi ne, %[[PTR]], %c0_i64
// CHECK:   %[[BOTH:.*]] = arith.andi %[[IN_TABLE]], %[[IN_BUFFER]]
// CHECK:   %[[VALID:.*]] = arith.andi %[[BOTH]], %[[NON_NULL]]
// CHECK:   %[[X:.*]] = "rock.global_load"(%[[PAGES]], %[[OFFSET]], %[[VALID]], %[[PTR]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 1024 : i64, rock.uniform_page_ptr} : (memref<2x4x1024xf16>, index, i1, i64) -> vector<8xf16>
// CHECK:   vector.store %[[X]], %[[REGS]][%[[ROW]], %{{.*}}]
// CHECK-NOT: rock.threadwise_read_into
func.func @paged_read(%pages: memref<2x4x1024xf16>, %ptrs: memref<2xi64, #gpu.address_space<workgroup>>, %b: index, %t: index, %first: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %t, %ptrs, %first) {map = affine_map<(b, t, n, d) -> (b, (t * 16 + n) * 64 + d)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, page_size = 1024, num_pages_per_batch = 4, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>} : (memref<2x4x1024xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// The same tile with wave_size (rock-blockwise-load proved each wave reads one
// page per row): no pointer buffer. At the function's entry the wave's first
// lane, made uniform by one readfirstlane of the wave index; the page of the
// wave's first vector in row 0 (a shift: the position is non-negative), and row
// r's page that plus r times the rows' page step (0 here: both rows of a wave
// lie in one page), in 32 bits. Every row's pointer is read from the table at
// its page clamped to the table's last (wave-uniform; a bound LLVM sees, so the
// scalar load's offset is 32-bit) before any of them is used (one wait on the
// scalar loads); a row's load is valid where its page is in the batch's 4 pages
// and its pointer non-null. It needs no readfirstlane (not marked uniform): the
// pointer is wave-uniform by construction.

// CHECK-LABEL: func.func @paged_read_per_wave
// CHECK-SAME: (%[[TABLE:.*]]: memref<2x4x1xi64>, %[[B:.*]]: index, %[[T:.*]]: index)
// CHECK: %[[ENTRY_TID:.*]] = "rock.workitem_id"()
// CHECK: %[[WAVE:.*]] = affine.apply #{{.*}}(%[[ENTRY_TID]])
// CHECK: %[[WAVE_I32:.*]] = arith.index_cast %[[WAVE]] : index to i32
// CHECK: %[[UNIFORM:.*]] = rocdl.readfirstlane %[[WAVE_I32]] : i32
// CHECK: %[[WAVE_INDEX:.*]] = arith.index_castui %[[UNIFORM]] : i32 to index
// CHECK: %[[FIRST_LANE:.*]] = arith.muli %[[WAVE_INDEX]], %c64
// CHECK: %[[WAVE_V:.*]] = affine.apply #{{.*}}(%c0{{.*}}, %[[FIRST_LANE]])
// CHECK: %[[WAVE_FLAT:.*]] = affine.apply #{{.*}}(%[[B]], %[[T]], %{{.*}}, %{{.*}})
// CHECK: %[[ROW0_PAGE:.*]] = arith.divui %[[WAVE_FLAT]], %c1024 : index
// CHECK: %[[PAGE0:.*]] = affine.apply #[[WALK:.*]](%[[ROW0_PAGE]], %c0{{.*}})
// CHECK: %[[PAGE0_I32:.*]] = arith.index_cast %[[PAGE0]] : index to i32
// CHECK: %[[IN_TABLE0:.*]] = arith.cmpi ult, %[[PAGE0_I32]], %{{.*}} : i32
// CHECK: %[[CLAMPED0:.*]] = arith.minui %[[PAGE0_I32]], %c3_i32
// CHECK: %[[PAGE1:.*]] = affine.apply #[[WALK]](%[[ROW0_PAGE]], %c1)
// CHECK: %[[PAGE1_I32:.*]] = arith.index_cast %[[PAGE1]] : index to i32
// CHECK: %[[IN_TABLE1:.*]] = arith.cmpi ult, %[[PAGE1_I32]]
// CHECK: %[[CLAMPED1:.*]] = arith.minui %[[PAGE1_I32]], %c3_i32
// CHECK: %[[SLOT0:.*]] = arith.index_castui %[[CLAMPED0]] : i32 to index
// CHECK: %[[PTR0:.*]] = memref.load %[[TABLE]][%[[B]], %[[SLOT0]], %c0{{.*}}] : memref<2x4x1xi64>
// CHECK: %[[SLOT1:.*]] = arith.index_castui %[[CLAMPED1]] : i32 to index
// CHECK: %[[PTR1:.*]] = memref.load %[[TABLE]][%[[B]], %[[SLOT1]], %c0{{.*}}] : memref<2x4x1xi64>
// CHECK: %[[NON_NULL0:.*]] = arith.cmpi ne, %[[PTR0]], %c0_i64
// CHECK: %[[LIVE0:.*]] = arith.andi %[[IN_TABLE0]], %[[NON_NULL0]]
// CHECK: %[[NON_NULL1:.*]] = arith.cmpi ne, %[[PTR1]], %c0_i64
// CHECK: %[[LIVE1:.*]] = arith.andi %[[IN_TABLE1]], %[[NON_NULL1]]
// CHECK: "rock.global_load"(%{{.*}}, %{{.*}}, %[[LIVE0]], %[[PTR0]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 1024 : i64} : (memref<2x4x1024xf16>, index, i1, i64) -> vector<8xf16>
// CHECK: "rock.global_load"(%{{.*}}, %{{.*}}, %[[LIVE1]], %[[PTR1]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 1024 : i64} : (memref<2x4x1024xf16>, index, i1, i64) -> vector<8xf16>
// CHECK-NOT: rock.threadwise_read_into
func.func @paged_read_per_wave(%table: memref<2x4x1xi64>, %b: index, %t: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x4x1xi64>) -> memref<2x4x1024xf16>
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %t) {map = affine_map<(b, t, n, d) -> (b, (t * 16 + n) * 64 + d)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, page_size = 1024, num_pages_per_batch = 4, wave_size = 64, operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>} : (memref<2x4x1024xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index) -> ()
  return
}

// -----

// Pages of 8 tokens (512 elements): each wave reads page first + 0 in row 0 and
// first + 1 in row 1, so its rows span 2 pages. Both rows' pointers are read
// first (one wait); each wave then checks at run time that row 1's page is in
// the table and its pointer is row 0's plus 1024 bytes (and row 0's is live):
// then one pointer, one descriptor over both pages (page_size 1024) and offsets
// from row 0's page; otherwise the loads go page by page through the pointers
// already read. Block tables do not promise adjacency, hence the uniform scf.if.

// CHECK-LABEL: func.func @adjacent_or_per_page
// CHECK-SAME: (%[[TABLE:.*]]: memref<2x8x1xi64>, %[[B:.*]]: index, %[[T:.*]]: index)
// CHECK: %[[IN_TABLE0:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK: %[[IN_TABLE1:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK: %[[PTR0:.*]] = memref.load %[[TABLE]]
// CHECK: %[[PTR1:.*]] = memref.load %[[TABLE]]
// CHECK: %[[NON_NULL:.*]] = arith.cmpi ne, %[[PTR0]], %c0_i64
// CHECK: %[[LIVE0:.*]] = arith.andi %[[IN_TABLE0]], %[[NON_NULL]]
// CHECK: %[[EXPECTED:.*]] = arith.addi %[[PTR0]], %c1024_i64 : i64
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[PTR1]], %[[EXPECTED]] : i64
// CHECK: %[[ROW1:.*]] = arith.andi %[[IN_TABLE1]], %[[SAME]]
// CHECK: %[[ADJACENT:.*]] = arith.andi %[[LIVE0]], %[[ROW1]]
// CHECK: scf.if %[[ADJACENT]] {
// CHECK:   scf.for
// CHECK:     "rock.global_load"(%{{.*}}, %{{.*}}, %[[PTR0]]) {operandSegmentSizes = array<i32: 1, 1, 0, 1>, page_size = 1024 : i64}
// CHECK: } else {
// CHECK-NOT: memref.load
// CHECK:   "rock.global_load"(%{{.*}}, %{{.*}}, %{{.*}}, %[[PTR0]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 512 : i64}
// CHECK:   "rock.global_load"(%{{.*}}, %{{.*}}, %{{.*}}, %[[PTR1]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 512 : i64}
func.func @adjacent_or_per_page(%table: memref<2x8x1xi64>, %b: index, %t: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.deref"(%table) : (memref<2x8x1xi64>) -> memref<2x8x512xf16>
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %t) {map = affine_map<(b, t, n, d) -> (b, (t * 16 + n) * 64 + d)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, page_size = 512, num_pages_per_batch = 8, wave_size = 64, operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>} : (memref<2x8x512xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index) -> ()
  return
}

// -----

// Pages of 4 tokens (256 elements) are smaller than a wave's 8 tokens: lanes
// of one wave read different pages, the loads are not marked uniform. A wave of
// 32 lanes (gfx1100) reads 4 tokens, one page: uniform.

// WAVE32-LABEL: func.func @small_pages
// WAVE32-SAME: attributes {rock.arch = "gfx1100",
// WAVE32: "rock.global_load"
// WAVE32-SAME: {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 256 : i64, rock.uniform_page_ptr} :

// CHECK-LABEL: func.func @small_pages
// CHECK: "rock.global_load"
// CHECK-SAME: {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 256 : i64} :
func.func @small_pages(%pages: memref<2x16x256xf16>, %ptrs: memref<4xi64, #gpu.address_space<workgroup>>, %b: index, %t: index, %first: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %t, %ptrs, %first) {map = affine_map<(b, t, n, d) -> (b, (t * 16 + n) * 64 + d)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, page_size = 256, num_pages_per_batch = 16, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>} : (memref<2x16x256xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index, memref<4xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// Dense read with a partial last row: vectors past the tile are skipped, and
// each coordinate is checked against the source bounds (the column is the
// vector's tile coordinate itself: no affine.apply).

// CHECK-LABEL: func.func @dense_read
// CHECK-SAME: (%[[Q:.*]]: memref<10x8xf32>, %[[I:.*]]: index)
// CHECK: scf.for %[[ROW:.*]] =
// CHECK:   %[[V:.*]] = affine.apply #{{.*}}(%[[ROW]], %{{.*}})
// CHECK:   %[[IN_TILE:.*]] = arith.cmpi ult, %[[V]], %c8
// CHECK:   scf.if %[[IN_TILE]] {
// CHECK:     %[[R:.*]] = affine.apply #{{.*}}(%[[I]], %{{.*}}, %{{.*}})
// CHECK:     %[[R_OK:.*]] = arith.cmpi ult, %[[R]], %c10
// CHECK:     %[[C_OK:.*]] = arith.cmpi ult, %[[C:.*]], %c8
// CHECK:     %[[VALID:.*]] = arith.andi %[[R_OK]], %[[C_OK]]
// CHECK:     %[[X:.*]] = "rock.global_load"(%[[Q]], %[[R]], %[[C]], %[[VALID]]) {operandSegmentSizes = array<i32: 1, 2, 1, 0>} : (memref<10x8xf32>, index, index, i1) -> vector<4xf32>
func.func @dense_read(%q: memref<10x8xf32>, %i: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 6 : i64, rock.grid_size = 1 : i64} {
  %regs = "rock.alloc"() : () -> memref<2x4xf32, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%q, %regs, %i) {map = affine_map<(i, r, c) -> (i * 4 + r, c)>, block_size = 6, tile_shape = array<i64: 4, 8>, vector_dim = 1, vector_len = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (memref<10x8xf32>, memref<2x4xf32, #gpu.address_space<private>>, index) -> ()
  return
}

// -----

// `valid` joins the validity of every load: each of its results at the vector's
// first point must be >= 0. Here keys t * 16 + n at or past %len are not read
// (a stale slot of the last page may hold NaN), whatever their page pointer.

// CHECK-LABEL: func.func @keys_before_len
// CHECK-SAME: (%[[PAGES:.*]]: memref<2x4x1024xf16>, %[[PTRS:.*]]: memref<2xi64, #gpu.address_space<workgroup>>, %[[B:.*]]: index, %[[T:.*]]: index, %[[LEN:.*]]: index, %[[FIRST:.*]]: index)
// CHECK: scf.for %[[ROW:.*]] =
// CHECK:   %[[V:.*]] = affine.apply #{{.*}}(%[[ROW]], %{{.*}})
// CHECK:   %[[D:.*]] = affine.apply #{{.*}}(%[[V]])
// CHECK:   %[[N:.*]] = affine.apply #{{.*}}(%[[V]])
// CHECK:   %[[NON_NULL:.*]] = arith.cmpi ne, %{{.*}}, %c0_i64
// CHECK:   %[[PAGE_OK:.*]] = arith.andi %{{.*}}, %[[NON_NULL]]
// CHECK:   %[[LEFT:.*]] = affine.apply #{{.*}}(%[[B]], %[[T]], %[[LEN]], %[[N]], %[[D]])
// CHECK:   %[[BEFORE_LEN:.*]] = arith.cmpi sge, %[[LEFT]], %c0
// CHECK:   %[[VALID:.*]] = arith.andi %[[PAGE_OK]], %[[BEFORE_LEN]]
// CHECK:   "rock.global_load"(%[[PAGES]], %{{.*}}, %[[VALID]], %{{.*}})
func.func @keys_before_len(%pages: memref<2x4x1024xf16>, %ptrs: memref<2xi64, #gpu.address_space<workgroup>>, %b: index, %t: index, %len: index, %first: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %t, %len, %ptrs, %first) {map = affine_map<(b, t, len, n, d) -> (b, (t * 16 + n) * 64 + d)>, valid = affine_map<(b, t, len, n, d) -> (len - t * 16 - n - 1)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 1, vector_len = 8, page_size = 1024, num_pages_per_batch = 4, operandSegmentSizes = array<i32: 1, 1, 3, 1, 1>} : (memref<2x4x1024xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// A page of a block-table view (nhd pool [8 blocks, 4 tokens, 2 heads, 32]) is one head's rows
// of a block, 2 x 32 = 64 elements apart: the in-page offset o of the virtual page becomes
// (o floordiv 32) * 64 + o mod 32, and the load's page (its descriptor) spans 3 * 64 + 32 = 224
// elements, the last row's end.

// CHECK-DAG: #[[IN_PAGE:map[0-9]*]] = affine_map<(d0) -> (d0 mod 128)>
// CHECK-DAG: #[[ROWS:map[0-9]*]] = affine_map<(d0) -> ((d0 floordiv 32) * 64 + d0 mod 32)>
// CHECK-LABEL: func.func @nhd_view_read
// CHECK: %[[OFFSET:.*]] = affine.apply #[[IN_PAGE]](%{{.*}})
// CHECK: %[[PTR:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<2xi64, #gpu.address_space<workgroup>>
// CHECK: %[[ROW_OFFSET:.*]] = affine.apply #[[ROWS]](%[[OFFSET]])
// CHECK: "rock.global_load"(%{{.*}}, %[[ROW_OFFSET]], %{{.*}}, %[[PTR]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 224 : i64}
func.func @nhd_view_read(%pool: memref<8x4x2x32xf16>, %table: memref<2x4xi32>, %b: index, %h: index, %first: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x4x2x32xf16>, memref<2x4xi32>) -> memref<2x8x128xf16>
  %raw = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %ptrs = memref.view %raw[%c0][] : memref<16xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
  %regs = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %h, %ptrs, %first) {map = affine_map<(b, h, n, d) -> (b, (h * 16 + n) * 32 + d)>, block_size = 64, tile_shape = array<i64: 8, 32>, vector_dim = 1, vector_len = 8, page_size = 128, num_pages_per_batch = 8, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>} : (memref<2x8x128xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// hnd: a block's rows of one head are contiguous, the offset is the virtual one and the page
// spans block_size x D = 128 elements.

// CHECK-LABEL: func.func @hnd_view_read
// CHECK-NOT: floordiv 32
// CHECK: "rock.global_load"
// CHECK-SAME: page_size = 128 : i64
func.func @hnd_view_read(%pool: memref<8x2x4x32xf16>, %table: memref<2x4xi32>, %b: index, %h: index, %first: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "hnd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x4x32xf16>, memref<2x4xi32>) -> memref<2x8x128xf16>
  %raw = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %ptrs = memref.view %raw[%c0][] : memref<16xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
  %regs = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %h, %ptrs, %first) {map = affine_map<(b, h, n, d) -> (b, (h * 16 + n) * 32 + d)>, block_size = 64, tile_shape = array<i64: 8, 32>, vector_dim = 1, vector_len = 8, page_size = 128, num_pages_per_batch = 8, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>} : (memref<2x8x128xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// A dense source with a dynamic leading dim (packed queries of a kernel for every batch):
// a row is inside when it is below the rows the memref has at run time.
// CHECK-LABEL: func.func @dense_dynamic_read
// CHECK-SAME: (%[[Q:.*]]: memref<?x8xf32>, %[[I:.*]]: index)
// CHECK:     %[[R:.*]] = affine.apply #{{.*}}(%[[I]], %{{.*}}, %{{.*}})
// CHECK:     %[[ROWS:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x8xf32>
// CHECK:     arith.cmpi ult, %[[R]], %[[ROWS]] : index
// CHECK:     "rock.global_load"(%[[Q]], %[[R]]
func.func @dense_dynamic_read(%q: memref<?x8xf32>, %i: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 6 : i64, rock.grid_size = 1 : i64} {
  %regs = "rock.alloc"() : () -> memref<2x4xf32, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%q, %regs, %i) {map = affine_map<(i, r, c) -> (i * 4 + r, c)>, block_size = 6, tile_shape = array<i64: 4, 8>, vector_dim = 1, vector_len = 4, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (memref<?x8xf32>, memref<2x4xf32, #gpu.address_space<private>>, index) -> ()
  return
}

// -----

// A block's byte offset in a static pool of 600000 blocks of 16 x 2 x 128 f16 (8192 bytes; 4.9 GB):
// ids from 524288 on lie past 4 GiB, so the id is widened before the product (32x32->64), which
// then cannot wrap.
// CHECK-LABEL: func.func @pool_past_4_gib
// CHECK:     %[[ID:.*]] = memref.load %{{.*}} : memref<2x4xi32>
// CHECK:     %[[HEAD_BYTES:.*]] = arith.muli %{{.*}}, %c256_i32 : i32
// CHECK:     %[[ID64:.*]] = arith.extui %[[ID]] : i32 to i64
// CHECK:     %[[BLOCK_BYTES:.*]] = arith.muli %[[ID64]], %c8192_i64 : i64
// CHECK:     %[[HEAD64:.*]] = arith.extui %[[HEAD_BYTES]] : i32 to i64
// CHECK:     arith.addi %[[BLOCK_BYTES]], %[[HEAD64]] : i64
func.func @pool_past_4_gib(%pool: memref<600000x16x2x128xf16>, %table: memref<2x4xi32>, %b: index, %h: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<600000x16x2x128xf16>, memref<2x4xi32>) -> memref<2x8x2048xf16>
  %regs = "rock.alloc"() : () -> memref<4x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %h) {map = affine_map<(b, h, n, d) -> (b, (h * 16 + n) * 128 + d)>, block_size = 64, tile_shape = array<i64: 16, 128>, vector_dim = 1, vector_len = 8, page_size = 2048, num_pages_per_batch = 8, wave_size = 64, operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>} : (memref<2x8x2048xf16>, memref<4x8xf16, #gpu.address_space<private>>, index, index) -> ()
  return
}

// -----

// A pool of exactly 4 GiB (524288 blocks of 8192 bytes): every live block's last byte is below 2^32,
// so the offset is 32-bit and widened once.
// CHECK-LABEL: func.func @pool_of_4_gib
// CHECK:     %[[ID:.*]] = memref.load %{{.*}} : memref<2x4xi32>
// CHECK:     %[[HEAD_BYTES:.*]] = arith.muli %{{.*}}, %c256_i32 : i32
// CHECK:     %[[BLOCK_BYTES:.*]] = arith.muli %[[ID]], %c8192_i32 : i32
// CHECK:     %[[OFFSET:.*]] = arith.addi %[[BLOCK_BYTES]], %[[HEAD_BYTES]] : i32
// CHECK:     arith.extui %[[OFFSET]] : i32 to i64
func.func @pool_of_4_gib(%pool: memref<524288x16x2x128xf16>, %table: memref<2x4xi32>, %b: index, %h: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<524288x16x2x128xf16>, memref<2x4xi32>) -> memref<2x8x2048xf16>
  %regs = "rock.alloc"() : () -> memref<4x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %h) {map = affine_map<(b, h, n, d) -> (b, (h * 16 + n) * 128 + d)>, block_size = 64, tile_shape = array<i64: 16, 128>, vector_dim = 1, vector_len = 8, page_size = 2048, num_pages_per_batch = 8, wave_size = 64, operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>} : (memref<2x8x2048xf16>, memref<4x8xf16, #gpu.address_space<private>>, index, index) -> ()
  return
}

// -----

// vLLM's 5-d key cache [num_blocks, Hkv, D/x, block_size, x] (x = 8 f16, D = 32, block_size 16):
// element o of a page (token o floordiv 32, column o mod 32) lies at chunk (column floordiv 8) *
// block_size * x + token * x + column mod 8; a vector of 8 columns is one 16-byte chunk, one load.
// The page spans block_size x D = 512 elements.

// CHECK-DAG: #[[IN_PAGE:map[0-9]*]] = affine_map<(d0) -> (d0 mod 512)>
// CHECK-DAG: #[[CHUNKS:map[0-9]*]] = affine_map<(d0) -> (((d0 mod 32) floordiv 8) * 128 + (d0 floordiv 32) * 8 + d0 mod 8)>
// CHECK-LABEL: func.func @vllm_pa_k_read
// CHECK: %[[OFFSET:.*]] = affine.apply #[[IN_PAGE]](%{{.*}})
// CHECK: %[[PTR:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<2xi64, #gpu.address_space<workgroup>>
// CHECK: %[[CHUNK_OFFSET:.*]] = affine.apply #[[CHUNKS]](%[[OFFSET]])
// CHECK: "rock.global_load"(%{{.*}}, %[[CHUNK_OFFSET]], %{{.*}}, %[[PTR]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 512 : i64, rock.uniform_page_ptr} : (memref<2x8x512xf16>, index, i1, i64) -> vector<8xf16>
func.func @vllm_pa_k_read(%pool: memref<8x2x4x16x8xf16>, %table: memref<2x4xi32>, %b: index, %h: index, %first: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x4x16x8xf16>, memref<2x4xi32>) -> memref<2x8x512xf16>
  %raw = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %ptrs = memref.view %raw[%c0][] : memref<16xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
  %regs = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %h, %ptrs, %first) {map = affine_map<(b, h, n, d) -> (b, (h * 64 + n) * 32 + d)>, block_size = 64, tile_shape = array<i64: 16, 32>, vector_dim = 1, vector_len = 8, page_size = 512, num_pages_per_batch = 8, operandSegmentSizes = array<i32: 1, 1, 2, 1, 1>} : (memref<2x8x512xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, index, memref<2xi64, #gpu.address_space<workgroup>>, index) -> ()
  return
}

// -----

// vLLM's value cache [num_blocks, Hkv, D, block_size] (D = 32, block_size 16), read along the tokens
// (vector_dim 0: 8 tokens of one column, 16 contiguous bytes) with each wave's page read per wave:
// element o lies at (o mod 32) * 16 + o floordiv 32 of its page (block 2048 bytes, head 1024). The
// validity (key < len) changes along the vector: the load is made when its first or its last token
// is valid, and the tokens at or past len are set to 0 (a stale slot may hold NaN): the valid tokens
// are the first min(8, len - key - 1 + 1), 16 bits each; each 64-bit word of the vector is and-ed with
// its bits of them (all, none or the low ones). Two token groups per wave: the bound is per lane.

// CHECK-DAG: #[[COLUMNS:map[0-9]*]] = affine_map<(d0) -> ((d0 mod 32) * 16 + d0 floordiv 32)>
// CHECK-DAG: #[[BEFORE_LEN:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3 - d2 * 16 - d4 - 1)>
// CHECK-LABEL: func.func @vllm_pa_v_read
// CHECK: %[[ID:.*]] = memref.load %{{.*}} : memref<2x4xi32>
// CHECK: %[[HEAD_BYTES:.*]] = arith.muli %{{.*}}, %c1024_i32 : i32
// CHECK: %[[BLOCK_BYTES:.*]] = arith.muli %[[ID]], %c2048_i32 : i32
// CHECK: arith.addi %[[BLOCK_BYTES]], %[[HEAD_BYTES]] : i32
// CHECK: %[[FIRST_OK:.*]] = arith.cmpi sge, %{{.*}}, %c0
// CHECK: %[[LAST_OK:.*]] = arith.cmpi sge, %{{.*}}, %c0
// CHECK: %[[ANY:.*]] = arith.ori %[[FIRST_OK]], %[[LAST_OK]] : i1
// CHECK: %[[VALID:.*]] = arith.andi %{{.*}}, %[[ANY]] : i1
// CHECK: %[[OFFSET:.*]] = affine.apply #[[COLUMNS]](%{{.*}})
// CHECK: %[[X:.*]] = "rock.global_load"(%{{.*}}, %[[OFFSET]], %[[VALID]], %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, page_size = 512 : i64} : (memref<2x8x512xf16>, index, i1, i64) -> vector<8xf16>
// CHECK: %[[BOUND:.*]] = affine.apply #[[BEFORE_LEN]](
// CHECK: %[[BOUND32:.*]] = arith.index_cast %[[BOUND]] : index to i32
// CHECK-NOT: rocdl.readfirstlane
// CHECK: %[[COUNT:.*]] = arith.addi %[[BOUND32]], %c1_i32 : i32
// CHECK: %[[TOKENS:.*]] = arith.minsi %c8_i32{{.*}}, %[[COUNT]] : i32
// CHECK: %[[BITS32:.*]] = arith.muli %[[TOKENS]], %c16_i32 : i32
// CHECK: %[[BITS:.*]] = arith.extsi %[[BITS32]] : i32 to i64
// CHECK: %[[ALL0:.*]] = arith.cmpi sge, %[[BITS]], %c64_i64 : i64
// CHECK: %[[WORD0:.*]] = arith.select %[[ALL0]], %c-1_i64, %{{.*}} : i64
// CHECK: %[[SHIFT1:.*]] = arith.subi %[[BITS]], %c64_i64{{.*}} : i64
// CHECK: %[[WORDS:.*]] = vector.bitcast %[[X]] : vector<8xf16> to vector<2xi64>
// CHECK: %[[MASK:.*]] = vector.from_elements %[[WORD0]], %{{.*}} : vector<2xi64>
// CHECK: %[[KEPT:.*]] = arith.andi %[[WORDS]], %[[MASK]] : vector<2xi64>
// CHECK: %[[MASKED:.*]] = vector.bitcast %[[KEPT]] : vector<2xi64> to vector<8xf16>
// CHECK: vector.store %[[MASKED]]
func.func @vllm_pa_v_read(%pool: memref<8x2x32x16xf16>, %table: memref<2x4xi32>, %b: index, %h: index, %t: index, %len: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x32x16xf16>, memref<2x4xi32>) -> memref<2x8x512xf16>
  %regs = "rock.alloc"() : () -> memref<1x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %h, %t, %len) {map = affine_map<(b, h, t, l, n, d) -> (b, (h * 64 + t * 16 + n) * 32 + d)>, valid = affine_map<(b, h, t, l, n, d) -> (l - t * 16 - n - 1)>, block_size = 64, tile_shape = array<i64: 16, 32>, vector_dim = 0, vector_len = 8, page_size = 512, num_pages_per_batch = 8, wave_size = 64, operandSegmentSizes = array<i32: 1, 1, 4, 0, 0>} : (memref<2x8x512xf16>, memref<1x8xf16, #gpu.address_space<private>>, index, index, index, index) -> ()
  return
}

// -----

// The same with D = 64: a wave's 64 lanes read the 64 columns of one token group, so the bound is the
// same for all of them: taken with readfirstlane, the masks are scalar code.

// CHECK-LABEL: func.func @vllm_pa_v_read_uniform
// CHECK: "rock.global_load"
// CHECK: %[[BOUND32:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[UNIFORM:.*]] = rocdl.readfirstlane %[[BOUND32]] : i32
// CHECK: arith.addi %[[UNIFORM]], %c1_i32 : i32
func.func @vllm_pa_v_read_uniform(%pool: memref<8x2x64x16xf16>, %table: memref<2x4xi32>, %b: index, %h: index, %t: index, %len: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x2x64x16xf16>, memref<2x4xi32>) -> memref<2x8x1024xf16>
  %regs = "rock.alloc"() : () -> memref<2x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %h, %t, %len) {map = affine_map<(b, h, t, l, n, d) -> (b, (h * 64 + t * 16 + n) * 64 + d)>, valid = affine_map<(b, h, t, l, n, d) -> (l - t * 16 - n - 1)>, block_size = 64, tile_shape = array<i64: 16, 64>, vector_dim = 0, vector_len = 8, page_size = 1024, num_pages_per_batch = 8, wave_size = 64, operandSegmentSizes = array<i32: 1, 1, 4, 0, 0>} : (memref<2x8x1024xf16>, memref<2x8xf16, #gpu.address_space<private>>, index, index, index, index) -> ()
  return
}

// -----

// The V half of a stacked cache [num_blocks, 2, 16, 2, 128] (vLLM Triton, FlashInfer NHD): a strided pool
// whose blocks lie 2 x 4096 elements (16384 bytes) apart, starting 4096 elements (8192 bytes) into the
// tensor. The wave's page address takes the pool's block stride and offset; the rows, 256 elements apart,
// and the page's extent (15 x 256 + 128 elements) are those of a contiguous nhd pool.
// CHECK-DAG: #[[ROWS:map[0-9]*]] = affine_map<(d0) -> ((d0 floordiv 128) * 256 + d0 mod 128)>
// CHECK-LABEL: func.func @stacked_pool
// CHECK:     %[[ID:.*]] = memref.load %{{.*}} : memref<2x4xi32>
// CHECK:     %[[HEAD_BYTES:.*]] = arith.muli %{{.*}}, %c256_i32 : i32
// CHECK:     %[[BLOCK_BYTES:.*]] = arith.muli %[[ID]], %c16384_i32 : i32
// CHECK:     %[[OFFSET:.*]] = arith.addi %[[BLOCK_BYTES]], %[[HEAD_BYTES]] : i32
// CHECK:     %[[WIDE:.*]] = arith.extui %[[OFFSET]] : i32 to i64
// CHECK:     %[[BASE:.*]] = memref.extract_aligned_pointer_as_index
// CHECK:     %[[BASE64:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK:     %[[V_HALF:.*]] = arith.addi %[[BASE64]], %c8192_i64 : i64
// CHECK:     arith.addi %[[V_HALF]], %[[WIDE]] : i64
// CHECK:     affine.apply #[[ROWS]]
// CHECK:     "rock.global_load"
// CHECK-SAME: page_size = 3968 : i64
func.func @stacked_pool(%pool: memref<8x16x2x128xf16, strided<[8192, 256, 128, 1], offset: 4096>>, %table: memref<2x4xi32>, %b: index, %h: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x16x2x128xf16, strided<[8192, 256, 128, 1], offset: 4096>>, memref<2x4xi32>) -> memref<2x8x2048xf16>
  %regs = "rock.alloc"() : () -> memref<4x8xf16, #gpu.address_space<private>>
  "rock.threadwise_read_into"(%pages, %regs, %b, %h) {map = affine_map<(b, h, n, d) -> (b, (h * 16 + n) * 128 + d)>, block_size = 64, tile_shape = array<i64: 16, 128>, vector_dim = 1, vector_len = 8, page_size = 2048, num_pages_per_batch = 8, wave_size = 64, operandSegmentSizes = array<i32: 1, 1, 2, 0, 0>} : (memref<2x8x2048xf16>, memref<4x8xf16, #gpu.address_space<private>>, index, index) -> ()
  return
}
