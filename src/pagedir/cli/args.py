"""Command-line plumbing shared by the tools: a usage error is a user error (exit code 1).

argparse exits with code 2 on a usage error, which the tools reserve for a bug in
pagedir; :class:`RaisingArgumentParser` raises :class:`UserError` instead, and
:class:`ParserExit` for ``--help``/``--version``, so each ``main`` returns its status.
Kept free of MLIR imports so that ``--help`` stays quick.
"""

from __future__ import annotations

import argparse
import os
import sys

from pagedir.errors import UserError as UserError  # the tools and their callers name it from here


class ParserExit(Exception):
    """argparse is done (``--help``, ``--version``): ``main`` returns ``status``."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


class RaisingArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main`` returns the status."""

    def error(self, message: str):
        raise UserError(message)

    def parse_known_args(self, args=None, namespace=None):
        refuse_repeated(self, list(sys.argv[1:] if args is None else args))
        return super().parse_known_args(args, namespace)

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            sys.stderr.write(message)
        raise ParserExit(status)


#: The options that name a file: given twice, argparse would keep the last and never write (or read) the first.
FILE_OPTIONS = ("output", "plan", "report_json", "dump_dir", "cache_dir", "inputs", "outputs")


def refuse_repeated(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A file option given twice is an error, as in mlir-opt (``-o a -o b``, ``--plan=x --plan=y``): argparse
    would keep the last and leave the first file unwritten without a word. Other options keep argparse's
    rule (the last one counts), which scripts use to override a default list of flags."""
    seen: dict[str, str] = {}
    for token in argv:
        if token == "--":
            break
        if not token.startswith("-") or token == "-":
            continue
        name = token.split("=", 1)[0]
        action = parser._option_string_actions.get(name)  # argparse's table of option strings
        if action is None and name.startswith("--") and parser.allow_abbrev:  # --pl for --plan
            matches = {a for s, a in parser._option_string_actions.items() if s.startswith(name)}
            action = matches.pop() if len(matches) == 1 else None
        if not isinstance(action, argparse._StoreAction) or action.nargs is not None or action.dest not in FILE_OPTIONS:
            continue
        if action.dest in seen:
            both = "" if seen[action.dest] == name else f" (as {seen[action.dest]} and {name})"
            raise UserError(f"{name} was given twice{both}: it takes one value")
        seen[action.dest] = name


def refuse_overwriting_input(outputs: dict[str, str | None], input_path: str | None) -> None:
    """An output other than ``-o`` that names the input file (``--plan=kernel.mlir``) would overwrite what
    the user gave: an error before any work. (``-o`` may name it, as in mlir-opt: the input is read first.
    Two outputs naming one file are refused where they are written, :func:`pagedir.cli.files.write_outputs`.)"""
    if input_path in (None, "-"):
        return
    for flag, path in outputs.items():
        if path and path != "-" and os.path.realpath(path) == os.path.realpath(input_path):
            raise UserError(f"{flag} names the input file '{path}': it would be overwritten")


def refuse_empty(args: argparse.Namespace, flags: dict[str, str]) -> None:
    """``--flag=`` with nothing after it names no file: an error, not the flag left out (``flags``: dest -> flag)."""
    for dest, flag in flags.items():
        if getattr(args, dest, None) == "":
            raise UserError(f"{flag.rstrip('=')} was given an empty name")


#: What every tool says when the reader of its stdout went away (``tool | head -c 3``).
BROKEN_PIPE = "the output was closed before all of it was written (broken pipe)"


def detach_stdout() -> None:
    """Point stdout at /dev/null so that the flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def closed_output(tool: str) -> int:
    """The reader of stdout went away (``tool | head -c 3``): one line on stderr, exit code 1.

    stdout is pointed at /dev/null, so that Python's flush at exit does not fail a
    second time with its own message.
    """
    detach_stdout()
    try:
        print(f"{tool}: error: {BROKEN_PIPE}", file=sys.stderr)
    except OSError:  # stderr is gone too: the exit code says it
        pass
    return 1
