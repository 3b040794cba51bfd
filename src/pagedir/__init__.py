"""pagedir: a compiler for paged attention on AMD GPUs, on the upstream MLIR Python bindings."""

from __future__ import annotations

__version__ = "0.1.0"

from pagedir.context import make_context  # noqa: E402

__all__ = ["__version__", "make_context"]
