// RUN: pagedir-opt %s --rock-buffer-load --split-input-file | FileCheck %s --check-prefixes=CHECK,CDNA
// Kernels without rock.arch take the arch option (and record it).
// RUN: sed 's/, rock.arch = "[^"]*"//' %s | pagedir-opt --rock-buffer-load='arch=gfx1100' --split-input-file | FileCheck %s --check-prefixes=CHECK,RDNA

// A paged vector<8xf16> load: one descriptor over the page (stride 0,
// num_records = 2048 elements x 2 bytes), the byte offset pushed to
// num_records when invalid, one 128-bit load bitcast to f16.

// CHECK-LABEL: func.func @paged_f16
// CHECK-SAME: (%[[MEM:.*]]: memref<1x4x2048xf16>, %[[OFF:.*]]: index, %[[VALID:.*]]: i1, %[[PTR:.*]]: i64)
// CHECK:      %[[BASE:.*]] = llvm.inttoptr %[[PTR]] : i64 to !llvm.ptr<1>
// CHECK-DAG:  %[[STRIDE:.*]] = arith.constant 0 : i16
// CHECK-DAG:  %[[RECORDS:.*]] = arith.constant 4096 : i64
// CDNA-DAG:   %[[FLAGS:.*]] = arith.constant 159744 : i32
// RDNA-DAG:   %[[FLAGS:.*]] = arith.constant 822243328 : i32
// CHECK:      %[[RSRC:.*]] = rocdl.make.buffer.rsrc %[[BASE]], %[[STRIDE]], %[[RECORDS]], %[[FLAGS]] : <1> to <8>
// CHECK:      %[[BYTES:.*]] = arith.muli %[[OFF]], %c2
// CHECK:      %[[BYTES32:.*]] = arith.index_cast %[[BYTES]] : index to i32
// CHECK:      %[[VOFF:.*]] = arith.select %[[VALID]], %[[BYTES32]], %c4096_i32 : i32
// CHECK:      %[[RAW:.*]] = rocdl.raw.ptr.buffer.load %[[RSRC]], %[[VOFF]], %c0_i32, %c0_i32 : vector<4xi32>
// CHECK:      %[[X:.*]] = vector.bitcast %[[RAW]] : vector<4xi32> to vector<8xf16>
// CHECK:      return %[[X]]
func.func @paged_f16(%mem: memref<1x4x2048xf16>, %off: index, %valid: i1, %ptr: i64) -> vector<8xf16> attributes {rock.kernel, rock.arch = "amdgcn-amd-amdhsa:gfx942"} {
  %x = "rock.global_load"(%mem, %off, %valid, %ptr) {page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<1x4x2048xf16>, index, i1, i64) -> vector<8xf16>
  return %x : vector<8xf16>
}

// -----

// 256 bits of f32: two 128-bit loads, the second 16 bytes further, inserted at lane 4.
// A uniform page pointer goes through readfirstlane so the descriptor stays scalar.

// CHECK-LABEL: func.func @wide_uniform
// CHECK-SAME: (%[[MEM:.*]]: memref<1x4x256xf32>, %[[OFF:.*]]: index, %[[PTR:.*]]: i64)
// CHECK:      %[[UNIFORM:.*]] = rocdl.readfirstlane %[[PTR]] : i64
// CHECK:      %[[BASE:.*]] = llvm.inttoptr %[[UNIFORM]]
// CHECK:      %[[RSRC:.*]] = rocdl.make.buffer.rsrc %[[BASE]]
// CHECK:      %[[VOFF:.*]] = arith.index_cast
// CHECK-NOT:  arith.select
// CHECK:      %[[LO:.*]] = rocdl.raw.ptr.buffer.load %[[RSRC]], %[[VOFF]], %c0_i32, %c0_i32 : vector<4xi32>
// CHECK:      %[[LO_F:.*]] = vector.bitcast %[[LO]] : vector<4xi32> to vector<4xf32>
// CHECK:      %[[VOFF_HI:.*]] = arith.addi %[[VOFF]], %c16_i32
// CHECK:      %[[HI:.*]] = rocdl.raw.ptr.buffer.load %[[RSRC]], %[[VOFF_HI]], %c0_i32, %c0_i32 : vector<4xi32>
// CHECK:      %[[HI_F:.*]] = vector.bitcast %[[HI]] : vector<4xi32> to vector<4xf32>
// CHECK:      %[[PART:.*]] = vector.insert_strided_slice %[[LO_F]], %{{.*}} {offsets = [0], strides = [1]} : vector<4xf32> into vector<8xf32>
// CHECK:      %[[ALL:.*]] = vector.insert_strided_slice %[[HI_F]], %[[PART]] {offsets = [4], strides = [1]} : vector<4xf32> into vector<8xf32>
// CHECK:      return %[[ALL]]
func.func @wide_uniform(%mem: memref<1x4x256xf32>, %off: index, %ptr: i64) -> vector<8xf32> attributes {rock.kernel, rock.arch = "gfx942"} {
  %x = "rock.global_load"(%mem, %off, %ptr) {page_size = 256, rock.uniform_page_ptr, operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1x4x256xf32>, index, i64) -> vector<8xf32>
  return %x : vector<8xf32>
}

