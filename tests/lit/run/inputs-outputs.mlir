// --inputs / --outputs round trip: arrays arg0, arg1, ... in argument order in,
// every argument after the run out; the summary lists each argument.
// RUN: %PYTHON -c "import numpy as np; np.savez('%t.in.npz', arg0=np.arange(64, dtype=np.float32), arg1=np.full(64, -1, np.float32), arg2=np.float32(0.5))"
// RUN: pagedir-run %s --entry axpy --inputs %t.in.npz --outputs %t.out.npz | FileCheck %s
// RUN: %PYTHON -c "import numpy as np; o = np.load('%t.out.npz'); print(sorted(o.files), o['arg1'][:3].tolist(), bool((o['arg1'] == 0.5 * np.arange(64) + 1).all()), bool((o['arg0'] == np.arange(64)).all()))" | FileCheck %s --check-prefix=OUT
// Without --inputs the data are random, the same for the same --seed.
// RUN: pagedir-run %s --entry axpy --seed 5 --outputs %t.a.npz
// RUN: pagedir-run %s --entry axpy --seed 5 --outputs %t.b.npz
// RUN: %PYTHON -c "import numpy as np; a, b = np.load('%t.a.npz'), np.load('%t.b.npz'); print(all((a[k] == b[k]).all() for k in a.files))" | FileCheck %s --check-prefix=SAME

// CHECK: @axpy: 2 workgroups x 32 threads, inputs from {{.*}}.in.npz
// CHECK-NEXT: arg0 memref<64xf32>: float32 [64] min 0 max 63 mean 31.5
// CHECK-NEXT: arg1 memref<64xf32>: float32 [64] min 1 max 32.5 mean 16.75
// CHECK-NEXT: arg2 f32: float32 [] min 0.5 max 0.5 mean 0.5
// OUT: ['arg0', 'arg1', 'arg2'] [1.0, 1.5, 2.0] True True
// SAME: True

// y = a * x - y, one element per thread.
func.func @axpy(%x: memref<64xf32>, %y: memref<64xf32>, %a: f32)
    attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 32 : i64, rock.grid_size = 2 : i64} {
  %bid = "rock.workgroup_id"() : () -> index
  %tid = "rock.workitem_id"() : () -> index
  %i = affine.apply affine_map<(b, t) -> (b * 32 + t)>(%bid, %tid)
  %xi = memref.load %x[%i] : memref<64xf32>
  %yi = memref.load %y[%i] : memref<64xf32>
  %ax = arith.mulf %a, %xi : f32
  %r = arith.subf %ax, %yi : f32
  memref.store %r, %y[%i] : memref<64xf32>
  return
}
