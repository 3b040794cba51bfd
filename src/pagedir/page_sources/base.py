"""The interface every page-table form implements (see :mod:`pagedir.page_sources`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import mlir.ir as ir
import numpy as np
from mlir.dialects import arith

I32 = 32
I64 = 64


def index_const(value: int) -> ir.Value:
    """``arith.constant value : index``."""
    return arith.constant(ir.IndexType.get(), value)


def int_const(bits: int, value: int) -> ir.Value:
    return arith.constant(ir.IntegerType.get_signless(bits), value)


def value_bytes(type_: ir.Type) -> int:
    """Bytes of one scalar element (the passes' ``pagedir.dialect.types.element_bytes`` of a scalar)."""
    return max(1, type_.width // 8)


def dim_text(extent: int) -> str:
    """An extent as MLIR writes it in a type: ``?`` when dynamic."""
    return "?" if extent == ir.ShapedType.get_dynamic_size() else str(extent)


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op defining ``value``, None for a block argument."""
    owner = value.owner
    return owner if isinstance(owner, ir.Operation | ir.OpView) else None


def defined_by(value: ir.Value, name: str) -> bool:
    op = defining_op(value)
    return op is not None and op.name == name


#: Ops without effects that :func:`before_invariant_loops` moves out of a loop with their users.
_MOVABLE = ("affine.apply", "arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.divui", "arith.remui",
            "arith.index_cast", "arith.index_castui", "arith.select", "arith.cmpi", "arith.andi")


def before_invariant_loops(value: ir.Value) -> ir.InsertionPoint:
    """An insertion point before the outermost ``scf.for`` around the current insertion point whose
    iterations all see the same ``value``, the ops computing ``value`` (effect-free: ``_MOVABLE``)
    moved before it; the current insertion point when ``value`` varies in the innermost loop.

    Loads from memory the kernel never writes placed there run once instead of per iteration:
    LLVM does not hoist them itself, the barriers in a KV loop holding every load in place."""
    point = ir.InsertionPoint.current
    loops = []
    op = point.block.owner
    while op is not None and op.name != "func.func":
        if op.name == "scf.for":
            loops.append(op)
        op = op.parent
    for loop in loops:
        if not _hoist(value, loop):
            break
        point = ir.InsertionPoint(loop)
    return point


def _inside(value: ir.Value, loop: ir.Operation) -> bool:
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner  # a block argument: the op holding its block
    while op is not None and op.name != "func.func":
        if op == loop:
            return True
        op = op.parent
    return False


def _hoist(value: ir.Value, loop: ir.Operation) -> bool:
    """Make ``value`` defined before ``loop`` by moving the effect-free ops computing it there; False
    when it depends on the loop (its induction variable, an effect inside it)."""
    if not _inside(value, loop):
        return True
    op = value.owner
    if isinstance(op, ir.Block) or op.name not in _MOVABLE or not all(_hoist(o, loop) for o in op.operands):
        return False
    op.move_before(loop)
    return True


class RunTimeOperand(Protocol):
    """An operand's memory at run time, as the interpreter hands it to a form."""

    shape: tuple[int, ...]
    base: int  # its first byte's address
    elem_size: int  # bytes per element

    def read(self, indices: tuple[np.ndarray, ...]) -> np.ndarray:
        """The integer elements at ``indices`` (one array per leading dim; the others 0), as int64."""


class RunTimePages:
    """A paged source at run time (the interpreter's reading): its ``[B, P, S]`` shape, where each page
    lies and what the form carries besides."""

    def __init__(self, shape: tuple[int, int, int], seq_len_k: int | None = None):
        self.shape = shape
        self.seq_len_k = seq_len_k  # tokens per sequence when the last page is partly filled

    def addresses(self, batch: np.ndarray, page: np.ndarray) -> np.ndarray:
        """The address of page ``page`` (inside the table) of sequence ``batch``; 0 for a null page."""
        raise NotImplementedError

    def seq_lens(self) -> np.ndarray | None:
        """The sequence lengths the form carries (:meth:`PageSource.lengths`), else None."""
        return None

    def element_offset(self, offset: np.ndarray) -> np.ndarray:
        """Elements from a page's address to element ``offset`` of the (virtual) page."""
        return offset


@dataclass
class CheckKv:
    """K and V of ``pagedir-run --check``'s attention case as a form holds them (:meth:`PageSource.check_kv`)."""

    #: K's and V's argument values.
    arguments: tuple[Any, Any]
    #: K and V ``[B, Hkv, Sk, D]`` as a kernel reads them (the reference's input).
    refs: tuple[np.ndarray, np.ndarray]
    #: The per-token-head scale caches' argument values, by name.
    scales: dict[str, Any]
    #: Device arrays the arguments point at (pages), kept alive with the case.
    keep_alive: list = field(default_factory=list)


class PageSource:
    """One K or V operand of ``rock.attention`` (or a per-token scale cache, or the source of a paged
    ``rock.blockwise_load_tile``) in its form: what the verifier, the loader and the threadwise lowering
    ask about where its elements lie. A paged source is read as ``memref<B x P x S x T>``: virtual page
    ``p`` of sequence ``b`` holds ``S`` elements of the per-sequence logical ``[Hkv, Sk, D]``, flattened.

    The loader reads a tile's pages once per tile as *entries* (a pointer, a block id and its head, ...),
    indexed by ``(batch, page)`` with the page inside the table; from an entry the form says the page's
    i64 address and whether it names memory (``live``). Inside a page, element ``o`` lies
    :meth:`page_offset` elements past the page's address."""

    #: The form's name, as ``pagedir-gen --page-table`` spells it.
    name = ""
    #: Whether the values are cut into pages (``memref<B x P x S x T>``), not dense ``[B, Hkv, Sk, D]``.
    paged = True
    #: Dims, besides the batch, that may be dynamic (``?``) in rock.attention's K/V operand.
    dynamic_dims: frozenset[int] = frozenset()

    def __init__(self, value: ir.Value):
        self.value = value

    @staticmethod
    def matches(value: ir.Value) -> bool:
        """Whether ``value`` is given in this form (the registry asks each form in turn)."""
        raise NotImplementedError

    # --- the verifier -----------------------------------------------------------------------------

    def kv_shape(self, num_heads_kv: int, head_dim: int) -> tuple[int, int, int | None] | str:
        """(batch, Hkv, Sk) of K/V in this form (Sk None: known at run time), or why the shape is wrong."""
        type_ = self.value.type
        if type_.rank != 3:
            return f"rock.deref result must be memref<B x P x S x T>, got {type_}"
        batch, pages, page_size = type_.shape
        if type_.is_dynamic_dim(1):  # a dynamic view: max_blocks (and the capacity) are known at run time
            return batch, num_heads_kv, None
        per_batch = pages * page_size
        tokens = self.stated_seq_len_k()
        if tokens is not None:
            needed = num_heads_kv * tokens * head_dim
            if not (pages - 1) * page_size < needed <= per_batch:
                return (f"seq_len_k = {tokens} tokens of num_heads_kv x head_dim = {num_heads_kv} x {head_dim} are "
                        f"{needed} elements per batch, which {pages} pages of {page_size} elements do not end in")
            return batch, num_heads_kv, tokens
        if per_batch % (num_heads_kv * head_dim):
            return (
                f"paged K/V hold {pages} pages x {page_size} elements = {per_batch} elements per batch, "
                f"not a whole number of tokens of num_heads_kv x head_dim = {num_heads_kv} x {head_dim}"
            )
        return batch, num_heads_kv, per_batch // (num_heads_kv * head_dim)

    def stated_seq_len_k(self) -> int | None:
        """The tokens per sequence the form states when its pages are not all full, else None."""
        return None

    def lengths(self) -> tuple[ir.Value, ...] | None:
        """The operands that give each sequence's length when the form carries them (then rock.attention
        takes no ``seq_lens``), else None."""
        return None

    def verify_lengths(self, k: PageSource, v: PageSource, seq_lens: ir.Value | None) -> Iterator[str]:
        """Why K ``k`` and V ``v`` (one of them this source, which carries :meth:`lengths`) disagree on the
        lengths, or rock.attention gives ``seq_lens`` too."""
        return iter(())

    def scale_cache_error(self, scales: ir.Value, num_heads_kv: int, head_dim: int) -> str | None:
        """Why the f32 scale cache ``scales`` (one scale per token and KV head) does not fit this K (or V)
        cache, else None: it must be in the same form with a head dim of 1."""
        raise NotImplementedError

    def batch_operands(self) -> list[tuple[ir.Value, int]]:
        """``(value, extra)`` for each value whose dim 0 is the batch plus ``extra``."""
        return [(self.value, 0)]

    # --- the loader and the threadwise lowering ----------------------------------------------------

    @property
    def table(self) -> ir.Value:
        """The operand rock.blockwise_load_tile reads a tile's pages from (its ``page_table``)."""
        raise NotImplementedError

    def page_count(self) -> ir.Value:
        """Pages per sequence (index): static, or read at run time."""
        return index_const(self.value.type.shape[1])

    def page_address(self, batch: ir.Value, page: ir.Value) -> ir.Value:
        """The i64 address of ``page`` (index, inside the table) of ``batch``; 0 for a null page."""
        raise NotImplementedError

    #: Whether the threadwise lowering divides pages into (head, slot) across the lanes of a wave
    #: (see :meth:`slots_per_sequence`) rather than per row in scalar code.
    divides_pages_across_lanes = False

    def read_entries(self, places: list[tuple[ir.Value, ir.Value]],
                     heads_slots: list[tuple[ir.Value, ir.Value]] | None = None) -> list:
        """The entry of each ``(batch, page)`` (``page`` an i32 inside the table), every read issued after
        all index arithmetic and before any use (one wait on a wave's scalar loads)."""
        raise NotImplementedError

    def entry_address(self, entry) -> ir.Value:
        """The i64 address of an entry's page, meaningful where :meth:`entry_live`."""
        raise NotImplementedError

    def entry_live(self, in_table: ir.Value, entry) -> ir.Value:
        """Whether the page (inside the table where ``in_table``) names memory."""
        raise NotImplementedError

    def entries_adjacent(self, rows: list[tuple[ir.Value, object]], first_ptr: ir.Value, pages_per_row: int,
                         page_bytes: int) -> ir.Value:
        """Whether each row ``r``'s page (``(in_table, entry)``, virtual page row 0's plus ``r * pages_per_row``)
        lies ``r * pages_per_row`` page strides (``page_bytes``) after row 0's (at ``first_ptr``) in memory,
        and row 0's is live."""
        raise NotImplementedError

    def page_offset(self, offset: ir.Value, page_size: int) -> tuple[ir.Value, int]:
        """(element offset from the page's address, elements one descriptor of the page covers) of element
        ``offset`` of a virtual page of ``page_size`` elements."""
        return offset, page_size

    def page_stride_and_extent(self, page_size: int) -> tuple[int, int]:
        """(elements from a page's address to the page physically after it, elements a page spans)."""
        return page_size, page_size

    def contiguous_run(self, page_size: int) -> tuple[int, int]:
        """(step, count): from an element ``o`` of a virtual page whose ``o floordiv step`` is a multiple of
        ``count``, elements ``o, o + step, ..., o + (count - 1) * step`` lie side by side in memory. A step of 1:
        loads run along a token's row; a step of D (a D-major pool): along the tokens."""
        return 1, page_size

    # --- the interpreter ---------------------------------------------------------------------------

    @property
    def run_time_operands(self) -> list[ir.Value]:
        """The values :meth:`at_run_time` reads: the defining op's operands."""
        return list(self.value.owner.operands)

    def at_run_time(self, operands: list[RunTimeOperand]) -> RunTimePages:
        """The pages of this source, its :attr:`run_time_operands` in memory as given."""
        raise NotImplementedError

    # --- pagedir-run --check -------------------------------------------------------------------------

    @staticmethod
    def check_kv(device: Any, kv: tuple[np.ndarray, np.ndarray], refs: tuple[np.ndarray, np.ndarray],
                 scales: dict[str, np.ndarray], *, page_size: int | None, seq_lens: np.ndarray | None,
                 rng: np.random.Generator, dtype: Any, placement: str, null_page: int | None) -> CheckKv:
        """K and V ``kv`` ``[B, Hkv, Sk, D]`` (``refs``: the values they stand for) and the per-token-head scale
        caches ``scales`` (``[B, Hkv, Sk]``, by name) as the arguments of this form on ``device``, for the
        check's attention case: dense, as given. A paged form places its pages of ``page_size`` elements by
        ``placement`` (:data:`pagedir.reference.PAGE_PLACEMENTS`) with ``rng``, as ``dtype`` on the device, null
        past ``seq_lens`` (None: every page uploaded), and the first page of sequence ``null_page`` (None: none) null though
        it holds keys."""
        return CheckKv(kv, refs, scales)
