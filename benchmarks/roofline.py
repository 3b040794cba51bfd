"""A roofline model of paged attention per configuration and chip. A MODEL, never a measurement.

Two numbers per configuration and chip:

* **lower bound**: ``max(bytes / HBM bandwidth, FLOPs / dense f16 matrix peak)``. Bytes are
  what the kernel cannot do without (every live K/V byte, the page pointers, Q read and the output
  written once: :meth:`benchmarks.configs.Config.required_bytes`); FLOPs are the two matrix
  products, ``4 * B * Hq * Sq * keys_seen * D`` (``keys_seen``: ``Sk``, or on average
  ``Sk - (Sq - 1) / 2`` with a causal mask whose queries are the last ``Sq`` positions).
* **estimate** of one kernel's launches from the counters of its assembly
  (:mod:`benchmarks.isa`) and its launch grid, the same arithmetic for every kernel, pagedir's
  and its peers'. Per launch:

  - *waves* = workgroups x waves per workgroup; they run on ``CUs x SIMDs`` SIMDs, at most
    ``occupancy`` at a time each, so in ``rounds = ceil(waves / (CUs x SIMDs x occupancy))``
    rounds, and each SIMD runs ``ceil(waves / (CUs x SIMDs))`` of them in all;
  - *work of a wave*: the hot loop runs ``iterations = KV tokens of a workgroup / tokens per
    iteration`` times (once when the kernel has no KV loop), the rest of the code once; an
    iteration runs the loop's common path (:func:`benchmarks.isa.hot_loop`), and the masked tiles
    (:func:`masked_tiles`: the causal diagonal) run the rarely taken arm's instructions on top. A matrix
    instruction occupies its SIMD for ``FLOPs / (matrix peak per SIMD per cycle)`` cycles, any
    other instruction for one VALU issue, ``wave size / VALU lanes`` cycles; matrix and VALU
    issue of different waves overlap, so a SIMD is busy ``max(matrix cycles, other cycles)``
    summed over its waves;
  - *memory*: each hot-loop iteration waits at least one memory latency (``LATENCY_S``; the loads of an
    iteration overlap, consecutive iterations do not), and more where the loop *drains* its loads
    soon after issuing them: a wait at ``vmcnt(0)`` ``d`` instructions after the last load
    (:func:`benchmarks.isa.drain_distances`) exposes ``max(0, 1 - d x cycles / latency)`` of a latency,
    a wave's instruction taking ``occupancy x VALU cycles`` while the other waves of its SIMD issue
    theirs (VGPR-limited waves hide less). So the memory side takes
    ``max(bytes / bandwidth, rounds x iterations x max(1, exposed latencies) x latency)``: few waves
    cannot keep enough bytes in flight to reach the bandwidth, and a loop that waits for every tile
    right after issuing it (direct-to-LDS loads with their page pointers) pays each round trip;
  - *time* = ``max(compute, memory) + LAUNCH_S``.

  The launches of a kernel (a split kernel and its combine) add up. Caches, bank conflicts,
  clocks under load and the order of the waves are not modelled.

Chip figures: /work/shared/design/MATRIX_CORES.md (AMD's published peak figures: MI300X, MI355X
and RX 7900 XTX data sheets); each row's clock, SIMDs and VALU lanes reproduce its f32 vector peak
(``CUs x SIMDs x clock x lanes x 2 (FMA) x 2 (packed f32 / dual issue)``), a unit test checks it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: One round trip to HBM (model parameter; CDNA3 measurements put it between 0.6 and 1 microsecond).
LATENCY_S = 1e-6
#: A kernel launch back to back with the previous one (model parameter).
LAUNCH_S = 2e-6


@dataclass(frozen=True)
class ChipSpec:
    arch: str
    product: str
    compute_units: int
    simds_per_cu: int
    clock_hz: float
    hbm_bytes_per_s: float
    #: Dense f16 matrix (MFMA / WMMA) FLOP/s.
    matrix_flops: float
    #: f32 vector FLOP/s (packed FMA on CDNA, dual issue on RDNA3).
    valu_flops: float
    wave_size: int
    #: Lanes of a SIMD's VALU per cycle: a wave64 instruction takes 4 cycles on CDNA's 16-lane SIMDs.
    valu_lanes: int

    @property
    def simds(self) -> int:
        return self.compute_units * self.simds_per_cu

    @property
    def matrix_flops_per_simd_cycle(self) -> float:
        return self.matrix_flops / (self.simds * self.clock_hz)

    @property
    def valu_cycles(self) -> float:
        """Cycles one non-matrix instruction of a wave occupies its SIMD."""
        return self.wave_size / self.valu_lanes


CHIPS = {
    "gfx942": ChipSpec("gfx942", "MI300X", 304, 4, 2.1e9, 5.3e12, 1307.4e12, 163.4e12, 64, 16),
    "gfx950": ChipSpec("gfx950", "MI355X", 256, 4, 2.4e9, 8.0e12, 2516.6e12, 157.3e12, 64, 16),
    "gfx1100": ChipSpec("gfx1100", "RX 7900 XTX", 96, 2, 2.5e9, 0.96e12, 122.9e12, 61.4e12, 32, 32),
}


def keys_seen(seq_q: int, seq_k: int, causal: bool) -> float:
    """Keys one query row attends to, on average (causal: the queries are the last ``seq_q`` positions)."""
    if not causal:
        return float(seq_k)
    return seq_k - (seq_q - 1) / 2


def masked_tiles(seq_q: int, seq_k: int, positions: int, tile: int) -> float:
    """KV tiles per workgroup, on average, in which some query row of a causal workgroup does not see some
    key before ``seq_k``: the tiles holding a key in ``(p0 + off, p0 + off + positions - 1]``, the keys the
    workgroup's first query position (``p0``, ``off = seq_k - seq_q``) hides and its last sees, for
    workgroups of ``positions`` consecutive query positions. These run the loop's rarely taken arm."""
    blocks = range(0, seq_q, positions)
    total = 0
    for p0 in blocks:
        first = p0 + seq_k - seq_q + 1
        last = min(p0 + positions, seq_q) - 1 + seq_k - seq_q
        total += last // tile - first // tile + 1 if first <= last else 0
    return total / len(blocks) if blocks else 0.0


