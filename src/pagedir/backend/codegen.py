"""LLVM IR -> amdgcn assembly, ELF object and linked code object, with llvmlite (LLVM 22).

llvmlite's target machine only runs the code generator, so the LLVM IR first goes
through LLVM's ``default<O3>`` module pipeline (as clang and rocMLIR do): without it
kernel pointers stay flat (``flat_load``), uniform loads stay in VGPRs and buffer
loads sit in waterfall loops.

The wave size is passed as an explicit target feature (the family's ``codegen_features``:
:mod:`pagedir.targets`) (``+wavefrontsize32`` or
``+wavefrontsize64``) so that the code always matches the chip table and the
kernel's ``rock.wave_size``, whatever LLVM's default for the chip is (LLVM 22
defaults gfx10+ to wave32 and gfx9 to wave64, the same as the table).

A kernel may ask for a number of waves per SIMD (``"amdgpu-waves-per-eu"``, from
``rocdl.waves_per_eu``: backend/kernel_attrs.py); LLVM meets such a request by spilling if
it must. The request is a hint for the scheduler, never worth a spill: when a kernel that
asks spills, every request is dropped and the code generated again
(:func:`settle_occupancy_requests`), so an object and its assembly always agree.

A ``.hsaco`` is the object linked as a shared library by ``ld.lld``: the ``zig ld.lld``
of the ``ziglang`` dependency (LLD 22), or the path in ``PAGEDIR_LD_LLD``
(:mod:`pagedir.backend.linker`).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from functools import cache

import llvmlite.binding as llvm

from pagedir.arch import Chip
from pagedir.backend.linker import linker_command, missing_linker_message
from pagedir.backend.translate import BackendError
from pagedir.targets import family_of


@cache
def _initialize() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def target_machine(chip: Chip, opt_level: int = 3):
    _initialize()
    family = family_of(chip)
    target = llvm.Target.from_triple(family.triple)
    return target.create_target_machine(cpu=chip.name, features=family.codegen_features(chip), opt=opt_level)


def optimize(llvm_ir: str, chip: Chip, opt_level: int = 3):
    """Parse, verify and run the ``default<O{opt_level}>`` pipeline; returns the llvmlite module."""
    machine = target_machine(chip, opt_level)
    try:
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
    except RuntimeError as err:
        raise BackendError(f"invalid LLVM IR from mlir-translate: {err}") from None
    if opt_level > 0:
        builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=opt_level))
        builder.getModulePassManager().run(module, builder)
    return module


def emit_assembly(module, chip: Chip, opt_level: int = 3) -> str:
    return settle_occupancy_requests(module, chip, opt_level)[1]


def emit_object(module, chip: Chip, opt_level: int = 3) -> bytes:
    module, _ = settle_occupancy_requests(module, chip, opt_level)
    return target_machine(chip, opt_level).emit_object(_copy(module))


_WAVES_REQUEST_RE = re.compile(r' ?"amdgpu-waves-per-eu"="[0-9,]+"')


def settle_occupancy_requests(module, chip: Chip, opt_level: int = 3):
    """``(module, assembly)``: ``module`` as given when no kernel asking for waves per SIMD spills,
    else the module without any request (module docstring)."""
    from pagedir.backend.report import kernel_reports

    text = str(module)
    asm = target_machine(chip, opt_level).emit_assembly(_copy(module))
    if not _WAVES_REQUEST_RE.search(text):
        return module, asm
    if not any(r.vgpr_spills or r.sgpr_spills or r.scratch_bytes for r in kernel_reports(asm, chip)):
        return module, asm
    module = llvm.parse_assembly(_WAVES_REQUEST_RE.sub("", text))
    return module, target_machine(chip, opt_level).emit_assembly(_copy(module))


def _copy(module):
    """Code generation rewrites the module it is given (it inserts control-flow intrinsics), and a
    second run over the result aborts in instruction selection: each artefact gets its own copy."""
    return llvm.parse_assembly(str(module))


def assemble_cubin(ptx: str, chip: Chip) -> bytes:
    """The NVIDIA family's code object: ``ptxas`` on the PTX (:mod:`pagedir.backend.ptxas`)."""
    from pagedir.backend.ptxas import PtxasError, assemble

    try:
        return assemble(ptx, chip.name)[0]
    except PtxasError as err:
        raise BackendError(str(err)) from None


def link_hsaco(obj: bytes) -> bytes:
    """Link the relocatable object into a loadable code object (``ld.lld -shared``)."""
    linker = linker_command()
    if linker is None:
        raise BackendError(missing_linker_message())
    with tempfile.TemporaryDirectory(prefix="pagedir-") as work:
        obj_path = os.path.join(work, "kernel.o")
        out_path = os.path.join(work, "kernel.hsaco")
        with open(obj_path, "wb") as handle:
            handle.write(obj)
        try:
            done = subprocess.run([*linker, "-shared", obj_path, "-o", out_path], capture_output=True, text=True)
        except OSError as err:
            raise BackendError(f"cannot run {' '.join(linker)}: {err.strerror}") from None
        if done.returncode != 0:
            raise BackendError(f"{' '.join(linker)} failed:\n{done.stderr.strip()}")
        with open(out_path, "rb") as handle:
            return handle.read()
