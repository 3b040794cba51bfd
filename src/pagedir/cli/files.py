"""Output files that are either written whole or left as they were.

A tool that fails must not lose what the user already had: :func:`write_output`
writes into a temporary file next to the target and renames it over the target
only once everything is written, so an error (or a crash) part way leaves the
old file intact. ``-`` means stdout; a closed stdout or a reader that went away
(``pagedir-opt x.mlir | head -c 3``) is a :class:`~pagedir.cli.args.UserError`,
not a traceback or a silent success.

Kept free of MLIR imports, like :mod:`pagedir.cli.args`.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile

from pagedir.cli.args import UserError


def write_output(path: str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` (``-``: stdout) whole, or raise :class:`UserError` naming the file."""
    if path == "-":
        write_stdout(data)
        return
    try:
        write_atomically(path, data)
    except OSError as err:
        raise UserError(f"could not write '{path}': {err.strerror or err}") from None


def write_atomically(path: str, data: str | bytes) -> None:
    """Write ``data`` into a temporary file beside ``path``, then rename it onto ``path``.

    The new file gets the mode of the file it replaces (else the usual ``0666 &
    ~umask``). A target that is not a regular file (``/dev/null``, a FIFO) is
    written in place: renaming over it would replace the device or pipe.
    Raises ``OSError``; the target is untouched and no temporary file is left.
    """
    target = os.path.realpath(path)  # through a symlink: replace the file, keep the link
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(target, "wb" if isinstance(data, bytes) else "w") as handle:
            handle.write(data)
        return
    directory, name = os.path.split(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    try:
        with open(fd, "wb" if isinstance(data, bytes) else "w") as handle:
            handle.write(data)
        os.chmod(temporary, stat.S_IMODE(existing.st_mode) if existing else _default_mode())
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def write_stdout(data: str | bytes) -> None:
    """Write ``data`` to stdout and flush; a closed stdout or a broken pipe is a :class:`UserError`."""
    if sys.stdout is None:  # Python found no file descriptor 1 at start-up (``pagedir-opt x >&-``)
        raise UserError("could not write to stdout: it is closed")
    try:
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
    except OSError as err:
        _detach_stdout()
        raise UserError(f"could not write to stdout: {err.strerror or err}") from None


def _detach_stdout() -> None:
    """Point stdout at /dev/null so that the flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
