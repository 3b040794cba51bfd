"""Find a function, bind its arguments to device memory, pick the launch size, run it.

Functions that can run: an L0/L1 ``func.func`` (one thread), a rock kernel
(``func.func`` with ``rock.kernel``: ``rock.block_size`` threads per workgroup,
``rock.grid_size`` workgroups) and a ``gpu.func`` kernel of a ``gpu.module``
(``known_block_size`` / ``known_grid_size``, else the rock attributes). Its
workgroup and private attributions get fresh LDS / private buffers.
"""

from __future__ import annotations

from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir.arch import MAX_GRID_SIZE, MAX_WORKGROUP_SIZE
from pagedir.backend import formula, plan, split_kv

from pagedir.interp import (  # noqa: F401 - register the op handlers
    ops_arith, ops_control, ops_gpu, ops_lds_dma, ops_linalg, ops_matrix, ops_memory, ops_nvgpu, ops_nvvm, ops_rock)
from pagedir.interp.inputs import argument_names, check_inputs
from pagedir.interp.memory import BASE, Device, DeviceArray, InterpError, check_memory_limit, storage_array
from pagedir.interp.ops_memory import MemRef, row_major, type_strides
from pagedir.interp.simt import Program, Runtime, elem_of


def parsed(module: Any) -> Any:
    """MLIR text parsed in a fresh pagedir context (an ``ir.Module``: its operation lives as long as it
    does, so the caller keeps it); anything else as it is."""
    if not isinstance(module, str):
        return module
    from pagedir.context import make_context

    with make_context():
        return ir.Module.parse(module)


def as_module(module: Any) -> ir.Operation:
    """An ``ir.Module``, its operation, or MLIR text (:func:`parsed`; a caller running it keeps that instead)."""
    if isinstance(module, str):
        return parsed(module).operation
    if isinstance(module, ir.Module):
        return module.operation
    return module.operation if hasattr(module, "operation") else module


def functions(module: ir.Operation) -> list[ir.Operation]:
    """Every ``func.func`` and ``gpu.func`` in the module, outermost first."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("func.func", "gpu.func"):
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def symbol_name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def find_function(module: ir.Operation, entry: str) -> ir.Operation:
    candidates = [f for f in functions(module) if symbol_name(f) == entry and len(f.regions[0].blocks) > 0]
    if not candidates:
        names = ", ".join(symbol_name(f) for f in functions(module)) or "none"
        raise InterpError(f"no function @{entry} in the module (functions: {names})")
    return candidates[0]


def _attr_int(op: ir.Operation, name: str) -> int | None:
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    try:
        return int(list(ir.DenseI32ArrayAttr(attr))[0])
    except (ValueError, TypeError):
        return int(list(ir.DenseI64ArrayAttr(attr))[0])


def _first_given(*values: int | None) -> int:
    """The first attribute that is there (a 0 given is a 0, not a missing attribute)."""
    return next(v for v in values if v is not None)




def grid_formula(func: ir.Operation, shapes: list[tuple] | None) -> int | None:
    """Workgroups from the launch plan's ``grid_formula`` (``rock.grid_map`` applied to the argument
    sizes ``rock.grid_sizes`` names), evaluated on the argument ``shapes`` by the plan's evaluator;
    None when the function has no formula."""
    rule = plan.grid_formula(func)
    if rule is None:
        return None
    try:
        return formula.evaluate(rule["expression"], shapes=shapes)
    except formula.FormulaError as err:
        raise InterpError(f"@{symbol_name(func)}: {err}", func.location) from None


def launch_size(func: ir.Operation, grid: Any = None, shapes: list[tuple] | None = None) -> tuple[int, int]:
    """(workgroups, threads per workgroup) from the function's attributes (a grid formula evaluated on
    the argument ``shapes``) or ``grid``."""
    by_formula = grid_formula(func, shapes) if grid is None and shapes is not None else None
    if by_formula is not None:
        block = _first_given(_attr_int(func, "known_block_size"), _attr_int(func, "rock.block_size"), 1)
        groups = by_formula
    elif func.name == "gpu.func":
        block = _first_given(_attr_int(func, "known_block_size"), _attr_int(func, "rock.block_size"), 1)
        groups = _first_given(_attr_int(func, "known_grid_size"), _attr_int(func, "rock.grid_size"), 1)
    elif "rock.kernel" in func.attributes:
        block = _first_given(_attr_int(func, "rock.block_size"), 1)
        groups = _first_given(_attr_int(func, "rock.grid_size"), 1)
    else:
        block, groups = 1, 1
    if isinstance(grid, (tuple, list)):
        groups, block = int(grid[0]), int(grid[1])
    elif grid is not None:
        groups = int(grid)
    if not 1 <= block <= MAX_WORKGROUP_SIZE:
        raise InterpError(f"@{symbol_name(func)} launches {block} threads per workgroup: a workgroup has 1 to "
                          f"{MAX_WORKGROUP_SIZE} threads", func.location)
    # A grid formula gives 0 workgroups for an empty batch: a launch that runs nothing, as on a GPU.
    fewest = 0 if by_formula is not None else 1
    if not fewest <= groups <= MAX_GRID_SIZE:
        raise InterpError(f"@{symbol_name(func)} launches {groups} workgroups: workgroup ids are 32-bit, {fewest} to "
                          f"{MAX_GRID_SIZE} workgroups", func.location)
    return groups, block


def wave_size(func: ir.Operation) -> int:
    """``rock.wave_size``, else the wave size of the function's chip (``pagedir.arch.kernel_chip``)."""
    explicit = _attr_int(func, "rock.wave_size")
    if explicit:
        return explicit
    from pagedir.arch import ChipError, kernel_chip

    try:
        return kernel_chip(func).wave_size
    except ChipError as err:
        raise InterpError(str(err), func.location) from None


