"""Instructions one wave runs per iteration of a kernel's hot loop, path by path.

The kernel report counts every instruction of the hot loop once, whichever branch a wave takes
(:mod:`pagedir.backend.loops`). A loop holding a run-time choice (the adjacent-page path of
rock-threadwise-lowering beside its page-by-page path) runs only one side per iteration, so this
counts paths through the loop's control-flow graph instead: from the header to a back edge, one
block after another, each instruction once. A branch on ``exec`` (``s_cbranch_execz`` /
``execnz``: no lane left) is taken as its lanes-active side (the fall-through of ``execz``, the
exit of ``execnz``); a uniform branch (``vcc``, ``scc``) either way, and the shortest and the
longest paths are reported. In a paged decode kernel the uniform branches inside the KV loop are
the adjacent-page choices: the shortest path is the wave whose pages are adjacent, the longest
the wave reading page by page (shuffled pages). A masked tile's arm (causal prefill's diagonal:
each P V product three times) is a uniform choice too, taken on one tile or two of a workgroup:
the kernel report's *common path* and *masked arm* (:func:`pagedir.backend.loops.hot_loop_paths`)
count it apart and are printed beside them.

Each path's instructions are split by unit: vector (``v_``: the math, and per-lane offsets),
scalar (``s_``: wave-uniform page and address work, scalar loads of the table, waits, branches)
and memory (buffer and LDS instructions). The load path's whole cost is best read against the dense twin
of the same kernel (``--dense``: no table, no page arithmetic).

``python benchmarks/loop_paths.py KERNEL.s [...]`` prints one line per kernel.
"""

from __future__ import annotations

import argparse
from functools import cache

from pagedir.backend.loops import basic_blocks, dominators, hot_loop, instruction, path_successors
from pagedir.backend.report import kernel_bodies, loop_path_statistics, parse_metadata


def path_counts(body: list[str]) -> dict[str, dict[str, int]] | None:
    """``{"shortest": counts, "longest": counts}`` of the hot loop's paths (counts: ``instructions``,
    ``vector`` (``v_``), ``scalar`` (``s_``), ``memory`` (the rest)); None without a loop."""
    found = hot_loop(body)
    if found is None:
        return None
    loop, _ = found
    blocks = basic_blocks(body)
    dom = dominators(blocks)

    def kinds(b: int) -> tuple[int, int, int]:
        texts = [instruction(body[line]) or "" for line in blocks[b].lines]
        vector = sum(1 for t in texts if t.startswith("v_"))
        scalar = sum(1 for t in texts if t.startswith("s_"))
        return vector, scalar, len(texts) - vector - scalar

    def successors(b: int) -> list[int]:
        return path_successors(body, blocks, loop, dom, b)

    @cache
    def best(b: int, longest: bool) -> tuple[int, int, int]:
        here = kinds(b)
        options = [best(s, longest) for s in successors(b)]
        if not options:
            return here
        pick = max(options, key=sum) if longest else min(options, key=sum)
        return tuple(x + y for x, y in zip(here, pick))

    result = {}
    for name, longest in (("shortest", False), ("longest", True)):
        vector, scalar, memory = best(loop.header, longest)
        result[name] = {"instructions": vector + scalar + memory, "vector": vector, "scalar": scalar, "memory": memory}
    result["loop"] = {"instructions": loop.instructions}
    # the report's split of the same loop: the common path (fewest matrix instructions) and the masked arm
    stats = loop_path_statistics(body)
    result["common"] = {"instructions": stats["loop_common_instructions"], "matrix": stats["loop_common_matrix"]}
    result["rare"] = {"instructions": stats["loop_rare_instructions"], "matrix": stats["loop_rare_matrix"]}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("asm", nargs="+", help="amdgcn assembly files")
    args = parser.parse_args(argv)
    for path in args.asm:
        asm = open(path).read()
        for name, body in kernel_bodies(asm, list(parse_metadata(asm))).items():
            counts = path_counts(body)
            if counts is None:
                print(f"{path} {name}: no loop")
                continue
            short, long = counts["shortest"], counts["longest"]
            print(f"{path} {name}: loop {counts['loop']['instructions']}, "
                  f"shortest path {short['instructions']} (v {short['vector']}, s {short['scalar']}, mem {short['memory']}), "
                  f"longest path {long['instructions']} (v {long['vector']}, s {long['scalar']}, mem {long['memory']}), "
                  f"common path {counts['common']['instructions']}"
                  + (f", masked arm {counts['rare']['instructions']}" if counts["rare"]["instructions"] else ""))


if __name__ == "__main__":
    main()
