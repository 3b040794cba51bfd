"""Test-suite set-up: every compile the tests run uses a compile cache of its own, never ~/.cache/pagedir."""

from __future__ import annotations

import os
import shutil
import tempfile

_cache_dir: str | None = None


def pytest_configure(config) -> None:
    # Set before any test module is imported, so in-process compiles and the tools the tests
    # start as subprocesses (which inherit the environment) all see it.
    global _cache_dir
    _cache_dir = tempfile.mkdtemp(prefix="pagedir-test-cache-")
    os.environ["PAGEDIR_CACHE_DIR"] = _cache_dir


def pytest_unconfigure(config) -> None:
    if _cache_dir is not None:
        shutil.rmtree(_cache_dir, ignore_errors=True)
