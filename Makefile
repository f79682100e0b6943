# EvoSyn: `make run` runs the default offline campaign, `make test` lints, type-checks and tests.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
CONFIG ?= deployments/campaigns/airline-offline.yaml

.PHONY: run test test-slow lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstall only when the project's metadata changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/evosyn campaign run $(CONFIG)

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy cannot follow setuptools' editable import hook, so it checks a tree of links laid out
# as the installed `evosyn.*` namespace.
typecheck: $(VENV)/.installed
	rm -rf build/typecheck && mkdir -p build/typecheck/evosyn
	for f in evosyn/*; do ln -s ../../../$$f build/typecheck/evosyn/; done
	for d in agents environments storage tasks flows; do ln -s ../../../$$d build/typecheck/evosyn/$$d; done
	cd build/typecheck && ../../$(BIN)/mypy --config-file ../../pyproject.toml -p evosyn

test: lint typecheck
	$(BIN)/pytest

test-slow: $(VENV)/.installed
	$(BIN)/pytest -m slow

bench: $(VENV)/.installed
	@set -e; for b in tests/benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b; done

clean:
	rm -rf build dist lake .evosyn-cache .pytest_cache .mypy_cache .ruff_cache
