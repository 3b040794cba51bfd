"""Dense K/V: ``memref<B x Hkv x Sk x D x T>``, no pages."""

from __future__ import annotations

import mlir.ir as ir

from pagedir.page_sources.base import PageSource, dim_text


class DenseSource(PageSource):
    name = "dense"
    paged = False

    @staticmethod
    def matches(value: ir.Value) -> bool:
        return True  # the registry's last form: whatever no other form claims

    def kv_shape(self, num_heads_kv: int, head_dim: int) -> tuple[int, int, int] | str:
        type_ = self.value.type
        if type_.rank != 4:
            return f"dense K/V must be memref<B x Hkv x Sk x D x T> (or a rock.deref result), got {type_}"
        if type_.shape[3] != head_dim:
            return f"K/V head dim {type_.shape[3]} differs from the query head dim {head_dim}"
        return type_.shape[0], type_.shape[1], type_.shape[2]

    def scale_cache_error(self, scales: ir.Value, num_heads_kv: int, head_dim: int) -> str | None:
        t, wanted = scales.type, list(self.value.type.shape[:3])
        if t.rank != 3 or list(t.shape) != wanted:
            return f"must be memref<{'x'.join(dim_text(d) for d in wanted)}xf32> (dense [B, Hkv, Sk]), got {t}"
        return None
