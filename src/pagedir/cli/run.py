"""pagedir-run: execute a function of a .mlir file on the interpreter, or check kernels against their reference.

    pagedir-run FILE --entry NAME [--inputs IN.npz] [--outputs OUT.npz] [--seed N]
    pagedir-run --check FILE [--entry NAME] [--arch CHIP] [--seed N] [--no-lower]

A run executes one function (an L0 ``func.func``, a rock kernel, a ``gpu.func``
kernel) with :func:`pagedir.interp.run` semantics and prints every argument's
shape, dtype and a few statistics after the run.

``--check`` draws a case for each host-callable function (``make_case`` of
:mod:`pagedir.interp.check`: the reference output of attention and copy-kv
kernels), runs the function as written, lowers a copy of the module through
``rock-kernel-pipeline`` from the level it is at and runs the lowered kernel on
the same data, then compares each level with the expected arrays (with the
function's own outputs where the case has none).

Errors are ``file:line:col: error: message`` (interpreter errors at the op that
failed) or ``pagedir-run: error: message``, exit code 1; a bug in pagedir is exit
code 2 (``PAGEDIR_TRACEBACK=1`` shows the traceback). As in the other tools, the work runs
in a forked child (:mod:`pagedir.cli.crash_guard`): input that crashes MLIR's C++ code
is an error, not a dead tool.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import traceback
import zipfile
from dataclasses import dataclass, field
from typing import Any

import mlir.ir as ir
import numpy as np
from mlir.dialects import func as func_dialect

import pagedir
from pagedir import driver
from pagedir.arch import UnknownChipError, get_chip, known_chips
from pagedir.cli import crash_guard
from pagedir.cli.args import ParserExit, RaisingArgumentParser, UserError, closed_output, refuse_empty, refuse_overwriting_input
from pagedir.cli.compile import unraised_payloads
from pagedir.cli.files import write_output
from pagedir.cli.opt import parse_module, read_input
from pagedir.diagnostics import Diag, DiagnosticCollector, ErrorCounter, file_position, from_mlir_error
from pagedir.interp import Device, InterpError, lds_banks
from pagedir.interp.check import (
    Comparison,
    LaunchSizes,
    check_draws,
    compare,
    draw_label,
    error_summary,
    make_case,
    run_case,
    runnable,
)
from pagedir.interp.inputs import InputError, argument_names
from pagedir.interp.launch import (argument_count, find_function, functions, launch_plan, launch_size, run_function,
                                   workspace_given,
                                   symbol_name)
from pagedir.passes.ir_utils import find_ops
from pagedir.passes.raise_attention.signature import takes_tensors, to_memref_signature
from pagedir.passes.verify import verify_rock_ops

EPILOG = """\
inputs and outputs:
  --inputs takes an .npz archive with one array per argument, named arg0, arg1, ...
  (argument order; 0-d arrays for scalar arguments). Every argument must be given
  and no other name may appear. An array needs the argument's shape (its static
  sizes; '?' sizes that agree where the kernel relates them: the batch of q, the
  tables, seq_lens and out, kv_indptr and cu_seqlens_q one longer) and a dtype of
  its element type, nothing else: f16 float16, f32 float32, f64 float64, bf16
  uint16 (bit patterns) or float32 (rounded), fp8 uint8 (bit patterns) or float32
  (rounded), i1 bool, i8 .. i64 int8 .. int64, index int64.
  Page tables hold device addresses, which a file cannot know: run paged kernels
  without --inputs, which draws their data like --check does (shuffled pages,
  null pointers past ragged seq_lens) from --seed.
  --outputs writes every argument's contents after the run, under the same names
  (bf16 and fp8 as float32, which --inputs takes back).

