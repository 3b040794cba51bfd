"""Alias scopes on LDS accesses for the waits of direct-to-LDS loads (``rock-backend-lds-alias-scopes``).

LLVM (SIInsertWaitcnts) waits for every direct-to-LDS load still in flight (``buffer_load ... lds``:
``rocdl.raw.ptr.buffer.load.lds``) before an LDS access, ``s_waitcnt vmcnt(0)`` when the loads of two tiles
are in flight, unless alias-scope metadata on the memory operands says the access and the load touch
different memory: then it waits only for the loads the access may alias (a load keeps a slot per distinct
``!alias.scope``; an access without metadata waits for all of them). rock-pipeline issues the direct loads
of the K tile during the V tile's math and the other way round (``TargetFamily.pipelined_direct_loads``),
so without the metadata each tile's first read drains the other tile's loads.

The pass works on the LLVM dialect, after the memref lowering, where every LDS pointer is built from the
kernel's one workgroup allocation (an ``addr_space = 3`` global) by ``rock-reuse-lds``'s views: a view is a
descriptor whose aligned pointer is a constant byte offset from the allocation's (``memref.view`` of the
``i8`` buffer), its size the descriptor's where its elements are bytes (an ``i8`` view, as rock-reuse-lds's
are: the source of the tiles' typed views); a view of another element type reaches the allocation's end. Each
LDS pointer is traced back, through GEPs, descriptors and the integer arithmetic of the direct loads'
addresses (``ptrtoint``, ``add``, ``readfirstlane``, ``inttoptr``; a ``select`` whose arms are all addresses),
to the one view it lies in: its *region*, a byte range ``[start, end)`` of the allocation. A pointer that
reaches no such view, or two, or a value the trace does not know, has no region. Values computed from no LDS
pointer or descriptor (forward through any op, a loaded value excepted) are offsets, which keeps the trace to
the short chains of addresses; an address carried by a loop has no region. The trace takes an address computed
from a view's pointer to stay in that view, as a memref access does, and a direct load's wave to write its
lanes' bytes from its pointer within its view (rock-blockwise-load copies a tile into the tile, with an
instruction offset of 0: LLVM adds that offset to the LDS address too).

Where the direct loads write at least two pairwise disjoint regions (the two tiles of a pipelined loop;
unpipelined, rock-reuse-lds puts both tiles on the same bytes and nothing changes), every LDS load, store
and direct load with a region gets ``alias_scopes`` = its region's scope and ``noalias_scopes`` = the
scopes of the direct loads' regions disjoint from its own. Both claims hold whatever the order of the
accesses: the regions are fixed byte ranges for the whole kernel. Accesses without a region keep no
metadata (LLVM then waits for every direct load, as before).

In such a kernel the LDS barriers (``rocdl.barrier``: a workgroup-scope release fence, ``s_barrier``, an acquire
fence) become what ``rock.lds_barrier`` asks for: ``s_waitcnt lgkmcnt(0)``, ``s_barrier``, between two
single-thread fences (they keep LLVM from moving memory accesses across the barrier and emit no code). The
release fence waits for every vector memory access, direct loads to LDS included (``vmcnt(0)``): at each
barrier of the other tile's math it would drain the copies in flight. The kernel's own waits
(rock-blockwise-load's ``s_waitcnt vmcnt(0)`` before the barrier after a tile's copies) publish the copies.
"""

from __future__ import annotations

import mlir.ir as ir
from mlir.dialects import llvm, rocdl

#: The direct-to-LDS load ops and the operand holding their LDS pointer.
DMA_OPS = {"rocdl.raw.ptr.buffer.load.lds": 1, "rocdl.global.load.lds": 1, "rocdl.load.to.lds": 1}
#: Ops whose result is an address (or the integer form of one) as exact as their traced operands (offsets
#: added to an address); ``llvm.select``, which picks one arm, is traced apart.
ADDRESS_OPS = frozenset({"llvm.inttoptr", "llvm.ptrtoint", "llvm.trunc", "llvm.zext", "llvm.sext", "llvm.add",
                         "rocdl.readfirstlane", "llvm.bitcast", "llvm.addrspacecast", "llvm.or"})
#: Values carrying no address: their operands are data (a loaded value is never an LDS address here).
LEAF_OPS = frozenset({"llvm.mlir.constant", "llvm.mlir.poison", "llvm.mlir.undef", "llvm.mlir.zero", "llvm.load"})

