"""The driver: the stage table from L0 to the artefact, running a range of it, the callback, failures, options."""

from __future__ import annotations

import dataclasses

import mlir.ir as ir
import pytest

from pagedir import driver
from pagedir.arch import ChipError
from pagedir.cli.opt import parse_module
from pagedir.context import make_context
from pagedir.driver import CompileOptions, StageError, level_of, run, run_stages, stages
from pagedir.gen import attention, copy_kv
from pagedir.pipelines import KERNEL_PASSES, PIPELINES, KernelPipelineOptions

BACKEND_STEPS = [
    "rock-backend-prepare",
    "rock-backend-dynamic-arguments",
    "convert-vector-to-scf",
    "rock-backend-lower-transfers",
    "rock-backend-lower-math",
    "gpu.module(convert-arith-to-amdgpu{chipset=gfx942})",
    "rock-backend-lower-slices",
    "expand-strided-metadata,lower-affine",
    "rock-backend-narrow-indices",
    "arith-expand,convert-scf-to-cf",
    "gpu.module(convert-amdgpu-to-rocdl{chipset=gfx942},convert-gpu-to-rocdl{chipset=gfx942 index-bitwidth=64 "
    "use-bare-ptr-memref-call-conv=true})",
    "reconcile-unrealized-casts",
    "rock-backend-lds-alias-scopes",
    "rock-backend-check-lowered",
]

BIG_LDS = """func.func @big(%out: memref<4xf32>) attributes {rock.kernel, rock.arch = "gfx942", rock.block_size = 4 : i64} {
  %lds = "rock.alloc"() : () -> memref<200000xi8, #gpu.address_space<workgroup>>
  return
}
"""


def generated(module, argv: list[str]) -> str:
    import argparse

    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return module.generate(parser.parse_args(argv))


COPY_KV = generated(copy_kv, ["--seq-len", "32", "--head-dim", "8", "--block-size", "64", "--seq-lens"])
DECODE = generated(attention, ["--seq-len-k", "64", "--head-dim", "64", "--ragged"])


def test_stages_from_linalg_to_the_code_object_in_order() -> None:
    table = stages(CompileOptions(arch="gfx942", emit="hsaco", want_asm=True), "linalg")
    assert [s.name for s in table] == [*KERNEL_PASSES, *BACKEND_STEPS, "extract-llvm-module", "mlir-translate", "llvm-O3",
                                       "llvm-codegen", "llvm-codegen-obj", "ld.lld"]
    assert [s.level for s in table] == ["L0", "L1", "L2", "L3", "L3", "L3", "L3", "L4", "L5", "L6", *["L7"] * len(BACKEND_STEPS),
                                        "llvm-module", "llvm-ir", "llvm-ir-opt", "asm", "obj", "hsaco"]
    # Each kernel pass and each level after L7 is dumped under its own name; the backend pipeline once, at its end.
    assert [s.dump for s in table if s.dump] == [*KERNEL_PASSES, "llvm-dialect", "llvm-module", "llvm-ir", "llvm-ir-opt",
                                                 "asm"]


def test_the_assembly_is_made_for_an_object_only_when_wanted() -> None:
    names = [s.name for s in stages(CompileOptions(arch="gfx942", emit="obj"), "L7")]
    assert names == ["extract-llvm-module", "mlir-translate", "llvm-O3", "llvm-codegen-obj"]
    names = [s.name for s in stages(CompileOptions(arch="gfx942", emit="llvm-ir", want_asm=True), "L7")]
    assert names == ["extract-llvm-module", "mlir-translate", "llvm-O3", "llvm-codegen"]
    assert [s.name for s in stages(CompileOptions(arch="gfx942", emit="asm", opt_level=1), "L7")][2] == "llvm-O1"


def test_the_named_pipelines_are_ranges_of_the_stage_table() -> None:
    kernel = PIPELINES["rock-kernel-pipeline"].steps(KernelPipelineOptions(arch="gfx942"))
    assert [step.argument for step in kernel] == list(KERNEL_PASSES)
    backend = PIPELINES["rock-backend-pipeline"].steps(PIPELINES["rock-backend-pipeline"].options(arch="gfx942"))
    assert [step if isinstance(step, str) else step.argument for step in backend] == BACKEND_STEPS


