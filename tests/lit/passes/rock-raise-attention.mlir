// RUN: pagedir-opt %s --rock-raise-attention --split-input-file | FileCheck %s
// RUN: pagedir-opt %s --rock-raise-attention=explain=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=QUIET --allow-empty

// Payloads from pagedir-gen linalg-attention (small sizes): every recognised form becomes
// rock.attention on the function's own memrefs, the tensor ops are erased and the function
// becomes a rock.kernel. Nothing raised here gets a remark.
// QUIET-NOT: remark

// Q K^T and P V as linalg.generic contractions, the safe softmax as generics, scale by mulf.
// CHECK-LABEL: func.func @dense_generic
// CHECK-SAME: (%[[Q:.+]]: memref<1x2x1x8xf32>, %[[K:.+]]: memref<1x1x4x8xf32>, %[[V:.+]]: memref<1x1x4x8xf32>, %[[OUT:.+]]: memref<1x2x1x8xf32>)
// CHECK-SAME: rock.kernel
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[OUT]])
// CHECK-SAME: causal = false, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.353553385 : f32
// CHECK-NEXT: return
func.func @dense_generic(%q: memref<1x2x1x8xf32>, %k: memref<1x1x4x8xf32>, %v: memref<1x1x4x8xf32>, %out: memref<1x2x1x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x1x8xf32> to tensor<1x2x1x8xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %kt = bufferization.to_tensor %k restrict : memref<1x1x4x8xf32> to tensor<1x1x4x8xf32>
  %empty1 = tensor.empty() : tensor<1x1x2x4x8xf32>
  %repeated2 = linalg.broadcast ins(%kt : tensor<1x1x4x8xf32>) outs(%empty1 : tensor<1x1x2x4x8xf32>) dimensions = [2]
  %heads3 = tensor.collapse_shape %repeated2 [[0], [1, 2], [3], [4]] : tensor<1x1x2x4x8xf32> into tensor<1x2x4x8xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x1x4x8xf32> to tensor<1x1x4x8xf32>
  %empty4 = tensor.empty() : tensor<1x1x2x4x8xf32>
  %repeated5 = linalg.broadcast ins(%vt : tensor<1x1x4x8xf32>) outs(%empty4 : tensor<1x1x2x4x8xf32>) dimensions = [2]
  %heads6 = tensor.collapse_shape %repeated5 [[0], [1, 2], [3], [4]] : tensor<1x1x2x4x8xf32> into tensor<1x2x4x8xf32>
  %empty7 = tensor.empty() : tensor<1x2x1x4xf32>
  %init8 = linalg.fill ins(%zero : f32) outs(%empty7 : tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %mm9 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads3 : tensor<1x2x1x8xf32>, tensor<1x2x4x8xf32>) outs(%init8 : tensor<1x2x1x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x1x4xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty10 = tensor.empty() : tensor<1x2x1x4xf32>
  %ew11 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm9 : tensor<1x2x1x4xf32>) outs(%empty10 : tensor<1x2x1x4xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x4xf32>
  %empty12 = tensor.empty() : tensor<1x2x1xf32>
  %init13 = linalg.fill ins(%neg_inf : f32) outs(%empty12 : tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %row14 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew11 : tensor<1x2x1x4xf32>) outs(%init13 : tensor<1x2x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1xf32>
  %empty15 = tensor.empty() : tensor<1x2x1x4xf32>
  %ew16 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew11, %row14 : tensor<1x2x1x4xf32>, tensor<1x2x1xf32>) outs(%empty15 : tensor<1x2x1x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x4xf32>
  %empty17 = tensor.empty() : tensor<1x2x1xf32>
  %init18 = linalg.fill ins(%zero : f32) outs(%empty17 : tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %row19 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew16 : tensor<1x2x1x4xf32>) outs(%init18 : tensor<1x2x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1xf32>
  %empty20 = tensor.empty() : tensor<1x2x1x4xf32>
  %ew21 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew16, %row19 : tensor<1x2x1x4xf32>, tensor<1x2x1xf32>) outs(%empty20 : tensor<1x2x1x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x4xf32>
  %empty22 = tensor.empty() : tensor<1x2x1x8xf32>
  %init23 = linalg.fill ins(%zero : f32) outs(%empty22 : tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %mm24 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ew21, %heads6 : tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) outs(%init23 : tensor<1x2x1x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x1x8xf32>
  bufferization.materialize_in_destination %mm24 in restrict writable %out : (tensor<1x2x1x8xf32>, memref<1x2x1x8xf32>) -> ()
  return
}

// -----

// GQA by linalg.broadcast + tensor.collapse_shape (repeat_interleave), f16 with extf/truncf,
// causal and seq_len masks as arith.select of -inf on linalg.index and seq_lens[b].
// CHECK-LABEL: func.func @gqa_causal_seq_lens
// CHECK-SAME: (%[[Q:.+]]: memref<1x4x2x8xf16>, %[[K:.+]]: memref<1x2x4x8xf16>, %[[V:.+]]: memref<1x2x4x8xf16>, %[[LENS:.+]]: memref<1xi32>, %[[OUT:.+]]: memref<1x4x2x8xf16>)
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[LENS]], %[[OUT]])
// CHECK-SAME: causal = true, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>
// CHECK-NEXT: return
func.func @gqa_causal_seq_lens(%q: memref<1x4x2x8xf16>, %k: memref<1x2x4x8xf16>, %v: memref<1x2x4x8xf16>, %seq_lens: memref<1xi32>, %out: memref<1x4x2x8xf16>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<1x4x2x8xf16> to tensor<1x4x2x8xf16>
  %lens = bufferization.to_tensor %seq_lens restrict : memref<1xi32> to tensor<1xi32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %kt = bufferization.to_tensor %k restrict : memref<1x2x4x8xf16> to tensor<1x2x4x8xf16>
  %empty1 = tensor.empty() : tensor<1x2x2x4x8xf16>
  %repeated2 = linalg.broadcast ins(%kt : tensor<1x2x4x8xf16>) outs(%empty1 : tensor<1x2x2x4x8xf16>) dimensions = [2]
  %heads3 = tensor.collapse_shape %repeated2 [[0], [1, 2], [3], [4]] : tensor<1x2x2x4x8xf16> into tensor<1x4x4x8xf16>
  %vt = bufferization.to_tensor %v restrict : memref<1x2x4x8xf16> to tensor<1x2x4x8xf16>
  %empty4 = tensor.empty() : tensor<1x2x2x4x8xf16>
  %repeated5 = linalg.broadcast ins(%vt : tensor<1x2x4x8xf16>) outs(%empty4 : tensor<1x2x2x4x8xf16>) dimensions = [2]
  %heads6 = tensor.collapse_shape %repeated5 [[0], [1, 2], [3], [4]] : tensor<1x2x2x4x8xf16> into tensor<1x4x4x8xf16>
  %empty7 = tensor.empty() : tensor<1x4x2x4xf32>
  %init8 = linalg.fill ins(%zero : f32) outs(%empty7 : tensor<1x4x2x4xf32>) -> tensor<1x4x2x4xf32>
  %mm9 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads3 : tensor<1x4x2x8xf16>, tensor<1x4x4x8xf16>) outs(%init8 : tensor<1x4x2x4xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %b : f16 to f32
    %ab = arith.mulf %a32, %b32 : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x4x2x4xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty10 = tensor.empty() : tensor<1x4x2x4xf32>
  %ew11 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm9 : tensor<1x4x2x4xf32>) outs(%empty10 : tensor<1x4x2x4xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<1x4x2x4xf32>
  %empty12 = tensor.empty() : tensor<1x4x2x4xf32>
  %ew13 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew11 : tensor<1x4x2x4xf32>) outs(%empty12 : tensor<1x4x2x4xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %len32 = tensor.extract %lens[%bi] : tensor<1xi32>
    %len = arith.index_cast %len32 : i32 to index
    %in_len = arith.cmpi slt, %j, %len : index
    %shifted = arith.addi %i, %len : index
    %sq = arith.constant 2 : index
    %last = arith.subi %shifted, %sq : index
    %causal_ok = arith.cmpi sle, %j, %last : index
    %ok = arith.andi %in_len, %causal_ok : i1
    %s = arith.select %ok, %in0, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<1x4x2x4xf32>
  %empty14 = tensor.empty() : tensor<1x4x2xf32>
  %init15 = linalg.fill ins(%neg_inf : f32) outs(%empty14 : tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %row16 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew13 : tensor<1x4x2x4xf32>) outs(%init15 : tensor<1x4x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x4x2xf32>
  %empty17 = tensor.empty() : tensor<1x4x2x4xf32>
  %ew18 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew13, %row16 : tensor<1x4x2x4xf32>, tensor<1x4x2xf32>) outs(%empty17 : tensor<1x4x2x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<1x4x2x4xf32>
  %empty19 = tensor.empty() : tensor<1x4x2xf32>
  %init20 = linalg.fill ins(%zero : f32) outs(%empty19 : tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %row21 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew18 : tensor<1x4x2x4xf32>) outs(%init20 : tensor<1x4x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x4x2xf32>
  %empty22 = tensor.empty() : tensor<1x4x2x4xf32>
  %ew23 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew18, %row21 : tensor<1x4x2x4xf32>, tensor<1x4x2xf32>) outs(%empty22 : tensor<1x4x2x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<1x4x2x4xf32>
  %empty24 = tensor.empty() : tensor<1x4x2x8xf32>
  %init25 = linalg.fill ins(%zero : f32) outs(%empty24 : tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32>
  %mm26 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ew23, %heads6 : tensor<1x4x2x4xf32>, tensor<1x4x4x8xf16>) outs(%init25 : tensor<1x4x2x8xf32>) {
  ^bb0(%a: f32, %b: f16, %acc: f32):
    %b32 = arith.extf %b : f16 to f32
    %ab = arith.mulf %a, %b32 : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x4x2x8xf32>
  %empty27 = tensor.empty() : tensor<1x4x2x8xf16>
  %ew28 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm26 : tensor<1x4x2x8xf32>) outs(%empty27 : tensor<1x4x2x8xf16>) {
  ^bb0(%in0: f32, %o: f16):
    %s = arith.truncf %in0 : f32 to f16
    linalg.yield %s : f16
  } -> tensor<1x4x2x8xf16>
  bufferization.materialize_in_destination %ew28 in restrict writable %out : (tensor<1x4x2x8xf16>, memref<1x4x2x8xf16>) -> ()
  return
}

// -----

// K/V gathered page by page through pointer tables (llvm.load of table[b, p] + s): rock.deref
// of each table; an additive 0/-inf mask; linalg.softmax over the key dim; bf16.
// CHECK-LABEL: func.func @paged_additive_linalg_softmax
// CHECK-SAME: (%[[Q:.+]]: memref<1x4x1x8xbf16>, %[[KT:.+]]: memref<1x4x1xi64>, %[[VT:.+]]: memref<1x4x1xi64>, %[[LENS:.+]]: memref<1xi32>, %[[OUT:.+]]: memref<1x4x1x8xbf16>)
// CHECK-NEXT: %[[K:.+]] = "rock.deref"(%[[KT]]) : (memref<1x4x1xi64>) -> memref<1x4x16xbf16>
// CHECK-NEXT: %[[V:.+]] = "rock.deref"(%[[VT]]) : (memref<1x4x1xi64>) -> memref<1x4x16xbf16>
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[LENS]], %[[OUT]])
// CHECK-SAME: causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64
// CHECK-NEXT: return
func.func @paged_additive_linalg_softmax(%q: memref<1x4x1x8xbf16>, %k_table: memref<1x4x1xi64>, %v_table: memref<1x4x1xi64>, %seq_lens: memref<1xi32>, %out: memref<1x4x1x8xbf16>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<1x4x1x8xbf16> to tensor<1x4x1x8xbf16>
  %lens = bufferization.to_tensor %seq_lens restrict : memref<1xi32> to tensor<1xi32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %k_ptrs = bufferization.to_tensor %k_table restrict : memref<1x4x1xi64> to tensor<1x4x1xi64>
  %empty1 = tensor.empty() : tensor<1x4x16xbf16>
  %k_pages2 = linalg.generic {indexing_maps = [affine_map<(b, p, s) -> (b, p, s)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%empty1 : tensor<1x4x16xbf16>) {
  ^bb0(%o: bf16):
    %b = linalg.index 0 : index
    %p = linalg.index 1 : index
    %s = linalg.index 2 : index
    %c0 = arith.constant 0 : index
    %page = tensor.extract %k_ptrs[%b, %p, %c0] : tensor<1x4x1xi64>
    %s64 = arith.index_cast %s : index to i64
    %bytes = arith.constant 2 : i64
    %offset = arith.muli %s64, %bytes : i64
    %address = arith.addi %page, %offset : i64
    %ptr = llvm.inttoptr %address : i64 to !llvm.ptr<1>
    %x = llvm.load %ptr : !llvm.ptr<1> -> bf16
    linalg.yield %x : bf16
  } -> tensor<1x4x16xbf16>
  %k_flat3 = tensor.collapse_shape %k_pages2 [[0], [1, 2]] : tensor<1x4x16xbf16> into tensor<1x64xbf16>
  %k_dense4 = tensor.expand_shape %k_flat3 [[0], [1, 2, 3]] output_shape [1, 2, 4, 8] : tensor<1x64xbf16> into tensor<1x2x4x8xbf16>
  %empty5 = tensor.empty() : tensor<1x2x2x4x8xbf16>
  %repeated6 = linalg.broadcast ins(%k_dense4 : tensor<1x2x4x8xbf16>) outs(%empty5 : tensor<1x2x2x4x8xbf16>) dimensions = [2]
  %heads7 = tensor.collapse_shape %repeated6 [[0], [1, 2], [3], [4]] : tensor<1x2x2x4x8xbf16> into tensor<1x4x4x8xbf16>
  %v_ptrs = bufferization.to_tensor %v_table restrict : memref<1x4x1xi64> to tensor<1x4x1xi64>
  %empty8 = tensor.empty() : tensor<1x4x16xbf16>
  %v_pages9 = linalg.generic {indexing_maps = [affine_map<(b, p, s) -> (b, p, s)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%empty8 : tensor<1x4x16xbf16>) {
  ^bb0(%o: bf16):
    %b = linalg.index 0 : index
    %p = linalg.index 1 : index
    %s = linalg.index 2 : index
    %c0 = arith.constant 0 : index
    %page = tensor.extract %v_ptrs[%b, %p, %c0] : tensor<1x4x1xi64>
    %s64 = arith.index_cast %s : index to i64
    %bytes = arith.constant 2 : i64
    %offset = arith.muli %s64, %bytes : i64
    %address = arith.addi %page, %offset : i64
    %ptr = llvm.inttoptr %address : i64 to !llvm.ptr<1>
    %x = llvm.load %ptr : !llvm.ptr<1> -> bf16
    linalg.yield %x : bf16
  } -> tensor<1x4x16xbf16>
  %v_flat10 = tensor.collapse_shape %v_pages9 [[0], [1, 2]] : tensor<1x4x16xbf16> into tensor<1x64xbf16>
  %v_dense11 = tensor.expand_shape %v_flat10 [[0], [1, 2, 3]] output_shape [1, 2, 4, 8] : tensor<1x64xbf16> into tensor<1x2x4x8xbf16>
  %empty12 = tensor.empty() : tensor<1x2x2x4x8xbf16>
  %repeated13 = linalg.broadcast ins(%v_dense11 : tensor<1x2x4x8xbf16>) outs(%empty12 : tensor<1x2x2x4x8xbf16>) dimensions = [2]
  %heads14 = tensor.collapse_shape %repeated13 [[0], [1, 2], [3], [4]] : tensor<1x2x2x4x8xbf16> into tensor<1x4x4x8xbf16>
  %empty15 = tensor.empty() : tensor<1x4x1x4xf32>
  %init16 = linalg.fill ins(%zero : f32) outs(%empty15 : tensor<1x4x1x4xf32>) -> tensor<1x4x1x4xf32>
  %mm17 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads7 : tensor<1x4x1x8xbf16>, tensor<1x4x4x8xbf16>) outs(%init16 : tensor<1x4x1x4xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %ab = arith.mulf %a32, %b32 : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x4x1x4xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty18 = tensor.empty() : tensor<1x4x1x4xf32>
  %ew19 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm17 : tensor<1x4x1x4xf32>) outs(%empty18 : tensor<1x4x1x4xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<1x4x1x4xf32>
  %empty20 = tensor.empty() : tensor<1x4x1x4xf32>
  %ew21 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%empty20 : tensor<1x4x1x4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %len32 = tensor.extract %lens[%bi] : tensor<1xi32>
    %len = arith.index_cast %len32 : i32 to index
    %in_len = arith.cmpi slt, %j, %len : index
    %s = arith.select %in_len, %zero, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<1x4x1x4xf32>
  %empty22 = tensor.empty() : tensor<1x4x1x4xf32>
  %ew23 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew19, %ew21 : tensor<1x4x1x4xf32>, tensor<1x4x1x4xf32>) outs(%empty22 : tensor<1x4x1x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<1x4x1x4xf32>
  %empty24 = tensor.empty() : tensor<1x4x1x4xf32>
  %softmax25 = linalg.softmax dimension(3) ins(%ew23 : tensor<1x4x1x4xf32>) outs(%empty24 : tensor<1x4x1x4xf32>) -> tensor<1x4x1x4xf32>
  %empty26 = tensor.empty() : tensor<1x4x1x8xf32>
  %init27 = linalg.fill ins(%zero : f32) outs(%empty26 : tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  %mm28 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%softmax25, %heads14 : tensor<1x4x1x4xf32>, tensor<1x4x4x8xbf16>) outs(%init27 : tensor<1x4x1x8xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %b32 = arith.extf %b : bf16 to f32
    %ab = arith.mulf %a, %b32 : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x4x1x8xf32>
  %empty29 = tensor.empty() : tensor<1x4x1x8xbf16>
  %ew30 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm28 : tensor<1x4x1x8xf32>) outs(%empty29 : tensor<1x4x1x8xbf16>) {
  ^bb0(%in0: f32, %o: bf16):
    %s = arith.truncf %in0 : f32 to bf16
    linalg.yield %s : bf16
  } -> tensor<1x4x1x8xbf16>
  bufferization.materialize_in_destination %ew30 in restrict writable %out : (tensor<1x4x1x8xbf16>, memref<1x4x1x8xbf16>) -> ()
  return
}

// -----

// torch-mlir's bmm: linalg.batch_matmul on [B*H, ...] collapses, K^T by linalg.transpose;
// a causal mask without seq_lens (offset Sk - Sq) and the scale 0.5.
// CHECK-LABEL: func.func @batch_matmul_causal
// CHECK-SAME: (%[[Q:.+]]: memref<1x2x4x8xf32>, %[[K:.+]]: memref<1x1x4x8xf32>, %[[V:.+]]: memref<1x1x4x8xf32>, %[[OUT:.+]]: memref<1x2x4x8xf32>)
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[OUT]])
// CHECK-SAME: causal = true, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 5.000000e-01 : f32
// CHECK-NEXT: return
func.func @batch_matmul_causal(%q: memref<1x2x4x8xf32>, %k: memref<1x1x4x8xf32>, %v: memref<1x1x4x8xf32>, %out: memref<1x2x4x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x4x8xf32> to tensor<1x2x4x8xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %kt = bufferization.to_tensor %k restrict : memref<1x1x4x8xf32> to tensor<1x1x4x8xf32>
  %empty1 = tensor.empty() : tensor<1x1x2x4x8xf32>
  %repeated2 = linalg.broadcast ins(%kt : tensor<1x1x4x8xf32>) outs(%empty1 : tensor<1x1x2x4x8xf32>) dimensions = [2]
  %heads3 = tensor.collapse_shape %repeated2 [[0], [1, 2], [3], [4]] : tensor<1x1x2x4x8xf32> into tensor<1x2x4x8xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x1x4x8xf32> to tensor<1x1x4x8xf32>
  %empty4 = tensor.empty() : tensor<1x1x2x4x8xf32>
  %repeated5 = linalg.broadcast ins(%vt : tensor<1x1x4x8xf32>) outs(%empty4 : tensor<1x1x2x4x8xf32>) dimensions = [2]
  %heads6 = tensor.collapse_shape %repeated5 [[0], [1, 2], [3], [4]] : tensor<1x1x2x4x8xf32> into tensor<1x2x4x8xf32>
  %empty7 = tensor.empty() : tensor<1x2x4x4xf32>
  %init8 = linalg.fill ins(%zero : f32) outs(%empty7 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %lhs9 = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %rhs10 = tensor.collapse_shape %heads3 [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %empty11 = tensor.empty() : tensor<2x8x4xf32>
  %kt12 = linalg.transpose ins(%rhs10 : tensor<2x4x8xf32>) outs(%empty11 : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %acc13 = tensor.collapse_shape %init8 [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %bmm14 = linalg.batch_matmul ins(%lhs9, %kt12 : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%acc13 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %mm15 = tensor.expand_shape %bmm14 [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %scale = arith.constant 0.5 : f32
  %empty16 = tensor.empty() : tensor<1x2x4x4xf32>
  %ew17 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm15 : tensor<1x2x4x4xf32>) outs(%empty16 : tensor<1x2x4x4xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  %empty18 = tensor.empty() : tensor<1x2x4x4xf32>
  %ew19 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew17 : tensor<1x2x4x4xf32>) outs(%empty18 : tensor<1x2x4x4xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %len = arith.constant 4 : index
    %shifted = arith.addi %i, %len : index
    %sq = arith.constant 4 : index
    %last = arith.subi %shifted, %sq : index
    %causal_ok = arith.cmpi sle, %j, %last : index
    %s = arith.select %causal_ok, %in0, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  %empty20 = tensor.empty() : tensor<1x2x4xf32>
  %init21 = linalg.fill ins(%neg_inf : f32) outs(%empty20 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %row22 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew19 : tensor<1x2x4x4xf32>) outs(%init21 : tensor<1x2x4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4xf32>
  %empty23 = tensor.empty() : tensor<1x2x4x4xf32>
  %ew24 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew19, %row22 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%empty23 : tensor<1x2x4x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  %empty25 = tensor.empty() : tensor<1x2x4xf32>
  %init26 = linalg.fill ins(%zero : f32) outs(%empty25 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %row27 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew24 : tensor<1x2x4x4xf32>) outs(%init26 : tensor<1x2x4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4xf32>
  %empty28 = tensor.empty() : tensor<1x2x4x4xf32>
  %ew29 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew24, %row27 : tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) outs(%empty28 : tensor<1x2x4x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  %empty30 = tensor.empty() : tensor<1x2x4x8xf32>
  %init31 = linalg.fill ins(%zero : f32) outs(%empty30 : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %lhs32 = tensor.collapse_shape %ew29 [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %rhs33 = tensor.collapse_shape %heads6 [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %acc34 = tensor.collapse_shape %init31 [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %bmm35 = linalg.batch_matmul ins(%lhs32, %rhs33 : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%acc34 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %mm36 = tensor.expand_shape %bmm35 [[0, 1], [2], [3]] output_shape [1, 2, 4, 8] : tensor<2x4x8xf32> into tensor<1x2x4x8xf32>
  bufferization.materialize_in_destination %mm36 in restrict writable %out : (tensor<1x2x4x8xf32>, memref<1x2x4x8xf32>) -> ()
  return
}

// -----

// vLLM's block table: pool[block_table] as torch-mlir lowers aten.index.Tensor (the ids an input of
// the gather), an nhd pool [num_blocks, block, Hkv, D] reshaped to [B, Hkv, Sk, D]; seq_lens mask.
// CHECK-LABEL: func.func @blocks_nhd
// CHECK-SAME: (%[[Q:.+]]: memref<2x2x1x8xf32>, %[[KC:.+]]: memref<4x4x1x8xf32>, %[[VC:.+]]: memref<4x4x1x8xf32>, %[[TABLE:.+]]: memref<2x2xi32>, %[[LENS:.+]]: memref<2xi32>, %[[OUT:.+]]: memref<2x2x1x8xf32>)
// CHECK-SAME: rock.kernel
// CHECK-NEXT: %[[K:.+]] = "rock.block_table_view"(%[[KC]], %[[TABLE]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x4x1x8xf32>, memref<2x2xi32>) -> memref<2x2x32xf32>
// CHECK-NEXT: %[[V:.+]] = "rock.block_table_view"(%[[VC]], %[[TABLE]]) {layout = "nhd"
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[LENS]], %[[OUT]])
// CHECK-SAME: causal = false, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>
// CHECK-NEXT: return
func.func @blocks_nhd(%q: memref<2x2x1x8xf32>, %k_cache: memref<4x4x1x8xf32>, %v_cache: memref<4x4x1x8xf32>, %block_table: memref<2x2xi32>, %seq_lens: memref<2xi32>, %out: memref<2x2x1x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<2x2x1x8xf32> to tensor<2x2x1x8xf32>
  %lens = bufferization.to_tensor %seq_lens restrict : memref<2xi32> to tensor<2xi32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %block_table_t = bufferization.to_tensor %block_table restrict : memref<2x2xi32> to tensor<2x2xi32>
  %k_pool = bufferization.to_tensor %k_cache restrict : memref<4x4x1x8xf32> to tensor<4x4x1x8xf32>
  %empty1 = tensor.empty() : tensor<2x2x4x1x8xf32>
  %k_blocks2 = linalg.generic {indexing_maps = [affine_map<(b, m, x, y, d) -> (b, m)>, affine_map<(b, m, x, y, d) -> (b, m, x, y, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%block_table_t : tensor<2x2xi32>) outs(%empty1 : tensor<2x2x4x1x8xf32>) {
  ^bb0(%id32: i32, %o: f32):
    %id = arith.index_cast %id32 : i32 to index
    %x = linalg.index 2 : index
    %y = linalg.index 3 : index
    %d = linalg.index 4 : index
    %e = tensor.extract %k_pool[%id, %x, %y, %d] : tensor<4x4x1x8xf32>
    linalg.yield %e : f32
  } -> tensor<2x2x4x1x8xf32>
  %k_tokens3 = tensor.collapse_shape %k_blocks2 [[0], [1, 2], [3], [4]] : tensor<2x2x4x1x8xf32> into tensor<2x8x1x8xf32>
  %empty4 = tensor.empty() : tensor<2x1x8x8xf32>
  %k_dense5 = linalg.transpose ins(%k_tokens3 : tensor<2x8x1x8xf32>) outs(%empty4 : tensor<2x1x8x8xf32>) permutation = [0, 2, 1, 3]
  %empty6 = tensor.empty() : tensor<2x1x2x8x8xf32>
  %repeated7 = linalg.broadcast ins(%k_dense5 : tensor<2x1x8x8xf32>) outs(%empty6 : tensor<2x1x2x8x8xf32>) dimensions = [2]
  %heads8 = tensor.collapse_shape %repeated7 [[0], [1, 2], [3], [4]] : tensor<2x1x2x8x8xf32> into tensor<2x2x8x8xf32>
  %v_pool = bufferization.to_tensor %v_cache restrict : memref<4x4x1x8xf32> to tensor<4x4x1x8xf32>
  %empty9 = tensor.empty() : tensor<2x2x4x1x8xf32>
  %v_blocks10 = linalg.generic {indexing_maps = [affine_map<(b, m, x, y, d) -> (b, m)>, affine_map<(b, m, x, y, d) -> (b, m, x, y, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%block_table_t : tensor<2x2xi32>) outs(%empty9 : tensor<2x2x4x1x8xf32>) {
  ^bb0(%id32: i32, %o: f32):
    %id = arith.index_cast %id32 : i32 to index
    %x = linalg.index 2 : index
    %y = linalg.index 3 : index
    %d = linalg.index 4 : index
    %e = tensor.extract %v_pool[%id, %x, %y, %d] : tensor<4x4x1x8xf32>
    linalg.yield %e : f32
  } -> tensor<2x2x4x1x8xf32>
  %v_tokens11 = tensor.collapse_shape %v_blocks10 [[0], [1, 2], [3], [4]] : tensor<2x2x4x1x8xf32> into tensor<2x8x1x8xf32>
  %empty12 = tensor.empty() : tensor<2x1x8x8xf32>
  %v_dense13 = linalg.transpose ins(%v_tokens11 : tensor<2x8x1x8xf32>) outs(%empty12 : tensor<2x1x8x8xf32>) permutation = [0, 2, 1, 3]
  %empty14 = tensor.empty() : tensor<2x1x2x8x8xf32>
  %repeated15 = linalg.broadcast ins(%v_dense13 : tensor<2x1x8x8xf32>) outs(%empty14 : tensor<2x1x2x8x8xf32>) dimensions = [2]
  %heads16 = tensor.collapse_shape %repeated15 [[0], [1, 2], [3], [4]] : tensor<2x1x2x8x8xf32> into tensor<2x2x8x8xf32>
  %empty17 = tensor.empty() : tensor<2x2x1x8xf32>
  %init18 = linalg.fill ins(%zero : f32) outs(%empty17 : tensor<2x2x1x8xf32>) -> tensor<2x2x1x8xf32>
  %mm19 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads8 : tensor<2x2x1x8xf32>, tensor<2x2x8x8xf32>) outs(%init18 : tensor<2x2x1x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<2x2x1x8xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty20 = tensor.empty() : tensor<2x2x1x8xf32>
  %ew21 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm19 : tensor<2x2x1x8xf32>) outs(%empty20 : tensor<2x2x1x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1x8xf32>
  %empty22 = tensor.empty() : tensor<2x2x1x8xf32>
  %ew23 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew21 : tensor<2x2x1x8xf32>) outs(%empty22 : tensor<2x2x1x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %len32 = tensor.extract %lens[%bi] : tensor<2xi32>
    %len = arith.index_cast %len32 : i32 to index
    %in_len = arith.cmpi slt, %j, %len : index
    %s = arith.select %in_len, %in0, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1x8xf32>
  %empty24 = tensor.empty() : tensor<2x2x1xf32>
  %init25 = linalg.fill ins(%neg_inf : f32) outs(%empty24 : tensor<2x2x1xf32>) -> tensor<2x2x1xf32>
  %row26 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew23 : tensor<2x2x1x8xf32>) outs(%init25 : tensor<2x2x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1xf32>
  %empty27 = tensor.empty() : tensor<2x2x1x8xf32>
  %ew28 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew23, %row26 : tensor<2x2x1x8xf32>, tensor<2x2x1xf32>) outs(%empty27 : tensor<2x2x1x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1x8xf32>
  %empty29 = tensor.empty() : tensor<2x2x1xf32>
  %init30 = linalg.fill ins(%zero : f32) outs(%empty29 : tensor<2x2x1xf32>) -> tensor<2x2x1xf32>
  %row31 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew28 : tensor<2x2x1x8xf32>) outs(%init30 : tensor<2x2x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1xf32>
  %empty32 = tensor.empty() : tensor<2x2x1x8xf32>
  %ew33 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew28, %row31 : tensor<2x2x1x8xf32>, tensor<2x2x1xf32>) outs(%empty32 : tensor<2x2x1x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1x8xf32>
  %empty34 = tensor.empty() : tensor<2x2x1x8xf32>
  %init35 = linalg.fill ins(%zero : f32) outs(%empty34 : tensor<2x2x1x8xf32>) -> tensor<2x2x1x8xf32>
  %mm36 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ew33, %heads16 : tensor<2x2x1x8xf32>, tensor<2x2x8x8xf32>) outs(%init35 : tensor<2x2x1x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<2x2x1x8xf32>
  bufferization.materialize_in_destination %mm36 in restrict writable %out : (tensor<2x2x1x8xf32>, memref<2x2x1x8xf32>) -> ()
  return
}

// -----

// The block id as tensor.extract %table[b, m], an hnd pool [num_blocks, Hkv, block, D] (transposed
// then collapsed), causal.
// CHECK-LABEL: func.func @blocks_hnd_extract
// CHECK-SAME: (%[[Q:.+]]: memref<2x2x2x8xf32>, %[[KC:.+]]: memref<4x1x4x8xf32>, %[[VC:.+]]: memref<4x1x4x8xf32>, %[[TABLE:.+]]: memref<2x2xi32>, %[[LENS:.+]]: memref<2xi32>, %[[OUT:.+]]: memref<2x2x2x8xf32>)
// CHECK-NEXT: %[[K:.+]] = "rock.block_table_view"(%[[KC]], %[[TABLE]]) {layout = "hnd"
// CHECK-NEXT: %[[V:.+]] = "rock.block_table_view"(%[[VC]], %[[TABLE]]) {layout = "hnd"
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[LENS]], %[[OUT]])
// CHECK-SAME: causal = true
func.func @blocks_hnd_extract(%q: memref<2x2x2x8xf32>, %k_cache: memref<4x1x4x8xf32>, %v_cache: memref<4x1x4x8xf32>, %block_table: memref<2x2xi32>, %seq_lens: memref<2xi32>, %out: memref<2x2x2x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<2x2x2x8xf32> to tensor<2x2x2x8xf32>
  %lens = bufferization.to_tensor %seq_lens restrict : memref<2xi32> to tensor<2xi32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %block_table_t = bufferization.to_tensor %block_table restrict : memref<2x2xi32> to tensor<2x2xi32>
  %k_pool = bufferization.to_tensor %k_cache restrict : memref<4x1x4x8xf32> to tensor<4x1x4x8xf32>
  %empty1 = tensor.empty() : tensor<2x2x1x4x8xf32>
  %k_blocks2 = linalg.generic {indexing_maps = [affine_map<(b, m, x, y, d) -> (b, m, x, y, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%empty1 : tensor<2x2x1x4x8xf32>) {
  ^bb0(%o: f32):
    %b = linalg.index 0 : index
    %m = linalg.index 1 : index
    %id32 = tensor.extract %block_table_t[%b, %m] : tensor<2x2xi32>
    %id = arith.index_cast %id32 : i32 to index
    %x = linalg.index 2 : index
    %y = linalg.index 3 : index
    %d = linalg.index 4 : index
    %e = tensor.extract %k_pool[%id, %x, %y, %d] : tensor<4x1x4x8xf32>
    linalg.yield %e : f32
  } -> tensor<2x2x1x4x8xf32>
  %empty3 = tensor.empty() : tensor<2x1x2x4x8xf32>
  %k_heads4 = linalg.transpose ins(%k_blocks2 : tensor<2x2x1x4x8xf32>) outs(%empty3 : tensor<2x1x2x4x8xf32>) permutation = [0, 2, 1, 3, 4]
  %k_dense5 = tensor.collapse_shape %k_heads4 [[0], [1], [2, 3], [4]] : tensor<2x1x2x4x8xf32> into tensor<2x1x8x8xf32>
  %empty6 = tensor.empty() : tensor<2x1x2x8x8xf32>
  %repeated7 = linalg.broadcast ins(%k_dense5 : tensor<2x1x8x8xf32>) outs(%empty6 : tensor<2x1x2x8x8xf32>) dimensions = [2]
  %heads8 = tensor.collapse_shape %repeated7 [[0], [1, 2], [3], [4]] : tensor<2x1x2x8x8xf32> into tensor<2x2x8x8xf32>
  %v_pool = bufferization.to_tensor %v_cache restrict : memref<4x1x4x8xf32> to tensor<4x1x4x8xf32>
  %empty9 = tensor.empty() : tensor<2x2x1x4x8xf32>
  %v_blocks10 = linalg.generic {indexing_maps = [affine_map<(b, m, x, y, d) -> (b, m, x, y, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%empty9 : tensor<2x2x1x4x8xf32>) {
  ^bb0(%o: f32):
    %b = linalg.index 0 : index
    %m = linalg.index 1 : index
    %id32 = tensor.extract %block_table_t[%b, %m] : tensor<2x2xi32>
    %id = arith.index_cast %id32 : i32 to index
    %x = linalg.index 2 : index
    %y = linalg.index 3 : index
    %d = linalg.index 4 : index
    %e = tensor.extract %v_pool[%id, %x, %y, %d] : tensor<4x1x4x8xf32>
    linalg.yield %e : f32
  } -> tensor<2x2x1x4x8xf32>
  %empty11 = tensor.empty() : tensor<2x1x2x4x8xf32>
  %v_heads12 = linalg.transpose ins(%v_blocks10 : tensor<2x2x1x4x8xf32>) outs(%empty11 : tensor<2x1x2x4x8xf32>) permutation = [0, 2, 1, 3, 4]
  %v_dense13 = tensor.collapse_shape %v_heads12 [[0], [1], [2, 3], [4]] : tensor<2x1x2x4x8xf32> into tensor<2x1x8x8xf32>
  %empty14 = tensor.empty() : tensor<2x1x2x8x8xf32>
  %repeated15 = linalg.broadcast ins(%v_dense13 : tensor<2x1x8x8xf32>) outs(%empty14 : tensor<2x1x2x8x8xf32>) dimensions = [2]
  %heads16 = tensor.collapse_shape %repeated15 [[0], [1, 2], [3], [4]] : tensor<2x1x2x8x8xf32> into tensor<2x2x8x8xf32>
  %empty17 = tensor.empty() : tensor<2x2x2x8xf32>
  %init18 = linalg.fill ins(%zero : f32) outs(%empty17 : tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xf32>
  %mm19 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads8 : tensor<2x2x2x8xf32>, tensor<2x2x8x8xf32>) outs(%init18 : tensor<2x2x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<2x2x2x8xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty20 = tensor.empty() : tensor<2x2x2x8xf32>
  %ew21 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm19 : tensor<2x2x2x8xf32>) outs(%empty20 : tensor<2x2x2x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2x8xf32>
  %empty22 = tensor.empty() : tensor<2x2x2x8xf32>
  %ew23 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew21 : tensor<2x2x2x8xf32>) outs(%empty22 : tensor<2x2x2x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %len32 = tensor.extract %lens[%bi] : tensor<2xi32>
    %len = arith.index_cast %len32 : i32 to index
    %in_len = arith.cmpi slt, %j, %len : index
    %shifted = arith.addi %i, %len : index
    %sq = arith.constant 2 : index
    %last = arith.subi %shifted, %sq : index
    %causal_ok = arith.cmpi sle, %j, %last : index
    %ok = arith.andi %in_len, %causal_ok : i1
    %s = arith.select %ok, %in0, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2x8xf32>
  %empty24 = tensor.empty() : tensor<2x2x2xf32>
  %init25 = linalg.fill ins(%neg_inf : f32) outs(%empty24 : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %row26 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew23 : tensor<2x2x2x8xf32>) outs(%init25 : tensor<2x2x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2xf32>
  %empty27 = tensor.empty() : tensor<2x2x2x8xf32>
  %ew28 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew23, %row26 : tensor<2x2x2x8xf32>, tensor<2x2x2xf32>) outs(%empty27 : tensor<2x2x2x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2x8xf32>
  %empty29 = tensor.empty() : tensor<2x2x2xf32>
  %init30 = linalg.fill ins(%zero : f32) outs(%empty29 : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %row31 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew28 : tensor<2x2x2x8xf32>) outs(%init30 : tensor<2x2x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2xf32>
  %empty32 = tensor.empty() : tensor<2x2x2x8xf32>
  %ew33 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew28, %row31 : tensor<2x2x2x8xf32>, tensor<2x2x2xf32>) outs(%empty32 : tensor<2x2x2x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2x8xf32>
  %empty34 = tensor.empty() : tensor<2x2x2x8xf32>
  %init35 = linalg.fill ins(%zero : f32) outs(%empty34 : tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xf32>
  %mm36 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ew33, %heads16 : tensor<2x2x2x8xf32>, tensor<2x2x8x8xf32>) outs(%init35 : tensor<2x2x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<2x2x2x8xf32>
  bufferization.materialize_in_destination %mm36 in restrict writable %out : (tensor<2x2x2x8xf32>, memref<2x2x2x8xf32>) -> ()
  return
}

// -----

// FlashInfer's CSR table: pool[kv_indices[min(kv_indptr[b] + m, nnz - 1)]], keys masked past
// (kv_indptr[b + 1] - kv_indptr[b] - 1) * block + kv_last_page_len[b]: the view carries the lengths,
// rock.attention takes no seq_lens.
// CHECK-LABEL: func.func @csr_nhd
// CHECK-SAME: (%[[Q:.+]]: memref<2x2x2x8xf32>, %[[KC:.+]]: memref<4x4x1x8xf32>, %[[VC:.+]]: memref<4x4x1x8xf32>, %[[INDPTR:.+]]: memref<3xi32>, %[[INDICES:.+]]: memref<4xi32>, %[[LAST:.+]]: memref<2xi32>, %[[OUT:.+]]: memref<2x2x2x8xf32>)
// CHECK-NEXT: %[[K:.+]] = "rock.block_table_view"(%[[KC]], %[[INDICES]], %[[INDPTR]], %[[LAST]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 1, 1>}
// CHECK-NEXT: %[[V:.+]] = "rock.block_table_view"(%[[VC]], %[[INDICES]], %[[INDPTR]], %[[LAST]]) {layout = "nhd"
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[OUT]])
// CHECK-SAME: causal = true, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>
func.func @csr_nhd(%q: memref<2x2x2x8xf32>, %k_cache: memref<4x4x1x8xf32>, %v_cache: memref<4x4x1x8xf32>, %kv_indptr: memref<3xi32>, %kv_indices: memref<4xi32>, %kv_last_page_len: memref<2xi32>, %out: memref<2x2x2x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<2x2x2x8xf32> to tensor<2x2x2x8xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %kv_indptr_t = bufferization.to_tensor %kv_indptr restrict : memref<3xi32> to tensor<3xi32>
  %kv_indices_t = bufferization.to_tensor %kv_indices restrict : memref<4xi32> to tensor<4xi32>
  %kv_last_page_len_t = bufferization.to_tensor %kv_last_page_len restrict : memref<2xi32> to tensor<2xi32>
  %k_pool = bufferization.to_tensor %k_cache restrict : memref<4x4x1x8xf32> to tensor<4x4x1x8xf32>
  %empty1 = tensor.empty() : tensor<2x2x4x1x8xf32>
  %k_blocks2 = linalg.generic {indexing_maps = [affine_map<(b, m, x, y, d) -> (b, m, x, y, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%empty1 : tensor<2x2x4x1x8xf32>) {
  ^bb0(%o: f32):
    %b = linalg.index 0 : index
    %m = linalg.index 1 : index
    %start32 = tensor.extract %kv_indptr_t[%b] : tensor<3xi32>
    %start = arith.index_cast %start32 : i32 to index
    %slot = arith.addi %start, %m : index
    %last_slot = arith.constant 3 : index
    %in_table = arith.minsi %slot, %last_slot : index
    %id32 = tensor.extract %kv_indices_t[%in_table] : tensor<4xi32>
    %id = arith.index_cast %id32 : i32 to index
    %x = linalg.index 2 : index
    %y = linalg.index 3 : index
    %d = linalg.index 4 : index
    %e = tensor.extract %k_pool[%id, %x, %y, %d] : tensor<4x4x1x8xf32>
    linalg.yield %e : f32
  } -> tensor<2x2x4x1x8xf32>
  %k_tokens3 = tensor.collapse_shape %k_blocks2 [[0], [1, 2], [3], [4]] : tensor<2x2x4x1x8xf32> into tensor<2x8x1x8xf32>
  %empty4 = tensor.empty() : tensor<2x1x8x8xf32>
  %k_dense5 = linalg.transpose ins(%k_tokens3 : tensor<2x8x1x8xf32>) outs(%empty4 : tensor<2x1x8x8xf32>) permutation = [0, 2, 1, 3]
  %empty6 = tensor.empty() : tensor<2x1x2x8x8xf32>
  %repeated7 = linalg.broadcast ins(%k_dense5 : tensor<2x1x8x8xf32>) outs(%empty6 : tensor<2x1x2x8x8xf32>) dimensions = [2]
  %heads8 = tensor.collapse_shape %repeated7 [[0], [1, 2], [3], [4]] : tensor<2x1x2x8x8xf32> into tensor<2x2x8x8xf32>
  %v_pool = bufferization.to_tensor %v_cache restrict : memref<4x4x1x8xf32> to tensor<4x4x1x8xf32>
  %empty9 = tensor.empty() : tensor<2x2x4x1x8xf32>
  %v_blocks10 = linalg.generic {indexing_maps = [affine_map<(b, m, x, y, d) -> (b, m, x, y, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%empty9 : tensor<2x2x4x1x8xf32>) {
  ^bb0(%o: f32):
    %b = linalg.index 0 : index
    %m = linalg.index 1 : index
    %start32 = tensor.extract %kv_indptr_t[%b] : tensor<3xi32>
    %start = arith.index_cast %start32 : i32 to index
    %slot = arith.addi %start, %m : index
    %last_slot = arith.constant 3 : index
    %in_table = arith.minsi %slot, %last_slot : index
    %id32 = tensor.extract %kv_indices_t[%in_table] : tensor<4xi32>
    %id = arith.index_cast %id32 : i32 to index
    %x = linalg.index 2 : index
    %y = linalg.index 3 : index
    %d = linalg.index 4 : index
    %e = tensor.extract %v_pool[%id, %x, %y, %d] : tensor<4x4x1x8xf32>
    linalg.yield %e : f32
  } -> tensor<2x2x4x1x8xf32>
  %v_tokens11 = tensor.collapse_shape %v_blocks10 [[0], [1, 2], [3], [4]] : tensor<2x2x4x1x8xf32> into tensor<2x8x1x8xf32>
  %empty12 = tensor.empty() : tensor<2x1x8x8xf32>
  %v_dense13 = linalg.transpose ins(%v_tokens11 : tensor<2x8x1x8xf32>) outs(%empty12 : tensor<2x1x8x8xf32>) permutation = [0, 2, 1, 3]
  %empty14 = tensor.empty() : tensor<2x1x2x8x8xf32>
  %repeated15 = linalg.broadcast ins(%v_dense13 : tensor<2x1x8x8xf32>) outs(%empty14 : tensor<2x1x2x8x8xf32>) dimensions = [2]
  %heads16 = tensor.collapse_shape %repeated15 [[0], [1, 2], [3], [4]] : tensor<2x1x2x8x8xf32> into tensor<2x2x8x8xf32>
  %empty17 = tensor.empty() : tensor<2x2x2x8xf32>
  %init18 = linalg.fill ins(%zero : f32) outs(%empty17 : tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xf32>
  %mm19 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads8 : tensor<2x2x2x8xf32>, tensor<2x2x8x8xf32>) outs(%init18 : tensor<2x2x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<2x2x2x8xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty20 = tensor.empty() : tensor<2x2x2x8xf32>
  %ew21 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm19 : tensor<2x2x2x8xf32>) outs(%empty20 : tensor<2x2x2x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2x8xf32>
  %empty22 = tensor.empty() : tensor<2x2x2x8xf32>
  %ew23 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew21 : tensor<2x2x2x8xf32>) outs(%empty22 : tensor<2x2x2x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %c1 = arith.constant 1 : index
    %bn = arith.addi %bi, %c1 : index
    %first32 = tensor.extract %kv_indptr_t[%bi] : tensor<3xi32>
    %end32 = tensor.extract %kv_indptr_t[%bn] : tensor<3xi32>
    %tail32 = tensor.extract %kv_last_page_len_t[%bi] : tensor<2xi32>
    %first = arith.index_cast %first32 : i32 to index
    %end = arith.index_cast %end32 : i32 to index
    %tail = arith.index_cast %tail32 : i32 to index
    %pages = arith.subi %end, %first : index
    %full = arith.subi %pages, %c1 : index
    %block = arith.constant 4 : index
    %full_tokens = arith.muli %full, %block : index
    %len = arith.addi %full_tokens, %tail : index
    %in_len = arith.cmpi slt, %j, %len : index
    %shifted = arith.addi %i, %len : index
    %sq = arith.constant 2 : index
    %last = arith.subi %shifted, %sq : index
    %causal_ok = arith.cmpi sle, %j, %last : index
    %ok = arith.andi %in_len, %causal_ok : i1
    %s = arith.select %ok, %in0, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2x8xf32>
  %empty24 = tensor.empty() : tensor<2x2x2xf32>
  %init25 = linalg.fill ins(%neg_inf : f32) outs(%empty24 : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %row26 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew23 : tensor<2x2x2x8xf32>) outs(%init25 : tensor<2x2x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2xf32>
  %empty27 = tensor.empty() : tensor<2x2x2x8xf32>
  %ew28 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew23, %row26 : tensor<2x2x2x8xf32>, tensor<2x2x2xf32>) outs(%empty27 : tensor<2x2x2x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2x8xf32>
  %empty29 = tensor.empty() : tensor<2x2x2xf32>
  %init30 = linalg.fill ins(%zero : f32) outs(%empty29 : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %row31 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew28 : tensor<2x2x2x8xf32>) outs(%init30 : tensor<2x2x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2xf32>
  %empty32 = tensor.empty() : tensor<2x2x2x8xf32>
  %ew33 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew28, %row31 : tensor<2x2x2x8xf32>, tensor<2x2x2xf32>) outs(%empty32 : tensor<2x2x2x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<2x2x2x8xf32>
  %empty34 = tensor.empty() : tensor<2x2x2x8xf32>
  %init35 = linalg.fill ins(%zero : f32) outs(%empty34 : tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xf32>
  %mm36 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ew33, %heads16 : tensor<2x2x2x8xf32>, tensor<2x2x8x8xf32>) outs(%init35 : tensor<2x2x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<2x2x2x8xf32>
  bufferization.materialize_in_destination %mm36 in restrict writable %out : (tensor<2x2x2x8xf32>, memref<2x2x2x8xf32>) -> ()
  return
}

// -----

// CSR over an hnd pool with torch-mlir's bmm, linalg.softmax and an additive length mask.
// CHECK-LABEL: func.func @csr_hnd_torch
// CHECK-SAME: (%[[Q:.+]]: memref<2x2x1x8xf32>, %[[KC:.+]]: memref<4x1x4x8xf32>, %[[VC:.+]]: memref<4x1x4x8xf32>, %[[INDPTR:.+]]: memref<3xi32>, %[[INDICES:.+]]: memref<4xi32>, %[[LAST:.+]]: memref<2xi32>, %[[OUT:.+]]: memref<2x2x1x8xf32>)
// CHECK-NEXT: %[[K:.+]] = "rock.block_table_view"(%[[KC]], %[[INDICES]], %[[INDPTR]], %[[LAST]]) {layout = "hnd"
// CHECK-NEXT: %[[V:.+]] = "rock.block_table_view"(%[[VC]], %[[INDICES]], %[[INDPTR]], %[[LAST]]) {layout = "hnd"
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[OUT]])
// CHECK-SAME: causal = false
func.func @csr_hnd_torch(%q: memref<2x2x1x8xf32>, %k_cache: memref<4x1x4x8xf32>, %v_cache: memref<4x1x4x8xf32>, %kv_indptr: memref<3xi32>, %kv_indices: memref<4xi32>, %kv_last_page_len: memref<2xi32>, %out: memref<2x2x1x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<2x2x1x8xf32> to tensor<2x2x1x8xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %kv_indptr_t = bufferization.to_tensor %kv_indptr restrict : memref<3xi32> to tensor<3xi32>
  %kv_indices_t = bufferization.to_tensor %kv_indices restrict : memref<4xi32> to tensor<4xi32>
  %kv_last_page_len_t = bufferization.to_tensor %kv_last_page_len restrict : memref<2xi32> to tensor<2xi32>
  %k_pool = bufferization.to_tensor %k_cache restrict : memref<4x1x4x8xf32> to tensor<4x1x4x8xf32>
  %empty1 = tensor.empty() : tensor<2x2x1x4x8xf32>
  %k_blocks2 = linalg.generic {indexing_maps = [affine_map<(b, m, x, y, d) -> (b, m, x, y, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%empty1 : tensor<2x2x1x4x8xf32>) {
  ^bb0(%o: f32):
    %b = linalg.index 0 : index
    %m = linalg.index 1 : index
    %start32 = tensor.extract %kv_indptr_t[%b] : tensor<3xi32>
    %start = arith.index_cast %start32 : i32 to index
    %slot = arith.addi %start, %m : index
    %last_slot = arith.constant 3 : index
    %in_table = arith.minsi %slot, %last_slot : index
    %id32 = tensor.extract %kv_indices_t[%in_table] : tensor<4xi32>
    %id = arith.index_cast %id32 : i32 to index
    %x = linalg.index 2 : index
    %y = linalg.index 3 : index
    %d = linalg.index 4 : index
    %e = tensor.extract %k_pool[%id, %x, %y, %d] : tensor<4x1x4x8xf32>
    linalg.yield %e : f32
  } -> tensor<2x2x1x4x8xf32>
  %empty3 = tensor.empty() : tensor<2x1x2x4x8xf32>
  %k_heads4 = linalg.transpose ins(%k_blocks2 : tensor<2x2x1x4x8xf32>) outs(%empty3 : tensor<2x1x2x4x8xf32>) permutation = [0, 2, 1, 3, 4]
  %k_dense5 = tensor.collapse_shape %k_heads4 [[0], [1], [2, 3], [4]] : tensor<2x1x2x4x8xf32> into tensor<2x1x8x8xf32>
  %empty6 = tensor.empty() : tensor<2x1x2x8x8xf32>
  %repeated7 = linalg.broadcast ins(%k_dense5 : tensor<2x1x8x8xf32>) outs(%empty6 : tensor<2x1x2x8x8xf32>) dimensions = [2]
  %heads8 = tensor.collapse_shape %repeated7 [[0], [1, 2], [3], [4]] : tensor<2x1x2x8x8xf32> into tensor<2x2x8x8xf32>
  %v_pool = bufferization.to_tensor %v_cache restrict : memref<4x1x4x8xf32> to tensor<4x1x4x8xf32>
  %empty9 = tensor.empty() : tensor<2x2x1x4x8xf32>
  %v_blocks10 = linalg.generic {indexing_maps = [affine_map<(b, m, x, y, d) -> (b, m, x, y, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%empty9 : tensor<2x2x1x4x8xf32>) {
  ^bb0(%o: f32):
    %b = linalg.index 0 : index
    %m = linalg.index 1 : index
    %start32 = tensor.extract %kv_indptr_t[%b] : tensor<3xi32>
    %start = arith.index_cast %start32 : i32 to index
    %slot = arith.addi %start, %m : index
    %last_slot = arith.constant 3 : index
    %in_table = arith.minsi %slot, %last_slot : index
    %id32 = tensor.extract %kv_indices_t[%in_table] : tensor<4xi32>
    %id = arith.index_cast %id32 : i32 to index
    %x = linalg.index 2 : index
    %y = linalg.index 3 : index
    %d = linalg.index 4 : index
    %e = tensor.extract %v_pool[%id, %x, %y, %d] : tensor<4x1x4x8xf32>
    linalg.yield %e : f32
  } -> tensor<2x2x1x4x8xf32>
  %empty11 = tensor.empty() : tensor<2x1x2x4x8xf32>
  %v_heads12 = linalg.transpose ins(%v_blocks10 : tensor<2x2x1x4x8xf32>) outs(%empty11 : tensor<2x1x2x4x8xf32>) permutation = [0, 2, 1, 3, 4]
  %v_dense13 = tensor.collapse_shape %v_heads12 [[0], [1], [2, 3], [4]] : tensor<2x1x2x4x8xf32> into tensor<2x1x8x8xf32>
  %empty14 = tensor.empty() : tensor<2x1x2x8x8xf32>
  %repeated15 = linalg.broadcast ins(%v_dense13 : tensor<2x1x8x8xf32>) outs(%empty14 : tensor<2x1x2x8x8xf32>) dimensions = [2]
  %heads16 = tensor.collapse_shape %repeated15 [[0], [1, 2], [3], [4]] : tensor<2x1x2x8x8xf32> into tensor<2x2x8x8xf32>
  %empty17 = tensor.empty() : tensor<2x2x1x8xf32>
  %init18 = linalg.fill ins(%zero : f32) outs(%empty17 : tensor<2x2x1x8xf32>) -> tensor<2x2x1x8xf32>
  %lhs19 = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<2x2x1x8xf32> into tensor<4x1x8xf32>
  %rhs20 = tensor.collapse_shape %heads8 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
  %empty21 = tensor.empty() : tensor<4x8x8xf32>
  %kt22 = linalg.transpose ins(%rhs20 : tensor<4x8x8xf32>) outs(%empty21 : tensor<4x8x8xf32>) permutation = [0, 2, 1]
  %acc23 = tensor.collapse_shape %init18 [[0, 1], [2], [3]] : tensor<2x2x1x8xf32> into tensor<4x1x8xf32>
  %bmm24 = linalg.batch_matmul ins(%lhs19, %kt22 : tensor<4x1x8xf32>, tensor<4x8x8xf32>) outs(%acc23 : tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
  %mm25 = tensor.expand_shape %bmm24 [[0, 1], [2], [3]] output_shape [2, 2, 1, 8] : tensor<4x1x8xf32> into tensor<2x2x1x8xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty26 = tensor.empty() : tensor<2x2x1x8xf32>
  %ew27 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm25 : tensor<2x2x1x8xf32>) outs(%empty26 : tensor<2x2x1x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1x8xf32>
  %empty28 = tensor.empty() : tensor<2x2x1x8xf32>
  %ew29 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%empty28 : tensor<2x2x1x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %c1 = arith.constant 1 : index
    %bn = arith.addi %bi, %c1 : index
    %first32 = tensor.extract %kv_indptr_t[%bi] : tensor<3xi32>
    %end32 = tensor.extract %kv_indptr_t[%bn] : tensor<3xi32>
    %tail32 = tensor.extract %kv_last_page_len_t[%bi] : tensor<2xi32>
    %first = arith.index_cast %first32 : i32 to index
    %end = arith.index_cast %end32 : i32 to index
    %tail = arith.index_cast %tail32 : i32 to index
    %pages = arith.subi %end, %first : index
    %full = arith.subi %pages, %c1 : index
    %block = arith.constant 4 : index
    %full_tokens = arith.muli %full, %block : index
    %len = arith.addi %full_tokens, %tail : index
    %in_len = arith.cmpi slt, %j, %len : index
    %s = arith.select %in_len, %zero, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1x8xf32>
  %empty30 = tensor.empty() : tensor<2x2x1x8xf32>
  %ew31 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew27, %ew29 : tensor<2x2x1x8xf32>, tensor<2x2x1x8xf32>) outs(%empty30 : tensor<2x2x1x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<2x2x1x8xf32>
  %empty32 = tensor.empty() : tensor<2x2x1x8xf32>
  %softmax33 = linalg.softmax dimension(3) ins(%ew31 : tensor<2x2x1x8xf32>) outs(%empty32 : tensor<2x2x1x8xf32>) -> tensor<2x2x1x8xf32>
  %empty34 = tensor.empty() : tensor<2x2x1x8xf32>
  %init35 = linalg.fill ins(%zero : f32) outs(%empty34 : tensor<2x2x1x8xf32>) -> tensor<2x2x1x8xf32>
  %lhs36 = tensor.collapse_shape %softmax33 [[0, 1], [2], [3]] : tensor<2x2x1x8xf32> into tensor<4x1x8xf32>
  %rhs37 = tensor.collapse_shape %heads16 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
  %acc38 = tensor.collapse_shape %init35 [[0, 1], [2], [3]] : tensor<2x2x1x8xf32> into tensor<4x1x8xf32>
  %bmm39 = linalg.batch_matmul ins(%lhs36, %rhs37 : tensor<4x1x8xf32>, tensor<4x8x8xf32>) outs(%acc38 : tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
  %mm40 = tensor.expand_shape %bmm39 [[0, 1], [2], [3]] output_shape [2, 2, 1, 8] : tensor<4x1x8xf32> into tensor<2x2x1x8xf32>
  bufferization.materialize_in_destination %mm40 in restrict writable %out : (tensor<2x2x1x8xf32>, memref<2x2x1x8xf32>) -> ()
  return
}

// -----

// Variants: a soft-cap c * tanh(s / c) after the scale and a sliding window (keys j >= i + seq_len - Sq - 2,
// a select on j) with the causal and seq_len masks.
// CHECK-LABEL: func.func @window_softcap
// CHECK-SAME: (%[[Q:.+]]: memref<1x2x2x8xf32>, %[[K:.+]]: memref<1x1x8x8xf32>, %[[V:.+]]: memref<1x1x8x8xf32>, %[[LENS:.+]]: memref<1xi32>, %[[OUT:.+]]: memref<1x2x2x8xf32>)
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[LENS]], %[[OUT]])
// CHECK-SAME: causal = true
// CHECK-SAME: softcap = 5.000000e+00 : f32, window_left = 2 : i64
func.func @window_softcap(%q: memref<1x2x2x8xf32>, %k: memref<1x1x8x8xf32>, %v: memref<1x1x8x8xf32>, %seq_lens: memref<1xi32>, %out: memref<1x2x2x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x2x8xf32> to tensor<1x2x2x8xf32>
  %lens = bufferization.to_tensor %seq_lens restrict : memref<1xi32> to tensor<1xi32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %kt = bufferization.to_tensor %k restrict : memref<1x1x8x8xf32> to tensor<1x1x8x8xf32>
  %empty1 = tensor.empty() : tensor<1x1x2x8x8xf32>
  %repeated2 = linalg.broadcast ins(%kt : tensor<1x1x8x8xf32>) outs(%empty1 : tensor<1x1x2x8x8xf32>) dimensions = [2]
  %heads3 = tensor.collapse_shape %repeated2 [[0], [1, 2], [3], [4]] : tensor<1x1x2x8x8xf32> into tensor<1x2x8x8xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x1x8x8xf32> to tensor<1x1x8x8xf32>
  %empty4 = tensor.empty() : tensor<1x1x2x8x8xf32>
  %repeated5 = linalg.broadcast ins(%vt : tensor<1x1x8x8xf32>) outs(%empty4 : tensor<1x1x2x8x8xf32>) dimensions = [2]
  %heads6 = tensor.collapse_shape %repeated5 [[0], [1, 2], [3], [4]] : tensor<1x1x2x8x8xf32> into tensor<1x2x8x8xf32>
  %empty7 = tensor.empty() : tensor<1x2x2x8xf32>
  %init8 = linalg.fill ins(%zero : f32) outs(%empty7 : tensor<1x2x2x8xf32>) -> tensor<1x2x2x8xf32>
  %mm9 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads3 : tensor<1x2x2x8xf32>, tensor<1x2x8x8xf32>) outs(%init8 : tensor<1x2x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x2x8xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty10 = tensor.empty() : tensor<1x2x2x8xf32>
  %ew11 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm9 : tensor<1x2x2x8xf32>) outs(%empty10 : tensor<1x2x2x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<1x2x2x8xf32>
  %cap = arith.constant 5.0 : f32
  %empty12 = tensor.empty() : tensor<1x2x2x8xf32>
  %ew13 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew11 : tensor<1x2x2x8xf32>) outs(%empty12 : tensor<1x2x2x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %capped = arith.divf %in0, %cap : f32
    %t = math.tanh %capped : f32
    %s = arith.mulf %t, %cap : f32
    linalg.yield %s : f32
  } -> tensor<1x2x2x8xf32>
  %empty14 = tensor.empty() : tensor<1x2x2x8xf32>
  %ew15 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew13 : tensor<1x2x2x8xf32>) outs(%empty14 : tensor<1x2x2x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %len32 = tensor.extract %lens[%bi] : tensor<1xi32>
    %len = arith.index_cast %len32 : i32 to index
    %in_len = arith.cmpi slt, %j, %len : index
    %shifted = arith.addi %i, %len : index
    %sq = arith.constant 2 : index
    %last = arith.subi %shifted, %sq : index
    %causal_ok = arith.cmpi sle, %j, %last : index
    %pos = arith.addi %i, %len : index
    %sq_w = arith.constant 4 : index
    %window_start = arith.subi %pos, %sq_w : index
    %window_ok = arith.cmpi sge, %j, %window_start : index
    %ok0 = arith.andi %in_len, %causal_ok : i1
    %ok1 = arith.andi %ok0, %window_ok : i1
    %s = arith.select %ok1, %in0, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<1x2x2x8xf32>
  %empty16 = tensor.empty() : tensor<1x2x2xf32>
  %init17 = linalg.fill ins(%neg_inf : f32) outs(%empty16 : tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %row18 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew15 : tensor<1x2x2x8xf32>) outs(%init17 : tensor<1x2x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x2xf32>
  %empty19 = tensor.empty() : tensor<1x2x2x8xf32>
  %ew20 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew15, %row18 : tensor<1x2x2x8xf32>, tensor<1x2x2xf32>) outs(%empty19 : tensor<1x2x2x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<1x2x2x8xf32>
  %empty21 = tensor.empty() : tensor<1x2x2xf32>
  %init22 = linalg.fill ins(%zero : f32) outs(%empty21 : tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %row23 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew20 : tensor<1x2x2x8xf32>) outs(%init22 : tensor<1x2x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x2xf32>
  %empty24 = tensor.empty() : tensor<1x2x2x8xf32>
  %ew25 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew20, %row23 : tensor<1x2x2x8xf32>, tensor<1x2x2xf32>) outs(%empty24 : tensor<1x2x2x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<1x2x2x8xf32>
  %empty26 = tensor.empty() : tensor<1x2x2x8xf32>
  %init27 = linalg.fill ins(%zero : f32) outs(%empty26 : tensor<1x2x2x8xf32>) -> tensor<1x2x2x8xf32>
  %mm28 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ew25, %heads6 : tensor<1x2x2x8xf32>, tensor<1x2x8x8xf32>) outs(%init27 : tensor<1x2x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x2x8xf32>
  bufferization.materialize_in_destination %mm28 in restrict writable %out : (tensor<1x2x2x8xf32>, memref<1x2x2x8xf32>) -> ()
  return
}

// -----

// ALiBi: a bias tensor slopes[h] * sitofp(j - (i + seq_len - Sq)) added to the scaled scores becomes
// the alibi_slopes operand.
// CHECK-LABEL: func.func @alibi_bias
// CHECK-SAME: (%[[Q:.+]]: memref<1x2x1x8xf32>, %[[K:.+]]: memref<1x1x8x8xf32>, %[[V:.+]]: memref<1x1x8x8xf32>, %[[LENS:.+]]: memref<1xi32>, %[[SLOPES:.+]]: memref<2xf32>, %[[OUT:.+]]: memref<1x2x1x8xf32>)
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[LENS]], %[[SLOPES]], %[[OUT]])
// CHECK-SAME: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1>
func.func @alibi_bias(%q: memref<1x2x1x8xf32>, %k: memref<1x1x8x8xf32>, %v: memref<1x1x8x8xf32>, %seq_lens: memref<1xi32>, %alibi_slopes: memref<2xf32>, %out: memref<1x2x1x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
  %qt = bufferization.to_tensor %q restrict : memref<1x2x1x8xf32> to tensor<1x2x1x8xf32>
  %lens = bufferization.to_tensor %seq_lens restrict : memref<1xi32> to tensor<1xi32>
  %slopes = bufferization.to_tensor %alibi_slopes restrict : memref<2xf32> to tensor<2xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %kt = bufferization.to_tensor %k restrict : memref<1x1x8x8xf32> to tensor<1x1x8x8xf32>
  %empty1 = tensor.empty() : tensor<1x1x2x8x8xf32>
  %repeated2 = linalg.broadcast ins(%kt : tensor<1x1x8x8xf32>) outs(%empty1 : tensor<1x1x2x8x8xf32>) dimensions = [2]
  %heads3 = tensor.collapse_shape %repeated2 [[0], [1, 2], [3], [4]] : tensor<1x1x2x8x8xf32> into tensor<1x2x8x8xf32>
  %vt = bufferization.to_tensor %v restrict : memref<1x1x8x8xf32> to tensor<1x1x8x8xf32>
  %empty4 = tensor.empty() : tensor<1x1x2x8x8xf32>
  %repeated5 = linalg.broadcast ins(%vt : tensor<1x1x8x8xf32>) outs(%empty4 : tensor<1x1x2x8x8xf32>) dimensions = [2]
  %heads6 = tensor.collapse_shape %repeated5 [[0], [1, 2], [3], [4]] : tensor<1x1x2x8x8xf32> into tensor<1x2x8x8xf32>
  %empty7 = tensor.empty() : tensor<1x2x1x8xf32>
  %init8 = linalg.fill ins(%zero : f32) outs(%empty7 : tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %mm9 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads3 : tensor<1x2x1x8xf32>, tensor<1x2x8x8xf32>) outs(%init8 : tensor<1x2x1x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x1x8xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty10 = tensor.empty() : tensor<1x2x1x8xf32>
  %ew11 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm9 : tensor<1x2x1x8xf32>) outs(%empty10 : tensor<1x2x1x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x8xf32>
  %empty12 = tensor.empty() : tensor<1x2x1x8xf32>
  %ew13 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (b)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%slopes : tensor<2xf32>) outs(%empty12 : tensor<1x2x1x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %len32 = tensor.extract %lens[%bi] : tensor<1xi32>
    %len = arith.index_cast %len32 : i32 to index
    %shifted = arith.addi %i, %len : index
    %sq = arith.constant 1 : index
    %position = arith.subi %shifted, %sq : index
    %distance = arith.subi %j, %position : index
    %distance64 = arith.index_cast %distance : index to i64
    %distance_f = arith.sitofp %distance64 : i64 to f32
    %s = arith.mulf %in0, %distance_f : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x8xf32>
  %empty14 = tensor.empty() : tensor<1x2x1x8xf32>
  %ew15 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew11, %ew13 : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>) outs(%empty14 : tensor<1x2x1x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x8xf32>
  %empty16 = tensor.empty() : tensor<1x2x1x8xf32>
  %ew17 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew15 : tensor<1x2x1x8xf32>) outs(%empty16 : tensor<1x2x1x8xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %bi = linalg.index 0 : index
    %len32 = tensor.extract %lens[%bi] : tensor<1xi32>
    %len = arith.index_cast %len32 : i32 to index
    %in_len = arith.cmpi slt, %j, %len : index
    %s = arith.select %in_len, %in0, %neg_inf : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x8xf32>
  %empty18 = tensor.empty() : tensor<1x2x1xf32>
  %init19 = linalg.fill ins(%neg_inf : f32) outs(%empty18 : tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %row20 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew17 : tensor<1x2x1x8xf32>) outs(%init19 : tensor<1x2x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1xf32>
  %empty21 = tensor.empty() : tensor<1x2x1x8xf32>
  %ew22 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew17, %row20 : tensor<1x2x1x8xf32>, tensor<1x2x1xf32>) outs(%empty21 : tensor<1x2x1x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x8xf32>
  %empty23 = tensor.empty() : tensor<1x2x1xf32>
  %init24 = linalg.fill ins(%zero : f32) outs(%empty23 : tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %row25 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew22 : tensor<1x2x1x8xf32>) outs(%init24 : tensor<1x2x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1xf32>
  %empty26 = tensor.empty() : tensor<1x2x1x8xf32>
  %ew27 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew22, %row25 : tensor<1x2x1x8xf32>, tensor<1x2x1xf32>) outs(%empty26 : tensor<1x2x1x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x8xf32>
  %empty28 = tensor.empty() : tensor<1x2x1x8xf32>
  %init29 = linalg.fill ins(%zero : f32) outs(%empty28 : tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %mm30 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ew27, %heads6 : tensor<1x2x1x8xf32>, tensor<1x2x8x8xf32>) outs(%init29 : tensor<1x2x1x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x1x8xf32>
  bufferization.materialize_in_destination %mm30 in restrict writable %out : (tensor<1x2x1x8xf32>, memref<1x2x1x8xf32>) -> ()
  return
}

// -----

// Torch style: tensors in, a tensor returned (signature.py): the tensor arguments become memrefs and the
// result one more memref argument, appended; rock.attention reads and writes them.
// CHECK-LABEL: func.func @torch_style
// CHECK-SAME: (%[[Q:.+]]: memref<1x2x1x8xf32>, %[[K:.+]]: memref<1x1x4x8xf32>, %[[V:.+]]: memref<1x1x4x8xf32>, %[[OUT:.+]]: memref<1x2x1x8xf32>)
// CHECK-SAME: rock.kernel
// CHECK-NEXT: "rock.attention"(%[[Q]], %[[K]], %[[V]], %[[OUT]])
// CHECK-NEXT: return{{$}}
func.func @torch_style(%qt: tensor<1x2x1x8xf32>, %kt: tensor<1x1x4x8xf32>, %vt: tensor<1x1x4x8xf32>) -> tensor<1x2x1x8xf32> attributes {rock.arch = "gfx942"} {
  %zero = arith.constant 0.000000e+00 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %empty1 = tensor.empty() : tensor<1x1x2x4x8xf32>
  %repeated2 = linalg.broadcast ins(%kt : tensor<1x1x4x8xf32>) outs(%empty1 : tensor<1x1x2x4x8xf32>) dimensions = [2]
  %heads3 = tensor.collapse_shape %repeated2 [[0], [1, 2], [3], [4]] : tensor<1x1x2x4x8xf32> into tensor<1x2x4x8xf32>
  %empty4 = tensor.empty() : tensor<1x1x2x4x8xf32>
  %repeated5 = linalg.broadcast ins(%vt : tensor<1x1x4x8xf32>) outs(%empty4 : tensor<1x1x2x4x8xf32>) dimensions = [2]
  %heads6 = tensor.collapse_shape %repeated5 [[0], [1, 2], [3], [4]] : tensor<1x1x2x4x8xf32> into tensor<1x2x4x8xf32>
  %empty7 = tensor.empty() : tensor<1x2x1x4xf32>
  %init8 = linalg.fill ins(%zero : f32) outs(%empty7 : tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %mm9 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qt, %heads3 : tensor<1x2x1x8xf32>, tensor<1x2x4x8xf32>) outs(%init8 : tensor<1x2x1x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x1x4xf32>
  %scale = arith.constant 0.3535533845424652 : f32
  %empty10 = tensor.empty() : tensor<1x2x1x4xf32>
  %ew11 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mm9 : tensor<1x2x1x4xf32>) outs(%empty10 : tensor<1x2x1x4xf32>) {
  ^bb0(%in0: f32, %o: f32):
    %s = arith.mulf %in0, %scale : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x4xf32>
  %empty12 = tensor.empty() : tensor<1x2x1xf32>
  %init13 = linalg.fill ins(%neg_inf : f32) outs(%empty12 : tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %row14 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew11 : tensor<1x2x1x4xf32>) outs(%init13 : tensor<1x2x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1xf32>
  %empty15 = tensor.empty() : tensor<1x2x1x4xf32>
  %ew16 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew11, %row14 : tensor<1x2x1x4xf32>, tensor<1x2x1xf32>) outs(%empty15 : tensor<1x2x1x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %d = arith.subf %in0, %in1 : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x4xf32>
  %empty17 = tensor.empty() : tensor<1x2x1xf32>
  %init18 = linalg.fill ins(%zero : f32) outs(%empty17 : tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %row19 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew16 : tensor<1x2x1x4xf32>) outs(%init18 : tensor<1x2x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1xf32>
  %empty20 = tensor.empty() : tensor<1x2x1x4xf32>
  %ew21 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ew16, %row19 : tensor<1x2x1x4xf32>, tensor<1x2x1xf32>) outs(%empty20 : tensor<1x2x1x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %o: f32):
    %s = arith.divf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<1x2x1x4xf32>
  %empty22 = tensor.empty() : tensor<1x2x1x8xf32>
  %init23 = linalg.fill ins(%zero : f32) outs(%empty22 : tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %mm24 = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ew21, %heads6 : tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) outs(%init23 : tensor<1x2x1x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ab = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %ab : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x1x8xf32>
  return %mm24 : tensor<1x2x1x8xf32>
}
