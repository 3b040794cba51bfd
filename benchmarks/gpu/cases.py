"""The GPU run's cases, shared by the CPU side (``make gpu-artefacts``: build_artefacts.py compiles
them) and the GPU side (run_gpu.py launches them). Plain Python: nothing here imports torch or
the compiler.

* :data:`CHECKS`: the correctness matrix, small shapes: every page-table form (pointers, blocks
  NHD and HND, CSR, blocks over stacked K/V caches) in decode and causal prefill, f16 and bf16,
  static and dynamic sizes, with and without split-KV.
* :func:`bench_cases`: the timed shapes: decode with B in {1, 8, 32, 128}, Sk in {1k, 4k, 16k, 32k},
  GQA (32 query heads on 4 KV heads: 8 per KV head) and MHA (32 on 32), D 128, pages of 16
  tokens, one dynamic kernel per head layout (the batch and the lengths are launch sizes, the
  split count chosen at launch); causal prefill of 1k to 8k tokens (one kernel per length: the
  query length is compiled in), B 1, GQA.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PAGE = 16
HEAD_DIM = 128
#: K/V bytes a timed case may hold (the dense copy SDPA reads comes on top): B 128 at 32k MHA
#: (69 GB of K/V) does not fit an 80 GB H100 twice, so such a case is listed as skipped.
KV_BUDGET_BYTES = 20 * 2**30


@dataclass(frozen=True)
class Kernel:
    """One compiled kernel: its generator options (``pagedir-gen attention``'s, as keywords)."""

    name: str
    options: dict[str, Any]
    #: How the caches are passed: "blocks", "csr", "pointers", or "stacked" (blocks over one
    #: [2, num_blocks, ...] allocation holding K then V, as vLLM's FlashAttention backend keeps them).
    form: str

    def to_json(self) -> dict:
        return asdict(self)


def _check(form: str, layout: str, mode: str, dtype: str, dynamic: bool, splits: int | None) -> Kernel:
    prefill = mode == "prefill"
    options = dict(batch=3, num_heads_q=8, num_heads_kv=2, seq_len_q=5 if prefill else 1, seq_len_k=100,
                   head_dim=64, page_size=PAGE, dtype=dtype, causal=prefill, dynamic=dynamic)
    page_table = {"stacked": "blocks"}.get(form, form)
    options["page_table"] = page_table
    if page_table != "pointers":
        options["kv_layout"] = layout
    if page_table != "csr":
        options["seq_lens"] = True
    if splits is not None:
        options["num_splits"] = splits
    name = f"check-{form}{'-' + layout if page_table != 'pointers' else ''}-{mode}-{dtype}-" \
           f"{'dynamic' if dynamic else 'static'}{'' if splits is None else f'-split{splits}'}"
    return Kernel(name, options, form)


#: (form, layout) x (mode, dtype, dynamic, splits): each form in four settings that together cover
#: decode and causal prefill, f16 and bf16, static and dynamic, no split, a fixed split and one
#: chosen at launch.
SETTINGS = [("decode", "f16", False, None), ("decode", "bf16", True, 0), ("prefill", "f16", True, None),
            ("prefill", "bf16", False, 2)]
FORMS = [("pointers", "nhd"), ("blocks", "nhd"), ("blocks", "hnd"), ("csr", "nhd"), ("csr", "hnd"), ("stacked", "nhd")]
CHECKS = [_check(form, layout, *setting) for form, layout in FORMS for setting in SETTINGS]

DECODE_BATCHES = (1, 8, 32, 128)
DECODE_LENGTHS = (1024, 4096, 16384, 32768)
HEADS = {"gqa": (32, 4), "mha": (32, 32)}
PREFILL_LENGTHS = (1024, 2048, 4096, 8192)


def decode_kernel(heads: str, dtype: str = "f16") -> Kernel:
    hq, hkv = HEADS[heads]
    return Kernel(f"bench-decode-{heads}-{dtype}",
                  dict(batch=1, num_heads_q=hq, num_heads_kv=hkv, seq_len_q=1, seq_len_k=max(DECODE_LENGTHS),
                       head_dim=HEAD_DIM, page_size=PAGE, dtype=dtype, page_table="blocks", kv_layout="nhd",
                       seq_lens=True, dynamic=True, num_splits=0), "blocks")


def prefill_kernel(length: int, dtype: str = "f16") -> Kernel:
    hq, hkv = HEADS["gqa"]
    return Kernel(f"bench-prefill-{length}-{dtype}",
                  dict(batch=1, num_heads_q=hq, num_heads_kv=hkv, seq_len_q=length, seq_len_k=length,
                       head_dim=HEAD_DIM, page_size=PAGE, dtype=dtype, page_table="blocks", kv_layout="nhd",
                       seq_lens=True, causal=True, dynamic=True), "blocks")


@dataclass
class BenchCase:
    """One timed shape."""

    mode: str  # "decode" or "prefill"
    heads: str
    batch: int
    seq_k: int
    seq_q: int
    kernel: str  # the Kernel's name
    dtype: str = "f16"
    skipped: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.mode}-{self.heads}-b{self.batch}-sk{self.seq_k}" + (f"-sq{self.seq_q}" if self.mode == "prefill" else "")

    def kv_bytes(self) -> int:
        """The K and V bytes one call reads (every sequence at full length)."""
        _, hkv = HEADS[self.heads]
        return 2 * self.batch * self.seq_k * hkv * HEAD_DIM * 2


