// RUN: pagedir-opt %s --rock-annotate-liveness --split-input-file --verify-diagnostics

// Written but never read.
func.func @never_read(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %a = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'rock.alloc' op found a non closed read-write pattern: LDS buffer %1 is written by 'memref.store' at line 10 but never read afterwards}}
  %c = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  %vc = memref.view %c[%c0][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<512xf32, #gpu.address_space<workgroup>>
  memref.store %x, %vc[%i] : memref<512xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// A range closed by its reads, then a trailing write nobody reads.
func.func @trailing_write(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{found a non closed read-write pattern: LDS buffer %0 is written by 'memref.store' at line 24}}
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  %1 = memref.load %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %1, %va[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @read_first(%i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'rock.alloc' op read before write: 'vector.load' at line 36 reads LDS buffer %0 before any write of its live range}}
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  %s = memref.subview %va[4] [8] [1] : memref<16xf32, #gpu.address_space<workgroup>> to memref<8xf32, strided<[1], offset: 4>, #gpu.address_space<workgroup>>
  %v = vector.load %s[%i] : memref<8xf32, strided<[1], offset: 4>, #gpu.address_space<workgroup>>, vector<4xf32>
  return
}

// -----

// A read inside a loop of a value the loop body writes later (loop-carried):
// the first iteration reads before any write.
func.func @loop_carried(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{read before write}}
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %c4 step %c1 {
    %1 = memref.load %va[%k] : memref<16xf32, #gpu.address_space<workgroup>>
    memref.store %x, %va[%k] : memref<16xf32, #gpu.address_space<workgroup>>
  }
  return
}

// -----

// One op reading and writing the same buffer (copy between two views of it).
func.func @copy_within(%x: f32) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'rock.alloc' op LDS buffer %0 is both read and written by one op, 'memref.copy' at line 69}}
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %lo = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<8xf32, #gpu.address_space<workgroup>>
  %c32 = arith.constant 32 : index
  %hi = memref.view %a[%c32][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<8xf32, #gpu.address_space<workgroup>>
  memref.store %x, %lo[%c0] : memref<8xf32, #gpu.address_space<workgroup>>
  memref.copy %lo, %hi : memref<8xf32, #gpu.address_space<workgroup>> to memref<8xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func private @opaque(memref<16xf32, #gpu.address_space<workgroup>>)

// A buffer passed to an op whose effects are unknown: reported at that op.
func.func @unknown_effects(%x: f32, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'func.call' op uses LDS buffer %0 but its memory effects are unknown}}
  func.call @opaque(%va) : (memref<16xf32, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// The buffer's address leaves as an integer: what reads it afterwards cannot be followed.
func.func @address_escapes(%x: f32, %i: index) -> index attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %va = memref.view %a[%c0][] : memref<64xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %x, %va[%i] : memref<16xf32, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'memref.extract_aligned_pointer_as_index' op uses LDS buffer %0 but its memory effects are unknown}}
  %p = memref.extract_aligned_pointer_as_index %va : memref<16xf32, #gpu.address_space<workgroup>> -> index
  return %p : index
}
