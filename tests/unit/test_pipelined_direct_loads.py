"""rock-pipeline on direct-to-LDS tiles (cp.async on NVIDIA, buffer_load ... lds on gfx950): each tile's copies in
flight during the other tile's math, checked by execution (the interpreter reports a read of a tile whose copies are not waited for,
or a copy into a tile another warp still reads, as an LDS race) and in the hot loop of the PTX or the assembly."""

from __future__ import annotations

import re

import pytest

from pagedir.backend.loops import hot_loop
from pagedir.backend.ptx_report import loop_lines, ptx_bodies
from pagedir.cli import gen as gen_cli
from pagedir.cli import run as run_cli
from pagedir.cli.compile import compile_source

SMALL = ["--head-dim", "64", "--page-size", "16", "--pipeline-depth", "2"]
DECODE = ["--batch", "2", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-q", "1", "--seq-len-k", "96",
          "--seq-lens", *SMALL]
PREFILL = ["--batch", "1", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-q", "40", "--seq-len-k", "72",
           "--causal", "--seq-lens", *SMALL]


def generate(tmp_path, argv: list[str], arch: str) -> str:
    path = tmp_path / "k.mlir"
    assert gen_cli.main(["attention", *argv, "--arch", arch, "--lds-dma", "-o", str(path)]) == 0
    return str(path)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("form", ["pointers", "blocks", "csr"])
@pytest.mark.parametrize(("phase", "dtype"), [("decode", "f16"), ("decode", "bf16"), ("prefill", "f16"),
                                              ("prefill", "bf16")])
def test_pipelined_cp_async_tiles_give_the_reference_result(tmp_path, capsys, phase, dtype, form, dynamic) -> None:
    argv = [*(DECODE if phase == "decode" else PREFILL), "--dtype", dtype, "--page-table", form]
    if form == "csr":  # the table carries the lengths
        argv.remove("--seq-lens")
    path = generate(tmp_path, [*argv, *(["--dynamic"] if dynamic else [])], "sm_90")
    status = run_cli.main([path, "--check"])
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err
    assert "L6 after rock-kernel-pipeline" in captured.out and "FAIL" not in captured.out


def loop_events(ptx: str) -> list[str]:
    """The hot loop's copies, waits and tensor-core products in order (a cycle), runs of one kind taken once."""
    (_, body), = ptx_bodies(ptx).values()
    lines = loop_lines(body)
    found = hot_loop(lines)
    assert found is not None
    events: list[str] = []
    for index in found[1]:
        text = lines[index]
        kind = ("wait" if text.startswith("cp.async.wait_group") else "copy" if re.match(r"cp\.async\.cg", text)
                else "mma" if text.startswith("mma.sync") else None)
        if kind and (not events or events[-1] != kind):
            events.append(kind)
    if len(events) > 1 and events[0] == events[-1]:  # one run across the back edge
        events.pop()
    return events


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_each_tiles_copies_are_in_flight_during_the_other_tiles_math(tmp_path, phase) -> None:
    """After each wait in the loop the other tile's copies are issued before the next product: K's copies of
    tile t + 1 overlap P V of tile t, V's of tile t overlap Q K^T (unpipelined, the copies of a tile were
    waited for right after their issue)."""
    argv = [*(DECODE if phase == "decode" else PREFILL), "--dtype", "f16"]
    text = open(generate(tmp_path, argv, "sm_90")).read()
    events = loop_events(compile_source(text, emit="ptx", cache=False).artefact)
    assert events.count("wait") == 2 and events.count("copy") == 2, events
    rotated = events[events.index("wait"):] + events[:events.index("wait")]
    assert rotated == ["wait", "copy", "mma", "wait", "copy", "mma"], events


def test_depth_1_keeps_the_copies_and_their_wait_together(tmp_path) -> None:
    argv = [*DECODE, "--dtype", "f16", "--pipeline-depth", "1"]
    text = open(generate(tmp_path, argv, "sm_90")).read()
    events = loop_events(compile_source(text, emit="ptx", cache=False).artefact)
    rotated = events[events.index("copy"):] + events[:events.index("copy")]
    assert rotated == ["copy", "wait", "mma", "copy", "wait", "mma"], events


