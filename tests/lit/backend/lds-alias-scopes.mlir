// rock-backend-lds-alias-scopes (a step of rock-backend-pipeline): where direct-to-LDS loads write two
// disjoint views of the workgroup allocation (a pipelined loop's K and V tiles), every LDS access traced to
// one view gets that view's alias scope and, as noalias, the scopes of the copies' views apart from it; the
// LDS barriers wait for LDS only. Loads into one region (unpipelined: both tiles on the same bytes) change nothing.
// RUN: pagedir-opt %s --pass-pipeline='builtin.module(rock-backend-pipeline{arch=gfx950})' | FileCheck %s

// CHECK-LABEL: llvm.func @two_tiles(
// CHECK: rocdl.raw.ptr.buffer.load.lds {{.*}} {alias_scopes = [#[[A:[a-z_0-9]+]]], noalias_scopes = [#[[B:[a-z_0-9]+]]]}
// CHECK: rocdl.raw.ptr.buffer.load.lds {{.*}} {alias_scopes = [#[[B]]], noalias_scopes = [#[[A]]]}
// The read of tile A while B's copies are in flight: LLVM need not wait for them.
// CHECK: llvm.load {{.*}} {alias_scopes = [#[[A]]], {{.*}}noalias_scopes = [#[[B]]]} : !llvm.ptr<3> -> vector<4xf16>
// CHECK: rocdl.s.waitcnt 49279
// CHECK-NEXT: llvm.fence syncscope("singlethread") release
// CHECK-NEXT: rocdl.s.barrier
// CHECK-NEXT: llvm.fence syncscope("singlethread") acquire
// CHECK: llvm.load {{.*}} {alias_scopes = [#[[B]]], {{.*}}noalias_scopes = [#[[A]]]} : !llvm.ptr<3> -> vector<4xf16>
// A buffer on A's bytes (its lifetime apart from the tile's) is declared apart from B only.
// CHECK: llvm.load {{.*}} {alias_scopes = [#[[C:[a-z_0-9]+]]], {{.*}}noalias_scopes = [#[[B]]]} : !llvm.ptr<3> -> i64
// CHECK-NOT: rocdl.barrier

// A select of tile A's address and byte 2048 (tile B's first) may point into either: the load it feeds has no
// scopes (the other accesses keep theirs).
// CHECK-LABEL: llvm.func @selected_address(
// CHECK: llvm.load %{{[0-9]+}} : !llvm.ptr<3> -> vector<4xf16>
// CHECK: llvm.load {{.*}} {alias_scopes = [#{{.*}}], {{.*}}noalias_scopes = [#{{.*}}]} : !llvm.ptr<3> -> vector<4xf16>

// Typed views of the allocation itself: a view's size counts its elements (tile A, 1024 x f16, spans bytes
// [0, 2048), %ptrs' bytes [1024, 1088) among them), so no access is declared apart from a copy by them.
// CHECK-LABEL: llvm.func @typed_views(
// CHECK-NOT: noalias_scopes

