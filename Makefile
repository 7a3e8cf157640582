# drevt-sweep: every target bootstraps .venv when it is missing. `make help` lists them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
TEST_STAMP := $(VENV)/.installed-test-stamp
NAME   ?= policy_comparison
UI_PORT ?= 5000
# One UI worker: a person's browser is the only client, and MLflow's default four cost 15 s of
# CPU and 9-14 s to come up on 2 cores against 6.7 s and 6 s for one (twenty-eighth session).
UI_WORKERS ?= 1
TRACKING_DB := $(CURDIR)/outputs/mlflow.db

.DEFAULT_GOAL := help
.PHONY: help install run sweep experiment fetch search-nodes search-load report ui server test test-fast bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}' \
	  | sed -e 's/$$(UI_PORT)/$(UI_PORT)/g' -e 's/$$(SERVER_PORT)/$(SERVER_PORT)/g'

# pip byte-compiles every installed module one after the other (~35 s of CPU for the test
# install, the longest part of it once the wheels are here); compileall does it on every core
# and leaves out the packages' own test suites (a fifth of the files), which nothing imports
# (compiled at first import if ever). Its errors (modules for other Python versions) are pip's too.
COMPILE_SITE = @echo "compiling the installed modules on $$(nproc 2>/dev/null || echo 1) cores"; \
  $(BIN)/python -m compileall -qq -j 0 -x 'site-packages/.*/tests?/' \
    "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true

# Running needs the package alone; the test extra (Ray, dask, PostgreSQL's driver, hypothesis,
# submitit: ~1 GB more) is installed by the test targets only. A test install is also a run install.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing drevt-sweep and what it needs to run into $(VENV) (a few minutes the first time)"
	$(BIN)/python -m pip install -q --upgrade pip
	@i=0; ( while sleep 10; do i=$$((i+10)); echo "  ... pip is still installing ($${i} s)"; done ) & ticker=$$!; \
	  $(BIN)/python -m pip install --progress-bar off -e . --no-compile; status=$$?; kill $$ticker; exit $$status
	$(COMPILE_SITE)
	@touch $(STAMP)

$(TEST_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing drevt-sweep with its test tools into $(VENV)"
	$(BIN)/python -m pip install -q --upgrade pip
	@i=0; ( while sleep 10; do i=$$((i+10)); echo "  ... pip is still installing ($${i} s)"; done ) & ticker=$$!; \
	  $(BIN)/python -m pip install --progress-bar off -e '.[test]' --no-compile; status=$$?; kill $$ticker; exit $$status
	$(COMPILE_SITE)
	@touch $(STAMP) $(TEST_STAMP)

install: $(STAMP) ## create .venv (if missing) and install the project with what running needs (make test adds its tools)

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

# MLflow 3's job runners (four Huey processes, ~1 GB) serve GenAI jobs we never submit.
ui: export MLFLOW_SERVER_ENABLE_JOB_EXECUTION ?= false
# ... and its usage telemetry (HTTP to a third party) is off unless you set it (README).
ui: export MLFLOW_DISABLE_TELEMETRY ?= true
ui: $(STAMP) ## serve the MLflow UI for the embedded store on 127.0.0.1:$(UI_PORT) and print each experiment's link
	@$(BIN)/python -m drevt_sweep.tracking.ui --uri sqlite:///$(TRACKING_DB) --ui http://127.0.0.1:$(UI_PORT)
	$(BIN)/mlflow ui --host 127.0.0.1 --port $(UI_PORT) --workers $(UI_WORKERS) --backend-store-uri sqlite:///$(TRACKING_DB)

# Tests run on pytest-xdist workers, one per core plus two (TEST_WORKERS=0: in this process):
# the real-Slurm comparisons hold one worker while they mostly wait (170 s of wall for 8 s of
# CPU), and many end-to-end tests wait on their subprocesses, so a second extra worker computes
# meanwhile (2 cores, fresh clone: pytest 9 min 12-43 s with one extra, 8 min 51 s with two).
# loadgroup keeps the tests sharing a module fixture (a real sweep) on one worker
# (tests/conftest.py, which also starts the waiting and slow modules first:
# --no-loadscope-reorder, else xdist hands out the grouped modules largest first).
# make test-fast has no waiting tests (the real-Slurm and other end-to-end ones are `slow`), so
# extra workers only add their start-up, collection and fixtures: one per core (FAST_WORKERS=N).
# 2 cores, idle: 2 min 40 s and 304 s of CPU (four workers: 2 min 39-48 s, 313-330 s); beside
# other work 331 s of wall and 292 s of CPU against 377 s and 325 s with four.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 2 )))
FAST_WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
PYTEST := $(BIN)/python -m pytest -q --dist loadgroup --no-loadscope-reorder

# pytest keeps the test modules it rewrites (its assertion messages) as .pyc files, unless Python
# is told not to write bytecode: then every worker rewrites all of them again (~4 s of CPU each).
test test-fast: export PYTHONDONTWRITEBYTECODE :=

test: $(TEST_STAMP) ## run the whole test suite (slow end-to-end tests included)
	$(PYTEST) -n $(TEST_WORKERS) --durations=25

test-fast: $(TEST_STAMP) ## run the fast tests only (one xdist worker per core)
	$(PYTEST) -n $(FAST_WORKERS) -m 'not slow'

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
