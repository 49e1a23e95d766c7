# soev-pipeline: `make help` lists the targets.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install demo test test-fast ui lint format typecheck docs messages bench bench-peers clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $@

install: $(STAMP) ## create .venv with the locked dependencies and the package

demo: $(STAMP) ## run the demo evaluation offline against the bundled reference assistant
	$(BIN)/python scripts/demo.py

test: $(STAMP) ## run every test: the fast tier and the black-box (e2e) tests
	$(BIN)/python -m pytest

# The fast tier caches its compiled modules and rewritten tests even where the environment
# says not to (PYTHONDONTWRITEBYTECODE): compiling them again costs a quarter of its time.
test-fast: $(STAMP) ## run the fast tier only (pytest -m "not e2e"), on two processes
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -m "not e2e" -n 2

ui: $(STAMP) ## open the demo project in the Dagster UI (dg dev, the reference assistant, a viewer)
	$(BIN)/python scripts/ui.py

lint: $(STAMP) ## ruff lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP) ## format the code with ruff
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

typecheck: $(STAMP) ## mypy strict on the package
	$(BIN)/mypy

docs: $(STAMP) ## regenerate the generated docs: the kinds table in docs/criteria.md, the report schema
	$(BIN)/python scripts/criteria_table.py --write
	$(BIN)/python scripts/report_schema.py --write

bench: $(STAMP) ## print the grading and throughput benchmarks
	$(BIN)/python bench/grade.py
	$(BIN)/python bench/throughput.py

bench-peers: $(STAMP) ## the same workload through inspect_ai and promptfoo (installs them in .bench/)
	$(BIN)/python bench/peers.py --setup
	$(BIN)/python bench/peers.py --repeat 3

clean: ## remove the virtualenv, caches and the demo's runs
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache examples/demo/runs examples/demo/.soev examples/demo/report.html

messages: $(STAMP) ## extract the pages' strings into messages.pot and update the Dutch catalog
	$(BIN)/pybabel extract -F babel.cfg -k N_ --no-location --sort-output --omit-header \
		-o soev_pipeline/view/locales/messages.pot .
	$(BIN)/pybabel update -i soev_pipeline/view/locales/messages.pot -d soev_pipeline/view/locales \
		-l nl --no-fuzzy-matching --width 100
