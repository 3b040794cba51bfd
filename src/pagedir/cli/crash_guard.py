"""Run a tool's work in a forked child, so that a crash inside MLIR's C++ code is an error, not a dead tool.

MLIR's parser, verifier and printer assert or overflow the stack on some
inputs (:mod:`pagedir.cli.screen` rejects the ones we know before parsing).
For the ones we do not know, :func:`run_guarded` forks: the child does the
work and exits with its status; when it dies by a signal instead, the parent
prints one line naming the input position the child had reached (see
:func:`note_position`) and the signal, and returns 1. Output files are
written by renaming a finished temporary file (:mod:`pagedir.cli.files`), so
a crash never leaves a half-written one.

Forking costs little against the start-up (docs/measurements.md); set
``PAGEDIR_CRASH_GUARD=0`` to run in-process (under a debugger, for example).
Without real stdout/stderr file descriptors (pytest's capsys) the work also
runs in-process, since a child's writes would not reach the parent's buffers.
"""

from __future__ import annotations

import mmap
import os
import signal
import sys
from collections.abc import Callable

_POSITION_BYTES = 4096
#: Shared with the child: what it is working on (``file:line:col`` and a stage), NUL-terminated.
_position: mmap.mmap | None = None
_where = ""

#: Signals sent to the parent (``timeout``, a closed terminal) that the child must get too.
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def note_position(where: str, stage: str) -> None:
    """Record the position being worked on (``x.mlir:12:1``, ``parsing``) for a crash report."""
    global _where
    _where = where
    if _position is None:
        return
    data = f"{where}\0{stage}\0".encode(errors="replace")[: _POSITION_BYTES - 1]
    _position.seek(0)
    _position.write(data + b"\0")


def note_stage(stage: str) -> None:
    """Record what is being done at the position last noted."""
    note_position(_where, stage)


def run_guarded(tool: str, work: Callable[[], int]) -> int:
    """``work()`` in a child process; its exit status, or 1 with an error line when it died by a signal."""
    if not _can_fork():
        return work()
    global _position
    _position = mmap.mmap(-1, _POSITION_BYTES)  # anonymous and shared: the child's writes are seen here
    _flush()
    pid = os.fork()
    if pid == 0:
        os._exit(_child(work))
    return _parent(tool, pid)


def _can_fork() -> bool:
    if os.environ.get("PAGEDIR_CRASH_GUARD", "1") == "0" or not hasattr(os, "fork"):
        return False
    try:
        return sys.stderr.fileno() == 2 and (sys.stdout is None or sys.stdout.fileno() == 1)
    except (AttributeError, ValueError, OSError):
        return False


def _child(work: Callable[[], int]) -> int:
    status = 2
    try:
        status = work()
    finally:
        _flush()  # os._exit skips the interpreter's own flush
    return status


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed when Python started
                stream.flush()
        except (OSError, ValueError):
            pass


def _parent(tool: str, pid: int) -> int:
    received: list[int] = []

    def forward(signum: int, _frame) -> None:
        received.append(signum)
        os.kill(pid, signum)

    previous = {signum: signal.signal(signum, forward) for signum in _FORWARDED}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the child too
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status)
    signum = os.WTERMSIG(status)
    if signum in received:  # asked to stop: stop the same way
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    print(_crash_message(tool, signum), file=sys.stderr)
    return 1


def _crash_message(tool: str, signum: int) -> str:
    where, stage = "", "processing"
    if _position is not None:
        _position.seek(0)
        raw = _position.read(_POSITION_BYTES).split(b"\0")
        if raw[0]:
            where, stage = raw[0].decode(errors="replace"), raw[1].decode(errors="replace") or stage
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    prefix = f"{where}: error: " if where else f"{tool}: error: "
    return f"{prefix}the MLIR library crashed ({name}) while {stage} this input"
