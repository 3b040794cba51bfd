// pagedir-gen attention emits the L0 function: page tables (Hkv * Sk / page_size
// pointers per sequence) read through rock.deref, or dense K/V with --dense.
// RUN: pagedir-gen attention --batch 2 --num-heads-q 8 --num-heads-kv 2 --seq-len-q 1 --seq-len-k 64 --head-dim 128 --page-size 16 --dtype f16 --ragged | FileCheck %s --check-prefix=PAGED
// RUN: pagedir-gen attention --batch 1 --num-heads-q 4 --num-heads-kv 4 --seq-len-q 8 --seq-len-k 32 --head-dim 64 --page-size 32 --dtype bf16 --causal --dense | FileCheck %s --check-prefix=DENSE
// RUN: pagedir-gen attention --batch 1 --num-heads-q 4 --num-heads-kv 1 --seq-len-k 48 --head-dim 64 --page-size 16 --dtype f32 | pagedir-opt --rock-verify | FileCheck %s --check-prefix=VERIFIED
// RUN: not pagedir-gen attention --num-heads-q 6 --num-heads-kv 4 2>&1 | FileCheck %s --check-prefix=GQA
// RUN: not pagedir-gen attention --num-heads-kv 1 --seq-len-k 40 --page-size 16 2>&1 | FileCheck %s --check-prefix=PAGES
// RUN: not pagedir-gen attention --scale nan 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not pagedir-gen attention --name 1abc 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not pagedir-gen attention --batch 1099511627776 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not pagedir-gen attention --batch 4096 --seq-len-k 65536 2>&1 | FileCheck %s --check-prefix=TENSOR

// PAGED-LABEL: func.func @paged_attention(%q: memref<2x8x1x128xf16>, %k_table: memref<2x8x1xi64>, %v_table: memref<2x8x1xi64>, %seq_lens: memref<2xi32>, %out: memref<2x8x1x128xf16>)
// PAGED-SAME: attributes {rock.kernel, rock.arch = "gfx942"}
// PAGED: %k = "rock.deref"(%k_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
// PAGED: %v = "rock.deref"(%v_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
// PAGED: "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2,
// PAGED-NEXT: causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1>}

// DENSE-LABEL: func.func @paged_attention(%q: memref<1x4x8x64xbf16>, %k: memref<1x4x32x64xbf16>, %v: memref<1x4x32x64xbf16>, %out: memref<1x4x8x64xbf16>)
// DENSE-NOT: rock.deref
// DENSE: causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1>

// VERIFIED: "rock.attention"
// VERIFIED-SAME: memref<1x3x1024xf32>

// GQA: pagedir-gen: error: --num-heads-q 6 must be a multiple of --num-heads-kv 4
// PAGES: pagedir-gen: error: the cache of 1 heads x 40 tokens is not a whole number of 16-token pages
// SCALE: pagedir-gen: error: argument --scale: nan is not a finite positive f32 value (1.1754943508222875e-38 .. 3.4028234663852886e+38)
// NAME: pagedir-gen: error: --name '1abc' is not a valid symbol name: use letters, digits, '_', '$' or '.', not starting with a digit
// HUGE: pagedir-gen: error: --batch 1099511627776 exceeds the 32-bit index limit (2147483647)
// TENSOR: pagedir-gen: error: the paged k and v 4096x8192x2048xf16 holds 68719476736 elements (137438953472 bytes); a kernel tensor is limited to 2147483647 elements and 4294967295 bytes (32-bit indices and buffer ranges)
