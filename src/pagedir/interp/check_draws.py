"""Which draws a check of a function runs: the launch sizes of a kernel with dynamic (``?``) sizes, the page
placements of a paged one, the edge draw of an attention function (:func:`check_draws`)."""

from __future__ import annotations

from dataclasses import dataclass

import mlir.ir as ir

from pagedir import reference
from pagedir.interp.launch import argument_count
from pagedir.passes.ir_utils import find_ops

@dataclass(frozen=True)
class LaunchSizes:
    """The sizes a kernel with dynamic (``?``) dims is checked at: one kernel, several launches."""

    batch: int
    max_blocks: int  # block slots per sequence
    num_blocks: int  # blocks in each cache pool

    def describe(self, pools: bool = True) -> str:
        """The sizes a launch used: the batch, and with cache pools (block-table views) their slots and blocks."""
        return f"batch {self.batch}, {self.max_blocks} block slots, {self.num_blocks} pool blocks" if pools else f"batch {self.batch}"


#: Two launches of one dynamic kernel: different batch sizes, block slots and pool sizes.
DYNAMIC_SIZES = (LaunchSizes(batch=2, max_blocks=4, num_blocks=11), LaunchSizes(batch=5, max_blocks=3, num_blocks=23))


#: A third launch for a dynamic split kernel (``rock.num_splits``): one long sequence, where the cost model
#: picks more splits than at the two sizes above (count 0), or a fixed count's splits each get several
#: tiles where above some got none.
LONG_SEQUENCE_SIZES = LaunchSizes(batch=1, max_blocks=12, num_blocks=13)


#: A dynamic kernel's edge draw: four sequences (:func:`~pagedir.interp.check_data.edge_lengths`,
#: :func:`~pagedir.interp.check_data.varlen_query_lengths`).
EDGE_SIZES = LaunchSizes(batch=4, max_blocks=3, num_blocks=13)


#: Launches of a kernel with a dynamic batch at no sequence (0 workgroups) and at one.
EMPTY_BATCH = LaunchSizes(batch=0, max_blocks=2, num_blocks=3)


ONE_SEQUENCE = LaunchSizes(batch=1, max_blocks=2, num_blocks=3)


#: The draw that reaches the edges, made once per attention function besides the page placements (its pages
#: shuffled): sequences of length 0, the capacity and 1 (:func:`~pagedir.interp.check_data.edge_lengths`), a
#: packed sequence without queries, null pages and block ids outside the pool in slots a sequence owns (they
#: read 0), a NaN and an Inf key some rows see (those rows compute NaN, the others not).
EDGES = "edges"


def has_dynamic_arguments(func: ir.Operation) -> bool:
    return any(isinstance(a.type, ir.MemRefType) and not ir.MemRefType(a.type).has_static_shape
               for a in list(func.regions[0].blocks[0].arguments)[: argument_count(func)])


def attention_signature(func: ir.Operation) -> bool:
    """Arguments (q, k_table, v_table, [seq_lens], out) as rock.attention's paged form takes them."""
    types = [a.type for a in list(func.regions[0].blocks[0].arguments)[: argument_count(func)]]
    if len(types) not in (4, 5) or not all(isinstance(t, ir.MemRefType) for t in types):
        return False
    q, k, v, out = types[0], types[1], types[2], types[-1]
    tables = all(t.rank == 3 and t.shape[2] == 1 and str(t.element_type) == "i64" for t in (k, v))
    return q.rank == 4 and list(q.shape) == list(out.shape) and tables


def launch_size_sets(func: ir.Operation) -> list[LaunchSizes | None]:
    """:data:`DYNAMIC_SIZES` for a function with dynamic arguments (and :data:`LONG_SEQUENCE_SIZES` when
    it splits), else ``[None]`` (its types say)."""
    if not has_dynamic_arguments(func):
        return [None]
    splits = func.attributes["rock.num_splits"] if "rock.num_splits" in func.attributes else None
    split = isinstance(splits, ir.IntegerAttr) and splits.value != 1
    return list(DYNAMIC_SIZES) + ([LONG_SEQUENCE_SIZES] if split else [])


def page_placements(func: ir.Operation) -> list[str]:
    """Where the pages of ``func``'s checks lie: every placement of :data:`pagedir.reference.PAGE_PLACEMENTS`
    (shuffled, adjacent, switching mid-sequence) for an attention function reading pages, else shuffled only
    (the placement draws nothing for it)."""
    def pointer_table(type_: ir.Type) -> bool:  # [B, P, 1] i64 (the signature of a lowered kernel has no rock.deref)
        return isinstance(type_, ir.MemRefType) and type_.rank == 3 and str(type_.element_type) == "i64"

    if "rock.check" in func.attributes:  # its generator draws its own case
        return ["shuffled"]
    attention = find_ops(func, "rock.attention", "rock.gridwise_attention_accel") or attention_signature(func)
    paged = bool(find_ops(func, "rock.block_table_view")) or bool(attention and (
        find_ops(func, "rock.deref") or any(pointer_table(a.type) for a in func.regions[0].blocks[0].arguments)))
    return list(reference.PAGE_PLACEMENTS) if paged else ["shuffled"]


def check_draws(func: ir.Operation) -> list[tuple[LaunchSizes | None, str]]:
    """Every (launch sizes, placement) a check of ``func`` runs: each launch size set (:func:`launch_size_sets`)
    with each page placement (:func:`page_placements`); then for an attention function the edge draw
    (:data:`EDGES`), and with a dynamic batch launches at batch 0 and batch 1 (unless a size set has it)."""
    draws = [(sizes, placement) for sizes in launch_size_sets(func) for placement in page_placements(func)]
    attention = find_ops(func, "rock.attention", "rock.gridwise_attention_accel", "rock.block_table_view")
    if "rock.check" in func.attributes or not (attention or attention_signature(func)):
        return draws
    dynamic = has_dynamic_arguments(func)
    draws.append((EDGE_SIZES if dynamic else None, EDGES))
    first = list(func.regions[0].blocks[0].arguments)[0].type
    if dynamic and isinstance(first, ir.MemRefType) and first.is_dynamic_dim(0):  # q's (or packed q's) batch
        draws.append((EMPTY_BATCH, "shuffled"))
        if all(sizes is None or sizes.batch != 1 for sizes, _ in draws):
            draws.append((ONE_SEQUENCE, "shuffled"))
    return draws


def draw_label(placement: str) -> str:
    """How a check names a draw besides its sizes: its page placement, or the edge draw (empty for shuffled pages)."""
    return {"shuffled": "", EDGES: "edge case"}.get(placement, f"{placement} pages")
