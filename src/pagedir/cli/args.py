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

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            sys.stderr.write(message)
        raise ParserExit(status)


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
