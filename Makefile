# Two commands do everything on a fresh clone: `make demo` and `make test`.
# The virtual environment sees the system's site-packages, so a torch that is already installed (a Kaggle
# image, a CUDA machine) is reused and never replaced, and nothing pulls CUDA wheels onto a CPU machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-solutions
TEST_STAMP := $(VENV)/.installed-dev
DEMO_DIR ?= data/demo

.PHONY: help install install-dev demo test check coverage lint bench bench-real accel clean timings

help:
	@echo "make demo   create .venv, install the kit and its reference solutions, build the small embedded competition, solve, validate and score it"
	@echo "make test   create .venv if needed and run every test (lint included) in two processes; prints the ten slowest"
	@echo "make check  lint plus the tests that train no model and start no server or browser: the edit loop"
	@echo "make coverage  every test, with the line coverage of competition/, solutions/ and leaderboard/"
	@echo "make bench  run the benchmarks and print their figures"
	@echo "make timings  time make demo, make test and make check from fresh clones of HEAD (ROUNDS=3), with CPU time and load"
	@echo "make bench-real  how every method ranks real TpuGraphs graphs (transfer from the embedded competition, within-graph, across real programs), how additive real and embedded runtimes are, and which settings each method charges"
	@echo "make bench-peers  the official TpuGraphs baselines (TensorFlow + TF-GNN, in their own .venv-peers) beside the kit's methods on the same small competitions and real graphs, scored by the kit"
	@echo "make accel  optional: compile torch-scatter for the torch in .venv (cached; docs/install.md, "torch-scatter")"

$(BIN)/python:
	$(PYTHON) -m venv --system-site-packages $(VENV)

# torch comes first and on its own: an installed torch is reused as it is; otherwise the CPU build
# (torch==X+cpu from a local wheel or PyTorch's CPU index), or the default build when an NVIDIA driver
# is present. pip then finds the `solutions` extra's torch satisfied and never replaces it.
TORCH_VERSION ?= 2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
$(VENV)/.torch: $(BIN)/python
	@if $(BIN)/python -c "import torch" 2>/dev/null; then \
		echo "reusing the installed torch $$($(BIN)/python -c 'import torch; print(torch.__version__)')"; \
	elif command -v nvidia-smi >/dev/null 2>&1; then \
		$(BIN)/python -m pip install --quiet "torch>=2.1"; \
	else \
		$(BIN)/python -m pip install --quiet "torch==$(TORCH_VERSION)+cpu" 2>/dev/null || \
		$(BIN)/python -m pip install --quiet torch --index-url $(TORCH_CPU_INDEX) --extra-index-url https://pypi.org/simple; \
	fi
	@touch $@

# pyproject.toml is the one list of dependencies; each target installs the extras it needs
# (docs/install.md): make demo the reference solutions (`solutions`), make test everything (`dev`). The kit
# itself is installed editable, so the tpugraphs command runs this checkout's code. $(STAMP) is the
# demo's install (the kit and its reference solutions), $(TEST_STAMP) everything.
$(VENV)/.installed-%: $(VENV)/.torch pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade-strategy only-if-needed -e ".[$*]"
	@touch $@

install: $(STAMP)
install-dev: $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/python -m solutions.demo --out $(DEMO_DIR)

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

# The tests run in TEST_WORKERS processes (pytest-xdist; 0: in this one), a test file's tests in one of them
# (--dist loadfile), so that a module's fixtures (a trained model, a server) are built once. pytest exits 5
# when it collects nothing; that is not a failure of the kit. `make check` is the root conftest.py's
# `pytest --check`: no training, no server, no browser.
TEST_WORKERS ?= 2
PARALLEL = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)
PYTEST = $(BIN)/python -m pytest $(PARALLEL)
NOTHING_COLLECTED = rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc
test: $(TEST_STAMP) lint
	$(PYTEST) --durations=10; $(NOTHING_COLLECTED)

check: $(TEST_STAMP) lint
	$(PYTEST) --check; $(NOTHING_COLLECTED)

