// RUN: pagedir-opt %s --rock-buffer-load --split-input-file | FileCheck %s
// Kernels without rock.arch take the arch option: sm_80 lowers as sm_90 does.
// RUN: sed 's/, rock.arch = "[^"]*"//' %s | pagedir-opt --rock-buffer-load='arch=sm_80' --split-input-file | FileCheck %s

// NVIDIA has no buffer descriptors: a paged load reads through the page pointer, 16 bytes
// (ld.global.v4) at the element's byte offset, under an scf.if on its validity so that an
// invalid lane forms no address and reads 0.

// CHECK-LABEL: func.func @paged_f16
// CHECK-SAME: (%[[MEM:.*]]: memref<1x4x2048xf16>, %[[OFF:.*]]: index, %[[VALID:.*]]: i1, %[[PTR:.*]]: i64)
// CHECK-NOT:  rocdl
// CHECK:      %[[OFF64:.*]] = arith.index_cast %[[OFF]] : index to i64
// CHECK:      %[[BYTES:.*]] = arith.muli %[[OFF64]], %c2_i64 : i64
// CHECK:      %[[ADDR:.*]] = arith.addi %[[PTR]], %[[BYTES]] : i64
// CHECK:      %[[X:.*]] = scf.if %[[VALID]] -> (vector<8xf16>) {
// CHECK:        %[[P:.*]] = llvm.inttoptr %[[ADDR]] : i64 to !llvm.ptr<1>
// CHECK:        %[[RAW:.*]] = llvm.load %[[P]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK:        %[[V:.*]] = vector.bitcast %[[RAW]] : vector<4xi32> to vector<8xf16>
// CHECK:        scf.yield %[[V]] : vector<8xf16>
// CHECK:      } else {
// CHECK:        %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8xf16>
// CHECK:        scf.yield %[[ZERO]] : vector<8xf16>
// CHECK:      return %[[X]]
func.func @paged_f16(%mem: memref<1x4x2048xf16>, %off: index, %valid: i1, %ptr: i64) -> vector<8xf16> attributes {rock.kernel, rock.arch = "sm_90"} {
  %x = "rock.global_load"(%mem, %off, %valid, %ptr) {page_size = 2048, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<1x4x2048xf16>, index, i1, i64) -> vector<8xf16>
  return %x : vector<8xf16>
}

// -----

// 256 bits of f32 without a validity: two 16-byte loads, the second 16 bytes further, no guard.

// CHECK-LABEL: func.func @wide_unguarded
// CHECK-SAME: (%[[MEM:.*]]: memref<1x4x256xf32>, %[[OFF:.*]]: index, %[[PTR:.*]]: i64)
// CHECK-NOT:  scf.if
// CHECK:      %[[ADDR:.*]] = arith.addi %[[PTR]]
// CHECK:      %[[LO_P:.*]] = llvm.inttoptr %[[ADDR]]
// CHECK:      %[[LO:.*]] = llvm.load %[[LO_P]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK:      %[[HI_ADDR:.*]] = arith.addi %[[ADDR]], %c16_i64
// CHECK:      %[[HI_P:.*]] = llvm.inttoptr %[[HI_ADDR]]
// CHECK:      %[[HI:.*]] = llvm.load %[[HI_P]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK:      vector.insert_strided_slice {{.*}} {offsets = [4], strides = [1]} : vector<4xf32> into vector<8xf32>
func.func @wide_unguarded(%mem: memref<1x4x256xf32>, %off: index, %ptr: i64) -> vector<8xf32> attributes {rock.kernel, rock.arch = "sm_90"} {
  %x = "rock.global_load"(%mem, %off, %ptr) {page_size = 256, rock.uniform_page_ptr, operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1x4x256xf32>, index, i64) -> vector<8xf32>
  return %x : vector<8xf32>
}

// -----

// A dense load from a buffer with a dynamic leading dim: the row-major offset in 64 bits from the
// buffer's base (no descriptor range, so no window around the lanes' rows), 8 bytes aligned to 8.

