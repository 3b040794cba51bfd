"""The launch plan of an L6 module: what a runtime needs to launch its kernels.

A module may hold several kernels: a split-KV attention kernel (``rock.combine``
names the kernel launched after it on the same arguments, ``rock.workspace_bytes``
the size of the workspace argument it appends) and its combine kernel. The plan
lists, per ``gpu.func`` kernel, its symbol and ``gpu.module``, grid and block
(``known_grid_size`` / ``known_block_size``), the LDS its workgroup attributions
take, its arguments in order (shape, element type, bytes; the workspace marked),
its workspace bytes (a combine kernel: the workspace it reads); then the module's workspace
total (one buffer per split kernel, shared with its combine kernel) and the order of launches:
every kernel that is not another's combine kernel, each followed by its combine.

The workspace may hold anything when the first kernel starts: every slot the
combine kernel reads is written by the split kernel before (``pagedir.interp``
runs plans with a NaN-filled workspace to hold the kernels to it).

A kernel with dynamic sizes (``pagedir-gen attention --dynamic``) has ``"grid": null``
and ``"grid_formula"``: its workgroups are ``affine_map`` (``rock.grid_map``) applied to
the argument sizes ``inputs`` names, also written as ``expression``, a plan expression
(:mod:`pagedir.backend.formula`) in ``arguments[i].shape[d]``; ``shape`` has ``null`` for each
``?`` size and ``bytes`` is null. After the pointers, such a kernel takes one index
(64-bit) argument per ``?`` size, listed in ``size_arguments`` (argument, dim) in order.

:func:`launch_plan` takes the module (at L6: ``gpu.func`` kernels with their
``rock.*`` attributes, as ``rock-to-gpu`` leaves them); ``pagedir-compile
--plan=FILE.json`` writes :func:`to_json` of it.
"""

from __future__ import annotations

import json
from typing import Any

import mlir.ir as ir

from pagedir.backend import split_kv

FORMAT = 1


