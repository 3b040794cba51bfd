# RUN: %PYTHON %s | FileCheck %s
"""pagedir passes and named pipelines in a user's own PassManager, as the README shows: no `with` block."""

from pathlib import Path

import mlir.ir as ir
from mlir.passmanager import PassManager

import pagedir
from pagedir.passes import OptionError
from pagedir.pipelines import add_pass

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "paged_decode.mlir"

TWO_BUFFERS = """
func.func @reuse(%x: i8, %i: index) attributes {rock.kernel, rock.arch = "gfx950"} {
  %a = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %b = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_in"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %x, %a[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  %1 = memref.load %a[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%a) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  "rock.live_in"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  memref.store %1, %b[%i] : memref<1024xi8, #gpu.address_space<workgroup>>
  "rock.live_out"(%b) : (memref<1024xi8, #gpu.address_space<workgroup>>) -> ()
  return
}
"""


def run(f):
    print(f"\nTEST: {f.__name__}")
    f()
    return f


# The README's example on a module whose live ranges are written out (README runs rock-annotate-liveness
# first; tests/unit/test_docs_examples.py runs it as written): the two buffers share one 1024-byte pool.
# CHECK-LABEL: TEST: readme_example
# CHECK: func.func @reuse
# CHECK-NEXT: "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
# CHECK-NOT: "rock.alloc"
@run
def readme_example():
    module = ir.Module.parse(TWO_BUFFERS, context=pagedir.make_context())
    pm = PassManager("builtin.module", context=module.context)
    add_pass(pm, "rock-reuse-lds", arch="gfx950")
    pm.run(module.operation)
    print(module)


# Both named pipelines through add_pass: L0 -> L6 -> LLVM dialect with ROCDL.
# CHECK-LABEL: TEST: named_pipelines
# CHECK: kernel pipeline steps: 10
# CHECK: gpu.func @paged_decode
# CHECK-SAME: kernel
# CHECK: backend pipeline steps: 14
# CHECK: llvm.func @paged_decode
# CHECK: rocdl.raw.ptr.buffer.load
@run
def named_pipelines():
    module = ir.Module.parse(EXAMPLE.read_text(), context=pagedir.make_context())
    pm = PassManager("builtin.module", context=module.context)
    print("kernel pipeline steps:", len(add_pass(pm, "rock-kernel-pipeline", arch="gfx942")))
    pm.run(module.operation)
    print(module)
    pm = PassManager("builtin.module", context=module.context)
    print("backend pipeline steps:", len(add_pass(pm, "rock-backend-pipeline", "arch=gfx942")))
    pm.run(module.operation)
    print(module)


# CHECK-LABEL: TEST: bad_names_and_options
# CHECK: no pagedir pass or pipeline named 'rock-no-such-pass' (known: {{.*}}rock-kernel-pipeline{{.*}}rock-reuse-lds
# CHECK: 'rock-backend-pipeline': needs arch=<chip> (e.g. arch=gfx942)
# CHECK: 'rock-kernel-pipeline' has no option 'chip' (options: arch)
@run
def bad_names_and_options():
    pm = PassManager("builtin.module", context=pagedir.make_context())
    for name, options in [("rock-no-such-pass", {}), ("rock-backend-pipeline", {}), ("rock-kernel-pipeline", {"chip": "x"})]:
        try:
            add_pass(pm, name, **options)
        except OptionError as err:
            print(err)
