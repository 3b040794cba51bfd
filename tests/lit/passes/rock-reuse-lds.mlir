// RUN: pagedir-opt %s --rock-reuse-lds --split-input-file | FileCheck %s
// The same plans from unannotated input through both passes:
// RUN: pagedir-opt %s --rock-annotate-liveness --rock-reuse-lds --split-input-file | FileCheck %s

// A and B overlap, C comes after both: one 2048-byte pool, A at 0, B at 1024 (A
// comes first among equal sizes), C at 0, and one barrier right before C's first write.
// CHECK-LABEL: func.func @reuse_two
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: %[[OFF_A:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[POOL]][%[[OFF_A]]][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<1024xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[OFF_B:.*]] = arith.constant 1024 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[POOL]][%[[OFF_B]]][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<1024xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[OFF_C:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %[[POOL]][%[[OFF_C]]][] : memref<2048xi8, #gpu.address_space<workgroup>> to memref<2048xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: rock.live_
// CHECK-NOT: rock.lds_barrier
// CHECK: memref.load %[[B]]
// CHECK-NEXT: "rock.lds_barrier"() : () -> ()
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NOT: rock.lds_barrier
// CHECK-NOT: rock.live_
// CHECK: return
func.func @reuse_two(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %b[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  %2 = memref.load %b[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%c) : (memref<2048xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %1, %c[%i] : memref<2048xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %c[%i] : memref<2048xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%c) : (memref<2048xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// Two disjoint buffers of the same size share one allocation; a barrier separates them.
// CHECK-LABEL: func.func @samesize
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<16384xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: %[[OFF_A:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[POOL]][%[[OFF_A]]][]
// CHECK-NEXT: %[[OFF_B:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[POOL]][%[[OFF_B]]][]
// CHECK-NOT: rock.lds_barrier
// CHECK: memref.load %[[A]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NOT: rock.lds_barrier
// CHECK: return
func.func @samesize(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<16384xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<16384xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<16384xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<16384xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<16384xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<16384xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%b) : (memref<16384xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %1, %b[%i] : memref<16384xi8, #gpu.address_space<workgroup>>
  %2 = memref.load %b[%i] : memref<16384xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<16384xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// Two overlapping buffers: two allocations, each view at 0, no barrier.
// CHECK-LABEL: func.func @noreuse
// CHECK-NEXT: %[[P0:.*]] = "rock.alloc"() : () -> memref<16384xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[P1:.*]] = "rock.alloc"() : () -> memref<16384xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[OFF_A:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.view %[[P0]][%[[OFF_A]]][]
// CHECK-NEXT: %[[OFF_B:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.view %[[P1]][%[[OFF_B]]][]
// CHECK-NOT: rock.lds_barrier
// CHECK: return
func.func @noreuse(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<16384xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<16384xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<16384xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<16384xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%b) : (memref<16384xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %b[%i] : memref<16384xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<16384xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<16384xi8, #gpu.address_space<workgroup>>) -> ()
  %2 = memref.load %b[%i] : memref<16384xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<16384xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// (A, B) -> C -> (A, B) -> C: one pool, a barrier at each of the three
// transitions, none between A and B.
// CHECK-LABEL: func.func @multiple_liveness_ranges
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 1024 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: memref.load %[[C]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: memref.load %[[C]]
// CHECK-NEXT: return
func.func @multiple_liveness_ranges(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 1024 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %tid_hi = affine.apply affine_map<(t) -> (t + 1024)>(%tid)
  %a = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<2048xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%tid] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %b[%tid] : memref<1024xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  %2 = memref.load %b[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%c) : (memref<2048xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %1, %c[%tid] : memref<2048xi8, #gpu.address_space<workgroup>>
  memref.store %1, %c[%tid_hi] : memref<2048xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %c[%i] : memref<2048xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%c) : (memref<2048xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %3, %a[%tid] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %3, %b[%tid] : memref<1024xi8, #gpu.address_space<workgroup>>
  %4 = memref.load %a[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  %5 = memref.load %b[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%c) : (memref<2048xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %4, %c[%tid] : memref<2048xi8, #gpu.address_space<workgroup>>
  memref.store %4, %c[%tid_hi] : memref<2048xi8, #gpu.address_space<workgroup>>
  %6 = memref.load %c[%i] : memref<2048xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%c) : (memref<2048xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// An existing barrier between the two occupants already orders them: no new
// barrier. A new range of the same buffer never gets one either.
// CHECK-LABEL: func.func @existing_barrier_and_same_buffer
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK: %[[A:.*]] = memref.view %[[POOL]]
// CHECK: %[[B:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: return
func.func @existing_barrier_and_same_buffer(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.lds_barrier"() : () -> ()
  "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %1, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %2, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// Odd sizes: byte ranges are rounded up to 16 bytes. The colour runs (smallest
// first): B (50) takes 64 bytes at 0; A (100) overlaps B and goes after them, at 64;
// C (150) overlaps nothing and spans both, at 0: one 176-byte pool (first fit, A at 0
// and B at 112, is no smaller and needs as many barriers, so the colour runs stay).
// CHECK-LABEL: func.func @odd_sizes
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<176xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: arith.constant 64 : index
// CHECK-NEXT: memref.view %[[POOL]][%{{.*}}][] : memref<176xi8, #gpu.address_space<workgroup>> to memref<100xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: memref.view %[[POOL]][%{{.*}}][] : memref<176xi8, #gpu.address_space<workgroup>> to memref<50xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: memref.view %[[POOL]][%{{.*}}][] : memref<176xi8, #gpu.address_space<workgroup>> to memref<150xi8, #gpu.address_space<workgroup>>
func.func @odd_sizes(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<100xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<50xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<150xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<100xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<100xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%b) : (memref<50xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %b[%i] : memref<50xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<100xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<100xi8, #gpu.address_space<workgroup>>) -> ()
  %2 = memref.load %b[%i] : memref<50xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<50xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%c) : (memref<150xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %1, %c[%i] : memref<150xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %c[%i] : memref<150xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%c) : (memref<150xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// Fragmentation, placed largest first: E (48) overlaps nothing, at 0; D (32) at 0;
// A (16) at 0; B (16) overlaps A and D and goes after D, at 32; C (16) overlaps A
// only, at 16. One 48-byte pool (a 16-byte hole at 16 while B lives is reused by C).
// Barriers: before D (recycles A's and C's bytes) and before E; none before B (fresh bytes).
// CHECK-LABEL: func.func @fragmentation
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<48xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 32 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 16 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[D:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[E:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: memref.load %[[C]]
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[D]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: memref.load %[[D]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[E]]
func.func @fragmentation(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %d = "rock.alloc"() : () -> memref<32xi8, #gpu.address_space<workgroup>>
  %e = "rock.alloc"() : () -> memref<48xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%c) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %c[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %c[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%c) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%b) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %1, %b[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  %2 = memref.load %a[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%d) : (memref<32xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %2, %d[%i] : memref<32xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %b[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  %4 = memref.load %d[%i] : memref<32xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%d) : (memref<32xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%e) : (memref<48xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %4, %e[%i] : memref<48xi8, #gpu.address_space<workgroup>>
  %5 = memref.load %e[%i] : memref<48xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%e) : (memref<48xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// Among placements of as many bytes, the one with fewer new barriers: small buffers
// alias small ones where the kernel's own barrier already orders them. X (16) and
// Z (64) live together; after the kernel's barrier Z is read once more, then Y (16)
// comes. The colour runs (smallest first): X and Y share 16 bytes, Z gets 64 of its
// own (two pools, 80 bytes) and no new barrier: the existing one orders X before Y.
// First fit (Z at 0, X at 64, Y at 0 in Z's bytes, read after that barrier) is as
// big and needs a barrier before Y, so the colour runs stay.
// CHECK-LABEL: func.func @existing_barrier_orders_small_ones
// CHECK-NEXT: %[[SMALL:.*]] = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[BIG:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: %[[X:.*]] = memref.view %[[SMALL]]
// CHECK: %[[Z:.*]] = memref.view %[[BIG]]
// CHECK: %[[Y:.*]] = memref.view %[[SMALL]]
// CHECK-NEXT: memref.store %{{.*}}, %[[X]]
// CHECK-NEXT: memref.store %{{.*}}, %[[Z]]
// CHECK-NEXT: memref.load %[[X]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.load %[[Z]]
// CHECK-NEXT: memref.store %{{.*}}, %[[Y]]
// CHECK-NEXT: memref.load %[[Y]]
// CHECK-NEXT: return
func.func @existing_barrier_orders_small_ones(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %z = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %y = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%z) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %z[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.lds_barrier"() : () -> ()
  %2 = memref.load %z[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%z) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%y) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %2, %y[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %y[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%y) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// The mirror case: X (16) outlives Z (64) past the kernel's barrier, then Y (16).
// The colour runs put Y in X's bytes (a new barrier before Y, outside every loop);
// first fit puts Y in Z's bytes, which the existing barrier orders (none). As many
// bytes, and a barrier outside loops runs once: not worth another layout (on
// gfx942's LDS-DMA kernels first fit's extra pool cost more instructions in the
// loop than that barrier), so the colour runs stay.
// CHECK-LABEL: func.func @barrier_outside_loops_keeps_colour_runs
// CHECK-NEXT: %[[SMALL:.*]] = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[BIG:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: %[[X:.*]] = memref.view %[[SMALL]]
// CHECK: %[[Z:.*]] = memref.view %[[BIG]]
// CHECK: %[[Y:.*]] = memref.view %[[SMALL]]
// CHECK-NEXT: memref.store %{{.*}}, %[[X]]
// CHECK-NEXT: memref.store %{{.*}}, %[[Z]]
// CHECK-NEXT: memref.load %[[Z]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.load %[[X]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[Y]]
func.func @barrier_outside_loops_keeps_colour_runs(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  %z = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %y = "rock.alloc"() : () -> memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%z) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %z[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %z[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%z) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.lds_barrier"() : () -> ()
  %2 = memref.load %a[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%y) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %2, %y[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %y[%i] : memref<16xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%y) : (memref<16xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// A neighbour over several 16-byte units: A (64) then B (64) one after the other,
// then C (32) and D (48) together. The colour runs, smallest first: C at 0; D
// overlaps C and must stay off all of C's 32 bytes, not only its first 16: D at 32;
// A and B span both, at 0 (first fit, A, B and D at 0 and C at 48, is no better).
// One 80-byte pool; barriers before B (A's bytes) and before C (B's bytes, D's too).
// CHECK-LABEL: func.func @neighbour_over_several_ranges
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<80xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[POOL]]{{.*}} to memref<64xi8
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[POOL]]{{.*}} to memref<64xi8
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %[[POOL]]{{.*}} to memref<32xi8
// CHECK-NEXT: arith.constant 32 : index
// CHECK-NEXT: %[[D:.*]] = memref.view %[[POOL]]{{.*}} to memref<48xi8
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: memref.store %{{.*}}, %[[D]]
// CHECK-NEXT: memref.load %[[C]]
// CHECK-NEXT: memref.load %[[D]]
// CHECK-NEXT: return
func.func @neighbour_over_several_ranges(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<32xi8, #gpu.address_space<workgroup>>
  %d = "rock.alloc"() : () -> memref<48xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %1, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%c) : (memref<32xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %2, %c[%i] : memref<32xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%d) : (memref<48xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %2, %d[%i] : memref<48xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %c[%i] : memref<32xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%c) : (memref<32xi8, #gpu.address_space<workgroup>>) -> ()
  %4 = memref.load %d[%i] : memref<48xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%d) : (memref<48xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// A and B overlap only in the first phase, yet interference is per buffer: later
// A alone and B alone still use different bytes, so no barrier between them.
// C, alone at the end, reuses A's bytes and gets the one barrier.
// CHECK-LABEL: func.func @interfere_sometimes
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<128xi8, #gpu.address_space<workgroup>>
// CHECK: arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 64 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %[[POOL]]
// CHECK-NOT: rock.lds_barrier
// CHECK: memref.load %[[B]]
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NOT: rock.lds_barrier
// CHECK: return
func.func @interfere_sometimes(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<128xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %2, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %3 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %3, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %4 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%c) : (memref<128xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %4, %c[%i] : memref<128xi8, #gpu.address_space<workgroup>>
  %5 = memref.load %c[%i] : memref<128xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%c) : (memref<128xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// 2 x 40960 overlapping bytes = 81920: fits gfx950 (163840, chip taken from a full
// target string) but not gfx942 (see the -invalid test).
// CHECK-LABEL: func.func @big_on_gfx950
// CHECK-NEXT: "rock.alloc"() : () -> memref<40960xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: "rock.alloc"() : () -> memref<40960xi8, #gpu.address_space<workgroup>>
func.func @big_on_gfx950(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "amdgcn-amd-amdhsa:gfx950"} {
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

// A barrier needed inside scf.if goes before the scf.if: every thread must reach it.
// CHECK-LABEL: func.func @barrier_outside_if
// CHECK: %[[B:.*]] = memref.view
// CHECK: memref.load
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
func.func @barrier_outside_if(%x: i8, %i: index, %cond: i1) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  scf.if %cond {
    "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %1, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  }
  %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// One LDS buffer (private buffers do not count): only the annotations go.
// CHECK-LABEL: func.func @single_buffer
// CHECK-NEXT: %[[A:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<private>>
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: return
func.func @single_buffer(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %p = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<private>>
  "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// A then B in every iteration of a loop: they share bytes, so besides the barrier
// before B, B's accesses of iteration i must be ordered before A's first write of
// iteration i+1: a barrier at the top of the loop body, for the back edge.
// CHECK-LABEL: func.func @loop_back_edge
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: %[[A:.*]] = memref.view %[[POOL]]
// CHECK: %[[B:.*]] = memref.view %[[POOL]]
// CHECK-NOT: rock.lds_barrier
// CHECK: scf.for
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @loop_back_edge(%x: i8, %i: index, %n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %n step %c1 {
    "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %x, %a[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %1, %b[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  }
  return
}

// -----

// The kernel's own barrier at the end of the loop body already orders B against
// the next iteration's A (the KV loop of the attention kernel ends so): only the
// barrier before B.
// CHECK-LABEL: func.func @loop_ends_with_barrier
// CHECK: %[[A:.*]] = memref.view
// CHECK: %[[B:.*]] = memref.view
// CHECK: scf.for
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: }
func.func @loop_ends_with_barrier(%x: i8, %i: index, %n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %n step %c1 {
    "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %x, %a[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %1, %b[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    "rock.lds_barrier"() : () -> ()
  }
  return
}

// -----

// A in an inner loop, B after it in the outer one: B of outer iteration i meets
// A of outer iteration i+1. The barrier goes before the inner loop (once per
// outer iteration), not inside it.
// CHECK-LABEL: func.func @nested_loops
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK: %[[A:.*]] = memref.view %[[POOL]]
// CHECK: %[[B:.*]] = memref.view %[[POOL]]
// CHECK-NOT: rock.lds_barrier
// CHECK: scf.for
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: }
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @nested_loops(%x: i8, %i: index, %n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
      memref.store %x, %a[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
      %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
      "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    }
    "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %x, %b[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  }
  return
}

// -----

// C is written before the loop and read in it: live across every iteration, it
// interferes with A and B inside the loop (its own allocation), while A and B
// share bytes with a barrier before each (one for the back edge).
// CHECK-LABEL: func.func @live_across_loop
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[OWN:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK: %[[A:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[POOL]]
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %[[OWN]]
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: scf.for
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: memref.load %[[C]]
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @live_across_loop(%x: i8, %i: index, %n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%c) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %c[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  scf.for %k = %c0 to %n step %c1 {
    "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %x, %a[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %1, %b[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    %3 = memref.load %c[%k] : memref<64xi8, #gpu.address_space<workgroup>>
  }
  "rock.live_out"(%c) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  return
}

// -----

// C, done before the loop, and A, alone in the loop, share bytes: the barrier
// goes before the loop (once), not before A's first write in every iteration.
// CHECK-LABEL: func.func @barrier_before_loop
// CHECK: %[[A:.*]] = memref.view
// CHECK: %[[C:.*]] = memref.view
// CHECK-NEXT: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: memref.load %[[C]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @barrier_before_loop(%x: i8, %i: index, %n: index) attributes {rock.kernel, rock.arch = "gfx942"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %c = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%c) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %c[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %c[%i] : memref<64xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%c) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  scf.for %k = %c0 to %n step %c1 {
    "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %1, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    %2 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  }
  return
}

// -----

// A's first write is inside an scf.if of the loop body: the barrier for the back
// edge goes before that scf.if, still inside the loop.
// CHECK-LABEL: func.func @back_edge_into_if
// CHECK: %[[A:.*]] = memref.view
// CHECK: %[[B:.*]] = memref.view
// CHECK: scf.for
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: }
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: "rock.lds_barrier"
// CHECK-NEXT: memref.store %{{.*}}, %[[B]]
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: }
func.func @back_edge_into_if(%x: i8, %i: index, %n: index) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64} {
  %tid = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %c64 = arith.constant 64 : index
  %all = arith.cmpi ult, %tid, %c64 : index
  scf.for %k = %c0 to %n step %c1 {
    scf.if %all {
      "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
      memref.store %x, %a[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    }
    %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %1, %b[%tid] : memref<64xi8, #gpu.address_space<workgroup>>
    %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  }
  return
}

// -----

// A then B inside one scf.if: a barrier before the scf.if cannot order A's
// accesses against B's, and none may go inside it (the condition may differ
// between threads), so A and B keep their own bytes and get no barrier.
// CHECK-LABEL: func.func @both_in_one_if
// CHECK-NEXT: %[[P0:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[P1:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK: %[[A:.*]] = memref.view %[[P0]]
// CHECK: %[[B:.*]] = memref.view %[[P1]]
// CHECK-NOT: rock.lds_barrier
// CHECK: return
func.func @both_in_one_if(%x: i8, %i: index, %cond: i1) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  scf.if %cond {
    "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %1, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  }
  return
}

// -----

// A in the then branch, B in the else branch: never on one path, so they share
// bytes with no barrier.
// CHECK-LABEL: func.func @exclusive_branches
// CHECK-NEXT: %[[POOL:.*]] = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK-NOT: rock.lds_barrier
// CHECK: return
func.func @exclusive_branches(%x: i8, %i: index, %cond: i1) attributes {rock.kernel, rock.arch = "gfx942"} {
  %a = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<64xi8, #gpu.address_space<workgroup>>
  scf.if %cond {
    "rock.live_in"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %x, %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    %1 = memref.load %a[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%a) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  } else {
    "rock.live_in"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %x, %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    %2 = memref.load %b[%i] : memref<64xi8, #gpu.address_space<workgroup>>
    "rock.live_out"(%b) : (memref<64xi8, #gpu.address_space<workgroup>>) -> ()
  }
  return
}

// -----

// A carries a value over the loop's back edge (written at the end of an iteration, read at the
// start of the next, and before the loop); B is used in between. They never share bytes: two
// allocations, nothing placed over A while the loop runs.
// CHECK-LABEL: func.func @carried_over_back_edge
// CHECK-NEXT: %[[POOL_A:.*]] = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[POOL_B:.*]] = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: "rock.alloc"
// CHECK: memref.view %[[POOL_A]]
// CHECK: memref.view %[[POOL_B]]
// CHECK: scf.for
// CHECK-NOT: rock.live_
// CHECK: return
func.func @carried_over_back_edge(%arg0: memref<4x64xf32>, %arg1: memref<4x64xf32>) attributes {rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64, rock.kernel} {
  %0 = "rock.workitem_id"() : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %1 = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %2 = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
  %view = memref.view %1[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %view_0 = memref.view %2[%c0][] : memref<256xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
  %3 = memref.load %arg0[%c0, %0] : memref<4x64xf32>
  "rock.live_in"(%1) : (memref<256xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %3, %view[%0] : memref<64xf32, #gpu.address_space<workgroup>>
  "rock.lds_barrier"() : () -> ()
  scf.for %arg2 = %c0 to %c4 step %c1 {
    %4 = memref.load %view[%0] : memref<64xf32, #gpu.address_space<workgroup>>
    %5 = memref.load %arg0[%arg2, %0] : memref<4x64xf32>
    "rock.lds_barrier"() : () -> ()
    "rock.live_in"(%2) : (memref<256xi8, #gpu.address_space<workgroup>>) -> ()
    memref.store %5, %view_0[%0] : memref<64xf32, #gpu.address_space<workgroup>>
    "rock.lds_barrier"() : () -> ()
    %6 = memref.load %view_0[%0] : memref<64xf32, #gpu.address_space<workgroup>>
    "rock.live_out"(%2) : (memref<256xi8, #gpu.address_space<workgroup>>) -> ()
    %7 = arith.addf %4, %6 : f32
    memref.store %7, %arg1[%arg2, %0] : memref<4x64xf32>
    memref.store %7, %view[%0] : memref<64xf32, #gpu.address_space<workgroup>>
    "rock.lds_barrier"() : () -> ()
  }
  "rock.live_out"(%1) : (memref<256xi8, #gpu.address_space<workgroup>>) -> ()
  return
}
