// RUN: pagedir-opt %s --split-input-file --rock-gridwise-attention-to-blockwise | FileCheck %s

// Decode, 2 query heads per KV head, D = 64, KV tiles of 32 tokens, 64 threads.
// The Q tile is staged once; the loop runs over the tiles holding keys before
// seq_len (ceildiv(seq_len, 32)), carrying each thread's accumulator chunk, running
// max and running sum; K and V tiles come from the pages of their rock.deref.

// CHECK-LABEL: func.func @decode
// CHECK-SAME: %[[Q:[^:]+]]: memref<1x2x1x64xf16>, %[[KT:[^:]+]]: memref<1x4x1xi64>, %[[VT:[^:]+]]: memref<1x4x1xi64>, %[[LENS:[^:]+]]: memref<1xi32>, %[[OUT:[^:]+]]: memref<1x2x1x64xf16>
// CHECK: %[[K:.*]] = "rock.deref"(%[[KT]])
// CHECK: %[[V:.*]] = "rock.deref"(%[[VT]])
// CHECK: %[[TID:.*]] = "rock.workitem_id"()
// CHECK: %[[QRAW:.*]] = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
// CHECK: %[[QTILE:.*]] = memref.view %[[QRAW]]{{.*}} to memref<2x1x64xf16, #gpu.address_space<workgroup>>
// CHECK: "rock.blockwise_load_tile"(%[[Q]], %[[QTILE]],
// CHECK-SAME: operandSegmentSizes = array<i32: 1, 1, 3, 0>
// CHECK: %[[QROWS:.*]] = memref.view %[[QRAW]]{{.*}} to memref<2x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[KRAW:.*]] = "rock.alloc"() : () -> memref<4096xi8, #gpu.address_space<workgroup>>
// CHECK: %[[KTILE:.*]] = memref.view %[[KRAW]]{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VRAW:.*]] = "rock.alloc"() : () -> memref<4096xi8, #gpu.address_space<workgroup>>
// CHECK: %[[VTILE:.*]] = memref.view %[[VRAW]]{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[SRAW:.*]] = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
// CHECK: %[[SCORES:.*]] = memref.view %[[SRAW]]{{.*}} to memref<2x32xf32, #gpu.address_space<workgroup>>
// CHECK: %[[LEN32:.*]] = memref.load %[[LENS]]
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: %[[TILES:.*]] = affine.apply #{{.*}}(%[[LEN]])
// CHECK: %[[RES:.*]]:3 = scf.for %[[T:.*]] = %{{.*}} to %[[TILES]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[MAX:.*]] = %{{.*}}, %[[SUM:.*]] = %{{.*}}) -> (vector<2xf32>, f32, f32)
// CHECK:   "rock.blockwise_load_tile"(%[[K]], %[[KTILE]], %{{.*}}, %{{.*}}, %[[T]], %[[KT]])
// CHECK-SAME: page_size = 1024
// CHECK:   vector.load %[[QROWS]]{{.*}} vector<8xf16>
// CHECK:   vector.load %[[KTILE]]{{.*}} vector<8xf16>
// CHECK:   vector.fma
// CHECK:   vector.reduction <add>
// CHECK:   arith.cmpi ult, %{{.*}}, %[[LEN]] : index
// CHECK:   memref.store %{{.*}}, %[[SCORES]]
// CHECK:   "rock.lds_barrier"()
// CHECK:   "rock.blockwise_load_tile"(%[[V]], %[[VTILE]], %{{.*}}, %{{.*}}, %[[T]], %[[VT]])
// CHECK:   vector.load %[[SCORES]]{{.*}} vector<4xf32>
// CHECK:   vector.reduction <maxnumf>
// CHECK:   arith.maxnumf %[[MAX]], %{{.*}} : f32
// CHECK:   %[[ALPHA:.*]] = math.exp2
// CHECK:   math.exp2 %{{.*}} : vector<4xf32>
// CHECK:   arith.mulf %[[SUM]], %[[ALPHA]] : f32
// CHECK:   arith.mulf %[[ACC]], %{{.*}} : vector<2xf32>
// CHECK:   vector.load %[[VTILE]]{{.*}} vector<2xf16>
// CHECK:   vector.fma
// CHECK:   "rock.lds_barrier"()
// CHECK:   scf.yield %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}} : vector<2xf32>, f32, f32
// CHECK: arith.cmpf ogt, %[[RES]]#2
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xf16>
// CHECK: scf.if
// CHECK:   vector.store %{{.*}}, %[[OUT]]
// CHECK-NOT: rock.gridwise_attention_accel
func.func @decode(%q: memref<1x2x1x64xf16>, %k_table: memref<1x4x1xi64>, %v_table: memref<1x4x1xi64>,
                  %seq_lens: memref<1xi32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %k = "rock.deref"(%k_table) : (memref<1x4x1xi64>) -> memref<1x4x1024xf16>
  %v = "rock.deref"(%v_table) : (memref<1x4x1xi64>) -> memref<1x4x1024xf16>
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}
    : (memref<1x2x1x64xf16>, memref<1x4x1024xf16>, memref<1x4x1024xf16>, memref<1xi32>, memref<1x2x1x64xf16>) -> ()
  return
}