// -----

// A scalar bf16 load reads 16 bits.

// CHECK-LABEL: func.func @scalar_bf16
// CHECK: %[[RAW:.*]] = rocdl.raw.ptr.buffer.load %{{.*}}, %{{.*}}, %c0_i32, %c0_i32 : i16
// CHECK: arith.bitcast %[[RAW]] : i16 to bf16
func.func @scalar_bf16(%mem: memref<1x4x64xbf16>, %off: index, %valid: i1, %ptr: i64) -> bf16 attributes {rock.kernel, rock.arch = "gfx942"} {
  %x = "rock.global_load"(%mem, %off, %valid, %ptr) {page_size = 64, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<1x4x64xbf16>, index, i1, i64) -> bf16
  return %x : bf16
}

// -----

// A dense load: the descriptor covers the whole memref (6 x 8 x 4 bytes), the
// offset is row-major.

// CHECK-LABEL: func.func @dense
// CHECK-SAME: (%[[Q:.*]]: memref<6x8xf32>, %[[R:.*]]: index, %[[C:.*]]: index, %[[VALID:.*]]: i1)
// CHECK:      %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK:      %[[ADDR64:.*]] = arith.index_cast %[[ADDR]] : index to i64
// CHECK:      %[[ROW:.*]] = arith.muli %[[R]], %c8
// CHECK:      %[[LINEAR:.*]] = arith.addi %[[ROW]], %[[C]]
// CHECK:      %[[BASE:.*]] = llvm.inttoptr %[[ADDR64]]
// CHECK:      rocdl.make.buffer.rsrc %[[BASE]], %{{.*}}, %c192_i64
// CHECK:      arith.muli %[[LINEAR]], %c4
// CHECK:      arith.select %[[VALID]], %{{.*}}, %c192_i32
// CHECK:      rocdl.raw.ptr.buffer.load {{.*}} : vector<2xi32>
func.func @dense(%q: memref<6x8xf32>, %r: index, %c: index, %valid: i1) -> vector<2xf32> attributes {rock.kernel, rock.arch = "gfx942"} {
  %x = "rock.global_load"(%q, %r, %c, %valid) {operandSegmentSizes = array<i32: 1, 2, 1, 0>} : (memref<6x8xf32>, index, index, i1) -> vector<2xf32>
  return %x : vector<2xf32>
}

// -----

// A page of an nhd block-table view: one head's 16 rows of 64 elements, 2 x 64 apart, span
// 15 * 128 + 64 = 1984 elements (rock-threadwise-lowering's page_size): the descriptor covers
// 3968 bytes, with the base the staged page address.

// CHECK-LABEL: func.func @nhd_view_page
// CHECK-SAME: (%{{.*}}: memref<4x16x2x64xf16>, %{{.*}}: memref<1x4xi32>, %[[OFF:.*]]: index, %[[VALID:.*]]: i1, %[[PTR:.*]]: i64)
// CHECK:      %[[BASE:.*]] = llvm.inttoptr %[[PTR]] : i64 to !llvm.ptr<1>
// CHECK-DAG:  %[[RECORDS:.*]] = arith.constant 3968 : i64
// CHECK:      %[[RSRC:.*]] = rocdl.make.buffer.rsrc %[[BASE]], %{{.*}}, %[[RECORDS]], %{{.*}}
// CHECK:      %[[INVALID:.*]] = arith.constant 3968 : i32
// CHECK:      %[[VOFF:.*]] = arith.select %[[VALID]], %{{.*}}, %[[INVALID]] : i32
// CHECK:      rocdl.raw.ptr.buffer.load %[[RSRC]], %[[VOFF]], %{{.*}}, %{{.*}} : vector<4xi32>
func.func @nhd_view_page(%pool: memref<4x16x2x64xf16>, %table: memref<1x4xi32>, %off: index, %valid: i1, %ptr: i64) attributes {rock.kernel, rock.arch = "gfx942"} {
  %pages = "rock.block_table_view"(%pool, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x2x64xf16>, memref<1x4xi32>) -> memref<1x8x1024xf16>
  %x = "rock.global_load"(%pages, %off, %valid, %ptr) {page_size = 1984, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<1x8x1024xf16>, index, i1, i64) -> vector<8xf16>
  return
}

