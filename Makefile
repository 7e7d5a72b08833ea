# Two commands do everything on a fresh clone: `make demo` and `make test`.
# The virtual environment sees the system's site-packages, so a torch that is already installed (a Kaggle
# image, a CUDA machine) is reused and never replaced, and nothing pulls CUDA wheels onto a CPU machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR ?= data/demo

.PHONY: help install demo test lint bench clean

help:
	@echo "make demo   create .venv, install, build the small embedded competition, solve, validate and score it"
	@echo "make test   create .venv if needed and run every test (lint included)"
	@echo "make bench  run the benchmarks and print their figures"

$(BIN)/python:
	$(PYTHON) -m venv --system-site-packages $(VENV)

$(STAMP): $(BIN)/python requirements.txt pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade-strategy only-if-needed -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m solutions.demo --out $(DEMO_DIR)

lint: $(STAMP)
	$(BIN)/ruff check .

# pytest exits 5 when it collects nothing; that is not a failure of the kit.
test: $(STAMP) lint
	$(BIN)/python -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) data/demo .pytest_cache .ruff_cache
