"""``lds_swizzle`` on rock.blockwise_load_tile: where the interpreter puts a swizzled tile's elements
(the table below is written from the op's description in docs/rock.md, not from the code), and
rock-blockwise-load storing them there too."""

from __future__ import annotations

import mlir.ir as ir
import numpy as np
import pytest

from pagedir.context import make_context
from pagedir.interp.check import check_pass
from pagedir.interp.launch import run

KERNEL = """
func.func @swizzled_tile(%src: memref<16x32xf16>, %out: memref<512xf16>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 64 : i64, rock.grid_size = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %raw = "rock.alloc"() : () -> memref<1024xi8, #gpu.address_space<workgroup>>
  %tile = memref.view %raw[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<16x32xf16, #gpu.address_space<workgroup>>
  %flat = memref.view %raw[%c0][] : memref<1024xi8, #gpu.address_space<workgroup>> to memref<512xf16, #gpu.address_space<workgroup>>
  "rock.blockwise_load_tile"(%src, %tile) {map = affine_map<(n, d) -> (n, d)>, block_size = 64, lds_swizzle = array<i64: SWIZZLE>, operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x32xf16>, memref<16x32xf16, #gpu.address_space<workgroup>>) -> ()
  %t = "rock.workitem_id"() : () -> index
  scf.for %i = %c0 to %c8 step %c1 {
    %e = affine.apply affine_map<(d0, d1) -> (d0 * 64 + d1)>(%i, %t)
    %v = memref.load %flat[%e] : memref<512xf16, #gpu.address_space<workgroup>>
    memref.store %v, %out[%e] : memref<512xf16>
  }
  return
}
"""

#: (swizzle [c, s, n, m], {(row, column): the flat element of the 16 x 32 tile holding it}), by hand:
#: chunk k = column div c of row r goes to chunk k xor ((r div s) mod n) * m of the row.
CASES = [
    ([4, 1, 4, 1], {(0, 0): 0, (1, 0): 32 + 4, (1, 5): 32 + 0 + 1, (3, 9): 96 + 4 + 1, (5, 31): 160 + 24 + 3}),
    ([8, 4, 2, 2], {(3, 0): 96, (4, 0): 128 + 16, (4, 17): 128 + 0 + 1, (9, 30): 288 + 30, (5, 17): 160 + 1}),
    ([2, 1, 16, 1], {(15, 0): 480 + 30, (15, 31): 480 + 0 + 1, (2, 6): 64 + 2}),
]


def module(swizzle: list[int]) -> ir.Module:
    return ir.Module.parse(KERNEL.replace("SWIZZLE", ", ".join(map(str, swizzle))))


@pytest.mark.parametrize(("swizzle", "places"), CASES)
def test_the_interpreter_stores_a_swizzled_tile_as_documented(swizzle, places) -> None:
    source = np.arange(512, dtype=np.float16).reshape(16, 32)
    with make_context():
        out = run(module(swizzle), "swizzled_tile", [source, np.zeros(512, np.float16)])[1]
    for (row, column), flat in places.items():
        assert out[flat] == source[row, column], (row, column)
    assert sorted(out.tolist()) == sorted(source.reshape(-1).tolist())  # every element once


@pytest.mark.parametrize(("swizzle", "places"), CASES)
def test_rock_blockwise_load_stores_where_the_op_says(swizzle, places) -> None:
    with make_context():
        result = check_pass(module(swizzle), "rock-blockwise-load")
    assert result.functions and all(f.error is None for f in result.functions)