checking:
  --check runs each host-callable function (or only --entry) on a random case:
  attention functions get random Q, paged K/V and the reference output (pages
  shuffled, adjacent, switching; then an edge case: sequences of length 0 and 1, a
  packed sequence without queries, null pages and block ids outside the pool that
  hold keys, a NaN key some rows see; a dynamic batch also at 0 and 1), functions
  with rock.check = "<generator>" the case of pagedir.gen.<generator>, any other
  function random arguments. A rock.kernel function is also lowered (a copy of the
  module) through rock-kernel-pipeline{arch=--arch, else each kernel's rock.arch},
  starting at the level it is at, and the gpu.func of the same name runs on the same
  data. Each level is compared with the expected arrays, or, without any, the
  lowered kernel with the function as written. An element passes when its absolute
  error is within the tolerance of its type:
  f32 1e-5, f16/bf16 2e-2 (outputs are of order 1), integers exact. The relative error
  is printed but not checked (near zero it is large for errors far below the
  tolerance). NaN against a number fails; NaN against NaN passes only where the
  output held NaN before the run (left untouched) or the reference computes NaN.
  Exit code 0 when every function passes, 1 otherwise.

errors:
  Interpreter errors (an unmapped address such as a null page pointer, an LDS race
  between two threads without a barrier, an op the interpreter does not support,
  an index past a memref's bounds, more than the interpreter's memory limit of
  256 MiB in arguments and buffers, a loop of more than 2**24 iterations) and IR
  errors are printed as
  file:line:col: error: message, at the op. A failed run leaves --outputs as it was.

exit codes:
  0 success, 1 error in the input or a failed check, 2 a bug in pagedir
  (PAGEDIR_TRACEBACK=1 prints its traceback).
"""


class _Failed(Exception):
    """Diagnostics were printed; exit with code 1."""


def build_parser() -> argparse.ArgumentParser:
    parser = RaisingArgumentParser(
        prog="pagedir-run",
        allow_abbrev=False,
        description="Execute pagedir IR on simulated device memory, or check kernels against their reference.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin (default)")
    parser.add_argument("--entry", metavar="NAME", help="function to run (func.func or gpu.func); with --check, the only one checked")
    parser.add_argument("--inputs", metavar="IN.npz", help="argument values (arrays arg0, arg1, ...); default: random")
    parser.add_argument("--outputs", metavar="OUT.npz", help="write every argument after the run (arrays arg0, arg1, ...)")
    parser.add_argument("--seed", type=seed_value, default=0, metavar="N",
                        help="seed of the random data, 0 <= N < 2**32 (default 0)")
    parser.add_argument("--check", action="store_true", help="compare each function, as written and lowered, with its reference")
    parser.add_argument("--lds-banks", action="store_true",
                        help="also count the LDS bank conflicts of the run (with --check, of the lowered kernel; "
                             "pagedir.interp.lds_banks states the model)")
    parser.add_argument("--arch", metavar="CHIP", help="with --check: chip to lower for (default: each kernel's rock.arch)")
    parser.add_argument("--no-lower", action="store_true", help="with --check: run the functions as written only")
    parser.add_argument("--version", action="version", version=f"pagedir-run {pagedir.__version__}")
    return parser


MAX_SEED = 2**32


def seed_value(text: str) -> int:
    """--seed: an integer numpy's generators take, kept to 32 bits so that every run can be repeated anywhere."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 0 <= value < MAX_SEED:
        raise argparse.ArgumentTypeError(f"seed {value} is outside 0 .. {MAX_SEED - 1}")
    return value


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    return crash_guard.run_guarded("pagedir-run", lambda: _main(arguments))


def _main(argv: list[str]) -> int:
    try:
        status = run(argv)
        sys.stdout.flush()  # a closed pipe is reported here, not at exit
        return status
    except BrokenPipeError:
        return closed_output("pagedir-run")
    except ParserExit as done:
        return done.status
    except _Failed:
        return 1
    except UserError as err:
        message = str(err)
        print_error(message if ": error: " in message else f"pagedir-run: error: {message}")
        return 1
    except InterpError as err:
        print_error(interp_error_text(err))
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug in pagedir: say so, without a traceback unless asked
        if os.environ.get("PAGEDIR_TRACEBACK"):
            traceback.print_exc()
        print(f"pagedir-run: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2


def print_error(text: str) -> None:
    sys.stdout.flush()  # keep the summary and the errors in order when both go to one stream
    print(text, file=sys.stderr)


def interp_error_text(err: InterpError) -> str:
    return err.format() if err.location is not None else f"pagedir-run: error: {err.message}"


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    refuse_empty(args, {"inputs": "--inputs", "outputs": "--outputs"})
    for given in (args.input, args.inputs):  # --outputs over a file the user gave
        refuse_overwriting_input({"--outputs": args.outputs}, given)
    if args.check and (args.inputs or args.outputs):
        raise UserError("--inputs and --outputs are for a plain run; --check draws its own data")
    if not args.check and not args.entry:
        raise UserError("--entry NAME is required without --check")
    if not args.check and (args.arch or args.no_lower):
        raise UserError("--arch and --no-lower only apply with --check")
    if args.arch:
        try:
            get_chip(args.arch)
        except UnknownChipError as err:
            raise UserError(str(err)) from None
    text = read_input(args.input)
    name = "<stdin>" if args.input == "-" else args.input
    context = pagedir.make_context()
    printed = ErrorCounter(context)
    with context, ir.Location.unknown(context):
        module = load_module(context, text, name)
        crash_guard.note_stage("checking" if args.check else "running")
        status = check_module(module, args) if args.check else run_entry(module, args, text, name)
    return 1 if printed.count and status == 0 else status  # MLIR printed an error


def load_module(context: ir.Context, text: str, name: str) -> ir.Operation:
    """Parse and verify (MLIR's verifier and the rock verifiers); located errors on failure."""
    with DiagnosticCollector(context) as collector:
        crash_guard.note_position(f"{name}:1:1", "parsing")
        try:
            module = parse_module(text, name)
        except ir.MLIRError as err:
            fail(collector.take() + from_mlir_error(err))
        if not verify_rock_ops(module):
            fail(collector.take())
    return module


def fail(diags: list[Diag], note: str | None = None) -> None:
    for diag in diags:
        print_error(diag.format())
    if note:
        print_error(f"pagedir-run: note: {note}")
    raise _Failed


# ----------------------------------------------------------------------------
# A plain run


def run_entry(module: ir.Operation, args: argparse.Namespace, text: str, filename: str) -> int:
    func = find_function(module, args.entry)
    if not runnable(func):
        raise UserError(f"@{args.entry} takes LDS or private memref arguments: only host-callable functions can run")
    signature, _keep = case_function(func)
    with lds_banks.tally() if args.lds_banks else contextlib.nullcontext() as banks:
        if args.inputs:
            names = argument_names(func, argument_count(func), text, filename)
            try:
                outputs, _ = run_function(func, load_inputs(args.inputs, signature), exact=True, names=names)
            except InputError as err:  # say where the arrays came from
                raise InputError(f"inputs '{args.inputs}': {err.message}", err.location) from None
            source = f"inputs from {args.inputs}"
        else:
            outputs, _ = run_case(func, args.seed, case_func=signature)
            source = f"random inputs, seed {args.seed}"
    groups, block = launch_size(func)
    print(f"@{args.entry}: {groups} workgroups x {block} threads, {source}")
    arguments = list(signature.regions[0].blocks[0].arguments)
    for index, (argument, values) in enumerate(zip(arguments, outputs)):
        print(f"  arg{index} {argument.type}: {summarize(values)}")
    if banks is not None:
        print_banks(banks, "  ")
    if args.outputs:
        write_outputs(args.outputs, outputs)
    return 0


def load_inputs(path: str, func: ir.Operation) -> list[np.ndarray]:
    """The arrays arg0 .. argN-1 of an .npz archive, one per argument of ``func``."""
    not_npz = UserError(f"inputs '{path}' is not an .npz archive (np.savez of arrays arg0, arg1, ...)")
    try:
        archive = np.load(path, allow_pickle=False)
    except OSError as err:
        raise UserError(f"could not read inputs '{path}': {err.strerror or err}") from None
    except (ValueError, EOFError, zipfile.BadZipFile):  # numpy's words for "unknown format" speak of pickles
        raise not_npz from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise not_npz
    arrays = {}
    with archive:
        for key in archive.files:
            try:
                arrays[key] = archive[key]
            except ValueError as err:  # numpy refuses object arrays: loading them would run a pickle
                if "allow_pickle" not in str(err):
                    raise UserError(f"inputs '{path}': {key} cannot be read: {err}") from None
                raise UserError(f"inputs '{path}': {key} is an object array; arguments take bool, integer or "
                                "float arrays") from None
            except (EOFError, OSError, zipfile.BadZipFile) as err:  # a damaged member
                raise UserError(f"inputs '{path}': {key} cannot be read: {err}") from None
    count = len(func.regions[0].blocks[0].arguments)
    wanted = [f"arg{i}" for i in range(count)]
    missing = [key for key in wanted if key not in arrays]
    unknown = sorted(set(arrays) - set(wanted))
    if missing or unknown:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(unknown)}"] if unknown else [])
        raise UserError(f"inputs '{path}': {'; '.join(problems)} (@{symbol_name(func)} takes {count} arguments: arg0 .. arg{count - 1})")
    return [arrays[key] for key in wanted]  # their dtypes and shapes are checked by the run (pagedir.interp.inputs)


def summarize(values: Any) -> str:
    array = np.asarray(values)
    if array.dtype == np.bool_:
        array = array.astype(np.int8)
    text = f"{array.dtype} {list(array.shape)}"
    nan = int(np.isnan(array).sum()) if array.dtype.kind == "f" else 0
    finite = array[np.isfinite(array)] if array.dtype.kind == "f" else array.reshape(-1)
    if finite.size:
        shown = "{:.4g}" if array.dtype.kind == "f" else "{}"  # integers (page addresses) in full
        text += f" min {shown.format(finite.min())} max {shown.format(finite.max())}"
        text += f" mean {finite.astype(np.float64).mean():.4g}"
    if nan:
        text += f" ({nan} NaN)"
    return text


def write_outputs(path: str, outputs: list[Any]) -> None:
    """An .npz of every argument, written whole or not at all (a failed write keeps what ``path`` held)."""
    archive = io.BytesIO()  # a file object: np.savez would otherwise append .npz to the name
    np.savez(archive, **{f"arg{i}": np.asarray(values) for i, values in enumerate(outputs)})
    try:
        write_output(path, archive.getvalue())
    except UserError as err:
        raise UserError(str(err).replace("could not write", "could not write outputs", 1)) from None


def case_function(func: ir.Operation) -> tuple[ir.Operation, Any]:
    """The function whose signature the data are drawn for, and what keeps it alive.

    The case generators read the arguments from the entry block, where a gpu.func
    also keeps its workgroup and private attributions: for a gpu.func they get a
    func.func with its arguments and rock.* attributes (the data depend on nothing else).
    """
    if func.name != "gpu.func":
        return func, None
    types = [a.type for a in list(func.regions[0].blocks[0].arguments)[: argument_count(func)]]
    holder = ir.Module.create()
    with ir.InsertionPoint(holder.body):
        signature = func_dialect.FuncOp(symbol_name(func), (types, []))
        for name in func.attributes:
            if name.startswith("rock."):
                signature.attributes[name] = func.attributes[name]
        with ir.InsertionPoint(signature.add_entry_block()):
            func_dialect.ReturnOp([])
    return signature.operation, holder


# ----------------------------------------------------------------------------
# --check

#: The op that tells each level of docs/levels.md apart (the first one found decides).
LEVEL_MARKERS = (
    ("L0", "rock.attention"),
    ("L1", "rock.gridwise_attention_accel"),
    ("L2", "rock.blockwise_load_tile"),
    ("L3", "rock.threadwise_read_into"),
    ("L4", "rock.global_load"),
    ("L5", "rocdl.raw.ptr.buffer.load"),
)


def level_of(func: ir.Operation) -> str:
    if func.name == "gpu.func":
        return "L6"
    held = {op.name for op in find_ops(func, *(marker for _, marker in LEVEL_MARKERS))}
    return next((level for level, marker in LEVEL_MARKERS if marker in held), "input")


def needs_lowering(func: ir.Operation) -> bool:
    """rock-kernel-pipeline turns rock.kernel func.funcs into gpu.funcs (and raises linalg payloads, which
    write their result with bufferization.materialize_in_destination, to such kernels first)."""
    if func.name != "func.func":
        return False
    return "rock.kernel" in func.attributes or bool(find_ops(func, "bufferization.materialize_in_destination"))


@dataclass
class Level:
    """One level of a function run on the case: its outputs or the error that stopped it."""

    level: str  # L0 .. L6 (docs/levels.md), or "input" for a function of none of them
    how: str  # "as written" or "after rock-kernel-pipeline"
    outputs: list[np.ndarray] | None = None
    error: InterpError | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    note: str = "ran; nothing to compare with"  # what a level without comparisons says

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.comparisons)


