# Two commands on a fresh machine: `make demo` (the main job) and `make test` (the test suite).
# Both create .venv and install this package with its dev extras first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup test lint demo dataset check-dataset lean lean-check doctor bench soak clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

lint: setup
	$(BIN)/ruff check .

test: setup
	@sh scripts/ensure-bwrap.sh
	$(BIN)/ruff check .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest

demo: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m lean_mod_add_proof.demo

# Rebuild the committed task set from scratch (training + generation), byte for byte.
dataset: setup
	$(BIN)/python -m lean_mod_add_proof.dataset.rebuild lean_mod_add_proof/tasks

# Rebuild into a scratch directory and compare with the committed set.
check-dataset: setup
	$(BIN)/python -m lean_mod_add_proof.dataset.rebuild --check lean_mod_add_proof/tasks

lean: setup
	$(BIN)/lean-mod-add-proof install-lean

# On a machine with the pinned toolchain (after `make lean`): self-test, Lean integration tests and
# calibration on three tasks, as one report to paste into an issue.
lean-check: setup
	$(BIN)/python scripts/lean_check.py

doctor: setup
	$(BIN)/lean-mod-add-proof doctor

bench: setup
	$(BIN)/python benchmarks/grader_overhead.py

# Mixed grades with faults against the toolchain double; fails on anything left behind.
soak: setup
	$(BIN)/python benchmarks/soak.py --grades 200 --concurrency 8

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
