"""Checking by execution: random paged data, a pass's input vs output, a kernel vs the reference.

* :class:`CheckCase`: inputs for one function and, optionally, the expected
  contents of some arguments. A function with ``rock.check = "<generator>"`` (what
  ``pagedir-gen`` marks its kernels with) gets its case from
  ``pagedir.interp.cases.<generator>.check_case(func_op, rng, device)``;
  attention-like functions (their arguments are ``q, k_table, v_table, [seq_lens],
  out``) get random Q, K/V cut into shuffled pages with null pointers past ragged
  ``seq_lens`` (NaN and Inf in the slots past them) and the reference output, and once more the edge
  case (:data:`EDGES`: lengths 0 and 1, null pages and ids outside the pool that hold keys, a NaN
  key; a dynamic batch also at 0 and 1 sequences, :func:`check_draws`); functions reading cache
  pools through ``rock.block_table_view`` get a server's cache (:func:`serving_case`); any other function gets random arrays of
  its argument types (i64 tables read through ``rock.deref`` point at random pages).
* :func:`check_pass` runs each function of a module before and after one pass on
  the same data (same seed, fresh device each) and compares every argument after
  the run. It returns a :class:`CheckResult` when they agree and raises
  :class:`CheckFailure` (an ``AssertionError``) naming the function, the argument,
  the worst element and the op of any interpreter error otherwise. An error while
  running the *input* of the pass is raised as is (:class:`InterpError`): there
  is nothing to compare against.

The parts: the cases of attention functions (:mod:`pagedir.interp.check_attention`), the values they are
drawn from (:mod:`pagedir.interp.check_data`), which draws a check runs (:mod:`pagedir.interp.check_draws`) and
the comparison (:mod:`pagedir.interp.check_compare`); this module makes a function's case and runs the checks.

Comparison rule (:func:`pagedir.interp.check_compare.compare`): an element passes when ``|got - expected| <= tolerance``, an
absolute tolerance by element type: f32 1e-5, f16 and bf16 2e-2 (the outputs are
of order 1: softmax-weighted averages of unit normals, copies), integers exact.
The relative error is reported but decides nothing: near zero it is large for
errors far below the tolerance. NaN or infinity against a number is a mismatch.
NaN against NaN matches only where the argument held NaN before the run (an
output both sides left untouched) or where the reference computes NaN (a row
that sees a NaN key): NaN must appear exactly where the math puts it; any other
NaN computed on both sides is a mismatch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import mlir.ir as ir
import numpy as np

from pagedir import reference
from pagedir.interp.check_attention import attention_case, serving_case
from pagedir.interp.check_compare import compare
from pagedir.interp.check_data import CheckCase, dtype_of, host_values
from pagedir.interp.check_draws import LaunchSizes, attention_signature, check_draws, draw_label, has_dynamic_arguments
from pagedir.interp.inputs import host_array
from pagedir.interp.launch import argument_count, as_module, check_arguments, functions, parsed, run_function, symbol_name
from pagedir.interp.memory import Device, InterpError
from pagedir.passes.ir_utils import find_ops

# The check's parts, used through this module by pagedir-run, the case generators, the benchmarks and the tests.
from pagedir.interp.check_attention import _attention_attrs, attention_variant_arguments  # noqa: F401, E402
from pagedir.interp.check_compare import TOLERANCE, Comparison, error_summary  # noqa: F401, E402
from pagedir.interp.check_data import (  # noqa: F401, E402
    fp8_quantized, fp8_quantized_per_token, packed_attention, variant_inputs)
from pagedir.interp.check_draws import (  # noqa: F401, E402
    DYNAMIC_SIZES, EDGE_SIZES, EDGES, LONG_SEQUENCE_SIZES, page_placements)


@dataclass
class FunctionCheck:
    name: str
    comparisons: list[Comparison]
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.comparisons)

    @property
    def max_abs(self) -> float:
        return max((c.max_abs for c in self.comparisons), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((c.max_rel for c in self.comparisons), default=0.0)


@dataclass
class CheckResult:
    """What :func:`check_pass` compared: per function, per argument."""

    pass_argument: str
    seed: int
    functions: list[FunctionCheck]
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.functions)

    def __bool__(self) -> bool:
        return self.ok

    def report(self) -> str:
        lines = []
        for f in self.functions:
            lines.append(f"@{f.name}: {'PASS' if f.ok else 'FAIL'}" + (f": {f.error}" if f.error else ""))
            lines.extend(f"  {c.describe()}" for c in f.comparisons if not c.ok or True)
        lines.extend(f"@{name}: skipped (takes LDS or private memref arguments)" for name in self.skipped)
        return "\n".join(lines)


class CheckFailure(AssertionError):
    """The output of a pass computes something else than its input (or fails to run)."""

    def __init__(self, message: str, result: CheckResult | None = None):
        super().__init__(message)
        self.result = result


def generic_case(func: ir.Operation, rng: np.random.Generator, device: Device) -> CheckCase:
    """Random data of each argument's type; page tables (read by rock.deref) point at random pages."""
    args = list(func.regions[0].blocks[0].arguments)[: argument_count(func)]
    deref_of = {}
    for deref in find_ops(func, "rock.deref"):
        deref_of[deref.operands[0]] = ir.MemRefType(deref.results[0].type)
    call, keep = [], []
    for argument in args:
        type_ = argument.type
        if argument in deref_of:
            pages_type = deref_of[argument]
            batch, num_pages, page_size = pages_type.shape
            name = str(pages_type.element_type)
            dense = host_values(rng.standard_normal((batch, 1, num_pages * page_size, 1)), name)
            cache = reference.paged_cache(device, dense, page_size=page_size, rng=rng, dtype=dtype_of(name))
            call.append(cache.table)
            keep.extend(cache.pages)
            continue
        if isinstance(type_, ir.MemRefType):
            name = str(type_.element_type)
            shape = tuple(type_.shape)
            if dtype_of(name) is not None:
                call.append(host_values(rng.standard_normal(shape), name))
            elif name == "i1":
                call.append(rng.integers(0, 2, size=shape).astype(np.bool_))
            else:
                call.append(rng.integers(0, 8, size=shape))
            continue
        call.append(0 if isinstance(type_, (ir.IndexType, ir.IntegerType)) else 1.0)
    return CheckCase(args=call, keep_alive=keep)