def check_module(module: ir.Operation, args: argparse.Namespace) -> int:
    for func in functions(module):  # torch-style payloads: checked as the kernel they become (docs/compile.md)
        if takes_tensors(func):
            to_memref_signature(func)
    stand_ins = raised_signatures(module)
    if args.entry:
        targets = [find_function(module, args.entry)]
        if not runnable(targets[0]):
            raise UserError(f"@{args.entry} takes LDS or private memref arguments: only host-callable functions can be checked")
    else:
        targets = [f for f in functions(module) if host_callable(f)]
        if not targets:
            raise UserError("no host-callable function to check (func.func or gpu.func kernel with global memref arguments)")
    lowered = None
    if not args.no_lower and any(needs_lowering(f) for f in targets):
        if not args.arch:
            refuse_missing_chips([f for f in targets if needs_lowering(f)])
        lowered = lower(module, args.arch)
    lowered_functions = {symbol_name(f): f for f in functions(lowered.operation)} if lowered else {}
    unraised = unraised_payloads(module) if not args.no_lower else {}
    ok = True
    for func in targets:
        name = symbol_name(func)
        target = lowered_functions.get(name) if needs_lowering(func) and lowered else None
        if needs_lowering(func) and lowered and target is None:
            print(f"@{name}: FAIL: no function @{name} after rock-kernel-pipeline")
            ok = False
            continue
        if target is not None and target.name != "gpu.func" or name in unraised:
            # a payload rock-raise-attention left as it was, or a function in linalg it does not read
            print(f"@{name}: FAIL: not raised to rock.attention by rock-raise-attention")
            for diag in unraised.get(name, []):
                print_error(diag.format())
            ok = False
            continue
        ok &= check_function(func, target, args.seed, args.lds_banks, stand_ins.get(name))
    return 0 if ok else 1


