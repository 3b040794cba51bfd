# RUN: %PYTHON %s | FileCheck %s
"""Loading the rock dialect into fresh, repeated and interleaved contexts; builders; OpView classes."""

import mlir.ir as ir
from mlir.dialects import func

import pagedir
from pagedir.dialect import rock

PAGED = """
func.func @f(%t: memref<2x8x1xi64>) {
  %k = "rock.deref"(%t) : (memref<2x8x1xi64>) -> memref<2x8x2048xf16>
  "rock.lds_barrier"() : () -> ()
  return
}
"""


def run(f):
    print(f"\nTEST: {f.__name__}")
    f()
    return f


# CHECK-LABEL: TEST: fresh_context
# CHECK: registered before: False
# CHECK: registered after: True
@run
def fresh_context():
    ctx = ir.Context()
    print("registered before:", ctx.is_registered_operation("rock.alloc"))
    pagedir.make_context(ctx)
    print("registered after:", ctx.is_registered_operation("rock.alloc"))


# CHECK-LABEL: TEST: repeated_loading
# CHECK: same context: True
# CHECK: "rock.deref"
@run
def repeated_loading():
    ctx = pagedir.make_context()
    again = pagedir.make_context(ctx)
    pagedir.make_context(ctx)
    print("same context:", again is ctx)
    with ctx:
        print(ir.Module.parse(PAGED))


# CHECK-LABEL: TEST: interleaved_contexts
# CHECK: a: DerefOp DerefOp
# CHECK: b: LdsBarrierOp
# CHECK: a still parses: True
@run
def interleaved_contexts():
    ctx_a = pagedir.make_context()
    ctx_b = pagedir.make_context()
    with ctx_a:
        mod_a = ir.Module.parse(PAGED)
    with ctx_b:
        mod_b = ir.Module.parse(PAGED)
        ops_b = list(mod_b.body.operations[0].regions[0].blocks[0].operations)
    with ctx_a:
        ops_a = list(mod_a.body.operations[0].regions[0].blocks[0].operations)
        again = ir.Module.parse(PAGED)
    print("a:", type(ops_a[0]).__name__, type(again.body.operations[0].regions[0].blocks[0].operations[0]).__name__)
    print("b:", type(ops_b[1]).__name__)
    print("a still parses:", again.operation.verify())


# CHECK-LABEL: TEST: opview_accessors
# CHECK: table type: memref<2x8x1xi64>
# CHECK: pages type: memref<2x8x2048xf16>
# CHECK: heads: 8 2 causal: False scale: None
# CHECK: seq_lens present: True
@run
def opview_accessors():
    with pagedir.make_context():
        module = ir.Module.parse(open(__file__.rsplit("/tests/", 1)[0] + "/examples/paged_decode.mlir").read())
        body = module.body.operations[0].regions[0].blocks[0].operations
        deref, attention = body[0], body[2]
        assert isinstance(deref, rock.DerefOp) and isinstance(attention, rock.AttentionOp)
        print("table type:", deref.table.type)
        print("pages type:", deref.pages.type)
        print("heads:", attention.num_heads_q, attention.num_heads_kv, "causal:", attention.causal, "scale:", attention.scale)
        print("seq_lens present:", attention.seq_lens is not None)


# CHECK-LABEL: TEST: builders
# CHECK: func.func @built(%[[T:.*]]: memref<1x4x1xi64>)
# CHECK: %[[LDS:.*]] = "rock.alloc"() : () -> memref<256xi8, #gpu.address_space<workgroup>>
# CHECK: "rock.live_in"(%[[LDS]])
# CHECK: %{{.*}} = "rock.deref"(%[[T]]) : (memref<1x4x1xi64>) -> memref<1x4x64xf16>
# CHECK: %[[TID:.*]] = "rock.workitem_id"() : () -> index
# CHECK: "rock.global_load"(%{{.*}}, %[[TID]], %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 0, 1>, page_size = 64 : i64}
# CHECK: verifies: True
# CHECK: builder signature: (result_type, mem, indices, valid, page_ptr, /, *, page_size=None, loc=None, ip=None)
@run
def builders():
    import inspect

    from pagedir.passes.verify import verify_rock_ops

    with pagedir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        f16, i64 = ir.F16Type.get(), ir.IntegerType.get_signless(64)
        table_type = ir.MemRefType.get([1, 4, 1], i64)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("built", ir.FunctionType.get([table_type], []))
            block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            lds_type = ir.MemRefType.get([256], ir.IntegerType.get_signless(8),
                                         memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>"))
            lds = rock.alloc(lds_type)
            rock.live_in(lds)
            pages = rock.deref(ir.MemRefType.get([1, 4, 64], f16), block.arguments[0])
            tid = rock.workitem_id(ir.IndexType.get())
            ptr = ir.Operation.create("arith.constant", results=[i64],
                                      attributes={"value": ir.IntegerAttr.get(i64, 0)}).result
            mem = ir.Operation.create("memref.alloca", results=[ir.MemRefType.get([1], f16)],
                                      attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])}).result
            rock.global_load(ir.VectorType.get([8], f16), mem, [tid], None, ptr, page_size=64)
            func.ReturnOp([])
        print(module)
        print("verifies:", module.operation.verify() and verify_rock_ops(module.operation))
    print("builder signature:", inspect.signature(rock.global_load))
