"""Registry of pagedir passes, keyed by pass argument; modules are imported on first use.

Each entry names the module (``rock-reuse-lds`` lives in ``reuse_lds.py``), the
pass class and a one-line summary, so ``--list-passes`` and ``--help`` need no
import. Use :func:`add_pass` to put a pass into your own ``PassManager``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from pagedir.passes.base import OptionError, Pass, add_pass, kernel_functions, parse_options


@dataclass(frozen=True)
class PassInfo:
    argument: str
    module: str
    class_name: str
    summary: str


_ENTRIES = (
    PassInfo("rock-verify", "verify", "RockVerifyPass", "Run the Python verifiers of every rock op"),
    PassInfo("rock-raise-attention", "raise_attention", "RaiseAttentionPass",
             "Recognise linalg attention payloads and replace them with rock.attention"),
    PassInfo("rock-attention-to-gridwise", "attention_to_gridwise", "AttentionToGridwisePass",
             "Validate rock.attention and choose its tiling: rock.gridwise_attention_accel"),
    PassInfo("rock-gridwise-attention-to-blockwise", "gridwise_attention_to_blockwise", "GridwiseAttentionToBlockwisePass",
             "Flash-attention loop over KV tiles with LDS tiles and online softmax"),
    PassInfo("rock-pipeline", "pipeline", "PipelinePass",
             "Issue the tile loads of tile t + 1 during tile t of a KV loop (register staging)"),
    PassInfo("rock-annotate-liveness", "annotate_liveness", "AnnotateLivenessPass",
             "Mark the live ranges of LDS buffers with rock.live_in/rock.live_out"),
    PassInfo("rock-reuse-lds", "reuse_lds", "ReuseLDSPass",
             "Pack LDS buffers whose live ranges do not overlap into shared allocations"),
    PassInfo("rock-blockwise-load", "blockwise_load", "BlockwiseLoadPass",
             "Lower rock.blockwise_load_tile: page pointers staged in LDS, then per-thread reads"),
    PassInfo("rock-threadwise-lowering", "threadwise_lowering", "ThreadwiseLoweringPass",
             "Lower rock.threadwise_read_into to rock.global_load with page pointers and validity"),
    PassInfo("rock-buffer-load", "buffer_load", "BufferLoadPass",
             "Lower rock.global_load to rocdl buffer descriptors and raw buffer loads"),
    PassInfo("rock-to-gpu", "rock_to_gpu", "RockToGPUPass",
             "Turn rock kernel functions into gpu.module/gpu.func kernels"),
)

PASSES: dict[str, PassInfo] = {}
for _entry in _ENTRIES:
    if _entry.argument in PASSES:  # pragma: no cover - caught at start-up
        raise RuntimeError(f"duplicate pass argument {_entry.argument}")
    PASSES[_entry.argument] = _entry


def get_pass_class(argument: str) -> type[Pass]:
    """The pass class registered under ``argument`` (KeyError for an unknown one)."""
    info = PASSES[argument]
    module = importlib.import_module(f"pagedir.passes.{info.module}")
    return getattr(module, info.class_name)


def create_pass(argument: str, options: str | dict | None = None) -> Pass:
    """An instance of the pass ``argument`` with options parsed from text or a dict."""
    cls = get_pass_class(argument)
    return cls(parse_options(cls, options or ""))


__all__ = sorted(
    ["PASSES", "OptionError", "Pass", "PassInfo", "add_pass", "create_pass", "get_pass_class", "kernel_functions", "parse_options"]
)
