// RUN: pagedir-opt %s --split-input-file --verify-diagnostics --rock-attention-to-gridwise

// A page of 1020 f16 elements is not a multiple of the 8-element (128-bit) vector.
func.func @page_not_vector_multiple(%q: memref<1x1x1x68xf16>, %k_table: memref<1x1x1xi64>, %v_table: memref<1x1x1xi64>,
                                    %out: memref<1x1x1x68xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.deref"(%k_table) : (memref<1x1x1xi64>) -> memref<1x1x1020xf16>
  %v = "rock.deref"(%v_table) : (memref<1x1x1xi64>) -> memref<1x1x1020xf16>
  // expected-error @+2 {{page size 1020 elements is not a multiple of the vector width 8 (128 bits of f16): a vector would straddle two pages}}
  // expected-error @+1 {{head dim 68 must be a multiple of the vector width 8 (128 bits of f16)}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 1, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x1x68xf16>, memref<1x1x1020xf16>, memref<1x1x1020xf16>, memref<1x1x1x68xf16>) -> ()
  return
}

// -----

func.func @head_dim_too_large(%q: memref<1x1x1x512xf16>, %k: memref<1x1x16x512xf16>, %v: memref<1x1x16x512xf16>,
                              %out: memref<1x1x1x512xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op head dim 512 is too large: at most 256 is supported}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 1, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x1x512xf16>, memref<1x1x16x512xf16>, memref<1x1x16x512xf16>, memref<1x1x1x512xf16>) -> ()
  return
}

// -----

// 128 query heads per KV head, f32, D = 256: the Q tile alone is 128 KiB (the matrix loop
// reads it before the loop and needs no more at once).
func.func @lds_over_limit(%q: memref<1x128x1x256xf32>, %k: memref<1x1x64x256xf32>, %v: memref<1x1x64x256xf32>,
                          %out: memref<1x128x1x256xf32>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op requires too much LDS memory: 131072 bytes live at once (hardware max for gfx942 is 65536 bytes; q 131072, k 16384, v 16384, exchange 0)}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 128, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x128x1x256xf32>, memref<1x1x64x256xf32>, memref<1x1x64x256xf32>, memref<1x128x1x256xf32>) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op @unknown_chip has rock.arch = "gfx000": unknown chip 'gfx000'; known chips:}}
func.func @unknown_chip(%q: memref<1x1x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>,
                        %out: memref<1x1x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx000"} {
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 1, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<1x1x1x64xf16>) -> ()
  return
}

// -----

// No rock.arch and no arch option: no LDS budget to hold the tiles against, an error rather than no check.
// expected-error @+1 {{'func.func' op @no_chip names no chip: set rock.arch on the kernel or give the arch option}}
func.func @no_chip(%q: memref<1x1x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>,
                   %out: memref<1x1x1x64xf16>) attributes {rock.kernel} {
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 1, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<1x1x1x64xf16>) -> ()
  return
}

// -----

// A split takes at least one KV tile: 40 keys make 3 tiles of 16, the shortest the tiling shortens
// its tiles to (the VALU tiling of gfx1030, as the matrix tiling) for the splits asked.
func.func @more_splits_than_tiles(%q: memref<1x1x1x64xf16>, %k: memref<1x1x40x64xf16>, %v: memref<1x1x40x64xf16>,
                                  %out: memref<1x1x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx1030", rock.num_splits = 4} {
  // expected-error @+1 {{'rock.attention' op num_splits 4 exceeds the 3 KV tiles of 16 tokens a sequence of 40 holds: a split takes at least one tile}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 1, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x1x64xf16>, memref<1x1x40x64xf16>, memref<1x1x40x64xf16>, memref<1x1x1x64xf16>) -> ()
  return
}

// -----

