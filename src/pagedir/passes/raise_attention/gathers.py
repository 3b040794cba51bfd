"""Where Q, K and V come from: GQA's repeated heads, and the forms of
:data:`~pagedir.passes.raise_attention.GATHER_FORMS`: a dense argument, a page gather through a pointer
table, a cache pool gathered through a block table or a CSR table."""

from __future__ import annotations

import mlir.ir as ir

from pagedir.passes.raise_attention.pattern import (
    NoMatch, Source, argument_of, body, cast_of, describe, dims, dims0, generic_inputs, index_dim, kinds_of, maps_of,
    produced_by, producer,
)


def repeated_heads(value: ir.Value, what: str) -> tuple[ir.Value, int]:
    """(the [B, Hkv, Sk, D] tensor, G) of ``collapse(broadcast(x, dims = [2]), [[0], [1, 2], [3], [4]])``, or of the
    5-d ``broadcast(x)`` itself (torch-mlir collapses it with the batch for P V's bmm); G = 1 without (another
    collapse is not GQA: an hnd block gather folds its slots and tokens with one). The broadcast is a
    ``linalg.broadcast`` or torch-mlir's yield-only ``linalg.generic`` reading ``(d0, d1, d3, d4)``."""
    value = through_exact_casts(value)  # SDPA upcasts the repeated K and V
    collapse = produced_by(value, "tensor.collapse_shape")
    repeated = collapse.operands[0] if collapse is not None else value
    if ir.ShapedType(repeated.type).rank != 5:
        return value, 1
    broadcast = produced_by(repeated, "linalg.broadcast")
    shape = list(ir.RankedTensorType(repeated.type).shape)
    reassociation = str(collapse.attributes["reassociation"]).replace(" ", "") if collapse is not None else "[[0],[1,2],[3],[4]]"
    if broadcast is not None:
        added = list(ir.DenseI64ArrayAttr(broadcast.attributes["dimensions"]))
        source = broadcast.operands[0]
    else:
        broadcast = produced_by(repeated, "linalg.generic")
        if broadcast is None or len(body(broadcast)[2]) != 1:  # not yield-only: a gather, folded by its own collapse
            return value, 1
        source, added = generic_broadcast(broadcast, what)
    if added != [2] or reassociation != "[[0],[1,2],[3],[4]]":
        raise NoMatch(f"{what} heads are repeated by a broadcast of dims {added} folded as {reassociation}: query head h "
                      f"would use kv head h % {shape[2]}, not h / {shape[2]} as in repeat_interleave (rock.attention's "
                      f"GQA)", broadcast)
    return source, shape[2]


def generic_broadcast(op: ir.Operation, what: str) -> tuple[ir.Value, list[int]]:
    """(input, the dims it lacks) of a ``linalg.generic`` that yields its input, read through a projection."""
    ins, _ = generic_inputs(op)
    args, yielded, ops = body(op)
    maps = [dims(m) for m in maps_of(op)]
    if len(ins) != 1 or len(ops) != 1 or yielded != args[0] or "r" in kinds_of(op) or len(op.results) != 1 \
            or maps[0] is None or maps[1] != list(range(5)) or maps[0] != sorted(maps[0]) or len(set(maps[0])) != 4:
        raise NoMatch(f"the 5-d {what} before the heads are folded is not a broadcast of a 4-d tensor", op)
    return ins[0], [d for d in range(5) if d not in maps[0]]


def through_exact_casts(value: ir.Value) -> ir.Value:
    """``value`` before widening ``arith.extf`` generics (SDPA upcasts its f16 inputs to f32: exact)."""
    while (cast := cast_of(producer(value))) is not None and cast[1] == "arith.extf":
        value = cast[0]
    return value


def tensor_argument(value: ir.Value, what: str) -> ir.Value:
    op = produced_by(through_exact_casts(value), "bufferization.to_tensor")
    if op is None or not isinstance(op.operands[0], ir.BlockArgument):
        raise NoMatch(f"{what} is {describe(value)}, not a function argument (bufferization.to_tensor)", producer(value))
    return op.operands[0]


