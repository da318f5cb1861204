# Two commands do all set-up on a fresh machine with Python 3.11: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test test-postgres test-unit test-integration test-browser lint bench system-deps clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[test]"
	touch $(STAMP)

## Start the whole console (web, Celery worker and beat, Redis, localdlc); prints the URL and demo login.
# `exec`: no shell in between, so make is runconsole's parent and runconsole stops everything when make dies.
run: $(STAMP)
	exec $(BIN)/python manage.py runconsole

## Install what the tests need (Redis, Chromium, PostgreSQL) and run every test on SQLite and, alongside it,
## every integration test and every test that touches the database (marker `postgres`, tests/conftest.py) on
## a throwaway PostgreSQL cluster (scripts/test-both-databases.sh). Fails if either pass failed.
test: $(STAMP) system-deps
	bash scripts/test-both-databases.sh $(BIN)/python $(PYTEST_ARGS)

## Only the PostgreSQL pass of `make test`.
test-postgres: $(STAMP) system-deps
	bash scripts/install-postgres.sh run $(BIN)/python -m pytest -m postgres $(PYTEST_ARGS)

system-deps:
	@bash scripts/install-test-deps.sh
	@bash scripts/install-postgres.sh

test-unit: $(STAMP)
	$(BIN)/python -m pytest -m "not integration and not browser" $(PYTEST_ARGS)

test-integration: $(STAMP) system-deps
	$(BIN)/python -m pytest -m "integration and not browser" $(PYTEST_ARGS)

test-browser: $(STAMP) system-deps
	$(BIN)/python -m pytest -m browser $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

## Benchmarks (bench/RESULTS.md); e.g. make bench BENCH_ARGS="--sizes 1000,100000,1000000".
bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var
