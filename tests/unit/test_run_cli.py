"""pagedir-run in-process: runs, checks, errors, and bugs planted in a lowered kernel that --check must catch.

The planted bugs are made in copy-kv lowered through rock-kernel-pipeline (L6): a
shifted in-page offset, the barrier after the page-pointer stage removed, the
``ptr != 0`` validity removed. Each must fail the check with exit code 1 and a
message naming what went wrong: the argument and element, the racing ops, the load.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import mlir.ir as ir
import numpy as np
import pytest
from mlir.dialects import arith
from mlir.passmanager import PassManager

from pagedir import driver
from pagedir.targets.cdna import BUFFER_FLAGS as CDNA_BUFFER_FLAGS
from pagedir.targets.rdna import BUFFER_FLAGS as RDNA_BUFFER_FLAGS
from pagedir.cli import gen, opt, run
from pagedir.context import make_context
from pagedir.passes import add_pass
from pagedir.passes.ir_utils import find_ops

#: Ragged sequences: with seed 3 some pages of this cache are null pointers.
COPY_KV = ["copy-kv", "--batch", "3", "--num-heads-kv", "2", "--seq-len", "64", "--head-dim", "16",
           "--page-size", "16", "--seq-lens", "--dtype", "f16"]
SEED = "3"


@pytest.fixture(scope="module")
def lowered_copy_kv(tmp_path_factory) -> str:
    """copy-kv through rock-kernel-pipeline, as text (each test plants its bug in a fresh parse)."""
    directory = tmp_path_factory.mktemp("copy_kv")
    assert gen.main([*COPY_KV, "-o", str(directory / "l2.mlir")]) == 0
    assert opt.main([str(directory / "l2.mlir"), "--rock-kernel-pipeline", "-o", str(directory / "l6.mlir")]) == 0
    return (directory / "l6.mlir").read_text()


@pytest.fixture(scope="module")
def lowered_copy_kv_token_pages(tmp_path_factory) -> str:
    """copy-kv with 1-token pages through rock-kernel-pipeline: a wave reads several pages per row, so the
    page pointers are staged in LDS (PagePtrLoad and its barrier) rather than read by each wave."""
    directory = tmp_path_factory.mktemp("copy_kv_token_pages")
    argv = [*COPY_KV[: COPY_KV.index("--page-size") + 1], "1", *COPY_KV[COPY_KV.index("--page-size") + 2 :]]
    assert gen.main([*argv, "-o", str(directory / "l2.mlir")]) == 0
    assert opt.main([str(directory / "l2.mlir"), "--rock-kernel-pipeline", "-o", str(directory / "l6.mlir")]) == 0
    return (directory / "l6.mlir").read_text()


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    status = run.main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out, captured.err


def plant(text: str, path: Path, edit) -> Path:
    """Parse ``text``, apply ``edit(module)`` and write the result: error locations are lines of ``path``."""
    with make_context():
        module = ir.Module.parse(text)
        edit(module.operation)
        path.write_text(str(module))
    return path


def line_of(path: Path, where: str) -> str:
    """The source line at ``file:line:col``."""
    line = int(where.split(":")[-2])
    return path.read_text().splitlines()[line - 1]


def test_unplanted_kernel_passes(lowered_copy_kv, tmp_path, capsys) -> None:
    path = plant(lowered_copy_kv, tmp_path / "clean.mlir", lambda module: None)
    status, out, _ = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 0
    assert "@copy_kv: PASS (levels L6, seed 3)" in out
    assert "L6 as written: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS" in out


def test_shifted_page_offset_fails_naming_the_output_element(lowered_copy_kv, tmp_path, capsys) -> None:
    def shift_offsets(module: ir.Operation) -> None:
        # Every buffer load reads 16 bytes further into its page.
        for load in find_ops(module, "rocdl.raw.ptr.buffer.load"):
            offset = load.operands[1]
            with ir.InsertionPoint(load), load.location:
                sixteen = arith.ConstantOp(offset.type, 16)
                load.operands[1] = arith.AddIOp(offset, sixteen.result).result

    path = plant(lowered_copy_kv, tmp_path / "offset.mlir", shift_offsets)
    status, out, _ = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 1
    assert "@copy_kv: FAIL" in out
    assert re.search(r"L6 as written: max abs error [0-9.e+-]+ > abs tolerance 0.02 \(max rel error [0-9.e+-]+, not checked\): FAIL", out)
    assert re.search(r"argument 2 \(memref<3x2x64x16xf16>\): .* elements differ by more than 0.02, worst at \[\d+, \d+, \d+, \d+\]", out)


def test_missing_barrier_after_page_pointers_is_a_race_between_the_store_and_the_load(lowered_copy_kv_token_pages, tmp_path,
                                                                                      capsys) -> None:
    def drop_barrier(module: ir.Operation) -> None:
        (stage,) = [op for op in find_ops(module, "scf.execute_region")
                    if "rock.stage" in op.attributes and ir.StringAttr(op.attributes["rock.stage"]).value == "PagePtrLoad"]
        (barrier,) = find_ops(stage, "gpu.barrier")
        barrier.erase()

    path = plant(lowered_copy_kv_token_pages, tmp_path / "race.mlir", drop_barrier)
    status, out, err = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 1
    match = re.search(r"^(\S+:\d+:\d+): error: LDS race in workgroup \d+: memref.load in thread \d+ reads byte \d+ of "
                      r"workgroup attribution 0 .* that thread 0 wrote with memref.store at (\S+:\d+:\d+) since the last barrier",
                      err, re.M)
    assert match, err
    assert "memref.load" in line_of(path, match[1])
    assert "memref.store" in line_of(path, match[2])
    assert f"L6 as written: FAIL: interpreter error at {match[1]}" in out


def test_missing_null_page_guard_reads_through_the_null_pointer(lowered_copy_kv, tmp_path, capsys) -> None:
    def drop_guard(module: ir.Operation) -> None:
        # The validity "page pointer != 0" becomes true.
        (guard,) = [op for op in find_ops(module, "arith.cmpi")
                    if ir.IntegerAttr(op.attributes["predicate"]).value == 1 and str(op.operands[0].type) == "i64"]
        with ir.InsertionPoint(guard), guard.location:
            true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1)
        guard.results[0].replace_all_uses_with(true.result)
        guard.erase()

    path = plant(lowered_copy_kv, tmp_path / "null.mlir", drop_guard)
    status, out, err = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 1
    match = re.search(r"^(\S+:\d+:\d+): error: rocdl.raw.ptr.buffer.load reads unmapped device address 0x[0-9a-f]+ "
                      r"\(\d+ bytes\): a null pointer$", err, re.M)
    assert match, err
    assert "rocdl.raw.ptr.buffer.load" in line_of(path, match[1])
    assert "@copy_kv: FAIL (levels L6, seed 3)" in out


def test_check_lowers_and_compares_both_levels(tmp_path, capsys) -> None:
    source = tmp_path / "copy_kv.mlir"
    assert gen.main([*COPY_KV, "--layout", "v", "--arch", "gfx950", "-o", str(source)]) == 0
    status, out, _ = run_cli(capsys, "--check", str(source), "--seed", SEED, "--arch", "gfx950")
    assert status == 0
    assert out.splitlines() == [
        "@copy_kv: PASS (levels L2 -> L6, seed 3)",
        "  L2 as written: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS",
        "  L6 after rock-kernel-pipeline: max abs error 0 <= abs tolerance 0.02 (max rel error 0, not checked): PASS",
    ]


def test_a_pipeline_pass_that_does_not_load_is_a_clear_error(tmp_path, capsys, monkeypatch) -> None:
    source = tmp_path / "copy_kv.mlir"
    assert gen.main([*COPY_KV, "-o", str(source)]) == 0
    real = driver.get_pass_class  # the driver builds rock-kernel-pipeline's stages

    def missing(argument: str):
        if argument == "rock-threadwise-lowering":
            raise ImportError("No module named 'pagedir.passes.threadwise_lowering'")
        return real(argument)

    monkeypatch.setattr(driver, "get_pass_class", missing)
    status, out, err = run_cli(capsys, "--check", str(source))
    assert status == 1
    assert "pagedir-run: error: cannot lower with rock-kernel-pipeline: pass 'rock-threadwise-lowering' is not available" in err
    assert out == ""
    # The functions as written can still be checked.
    status, out, _ = run_cli(capsys, "--check", str(source), "--no-lower")
    assert status == 0
    assert "@copy_kv: PASS (levels L2, seed 0)" in out


def test_a_failing_pass_prints_its_located_error(tmp_path, capsys) -> None:
    source = tmp_path / "big.mlir"
    source.write_text("""func.func @big(%out: memref<4xf32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 4 : i64} {
  %lds = "rock.alloc"() : () -> memref<200000xi8, #gpu.address_space<workgroup>>
  return
}
""")
    status, out, err = run_cli(capsys, "--check", str(source))
    assert status == 1
    assert err.splitlines() == [
        f"{source}:1:1: error: 'func.func' op @big requires too much LDS memory: 200000 bytes (hardware max for gfx942 is 65536 bytes)",
        "pagedir-run: note: rock-kernel-pipeline stopped at rock-reuse-lds",
    ]
    assert out == ""


def test_plain_run_of_a_gpu_kernel_writes_every_argument(lowered_copy_kv, tmp_path, capsys) -> None:
    path = plant(lowered_copy_kv, tmp_path / "l6.mlir", lambda module: None)
    status, out, _ = run_cli(capsys, str(path), "--entry", "copy_kv", "--seed", SEED, "--outputs", str(tmp_path / "out"))
    assert status == 0
    assert out.splitlines()[0] == "@copy_kv: 24 workgroups x 256 threads, random inputs, seed 3"
    assert "  arg2 memref<3x2x64x16xf16>: float16 [3, 2, 64, 16] min " in out
    with np.load(tmp_path / "out") as outputs:  # the name as given, no .npz appended
        assert outputs.files == ["arg0", "arg1", "arg2"]
        lens = outputs["arg1"]
        past_the_end = np.arange(64)[None, :] >= lens[:, None]
        assert not outputs["arg2"].transpose(0, 2, 1, 3)[past_the_end].any()  # zeros past seq_lens


def test_an_internal_error_is_exit_code_2(tmp_path, capsys, monkeypatch) -> None:
    source = tmp_path / "copy_kv.mlir"
    assert gen.main([*COPY_KV, "-o", str(source)]) == 0

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(run, "run_case", broken)
    status, _, err = run_cli(capsys, str(source), "--entry", "copy_kv")
    assert status == 2
    assert err.strip() == "pagedir-run: internal error: RuntimeError: boom"
    monkeypatch.setenv("PAGEDIR_TRACEBACK", "1")
    assert run.main([str(source), "--entry", "copy_kv"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_usage_errors_are_exit_code_1(capsys) -> None:
    status, _, err = run_cli(capsys, "--entry")
    assert status == 1
    assert err.strip() == "pagedir-run: error: argument --entry: expected one argument"
    assert run.main(["--help"]) == 0
    assert "--inputs IN.npz" in capsys.readouterr().out


# ----------------------------------------------------------------------------
# Wrong descriptors: the interpreter reads what the hardware would, so --check fails


def set_descriptor_operand(index: int, value_of) -> callable:
    """An edit replacing operand ``index`` of every rocdl.make.buffer.rsrc by a constant ``value_of(old constant)``."""

    def edit(module: ir.Operation) -> None:
        for rsrc in find_ops(module, "rocdl.make.buffer.rsrc"):
            old = rsrc.operands[index]
            constant = ir.IntegerAttr(old.owner.attributes["value"]).value
            with ir.InsertionPoint(rsrc), rsrc.location:
                rsrc.operands[index] = arith.ConstantOp(old.type, value_of(constant)).result

    return edit


def test_rdna_flags_on_a_cdna_kernel_fail_execution(lowered_copy_kv, tmp_path, capsys) -> None:
    path = plant(lowered_copy_kv, tmp_path / "flags.mlir", set_descriptor_operand(3, lambda _: RDNA_BUFFER_FLAGS))
    status, out, err = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 1
    assert re.search(r"^\S+:\d+:\d+: error: rocdl.raw.ptr.buffer.load: descriptor flags 0x31027000 set bits reserved on CDNA",
                     err, re.M), err
    assert "@copy_kv: FAIL (levels L6, seed 3)" in out


def test_cdna_flags_on_an_rdna_kernel_read_zeros_and_fail_the_comparison(tmp_path, capsys) -> None:
    # On gfx1100 CDNA's flags select OOB_SELECT 0, which checks offsets against the stride (0): every load reads 0.
    source = tmp_path / "l2.mlir"
    assert gen.main([*COPY_KV, "--arch", "gfx1100", "-o", str(source)]) == 0
    assert opt.main([str(source), "--rock-kernel-pipeline", "-o", str(tmp_path / "l6.mlir")]) == 0
    path = plant((tmp_path / "l6.mlir").read_text(), tmp_path / "flags.mlir", set_descriptor_operand(3, lambda _: CDNA_BUFFER_FLAGS))
    status, out, _ = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 1
    assert re.search(r"argument 2 \(memref<3x2x64x16xf16>\): max abs error [0-9.e+-]+ > abs tolerance 0.02 .* "
                     r"elements differ by more than 0.02", out), out


def test_num_records_of_half_a_page_fails_the_comparison(lowered_copy_kv, tmp_path, capsys) -> None:
    path = plant(lowered_copy_kv, tmp_path / "records.mlir", set_descriptor_operand(2, lambda records: records // 2))
    status, out, _ = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 1
    assert re.search(r"argument 2 \(memref<3x2x64x16xf16>\): .* elements differ by more than 0.02", out), out


def test_the_offset_passed_as_soffset_escapes_the_range_check(lowered_copy_kv, tmp_path, capsys) -> None:
    # soffset takes no part in CDNA's range check: an invalid lane's offset (num_records) moved there is
    # no longer out of range, and the lane reads through its null page pointer.
    def offset_to_soffset(module: ir.Operation) -> None:
        for load in find_ops(module, "rocdl.raw.ptr.buffer.load"):
            offset = load.operands[1]
            with ir.InsertionPoint(load), load.location:
                load.operands[2] = offset
                load.operands[1] = arith.ConstantOp(offset.type, 0).result

    path = plant(lowered_copy_kv, tmp_path / "soffset.mlir", offset_to_soffset)
    status, out, err = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 1
    assert re.search(r"^\S+:\d+:\d+: error: rocdl.raw.ptr.buffer.load reads unmapped device address 0x[0-9a-f]+ "
                     r"\(4 bytes\): below every allocation", err, re.M), err
    assert "@copy_kv: FAIL (levels L6, seed 3)" in out


def test_check_pass_catches_a_pass_that_builds_rdna_descriptors_for_a_cdna_chip(monkeypatch) -> None:
    from pagedir.interp.check import CheckFailure, check_pass
    from pagedir.passes import buffer_load

    real = buffer_load.make_descriptor
    monkeypatch.setattr(buffer_load, "make_descriptor", lambda pointer, records, flags: real(pointer, records, RDNA_BUFFER_FLAGS))
    args = ["copy-kv", "--batch", "2", "--num-heads-kv", "1", "--seq-len", "32", "--head-dim", "16", "--page-size", "16"]
    with make_context():
        module = ir.Module.parse(gen_text(args))
        pm = PassManager("builtin.module")
        for argument in ("rock-blockwise-load", "rock-threadwise-lowering"):
            add_pass(pm, argument)
        pm.run(module.operation)
        with pytest.raises(CheckFailure, match=r"(?s)rock-buffer-load changed what the code computes .* descriptor flags "
                                               r"0x31027000 set bits reserved on CDNA"):
            check_pass(module, "rock-buffer-load")


def gen_text(args: list[str]) -> str:
    from pagedir.gen import copy_kv

    parser = argparse.ArgumentParser()
    copy_kv.add_arguments(parser)
    return copy_kv.generate(parser.parse_args(args[1:]))


# ----------------------------------------------------------------------------
# Sampling: ragged prefill with sequences shorter than the queries


def test_check_ragged_prefill_with_fewer_keys_than_queries_passes(tmp_path, capsys) -> None:
    source = tmp_path / "prefill.mlir"
    assert gen.main(["attention", "--batch", "2", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-q", "16",
                     "--seq-len-k", "8", "--head-dim", "16", "--page-size", "4", "--ragged", "-o", str(source)]) == 0
    status, out, _ = run_cli(capsys, "--check", str(source))
    assert status == 0, out
    assert "@paged_attention: PASS (levels L0 -> L6, seed 0)" in out


@pytest.mark.parametrize("causal", [False, True])
def test_check_draws_a_sequence_shorter_than_the_queries(causal: bool) -> None:
    from pagedir.gen import attention
    from pagedir.interp import Device
    from pagedir.interp.check import functions, make_case

    parser = argparse.ArgumentParser()
    attention.add_arguments(parser)
    args = parser.parse_args(["--batch", "3", "--seq-len-q", "8", "--seq-len-k", "64", "--ragged"] + (["--causal"] if causal else []))
    with make_context():
        module = ir.Module.parse(attention.generate(args))
        (func,) = functions(module.operation)
        for seed in range(3):
            seq_lens = make_case(func, np.random.default_rng(seed), Device()).args[3]
            assert seq_lens.max() == 64 and 1 <= seq_lens.min() < 8, seq_lens


def test_check_kv_tiles_starting_inside_pages(tmp_path, capsys) -> None:
    # Pages of 48 tokens and the default KV tiles of 32 (or 64) tokens: tiles start inside pages.
    source = tmp_path / "midpage.mlir"
    assert gen.main(["attention", "--batch", "3", "--num-heads-q", "4", "--num-heads-kv", "2", "--seq-len-q", "4",
                     "--seq-len-k", "96", "--head-dim", "32", "--page-size", "48", "--ragged", "--causal",
                     "-o", str(source)]) == 0
    status, out, _ = run_cli(capsys, "--check", str(source), "--seed", "1")
    assert status == 0, out
    assert "@paged_attention: PASS (levels L0 -> L6, seed 1)" in out


def test_summary_line_reports_the_output_not_the_exact_seq_lens(tmp_path, capsys) -> None:
    """A ragged linalg payload compares every argument, seq_lens (i32, exactly) and out (f16): the line shows out's error."""
    path = tmp_path / "ragged.mlir"
    assert gen.main(["linalg-attention", "--batch", "2", "--num-heads-q", "2", "--num-heads-kv", "1", "--seq-len-k", "32",
                     "--head-dim", "16", "--page-size", "16", "--seq-lens", "-o", str(path)]) == 0
    status, out, _ = run_cli(capsys, "--check", str(path), "--seed", SEED)
    assert status == 0
    assert re.search(r"L6 after rock-kernel-pipeline: max abs error [0-9.e+-]+ <= abs tolerance 0.02 ", out), out
    assert "abs tolerance 0 " not in out


def test_verifier_runs_outside_an_entered_context() -> None:
    """A pass applied from Python to a module whose context is not entered verifies rock.attention with seq_lens
    (its verifier builds an i32 type) instead of raising."""
    from pagedir.gen import attention
    from pagedir.interp.check import apply_pass

    parser = argparse.ArgumentParser()
    attention.add_arguments(parser)
    text = attention.generate(parser.parse_args(["--seq-lens"]))
    with make_context():
        module = ir.Module.parse(text)
    lowered = apply_pass(module.operation, "rock-attention-to-gridwise")
    assert find_ops(lowered.operation, "rock.gridwise_attention_accel")
