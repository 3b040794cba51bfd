"""Where ``ld.lld`` comes from: the linker that turns the ELF object into a code object (``.hsaco``).

A code object is the relocatable object linked as a shared library (``ld.lld -shared``).
LLVM 22 writes code object v6 (ELF ABI version 4), which lld reads from LLVM 18 on; an
older lld (Debian's lld 14) refuses the object. No LLVM wheel on PyPI ships lld, but the
``ziglang`` wheel does: ``zig ld.lld`` is lld itself, and ziglang 0.17.0 carries LLD 22.1.8,
the LLVM of llvmlite and the MLIR bindings, with the AMDGPU ELF support. It is a
dependency of pagedir, found from its package directory (never from PATH).

``PAGEDIR_LD_LLD`` names another ``ld.lld`` (ROCm's ``llvm/bin/ld.lld``, a stand-in in tests);
it takes precedence.

This module imports nothing heavy: pagedir-compile asks it for the cache key.
"""

from __future__ import annotations

import importlib.util
import os

LD_LLD_ENV = "PAGEDIR_LD_LLD"
#: The requirement pinned in pyproject.toml; named in the error when the package is missing.
ZIGLANG_REQUIREMENT = "ziglang==0.17.0"


def zig_executable() -> str | None:
    """The ``zig`` binary of the installed ``ziglang`` package, or None without the package."""
    spec = importlib.util.find_spec("ziglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    name = "zig.exe" if os.name == "nt" else "zig"
    for directory in spec.submodule_search_locations:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None


def linker_command() -> list[str] | None:
    """The command that runs ``ld.lld`` (its arguments follow), or None when there is none."""
    override = os.environ.get(LD_LLD_ENV)
    if override:
        return [override]
    zig = zig_executable()
    if zig is None:
        return None
    return [zig, "ld.lld"]


def missing_linker_message() -> str:
    return (
        "--emit=hsaco needs LLVM's ld.lld (18 or later) to link the code object, and the 'ziglang' package "
        f"that provides it ('zig ld.lld') is not installed: pip install '{ZIGLANG_REQUIREMENT}' "
        f"(a dependency of pagedir), or set {LD_LLD_ENV} to an ld.lld; "
        "--emit=obj gives the relocatable ELF object without it"
    )