def test_start_and_end_levels_select_a_range() -> None:
    options = CompileOptions(arch="gfx942")
    assert [s.name for s in stages(options, "L2", "L6")] == list(KERNEL_PASSES[3:])
    assert [s.name for s in stages(options, "linalg", "L0")] == ["rock-raise-attention"]
    assert [s.name for s in stages(options, "L0", "L1")] == ["rock-attention-to-gridwise"]
    assert [s.name for s in stages(options, "L3", "L5")] == ["rock-threadwise-lowering", "rock-buffer-load"]
    assert [s.name for s in stages(options, "L6", "L7")] == BACKEND_STEPS
    assert stages(options, "L6", "L6") == []
    with pytest.raises(ValueError, match="level L6 comes after L2"):
        stages(options, "L6", "L2")
    # A kernel-pipeline range needs no chip; the backend and the code generator do.
    assert len(stages(CompileOptions(), "linalg", "L6")) == len(KERNEL_PASSES)
    with pytest.raises(ValueError, match="needs arch=<chip>"):
        stages(CompileOptions(), "L0", "L7")
    with pytest.raises(ValueError, match="needs arch=<chip>"):
        stages(CompileOptions(), "L7", "asm")


def test_the_start_level_is_detected_from_the_ir() -> None:
    with make_context():
        module = ir.Module.parse(DECODE).operation
        assert level_of(module) == "L0"
        run(module, CompileOptions(), start="L0", end="L1")
        assert level_of(module) == "L1"
        run(module, CompileOptions(), end="L4")  # continues at rock-gridwise-attention-to-blockwise
        assert level_of(module) == "L2"  # a rock kernel past L2 continues from L2 (later passes leave it alone)
        run(module, CompileOptions(), end="L6")
        assert level_of(module) == "L6"
        run(module, CompileOptions(arch="gfx942"), end="L7")
        assert level_of(module) == "L7"
        assert level_of(ir.Module.parse(COPY_KV).operation) == "L2"


def test_the_callback_sees_every_stage_in_order_with_its_output() -> None:
    calls = []
    with make_context():
        module = ir.Module.parse(COPY_KV).operation
        outputs = run(module, CompileOptions(arch="gfx942"),
                      before_stage=lambda stage: calls.append(("before", stage.name)),
                      on_stage=lambda stage, output, seconds: calls.append(("after", stage.name, output, seconds)))
        expected = [s.name for s in stages(CompileOptions(arch="gfx942"), "L2")]
        assert [call[1] for call in calls] == [name for name in expected for _ in range(2)]
        assert [call[0] for call in calls] == ["before", "after"] * len(expected)
        after = {call[1]: call for call in calls if call[0] == "after"}
        assert all(call[3] >= 0 for call in after.values())
        assert after["rock-to-gpu"][2] is module and outputs["L6"] is module
        assert "gpu.func @copy_kv" in str(module) or "llvm.func @copy_kv" in str(module)
        assert after["extract-llvm-module"][2] == outputs["llvm-module"] and "llvm.func @copy_kv" in outputs["llvm-module"]
        assert "define amdgpu_kernel void @copy_kv" in outputs["llvm-ir-opt"]
        assert after["llvm-codegen"][2] == outputs["asm"] and "buffer_load_dwordx4" in outputs["asm"]


def test_a_failing_stage_names_itself_and_stops_the_run() -> None:
    seen = []
    with make_context():
        module = parse_module(BIG_LDS, "big.mlir")
        with pytest.raises(StageError) as failure:
            run(module, CompileOptions(), end="L6", on_stage=lambda stage, *_: seen.append(stage.name))
    error = failure.value
    assert error.stage.name == "rock-reuse-lds"
    assert seen == ["rock-blockwise-load", "rock-pipeline", "rock-annotate-liveness"]
    message = "'func.func' op @big requires too much LDS memory: 200000 bytes (hardware max for gfx942 is 65536 bytes)"
    assert [(d.severity, d.message, d.file, d.line) for d in error.diags] == [("error", message, "big.mlir", 1)]
    assert str(error) == f"stage rock-reuse-lds failed:\nbig.mlir:1:1: error: {message}"


