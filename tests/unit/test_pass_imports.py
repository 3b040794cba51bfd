"""Pass modules stand alone: none imports another; shared IR helpers live once, in passes/ir_utils.py.

A pass file then reads top to bottom as its own algorithm, and a change in one
pass cannot break another through a helper it happened to export.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import pagedir
import pagedir.passes

PACKAGE = "pagedir.passes"
PASSES_DIR = pathlib.Path(pagedir.passes.__file__).parent
#: Modules of the package every pass may import: the registry, the base class, the shared helpers,
#: the attention passes' blockwise GEMM on matrix cores (its tiling and its loop), their VALU loop, the split-KV
#: kernels' workspace and combine kernel.
SHARED = {"__init__", "base", "ir_utils", "blockwise_gemm", "valu_loop", "split_combine"}


def package_modules() -> set[str]:
    return {path.stem for path in PASSES_DIR.glob("*.py")}


def pass_modules() -> set[str]:
    return package_modules() - SHARED


def imported_package_modules(source: str, modules: set[str]) -> set[str]:
    """Modules of ``pagedir.passes`` named in ``source``'s import statements, at any depth
    (absolute or relative, ``import a.b``, ``from a.b import c`` and ``from a import b``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[:2] == PACKAGE.split(".") and len(parts) > 2:
                    found.add(parts[2])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = f"{PACKAGE}.{node.module}" if node.module else PACKAGE
            elif node.level == 0:
                base = node.module
            else:
                continue  # above the package
            parts = base.split(".")
            if parts[:2] != PACKAGE.split("."):
                continue
            if len(parts) > 2:
                found.add(parts[2])
            else:
                found.update(alias.name for alias in node.names if alias.name in modules)
    return found


def test_the_checker_sees_every_import_form():
    modules = {"base", "ir_utils", "blockwise_load", "reuse_lds", "verify", "rock_to_gpu", "buffer_load"}
    source = """
import pagedir.passes.blockwise_load
from pagedir.passes.reuse_lds import plan
from pagedir.passes import verify, add_pass
from .rock_to_gpu import RockToGPUPass
from . import buffer_load
from pagedir.passes.ir_utils import find_ops
import pagedir.dialect.rock
def later():
    from pagedir.passes.base import Pass
"""
    found = imported_package_modules(source, modules)
    assert found == {"blockwise_load", "reuse_lds", "verify", "rock_to_gpu", "buffer_load", "ir_utils", "base"}


def test_the_package_has_its_passes_and_the_helper_module():
    assert {"blockwise_load", "threadwise_lowering", "reuse_lds", "verify"} <= pass_modules()
    assert "ir_utils" in package_modules()


@pytest.mark.parametrize("module", sorted(package_modules()))
def test_no_module_of_the_package_imports_a_pass_module(module):
    """The registry loads passes with importlib; no import statement anywhere in the package names one."""
    source = (PASSES_DIR / f"{module}.py").read_text()
    imported = imported_package_modules(source, package_modules()) & pass_modules()
    assert not imported, f"pagedir/passes/{module}.py imports the pass module(s) {sorted(imported)}: move what it needs to ir_utils.py"


def top_level_functions(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}


def test_ir_helpers_have_one_definition():
    """No pass module, and nothing in the interpreter, keeps its own copy of a shared helper."""
    helpers = top_level_functions(PASSES_DIR / "ir_utils.py")
    src = pathlib.Path(pagedir.__file__).parent
    copies = {
        f"{path.relative_to(src)}: {name}"
        for path in [*PASSES_DIR.glob("*.py"), *(src / "interp").glob("*.py")]
        if path.stem != "ir_utils"
        for name in sorted(top_level_functions(path) & helpers)
    }
    assert not copies, f"copies of helpers of pagedir/passes/ir_utils.py: {sorted(copies)}"
