"""pagedir: a compiler for paged attention on AMD GPUs, on the upstream MLIR Python bindings."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "make_context"]


def __getattr__(name: str):
    # Importing the MLIR bindings takes most of a cold start; `pagedir.make_context` loads them
    # on first use, so what needs no MLIR (a compile-cache hit, --help) never pays for them.
    if name == "make_context":
        from pagedir.context import make_context

        return make_context
    raise AttributeError(f"module 'pagedir' has no attribute {name!r}")
