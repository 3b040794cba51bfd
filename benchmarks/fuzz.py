"""Fuzz the four tools with mutated inputs and argument vectors; count every way a run can go wrong.

    python benchmarks/fuzz.py [--count N] [--seed S] [--jobs J] [--timeout T] [--out DIR] [--only TOOL]

Each case is one subprocess run of pagedir-opt, pagedir-compile, pagedir-gen or
pagedir-run. The cases come in families (:data:`FAMILIES`, shares per tool):

* classic: text mutations (bytes, tokens, numbers, attributes, types, affine maps,
  segment sizes, nesting) of the lit tests, the example and generated kernels, and
  argument vectors of the generator;
* views: a round-2 kernel (every page-table form and layout, --dynamic, --varlen,
  split-KV, fp8, the score variants; :data:`R2_GEN_ARGVS`) with one edit of its
  ``rock.block_table_view`` / ``rock.varlen_view`` ops or their index operands
  (attributes, segment sizes, sizes, operand order, element types, shapes);
* payloads: a ``pagedir-gen linalg-attention`` payload (:data:`LINALG_GEN_ARGVS`) with
  one semantic edit (an iterator type flipped, an indexing map permuted, a body op's
  operands swapped or the op changed, an init constant, a yield, a broadcast),
  raised, compiled or checked with ``pagedir-run --check``;
* npz: ``pagedir-run --inputs`` archives with one edit (dtype, bf16 bits, shape, the
  same element count in another shape, missing and extra keys, NaN or out-of-range
  index values, 0-d arrays, no archive, object arrays);
* plans and caches: ``pagedir-compile --plan`` / ``--report`` / ``--dump-dir`` to
  odd paths (special files, directories, the input, the output), ``--cache-dir`` at a
  cache whose entry for the run is damaged (truncated, garbage, bad meta.json, a file
  for a directory ...) or at a path that cannot be a cache;
* upstream passes: random upstream pass flags (:mod:`pagedir.upstream_passes`, the
  common ones more often) with random and bogus options on the rock IR of each level
  (``--dump-dir`` stages of round-2 kernels), payloads and kernels;
* round-2 generator options: flags added with edge values, values replaced;
* round 3 (:data:`R3_GEN_ARGVS`): stacked K/V caches (``--kv-cache stacked0|stacked1``, the
  pools ``memref.subview``s of one tensor), NVIDIA chips (``--arch sm_80|sm_90``), pools of one
  block, vLLM's paged-attention layout (``--kv-layout vllm-pa``), copy-kv at a partial last page; their views and subviews edited (offsets, sizes,
  strides, the strided layout, the tensor's type), compiled with ``--arch sm_80|sm_90
  --emit=ptx|cubin`` (and the refused ``obj``/``hsaco``, ``--report``) also from the NVIDIA
  levels (``rock-to-gpu``, NVVM ``llvm-dialect`` dumps, text-mutated), checked with
  ``pagedir-run --check --arch sm_90``; generator argv with the new flags and edge values.

The generated kernels, stage dumps and cache entries are made once per fuzz run
(:func:`make_seeds`). Every run that takes an output file (``-o``, ``--outputs``)
gets one that already holds known bytes, as do an existing plan and report; each
run has a compile cache of its own (``PAGEDIR_CACHE_DIR``). A run is classified as

* ``ok``: exit code 0;
* ``user-error``: exit code 1 with an ``error:`` line (or a failed ``--check``)
  and nothing else wrong;
* ``internal-error``: exit code 2, or a message saying "internal error";
* ``leaked-exception``: exit code 1 with a Python exception's name
  (``ValueError: ...``) in the message: an internal error printed as a user one;
* ``leaked-warning``: a Python warning (``x.py:12: RuntimeWarning: ...``) printed;
* ``traceback``: a Python traceback in the output;
* ``signal``: killed by a signal (a crash in native code);
* ``timeout``: still running after ``--timeout`` seconds;
* ``bad-exit``: any other exit code, or exit code 1 without an error;
* ``clobbered``: a failing run changed or emptied its output file, the input, or
  another file of the user's (an existing plan or report, the ``--inputs`` archive);
* ``error-exit-0``: exit code 0 with an ``error:`` line printed;
* ``unwritten-output``: exit code 0, but a file ``--plan=`` or ``--report=`` named
  was not written;
* ``mis-raised`` and ``mis-lowered``: ``pagedir-run --check`` shows that lowering
  changed what a function computes; ``interp-disagrees``: the interpreter's run of a
  linalg payload, --check's reference, differs from upstream's lowering of it to
  loops (the rules: :func:`wrong_result`).

Writes ``fuzz.json`` and ``fuzz.md`` to ``--out`` (default benchmarks/results)
with counts per tool and class and per mutation, and saves the first reproducers of
each bad class (``fuzz-reproducers/<class>/<case>/``: the input and the other files,
``argv.txt``, the output seen). The cases depend only on ``--seed`` and ``--count``;
the exit status is 1 when any run is in a bad class.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

TOOLS = {"pagedir-opt": "pagedir.cli.opt", "pagedir-compile": "pagedir.cli.compile",
         "pagedir-gen": "pagedir.cli.gen", "pagedir-run": "pagedir.cli.run"}
#: Share of the cases per tool (pagedir-compile and pagedir-run runs take longest).
SHARES = {"pagedir-opt": 0.4, "pagedir-compile": 0.15, "pagedir-gen": 0.2, "pagedir-run": 0.25}
BAD = ("internal-error", "leaked-exception", "leaked-warning", "traceback", "signal", "timeout", "bad-exit", "clobbered",
       "error-exit-0", "unwritten-output", "mis-raised", "mis-lowered", "interp-disagrees")
SENTINEL = b"// the user's file: a failing run must leave these bytes alone\n"
EXAMPLES_PER_CLASS = 5
EXCEPTION_NAME = re.compile(r"\b(?:[A-Z][a-z]+)+(?:Error|Exception)\b:")
PYTHON_WARNING = re.compile(r"\.py:\d+: \w*Warning: ")


# ----------------------------------------------------------------------------
# Mutations of .mlir text (each takes the rng and bytes, returns bytes)

TOKEN = re.compile(rb"%?[\w.$#]+|\S")
INTEGER = re.compile(rb"(?<![\w.%#@x])-?\d+(?![\w.])")
FLOAT = re.compile(rb"-?\d+\.\d+(?:e[-+]?\d+)?")
ATTRIBUTE = re.compile(rb"\b(\w+) = ([^,}\n]+)")
TYPES = [b"f16", b"bf16", b"f32", b"f64", b"i1", b"i8", b"i32", b"i64", b"index", b"vector<4xf16>",
         b"memref<?xf32>", b"memref<*xf16>", b"tensor<4xf32>", b"none", b"!llvm.ptr", b"complex<f32>"]
TYPE_TOKEN = re.compile(rb"\b(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64|index)\b")
HUGE = [b"0", b"-1", b"-2147483648", b"2147483648", b"4294967296", b"9223372036854775807", b"-9223372036854775808",
        b"18446744073709551616", b"1099511627776", b"99999999999999999999999999", b"1125899906842624"]
NANS = [b"nan", b"inf", b"-inf", b"0x7FC00000", b"1e400", b"-1e400", b"0.0", b"-0.0", b"1e-320", b"0x7FF0000000000000"]
BAD_VALUES = [b'"bogus"', b"unit", b"true", b"-1", b"0", b"[]", b"[1, 2, 3]", b"{}", b"@sym", b"dense<1> : vector<2xi32>",
              b"array<i64: >", b"array<i32: -1, 5>", b"affine_map<(d0) -> (d0)>", b"1.5 : f32", b'"gfx9999"',
              b"4294967296 : i64", b"-1 : i64", b"0 : i32", b"#gpu.address_space<workgroup>", b"i32"]


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def _spans(pattern: re.Pattern, data: bytes) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(data)]


def _replace(rng: random.Random, data: bytes, pattern: re.Pattern, choices: list[bytes], times: int = 1) -> bytes:
    spans = _spans(pattern, data)
    for start, end in sorted(rng.sample(spans, min(times, len(spans))), reverse=True):
        data = data[:start] + rng.choice(choices) + data[end:]
    return data


def delete_tokens(rng: random.Random, data: bytes) -> bytes:
    spans = _spans(TOKEN, data)
    for start, end in sorted(rng.sample(spans, min(rng.randint(1, 3), len(spans))), reverse=True):
        data = data[:start] + data[end:]
    return data


def duplicate_tokens(rng: random.Random, data: bytes) -> bytes:
    spans = _spans(TOKEN, data)
    start, end = rng.choice(spans)
    return data[:end] + b" " + data[start:end] + data[end:]


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([64, 500, 5000, 50000])
    kind = rng.randrange(4)
    if kind == 0:  # nested regions
        body = b"scf.execute_region {\n" * depth + b"}\n" * depth
        return data + b"\nfunc.func @deep() {\n" + body + b"return\n}\n"
    if kind == 1:  # nested array attributes
        return data.replace(b"{", b"{deep = " + b"[" * depth + b"]" * depth + b", ", 1)
    if kind == 2:  # nested affine parentheses
        return data.replace(b"-> (", b"-> (" + b"(" * depth + b"d0" + b")" * depth + b" + ", 1)
    return data + b"\n" + b"(" * depth + b"\n"


def huge_numbers(rng: random.Random, data: bytes) -> bytes:
    return _replace(rng, data, INTEGER, HUGE, rng.randint(1, 3))


def nan_numbers(rng: random.Random, data: bytes) -> bytes:
    if FLOAT.search(data) and rng.random() < 0.5:
        return _replace(rng, data, FLOAT, NANS)
    return _replace(rng, data, INTEGER, NANS)


def bad_attributes(rng: random.Random, data: bytes) -> bytes:
    spans = [m.span(2) for m in ATTRIBUTE.finditer(data)]
    if not spans:
        return flip_bytes(rng, data)
    start, end = rng.choice(spans)
    return data[:start] + rng.choice(BAD_VALUES) + data[end:]


def wrong_types(rng: random.Random, data: bytes) -> bytes:
    return _replace(rng, data, TYPE_TOKEN, TYPES, rng.randint(1, 2))


def index_arrays(rng: random.Random, data: bytes) -> bytes:
    spans = _spans(re.compile(rb"array<i(?:32|64):[^>]*>"), data)
    if not spans:
        return huge_numbers(rng, data)
    start, end = rng.choice(spans)
    width = rng.choice([b"i32", b"i64"])
    values = [rng.choice([-1, 0, 1, 2, 3, 7, 2**31, 2**40]) for _ in range(rng.randint(0, 6))]
    return data[:start] + b"array<" + width + b": " + b", ".join(str(v).encode() for v in values) + b">" + data[end:]


def bad_affine_maps(rng: random.Random, data: bytes) -> bytes:
    spans = _spans(AFFINE_MAP, data)
    if not spans:
        return deep_nesting(rng, data)
    start, end = rng.choice(spans)
    text = data[start:end]
    edits = [
        lambda t: t.replace(b"floordiv ", b"floordiv 0 * ", 1),
        lambda t: re.sub(rb"\b\d+\b", lambda m: rng.choice(HUGE[:8]), t, count=1),
        lambda t: t.replace(b"->", b", d9) ->", 1),
        lambda t: t.replace(b"(d0", b"(d0, d0", 1),
        lambda t: t.replace(b")>", b", s0)>", 1),
        lambda t: t.replace(b"mod", b"mod -", 1),
        lambda t: b"affine_map<() -> ()>",
        lambda t: b"affine_map<(d0) -> (d0 floordiv 0)>",
    ]
    return data[:start] + rng.choice(edits)(text) + data[end:]


def segment_sizes(rng: random.Random, data: bytes) -> bytes:
    pattern = re.compile(rb"operandSegmentSizes = array<i32:[^>]*>")
    spans = _spans(pattern, data)
    if not spans:
        return index_arrays(rng, data)
    start, end = rng.choice(spans)
    values = [rng.choice([0, 1, 2, 3, -1, 2**31 - 1]) for _ in range(rng.randint(0, 7))]
    element = rng.choice([b"i32", b"i32", b"i8", b"i64"])  # the verifier wants i32: other widths must be refused too
    text = element + (b": " + b", ".join(str(v).encode() for v in values) if values else b"")
    return data[:start] + b"operandSegmentSizes = array<" + text + b">" + data[end:]


TEXT_MUTATIONS = [truncate, flip_bytes, delete_tokens, duplicate_tokens, deep_nesting, huge_numbers, nan_numbers,
                  bad_attributes, wrong_types, index_arrays, bad_affine_maps, segment_sizes]


# ----------------------------------------------------------------------------
# Mutations of the round-2 surface: block-table and varlen views, linalg payloads

VIEW_LINE = re.compile(rb'[^\n]*"rock\.(?:block_table_view|varlen_view)"[^\n]*\n[^\n]*')
SUBVIEW_LINE = re.compile(rb"[^\n]*= memref\.subview [^\n]*")
SUBVIEW_NUMBER = re.compile(rb"(?<=[\[, :])-?\d+(?=[\],>x])")
INDEX_MEMREF = re.compile(rb"memref<(?:\?|\d+)(?:x(?:\?|\d+))*xi32>")
SIGNATURE_DIM = re.compile(rb"(?<=[<x])(?:\?|\d+)(?=x)")
VIEW_ATTRIBUTES = [b'page_size = 0', b'page_size = 16 : i64', b'num_blocks = -1', b'block_size = 4294967296',
                   b'layout = "NHD"', b'layout = ""', b'layout = 1', b'max_blocks = 2147483648', b'rock.unknown']


def views(rng: random.Random, data: bytes) -> bytes:
    return view_edit(rng, data)[0]


VIEW_EDITS = ("attribute", "segments", "size", "operands", "index-type", "index-shape", "size-everywhere", "results",
              "subview")


def view_edit(rng: random.Random, data: bytes, kind: int | None = None) -> tuple[bytes, str]:
    """One edit of a rock.block_table_view / rock.varlen_view or of the index operands (tables, cu_seqlens),
    and its name."""
    subviews = [m.span() for m in SUBVIEW_LINE.finditer(data)]
    if kind is None and subviews and rng.random() < 0.4:
        kind = VIEW_EDITS.index("subview")
    if kind == VIEW_EDITS.index("subview") and subviews:
        return subview_edit(rng, data, subviews), "subview"
    spans = [m.span() for m in VIEW_LINE.finditer(data)]
    if not spans:
        return segment_sizes(rng, data), "segments"
    start, end = rng.choice(spans)
    text = data[start:end]
    kind = rng.randrange(len(VIEW_EDITS) - 1) if kind is None or kind == VIEW_EDITS.index("subview") else kind
    name = VIEW_EDITS[kind]
    if kind == 0:  # layout value or an attribute the op does not take
        if b"layout = " in text and rng.random() < 0.6:
            text = re.sub(rb'layout = "\w*"', rng.choice([b'layout = "hnd"', b'layout = "nhd"', b'layout = "bogus"',
                                                          b'layout = 1 : i32', b'layout = ""']), text, count=1)
        else:
            attribute = rng.choice(VIEW_ATTRIBUTES)
            text = text.replace(b"{", b"{" + attribute + b", ", 1) if b"{" in text else \
                text.replace(b") :", b") {" + attribute + b"} :", 1)
    elif kind == 1:  # the segment sizes of the four view operands
        values = [rng.choice([0, 1, 1, 2, -1]) for _ in range(rng.choice([3, 4, 4, 5]))]
        segments = b"operandSegmentSizes = array<i32: " + b", ".join(str(v).encode() for v in values) + b">"
        text = re.sub(rb"operandSegmentSizes = array<[^>]*>", segments, text) if b"operandSegmentSizes" in text else text
    elif kind == 2:  # one size of the view's types (pool, table, result)
        dims = _spans(SIGNATURE_DIM, text)
        if dims:
            a, b = rng.choice(dims)
            text = text[:a] + rng.choice([b"?", b"0", b"1", b"3", b"7", b"64", b"65536", b"2147483648"]) + text[b:]
    elif kind == 3:  # swap two operands of the view
        operands = [m.span() for m in re.finditer(rb"%\w+", text.split(b":", 1)[0])][1:]
        if len(operands) >= 2:
            (a0, a1), (b0, b1) = sorted(rng.sample(operands, 2))
            text = text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1] + text[b1:]
    elif kind == 4:  # the index operands' element type, everywhere (tables, seq_lens, cu_seqlens)
        width = rng.choice([b"i64", b"i16", b"f32", b"index", b"i8"])
        return INDEX_MEMREF.sub(lambda m: m.group(0)[:-4] + width + b">", data), name
    elif kind == 5:  # one index operand's shape in the signature and its uses (a consistent kernel)
        memrefs = sorted({m.group(0) for m in INDEX_MEMREF.finditer(data)})
        if memrefs:
            old = rng.choice(memrefs)
            shape = rng.choice([b"?", b"0", b"1", b"2", b"9", b"2x2", b"1x?", b"4294967296"])
            return data.replace(old, b"memref<" + shape + b"xi32>"), name
    elif kind == 6:  # one size everywhere it occurs in a memref type (pool blocks, page size, head dim ...)
        sizes = sorted({m.group(0) for m in SIGNATURE_DIM.finditer(data)} - {b"?"})
        if sizes:
            old = rng.choice(sizes)
            new = rng.choice([b"?", b"1", b"2", b"5", b"12", b"256"])  # kernels the interpreter runs in seconds
            return re.sub(rb"(?<=[<x])" + re.escape(old) + rb"(?=x)", new, data), name
    else:  # a view result used where the other view's result goes (k and v, q and out)
        names = re.findall(rb"(%\w+) = \"rock\.(?:block_table_view|varlen_view)\"", data)
        if len(names) >= 2:
            a, b = rng.sample(names, 2)
            line = next((m for m in re.finditer(rb'"rock\.attention"\([^)]*\)', data)), None)
            if line:
                call = line.group(0).replace(a + b",", b"\0", 1).replace(b + b",", a + b",", 1).replace(b"\0", b + b",", 1)
                return data[:line.start()] + call + data[line.end():], name
    return data[:start] + text + data[end:], name


def subview_edit(rng: random.Random, data: bytes, subviews: list[tuple[int, int]]) -> bytes:
    """One edit of a stacked cache's ``memref.subview`` (a K or V pool of the one tensor): a number of its
    offsets, sizes, strides or result layout; the strided layout dropped or made dynamic; the stacked
    tensor's type in the signature; the K and V subviews' sources swapped with another argument."""
    start, end = rng.choice(subviews)
    text = data[start:end]
    kind = rng.randrange(5)
    numbers = _spans(SUBVIEW_NUMBER, text)
    if kind <= 1 and numbers:
        for _ in range(kind + 1):
            a, b = rng.choice(numbers)
            text = text[:a] + rng.choice([b"0", b"1", b"2", b"3", b"-1", b"7", b"16", b"128", b"4294967296"]) + text[b:]
            numbers = _spans(SUBVIEW_NUMBER, text)
    elif kind == 2:  # the layout of the result: dropped, dynamic, or another offset
        text = re.sub(rb", strided<\[[^\]]*\](?:, offset: \d+)?>", rng.choice(
            [b"", b", strided<[?, ?, ?, 1], offset: ?>", b", strided<[256, 16, 16, 1], offset: 1>",
             b", strided<[1, 16, 16, 256]>"]), text, count=1)
    elif kind == 3:  # the stacked tensor's type (and the subviews' source type) to another shape or element
        source = re.search(rb"memref<((?:\?|\d+)(?:x(?:\?|\d+))+)x(\w+)>", text)
        if source:
            dims = source.group(1).split(b"x")
            i = rng.randrange(len(dims))
            dims[i] = rng.choice([b"1", b"2", b"3", b"?", b"0"])
            new = b"memref<" + b"x".join(dims) + b"x" + rng.choice([source.group(2), b"bf16", b"f32", b"i8"]) + b">"
            return data.replace(source.group(0), new)
    else:  # static steps of 2 on the stacked axis, or a rank-reducing subview
        text = re.sub(rb"\[1, 1, 1, 1(, 1)?\]", rng.choice([b"[1, 2, 1, 1, 1]", b"[2, 1, 1, 1, 1]", b"[1, 1, 1, 1, 2]"]),
                      text, count=1)
    return data[:start] + text + data[end:]


AFFINE_MAP = re.compile(rb"affine_map<\([^)]*\)(?: \[[^\]]*\])? -> \([^)]*\)>")  # "->" holds a ">"
GENERIC_HEAD = re.compile(rb"indexing_maps = \[(affine_map<.*?>(?:, affine_map<.*?>)*)\], iterator_types = \[([^\]]*)\]")
BODY_BINARY = re.compile(rb"(%\w+ = (?:arith|math)\.\w+ )(%\w+), (%\w+)( : )")
OP_SWAPS = [(b"arith.maximumf", b"arith.minimumf"), (b"arith.maximumf", b"arith.maxnumf"), (b"arith.subf", b"arith.addf"),
            (b"arith.divf", b"arith.mulf"), (b"math.exp ", b"math.exp2 "), (b"arith.addf", b"arith.maximumf"),
            (b"math.tanh", b"math.exp"), (b"arith.cmpi sge", b"arith.cmpi sgt"), (b"arith.cmpi slt", b"arith.cmpi sle")]
INIT_VALUES = [b"0.000000e+00", b"1.000000e+00", b"-1.000000e+00", b"0xFF800000", b"0x7F800000", b"0x7FC00000",
               b"-3.40282347E+38", b"1.000000e-30", b"0.5", b"2.0"]
FLOAT_CONSTANT = re.compile(rb"(arith\.constant )(-?[\d.]+(?:e[-+]?\d+)?|0x[0-9A-F]+)( : f(?:16|32))")


def payloads(rng: random.Random, data: bytes) -> bytes:
    return payload_edit(rng, data)[0]


PAYLOAD_EDITS = ("iterator", "map", "operands", "op", "constant", "yield", "shape")


def payload_edit(rng: random.Random, data: bytes, kind: int | None = None) -> tuple[bytes, str]:
    """One semantic edit of a linalg payload: an iterator type flipped, an indexing map permuted, a body op's
    operands swapped or op changed, an init or scale constant changed, a yield or broadcast changed."""
    kind = rng.randrange(len(PAYLOAD_EDITS)) if kind is None else kind
    name = PAYLOAD_EDITS[kind]
    heads = list(GENERIC_HEAD.finditer(data))
    if kind == 0 and heads:  # flip one iterator type
        m = rng.choice(heads)
        start, end = m.span(2)
        items = [s.strip() for s in m.group(2).split(b",")]
        i = rng.randrange(len(items))
        items[i] = b'"reduction"' if items[i] == b'"parallel"' else b'"parallel"'
        return data[:start] + b", ".join(items) + data[end:], name
    if kind == 1 and heads:  # permute an indexing map's results, or swap two maps of one op
        m = rng.choice(heads)
        maps = [x.span() for x in AFFINE_MAP.finditer(m.group(1))]
        base = m.start(1)
        if rng.random() < 0.6:
            a, b = maps[rng.randrange(len(maps))]
            text = m.group(1)[a:b]
            arrow = text.index(b"->")
            results = [r.strip() for r in text[arrow:].strip(b"-> ()>").split(b",")]
            if len(results) >= 2:
                i, j = rng.sample(range(len(results)), 2)
                results[i], results[j] = results[j], results[i]
            elif results:
                results = [results[0] + b", " + results[0]] if rng.random() < 0.5 else []
            new = text[:arrow] + b"-> (" + b", ".join(results) + b")>"
            return data[:base + a] + new + data[base + b:], name
        if len(maps) >= 2:
            (a0, a1), (b0, b1) = sorted(rng.sample(maps, 2))
            group = m.group(1)
            group = group[:a0] + group[b0:b1] + group[a1:b0] + group[a0:a1] + group[b1:]
            return data[:base] + group + data[m.end(1):], name
    if kind == 2:  # swap the operands of a binary op of a body
        ops = list(BODY_BINARY.finditer(data))
        if ops:
            m = rng.choice(ops)
            return data[:m.start()] + m.group(1) + m.group(3) + b", " + m.group(2) + m.group(4) + data[m.end():], name
    if kind == 3:  # another op
        swaps = [(a, b) for a, b in OP_SWAPS if a in data] + [(b, a) for a, b in OP_SWAPS if b in data]
        if swaps:
            old, new = rng.choice(swaps)
            spans = [x.start() for x in re.finditer(re.escape(old), data)]
            at = rng.choice(spans)
            return data[:at] + new + data[at + len(old):], name
    if kind == 4:  # an init or scale constant
        constants = list(FLOAT_CONSTANT.finditer(data))
        if constants:
            m = rng.choice(constants)
            return data[:m.start(2)] + rng.choice(INIT_VALUES) + data[m.end(2):], name
    if kind == 5:  # a body yields another value (an input, the accumulator)
        yields = list(re.finditer(rb"linalg\.yield (%\w+)", data))
        if yields:
            m = rng.choice(yields)
            block = data.rfind(b"^bb0(", 0, m.start())
            arguments = re.findall(rb"(%\w+):", data[block:m.start()].split(b"\n", 1)[0]) if block >= 0 else []
            if arguments:
                return data[:m.start(1)] + rng.choice(arguments) + data[m.end(1):], name
    if kind == 6:  # broadcast dimensions, collapse groups, fill operands
        edits = [(rb"dimensions = \[\d+\]", [b"dimensions = [1]", b"dimensions = [3]", b"dimensions = []",
                                              b"dimensions = [18446744073709551616]", b"dimensions = [-1]"]),
                 (rb"\[\[0\], \[1, 2\]", [b"[[0, 1], [2]", b"[[0], [2, 1]", b"[[0, -1], [2]", b"[[0], [1, 4294967296]"]),
                 (rb"linalg\.fill ins\(%\w+", [b"linalg.fill ins(%zero", b"linalg.fill ins(%neg_inf", b"linalg.fill ins(%scale"]),
                 (rb"dimension\(\d\)", [b"dimension(2)", b"dimension(0)", b"dimension(4)"])]
        present = [(pattern, values) for pattern, values in edits if re.search(pattern, data)]
        if present:
            pattern, values = rng.choice(present)
            spans = _spans(re.compile(pattern), data)
            start, end = rng.choice(spans)
            return data[:start] + rng.choice(values) + data[end:], name
    return wrong_types(rng, data), "types"


# ----------------------------------------------------------------------------
# Argument vectors

GARBAGE = ["", "-1", "0", "1099511627776", "2147483648", "nan", "inf", "1e400", "x", "1abc", "a b", "--", "-",
           "gfx9999", "=", "{", "}", "a=b", "true", "\u00e9", "9" * 40, "0x10", "1.5", "/nonexistent/dir/x"]


def pass_options() -> list[tuple[str, list[str]]]:
    """(pass or pipeline argument, option names) of every registered pass and pipeline."""
    import dataclasses

    from pagedir.passes import PASSES, get_pass_class
    from pagedir.pipelines import PIPELINES

    found = []
    for argument in PASSES:
        options = getattr(get_pass_class(argument), "Options", None)
        names = [f.name.replace("_", "-") for f in dataclasses.fields(options)] if dataclasses.is_dataclass(options) else []
        found.append((argument, names))
    for argument, info in PIPELINES.items():
        options = info.options if hasattr(info, "options") else getattr(info, "options_cls", None)
        if options is None:
            options = next((v for v in vars(info).values() if dataclasses.is_dataclass(v)), None)
        found.append((argument, [f.name.replace("_", "-") for f in dataclasses.fields(options)] if options else []))
    return found


def mutate_argv(rng: random.Random, argv: list[str]) -> list[str]:
    """One to three edits: a value replaced by garbage, a flag dropped, duplicated or unknown, a value dropped."""
    argv = list(argv)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        if kind <= 1 and argv:  # replace a value (more often than the rest)
            i = rng.randrange(len(argv))
            argv[i] = rng.choice(GARBAGE) if kind == 0 or "=" not in argv[i] else argv[i].split("=")[0] + "=" + rng.choice(GARBAGE)
        elif kind == 2 and argv:
            del argv[rng.randrange(len(argv))]
        elif kind == 3 and argv:
            i = rng.randrange(len(argv))
            argv[i:i] = argv[i: i + 2]
        elif kind == 4:
            argv.insert(rng.randrange(len(argv) + 1), rng.choice(["--no-such-flag", "-x", "--seed", "--entry", "-o"]))
        else:
            argv.append(rng.choice(GARBAGE))
    return argv


# ----------------------------------------------------------------------------
# npz inputs of pagedir-run --inputs

ARGUMENT = re.compile(r"%(\w+): (memref<([^>]*)>|\w+)")
NUMPY_TYPES = {"f16": "float16", "bf16": "float32", "f32": "float32", "f64": "float64", "i1": "bool", "i8": "int8",
               "i16": "int16", "i32": "int32", "i64": "int64", "index": "int64"}


def signature(text: bytes) -> tuple[str, list[tuple[str, list[int], str]]] | None:
    """(name, [(argument name, shape, element type)]) of the first func.func; '?' sizes become 4, a scalar has
    shape None."""
    m = re.search(rb"func\.func @([\w$.]+)\(([^)]*)\)", text)
    if not m:
        return None
    arguments = []
    for name, whole, inner in ARGUMENT.findall(m.group(2).decode(errors="replace")):
        if whole.startswith("memref"):
            *dims, element = inner.split("x")
            arguments.append((name, [4 if d == "?" else int(d) for d in dims], element))
        else:
            arguments.append((name, None, whole))
    return m.group(1).decode(), arguments


def base_arrays(rng, arguments) -> list:
    """Arrays of the right dtype and shape, index arrays within their pools (a valid-looking start)."""
    import numpy as np

    pools = [shape[0] for name, shape, _ in arguments if shape and name.endswith("cache")] or [1]
    arrays = []
    for name, shape, element in arguments:
        dtype = NUMPY_TYPES.get(element, "float32")
        shape = shape if shape is not None else []
        if dtype.startswith("float"):
            array = rng.standard_normal(shape).astype(dtype)
        elif name in ("block_table", "kv_indices"):
            array = rng.integers(0, pools[0], shape).astype(dtype)
        elif name in ("cu_seqlens_q", "kv_indptr"):
            array = np.cumsum(rng.integers(0, 3, shape)).astype(dtype)  # offsets: rising from 0
            array[..., :1] = 0
        elif name == "kv_last_page_len":
            array = rng.integers(1, 5, shape).astype(dtype)
        else:
            array = rng.integers(0, 17, shape).astype(dtype)
        arrays.append(array)
    return arrays


def npz_bytes(arrays: dict) -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


NPZ_MUTATIONS = ("npz-valid", "npz-dtype", "npz-bf16-bits", "npz-shape", "npz-same-count", "npz-missing", "npz-extra",
                 "npz-nan-index", "npz-bad-index", "npz-0d", "npz-not-npz", "npz-object")


def npz_case(rng: random.Random, text: bytes, kind: str | None = None) -> tuple[bytes, str, str] | None:
    """(npz bytes, mutation, entry) for the first function of ``text``: valid arrays with one edit."""
    import numpy as np

    found = signature(text)
    if not found:
        return None
    entry, arguments = found
    data_rng = np.random.default_rng(rng.randrange(2**32))
    arrays = {f"arg{i}": a for i, a in enumerate(base_arrays(data_rng, arguments))}
    kind = kind or rng.choice(NPZ_MUTATIONS)
    keys = sorted(arrays)
    key = rng.choice(keys)
    index_keys = [f"arg{i}" for i, (_, shape, element) in enumerate(arguments) if element.startswith("i") and shape]
    float_keys = [k for k in keys if arrays[k].dtype.kind == "f"]
    if kind == "npz-dtype":
        key = rng.choice(float_keys or keys)
        arrays[key] = arrays[key].astype(rng.choice(["float64", "int32", "uint8", "bool", "complex64", "float16",
                                                     "uint16", "int64", "<U3"]))
    elif kind == "npz-bf16-bits":  # f16 or bf16 bits given as uint16 (bf16 takes them as bits; f16 must refuse)
        key = rng.choice(float_keys or keys)
        arrays[key] = (np.asarray(arrays[key], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    elif kind == "npz-shape":
        a = arrays[key]
        arrays[key] = rng.choice([a.reshape(1, *a.shape), a[..., :1] if a.ndim else a.reshape(1),
                                  np.zeros((0,) + a.shape[1:], a.dtype), np.concatenate([a, a]) if a.ndim else a.reshape(1, 1),
                                  a.reshape(-1)[None, None, None, None, :]])
    elif kind == "npz-same-count":  # the element count right, the shape wrong (vLLM's 5-D cache for a 4-D pool)
        a = arrays[key]
        arrays[key] = a.reshape(-1) if a.ndim != 1 else a.reshape(1, -1)
        if a.ndim >= 2 and a.shape[-1] % 2 == 0 and rng.random() < 0.5:
            arrays[key] = a.reshape(*a.shape[:-1], 2, a.shape[-1] // 2)
    elif kind == "npz-missing":
        del arrays[key]
    elif kind == "npz-extra":
        arrays[rng.choice([f"arg{len(keys)}", "q", "arg01", "arg-1", "ARG0", ""])] = np.zeros(2, np.float32)
    elif kind == "npz-nan-index" and index_keys:
        key = rng.choice(index_keys)
        values = arrays[key].astype(np.float32)
        values.reshape(-1)[rng.randrange(values.size or 1) if values.size else slice(0)] = rng.choice([np.nan, np.inf, 1.5])
        arrays[key] = values
    elif kind == "npz-bad-index" and index_keys:
        key = rng.choice(index_keys)
        values = arrays[key].astype(np.int64)
        if values.size:
            values.reshape(-1)[rng.randrange(values.size)] = rng.choice([-1, -2**31, 2**31 - 1, 2**31, 2**40, 17, 4096])
        arrays[key] = values.astype(rng.choice([arrays[key].dtype, np.dtype(np.int64)]))
    elif kind == "npz-0d":
        value = rng.choice([0, 1.5, -1, np.nan])
        integral = arrays[key].dtype.kind in "iub" and float(value).is_integer()
        # an integer argument given 1.5 or NaN keeps them as a float array (a dtype the tool must refuse)
        arrays[key] = np.asarray(value, dtype=arrays[key].dtype if integral or arrays[key].dtype.kind == "f" else None)
    elif kind == "npz-not-npz":
        body = npz_bytes(arrays)
        return (rng.choice([b"", body[: rng.randrange(len(body))], b"PK\x03\x04" + bytes(rng.randrange(256) for _ in range(40)),
                            b"\x93NUMPY garbage", bytes(64)]), kind, entry)
    elif kind == "npz-object":
        import io

        buffer = io.BytesIO()  # an archive member that only unpickling could read: refused, never loaded
        np.savez(buffer, **{**arrays, key: np.array([{"a": 1}, None], dtype=object)})
        return buffer.getvalue(), kind, entry
    return npz_bytes(arrays), kind, entry


# ----------------------------------------------------------------------------
# Upstream passes on rock IR

#: Upstream passes a user would run on rock IR (drawn more often than the rest).
COMMON_UPSTREAM = ["canonicalize", "cse", "inline", "symbol-dce", "loop-invariant-code-motion", "sccp",
                   "lower-affine", "convert-scf-to-cf", "remove-dead-values", "mem2reg", "sroa", "control-flow-sink",
                   "canonicalize", "cse", "symbol-privatize", "strip-debuginfo", "expand-strided-metadata",
                   "loop-invariant-subset-hoisting", "topological-sort", "print-op-stats", "inline"]
OPTION_VALUES = {"int": ["0", "1", "-1", "3", "2147483648", "99999999999999999999", "x", "", "1.5"],
                 "long": ["0", "-1", "10", "9223372036854775808", "nan", "x"],
                 "uint": ["0", "1", "4", "-1", "4294967296", "x"], "ulong": ["0", "8", "-1", "18446744073709551616", "x"],
                 "number": ["0", "0.5", "-1", "1e400", "nan", "x"], "string": ["", "x", "bogus", "{", "a b", "default-pipeline"]}


def upstream_flags(rng: random.Random) -> list[str]:
    """One to three upstream pass flags, some with random options (bogus values included)."""
    from pagedir.upstream_passes import UPSTREAM_PASSES, UPSTREAM_PIPELINES

    everything = sorted(UPSTREAM_PASSES) + sorted(UPSTREAM_PIPELINES)
    flags = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        name = rng.choice(COMMON_UPSTREAM) if rng.random() < 0.6 else rng.choice(everything)
        info = UPSTREAM_PASSES.get(name) or UPSTREAM_PIPELINES[name]
        options = []
        if info.options and rng.random() < 0.6:
            for option in rng.sample(list(info.options), min(len(info.options), rng.randint(1, 2))):
                key, _, kind = option.flag[2:].partition("=")
                kind = kind.strip("<>")
                if option.values and rng.random() < 0.6:
                    value = rng.choice([v for v, _ in option.values])
                elif not kind:  # a boolean option
                    value = rng.choice(["", "true", "false", "1", "bogus"])
                else:
                    value = rng.choice(OPTION_VALUES.get(kind, OPTION_VALUES["string"]))
                options.append(f"{key}={value}" if value or kind else key)
        if not options:
            flags.append(f"--{name}")
        elif rng.random() < 0.5:
            flags.append(f"--{name}={' '.join(options)}")
        else:
            flags.append(f"--{name}{{{' '.join(options)}}}")
    if rng.random() < 0.2:
        flags.append(rng.choice(["--rock-verify", "--rock-kernel-pipeline", "--mlir-print-op-generic"]))
    return flags


# ----------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    tool: str
    argv: list[str]  # INPUT and OUTPUT (alone or after "=") stand for the case's files, WORK/ for its directory
    input: bytes | None = None
    output_flag: str | None = None  # -o, --outputs, or None when the case writes no file
    extra: dict = field(default_factory=dict)
    files: dict[str, bytes | None] = field(default_factory=dict)  # more files in WORK (None: a directory)
    guarded: tuple[str, ...] = ()  # of ``files``, those a failing run must leave alone (the user's)


def corpus() -> list[Path]:
    files = sorted(ROOT.glob("tests/lit/**/*.mlir")) + sorted(ROOT.glob("examples/*.mlir"))
    return [f for f in files if "/Output/" not in str(f) and f.stat().st_size < 200_000]


GEN_ARGVS = [
    ["attention", "--batch", "1", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-k", "32", "--head-dim", "16",
     "--page-size", "8", "--ragged"],
    ["attention", "--batch", "1", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-q", "4", "--seq-len-k", "16",
     "--head-dim", "16", "--dense", "--causal", "--scale", "0.25", "--dtype", "bf16", "--name", "att"],
    ["copy-kv", "--batch", "1", "--num-heads-kv", "1", "--seq-len", "32", "--head-dim", "16", "--page-size", "8",
     "--tile-tokens", "8", "--block-size", "64", "--seq-lens"],
    ["copy-kv", "--batch", "2", "--num-heads-kv", "2", "--seq-len", "16", "--head-dim", "8", "--page-size", "4",
     "--layout", "v", "--dtype", "f32", "--arch", "gfx1100"],
]
RUN_SOURCE = b"""func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = vector.load %a[%c1, %c0] : memref<4x8xf32>, vector<8xf32>
  %x = vector.extract %v[%n] : f32 from vector<8xf32>
  %s = memref.subview %a[1, 2] [2, 4] [1, 1] : memref<4x8xf32> to memref<2x4xf32, strided<[8, 1], offset: 10>>
  %y = memref.load %s[%c1, %c0] : memref<2x4xf32, strided<[8, 1], offset: 10>>
  %z = arith.addf %x, %y : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %z, %b[%i, %c0] : memref<4x8xf32>
  }
  return
}
"""


def generated_kernels() -> list[tuple[list[str], bytes]]:
    """The generator's argument vectors and their kernels (small; the fuzzed runs start from these)."""
    return [(argv, text) for argv, text in generate(GEN_ARGVS)]