#: The ``rock.check`` values: the generators of ``pagedir-gen`` whose kernels get a case of their own,
#: each drawn by the module of that name in :mod:`pagedir.interp.cases` (``check_case``).
CASE_GENERATORS = ("copy_kv", "linalg_attention")


def case_generators() -> list[str]:
    """The ``rock.check`` values, sorted."""
    return sorted(CASE_GENERATORS)


def case_generator(func: ir.Operation) -> Any:
    """The :mod:`pagedir.interp.cases` module ``rock.check`` names; a located error for anything else."""
    attr = func.attributes["rock.check"]
    known = case_generators()
    name = ir.StringAttr(attr).value if isinstance(attr, ir.StringAttr) else None
    if name not in known:
        raise InterpError(f"@{symbol_name(func)} has rock.check = {attr}: no such case generator "
                          f"(known: {', '.join(known)})", func.location)
    return importlib.import_module(f"pagedir.interp.cases.{name}")


def make_case(func: ir.Operation, rng: np.random.Generator, device: Device, sizes: LaunchSizes | None = None,
              placement: str = "shuffled") -> CheckCase:
    """The case of ``func``; ``sizes`` gives its dynamic (``?``) sizes (default: the first of DYNAMIC_SIZES),
    ``placement`` where its pages lie (:func:`page_placements`)."""
    check_arguments(func)  # before any data is drawn for them
    if "rock.check" in func.attributes:
        case = case_generator(func).check_case(func, rng, device)
    elif find_ops(func, "rock.block_table_view"):
        case = serving_case(func, rng, device, sizes, placement)
    elif (find_ops(func, "rock.attention", "rock.gridwise_attention_accel") and attention_reads_arguments(func)) \
            or attention_signature(func):
        case = attention_case(func, rng, device, sizes, placement)
    elif has_dynamic_arguments(func):
        raise InterpError(f"@{symbol_name(func)} has arguments with dynamic sizes: the check draws data for attention "
                          "kernels only (pass arrays with pagedir-run --inputs)", func.location)
    else:
        case = generic_case(func, rng, device)
    if PAYLOAD_CASE in func.attributes:
        payload_inputs(case, func)
    # In dtypes the arguments take (pagedir.interp.run refuses others): the same values the upload stores.
    case.args = [host_array(value, argument.type) for value, argument in zip(case.args, func.regions[0].blocks[0].arguments)]
    return case