def _kernels(module: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "gpu.func" and "gpu.kernel" in op.attributes:
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _int(op: ir.Operation, name: str, default: int = 0) -> int:
    return ir.IntegerAttr(op.attributes[name]).value if name in op.attributes else default


def _dims(op: ir.Operation, name: str, fallback: str) -> list[int]:
    if name in op.attributes:
        return [int(v) for v in ir.DenseI32ArrayAttr(op.attributes[name])]
    return [_int(op, fallback, 1), 1, 1]


def _bytes(type_: ir.MemRefType) -> int | None:
    if not type_.has_static_shape:
        return None  # known at launch: the product of the sizes given
    count = 1
    for extent in type_.shape:
        count *= extent
    element = type_.element_type
    width = ir.IntegerType(element).width if isinstance(element, ir.IntegerType) else ir.FloatType(element).width
    return count * max(1, width // 8)


def _symbol(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def kernel_entry(kernel: ir.Operation) -> dict[str, Any]:
    function_type = ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value)
    inputs = list(function_type.inputs)
    workspace = _int(kernel, "rock.workspace_bytes")
    # The workspace: a split kernel's last memref argument (index size arguments may follow it).
    memrefs = [i for i, t in enumerate(inputs) if isinstance(t, ir.MemRefType)]
    workspace_index = memrefs[-1] if "rock.combine" in kernel.attributes and memrefs else None
    workgroup = _int(kernel, "workgroup_attributions")
    attributions = list(kernel.regions[0].blocks[0].arguments)[len(inputs): len(inputs) + workgroup]
    arguments = []
    for index, type_ in enumerate(inputs):
        entry: dict[str, Any] = {"index": index}
        if isinstance(type_, ir.MemRefType):
            memref = ir.MemRefType(type_)
            shape = [None if memref.is_dynamic_dim(d) else memref.shape[d] for d in range(memref.rank)]
            entry.update(shape=shape, dtype=str(memref.element_type), bytes=_bytes(memref))
        else:
            entry.update(dtype=str(type_))
        entry["workspace"] = index == workspace_index
        arguments.append(entry)
    return {
        "symbol": _symbol(kernel),
        "gpu_module": _symbol(kernel.parent),
        "arch": ir.StringAttr(kernel.attributes["rock.arch"]).value if "rock.arch" in kernel.attributes else None,
        "grid": None if "rock.grid_map" in kernel.attributes else _dims(kernel, "known_grid_size", "rock.grid_size"),
        "grid_formula": grid_formula(kernel),
        "size_arguments": size_arguments(inputs),
        "block": _dims(kernel, "known_block_size", "rock.block_size"),
        "lds_bytes": sum(_bytes(ir.MemRefType(a.type)) for a in attributions),
        "arguments": arguments,
        "workspace_bytes": workspace if "rock.split_map" not in kernel.attributes or workspace else None,
        "then": ir.StringAttr(kernel.attributes["rock.combine"]).value if "rock.combine" in kernel.attributes else None,
        **split_entries(kernel, workspace_index),
    }


def split_entries(kernel: ir.Operation, workspace_index: int | None) -> dict[str, Any]:
    """A split kernel's split count: ``split_model``, the cost model's inputs and estimate for the
    count chosen at compile time; or with dynamic sizes ``num_splits_formula``: the inputs as plan
    expressions (:mod:`pagedir.backend.formula`) in ``arguments[i].shape[d]``, the model's integer
    constants, the count as an ``expression`` of them
    (:data:`pagedir.backend.split_kv.SPLIT_EXPRESSION`; a fixed count, ``--num-splits N`` with
    ``--dynamic``, is the constant ``N``) and the workspace's shape ``[num_splits, partial_bytes //
    4]`` (f32: its dim 0 carries the count, static for a fixed one) and ``workspace_bytes``,
    ``num_splits * partial_bytes``."""
    if "rock.split_map" not in kernel.attributes:
        return {}
    split_map = ir.AffineMapAttr(kernel.attributes["rock.split_map"]).value
    pairs = list(ir.DenseI64ArrayAttr(kernel.attributes["rock.split_sizes"]))
    constants = split_kv.model_constants(kernel)
    if split_map.n_dims == 0:  # static sizes: chosen at compile time
        values = [ir.AffineConstantExpr(e).value for e in split_map.results]
        inputs = split_kv.SplitInputs(**dict(zip(split_kv.LAUNCH_INPUTS, values)), **constants)
        chosen = ir.IntegerAttr(ir.DictAttr(kernel.attributes["rock.split_model"])["num_splits"]).value
        return {"split_model": split_kv.explain(inputs, chosen)}
    sizes = [{"argument": pairs[i], "dim": pairs[i + 1]} for i in range(0, len(pairs), 2)]
    formula = {name: map_expression(split_map, sizes, result) for result, name in enumerate(split_kv.LAUNCH_INPUTS)}
    fixed = ir.IntegerAttr(ir.DictAttr(kernel.attributes["rock.split_model"])["num_splits"]).value
    return {"num_splits_formula": {
        "inputs": formula,
        "constants": split_kv.plan_constants(kernel),
        "expression": str(fixed) if fixed else split_kv.SPLIT_EXPRESSION,
        "workspace_shape": list(split_kv.WORKSPACE_SHAPE),
        "workspace_bytes": split_kv.WORKSPACE_BYTES,
        "workspace_argument": workspace_index,
    }}


def map_expression(affine_map: ir.AffineMap, inputs: list[dict[str, int]], result: int = 0) -> str:
    """Result ``result`` of ``affine_map`` as a plan expression (:mod:`pagedir.backend.formula`) in
    ``arguments[i].shape[d]``: dims, then symbols, are the sizes ``inputs`` names (``floordiv`` is
    ``//``, ``mod`` is ``%``)."""
    expression = str(affine_map.results[result])
    names = [f"d{i}" for i in range(affine_map.n_dims)] + [f"s{i}" for i in range(affine_map.n_symbols)]
    for position, name in reversed(list(enumerate(names))):  # d10 before d1
        size = inputs[position]
        expression = expression.replace(name, f"arguments[{size['argument']}].shape[{size['dim']}]")
    return expression.replace("floordiv", "//").replace(" mod ", " % ")


def grid_formula(kernel: ir.Operation) -> dict[str, Any] | None:
    """A dynamic kernel's grid: ``rock.grid_map`` over the argument sizes ``rock.grid_sizes`` names,
    as the map, its inputs ((argument, dim) each) and an expression in ``arguments[i].shape[d]``."""
    if "rock.grid_map" not in kernel.attributes:
        return None
    grid_map = ir.AffineMapAttr(kernel.attributes["rock.grid_map"]).value
    pairs = list(ir.DenseI64ArrayAttr(kernel.attributes["rock.grid_sizes"]))
    inputs = [{"argument": pairs[i], "dim": pairs[i + 1]} for i in range(0, len(pairs), 2)]
    return {"affine_map": str(grid_map), "inputs": inputs, "expression": map_expression(grid_map, inputs)}


def size_arguments(inputs: list[ir.Type]) -> list[dict[str, int]]:
    """The index arguments a kernel with dynamic sizes takes after its pointers: one per ``?`` size,
    in argument then dim order (:mod:`pagedir.backend.dynamic_abi`)."""
    return [{"argument": index, "dim": dim} for index, type_ in enumerate(inputs) if isinstance(type_, ir.MemRefType)
            for dim in range(ir.MemRefType(type_).rank) if ir.MemRefType(type_).is_dynamic_dim(dim)]


def launch_plan(module: ir.Operation) -> dict[str, Any]:
    """The plan of every ``gpu.func`` kernel of ``module`` (see the module docstring)."""
    kernels = [kernel_entry(k) for k in _kernels(module)]
    by_symbol = {k["symbol"]: k for k in kernels}
    combines = {k["then"] for k in kernels if k["then"]}
    order: list[str] = []
    for kernel in kernels:
        if kernel["symbol"] in combines:
            continue
        order.append(kernel["symbol"])
        if kernel["then"] in by_symbol:
            order.append(kernel["then"])
            combine = by_symbol[kernel["then"]]  # reads the same workspace, the same last argument
            combine["workspace_bytes"] = kernel["workspace_bytes"]
            for mine, theirs in zip(kernel["arguments"], combine["arguments"]):
                theirs["workspace"] = mine["workspace"]
    return {
        "format": FORMAT,
        "kernels": kernels,
        # null when a split count chosen at launch sizes a workspace (num_splits_formula)
        "workspace_bytes": (None if any(k["workspace_bytes"] is None for k in kernels)
                            else sum(k["workspace_bytes"] for k in kernels if k["symbol"] not in combines)),
        "launch_order": order,
    }


def to_json(plan: dict[str, Any]) -> str:
    return json.dumps(plan, indent=1) + "\n"