def refuse_missing_chips(kernels: list[ir.Operation]) -> None:
    """Lowering needs a chip: a kernel without rock.arch (and no --arch) is an error at the kernel naming the flag."""
    missing = [Diag("error", f"'{f.name}' op @{symbol_name(f)} names no chip: add --arch to check it lowered, e.g. "
                             f"--arch gfx942 (known chips: {known_chips()}), or set rock.arch on the function; "
                             f"--no-lower checks it as written only", *file_position(f.location))
               for f in kernels if "rock.arch" not in f.attributes]
    if missing:
        fail(missing)


def raised_signatures(module: ir.Operation) -> dict[str, ir.Operation]:
    """For each linalg payload without a case of its own (no ``rock.check``) that rock-raise-attention raises:
    the raised function, whose data (valid block tables, sequence lengths) the check draws. The payload as
    written is then the reference: the check compares the kernel with the payload's own semantics."""
    from pagedir.interp.check import PAYLOAD_CASE, apply_pass

    payloads = [f for f in functions(module) if needs_lowering(f) and "rock.kernel" not in f.attributes
                and "rock.check" not in f.attributes]
    if not payloads:
        return {}
    raised = apply_pass(module, "rock-raise-attention")
    found = {symbol_name(f): f for f in functions(raised.operation) if find_ops(f, "rock.attention")}
    stand_ins = {symbol_name(f): found[symbol_name(f)] for f in payloads if symbol_name(f) in found}
    for func in stand_ins.values():
        func.attributes[PAYLOAD_CASE] = ir.UnitAttr.get()
    _KEEP_ALIVE.append(raised)
    return stand_ins


