"""pagedir-opt: run pagedir and upstream passes over .mlir files, like mlir-opt.

Passes run in the order of their flags (``--rock-annotate-liveness
--canonicalize --rock-reuse-lds='arch=gfx950'``, or ``--rock-reuse-lds{arch=gfx950}``)
or as given by ``--pass-pipeline='builtin.module(a,func.func(canonicalize),b{k=v})'``.
Every upstream pass of the bindings is a flag too (:mod:`pagedir.upstream_passes`);
one restricted to an op (``convert-gpu-to-rocdl`` on ``gpu.module``) runs nested
on each such op, as mlir-opt nests its flags. Named pipelines
(``pagedir.pipelines.PIPELINES``) work in both places. The
Python verifiers of rock ops run after parsing and after every pagedir pass
(upstream passes run MLIR's own verifier; the rock verifiers run again at the
end). User errors are printed as ``file:line:col: error: message`` and give
exit code 1; a Python exception is a bug, reported as an internal error with
exit code 2 (set ``PAGEDIR_TRACEBACK=1`` to see the traceback).

The work runs in a forked child (:mod:`pagedir.cli.crash_guard`): input that
crashes MLIR's C++ code is reported as an error, and ``-o FILE`` is only
replaced, whole, when every chunk succeeded (:mod:`pagedir.cli.files`).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import mlir.ir as ir
from mlir.passmanager import PassManager

import pagedir
from pagedir.cli import crash_guard
from pagedir.cli.args import ParserExit, RaisingArgumentParser, UserError, refuse_empty
from pagedir.cli.files import read_stdin, write_output
from pagedir.cli.screen import check_source
from pagedir.diagnostics import (
    Diag,
    DiagnosticCollector,
    ErrorCounter,
    ExpectationError,
    from_mlir_error,
    has_internal_errors,
    parse_expectations,
    run_pass_manager,
    source_error,
    verify_diagnostics,
)
from pagedir.passes import PASSES, OptionError, Pass, get_pass_class
from pagedir.passes.base import option_help, parse_option_values
from pagedir.passes.verify import verify_rock_ops
from pagedir.pipeline_text import Element, PipelineSyntaxError, parse_pipeline
from pagedir.upstream_passes import UPSTREAM_PASSES, UPSTREAM_PIPELINES, UpstreamPass

SPLIT_MARKER = "// -----"
_SINGLE_TOP_LEVEL = "source must contain a single top-level operation"


class InternalError(Exception):
    """Something in pagedir itself is broken (a pass that fails to import, a bug)."""


def _pipelines() -> dict[str, Any]:
    from pagedir.pipelines import PIPELINES

    return PIPELINES


# ----------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    parser = RaisingArgumentParser(
        prog="pagedir-opt",
        allow_abbrev=False,  # a truncated pass flag must be an error, not a silently ignored match
        description="Run pagedir and upstream MLIR passes over .mlir files, like mlir-opt.",
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin (default)")
    parser.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    parser.add_argument("--pass-pipeline", help="textual pipeline, e.g. 'builtin.module(rock-reuse-lds{arch=gfx942})'")
    parser.add_argument(
        "--split-input-file",
        action="store_true",
        help=f"process each chunk between '{SPLIT_MARKER}' lines separately (--split-input-file=MARKER for another)",
    )
    parser.add_argument("--split-input-marker", default=SPLIT_MARKER, help=argparse.SUPPRESS)
    parser.add_argument("--verify-diagnostics", action="store_true", help="check diagnostics against expected-* comments")
    parser.add_argument("--allow-unregistered-dialect", action="store_true", help="accept ops of unknown dialects")
    parser.add_argument("--mlir-print-ir-before-all", action="store_true", help="print the IR before every pass")
    parser.add_argument("--mlir-print-ir-after-all", action="store_true", help="print the IR after every pass")
    parser.add_argument("--mlir-print-ir-after-failure", action="store_true", help="print the IR after a failed pass")
    parser.add_argument("--mlir-print-op-generic", action="store_true", help="print ops in generic form")
    parser.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    parser.add_argument("--mlir-timing", action="store_true", help="report the time spent in each pass")
    parser.add_argument("--dump-pass-pipeline", action="store_true", help="print the pass pipeline before running it")
    parser.add_argument("--list-passes", action="store_true", help="list passes and pipelines with their options")
    parser.add_argument("--show-dialects", action="store_true", help="list the dialects available")
    parser.add_argument("--show-dialect", metavar="NAME", help="print the reference of a pagedir dialect (rock)")
    parser.add_argument("--version", action="version", version=f"pagedir-opt {pagedir.__version__}")
    group = parser.add_argument_group(
        "passes and pipelines (run in the order given; options as =OPTS or {OPTS})",
        f"pagedir's own are below; the {len(UPSTREAM_PASSES)} upstream MLIR passes are flags too: "
        "--list-passes shows them all, with their options",
    )
    for info in sorted(PASSES.values(), key=lambda i: i.argument):
        group.add_argument(f"--{info.argument}", action="store_true", help=info.summary)
    for name, info in sorted(_pipelines().items()):
        group.add_argument(f"--{name}", action="store_true", help=info.summary)
    return parser


def _upstream() -> dict[str, UpstreamPass]:
    return {**UPSTREAM_PASSES, **UPSTREAM_PIPELINES}


def extract_pass_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    """Take ``--<pass>``, ``--<pass>=OPTS`` and ``--<pass>{OPTS}`` out of ``argv``, in order.

    Returns (pipeline elements as text, remaining arguments). Done before
    argparse so that a pass flag never swallows the input file name. An
    upstream pass restricted to an op is nested on it, and adjacent ones on the
    same op share the nest (``func.func(a,b)``), as mlir-opt's implicit nesting does.
    """
    upstream = _upstream()
    names = set(PASSES) | set(_pipelines()) | set(upstream)
    steps, rest = [], []
    nested_on = None  # the op of the nest that ends ``steps``, when the last flag opened one
    for arg in argv:
        if arg == "--":
            rest.append(arg)
            continue
        body = arg[2:] if arg.startswith("--") else ""
        name, options = body, ""
        brace, equals = body.find("{"), body.find("=")
        if brace != -1 and body.endswith("}") and (equals == -1 or brace < equals):  # --a{k=v}, not --a=k={v}
            name, _, options = body[:-1].partition("{")
        elif "=" in body:
            name, _, options = body.partition("=")
        if name not in names:
            rest.append(arg)
            continue
        options = options.strip().strip("'\"")
        element = f"{name}{{{options}}}" if options else name
        anchor = upstream[name].anchor if name in upstream else None
        if anchor is None:
            steps.append(element)
        elif anchor == nested_on:
            steps[-1] = f"{steps[-1][:-1]},{element})"
        else:
            steps.append(f"{anchor}({element})")
        nested_on = anchor
    return steps, rest


def unrecognized(arguments: list[str]) -> UserError:
    """The usage error for flags that are no option nor pass, naming the closest pass or option."""
    message = f"unrecognized arguments: {' '.join(arguments)}"
    flag = next((a for a in arguments if a.startswith("--")), None)
    if flag is None:
        return UserError(message)
    name = re.split(r"[={]", flag[2:], maxsplit=1)[0]
    known = set(PASSES) | set(_pipelines()) | set(_upstream())
    known |= {o[2:] for o in build_parser()._option_string_actions if o.startswith("--")}
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return UserError(f"{message} (did you mean '--{close[0]}'?)" if close else message)


def _split_marker_flag(argv: list[str]) -> list[str]:
    """``--split-input-file=MARKER`` -> ``--split-input-file --split-input-marker=MARKER``."""
    out = []
    for arg in argv:
        if arg.startswith("--split-input-file="):
            out += ["--split-input-file", f"--split-input-marker={arg.partition('=')[2]}"]
        else:
            out.append(arg)
    return out


# ----------------------------------------------------------------------------
# Pipelines: pagedir pass instances and upstream pipeline text, in order.


def pipeline_steps(elements: list[Element]) -> list[Pass | str]:
    """Turn parsed pipeline elements into pagedir pass instances and upstream pipeline text."""
    steps: list[Pass | str] = []
    for element in elements:
        if element.name == "builtin.module" and element.has_nested:
            steps.extend(pipeline_steps(element.nested))
        elif element.name in PASSES:
            steps.append(_create_pass(element.name, element.options))
        elif element.name in _pipelines():
            steps.extend(_expand_pipeline(element.name, element.options))
        else:
            if _mentions_pagedir_pass(element):
                raise UserError(
                    f"pagedir passes run on builtin.module, not nested under '{element.name}': '{element.text()}'"
                )
            steps.append(element.text())
    return steps


def _create_pass(argument: str, options: str) -> Pass:
    try:
        cls = get_pass_class(argument)
    except Exception as err:  # a broken or missing pass module is our bug, not the user's
        raise InternalError(f"cannot load pass '{argument}': {type(err).__name__}: {err}") from err
    try:
        return cls(parse_option_values(argument, cls.Options, options))
    except OptionError as err:
        raise UserError(str(err)) from None


def _expand_pipeline(name: str, options: str) -> list[Pass | str]:
    info = _pipelines()[name]
    try:
        values = parse_option_values(name, info.options, options)
    except OptionError as err:
        raise UserError(str(err)) from None
    steps: list[Pass | str] = []
    try:
        expanded = info.steps(values)
    except OptionError as err:
        raise UserError(str(err)) from None
    except ImportError as err:  # a pass of the pipeline that does not load is our bug
        raise InternalError(f"cannot load pipeline '{name}': {type(err).__name__}: {err}") from err
    for step in expanded:
        if isinstance(step, str):
            steps.extend(pipeline_steps(_parse_pipeline(step)))
        else:
            steps.append(step)
    return steps


def _mentions_pagedir_pass(element: Element) -> bool:
    names = set(PASSES) | set(_pipelines())
    return any(e.name in names or _mentions_pagedir_pass(e) for e in element.nested)


def _parse_pipeline(text: str) -> list[Element]:
    try:
        return parse_pipeline(text)
    except PipelineSyntaxError as err:
        raise UserError(f"<pass-pipeline>:1:{err.column}: {err.message} in '{err.text}'") from None


def requested_steps(args: argparse.Namespace, flag_steps: list[str]) -> list[Pass | str]:
    if args.pass_pipeline is not None and flag_steps:
        raise UserError("--pass-pipeline cannot be combined with individual pass flags")
    if args.pass_pipeline is not None:
        return pipeline_steps(_parse_pipeline(args.pass_pipeline)) if args.pass_pipeline.strip() else []
    steps: list[Pass | str] = []
    for text in flag_steps:
        steps += pipeline_steps(_parse_pipeline(text))
    return steps


class _ThenVerify:
    """Runs a pagedir pass, then the rock verifiers when it succeeded (mlir-opt's verify-each)."""

    def __init__(self, step: Pass):
        self.step = step

    def __call__(self, op: Any, pass_: Any) -> None:
        failed = []

        class _Recorder:
            def signal_pass_failure(self) -> None:
                failed.append(True)
                pass_.signal_pass_failure()

        self.step(op, _Recorder())
        if not failed and not verify_rock_ops(op.operation if hasattr(op, "operation") else op):
            pass_.signal_pass_failure()


def build_pass_manager(steps: list[Pass | str], args: argparse.Namespace, *, instrument: bool = True) -> PassManager:
    """A module-level PassManager running ``steps`` with the requested printing and timing (in a context)."""
    pm = PassManager("builtin.module")
    pm.enable_verifier(True)
    for step in steps:
        if isinstance(step, str):
            add_upstream(pm, step)
        else:
            pm.add(_ThenVerify(step), name=type(step).__name__, argument=step.argument, description=step.summary)
    if not instrument:
        return pm
    if args.mlir_print_ir_before_all or args.mlir_print_ir_after_all or args.mlir_print_ir_after_failure:
        # As in mlir-opt, "after failure" is "after every pass, but only when it failed".
        pm.enable_ir_printing(
            print_before_all=args.mlir_print_ir_before_all,
            print_after_all=args.mlir_print_ir_after_all or args.mlir_print_ir_after_failure,
            print_after_failure=args.mlir_print_ir_after_failure and not args.mlir_print_ir_after_all,
            enable_debug_info=args.mlir_print_debuginfo,
            print_generic_op_form=args.mlir_print_op_generic,
        )
    if args.mlir_timing:
        pm.enable_timing()
    return pm


_FAILED_TO_ADD = re.compile(r"failed to add `(?P<name>[^`]*)` with options `(?P<options>[^`]*)`")


def add_upstream(pm: PassManager, text: str) -> None:
    """``pm.add(text)``; a bad pass or option is a one-line UserError.

    MLIR's option parser writes why a value is bad straight to stderr, before
    the bindings raise a bare "failed to add": it is captured and joined in.
    """
    check_lazy_pipelines(text)
    error = None
    with _captured_stderr() as written:
        try:
            pm.add(text)
        except (ValueError, ir.MLIRError) as err:
            error = str(err).strip()
    if error is None and " error: " in written[0]:  # printed an error yet added the pass: still an error
        error = f"failed to add `{text}` with options ``"
    if error is None:
        if written[0] and sys.stderr is not None:  # nothing went wrong: whatever MLIR said is passed on
            sys.stderr.write(written[0])
        return
    failed = _FAILED_TO_ADD.search(error)
    if failed is None:  # a syntax error or an unknown name: MLIR's located message, as it is
        raise UserError(error)
    reasons = [_reason(line) for line in (written[0] + "\n" + error[: failed.start()]).splitlines() if line.strip()]
    name, options = failed["name"], failed["options"]
    what = f"invalid options for '{name}' ('{options}')" if options else f"cannot add '{name}'"
    raise UserError(f"{what}: {'; '.join(reasons)}" if reasons else what)


#: Options holding a pipeline that the pass parses only when it uses it, dropping the error
#: (``inline{default-pipeline=bogus}`` printed why and went on): checked when the step is added.
_LAZY_PIPELINE_OPTION = re.compile(r"(?<![\w-])default-pipeline=")


def check_lazy_pipelines(step: str) -> None:
    """Each ``default-pipeline=`` value of ``step`` parses as a pipeline, else a UserError naming it."""
    for match in _LAZY_PIPELINE_OPTION.finditer(step):
        value = _option_value(step, match.end())
        if not value:
            continue
        error = None
        with _captured_stderr() as written:
            try:
                PassManager.parse(f"builtin.module(any({value}))")
            except (ValueError, ir.MLIRError) as err:
                error = str(err)
        if error is not None:
            lines = (written[0] + "\n" + error).splitlines()
            reasons = [_reason(line.partition(" error: ")[2] or line) for line in lines  # not MLIR's echo of the text
                       if line.strip() and not line.lstrip().startswith(("failed to add", "^", "any("))]
            raise UserError(f"invalid options for 'inline' ('default-pipeline={value}'): {'; '.join(reasons)}")


def _option_value(text: str, start: int) -> str:
    """The option value starting at ``start``: up to a space or the closing brace at its level ({...} unwrapped)."""
    depth, end = 0, start
    while end < len(text):
        char = text[end]
        if char in "{(":
            depth += 1
        elif char in "})":
            if depth == 0:
                break
            depth -= 1
        elif char.isspace() and depth == 0:
            break
        end += 1
    value = text[start:end]
    return value[1:-1] if value.startswith("{") and value.endswith("}") else value


@contextmanager
def _captured_stderr() -> Iterator[list[str]]:
    """What C++ code writes to file descriptor 2 while active: the one string of the yielded list, set on exit."""
    _flush_streams()
    written = [""]
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                yield written
            finally:
                os.dup2(saved, 2)
                captured.seek(0)
                written[0] = captured.read().decode("utf-8", "replace")
    finally:
        os.close(saved)


def _reason(line: str) -> str:
    """LLVM's option-parser line without its empty program-name prefix, parser name and '!'."""
    return line.strip().removeprefix(":").strip().removeprefix("<Pass-Options-Parser>:").strip().rstrip("!")


def pipeline_dump(steps: list[Pass | str]) -> str:
    """What ``--dump-pass-pipeline`` prints: upstream elements with their defaults filled in."""
    parts = []
    for step in steps:
        if isinstance(step, Pass):
            parts.append(step.pipeline_text())
            continue
        full = str(PassManager.parse(f"builtin.module({step})"))
        parts.append(full[len("builtin.module(") : -1])
    return f"Pass Manager with {len(steps)} passes:\nbuiltin.module({','.join(parts)})"


# ----------------------------------------------------------------------------
# Input: whole file or chunks, each padded so that line numbers stay those of the file.


@dataclass
class Chunk:
    text: str  # preceded by newlines so that its first line has its line number in the file
    first_line: int


def split_input(text: str, marker: str | None) -> list[Chunk]:
    if marker is None:
        return [Chunk(text, 1)]
    chunks, current, start = [], [], 1
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith(marker):
            chunks.append(Chunk("\n" * (start - 1) + "\n".join(current), start))
            current, start = [], number + 1
            continue
        current.append(line)
    chunks.append(Chunk("\n" * (start - 1) + "\n".join(current), start))
    return chunks


def parse_module(text: str, name: str) -> ir.Operation:
    """Parse ``text`` into a ``builtin.module``, wrapping other top-level ops like mlir-opt does.

    Raises ``ir.MLIRError`` with located diagnostics, also for text that MLIR's
    parser cannot survive (:func:`pagedir.cli.screen.check_source`). Needs an
    ambient context.
    """
    if problem := check_source(text):
        raise source_error(name, problem.line, problem.col, problem.message)
    try:
        op = ir.Operation.parse(text, source_name=name)
    except ir.MLIRError as err:
        if _SINGLE_TOP_LEVEL not in str(err):
            raise
        # Several (or no) top-level ops: parse them inside a module, as mlir-opt does.
        return ir.Operation.parse(_wrap_in_module(text), source_name=name)
    if op.name == "builtin.module":
        return op
    wrapper = ir.Module.create(ir.Location.unknown())
    wrapper.body.append(op)
    return wrapper.operation


def _wrap_in_module(text: str) -> str:
    """``module {`` goes at the very start: only IR on the first line (rare: it is
    usually a comment or, in a split chunk, padding) sees its columns shift."""
    return "module {" + text + "\n}"


@dataclass
class ChunkResult:
    ok: bool
    output: str | None  # printed IR, None when the chunk failed
    internal: bool = False  # a bug in pagedir was reported (exit code 2)


def process_chunk(
    context: ir.Context, chunk: Chunk, name: str, steps: list[Pass | str], args: argparse.Namespace
) -> ChunkResult:
    expectations = []
    if args.verify_diagnostics:
        try:
            expectations = parse_expectations(chunk.text)
        except ExpectationError as err:
            _print(Diag("error", str(err), name, err.line, err.col))
            return ChunkResult(False, None)

    output, diags = _parse_and_run(context, chunk, name, steps, args)
    if has_internal_errors(diags):  # a bug: reported as it is, whatever the expectations
        for diag in diags:
            _print(diag)
        return ChunkResult(False, None, internal=True)
    if args.verify_diagnostics:
        problems = verify_diagnostics(diags, expectations, name)
        for problem in problems:
            _print(problem)
        return ChunkResult(not problems, output)
    for diag in diags:
        _print(diag)
    return ChunkResult(output is not None and not any(d.severity == "error" for d in diags), output)


def _parse_and_run(
    context: ir.Context, chunk: Chunk, name: str, steps: list[Pass | str], args: argparse.Namespace
) -> tuple[str | None, list[Diag]]:
    """(printed IR or None on failure, every diagnostic emitted, in order)."""
    where = f"{name}:{chunk.first_line}:1"
    with context, ir.Location.unknown(context), DiagnosticCollector(context) as collector:
        crash_guard.note_position(where, "parsing")
        try:
            module = parse_module(chunk.text, name)
        except ir.MLIRError as err:
            return None, collector.take() + from_mlir_error(err)
        crash_guard.note_position(where, "verifying")
        if not verify_rock_ops(module):
            return None, collector.take()
        pm = build_pass_manager(steps, args)
        _flush_streams()  # IR printing and timing write from C++, after what Python wrote
        crash_guard.note_position(where, "running passes on")
        diags = run_pass_manager(pm, module, collector)
        if any(d.severity == "error" for d in diags):
            return None, diags
        if any(isinstance(step, str) for step in steps) and not verify_rock_ops(module):
            return None, diags + collector.take()
        crash_guard.note_position(where, "printing")
        output = module.get_asm(
            print_generic_op_form=args.mlir_print_op_generic, enable_debug_info=args.mlir_print_debuginfo
        )
        return output, diags + collector.take()


def _print(diag: Diag) -> None:
    print(diag.format(), file=sys.stderr)


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None: the descriptor was closed when Python started
            stream.flush()


# ----------------------------------------------------------------------------
# Listings


def list_passes() -> str:
    """pagedir's passes, then the upstream ones, then pagedir's and the upstream pipelines, each group in
    alphabetical order in mlir-opt's format: a reader looking for pagedir's passes finds them first, not
    after 500 upstream ones."""
    lines = ["Passes:"]
    for name in sorted(PASSES):
        lines.append(_pass_line(name, PASSES[name].summary))
        try:
            options_cls = get_pass_class(name).Options
        except Exception as err:  # a pass still being written must not hide the others
            lines.append(f"    (not available: {type(err).__name__}: {err})")
            continue
        lines += _option_lines(options_cls)
    lines.append("Upstream Passes:")
    for name in sorted(set(UPSTREAM_PASSES) - set(PASSES)):
        lines += _upstream_lines(UPSTREAM_PASSES[name])
    lines.append("Pass Pipelines:")
    for name, pipeline in sorted(_pipelines().items()):
        lines.append(_pass_line(name, pipeline.summary))
        lines += _option_lines(pipeline.options)
    lines.append("Upstream Pass Pipelines:")
    for name in sorted(set(UPSTREAM_PIPELINES) - set(_pipelines())):
        lines += _upstream_lines(UPSTREAM_PIPELINES[name])
    return "\n".join(lines)


def _pass_line(name: str, summary: str) -> str:
    return f"  --{name:<46} -   {summary}"


def _option_lines(options_cls: type) -> list[str]:
    lines = []
    for name, kind, default, doc in option_help(options_cls):
        flag = f"--{name}=<{kind}>"
        shown_default = f" (default: {default!r})" if default not in (None, "") else ""
        lines.append(f"    {flag:<46} - {doc}{shown_default}".rstrip())
    return lines


def _upstream_lines(info: UpstreamPass) -> list[str]:
    summary = f"{info.summary} (runs on each {info.anchor})" if info.anchor else info.summary
    lines = [_pass_line(info.argument, summary)]
    for option in info.options:
        lines.append(f"    {option.flag:<46} - {option.summary}".rstrip())
        lines += [f"      ={value:<45} -   {doc}".rstrip() for value, doc in option.values]
    return lines


def available_dialects() -> list[str]:
    """Dialects known to a pagedir context.

    The bindings expose no list of registered dialects, but MLIR names them all
    in the note it attaches when an op of an unknown dialect is parsed.
    """
    context = pagedir.make_context()
    try:
        ir.Operation.parse("pagedir_probe.op", context=context)
    except ir.MLIRError as err:
        for diag in err.error_diagnostics:
            for note in diag.notes:
                if note.message.startswith("Available dialects:"):
                    names = note.message.split(":", 1)[1].split(" (* corresponding")[0]
                    return [n.replace("(*)", "").strip() for n in names.split(",") if n.strip()]
    return ["rock"]


def show_dialect(name: str) -> str:
    from pagedir.dialect.core import render_markdown
    from pagedir.dialect.rock import NAMESPACE, OP_DEFS

    if name != NAMESPACE:
        raise UserError(f"no reference for dialect '{name}' (pagedir defines: {NAMESPACE})")
    return render_markdown(NAMESPACE, OP_DEFS)


# ----------------------------------------------------------------------------
# Driver


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    return crash_guard.run_guarded("pagedir-opt", lambda: _main(arguments))


def _main(argv: list[str]) -> int:
    try:
        return run(argv)
    except ParserExit as done:
        return done.status
    except UserError as err:
        message = str(err)
        # Upstream pipeline errors come already formatted as "<where>: error: ...".
        print(message if ": error: " in message else f"pagedir-opt: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except InternalError as err:
        if os.environ.get("PAGEDIR_TRACEBACK"):
            traceback.print_exc()
        print(f"pagedir-opt: internal error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # a bug in pagedir: say so, without a traceback unless asked
        if os.environ.get("PAGEDIR_TRACEBACK"):
            traceback.print_exc()
        print(f"pagedir-opt: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2


def run(argv: list[str]) -> int:
    flag_steps, argv = extract_pass_flags(argv)
    args, unknown = build_parser().parse_known_args(_split_marker_flag(argv))
    if unknown:
        raise unrecognized(unknown)
    refuse_empty(args, {"output": "-o"})
    if args.list_passes:
        write_output("-", list_passes() + "\n")
        return 0
    if args.show_dialects:
        write_output("-", "Available Dialects: " + ", ".join(available_dialects()) + "\n")
        return 0
    if args.show_dialect:
        write_output("-", show_dialect(args.show_dialect))
        return 0

    text = read_input(args.input)
    name = "<stdin>" if args.input == "-" else args.input
    context = pagedir.make_context(allow_unregistered=args.allow_unregistered_dialect)
    printed = ErrorCounter(context)
    with context, ir.Location.unknown(context):
        steps = requested_steps(args, flag_steps)
        build_pass_manager(steps, args, instrument=False)  # report a bad upstream pipeline before any output
        if args.dump_pass_pipeline:
            print(pipeline_dump(steps), file=sys.stderr)

    marker = args.split_input_marker if args.split_input_file else None
    results = [process_chunk(context, chunk, name, steps, args) for chunk in split_input(text, marker)]
    if any(r.internal for r in results):
        return 2
    ok = all(r.ok for r in results) and not printed.count
    outputs = [_ending_in_newline(r.output) for r in results if r.output is not None]
    if ok or args.output == "-":  # a file named by -o keeps what it held unless every chunk succeeded
        write_output(args.output, f"{marker}\n".join(outputs) if marker else "".join(outputs))
    return 0 if ok else 1


def read_input(path: str) -> str:
    try:
        if path == "-":
            data = read_stdin()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
    except OSError as err:
        raise UserError(f"could not open input file '{path}': {err.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        shown = "<stdin>" if path == "-" else path
        raise UserError(f"input '{shown}' is not UTF-8 text (invalid byte at offset {err.start})") from None


def _ending_in_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


if __name__ == "__main__":
    sys.exit(main())
