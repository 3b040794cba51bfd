// A paged load as rock-buffer-load emits it: the page pointer (an i64 from the
// page table) becomes a buffer descriptor with stride 0 and num_records = the
// page's bytes, and 8 f16 per lane come in one 16-byte buffer load.
// RUN: pagedir-compile %s --arch gfx942 -o - | FileCheck %s --check-prefixes=CHECK,GFX942
// RUN: pagedir-compile %s --arch gfx90a -o - | FileCheck %s
// RUN: pagedir-compile %s --arch gfx950 -o - | FileCheck %s

// GFX942: .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
// CHECK-LABEL: paged_load:
// The table entry is uniform (one page per workgroup): a scalar load, no waterfall loop.
// CHECK: s_load_dwordx2
// CHECK-NOT: v_readfirstlane
// CHECK: buffer_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}], 0 offen
// CHECK: global_store_dwordx4
// CHECK: s_endpgm
// CHECK: .wavefront_size: 64

module attributes {gpu.container_module} {
  gpu.module @paged_load_module {
    gpu.func @paged_load(%table: memref<4xi64>, %out: memref<256x8xf16>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 4, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %page = memref.load %table[%bid] : memref<4xi64>
      %ptr = llvm.inttoptr %page : i64 to !llvm.ptr<1>
      %stride = arith.constant 0 : i16
      %page_bytes = arith.constant 1024 : i64
      %flags = arith.constant 159744 : i32
      %rsrc = rocdl.make.buffer.rsrc %ptr, %stride, %page_bytes, %flags : !llvm.ptr<1> to !llvm.ptr<8>
      %lane = arith.index_cast %tid : index to i32
      %c16 = arith.constant 16 : i32
      %voffset = arith.muli %lane, %c16 : i32
      %zero = arith.constant 0 : i32
      %v = rocdl.raw.ptr.buffer.load %rsrc, %voffset, %zero, %zero : vector<8xf16>
      %c64 = arith.constant 64 : index
      %c0 = arith.constant 0 : index
      %row0 = arith.muli %bid, %c64 : index
      %row = arith.addi %row0, %tid : index
      vector.store %v, %out[%row, %c0] : memref<256x8xf16>, vector<8xf16>
      gpu.return
    }
  }
}
