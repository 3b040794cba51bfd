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
