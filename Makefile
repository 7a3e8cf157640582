# drevt-sweep: every target bootstraps .venv when it is missing. `make help` lists them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
NAME   ?= policy_comparison
UI_PORT ?= 5000
TRACKING_DB := $(CURDIR)/outputs/mlflow.db

.DEFAULT_GOAL := help
.PHONY: help install run sweep experiment fetch search-nodes search-load report ui server test test-fast bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

install: $(STAMP) ## create .venv (if missing) and install the project with its test tools

run: $(STAMP) ## run the default sweep on the bundled KTH-SP2 trace and say where to look
	$(BIN)/drevt-sweep -m policy=fcfs,easy,conservative run_time=actual,lognormal replicates=4

sweep: $(STAMP) ## multirun over policy x run-time model (override with ARGS='...')
	$(BIN)/drevt-sweep -m policy=fcfs,easy,conservative run_time=actual,limit,lognormal $(ARGS)

experiment: $(STAMP) ## run a named experiment from conf/experiment (NAME=policy_comparison)
	$(BIN)/drevt-sweep -m experiment=$(NAME) $(ARGS)

fetch: $(STAMP) ## download a public trace into the user data folder: make fetch TRACE=lanl_cm5
	@test -n "$(TRACE)" || { $(BIN)/drevt-sweep-fetch --list; echo "usage: make fetch TRACE=<name>"; exit 2; }
	$(BIN)/drevt-sweep-fetch $(TRACE)

search-nodes: $(STAMP) ## the smallest KTH-SP2 machine with p95 wait <= 1 h under EASY, lognormal run times
	$(BIN)/drevt-sweep experiment=nodes_for_p95_wait $(ARGS)

search-load: $(STAMP) ## the load factor at which conservative's mean bounded slowdown passes 10 on KTH-SP2
	$(BIN)/drevt-sweep experiment=load_for_conservative_bsld $(ARGS)

report: $(STAMP) ## rebuild report.html of a finished sweep: make report SWEEP=outputs/multirun/<date>
	@test -n "$(SWEEP)" || { echo "usage: make report SWEEP=outputs/multirun/<date_time>"; exit 2; }
	$(BIN)/drevt-sweep-report $(SWEEP) $(ARGS)

ui: $(STAMP) ## serve the MLflow UI for the embedded store on 127.0.0.1:$(UI_PORT)
	$(BIN)/mlflow ui --host 127.0.0.1 --port $(UI_PORT) --backend-store-uri sqlite:///$(TRACKING_DB)

# Tests run on pytest-xdist workers, one per core (TEST_WORKERS=0: in this process). loadgroup
# keeps the tests sharing a module fixture (a real sweep) on one worker (tests/conftest.py).
TEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

test: $(STAMP) ## run the whole test suite (slow end-to-end tests included)
	$(PYTEST) --durations=25

test-fast: $(STAMP) ## run the fast tests only
	$(PYTEST) -m 'not slow'

bench: $(STAMP) ## run the benchmarks and update benchmarks/RESULTS.md
	$(BIN)/python benchmarks/run_all.py

clean: ## remove run outputs and caches (keeps .venv)
	rm -rf outputs/* multirun .pytest_cache .hypothesis
	@touch outputs/.gitkeep

.PHONY: server
SERVER_PORT ?= 5001
SERVER_ROOT ?= $(CURDIR)/outputs
server: $(STAMP) ## MLflow tracking server on PostgreSQL, 127.0.0.1:$(SERVER_PORT) (apt-get install postgresql)
	$(BIN)/python -m drevt_sweep.tracking.server run --root $(SERVER_ROOT) --port $(SERVER_PORT)
