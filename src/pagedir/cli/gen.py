"""pagedir-gen: emit the IR of a kernel configuration (like rocmlir-gen)."""

from __future__ import annotations

import argparse
import importlib
import sys

from pagedir.gen import GENERATORS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pagedir-gen", description="Generate pagedir kernels as .mlir")
    sub = parser.add_subparsers(dest="kind", required=True)
    for kind, module_name in GENERATORS.items():
        module = importlib.import_module(f"pagedir.gen.{module_name}")
        sub_parser = sub.add_parser(kind, help=(module.__doc__ or "").strip().splitlines()[0])
        module.add_arguments(sub_parser)
        sub_parser.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
        sub_parser.set_defaults(module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        text = args.module.generate(args)
    except ValueError as err:
        print(f"pagedir-gen: error: {err}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