// CHECK-LABEL: llvm.func @one_region(
// CHECK-NOT: alias_scopes
// CHECK: rocdl.barrier
// CHECK-NOT: alias_scopes

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @two_tiles(%src: memref<4096xf16>, %out: memref<256xf16>) workgroup(%lds : memref<4096xi8, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, rock.arch = "gfx950"} {
      %c0 = arith.constant 0 : index
      %c1024 = arith.constant 1024 : index
      %c2048 = arith.constant 2048 : index
      %region_a = memref.view %lds[%c0][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<2048xi8, #gpu.address_space<workgroup>>
      %region_b = memref.view %lds[%c2048][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<2048xi8, #gpu.address_space<workgroup>>
      %region_c = memref.view %lds[%c1024][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<64xi8, #gpu.address_space<workgroup>>
      %tile_a = memref.view %region_a[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
      %tile_b = memref.view %region_b[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
      %ptrs = memref.view %region_c[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<8xi64, #gpu.address_space<workgroup>>
      %tid = gpu.thread_id x
      %base = memref.extract_aligned_pointer_as_index %src : memref<4096xf16> -> index
      %base64 = arith.index_cast %base : index to i64
      %gptr = llvm.inttoptr %base64 : i64 to !llvm.ptr<1>
      %c0_i16 = arith.constant 0 : i16
      %c8192_i64 = arith.constant 8192 : i64
      %flags = arith.constant 159744 : i32
      %rsrc = rocdl.make.buffer.rsrc %gptr, %c0_i16, %c8192_i64, %flags : <1> to <8>
      %c0_i32 = arith.constant 0 : i32
      %c16_i32 = arith.constant 16 : i32
      %a_addr = memref.extract_aligned_pointer_as_index %tile_a : memref<1024xf16, #gpu.address_space<workgroup>> -> index
      %a_i32 = arith.index_cast %a_addr : index to i32
      %a_uniform = rocdl.readfirstlane %a_i32 : i32
      %a_lds = llvm.inttoptr %a_uniform : i32 to !llvm.ptr<3>
      rocdl.raw.ptr.buffer.load.lds %rsrc, %a_lds, %c16_i32, %c0_i32, %c0_i32, %c0_i32, %c0_i32
      %b_addr = memref.extract_aligned_pointer_as_index %tile_b : memref<1024xf16, #gpu.address_space<workgroup>> -> index
      %b_i32 = arith.index_cast %b_addr : index to i32
      %b_uniform = rocdl.readfirstlane %b_i32 : i32
      %b_lds = llvm.inttoptr %b_uniform : i32 to !llvm.ptr<3>
      rocdl.raw.ptr.buffer.load.lds %rsrc, %b_lds, %c16_i32, %c0_i32, %c0_i32, %c0_i32, %c0_i32
      %x = vector.load %tile_a[%tid] : memref<1024xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      gpu.barrier
      %y = vector.load %tile_b[%tid] : memref<1024xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      %p = memref.load %ptrs[%c0] : memref<8xi64, #gpu.address_space<workgroup>>
      %sum = arith.addf %x, %y : vector<4xf16>
      %off = arith.index_cast %p : i64 to index
      vector.store %sum, %out[%off] : memref<256xf16>, vector<4xf16>
      gpu.return
    }

    gpu.func @selected_address(%src: memref<4096xf16>, %out: memref<256xf16>) workgroup(%lds : memref<4096xi8, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, rock.arch = "gfx950"} {
      %c0 = arith.constant 0 : index
      %c1024 = arith.constant 1024 : index
      %c2048 = arith.constant 2048 : index
      %region_a = memref.view %lds[%c0][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<2048xi8, #gpu.address_space<workgroup>>
      %region_b = memref.view %lds[%c2048][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<2048xi8, #gpu.address_space<workgroup>>
      %region_c = memref.view %lds[%c1024][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<64xi8, #gpu.address_space<workgroup>>
      %tile_a = memref.view %region_a[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
      %tile_b = memref.view %region_b[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
      %ptrs = memref.view %region_c[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<8xi64, #gpu.address_space<workgroup>>
      %tid = gpu.thread_id x
      %base = memref.extract_aligned_pointer_as_index %src : memref<4096xf16> -> index
      %base64 = arith.index_cast %base : index to i64
      %gptr = llvm.inttoptr %base64 : i64 to !llvm.ptr<1>
      %c0_i16 = arith.constant 0 : i16
      %c8192_i64 = arith.constant 8192 : i64
      %flags = arith.constant 159744 : i32
      %rsrc = rocdl.make.buffer.rsrc %gptr, %c0_i16, %c8192_i64, %flags : <1> to <8>
      %c0_i32 = arith.constant 0 : i32
      %c16_i32 = arith.constant 16 : i32
      %a_addr = memref.extract_aligned_pointer_as_index %tile_a : memref<1024xf16, #gpu.address_space<workgroup>> -> index
      %a_i32 = arith.index_cast %a_addr : index to i32
      %a_uniform = rocdl.readfirstlane %a_i32 : i32
      %a_lds = llvm.inttoptr %a_uniform : i32 to !llvm.ptr<3>
      rocdl.raw.ptr.buffer.load.lds %rsrc, %a_lds, %c16_i32, %c0_i32, %c0_i32, %c0_i32, %c0_i32
      %b_addr = memref.extract_aligned_pointer_as_index %tile_b : memref<1024xf16, #gpu.address_space<workgroup>> -> index
      %b_i32 = arith.index_cast %b_addr : index to i32
      %b_uniform = rocdl.readfirstlane %b_i32 : i32
      %b_lds = llvm.inttoptr %b_uniform : i32 to !llvm.ptr<3>
      rocdl.raw.ptr.buffer.load.lds %rsrc, %b_lds, %c16_i32, %c0_i32, %c0_i32, %c0_i32, %c0_i32
      %tid_i32 = arith.index_cast %tid : index to i32
      %first = arith.cmpi eq, %tid_i32, %c0_i32 : i32
      %c2048_i32 = arith.constant 2048 : i32
      %picked = arith.select %first, %a_i32, %c2048_i32 : i32
      %picked_ptr = llvm.inttoptr %picked : i32 to !llvm.ptr<3>
      %x = llvm.load %picked_ptr : !llvm.ptr<3> -> vector<4xf16>
      gpu.barrier
      %y = vector.load %tile_b[%tid] : memref<1024xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      %p = memref.load %ptrs[%c0] : memref<8xi64, #gpu.address_space<workgroup>>
      %sum = arith.addf %x, %y : vector<4xf16>
      %off = arith.index_cast %p : i64 to index
      vector.store %sum, %out[%off] : memref<256xf16>, vector<4xf16>
      gpu.return
    }

    gpu.func @typed_views(%src: memref<4096xf16>, %out: memref<256xf16>) workgroup(%lds : memref<4096xi8, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, rock.arch = "gfx950"} {
      %c0 = arith.constant 0 : index
      %c1024 = arith.constant 1024 : index
      %c2048 = arith.constant 2048 : index
      %tile_a = memref.view %lds[%c0][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
      %tile_b = memref.view %lds[%c2048][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
      %ptrs = memref.view %lds[%c1024][] : memref<4096xi8, #gpu.address_space<workgroup>> to memref<8xi64, #gpu.address_space<workgroup>>
      %tid = gpu.thread_id x
      %base = memref.extract_aligned_pointer_as_index %src : memref<4096xf16> -> index
      %base64 = arith.index_cast %base : index to i64
      %gptr = llvm.inttoptr %base64 : i64 to !llvm.ptr<1>
      %c0_i16 = arith.constant 0 : i16
      %c8192_i64 = arith.constant 8192 : i64
      %flags = arith.constant 159744 : i32
      %rsrc = rocdl.make.buffer.rsrc %gptr, %c0_i16, %c8192_i64, %flags : <1> to <8>
      %c0_i32 = arith.constant 0 : i32
      %c16_i32 = arith.constant 16 : i32
      %a_addr = memref.extract_aligned_pointer_as_index %tile_a : memref<1024xf16, #gpu.address_space<workgroup>> -> index
      %a_i32 = arith.index_cast %a_addr : index to i32
      %a_uniform = rocdl.readfirstlane %a_i32 : i32
      %a_lds = llvm.inttoptr %a_uniform : i32 to !llvm.ptr<3>
      rocdl.raw.ptr.buffer.load.lds %rsrc, %a_lds, %c16_i32, %c0_i32, %c0_i32, %c0_i32, %c0_i32
      %b_addr = memref.extract_aligned_pointer_as_index %tile_b : memref<1024xf16, #gpu.address_space<workgroup>> -> index
      %b_i32 = arith.index_cast %b_addr : index to i32
      %b_uniform = rocdl.readfirstlane %b_i32 : i32
      %b_lds = llvm.inttoptr %b_uniform : i32 to !llvm.ptr<3>
      rocdl.raw.ptr.buffer.load.lds %rsrc, %b_lds, %c16_i32, %c0_i32, %c0_i32, %c0_i32, %c0_i32
      %x = vector.load %tile_a[%tid] : memref<1024xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      gpu.barrier
      %y = vector.load %tile_b[%tid] : memref<1024xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      %p = memref.load %ptrs[%c0] : memref<8xi64, #gpu.address_space<workgroup>>
      %sum = arith.addf %x, %y : vector<4xf16>
      %off = arith.index_cast %p : i64 to index
      vector.store %sum, %out[%off] : memref<256xf16>, vector<4xf16>
      gpu.return
    }

    gpu.func @one_region(%src: memref<4096xf16>, %out: memref<256xf16>) workgroup(%lds : memref<2048xi8, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, rock.arch = "gfx950"} {
      %c0 = arith.constant 0 : index
      %region_a = memref.view %lds[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<2048xi8, #gpu.address_space<workgroup>>
      %tile_a = memref.view %region_a[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
      %tile_b = memref.view %region_a[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
      %tid = gpu.thread_id x
      %base = memref.extract_aligned_pointer_as_index %src : memref<4096xf16> -> index
      %base64 = arith.index_cast %base : index to i64
      %gptr = llvm.inttoptr %base64 : i64 to !llvm.ptr<1>
      %c0_i16 = arith.constant 0 : i16
      %c8192_i64 = arith.constant 8192 : i64
      %flags = arith.constant 159744 : i32
      %rsrc = rocdl.make.buffer.rsrc %gptr, %c0_i16, %c8192_i64, %flags : <1> to <8>
      %c0_i32 = arith.constant 0 : i32
      %c16_i32 = arith.constant 16 : i32
      %a_addr = memref.extract_aligned_pointer_as_index %tile_a : memref<1024xf16, #gpu.address_space<workgroup>> -> index
      %a_i32 = arith.index_cast %a_addr : index to i32
      %a_lds = llvm.inttoptr %a_i32 : i32 to !llvm.ptr<3>
      rocdl.raw.ptr.buffer.load.lds %rsrc, %a_lds, %c16_i32, %c0_i32, %c0_i32, %c0_i32, %c0_i32
      %b_addr = memref.extract_aligned_pointer_as_index %tile_b : memref<1024xf16, #gpu.address_space<workgroup>> -> index
      %b_i32 = arith.index_cast %b_addr : index to i32
      %b_lds = llvm.inttoptr %b_i32 : i32 to !llvm.ptr<3>
      rocdl.raw.ptr.buffer.load.lds %rsrc, %b_lds, %c16_i32, %c0_i32, %c0_i32, %c0_i32, %c0_i32
      %x = vector.load %tile_a[%tid] : memref<1024xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      gpu.barrier
      %y = vector.load %tile_b[%tid] : memref<1024xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      %sum = arith.addf %x, %y : vector<4xf16>
      vector.store %sum, %out[%tid] : memref<256xf16>, vector<4xf16>
      gpu.return
    }
  }
}
