"""pagedir-compile: rock or gpu-level MLIR -> LLVM dialect, LLVM IR, amdgcn assembly, ELF object or code object.

    pagedir-compile IN.mlir --arch gfx942 --emit=asm -o OUT.s [--report[=FILE]] [--plan=FILE.json] [--dump-dir DIR]

The input is lowered as far as it still needs, through the stages of
:mod:`pagedir.driver`: kernels still holding rock ops (``func.func`` with
``rock.kernel``) go through ``rock-kernel-pipeline``, then ``gpu.module`` kernels
through ``rock-backend-pipeline``, then LLVM IR, LLVM's O3 pipeline and the AMDGPU
code generator (``pagedir.backend``).

``--emit``: ``llvm-dialect`` (the module after rock-backend-pipeline),
``llvm-ir`` (the optimized LLVM IR given to the code generator), ``asm``, ``obj``
(relocatable ELF), ``hsaco`` (linked code object; ``ld.lld`` from the ``ziglang`` dependency);
for an NVIDIA chip (sm_80, sm_90) ``ptx`` (what ``asm`` gives there too) and ``cubin`` (``ptxas`` from
the ``nvidia-cuda-nvcc`` package, pagedir's ``nvidia`` extra) instead of ``obj`` and ``hsaco``.

``--report`` prints the kernel report as a table on stderr (stdout may hold the
output); ``--report=FILE`` writes it as JSON to FILE (``-``: stdout).
``--plan=FILE.json`` writes the launch plan (:mod:`pagedir.backend.plan`: per kernel its
symbol, grid, block, LDS bytes, arguments and workspace; the workspace total; the order of
launches: a split-KV kernel, then its combine kernel).
``--dump-dir DIR`` writes every stage as ``<name>.<NN>-<stage>.mlir|.ll|.s``.

A compile is looked up in the compile cache first (:mod:`pagedir.cache`: ``--cache-dir``,
``$PAGEDIR_CACHE_DIR``, ``~/.cache/pagedir``) and stored there after it succeeds; ``--no-cache``
does neither and ``--dump-dir`` skips the lookup (it needs every stage). The MLIR bindings,
the backend and llvmlite are imported only on a miss. From Python: :func:`compile_source`.

Errors are diagnostics (``file:line:col: error: ...``) with exit code 1; a bug in
pagedir is exit code 2 (``PAGEDIR_TRACEBACK=1`` shows the traceback). The work
runs in a forked child (:mod:`pagedir.cli.crash_guard`), so input that crashes
MLIR's C++ code is an error too; the output and the report are written whole,
and only when everything succeeded (:mod:`pagedir.cli.files`).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

import pagedir
from pagedir.cli import crash_guard
from pagedir.cli.args import ParserExit, RaisingArgumentParser, UserError, refuse_empty, refuse_overwriting_input
from pagedir.arch import Chip, ChipError, get_chip, kernel_chip_or_none, known_chips, parse_target
from pagedir.backend import EMIT_KINDS, emit_problem, format_table, kernel_reports, mca, to_json
from pagedir.backend.report import add_kv_token_figures
from pagedir.backend.linker import linker_command
from pagedir.backend.ptxas import ptxas_command
from pagedir.cache import Cache, Entry, cache_key, default_cache_dir, tool_versions
from pagedir.cli.files import read_stdin, write_outputs


def _import_compiler() -> None:
    """Import the MLIR bindings, the diagnostics and the driver (the code generator, llvmlite, comes with its stages).

    They are most of a cold start (``python -X importtime``), so only a cache miss loads them;
    the functions below use them as module globals.
    """
    global ir, driver, BackendError, parse_module, Diag, DiagnosticCollector, from_mlir_error, has_internal_errors
    import mlir.ir as ir

    from pagedir import driver
    from pagedir.backend import BackendError
    from pagedir.cli.opt import parse_module
    from pagedir.diagnostics import Diag, DiagnosticCollector, from_mlir_error, has_internal_errors


class _Failed(Exception):
    """Diagnostics were printed; exit with ``status`` (1, or 2 when they report a bug in pagedir)."""

    def __init__(self, status: int = 1):
        super().__init__(status)
        self.status = status


def build_parser() -> argparse.ArgumentParser:
    parser = RaisingArgumentParser(
        prog="pagedir-compile", description="Compile pagedir kernels to AMDGPU assembly, objects and code objects."
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin")
    parser.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    parser.add_argument(
        "--arch",
        help=f"chip or target, e.g. gfx942 or amdgcn-amd-amdhsa--gfx942:sramecc+:xnack- (default: the kernels' "
        f"rock.arch; a kernel naming another chip is an error); known: {known_chips()}",
    )
    parser.add_argument("--emit", choices=EMIT_KINDS, default="asm", help="what to write (default asm)")
    parser.add_argument(
        "--report", dest="report_table", action="store_true",
        help="--report prints the kernel report as a table on stderr; --report=FILE writes it as JSON to FILE",
    )
    parser.add_argument("--report-json", dest="report_json", help=argparse.SUPPRESS)
    parser.add_argument(
        "--plan", metavar="FILE.json",
        help="write the launch plan (kernels, grids, block sizes, LDS, arguments, workspace, launch order) to FILE (-: stdout)",
    )
    parser.add_argument(
        "--dump-dir", help="write the IR after every stage into this directory (always compiles: skips the cache lookup)"
    )
    parser.add_argument("-O", dest="opt_level", type=int, choices=(0, 1, 2, 3), default=3, help="LLVM optimization level")
    parser.add_argument("--index-bitwidth", type=int, choices=(32, 64), default=64, help="index width in kernels")
    parser.add_argument(
        "--cache-dir", help="compile cache directory (default $PAGEDIR_CACHE_DIR, else $XDG_CACHE_HOME/pagedir or ~/.cache/pagedir)"
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the compile cache")
    parser.add_argument("-v", "--verbose", action="store_true", help="say whether the compile cache was used")
    parser.add_argument("--version", action="version", version=f"pagedir-compile {pagedir.__version__}")
    return parser


def _split_report_flag(argv: list[str]) -> list[str]:
    """``--report=FILE`` -> ``--report-json FILE`` (``--report`` alone takes no value, so no input is eaten)."""
    out = []
    for arg in argv:
        if arg.startswith("--report="):
            out += ["--report-json", arg.split("=", 1)[1]]
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    return crash_guard.run_guarded("pagedir-compile", lambda: _main(arguments))


def _main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(_split_report_flag(argv))
        return compile_file(args)
    except ParserExit as done:
        return done.status
    except UserError as err:
        print(f"pagedir-compile: error: {err}", file=sys.stderr)
        return 1
    except _Failed as failed:
        return failed.status
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug in pagedir
        if os.environ.get("PAGEDIR_TRACEBACK"):
            traceback.print_exc()
        print(f"pagedir-compile: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2


class _Dumps:
    """The input and each stage with a dump name, for ``--dump-dir`` (when one is given), numbered.

    They are written with the other outputs, all or none (:func:`compile_file`); after a failed
    compile, the ones made so far are written on their own (they show where it failed). A stage's
    output is text or a module; a module is printed only when it is dumped (printing every stage
    of the decode kernel is about a tenth of a cold compile).
    """

    def __init__(self, directory: str | None, name: str):
        self.directory = directory
        self.name = name
        self.count = 0
        self.files: list[tuple[str, str]] = []
        if not directory:
            return
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise UserError(f"--dump-dir '{directory}' is not a directory")
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as err:
            raise UserError(f"could not create --dump-dir '{directory}': {err.strerror}") from None

    def write(self, dump: str, output) -> None:
        suffix = {"llvm-ir": ".ll", "llvm-ir-opt": ".ll", "asm": ".s"}.get(dump, ".mlir")
        if self.directory:
            self.files.append((os.path.join(self.directory, f"{self.name}.{self.count:02d}-{dump}{suffix}"), str(output)))
        self.count += 1

    def on_stage(self, stage, output, seconds: float) -> None:
        if stage.dump:
            self.write(stage.dump, output)


def compile_file(args: argparse.Namespace) -> int:
    refuse_empty(args, {"output": "-o", "report_json": "--report=", "plan": "--plan", "dump_dir": "--dump-dir",
                        "cache_dir": "--cache-dir"})
    refuse_overwriting_input({"--plan": args.plan, "--report": args.report_json}, args.input)
    if args.arch is not None:
        _asked_chip(args.arch)  # a bad target is refused before anything is read
    text, name = _read_input(args.input)
    dumps = _Dumps(args.dump_dir, "stdin" if args.input == "-" else os.path.splitext(os.path.basename(args.input))[0])
    try:
        entry = _compile_cached(args, text, name, dumps)
    except (_Failed, UserError):
        _write_dumps_of_failure(dumps)
        raise
    if (args.report_table or args.report_json) and entry.report_json is None:  # never silently without it
        raise UserError(f"no kernel report was made for --emit={args.emit} (it needs the kernels' assembly)")
    artefact = entry.artefact
    if args.output == "-" and isinstance(artefact, str) and not artefact.endswith("\n"):
        artefact += "\n"
    outputs = [(args.output, artefact)]
    if args.report_json:
        outputs.append((args.report_json, entry.report_json))
    if args.plan:
        outputs.append((args.plan, entry.plan_json))
    write_outputs(outputs + dumps.files)  # all or none: a report that cannot be written leaves the output file alone
    if args.report_table:
        sys.stderr.write(entry.report_table)
    return 0


def _write_dumps_of_failure(dumps: _Dumps) -> None:
    """The stages dumped before a compile failed (its diagnostics are printed); a failed write is one more error."""
    try:
        write_outputs(dumps.files)
    except UserError as err:
        print(f"pagedir-compile: error: {err}", file=sys.stderr)


def compile_source(
    text: str,
    *,
    arch: str | None = None,
    emit: str = "asm",
    opt_level: int = 3,
    index_bitwidth: int = 64,
    report: bool = False,
    plan: bool = False,
    cache: bool = True,
    cache_dir: str | None = None,
    name: str = "<string>",
) -> Entry:
    """Compile MLIR text in-process, through the compile cache, like ``pagedir-compile``.

    Returns a :class:`pagedir.cache.Entry`: ``artefact`` (str, or bytes for obj/hsaco/cubin),
    ``report_table`` and ``report_json`` when ``report`` (and the artefact needed assembly),
    ``plan_json`` (the launch plan, :mod:`pagedir.backend.plan`) when ``plan``,
    ``hit``. Errors raise :class:`pagedir.cli.args.UserError`; diagnostics go to stderr.
    """
    if emit not in EMIT_KINDS:
        raise UserError(f"unknown emit kind '{emit}'; expected one of {', '.join(EMIT_KINDS)}")
    args = argparse.Namespace(
        input=name, arch=arch, emit=emit, opt_level=opt_level, index_bitwidth=index_bitwidth, report_table=report,
        report_json=None, plan="-" if plan else None, dump_dir=None, no_cache=not cache, cache_dir=cache_dir, verbose=False,
    )
    if arch is not None:
        _asked_chip(arch)
    try:
        return _compile_cached(args, text, name, _Dumps(None, name))
    except _Failed:
        raise UserError(f"compiling {name} failed (the diagnostics are on stderr)") from None


def _compile_cached(args: argparse.Namespace, text: str, name: str, dumps: _Dumps) -> Entry:
    """The cached entry for this compile, else compile and store it."""
    note = (lambda message: print(f"pagedir-compile: {message}", file=sys.stderr)) if args.verbose else None
    cache = None if args.no_cache else Cache(args.cache_dir or default_cache_dir(), note)
    options = _cache_options(args)
    key = cache_key(text.encode("utf-8"), options) if cache else None
    if cache and not args.dump_dir and (entry := cache.load(key)):
        cache.note(f"cache hit {key} ({cache.path(key)})")
        return entry
    entry = _compile(args, text, name, dumps)
    if cache and cache.store(key, entry, {"options": options, "versions": tool_versions()}):
        cache.note(f"cache miss: stored {cache.path(key)}")
    return entry


def _cache_options(args: argparse.Namespace) -> dict:
    """The options that change the artefact, normalized (``amdgcn-amd-amdhsa:gfx942`` is ``gfx942``)."""
    options = {
        "arch": _normalized_arch(args.arch),
        "emit": args.emit,
        "opt_level": args.opt_level,
        "index_bitwidth": args.index_bitwidth,
        "report": bool(args.report_table or args.report_json),
        "plan": bool(getattr(args, "plan", None)),
        # The report's llvm-mca line: another llvm-mca (or one installed since) gives other figures.
        "llvm_mca": mca.llvm_mca() if args.report_table or args.report_json else None,
        # The tools the backend would run: another mlir-translate or linker may give another artefact.
        "mlir_translate": os.environ.get("PAGEDIR_MLIR_TRANSLATE"),
    }
    if args.emit == "hsaco":
        options["linker"] = linker_command()
    if args.emit == "cubin":
        options["ptxas"] = ptxas_command()
    return options


def _normalized_arch(arch: str | None) -> list | None:
    """[chip, sorted target features] for ``--arch`` (``amdgcn-amd-amdhsa:gfx942`` and ``gfx942`` share an entry)."""
    if not arch:
        return None
    chip, features = parse_target(arch)  # already checked by _asked_chip
    return [chip, sorted(f"{name}{'+' if on else '-'}" for name, on in features.items())]


def _compile(args: argparse.Namespace, text: str, name: str, dumps: _Dumps) -> Entry:
    _import_compiler()
    want_asm = bool(args.report_table or args.report_json)
    context = pagedir.make_context()
    with context, ir.Location.unknown(context), DiagnosticCollector(context) as collector:
        crash_guard.note_position(f"{name}:1:1", "parsing")
        module = _parse(text, name, collector)
        chip = _choose_chip(args.arch, module, collector)
        if why := emit_problem(chip, args.emit):
            raise UserError(why)
        dumps.write("input", module)
        kv_tiles = _kv_tiles(module)  # an input at L1 holds its tiling already
        if _has_rock_kernels(module) or driver.level_of(module.operation) == "linalg":  # linalg: raised first
            _run(module, driver.CompileOptions(arch=chip.name), "linalg", "L6", dumps, kv_tiles)
        if not _has_gpu_kernels(module):
            _fail([diag for diags in unraised_payloads(module).values() for diag in diags] or [Diag("error", "input has no GPU kernel: expected a func.func with "
                                                      "rock.kernel or a gpu.module holding a gpu.func kernel", name, 1, 1)])
        plan_json = None
        if args.plan:
            if not _needs_backend_pipeline(module):
                raise UserError("--plan needs the kernels as gpu.func (L6) or earlier; the input is already lowered past them")
            from pagedir.backend.plan import launch_plan, to_json as plan_to_json

            plan_json = plan_to_json(launch_plan(module))
        options = driver.CompileOptions(
            arch=chip.name, index_bitwidth=args.index_bitwidth, opt_level=args.opt_level, emit=args.emit, want_asm=want_asm
        )
        outputs = _run(module, options, "L6" if _needs_backend_pipeline(module) else "L7", None, dumps)
        artefact = str(module) if args.emit == "llvm-dialect" else outputs[driver.EMIT_LEVELS[args.emit]]
        if collector.has_errors:  # an error emitted by a step that went on: still an error
            _fail(collector.take())
    if "asm" in outputs and want_asm:
        try:
            reports = kernel_reports(outputs["asm"], chip)
        except BackendError as err:  # NVIDIA: ptxas not installed
            raise UserError(str(err)) from None
        add_kv_token_figures(reports, outputs["asm"], kv_tiles)
        return Entry(artefact, format_table(reports), to_json(reports), plan_json=plan_json)
    return Entry(artefact, plan_json=plan_json)


def _run(module: ir.Operation, options, start: str, end: str | None, dumps: _Dumps,
         kv_tiles: dict[str, int] | None = None) -> dict:
    """The driver's stages from ``start`` to ``end``; diagnostics printed, exit code 1 (2 for a bug in pagedir).
    ``kv_tiles`` receives the tiling rock-attention-to-gridwise chooses (:func:`_kv_tiles`)."""

    def on_stage(stage, output, seconds: float) -> None:
        dumps.on_stage(stage, output, seconds)
        if kv_tiles is not None and stage.name == "rock-attention-to-gridwise":
            kv_tiles.update(_kv_tiles(output))

    def note(stage) -> None:  # what a crash of MLIR's C++ code reports it was doing
        crash_guard.note_stage("generating code for" if stage.pipeline == driver.CODEGEN else f"running {stage.name} on")

    try:
        return driver.run(module, options, start=start, end=end, on_stage=on_stage, before_stage=note)
    except driver.StageError as err:
        _fail(err.diags)
    except driver.StageUnavailable as err:
        raise UserError(
            f"the input holds rock ops but rock-kernel-pipeline is not available in this installation: {err.cause}"
        ) from None
    except BackendError as err:
        raise UserError(str(err)) from None


def _read_input(path: str) -> tuple[str, str]:
    if path == "-":
        source, name = read_stdin(), "<stdin>"
    else:
        try:
            with open(path, "rb") as handle:
                source, name = handle.read(), path
        except OSError as err:
            raise UserError(f"could not open input file '{path}': {err.strerror}") from None
    try:
        return source.decode("utf-8"), name
    except UnicodeDecodeError:
        raise UserError(f"input '{name}' is not valid UTF-8 text") from None


def _fail(diags: list[Diag]) -> None:
    for diag in diags:
        print(diag.format(), file=sys.stderr)
    raise _Failed(2 if has_internal_errors(diags) else 1)


def _parse(text: str, name: str, collector: DiagnosticCollector) -> ir.Operation:
    try:
        return parse_module(text, name)
    except ir.MLIRError as err:
        _fail(collector.take() + from_mlir_error(err))


# ----------------------------------------------------------------------------
# Which chip, and which lowering the input still needs.


def _walk(module: ir.Operation, predicate) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if predicate(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


def _kv_tiles(module: ir.Operation) -> dict[str, int]:
    """``{kernel: n_per_block}`` of each ``rock.gridwise_attention_accel``: the KV tokens one iteration of the
    kernel's KV loop reads (the report's per KV token figures)."""
    tiles = {}
    for op in _walk(module, lambda op: op.name == "rock.gridwise_attention_accel" and "n_per_block" in op.attributes):
        func = op.parent
        while func is not None and func.name != "func.func":
            func = func.parent
        if func is not None:
            tiles[ir.StringAttr(func.attributes["sym_name"]).value] = ir.IntegerAttr(op.attributes["n_per_block"]).value
    return tiles


def _is_rock_kernel(op: ir.Operation) -> bool:
    return op.name == "func.func" and "rock.kernel" in op.attributes


def _is_payload(op: ir.Operation) -> bool:
    """A function rock-raise-attention reads: it writes a tensor into a memref argument, or takes and returns tensors."""
    return op.name == "func.func" and (driver.takes_tensors(op) or bool(
        _walk(op, lambda inner: inner.name == "bufferization.materialize_in_destination")))


def _is_gpu_kernel(op: ir.Operation) -> bool:
    return op.name in ("gpu.func", "llvm.func") and _in_gpu_module(op) and (
        "gpu.kernel" in op.attributes or "rocdl.kernel" in op.attributes
    )


def _in_gpu_module(op: ir.Operation) -> bool:
    parent = op.parent
    return parent is not None and parent.name == "gpu.module"


def _asked_chip(arch: str) -> Chip:
    try:
        return get_chip(arch)
    except ChipError as err:
        raise UserError(str(err)) from None


def _choose_chip(arch: str | None, module: ir.Operation, collector: DiagnosticCollector) -> Chip | None:
    """The one chip of the output: each kernel's by ``pagedir.arch.kernel_chip`` (``--arch``, else its ``rock.arch``).

    A linalg payload's function is the kernel it is raised to, so its ``rock.arch`` decides too (and
    one without either gets the rule's error). None when no kernel decides it (reported later).
    """
    kernels = _walk(module, lambda op: _is_rock_kernel(op) or _is_gpu_kernel(op) or _is_payload(op))
    chips = {chip.name: chip for kernel in kernels if (chip := kernel_chip_or_none(kernel, arch or ""))}
    if collector.has_errors:
        _fail(collector.take())
    if len(chips) > 1:
        raise UserError(f"kernels are for different chips ({', '.join(sorted(chips))}); compile each chip's kernels separately")
    if not chips:
        return _asked_chip(arch) if arch else None
    return next(iter(chips.values()))


def unraised_payloads(module: ir.Operation) -> dict[str | None, list[Diag]]:
    """Why each linalg payload left in ``module`` is not attention, by function name, as errors where
    rock-raise-attention stopped: what its ``explain=true`` remarks say (every blocker of a payload written
    into a memref argument or returning tensors, and why it reads no other function in linalg).
    Read on a copy: a function returning tensors is matched in the memref signature it is raised in."""
    from pagedir.diagnostics import Diag, file_position
    from pagedir.passes.raise_attention import NoMatch, match_attention, sinks, tensor_functions, unraisable_payloads

    found: list[tuple[ir.Operation, str]] = unraisable_payloads(module)
    copy = module.clone()
    try:
        tensor_functions(copy)
        for sink in sinks(copy):
            try:
                match_attention(sink)
            except NoMatch as failure:
                found += [(blocker.op or sink, str(blocker)) for blocker in getattr(failure, "blockers", None) or [failure]]
        by_function: dict[str | None, list[Diag]] = {}
        for op, reason in found:
            diag = Diag("error", f"not raised to rock.attention: {reason}", *file_position(op.location))
            by_function.setdefault(_function_name(op), []).append(diag)
    finally:
        copy.erase()
    return by_function


def _function_name(op: ir.Operation) -> str | None:
    import mlir.ir as ir  # also called without _import_compiler (pagedir-run)

    while op is not None and op.name != "func.func":
        op = op.parent
    return None if op is None else ir.StringAttr(op.attributes["sym_name"]).value


def _has_rock_kernels(module: ir.Operation) -> bool:
    """True when a rock.kernel function still holds rock ops (the kernel pipeline has work to do)."""
    for kernel in _walk(module, _is_rock_kernel):
        if _walk(kernel, lambda op: op.name.startswith("rock.")):
            return True
    return False


def _has_gpu_kernels(module: ir.Operation) -> bool:
    return bool(_walk(module, _is_gpu_kernel))


def _needs_backend_pipeline(module: ir.Operation) -> bool:
    return bool(_walk(module, lambda op: op.name == "gpu.func" and _in_gpu_module(op)))


if __name__ == "__main__":
    sys.exit(main())
