// The copy-kv generator: an L2 kernel over (table, [seq_lens], out).
// RUN: pagedir-gen copy-kv --batch 2 --num-heads-kv 4 --seq-len 48 --head-dim 32 --page-size 8 --tile-tokens 16 --layout k --dtype f16 | FileCheck %s --check-prefix=K
// RUN: pagedir-gen copy-kv --batch 2 --num-heads-kv 4 --seq-len 48 --head-dim 32 --page-size 8 --tile-tokens 16 --layout v --dtype bf16 --seq-lens --arch gfx1100 | FileCheck %s --check-prefix=V
// RUN: pagedir-gen copy-kv --num-heads-kv 1 --seq-len 20 --page-size 8 | FileCheck %s --check-prefix=PARTIAL

// 24 pages of 8 tokens x 32 = 256 elements per batch; 3 tiles per head, 2 x 4 x 3 workgroups.
// K: func.func @copy_kv(%[[TABLE:.*]]: memref<2x24x1xi64>, %[[OUT:.*]]: memref<2x4x48x32xf16>)
// K-SAME: rock.arch = "gfx942", rock.block_size = 256 : i64, rock.check = "copy_kv", rock.grid_size = 24 : i64, rock.kernel
// K: %[[PAGES:.*]] = "rock.deref"(%[[TABLE]]) : (memref<2x24x1xi64>) -> memref<2x24x256xf16>
// K: %[[TILE:.*]] = memref.view {{.*}} to memref<32x16xf16, #gpu.address_space<workgroup>>
// K: "rock.blockwise_load_tile"(%[[PAGES]], %[[TILE]], %{{.*}}, %{{.*}}, %{{.*}}, %[[TABLE]])
// K-SAME: block_size = 256 : i64, index_bounds = array<i64: 2, 4, 3>
// K-SAME: page_size = 256 : i64
// K: memref.store %{{.*}}, %[[OUT]]

// V: func.func @copy_kv(%{{.*}}: memref<2x24x1xi64>, %[[LENS:.*]]: memref<2xi32>, %{{.*}}: memref<2x4x48x32xbf16>)
// V-SAME: rock.arch = "gfx1100"
// V: memref.view {{.*}} to memref<16x32xbf16, #gpu.address_space<workgroup>>
// V: memref.load %[[LENS]]
// V: arith.select

// Any capacity: 1 head x 20 tokens in 3 pages of 8 tokens, the last partly filled (the deref states it).
// PARTIAL: "rock.deref"(%{{.*}}) {seq_len_k = 20 : i64} : (memref<2x3x1xi64>) -> memref<2x3x512xf16>
