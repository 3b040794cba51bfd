#!/usr/bin/env bash
# The whole GPU run in one command, on a machine with an NVIDIA GPU, torch and Triton and no package
# registry, given the repository and benchmarks/gpu/artefacts (make gpu-artefacts, on the CPU):
#
#     bash benchmarks/gpu/run.sh [run_gpu.py options]
#
# Results go to $OUT/gpu when OUT names a folder (a lent machine's return folder), else to
# benchmarks/results/gpu. The run bounds itself (run_gpu.py --budget); timeout is the backstop.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:+$OUT/gpu}"
out="${out:-benchmarks/results/gpu}"
if [ ! -f benchmarks/gpu/artefacts/manifest.json ]; then
    echo "run.sh: no benchmarks/gpu/artefacts/manifest.json: run make gpu-artefacts first (on the CPU)" >&2
    exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
PYTHONPATH=src timeout 540 python benchmarks/gpu/run_gpu.py --out "$out" "$@"