#: Marks (in memory only) a raised function drawing the case of the linalg payload it was raised from.
PAYLOAD_CASE = "rock.payload_case"


def payload_inputs(case: CheckCase, func: ir.Operation) -> None:
    """Data a payload's own semantics are defined on: a payload gathers and multiplies every key slot of the
    table, masked ones by 0 (0 * NaN is NaN), so stale NaN/Inf become 0 and every table id names a block
    of the pool; a row that sees no key is 0/0 in the payload (zeros in rock.attention), so each sequence
    keeps at least Sq keys. The payload's output is the reference (no expected result)."""
    arguments = list(func.regions[0].blocks[0].arguments)
    lengths = set()
    for attention in find_ops(func, "rock.attention"):
        seq_q = ir.MemRefType(attention.operands[0].type).shape[2]
        lengths |= {arguments.index(v) for v in attention.operands[3:] if isinstance(v, ir.BlockArgument)
                    and v in arguments and ir.MemRefType(v.type).rank == 1 and str(ir.MemRefType(v.type).element_type) == "i32"}
    tables = {}
    for view in find_ops(func, "rock.block_table_view"):
        blocks = ir.MemRefType(view.operands[0].type).shape[0]
        for table in view.operands[1:3]:
            if isinstance(table, ir.BlockArgument) and table in arguments:
                tables[arguments.index(table)] = blocks
    for index, value in enumerate(case.args):
        array = np.asarray(value)
        if index in tables:
            case.args[index] = np.mod(array, tables[index]).astype(array.dtype)
        elif index in lengths:
            case.args[index] = np.maximum(array, seq_q).astype(array.dtype)
        elif array.dtype.kind == "f":
            case.args[index] = np.where(np.isfinite(array), array, 0).astype(array.dtype)
        elif array.dtype == np.uint16 and str(ir.ShapedType(arguments[index].type).element_type) == "bf16":
            case.args[index] = np.where((array & 0x7F80) == 0x7F80, 0, array).astype(np.uint16)  # bf16 bits: NaN, Inf
    case.expected = {}


def attention_reads_arguments(func: ir.Operation) -> bool:
    """The attention ops read q from an argument or from a rock view of one (rock.varlen_view's packed rows),
    not from a reshape: heads folded into the batch are expanded by memref.expand_shape, and those arguments
    get random data of their shape."""
    def from_argument(q: ir.Value) -> bool:
        return isinstance(q, ir.BlockArgument) or q.owner.name.startswith("rock.")

    return all(from_argument(op.operands[0]) for op in find_ops(func, "rock.attention", "rock.gridwise_attention_accel"))


def runnable(func: ir.Operation) -> bool:
    """Host-callable: every memref argument lives in global memory."""
    from pagedir.dialect.types import memory_space

    for argument in list(func.regions[0].blocks[0].arguments)[: argument_count(func)]:
        if isinstance(argument.type, ir.MemRefType) and memory_space(argument.type) not in (None, "global"):
            return False
    return len(func.regions[0].blocks) > 0


