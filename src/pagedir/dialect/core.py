"""Declare an op once, in Python; derive IRDL, OpViews, builders, effects and docs from it.

An op is a subclass of :class:`OpDef` with class-level fields::

    class AllocOp(OpDef):
        name = "alloc"
        summary = "allocate a buffer in LDS or registers"
        results = (Result("buffer", MEMREF),)

        def verify(self, op):
            if memref_bytes(op.result.type) <= 0:
                yield "..."

From the declarations :mod:`pagedir.dialect.rock` builds

* the IRDL text loaded into each context (structural checks at parse time),
* one ``OpView`` subclass per op with typed accessors,
* one snake_case builder per op (``loc``/``ip`` keyword-only),
* the memory-effect table (:func:`declared_effects`),
* the reference page of the dialect (:func:`render_markdown`).

IRDL in MLIR 22 has no optional attributes and no terminators; optional
attributes and cross-field rules are checked by :meth:`OpDef.verify_op`, run
by the ``rock-verify`` pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import mlir.ir as ir

# ----------------------------------------------------------------------------
# Type constraints: a name, the IRDL constraint text, and a Python predicate.


@dataclass(frozen=True)
class TypeConstraint:
    """A constraint on an operand or result type."""

    name: str
    irdl: str
    description: str

    def accepts(self, type_: ir.Type) -> bool:
        return _TYPE_PREDICATES[self.name](type_)


def _is_int(width: int):
    return lambda t: isinstance(t, ir.IntegerType) and t.width == width


_TYPE_PREDICATES = {
    "memref": lambda t: isinstance(t, ir.MemRefType),
    "index": lambda t: isinstance(t, ir.IndexType),
    "i1": _is_int(1),
    "i64": _is_int(64),
    "any": lambda t: True,
}

MEMREF = TypeConstraint("memref", 'irdl.base "!builtin.memref"', "memref")
INDEX = TypeConstraint("index", "irdl.is index", "index")
I1 = TypeConstraint("i1", "irdl.is i1", "i1")
I64 = TypeConstraint("i64", "irdl.is i64", "i64")
ANY = TypeConstraint("any", "irdl.any", "any type")


# ----------------------------------------------------------------------------
# Attribute kinds: how they are constrained in IRDL, checked and built.


@dataclass(frozen=True)
class AttrKind:
    """A kind of attribute value (i64, bool, f32, string, affine map, i64 array)."""

    name: str
    irdl_base: str
    description: str


I64_ATTR = AttrKind("i64", "#builtin.integer", "i64 integer")
BOOL_ATTR = AttrKind("bool", "#builtin.integer", "bool")
F32_ATTR = AttrKind("f32", "#builtin.float", "f32 float")
STR_ATTR = AttrKind("str", "#builtin.string", "string")
MAP_ATTR = AttrKind("affine_map", "#builtin.affine_map", "affine map")
I64_ARRAY_ATTR = AttrKind("i64_array", "#builtin.dense_array", "array<i64: ...>")
UNIT_ATTR = AttrKind("unit", "#builtin.unit", "unit")


def attr_kind_error(kind: AttrKind, attr: ir.Attribute) -> str | None:
    """Return why ``attr`` is not of ``kind``, or None when it is."""
    if kind is BOOL_ATTR:
        ok = isinstance(attr, ir.BoolAttr)
    elif kind is I64_ATTR:
        ok = (
            isinstance(attr, ir.IntegerAttr)
            and not isinstance(attr, ir.BoolAttr)
            and isinstance(attr.type, ir.IntegerType)
            and attr.type.width == 64
        )
    elif kind is F32_ATTR:
        ok = isinstance(attr, ir.FloatAttr) and isinstance(attr.type, ir.F32Type)
    elif kind is STR_ATTR:
        ok = isinstance(attr, ir.StringAttr)
    elif kind is MAP_ATTR:
        ok = isinstance(attr, ir.AffineMapAttr)
    elif kind is I64_ARRAY_ATTR:
        ok = isinstance(attr, ir.DenseI64ArrayAttr)
    elif kind is UNIT_ATTR:
        ok = isinstance(attr, ir.UnitAttr)
    else:  # pragma: no cover - all kinds are listed above
        raise AssertionError(kind)
    return None if ok else f"must be {kind.description}, got {attr}"


def make_attr(kind: AttrKind, value: Any) -> ir.Attribute:
    """Build an attribute of ``kind`` from a Python value (or pass an attribute through)."""
    if isinstance(value, ir.Attribute):
        return value
    if kind is BOOL_ATTR:
        return ir.BoolAttr.get(bool(value))
    if kind is I64_ATTR:
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
    if kind is F32_ATTR:
        return ir.FloatAttr.get(ir.F32Type.get(), float(value))
    if kind is STR_ATTR:
        return ir.StringAttr.get(str(value))
    if kind is MAP_ATTR:
        return ir.AffineMapAttr.get(value)
    if kind is I64_ARRAY_ATTR:
        return ir.DenseI64ArrayAttr.get([int(v) for v in value])
    if kind is UNIT_ATTR:
        return ir.UnitAttr.get()
    raise AssertionError(kind)  # pragma: no cover


def attr_value(attr: ir.Attribute) -> Any:
    """The Python value of a builtin attribute (int, bool, float, str, AffineMap, list)."""
    if isinstance(attr, ir.BoolAttr):
        return attr.value
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    if isinstance(attr, ir.FloatAttr):
        return attr.value
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, ir.AffineMapAttr):
        return attr.value
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return list(attr)
    return attr


# ----------------------------------------------------------------------------
# Fields of an op declaration.

SINGLE, OPTIONAL, VARIADIC = "single", "optional", "variadic"
READ, WRITE = "read", "write"


@dataclass(frozen=True)
class Operand:
    """An operand: name (snake_case), type constraint, arity, and memory effect on it."""

    name: str
    constraint: TypeConstraint = ANY
    arity: str = SINGLE
    effect: str | None = None
    doc: str = ""
    #: With a write effect: every run of the op writes every element of the operand (the
    #: workgroup together), so the operand's older contents are dead from the op on.
    overwrites: bool = False


@dataclass(frozen=True)
class Result:
    """A result: name and type constraint."""

    name: str
    constraint: TypeConstraint = ANY
    doc: str = ""


@dataclass(frozen=True)
class Attr:
    """An attribute: name, kind, whether it is required, and its default when not."""

    name: str
    kind: AttrKind
    required: bool = True
    default: Any = None
    doc: str = ""


class OpDef:
    """Base class of op declarations. Subclasses set the class fields below."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    description: ClassVar[str] = ""
    operands: ClassVar[tuple[Operand, ...]] = ()
    results: ClassVar[tuple[Result, ...]] = ()
    attributes: ClassVar[tuple[Attr, ...]] = ()
    regions: ClassVar[int] = 0
    #: Marker ops (live_in/live_out) carry no memory effects: they never count as accesses.
    marker: ClassVar[bool] = False
    example: ClassVar[str] = ""

    dialect: ClassVar[str] = "rock"

    @classmethod
    def op_name(cls) -> str:
        return f"{cls.dialect}.{cls.name}"

    @classmethod
    def has_segments(cls) -> bool:
        return any(o.arity != SINGLE for o in cls.operands)

    @classmethod
    def operands_of(cls, operation: ir.Operation) -> dict[str, list[ir.Value]]:
        """The operand groups of ``operation`` by declared name (:func:`operands_by_name`)."""
        return operands_by_name(cls, operation)

    # -- verification --------------------------------------------------------

    def verify(self, op: ir.OpView) -> Iterator[str]:
        """Yield one message per violated invariant that IRDL cannot express."""
        return iter(())

    @classmethod
    def verify_op(cls, op: ir.OpView) -> list[str]:
        """All messages for ``op``: attribute kinds, operand/result types, then :meth:`verify`."""
        if why := segment_error(cls, op.operation):
            return [f"'{cls.op_name()}' op {why}"]
        errors = []
        attrs = op.operation.attributes
        for attr in cls.attributes:
            if attr.name not in attrs:
                if attr.required:
                    errors.append(f"'{cls.op_name()}' op requires attribute '{attr.name}'")
                continue
            why = attr_kind_error(attr.kind, attrs[attr.name])
            if why:
                errors.append(f"'{cls.op_name()}' op attribute '{attr.name}' {why}")
        for decl, values in zip(cls.operands, operand_groups(cls, op.operation)):
            for value in values:
                if not decl.constraint.accepts(value.type):
                    errors.append(
                        f"'{cls.op_name()}' op operand '{decl.name}' must be "
                        f"{decl.constraint.description}, got {value.type}"
                    )
        if errors:
            return errors
        with op.context:  # verify() builds types, which needs the op's context even when none is entered
            return [f"'{cls.op_name()}' op {msg}" for msg in cls().verify(op)]

    # -- IRDL ----------------------------------------------------------------

    @classmethod
    def irdl(cls) -> str:
        """The IRDL ``irdl.operation`` for this op: one constraint value per slot."""
        lines = [f"  irdl.operation @{cls.name} {{"]
        counter = iter(range(1 << 30))

        def fresh(text: str) -> str:
            value = f"%c{next(counter)}"
            lines.append(f"    {value} = {text}")
            return value

        def arity_prefix(arity: str) -> str:
            return "" if arity == SINGLE else f"{arity} "

        if cls.operands:
            slots = [f"{o.name}: {arity_prefix(o.arity)}{fresh(o.constraint.irdl)}" for o in cls.operands]
            lines.append(f"    irdl.operands({', '.join(slots)})")
        if cls.results:
            slots = [f"{r.name}: {fresh(r.constraint.irdl)}" for r in cls.results]
            lines.append(f"    irdl.results({', '.join(slots)})")
        required = [a for a in cls.attributes if a.required]
        if required:
            slots = [f'"{a.name}" = {fresh(f"irdl.base {chr(34)}{a.kind.irdl_base}{chr(34)}")}' for a in required]
            lines.append(f"    irdl.attributes {{{', '.join(slots)}}}")
        if cls.regions:
            slots = [f"r{i}: {fresh('irdl.region')}" for i in range(cls.regions)]
            lines.append(f"    irdl.regions({', '.join(slots)})")
        lines.append("  }")
        return "\n".join(lines)


