// Each lane reads its own page pointer, so the descriptor is not uniform and LLVM
// wraps the buffer load in a waterfall loop (v_readfirstlane the descriptor, load
// for the lanes that share it, branch back): the report counts that load.
// RUN: pagedir-compile %s --arch gfx942 -o - --report 2>&1 | FileCheck %s

// CHECK-LABEL: per_lane_pages:
// CHECK: [[LOOP:.LBB[0-9_]+]]:
// CHECK: v_readfirstlane_b32
// CHECK: buffer_load_dwordx4
// CHECK: s_cbranch_execnz [[LOOP]]
// CHECK-LABEL: kernel per_lane_pages (gfx942)
// CHECK: buffer loads     1 x dwordx4
// CHECK: waterfall loads  1

module attributes {gpu.container_module} {
  gpu.module @per_lane_pages_module {
    gpu.func @per_lane_pages(%table: memref<64xi64>, %out: memref<64x8xf16>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %page = memref.load %table[%tid] : memref<64xi64>
      %ptr = llvm.inttoptr %page : i64 to !llvm.ptr<1>
      %stride = arith.constant 0 : i16
      %page_bytes = arith.constant 1024 : i64
      %flags = arith.constant 159744 : i32
      %rsrc = rocdl.make.buffer.rsrc %ptr, %stride, %page_bytes, %flags : !llvm.ptr<1> to !llvm.ptr<8>
      %zero = arith.constant 0 : i32
      %v = rocdl.raw.ptr.buffer.load %rsrc, %zero, %zero, %zero : vector<8xf16>
      %c0 = arith.constant 0 : index
      vector.store %v, %out[%tid, %c0] : memref<64x8xf16>, vector<8xf16>
      gpu.return
    }
  }
}