UNKNOWN = "unknown"
#: ``s_waitcnt lgkmcnt(0)`` in the gfx9 encoding (vmcnt and expcnt at their maximum: no wait on them); the
#: chips with direct-to-LDS loads (``Chip.lds_dma_sizes``) are CDNA chips, all gfx9.
WAIT_LGKMCNT_0 = 0xC07F
#: LLVM::GEPOp::kDynamicIndex: the index is the next operand.
DYNAMIC_INDEX = -2147483648


def lds_pointer(value: ir.Value) -> bool:
    return str(value.type) == "!llvm.ptr<3>"


class Regions:
    """The region (``(global, start, end)``) of each traced value of ``func``; memoized, cycles read as unknown."""

    def __init__(self, func: ir.Operation) -> None:
        self.memo: dict = {}
        self.carriers = address_carriers(func)

    def of_pointer(self, value: ir.Value):
        """The region an LDS pointer lies in, None when it has none (see the module docstring)."""
        found = self.trace(value)
        return next(iter(found)) if found != UNKNOWN and len(found) == 1 else None

    def trace(self, value: ir.Value, view: ir.Value | None = None):
        """The regions ``value`` may point into: a frozenset, empty for a value carrying no address, or UNKNOWN.
        ``view``: the descriptor the value was extracted from (its aligned pointer), for the region's size."""
        key = (value, view)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = UNKNOWN  # a cycle (a loop-carried address) stays unknown
        self.memo[key] = found = self._trace(value, view)
        return found

    def _trace(self, value: ir.Value, view: ir.Value | None):
        if value not in self.carriers:
            return frozenset()  # computed from no LDS address: data (an offset, a size)
        if not isinstance(value, ir.OpResult):
            return UNKNOWN  # an address carried by a loop or a branch
        op = value.owner
        name = op.name
        if name in LEAF_OPS:
            return UNKNOWN if name == "llvm.load" and not isinstance(value.type, ir.IntegerType | ir.VectorType
                                                                      | ir.FloatType) else frozenset()
        if name == "llvm.getelementptr":
            return self.gep(op, view)
        if name == "llvm.extractvalue":
            if list(ir.DenseI64ArrayAttr(op.attributes["position"])) != [1]:
                return UNKNOWN if lds_pointer(value) else frozenset()  # a size or stride
            field = aligned_pointer(op.operands[0])
            return UNKNOWN if field is None else self.trace(field, op.operands[0])
        if name == "llvm.select":  # either arm: an arm computed from no LDS address may point anywhere
            arms = [self.trace(v) for v in op.operands[1:]]
            return UNKNOWN if frozenset() in arms else union(arms)
        if name in ADDRESS_OPS:
            return union(self.trace(v) for v in op.operands)
        if lds_pointer(value) or not isinstance(value.type, ir.IntegerType):
            return UNKNOWN
        # Other integer arithmetic (offsets: mul, xor of a swizzle, ...): data, unless an address flows into it.
        return frozenset() if all(self.trace(v) == frozenset() for v in op.operands) else UNKNOWN

    def gep(self, op: ir.Operation, view: ir.Value | None):
        base = op.operands[0]
        allocation = workgroup_global(base)
        if allocation is not None:  # the allocation itself: a view's offset, or the [0, 0] of it
            symbol, total = allocation
            offset = constant_offset(op)
            if offset == 0 and view is None:
                return frozenset({(symbol, None, None)})  # the whole allocation
            size = view_bytes(view) if view is not None and gep_element_bytes(op) == 1 and holds_bytes(view) else None
            end = offset + size if offset is not None and size is not None else total
            if offset is None or end is None:
                return UNKNOWN
            return frozenset({(symbol, offset, end)})  # a view without a byte size: up to the allocation's end
        if any(self.trace(v) != frozenset() for v in op.operands[1:]):
            return UNKNOWN
        return self.trace(base)


