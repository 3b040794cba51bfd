"""Page sources: one class per form in which K and V (and their scale caches) are given to rock.attention.

Each form owns what it decides: its verifier rules (rock.attention asks :meth:`PageSource.kv_shape`,
:meth:`~PageSource.scale_cache_error`, :meth:`~PageSource.lengths`; rock.block_table_view asks the class of
its layout, :func:`view_layouts`), its address formula and what rock-blockwise-load stages per tile
(:meth:`~PageSource.page_address`: a pointer read from a table, a block id turned into an address), what the
threadwise lowering reads per wave (:meth:`~PageSource.read_entries`, :meth:`~PageSource.entry_address`,
:meth:`~PageSource.entry_live`, a run of adjacent pages: :meth:`~PageSource.entries_adjacent`), where an
element lies in its page (:meth:`~PageSource.page_offset`) and the interpreter's reading of the pages
(:meth:`~PageSource.at_run_time`), and how ``pagedir-run --check`` places K and V in its arguments
(:meth:`~PageSource.check_kv`). The passes and the interpreter ask :func:`source_of`; they do not branch on
the form.

A new form is a class here (a subclass of :class:`PageSource`, or of a form it refines; a new pool layout of
``rock.block_table_view`` a subclass of :class:`BlockSource` with its :attr:`~BlockSource.layouts`, pool rule
and :class:`PageGeometry`) and a line in :data:`FORMS`. This package builds IR with the upstream dialects
only and imports nothing of pagedir but leaves (``offset_width``, ``reference``, ``kv_caches``): the dialect's
verifiers, the passes and the interpreter all use it. A block-table form also gives ``pagedir-run --check`` its
tables (:meth:`BlockSource.fit_lengths`, :meth:`BlockSource.check_tables`); its kernel arguments and IR lines,
which the generator writes without loading MLIR, are a class of :mod:`pagedir.kv_caches` (a
:class:`~pagedir.kv_caches.KvForm` in ``POOL_TABLES``), and so is a pool layout (its shape, strides, numpy
conversions and flag rules: ``POOL_LAYOUTS``). A new pool-reading form is thus its class here, its class and
line in ``POOL_TABLES``, and its tests.
"""

from __future__ import annotations

import importlib

import mlir.ir as ir

from pagedir.kv_caches import POOL_TABLES

from pagedir.page_sources.base import PageSource
from pagedir.page_sources.blocks import BlockRead, BlockSource, PageGeometry
from pagedir.page_sources.csr import CsrSource
from pagedir.page_sources.dense import DenseSource
from pagedir.page_sources.pointers import PointerSource
from pagedir.page_sources.vllm_pa import VllmPaSource


def _pool_form(path: str) -> type[PageSource]:
    module, name = path.split(":")
    return getattr(importlib.import_module(f"pagedir.page_sources.{module}"), name)


#: The forms, asked in turn whether they claim a value; the first that does is its form (dense: any other).
#: The forms reading cache pools are those of :data:`pagedir.kv_caches.POOL_TABLES` (a new one: its class
#: here and its line there) and the pool layouts read by a source of their own (vLLM's paged-attention cache).
FORMS: tuple[type[PageSource], ...] = (
    PointerSource,
    *sorted((*(_pool_form(t.source) for t in POOL_TABLES.values()), VllmPaSource),
            key=lambda form: -len(form.__mro__)),  # refined first
    DenseSource,
)


def source_of(value: ir.Value, page_table: ir.Value | None = None) -> PageSource:
    """The form of K/V operand ``value``. ``page_table``: the table a paged ``rock.blockwise_load_tile`` names
    beside its source (a source no form claims, a kernel argument, is then read through it as pointers)."""
    for form in FORMS:
        if form is DenseSource and page_table is not None:
            return PointerSource(value, page_table)
        if form.matches(value):
            return PointerSource(value, page_table) if form is PointerSource else form(value)
    raise AssertionError("DenseSource claims every value")


def view_tables(view: ir.Value) -> type[BlockSource]:
    """The form reading the tables of ``rock.block_table_view`` result ``view`` (its verifier asks it for their
    rules): the form claiming the view, a block table's where none does (the verifier says why)."""
    form = source_of(view)
    return type(form) if isinstance(form, BlockSource) else BlockSource


def view_layouts() -> dict[str, type[BlockSource]]:
    """``rock.block_table_view``'s layouts, each with the form class stating its pool rules and geometry."""
    layouts: dict[str, type[BlockSource]] = {}
    for form in reversed(FORMS):  # a refined form (CSR) after the form it refines
        if issubclass(form, BlockSource):
            for layout in form.layouts:
                layouts.setdefault(layout, form)
    return layouts


__all__ = ["FORMS", "BlockRead", "BlockSource", "CsrSource", "DenseSource", "PageGeometry", "PageSource",
           "PointerSource", "VllmPaSource", "source_of", "view_layouts", "view_tables"]
