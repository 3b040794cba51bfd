"""Cycles per iteration of each kernel's hot loop in an assembly file, from llvm-mca (LLVM's static pipeline
simulator): ``python benchmarks/mca.py ARCH FILE.s``.

The runner, its tool discovery and its limits (one wave alone, ``buffer_*`` rewritten as ``global_*`` for an
llvm-mca that rejects them) are :mod:`pagedir.backend.mca`; this is its command line over
:mod:`benchmarks.isa`'s kernels.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pagedir.backend.mca import cycles, llvm_mca  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from benchmarks import isa

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python benchmarks/mca.py ARCH FILE.s", file=sys.stderr)
        return 1
    arch, path = args
    asm = open(path).read()
    for name, body in isa.kernel_bodies(asm, list(isa.count(asm, arch))).items():
        text = isa.hot_loop_text(body)
        what = "hot loop, common path" if text else "whole kernel"
        value = cycles(text or isa.kernel_text(body), arch)
        print(f"{name}: {'-' if value is None else f'{value:.1f}'} cycles per iteration ({what}, llvm-mca {llvm_mca()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