@pytest.mark.parametrize(("n_per_block", "pipelined"), [(64, True), (512, False)])
def test_tiles_that_do_not_fit_the_lds_together_stay_unpipelined(tmp_path, capsys, n_per_block, pipelined) -> None:
    """K and V no longer share LDS bytes when pipelined: 2 x 512 x 128 f16 (256 KiB) exceeds sm_80's 163 KiB
    per block, so that loop keeps the copies and their wait together, and a remark says why."""
    from pagedir.cli import opt as opt_cli

    argv = ["--batch", "1", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-q", "1", "--seq-len-k", "1024",
            "--head-dim", "128", "--page-size", "16", "--dtype", "f16", "--pipeline-depth", "2"]
    source, target = generate(tmp_path, argv, "sm_80"), tmp_path / "out.mlir"
    capsys.readouterr()
    assert opt_cli.main([source, f"--rock-attention-to-gridwise=n-per-block={n_per_block}",
                         "--rock-gridwise-attention-to-blockwise", "--rock-blockwise-load", "--rock-pipeline",
                         "-o", str(target)]) == 0
    err = capsys.readouterr().err
    assert ('rock.stage = "LDSWait"' in target.read_text()) == pipelined
    assert ("remark: direct-to-LDS K/V tiles not pipelined: both tiles need 262672 bytes of LDS at once, more than "
            "the 166912 of sm_80" in err) == (not pipelined), err


# CDNA: buffer_load ... lds, waited for with s_waitcnt vmcnt; LLVM adds waits of its own before LDS reads unless
# the tiles' alias scopes (rock-backend-lds-alias-scopes) prove a read apart from the other tile's copies.
AMD_DECODE = ["--batch", "2", "--num-heads-q", "8", "--num-heads-kv", "2", "--seq-len-q", "1", "--seq-len-k", "256",
              "--head-dim", "128", "--page-size", "16", "--dtype", "f16", "--seq-lens", "--pipeline-depth", "2"]


def amdgcn_loop_events(asm: str) -> list[str]:
    """The hot loop's direct-to-LDS copies, vector-memory waits and matrix products in order, from a wait on."""
    from pagedir.backend.report import kernel_bodies

    body = kernel_bodies(asm, ["paged_attention"])["paged_attention"]
    found = hot_loop(body)
    assert found is not None
    events: list[str] = []
    for index in found[1]:
        text = body[index].strip()
        kind = ("wait" if re.match(r"s_waitcnt\b.*\bvmcnt", text)
                else "copy" if re.match(r"buffer_load\w* .*\blds\b", text)
                else "mma" if text.startswith("v_mfma") else None)
        if kind:
            events.append(kind)
    start = events.index("wait")
    return events[start:] + events[:start]


def test_gfx950_tiles_copies_are_in_flight_during_the_other_tiles_products(tmp_path) -> None:
    """As on NVIDIA, each tile's copies are followed by matrix products (the other tile's) before the next wait on
    vector memory, and the loop waits only where the kernel does: for each tile's copies and for each tile's page
    pointers. Without the alias scopes LLVM waited vmcnt(0) at the first LDS read after the copies, or at an LDS
    barrier (its release fence): a fifth wait."""
    text = open(generate(tmp_path, AMD_DECODE, "gfx950")).read()
    events = amdgcn_loop_events(compile_source(text, arch="gfx950", cache=False).artefact)
    assert events.count("wait") == 4, events
    segments = [segment.split() for segment in " ".join(events).split("wait") if "copy" in segment]
    assert len(segments) == 2, events  # K's copies and V's
    assert all("mma" in segment[segment.index("copy"):] for segment in segments), events


@pytest.mark.parametrize("swizzle", [[], ["--lds-swizzle"]], ids=["row-major", "swizzled"])
def test_pipelined_buffer_lds_tiles_give_the_reference_result(tmp_path, capsys, swizzle) -> None:
    path = generate(tmp_path, [*AMD_DECODE, *swizzle], "gfx950")
    capsys.readouterr()
    status = run_cli.main([path, "--check"])
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err
    assert "L6 after rock-kernel-pipeline" in captured.out and "FAIL" not in captured.out


@pytest.mark.parametrize(("arch", "pipelined"), [("gfx950", True), ("gfx942", False), ("gfx90a", False)])
def test_only_16_byte_copies_are_pipelined_on_cdna(tmp_path, capsys, arch, pipelined) -> None:
    """gfx942's and gfx90a's direct-to-LDS loads take 4 bytes a lane: pipelined, the loop's four times as many
    copies and its registers cost more than the overlap gains (docs/measurements.md), so each tile's copies
    stay with their wait there."""
    from pagedir.cli import opt as opt_cli

    source, target = generate(tmp_path, AMD_DECODE, arch), tmp_path / "out.mlir"
    assert opt_cli.main([source, "--rock-kernel-pipeline", "-o", str(target)]) == 0
    assert ("rock.pipelined" in target.read_text()) == pipelined
    assert ("rocdl.raw.ptr.buffer.load.lds" in target.read_text())