def bench_cases(quick: bool = False) -> list[BenchCase]:
    """The timed shapes (``quick``: one of each kind, for a smoke run)."""
    cases = []
    batches, lengths = ((8,), (4096,)) if quick else (DECODE_BATCHES, DECODE_LENGTHS)
    for heads in HEADS:
        for batch in batches:
            for seq_k in lengths:
                case = BenchCase("decode", heads, batch, seq_k, 1, decode_kernel(heads).name)
                if case.kv_bytes() > KV_BUDGET_BYTES:
                    case.skipped = f"{case.kv_bytes() / 2**30:.0f} GiB of K/V exceeds the run's budget of " \
                                   f"{KV_BUDGET_BYTES / 2**30:.0f} GiB"
                cases.append(case)
    for length in ((1024,) if quick else PREFILL_LENGTHS):
        cases.append(BenchCase("prefill", "gqa", 1, length, length, prefill_kernel(length).name))
    return cases


def bench_kernels(quick: bool = False) -> list[Kernel]:
    kernels = [decode_kernel(heads) for heads in HEADS]
    return kernels + [prefill_kernel(length) for length in ((1024,) if quick else PREFILL_LENGTHS)]


# ----------------------------------------------------------------------------- the report


def fraction(gbps: float | None, ceiling: float | None) -> float | None:
    return None if not gbps or not ceiling else gbps / ceiling


def markdown_table(results: dict) -> str:
    """The results of a run as Markdown: the machine, the copy ceiling, the checks, then one row per timed
    shape with each implementation's median time, and for decode its GB/s of K/V read and fraction of the
    copy bandwidth."""
    machine = results["machine"]
    lines = [f"GPU run of {results['date']} on {machine.get('device', '?')} (driver {machine.get('driver', '?')}, "
             f"torch {machine.get('torch', '?')}, triton {machine.get('triton', '?')}); pagedir artefacts for "
             f"{results.get('arch', '?')}.", ""]
    ceiling = results.get("copy_gbps")
    lines.append(f"Device-to-device copy (the ceiling): {ceiling:.0f} GB/s." if ceiling else "Device-to-device copy: not measured.")
    checks = results.get("checks")
    if checks is None:
        lines += ["", "Correctness: not checked in this run."]
    else:
        passed = sum(1 for c in checks if c["status"] == "pass")
        lines += ["", f"Correctness: {passed} of {len(checks)} checks pass (float64 reference, NaN in every unused block)."]
    for check in checks or []:
        if check["status"] != "pass":
            lines.append(f"- {check['name']}: {check['status']}: {check.get('detail', '')}")
    peers = results.get("implementations", [])
    described = results.get("peers", {})
    if described:
        lines += ["", "Peers: " + "; ".join(f"{name}: {what}" for name, what in described.items()) + "."]
    lines += ["", "| shape | " + " | ".join(f"{p} µs" for p in peers) + " | pagedir GB/s | of copy |",
              "|---|" + "---|" * len(peers) + "---|---|"]
    if not results.get("timings"):
        lines.append("| (no timings yet) |" + " |" * (len(peers) + 2))
    for row in results.get("timings", []):
        cells = []
        for peer in peers:
            entry = row["times"].get(peer, {})
            cells.append(f"{entry['median_us']:.1f}" if entry.get("median_us") is not None else
                         f"— ({entry.get('skipped', 'not run')})" if entry else "—")
        gbps = row.get("pagedir_gbps")
        share = fraction(gbps, ceiling)
        gbps_cell = f"{gbps:.0f}" if gbps else "—"
        share_cell = f"{share:.0%}" if share else "—"
        lines.append(f"| {row['name']} | {' | '.join(cells)} | {gbps_cell} | {share_cell} |")
    skipped = results.get("skipped", [])
    if skipped:
        lines += ["", "Not run: " + "; ".join(f"{s['name']}: {s['reason']}" for s in skipped) + "."]
    return "\n".join(lines) + "\n"
