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