// -----

// A dense load from a memref with a dynamic leading dim whose row is the same for every lane (a
// batch row of dense K/V): the descriptor starts at the row, base + r x 32 bytes in 64 bits, so
// the 32-bit offset is the one inside the row and never wraps however many rows there are at run
// time; num_records is the bytes from the row to the end (0 past it), kept below 2^32 minus the
// load's 8 bytes; an invalid lane reads at num_records.

// CHECK-LABEL: func.func @dense_dynamic
// CHECK-SAME: (%[[Q:.*]]: memref<?x8xf32>, %[[R:.*]]: index, %[[C:.*]]: index, %[[VALID:.*]]: i1)
// CHECK:      %[[R64:.*]] = arith.index_cast %[[R]] : index to i64
// CHECK:      %[[C64:.*]] = arith.index_cast %[[C]] : index to i64
// CHECK:      %[[INNER:.*]] = arith.muli %[[C64]], %c4_i64 : i64
// CHECK:      %[[ROWS:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x8xf32>
// CHECK:      %[[ROWS64:.*]] = arith.index_cast %[[ROWS]] : index to i64
// CHECK:      %[[TOTAL:.*]] = arith.muli %[[ROWS64]], %c32_i64 : i64
// CHECK:      %[[START:.*]] = arith.muli %[[R64]], %c32_i64{{.*}} : i64
// CHECK:      %[[END:.*]] = arith.maxui %[[TOTAL]], %[[START]] : i64
// CHECK:      %[[LEFT:.*]] = arith.subi %[[END]], %[[START]] : i64
// CHECK:      %[[RECORDS:.*]] = arith.minui %[[LEFT]], %c4294967288_i64 : i64
// CHECK:      %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK:      %[[ADDR64:.*]] = arith.index_cast %[[ADDR]] : index to i64
// CHECK:      %[[ROW_BASE:.*]] = arith.addi %[[ADDR64]], %[[START]] : i64
// CHECK:      %[[OFF32:.*]] = arith.trunci %[[INNER]] : i64 to i32
// CHECK:      %[[BASE:.*]] = llvm.inttoptr %[[ROW_BASE]]
// CHECK:      rocdl.make.buffer.rsrc %[[BASE]], %{{.*}}, %[[RECORDS]]
// CHECK:      %[[PAST:.*]] = arith.trunci %[[RECORDS]] : i64 to i32
// CHECK:      arith.select %[[VALID]], %[[OFF32]], %[[PAST]] : i32
// CHECK-NOT:  rocdl.readfirstlane
func.func @dense_dynamic(%q: memref<?x8xf32>, %r: index, %c: index, %valid: i1) -> vector<2xf32> attributes {rock.kernel, rock.arch = "gfx942"} {
  %x = "rock.global_load"(%q, %r, %c, %valid) {operandSegmentSizes = array<i32: 1, 2, 1, 0>} : (memref<?x8xf32>, index, index, i1) -> vector<2xf32>
  return %x : vector<2xf32>
}

// -----

// A dynamic leading dim whose row varies across lanes (a packed query row): the descriptor starts
// 2 GiB below the wave's first lane's 64-bit byte offset (readfirstlane; at 0 at least), rounded
// down to 256 bytes, and a lane whose offset from there is not below num_records (past the buffer,
// or outside the 4 GiB window) is invalid: it reads 0, never a wrapped offset's bytes.

