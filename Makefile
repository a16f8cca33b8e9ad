# One virtual environment (.venv) holds everything; every target creates it if missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck check bench clean

UPLOT := armada/lookout/static/vendor/uplot/VERSION

$(STAMP): pyproject.toml $(UPLOT)
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

## Lookout's charting library (uPlot), pinned and checksummed, from the npm registry
$(UPLOT): deploy/vendor-uplot.sh
	bash deploy/vendor-uplot.sh

## Run the server in development mode on ./armada.db (SQLite) at http://127.0.0.1:8080,
## with an in-process executor that runs jobs as local processes
run: $(STAMP)
	$(BIN)/armada serve --dev $(ARGS)

## Lint, type-check and run the whole test suite (PostgreSQL tests need ARMADA_TEST_DATABASE_URL)
test: $(STAMP) lint typecheck
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check armada tests bench migrations
	$(BIN)/ruff format --check armada tests bench migrations

typecheck: $(STAMP)
	$(BIN)/mypy armada

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
