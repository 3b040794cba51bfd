"""The interpreter runs linalg.generic as the loop nest of its definition, for every mix of iterator types and maps.

Each case is a small generic with random operands; the expected result is a plain-Python loop nest over all
dimensions in order, where each point reads the output element its map names (the init block argument) and
writes the yielded value back: a reduction dimension absent from an output accumulates in iteration order, one
present in it writes each of its elements at its own point.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pagedir.interp import Device, run
from pagedir.interp.launch import as_module

# (extents, iterator types, input maps, output maps, body) -- maps as tuples of dimension positions.
# The body is (mlir text, python function of the block arguments) with the inputs first, then the inits.
ADD_ACC = ("%r0 = arith.addf %a0, %o0 : f32\n    linalg.yield %r0 : f32", lambda a0, o0: [a0 + o0])
KEEP_FIRST_ACC = ("%r0 = arith.mulf %o0, %c : f32\n    %r1 = arith.addf %r0, %a0 : f32\n    linalg.yield %r1 : f32",
                  lambda a0, o0: [o0 * np.float32(0.5) + a0])
TWO_OUT = ("%r0 = arith.addf %a0, %o0 : f32\n    %r1 = arith.maximumf %a1, %o1 : f32\n    linalg.yield %r0, %r1 : f32, f32",
           lambda a0, a1, o0, o1: [a0 + o0, max(a1, o1)])
COPY_IN = ("linalg.yield %a0 : f32", lambda a0, o0: [a0])

CASES = {
    "parallel": ([3, 4], ["parallel", "parallel"], [(0, 1)], [(0, 1)], ADD_ACC),
    "reduction-absent": ([3, 4], ["parallel", "reduction"], [(0, 1)], [(0,)], ADD_ACC),
    "reduction-absent-order": ([3, 4], ["parallel", "reduction"], [(0, 1)], [(0,)], KEEP_FIRST_ACC),
    "reduction-outer-absent": ([4, 3], ["reduction", "parallel"], [(1, 0)], [(1,)], KEEP_FIRST_ACC),
    "reduction-present": ([3, 4], ["parallel", "reduction"], [(0, 1)], [(0, 1)], KEEP_FIRST_ACC),
    "reduction-present-copy": ([2, 5], ["parallel", "reduction"], [(0, 1)], [(0, 1)], COPY_IN),
    "reduction-present-permuted": ([2, 3, 4], ["reduction", "parallel", "reduction"], [(2, 0, 1)], [(1, 0)],
                                   KEEP_FIRST_ACC),
    "all-reduction-scalar": ([3, 2], ["reduction", "reduction"], [(1, 0)], [()], KEEP_FIRST_ACC),
    "permuted-output": ([2, 3, 4], ["parallel", "parallel", "reduction"], [(0, 2, 1)], [(1, 0)], KEEP_FIRST_ACC),
    "two-outputs-present-and-absent": ([3, 4], ["parallel", "reduction"], [(0, 1), (1, 0)], [(0,), (0, 1)], TWO_OUT),
    "parallel-absent-from-output": ([3, 4], ["parallel", "parallel"], [(0, 1)], [(1,)], KEEP_FIRST_ACC),
}


def affine(count: int, dims: tuple) -> str:
    names = [f"d{i}" for i in range(count)]
    return f"affine_map<({', '.join(names)}) -> ({', '.join(names[d] for d in dims)})>"


def shape_of(extents: list[int], dims: tuple) -> tuple[int, ...]:
    return tuple(extents[d] for d in dims)


def ttype(shape: tuple) -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}f32>"


def mtype(shape: tuple) -> str:
    return f"memref<{'x'.join(map(str, shape))}{'x' if shape else ''}f32>"


def payload(extents, kinds, in_maps, out_maps, body_text) -> str:
    n = len(extents)
    in_shapes = [shape_of(extents, m) for m in in_maps]
    out_shapes = [shape_of(extents, m) for m in out_maps]
    params = [f"%m{i}: {mtype(s)}" for i, s in enumerate(in_shapes + out_shapes)]
    lines = [f"func.func @g({', '.join(params)}) {{", "  %c = arith.constant 0.5 : f32"]
    for i, s in enumerate(in_shapes + out_shapes):
        lines.append(f"  %t{i} = bufferization.to_tensor %m{i} restrict : {mtype(s)} to {ttype(s)}")
    ins = [f"%t{i}" for i in range(len(in_shapes))]
    outs = [f"%t{len(in_shapes) + i}" for i in range(len(out_shapes))]
    maps = ", ".join(affine(n, m) for m in in_maps + out_maps)
    kinds_text = ", ".join(f'"{k}"' for k in kinds)
    args = [f"%a{i}: f32" for i in range(len(ins))] + [f"%o{i}: f32" for i in range(len(outs))]
    results = ", ".join(ttype(s) for s in out_shapes)
    lines += [
        f"  %r:{len(outs)} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{kinds_text}]}}"
        f" ins({', '.join(ins)} : {', '.join(ttype(s) for s in in_shapes)})"
        f" outs({', '.join(outs)} : {results}) {{",
        f"  ^bb0({', '.join(args)}):",
        f"    {body_text}",
        f"  }} -> ({results})",
    ]
    for i, s in enumerate(out_shapes):
        lines.append(f"  bufferization.materialize_in_destination %r#{i} in restrict writable "
                     f"%m{len(in_shapes) + i} : ({ttype(s)}, {mtype(s)}) -> ()")
    lines += ["  return", "}"]
    return "\n".join(lines)


def loop_nest(extents, in_maps, out_maps, body, inputs, inits):
    outs = [o.copy() for o in inits]
    for point in itertools.product(*(range(e) for e in extents)):
        ins = [x[tuple(point[d] for d in m)] for x, m in zip(inputs, in_maps)]
        indices = [tuple(point[d] for d in m) for m in out_maps]
        values = body(*ins, *(o[i] for o, i in zip(outs, indices)))
        for o, i, v in zip(outs, indices, values):
            o[i] = v
    return outs


@pytest.mark.parametrize("name", CASES)
def test_generic_runs_its_loop_nest(name):
    extents, kinds, in_maps, out_maps, (body_text, body) = CASES[name]
    module = as_module(payload(extents, kinds, in_maps, out_maps, body_text))
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(shape_of(extents, m)).astype(np.float32) for m in in_maps]
    inits = [rng.standard_normal(shape_of(extents, m)).astype(np.float32) for m in out_maps]
    outputs = run(module, "g", [*inputs, *(o.copy() for o in inits)], device=Device())
    expected = loop_nest(extents, in_maps, out_maps, body, inputs, inits)
    for got, want in zip(outputs[len(inputs):], expected):
        np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, rtol=1e-6, atol=1e-6)
