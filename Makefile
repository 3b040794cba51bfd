# `make demo` and `make test` do all the set-up: a .venv with the package and its test tools.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Written after a successful install; redone when the dependencies change.
INSTALLED := $(VENV)/.installed

.PHONY: demo test lit pytest docs bench bench-quick clean

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(INSTALLED)
	$(BIN)/pagedir-opt --rock-verify examples/paged_decode.mlir

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

# Regenerate the dialect reference from the op declarations.
docs: $(INSTALLED)
	$(BIN)/pagedir-opt --show-dialect rock > docs/rock.md

clean:
	rm -rf $(VENV) tests/lit/Output tests/lit/*/Output tests/lit/*/*/Output .pytest_cache benchmarks/results-quick
