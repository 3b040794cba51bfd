// RUN: pagedir-opt %s --rock-reuse-lds --split-input-file --verify-diagnostics

func.func @not_bytes(%i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.alloc' op LDS buffer element type must be i8, but it's 'f32' in memref<256xf32, #gpu.address_space<workgroup>>}}
  %a = "rock.alloc"() : () -> memref<256xf32, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<256xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @rank_two(%i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  // expected-error @+1 {{'rock.alloc' op rank should be 1, but it's 2 in memref<32x32xi8, #gpu.address_space<workgroup>>}}
  %a = "rock.alloc"() : () -> memref<32x32xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  return
}

// -----

// 2 x 40960 overlapping bytes do not fit the 64 KiB of gfx942.
// expected-error @+1 {{'func.func' op @too_big requires too much LDS memory: 81920 bytes (hardware max for gfx942 is 65536 bytes)}}
func.func @too_big(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<40960xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<40960xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<40960xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<40960xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%b) : (memref<40960xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %b[%i] : memref<40960xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<40960xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<40960xi8, #gpu.address_space<workgroup>>) -> ()
  %2 = memref.load %b[%i] : memref<40960xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<40960xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op @unknown_chip has rock.arch = "gfx1234": unknown chip 'gfx1234'}}
func.func @unknown_chip(%i: index) attributes {rock.kernel, rock.arch = "gfx1234"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @double_live_in(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  // expected-error @+1 {{'rock.live_in' op LDS buffer %0 is already live: the range opened at line 51 has no rock.live_out}}
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

func.func @live_out_without_live_in(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  // expected-error @+1 {{'rock.live_out' op LDS buffer %1 is not live: no rock.live_in opens this range}}
  "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

func.func @dangling_range(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  // expected-error @+1 {{'rock.live_in' op the live range of LDS buffer %1 is never closed by rock.live_out}}
  "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  return
}

// -----

// Even with a single LDS buffer the annotations must balance.
func.func @dangling_single(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  // expected-error @+1 {{never closed by rock.live_out}}
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// A buffer accessed without any live range would be overlaid with everything.
func.func @accessed_without_range(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.alloc' op LDS buffer %1 is accessed but has no live range (run rock-annotate-liveness first)}}
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  memref.store %x, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// No rock.arch and no arch option: no LDS limit to check against, an error rather than no check.
// expected-error @+1 {{'func.func' op @no_chip names no chip: set rock.arch on the kernel or give the arch option}}
func.func @no_chip(%i: index) attributes {rock.kernel} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  return
}
