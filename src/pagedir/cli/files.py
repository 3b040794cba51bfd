"""Output files that are either written whole or left as they were.

A tool that fails must not lose what the user already had: :func:`write_output`
writes into a temporary file next to the target and renames it over the target
only once everything is written, so an error (or a crash) part way leaves the
old file intact. ``-`` means stdout; a closed stdout or a reader that went away
(``pagedir-opt x.mlir | head -c 3``) is a :class:`~pagedir.cli.args.UserError`,
not a traceback or a silent success; so is a closed stdin (:func:`read_stdin`).

Kept free of MLIR imports, like :mod:`pagedir.cli.args`.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from pagedir.cli.args import BROKEN_PIPE, UserError, detach_stdout


def write_output(path: str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` (``-``: stdout) whole, or raise :class:`UserError` naming the file."""
    write_outputs([(path, data)])


def write_outputs(outputs: list[tuple[str, str | bytes]]) -> None:
    """Write each ``(path, data)``, all or none: on a :class:`UserError` no named file has changed.

    Every regular file is first written in full to a temporary file beside it.
    What cannot be undone comes next: stdout (``-``) and targets that are not
    regular files (``/dev/full``, a FIFO), written in place; only then are the
    temporary files renamed over their targets (a rename in one directory does
    not fail for want of space). A failed write thus leaves every regular file
    as it was; of several special targets, those before the failed one were written.
    """
    files = [os.path.realpath(path) for path, _ in outputs if path != "-"]
    for path, _ in outputs:
        if path != "-" and files.count(os.path.realpath(path)) > 1:
            raise UserError(f"two outputs would be written to '{path}'; name a different file for each")
    if sum(path == "-" for path, _ in outputs) > 1:
        raise UserError("two outputs would be written to stdout; name a file for one of them")
    staged: list[_Staged] = []
    try:
        for path, data in outputs:
            if path != "-":
                with _reported(path):
                    staged.append(_stage(path, data))
        for path, data in outputs:
            if path == "-":
                write_stdout(data)
        for item in sorted(staged, key=lambda item: item.temporary is not None):  # in-place writes, then renames
            with _reported(item.path):
                item.commit()
    finally:
        for item in staged:
            item.discard()


@contextmanager
def _reported(path: str) -> Iterator[None]:
    """An ``OSError`` inside becomes a :class:`UserError` naming ``path``."""
    try:
        yield
    except OSError as err:
        raise UserError(f"could not write '{path}': {err.strerror or err}") from None


class _Staged:
    """``data`` on its way to ``path``: in ``temporary`` beside it, or (not a regular file) still in memory."""

    def __init__(self, path: str, target: str, data: str | bytes, temporary: str | None):
        self.path, self.target, self.data, self.temporary = path, target, data, temporary

    def commit(self) -> None:
        if self.temporary is None:
            with open(self.target, _mode(self.data)) as handle:
                handle.write(self.data)
            return
        os.replace(self.temporary, self.target)
        self.temporary = None

    def discard(self) -> None:
        if self.temporary is not None:
            os.unlink(self.temporary)
            self.temporary = None


def _stage(path: str, data: str | bytes) -> _Staged:
    """``data`` in a temporary file beside ``path``, with the mode of the file it replaces (else the usual
    ``0666 & ~umask``). A target that is not a regular file (``/dev/null``, a FIFO) is written in place at
    commit: renaming over it would replace the device or pipe. Raises ``OSError``, leaving no temporary file."""
    if path.endswith(("/", os.sep)):  # names a directory; realpath would drop the slash and write a file
        raise IsADirectoryError(errno.EISDIR, "a path ending in '/' names a directory, not a file", path)
    target = os.path.realpath(path)  # through a symlink: replace the file, keep the link
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        return _Staged(path, target, data, None)  # /dev/null, a FIFO: written in place at commit
    directory, name = os.path.split(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    try:
        with open(fd, _mode(data)) as handle:
            handle.write(data)
        os.chmod(temporary, stat.S_IMODE(existing.st_mode) if existing else _default_mode())
    except BaseException:
        os.unlink(temporary)
        raise
    return _Staged(path, target, data, temporary)


def _mode(data: str | bytes) -> str:
    return "wb" if isinstance(data, bytes) else "w"


def read_stdin() -> bytes:
    """All of stdin; a closed one is a :class:`UserError`."""
    if sys.stdin is None:  # no file descriptor 0 at start-up (``pagedir-opt <&-``)
        raise UserError("could not read stdin: it is closed")
    try:
        return sys.stdin.buffer.read()
    except OSError as err:
        raise UserError(f"could not read stdin: {err.strerror or err}") from None


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
    except BrokenPipeError:
        detach_stdout()
        raise UserError(BROKEN_PIPE) from None
    except OSError as err:
        detach_stdout()
        raise UserError(f"could not write to stdout: {err.strerror or err}") from None


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
