# `make demo` and `make test` do all the set-up: a .venv with the package and its test tools.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Written after a successful install; redone when the dependencies change.
INSTALLED := $(VENV)/.installed

.PHONY: demo test lit pytest plant docs bench bench-quick bench-peers llvm-mca fuzz clean gpu-artefacts

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test,nvidia]'
	touch $@

# The main job: a paged decode attention kernel (B=2, 16 query heads on 2 KV heads, 512
# tokens, D=128, f16, pages of 16 tokens, ragged lengths) split along the KV sequence to fill
# the chip (--num-splits 0: from gfx942's compute units), generated at L0, compiled to gfx942
# assembly (every level in out/levels, the report of both kernels on stderr, the launch plan
# in out/paged_decode.plan.json) and to a code object, then lowered again and executed by
# the interpreter, split kernel then combine kernel, against the numpy reference.
DEMO := --batch 2 --num-heads-q 16 --num-heads-kv 2 --seq-len-q 1 --seq-len-k 512 --head-dim 128 --page-size 16 --dtype f16 --seq-lens --num-splits 0

demo: $(INSTALLED)
	mkdir -p out
	$(BIN)/pagedir-gen attention $(DEMO) --arch gfx942 -o out/paged_decode.mlir
	$(BIN)/pagedir-compile out/paged_decode.mlir --arch gfx942 --emit=asm -o out/paged_decode.s --dump-dir out/levels --report --plan=out/paged_decode.plan.json
	$(BIN)/pagedir-compile out/paged_decode.mlir --arch gfx942 --emit=hsaco -o out/paged_decode.hsaco
	$(BIN)/pagedir-run --check out/paged_decode.mlir

# Both suites always run; the target fails when either fails (pytest's "no tests
# collected", exit code 5, counts as a failure too).
test: $(INSTALLED)
	@status=0; \
	$(BIN)/lit -v tests/lit || status=1; \
	$(BIN)/pytest tests/unit || status=1; \
	exit $$status

lit: $(INSTALLED)
	$(BIN)/lit -v tests/lit

pytest: $(INSTALLED)
	$(BIN)/pytest tests/unit

# The test of the tests (tools/plant_bugs.py): each known bug is planted in a scratch copy
# of src and the tests that must catch it are run there; prints plant -> catcher -> seconds.
plant: $(INSTALLED)
	$(BIN)/python tools/plant_bugs.py

# Benchmarks (benchmarks/bench.py): compile time by stage, kernel report, bytes, interpreter speed.
# `bench` also refreshes README's Benchmarks section; without matplotlib the plots are skipped.
BENCH_INSTALLED := $(VENV)/.installed-bench

$(BENCH_INSTALLED): $(INSTALLED)
	$(BIN)/python -m pip install --quiet -e '.[bench]' || echo "note: matplotlib not installed, the plots will be skipped"
	touch $@

bench: $(BENCH_INSTALLED)
	$(BIN)/python benchmarks/bench.py --readme README.md

bench-quick: $(BENCH_INSTALLED)
	$(BIN)/python benchmarks/bench.py --quick

# pagedir next to vLLM's Triton paged-attention kernels (benchmarks/peers.py): both compiled for
# gfx942, gfx950 and gfx1100 without a GPU, read with one counter, with the roofline model; writes
# benchmarks/results/PEERS.md and peers.json and the peer rows of README's Benchmarks section.
# An optional extra: its own environment (.venv-peers, about 1.5 GB) with the pinned triton,
# vllm and CPU torch of benchmarks/requirements-peers*.txt; never part of `make test`.
PEERS_VENV ?= .venv-peers
PEERS_INSTALLED := $(PEERS_VENV)/.installed

$(PEERS_INSTALLED): benchmarks/requirements-peers.txt benchmarks/requirements-peers-nodeps.txt
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet -r benchmarks/requirements-peers.txt
	$(PEERS_VENV)/bin/python -m pip install --quiet --no-deps -r benchmarks/requirements-peers-nodeps.txt
	touch $@

# llvm-mca for the cycles columns (benchmarks/mca.py): Debian's llvm-22 (bookworm-security: it knows
# gfx942, gfx950 and gfx1100 and runs buffer instructions as they are), unless an llvm-mca of LLVM 20
# or newer is there already ($LLVM_MCA, /usr/lib/llvm-N); llvm-19 where llvm-22 is not to be had (no
# gfx950 nor Triton's gfx1100 assembly, buffer instructions rewritten: PEERS.md says what that costs).
LLVM_MCA_FOUND = $(shell ls /usr/lib/llvm-2[0-9]/bin/llvm-mca 2>/dev/null | head -1)
SUDO ?= $(shell test "$$(id -u)" = 0 || echo sudo)

llvm-mca:
	@test -n "$(LLVM_MCA)$(LLVM_MCA_FOUND)" || { $(SUDO) apt-get update -qq && \
		{ $(SUDO) apt-get install -y llvm-22 || $(SUDO) apt-get install -y llvm-19; }; }

bench-peers: $(INSTALLED) $(PEERS_INSTALLED) llvm-mca
	$(BIN)/python benchmarks/peers.py pagedir
	$(PEERS_VENV)/bin/python benchmarks/peers.py vllm
	$(BIN)/python benchmarks/peers.py report --readme README.md

# The GPU run's kernels, compiled here on the CPU (benchmarks/gpu/build_artefacts.py) into
# benchmarks/gpu/artefacts, the folder a GPU machine gets with the repository; there,
# `PYTHONPATH=src python benchmarks/gpu/run_gpu.py` checks and times them (torch and Triton only).
# vLLM's kernel source is copied from .venv-peers when `make bench-peers` set it up.
# PTX by default: the driver compiles it when it is loaded; GPU_EMIT=cubin needs ptxas (NVIDIA's
# nvidia-cuda-nvcc wheel).
GPU_ARCH ?= sm_90
GPU_EMIT ?= ptx

gpu-artefacts: $(INSTALLED)
	$(BIN)/python benchmarks/gpu/build_artefacts.py --arch $(GPU_ARCH) --emit $(GPU_EMIT) --out benchmarks/gpu/artefacts --vllm-python $(PEERS_VENV)/bin/python

# Fuzz sweep (benchmarks/fuzz.py): 5000 mutated inputs and argument vectors over the four tools,
# 2 at a time; the report and the first reproducers of each bad class go to benchmarks/results.
FUZZ_COUNT ?= 5000
FUZZ_SEED ?= 1

fuzz: $(INSTALLED)
	$(BIN)/python benchmarks/fuzz.py --count $(FUZZ_COUNT) --seed $(FUZZ_SEED) --jobs 2

# Regenerate the dialect reference from the op declarations.
docs: $(INSTALLED)
	$(BIN)/pagedir-opt --show-dialect rock > docs/rock.md

clean:
	rm -rf $(VENV) $(PEERS_VENV) tests/lit/Output tests/lit/*/Output tests/lit/*/*/Output .pytest_cache benchmarks/results-quick