def dialect_irdl(namespace: str, ops: Sequence[type[OpDef]]) -> str:
    body = "\n".join(op.irdl() for op in ops)
    return f"irdl.dialect @{namespace} {{\n{body}\n}}\n"


# ----------------------------------------------------------------------------
# Operand segments.


def segment_sizes(op_def: type[OpDef], operation: ir.Operation) -> list[int]:
    """Number of values in each operand slot of ``operation`` (valid after :func:`segment_error` is None)."""
    if not op_def.has_segments():
        return [1] * len(op_def.operands)
    attrs = operation.attributes
    if "operandSegmentSizes" in attrs and isinstance(attrs["operandSegmentSizes"], ir.DenseI32ArrayAttr):
        return list(ir.DenseI32ArrayAttr(attrs["operandSegmentSizes"]))
    # Unreachable for verified IR (rock-verify checks the attribute); be lenient for partial IR.
    return [1] * len(op_def.operands)


def segment_error(op_def: type[OpDef], operation: ir.Operation) -> str | None:
    """Why ``operandSegmentSizes`` does not split the operands of ``operation`` into its declared slots.

    IRDL in MLIR 22 checks none of this: a wrong array used to pass every pass,
    or to fail inside the verifiers.
    """
    count = len(operation.operands)
    if not op_def.has_segments():
        return None
    attr = operation.attributes["operandSegmentSizes"] if "operandSegmentSizes" in operation.attributes else None
    if attr is None:
        return "requires attribute 'operandSegmentSizes' (one size per operand group)"
    if not isinstance(attr, ir.DenseI32ArrayAttr):
        return f"attribute 'operandSegmentSizes' must be array<i32: ...>, got {attr}"
    sizes = list(attr)
    names = ", ".join(o.name for o in op_def.operands)
    if len(sizes) != len(op_def.operands):
        return f"operandSegmentSizes {attr} has {len(sizes)} sizes, expected {len(op_def.operands)} ({names})"
    for decl, size in zip(op_def.operands, sizes):
        limit = {SINGLE: (1, 1), OPTIONAL: (0, 1)}.get(decl.arity, (0, None))
        if size < limit[0] or (limit[1] is not None and size > limit[1]):
            allowed = {SINGLE: "exactly 1", OPTIONAL: "0 or 1"}.get(decl.arity, "at least 0")
            return f"operandSegmentSizes {attr} gives {decl.arity} operand '{decl.name}' {size} values, expected {allowed}"
    if sum(sizes) != count:
        return f"operandSegmentSizes {attr} adds up to {sum(sizes)} operands, but the op has {count}"
    return None