def dense_source(value: ir.Value) -> Source | None:
    op = produced_by(through_exact_casts(value), "bufferization.to_tensor")
    return Source(op.operands[0]) if op is not None and isinstance(op.operands[0], ir.BlockArgument) else None


def pointer_gather(value: ir.Value) -> Source | None:
    """expand(collapse(pages)) with ``pages[b, p, s] = load(inttoptr(table[b, p, 0] + s * bytes))``."""
    expand = produced_by(value, "tensor.expand_shape")
    collapse = produced_by(expand.operands[0], "tensor.collapse_shape") if expand is not None else None
    gather = produced_by(collapse.operands[0], "linalg.generic") if collapse is not None else None
    if gather is None or generic_inputs(gather)[0] or kinds_of(gather) != ["p", "p", "p"] \
            or [dims(m) for m in maps_of(gather)] != [[0, 1, 2]] or len(gather.results) != 1:
        return None
    _, yielded, _ = body(gather)
    load = produced_by(yielded, "llvm.load")
    pointer = produced_by(load.operands[0], "llvm.inttoptr") if load is not None else None
    address = produced_by(pointer.operands[0], "arith.addi") if pointer is not None else None
    if address is None:
        return None
    page_elements = ir.RankedTensorType(gather.results[0].type).shape[2]
    element_bytes = ir.RankedTensorType(gather.results[0].type).element_type.width // 8
    for base, offset in (address.operands, reversed(list(address.operands))):
        extract = produced_by(base, "tensor.extract")
        table = produced_by(extract.operands[0], "bufferization.to_tensor") if extract is not None else None
        if table is None or not isinstance(table.operands[0], ir.BlockArgument):
            continue
        index_dims = [index_dim(v) for v in list(extract.operands)[1:]]
        page = produced_by(extract.operands[3], "arith.constant") if len(extract.operands) == 4 else None
        if index_dims[:2] != [0, 1] or page is None or ir.IntegerAttr(page.attributes["value"]).value != 0 \
                or offset_of(offset) != (2, element_bytes):
            return None
        return Source(table.operands[0], page_elements)
    return None


def offset_of(value: ir.Value) -> tuple[int | None, int | None]:
    """(dim, bytes) of ``index_cast(linalg.index dim) * bytes``."""
    mul = produced_by(value, "arith.muli")
    if mul is None:
        return None, None
    for index, size in (mul.operands, reversed(list(mul.operands))):
        cast = produced_by(index, "arith.index_cast")
        constant = produced_by(size, "arith.constant")
        if cast is not None and constant is not None:
            return index_dim(cast.operands[0]), ir.IntegerAttr(constant.attributes["value"]).value
    return None, None


RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape", "linalg.transpose")


def block_gather(value: ir.Value, then: list[int] | None = None) -> Source | None:
    """A cache pool read through a block table or a CSR table, reshaped to [B, Hkv, Sk, D].

    The gather is a parallel ``linalg.generic`` over ``[B, max_blocks, x, y, D]`` yielding
    ``pool[id, x, y, d]`` (``tensor.extract``), ``id`` being ``table[b, m]`` (an input of the
    generic, as torch-mlir lowers ``pool[block_table]``, or a ``tensor.extract``) or
    ``kv_indices[kv_indptr[b] + m]`` (csr; the slot may be clamped to the table with ``minsi``).
    Reshapes and transposes then have to lay the dims out as ``[b, head, (m, token), d]``: the
    pool's token dim decides the layout (dim 1: nhd, dim 2: hnd). ``then``: a transpose still to apply to
    ``value`` (K^T written as one transpose of the gather: K is that transpose undone on its last two dims)."""
    chain: list[ir.Operation] = []
    op = producer(value)
    while op is not None and op.name in RESHAPES:
        chain.append(op)
        op = producer(op.operands[0])
    if not chain or op is None or op.name != "linalg.generic" or kinds_of(op) != ["p"] * 5 \
            or dims(maps_of(op)[-1]) != list(range(5)) or len(op.results) != 1:
        return None
    found = gathered_pool(op)
    if found is None:
        return None
    source, axes = found
    groups = [[axis] for axis in axes]  # each dim of a tensor of the chain: the gather axes it folds, outer first
    extents = dict(zip(axes, ir.RankedTensorType(op.results[0].type).shape))
    for reshape in reversed(chain):
        groups = reshaped_groups(reshape, groups, extents)
        if groups is None:
            return None
    if then is not None:
        groups = [groups[d] for d in then]
    token = {"x": "nhd", "y": "hnd"}
    if len(groups) != 4 or groups[0] != ["b"] or groups[3] != ["d"] or len(groups[2]) != 2 or groups[2][0] != "m" \
            or groups[2][1] not in token or groups[1] != [{"x": "y", "y": "x"}[groups[2][1]]]:
        names = {"b": "b", "m": "slot", "x": "pool dim 1", "y": "pool dim 2", "d": "d"}
        laid = ", ".join("(" * (len(g) > 1) + ", ".join(names[a] for a in g) + ")" * (len(g) > 1) for g in groups)
        raise NoMatch(f"the gather of cache pool %arg{source.memref.arg_number} is reshaped to [{laid}]; "
                      f"[B, Hkv, Sk, D] takes [b, head, (slot, token), d] (a head's tokens block by block)", chain[0])
    source.layout = token[groups[2][1]]
    return source


