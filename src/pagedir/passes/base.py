"""Pass base class, options, and the adapter onto ``mlir.passmanager.PassManager``.

A pass is a class with an ``argument`` (its command-line name), a one-line
``summary``, an ``Options`` frozen dataclass, and ``run(module) -> bool``. It
reports user errors with ``op.location.emit_error(...)`` and returns False;
Python exceptions mean a bug. To use a pass in your own pipeline::

    from mlir.passmanager import PassManager
    from pagedir.passes import add_pass
    pm = PassManager("builtin.module", context=module.context)
    add_pass(pm, "rock-reuse-lds", arch="gfx950")
    pm.run(module.operation)

Named pipelines are made of passes and live above them, with the driver: add them
with :func:`pagedir.pipelines.add_pass` (which takes pass names too).

No ``with context:`` block is needed: a pass runs with its module's context and
an unknown location as the ambient ones. Passes anchor on ``builtin.module`` and
walk to the functions they transform (the bindings abort the process when a
Python pass is anchored elsewhere).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import traceback
from collections.abc import Iterator
from typing import Any, ClassVar

import mlir.ir as ir

from pagedir.arch import get_chip


@dataclasses.dataclass(frozen=True)
class NoOptions:
    """A pass without options."""


class OptionError(ValueError):
    """A malformed or unknown pass option (the message names the pass and the option)."""


class Pass:
    """Base class of pagedir passes."""

    argument: ClassVar[str]
    summary: ClassVar[str] = ""
    Options: ClassVar[type] = NoOptions

    def __init__(self, options: Any = None, **kwargs: Any):
        if options is None:
            options = self.Options(**kwargs)
        self.options = options

    def run(self, module: ir.Operation) -> bool:
        """Transform ``module`` in place; return False after emitting diagnostics on failure."""
        raise NotImplementedError

    def __call__(self, op: ir.Operation, pass_: Any) -> None:
        """Entry point for ``PassManager.add``.

        The pass runs with the module's context and an unknown location as
        the ambient ones, so builders need no ``with`` block, in pagedir's tools
        and in a user's own ``PassManager`` alike.

        Errors emitted inside a pass run are captured by the bindings, which
        abort the process when the pass then does not fail: so any emitted
        error fails the pass, and an exception raised after an error is turned
        into one more error rather than escaping; it begins with "internal
        error" (:data:`pagedir.diagnostics.INTERNAL_ERROR`), which the tools
        report as a bug (exit code 2).
        """
        operation = op.operation if hasattr(op, "operation") else op
        emitted_errors = []

        def watch(diagnostic: Any) -> bool:
            if diagnostic.severity == ir.DiagnosticSeverity.ERROR:
                emitted_errors.append(diagnostic.message)
            return False  # not handled: let the pass manager capture it as usual

        context = operation.context
        handler = context.attach_diagnostic_handler(watch)
        try:
            with context, ir.Location.unknown(context):
                succeeded = self.run(operation)
        except Exception as exc:
            if not emitted_errors:
                raise
            handler.detach()
            handler = None
            if os.environ.get("PAGEDIR_TRACEBACK"):
                traceback.print_exc()
            operation.location.emit_error(f"internal error in {self.argument}: {type(exc).__name__}: {exc}")
            succeeded = False
        finally:
            if handler is not None:
                handler.detach()
        if not succeeded or emitted_errors:
            pass_.signal_pass_failure()

    def pipeline_text(self) -> str:
        """``argument{key=value ...}`` as ``--dump-pass-pipeline`` prints it."""
        fields = dataclasses.fields(self.options)
        if not fields:
            return self.argument
        parts = [f"{f.name.replace('_', '-')}={format_option(getattr(self.options, f.name))}" for f in fields]
        return f"{self.argument}{{{' '.join(parts)}}}"


def format_option(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: Functions: their bodies (nearly every op of a kernel) hold no functions, so the search skips them.
FUNCTION_OPS = frozenset({"func.func", "gpu.func", "llvm.func"})


def kernel_functions(module: ir.Operation) -> Iterator[ir.Operation]:
    """``func.func`` ops carrying the ``rock.kernel`` attribute, at any depth of ``module``
    outside function bodies."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name not in FUNCTION_OPS:
            return ir.WalkResult.ADVANCE
        if name == "func.func" and "rock.kernel" in op.attributes:
            found.append(op)
        return ir.WalkResult.SKIP

    module.walk(visit, ir.WalkOrder.PRE_ORDER)  # pre-order: SKIP leaves the body unwalked
    yield from found


@dataclasses.dataclass(frozen=True)
class ChipOptions:
    """Options of a pass that needs the chip: ``arch``, checked when given. A pass whose
    option means more says so in a subclass redeclaring the field with its own comment."""

    #: Chip or target string; empty means each kernel's own ``rock.arch``.
    arch: str = ""

    def __post_init__(self) -> None:
        if self.arch:
            get_chip(self.arch)  # ChipError (a ValueError) names the value and the accepted form


