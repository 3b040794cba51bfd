// The paged load on RDNA (wave32): descriptor flags 822243328 (0x31027000),
// 16-byte loads under the RDNA3/4 mnemonic, and waves of 32 lanes.
// RUN: pagedir-compile %s --arch gfx1100 -o - | FileCheck %s --check-prefixes=CHECK,GFX11
// RUN: pagedir-compile %s --arch gfx1201 -o - | FileCheck %s --check-prefixes=CHECK,GFX12
// The LLVM dialect output records the chip (rock.arch) on the kernel, so it
// compiles again without --arch, for that chip.
// RUN: pagedir-compile %s --arch gfx1201 --emit=llvm-dialect -o %t.llvm-dialect.mlir
// RUN: FileCheck %s --check-prefix=DIALECT < %t.llvm-dialect.mlir
// RUN: pagedir-compile %t.llvm-dialect.mlir -o - | FileCheck %s --check-prefixes=CHECK,GFX12

// DIALECT: llvm.func @paged_load({{.*}}) attributes {{{.*}}rock.arch = "gfx1201"

// GFX11: .amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
// GFX12: .amdgcn_target "amdgcn-amd-amdhsa--gfx1201"
// CHECK-LABEL: paged_load:
// CHECK-NOT: v_readfirstlane
// CHECK: buffer_load_b128
// CHECK: global_store_b128
// CHECK: .amdhsa_wavefront_size32 1
// CHECK: .wavefront_size: 32

module attributes {gpu.container_module} {
  gpu.module @paged_load_module {
    gpu.func @paged_load(%table: memref<4xi64>, %out: memref<256x8xf16>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 4, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %page = memref.load %table[%bid] : memref<4xi64>
      %ptr = llvm.inttoptr %page : i64 to !llvm.ptr<1>
      %stride = arith.constant 0 : i16
      %page_bytes = arith.constant 1024 : i64
      %flags = arith.constant 822243328 : i32
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