#: Modules whose functions stand in for payloads' signatures while the check runs.
_KEEP_ALIVE: list[Any] = []


def host_callable(func: ir.Operation) -> bool:
    """A function with a body and global memory arguments; of a gpu.module, only kernels."""
    if not len(func.regions[0].blocks) or not runnable(func):
        return False
    return func.name != "gpu.func" or "gpu.kernel" in func.attributes


def check_function(func: ir.Operation, lowered: ir.Operation | None, seed: int, banks: bool = False,
                   raised: ir.Operation | None = None) -> bool:
    """Run ``func`` (and ``lowered``) on the case of ``func``, compare, print the summary; True when it passes.
    ``banks``: count the LDS bank conflicts of the lowered kernel's run and print them. A function with
    dynamic sizes runs once per launch size set (the same compiled kernel each time). ``raised``: the
    rock.attention ``func`` is raised to, which the data are drawn for; ``func``'s outputs are the reference."""
    signature, _keep = (raised, None) if raised is not None else case_function(func)
    passed = True
    for sizes, placement in check_draws(signature):  # sizes x page placements, then the edge case
        passed &= check_launch(func, lowered, seed, signature, sizes, banks, placement)
    return passed


def check_launch(func: ir.Operation, lowered: ir.Operation | None, seed: int, signature: ir.Operation,
                 sizes: LaunchSizes | None, banks: bool = False, placement: str = "shuffled") -> bool:
    case = make_case(signature, np.random.default_rng(seed), Device(), sizes, placement)  # each run below draws the same one
    levels = [run_level(func, "as written", signature, seed, sizes, placement)]
    counted = None
    if lowered is not None:
        note = launches_note(lowered, case.args)
        with lds_banks.tally() if banks else contextlib.nullcontext() as counted:
            levels.append(run_level(lowered, "after rock-kernel-pipeline" + note, signature, seed, sizes, placement))
    arguments = list(signature.regions[0].blocks[0].arguments)
    if case.expected:
        reference, compared = case.expected, levels
    else:  # no reference result: the lowering must not change what the function computes
        reference, compared = dict(enumerate(levels[0].outputs or [])), levels[1:]
        if compared:
            levels[0].note = "ran; the reference of the lowered kernel"
    for level in compared:
        if level.outputs is not None:
            level.comparisons = [compare(i, arguments[i].type, want, level.outputs[i], case.tolerance, initial=case.args[i],
                                         reference=case.expected.get(i)) for i, want in reference.items()]
    passed = all(level.ok for level in levels)
    launch = f", {sizes.describe(bool(find_ops(signature, 'rock.block_table_view')))}" if sizes is not None else ""
    launch += f", {draw_label(placement)}" if draw_label(placement) else ""
    print(f"@{symbol_name(func)}: {'PASS' if passed else 'FAIL'} (levels {' -> '.join(l.level for l in levels)}, "
          f"seed {seed}{launch})")
    for level in levels:
        print(f"  {level_line(level)}")
        for comparison in level.comparisons:
            if not comparison.ok:
                print(f"    {comparison.describe()}")
    if counted is not None:
        print_banks(counted, "  ")
    return passed


