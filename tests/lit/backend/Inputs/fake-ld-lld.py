#!/usr/bin/env python3
"""Stands in for ld.lld: checks it is asked for a shared link and writes the object with a marker."""
import sys

args = sys.argv[1:]
assert "-shared" in args, args
source = [a for a in args if a.endswith(".o")][0]
target = args[args.index("-o") + 1]
with open(source, "rb") as src, open(target, "wb") as dst:
    dst.write(src.read() + b"linked-by-fake-ld-lld")
