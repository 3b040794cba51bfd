// Near misses written in PyTorch (tests/fixtures/torch/miss_*, tools/export_torch_payloads.py): each computes
// something rock.attention does not, so the function stays as torch-mlir wrote it (tensors in, a tensor
// returned), and explain=true names every blocker found.

// torch's k.repeat(1, G, 1, 1): query head h reads kv head h % Hkv, not h / G. Both K and V are named.
// RUN: pagedir-opt %S/../../../fixtures/torch/miss_gqa_tiled_f16.mlir --rock-raise-attention=explain=true 2>%t.tiled | FileCheck %s --check-prefix=TILED
// RUN: FileCheck %s --check-prefix=TILED-REMARK < %t.tiled
// TILED-LABEL: func.func @miss_gqa_tiled_f16
// TILED-SAME: -> tensor<2x4x1x32xf16>
// TILED-NOT: rock.attention
// TILED: return %{{.+}} : tensor<2x4x1x32xf16>
// TILED-REMARK: miss_gqa_tiled_f16.mlir:17:10: remark: not raised to rock.attention: K heads are repeated by a broadcast of dims [1] folded as [[0],[1,2],[3],[4]]: query head h would use kv head h % 2, not h / 2 as in repeat_interleave (rock.attention's GQA)
// TILED-REMARK-NEXT: miss_gqa_tiled_f16.mlir:22:10: remark: not raised to rock.attention: V heads are repeated by a broadcast of dims [1] folded as [[0],[1,2],[3],[4]]: query head h would use kv head h % 2, not h / 2 as in repeat_interleave (rock.attention's GQA)

// masked_fill(cols >= rows): the diagonal is hidden too, keys j <= i + Sk - Sq - 1 are kept.
// RUN: pagedir-opt %S/../../../fixtures/torch/miss_mask_diagonal_f16.mlir --rock-raise-attention=explain=true 2>%t.diagonal | FileCheck %s --check-prefix=DIAGONAL
// RUN: FileCheck %s --check-prefix=DIAGONAL-REMARK < %t.diagonal
// DIAGONAL-LABEL: func.func @miss_mask_diagonal_f16
// DIAGONAL-NOT: rock.attention
// DIAGONAL: return %{{.+}} : tensor<1x4x8x32xf16>
// DIAGONAL-REMARK: miss_mask_diagonal_f16.mlir:71:11: remark: not raised to rock.attention: the mask keeps keys with 1*j + -1*i + -7 <= 0, which is neither j < seq_len nor the causal j <= i + seq_len - 8

// SDPA's is_causal with Sq < Sk hides keys past j = i (top-left), not past the end of the sequence.
// RUN: pagedir-opt %S/../../../fixtures/torch/miss_sdpa_causal_top_left_f16.mlir --rock-raise-attention=explain=true 2>%t.top | FileCheck %s --check-prefix=TOP
// RUN: FileCheck %s --check-prefix=TOP-REMARK < %t.top
// TOP-LABEL: func.func @miss_sdpa_causal_top_left_f16
// TOP-NOT: rock.attention
// TOP: return %{{.+}} : tensor<2x2x4x16xf16>
// TOP-REMARK: miss_sdpa_causal_top_left_f16.mlir:112:11: remark: not raised to rock.attention: the mask keeps keys with 1*j + -1*i <= 0, which is neither j < seq_len nor the causal j <= i + seq_len - 4

// softmax(-2): the softmax runs over the queries.
// RUN: pagedir-opt %S/../../../fixtures/torch/miss_softmax_dim_f16.mlir --rock-raise-attention=explain=true 2>%t.dim | FileCheck %s --check-prefix=DIM
// RUN: FileCheck %s --check-prefix=DIM-REMARK < %t.dim
// DIM-LABEL: func.func @miss_softmax_dim_f16
// DIM-NOT: rock.attention
// DIM: return %{{.+}} : tensor<1x4x8x32xf16>
// DIM-REMARK: miss_softmax_dim_f16.mlir:72:11: remark: not raised to rock.attention: the softmax's division reads its row operand as (d0, d1, 0, d3), expected rows (d0, d1, d2) of the key dim 3

// A reduction iterator where an elementwise one belongs: the exp generic of the GQA decode made to iterate
// its key dim as a reduction (only the last key of each row would be written).
// RUN: sed '72s/"parallel"\]/"reduction"]/' %S/../../../fixtures/torch/gqa_decode_f16.mlir | pagedir-opt --rock-raise-attention=explain=true 2>%t.exp | FileCheck %s --check-prefix=EXP
// RUN: FileCheck %s --check-prefix=EXP-REMARK < %t.exp
// EXP-LABEL: func.func @gqa_decode_f16
// EXP-NOT: rock.attention
// EXP: return %{{.+}} : tensor<2x4x1x32xf16>
// EXP-REMARK: remark: not raised to rock.attention: the softmax's exp iterates as [parallel, parallel, parallel, reduction], expected [parallel, parallel, parallel, parallel]

// The paged prefill with its folded K transpose made [0, 2, 1, 3]: Q is multiplied by K, not by K^T.
// RUN: sed '61s/permutation = \[0, 2, 3, 1\]/permutation = [0, 2, 1, 3]/' %S/../../../fixtures/torch/paged_prefill_alt_f16.mlir | pagedir-opt --rock-raise-attention=explain=true 2>%t.perm | FileCheck %s --check-prefix=PERM
// RUN: FileCheck %s --check-prefix=PERM-REMARK < %t.perm
// PERM-LABEL: func.func @paged_prefill_alt_f16
// PERM-NOT: rock.attention
// PERM: return %{{.+}} : tensor<2x4x4x32xf16>
// PERM-REMARK: remark: not raised to rock.attention: the gather of cache pool %arg1 is reshaped to [b, pool dim 2, d, (slot, pool dim 1)]; [B, Hkv, Sk, D] takes [b, head, (slot, token), d] (a head's tokens block by block)

// Three blockers in one candidate, all named: SDPA's causal mask made to hide the diagonal too, and K and V
// repeated as h % Hkv (the broadcast map made (d0, d2, d3, d4)). The walk goes on past the mask it cannot read.
// RUN: sed -e 's/affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>/affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>/' -e 's/cmpi sle, %in, %c0_i64/cmpi slt, %in, %c0_i64/' %S/../../../fixtures/torch/sdpa_causal_alt_f16.mlir | pagedir-opt --rock-raise-attention=explain=true 2>%t.three | FileCheck %s --check-prefix=THREE
// RUN: FileCheck %s --check-prefix=THREE-REMARK < %t.three
// THREE-LABEL: func.func @sdpa_causal_alt_f16
// THREE-NOT: rock.attention
// THREE: return %{{.+}} : tensor<1x4x8x16xf16>
// THREE-REMARK: <stdin>:105:11: remark: not raised to rock.attention: the mask keeps keys with 1*j + -1*i + 1 <= 0, which is neither j < seq_len nor the causal j <= i + seq_len - 8
// THREE-REMARK-NEXT: <stdin>:82:11: remark: not raised to rock.attention: K heads are repeated by a broadcast of dims [1]
// THREE-REMARK-NEXT: <stdin>:87:11: remark: not raised to rock.attention: V heads are repeated by a broadcast of dims [1]
// THREE-REMARK-NOT: remark
