"""pagedir-opt: run pagedir and upstream passes over .mlir files, like mlir-opt."""

from __future__ import annotations

import argparse
import sys

import mlir.ir as ir
from mlir.passmanager import PassManager

import pagedir
from pagedir.diagnostics import Diag, DiagnosticCollector, from_mlir
from pagedir.passes import PASSES, OptionError, create_pass
from pagedir.passes.verify import RockVerifyPass
from pagedir.pipeline_text import Element, PipelineSyntaxError, parse_pipeline


class UserError(Exception):
    """A user mistake reported as ``error: message`` with exit code 1."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pagedir-opt", description="Run pagedir and upstream MLIR passes.")
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin")
    parser.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    parser.add_argument("--pass-pipeline", help="textual pipeline, e.g. 'builtin.module(rock-reuse-lds{arch=gfx942})'")
    parser.add_argument("--allow-unregistered-dialect", action="store_true")
    parser.add_argument("--mlir-print-op-generic", action="store_true")
    parser.add_argument("--mlir-print-debuginfo", action="store_true")
    parser.add_argument("--list-passes", action="store_true", help="list pagedir passes and exit")
    parser.add_argument("--version", action="version", version=f"pagedir-opt {pagedir.__version__}")
    group = parser.add_argument_group("passes (run in the order given)")
    for info in PASSES.values():
        group.add_argument(
            f"--{info.argument}", dest="steps", action=_PassFlag, nargs="?", metavar="OPTIONS", help=info.summary
        )
    return parser


class _PassFlag(argparse.Action):
    """``--<pass-argument>[=options]``: appends ``argument{options}`` to the ordered steps."""

    def __call__(self, parser, namespace, values, option_string=None):
        steps = getattr(namespace, self.dest) or []
        argument = option_string[2:]
        steps.append(f"{argument}{{{values}}}" if values else argument)
        setattr(namespace, self.dest, steps)


def _split_pass_flags(argv: list[str]) -> list[str]:
    """Accept ``--rock-reuse-lds{arch=gfx950}`` and ``--rock-reuse-lds='arch=gfx950'``."""
    out = []
    for arg in argv:
        if arg.startswith("--") and "{" in arg and arg.endswith("}"):
            name, _, options = arg[2:-1].partition("{")
            out.append(f"--{name}={options}")
        else:
            out.append(arg)
    return out


def pipeline_steps(elements: list[Element]) -> list:
    """Turn parsed pipeline elements into pagedir pass instances and upstream pipeline text."""
    steps: list = []
    for element in elements:
        if element.name == "builtin.module" and element.has_nested:
            steps.extend(pipeline_steps(element.nested))
        elif element.name in PASSES:
            try:
                steps.append(create_pass(element.name, element.options))
            except OptionError as err:
                raise UserError(str(err)) from None
        else:
            if _mentions_pagedir_pass(element):
                raise UserError(f"pagedir pass nested under '{element.name}': pagedir passes run on builtin.module")
            steps.append(element.text())
    return steps


def _mentions_pagedir_pass(element: Element) -> bool:
    return any(e.name in PASSES or _mentions_pagedir_pass(e) for e in element.nested)


def main(argv: list[str] | None = None) -> int:
    argv = _split_pass_flags(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    if args.list_passes:
        for info in PASSES.values():
            print(f"  --{info.argument:<40} {info.summary}")
        return 0
    try:
        return _run(args)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _run(args) -> int:
    try:
        steps = []
        if args.pass_pipeline:
            steps += pipeline_steps(parse_pipeline(args.pass_pipeline))
        for step in args.steps or []:
            steps += pipeline_steps(parse_pipeline(step))
    except PipelineSyntaxError as err:
        raise UserError(str(err)) from None

    if args.input == "-":
        source, name = sys.stdin.buffer.read(), "<stdin>"
    else:
        try:
            with open(args.input, "rb") as handle:
                source, name = handle.read(), args.input
        except OSError as err:
            raise UserError(f"could not open input file '{args.input}': {err.strerror}") from None
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"input '{name}' is not valid UTF-8 text") from None

    context = pagedir.make_context(allow_unregistered=args.allow_unregistered_dialect)
    with context, DiagnosticCollector(context) as collector:
        try:
            module = ir.Operation.parse(text, source_name=name)
        except ir.MLIRError as err:
            return _report([from_mlir(d) for d in err.error_diagnostics] or [Diag("error", str(err))])
        if module.name != "builtin.module":
            wrapper = ir.Module.create(ir.Location.unknown())
            wrapper.body.append(module)
            module = wrapper.operation
        pm = PassManager("builtin.module")
        pm.enable_verifier(True)
        pm.add(RockVerifyPass(), name="RockVerifyPass", argument="rock-verify")
        for step in steps:
            if isinstance(step, str):
                try:
                    pm.add(step)
                except (ValueError, ir.MLIRError) as err:
                    raise UserError(f"invalid pass pipeline '{step}': {err}") from None
            else:
                pm.add(step, name=type(step).__name__, argument=step.argument, description=step.summary)
                pm.add(RockVerifyPass(), name="RockVerifyPass", argument="rock-verify")
        try:
            pm.run(module)
        except ir.MLIRError as err:
            diags = collector.diags + [from_mlir(d) for d in err.error_diagnostics]
            return _report(diags or [Diag("error", str(err))])
        if collector.has_errors:
            return _report(collector.diags)
        output = module.get_asm(print_generic_op_form=args.mlir_print_op_generic, enable_debug_info=args.mlir_print_debuginfo)
    if args.output == "-":
        sys.stdout.write(output)
        if not output.endswith("\n"):
            sys.stdout.write("\n")
    else:
        with open(args.output, "w") as handle:
            handle.write(output)
    return 0


def _report(diags: list[Diag]) -> int:
    for diag in diags:
        print(diag.format(), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
