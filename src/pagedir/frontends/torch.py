"""From PyTorch: a torch function or ``nn.Module`` with example inputs to a rock kernel, or to its compiled code.

Needs the optional extra ``pip install 'pagedir[torch]'`` (torch-mlir and a CPU torch, pinned in
pyproject.toml); the rest of pagedir does not import torch. In one call::

    from pagedir.frontends import torch as pagedir_torch

    compiled = pagedir_torch.compile(gqa_decode, q, k, v, arch="gfx942", emit="hsaco", plan=True)
    compiled.artefact  # the code object; compiled.plan: the launch plan; compiled.kernel: the rock kernel

The steps, each usable alone:

1. :func:`export`: ``torch_mlir.fx.export_and_import(..., output_type="linalg-on-tensors")`` (a plain
   function is wrapped in an ``nn.Module``), returned as MLIR text. torch-mlir has its own MLIR
   bindings, with their own context and types; text is what both read.
2. :func:`raise_kernel`: the text parsed in pagedir's context (:func:`pagedir.make_context`), then
   the ingress of ``rock-kernel-pipeline`` (the driver's stages from linalg to L0:
   ``rock-raise-attention``). torch-mlir's function takes tensors and returns one; the kernel takes
   the same arguments as memrefs with the output appended (``func(q, k, v) -> o`` becomes
   ``@name(q, k, v, out)``, marked ``rock.kernel``). Nothing raised is an error naming why
   (:class:`NotRaised`, the reasons ``rock-raise-attention{explain=true}`` gives).
3. :func:`compile`: both, then, when asked for an ``emit`` kind or a ``plan``, the compile of
   ``pagedir-compile`` (:func:`pagedir.cli.compile.compile_source`, through the compile cache).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pagedir.errors import UserError

#: How to get what this module needs; named by the errors.
INSTALL = "pip install 'pagedir[torch]'"


class TorchMlirMissing(ImportError):
    """torch or torch-mlir is not installed."""


class ExportError(UserError):
    """torch-mlir could not export the function to linalg on tensors (the cause is chained)."""


class NotRaised(UserError):
    """Nothing of the exported function became a rock kernel: ``diags`` say why, at lines of ``text``
    (the exported MLIR, named ``source_name`` in the diagnostics)."""

    def __init__(self, message: str, diags: list, text: str, source_name: str):
        super().__init__(message)
        self.diags = diags
        self.text = text
        self.source_name = source_name


@dataclass
class Compiled:
    """What :func:`compile` made with an ``emit`` kind or ``plan``."""

    #: The rock kernel module (``builtin.module`` operation, pagedir's context), as :func:`raise_kernel` returns it.
    kernel: Any
    #: The artefact of ``emit``: text (asm, llvm-ir, llvm-dialect) or bytes (obj, hsaco).
    artefact: str | bytes
    #: The launch plan (:mod:`pagedir.backend.plan`) as a dict, when asked for.
    plan: dict | None = None
    #: True when the compile was read from the compile cache.
    cache_hit: bool = False


def _torch():
    """torch and torch_mlir.fx, or :class:`TorchMlirMissing` naming the extra."""
    try:
        import torch
        from torch_mlir import fx
    except ImportError as err:
        raise TorchMlirMissing(f"pagedir.frontends.torch needs torch and torch-mlir ({err}): {INSTALL} installs the "
                               f"versions pagedir is tested with") from None
    return torch, fx


def export(fn: Any, *example_inputs: Any, name: str = "attention") -> str:
    """linalg-on-tensors MLIR text of ``fn`` (a function, an ``nn.Module`` or a ``torch.export`` program)
    traced on ``example_inputs``, as function ``@name``."""
    torch, fx = _torch()
    if not isinstance(fn, (torch.nn.Module, torch.export.ExportedProgram)):
        fn = _as_module(torch, fn)
    try:
        exported = fx.export_and_import(fn, *example_inputs, output_type="linalg-on-tensors", func_name=name)
    except Exception as err:  # torch.export's and torch-mlir's errors have no common base
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportError(f"torch-mlir could not export @{name} to linalg on tensors: {first}") from err
    return str(exported)


def _as_module(torch: Any, fn: Any) -> Any:
    """A plain function as an ``nn.Module`` (what ``torch.export`` traces)."""

    class Function(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fn = fn

        def forward(self, *args: Any) -> Any:
            return self.fn(*args)

    return Function()


def raise_kernel(source: Any, *, arch: str | None = None, source_name: str = "<torch-mlir>") -> Any:
    """The rock kernel module raised from ``source``: linalg MLIR text, or a module of any MLIR bindings
    (torch-mlir's included: it is read back from its text). ``arch`` records the chip on the kernels
    (``rock.arch``). Returns the ``builtin.module`` operation in pagedir's context; raises
    :class:`NotRaised` when no function became a kernel, :class:`UserError` for text that does not parse."""
    import mlir.ir as ir

    import pagedir
    from pagedir import driver
    from pagedir.arch import ChipError, kernel_chip
    from pagedir.cli.opt import parse_module
    from pagedir.diagnostics import DiagnosticCollector, from_mlir_error

    text = source if isinstance(source, str) else str(source)
    context = pagedir.make_context()
    with context, ir.Location.unknown(context), DiagnosticCollector(context) as collector:
        try:
            module = parse_module(text, source_name)
        except ir.MLIRError as err:
            raise UserError(_lines(collector.take() + from_mlir_error(err))) from None
        try:
            driver.run_stages(module, driver.stages(driver.CompileOptions(arch=arch or ""), "linalg", "L0"))
        except driver.StageError as err:
            raise UserError(_lines(err.diags)) from None
        kernels = [f for f in _functions(module) if "rock.kernel" in f.attributes]
        if not kernels:
            diags = _why_not(module, source_name)
            raise NotRaised(_not_raised_message(diags, text), diags, text, source_name)
        for kernel in kernels:
            try:
                kernel_chip(kernel, arch or "")  # records arch as rock.arch; an export names no chip of its own
            except ChipError as err:
                if arch:  # without one, the chip is chosen when compiling
                    raise UserError(str(err)) from None
    return module


def compile(fn: Any, *example_inputs: Any, name: str = "attention", arch: str | None = None, emit: str | None = None,
            plan: bool = False, opt_level: int = 3, cache: bool = True, cache_dir: str | None = None) -> Any:
    """Export ``fn`` on ``example_inputs`` and raise it (:func:`export`, :func:`raise_kernel`): the rock kernel
    module; with ``emit`` (``asm``, ``obj``, ``hsaco``, ...) or ``plan``, compiled for ``arch`` like
    ``pagedir-compile`` does (``emit`` defaults to ``asm`` then): a :class:`Compiled`."""
    if (emit is not None or plan) and not arch:
        raise UserError("compiling needs arch=<chip> (e.g. arch='gfx942'): an exported function names no chip")
    text = export(fn, *example_inputs, name=name)
    kernel = raise_kernel(text, arch=arch, source_name=f"<torch-mlir @{name}>")
    if emit is None and not plan:
        return kernel
    from pagedir.cli.compile import compile_source

    entry = compile_source(kernel.get_asm(), arch=arch, emit=emit or "asm", opt_level=opt_level, plan=plan,
                           cache=cache, cache_dir=cache_dir, name=f"@{name}")
    return Compiled(kernel, entry.artefact, json.loads(entry.plan_json) if entry.plan_json else None, entry.hit)


def _functions(module: Any) -> list:
    return [op.operation for op in module.regions[0].blocks[0].operations if op.operation.name == "func.func"]


def _why_not(module: Any, source_name: str) -> list:
    """The raise's reasons (every result of a function must be attention for it to become a kernel)."""
    from pagedir.cli.compile import unraised_payloads
    from pagedir.diagnostics import Diag

    diags = [diag for found in unraised_payloads(module).values() for diag in found]
    return diags or [Diag("error", "no function of the export became a rock kernel: rock-raise-attention reads "
                                   "functions in linalg on tensors", source_name, 1, 1)]


def _not_raised_message(diags: list, text: str) -> str:
    """The diagnostics, each followed by the line of the exported text it points at."""
    lines = text.splitlines()
    shown = []
    for diag in diags:
        shown.append(diag.format())
        if diag.line is not None and 0 < diag.line <= len(lines):
            shown.append(f"    {lines[diag.line - 1].strip()}")
    return "not raised to a rock kernel (the exported MLIR is the error's .text):\n" + "\n".join(shown)


def _lines(diags: list) -> str:
    return "\n".join(diag.format() for diag in diags)