def address_carriers(func: ir.Operation) -> set:
    """The values of ``func`` that may hold an LDS address: LDS pointers and descriptors, and every value computed
    from one (forward through any op but a load's address; into the block arguments a branch passes one to)."""
    found: set = set()
    pending: list = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        for region in op.regions:
            for block in region.blocks:
                pending.extend(arg for arg in block.arguments if "ptr<3>" in str(arg.type))
        pending.extend(result for result in op.results if "ptr<3>" in str(result.type))
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    while pending:
        value = pending.pop()
        if value in found:
            continue
        found.add(value)
        for use in value.uses:
            owner = use.owner
            if owner.name == "llvm.load":
                continue  # the loaded value is data (a loaded LDS pointer is a ptr<3> result: found above)
            pending.extend(owner.results)
            for successor in owner.successors:
                pending.extend(successor.arguments)
    return found


def union(sets):
    found: frozenset = frozenset()
    for s in sets:
        if s == UNKNOWN:
            return UNKNOWN
        found |= s
    return found


def aligned_pointer(descriptor: ir.Value) -> ir.Value | None:
    """The value inserted at position [1] of a descriptor built by ``llvm.insertvalue``, None if none is."""
    while isinstance(descriptor, ir.OpResult) and descriptor.owner.name == "llvm.insertvalue":
        op = descriptor.owner
        if list(ir.DenseI64ArrayAttr(op.attributes["position"])) == [1]:
            return op.operands[1]
        descriptor = op.operands[0]
    return None


def workgroup_global(value: ir.Value) -> tuple[str, int | None] | None:
    """The symbol of the LDS global ``value`` is the address of (through descriptors and its [0, 0] GEP) and
    its bytes (from that GEP's array type; None when not known)."""
    total = None
    while isinstance(value, ir.OpResult):
        op = value.owner
        if op.name == "llvm.mlir.addressof" and lds_pointer(value):
            return ir.FlatSymbolRefAttr(op.attributes["global_name"]).value, total
        if op.name == "llvm.getelementptr" and constant_offset(op) == 0 and len(op.operands) == 1:
            total = array_bytes(ir.TypeAttr(op.attributes["elem_type"]).value)
            value = op.operands[0]
        elif op.name == "llvm.extractvalue" and list(ir.DenseI64ArrayAttr(op.attributes["position"])) == [1]:
            value = aligned_pointer(op.operands[0])
            if value is None:
                return None
        else:
            return None
    return None


def array_bytes(array: ir.Type) -> int | None:
    """The bytes of ``!llvm.array<N x i8>``, None for another type."""
    text = str(array)
    if text.startswith("!llvm.array<") and text.endswith(" x i8>"):
        return int(text[len("!llvm.array<"):-len(" x i8>")])
    return None


def constant_offset(gep: ir.Operation) -> int | None:
    """A GEP's offset in its element type: its one index, or 0 for ``[0, 0]``; None when not a constant."""
    dynamic = iter(gep.operands[1:])
    indices = []
    for index in ir.DenseI32ArrayAttr(gep.attributes["rawConstantIndices"]):
        if index == DYNAMIC_INDEX:
            value = next(dynamic)
            if not isinstance(value, ir.OpResult) or value.owner.name != "llvm.mlir.constant":
                return None
            index = ir.IntegerAttr(value.owner.attributes["value"]).value
        indices.append(index)
    if indices == [0, 0]:
        return 0
    return indices[0] if len(indices) == 1 else None


def gep_element_bytes(gep: ir.Operation) -> int | None:
    element = ir.TypeAttr(gep.attributes["elem_type"]).value
    return 1 if isinstance(element, ir.IntegerType) and element.width == 8 else None


def holds_bytes(descriptor: ir.Value) -> bool:
    """Whether the descriptor's elements are bytes: its aligned pointer is indexed by an ``i8`` GEP (the source
    of a ``memref.view``, which must be ``i8``, or a byte access). A view of any element type is built on an
    ``i8`` GEP and its size counts its own elements: ``memref<1024xf16>`` spans 2048 bytes."""
    for use in descriptor.uses:
        field = use.owner
        if field.name != "llvm.extractvalue" or list(ir.DenseI64ArrayAttr(field.attributes["position"])) != [1]:
            continue
        if any(gep.owner.name == "llvm.getelementptr" and gep.operand_number == 0 and gep_element_bytes(gep.owner) == 1
               for gep in field.results[0].uses):
            return True
    return False


