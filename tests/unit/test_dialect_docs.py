"""docs/rock.md is generated from the op declarations and must be regenerated when they change;
the documents name only files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pagedir.dialect.core import render_markdown
from pagedir.dialect.rock import NAMESPACE, OP_DEFS

DOC = Path(__file__).resolve().parents[2] / "docs" / "rock.md"


def test_rock_reference_is_up_to_date():
    expected = render_markdown(NAMESPACE, OP_DEFS)
    assert DOC.read_text() == expected, "docs/rock.md is stale: run `pagedir-opt --show-dialect rock > docs/rock.md`"


def test_reference_documents_every_op_and_operand():
    text = render_markdown(NAMESPACE, OP_DEFS)
    for op in OP_DEFS:
        assert f"## `{op.op_name()}`" in text
        for operand in op.operands:
            assert f"| `{operand.name}` |" in text


# ----------------------------------------------------------------------------
# Every file a document names exists: relative links, and paths into the
# project (docs/, src/, tests/, tools/, benchmarks/, examples/, pagedir/ for
# src/pagedir) or document names (*.md). Names of the user's own files in
# examples (input.mlir, out/...) are not paths into the project.

ROOT = DOC.parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_PROJECT_PATH = re.compile(r"(?<![\w./<-])(?P<path>(?:docs|src|tests|tools|benchmarks|examples|pagedir)/[\w./-]*[\w-])(?![\w<>-])")
_DOCUMENT = re.compile(r"(?<![\w./-])(?P<name>[\w-]+\.md)\b")


def mentioned_files(document: Path) -> list[tuple[str, list[Path]]]:
    """(mention, places it may be) for every file ``document`` names."""
    text = document.read_text()
    found = []
    for match in _LINK.finditer(text):
        target = match["target"].split("#", 1)[0]
        if target and not re.match(r"^[a-z]+:", target):
            found.append((target, [document.parent / target]))
    for match in _PROJECT_PATH.finditer(text):
        path = match["path"]
        found.append((path, [ROOT / "src" / path if path.startswith("pagedir/") else ROOT / path]))
    for match in _DOCUMENT.finditer(text):
        found.append((match["name"], [document.parent / match["name"], ROOT / match["name"]]))
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_name_only_files_that_exist(document):
    missing = sorted({mention for mention, places in mentioned_files(document) if not any(p.exists() for p in places)})
    assert not missing, f"{document.relative_to(ROOT)} names files that are not in the repository: {missing}"


def test_mentions_are_found_in_links_paths_and_document_names(tmp_path):
    (tmp_path / "doc.md").write_text(
        "See [the levels](levels.md#l2), `pagedir/arch.py`, tests/lit/cli and ARCHITECTURE.md; "
        "not input.mlir, out/x.s or [a site](https://mlir.llvm.org)."
    )
    assert {mention for mention, _ in mentioned_files(tmp_path / "doc.md")} == {
        "levels.md", "pagedir/arch.py", "tests/lit/cli", "ARCHITECTURE.md"
    }
