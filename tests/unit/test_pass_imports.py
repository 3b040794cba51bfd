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
#: the attention passes' blockwise GEMM on matrix cores (its tiling and LDS layouts, its loop), their VALU loop, the split-KV
#: kernels' workspace and combine kernel, and what the target families lower their own way (``families``:
#: NVIDIA's mma.sync loop, loads and cp.async copies).
SHARED = {"__init__", "base", "ir_utils", "matrix_tiles", "blockwise_gemm", "valu_loop", "split_combine", "families"}


def package_modules() -> set[str]:
    """The modules of the package and its subpackages (a pass in files of its own: ``raise_attention/``)."""
    return {path.stem for path in PASSES_DIR.glob("*.py")} | {path.parent.name for path in PASSES_DIR.glob("*/__init__.py")}


def module_files() -> dict[str, pathlib.Path]:
    """Every source file of the package: ``name`` for a module, ``subpackage/name`` inside a subpackage."""
    files = {path.stem: path for path in PASSES_DIR.glob("*.py")}
    files.update({f"{path.parent.name}/{path.stem}": path for path in PASSES_DIR.glob("*/*.py")})
    return files


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


@pytest.mark.parametrize("module", sorted(module_files()))
def test_no_module_of_the_package_imports_a_pass_module(module):
    """The registry loads passes with importlib; no import statement anywhere in the package names one
    (but the files of a pass's own subpackage import each other)."""
    source = module_files()[module].read_text()
    imported = imported_package_modules(source, package_modules()) & pass_modules() - {module.partition("/")[0]}
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
        for path in [*PASSES_DIR.rglob("*.py"), *(src / "interp").glob("*.py")]
        if path.stem != "ir_utils"
        for name in sorted(top_level_functions(path) & helpers)
    }
    assert not copies, f"copies of helpers of pagedir/passes/ir_utils.py: {sorted(copies)}"


# ----------------------------------------------------------------------------
# Between the folders of pagedir: imports run one way (docs: ARCHITECTURE.md, "Imports run one way").

SRC = pathlib.Path(pagedir.__file__).parent

#: Each folder and top-level module of pagedir, top to bottom: a unit imports only units of lower layers
#: (none of its own layer), at module level or inside a function. The named pipelines sit with the
#: driver, above the passes they are made of; the checks (interp) and the generators (gen) side by side
#: under the tools; ``pagedir`` is the package's own ``__init__`` (it hands out ``make_context``). The
#: last layers are the leaves anything may use: the chip table, the code generator (which reads the chip
#: table and the offset widths), the reference, the diagnostics, the error of the tools. The runtime sits
#: on top: PagedAttention compiles through the tools' compile and runs host arrays on the interpreter
#: (launching alone imports only the plan's evaluator, in backend).
LAYERS = (
    {"frontends"},  # a model exported by another framework, compiled through the tools' Python entry points
    {"runtime"},
    {"cli"},
    {"interp", "gen", "cache"},
    {"pipelines"},
    {"driver"},
    {"passes"},
    {"pagedir"},
    {"context"},
    {"dialect"},
    {"page_sources"},
    {"backend", "pipeline_text", "upstream_passes"},
    {"targets"},
    {"arch", "offset_width", "reference", "diagnostics", "errors"},
    {"variants", "kv_caches"},
)


def units(src: pathlib.Path) -> set[str]:
    """The folders (packages) and top-level modules of the package at ``src``, and ``pagedir`` itself."""
    modules = {path.stem for path in src.glob("*.py") if path.stem != "__init__"}
    folders = {path.name for path in src.iterdir() if (path / "__init__.py").is_file()}
    return modules | folders | {"pagedir"}


def imported_modules(source: str, package: str) -> set[str]:
    """Dotted names ``source`` imports (``package`` is its own package, for relative imports): ``import a.b``,
    ``from a import b`` (as ``a`` and ``a.b``), at any depth, and ``importlib.import_module`` of a string
    or of an f-string's leading text (``f"pagedir.gen.{name}"`` imports from ``pagedir.gen``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            first = node.args[0]
            if name != "import_module":
                continue
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
            elif isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
                found.add(first.values[0].value.rstrip("."))
    return found


def unit_of(module: str, known: set[str]) -> str | None:
    parts = module.split(".")
    if parts[0] != "pagedir":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in known else "pagedir"


def import_graph(src: pathlib.Path) -> dict[str, set[str]]:
    """unit -> the other units it imports, read from every ``.py`` file under ``src`` (the package ``pagedir``)."""
    known = units(src)
    graph: dict[str, set[str]] = {unit: set() for unit in known}
    for path in src.rglob("*.py"):
        parts = ("pagedir", *path.relative_to(src).with_suffix("").parts)
        package = ".".join(parts[:-1])
        if parts[-1] == "__init__":
            parts = parts[:-1]
            package = ".".join(parts)
        unit = unit_of(".".join(parts), known)
        for module in imported_modules(path.read_text(), package):
            target = unit_of(module, known)
            if target is not None and target != unit:
                graph[unit].add(target)
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(unit: str) -> list[str] | None:
        state[unit] = "open"
        stack.append(unit)
        for target in sorted(graph.get(unit, ())):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[unit] = "done"
        return None

    for unit in sorted(graph):
        if unit not in state and (found := visit(unit)):
            return found
    return None


def test_the_graph_reader_sees_every_import_form(tmp_path):
    src = tmp_path / "pagedir"
    for folder in ("passes", "gen", "interp"):
        (src / folder).mkdir(parents=True)
        (src / folder / "__init__.py").write_text("")
    (src / "__init__.py").write_text("")
    (src / "driver.py").write_text("")
    (src / "arch.py").write_text("")
    (src / "passes" / "base.py").write_text(
        "import importlib\nfrom . import ir_utils\n"
        "def later():\n    from pagedir.driver import run\n")
    (src / "interp" / "check.py").write_text(
        "import importlib\nfrom ..arch import get_chip\n"
        "def case(name):\n    return importlib.import_module(f'pagedir.gen.{name}')\n")
    (src / "gen" / "copy.py").write_text("import pagedir.interp.check\n")
    graph = import_graph(src)
    assert graph["passes"] == {"driver"}
    assert graph["interp"] == {"arch", "gen"}
    assert cycle(graph) == ["gen", "interp", "gen"]


def test_every_folder_and_top_level_module_has_a_layer():
    layered = set().union(*LAYERS)
    assert units(SRC) == layered, (
        f"not in LAYERS: {sorted(units(SRC) - layered)}; in LAYERS but gone: {sorted(layered - units(SRC))}")


def test_the_folders_import_one_way():
    """No unit imports one of its own layer or above: every import points down LAYERS, so there is no cycle."""
    graph = import_graph(SRC)
    layer = {unit: index for index, units_ in enumerate(LAYERS) for unit in units_}
    upward = sorted(f"{unit} -> {target}" for unit, targets in graph.items() for target in targets
                    if layer.get(target, -1) <= layer.get(unit, -1))
    assert not upward, f"imports against ARCHITECTURE.md's direction: {upward}"
    assert cycle(graph) is None
