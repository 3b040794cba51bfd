#!/usr/bin/env python3
"""The assembly of every configuration pagedir is measured on, as SHA-256 digests: a refactor must not move them.

    python tools/asm_fingerprint.py write FILE.json [--jobs N]   record the digests of this checkout
    python tools/asm_fingerprint.py compare FILE.json [--jobs N] exit 1 and name every configuration whose
                                                                 assembly differs from FILE.json (or that no
                                                                 longer compiles)

The configurations are those of ``make bench`` (benchmarks/configs.py), of ``make bench-peers``
(benchmarks.peers.peer_configurations on gfx942, gfx950 and gfx1100) and a matrix of the generator's
forms that neither benchmark covers (page-table forms and layouts, --dynamic, --varlen, split-KV, the
score variants, fp8, the LDS layouts, bf16 and f32). Each is generated with pagedir-gen and compiled
to assembly in-process (``pagedir.cli.compile.compile_source``, no compile cache), so the digests
depend only on the sources of this checkout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

#: Generator forms outside the benchmarks: (name, pagedir-gen attention arguments).
_SHAPE = ["--batch", "2", "--num-heads-q", "8", "--num-heads-kv", "2", "--seq-len-k", "128", "--head-dim", "64",
          "--page-size", "16"]
FORMS = [
    ("pointers-seqlens", ["--seq-lens"]),
    ("blocks-nhd", ["--page-table", "blocks", "--kv-layout", "nhd", "--seq-lens"]),
    ("blocks-hnd", ["--page-table", "blocks", "--kv-layout", "hnd", "--seq-lens"]),
    ("csr-nhd", ["--page-table", "csr", "--kv-layout", "nhd"]),
    ("csr-hnd", ["--page-table", "csr", "--kv-layout", "hnd"]),
    ("blocks-dynamic", ["--page-table", "blocks", "--dynamic"]),
    ("pointers-dynamic", ["--dynamic", "--seq-lens"]),
    ("dense-dynamic", ["--dense", "--dynamic", "--seq-lens"]),
    ("varlen-blocks", ["--page-table", "blocks", "--varlen", "--seq-len-q", "4"]),
    ("varlen-dense-dynamic", ["--dense", "--varlen", "--dynamic", "--seq-len-q", "4"]),
    ("split-blocks-dynamic-auto", ["--page-table", "blocks", "--dynamic", "--num-splits", "0"]),
    ("split-fixed", ["--seq-lens", "--num-splits", "2"]),
    ("causal-prefill-blocks", ["--page-table", "blocks", "--seq-len-q", "32", "--causal", "--seq-lens"]),
    ("window", ["--seq-lens", "--window", "32"]),
    ("softcap", ["--seq-lens", "--softcap", "30.0"]),
    ("alibi", ["--seq-lens", "--alibi"]),
    ("sinks", ["--seq-lens", "--sinks"]),
    ("fp8-e4m3fnuz", ["--seq-lens", "--kv-dtype", "fp8e4m3fnuz"]),
    ("fp8-per-token-head", ["--page-table", "blocks", "--kv-dtype", "fp8e4m3fnuz", "--kv-scale", "per-token-head"]),
    ("bf16", ["--seq-lens", "--dtype", "bf16"]),
    ("f32", ["--seq-lens", "--dtype", "f32"]),
    ("lds-swizzle", ["--seq-lens", "--lds-swizzle", "--head-dim", "128"]),
    ("lds-dma", ["--seq-lens", "--lds-swizzle", "--lds-dma", "--head-dim", "128"]),
    ("pipeline-1", ["--seq-lens", "--pipeline-depth", "1"]),
]
FORM_ARCHS = ("gfx942", "gfx1100", "gfx90a")


def configurations() -> list[tuple[str, str, list[str], str]]:
    """(name, generator subcommand, generator arguments, chip) of every configuration, in a fixed order."""
    from benchmarks.configs import configurations as bench_configurations
    from benchmarks.configs import peer_configurations

    seen: dict[str, tuple[str, str, list[str], str]] = {}
    for config in [*bench_configurations(False), *peer_configurations(("gfx942", "gfx950", "gfx1100"))]:
        seen.setdefault(config.name, (config.name, config.kind, config.argv(), config.arch))
    for arch in FORM_ARCHS:
        for name, argv in FORMS:
            full = f"form-{name}-{arch}"
            seen.setdefault(full, (full, "attention", [*_SHAPE, *argv, "--arch", arch], arch))
    return list(seen.values())


def digest(case: tuple[str, str, list[str], str]) -> tuple[str, str]:
    """The SHA-256 of the case's assembly, or "error: ..." when it does not generate or compile."""
    name, kind, argv, arch = case
    from pagedir.cli import gen
    from pagedir.cli.compile import compile_source

    with tempfile.TemporaryDirectory(prefix="pagedir-fingerprint-") as tmp:
        path = os.path.join(tmp, "kernel.mlir")
        try:
            from contextlib import redirect_stderr
            import io

            with redirect_stderr(io.StringIO()) as err:
                code = gen.main([kind, *argv, "-o", path])
            if code != 0:
                return name, f"error: pagedir-gen exit {code}: {err.getvalue().strip()[:200]}"
            text = Path(path).read_text()
            result = compile_source(text, arch=arch, cache=False)
            artefact = result.artefact if isinstance(result.artefact, str) else result.artefact.decode()
        except Exception as exc:  # recorded, so that compare names it
            return name, f"error: {type(exc).__name__}: {str(exc)[:200]}"
    return name, hashlib.sha256(artefact.encode()).hexdigest()


def fingerprint(jobs: int, only: str = "") -> dict[str, str]:
    cases = [case for case in configurations() if only in case[0]]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return dict(pool.map(digest, cases))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("write", "compare"))
    parser.add_argument("file")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="only the configurations whose name contains this text")
    args = parser.parse_args(argv)
    digests = fingerprint(args.jobs, args.only)
    if args.mode == "write":
        Path(args.file).write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        errors = [n for n, d in digests.items() if d.startswith("error")]
        print(f"{len(digests)} configurations recorded in {args.file}" + (f"; {len(errors)} do not compile: "
              + ", ".join(errors) if errors else ""))
        return 0
    recorded = {n: d for n, d in json.loads(Path(args.file).read_text()).items() if args.only in n}
    differ = sorted(n for n in recorded.keys() | digests.keys() if recorded.get(n) != digests.get(n))
    for name in differ:
        print(f"{name}: {recorded.get(name, 'absent')[:16]} -> {digests.get(name, 'absent')[:16]}")
    print(f"{len(digests)} configurations, {len(differ)} differ from {args.file}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