def operand_groups(op_def: type[OpDef], operation: ir.Operation) -> list[list[ir.Value]]:
    """The operands of ``operation`` split per declared slot."""
    values = list(operation.operands)
    groups, start = [], 0
    for size in segment_sizes(op_def, operation):
        groups.append(values[start : start + size])
        start += size
    return groups


def operands_by_name(op_def: type[OpDef], operation: ir.Operation) -> dict[str, list[ir.Value]]:
    """The operand groups of ``operation`` by declared name, split as the declaration says now."""
    return {decl.name: group for decl, group in zip(op_def.operands, operand_groups(op_def, operation))}


def declared_overwrites(op_def: type[OpDef], operation: ir.Operation) -> list[ir.Value]:
    """The operands whose declaration says every run of the op writes all of their elements."""
    groups = operand_groups(op_def, operation)
    return [value for decl, values in zip(op_def.operands, groups) if decl.overwrites for value in values]


def declared_effects(op_def: type[OpDef], operation: ir.Operation) -> list[tuple[ir.Value, str]]:
    """(value, 'read'|'write') for every operand whose declaration carries an effect."""
    effects = []
    for decl, values in zip(op_def.operands, operand_groups(op_def, operation)):
        if decl.effect is None:
            continue
        for value in values:
            for kind in decl.effect.split("+"):
                effects.append((value, kind))
    return effects


