// RUN: pagedir-opt %s --split-input-file --rock-gridwise-attention-to-blockwise | FileCheck %s

// Decode, 2 query heads per KV head, D = 64, KV tiles of 32 tokens, 64 threads, on
// gfx1030 (no matrix instructions): the VALU loop.
// The Q tile is staged once; the loop runs over the tiles holding keys before
// seq_len (ceildiv(seq_len, 32)), carrying each thread's accumulator chunk, running
// max and running sum; K and V tiles come from the pages of their rock.deref.
// The tile loads take seq_len as a fourth index and read only keys before it
// (valid: seq_len - key - 1 >= 0): the rest of the last page and of the last
// tile may hold anything, NaN included, and is never read.

// CHECK: #[[KEYS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, (d1 * 64 + d2 * 32 + d4) * 64 + d5)>
// CHECK: #[[BEFORE_LEN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3 - (d2 * 32 + d4) - 1)>
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
// CHECK:   "rock.blockwise_load_tile"(%[[K]], %[[KTILE]], %{{.*}}, %{{.*}}, %[[T]], %[[LEN]], %[[KT]])
// CHECK-SAME: index_bounds = array<i64: 1, 1, 2, 65>, map = #[[KEYS]]
// CHECK-SAME: page_size = 1024 : i64, valid = #[[BEFORE_LEN]]
// CHECK:   vector.load %[[QROWS]]{{.*}} vector<8xf16>
// CHECK:   vector.load %[[KTILE]]{{.*}} vector<8xf16>
// CHECK:   vector.fma
// CHECK:   vector.reduction <add>
// CHECK:   arith.cmpi ult, %{{.*}}, %[[LEN]] : index
// CHECK:   memref.store %{{.*}}, %[[SCORES]]
// CHECK:   "rock.lds_barrier"()
// CHECK:   "rock.blockwise_load_tile"(%[[V]], %[[VTILE]], %{{.*}}, %{{.*}}, %[[T]], %[[LEN]], %[[VT]])
// CHECK-SAME: map = #[[KEYS]]
// CHECK-SAME: valid = #[[BEFORE_LEN]]
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
                  %seq_lens: memref<1xi32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx1030", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %k = "rock.deref"(%k_table) : (memref<1x4x1xi64>) -> memref<1x4x1024xf16>
  %v = "rock.deref"(%v_table) : (memref<1x4x1xi64>) -> memref<1x4x1024xf16>
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x4x1024xf16>, memref<1x4x1024xf16>, memref<1xi32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Causal prefill on dense K/V with seq_lens, 4 query positions, KV tiles of 16
// keys, on the VALU (gfx1030). The dense tile loads read only keys before seq_len too. Causally hidden
// keys are live keys of later queries: their score is selected to -inf (never
// -inf added to a NaN), and each V row's update of the accumulator is selected
// away unless the row sees the key (col <= position + seq_len - Sq - t * 16),
// since 0 * NaN is NaN.

// CHECK: #[[DENSE_KEYS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 16 + d4, d5)>
// CHECK: #[[DENSE_BEFORE_LEN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3 - (d2 * 16 + d4) - 1)>
// CHECK-LABEL: func.func @dense_causal
// CHECK-SAME: %[[K:[^:]+]]: memref<1x1x32x64xf32>, %[[V:[^:]+]]: memref<1x1x32x64xf32>, %[[LENS:[^:]+]]: memref<1xi32>
// CHECK: %[[LEN32:.*]] = memref.load %[[LENS]]
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: scf.for %[[T:[^ ]*]] =
// CHECK:   "rock.blockwise_load_tile"(%[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %[[T]], %[[LEN]])
// CHECK-SAME: map = #[[DENSE_KEYS]]
// CHECK-SAME: valid = #[[DENSE_BEFORE_LEN]]
// CHECK:   %[[SCORE:.*]] = arith.mulf
// CHECK:   %[[SHOWN:.*]] = arith.andi
// CHECK:   arith.select %[[SHOWN]], %[[SCORE]], %cst{{.*}} : f32
// CHECK:   "rock.blockwise_load_tile"(%[[V]], %{{.*}}, %{{.*}}, %{{.*}}, %[[T]], %[[LEN]])
// CHECK-SAME: valid = #[[DENSE_BEFORE_LEN]]
// CHECK:   %[[OFFSET:.*]] = affine.apply #{{.*}}(%{{.*}}, %{{.*}}, %[[T]])
// CHECK:   %[[SHIFTED:.*]] = arith.addi %[[OFFSET]], %[[LEN]]
// CHECK:   %[[LIMIT:.*]] = arith.subi %[[SHIFTED]], %c4
// CHECK:   %[[UPDATE0:.*]] = vector.fma
// CHECK:   %[[SEEN0:.*]] = arith.cmpi sge, %[[LIMIT]], %c0
// CHECK:   %[[ACC0:.*]] = arith.select %[[SEEN0]], %[[UPDATE0]], %{{.*}} : vector<4xf32>
// CHECK:   %[[UPDATE1:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[ACC0]]
// CHECK:   %[[SEEN1:.*]] = arith.cmpi sge, %[[LIMIT]], %c1
// CHECK:   arith.select %[[SEEN1]], %[[UPDATE1]], %[[ACC0]] : vector<4xf32>
func.func @dense_causal(%q: memref<1x1x4x64xf32>, %k: memref<1x1x32x64xf32>, %v: memref<1x1x32x64xf32>,
                        %seq_lens: memref<1xi32>, %out: memref<1x1x4x64xf32>) attributes {rock.kernel, rock.arch = "gfx1030", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 1, num_heads_kv = 1, causal = true,
      block_size = 64, grid_size = 1, m_per_block = 4, n_per_block = 16, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x4x64xf32>, memref<1x1x32x64xf32>, memref<1x1x32x64xf32>, memref<1xi32>, memref<1x1x4x64xf32>) -> ()
  return
}

// -----

// Split-KV (VALU loop, gfx1030): num_splits = 2 over 128 keys (4 tiles of 32): workgroup w is split w mod 2 of
// workgroup w floordiv 2 and visits tiles [2 * s, min(2 * s + 2, ceildiv(seq_len, 32))),
// none when the split starts past seq_len. The kernel gets an f32 workspace of
// S * R * (D + 1) = 2 * 2 * 65 = 260 elements (the partials, then the LSEs at 256 on) in
// place of storing out, and a combine kernel with the same arguments merges the splits.

