"""``PagedAttention``: a paged-attention kernel a serving engine calls like a function.

    attn = PagedAttention(num_heads_q=32, num_heads_kv=8, head_dim=128, page_size=16, seq_len_k=32768,
                          page_table="blocks", dynamic=True, num_splits=0, arch="gfx942")
    out = attn(q, k_cache, v_cache, block_table, seq_lens)          # or out=..., workspace=..., stream=...

The options are ``pagedir-gen attention``'s (:mod:`pagedir.gen.attention`, with ``-`` as ``_``). The
arguments are the kernel's, in its order and by its names (``q, k_cache, v_cache, kv_indptr,
kv_indices, kv_last_page_len`` for ``page_table="csr"``, ``q, k_table, v_table, [seq_lens]`` for
pointer tables, ``alibi_slopes``, ``sinks``, ... as the options add them); ``out`` may be left out
(a new array like ``q``, which holds the output in every form) and is returned.

* Device arrays (torch on CUDA/ROCm, ``__cuda_array_interface__``, DLPack) launch the compiled
  kernels (:class:`pagedir.runtime.Launcher`): the generated kernel is compiled once, on the first
  such call (or :meth:`PagedAttention.compile`), through the compile cache; ``stream`` defaults to
  torch's current stream when torch is loaded, else 0. A workspace the call needs is taken from
  ``workspace=`` (:meth:`PagedAttention.workspace_bytes`; then nothing is allocated in the call,
  as a CUDA graph capture needs), else allocated: with torch, by its caching allocator on the
  call's stream.
* Host arrays (numpy, torch on the CPU) run the same kernels, lowered to ``gpu.func``, on
  pagedir's interpreter (slow: for tests and small shapes), split kernel then combine.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from pagedir.errors import UserError
from pagedir.runtime.launcher import LaunchError, Launcher

#: The emit kind of each target's artefact (NVIDIA: PTX, which the driver compiles when it loads it;
#: ``emit="cubin"`` needs ptxas where the compile runs).
EMIT = {"hip": "hsaco", "cuda": "ptx"}


def generator_options(options: dict[str, Any]) -> argparse.Namespace:
    """``pagedir-gen attention``'s defaults with ``options`` set; an unknown option is a TypeError."""
    from pagedir.gen import attention as gen

    parser = argparse.ArgumentParser(add_help=False)
    gen.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in options.items():
        if not hasattr(args, key):
            known = ", ".join(sorted(vars(args)))
            raise TypeError(f"PagedAttention: unknown option {key!r} (pagedir-gen attention's: {known})")
        setattr(args, key, value)
    return args


def argument_names(source: str, function: str) -> list[str]:
    """The parameter names of ``func.func @function`` in generated MLIR text."""
    match = re.search(rf"func\.func @{re.escape(function)}\((.*?)\) attributes", source, re.S)
    if match is None:
        raise ValueError(f"no func.func @{function} in the generated text")
    return re.findall(r"%([A-Za-z_][A-Za-z0-9_]*):", match.group(1))