def argument_count(func: ir.Operation) -> int:
    """Arguments proper (a gpu.func's block also holds its attributions)."""
    if func.name == "gpu.func":
        function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
        return len(function_type.inputs)
    return len(func.regions[0].blocks[0].arguments)


def check_arguments(func: ir.Operation) -> None:
    """Arguments the interpreter can hold: static memrefs and scalars, within MEMORY_LIMIT in all.

    Checked before any data is drawn or uploaded, at the function: the pages behind
    each ``rock.deref`` table count too.
    """
    from pagedir.dialect.types import memref_bytes, strides_and_offset

    total = 0
    for index, argument in enumerate(list(func.regions[0].blocks[0].arguments)[: argument_count(func)]):
        type_ = argument.type
        if isinstance(type_, ir.MemRefType):
            if not type_.has_static_shape:  # dynamic sizes come from the arrays given (bind_argument)
                if type_.layout != ir.AffineMapAttr.get(ir.AffineMap.get_identity(type_.rank)):
                    raise InterpError(f"argument {index} has type {type_}: the interpreter runs memref arguments "
                                      "with the identity (row-major, offset 0) layout", func.location)
                continue
            layout = strides_and_offset(type_)
            if layout is None or layout != (list(row_major(tuple(type_.shape))), 0):
                # Host arrays are uploaded row-major from offset 0: any other layout would be read wrongly.
                raise InterpError(f"argument {index} has type {type_}: the interpreter runs memref arguments with "
                                  "the identity (row-major, offset 0) layout", func.location)
            total += memref_bytes(type_)
        elif not isinstance(type_, (ir.IntegerType, ir.IndexType, ir.FloatType)):
            raise InterpError(f"argument {index} has type {type_}: the interpreter passes memrefs and integer, "
                              "index or float scalars", func.location)
        try:
            elem_of(type_)
        except InterpError as err:
            raise InterpError(f"argument {index} has type {type_}: {err.message}", func.location) from None

    def pages(op: ir.Operation) -> ir.WalkResult:
        nonlocal total
        if op.name == "rock.deref" and isinstance(op.results[0].type, ir.MemRefType) and op.results[0].type.has_static_shape:
            total += memref_bytes(ir.MemRefType(op.results[0].type))
        return ir.WalkResult.ADVANCE

    func.walk(pages)
    check_memory_limit(f"the arguments of @{symbol_name(func)}", total, location=func.location)


class Bound:
    """An argument bound to the device: its value for the interpreter and how to read it back."""

    def __init__(self, value: Any, readback: Any):
        self.value = value
        self.readback = readback