def gathered_pool(op: ir.Operation) -> tuple[Source, list[str]] | None:
    """(the Source, the axis each dim of the gather's output is: b, m, x, y or d) of ``pool[id, x, y, d]``."""
    ins, _ = generic_inputs(op)
    args, yielded, _ = body(op)
    element = produced_by(yielded, "tensor.extract")
    pool = argument_of(element.operands[0]) if element is not None else None
    if pool is None or ir.MemRefType(pool.type).rank != 4 or len(element.operands) != 5:
        return None
    pool_dims = [index_dim(v) for v in list(element.operands)[2:]]
    block_id = unwrapped(cast_source(element.operands[1]), ir.MemRefType(pool.type).shape[0])
    batch_dim = slot_dim = None
    source = Source(pool)
    if block_id in args[: len(ins)]:  # table[b, m] as an input of the generic
        table = argument_of(widened(ins[args.index(block_id)]))
        reads = dims0(maps_of(op)[args.index(block_id)])
        if reads is not None and len(reads) == 2 and reads[0] is None \
                and ir.RankedTensorType(op.results[0].type).shape[0] == 1 and 0 not in reads + pool_dims:
            reads = [0, reads[1]]  # one sequence: torch-mlir reads its table row as (0, m)
        if table is None or reads is None or len(reads) != 2 or None in reads:
            return None
        batch_dim, slot_dim = reads
        source.table = table
    elif (extract := produced_by(block_id, "tensor.extract")) is not None:
        table = argument_of(extract.operands[0])
        if table is None:
            return None
        if ir.MemRefType(table.type).rank == 2:  # table[b, m]
            batch_dim, slot_dim = (index_dim(v) for v in list(extract.operands)[1:])
            source.table = table
        else:  # kv_indices[kv_indptr[b] + m]
            slot = csr_slot(extract.operands[1], ir.MemRefType(table.type).shape[0])
            if slot is None:
                return None
            source.indptr, batch_dim, slot_dim = slot
            source.table = table
    names = {batch_dim: "b", slot_dim: "m", pool_dims[0]: "x", pool_dims[1]: "y", pool_dims[2]: "d"}
    if None in names or sorted(names) != list(range(5)):
        return None
    axes = [names[d] for d in range(5)]
    shape = list(ir.RankedTensorType(op.results[0].type).shape)
    pool_shape = ir.MemRefType(pool.type).shape
    if [shape[axes.index(a)] for a in "xyd"] != list(pool_shape[1:]):
        return None  # part of a block: the view reads whole blocks
    for table in (source.table, source.indptr):
        if table is not None and str(ir.MemRefType(table.type).element_type) != "i32":
            raise NoMatch(f"the gather reads block ids from {table.type}: rock.block_table_view takes i32 tables "
                          f"(vLLM's block table, FlashInfer's kv_indptr and kv_indices)", op)
    batch, source.max_blocks = shape[axes.index("b")], shape[axes.index("m")]
    table_shape = list(ir.MemRefType(source.table.type).shape)
    if source.indptr is None and table_shape != [batch, source.max_blocks]:
        return None
    if source.indptr is not None and list(ir.MemRefType(source.indptr.type).shape) != [batch + 1]:
        return None
    return source, axes