class PagedAttention:
    """See the module docstring."""

    def __init__(self, *, cache_dir: str | None = None, library: str | None = None, emit: str | None = None,
                 **options: Any):
        from pagedir.gen import attention as gen

        self.options = generator_options(options)
        gen.validate(self.options)  # bad options: pagedir.errors.UserError, as pagedir-gen says them
        # The text without parsing it: a kernel found in the compile cache then loads no MLIR at all (a miss
        # parses and compiles it; compile() says generate()'s message when that fails).
        self.source = gen.function_text(self.options)
        self.names = argument_names(self.source, self.options.name)
        self.target = "cuda" if str(self.options.arch).startswith("sm_") else "hip"
        self.emit = emit or EMIT[self.target]
        self.cache_dir = cache_dir
        self.library = library
        self._launcher: Launcher | None = None
        self._lowered: Any = None

    @classmethod
    def from_compiled(cls, artefact: bytes, plan: Any, names: list[str], **launcher_options: Any) -> "PagedAttention":
        """A call over an artefact compiled elsewhere (``names``: the kernel's argument names, ``out`` last):
        nothing of the compiler is imported."""
        self = cls.__new__(cls)
        self.options = self.source = self.cache_dir = self.library = self.emit = self._lowered = None
        self.names = list(names)
        self._launcher = Launcher(artefact, plan, names=self.names, **launcher_options)
        self.target = self._launcher.target
        return self

    # ------------------------------------------------------------------ compile once
    def compile(self) -> Launcher:
        """The launcher of the compiled kernels (compiled on first use, through the compile cache)."""
        if self._launcher is None:
            from pagedir.cli.compile import compile_source

            try:
                entry = compile_source(self.source, arch=self.options.arch, emit=self.emit, plan=True,
                                       cache_dir=self.cache_dir, name=f"<PagedAttention {self.options.name}>")
            except UserError:
                from pagedir.gen import attention as gen

                gen.generate(self.options)  # the generator's own message, where it has one
                raise
            self._launcher = Launcher(entry.artefact, entry.plan_json, names=self.names, library=self.library)
        return self._launcher

    def workspace_bytes(self, *args: Any, **named: Any) -> int:
        """The workspace bytes a call on these arguments needs (``out`` given or not; 0: none): allocate
        them once and pass ``workspace=`` for calls that must not allocate (a CUDA graph capture)."""
        from pagedir.runtime.arrays import describe

        values = self._bind(args, named)
        shapes = [describe(v, name).shape for v, name in zip(values[:-1], self.names)]
        return self.compile().workspace_bytes(*shapes, shapes[0])  # out has q's shape in every form

    # ------------------------------------------------------------------ calls
    def __call__(self, *args: Any, workspace: Any = None, stream: int | None = None, **named: Any) -> Any:
        values = self._bind(args, named)
        if values[-1] is None:
            values[-1] = _empty_like(values[0])
        if all(_on_host(v) for v in values):
            return self._interpret(values)
        launcher = self.compile()
        if workspace is None and "torch" in sys.modules and _is_torch(values[0]):
            size = launcher.workspace_bytes(*values)
            if size:
                import torch

                workspace = torch.empty(size, dtype=torch.uint8, device=values[0].device)
        if stream is None:
            stream = _torch_stream(values[0])
        launcher(*values, workspace=workspace, stream=stream)
        return values[-1]

    def _bind(self, args: tuple, named: dict) -> list[Any]:
        if len(args) > len(self.names):
            raise TypeError(f"PagedAttention takes {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}")
        values: list[Any] = list(args) + [None] * (len(self.names) - len(args))
        for key, value in named.items():
            if key not in self.names:
                raise TypeError(f"PagedAttention: no argument {key!r} (the kernel's: {', '.join(self.names)})")
            if values[self.names.index(key)] is not None:
                raise TypeError(f"PagedAttention: argument {key!r} given twice")
            values[self.names.index(key)] = value
        missing = [n for n, v in zip(self.names[:-1], values[:-1]) if v is None]
        if missing:
            raise TypeError(f"PagedAttention: missing argument(s) {', '.join(missing)}")
        return values

    def _interpret(self, values: list[Any]) -> Any:
        """Host arrays: the kernels lowered to gpu.func (once) run on the interpreter; ``out`` written in place."""
        import numpy as np

        from pagedir import driver, interp

        if self.source is None:
            raise LaunchError("host arrays run on the interpreter, which needs the generated kernel "
                              "(PagedAttention(**options), not from_compiled)")
        if self._lowered is None:
            from pagedir.context import make_context
            import mlir.ir as ir

            self._context = make_context()
            with self._context:
                module = ir.Module.parse(self.source)
                driver.run(module.operation, driver.CompileOptions(arch=self.options.arch), end="L6")
            self._lowered = module
        arrays = [_host(v) for v in values]
        with self._context:
            results = interp.run(self._lowered, self.options.name, arrays)
        out = values[-1]
        result = results[-1]
        if _is_torch(out):
            import torch

            out.copy_(torch.from_numpy(np.ascontiguousarray(result, dtype=np.float32)).to(out.dtype))
        elif isinstance(out, np.ndarray) and out.dtype == np.uint16 and self.options.dtype == "bf16":
            from pagedir.reference import bf16_bits

            out[...] = bf16_bits(result)
        else:
            out[...] = result.astype(out.dtype)
        return out


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "data_ptr")


def _on_host(value: Any) -> bool:
    if _is_torch(value):
        return value.device.type == "cpu"
    return not hasattr(value, "__cuda_array_interface__") and (type(value).__module__ == "numpy" or
                                                               not hasattr(value, "__dlpack__"))


def _host(value: Any) -> Any:
    """A numpy view of a host array (bf16 torch tensors as their bit patterns, which the interpreter takes)."""
    if _is_torch(value):
        import torch

        return value.view(torch.int16).numpy().view("uint16") if value.dtype == torch.bfloat16 else value.numpy()
    return value


def _empty_like(value: Any) -> Any:
    if _is_torch(value):
        import torch

        return torch.empty_like(value, memory_format=torch.contiguous_format)
    import numpy as np

    if isinstance(value, np.ndarray):
        return np.empty_like(value)
    raise LaunchError(f"out: give an output array (none can be made like a {type(value).__name__})")


def _torch_stream(value: Any) -> int:
    if _is_torch(value) and value.device.type == "cuda":
        import torch

        return int(torch.cuda.current_stream(value.device).cuda_stream)
    return 0
