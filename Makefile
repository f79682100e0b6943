# EvoSyn: `make run` runs the default offline campaign, `make test` lints, type-checks and tests.
PYTHON ?= python3.11
# The training venv's interpreter: torch 2.13.0's CPU wheel on this disk is for 3.11.
TRAIN_PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
CONFIG ?= deployments/campaigns/airline-offline.yaml

.PHONY: run test test-slow lint typecheck bench clean server pools deploy worker-cpu worker-gpu train-env report-docs sweep

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstall only when the project's metadata changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The training stack for CPU-only machines (developers, CI): torch 2.13.0's CPU build,
# LLaMA-Factory without the torchvision/torchaudio wheels that cannot load beside it
# (docker/train-cpu.txt says why). Its own venv: the synthesis stack never imports torch.
TRAIN_VENV ?= .venv-train
$(TRAIN_VENV)/.installed: docker/train-cpu.txt docker/torchaudio.py
	$(TRAIN_PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/pip install --quiet --upgrade pip
	$(TRAIN_VENV)/bin/pip install --quiet torch==2.13.0
	$(TRAIN_VENV)/bin/pip install --quiet -r docker/train-cpu.txt
	$(TRAIN_VENV)/bin/pip install --quiet --no-deps llamafactory==0.9.5
	# DeepSpeed builds against the installed torch (an isolated build would fetch a CUDA one);
	# its ops compile on first use, so nothing is compiled here.
	$(TRAIN_VENV)/bin/pip install --quiet --no-build-isolation deepspeed==0.17.6
	cp docker/torchaudio.py "$$($(TRAIN_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torchaudio.py"
	$(TRAIN_VENV)/bin/llamafactory-cli version >/dev/null
	touch $@

train-env: $(TRAIN_VENV)/.installed

run: $(VENV)/.installed
	$(BIN)/evosyn campaign run $(CONFIG)

# The import layers of docs/architecture.md (.importlinter). import-linter finds a package by
# its import name, out of sight of the editable hook, so it reads a tree of links laid out as
# the installed `evosyn.*` namespace.
lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf build/layers && mkdir -p build/layers/evosyn
	for f in evosyn/*; do ln -s ../../../$$f build/layers/evosyn/; done
	for d in agents environments storage tasks flows; do ln -s ../../../$$d build/layers/evosyn/$$d; done
	cd build/layers && ../../$(BIN)/lint-imports --no-cache --no-logo ../../.importlinter

# mypy cannot follow setuptools' editable import hook, so it checks a tree of links laid out
# as the installed `evosyn.*` namespace.
typecheck: $(VENV)/.installed
	rm -rf build/typecheck && mkdir -p build/typecheck/evosyn
	for f in evosyn/*; do ln -s ../../../$$f build/typecheck/evosyn/; done
	for d in agents environments storage tasks flows; do ln -s ../../../$$d build/typecheck/evosyn/$$d; done
	cd build/typecheck && ../../$(BIN)/mypy --config-file ../../pyproject.toml -p evosyn

# The tests that train a model find LLaMA-Factory through LLAMAFACTORY_PYTHON. The suite runs
# in TEST_WORKERS processes (pytest-xdist), each test file on one of them (its module fixtures
# built once), the files marked heavy handed out first; `TEST_WORKERS=0` runs it in this
# process. One worker more than cores, up to 4: much of the suite waits on servers, workers and
# subprocesses, and the extra worker uses the cores meanwhile.
CORES := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
TEST_WORKERS ?= $(shell echo $$(( $(CORES) < 4 ? $(CORES) + 1 : 4 )))
test: lint typecheck $(TRAIN_VENV)/.installed
	LLAMAFACTORY_PYTHON=$(abspath $(TRAIN_VENV))/bin/python $(BIN)/pytest \
	  $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test-slow: $(VENV)/.installed $(TRAIN_VENV)/.installed
	LLAMAFACTORY_PYTHON=$(abspath $(TRAIN_VENV))/bin/python $(BIN)/pytest -m slow

# docs/report.md's generated tables, rerun from their campaigns and experiments and rewritten
# in place. The default campaign starts from an empty lake (a minute; campaign run refuses an
# id the lake holds); the experiments and the sweep resume (a rerun skips finished campaigns;
# two hours or more on two cores).
EXPERIMENTS := deployments/experiments
report-docs: $(VENV)/.installed
	rm -rf lake-default
	$(BIN)/evosyn campaign run deployments/campaigns/airline-offline.yaml --campaign-id demo \
	  --lake lake-default
	$(BIN)/evosyn synth --domain airline --n 60 --campaign-id s1 --lake lake-default
	$(BIN)/evosyn report demo --compare s1 --lake lake-default --docs docs/report.md
	$(BIN)/evosyn experiment run $(EXPERIMENTS)/airline-simulated.yaml
	$(BIN)/evosyn experiment run $(EXPERIMENTS)/airline-simulated-null.yaml
	$(BIN)/evosyn report --experiment airline-simulated --null airline-simulated-null \
	  --lake lake-experiments --docs docs/report.md
	$(BIN)/evosyn experiment run $(EXPERIMENTS)/report-check.yaml
	$(BIN)/evosyn experiment run $(EXPERIMENTS)/report-check-null.yaml
	$(BIN)/evosyn report --experiment report-check --null report-check-null \
	  --lake lake-report-check --docs docs/report.md
	$(BIN)/evosyn experiment run $(EXPERIMENTS)/airline-blind-sweep.yaml
	$(BIN)/evosyn report --sweep $(EXPERIMENTS)/airline-blind-sweep.yaml --lake lake-sweep \
	  --docs docs/report.md

# The blind weakness sweep (docs/report.md#the-blind-weakness-sweep) and its report.
sweep: $(VENV)/.installed
	$(BIN)/evosyn experiment run $(EXPERIMENTS)/airline-blind-sweep.yaml
	$(BIN)/evosyn report --sweep $(EXPERIMENTS)/airline-blind-sweep.yaml --lake lake-sweep \
	  --out report/

bench: $(VENV)/.installed
	@set -e; for b in tests/benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b; done

# Operations (docs/operations.md): a Prefect server with its UI on 127.0.0.1:$(PREFECT_PORT),
# SQLite under PREFECT_HOME unless PREFECT_API_DATABASE_CONNECTION_URL names a Postgres database
# (postgresql+asyncpg://user:pass@host:5432/prefect); analytics off. Pools are created once
# (POOL_TYPE=docker or kubernetes for image-based workers); workers run from this checkout.
PREFECT_PORT ?= 4200
POOL_TYPE ?= process
OPS := server pools deploy worker-cpu worker-gpu
$(OPS): export PREFECT_SERVER_ANALYTICS_ENABLED = false
$(OPS): export PREFECT_API_URL ?= http://127.0.0.1:$(PREFECT_PORT)/api
$(OPS): export EVOSYN_HOME ?= $(CURDIR)

server: $(VENV)/.installed
	$(BIN)/prefect server start --host 127.0.0.1 --port $(PREFECT_PORT)

pools: $(VENV)/.installed
	@for pool in cpu gpu; do \
	  $(BIN)/prefect work-pool inspect $$pool >/dev/null 2>&1 && echo "work pool $$pool exists" || \
	  $(BIN)/prefect work-pool create $$pool --type $(POOL_TYPE) || exit 1; \
	done

# prefect deploy --all, keeping each existing schedule on or off as it is (flows/deploy.py).
deploy: $(VENV)/.installed
	$(BIN)/python -m evosyn.flows.deploy deployments/prefect.yaml

worker-cpu: $(VENV)/.installed
	$(BIN)/prefect worker start --pool cpu

worker-gpu: $(VENV)/.installed
	$(BIN)/prefect worker start --pool gpu

clean:
	rm -rf build dist lake lake-experiments lake-sweep lake-report-check .evosyn-cache .pytest_cache .mypy_cache .ruff_cache
