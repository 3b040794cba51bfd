// A linalg payload that is not attention (the subtract-and-exp generic reduces over the keys): rock-raise-attention
// leaves it, and pagedir-compile says why at the op where the raise stopped.
func.func @not_attention(%q: memref<1x2x1x8xf32>, %k: memref<1x1x4x8xf32>, %v: memref<1x1x4x8xf32>, %out: memref<1x2x1x8xf32>) attributes {rock.arch = "gfx942", rock.check = "linalg_attention"} {
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
  %ew16 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ew11, %row14 : tensor<1x2x1x4xf32>, tensor<1x2x1xf32>) outs(%empty15 : tensor<1x2x1x4xf32>) {
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
