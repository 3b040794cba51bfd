"""Loops of a kernel's amdgcn assembly, from its control-flow graph.

A loop is not a span of text: LLVM rotates loops (the header sits after the latch, entered by
a forward ``s_branch``), places blocks of a loop before its header, and puts code that is not
in any loop after a backward branch (an epilogue reached by a jump back over it). So the
loops come from the control-flow graph, as a compiler finds them:

* *basic blocks*: a block starts at a label or after a branch or an end of the program, and
  ends at a branch (``s_branch``, ``s_cbranch_*``) or an end (``s_endpgm*``, ``s_setpc_b64``,
  a return or indirect jump that leaves the kernel's text); a label with no instruction
  before the next label names the same block;
* *edges*: ``s_branch L`` goes to L; ``s_cbranch_* L`` to L and to the next block; an end
  goes nowhere; any other instruction falls through to the next block (a call,
  ``s_swappc_b64``, returns there);
* *dominators* from the first block (blocks it cannot reach belong to no loop);
* a *back edge* is an edge to a block that dominates its source; its *natural loop* is the
  header plus every block that reaches the source without passing through the header.
  Back edges to the same header make one loop (the union of their bodies). A cycle with two
  entries (irreducible; LLVM does not emit one for these kernels) has no back edge and is no loop.

A loop's instructions are those of all its blocks, each counted once whichever branch a wave
takes, loops nested in it (a waterfall loop around a load) included. The *hot loop* is the
loop with the most instructions; since a loop holds the loops nested in it, that is an
outermost one: an attention kernel's KV loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LABEL_RE = re.compile(r"^([.\w$]+):")
_BRANCH_RE = re.compile(r"^s_(branch|cbranch_\w+)\s+([.\w$]+)")
#: Instructions after which no instruction of the kernel's text runs.
_ENDS = ("s_endpgm", "s_setpc_b64")


@dataclass
class Block:
    """A basic block: its labels, the body line index of each instruction, its successor blocks."""

    labels: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    successors: list[int] = field(default_factory=list)


@dataclass
class Loop:
    """A natural loop: its header block and all its blocks (header included), by block index."""

    header: int
    blocks: frozenset[int]
    instructions: int


def instruction(line: str) -> str | None:
    """The instruction text of an assembly line (no comment), or None for labels/directives/blank."""
    text = line.split(";", 1)[0].split("//", 1)[0].strip()
    if not text or text.startswith(".") or LABEL_RE.match(text):
        return None
    return text


def basic_blocks(body: list[str]) -> list[Block]:
    """The basic blocks of a kernel's lines (labels, directives, comments and blank lines skipped)."""
    blocks: list[Block] = [Block()]
    branches: list[tuple[str, str] | None] = []  # per closed block: (kind, target) of its last instruction
    ended: list[bool] = []

    def close(kind_target: tuple[str, str] | None, end: bool) -> None:
        branches.append(kind_target)
        ended.append(end)
        blocks.append(Block())

    for index, line in enumerate(body):
        if label := LABEL_RE.match(line.strip()):
            if blocks[-1].lines:
                close(None, False)
            blocks[-1].labels.append(label.group(1))
            continue
        text = instruction(line)
        if text is None:
            continue
        blocks[-1].lines.append(index)
        mnemonic = text.split()[0]
        if branch := _BRANCH_RE.match(text):
            close((branch.group(1), branch.group(2)), False)
        elif mnemonic.startswith(_ENDS):
            close(None, True)
    if not blocks[-1].lines and not blocks[-1].labels:
        blocks.pop()
    else:
        branches.append(None)
        ended.append(False)
    by_label = {label: i for i, block in enumerate(blocks) for label in block.labels}
    for i, block in enumerate(blocks):
        kind_target = branches[i]
        falls_through = not ended[i] and (kind_target is None or kind_target[0] != "branch")
        if kind_target is not None and kind_target[1] in by_label:
            block.successors.append(by_label[kind_target[1]])
        if falls_through and i + 1 < len(blocks) and i + 1 not in block.successors:
            block.successors.append(i + 1)
    return blocks


def dominators(blocks: list[Block]) -> dict[int, set[int]]:
    """``{block: blocks dominating it}`` for the blocks reachable from the first (iterative data flow)."""
    if not blocks:
        return {}
    order: list[int] = []
    seen = {0}
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        for succ in blocks[node].successors:
            if succ not in seen:
                seen.add(succ)
                stack.append(succ)
    predecessors: dict[int, list[int]] = {node: [] for node in order}
    for node in order:
        for succ in blocks[node].successors:
            predecessors[succ].append(node)
    dom = {node: set(order) for node in order}
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for node in order[1:]:
            new = set.intersection(*(dom[p] for p in predecessors[node])) | {node}
            if new != dom[node]:
                dom[node] = new
                changed = True
    return dom


def natural_loops(blocks: list[Block]) -> list[Loop]:
    """One :class:`Loop` per header, in the order of the headers in the text."""
    dom = dominators(blocks)
    predecessors: dict[int, list[int]] = {node: [] for node in dom}
    for node in dom:
        for succ in blocks[node].successors:
            predecessors[succ].append(node)
    bodies: dict[int, set[int]] = {}
    for source in dom:
        for header in blocks[source].successors:
            if header not in dom[source]:
                continue
            body = bodies.setdefault(header, {header})
            stack = [source]
            while stack:
                node = stack.pop()
                if node not in body:
                    body.add(node)
                    stack.extend(predecessors[node])
    return [Loop(header, frozenset(body), sum(len(blocks[b].lines) for b in body))
            for header, body in sorted(bodies.items())]