# ----------------------------------------------------------------------------
# Options: ``key=value`` pairs (kebab or snake keys) separated by spaces or commas.


def split_option_text(text: str) -> list[tuple[str, str]]:
    """``"arch=gfx950 block-size=256"`` -> [("arch", "gfx950"), ("block-size", "256")]."""
    pairs = []
    for item in text.replace(",", " ").split():
        key, sep, value = item.partition("=")
        if not sep:
            value = "true"  # a bare flag, as in mlir-opt
        pairs.append((key.strip(), value.strip().strip("'\"")))
    return pairs


def parse_options(pass_cls: type[Pass], text: str | dict[str, Any]) -> Any:
    """Build ``pass_cls.Options`` from option text or a dict; :class:`OptionError` on bad input."""
    return parse_option_values(pass_cls.argument, pass_cls.Options, text)


def parse_option_values(argument: str, options_cls: type, text: str | dict[str, Any]) -> Any:
    """Build the frozen dataclass ``options_cls`` of pass or pipeline ``argument`` from text or a dict."""
    fields = {f.name: f for f in dataclasses.fields(options_cls)}
    items = text.items() if isinstance(text, dict) else split_option_text(text)
    values: dict[str, Any] = {}
    for key, raw in items:
        name = key.replace("-", "_")
        field = fields.get(name)
        if field is None:
            known = ", ".join(k.replace("_", "-") for k in fields) or "none"
            raise OptionError(f"'{argument}' has no option '{key}' (options: {known})")
        values[name] = _convert(argument, key, field, raw)
    try:
        return options_cls(**values)
    except (TypeError, ValueError) as err:
        raise OptionError(f"'{argument}': {err}") from None


def option_kind(field: dataclasses.Field) -> str:
    """The option's type name as written in the dataclass (``int``, ``bool``, ``str``, ...)."""
    kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
    return kind.split(" ")[0]


def option_help(options_cls: type) -> list[tuple[str, str, Any, str]]:
    """(kebab name, type, default, help) per option; help is the ``#:`` comment above the field."""
    comments = _field_comments(options_cls)
    rows = []
    for f in dataclasses.fields(options_cls):
        default = f.default if f.default is not dataclasses.MISSING else None
        doc = f.metadata.get("help") or comments.get(f.name, "")
        rows.append((f.name.replace("_", "-"), option_kind(f), default, doc))
    return rows


def _field_comments(options_cls: type) -> dict[str, str]:
    """``#: text`` comments right above each field of a dataclass (Sphinx's attribute-doc convention)."""
    try:
        source = inspect.getsource(options_cls)
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        name = stripped.split(":", 1)[0].strip()
        if pending and name.isidentifier():
            comments[name] = " ".join(pending)
        pending = []
    return comments


def _convert(argument: str, key: str, field: dataclasses.Field, raw: Any) -> Any:
    kind = option_kind(field)
    if not isinstance(raw, str):
        return raw
    try:
        if kind.startswith("bool"):
            if raw.lower() in ("true", "1", "on"):
                return True
            if raw.lower() in ("false", "0", "off"):
                return False
            raise ValueError
        if kind.startswith("int"):
            return int(raw, 0)
        if kind.startswith("float"):
            return float(raw)
    except ValueError:
        raise OptionError(f"'{argument}' option '{key}' expects {kind}, got '{raw}'") from None
    return raw


def add_pass(pm: Any, pass_or_argument: Pass | str, options: str | dict[str, Any] | None = None, **kwargs: Any) -> Pass:
    """Add a pagedir pass (instance or argument) to an upstream ``PassManager``.

    Options come as text (``"arch=gfx950"``), a dict or keywords. Returns the pass
    instance. Unknown names and bad options raise :class:`OptionError`; the named
    pipelines are added with :func:`pagedir.pipelines.add_pass`.
    """
    if isinstance(pass_or_argument, Pass):
        return _add_instance(pm, pass_or_argument)
    from pagedir.passes import PASSES, get_pass_class

    if pass_or_argument in PASSES:
        cls = get_pass_class(pass_or_argument)
        return _add_instance(pm, cls(parse_options(cls, merged_options(options, kwargs))))
    known = ", ".join(sorted(PASSES))
    raise OptionError(f"no pagedir pass named '{pass_or_argument}' (known: {known}); "
                      "named pipelines are added with pagedir.pipelines.add_pass")


def merged_options(options: str | dict[str, Any] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    if isinstance(options, str):
        merged.update(dict(split_option_text(options)))
    elif options:
        merged.update(options)
    merged.update(kwargs)
    return merged


def _add_instance(pm: Any, instance: Pass) -> Pass:
    pm.add(instance, name=type(instance).__name__, argument=instance.argument, description=instance.summary)
    return instance