def view_bytes(descriptor: ir.Value) -> int | None:
    """The elements of a rank-1, unit-stride descriptor whose size is a constant (an ``i8`` view: its bytes)."""
    size = stride = None
    while isinstance(descriptor, ir.OpResult) and descriptor.owner.name == "llvm.insertvalue":
        op = descriptor.owner
        position = list(ir.DenseI64ArrayAttr(op.attributes["position"]))
        value = op.operands[1]
        if position in ([3, 0], [4, 0]) and isinstance(value, ir.OpResult) and value.owner.name == "llvm.mlir.constant":
            constant = ir.IntegerAttr(value.owner.attributes["value"]).value
            if position == [3, 0] and size is None:
                size = constant
            elif position == [4, 0] and stride is None:
                stride = constant
        elif position[0] in (3, 4) and len(position) == 2 and position[1] > 0:
            return None  # rank above 1
        descriptor = op.operands[0]
    return size if stride == 1 else None


def scope_attributes(regions: list, context: ir.Context) -> dict:
    """One alias scope per region, in one domain (string ids: the same text on every compile)."""
    domain = '#llvm.alias_scope_domain<id = "lds", description = "LDS regions (rock-backend-lds-alias-scopes)">'
    names = {region: f"lds_{region[1]}_{region[2]}" for region in regions}
    text = ", ".join(f'#llvm.alias_scope<id = "{names[r]}", domain = {domain}, description = "{r[0]}[{r[1]}, {r[2]})">'
                     for r in regions)
    parsed = ir.ArrayAttr(ir.Attribute.parse(f"[{text}]", context))
    return {region: parsed[i] for i, region in enumerate(regions)}


def annotate_function(func: ir.Operation) -> int:
    """Scope the LDS accesses of one ``llvm.func`` (module docstring); the number of accesses annotated."""
    pointers: list = []  # (op, its LDS pointer, whether a direct load)

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name in DMA_OPS:
            pointers.append((op, op.operands[DMA_OPS[name]], True))
        elif name == "llvm.load" and lds_pointer(op.operands[0]):
            pointers.append((op, op.operands[0], False))
        elif name == "llvm.store" and lds_pointer(op.operands[1]):
            pointers.append((op, op.operands[1], False))
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    if sum(1 for _, _, direct in pointers if direct) < 2:
        return 0  # no two tiles of copies to tell apart
    regions = Regions(func)
    dma = [(op, regions.of_pointer(pointer)) for op, pointer, direct in pointers if direct]
    accesses = [(op, regions.of_pointer(pointer)) for op, pointer, direct in pointers if not direct]
    written = sorted({region for _, region in dma if region is not None and region[1] is not None})
    if any(region is None or region[1] is None for _, region in dma):
        return 0  # a direct load that may write anywhere: no access can be proved apart from it
    disjoint = [(a, b) for a in written for b in written if a < b and apart(a, b)]
    if not disjoint:
        return 0
    known = sorted({region for _, region in dma + accesses if region is not None and region[1] is not None})
    scopes = scope_attributes(known, func.context)
    lds_barriers(func)
    count = 0
    for op, region in dma + accesses:
        if region is None or region[1] is None:
            continue
        op.attributes["alias_scopes"] = ir.ArrayAttr.get([scopes[region]])
        noalias = [scopes[other] for other in written if apart(other, region)]
        if noalias:
            op.attributes["noalias_scopes"] = ir.ArrayAttr.get(noalias)
        count += 1
    return count


def lds_barriers(func: ir.Operation) -> None:
    """Each ``rocdl.barrier`` of ``func`` -> lgkmcnt(0) wait and ``s_barrier`` between single-thread fences."""
    barriers = []
    func.walk(lambda op: (barriers.append(op) if op.name == "rocdl.barrier" else None, ir.WalkResult.ADVANCE)[1])
    for barrier in barriers:
        with barrier.location, ir.InsertionPoint(barrier):
            rocdl.s_waitcnt(WAIT_LGKMCNT_0)
            llvm.fence(llvm.AtomicOrdering.release, syncscope="singlethread")
            rocdl.s_barrier()
            llvm.fence(llvm.AtomicOrdering.acquire, syncscope="singlethread")
        barrier.erase()


def apart(a, b) -> bool:
    return a[0] != b[0] or a[2] <= b[1] or b[2] <= a[1]


def annotate_lds_alias_scopes(module: ir.Operation) -> None:
    """Every ``llvm.func`` of the module's ``gpu.module``\\s (module docstring)."""

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "llvm.func":
            annotate_function(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(visit)