def hot_loop(body: list[str]) -> tuple[Loop, list[int]] | None:
    """The loop with the most instructions and the body line indices of its instructions (in text
    order), or None for a kernel without a loop."""
    blocks = basic_blocks(body)
    loops = natural_loops(blocks)
    if not loops:
        return None
    best = max(loops, key=lambda loop: loop.instructions)
    return best, sorted(line for b in best.blocks for line in blocks[b].lines)


# ----------------------------------------------------------------------------
# Paths through the hot loop: its common path and its rarely taken arm.

#: Mnemonic prefixes of matrix-core instructions (CDNA MFMA, RDNA WMMA).
MATRIX_PREFIXES = ("v_mfma", "v_smfmac", "v_wmma", "v_swmmac")
_EXEC_BRANCH_RE = re.compile(r"^s_cbranch_exec(z|nz)\b")


@dataclass
class LoopPaths:
    """Paths one wave runs through one iteration of the hot loop, each a list of block indices from
    the header to a back edge (see :func:`hot_loop_paths`)."""

    blocks: list[Block]
    loop: Loop
    #: The common path: the fewest matrix instructions, then the most instructions (pages read one by one).
    common: list[int]
    #: The common path with the fewest instructions (adjacent pages).
    common_shortest: list[int]
    #: The path with the most matrix instructions, then the most instructions; None when every path runs
    #: as many matrix instructions as the common one (no rarely taken arm).
    rare: list[int] | None

    def lines(self, path: list[int]) -> list[int]:
        """The body line indices of a path's instructions, in the order a wave runs them."""
        return [line for b in path for line in self.blocks[b].lines]


def hot_loop_paths(body: list[str]) -> LoopPaths | None:
    """The common path and the rarely taken arm of the hot loop (:func:`hot_loop`); None without a loop.

    The loop's blocks without their back edges form a graph without cycles (its nested loops
    aside: their blocks count once, as in :func:`hot_loop`); a path goes from the header along it
    to a block with a back edge or an exit. A branch on ``exec`` (``s_cbranch_execz`` /
    ``execnz``: no lane left) takes its lanes-active side (the fall-through of ``execz``, the target
    of ``execnz``: LLVM's structurizer ends an ``if`` with an ``execnz`` that active lanes always
    take); a uniform branch (``vcc``, ``scc``) either way. Of the uniform choices in an attention
    kernel's KV loop, the adjacent-page choice of the paged loads runs the same matrix
    instructions on both sides, while a masked tile's arm (the causal diagonal, a sliding window's
    edge: each P V product three times) runs more: so the *common* path is the one with the fewest
    matrix instructions, and a path with more is the *rare* arm, taken only on the masked tiles
    (a kernel's configuration says on how many). Ties in matrix instructions go to the longer
    path (page by page: what a shuffled cache costs), and the shortest such path is kept beside it.
    """
    found = hot_loop(body)
    if found is None:
        return None
    blocks = basic_blocks(body)
    return loop_paths(body, blocks, found[0])  # the same blocks, numbered alike


def path_successors(body: list[str], blocks: list[Block], loop: Loop, dom, b: int) -> list[int]:
    """The blocks of ``loop`` a path through it goes on to from block ``b`` (``dom``: ``dominators(blocks)``):
    no back edge, and an exec-mask branch only on its lanes-active side (:func:`hot_loop_paths`)."""
    inside = [s for s in blocks[b].successors if s in loop.blocks and s not in dom[b]]  # no back edge
    last = instruction(body[blocks[b].lines[-1]]) if blocks[b].lines else None
    exec_branch = _EXEC_BRANCH_RE.match(last or "")
    if exec_branch and len(blocks[b].successors) == 2:
        # lanes active: execz falls through to the next block, execnz branches
        side = b + 1 if exec_branch.group(1) == "z" else blocks[b].successors[0]
        inside = [s for s in inside if s == side]
    return inside


def loop_paths(body: list[str], blocks: list[Block], loop: Loop) -> LoopPaths:
    """The paths of ``loop`` (one of ``natural_loops(blocks)``), chosen as :func:`hot_loop_paths` says."""
    dom = dominators(blocks)

    def counts(b: int) -> tuple[int, int]:
        texts = [instruction(body[line]) or "" for line in blocks[b].lines]
        return sum(1 for t in texts if t.startswith(MATRIX_PREFIXES)), len(texts)

    def successors(b: int) -> list[int]:
        return path_successors(body, blocks, loop, dom, b)

    def best(sign_matrix: int, sign_count: int) -> tuple[tuple[int, int], list[int]]:
        memo: dict[int, tuple[tuple[int, int], list[int]]] = {}

        def walk(b: int) -> tuple[tuple[int, int], list[int]]:
            if b not in memo:
                matrix, count = counts(b)
                here = (sign_matrix * matrix, sign_count * count)
                options = [walk(s) for s in successors(b)]
                if options:
                    key, path = max(options, key=lambda option: option[0])
                    memo[b] = ((here[0] + key[0], here[1] + key[1]), [b] + path)
                else:
                    memo[b] = (here, [b])
            return memo[b]

        return walk(loop.header)

    (common_matrix, _), common = best(-1, 1)
    _, shortest = best(-1, -1)
    (rare_matrix, _), rare = best(1, 1)
    return LoopPaths(blocks, loop, common, shortest, rare if rare_matrix > -common_matrix else None)
