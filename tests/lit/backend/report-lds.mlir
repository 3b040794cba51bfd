// The report of a kernel with an 8 KiB workgroup buffer and 256 threads: LDS bytes
// from .amdhsa_group_segment_fixed_size, one s_barrier (4 waves), and the LDS limit
// of 64 KiB / 8 KiB = 8 workgroups of 4 waves over 4 SIMDs = 8 waves per SIMD.
// RUN: pagedir-compile %s --arch gfx942 -o %t.s --report 2>&1 | FileCheck %s
// RUN: pagedir-compile %s --arch gfx942 -o %t.s --report=%t.json
// RUN: %PYTHON -c "import json,sys; k=json.load(open(sys.argv[1]))['kernels'][0]; print(k['name'], k['lds_bytes'], k['workgroup_size'], k['barriers'], k['occupancy_limits']['lds'])" %t.json | FileCheck %s --check-prefix=JSON
// RUN: pagedir-compile %s --arch gfx1100 -o %t.s --report 2>&1 | FileCheck %s --check-prefix=RDNA

// CHECK-LABEL: kernel row_sum (gfx942)
// CHECK:      LDS              8192 bytes
// CHECK:      wave size        64
// CHECK-NEXT: workgroup size   256
// CHECK-NEXT: occupancy        8 waves/SIMD (limits: waves 8, vgprs 8, sgprs 8, lds 8, workgroup 8)
// CHECK:      LDS reads        {{.*}}x b128
// CHECK-NEXT: LDS writes       1 x b32
// CHECK-NEXT: s_barrier        1

// JSON: row_sum 8192 256 1 8

// RDNA-LABEL: kernel row_sum (gfx1100)
// RDNA:      LDS              8192 bytes
// RDNA:      wave size        32
// RDNA:      occupancy        16 waves/SIMD

module attributes {gpu.container_module} {
  gpu.module @row_sum_module {
    gpu.func @row_sum(%x: memref<4x256xf32>, %y: memref<4x256xf32>) workgroup(%lds: memref<8192xi8, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>} {
      %tid = gpu.thread_id x
      %row = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c256 = arith.constant 256 : index
      %buf = memref.view %lds[%c0][] : memref<8192xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
      %pad = arith.constant 0.0 : f32
      %v = vector.transfer_read %x[%row, %tid], %pad {in_bounds = [true]} : memref<4x256xf32>, vector<1xf32>
      %e = vector.extract %v[0] : f32 from vector<1xf32>
      %ex = math.exp %e : f32
      memref.store %ex, %buf[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %sum = scf.for %i = %c0 to %c256 step %c1 iter_args(%acc = %pad) -> (f32) {
        %t = memref.load %buf[%i] : memref<256xf32, #gpu.address_space<workgroup>>
        %s = arith.addf %acc, %t : f32
        scf.yield %s : f32
      }
      %q = arith.divf %ex, %sum : f32
      memref.store %q, %y[%row, %tid] : memref<4x256xf32>
      gpu.return
    }
  }
}