def argument_shape(type_: ir.MemRefType, arg: Any, index: int) -> tuple:
    """The shape an argument is bound with: the type's, its ``?`` sizes taken from the array given."""
    if type_.has_static_shape:
        return tuple(type_.shape)
    given = tuple(np.shape(arg)) if not isinstance(arg, DeviceArray) else ()
    if len(given) != type_.rank or any(not type_.is_dynamic_dim(d) and given[d] != type_.shape[d] for d in range(type_.rank)):
        raise InterpError(f"argument {index}: an array of shape {given} does not fit {type_} (its '?' sizes are "
                          "taken from the array, the others must match)")
    return given


def bind_argument(device: Device, type_: ir.Type, arg: Any, index: int) -> Bound:
    if isinstance(type_, ir.MemRefType):
        elem = elem_of(type_)
        shape = argument_shape(type_, arg, index)
        count = 1
        for extent in shape:
            count *= extent
        if isinstance(arg, DeviceArray):
            allocation = arg
            if allocation.nbytes < count * elem.size:
                raise InterpError(f"argument {index}: {allocation.nbytes} bytes given for {type_}")
        else:
            array = np.asarray(arg)
            if array.size != count:
                raise InterpError(f"argument {index}: {array.shape} given for {type_} ({count} elements)")
            allocation = device.upload(storage_array(array, elem).reshape(shape))
        base = np.array([allocation.address], dtype=np.int64)
        memref = MemRef(device, base, base, shape, type_strides(type_) if type_.has_static_shape else row_major(shape), elem)

        def readback() -> np.ndarray:
            start = allocation.address - BASE
            raw = device._bytes[start : start + count * elem.size].view(elem.storage)
            values = elem.to_compute(raw) if elem.storage != elem.compute else raw.copy()  # bf16, fp8: decoded
            return values.reshape(shape)

        return Bound(memref, readback)
    elem = elem_of(type_)
    value = np.asarray(arg)
    if value.size != 1:
        raise InterpError(f"argument {index}: {value.shape} given for the scalar {type_}")
    value = value.reshape(1).astype(elem.compute)
    return Bound(value, lambda: value[0].copy())


def attribution_setup(func: ir.Operation, first_attribution: int) -> Any:
    """Allocate a gpu.func's workgroup and private attributions for each batch."""
    if func.name != "gpu.func":
        return None
    block_args = list(func.regions[0].blocks[0].arguments)[first_attribution:]
    workgroup = _attr_int(func, "workgroup_attributions") or 0

    def setup(rt: Runtime, env: list) -> None:
        from pagedir.dialect.types import memref_bytes

        for number, argument in enumerate(block_args):
            type_ = ir.MemRefType(argument.type)
            kind = "lds" if number < workgroup else "private"
            label = f"{'workgroup' if kind == 'lds' else 'private'} attribution {number} of {memref_bytes(type_)} bytes"
            space = rt.space(-1 - number, kind, memref_bytes(type_), label, func.location)
            shape = tuple(type_.shape)
            env[rt.program.slot(argument)] = MemRef(space, space.lane_base, space.lane_base, shape, row_major(shape), elem_of(type_))

    return setup


def combine_kernel(func: ir.Operation) -> ir.Operation | None:
    """The kernel ``rock.combine`` names (launched after ``func`` on the same arguments), if any."""
    if "rock.combine" not in func.attributes:
        return None
    name = ir.StringAttr(func.attributes["rock.combine"]).value
    root = func
    while root.parent is not None:
        root = root.parent
    for candidate in functions(root):
        if symbol_name(candidate) == name and len(candidate.regions[0].blocks) > 0:
            return candidate
    raise InterpError(f"@{symbol_name(func)} has rock.combine = \"{name}\" but the module has no @{name}", func.location)


def launch_plan(func: ir.Operation) -> list[ir.Operation]:
    """The kernels one call of ``func`` launches, in order: ``func``, then its combine kernel (split-KV)."""
    combine = combine_kernel(func)
    return [func] if combine is None else [func, combine]


