"""Compile time of rock-raise-attention on pagedir-gen linalg-attention payloads, one per gather form and variant.

    PYTHONPATH=src python benchmarks/raise_attention.py [--repeat N]

Prints a markdown table: the payload, its lines, and the median time of the pass alone
(parsing excluded) over ``--repeat`` fresh parses. Decode GQA 32/8, D 128, 4096 tokens in
16-token blocks, batch 8; each payload must be raised (checked).
"""

from __future__ import annotations

import argparse
import statistics
import time

SIZES = ["--batch", "8", "--num-heads-q", "32", "--num-heads-kv", "8", "--head-dim", "128", "--seq-len-k", "4096",
         "--page-size", "16"]
PAYLOADS = {
    "dense K/V": [],
    "pointer pages": ["--page-table", "pointers"],
    "blocks nhd": ["--page-table", "blocks"],
    "blocks hnd": ["--page-table", "blocks", "--kv-layout", "hnd"],
    "csr nhd": ["--page-table", "csr"],
    "csr hnd": ["--page-table", "csr", "--kv-layout", "hnd"],
    "blocks, torch-mlir bmm, linalg.softmax, additive mask": ["--page-table", "blocks", "--matmul", "batch-matmul",
                                                              "--softmax", "linalg", "--mask", "additive"],
    "csr prefill 64, causal, window, soft-cap, ALiBi": ["--page-table", "csr", "--seq-len-q", "64", "--causal",
                                                        "--window", "256", "--softcap", "30", "--alibi"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()

    import mlir.ir as ir

    from pagedir import driver
    from pagedir.cli.gen import build_parser
    from pagedir.context import make_context
    from pagedir.gen import linalg_attention

    print("| payload | lines | rock-raise-attention (ms, median) |")
    print("|---|---|---|")
    for name, flags in PAYLOADS.items():
        text = linalg_attention.generate(build_parser().parse_args(["linalg-attention", *SIZES, *flags]))
        times = []
        for _ in range(options.repeat):
            with make_context():
                module = ir.Module.parse(text)
                start = time.perf_counter()
                driver.run_stages(module.operation, [driver.pass_stage("rock-raise-attention", None)])
                times.append(time.perf_counter() - start)
                if "rock.attention" not in str(module):
                    raise SystemExit(f"{name}: not raised")
        print(f"| {name} | {len(text.splitlines())} | {statistics.median(times) * 1e3:.2f} |")


if __name__ == "__main__":
    main()