func.func @negative_splits(%q: memref<1x1x1x64xf16>, %k: memref<1x1x40x64xf16>, %v: memref<1x1x40x64xf16>,
                           %out: memref<1x1x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.num_splits = -2} {
  // expected-error @+1 {{'rock.attention' op has rock.num_splits = -2 : i64 on its kernel: expected a non-negative integer (0: chosen from the compute units)}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 1, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x1x1x64xf16>, memref<1x1x40x64xf16>, memref<1x1x40x64xf16>, memref<1x1x1x64xf16>) -> ()
  return
}

// -----

func.func @window_negative(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>,
                           %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op window_left must be between 0 and 2147483647, got -1}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, window_left = -1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

func.func @softcap_zero(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>,
                        %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op softcap must be a finite value > 0 and at most 2.35866e+38, got 0.0}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, softcap = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

func.func @softcap_infinite(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>,
                            %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op softcap must be a finite value > 0 and at most 2.35866e+38, got inf}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, softcap = 0x7F800000 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

func.func @softcap_too_large(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>,
                             %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op softcap must be a finite value > 0 and at most 2.35866e+38, got 3.0000000054977558e+38}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, softcap = 3.0e38 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

func.func @softcap_f64(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>,
                       %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op attribute 'softcap' must be f32 float, got 3.000000e+01 : f64}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, softcap = 30.0 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// One slope per query head: 2 query heads, 3 slopes; sinks in f16.
