// The PyTorch payloads of tests/fixtures/torch (tools/export_torch_payloads.py; the README there says
// which code each is), raised as torch-mlir exported them: the function becomes a kernel on memrefs with
// the result appended as its last argument, rock.attention reads them (through rock.block_table_view for
// the paged decode, [B*H, 1, S, D] views for heads folded into the batch), and nothing else is left.
// Each RUN line also asks for remarks: none may come (stderr is written before the module).

// RUN: pagedir-opt %S/../../../fixtures/torch/bmm_folded_alt_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=BMM-FOLDED-ALT-F16
// BMM-FOLDED-ALT-F16-NOT: remark
// BMM-FOLDED-ALT-F16-LABEL: func.func @bmm_folded_alt_f16
// BMM-FOLDED-ALT-F16-SAME: (%[[A0:[^:]+]]: memref<2x4x64xf16>, %[[A1:[^:]+]]: memref<2x24x64xf16>, %[[A2:[^:]+]]: memref<2x24x64xf16>, %[[A3:[^:]+]]: memref<2x4x64xf16>) attributes {rock.kernel}
// BMM-FOLDED-ALT-F16-NEXT: %[[Q4:.+]] = memref.expand_shape %[[A0]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [2, 1, 4, 64] : memref<2x4x64xf16> into memref<2x1x4x64xf16>
// BMM-FOLDED-ALT-F16-NEXT: %[[OUT4:.+]] = memref.expand_shape %[[A3]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [2, 1, 4, 64] : memref<2x4x64xf16> into memref<2x1x4x64xf16>
// BMM-FOLDED-ALT-F16-NEXT: %[[K4:.+]] = memref.expand_shape %[[A1]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [2, 1, 24, 64] : memref<2x24x64xf16> into memref<2x1x24x64xf16>
// BMM-FOLDED-ALT-F16-NEXT: %[[V4:.+]] = memref.expand_shape %[[A2]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [2, 1, 24, 64] : memref<2x24x64xf16> into memref<2x1x24x64xf16>
// BMM-FOLDED-ALT-F16-NEXT: "rock.attention"(%[[Q4]], %[[K4]], %[[V4]], %[[OUT4]]) {causal = false, num_heads_kv = 1 : i64, num_heads_q = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 1.250000e-01 : f32}
// BMM-FOLDED-ALT-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/bmm_folded_bf16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=BMM-FOLDED-BF16
// BMM-FOLDED-BF16-NOT: remark
// BMM-FOLDED-BF16-LABEL: func.func @bmm_folded_bf16
// BMM-FOLDED-BF16-SAME: (%[[A0:[^:]+]]: memref<8x1x32xbf16>, %[[A1:[^:]+]]: memref<8x32x32xbf16>, %[[A2:[^:]+]]: memref<8x32x32xbf16>, %[[A3:[^:]+]]: memref<8x1x32xbf16>) attributes {rock.kernel}
// BMM-FOLDED-BF16-NEXT: %[[Q4:.+]] = memref.expand_shape %[[A0]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 1, 32] : memref<8x1x32xbf16> into memref<8x1x1x32xbf16>
// BMM-FOLDED-BF16-NEXT: %[[OUT4:.+]] = memref.expand_shape %[[A3]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 1, 32] : memref<8x1x32xbf16> into memref<8x1x1x32xbf16>
// BMM-FOLDED-BF16-NEXT: %[[K4:.+]] = memref.expand_shape %[[A1]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 32, 32] : memref<8x32x32xbf16> into memref<8x1x32x32xbf16>
// BMM-FOLDED-BF16-NEXT: %[[V4:.+]] = memref.expand_shape %[[A2]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 32, 32] : memref<8x32x32xbf16> into memref<8x1x32x32xbf16>
// BMM-FOLDED-BF16-NEXT: "rock.attention"(%[[Q4]], %[[K4]], %[[V4]], %[[OUT4]]) {causal = false, num_heads_kv = 1 : i64, num_heads_q = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176757813 : f32}
// BMM-FOLDED-BF16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/bmm_folded_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=BMM-FOLDED-F16
// BMM-FOLDED-F16-NOT: remark
// BMM-FOLDED-F16-LABEL: func.func @bmm_folded_f16
// BMM-FOLDED-F16-SAME: (%[[A0:[^:]+]]: memref<8x1x32xf16>, %[[A1:[^:]+]]: memref<8x32x32xf16>, %[[A2:[^:]+]]: memref<8x32x32xf16>, %[[A3:[^:]+]]: memref<8x1x32xf16>) attributes {rock.kernel}
// BMM-FOLDED-F16-NEXT: %[[Q4:.+]] = memref.expand_shape %[[A0]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 1, 32] : memref<8x1x32xf16> into memref<8x1x1x32xf16>
// BMM-FOLDED-F16-NEXT: %[[OUT4:.+]] = memref.expand_shape %[[A3]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 1, 32] : memref<8x1x32xf16> into memref<8x1x1x32xf16>
// BMM-FOLDED-F16-NEXT: %[[K4:.+]] = memref.expand_shape %[[A1]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 32, 32] : memref<8x32x32xf16> into memref<8x1x32x32xf16>
// BMM-FOLDED-F16-NEXT: %[[V4:.+]] = memref.expand_shape %[[A2]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 32, 32] : memref<8x32x32xf16> into memref<8x1x32x32xf16>
// BMM-FOLDED-F16-NEXT: "rock.attention"(%[[Q4]], %[[K4]], %[[V4]], %[[OUT4]]) {causal = false, num_heads_kv = 1 : i64, num_heads_q = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176757813 : f32}
// BMM-FOLDED-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/bmm_folded_f32.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=BMM-FOLDED-F32
// BMM-FOLDED-F32-NOT: remark
// BMM-FOLDED-F32-LABEL: func.func @bmm_folded_f32
// BMM-FOLDED-F32-SAME: (%[[A0:[^:]+]]: memref<8x1x32xf32>, %[[A1:[^:]+]]: memref<8x32x32xf32>, %[[A2:[^:]+]]: memref<8x32x32xf32>, %[[A3:[^:]+]]: memref<8x1x32xf32>) attributes {rock.kernel}
// BMM-FOLDED-F32-NEXT: %[[Q4:.+]] = memref.expand_shape %[[A0]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 1, 32] : memref<8x1x32xf32> into memref<8x1x1x32xf32>
// BMM-FOLDED-F32-NEXT: %[[OUT4:.+]] = memref.expand_shape %[[A3]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 1, 32] : memref<8x1x32xf32> into memref<8x1x1x32xf32>
// BMM-FOLDED-F32-NEXT: %[[K4:.+]] = memref.expand_shape %[[A1]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 32, 32] : memref<8x32x32xf32> into memref<8x1x32x32xf32>
// BMM-FOLDED-F32-NEXT: %[[V4:.+]] = memref.expand_shape %[[A2]] {{\[\[0, 1\], \[2\], \[3\]\]}} output_shape [8, 1, 32, 32] : memref<8x32x32xf32> into memref<8x1x32x32xf32>
// BMM-FOLDED-F32-NEXT: "rock.attention"(%[[Q4]], %[[K4]], %[[V4]], %[[OUT4]]) {causal = false, num_heads_kv = 1 : i64, num_heads_q = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776692 : f32}
// BMM-FOLDED-F32-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/causal_prefill_alt_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=CAUSAL-PREFILL-ALT-F16
// CAUSAL-PREFILL-ALT-F16-NOT: remark
// CAUSAL-PREFILL-ALT-F16-LABEL: func.func @causal_prefill_alt_f16
// CAUSAL-PREFILL-ALT-F16-SAME: (%[[A0:[^:]+]]: memref<2x2x4x16xf16>, %[[A1:[^:]+]]: memref<2x1x12x16xf16>, %[[A2:[^:]+]]: memref<2x1x12x16xf16>, %[[A3:[^:]+]]: memref<2x2x4x16xf16>) attributes {rock.kernel}
// CAUSAL-PREFILL-ALT-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = true, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 2.500000e-01 : f32}
// CAUSAL-PREFILL-ALT-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/causal_prefill_bf16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=CAUSAL-PREFILL-BF16
// CAUSAL-PREFILL-BF16-NOT: remark
// CAUSAL-PREFILL-BF16-LABEL: func.func @causal_prefill_bf16
// CAUSAL-PREFILL-BF16-SAME: (%[[A0:[^:]+]]: memref<1x4x8x32xbf16>, %[[A1:[^:]+]]: memref<1x4x16x32xbf16>, %[[A2:[^:]+]]: memref<1x4x16x32xbf16>, %[[A3:[^:]+]]: memref<1x4x8x32xbf16>) attributes {rock.kernel}
// CAUSAL-PREFILL-BF16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = true, num_heads_kv = 4 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176795587 : f32}
// CAUSAL-PREFILL-BF16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/causal_prefill_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=CAUSAL-PREFILL-F16
// CAUSAL-PREFILL-F16-NOT: remark
// CAUSAL-PREFILL-F16-LABEL: func.func @causal_prefill_f16
// CAUSAL-PREFILL-F16-SAME: (%[[A0:[^:]+]]: memref<1x4x8x32xf16>, %[[A1:[^:]+]]: memref<1x4x16x32xf16>, %[[A2:[^:]+]]: memref<1x4x16x32xf16>, %[[A3:[^:]+]]: memref<1x4x8x32xf16>) attributes {rock.kernel}
// CAUSAL-PREFILL-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = true, num_heads_kv = 4 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176795587 : f32}
// CAUSAL-PREFILL-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/causal_prefill_f32.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=CAUSAL-PREFILL-F32
// CAUSAL-PREFILL-F32-NOT: remark
// CAUSAL-PREFILL-F32-LABEL: func.func @causal_prefill_f32
// CAUSAL-PREFILL-F32-SAME: (%[[A0:[^:]+]]: memref<1x4x8x32xf32>, %[[A1:[^:]+]]: memref<1x4x16x32xf32>, %[[A2:[^:]+]]: memref<1x4x16x32xf32>, %[[A3:[^:]+]]: memref<1x4x8x32xf32>) attributes {rock.kernel}
// CAUSAL-PREFILL-F32-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = true, num_heads_kv = 4 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776692 : f32}
// CAUSAL-PREFILL-F32-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/gqa_decode_alt_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=GQA-DECODE-ALT-F16
// GQA-DECODE-ALT-F16-NOT: remark
// GQA-DECODE-ALT-F16-LABEL: func.func @gqa_decode_alt_f16
// GQA-DECODE-ALT-F16-SAME: (%[[A0:[^:]+]]: memref<1x8x1x64xf16>, %[[A1:[^:]+]]: memref<1x2x48x64xf16>, %[[A2:[^:]+]]: memref<1x2x48x64xf16>, %[[A3:[^:]+]]: memref<1x8x1x64xf16>) attributes {rock.kernel}
// GQA-DECODE-ALT-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 1.250000e-01 : f32}
// GQA-DECODE-ALT-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/gqa_decode_bf16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=GQA-DECODE-BF16
// GQA-DECODE-BF16-NOT: remark
// GQA-DECODE-BF16-LABEL: func.func @gqa_decode_bf16
// GQA-DECODE-BF16-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xbf16>, %[[A1:[^:]+]]: memref<2x2x32x32xbf16>, %[[A2:[^:]+]]: memref<2x2x32x32xbf16>, %[[A3:[^:]+]]: memref<2x4x1x32xbf16>) attributes {rock.kernel}
// GQA-DECODE-BF16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176757813 : f32}
// GQA-DECODE-BF16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/gqa_decode_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=GQA-DECODE-F16
// GQA-DECODE-F16-NOT: remark
// GQA-DECODE-F16-LABEL: func.func @gqa_decode_f16
// GQA-DECODE-F16-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xf16>, %[[A1:[^:]+]]: memref<2x2x32x32xf16>, %[[A2:[^:]+]]: memref<2x2x32x32xf16>, %[[A3:[^:]+]]: memref<2x4x1x32xf16>) attributes {rock.kernel}
// GQA-DECODE-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176757813 : f32}
// GQA-DECODE-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/gqa_decode_f32.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=GQA-DECODE-F32
// GQA-DECODE-F32-NOT: remark
// GQA-DECODE-F32-LABEL: func.func @gqa_decode_f32
// GQA-DECODE-F32-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xf32>, %[[A1:[^:]+]]: memref<2x2x32x32xf32>, %[[A2:[^:]+]]: memref<2x2x32x32xf32>, %[[A3:[^:]+]]: memref<2x4x1x32xf32>) attributes {rock.kernel}
// GQA-DECODE-F32-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776692 : f32}
// GQA-DECODE-F32-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/paged_decode_alt_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=PAGED-DECODE-ALT-F16
// PAGED-DECODE-ALT-F16-NOT: remark
// PAGED-DECODE-ALT-F16-LABEL: func.func @paged_decode_alt_f16
// PAGED-DECODE-ALT-F16-SAME: (%[[A0:[^:]+]]: memref<1x8x1x64xf16>, %[[A1:[^:]+]]: memref<8x16x2x64xf16>, %[[A2:[^:]+]]: memref<8x16x2x64xf16>, %[[A3:[^:]+]]: memref<1x3xi32>, %[[A4:[^:]+]]: memref<1xi32>, %[[A5:[^:]+]]: memref<1x8x1x64xf16>) attributes {rock.kernel}
// PAGED-DECODE-ALT-F16-NEXT: %[[KVIEW:.+]] = "rock.block_table_view"(%[[A1]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-DECODE-ALT-F16-NEXT: %[[VVIEW:.+]] = "rock.block_table_view"(%[[A2]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-DECODE-ALT-F16-NEXT: "rock.attention"(%[[A0]], %[[KVIEW]], %[[VVIEW]], %[[A4]], %[[A5]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>, scale = 1.250000e-01 : f32}
// PAGED-DECODE-ALT-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/paged_decode_bf16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=PAGED-DECODE-BF16
// PAGED-DECODE-BF16-NOT: remark
// PAGED-DECODE-BF16-LABEL: func.func @paged_decode_bf16
// PAGED-DECODE-BF16-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xbf16>, %[[A1:[^:]+]]: memref<16x8x2x32xbf16>, %[[A2:[^:]+]]: memref<16x8x2x32xbf16>, %[[A3:[^:]+]]: memref<2x4xi32>, %[[A4:[^:]+]]: memref<2xi32>, %[[A5:[^:]+]]: memref<2x4x1x32xbf16>) attributes {rock.kernel}
// PAGED-DECODE-BF16-NEXT: %[[KVIEW:.+]] = "rock.block_table_view"(%[[A1]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-DECODE-BF16-NEXT: %[[VVIEW:.+]] = "rock.block_table_view"(%[[A2]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-DECODE-BF16-NEXT: "rock.attention"(%[[A0]], %[[KVIEW]], %[[VVIEW]], %[[A4]], %[[A5]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176757813 : f32}
// PAGED-DECODE-BF16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/paged_decode_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=PAGED-DECODE-F16
// PAGED-DECODE-F16-NOT: remark
// PAGED-DECODE-F16-LABEL: func.func @paged_decode_f16
// PAGED-DECODE-F16-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xf16>, %[[A1:[^:]+]]: memref<16x8x2x32xf16>, %[[A2:[^:]+]]: memref<16x8x2x32xf16>, %[[A3:[^:]+]]: memref<2x4xi32>, %[[A4:[^:]+]]: memref<2xi32>, %[[A5:[^:]+]]: memref<2x4x1x32xf16>) attributes {rock.kernel}
// PAGED-DECODE-F16-NEXT: %[[KVIEW:.+]] = "rock.block_table_view"(%[[A1]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-DECODE-F16-NEXT: %[[VVIEW:.+]] = "rock.block_table_view"(%[[A2]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-DECODE-F16-NEXT: "rock.attention"(%[[A0]], %[[KVIEW]], %[[VVIEW]], %[[A4]], %[[A5]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176757813 : f32}
// PAGED-DECODE-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/paged_decode_f32.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=PAGED-DECODE-F32
// PAGED-DECODE-F32-NOT: remark
// PAGED-DECODE-F32-LABEL: func.func @paged_decode_f32
// PAGED-DECODE-F32-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xf32>, %[[A1:[^:]+]]: memref<16x8x2x32xf32>, %[[A2:[^:]+]]: memref<16x8x2x32xf32>, %[[A3:[^:]+]]: memref<2x4xi32>, %[[A4:[^:]+]]: memref<2xi32>, %[[A5:[^:]+]]: memref<2x4x1x32xf32>) attributes {rock.kernel}
// PAGED-DECODE-F32-NEXT: %[[KVIEW:.+]] = "rock.block_table_view"(%[[A1]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-DECODE-F32-NEXT: %[[VVIEW:.+]] = "rock.block_table_view"(%[[A2]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-DECODE-F32-NEXT: "rock.attention"(%[[A0]], %[[KVIEW]], %[[VVIEW]], %[[A4]], %[[A5]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776692 : f32}
// PAGED-DECODE-F32-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/past_masked_alt_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=PAST-MASKED-ALT-F16
// PAST-MASKED-ALT-F16-NOT: remark
// PAST-MASKED-ALT-F16-LABEL: func.func @past_masked_alt_f16
// PAST-MASKED-ALT-F16-SAME: (%[[A0:[^:]+]]: memref<1x4x8x32xf16>, %[[A1:[^:]+]]: memref<1x4x16x32xf16>, %[[A2:[^:]+]]: memref<1x4x16x32xf16>, %[[A3:[^:]+]]: memref<1x4x8x32xf16>) attributes {rock.kernel}
// PAST-MASKED-ALT-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 4 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176795587 : f32, window_left = 0 : i64}
// PAST-MASKED-ALT-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/repeat_sdpa_bf16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=REPEAT-SDPA-BF16
// REPEAT-SDPA-BF16-NOT: remark
// REPEAT-SDPA-BF16-LABEL: func.func @repeat_sdpa_bf16
// REPEAT-SDPA-BF16-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xbf16>, %[[A1:[^:]+]]: memref<2x2x32x32xbf16>, %[[A2:[^:]+]]: memref<2x2x32x32xbf16>, %[[A3:[^:]+]]: memref<2x4x1x32xbf16>) attributes {rock.kernel}
// REPEAT-SDPA-BF16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776707 : f32}
// REPEAT-SDPA-BF16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/repeat_sdpa_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=REPEAT-SDPA-F16
// REPEAT-SDPA-F16-NOT: remark
// REPEAT-SDPA-F16-LABEL: func.func @repeat_sdpa_f16
// REPEAT-SDPA-F16-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xf16>, %[[A1:[^:]+]]: memref<2x2x32x32xf16>, %[[A2:[^:]+]]: memref<2x2x32x32xf16>, %[[A3:[^:]+]]: memref<2x4x1x32xf16>) attributes {rock.kernel}
// REPEAT-SDPA-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776707 : f32}
// REPEAT-SDPA-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/repeat_sdpa_f32.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=REPEAT-SDPA-F32
// REPEAT-SDPA-F32-NOT: remark
// REPEAT-SDPA-F32-LABEL: func.func @repeat_sdpa_f32
// REPEAT-SDPA-F32-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xf32>, %[[A1:[^:]+]]: memref<2x2x32x32xf32>, %[[A2:[^:]+]]: memref<2x2x32x32xf32>, %[[A3:[^:]+]]: memref<2x4x1x32xf32>) attributes {rock.kernel}
// REPEAT-SDPA-F32-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776707 : f32}
// REPEAT-SDPA-F32-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/sdpa_gqa_alt_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=SDPA-GQA-ALT-F16
// SDPA-GQA-ALT-F16-NOT: remark
// SDPA-GQA-ALT-F16-LABEL: func.func @sdpa_gqa_alt_f16
// SDPA-GQA-ALT-F16-SAME: (%[[A0:[^:]+]]: memref<2x2x4x16xf16>, %[[A1:[^:]+]]: memref<2x1x12x16xf16>, %[[A2:[^:]+]]: memref<2x1x12x16xf16>, %[[A3:[^:]+]]: memref<2x2x4x16xf16>) attributes {rock.kernel}
// SDPA-GQA-ALT-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 1 : i64, num_heads_q = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 2.500000e-01 : f32}
// SDPA-GQA-ALT-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/sdpa_gqa_bf16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=SDPA-GQA-BF16
// SDPA-GQA-BF16-NOT: remark
// SDPA-GQA-BF16-LABEL: func.func @sdpa_gqa_bf16
// SDPA-GQA-BF16-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xbf16>, %[[A1:[^:]+]]: memref<2x2x32x32xbf16>, %[[A2:[^:]+]]: memref<2x2x32x32xbf16>, %[[A3:[^:]+]]: memref<2x4x1x32xbf16>) attributes {rock.kernel}
// SDPA-GQA-BF16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776707 : f32}
// SDPA-GQA-BF16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/sdpa_gqa_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=SDPA-GQA-F16
// SDPA-GQA-F16-NOT: remark
// SDPA-GQA-F16-LABEL: func.func @sdpa_gqa_f16
// SDPA-GQA-F16-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xf16>, %[[A1:[^:]+]]: memref<2x2x32x32xf16>, %[[A2:[^:]+]]: memref<2x2x32x32xf16>, %[[A3:[^:]+]]: memref<2x4x1x32xf16>) attributes {rock.kernel}
// SDPA-GQA-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776707 : f32}
// SDPA-GQA-F16-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/sdpa_gqa_f32.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=SDPA-GQA-F32
// SDPA-GQA-F32-NOT: remark
// SDPA-GQA-F32-LABEL: func.func @sdpa_gqa_f32
// SDPA-GQA-F32-SAME: (%[[A0:[^:]+]]: memref<2x4x1x32xf32>, %[[A1:[^:]+]]: memref<2x2x32x32xf32>, %[[A2:[^:]+]]: memref<2x2x32x32xf32>, %[[A3:[^:]+]]: memref<2x4x1x32xf32>) attributes {rock.kernel}
// SDPA-GQA-F32-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = false, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176776707 : f32}
// SDPA-GQA-F32-NEXT: return

