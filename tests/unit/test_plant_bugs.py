"""tools/plant_bugs.py, the test of the tests: its plants still apply, and a few run here.

Every plant's text must occur exactly once in today's source (a refactor that
moves the code must update the plant, not silently plant nothing). Three plants
whose catchers take about a second each run in full: planted, their catchers
fail for the planted reason; unplanted, the same catchers pass. ``make plant``
runs all of them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "plant_bugs.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("plant_bugs", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


plant_bugs = load_tool()

#: Plants whose catchers are quick: masked keys, LDS barriers, buffer loads.
FAST = ("attention-causal-v-weighted-by-zero", "reuse-lds-barriers-in-program-order", "buffer-load-offset-as-soffset")


@pytest.mark.parametrize("name", sorted(plant_bugs.PLANTS))
def test_every_plant_finds_its_text_once_in_the_source(name: str) -> None:
    for edit in plant_bugs.PLANTS[name].edits:
        source = (plant_bugs.REPO / "src" / "pagedir" / edit.path).read_text()
        assert source.count(edit.old) == 1, f"{name}: src/pagedir/{edit.path} no longer holds the planted text once"


@pytest.mark.parametrize("old", ["no such text in the file", "import "])  # absent, and many times
def test_a_plant_whose_text_is_not_there_once_is_an_error(tmp_path, old: str) -> None:
    plant = plant_bugs.Plant("moved", "", (plant_bugs.Edit("reference.py", old, "x"),), ())
    with pytest.raises(plant_bugs.PlantError, match=r"src/pagedir/reference.py: the text to replace occurs \d+ times, "
                                                      r"expected once"):
        plant_bugs.make_scratch(tmp_path / "scratch", plant)


def test_a_plant_that_does_not_compile_is_an_error(tmp_path) -> None:
    plant = plant_bugs.Plant("broken", "", (plant_bugs.Edit("reference.py", "def attention(", "def attention(("),), ())
    with pytest.raises(plant_bugs.PlantError, match="the planted text does not compile"):
        plant_bugs.make_scratch(tmp_path / "scratch", plant)


@pytest.mark.parametrize("name", FAST)
def test_planted_bug_is_caught(tmp_path, name: str) -> None:
    plant = plant_bugs.PLANTS[name]
    scratch = plant_bugs.make_scratch(tmp_path / name, plant)
    planted = (scratch / "src" / "pagedir" / plant.edits[0].path).read_text()
    assert plant.edits[0].new in planted and plant.edits[0].old not in planted
    for catcher in plant.catchers:
        outcome = plant_bugs.run_catcher(catcher, scratch)
        assert outcome.status == "fail", f"{catcher.target}: {outcome.summary}\n{outcome.output}"


def test_catchers_pass_on_the_unplanted_copy(tmp_path) -> None:
    scratch = plant_bugs.make_scratch(tmp_path / "clean", None)
    plant_bugs.checks_scratch(scratch)
    for name in FAST:
        for catcher in plant_bugs.PLANTS[name].catchers:
            outcome = plant_bugs.run_catcher(catcher, scratch)
            assert outcome.status == "pass", f"{catcher.target}: {outcome.summary}\n{outcome.output}"