func.func @per_head_shapes(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>,
                           %slopes: memref<3xf32>, %sinks: memref<2xf16>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+2 {{'rock.attention' op alibi_slopes must be memref<2xf32> (one value per query head), got memref<3xf32>}}
  // expected-error @+1 {{'rock.attention' op sinks must be memref<2xf32> (one value per query head), got memref<2xf16>}}
  "rock.attention"(%q, %k, %v, %slopes, %sinks, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<3xf32>, memref<2xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// fp8 K/V only in the formats the chip converts: gfx942 the FNUZ ones.
func.func @fp8_format_not_on_chip(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf8E4M3FN>, %v: memref<1x1x16x64xf8E4M3FN>,
                                  %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op fp8 K/V of type f8E4M3FN is not supported on gfx942 (it converts f8E4M3FNUZ, f8E5M2FNUZ; gfx942 takes f8E4M3FNUZ and f8E5M2FNUZ, gfx950 f8E4M3FN and f8E5M2)}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf8E4M3FN>, memref<1x1x16x64xf8E4M3FN>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

func.func @fp8_on_gfx90a(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf8E4M3FNUZ>, %v: memref<1x1x16x64xf8E4M3FNUZ>,
                         %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx90a"} {
  // expected-error @+1 {{'rock.attention' op fp8 K/V of type f8E4M3FNUZ is not supported on gfx90a (it converts no fp8 format;}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf8E4M3FNUZ>, memref<1x1x16x64xf8E4M3FNUZ>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// 16 fp8 values per 16-byte load: the head dim must hold whole vectors of them.
func.func @fp8_head_dim(%q: memref<1x2x1x8xf16>, %k: memref<1x1x16x8xf8E4M3FNUZ>, %v: memref<1x1x16x8xf8E4M3FNUZ>,
                        %out: memref<1x2x1x8xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op head dim 8 must be a multiple of the K/V vector width 16 (128 bits of f8E4M3FNUZ)}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x8xf16>, memref<1x1x16x8xf8E4M3FNUZ>, memref<1x1x16x8xf8E4M3FNUZ>, memref<1x2x1x8xf16>) -> ()
  return
}

// -----

func.func @fp8_needs_f16_query(%q: memref<1x2x1x64xf32>, %k: memref<1x1x16x64xf8E4M3FNUZ>, %v: memref<1x1x16x64xf8E5M2FNUZ>,
                               %ks: memref<2xf32>, %out: memref<1x2x1x64xf32>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+4 {{'rock.attention' op k element type f8E4M3FNUZ (fp8) needs an f16 or bf16 query, got f32}}
  // expected-error @+3 {{'rock.attention' op v element type f8E5M2FNUZ (fp8) needs an f16 or bf16 query, got f32}}
  // expected-error @+2 {{'rock.attention' op v element type f8E5M2FNUZ differs from k's f8E4M3FNUZ}}
  // expected-error @+1 {{'rock.attention' op k_scale must be memref<1xf32> (one scale per tensor), got memref<2xf32>}}
  "rock.attention"(%q, %k, %v, %ks, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1>}
    : (memref<1x2x1x64xf32>, memref<1x1x16x64xf8E4M3FNUZ>, memref<1x1x16x64xf8E5M2FNUZ>, memref<2xf32>, memref<1x2x1x64xf32>) -> ()
  return
}

// -----

// K and V pools of another shape than the attention's: a block-table view of a pool of 64-wide heads.
func.func @pool_head_dim(%q: memref<1x2x1x128xf16>, %kc: memref<4x16x1x64xf16>, %vc: memref<4x16x1x64xf16>, %table: memref<1x4xi32>,
                         %lens: memref<1xi32>, %out: memref<1x2x1x128xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.block_table_view"(%kc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1x64xf16>, memref<1x4xi32>) -> memref<1x4x1024xf16>
  %v = "rock.block_table_view"(%vc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1x64xf16>, memref<1x4xi32>) -> memref<1x4x1024xf16>
  // expected-error @+1 {{'rock.attention' op k: the cache pool holds 1 heads of dim 64, the attention 1 KV heads of dim 128}}
  "rock.attention"(%q, %k, %v, %lens, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<1x2x1x128xf16>, memref<1x4x1024xf16>, memref<1x4x1024xf16>, memref<1xi32>, memref<1x2x1x128xf16>) -> ()
  return
}

// -----

// Split-KV with a dynamic batch and a static capacity (4 slots of 16 tokens): a fixed count past the
// capacity's tiles (16 keys each at most 4) is refused, as for a static kernel.
func.func @dynamic_split_past_the_capacity(%q: memref<?x8x1x64xf16>, %k_cache: memref<?x16x2x64xf16>, %v_cache: memref<?x16x2x64xf16>, %block_table: memref<?x4xi32>, %seq_lens: memref<?xi32>, %out: memref<?x8x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.num_splits = 5} {
  %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x4xi32>) -> memref<?x8x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x4xi32>) -> memref<?x8x1024xf16>
  // expected-error @+1 {{'rock.attention' op num_splits 5 exceeds the 4 KV tiles of 16 tokens a sequence of 64 holds: a split takes at least one tile}}
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x64xf16>, memref<?x8x1024xf16>, memref<?x8x1024xf16>, memref<?xi32>, memref<?x8x1x64xf16>) -> ()
  return
}

// -----

// A dynamic batch the grid cannot be derived from: q is not a kernel argument.
func.func @dynamic_batch_not_an_argument(%k_cache: memref<?x16x2x64xf16>, %v_cache: memref<?x16x2x64xf16>, %block_table: memref<?x?xi32>, %seq_lens: memref<?xi32>, %out: memref<?x8x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %b = memref.dim %out, %c0 : memref<?x8x1x64xf16>
  %q = memref.alloc(%b) : memref<?x8x1x64xf16>
  %k = "rock.block_table_view"(%k_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %block_table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  // expected-error @+1 {{'rock.attention' op has a dynamic batch that is not read from a kernel argument (q, or the cu_seqlens_q of a rock.varlen_view): the grid could not be derived from the argument sizes}}
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x64xf16>, memref<?x?x1024xf16>, memref<?x?x1024xf16>, memref<?xi32>, memref<?x8x1x64xf16>) -> ()
  return
}

// -----

