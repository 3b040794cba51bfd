"""The compile cache: a repeated compile reads the stored artefact back, byte for byte, without
running the pipeline; anything that changes the artefact changes the key; damage, an unwritable
directory or a concurrent writer never makes a compile fail. Every test uses its own cache directory."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pagedir import cache as cache_mod
from pagedir.cache import Cache, Entry, cache_key
from pagedir.cli import compile as compile_cli

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "tests" / "lit" / "backend" / "Inputs" / "paged-load-gfx942.mlir"
SOURCE = [str(KERNEL), "--arch", "gfx942"]


def run_compile(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(
        [sys.executable, "-m", "pagedir.cli.compile", *argv], capture_output=True, text=True, env=env, cwd=ROOT
    )


def entries(cache_dir: Path) -> list[Path]:
    """The entry directories in ``cache_dir`` (temporary ones start with a dot)."""
    if not cache_dir.exists():
        return []
    return sorted(p for shard in cache_dir.iterdir() for p in shard.iterdir())


def options(**changes) -> dict:
    args = argparse.Namespace(
        arch="gfx942", emit="asm", opt_level=3, index_bitwidth=64, report_table=False, report_json=None
    )
    for name, value in changes.items():
        setattr(args, name, value)
    return compile_cli._cache_options(args)


def test_second_compile_is_read_from_the_cache(tmp_path) -> None:
    cache_dir = tmp_path / "cache"
    first = run_compile(*SOURCE, "-o", str(tmp_path / "a.s"), "--report",
                        "--cache-dir", str(cache_dir), "-v")
    assert first.returncode == 0, first.stderr
    assert "cache miss: stored" in first.stderr
    second = run_compile(*SOURCE, "-o", str(tmp_path / "b.s"), "--report",
                         "--cache-dir", str(cache_dir), "-v")
    assert second.returncode == 0, second.stderr
    assert "cache hit" in second.stderr
    assert (tmp_path / "a.s").read_bytes() == (tmp_path / "b.s").read_bytes()
    assert "buffer_load_dwordx4" in (tmp_path / "b.s").read_text()
    # The report comes back too, the same table as the compile printed.
    table = first.stderr.split("stored", 1)[1].split("\n", 1)[1]
    assert table.startswith("kernel paged_load (gfx942)") and table in second.stderr
    assert len(entries(cache_dir)) == 1


def test_a_hit_runs_no_pipeline_and_imports_no_mlir(tmp_path) -> None:
    cache_dir = tmp_path / "cache"
    assert run_compile(*SOURCE, "--emit=obj", "-o", str(tmp_path / "a.o"), "--cache-dir", str(cache_dir)).returncode == 0
    probe = (
        "import sys\n"
        "from pagedir.cli import compile as c\n"
        "def refuse(*args): raise SystemExit('the pipeline ran')\n"
        "c._compile = refuse\n"
        f"status = c.main([{str(KERNEL)!r}, '--arch', 'gfx942', '--emit=obj', '-o', {str(tmp_path / 'b.o')!r}, '--cache-dir', {str(cache_dir)!r}])\n"
        "print(status, sorted({m.split('.')[0] for m in sys.modules} & {'mlir', 'llvmlite', 'numpy'}),\n"
        "      'pagedir.driver' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert done.stdout.strip() == "0 [] False", done.stdout + done.stderr
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "b.o").read_bytes()
    assert (tmp_path / "b.o").read_bytes()[:4] == b"\x7fELF"


def test_compile_source_in_process(tmp_path, monkeypatch) -> None:
    text = KERNEL.read_text()
    first = compile_cli.compile_source(text, arch="gfx942", report=True, cache_dir=str(tmp_path))
    assert not first.hit and "buffer_load_dwordx4" in first.artefact
    assert json.loads(first.report_json)["kernels"][0]["name"] == "paged_load"
    monkeypatch.setattr(compile_cli, "_compile", lambda *args: pytest.fail("the pipeline ran on a cache hit"))
    second = compile_cli.compile_source(text, arch="gfx942", report=True, cache_dir=str(tmp_path))
    assert second.hit
    assert (second.artefact, second.report_table, second.report_json) == (
        first.artefact, first.report_table, first.report_json
    )


def test_what_changes_the_artefact_changes_the_key() -> None:
    source = KERNEL.read_bytes()
    base = cache_key(source, options())
    others = [
        cache_key(source + b"\n// another input\n", options()),
        cache_key(source, options(arch="gfx90a")),
        cache_key(source, options(arch=None)),
        cache_key(source, options(arch="amdgcn-amd-amdhsa--gfx942:xnack-")),
        cache_key(source, options(emit="obj")),
        cache_key(source, options(opt_level=2)),
        cache_key(source, options(index_bitwidth=32)),
        cache_key(source, options(report_table=True)),
    ]
    assert len({base, *others}) == len(others) + 1
    # Spellings of the same target are one key.
    assert cache_key(source, options(arch="amdgcn-amd-amdhsa:gfx942")) == base


def test_other_tool_versions_or_sources_change_the_key(monkeypatch) -> None:
    source = KERNEL.read_bytes()
    base = cache_key(source, options())
    versions = dict(cache_mod.tool_versions())
    assert set(versions) == {"pagedir", "pagedir-source", *cache_mod.TOOL_DISTRIBUTIONS}
    assert versions["pagedir-source"] == cache_mod.source_hash()
    for name in versions:
        monkeypatch.setattr(cache_mod, "_versions", {**versions, name: "other"})
        assert cache_key(source, options()) != base, name


def test_no_cache_neither_reads_nor_writes(tmp_path) -> None:
    cache_dir = tmp_path / "cache"
    argv = [*SOURCE, "-o", str(tmp_path / "a.s"), "--cache-dir", str(cache_dir)]
    assert run_compile(*argv, "--no-cache").returncode == 0
    assert not cache_dir.exists()
    real = (tmp_path / "a.s").read_text()
    # Plant a well-formed entry with another artefact under the compile's key: only a lookup could return it.
    args = compile_cli.build_parser().parse_args(argv)
    key = cache_key(KERNEL.read_bytes(), compile_cli._cache_options(args))
    assert Cache(str(cache_dir)).store(key, Entry("planted\n"))
    assert run_compile(*argv, "--no-cache").returncode == 0
    assert (tmp_path / "a.s").read_text() == real
    assert run_compile(*argv).returncode == 0
    assert (tmp_path / "a.s").read_text() == "planted\n"


@pytest.mark.parametrize("damage", ["truncate artefact", "garbage meta", "meta of another shape", "remove artefact",
                                    "empty directory"])
def test_damaged_entry_is_a_miss_and_is_replaced(tmp_path, damage) -> None:
    cache_dir = tmp_path / "cache"
    argv = [*SOURCE, "-o", str(tmp_path / "a.s"), "--cache-dir", str(cache_dir), "-v"]
    assert run_compile(*argv).returncode == 0
    good = (tmp_path / "a.s").read_bytes()
    [entry] = entries(cache_dir)
    if damage == "truncate artefact":
        (entry / "artefact").write_bytes(good[: len(good) // 2])
    elif damage == "garbage meta":
        (entry / "meta.json").write_text("{not json")
    elif damage == "meta of another shape":  # valid JSON, the file table a list
        meta = json.loads((entry / "meta.json").read_text())
        (entry / "meta.json").write_text(json.dumps({**meta, "files": list(meta["files"])}))
    elif damage == "remove artefact":
        (entry / "artefact").unlink()
    else:
        for file in entry.iterdir():
            file.unlink()
    again = run_compile(*argv)
    assert again.returncode == 0, again.stderr
    assert "cache hit" not in again.stderr and "cache miss: stored" in again.stderr
    assert (tmp_path / "a.s").read_bytes() == good
    third = run_compile(*argv)
    assert "cache hit" in third.stderr and (tmp_path / "a.s").read_bytes() == good


def test_unwritable_cache_dir_still_compiles(tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a directory cannot be made inside a file, even by root
    argv = [*SOURCE, "-o", str(tmp_path / "a.s"), "--cache-dir", str(blocker / "cache")]
    quiet = run_compile(*argv)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert "buffer_load_dwordx4" in (tmp_path / "a.s").read_text()
    verbose = run_compile(*argv, "-v")
    assert verbose.returncode == 0
    assert f"not caching: cannot write to {blocker / 'cache'}" in verbose.stderr


def test_cache_dir_comes_from_the_environment(tmp_path) -> None:
    env_dir = tmp_path / "from-env"
    done = subprocess.run(
        [sys.executable, "-m", "pagedir.cli.compile", *SOURCE, "-o", str(tmp_path / "a.s")],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "src"), PAGEDIR_CACHE_DIR=str(env_dir)),
    )
    assert done.returncode == 0, done.stderr
    assert len(entries(env_dir)) == 1


def test_default_cache_dir(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("PAGEDIR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_mod.default_cache_dir() == str(tmp_path / "pagedir")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_mod.default_cache_dir() == str(tmp_path / ".cache" / "pagedir")


def test_dump_dir_compiles_every_stage_despite_a_cached_entry(tmp_path) -> None:
    cache_dir = tmp_path / "cache"
    argv = [*SOURCE, "-o", str(tmp_path / "a.s"), "--cache-dir", str(cache_dir), "-v"]
    assert run_compile(*argv).returncode == 0
    dumped = run_compile(*argv, "--dump-dir", str(tmp_path / "levels"))
    assert dumped.returncode == 0 and "cache hit" not in dumped.stderr
    assert (tmp_path / "levels" / "paged-load-gfx942.00-input.mlir").exists()
    [asm] = (tmp_path / "levels").glob("*-asm.s")
    assert asm.read_bytes() == (tmp_path / "a.s").read_bytes()


def test_two_processes_storing_one_key(tmp_path) -> None:
    cache_dir = tmp_path / "cache"
    commands = [
        [sys.executable, "-m", "pagedir.cli.compile", *SOURCE, "-o", str(tmp_path / f"{n}.s"), "--report",
         "--cache-dir", str(cache_dir)]
        for n in range(2)
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    processes = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in commands]
    results = [(p.wait(), p.stderr.read().decode()) for p in processes]
    for process in processes:
        process.stdout.close()
        process.stderr.close()
    assert [status for status, _ in results] == [0, 0], results
    assert (tmp_path / "0.s").read_bytes() == (tmp_path / "1.s").read_bytes()
    [entry] = entries(cache_dir)  # one entry, no temporary directory left behind
    assert Cache(str(cache_dir)).load(entry.name).artefact == (tmp_path / "0.s").read_text()


def test_store_when_another_writer_got_there_first(tmp_path) -> None:
    cache = Cache(str(tmp_path))
    key = "ab" * 32
    assert cache.store(key, Entry("first\n"))
    assert cache.store(key, Entry("second\n"))  # a second writer of the key: kept the first, no error
    assert cache.load(key).artefact == "first\n"
    (Path(cache.path(key)) / "artefact").write_text("damaged")
    assert cache.store(key, Entry(b"\x00bytes"))  # a damaged entry is replaced
    assert cache.load(key).artefact == b"\x00bytes"
    assert [p.name for p in entries(tmp_path)] == [key]


def test_another_llvm_mca_changes_the_key_of_a_compile_with_a_report(tmp_path, monkeypatch) -> None:
    # The report's llvm-mca line depends on the tool found: one installed since gives cycles, not "not found".
    source = KERNEL.read_bytes()
    monkeypatch.setenv("LLVM_MCA", str(tmp_path / "missing"))
    none, plain = cache_key(source, options(report_table=True)), cache_key(source, options())
    tool = tmp_path / "llvm-mca"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("LLVM_MCA", str(tool))
    assert cache_key(source, options(report_table=True)) != none
    assert cache_key(source, options()) == plain  # without a report no llvm-mca runs