// CHECK-LABEL: func.func @dense_dynamic
// CHECK-SAME: (%[[Q:.*]]: memref<?x8xf32>, %[[R:.*]]: index, %[[C:.*]]: index, %[[VALID:.*]]: i1)
// CHECK:      %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK:      %[[BASE64:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK:      %[[R64:.*]] = arith.index_cast %[[R]] : index to i64
// CHECK:      %[[C64:.*]] = arith.index_cast %[[C]] : index to i64
// CHECK:      %[[ROW:.*]] = arith.muli %[[R64]], %c8_i64 : i64
// CHECK:      %[[ELEM:.*]] = arith.addi %[[ROW]], %[[C64]] : i64
// CHECK:      %[[BYTES:.*]] = arith.muli %[[ELEM]], %c4_i64 : i64
// CHECK:      %[[ADDR:.*]] = arith.addi %[[BASE64]], %[[BYTES]] : i64
// CHECK:      scf.if %[[VALID]] -> (vector<2xf32>)
// CHECK:        llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<1> -> vector<2xi32>
func.func @dense_dynamic(%q: memref<?x8xf32>, %r: index, %c: index, %valid: i1) -> vector<2xf32> attributes {rock.kernel, rock.arch = "sm_90"} {
  %x = "rock.global_load"(%q, %r, %c, %valid) {operandSegmentSizes = array<i32: 1, 2, 1, 0>} : (memref<?x8xf32>, index, index, i1) -> vector<2xf32>
  return %x : vector<2xf32>
}

// -----

// A direct-to-LDS load on NVIDIA: one cp.async of 16 bytes per lane, from the page pointer plus the
// lane's byte offset to the tile at dest_offset plus 8 elements per lane; where invalid (or past the
// page) the source is null and cpSize 0: nothing is read and the 16 bytes are zeroed.

// CHECK-LABEL: func.func @direct_to_lds
// CHECK-SAME: (%{{.*}}: memref<2x8x2048xf16>, %[[PTR:.*]]: i64, %[[OFF:.*]]: index, %[[BASE:.*]]: index, %[[VALID:.*]]: i1)
// CHECK: %[[TILE:.*]] = memref.view
// CHECK: %[[OFF64:.*]] = arith.index_cast %[[OFF]] : index to i64
// CHECK: %[[BYTES:.*]] = arith.muli %[[OFF64]], %c2_i64 : i64
// CHECK: %[[INSIDE:.*]] = arith.cmpi ule, %[[BYTES]], %c4080_i64 : i64
// CHECK: %[[OK:.*]] = arith.andi %[[VALID]], %[[INSIDE]] : i1
// CHECK: %[[ADDR:.*]] = arith.addi %[[PTR]], %[[BYTES]] : i64
// CHECK: %[[SRC:.*]] = arith.select %[[OK]], %[[ADDR]], %c0_i64 : i64
// CHECK: %[[TID:.*]] = "rock.workitem_id"()
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32 : index
// CHECK: %[[LANE_ELEMS:.*]] = arith.muli %[[LANE]], %c8 : index
// CHECK: %[[ELEM:.*]] = arith.addi %[[BASE]], %[[LANE_ELEMS]] : index
// CHECK: %[[AT:.*]] = memref.extract_aligned_pointer_as_index %[[TILE]]
// CHECK: %[[SHIFT:.*]] = arith.muli %[[ELEM]], %c2
// CHECK: %[[LDS:.*]] = arith.addi %[[AT]], %[[SHIFT]] : index
// CHECK: %[[LDS32:.*]] = arith.index_cast %[[LDS]] : index to i32
// CHECK: %[[DST:.*]] = llvm.inttoptr %[[LDS32]] : i32 to !llvm.ptr<3>
// CHECK: %[[SIZE:.*]] = arith.select %[[OK]], %c16_i32, %c0_i32 : i32
// CHECK: %[[GSRC:.*]] = llvm.inttoptr %[[SRC]] : i64 to !llvm.ptr<1>
// CHECK: nvvm.cp.async.shared.global %[[DST]], %[[GSRC]], 16, cache = cg, %[[SIZE]] : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK-NOT: rock.global_load_lds
func.func @direct_to_lds(%pages: memref<2x8x2048xf16>, %ptr: i64, %off: index, %base: index, %valid: i1) attributes {rock.kernel, rock.arch = "sm_90"} {
  %raw = "rock.alloc"() : () -> memref<8192xi8, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %tile = memref.view %raw[%c0][] : memref<8192xi8, #gpu.address_space<workgroup>> to memref<32x128xf16, #gpu.address_space<workgroup>>
  "rock.global_load_lds"(%pages, %off, %tile, %base, %valid, %ptr) {page_size = 2048, bytes = 16, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (memref<2x8x2048xf16>, index, memref<32x128xf16, #gpu.address_space<workgroup>>, index, i1, i64) -> ()
  return
}