// CHECK-LABEL: func.func @dense_dynamic_lanes
// CHECK-SAME: (%[[Q:.*]]: memref<?x8xf32>, %[[R:.*]]: index, %[[C:.*]]: index, %[[VALID:.*]]: i1)
// CHECK:      %[[TID:.*]] = "rock.workitem_id"
// CHECK:      %[[ROW:.*]] = arith.addi %[[R]], %[[TID]]
// CHECK:      %[[ROW64:.*]] = arith.index_cast %[[ROW]] : index to i64
// CHECK:      %[[ROW_START:.*]] = arith.muli %[[ROW64]], %c32_i64{{.*}} : i64
// CHECK:      %[[OFFSET:.*]] = arith.addi %[[ROW_START]], %{{.*}} : i64
// CHECK:      %[[FIRST:.*]] = rocdl.readfirstlane %[[OFFSET]] : i64
// CHECK:      %[[TWO_GIB:.*]] = arith.minui %[[FIRST]], %c2147483648_i64 : i64
// CHECK:      %[[BELOW:.*]] = arith.subi %[[FIRST]], %[[TWO_GIB]] : i64
// CHECK:      %[[START:.*]] = arith.andi %[[BELOW]], %c-256_i64 : i64
// CHECK:      %[[REL:.*]] = arith.subi %[[OFFSET]], %[[START]] : i64
// CHECK:      %[[RECORDS:.*]] = arith.minui %{{.*}}, %c4294967288_i64 : i64
// CHECK:      %[[INSIDE:.*]] = arith.cmpi ult, %[[REL]], %[[RECORDS]] : i64
// CHECK:      %[[BASE:.*]] = arith.addi %{{.*}}, %[[START]] : i64
// CHECK:      %[[REL32:.*]] = arith.trunci %[[REL]] : i64 to i32
// CHECK:      %[[LIVE:.*]] = arith.andi %[[VALID]], %[[INSIDE]] : i1
// CHECK:      rocdl.make.buffer.rsrc %{{.*}}, %{{.*}}, %[[RECORDS]]
// CHECK:      arith.select %[[LIVE]], %[[REL32]], %{{.*}} : i32
func.func @dense_dynamic_lanes(%q: memref<?x8xf32>, %r: index, %c: index, %valid: i1) -> vector<2xf32> attributes {rock.kernel, rock.arch = "gfx942"} {
  %tid = "rock.workitem_id"() : () -> index
  %row = arith.addi %r, %tid : index
  %x = "rock.global_load"(%q, %row, %c, %valid) {operandSegmentSizes = array<i32: 1, 2, 1, 0>} : (memref<?x8xf32>, index, index, i1) -> vector<2xf32>
  return %x : vector<2xf32>
}

// -----

// A direct-to-LDS load: the page's descriptor (its pointer made wave-uniform), the lane's byte
// offset pushed to num_records when invalid (the hardware then writes 0), and the LDS base (M0)
// the tile's address plus dest_offset elements, wave-uniform too.

// CHECK-LABEL: func.func @direct_to_lds
// CHECK-SAME: (%{{.*}}: memref<2x8x2048xf16>, %[[PTR:.*]]: i64, %[[OFF:.*]]: index, %[[BASE:.*]]: index, %[[VALID:.*]]: i1)
// CHECK: %[[TILE:.*]] = memref.view
// CHECK: %[[UNIFORM:.*]] = rocdl.readfirstlane %[[PTR]] : i64
// CHECK: %[[GLOBAL:.*]] = llvm.inttoptr %[[UNIFORM]] : i64 to !llvm.ptr<1>
// CDNA: %[[RSRC:.*]] = rocdl.make.buffer.rsrc %[[GLOBAL]], %{{.*}}, %c4096_i64, %c159744_i32 : <1> to <8>
// RDNA: %[[RSRC:.*]] = rocdl.make.buffer.rsrc %[[GLOBAL]], %{{.*}}, %c4096_i64, %c822243328_i32 : <1> to <8>
// CHECK: %[[BYTES:.*]] = arith.muli %[[OFF]], %c2
// CHECK: %[[BYTES32:.*]] = arith.index_cast %[[BYTES]] : index to i32
// CHECK: %[[VOFF:.*]] = arith.select %[[VALID]], %[[BYTES32]], %c4096_i32 : i32
// CHECK: %[[AT:.*]] = memref.extract_aligned_pointer_as_index %[[TILE]]
// CHECK: %[[SHIFT:.*]] = arith.muli %[[BASE]], %c2
// CHECK: %[[LDS:.*]] = arith.addi %[[AT]], %[[SHIFT]] : index
// CHECK: %[[LDS32:.*]] = arith.index_cast %[[LDS]] : index to i32
// CHECK: %[[M0:.*]] = rocdl.readfirstlane %[[LDS32]] : i32
// CHECK: %[[LDSPTR:.*]] = llvm.inttoptr %[[M0]] : i32 to !llvm.ptr<3>
// CHECK: rocdl.raw.ptr.buffer.load.lds %[[RSRC]], %[[LDSPTR]], %c4_i32, %[[VOFF]], %c0_i32, %c0_i32, %c0_i32
// CHECK-NOT: rock.global_load_lds
func.func @direct_to_lds(%pages: memref<2x8x2048xf16>, %ptr: i64, %off: index, %base: index, %valid: i1) attributes {rock.kernel, rock.arch = "gfx942"} {
  %raw = "rock.alloc"() : () -> memref<8192xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<8192xi8, #gpu.address_space<workgroup>> to memref<32x128xf16, #gpu.address_space<workgroup>>
  "rock.global_load_lds"(%pages, %off, %tile, %base, %valid, %ptr) {bytes = 4, page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<2x8x2048xf16>, index, memref<32x128xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
  return
}