// RUN: pagedir-opt %S/../../../fixtures/torch/sdpa_causal_alt_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=SDPA-CAUSAL-ALT-F16
// SDPA-CAUSAL-ALT-F16-NOT: remark
// SDPA-CAUSAL-ALT-F16-LABEL: func.func @sdpa_causal_alt_f16
// SDPA-CAUSAL-ALT-F16-SAME: (%[[A0:[^:]+]]: memref<1x4x8x16xf16>, %[[A1:[^:]+]]: memref<1x2x8x16xf16>, %[[A2:[^:]+]]: memref<1x2x8x16xf16>, %[[A3:[^:]+]]: memref<1x4x8x16xf16>) attributes {rock.kernel}
// SDPA-CAUSAL-ALT-F16-NEXT: "rock.attention"(%[[A0]], %[[A1]], %[[A2]], %[[A3]]) {causal = true, num_heads_kv = 2 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>, scale = 2.500000e-01 : f32}
// SDPA-CAUSAL-ALT-F16-NEXT: return

// Paged prefill (MHA): torch-mlir folds K.transpose(1, 2) and K^T's transpose into one [0, 2, 3, 1] of the
// gather; the mask is an OR (positions past seq_len, or past the query's own position).
// RUN: pagedir-opt %S/../../../fixtures/torch/paged_prefill_alt_f16.mlir --rock-raise-attention=explain=true 2>&1 | FileCheck %s --check-prefix=PAGED-PREFILL-ALT-F16
// PAGED-PREFILL-ALT-F16-NOT: remark
// PAGED-PREFILL-ALT-F16-LABEL: func.func @paged_prefill_alt_f16
// PAGED-PREFILL-ALT-F16-SAME: (%[[A0:[^:]+]]: memref<2x4x4x32xf16>, %[[A1:[^:]+]]: memref<16x8x4x32xf16>, %[[A2:[^:]+]]: memref<16x8x4x32xf16>, %[[A3:[^:]+]]: memref<2x4xi32>, %[[A4:[^:]+]]: memref<2xi32>, %[[A5:[^:]+]]: memref<2x4x4x32xf16>) attributes {rock.kernel}
// PAGED-PREFILL-ALT-F16-NEXT: %[[KVIEW:.+]] = "rock.block_table_view"(%[[A1]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-PREFILL-ALT-F16-NEXT: %[[VVIEW:.+]] = "rock.block_table_view"(%[[A2]], %[[A3]]) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
// PAGED-PREFILL-ALT-F16-NEXT: "rock.attention"(%[[A0]], %[[KVIEW]], %[[VVIEW]], %[[A4]], %[[A5]]) {causal = true, num_heads_kv = 4 : i64, num_heads_q = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>, scale = 0.176757813 : f32}
// PAGED-PREFILL-ALT-F16-NEXT: return
