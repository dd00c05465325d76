# Two commands on a fresh machine: `make demo` (the main job) and `make test` (the test suite).
# Both create .venv and install this package with its dev extras first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup test test-quick test-stress lint demo dataset check-dataset lean lean-check doctor bench soak mutate clean

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

# The inner loop: the modules tests/conftest.py lists in QUICK_MODULES (the grader's pure parts,
# the taskset, the docs), under 3 minutes on 2 cores; it starts no grade, CLI command or vf-eval
# (docs/development.md says what it leaves out). CI runs the whole suite (`make test`).
test-quick: setup
	$(BIN)/ruff check .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -m quick -q

# The whole suite beside a CPU hog (STRESS_HOGS busy processes, default one per core): no test's
# verdict may depend on having the machine to itself (issue 41). About twice `make test`'s time.
STRESS_HOGS ?= $(shell nproc 2>/dev/null || echo 2)
test-stress: setup
	@sh scripts/ensure-bwrap.sh
	$(BIN)/ruff check .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python scripts/beside_cpu_hog.py --hogs $(STRESS_HOGS) -- $(BIN)/pytest

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

# On a machine with the pinned toolchain (after `make lean`): self-test, Lean integration tests, one
# hard task (built, its brute force timed, the packed draft tried) and calibration on three grid
# tasks, as one report to paste into an issue.
lean-check: setup
	$(BIN)/lean-mod-add-proof lean-check

doctor: setup
	$(BIN)/lean-mod-add-proof doctor

# The grader's overhead on a cached grade (per step, paired with bare runs), its scaling up to
# 2 x nproc, and what `kernels = all` costs (commands per cached grade for each mode).
bench: setup
	$(BIN)/python benchmarks/grader_overhead.py
	$(BIN)/python benchmarks/kernel_processes.py
	$(BIN)/python benchmarks/guard_speed.py

# Mixed grades with faults against the toolchain double; fails on anything left behind or any grade
# that ends wrongly (a stall included). Unsandboxed at concurrency 8, then sandboxed at concurrency 32,
# SOAK_RUNS times (issue 18's lost wake-up showed only there). Needs bwrap for the second part.
SOAK_RUNS ?= 10
soak: setup
	$(BIN)/python benchmarks/soak.py --grades 200 --concurrency 8
	@sh scripts/ensure-bwrap.sh
	$(BIN)/python benchmarks/soak.py --grades 100 --concurrency 32 --sandbox on --runs $(SOAK_RUNS)

# Mutation testing of the grader's pure modules, scored per module (a benchmark, not CI; mutmut
# comes from the `mutate` extra). About 20 minutes on 2 cores with a seeded sample of guard.py's
# mutants; MUTATE_ARGS="--guard-sample 0" runs all of them, "--modules judge,result" only those.
MUTATE_ARGS ?= --guard-sample 150
mutate: setup
	@$(BIN)/python -c "import importlib.metadata as m; assert m.version('mutmut') == '3.8.1'" 2>/dev/null || $(BIN)/pip install -q -e '.[mutate]'
	$(BIN)/python benchmarks/mutate.py $(MUTATE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .test-cache

# The grading image (container/Containerfile), tagged as the taskset's default image.
# Only what the Containerfile copies may reach the build (container/Containerfile.dockerignore):
# docker builds with `buildx build`, always BuildKit, which reads that file next to the
# Containerfile (docker's legacy builder ignores it and would send the whole checkout, .venv
# included, so a docker without buildx is refused); podman is given it with --ignorefile
# (podman-build(1)).
.PHONY: image warm-cache
PKG_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE ?= lean-mod-add-proof:$(PKG_VERSION)
CONTAINER_TOOL ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)
IMAGE_BUILD = $(if $(filter docker,$(notdir $(CONTAINER_TOOL))),buildx build --load,build$(if \
  $(filter podman,$(notdir $(CONTAINER_TOOL))), --ignorefile container/Containerfile.dockerignore))

image:
	@if [ -z "$(CONTAINER_TOOL)" ]; then \
	  echo "make image: neither docker nor podman is installed; install one, or set CONTAINER_TOOL" >&2; \
	  exit 1; \
	fi
	@if [ "$$(basename "$(CONTAINER_TOOL)")" = docker ] && ! $(CONTAINER_TOOL) buildx version >/dev/null 2>&1; then \
	  echo "make image: docker has no buildx; its legacy builder ignores container/Containerfile.dockerignore and would send the whole checkout (.venv included). Install docker-buildx, or use podman." >&2; \
	  exit 1; \
	fi
	$(CONTAINER_TOOL) $(IMAGE_BUILD) -f container/Containerfile -t $(IMAGE) .

# Prebuild the grader's Network/Weights cache of every task on this host (needs `make lean`);
# grader flags go in WARM_CACHE_ARGS, e.g. WARM_CACHE_ARGS="--cache-dir /data/cache".
WARM_CACHE_ARGS ?=
warm-cache: setup
	$(BIN)/lean-mod-add-proof warm-cache $(WARM_CACHE_ARGS)