def unwrapped(value: ir.Value, blocks: int) -> ir.Value:
    """``id`` of torch's negative-index wrap ``id < 0 ? id + blocks : id`` (a no-op for the ids >= 0 a block
    table holds; rock.block_table_view reads them as they are), else ``value``."""
    select = produced_by(value, "arith.select")
    if select is None:
        return value
    test, added, kept = select.operands
    compare, add = produced_by(test, "arith.cmpi"), produced_by(added, "arith.addi")
    if compare is None or add is None or compare.operands[0] != kept or int_constant(compare.operands[1]) != 0 \
            or str(compare.attributes["predicate"]).split(":")[0].strip() not in ("2", "slt") \
            or kept not in add.operands or int_constant(add.operands[1] if add.operands[0] == kept else add.operands[0]) != blocks:
        return value
    return kept


def widened(value: ir.Value) -> ir.Value:
    """The i32 table of an elementwise ``arith.extsi`` generic (torch-mlir widens an index tensor to i64), else ``value``."""
    op = produced_by(value, "linalg.generic")
    if op is None or len(generic_inputs(op)[0]) != 1 or len(op.results) != 1 or "r" in kinds_of(op):
        return value
    args, yielded, ops = body(op)
    extend = produced_by(yielded, "arith.extsi")
    rank = len(kinds_of(op))
    if extend is None or len(ops) != 2 or extend.operands[0] != args[0] or [dims(m) for m in maps_of(op)] != [list(range(rank))] * 2:
        return value
    return generic_inputs(op)[0][0]


def int_constant(value: ir.Value) -> int | None:
    op = produced_by(value, "arith.constant")
    return ir.IntegerAttr(op.attributes["value"]).value if op is not None and isinstance(op.attributes["value"], ir.IntegerAttr) else None


def cast_source(value: ir.Value) -> ir.Value:
    op = produced_by(value, "arith.index_cast")
    return op.operands[0] if op is not None else value


def csr_slot(value: ir.Value, nnz: int) -> tuple[ir.Value, int, int] | None:
    """(kv_indptr, batch dim, slot dim) of ``kv_indptr[b] + m``, optionally ``min(..., c >= nnz - 1)``."""
    clamp = producer(value)
    if clamp is not None and clamp.name in ("arith.minsi", "arith.minui"):
        for slot, bound in (clamp.operands, reversed(list(clamp.operands))):
            constant = produced_by(bound, "arith.constant")
            if constant is not None and ir.IntegerAttr(constant.attributes["value"]).value >= nnz - 1:
                value = slot
                break
        else:
            return None
    add = produced_by(value, "arith.addi")
    if add is None:
        return None
    for start, offset in (add.operands, reversed(list(add.operands))):
        extract = produced_by(cast_source(start), "tensor.extract")
        indptr = argument_of(extract.operands[0]) if extract is not None else None
        if indptr is not None and len(extract.operands) == 2 and index_dim(offset) is not None:
            batch = index_dim(extract.operands[1])
            return (indptr, batch, index_dim(offset)) if batch is not None else None
    return None


def reshaped_groups(op: ir.Operation, groups: list[list[str]], extents: dict[str, int]) -> list[list[str]] | None:
    """The dims of ``op``'s result as groups of gather axes, from those of its operand (None: a reshape
    that splits an axis)."""
    if op.name == "linalg.transpose":
        permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        return [groups[p] for p in permutation]
    reassociation = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
    if op.name == "tensor.collapse_shape":
        return [[axis for d in group for axis in groups[d]] for group in reassociation]
    sizes = list(ir.RankedTensorType(op.results[0].type).shape)  # expand: each result dim takes whole axes
    result: list[list[str]] = []
    for source_dim, group in enumerate(reassociation):
        axes = list(groups[source_dim])
        for d in group:
            taken, size = [], 1
            while axes and size < sizes[d]:
                taken.append(axes.pop(0))
                size *= extents[taken[-1]]
            if not taken or size != sizes[d]:
                return None
            result.append(taken)
        if axes:
            return None
    return result
