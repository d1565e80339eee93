# Every target a developer or CI needs; `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
BIN := .venv/bin
HOST ?= 127.0.0.1
PORT ?= 8000

# Never let uv download an interpreter: the project uses the machine's Python 3.11+.
export UV_PYTHON_DOWNLOADS := never

.PHONY: help install run test lint typecheck fmt hooks materialize serve dagster bench clean browser

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 14

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet uv==$(UV_VERSION)

$(BIN)/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --compile-bytecode --python $(PYTHON)
	@touch $@

# The pipeline's numba kernels compile on first use (about a minute) and are cached next to their
# sources: a tiny embedded market, a first load and one more day, compiles every one of them here,
# so that no measured or served run pays for it. Redone when a module with kernels changes.
KERNELS := $(shell grep -rl --include='*.py' '@numba' pipelines)
$(BIN)/.compiled: $(BIN)/.synced $(KERNELS)
	@echo "Compiling the pipeline's numba kernels (a tiny embedded market, two days; once, a few minutes)"
	@# Each step's end and every 10 s of a long one are shown; the whole log only on a failure.
	@scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && set -o pipefail && \
	  unset MI_SOURCES MI_WAREHOUSE_URL MI_DAGSTER_POSTGRES_URL MI_EXECUTOR MI_NOW MI_WEBHOOKS && \
	  export MI_DATA_DIR="$$scratch/data" MI_INSTRUMENTS=8 && \
	  { MI_END_DATE=2026-03-02 $(BIN)/mi materialize && \
	    MI_END_DATE=2026-03-03 $(BIN)/mi materialize --job daily; } 2>&1 | tee "$$scratch/log" | \
	  { grep --line-buffered -E '^\[[a-z]+\] [a-z_]+ done in|still running' || true; } || \
	  { tail -n 40 "$$scratch/log"; exit 1; }
	@touch $@

# The project's own modules are compiled to bytecode, as uv compiles the dependencies': where
# PYTHONDONTWRITEBYTECODE is set (as in this project's sandboxes), every `mi` process would
# otherwise compile them from source, about 0.15 s of each run's start. Up-to-date files are skipped.
install: $(BIN)/.compiled ## create .venv with the locked dependencies (uv.lock), compile the kernels
	@$(BIN)/python -m compileall -q -j 0 pipelines api mi

run: install ## materialize the embedded market, create a demo key, serve on http://$(HOST):$(PORT)
	$(BIN)/mi materialize
	@key=$$($(BIN)/mi keys create --plan sandbox --name demo | tail -n 1) && \
	  echo "Demo API key (sandbox plan, 3,000 tokens a month): $$key" && \
	  echo "Try: curl -i -H 'Authorization: Bearer $$key' http://$(HOST):$(PORT)/api/v2/crypto/instruments/list-symbols"
	$(BIN)/mi serve --host $(HOST) --port $(PORT)

materialize: install ## bring every table of every market in data/ up to today (incremental)
	$(BIN)/mi materialize

serve: install ## serve the API on http://$(HOST):$(PORT)
	$(BIN)/mi serve --host $(HOST) --port $(PORT)

dagster: install ## open the Dagster UI on http://127.0.0.1:3000 (instance under data/dagster)
	DAGSTER_HOME=$(CURDIR) $(BIN)/dagster dev

lint: install ## ruff lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install ## mypy over pipelines, api, mi, benchmarks and the Python SDK
	$(BIN)/mypy

fmt: install ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

hooks: install ## run lint and typecheck before each git commit (.pre-commit-config.yaml)
	$(BIN)/pre-commit install

# The docs page's test opens /schema in a real browser: Debian's Chromium, installed once.
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq chromium >/dev/null; } || \
		{ echo "Chromium is missing and cannot be installed (apt-get install chromium)"; exit 1; }

test: lint typecheck browser ## lint, type-check and run the whole test suite
	$(BIN)/pytest -n 2 --dist loadfile

bench: install ## run the benchmarks, print their table, write data/bench/*.json (BENCH_ARGS="--only api")
	@# wrk loads the api and metering sections; without it their rates are not comparable
	@command -v wrk >/dev/null || apt-get install -y wrk >/dev/null 2>&1 || \
		echo "wrk is not installed (apt-get install -y wrk): the load sections fall back to a Python load generator"
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean: ## remove the environment and every generated file under data/
	rm -rf .venv $(TOOLS) .pytest_cache .mypy_cache .ruff_cache
	find data -mindepth 1 ! -name README.md -exec rm -rf {} +