coverage: $(TEST_STAMP)
	$(PYTEST) --cov=competition --cov=solutions --cov=leaderboard --cov-report=term; $(NOTHING_COLLECTED)

bench: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.run_all

# Real data decides: every method on the real graphs (../shared/realdata/kaggle when present, and the two
# real protos the kit ships); BENCHMARKS.md, "Real data". About an hour on 2 CPU cores. Then how additive
# real and embedded runtimes are (docs/synthetic-data.md, "What still disagrees"), about a minute more.
REAL_DATA ?= ../shared/realdata/kaggle
# On a full release, restrict the three benchmarks to some graphs (REAL_ONLY: text their names contain)
# and bench_real's runs (BENCH_REAL_ARGS), e.g.
#   make bench-real REAL_DATA=PATH REAL_ONLY=xla BENCH_REAL_ARGS="--seeds 0 --draws 1 --time-budget 300"
# Pairs of methods compared run by run after the tables (REAL_COMPARE, BASE:NEW each; both must be among
# the methods run, REAL_COMPARE= for none): by default each learned method against the heuristic, the
# rule it has to beat. Afterwards, any two: python -m benchmarks.compare_real data/bench-real/results.json
# BASE NEW
REAL_COMPARE ?= heuristic:gbdt heuristic:gnn
REAL_ONLY ?=
BENCH_REAL_ARGS ?=
ONLY_ARG = $(if $(REAL_ONLY),--only $(REAL_ONLY))
bench-real: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.bench_real --real $(REAL_DATA) $(ONLY_ARG) $(addprefix --compare ,$(REAL_COMPARE)) \
		$(BENCH_REAL_ARGS)
	$(BIN)/python -m benchmarks.bench_additivity --real $(REAL_DATA) $(ONLY_ARG)
	$(BIN)/python -m benchmarks.bench_attribution --real $(REAL_DATA) $(ONLY_ARG)

# Beside the official baselines: the upstream TpuGraphs programs (../shared/peers/tpu_graphs, TensorFlow +
# TF-GNN in their own .venv-peers, built on first use from benchmarks/peers-requirements.txt) and the kit's
# methods on the same small competitions and real graphs, scored by the kit; BENCHMARKS.md, "Beside the
# official baselines". The upstream runs its README's recipe (layout --epochs 10 --max_configs 1000), every
# method 3 seeds; options through BENCH_PEERS_ARGS, e.g. BENCH_PEERS_ARGS="--recipe defaults --run-seeds 0,1,2,3".
.PHONY: bench-peers
BENCH_PEERS_ARGS ?=
bench-peers: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.bench_peers --real $(REAL_DATA) $(BENCH_PEERS_ARGS)

# Optional: torch-scatter compiled from source against the torch in $(VENV) (PyPI has no wheel for current
# torch). The wheel is cached under the pip cache, keyed by torch, Python and torch-scatter versions, so a
# second build only installs. Without a compiler, or when the build fails, it says so, exits non-zero and
# installs nothing: the kit keeps working on torch's own scatter ops (solutions/compute/accel.py).
TORCH_SCATTER_VERSION ?= 2.1.2
accel: $(STAMP)
	$(BIN)/python scripts/build_accel.py --version $(TORCH_SCATTER_VERSION)

clean:
	rm -rf $(VENV) data/demo .pytest_cache .ruff_cache .coverage

# Execute the notebooks (the five starter notebooks and the hosts' one) in place on the small embedded
# competition (reusing data/demo when `make demo` built it), so that they are committed with their outputs,
# then each once more on the tiny one to record its figures; `make test` checks they are not stale.
.PHONY: notebooks
notebooks: $(VENV)/.installed-notebooks
	$(BIN)/python notebooks/execute.py

# The README's commands timed as a new user meets them: ROUNDS fresh clones of HEAD, each running make demo,
# make test and make check, with wall time, CPU time and the machine's load (BENCHMARKS.md, "Timings").
# Needs nothing but python3, git and make: it builds each clone's .venv itself.
ROUNDS ?= 3
.PHONY: timings
timings:
	$(PYTHON) -m benchmarks.timings --rounds $(ROUNDS)
