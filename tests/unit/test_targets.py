"""The target-family boundary: what differs between CDNA, RDNA (and a later family) is asked of
``pagedir.targets.family_of(chip)``, never decided by testing a chip's name, family or generation.

The package is a leaf like ``pagedir.arch``: it imports nothing of pagedir but itself and the chip table.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pagedir
from pagedir.arch import CHIPS
from pagedir.targets import FAMILIES, family_of

SRC = pathlib.Path(pagedir.__file__).parent
TARGETS = SRC / "targets"
#: A family or generation test, or a set of chip names, in code (not in docstrings or comments).
FAMILY_TEST = re.compile(r'\.family\b|\.major\b|chip\.name (not )?in |_CHIPS\b|chipset=|"amdgcn-amd-amdhsa"')


def test_every_chip_names_a_registered_family() -> None:
    for chip in CHIPS.values():
        assert family_of(chip).name == chip.family, chip.name
    assert set(FAMILIES) == {chip.family for chip in CHIPS.values()}


def code_lines(path: pathlib.Path) -> list[tuple[int, str]]:
    """``(line, text)`` of the lines of ``path`` outside docstrings and comments."""
    source = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    return [(n, text.split("#", 1)[0]) for n, text in enumerate(source.splitlines(), 1) if n not in docstrings]


def test_no_family_decision_outside_the_targets_package() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.is_relative_to(TARGETS) or path.name in ("arch.py", "upstream_passes.py"):
            continue  # upstream_passes.py: the catalogue of upstream passes and their options
        found += [f"{path.relative_to(SRC)}:{n}: {text.strip()}" for n, text in code_lines(path) if FAMILY_TEST.search(text)]
    assert found == []


def test_the_targets_package_is_a_leaf() -> None:
    for path in TARGETS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name.startswith("pagedir"):
                    assert name.startswith(("pagedir.targets", "pagedir.arch")), f"{path.name} imports {name}"
