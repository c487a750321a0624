# One entry point for newcomers and CI. Every target creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench clean system-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	touch $(STAMP)

# Redis tests need a real redis-server; install it from Debian when it is missing.
system-deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

demo: $(STAMP)
	$(BIN)/python -m membrane.demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP) system-deps lint typecheck
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
