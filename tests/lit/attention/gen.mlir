// pagedir-gen attention emits the L0 function: page tables (ceil(Hkv * Sk / page_size)
// pointers per sequence) read through rock.deref, dense K/V with --dense, or cache pools
// viewed through a block table (--page-table blocks) or a CSR table (--page-table csr).
// RUN: pagedir-gen attention --batch 2 --num-heads-q 8 --num-heads-kv 2 --seq-len-q 1 --seq-len-k 64 --head-dim 128 --page-size 16 --dtype f16 --ragged | FileCheck %s --check-prefix=PAGED
// RUN: pagedir-gen attention --batch 1 --num-heads-q 4 --num-heads-kv 4 --seq-len-q 8 --seq-len-k 32 --head-dim 64 --page-size 32 --dtype bf16 --causal --dense | FileCheck %s --check-prefix=DENSE
// RUN: pagedir-gen attention --batch 1 --num-heads-q 4 --num-heads-kv 1 --seq-len-k 48 --head-dim 64 --page-size 16 --dtype f32 | pagedir-opt --rock-verify | FileCheck %s --check-prefix=VERIFIED
// RUN: not pagedir-gen attention --num-heads-q 6 --num-heads-kv 4 2>&1 | FileCheck %s --check-prefix=GQA
// RUN: pagedir-gen attention --num-heads-kv 1 --seq-len-k 40 --page-size 16 | FileCheck %s --check-prefix=PAGES
// RUN: pagedir-gen attention --page-table blocks --seq-len-k 100 --page-size 16 | FileCheck %s --check-prefix=BLOCKS
// RUN: pagedir-gen attention --page-table csr --kv-layout hnd --num-blocks 20 | FileCheck %s --check-prefix=CSR
// RUN: pagedir-gen attention --page-table blocks --num-blocks 3 | FileCheck %s --check-prefix=FEW-BLOCKS
// RUN: not pagedir-gen attention --num-blocks 30 2>&1 | FileCheck %s --check-prefix=POINTER-BLOCKS
// RUN: pagedir-gen attention --page-table blocks --varlen --seq-len-q 4 --causal | FileCheck %s --check-prefix=VARLEN
// RUN: pagedir-gen attention --varlen --seq-len-q 4 --causal | FileCheck %s --check-prefix=VARLEN-POINTERS
// RUN: pagedir-gen attention --varlen --dense --dynamic | FileCheck %s --check-prefix=VARLEN-DENSE
// RUN: not pagedir-gen attention --page-table csr --seq-lens 2>&1 | FileCheck %s --check-prefix=CSR-LENS
// RUN: not pagedir-gen attention --scale nan 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not pagedir-gen attention --name 1abc 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not pagedir-gen attention --batch 1099511627776 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not pagedir-gen attention --batch 4096 --seq-len-k 65536 2>&1 | FileCheck %s --check-prefix=TENSOR

// PAGED-LABEL: func.func @paged_attention(%q: memref<2x8x1x128xf16>, %k_table: memref<2x8x1xi64>, %v_table: memref<2x8x1xi64>, %seq_lens: memref<2xi32>, %out: memref<2x8x1x128xf16>)
// PAGED-SAME: attributes {rock.kernel, rock.arch = "gfx942"}
// PAGED: %k = "rock.deref"(%k_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
// PAGED: %v = "rock.deref"(%v_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
// PAGED: "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2,
// PAGED-NEXT: causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}

// DENSE-LABEL: func.func @paged_attention(%q: memref<1x4x8x64xbf16>, %k: memref<1x4x32x64xbf16>, %v: memref<1x4x32x64xbf16>, %out: memref<1x4x8x64xbf16>)
// DENSE-NOT: rock.deref
// DENSE: causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>

// VERIFIED: "rock.attention"
// VERIFIED-SAME: memref<1x3x1024xf32>

// GQA: pagedir-gen: error: --num-heads-q 6 must be a multiple of --num-heads-kv 4
// A capacity that is not a whole number of pages: the last page is partly filled, the deref states it.
// PAGES: %k = "rock.deref"(%k_table) {seq_len_k = 40} : (memref<2x3x1xi64>) -> memref<2x3x2048xf16>

// BLOCKS-LABEL: func.func @paged_attention(%q: memref<2x8x1x128xf16>, %k_cache: memref<14x16x2x128xf16>, %v_cache: memref<14x16x2x128xf16>, %block_table: memref<2x7xi32>, %seq_lens: memref<2xi32>, %out: memref<2x8x1x128xf16>)
// BLOCKS: %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// BLOCKS-NEXT: : (memref<14x16x2x128xf16>, memref<2x7xi32>) -> memref<2x14x2048xf16>
// BLOCKS: "rock.attention"(%q, %k, %v, %seq_lens, %out)