# ----------------------------------------------------------------------------
# OpView classes and builders.


def make_opview_class(op_def: type[OpDef], base: type) -> type:
    """An ``OpView`` subclass with one property per operand, result and attribute."""
    namespace: dict[str, Any] = {
        "OPERATION_NAME": op_def.op_name(),
        "_ODS_REGIONS": (op_def.regions, True),
        "op_def": op_def,
        "__doc__": f"{op_def.summary}\n\n{op_def.description}".strip(),
    }
    for decl in op_def.operands:
        namespace[decl.name] = _operand_property(op_def, decl)
    for index, decl in enumerate(op_def.results):
        namespace[decl.name if decl.name != "result" else "result_value"] = property(
            lambda self, i=index: self.operation.results[i]
        )
    for decl in op_def.attributes:
        namespace[decl.name] = _attr_property(decl)
    class_name = "".join(part.capitalize() for part in op_def.name.split("_")) + "Op"
    return type(class_name, (base,), namespace)


def _operand_property(op_def: type[OpDef], decl: Operand) -> property:
    def getter(self):
        group = operands_by_name(op_def, self.operation)[decl.name]  # by name: the slot moves with the declaration
        if decl.arity == SINGLE:
            return group[0]
        if decl.arity == OPTIONAL:
            return group[0] if group else None
        return group

    return property(getter, doc=decl.doc)


def _attr_property(decl: Attr) -> property:
    def getter(self):
        attrs = self.operation.attributes
        if decl.name not in attrs:
            return decl.default
        return attr_value(attrs[decl.name])

    return property(getter, doc=decl.doc)


