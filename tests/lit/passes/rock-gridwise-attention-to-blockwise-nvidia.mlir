// RUN: pagedir-opt %s --rock-gridwise-attention-to-blockwise | FileCheck %s

// Decode on sm_90 (2 query heads per KV head, D = 16, KV tiles of 64 keys, 4 warps): both products on
// mma.sync m16n8k16. Before the loop each lane reads Q's A registers (rows g and g + 8, columns 2t and
// 2t + 8, two elements each); per 8 keys of its 16-key slice S = Q K^T takes K's two B registers; the
// row max and sum go over the 4 lanes of a row (shuffles xor 1 and 2); P V takes P's registers as they
// are and V's B registers from 4 keys of one column. No AMD op anywhere.

// CHECK-LABEL: func.func @decode_mma
// CHECK-NOT:   amdgpu.
// CHECK-NOT:   rocdl.
// CHECK:       %[[Q0:.*]] = vector.load %{{.*}} : memref<2x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK:       %[[Q1:.*]] = vector.load %{{.*}} : memref<2x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK:       %[[Q2:.*]] = vector.load %{{.*}} : memref<2x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK:       %[[Q3:.*]] = vector.load %{{.*}} : memref<2x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK:       scf.for
// CHECK:         %[[K0:.*]] = vector.load %{{.*}} : memref<64x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK:         %[[K1:.*]] = vector.load %{{.*}} : memref<64x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK:         nvvm.mma.sync A[%[[Q0]], %[[Q1]], %[[Q2]], %[[Q3]]]  B[%[[K0]], %[[K1]]]  C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:         nvvm.mma.sync A[%[[Q0]], %[[Q1]], %[[Q2]], %[[Q3]]]
// CHECK:         gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:         gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:         %[[P0:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK:         %[[P1:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK:         %[[P2:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK:         %[[P3:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK-COUNT-4: memref.load %{{.*}} : memref<64x16xf16, #gpu.address_space<workgroup>>
// CHECK:         nvvm.mma.sync A[%[[P0]], %[[P1]], %[[P2]], %[[P3]]]
// CHECK-NOT:   amdgpu.
// CHECK-NOT:   rocdl.
module {
  func.func @decode_mma(%arg0: memref<1x2x1x16xf16>, %arg1: memref<1x2x1xi64>, %arg2: memref<1x2x1xi64>, %arg3: memref<1x2x1x16xf16>) attributes {rock.arch = "sm_90", rock.block_size = 128 : i64, rock.grid_size = 1 : i64, rock.kernel, rock.paged_kv = array<i64: 256, 32, 1>} {
    %0 = "rock.deref"(%arg1) : (memref<1x2x1xi64>) -> memref<1x2x256xf16>
    %1 = "rock.deref"(%arg2) : (memref<1x2x1xi64>) -> memref<1x2x256xf16>
    "rock.gridwise_attention_accel"(%arg0, %0, %1, %arg3) {block_size = 128 : i64, causal = false, grid_size = 1 : i64, m_per_block = 2 : i64, n_per_block = 64 : i64, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, pipeline_depth = 2 : i64} : (memref<1x2x1x16xf16>, memref<1x2x256xf16>, memref<1x2x256xf16>, memref<1x2x1x16xf16>) -> ()
    return
  }
}