def print_banks(banks: lds_banks.Tally, indent: str) -> None:
    """The LDS bank conflicts of a run, and the ops with the most conflict cycles."""
    print(f"{indent}LDS bank conflicts: {banks.summary()}")
    for (name, where, kind), counts in banks.worst():
        print(f"{indent}  {counts.cycles} cycles: {name} ({kind}) at {where}, {counts.conflicted} of "
              f"{counts.instructions} wave instructions")


def launches_note(func: ir.Operation, args: list | None = None) -> str:
    """`` (launches @a on 64 workgroups, then @b on 4 workgroups)`` when a call of ``func`` runs several
    kernels (a split-KV kernel and its combine kernel), so the check says it ran the whole plan;
    `` (launches @a on 10 workgroups)`` for a grid formula evaluated on the sizes of ``args``."""
    shapes = [np.shape(a) for a in workspace_given(func, list(args))] if args is not None else None
    try:
        kernels = [(symbol_name(kernel), launch_size(kernel, None, shapes)[0]) for kernel in launch_plan(func)]
    except InterpError:
        return ""  # the run reports it
    if len(kernels) == 1 and "rock.grid_map" not in func.attributes:
        return ""
    chosen = ""
    workspace = list(func.regions[0].blocks[0].arguments)[argument_count(func) - 1].type
    if shapes is not None and "rock.split_map" in func.attributes and not ir.MemRefType(workspace).has_static_shape:
        how = "chosen at launch" if ir.MemRefType(workspace).is_dynamic_dim(0) else "fixed"
        chosen = f"; {shapes[argument_count(func) - 1][0]} splits {how}"
    return " (launches " + ", then ".join(f"@{name} on {groups} workgroups" for name, groups in kernels) + chosen + ")"