// Per-token-head scales of dense fp8 K/V must be [B, Hkv, Sk] f32: one scale per key and KV head.
func.func @kv_scales_dense_shape(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf8E4M3FNUZ>, %v: memref<1x1x16x64xf8E4M3FNUZ>,
                                 %ks: memref<1x1x32xf32>, %vs: memref<1x1x16xf16>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+2 {{'rock.attention' op k_scales must be memref<1x1x16xf32> (dense [B, Hkv, Sk]), got memref<1x1x32xf32> (cache memref<1x1x16x64xf8E4M3FNUZ>)}}
  // expected-error @+1 {{'rock.attention' op v_scales element type must be f32, got f16 (cache memref<1x1x16x64xf8E4M3FNUZ>)}}
  "rock.attention"(%q, %k, %v, %ks, %vs, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf8E4M3FNUZ>, memref<1x1x16x64xf8E4M3FNUZ>, memref<1x1x32xf32>, memref<1x1x16xf16>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// k_scales without v_scales.
func.func @kv_scales_alone(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf8E4M3FNUZ>, %v: memref<1x1x16x64xf8E4M3FNUZ>,
                           %ks: memref<1x1x16xf32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.attention' op k_scales and v_scales go together: one was given without the other}}
  "rock.attention"(%q, %k, %v, %ks, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf8E4M3FNUZ>, memref<1x1x16x64xf8E4M3FNUZ>, memref<1x1x16xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Per-token-head scales scale fp8 K/V only, and not together with per-tensor scales.
func.func @kv_scales_f16(%q: memref<1x2x1x64xf16>, %k: memref<1x1x16x64xf16>, %v: memref<1x1x16x64xf16>, %s: memref<1xf32>,
                         %ks: memref<1x1x16xf32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+2 {{'rock.attention' op k_scales and v_scales scale fp8 K/V, but k is f16}}
  // expected-error @+1 {{'rock.attention' op takes per-tensor (k_scale, v_scale) or per-token-head (k_scales, v_scales) scales, not both}}
  "rock.attention"(%q, %k, %v, %s, %s, %ks, %ks, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1>}
    : (memref<1x2x1x64xf16>, memref<1x1x16x64xf16>, memref<1x1x16x64xf16>, memref<1xf32>, memref<1xf32>, memref<1x1x16xf32>, memref<1x1x16xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// Scale pools are read through the cache's own block table, with the cache's block size.
func.func @kv_scales_pool(%q: memref<1x2x1x64xf16>, %kc: memref<4x16x1x64xf8E4M3FNUZ>, %vc: memref<4x16x1x64xf8E4M3FNUZ>,
                          %table: memref<1x4xi32>, %other: memref<1x4xi32>, %lens: memref<1xi32>, %ksc: memref<8x8x1xf32>,
                          %vsc: memref<4x16x1xf32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.block_table_view"(%kc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1x64xf8E4M3FNUZ>, memref<1x4xi32>) -> memref<1x4x1024xf8E4M3FNUZ>
  %v = "rock.block_table_view"(%vc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1x64xf8E4M3FNUZ>, memref<1x4xi32>) -> memref<1x4x1024xf8E4M3FNUZ>
  %ks = "rock.block_table_view"(%ksc, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<8x8x1xf32>, memref<1x4xi32>) -> memref<1x4x8xf32>
  %vs = "rock.block_table_view"(%vsc, %other) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<4x16x1xf32>, memref<1x4xi32>) -> memref<1x4x16xf32>
  // expected-error @+2 {{'rock.attention' op k_scales pool memref<8x8x1xf32> (nhd) must hold 1 KV heads of blocks of 16 tokens in the cache's layout nhd (cache memref<1x4x1024xf8E4M3FNUZ>)}}
  // expected-error @+1 {{'rock.attention' op v_scales must be read through the cache's block table (and csr lengths) (cache memref<1x4x1024xf8E4M3FNUZ>)}}
  "rock.attention"(%q, %k, %v, %lens, %ks, %vs, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>}
    : (memref<1x2x1x64xf16>, memref<1x4x1024xf8E4M3FNUZ>, memref<1x4x1024xf8E4M3FNUZ>, memref<1xi32>, memref<1x4x8xf32>, memref<1x4x16xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

// A pointer-table scale cache has the cache's pages, each one scale per token of a K page (16 here).
func.func @kv_scales_pointer_pages(%q: memref<1x2x1x64xf16>, %kt: memref<1x2x1xi64>, %vt: memref<1x2x1xi64>,
                                   %kst: memref<1x2x1xi64>, %ks_dense: memref<1x1x32xf32>, %out: memref<1x2x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942"} {
  %k = "rock.deref"(%kt) : (memref<1x2x1xi64>) -> memref<1x2x1024xf8E4M3FNUZ>
  %v = "rock.deref"(%vt) : (memref<1x2x1xi64>) -> memref<1x2x1024xf8E4M3FNUZ>
  %ks = "rock.deref"(%kst) : (memref<1x2x1xi64>) -> memref<1x2x1024xf32>
  // expected-error @+2 {{'rock.attention' op k_scales must be memref<1x2x16xf32> (one scale per token of each page), got memref<1x2x1024xf32> (cache memref<1x2x1024xf8E4M3FNUZ>)}}
  // expected-error @+1 {{'rock.attention' op v_scales must be a rock.deref result like k and v, got memref<1x1x32xf32> (cache memref<1x2x1024xf8E4M3FNUZ>)}}
  "rock.attention"(%q, %k, %v, %ks, %ks_dense, %out) {num_heads_q = 2, num_heads_kv = 1, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>}
    : (memref<1x2x1x64xf16>, memref<1x2x1024xf8E4M3FNUZ>, memref<1x2x1024xf8E4M3FNUZ>, memref<1x2x1024xf32>, memref<1x1x32xf32>, memref<1x2x1x64xf16>) -> ()
  return
}

// -----

func.func @bad_depth(%q: memref<2x8x1x128xf16>, %k_table: memref<2x8x1xi64>, %v_table: memref<2x8x1xi64>,
                     %out: memref<2x8x1x128xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.pipeline_depth = 3} {
  %k = "rock.deref"(%k_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  %v = "rock.deref"(%v_table) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  // expected-error @+1 {{'rock.attention' op has rock.pipeline_depth = 3 : i64 on its kernel: expected 1 or 2}}
  "rock.attention"(%q, %k, %v, %out) {num_heads_q = 8, num_heads_kv = 2, causal = false,
      operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<2x8x1x128xf16>, memref<2x8x2048xf16>, memref<2x8x2048xf16>, memref<2x8x1x128xf16>) -> ()
  return
}

// -----

// A split count chosen at launch reads the block slots from an argument's size: here the block
// table is a cast, not an argument.
func.func @dynamic_split_table_not_an_argument(%q: memref<?x8x1x64xf16>, %k_cache: memref<?x16x2x64xf16>, %v_cache: memref<?x16x2x64xf16>, %block_table: memref<?x?xi32>, %seq_lens: memref<?xi32>, %out: memref<?x8x1x64xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.num_splits = 0} {
  %table = memref.cast %block_table : memref<?x?xi32> to memref<?x?xi32>
  %k = "rock.block_table_view"(%k_cache, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  %v = "rock.block_table_view"(%v_cache, %table) {layout = "nhd", operandSegmentSizes = array<i32: 1, 1, 0, 0>}
    : (memref<?x16x2x64xf16>, memref<?x?xi32>) -> memref<?x?x1024xf16>
  // expected-error @+1 {{'rock.attention' op has dynamic block slots that are not read from a kernel argument (the block table, or kv_indices): the split count chosen at launch could not be derived from the argument sizes}}
  "rock.attention"(%q, %k, %v, %seq_lens, %out) {num_heads_q = 8, num_heads_kv = 2, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1>}
    : (memref<?x8x1x64xf16>, memref<?x?x1024xf16>, memref<?x?x1024xf16>, memref<?xi32>, memref<?x8x1x64xf16>) -> ()
  return
}