def attention_flops(batch: int, heads_q: int, seq_q: int, seq_k: int, head_dim: int, causal: bool) -> float:
    """FLOPs of Q K^T and P V: 2 products x 2 FLOPs per multiply-add x rows x keys x head dim."""
    return 4 * batch * heads_q * seq_q * keys_seen(seq_q, seq_k, causal) * head_dim


def lower_bound(chip: ChipSpec, nbytes: float, flops: float) -> dict[str, float | str]:
    memory = nbytes / chip.hbm_bytes_per_s
    compute = flops / chip.matrix_flops
    return {"memory_s": memory, "compute_s": compute, "bound_s": max(memory, compute),
            "limit": "memory" if memory >= compute else "compute"}


@dataclass(frozen=True)
class Launch:
    """What the estimate reads of one kernel launch (all from its assembly and its grid)."""

    workgroups: int
    waves_per_workgroup: int
    occupancy: int
    #: Instructions and matrix FLOPs of one wave: the whole kernel once, and the hot loop's body.
    instructions: int
    matrix_instructions: int
    matrix_flops: float
    loop_instructions: int = 0
    loop_matrix_instructions: int = 0
    loop_matrix_flops: float = 0.0
    #: Hot-loop iterations of a wave (KV tokens of its workgroup / tokens per iteration); 1 without a loop.
    iterations: float = 1.0
    #: Every block of the hot loop once (part of ``instructions``): when known, the kernel outside the loop
    #: counts once and the common path (``loop_*``) ``iterations`` times; else the whole kernel once and
    #: the loop ``iterations - 1`` times.
    loop_all_instructions: int = 0
    loop_all_matrix_instructions: int = 0
    loop_all_matrix_flops: float = 0.0
    #: An iteration through the loop's rarely taken arm (a masked tile) runs these more than the common
    #: path, on ``rare_iterations`` of a wave's iterations.
    rare_instructions: int = 0
    rare_matrix_instructions: int = 0
    rare_matrix_flops: float = 0.0
    rare_iterations: float = 0.0
    #: Bytes the launch moves to and from memory.
    nbytes: float = 0.0
    #: Per draining wait of an iteration, the instructions since its last load (:func:`benchmarks.isa.drain_distances`);
    #: empty (records made before they were counted): one latency per iteration.
    drain_distances: tuple[int, ...] = ()