def workspace_given(func: ir.Operation, args: list) -> list:
    """``args`` with the workspace of a split kernel appended when the caller left it out: filled with
    NaN, since a runtime hands over memory in any state and the kernels must write what they read.
    A workspace with dynamic sizes has the shape the plan's ``num_splits_formula`` gives for these
    arguments (:func:`launch_splits`), as a runtime following the plan would allocate it."""
    if "rock.combine" not in func.attributes or len(args) != argument_count(func) - 1:
        return args
    type_ = ir.MemRefType(list(func.regions[0].blocks[0].arguments)[argument_count(func) - 1].type)
    if type_.has_static_shape:
        shape = tuple(type_.shape)
    else:
        shapes = [np.shape(a) for a in args]
        splits, names = launch_splits(func, shapes)
        rule = split_formula(func)
        shape = tuple(formula.evaluate(text, {**names, "num_splits": splits}, shapes) for text in rule["workspace_shape"])
    return args + [np.full(shape, np.nan, dtype=np.float32)]


def split_formula(func: ir.Operation) -> dict[str, Any]:
    """The launch plan's ``num_splits_formula`` of a kernel whose split count is known at launch."""
    return plan.split_entries(func, argument_count(func) - 1)["num_splits_formula"]


def launch_splits(func: ir.Operation, shapes: list[tuple]) -> tuple[int, dict[str, int]]:
    """The split count of a kernel with dynamic sizes and the values its formula names: the plan's
    ``num_splits_formula`` (the cost model's inputs from the kernel's ``rock.split_map`` on the sizes
    ``rock.split_sizes`` names, with ``rock.split_model``; or the count fixed at compile time) evaluated
    on the argument ``shapes`` by the plan's evaluator, as a runtime does."""
    return split_kv.split_count(split_formula(func), shapes)


def run_function(func: ir.Operation, args: list, *, device: Device | None = None, grid: Any = None,
                 program: Program | None = None, exact: bool = False,
                 names: list[str] | None = None) -> tuple[list[np.ndarray], Program]:
    """Run ``func`` (and the kernels its launch plan adds) on ``args``; returns the contents of the
    arguments given (a workspace the caller left out is not returned) and the program of ``func``.

    The arguments must fit ``func`` (:mod:`pagedir.interp.inputs`: shapes and related sizes; with
    ``exact`` the dtypes too, as a user's data must; ``names`` names the arguments in errors)."""
    device = device if device is not None else Device()
    count = argument_count(func)
    block_args = list(func.regions[0].blocks[0].arguments)[:count]
    given = len(args)
    args = workspace_given(func, list(args))
    if len(args) != count:
        raise InterpError(f"@{symbol_name(func)} takes {count} arguments, got {len(args)}", func.location)
    check_arguments(func)
    check_inputs(func, args[:given], names, exact)
    bound = [bind_argument(device, a.type, value, i) for i, (a, value) in enumerate(zip(block_args, args))]
    program = program or Program(func)
    shapes = [getattr(b.value, "shape", ()) for b in bound]
    for kernel in launch_plan(func):
        groups, block = launch_size(kernel, grid if kernel is func else None, shapes)
        if groups:  # 0 workgroups (an empty batch): nothing runs
            (program if kernel is func else Program(kernel)).execute([b.value for b in bound], device, groups, block,
                                                                    attribution_setup(kernel, count))
    return [b.readback() for b in bound[:given]], program


def run(module: Any, entry: str, args: list, *, device: Device | None = None, grid: Any = None) -> list[np.ndarray]:
    """Run ``entry`` on ``args``; returns every argument's contents after the run.

    Numpy arrays are uploaded to ``device`` (a new one when None) as the argument's
    element type; each must have a dtype the type takes (f16: float16, f32: float32, bf16:
    uint16 bit patterns or float32 rounded, fp8: uint8 bit patterns or float32 rounded, i32:
    int32, index: int64, i1: bool: :data:`pagedir.interp.inputs.ACCEPTED`) and the memref's
    shape (its ``?`` sizes agreeing where the function relates them), else
    :class:`~pagedir.interp.inputs.InputError` names the argument; nothing is converted by
    value. :class:`DeviceArray` arguments are used in place; scalar arguments take 0-d arrays
    or Python numbers. bf16 and fp8 results come back as float32. ``grid`` overrides the number
    of workgroups (an int) or gives ``(workgroups, threads per workgroup)``.
    """
    holder = parsed(module)  # the operations of parsed text live as long as it does
    op = find_function(as_module(holder), entry)
    names = argument_names(op, argument_count(op), module) if isinstance(module, str) else None
    with op.context:  # the module's own (text is parsed in a fresh one)
        results, _ = run_function(op, list(args), device=device, grid=grid, exact=True, names=names)
    return results