ZERO_ALLOC = BIG_LDS.replace("200000xi8", "0xi8")


def test_rock_verifier_errors_fail_the_input_before_any_stage_runs() -> None:
    seen = []
    with make_context():
        with pytest.raises(StageError) as failure:
            run(parse_module(ZERO_ALLOC, "zero.mlir"), CompileOptions(), end="L6", before_stage=seen.append)
    assert failure.value.stage is None and seen == []
    assert str(failure.value) == ("the input failed:\nzero.mlir:2:10: error: 'rock.alloc' op the size of rock.alloc should be greater "
                                  "than zero, got 0 bytes for memref<0xi8, #gpu.address_space<workgroup>>")


def test_a_pass_that_does_not_load_is_reported_before_anything_runs(monkeypatch) -> None:
    real = driver.get_pass_class

    def missing(argument: str):
        if argument == "rock-buffer-load":
            raise ImportError("No module named 'pagedir.passes.buffer_load'")
        return real(argument)

    monkeypatch.setattr(driver, "get_pass_class", missing)
    with make_context():
        module = ir.Module.parse(COPY_KV).operation
        before = str(module)
        with pytest.raises(driver.StageUnavailable, match=r"pass 'rock-buffer-load' is not available in this installation "
                                                         r"\(ImportError: No module named"):
            run(module, CompileOptions(), end="L6")
        assert str(module) == before


def test_options_are_frozen_and_checked() -> None:
    options = CompileOptions(arch="gfx942")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.arch = "gfx950"  # type: ignore[misc]
    assert options == CompileOptions(arch="gfx942") and hash(options) == hash(CompileOptions(arch="gfx942"))
    with pytest.raises(ChipError, match="gfx000"):
        CompileOptions(arch="gfx000")
    with pytest.raises(ValueError, match="index-bitwidth must be 32 or 64, got 16"):
        CompileOptions(index_bitwidth=16)
    with pytest.raises(ValueError, match="unknown emit kind 'exe'"):
        CompileOptions(emit="exe")
    with pytest.raises(ValueError, match="opt-level must be 0, 1, 2 or 3, got 4"):
        CompileOptions(opt_level=4)


def test_each_pass_takes_the_options_its_own_options_have() -> None:
    table = stages(CompileOptions(arch="gfx950", n_per_block=16), "L0", "L6")
    given = {stage.name: dataclasses.asdict(stage.step.options) for stage in table}
    takes_arch = {name for name, values in given.items() if "arch" in values}
    assert takes_arch == {"rock-attention-to-gridwise", "rock-gridwise-attention-to-blockwise", "rock-blockwise-load", "rock-reuse-lds",
                          "rock-threadwise-lowering", "rock-buffer-load", "rock-to-gpu"}
    assert all(given[name]["arch"] == "gfx950" for name in takes_arch)
    assert given["rock-attention-to-gridwise"] == {"arch": "gfx950", "block_size": 0, "m_per_block": 0, "n_per_block": 16,
                                                   "num_splits": -1, "compute_units": 0, "pipeline_depth": 0}
    # Unset options are not given: each kernel's rock.arch decides.
    assert all(not getattr(stage.step.options, "arch", "") for stage in stages(CompileOptions(), "L0", "L6"))
    layouts = {stage.name: dataclasses.asdict(stage.step.options)
               for stage in stages(CompileOptions(lds_swizzle=True, lds_dma=True), "L0", "L6")}
    assert {k: v for k, v in layouts["rock-gridwise-attention-to-blockwise"].items() if k != "arch"} == {
        "lds_swizzle": True, "lds_dma": True}


def test_one_pass_is_a_one_stage_run() -> None:
    with make_context():
        module = ir.Module.parse(COPY_KV).operation
        outputs = run_stages(module, [driver.pass_stage("rock-blockwise-load")])
        assert outputs == {"L3": module}
        assert "rock.threadwise_read_into" in str(module)
        with pytest.raises(driver.OptionError, match="no pagedir pass named 'rock-nothing'"):
            driver.pass_stage("rock-nothing")
