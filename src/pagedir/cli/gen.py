"""pagedir-gen: emit the IR of a kernel configuration (like rocmlir-gen).

Like the other tools, the work runs in a forked child (:mod:`pagedir.cli.crash_guard`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from pagedir.cli import crash_guard
from pagedir.cli.args import ParserExit, RaisingArgumentParser, UserError, closed_output, refuse_empty
from pagedir.cli.files import write_output
from pagedir.gen import GENERATORS


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help that shows each option's default, like ArgumentDefaultsHelpFormatter, where there is one to show.

    Flags (off unless given), options whose default is computed (``None``) and
    help that already states its default are left as written.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return f"{text} (default: %(default)s)".lstrip()


def build_parser() -> argparse.ArgumentParser:
    parser = RaisingArgumentParser(prog="pagedir-gen", description="Generate pagedir kernels as .mlir")
    sub = parser.add_subparsers(dest="kind", required=True)
    for kind, module_name in GENERATORS.items():
        module = importlib.import_module(f"pagedir.gen.{module_name}")
        sub_parser = sub.add_parser(
            kind, help=(module.__doc__ or "").strip().splitlines()[0], formatter_class=DefaultsHelpFormatter
        )
        module.add_arguments(sub_parser)
        sub_parser.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
        sub_parser.set_defaults(module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    return crash_guard.run_guarded("pagedir-gen", lambda: _main(arguments))


def _main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        refuse_empty(args, {"output": "-o"})
        text = args.module.generate(args)
        write(args.output, text)
    except ParserExit as done:
        return done.status
    except UserError as err:
        print(f"pagedir-gen: error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return closed_output("pagedir-gen")
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug in pagedir: say so, without a traceback unless asked
        if os.environ.get("PAGEDIR_TRACEBACK"):
            traceback.print_exc()
        print(f"pagedir-gen: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    return 0


def write(path: str, text: str) -> None:
    """To stdout, or to ``path`` through a temporary file: a failed write keeps what ``path`` held."""
    write_output(path, text)


if __name__ == "__main__":
    sys.exit(main())