// CSR-LABEL: func.func @paged_attention(%q: memref<2x8x1x128xf16>, %k_cache: memref<20x2x16x128xf16>, %v_cache: memref<20x2x16x128xf16>, %kv_indptr: memref<3xi32>, %kv_indices: memref<8xi32>, %kv_last_page_len: memref<2xi32>, %out: memref<2x8x1x128xf16>)
// CSR: %k = "rock.block_table_view"(%k_cache, %kv_indices, %kv_indptr, %kv_last_page_len) {layout = "hnd", operandSegmentSizes = array<i32: 1, 1, 1, 1>}
// CSR: "rock.attention"(%q, %k, %v, %out)
// CSR-NEXT: operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>

// A pool smaller than the table addresses (a server's pool, sized by memory): ids outside it are null pages.
// FEW-BLOCKS: func.func @paged_attention(%q: memref<2x8x1x128xf16>, %k_cache: memref<3x16x2x128xf16>, %v_cache: memref<3x16x2x128xf16>, %block_table: memref<2x4xi32>
// POINTER-BLOCKS: pagedir-gen: error: --num-blocks sizes the cache pools of --page-table blocks or csr

// VARLEN-LABEL: func.func @paged_attention(%q: memref<8x8x128xf16>, %cu_seqlens_q: memref<3xi32>, %k_cache: memref<8x16x2x128xf16>, %v_cache: memref<8x16x2x128xf16>, %block_table: memref<2x4xi32>, %seq_lens: memref<2xi32>, %out: memref<8x8x128xf16>)
// VARLEN: %q_padded = "rock.varlen_view"(%q, %cu_seqlens_q) : (memref<8x8x128xf16>, memref<3xi32>) -> memref<2x8x4x128xf16>
// VARLEN: %out_padded = "rock.varlen_view"(%out, %cu_seqlens_q)
// VARLEN: "rock.attention"(%q_padded, %k, %v, %seq_lens, %out_padded)
// Pointer tables and dense K/V: --varlen implies seq_lens (each sequence's keys).
// VARLEN-POINTERS-LABEL: func.func @paged_attention(%q: memref<8x8x128xf16>, %cu_seqlens_q: memref<3xi32>, %k_table: memref<2x8x1xi64>, %v_table: memref<2x8x1xi64>, %seq_lens: memref<2xi32>, %out: memref<8x8x128xf16>)
// VARLEN-POINTERS: %q_padded = "rock.varlen_view"(%q, %cu_seqlens_q) : (memref<8x8x128xf16>, memref<3xi32>) -> memref<2x8x4x128xf16>
// VARLEN-POINTERS: %out_padded = "rock.varlen_view"(%out, %cu_seqlens_q)
// VARLEN-POINTERS: %k = "rock.deref"(%k_table)
// VARLEN-POINTERS: "rock.attention"(%q_padded, %k, %v, %seq_lens, %out_padded)
// VARLEN-DENSE-LABEL: func.func @paged_attention(%q: memref<?x8x128xf16>, %cu_seqlens_q: memref<?xi32>, %k: memref<?x2x64x128xf16>, %v: memref<?x2x64x128xf16>, %seq_lens: memref<?xi32>, %out: memref<?x8x128xf16>)
// VARLEN-DENSE: "rock.varlen_view"(%q, %cu_seqlens_q) : (memref<?x8x128xf16>, memref<?xi32>) -> memref<?x8x1x128xf16>
// VARLEN-DENSE: "rock.attention"(%q_padded, %k, %v, %seq_lens, %out_padded)
// CSR-LENS: pagedir-gen: error: --seq-lens: csr page tables carry the lengths (kv_indptr and kv_last_page_len)
// SCALE: pagedir-gen: error: argument --scale: nan is not a finite positive f32 value (1.1754943508222875e-38 .. 3.4028234663852886e+38)
// NAME: pagedir-gen: error: --name '1abc' is not a valid symbol name: use letters, digits, '_', '$' or '.', not starting with a digit
// HUGE: pagedir-gen: error: --batch 1099511627776 exceeds the 32-bit index limit (2147483647)
// TENSOR: pagedir-gen: error: the paged k and v 4096x8192x2048xf16 holds 68719476736 elements (137438953472 bytes); a kernel tensor is limited to 2147483647 elements and 4294967295 bytes (32-bit indices and buffer ranges)