def run_level(func: ir.Operation, how: str, signature: ir.Operation, seed: int, sizes: LaunchSizes | None = None,
              placement: str = "shuffled") -> Level:
    try:
        outputs, _ = run_case(func, seed, case_func=signature, sizes=sizes, placement=placement)
    except InterpError as err:
        print_error(interp_error_text(err))
        return Level(level_of(func), how, error=err)
    return Level(level_of(func), how, outputs)


def level_line(level: Level) -> str:
    label = f"{level.level} {level.how}"
    if level.error is not None:
        return f"{label}: FAIL: interpreter error at {level.error.where()}"
    if not level.comparisons:
        return f"{label}: {level.note}"
    # A failing argument first; else the floating-point argument nearest its limit, relative to it (exactly
    # compared integer arguments, such as seq_lens, sit at 0 <= 0, and an untouched f32 input at 0 <= 1e-5:
    # both would hide the output's error).
    worst = max(level.comparisons,
                key=lambda c: (not c.ok, c.tolerance > 0, c.max_abs / c.tolerance if c.tolerance > 0 else 0.0))
    worst_rel = max(c.max_rel for c in level.comparisons)
    return f"{label}: {error_summary(worst.max_abs, worst_rel, worst.tolerance)}: {'PASS' if level.ok else 'FAIL'}"


# ----------------------------------------------------------------------------
# Lowering a copy through rock-kernel-pipeline


def lower(module: ir.Operation, arch: str | None) -> ir.Module:
    """A copy of ``module`` (locations kept, so errors point into the input) through rock-kernel-pipeline,
    from the level it is at (every level can be continued from)."""
    copy = ir.Module.parse(module.get_asm(enable_debug_info=True))
    try:
        driver.run(copy.operation, driver.CompileOptions(arch=arch or ""), end="L6")
    except driver.StageUnavailable as err:  # nothing the input can fix, but no traceback either
        raise UserError(f"cannot lower with rock-kernel-pipeline: {err}; --no-lower checks the functions as written") from None
    except driver.StageError as err:
        fail(err.diags, note=f"rock-kernel-pipeline stopped at {err.stage.name}" if err.stage else None)
    return copy


if __name__ == "__main__":
    sys.exit(main())