// CHECK-DAG: #[[SPLIT:.*]] = affine_map<(d0) -> (d0 mod 2)>
// CHECK-DAG: #[[BASE:.*]] = affine_map<(d0) -> (d0 floordiv 2)>
// CHECK-DAG: #[[TILES:.*]] = affine_map<(d0) -> (d0 ceildiv 32)>
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0) -> (d0 * 2)>
// CHECK-DAG: #[[LAST:.*]] = affine_map<(d0) -> ((d0 + 1) * 2)>
// CHECK-DAG: #[[SPLIT_ROW:.*]] = affine_map<(d0, d1, d2, d3) -> ((d0 + d1) * 2 + d2 + d3)>
// CHECK-DAG: #[[PARTIAL:.*]] = affine_map<(d0, d1) -> (d0 * 64 + d1)>
// CHECK-DAG: #[[LSE:.*]] = affine_map<(d0) -> (d0 + 256)>
// CHECK-DAG: #[[LSE_OF:.*]] = affine_map<(d0, d1) -> (d0 * 2 + d1 + 256)>
// CHECK-DAG: #[[PARTIAL_OF:.*]] = affine_map<(d0, d1, d2) -> ((d0 * 2 + d1) * 64 + d2)>
// CHECK-LABEL: func.func @split_decode
// CHECK-SAME: %[[OUT:[^:]+]]: memref<1x2x1x64xf16>, %[[WS:[^:]+]]: memref<260xf32>)
// CHECK-SAME: rock.combine = "split_decode_combine"
// CHECK-SAME: rock.workspace_bytes = 1040 : i64
// CHECK: %[[WG:.*]] = "rock.workgroup_id"()
// CHECK: %[[S:.*]] = affine.apply #[[SPLIT]](%[[WG]])
// CHECK: affine.apply #[[BASE]](%[[WG]])
// CHECK: %[[NUM:.*]] = affine.apply #[[TILES]](%{{.*}})
// CHECK: %[[LO:.*]] = affine.apply #[[FIRST]](%[[S]])
// CHECK: %[[HI:.*]] = affine.apply #[[LAST]](%[[S]])
// CHECK: %[[END:.*]] = arith.minui %[[HI]], %[[NUM]] : index
// CHECK: %[[LOOP:.*]]:3 = scf.for %{{.*}} = %[[LO]] to %[[END]] step
// CHECK: %[[KEYS:.*]] = arith.cmpf une, %[[LOOP]]#2, %{{.*}} : f32
// CHECK: %[[LOG:.*]] = math.log2 %[[LOOP]]#2 : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[LOOP]]#1, %[[LOG]] : f32
// CHECK: %[[LSEV:.*]] = arith.select %[[KEYS]], %[[SUM]], %{{.*}} : f32
// CHECK: %[[ROW:.*]] = affine.apply #[[SPLIT_ROW]](%[[S]],
// CHECK: scf.if
// CHECK: %[[AT:.*]] = affine.apply #[[PARTIAL]](%[[ROW]], %{{.*}})
// CHECK: vector.store %{{.*}}, %[[WS]][%[[AT]]] : memref<260xf32>, vector<2xf32>
// CHECK: %[[LSE_AT:.*]] = affine.apply #[[LSE]](%[[ROW]])
// CHECK: memref.store %[[LSEV]], %[[WS]][%[[LSE_AT]]] : memref<260xf32>
// CHECK-NOT: %[[OUT]]
// CHECK: return
// CHECK-LABEL: func.func @split_decode_combine
// CHECK-SAME: %[[COUT:[^:]+]]: memref<1x2x1x64xf16>, %[[CWS:[^:]+]]: memref<260xf32>)
// CHECK-SAME: rock.block_size = 64 : i64, rock.grid_size = 1 : i64, rock.kernel
// CHECK: %[[MAX:.*]] = scf.for %[[S1:.*]] = %{{.*}} to %c2 step
// CHECK: %[[L1:.*]] = memref.load %[[CWS]][%{{.*}}]
// CHECK: arith.maxnumf %{{.*}}, %[[L1]] : f32
// CHECK: %[[MERGED:.*]]:2 = scf.for %[[S2:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[LSE2:.*]] = memref.load %[[CWS]][%{{.*}}] : memref<260xf32>
// CHECK: %[[SEEN:.*]] = arith.cmpf une, %[[LSE2]]
// CHECK: math.exp2
// CHECK: %[[PART_AT:.*]] = affine.apply #[[PARTIAL_OF]](%[[S2]],
// CHECK: vector.load %[[CWS]][%[[PART_AT]]] : memref<260xf32>, vector<4xf32>
// CHECK: arith.select %[[SEEN]]
// CHECK: arith.divf %{{.*}}, %[[MERGED]]#1 : f32
// CHECK: vector.store %{{.*}}, %[[COUT]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x2x1x64xf16>, vector<4xf16>
func.func @split_decode(%q: memref<1x2x1x64xf16>, %k: memref<1x1x128x64xf16>, %v: memref<1x1x128x64xf16>,
                        %seq_lens: memref<1xi32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx1030", rock.block_size = 64 : i64, rock.grid_size = 2 : i64} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 2, m_per_block = 2, n_per_block = 32, num_splits = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x128x64xf16>, memref<1x1x128x64xf16>, memref<1xi32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Decode on gfx942's matrix cores, transposed: S^T = K Q^T and O^T = V^T P^T, so that each
// lane holds 4 keys of one row (l mod 16) and P is the B operand where it was computed.
// The 2 query heads are padded to 16 rows (rows past 2 read row 1 and are never stored).
// Each wave's Q fragments (4 f16 of one row) are loaded once before the loop. The 64
// threads are one wave: both 16-key blocks of the tile are its slice. The row max and
// sum: in-lane, then across the 4 lanes of a row by shuffles (xor 16, xor 32). P goes to
// f16 once and straight into the MFMA with 4 V elements of 4 keys as A: output tile dt's
// row m is column 4 m + dt, so a lane reads its columns of all 4 d-tiles with one 4-element
// load per key row. After the loop, one slice per row block: each lane stores 4 chunks of its
// row's 16 consecutive output columns (rows < 2).

// CHECK-LABEL: func.func @decode_mfma
// CHECK: %[[QROWS:.*]] = memref.view %{{.*}} to memref<2x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[KTILE:.*]] = memref.view %{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VTILE:.*]] = memref.view %{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref<2x32xf32
// CHECK: %[[QROW:.*]] = arith.minui %{{.*}}, %c1 : index
// CHECK: %[[Q0:.*]] = vector.load %[[QROWS]][%[[QROW]], %{{.*}}] : memref<2x64xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, f32, f32)
// CHECK:   "rock.blockwise_load_tile"(%{{.*}}, %[[KTILE]],
// CHECK:   %[[K0:.*]] = vector.load %[[KTILE]][%{{.*}}, %{{.*}}] : memref<32x64xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK:   %[[S0:.*]] = amdgpu.mfma 16x16x16 %[[K0]] * %[[Q0]] + %{{.*}} blgp = none : vector<4xf16>, vector<4xf16>, vector<4xf32>
// CHECK-COUNT-7: amdgpu.mfma 16x16x16
// CHECK:   %[[S:.*]] = vector.extract %{{.*}}[0] : f32 from vector<4xf32>
// CHECK:   arith.mulf %[[S]]
// CHECK:   %[[ROW:.*]] = vector.from_elements %{{.*}} : vector<4xf32>
// CHECK:   vector.reduction <maxnumf>, %[[ROW]]
// CHECK:   gpu.shuffle  xor %{{.*}}, %c16{{.*}}, %c64{{.*}} : f32
// CHECK:   gpu.shuffle  xor %{{.*}}, %c32{{.*}}, %c64{{.*}} : f32
// CHECK:   %[[ALPHA:.*]] = math.exp2 %{{.*}} : f32
// CHECK:   %[[P:.*]] = math.exp2 %{{.*}} : vector<4xf32>
// CHECK:   "rock.blockwise_load_tile"(%{{.*}}, %[[VTILE]],
// CHECK:   %[[ALPHAS:.*]] = vector.broadcast %[[ALPHA]] : f32 to vector<4xf32>
// CHECK:   %[[SCALED:.*]] = arith.mulf %{{.*}}, %[[ALPHAS]] : vector<4xf32>
// CHECK:   %[[PB:.*]] = arith.truncf %[[P]] : vector<4xf32> to vector<4xf16>
// CHECK:   %[[V0:.*]] = vector.load %[[VTILE]][%{{.*}}, %{{.*}}] : memref<32x64xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK:   %[[E0:.*]] = vector.extract %[[V0]][0] : f16 from vector<4xf16>
// CHECK:   %[[VA:.*]] = vector.from_elements %[[E0]], %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf16>
// CHECK:   amdgpu.mfma 16x16x16 %[[VA]] * %[[PB]] + %[[SCALED]]
// CHECK:   "rock.lds_barrier"()
// CHECK:   scf.yield
// CHECK: %[[ROW:.*]] = arith.cmpi ult, %{{.*}}, %c2{{.*}} : index
// CHECK: %[[STORED:.*]] = arith.andi %{{.*}}, %[[ROW]] : i1
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xf16>
// CHECK: scf.if %[[STORED]]
// CHECK:   vector.store %{{.*}}, %[[OUT:.*]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x2x1x64xf16>, vector<4xf16>
func.func @decode_mfma(%q: memref<1x2x1x64xf16>, %k: memref<1x1x32x64xf16>, %v: memref<1x1x32x64xf16>,
                       %seq_lens: memref<1xi32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x32x64xf16>, memref<1x1x32x64xf16>, memref<1xi32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Decode on gfx1100's WMMA (wave32): the same transposed products, in RDNA3's lane layout.
// Each lane holds all 16 values of its A row and B column (lanes 16-31 repeat lanes 0-15):
// the Q fragment is 16 f16 of one row from column 0 in every lane, K likewise. The f32
// accumulator's rows alternate between the lane halves: lane l holds keys 2 j + l div 16 of
// row l mod 16, so the row max and sum take one shuffle (xor 16 of 32 lanes), and P (to f16
// once) goes to the B operand after the lane takes its partner's 8 probabilities (4 packed
// i32 shuffles): the even keys, then the odd ones, the same 16 in both halves. V^T is one
// element of each of the 16 keys, in that order. After the loop each lane swaps half of its
// output columns (2 j + l div 16) with its partner to store 8 contiguous ones.

// CHECK-LABEL: func.func @decode_wmma
// CHECK: %[[QROWS:.*]] = memref.view %{{.*}} to memref<2x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[KTILE:.*]] = memref.view %{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VTILE:.*]] = memref.view %{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[QROW:.*]] = arith.minui %{{.*}}, %c1 : index
// CHECK: %[[Q0:.*]] = vector.load %[[QROWS]][%[[QROW]], %c0{{.*}}] : memref<2x64xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, f32, f32)
// CHECK:   %[[K0:.*]] = vector.load %[[KTILE]][%{{.*}}, %c0{{.*}}] : memref<32x64xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK:   amdgpu.wmma 16x16x16 %[[K0]] * %[[Q0]] + %{{.*}} : vector<16xf16>, vector<16xf16>, vector<8xf32>
// CHECK-COUNT-7: amdgpu.wmma 16x16x16
// CHECK:   %[[ROWMAX:.*]] = vector.reduction <maxnumf>
// CHECK:   %[[MAXES:.*]], %{{.*}} = gpu.shuffle  xor %{{.*}}, %c16{{.*}}, %c32{{.*}} : f32
// CHECK-NEXT: arith.maxnumf %{{.*}}, %[[MAXES]] : f32
// CHECK:   vector.reduction <add>
// CHECK:   %[[SUMS:.*]], %{{.*}} = gpu.shuffle  xor %{{.*}}, %c16{{.*}}, %c32{{.*}} : f32
// CHECK-NEXT: arith.addf %{{.*}}, %[[SUMS]] : f32
// CHECK:   %[[P:.*]] = arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK:   %[[PACKED:.*]] = vector.bitcast %[[P]] : vector<8xf16> to vector<4xi32>
// CHECK-COUNT-4: gpu.shuffle  xor %{{.*}}, %c16{{.*}}, %c32{{.*}} : i32
// CHECK:   %[[THEIRS:.*]] = vector.bitcast %{{.*}} : vector<4xi32> to vector<8xf16>
// CHECK:   %[[EVEN:.*]] = arith.select %{{.*}}, %[[P]], %[[THEIRS]] : vector<8xf16>
// CHECK:   %[[ODD:.*]] = arith.select %{{.*}}, %[[THEIRS]], %[[P]] : vector<8xf16>
// CHECK:   %[[E0:.*]] = vector.extract %[[EVEN]][0] : f16 from vector<8xf16>
// CHECK-NEXT: %[[E1:.*]] = vector.extract %[[EVEN]][1] : f16 from vector<8xf16>
// CHECK:   %[[O0:.*]] = vector.extract %[[ODD]][0] : f16 from vector<8xf16>
// CHECK:   %[[PB:.*]] = vector.from_elements %[[E0]], %[[E1]], {{(%[0-9]+, )+}}%[[O0]], {{.*}} : vector<16xf16>
// CHECK:   memref.load %[[VTILE]]
// CHECK:   %[[VA:.*]] = vector.from_elements {{.*}} : vector<16xf16>
// CHECK:   amdgpu.wmma 16x16x16 %[[VA]] * %[[PB]] + %{{.*}} : vector<16xf16>, vector<16xf16>, vector<8xf32>
// CHECK:   scf.yield
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [4], strides = [1]} : vector<8xf32> to vector<4xf32>
// CHECK-COUNT-4: gpu.shuffle  xor %{{.*}}, %c16{{.*}}, %c32{{.*}} : i32
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x2x1x64xf16>, vector<8xf16>
func.func @decode_wmma(%q: memref<1x2x1x64xf16>, %k: memref<1x1x32x64xf16>, %v: memref<1x1x32x64xf16>,
                       %seq_lens: memref<1xi32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx1100", rock.block_size = 32 : i64, rock.grid_size = 1 : i64} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 32, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x32x64xf16>, memref<1x1x32x64xf16>, memref<1xi32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Variants. Window 40, decode: the query sits at position seq_len - 1 and sees keys
// from seq_len - 41 on, so the loop starts at tile max(0, seq_len - 41) floordiv 32 and the
// tiles before are never loaded. The score is soft-capped (cap 2: tanh(dot * scale / 2),
// times 2 * log2(e)), gets the ALiBi bias slope[head] * log2(e) * (key - i_pos), then keys
// past seq_len or before the window are selected to -inf.

// CHECK: #[[FLOOR32:.*]] = affine_map<(d0) -> (d0 floordiv 32)>
// CHECK-LABEL: func.func @window_softcap_alibi
// CHECK-SAME: %[[SLOPES:[^:]+]]: memref<2xf32>
// CHECK: %[[LEN32:.*]] = memref.load
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: %[[END:.*]] = affine.apply #{{.*}}(%[[LEN]])
// CHECK: %[[REACH:.*]] = arith.addi %{{.*}}, %[[LEN]] : index
// CHECK: %[[C41:.*]] = arith.constant 41 : index
// CHECK: %[[PAST:.*]] = arith.cmpi uge, %[[REACH]], %[[C41]] : index
// CHECK: %[[BACK:.*]] = arith.subi %[[REACH]], %{{.*}} : index
// CHECK: %[[START:.*]] = arith.select %[[PAST]], %[[BACK]], %{{.*}} : index
// CHECK: %[[FIRST:.*]] = affine.apply #[[FLOOR32]](%[[START]])
// CHECK: scf.for %[[T:.*]] = %[[FIRST]] to %[[END]] step
// CHECK: %[[DOT:.*]] = vector.reduction <add>
// CHECK: %[[INNER:.*]] = arith.mulf %[[DOT]], %{{.*}} : f32
// CHECK: %[[TANH:.*]] = math.tanh %[[INNER]] : f32
// CHECK: %[[CAPPED:.*]] = arith.mulf %[[TANH]], %{{.*}} : f32
// CHECK: %[[SLOPE:.*]] = memref.load %[[SLOPES]][%{{.*}}] : memref<2xf32>
// CHECK: %[[DIST:.*]] = arith.sitofp %{{.*}} : i32 to f32
// CHECK: %[[SLOPE2:.*]] = arith.mulf %[[SLOPE]], %{{.*}} : f32
// CHECK: %[[BIAS:.*]] = arith.mulf %[[SLOPE2]], %[[DIST]] : f32
// CHECK: %[[SCORE:.*]] = arith.addf %[[CAPPED]], %[[BIAS]] : f32
// CHECK: %[[C40:.*]] = arith.constant 40 : index
// CHECK: %[[WSTART:.*]] = arith.subi %{{.*}}, %[[C40]] : index
// CHECK: %[[INWINDOW:.*]] = arith.cmpi sge, %{{.*}}, %[[WSTART]] : index
// CHECK: %[[VISIBLE:.*]] = arith.andi %{{.*}}, %[[INWINDOW]] : i1
// CHECK: arith.select %[[VISIBLE]], %[[SCORE]], %{{.*}} : f32
func.func @window_softcap_alibi(%q: memref<1x2x1x64xf16>, %k: memref<1x1x128x64xf16>, %v: memref<1x1x128x64xf16>, %seq_lens: memref<1xi32>,
                                %slopes: memref<2xf32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx1030"} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %slopes, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      window_left = 40, softcap = 2.0 : f32,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x128x64xf16>, memref<1x1x128x64xf16>, memref<1xi32>, memref<2xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Causal prefill in f32 on gfx942: MFMA 16x16x4 with one f32 of K/Q (V/P) per lane. In a
// tile where some row of the block does not see a key before seq_len (the last key below
// seq_len is past the first query's last visible key), 0 x NaN would reach rows from keys
// hidden from them: the product runs on V with its non-finite values replaced by 0, and on
// V as it is only for the outputs whose row sees a non-finite value (counted by an MFMA of
// the non-finite flags and the visibility); other tiles run the plain product.

// CHECK-LABEL: func.func @causal_f32_mfma
// CHECK: scf.for %[[T:[^ ]*]] =
// CHECK:   %[[QK:.*]] = amdgpu.mfma 16x16x4 %{{.*}} * %{{.*}} + %{{.*}} blgp = none : f32, f32, vector<4xf32>
// CHECK:   gpu.shuffle  xor
// CHECK:   %[[LIVE_END:.*]] = arith.subi %[[LEN:.*]], %c1
// CHECK:   %[[LAST:.*]] = arith.minui %{{.*}}, %[[LIVE_END]]
// CHECK:   %[[SHIFTED:.*]] = arith.addi %{{.*}}, %[[LEN]]
// CHECK:   %[[SEEN:.*]] = arith.subi %[[SHIFTED]], %c4
// CHECK:   %[[DIAGONAL:.*]] = arith.cmpi sgt, %[[LAST]], %[[SEEN]] : index
// CHECK:   scf.if %[[DIAGONAL]] -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
// CHECK:     %[[SHOWN:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK:     %[[SEEN:.*]] = arith.select %[[SHOWN]], %{{.*}}, %{{.*}} : f32
// CHECK:     %[[V:.*]] = memref.load
// CHECK:     %[[ABS:.*]] = math.absf %[[V]] : f32
// CHECK:     %[[FINITE:.*]] = arith.cmpf olt, %[[ABS]], %{{.*}} : f32
// CHECK:     %[[CLEAN:.*]] = arith.select %[[FINITE]], %[[V]], %{{.*}} : f32
// CHECK:     %[[FLAG:.*]] = arith.select %[[FINITE]], %{{.*}}, %{{.*}} : f32
// CHECK:     %[[COUNT:.*]] = amdgpu.mfma 16x16x4 %[[FLAG]] * %[[SEEN]]
// CHECK:     %[[SEES:.*]] = arith.cmpf ogt, %[[COUNT]], %{{.*}} : vector<4xf32>
// CHECK:     %[[RAW:.*]] = amdgpu.mfma 16x16x4 %[[V]] * %{{.*}} + %[[ACC:.*]] blgp
// CHECK:     %[[SANE:.*]] = amdgpu.mfma 16x16x4 %[[CLEAN]] * %{{.*}} + %[[ACC]] blgp
// CHECK:     arith.select %[[SEES]], %[[RAW]], %[[SANE]] : vector<4xi1>, vector<4xf32>
// CHECK:   } else {
// CHECK:     amdgpu.mfma 16x16x4 %{{.*}} * %{{.*}} + %{{.*}} blgp = none : f32, f32, vector<4xf32>
func.func @causal_f32_mfma(%q: memref<1x1x4x64xf32>, %k: memref<1x1x32x64xf32>, %v: memref<1x1x32x64xf32>,
                           %seq_lens: memref<1xi32>, %out: memref<1x1x4x64xf32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 1, num_heads_kv = 1, causal = true,
      block_size = 64, grid_size = 1, m_per_block = 4, n_per_block = 16, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x4x64xf32>, memref<1x1x32x64xf32>, memref<1x1x32x64xf32>, memref<1xi32>, memref<1x1x4x64xf32>) -> ()
  return
}

// -----

// Sinks, one kernel: after the loop the row's sink (times log2(e)) joins the running
// sum, rescaled to max(running max, sink), before the division.

// CHECK-LABEL: func.func @sinks
// CHECK-SAME: %[[SINKS:[^:]+]]: memref<2xf32>
// CHECK: %[[FINAL:.*]]:3 = scf.for
// CHECK: %[[SINK:.*]] = memref.load %[[SINKS]][%{{.*}}] : memref<2xf32>
// CHECK: %[[SINK2:.*]] = arith.mulf %[[SINK]], %{{.*}} : f32
// CHECK: %[[MAX:.*]] = arith.maximumf %[[FINAL]]#1, %[[SINK2]] : f32
// CHECK: %[[ALPHA:.*]] = math.exp2 %{{.*}} : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[FINAL]]#2, %[[ALPHA]] : f32
// CHECK: %[[SINKW:.*]] = math.exp2 %{{.*}} : f32
// CHECK: %[[TOTAL:.*]] = arith.addf %[[SCALED]], %[[SINKW]] : f32
// CHECK: arith.divf %{{.*}}, %[[TOTAL]] : f32
func.func @sinks(%q: memref<1x2x1x64xf16>, %k: memref<1x1x64x64xf16>, %v: memref<1x1x64x64xf16>,
                 %sinks: memref<2xf32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx1030"} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %sinks, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x64x64xf16>, memref<1x1x64x64xf16>, memref<2xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Decode with 4 waves on one 16-row block: each wave takes 16 keys of the 64-key tile (its
// slice, wave mod 4) and keeps its own (O, max, sum). After the loop slice 0's wave takes in
// the other slices one at a time through one LDS buffer (rows padded by 4 floats:
// conflict-free 16-byte stores), as the split-KV combine merges splits (a slice that saw no
// key is skipped by a select); then slice 0 alone stores.

// CHECK-LABEL: func.func @decode_mfma_slices
// CHECK: scf.for
// CHECK-COUNT-8: amdgpu.mfma 16x16x16
// CHECK: "rock.lds_barrier"()
// CHECK: scf.yield
// CHECK: %[[PADDED:.*]] = memref.view %{{.*}} to memref<2x68xf32, #gpu.address_space<workgroup>>
// CHECK: %[[BUFFER:.*]] = memref.subview %[[PADDED]][0, 0] [2, 64] [1, 1]
// CHECK: %[[STATS:.*]] = memref.view %{{.*}} to memref<2x2xf32, #gpu.address_space<workgroup>>
// CHECK: "rock.lds_barrier"()
// CHECK: %[[SENDER:.*]] = arith.cmpi eq, %[[SLICE:.*]], %c1{{.*}} : index
// CHECK: %[[SENDS:.*]] = arith.andi %[[SENDER]], %{{.*}} : i1
// CHECK: scf.if %[[SENDS]] {
// CHECK:   vector.store %{{.*}}, %[[BUFFER]]
// CHECK:   memref.store %{{.*}}, %[[STATS]]
// CHECK: "rock.lds_barrier"()
// CHECK: %[[RECEIVER:.*]] = arith.cmpi eq, %[[SLICE]], %c0{{.*}} : index
// CHECK: %[[TAKES:.*]] = arith.andi %[[RECEIVER]], %{{.*}} : i1
// CHECK: scf.if %[[TAKES]] -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, f32, f32) {
// CHECK:   vector.load %[[BUFFER]]
// CHECK:   %[[SEEN:.*]] = arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK:   %[[ADDED:.*]] = vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:   arith.select %[[SEEN]], %[[ADDED]], %{{.*}} : vector<4xf32>
// CHECK: arith.cmpi eq, %[[SLICE]], %c2
// CHECK: arith.cmpi eq, %[[SLICE]], %c3
// CHECK: scf.if
// CHECK:   vector.store %{{.*}}, %{{.*}} : memref<1x2x1x64xf16>, vector<4xf16>
func.func @decode_mfma_slices(%q: memref<1x2x1x64xf16>, %k: memref<1x1x64x64xf16>, %v: memref<1x1x64x64xf16>,
                              %seq_lens: memref<1xi32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 256 : i64, rock.grid_size = 1 : i64} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 256, grid_size = 1, m_per_block = 2, n_per_block = 64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x64x64xf16>, memref<1x1x64x64xf16>, memref<1xi32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Sinks with split-KV: the splits write their partials without the sink, and the
// combine kernel adds it once, after merging the splits.

// CHECK-LABEL: func.func @split_sinks(
// CHECK-NOT: arith.maximumf
// CHECK-LABEL: func.func @split_sinks_combine
// CHECK-SAME: %[[SINKS:[^:]+]]: memref<2xf32>
// CHECK: scf.for
// CHECK: %[[MERGED:.*]]:2 = scf.for
// CHECK: %[[SINK:.*]] = memref.load %[[SINKS]][%{{.*}}] : memref<2xf32>
// CHECK: arith.maximumf
// CHECK: arith.addf
func.func @split_sinks(%q: memref<1x2x1x64xf16>, %k: memref<1x1x64x64xf16>, %v: memref<1x1x64x64xf16>,
                       %sinks: memref<2xf32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx1030"} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %sinks, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 2, m_per_block = 2, n_per_block = 32, num_splits = 2, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x64x64xf16>, memref<1x1x64x64xf16>, memref<2xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// CSR page tables: the sequence length is (pages - 1) * block_size + kv_last_page_len[b]
// (0 without pages, at most the capacity), and the K/V tiles are paged loads of the views
// whose page table operand is kv_indices.

// CHECK-DAG: #[[LENGTH:map[0-9]*]] = affine_map<(d0, d1) -> ((d0 - 1) * 8 + d1)>
// CHECK-LABEL: func.func @csr_decode
// CHECK-SAME: %[[INDPTR:[^:]*]]: memref<2xi32>, %[[INDICES:[^:]*]]: memref<4xi32>, %[[LAST:[^:]*]]: memref<1xi32>
// CHECK: %[[K:.*]] = "rock.block_table_view"
// CHECK: %[[START:.*]] = memref.load %[[INDPTR]][%[[B:.*]]] : memref<2xi32>
// CHECK: %[[END:.*]] = memref.load %[[INDPTR]][%{{.*}}] : memref<2xi32>
// CHECK: %[[PAGES:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: memref.load %[[LAST]][%[[B]]] : memref<1xi32>
// CHECK: %[[HAS_PAGES:.*]] = arith.cmpi sgt, %[[PAGES]], %{{.*}} : index
// CHECK: %[[FULL:.*]] = affine.apply #[[LENGTH]](%[[PAGES]], %{{.*}})
// CHECK: %[[LENGTH_OR_0:.*]] = arith.select %[[HAS_PAGES]], %[[FULL]], %{{.*}} : index
// CHECK: %[[NON_NEGATIVE:.*]] = arith.maxsi %[[LENGTH_OR_0]], %{{.*}} : index
// CHECK: %[[SEQ_LEN:.*]] = arith.minsi %[[NON_NEGATIVE]], %c32 : index
// CHECK: scf.for
// CHECK: "rock.blockwise_load_tile"(%[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SEQ_LEN]], %[[INDICES]])
// CHECK-SAME: page_size = 256 : i64
func.func @csr_decode(%arg0: memref<1x2x1x32xf16>, %arg1: memref<4x8x1x32xf16>, %arg2: memref<4x8x1x32xf16>, %arg3: memref<2xi32>, %arg4: memref<4xi32>, %arg5: memref<1xi32>, %arg6: memref<1x2x1x32xf16>) attributes {rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64, rock.kernel} {
  %0 = "rock.block_table_view"(%arg1, %arg4, %arg3, %arg5) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<4x8x1x32xf16>, memref<4xi32>, memref<2xi32>, memref<1xi32>) -> memref<1x4x256xf16>
  %1 = "rock.block_table_view"(%arg2, %arg4, %arg3, %arg5) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<4x8x1x32xf16>, memref<4xi32>, memref<2xi32>, memref<1xi32>) -> memref<1x4x256xf16>
  "rock.gridwise_attention_accel"(%arg0, %0, %1, %arg6) {block_size = 64 : i64, causal = false, grid_size = 1 : i64, m_per_block = 2 : i64, n_per_block = 32 : i64, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>} : (memref<1x2x1x32xf16>, memref<1x4x256xf16>, memref<1x4x256xf16>, memref<1x2x1x32xf16>) -> ()
  return
}

// -----

// fp8 K/V with per-tensor scales: the K and V tiles stay fp8 in LDS (half the bytes of f16),
// keys are widened to f32 as the dot product reads them, k_scale multiplies each score once
// and v_scale each output once.

// CHECK-LABEL: func.func @fp8_scaled
// CHECK-SAME: %[[KSCALE:[^:]+]]: memref<1xf32>, %[[VSCALE:[^:]+]]: memref<1xf32>
// CHECK: %[[KTILE:.*]] = memref.view {{.*}} to memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// CHECK: %[[VTILE:.*]] = memref.view {{.*}} to memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// CHECK: %[[KS:.*]] = memref.load %[[KSCALE]]
// CHECK: %[[VS:.*]] = memref.load %[[VSCALE]]
// CHECK: scf.for
// CHECK: %[[KEY8:.*]] = vector.load %[[KTILE]][{{.*}}] : memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<8xf8E4M3FNUZ>
// CHECK: arith.extf %[[KEY8]] : vector<8xf8E4M3FNUZ> to vector<8xf32>
// CHECK: %[[DOT:.*]] = vector.reduction <add>
// CHECK: arith.mulf %[[DOT]], %[[KS]] : f32
// CHECK: vector.load %[[VTILE]][{{.*}}] : memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<2xf8E4M3FNUZ>
// CHECK: scf.yield
// CHECK: %[[VSPLAT:.*]] = vector.broadcast %[[VS]] : f32 to vector<2xf32>
// CHECK: arith.mulf %{{.*}}, %[[VSPLAT]] : vector<2xf32>
func.func @fp8_scaled(%q: memref<1x2x1x64xf16>, %k: memref<1x1x64x64xf8E4M3FNUZ>, %v: memref<1x1x64x64xf8E4M3FNUZ>,
                      %k_scale: memref<1xf32>, %v_scale: memref<1xf32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %k_scale, %v_scale, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x64x64xf8E4M3FNUZ>, memref<1x1x64x64xf8E4M3FNUZ>, memref<1xf32>, memref<1xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// fp8 K/V with per-token-head scales in scale pools read through the cache's block table: each
// tile's 32 K scales and 32 V scales are staged in LDS by tile loads of their own (a block id per
// page, read once per tile; keys past seq_len not read), the K scale of key col multiplies its
// score once, the V scales multiply the probabilities (4 per vector) before P V.

// CHECK-LABEL: func.func @fp8_per_token_head
// CHECK-SAME: %[[KSC:[^:]+]]: memref<4x16x1xf32>, %[[VSC:[^:]+]]: memref<4x16x1xf32>
// CHECK: %[[KS:.*]] = "rock.block_table_view"(%[[KSC]], %[[TABLE:[^)]+]])
// CHECK: %[[VS:.*]] = "rock.block_table_view"(%[[VSC]], %[[TABLE]])
// CHECK: %[[KSTILE:.*]] = memref.view {{.*}} to memref<32xf32, #gpu.address_space<workgroup>>
// CHECK: %[[VSTILE:.*]] = memref.view {{.*}} to memref<32xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: "rock.blockwise_load_tile"(%[[KS]], %[[KSTILE]], {{.*}}, %[[TABLE]]) {{.*}}page_size = 16
// CHECK: %[[DOT:.*]] = vector.reduction <add>
// CHECK: %[[SCALE:.*]] = memref.load %[[KSTILE]]
// CHECK: arith.mulf %[[DOT]], %[[SCALE]] : f32
// CHECK: "rock.blockwise_load_tile"(%[[VS]], %[[VSTILE]], {{.*}}, %[[TABLE]]) {{.*}}page_size = 16
// CHECK: %[[PROB:.*]] = math.exp2 %{{.*}} : vector<4xf32>
// CHECK: %[[VSV:.*]] = vector.load %[[VSTILE]][%{{.*}}] : memref<32xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: arith.mulf %[[PROB]], %[[VSV]] : vector<4xf32>
// CHECK: scf.yield
func.func @fp8_per_token_head(%q: memref<1x2x1x64xf16>, %kc: memref<4x16x1x64xf8E4M3FNUZ>, %vc: memref<4x16x1x64xf8E4M3FNUZ>,
                              %table: memref<1x4xi32>, %lens: memref<1xi32>, %ksc: memref<4x16x1xf32>, %vsc: memref<4x16x1xf32>,
                              %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.block_table_view"(%kc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1x64xf8E4M3FNUZ>, memref<1x4xi32>) -> memref<1x4x1024xf8E4M3FNUZ>
  %v = "rock.block_table_view"(%vc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1x64xf8E4M3FNUZ>, memref<1x4xi32>) -> memref<1x4x1024xf8E4M3FNUZ>
  %ks = "rock.block_table_view"(%ksc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1xf32>, memref<1x4xi32>) -> memref<1x4x16xf32>
  %vs = "rock.block_table_view"(%vsc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1xf32>, memref<1x4xi32>) -> memref<1x4x16xf32>
  "rock.gridwise_attention_accel"(%q, %k, %v, %lens, %ks, %vs, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>}
    : (memref<1x2x1x64xf16>, memref<1x4x1024xf8E4M3FNUZ>, memref<1x4x1024xf8E4M3FNUZ>, memref<1xi32>, memref<1x4x16xf32>, memref<1x4x16xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Packed queries (rock.varlen_view): the workgroup's sequence b owns packed rows
// [cu[b], cu[b + 1]); padded position p is row (cu[b + 1] - Sq) + p, present when
// p >= Sq - (cu[b + 1] - cu[b]) (the padding). The Q tile reads the packed rows directly
// (valid: present and p < Sq) and the output is stored to the packed rows, absent positions not.

// CHECK-DAG: #[[PADDING:map[0-9]*]] = affine_map<(d0, d1) -> (-(d1 - d0) + 2)>
// CHECK-DAG: #[[START:map[0-9]*]] = affine_map<(d0) -> (d0 - 2)>
// CHECK-DAG: #[[Q_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3 + d2 * 2 + d6, d1 * 2 + d5, d7)>
// CHECK-DAG: #[[Q_VALID:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d2 * 2 + d6 - d4, -(d2 * 2 + d6) + 1)>
// CHECK-DAG: #[[ROW_MAP:map[0-9]*]] = affine_map<(d0, d1) -> (d0 + d1)>
// CHECK-LABEL: func.func @varlen_prefill
// CHECK-SAME: (%[[Q:[^:]*]]: memref<4x2x32xf16>, %[[CU:[^:]*]]: memref<3xi32>
// CHECK-SAME: %[[OUT:[^:]*]]: memref<4x2x32xf16>)
// CHECK: %[[FIRST:.*]] = memref.load %[[CU]][%[[B:.*]]] : memref<3xi32>
// CHECK: %[[END:.*]] = memref.load %[[CU]][%{{.*}}] : memref<3xi32>
// CHECK: %[[END_INDEX:.*]] = arith.index_cast %[[END]]
// CHECK: %[[PAD:.*]] = affine.apply #[[PADDING]](%{{.*}}, %[[END_INDEX]])
// CHECK: %[[ROW0:.*]] = affine.apply #[[START]](%[[END_INDEX]])
// CHECK: "rock.blockwise_load_tile"(%[[Q]], %{{.*}}, %[[B]], %{{.*}}, %{{.*}}, %[[ROW0]], %[[PAD]])
// CHECK-SAME: map = #[[Q_MAP]]
// CHECK-SAME: valid = #[[Q_VALID]]
// CHECK: scf.for
// CHECK: %[[PRESENT:.*]] = arith.cmpi uge, %[[POSITION:.*]], %[[PAD]] : index
// CHECK: %[[ROW:.*]] = affine.apply #[[ROW_MAP]](%[[ROW0]], %[[POSITION]])
// CHECK: vector.store %{{.*}}, %[[OUT]][%[[ROW]], %{{.*}}, %{{.*}}] : memref<4x2x32xf16>, vector<4xf16>
func.func @varlen_prefill(%arg0: memref<4x2x32xf16>, %arg1: memref<3xi32>, %arg2: memref<4x8x1x32xf16>, %arg3: memref<4x8x1x32xf16>, %arg4: memref<2x2xi32>, %arg5: memref<2xi32>, %arg6: memref<4x2x32xf16>) attributes {rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 2 : i64, rock.kernel} {
  %0 = "rock.varlen_view"(%arg0, %arg1) : (memref<4x2x32xf16>, memref<3xi32>) -> memref<2x2x2x32xf16>
  %1 = "rock.varlen_view"(%arg6, %arg1) : (memref<4x2x32xf16>, memref<3xi32>) -> memref<2x2x2x32xf16>
  %2 = "rock.block_table_view"(%arg2, %arg4) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x8x1x32xf16>, memref<2x2xi32>) -> memref<2x2x256xf16>
  %3 = "rock.block_table_view"(%arg3, %arg4) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x8x1x32xf16>, memref<2x2xi32>) -> memref<2x2x256xf16>
  "rock.gridwise_attention_accel"(%0, %2, %3, %arg5, %1) {block_size = 64 : i64, causal = true, grid_size = 2 : i64, m_per_block = 4 : i64, n_per_block = 32 : i64, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>} : (memref<2x2x2x32xf16>, memref<2x2x256xf16>, memref<2x2x256xf16>, memref<2xi32>, memref<2x2x2x32xf16>) -> ()
  return
}

// -----

// Packed queries with split-KV (VALU loop, gfx1030): the workspace keeps the padded rows
// (b, q head, position); a split stores a row's partial only where the position is present
// in its sequence (p >= the padding). The combine loads cu[b] and cu[b + 1] first and merges
// only a present row (nothing read for an absent one), storing it to packed row
// cu[b + 1] - Sq + p of the packed out.

// CHECK-DAG: #[[CPAD:map[0-9]*]] = affine_map<(d0, d1) -> (-(d1 - d0) + 2)>
// CHECK-DAG: #[[CROW:map[0-9]*]] = affine_map<(d0, d1) -> (d0 + d1 - 2)>
// CHECK-LABEL: func.func @varlen_split(
// CHECK-SAME: %[[WS:[^:]*]]: memref<528xf32>)
// CHECK-SAME: rock.combine = "varlen_split_combine"
// CHECK: %[[SPAD:.*]] = affine.apply #[[CPAD]](
// CHECK: %[[SPRESENT:.*]] = arith.cmpi uge, %{{.*}}, %[[SPAD]] : index
// CHECK: %[[STORED:.*]] = arith.andi %{{.*}}, %[[SPRESENT]] : i1
// CHECK: scf.if %[[STORED]] {
// CHECK: vector.store %{{.*}}, %[[WS]][%{{.*}}] : memref<528xf32>, vector<2xf32>
// CHECK-LABEL: func.func @varlen_split_combine
// CHECK-SAME: (%{{[^:]*}}: memref<4x2x32xf16>, %[[CU:[^:]*]]: memref<3xi32>,
// CHECK-SAME: %[[OUT:[^:]*]]: memref<4x2x32xf16>, %[[CWS:[^:]*]]: memref<528xf32>)
// CHECK: %[[FIRST:.*]] = memref.load %[[CU]][%{{.*}}] : memref<3xi32>
// CHECK: %[[FIRST_INDEX:.*]] = arith.index_cast %[[FIRST]]
// CHECK: %[[END:.*]] = memref.load %[[CU]][%{{.*}}] : memref<3xi32>
// CHECK: %[[END_INDEX:.*]] = arith.index_cast %[[END]]
// CHECK: %[[PAD:.*]] = affine.apply #[[CPAD]](%[[FIRST_INDEX]], %[[END_INDEX]])
// CHECK: %[[PRESENT:.*]] = arith.cmpi uge, %[[POSITION:.*]], %[[PAD]] : index
// CHECK: %[[ROW:.*]] = affine.apply #[[CROW]](%[[END_INDEX]], %[[POSITION]])
// CHECK: scf.if %[[PRESENT]] {
// CHECK: memref.load %[[CWS]]
// CHECK: vector.store %{{.*}}, %[[OUT]][%[[ROW]], %{{.*}}, %{{.*}}] : memref<4x2x32xf16>, vector<4xf16>
func.func @varlen_split(%arg0: memref<4x2x32xf16>, %arg1: memref<3xi32>, %arg2: memref<16x8x1x32xf16>, %arg3: memref<16x8x1x32xf16>, %arg4: memref<2x8xi32>, %arg5: memref<2xi32>, %arg6: memref<4x2x32xf16>) attributes {rock.arch = "gfx1030", rock.block_size = 64 : i64, rock.grid_size = 4 : i64, rock.kernel} {
  %0 = "rock.varlen_view"(%arg0, %arg1) : (memref<4x2x32xf16>, memref<3xi32>) -> memref<2x2x2x32xf16>
  %1 = "rock.varlen_view"(%arg6, %arg1) : (memref<4x2x32xf16>, memref<3xi32>) -> memref<2x2x2x32xf16>
  %2 = "rock.block_table_view"(%arg2, %arg4) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x8x1x32xf16>, memref<2x8xi32>) -> memref<2x8x256xf16>
  %3 = "rock.block_table_view"(%arg3, %arg4) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x8x1x32xf16>, memref<2x8xi32>) -> memref<2x8x256xf16>
  "rock.gridwise_attention_accel"(%0, %2, %3, %arg5, %1) {block_size = 64 : i64, causal = false, grid_size = 4 : i64, num_splits = 2 : i64, m_per_block = 4 : i64, n_per_block = 32 : i64, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>} : (memref<2x2x2x32xf16>, memref<2x8x256xf16>, memref<2x8x256xf16>, memref<2xi32>, memref<2x2x2x32xf16>) -> ()
  return
}

// -----

// Dynamic sizes (one kernel for every batch): the block slots are the block table's dim 1,
// read at run time; head h's pages start at page h * slots, passed to the tile loads as an
// index of its own (the map stays linear: d4 * 1024 is whole pages). Bounds that are
// known only at launch are 2147483647.

// CHECK-DAG: #[[KV_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4 * 1024 + (d2 * 32 + d5) * 64 + d6)>
// CHECK-LABEL: func.func @dynamic_blocks
// CHECK-SAME: (%[[Q:.*]]: memref<?x8x1x64xf16>, %{{.*}}: memref<?x16x2x64xf16>, %{{.*}}: memref<?x16x2x64xf16>, %[[TABLE:.*]]: memref<?x?xi32>
// CHECK-SAME: rock.grid_map
// CHECK: "rock.blockwise_load_tile"(%[[Q]], %{{.*}}) {block_size = 64 : i64, index_bounds = array<i64: 2147483647, 2, 1>
// CHECK: scf.for %[[T:.*]] = %{{.*}} to
// CHECK:   %[[SLOTS:.*]] = memref.dim %[[TABLE]], %{{.*}} : memref<?x?xi32>
// CHECK:   %[[HEAD_PAGE:.*]] = arith.muli %[[H:.*]], %[[SLOTS]] : index
// CHECK:   "rock.blockwise_load_tile"(%{{.*}}, %{{.*}}, %{{.*}}, %[[H]], %[[T]], %{{.*}}, %[[HEAD_PAGE]], %[[TABLE]])
// CHECK-SAME: index_bounds = array<i64: 2147483647, 2, 2147483647, 2147483647, 2147483647>, map = #[[KV_MAP]]
// CHECK:   "rock.blockwise_load_tile"(%{{.*}}, %{{.*}}, %{{.*}}, %[[H]], %[[T]], %{{.*}}, %[[HEAD_PAGE]], %[[TABLE]])
func.func @dynamic_blocks(%q: memref<?x8x1x64xf16>, %k_cache: memref<?x16x2x64xf16>, %v_cache: memref<?x16x2x64xf16>, %block_table: memref<?x?xi32>, %seq_lens: memref<?xi32>, %out: memref<?x8x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_map = affine_map<(d0) -> (d0 * 2)>, rock.grid_sizes = array<i64: 0, 0>} {
  %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {block_size = 64 : i64, causal = false, m_per_block = 4 : i64, n_per_block = 32 : i64, num_heads_kv = 2 : i64, num_heads_q = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x64xf16>, memref<?x?x1024xf16>, memref<?x?x1024xf16>, memref<?xi32>, memref<?x8x1x64xf16>) -> ()
  return
}

// -----

// A fixed split count with dynamic sizes: the workspace is memref<3x?xf32> ([S, R * (D + 1)], dim 0
// static), read by the same code as a count chosen at launch (memref.dim of dim 0 folds to 3); the grid
// map is multiplied by 3, an affine map of the batch alone; the combine's grid is a map of dim 1.

// CHECK-DAG: #[[GRID:map[0-9]*]] = affine_map<(d0) -> (d0 * 6)>
// CHECK-LABEL: func.func @dynamic_fixed_split(
// CHECK-SAME: %[[WS:[a-z0-9_]+]]: memref<3x?xf32>)
// CHECK-SAME: rock.combine = "dynamic_fixed_split_combine", rock.grid_map = #[[GRID]], rock.grid_sizes = array<i64: 0, 0>
// CHECK-NOT: rock.workspace_bytes
// CHECK: %[[S:.*]] = memref.dim %[[WS]], %{{.*}} : memref<3x?xf32>
// CHECK: %[[S32:.*]] = arith.index_cast %[[S]] : index to i32
// CHECK: arith.divui %{{.*}}, %[[S32]] : i32
// CHECK-LABEL: func.func @dynamic_fixed_split_combine(
// CHECK-SAME: memref<3x?xf32>) attributes {{{.*}}rock.grid_sizes = array<i64: 6, 1>
func.func @dynamic_fixed_split(%q: memref<?x8x1x64xf16>, %k_cache: memref<?x16x2x64xf16>, %v_cache: memref<?x16x2x64xf16>, %block_table: memref<?x?xi32>, %seq_lens: memref<?xi32>, %out: memref<?x8x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 128 : i64, rock.grid_map = affine_map<(d0) -> (d0 * 2)>, rock.grid_sizes = array<i64: 0, 0>} {
  %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {block_size = 128 : i64, causal = false, m_per_block = 4 : i64, n_per_block = 32 : i64, num_heads_kv = 2 : i64, num_heads_q = 8 : i64, num_splits = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x64xf16>, memref<?x?x1024xf16>, memref<?x?x1024xf16>, memref<?xi32>, memref<?x8x1x64xf16>) -> ()
  return
}

// -----

// The same decode with the kernel's rock.lds_swizzle: the tiles are stored swizzled
// (lds_swizzle on their loads, chosen for conflict-free reads: Q and K by row mod 16 / 8,
// V by bit 2 of the key) and read through the same swizzle. A lane reads its K values of two
// MFMA steps at once (8 f16, columns 32 s + 8 g: steps 2s and 2s + 1 take its halves), Q's
// fragments take the same columns. The swizzled columns of the loop's reads are lane bases
// computed before the loop plus constants.

// CHECK-LABEL: func.func @decode_mfma_swizzled
// CHECK: "rock.blockwise_load_tile"(%{{.*}}, %[[QTILE:.*]], %{{.*}}) {{.*}}lds_swizzle = array<i64: 4, 1, 16, 1>
// CHECK: %[[QROWS:.*]] = memref.view %{{.*}} to memref<2x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[KTILE:.*]] = memref.view %{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VTILE:.*]] = memref.view %{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[QMOVED:.*]] = arith.xori
// CHECK: %[[QCOL:.*]] = affine.apply #{{.*}}(%[[QMOVED]], %{{.*}})
// CHECK: %[[Q0:.*]] = vector.load %[[QROWS]][%{{.*}}, %[[QCOL]]] : memref<2x64xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: %[[Q1:.*]] = vector.load %[[QROWS]]
// CHECK: arith.xori
// CHECK: scf.for
// CHECK:   "rock.blockwise_load_tile"(%{{.*}}, %[[KTILE]], {{.*}}lds_swizzle = array<i64: 8, 1, 8, 1>
// CHECK:   %[[K01:.*]] = vector.load %[[KTILE]][%{{.*}}, %{{.*}}] : memref<32x64xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK:   %[[K0:.*]] = vector.extract_strided_slice %[[K01]] {offsets = [0], sizes = [4], strides = [1]}
// CHECK:   amdgpu.mfma 16x16x16 %[[K0]] * %[[Q0]]
// CHECK:   %[[K1:.*]] = vector.extract_strided_slice %[[K01]] {offsets = [4], sizes = [4], strides = [1]}
// CHECK:   amdgpu.mfma 16x16x16 %[[K1]] * %[[Q1]]
// CHECK:   "rock.blockwise_load_tile"(%{{.*}}, %[[VTILE]], {{.*}}lds_swizzle = array<i64: 8, 4, 2, 2>
// CHECK:   memref.load %[[VTILE]]
// CHECK:   scf.yield
func.func @decode_mfma_swizzled(%q: memref<1x2x1x64xf16>, %k: memref<1x1x32x64xf16>, %v: memref<1x1x32x64xf16>,
                       %seq_lens: memref<1xi32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64, rock.lds_swizzle} {
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x32x64xf16>, memref<1x1x32x64xf16>, memref<1xi32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// vLLM's paged-attention caches on gfx942's matrix cores: the value cache holds a column's tokens side
// by side, so the V tile is V^T [D = 64, N = 32] (its map takes the tile's (d, n)), each 16-byte load
// along the tokens one LDS store; its 16-byte chunks xor the row (lds_swizzle [8, 1, 4, 1]): the lanes'
// reads of 16 rows spread over the banks. A lane's A operand of O^T = V^T P^T, its 4 keys of column
// 16 dt + q, is one 4-element read of its row (no grouped columns).

// CHECK-DAG: #[[VMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, (d1 * 32 + d2 * 32 + d5) * 64 + d4)>
// CHECK-DAG: #[[VVALID:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3 - (d2 * 32 + d5) - 1)>
// CHECK-LABEL: func.func @vllm_pa_decode_mfma
// CHECK: %[[KTILE:.*]] = memref.view %{{.*}} to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VTILE:.*]] = memref.view %{{.*}} to memref<64x32xf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK:   "rock.blockwise_load_tile"(%{{.*}}, %[[KTILE]],
// CHECK:   "rock.blockwise_load_tile"(%{{.*}}, %[[VTILE]], %{{.*}}) {{{.*}}lds_swizzle = array<i64: 8, 1, 4, 1>, map = #[[VMAP]], {{.*}}valid = #[[VVALID]]}
// CHECK:   %[[PB:.*]] = arith.truncf %{{.*}} : vector<4xf32> to vector<4xf16>
// CHECK:   %[[CHUNK:.*]] = arith.xori %{{.*}}, %{{.*}} : index
// CHECK:   %[[KEY:.*]] = affine.apply #{{.*}}(%[[CHUNK]], %{{.*}})
// CHECK:   %[[V0:.*]] = vector.load %[[VTILE]][%[[COLUMN:.*]], %[[KEY]]] : memref<64x32xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK:   amdgpu.mfma 16x16x16 %{{.*}} * %[[PB]] + %{{.*}} blgp = none : vector<4xf16>, vector<4xf16>, vector<4xf32>
// CHECK-COUNT-3: vector.load %[[VTILE]]
// CHECK:   "rock.lds_barrier"()
func.func @vllm_pa_decode_mfma(%q: memref<1x2x1x64xf16>, %key_cache: memref<4x1x8x16x8xf16>, %value_cache: memref<4x1x64x16xf16>, %table: memref<1x2xi32>, %seq_lens: memref<1xi32>, %out: memref<1x2x1x64xf16>) attributes {rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64, rock.kernel} {
  %k = "rock.block_table_view"(%key_cache, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x1x8x16x8xf16>, memref<1x2xi32>) -> memref<1x2x1024xf16>
  %v = "rock.block_table_view"(%value_cache, %table) {layout = "vllm-pa", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x1x64x16xf16>, memref<1x2xi32>) -> memref<1x2x1024xf16>
  "rock.gridwise_attention_accel"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 2, num_heads_kv = 1, causal = false,
      block_size = 64, grid_size = 1, m_per_block = 2, n_per_block = 32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x2x1024xf16>, memref<1x2x1024xf16>, memref<1xi32>, memref<1x2x1x64xf16>) -> ()
  return
}
