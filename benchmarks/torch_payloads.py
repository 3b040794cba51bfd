"""The torch-mlir payloads of tests/fixtures/torch: raised or not, `pagedir-run --check --arch gfx942`, gfx942 asm,
and the raise time (rock-raise-attention alone, best of 5). Writes benchmarks/results/torch_payloads.md."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import mlir.ir as ir

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "torch"


def raise_ms(text: str) -> tuple[bool, float]:
    from pagedir.dialect import rock  # noqa: F401 - registers the dialect
    from pagedir.passes.raise_attention import RaiseAttentionPass

    best = float("inf")
    raised = False
    for _ in range(5):
        with ir.Context() as ctx, ir.Location.unknown():
            ctx.allow_unregistered_dialects = True
            module = ir.Module.parse(text)
            start = time.perf_counter()
            RaiseAttentionPass().run(module.operation)
            best = min(best, time.perf_counter() - start)
            raised = '"rock.attention"(' in str(module)
    return raised, best * 1000


def tool(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / name), *args], capture_output=True, text=True)


#: The six forms of the table (docs/compile.md), as tools/export_torch_payloads.py writes them.
SIX = {"gqa_decode": "GQA decode: `k.repeat_interleave(G, 1)`, `q @ k.transpose(-1, -2) * scale`, `softmax(-1)`, `@ v`",
       "sdpa_gqa": "`F.scaled_dot_product_attention(q, k, v, enable_gqa=True)`",
       "repeat_sdpa": "`repeat_interleave` + `scaled_dot_product_attention`",
       "causal_prefill": "causal prefill with `masked_fill(mask, -inf)`",
       "paged_decode": "vLLM-style paged decode: `k_cache[block_table]` gather, positions >= seq_lens masked",
       "bmm_folded": "heads folded into the batch, `torch.bmm` on `[B*H, S, D]`"}


def main() -> int:
    rows = ["| payload | raised | `pagedir-run --check --arch gfx942` | gfx942 asm | raise ms |", "|---|---|---|---|---|"]
    results: dict[str, tuple[bool, str, str, float]] = {}
    for path in sorted(FIXTURES.glob("*.mlir")):
        raised, ms = raise_ms(path.read_text())
        if raised:
            check = tool("pagedir-run", "--check", "--arch", "gfx942", str(path))
            errors = [line.split("max abs error ")[1].split(" ")[0] for line in check.stdout.splitlines() if "L6" in line and "max abs error" in line]
            verdict = f"{'PASS' if check.returncode == 0 else 'FAIL'} (max abs error {max(errors, key=float) if errors else '?'})"
            asm = tool("pagedir-compile", str(path), "--arch", "gfx942", "--emit=asm", "-o", "/dev/null")
            compiled = "yes" if asm.returncode == 0 else f"no: {asm.stderr.strip().splitlines()[-1][:80] if asm.stderr.strip() else asm.returncode}"
        else:
            verdict, compiled = "-", "-"
        results[path.stem] = (raised, verdict, compiled, ms)
        rows.append(f"| {path.stem} | {'yes' if raised else 'no'} | {verdict} | {compiled} | {ms:.1f} |")
        print(rows[-1], flush=True)
    summary = ["| written in PyTorch as | raised (f16, f32, bf16) | `--check --arch gfx942` | raise ms (f16) |",
               "|---|---|---|---|"]
    for form, what in SIX.items():
        found = [results.get(f"{form}_{dtype}") for dtype in ("f16", "f32", "bf16")]
        raised = ", ".join("yes" if r and r[0] else "no" for r in found)
        checks = "all PASS" if all(r and r[1].startswith("PASS") for r in found) else \
            "; ".join(r[1] if r else "missing" for r in found)
        summary.append(f"| {what} | {raised} | {checks} | {found[0][3]:.1f} |" if found[0] else f"| {what} | missing | | |")
    out = ROOT / "benchmarks" / "results" / "torch_payloads.md"
    out.write_text("# torch-mlir payloads (tests/fixtures/torch)\n\n"
                   "Made by `python benchmarks/torch_payloads.py` (CPU; the check runs the interpreter and compares "
                   "the lowered kernel with the payload run as written). `raise ms`: rock-raise-attention alone on the "
                   "exported module, best of 5 (a shared machine: a few ms of noise). `*_alt` are the same code at "
                   "other shapes or with another option, `miss_*` near misses that must stay unraised.\n\n" + "\n".join(summary)
                   + "\n\nEvery payload:\n\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
