"""Errors a tool reports as the user's mistake: ``<tool>: error: message``, exit code 1.

A leaf (no MLIR import, nothing of pagedir's), so that the generators, which
validate their options, and the command-line plumbing above them share it.
"""

from __future__ import annotations


class UserError(Exception):
    """A user mistake reported as ``<tool>: error: message`` with exit code 1."""
