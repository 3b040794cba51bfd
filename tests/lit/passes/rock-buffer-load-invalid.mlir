// RUN: pagedir-opt %s --rock-buffer-load --split-input-file --verify-diagnostics

// expected-error @+1 {{'func.func' op @no_arch names no chip: set rock.arch on the kernel or give the arch option (known chips: gfx908,}}
func.func @no_arch(%mem: memref<1x4x64xf16>, %off: index, %ptr: i64) -> f16 attributes {rock.kernel} {
  %x = "rock.global_load"(%mem, %off, %ptr) {page_size = 64, operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1x4x64xf16>, index, i64) -> f16
  return %x : f16
}

// -----

// expected-error @+1 {{'func.func' op @unknown_chip has rock.arch = "gfx1234": unknown chip 'gfx1234'; known chips:}}
func.func @unknown_chip(%mem: memref<1x4x64xf16>, %off: index, %ptr: i64) -> f16 attributes {rock.kernel, rock.arch = "gfx1234"} {
  %x = "rock.global_load"(%mem, %off, %ptr) {page_size = 64, operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1x4x64xf16>, index, i64) -> f16
  return %x : f16
}

// -----

func.func @strided_dense(%q: memref<6x8xf32, strided<[16, 1]>>, %r: index, %c: index) -> f32 attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.global_load' op needs an identity layout for a buffer load, got memref<6x8xf32, strided<[16, 1]>>}}
  %x = "rock.global_load"(%q, %r, %c) {operandSegmentSizes = array<i32: 1, 2, 0, 0>} : (memref<6x8xf32, strided<[16, 1]>>, index, index) -> f32
  return %x : f32
}

// -----

// A layout map that is no strided layout at all (a transpose as an affine map).
func.func @permuted_dense(%q: memref<6x8xf32, affine_map<(d0, d1) -> (d1, d0)>>, %r: index, %c: index) -> f32 attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.global_load' op needs an identity layout for a buffer load, got memref<6x8xf32, affine_map<(d0, d1) -> (d1, d0)>>}}
  %x = "rock.global_load"(%q, %r, %c) {operandSegmentSizes = array<i32: 1, 2, 0, 0>} : (memref<6x8xf32, affine_map<(d0, d1) -> (d1, d0)>>, index, index) -> f32
  return %x : f32
}

// -----

// A page of 2^31 halves is 2^32 bytes: num_records would wrap to 0.
func.func @page_of_4_gib(%mem: memref<1x2x2147483648xf16>, %off: index, %ptr: i64) -> vector<8xf16> attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.global_load' op page of 4294967296 bytes (2147483648 x 2) exceeds the 32-bit buffer range: num_records and the byte offsets of a 16-byte load reach 4294967312, the limit is 4294967296 (2^32)}}
  %x = "rock.global_load"(%mem, %off, %ptr) {page_size = 2147483648, operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1x2x2147483648xf16>, index, i64) -> vector<8xf16>
  return %x : vector<8xf16>
}

// -----

// 2^32 - 2 bytes fit num_records, but an invalid lane's offset (num_records)
// plus the 4 bytes it loads would wrap the 32-bit offset.
func.func @offset_past_2_32(%mem: memref<2147483647xf16>, %i: index, %valid: i1) -> vector<2xf16> attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.global_load' op buffer of 4294967294 bytes exceeds the 32-bit buffer range: num_records and the byte offsets of a 4-byte load reach 4294967298, the limit is 4294967296 (2^32)}}
  %x = "rock.global_load"(%mem, %i, %valid) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<2147483647xf16>, index, i1) -> vector<2xf16>
  return %x : vector<2xf16>
}

// -----

func.func @dense_of_4_gib(%q: memref<65536x32768xf16>, %r: index, %c: index) -> f16 attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.global_load' op buffer of 4294967296 bytes exceeds the 32-bit buffer range: num_records and the byte offsets of a 2-byte load reach 4294967298, the limit is 4294967296 (2^32)}}
  %x = "rock.global_load"(%q, %r, %c) {operandSegmentSizes = array<i32: 1, 2, 0, 0>} : (memref<65536x32768xf16>, index, index) -> f16
  return %x : f16
}
