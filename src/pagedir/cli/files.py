"""Output files that a failing tool never leaves half written.

:func:`atomic_write` writes to a temporary file next to the target and renames it
over the target only once every byte is written: a run that fails (a bad input, a
full disk, an interrupt) keeps whatever the file held before. Kept free of MLIR
imports, like :mod:`pagedir.cli.args`.
"""

from __future__ import annotations

import os
import stat
import tempfile

from pagedir.cli.args import UserError


def atomic_write(path: str, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8); UserError naming the file on failure."""
    payload = data.encode("utf-8", errors="surrogateescape") if isinstance(data, str) else data
    directory = os.path.dirname(path) or "."
    try:
        existing = os.stat(path) if os.path.exists(path) else None
        if existing is not None and not stat.S_ISREG(existing.st_mode) and not stat.S_ISDIR(existing.st_mode):
            with open(path, "wb") as stream:  # /dev/null, /dev/stdout, a pipe: nothing to keep, nothing to rename over
                stream.write(payload)
            return
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else None
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as err:
        raise UserError(f"could not write '{path}': {err.strerror or err}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        if mode is not None:
            os.chmod(temporary, mode)
        else:  # a new file gets the permissions open() would give it
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException as err:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise UserError(f"could not write '{path}': {err.strerror or err}") from None
        raise