def generate(argvs: list[list[str]]) -> list[tuple[list[str], bytes]]:
    """pagedir-gen run in-process on each argument vector; those it refuses are left out."""
    import contextlib
    import io

    from pagedir.cli import gen

    kernels = []
    with tempfile.TemporaryDirectory() as directory, contextlib.redirect_stderr(io.StringIO()):
        for argv in argvs:
            path = os.path.join(directory, "k.mlir")
            if gen.main([*argv, "-o", path]) == 0:
                kernels.append((argv, Path(path).read_bytes()))
    return kernels


# The round-2 surface: small kernels of every page-table form and variant, linalg payloads, copy-kv.
SMALL = ["--batch", "2", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-k", "32", "--head-dim", "16"]
PAGED = [*SMALL, "--page-size", "8"]
R2_GEN_ARGVS = [
    ["attention", *PAGED, "--page-table", "pointers", "--seq-lens"],
    ["attention", *PAGED, "--page-table", "blocks", "--kv-layout", "nhd"],
    ["attention", *PAGED, "--page-table", "blocks", "--kv-layout", "hnd", "--dynamic"],
    ["attention", *PAGED, "--page-table", "csr", "--kv-layout", "nhd"],
    ["attention", *PAGED, "--page-table", "csr", "--kv-layout", "hnd", "--dynamic"],
    ["attention", *PAGED, "--page-table", "blocks", "--varlen", "--seq-len-q", "2", "--causal"],
    ["attention", *PAGED, "--page-table", "csr", "--varlen", "--seq-len-q", "2", "--dynamic"],
    ["attention", *PAGED, "--page-table", "pointers", "--varlen", "--seq-len-q", "2", "--dynamic"],
    ["attention", *SMALL, "--dense", "--dynamic", "--seq-lens"],
    ["attention", *PAGED, "--page-table", "blocks", "--num-splits", "2"],
    ["attention", *PAGED, "--page-table", "blocks", "--dynamic", "--num-splits", "0"],
    ["attention", *PAGED, "--page-table", "blocks", "--kv-dtype", "fp8e4m3fnuz", "--kv-scale", "per-tensor"],
    ["attention", *PAGED, "--page-table", "csr", "--kv-dtype", "fp8e5m2fnuz", "--kv-scale", "per-token-head"],
    ["attention", *PAGED, "--page-table", "blocks", "--window", "8", "--softcap", "5.0", "--alibi", "--sinks",
     "--causal", "--seq-len-q", "2"],
    ["attention", *PAGED, "--seq-lens", "--window", "4", "--sinks", "--dtype", "bf16", "--lds-swizzle"],
    ["copy-kv", "--batch", "2", "--num-heads-kv", "1", "--seq-len", "16", "--head-dim", "16", "--page-size", "8",
     "--tile-tokens", "8", "--seq-lens"],
]
R3_GEN_ARGVS = [
    ["attention", *PAGED, "--page-table", "blocks", "--kv-cache", "stacked0"],
    ["attention", *PAGED, "--page-table", "blocks", "--kv-cache", "stacked1", "--kv-layout", "hnd", "--dynamic"],
    ["attention", *PAGED, "--page-table", "csr", "--kv-cache", "stacked1"],
    ["attention", *PAGED, "--page-table", "csr", "--kv-cache", "stacked0", "--kv-layout", "hnd", "--varlen",
     "--seq-len-q", "2", "--causal"],
    ["attention", *PAGED, "--page-table", "blocks", "--kv-cache", "stacked0", "--num-blocks", "1", "--arch", "sm_90"],
    ["attention", *PAGED, "--page-table", "blocks", "--kv-cache", "stacked1", "--arch", "sm_90", "--lds-dma"],
    ["attention", *PAGED, "--page-table", "csr", "--arch", "sm_80", "--lds-swizzle", "--window", "8", "--causal",
     "--seq-len-q", "2"],
    ["attention", *PAGED, "--seq-lens", "--arch", "sm_90", "--dtype", "bf16"],
    ["attention", *PAGED, "--page-table", "blocks", "--arch", "sm_90", "--num-splits", "2"],
    ["attention", *PAGED, "--page-table", "blocks", "--kv-layout", "vllm-pa", "--arch", "sm_90"],
    ["attention", *PAGED, "--page-table", "csr", "--kv-layout", "vllm-pa", "--dynamic", "--seq-len-q", "2", "--causal"],
    ["copy-kv", "--batch", "2", "--num-heads-kv", "1", "--seq-len", "13", "--head-dim", "16", "--page-size", "8",
     "--tile-tokens", "8", "--seq-lens"],
]
ONE = ["--batch", "1", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-k", "32", "--head-dim", "16"]
LINALG_GEN_ARGVS = [
    ["linalg-attention", *ONE],
    ["linalg-attention", *ONE, "--page-size", "8", "--seq-lens"],
    ["linalg-attention", *ONE, "--page-table", "blocks", "--kv-layout", "hnd"],
    ["linalg-attention", *ONE, "--page-table", "csr"],
    ["linalg-attention", *ONE, "--causal", "--seq-len-q", "2", "--seq-lens", "--mask", "additive"],
    ["linalg-attention", *ONE, "--matmul", "batch-matmul", "--softmax", "linalg"],
    ["linalg-attention", *ONE, "--window", "8", "--softcap", "5.0", "--alibi", "--causal", "--seq-len-q", "2"],
    ["linalg-attention", *ONE, "--dtype", "bf16", "--page-table", "blocks", "--matmul", "batch-matmul"],
    ["linalg-attention", *ONE, "--dtype", "f32", "--softmax", "linalg", "--mask", "additive", "--seq-lens"],
]
#: The stage dumps of pagedir-compile --dump-dir kept as rock IR of each level (upstream passes run on them).
LEVEL_STAGES = ("00-input", "02-rock-attention-to-gridwise", "03-rock-gridwise-attention-to-blockwise",
                "04-rock-blockwise-load", "07-rock-reuse-lds", "08-rock-threadwise-lowering", "09-rock-buffer-load",
                "10-rock-to-gpu")
NVIDIA_STAGES = ("02-rock-attention-to-gridwise", "08-rock-threadwise-lowering", "10-rock-to-gpu", "11-llvm-dialect")
LEVEL_SOURCES = 4  # round-2 kernels (and one payload) dumped at every level
CACHED_FLAGS = [["--arch", "gfx942", "--emit=asm"], ["--arch", "gfx942", "--emit=asm", "--plan=WORK/plan.json"]]
CACHED_SOURCES = 3


@dataclass
class Seeds:
    texts: dict[str, bytes]  # every input by name: lit tests, the example, generated kernels, stage dumps
    sources: list[str]  # the classic inputs (lit tests, the example, the first generated kernels)
    kernels: list[str]  # round-2 kernels
    payloads: list[str]  # linalg-attention payloads
    levels: list[str]  # rock IR of each level
    caches: list[tuple[str, list[str], dict[str, bytes]]]  # (source, compile flags, the cache files they stored)
    r3: list[str] = field(default_factory=list)  # round-3 kernels (stacked caches, NVIDIA chips)
    nvidia_levels: list[str] = field(default_factory=list)  # rock-to-gpu and NVVM dumps of NVIDIA kernels


def make_seeds() -> Seeds:
    """Every input the cases start from, made once per fuzz run (generating and lowering take a while)."""
    import contextlib
    import io

    from pagedir.cli import compile as compile_cli

    texts = {str(f.relative_to(ROOT)): f.read_bytes() for f in corpus()}
    for argv, text in generated_kernels():
        texts[f"pagedir-gen {' '.join(argv)}"] = text
    texts["run-source"] = RUN_SOURCE
    sources = sorted(texts)
    kernels, payloads = [], []
    for argv, text in generate(R2_GEN_ARGVS + LINALG_GEN_ARGVS):
        name = f"pagedir-gen {' '.join(argv)}"
        texts[name] = text
        (payloads if argv[0] == "linalg-attention" else kernels).append(name)
    r3 = []
    for argv, text in generate(R3_GEN_ARGVS):
        name = f"pagedir-gen {' '.join(argv)}"
        texts[name] = text
        r3.append(name)
    kernels += r3
    levels, caches, nvidia_levels = [], [], []
    attention = [k for k in kernels if " attention " in k]
    with tempfile.TemporaryDirectory() as directory, contextlib.redirect_stderr(io.StringIO()):
        work = Path(directory)
        for number, name in enumerate(attention[:: max(1, len(attention) // LEVEL_SOURCES)][:LEVEL_SOURCES] + payloads[:1]):
            source, dump = work / f"s{number}.mlir", work / f"dump{number}"
            source.write_bytes(texts[name])
            compile_cli.main([str(source), "--dump-dir", str(dump), "-o", str(work / "out.s"), "--no-cache"])
            for stage in LEVEL_STAGES:
                path = dump / f"s{number}.{stage}.mlir"
                if path.exists():
                    texts[f"{name} | {stage}"] = path.read_bytes()
                    levels.append(f"{name} | {stage}")
        for number, name in enumerate(n for n in r3 if " sm_" in n):
            source, dump = work / f"n{number}.mlir", work / f"ndump{number}"
            source.write_bytes(texts[name])
            compile_cli.main([str(source), "--dump-dir", str(dump), "--emit=ptx", "-o", str(work / "out.ptx"), "--no-cache"])
            for stage in NVIDIA_STAGES:
                path = dump / f"n{number}.{stage}.mlir"
                if path.exists():
                    texts[f"{name} | {stage}"] = path.read_bytes()
                    nvidia_levels.append(f"{name} | {stage}")
        for number, name in enumerate(kernels[:CACHED_SOURCES]):
            for flags in CACHED_FLAGS:
                case = work / f"c{number}-{len(caches)}"
                case.mkdir()
                (case / "input.mlir").write_bytes(texts[name])
                argv = [a.replace("WORK/", f"{case}/") for a in flags]
                if compile_cli.main([str(case / "input.mlir"), *argv, "--cache-dir", str(case / "cache"),
                                     "-o", str(case / "out")]) == 0:
                    stored = {str(f.relative_to(case)): f.read_bytes() for f in sorted((case / "cache").rglob("*")) if f.is_file()}
                    caches.append((name, flags, stored))
    return Seeds(texts, sources, kernels, payloads, levels, caches, r3, nvidia_levels)


# ----------------------------------------------------------------------------
# The cases of each family (a family: what is mutated, and how the tool is run)


def classic_case(rng: random.Random, name: str, tool: str, seeds: Seeds, options) -> Case:
    """Text mutations of the lit tests, the example and generated kernels; argv mutations of the generator."""
    texts, sources = seeds.texts, seeds.sources
    lowered = [n for n in sources if b"gpu.module" in texts[n]]
    runnable = [n for n in sources if n.startswith("pagedir-gen") or "run/" in n or n == "run-source"]
    mutate = rng.choice(TEXT_MUTATIONS)
    if tool == "pagedir-opt":
        source = rng.choice(sources)
        if rng.random() < 0.3:  # option garbage for a pass or pipeline option
            argument, names = rng.choice(options)
            option = rng.choice(names) if names else rng.choice(["bogus", "arch"])
            value = rng.choice(GARBAGE + ["{", "}", ",", "a{b}", "1,2"])
            flags = [rng.choice([f"--{argument}={option}={value}", f"--pass-pipeline=builtin.module({argument}{{{option}={value}}})"])]
            data = texts[source]
        else:
            flags = rng.choice([[], ["--rock-verify"], ["--split-input-file"], ["--rock-kernel-pipeline"],
                                ["--split-input-file", "--verify-diagnostics"], ["--mlir-print-op-generic"],
                                ["--rock-attention-to-gridwise"], ["--rock-blockwise-load"], ["--rock-reuse-lds"],
                                ["--rock-threadwise-lowering", "--rock-buffer-load"], ["--rock-to-gpu"]])
            data = mutate(rng, texts[source])
            if rng.random() < 0.2:
                flags = mutate_argv(rng, flags)
        return Case(name, tool, ["INPUT", *flags, "-o", "OUTPUT"], data, "-o", {"source": source, "mutation": mutate.__name__})
    if tool == "pagedir-compile":
        source = rng.choice(lowered or sources)
        flags = ["--arch", rng.choice(["gfx942", "gfx1100", "gfx90a"]), f"--emit={rng.choice(['asm', 'llvm-ir', 'obj'])}"]
        data = texts[source]
        if rng.random() < 0.8:
            data = mutate(rng, data)
        else:
            flags = mutate_argv(rng, flags)
        return Case(name, tool, ["INPUT", *flags, "-o", "OUTPUT"], data, "-o", {"source": source, "mutation": mutate.__name__})
    if tool == "pagedir-gen":
        argv = mutate_argv(rng, rng.choice(GEN_ARGVS))
        return Case(name, tool, [*argv, "-o", "OUTPUT"], None, "-o", {"mutation": "argv"})
    source = rng.choice(runnable)
    data = texts[source]
    check = source != "run-source" and rng.random() < 0.6
    argv = ["--check", "INPUT"] if check else ["INPUT", "--entry", "f", "--outputs", "OUTPUT"]
    if source.startswith("pagedir-gen") and not check:
        argv[2] = "copy_kv" if b"@copy_kv" in data else ("att" if b"@att(" in data else "paged_attention")
    if not check:
        argv += ["--seed", str(rng.choice([0, 1, 7]))]
    if rng.random() < 0.7:
        data = mutate(rng, data)
        how = mutate.__name__
    else:
        argv, how = mutate_argv(rng, argv), "argv"
    return Case(name, tool, argv, data, "--outputs" if "OUTPUT" in argv else None, {"source": source, "mutation": how})


ARCHS = ["gfx942", "gfx942", "gfx90a", "gfx950", "gfx1100", "gfx1201"]


def entry_of(text: bytes) -> str:
    found = signature(text)
    return found[0] if found else "f"


def views_case(rng: random.Random, name: str, tool: str, seeds: Seeds, options) -> Case:
    """A round-2 kernel with one edit of its block-table / varlen views or index operands."""
    source = rng.choice(seeds.kernels)
    data, how = view_edit(rng, seeds.texts[source])
    extra = {"source": source, "mutation": f"views-{how}"}
    if tool == "pagedir-opt":
        flags = rng.choice([[], ["--rock-verify"], ["--rock-kernel-pipeline"], ["--rock-attention-to-gridwise"],
                            ["--rock-raise-attention", "--rock-attention-to-gridwise", "--rock-gridwise-attention-to-blockwise"],
                            ["--pass-pipeline=builtin.module(rock-kernel-pipeline{arch=gfx950})"]])
        return Case(name, tool, ["INPUT", *flags, "-o", "OUTPUT"], data, "-o", extra)
    if tool == "pagedir-compile":
        plan = ["--plan=WORK/plan.json"] if rng.random() < 0.3 else []
        return Case(name, tool, ["INPUT", "--arch", rng.choice(ARCHS), *plan, "-o", "OUTPUT"], data, "-o", extra,
                    {"plan.json": SENTINEL}, ("plan.json",))
    if rng.random() < 0.75:
        return Case(name, tool, ["--check", "INPUT", "--seed", str(rng.choice([0, 3]))], data, None, extra)
    argv = ["INPUT", "--entry", entry_of(data), "--outputs", "OUTPUT", "--seed", "1"]
    return Case(name, tool, argv, data, "--outputs", extra)


def payloads_case(rng: random.Random, name: str, tool: str, seeds: Seeds, options) -> Case:
    """A linalg-attention payload with one semantic edit (or none): raised, compiled, or checked."""
    source = rng.choice(seeds.payloads)
    data, how = seeds.texts[source], "payload-as-generated"
    if rng.random() < 0.7:
        data, how = payload_edit(rng, data)
        how = f"payloads-{how}"
    elif rng.random() < 0.5:  # numbers and attributes of the payload's ops (sizes, dimensions, constants)
        mutate = rng.choice([huge_numbers, nan_numbers, bad_attributes, index_arrays, delete_tokens])
        data, how = mutate(rng, data), f"payloads-text-{mutate.__name__}"
    extra = {"source": source, "mutation": how}
    if tool == "pagedir-opt":
        flags = rng.choice([["--rock-raise-attention"], ["--rock-raise-attention=explain=true"], ["--rock-kernel-pipeline"],
                            ["--canonicalize", "--cse", "--rock-raise-attention"], ["--rock-kernel-pipeline=arch=gfx1100"]])
        return Case(name, tool, ["INPUT", *flags, "-o", "OUTPUT"], data, "-o", extra)
    if tool == "pagedir-compile":
        arch = ["--arch", rng.choice(ARCHS)] if rng.random() < 0.6 else []  # without: the payload's rock.arch
        emit = [f"--emit={rng.choice(['asm', 'llvm-ir', 'obj', 'llvm-dialect'])}"]
        return Case(name, tool, ["INPUT", *arch, *emit, "-o", "OUTPUT"], data, "-o", extra)
    seed = rng.choice([0, 0, 5])
    return Case(name, tool, ["--check", "INPUT", "--seed", str(seed)], data, None, {**extra, "payload": True, "seed": seed})


def upstream_case(rng: random.Random, name: str, tool: str, seeds: Seeds, options) -> Case:
    """Upstream passes (random ones, random options) on the rock IR of each level, payloads and kernels."""
    source = rng.choice(seeds.levels + seeds.payloads[:3] + seeds.kernels[:3])
    return Case(name, tool, ["INPUT", *upstream_flags(rng), "-o", "OUTPUT"], seeds.texts[source], "-o",
                {"source": source, "mutation": "upstream-passes"})


ODD_PATHS = ["", "-", "/dev/full", "/dev/null", "WORK/", "WORK/plan.json", "WORK/nodir/x.json", "INPUT", "OUTPUT",
             "WORK/afile/x.json", "WORK/" + "p" * 300 + ".json", "WORK/plan.json/", "/proc/pagedir-fuzz.json", "WORK/report.json"]
ODD_CACHE_DIRS = ["", "/dev/null", "/proc/pagedir-fuzz-cache", "WORK/afile", "WORK/afile/sub", "WORK/" + "c" * 300,
                  "WORK/plan.json", "-"]


def corrupt_cache(rng: random.Random, stored: dict[str, bytes]) -> tuple[dict[str, bytes | None], str]:
    """A copy of a cache (its files by path under cache/) with one entry damaged."""
    files: dict[str, bytes | None] = dict(stored)
    path = rng.choice(sorted(stored))
    entry = os.path.dirname(path)
    kind = rng.randrange(8)
    if kind == 0:
        files[path] = stored[path][: rng.randrange(len(stored[path]) or 1)]
        how = "truncated"
    elif kind == 1:
        files[path] = bytes(rng.randrange(256) for _ in range(len(stored[path]) or 8))
        how = "garbage"
    elif kind == 2:
        files[f"{entry}/meta.json"] = rng.choice([b"", b"{", b"[]", b"null", b'{"files": 1}', b'{"files": {"artefact": -1}}',
                                                  b'"\xff\xfe"', b"{}" * 1000])
        how = "bad-meta"
    elif kind == 3:
        del files[path]
        how = "file-removed"
    elif kind == 4:
        files[path] = None
        files[f"{path}/inner"] = b"x"
        how = "file-is-directory"
    elif kind == 5:
        files = {p: v for p, v in files.items() if not p.startswith(entry + "/")}
        files[entry] = b"an entry that is a file\n"
        how = "entry-is-file"
    elif kind == 6:
        files[f"{os.path.dirname(entry)}/.tmp-{os.path.basename(entry)}/artefact"] = b"half written"
        files[f"{entry}/extra"] = b"\0" * 10
        how = "leftovers"
    else:
        files = {p: v for p, v in files.items() if p != path}
        files[f"{entry}/{os.path.basename(path)}"] = stored[path] + b"\n// appended"
        how = "appended"
    return files, how


def plans_case(rng: random.Random, name: str, tool: str, seeds: Seeds, options) -> Case:
    """pagedir-compile with --plan / --report / --dump-dir to odd paths, or --cache-dir at a damaged cache."""
    files: dict[str, bytes | None] = {"plan.json": SENTINEL, "report.json": SENTINEL, "afile": SENTINEL}
    guarded = ("plan.json", "report.json", "afile")
    kind = rng.randrange(4)
    if kind == 3 and seeds.caches:
        source, flags, stored = rng.choice(seeds.caches)
        if rng.random() < 0.75:
            damaged, how = corrupt_cache(rng, stored)
            files.update(damaged)
            cache = ["--cache-dir", "WORK/cache"]
        else:
            how, cache = "odd-cache-dir", [rng.choice(["--cache-dir", "--cache-dir="]), rng.choice(ODD_CACHE_DIRS)]
            if cache[0].endswith("="):
                cache = [cache[0] + cache[1]]
        argv = ["INPUT", *flags, *cache, *(["-v"] if rng.random() < 0.5 else []), "-o", "OUTPUT"]
        return Case(name, tool, argv, seeds.texts[source], "-o", {"source": source, "mutation": f"cache-{how}"},
                    files, guarded)
    source = rng.choice(seeds.kernels + seeds.payloads[:2])
    emit = rng.choice(["asm", "asm", "obj", "llvm-ir", "llvm-dialect", "hsaco"])
    argv = ["INPUT", "--arch", rng.choice(ARCHS[:3]), f"--emit={emit}"]
    path = rng.choice(ODD_PATHS)
    if kind == 0:
        argv += [f"--plan={path}"] if rng.random() < 0.7 else ["--plan", path]
        how = "plan"
    elif kind == 1:
        argv += [f"--report={path}"] if rng.random() < 0.8 else ["--report"]
        how = "report"
    else:
        argv += [f"--dump-dir={path}"]
        how = "dump-dir"
    if rng.random() < 0.3:  # both a plan and a report
        argv += [rng.choice(["--plan", "--report"]) + "=" + rng.choice(ODD_PATHS)]
    argv += ["--no-cache"] if rng.random() < 0.5 else ["--cache-dir", "WORK/cache"]
    output = rng.choice([["-o", "OUTPUT"], ["-o", "OUTPUT"], ["-o", "WORK/plan.json"], ["-o", "-"]])
    return Case(name, tool, argv + output, seeds.texts[source], "-o" if "OUTPUT" in output else None,
                {"source": source, "mutation": how}, files, guarded)


R2_VALUES = ["0", "1", "2", "3", "7", "-1", "1e-30", "1e20", "0.00005", "3.4e38", "1e-45", "nan", "inf", "65536",
             "2147483648", "5.0", "1e-7"]
R2_FLAGS = [["--num-splits", "V"], ["--window", "V"], ["--softcap", "V"], ["--scale", "V"], ["--page-table", "blocks"],
            ["--page-table", "csr"], ["--page-table", "pointers"], ["--kv-layout", "hnd"], ["--kv-dtype", "fp8e4m3fn"],
            ["--kv-dtype", "fp8e5m2fnuz"], ["--kv-scale", "per-token-head"], ["--kv-scale", "per-tensor"], ["--dynamic"],
            ["--varlen"], ["--sinks"], ["--alibi"], ["--lds-dma"], ["--lds-swizzle"], ["--pipeline-depth", "V"],
            ["--num-blocks", "V"], ["--seq-len-q", "V"], ["--seq-len-k", "V"], ["--page-size", "V"], ["--batch", "V"],
            ["--causal"], ["--dense"], ["--seq-lens"], ["--arch", "gfx1100"], ["--arch", "gfx908"], ["--dtype", "f32"],
            ["--matmul", "batch-matmul"], ["--softmax", "linalg"], ["--mask", "additive"]]


def round2_gen_case(rng: random.Random, name: str, tool: str, seeds: Seeds, options) -> Case:
    """The generator's round-2 options: flags added (with edge values), values replaced, argv mutations."""
    argv = list(rng.choice(R2_GEN_ARGVS + LINALG_GEN_ARGVS))
    kind = rng.randrange(3)
    if kind == 0:
        for _ in range(rng.randint(1, 3)):
            flag = [rng.choice(R2_VALUES) if a == "V" else a for a in rng.choice(R2_FLAGS)]
            at = rng.randrange(1, len(argv) + 1)
            argv[at:at] = flag
    elif kind == 1:
        values = [i for i in range(2, len(argv)) if not argv[i].startswith("--") and argv[i - 1].startswith("--")]
        for i in rng.sample(values, min(len(values), rng.randint(1, 2))):
            argv[i] = rng.choice(R2_VALUES)
    else:
        argv = mutate_argv(rng, argv)
    return Case(name, tool, [*argv, "-o", "OUTPUT"], None, "-o", {"mutation": f"gen-round2-{['flags', 'values', 'argv'][kind]}"})


R3_FLAGS = [["--kv-cache", "stacked0"], ["--kv-cache", "stacked1"], ["--kv-cache", "separate"], ["--kv-cache", "V"],
            ["--kv-layout", "vllm-pa"], ["--kv-layout", "hnd"], ["--arch", "sm_80"], ["--arch", "sm_90"],
            ["--arch", "sm_70"], ["--arch", "sm_100"], ["--arch", "nvptx64-nvidia-cuda:sm_90"], ["--arch", "V"],
            ["--num-blocks", "V"], ["--page-table", "pointers"], ["--page-table", "csr"], ["--dense"], ["--varlen"],
            ["--lds-dma"], ["--lds-swizzle"], ["--kv-dtype", "fp8e4m3fn"], ["--dtype", "f32"], ["--dtype", "bf16"],
            ["--head-dim", "V"], ["--page-size", "V"], ["--seq-len-k", "V"], ["--num-heads-q", "V"], ["--pipeline-depth", "V"],
            ["--num-splits", "V"], ["--seq-len-q", "V"], ["--causal"], ["--window", "V"], ["--dynamic"]]
R3_VALUES = ["0", "1", "2", "3", "5", "7", "13", "64", "-1", "65536", "2147483648", "stacked2", "sm_90a", "", "x"]


def round3_case(rng: random.Random, name: str, tool: str, seeds: Seeds, options) -> Case:
    """Round 3: generator argv with the stacked caches and NVIDIA chips; their kernels with views/subviews edited,
    compiled for sm_80/sm_90 to PTX and cubin (also from mutated NVIDIA-level IR), checked for sm_90."""
    if tool == "pagedir-gen":
        argv = list(rng.choice(R3_GEN_ARGVS))
        if rng.random() < 0.8:
            for _ in range(rng.randint(1, 3)):
                flag = [rng.choice(R3_VALUES + R2_VALUES[:6]) if a == "V" else a for a in rng.choice(R3_FLAGS)]
                at = rng.randrange(1, len(argv) + 1)
                argv[at:at] = flag
            how = "flags"
        else:
            argv, how = mutate_argv(rng, argv), "argv"
        return Case(name, tool, [*argv, "-o", "OUTPUT"], None, "-o", {"mutation": f"gen-round3-{how}"})
    arch = rng.choice(["sm_90", "sm_90", "sm_80"])
    if tool == "pagedir-compile" and seeds.nvidia_levels and rng.random() < 0.4:
        source = rng.choice(seeds.nvidia_levels)
        mutate = rng.choice(TEXT_MUTATIONS)
        data, how = mutate(rng, seeds.texts[source]), f"r3-nvidia-level-{mutate.__name__}"
    else:
        source = rng.choice(seeds.r3)
        data, how = seeds.texts[source], "r3-as-generated"
        if rng.random() < 0.8:
            data, edit = view_edit(rng, data)
            how = f"r3-views-{edit}"
    if rng.random() < 0.9:  # the kernel made for the chip run (a kernel for another chip is refused as a whole)
        data = re.sub(rb'rock\.arch = "[\w:-]+"', b'rock.arch = "' + arch.encode() + b'"', data)
    extra = {"source": source, "mutation": how}
    if tool == "pagedir-opt":
        flags = rng.choice([["--rock-verify"], [f"--rock-kernel-pipeline=arch={arch}"], ["--rock-attention-to-gridwise"],
                            [f"--pass-pipeline=builtin.module(rock-kernel-pipeline{{arch={arch}}})"]])
        return Case(name, tool, ["INPUT", *flags, "-o", "OUTPUT"], data, "-o", extra)
    if tool == "pagedir-compile":
        emit = rng.choice(["ptx", "ptx", "cubin", "cubin", "llvm-ir", "asm", "obj", "hsaco"])
        report = rng.choice([[], [], ["--report=WORK/report.json"], ["--plan=WORK/plan.json"]])
        argv = ["INPUT", "--arch", arch, f"--emit={emit}", *report, "--no-cache", "-o", "OUTPUT"]
        return Case(name, tool, argv, data, "-o", extra, {"plan.json": SENTINEL, "report.json": SENTINEL},
                    () if report else ("plan.json", "report.json"))
    seed = rng.choice([0, 3])
    return Case(name, tool, ["--check", "INPUT", "--arch", arch, "--seed", str(seed)], data, None, extra)


def npz_inputs_case(rng: random.Random, name: str, tool: str, seeds: Seeds, options) -> Case:
    """pagedir-run --inputs with an .npz of valid arrays with one edit (dtype, shape, keys, index values ...)."""
    tables = [k for k in seeds.kernels if "pointers" not in k and "copy-kv" not in k]
    source = rng.choice(tables + seeds.payloads)
    made = npz_case(rng, seeds.texts[source])
    if made is None:
        return classic_case(rng, name, tool, seeds, options)
    data, how, entry = made
    argv = ["INPUT", "--entry", entry, "--inputs", "WORK/inputs.npz", "--outputs", "OUTPUT"]
    return Case(name, tool, argv, seeds.texts[source], "--outputs", {"source": source, "mutation": how},
                {"inputs.npz": data}, ("inputs.npz",))


#: Per tool, the families of cases and their shares.
FAMILIES = {
    "pagedir-opt": [(classic_case, 0.35), (views_case, 0.15), (payloads_case, 0.15), (upstream_case, 0.25),
                    (round3_case, 0.1)],
    "pagedir-compile": [(classic_case, 0.2), (views_case, 0.1), (payloads_case, 0.2), (plans_case, 0.2),
                        (round3_case, 0.3)],
    "pagedir-gen": [(classic_case, 0.3), (round2_gen_case, 0.4), (round3_case, 0.3)],
    "pagedir-run": [(classic_case, 0.25), (views_case, 0.15), (payloads_case, 0.25), (npz_inputs_case, 0.1),
                    (round3_case, 0.25)],
}


def make_cases(count: int, seed: int, only: str | None, seeds: Seeds | None = None) -> list[Case]:
    rng = random.Random(seed)
    seeds = seeds or make_seeds()
    options = pass_options()
    cases: list[Case] = []
    tools = [only] if only else list(TOOLS)
    shares = {tool: SHARES[tool] / sum(SHARES[t] for t in tools) for tool in tools}
    for tool in tools:
        builders, weights = zip(*FAMILIES[tool])
        for index in range(round(count * shares[tool])):
            build = rng.choices(builders, weights)[0]
            cases.append(build(rng, f"{tool}-{index}", tool, seeds, options))
    return cases


# ----------------------------------------------------------------------------
# Running and classifying


ERROR_LINE = re.compile(r"(?m)(?:^|: )error: ")
LOWERED_FAIL = re.compile(r"^  L6 after rock-kernel-pipeline.*: max abs error .*: FAIL$")
WRITTEN_PASS = re.compile(r"^  L\d as written: max abs error .*: PASS$")
PAYLOAD_REFERENCE = "  input as written: ran; the reference of the lowered kernel"


def classify(returncode: int | None, out: str, err: str, clobbered: bool) -> str:
    text = out + err
    if returncode is None:
        return "timeout"
    if returncode < 0:
        return "signal"
    if "Traceback (most recent call last)" in text:
        return "traceback"
    if returncode == 2 or "internal error" in err:
        return "internal-error"
    if clobbered:
        return "clobbered"
    if PYTHON_WARNING.search(err):
        return "leaked-warning"
    if returncode == 0:
        return "error-exit-0" if ERROR_LINE.search(err) else "ok"
    if returncode != 1:
        return "bad-exit"
    if EXCEPTION_NAME.search(err):
        return "leaked-exception"
    if "error:" in err or "FAIL" in out:
        return "user-error"
    return "bad-exit"


def check_blocks(out: str) -> list[tuple[str, list[str]]]:
    """pagedir-run --check's report as (function, its level lines), one per function and launch."""
    blocks = []
    for line in out.splitlines():
        if line.startswith("@"):
            blocks.append((line[1:].split(":", 1)[0], []))
        elif blocks and line.startswith("  ") and not line.startswith("    "):
            blocks[-1][1].append(line)
    return blocks


def wrong_result(case: Case, out: str, work: Path, env: dict, timeout: float) -> str | None:
    """"mis-raised", "mis-lowered" or "interp-disagrees" when a --check report shows that lowering changed what
    a function computes, or that the interpreter's reference of a payload is wrong.

    The lowered kernel (L6) fails its comparison, by numbers (an interpreter error is a reported error, not a
    silent one), while the function as written stood:

    * a kernel (it has a reference result): the level as written PASSes it, the lowered one FAILs it:
      "mis-lowered";
    * a linalg payload (no reference result: the payload as written, run by the interpreter, is the reference
      of the lowered kernel): the payload is run again as written on the check's case (pagedir-run --entry
      without --inputs draws the case --check draws, from the same --seed). Where its result holds NaN or Inf
      (an init constant mutated to NaN or +Inf, a max taken against +Inf, a division by a sum that is 0) the
      payload is numerically meaningless on the case: the kernel's online softmax and the payload's two-pass
      one need not agree on which elements are not finite, and the FAIL stays a "user-error". Else a second
      reference decides that does not go through the interpreter's linalg semantics: upstream's own lowering
      of the payload to loops (one-shot-bufferize, convert-linalg-to-loops) run on the same case. Where the
      two references agree (or the loops cannot be made), the kernel differs from what the payload computes:
      "mis-raised", rock-raise-attention took for attention something that computes otherwise. Where they
      disagree, the interpreter's reference is wrong: the lowered kernel is run too, and it is "mis-raised"
      when it differs from the loops as well, else "interp-disagrees".
    """
    for function, lines in check_blocks(out):
        if not any(LOWERED_FAIL.match(line) for line in lines):
            continue
        if any(WRITTEN_PASS.match(line) for line in lines):
            return "mis-lowered"
        if PAYLOAD_REFERENCE in lines:
            verdict = payload_verdict(case, function, work, env, timeout)
            if verdict:
                return verdict
    return None


def payload_verdict(case: Case, function: str, work: Path, env: dict, timeout: float) -> str | None:
    """The rule of :func:`wrong_result` for a payload whose lowered kernel FAILed against it."""
    import numpy as np

    def tool(name: str, *argv: str) -> bool:
        try:
            return subprocess.run([sys.executable, "-m", TOOLS[name], *argv], capture_output=True, timeout=timeout,
                                  env=env, cwd=work, stdin=subprocess.DEVNULL).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def results(source: Path, name: str) -> dict | None:
        outputs = work / f"{name}.npz"
        if not tool("pagedir-run", str(source), "--entry", function, "--seed", str(case.extra.get("seed", 0)),
                    "--outputs", str(outputs)):
            return None
        with np.load(outputs) as arrays:
            return {k: arrays[k].astype(np.float64) for k in arrays.files if arrays[k].dtype.kind == "f"}

    def finite(arrays: dict) -> bool:
        return all(np.isfinite(a).all() for a in arrays.values())

    found = signature(case.input or b"")
    elements = {f"arg{i}": element for i, (_, _, element) in enumerate(found[1])} if found else {}

    def differ(a: dict, b: dict) -> bool:  # --check's rule: the absolute error within the element type's tolerance
        return any(a[k].shape != b[k].shape or (np.abs(a[k] - b[k]) > (1e-5 if elements.get(k) == "f32" else 2e-2)).any()
                   for k in a if k in b)

    source = work / "input.mlir"
    written = results(source, "payload-as-written")
    if written is None or not finite(written):
        return None
    loops_source = work / "payload-loops.mlir"
    made = tool("pagedir-opt", str(source), "--one-shot-bufferize", "--convert-linalg-to-loops", "-o", str(loops_source))
    loops = results(loops_source, "payload-loops") if made else None
    if loops is None or not finite(loops) or not differ(written, loops):
        return "mis-raised"
    kernel_source = work / "payload-kernel.mlir"
    made = tool("pagedir-opt", str(source), "--rock-kernel-pipeline", "-o", str(kernel_source))
    kernel = results(kernel_source, "payload-kernel") if made else None
    return "mis-raised" if kernel is None or differ(kernel, loops) else "interp-disagrees"


def expand(argument: str, work: Path, input_path: Path, output_path: Path) -> str:
    """A case's argument with its placeholders replaced: INPUT, OUTPUT (alone or after '='), WORK/."""
    names = {"INPUT": str(input_path), "OUTPUT": str(output_path)}
    if argument in names:
        return names[argument]
    head, equals, tail = argument.rpartition("=")
    if equals and tail in names:
        return head + "=" + names[tail]
    return argument.replace("WORK/", f"{work}/")


def promised_files(argv: list[str], work: Path) -> list[Path]:
    """The files in ``work`` that pagedir-compile's --plan and --report were asked to write."""
    found = []
    for i, argument in enumerate(argv):
        flag, equals, value = argument.partition("=")
        if argument == "--plan" and i + 1 < len(argv):  # --report alone prints a table: it names no file
            value = argv[i + 1]
        elif flag not in ("--plan", "--report") or not equals:
            continue
        if value.startswith(f"{work}/") and not value.endswith("/"):
            found.append(Path(value))
    return found


def write_files(work: Path, files: dict[str, bytes | None]) -> None:
    for relative, data in sorted(files.items(), key=lambda item: item[0].count("/")):
        path = work / relative
        if data is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def contents(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def run_case(case: Case, timeout: float, directory: Path) -> dict:
    work = directory / case.name
    work.mkdir(parents=True, exist_ok=True)
    input_path, output_path = work / "input.mlir", work / "output"
    if case.input is not None:
        input_path.write_bytes(case.input)
    output_path.write_bytes(SENTINEL)
    write_files(work, case.files)
    guarded = {work / name: contents(work / name) for name in case.guarded}
    argv = [expand(a, work, input_path, output_path) for a in case.argv]
    # A cache of the run's own (never the user's): runs do not see each other's entries.
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONDONTWRITEBYTECODE": "1", "PAGEDIR_CACHE_DIR": str(work / "own-cache")}
    env.pop("PAGEDIR_TRACEBACK", None)
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", TOOLS[case.tool], *argv], capture_output=True, timeout=timeout,
                              env=env, cwd=work, stdin=subprocess.DEVNULL)
        returncode, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        returncode, out, err = None, expired.stdout or b"", expired.stderr or b""
    seconds = time.perf_counter() - start
    written = output_path.read_bytes() if output_path.is_file() else b""
    # Only a run that names the file may change it, and only when it succeeds; the input and the user's other
    # files (an existing plan, the --inputs archive) a failing run leaves alone.
    clobbered = written != SENTINEL and (returncode != 0 or case.output_flag is None) and "OUTPUT" in case.argv
    if returncode != 0:
        clobbered |= case.input is not None and contents(input_path) != case.input
        clobbered |= any(contents(path) != before for path, before in guarded.items())
    out_text, err_text = out.decode(errors="replace"), err.decode(errors="replace")
    verdict = classify(returncode, out_text, err_text, clobbered)
    if verdict == "ok" and any(contents(path) in (None, SENTINEL) for path in promised_files(argv, work)):
        verdict = "unwritten-output"
    if verdict == "user-error" and case.tool == "pagedir-run" and "--check" in case.argv:
        verdict = wrong_result(case, out_text, work, env, timeout) or verdict
    return {"name": case.name, "tool": case.tool, "argv": argv, "class": verdict, "returncode": returncode,
            "seconds": round(seconds, 3), "stderr_tail": err_text[-600:], "stdout_tail": out_text[-600:],
            "work": str(work), **case.extra}


def save_reproducer(result: dict, case: Case, out: Path) -> str:
    target = out / "fuzz-reproducers" / result["class"] / case.name
    target.mkdir(parents=True, exist_ok=True)
    if case.input is not None:
        (target / "input.mlir").write_bytes(case.input)
    write_files(target, case.files)
    argv = [expand(a, Path("."), Path("input.mlir"), Path("output")) for a in case.argv]
    (target / "argv.txt").write_text(f"{case.tool} {shlex.join(argv)}\n")
    (target / "seen.txt").write_text(f"exit code {result['returncode']}\n--- stderr\n{result['stderr_tail']}\n"
                                     f"--- stdout\n{result['stdout_tail']}\n")
    return str(target.relative_to(ROOT)) if target.is_relative_to(ROOT) else str(target)


def first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")[:300]


def markdown(summary: dict, examples: dict) -> str:
    classes = ["ok", "user-error", *BAD]
    lines = [f"# Fuzz sweep: {summary['cases']} runs (seed {summary['seed']}, {summary['seconds']:.0f} s)", "",
             "| tool | " + " | ".join(classes) + " |", "|---" * (len(classes) + 1) + "|"]
    for tool, counts in summary["per_tool"].items():
        lines.append(f"| {tool} | " + " | ".join(str(counts.get(c, 0)) for c in classes) + " |")
    totals = summary["per_class"]
    lines.append("| **all** | " + " | ".join(str(totals.get(c, 0)) for c in classes) + " |")
    lines += ["", "Runs per mutation class (and their classes where not all ok or user errors):", ""]
    for name, n in sorted(summary["per_mutation"].items()):
        seen = summary["per_mutation_class"].get(name, {})
        notable = ", ".join(f"{c} {k}" for c, k in sorted(seen.items()) if c not in ("ok", "user-error"))
        lines.append(f"- {name}: {n} (ok {seen.get('ok', 0)}, user-error {seen.get('user-error', 0)}"
                     + (f"; {notable}" if notable else "") + ")")
    if examples:
        lines += ["", "## First reproducers of each bad class", ""]
        for verdict, items in examples.items():
            lines.append(f"### {verdict}")
            for item in items:
                lines.append(f"- `{item['reproducer']}`: `{item['tool']}` exit {item['returncode']}: "
                             f"{first_line(item['stderr_tail'])[:200]}")
            lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="runs in all (default 5000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the mutations (default 1)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run (default 60)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"), help="report directory")
    parser.add_argument("--only", choices=list(TOOLS), help="fuzz one tool")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(SRC))  # the cases are made with this checkout's generators and pass registry
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "fuzz-reproducers", ignore_errors=True)
    cases = make_cases(args.count, args.seed, args.only)
    by_name = {case.name: case for case in cases}
    start = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="pagedir-fuzz-") as scratch, ThreadPoolExecutor(args.jobs) as pool:
        for done, result in enumerate(pool.map(lambda c: run_case(c, args.timeout, Path(scratch)), cases), 1):
            results.append(result)
            if result["class"] in BAD:
                print(f"{result['class']}: {result['tool']} {shlex.join(result['argv'][:6])} ...", file=sys.stderr)
            if done % 250 == 0:
                print(f"{done}/{len(cases)} runs", file=sys.stderr)
    per_tool: dict[str, Counter] = defaultdict(Counter)
    for result in results:
        per_tool[result["tool"]][result["class"]] += 1
    examples: dict[str, list] = defaultdict(list)
    for result in results:
        if result["class"] in BAD and len(examples[result["class"]]) < EXAMPLES_PER_CLASS * len(TOOLS):
            if sum(1 for e in examples[result["class"]] if e["tool"] == result["tool"]) < EXAMPLES_PER_CLASS:
                result["reproducer"] = save_reproducer(result, by_name[result["name"]], out)
                examples[result["class"]].append(result)
    summary = {
        "cases": len(results), "seed": args.seed, "count": args.count, "timeout": args.timeout,
        "seconds": round(time.perf_counter() - start, 1),
        "per_tool": {tool: dict(counts) for tool, counts in per_tool.items()},
        "per_class": dict(sum(per_tool.values(), Counter())),
        "per_mutation": dict(Counter(r.get("mutation", "argv") for r in results)),
        "per_mutation_class": {m: dict(Counter(r["class"] for r in results if r.get("mutation", "argv") == m))
                               for m in sorted({r.get("mutation", "argv") for r in results})},
    }
    bad = [{"name": r["name"], "tool": r["tool"], "class": r["class"], "source": r.get("source"),
            "mutation": r.get("mutation"), "message": first_line(r["stderr_tail"])} for r in results if r["class"] in BAD]
    record = {"summary": summary, "bad": bad, "examples": {k: [{x: v for x, v in e.items() if x != "work"} for e in items]
                                                  for k, items in examples.items()}}
    (out / "fuzz.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "fuzz.md").write_text(markdown(summary, examples))
    print(markdown(summary, {}))
    return 1 if any(summary["per_class"].get(c) for c in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