def build(
    op_def: type[OpDef],
    operands: Sequence[Any],
    result_types: Sequence[ir.Type],
    attributes: dict[str, Any],
    regions: int | None = None,
    *,
    loc: ir.Location | None = None,
    ip: ir.InsertionPoint | None = None,
) -> ir.Operation:
    """Create ``op_def`` from operands in declaration order (None for an absent optional,
    a list for a variadic), result types and Python attribute values."""
    if len(operands) != len(op_def.operands):
        raise TypeError(f"{op_def.op_name()} takes {len(op_def.operands)} operands, got {len(operands)}")
    flat: list[ir.Value] = []
    sizes = []
    for decl, value in zip(op_def.operands, operands):
        if decl.arity == VARIADIC:
            group = list(value)
        elif decl.arity == OPTIONAL:
            group = [] if value is None else [value]
        else:
            group = [value]
        flat.extend(_as_value(v) for v in group)
        sizes.append(len(group))
    attrs: dict[str, ir.Attribute] = {}
    kinds = {a.name: a.kind for a in op_def.attributes}
    for key, value in attributes.items():
        if value is None:
            continue
        kind = kinds.get(key)
        attrs[key] = make_attr(kind, value) if kind else value
    if op_def.has_segments():
        attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(sizes)
    return ir.Operation.create(
        op_def.op_name(),
        results=list(result_types),
        operands=flat,
        attributes=attrs,
        regions=op_def.regions if regions is None else regions,
        loc=loc,
        ip=ip,
    )


def _as_value(value: Any) -> ir.Value:
    if isinstance(value, ir.Value):
        return value
    if isinstance(value, ir.OpView) or isinstance(value, ir.Operation):
        return value.result
    raise TypeError(f"expected an MLIR value, got {value!r}")


# ----------------------------------------------------------------------------
# Documentation.


def render_markdown(namespace: str, ops: Sequence[type[OpDef]]) -> str:
    """The dialect's reference page, generated from the declarations."""
    out = [
        f"# The `{namespace}` dialect",
        "",
        "Generated from the op declarations in `pagedir.dialect`; regenerate with",
        f"`pagedir-opt --show-dialect {namespace} > docs/{namespace}.md`.",
        "",
    ]
    out.append("IRDL prints these ops in generic form; attributes are in `{...}`. Ops with optional or")
    out.append("variadic operands carry `operandSegmentSizes`.")
    out.append("")
    for op in ops:
        out.append(f"## `{op.op_name()}`")
        out.append("")
        if op.summary:
            out.append(op.summary[0].upper() + op.summary[1:] + ".")
            out.append("")
        if op.description:
            out.append(op.description.strip())
            out.append("")
        if op.operands:
            out.append("| operand | type | arity | effect | |")
            out.append("|---|---|---|---|---|")
            for o in op.operands:
                out.append(f"| `{o.name}` | {o.constraint.description} | {o.arity} | {(o.effect or '-') + (' (every element)' if o.overwrites else '')} | {o.doc} |")
            out.append("")
        if op.results:
            out.append("| result | type | |")
            out.append("|---|---|---|")
            for r in op.results:
                out.append(f"| `{r.name}` | {r.constraint.description} | {r.doc} |")
            out.append("")
        if op.attributes:
            out.append("| attribute | kind | required | default | |")
            out.append("|---|---|---|---|---|")
            for a in op.attributes:
                default = "" if a.default is None else f"`{a.default}`"
                out.append(f"| `{a.name}` | {a.kind.description} | {'yes' if a.required else 'no'} | {default} | {a.doc} |")
            out.append("")
        checks = op.verify.__doc__ if op.verify is not OpDef.verify else None
        if checks:
            out.append("Verifier: " + " ".join(checks.split()))
            out.append("")
        if op.regions:
            out.append(f"Regions: {op.regions}.")
            out.append("")
        if op.marker:
            out.append("Marker op: no memory effects; never counted as an access by liveness analysis.")
            out.append("")
        if op.example:
            out.append("```mlir")
            out.append(op.example.strip())
            out.append("```")
            out.append("")
    return "\n".join(out)
