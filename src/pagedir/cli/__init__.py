"""Command-line drivers: each module has ``main(argv=None) -> int``."""