def run_case(func: ir.Operation, seed: int, case_func: ir.Operation | None = None,
             sizes: LaunchSizes | None = None, placement: str = "shuffled") -> tuple[list[np.ndarray], CheckCase]:
    """Draw the case of ``case_func`` (default ``func``) from ``seed`` (``sizes``, ``placement``) on a fresh device
    and run ``func`` on it."""
    device = Device()
    case = make_case(case_func or func, np.random.default_rng(seed), device, sizes, placement)
    outputs, _ = run_function(func, case.args, device=device)
    return outputs, case


def apply_pass(module: ir.Operation, pass_argument: str, options: Any = None) -> ir.Module:
    """A copy of ``module`` (locations kept) with the pass applied; CheckFailure with the diagnostics if it fails."""
    from pagedir import driver

    with module.context:
        copy = ir.Module.parse(module.get_asm(enable_debug_info=True))
    try:
        driver.run_stages(copy.operation, [driver.pass_stage(pass_argument, options)])
    except driver.StageError as err:
        messages = [f"{diag.where()}: {diag.message}" for diag in err.diags]
        raise CheckFailure(f"{pass_argument} failed: {'; '.join(messages)}") from None
    return copy


def check_pass(module: Any, pass_argument: str, seed: int = 0, *, options: Any = None, tolerance: float | None = None) -> CheckResult:
    """Run every host-callable function of ``module`` before and after ``pass_argument`` on the same data.

    Returns a :class:`CheckResult` when all outputs agree; raises :class:`CheckFailure`
    (with the result attached) when an output differs or the transformed function
    fails to run (the message names the op and its location).
    """
    holder = parsed(module)  # parsed text lives as long as this
    before = as_module(holder)
    after = apply_pass(before, pass_argument, options).operation
    after_functions = {symbol_name(f): f for f in functions(after)}
    result = CheckResult(pass_argument, seed, [])
    combines = {ir.StringAttr(f.attributes["rock.combine"]).value for f in functions(before) if "rock.combine" in f.attributes}
    for func in functions(before):
        name = symbol_name(func)
        if not len(func.regions[0].blocks):
            continue
        if name in combines and has_dynamic_arguments(func):  # its sizes follow the split kernel's launch,
            continue  # which runs it (launch_plan): no case of its own
        if not runnable(func):
            result.skipped.append(name)
            continue
        lowered = after_functions.get(name)
        if lowered is None:
            result.functions.append(FunctionCheck(name, [], error=f"@{name} is missing after {pass_argument}"))
            continue
        # A dynamic function: every launch size set; a paged one: shuffled, adjacent and switching pages; an
        # attention function: the edge draw too (check_draws).
        for sizes, placement in check_draws(func):
            expected, case = run_case(func, seed, sizes=sizes, placement=placement)
            label = " ".join(filter(None, [draw_label(placement), sizes.describe() if sizes is not None else ""]))
            try:
                got, _ = run_case(lowered, seed, case_func=func, sizes=sizes, placement=placement)
            except InterpError as err:
                result.functions.append(FunctionCheck(name, [], error=f"{err.format()} ({label or 'shuffled pages'})"))
                continue
            arguments = list(func.regions[0].blocks[0].arguments)
            comparisons = [compare(i, arguments[i].type, e, g, tolerance if tolerance is not None else case.tolerance,
                                   initial=case.args[i], reference=case.expected.get(i))
                           for i, (e, g) in enumerate(zip(expected, got))]
            result.functions.append(FunctionCheck(f"{name} ({draw_label(placement)})" if draw_label(placement) else name,
                                                  comparisons))
    if not result.ok:
        failing = [f for f in result.functions if not f.ok]
        lines = [f"{pass_argument} changed what the code computes (seed {seed}):"]
        for f in failing:
            if f.error:
                lines.append(f"  @{f.name}: {f.error}")
            lines.extend(f"  @{f.name}: {c.describe()}" for c in f.comparisons if not c.ok)
        raise CheckFailure("\n".join(lines), result)
    return result
