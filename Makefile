# Two commands do all set-up on a fresh machine with Python 3.11: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test test-unit test-integration test-browser lint bench system-deps clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[test]"
	touch $(STAMP)

## Start the whole console (web, Celery worker and beat, Redis, localdlc); prints the URL and demo login.
run: $(STAMP)
	$(BIN)/python manage.py runconsole

## Install what the tests need (Redis, Chromium) and run every test.
test: $(STAMP) system-deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

system-deps:
	@bash scripts/install-test-deps.sh

test-unit: $(STAMP)
	$(BIN)/python -m pytest -m "not integration and not browser" $(PYTEST_ARGS)

test-integration: $(STAMP) system-deps
	$(BIN)/python -m pytest -m "integration and not browser" $(PYTEST_ARGS)

test-browser: $(STAMP) system-deps
	$(BIN)/python -m pytest -m browser $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var
