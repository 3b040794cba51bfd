// RUN: pagedir-opt %s --rock-gridwise-attention-to-blockwise | FileCheck %s
// RUN: pagedir-opt %s --rock-gridwise-attention-to-blockwise=lds-swizzle=true | FileCheck %s --check-prefix=SWIZZLE

// Decode on sm_90 (2 query heads per KV head, D = 16, KV tiles of 64 keys, 4 warps): both products on
// mma.sync m16n8k16, the operands from shared memory by ldmatrix. Before the loop one ldmatrix.x4 gives each
// lane Q's A registers (rows g and g + 8, columns 2t and 2t + 8); per 8 keys of a warp's 16-key slice an
// ldmatrix.x2 gives K's two B registers (D 16: one step) for S = Q K^T; the row max and sum go over the 4
// lanes of a row (shuffles xor 1 and 2); P V takes P's registers as they are and V's B registers of two
// output blocks from one ldmatrix.x4.trans. No AMD op anywhere.

// CHECK-LABEL: func.func @decode_mma
// CHECK-NOT:   amdgpu.
// CHECK-NOT:   rocdl.
// CHECK:       %[[Q:.*]] = nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<2x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK:       %[[Q0:.*]] = vector.extract %[[Q]][0] : vector<2xf16> from vector<4x2xf16>
// CHECK:       %[[Q1:.*]] = vector.extract %[[Q]][1]
// CHECK:       %[[Q2:.*]] = vector.extract %[[Q]][2]
// CHECK:       %[[Q3:.*]] = vector.extract %[[Q]][3]
// CHECK:       scf.for
// CHECK:         %[[K:.*]] = nvgpu.ldmatrix %{{.*}} {numTiles = 2 : i32, transpose = false} : memref<64x16xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
// CHECK:         %[[K0:.*]] = vector.extract %[[K]][0]
// CHECK:         %[[K1:.*]] = vector.extract %[[K]][1]
// CHECK:         nvvm.mma.sync A[%[[Q0]], %[[Q1]], %[[Q2]], %[[Q3]]]  B[%[[K0]], %[[K1]]]  C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:         nvvm.mma.sync A[%[[Q0]], %[[Q1]], %[[Q2]], %[[Q3]]]
// CHECK:         gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:         gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:         %[[P0:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK:         %[[P1:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK:         %[[P2:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK:         %[[P3:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK:         %[[V:.*]] = nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true} : memref<64x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK:         %[[V0:.*]] = vector.extract %[[V]][0]
// CHECK:         %[[V1:.*]] = vector.extract %[[V]][1]
// CHECK:         %[[V2:.*]] = vector.extract %[[V]][2]
// CHECK:         %[[V3:.*]] = vector.extract %[[V]][3]
// CHECK:         nvvm.mma.sync A[%[[P0]], %[[P1]], %[[P2]], %[[P3]]]  B[%[[V0]], %[[V1]]]
// CHECK:         nvvm.mma.sync A[%[[P0]], %[[P1]], %[[P2]], %[[P3]]]  B[%[[V2]], %[[V3]]]
// CHECK-NOT:   amdgpu.
// CHECK-NOT:   rocdl.

// With lds-swizzle the Q, K and V tiles are stored with ldmatrix's swizzle (16-byte chunks, row r's chunk k at
// k xor (r mod n), n = 2 chunks per row at D 16), and each ldmatrix row address is moved the same way.

// SWIZZLE-LABEL: func.func @decode_mma
// SWIZZLE:       "rock.blockwise_load_tile"{{.*}}lds_swizzle = array<i64: 8, 1, 2, 1>
// SWIZZLE:       %[[FLIP:.*]] = arith.xori
// SWIZZLE:       %[[COL:.*]] = affine.apply #{{.*}}(%[[FLIP]],
// SWIZZLE:       nvgpu.ldmatrix %{{.*}}[%{{.*}}, %[[COL]]] {numTiles = 4 : i32, transpose = false}
// SWIZZLE:       scf.for
// SWIZZLE:         "rock.blockwise_load_tile"{{.*}}lds_swizzle = array<i64: 8, 1, 2, 1>
// SWIZZLE:         %[[KFLIP:.*]] = arith.xori
// SWIZZLE:         %[[KCOL:.*]] = affine.apply #{{.*}}(%[[KFLIP]],
// SWIZZLE:         nvgpu.ldmatrix %{{.*}}[%{{.*}}, %[[KCOL]]] {numTiles = 2 : i32, transpose = false}
module {
  func.func @decode_mma(%arg0: memref<1x2x1x16xf16>, %arg1: memref<1x2x1xi64>, %arg2: memref<1x2x1xi64>, %arg3: memref<1x2x1x16xf16>) attributes {rock.arch = "sm_90", rock.block_size = 128 : i64, rock.grid_size = 1 : i64, rock.kernel, rock.paged_kv = array<i64: 256, 32, 1>} {
    %0 = "rock.deref"(%arg1) : (memref<1x2x1xi64>) -> memref<1x2x256xf16>
    %1 = "rock.deref"(%arg2) : (memref<1x2x1xi64>) -> memref<1x2x256xf16>
    "rock.gridwise_attention_accel"(%arg0, %0, %1, %arg3) {block_size = 128 : i64, causal = false, grid_size = 1 : i64, m_per_block = 2 : i64, n_per_block = 64 : i64, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, pipeline_depth = 2 : i64} : (memref<1x2x1x16xf16>, memref<1x2x256xf16>, memref<1x2x256xf16>, memref<1x2x1x16xf16>) -> ()
    return
  }
}