def wave_work(launch: Launch) -> tuple[float, float, float]:
    """(instructions, matrix instructions, matrix FLOPs) one wave of the launch runs."""
    if launch.loop_all_instructions:  # outside the loop once, the common path every iteration
        instructions = launch.instructions - launch.loop_all_instructions + launch.iterations * launch.loop_instructions
        matrix = (launch.matrix_instructions - launch.loop_all_matrix_instructions
                  + launch.iterations * launch.loop_matrix_instructions)
        matrix_flops = (launch.matrix_flops - launch.loop_all_matrix_flops
                        + launch.iterations * launch.loop_matrix_flops)
    else:
        extra = max(0.0, launch.iterations - 1)  # the loop body is in `instructions` once already
        instructions = launch.instructions + extra * launch.loop_instructions
        matrix = launch.matrix_instructions + extra * launch.loop_matrix_instructions
        matrix_flops = launch.matrix_flops + extra * launch.loop_matrix_flops
    instructions += launch.rare_iterations * launch.rare_instructions
    matrix += launch.rare_iterations * launch.rare_matrix_instructions
    matrix_flops += launch.rare_iterations * launch.rare_matrix_flops
    return instructions, matrix, matrix_flops


def wave_instructions(launch: Launch) -> float:
    """Instructions one wave of the launch runs (:func:`wave_work`)."""
    return wave_work(launch)[0]


def estimate_launch(chip: ChipSpec, launch: Launch) -> dict[str, float]:
    waves = launch.workgroups * launch.waves_per_workgroup
    slots = chip.simds * max(1, launch.occupancy)
    rounds = math.ceil(waves / slots) if waves else 0
    waves_per_simd = math.ceil(waves / chip.simds) if waves else 0
    instructions, matrix, matrix_flops = wave_work(launch)
    other = instructions - matrix
    matrix_cycles = matrix_flops / chip.matrix_flops_per_simd_cycle
    other_cycles = other * chip.valu_cycles
    compute = waves_per_simd * max(matrix_cycles, other_cycles) / chip.clock_hz
    memory = max(launch.nbytes / chip.hbm_bytes_per_s,
                 rounds * launch.iterations * latencies_per_iteration(chip, launch) * LATENCY_S)
    return {"compute_s": compute, "memory_s": memory, "time_s": max(compute, memory) + LAUNCH_S,
            "rounds": rounds, "busy_cus": min(chip.compute_units, launch.workgroups),
            "limit": "compute" if compute > memory else "memory"}


def latencies_per_iteration(chip: ChipSpec, launch: Launch) -> float:
    """Memory latencies a wave waits through per hot-loop iteration: at least one, more for waits that drain
    loads issued shortly before them (module docstring)."""
    latency_cycles = LATENCY_S * chip.clock_hz
    per_instruction = chip.valu_cycles * max(1, launch.occupancy)
    exposed = sum(max(0.0, 1 - d * per_instruction / latency_cycles) for d in launch.drain_distances)
    return max(1.0, exposed)


def estimate(chip: ChipSpec, launches: list[Launch]) -> dict[str, object]:
    """The launches of one kernel, in order; ``time_s`` is their sum."""
    parts = [estimate_launch(chip, launch) for launch in launches]
    return {"time_s": sum(part["time_s"] for part in parts), "launches": parts}
