# One entry point for newcomers and CI. Every target creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The published longform-memory package, the oracle of the differential tests and a peer of the
# longform benchmark. It installs a top-level `longform_memory` like ours, so it gets a venv of
# its own.
ORACLE := .venv-oracle
ORACLE_STAMP := $(ORACLE)/.installed-0.1.1

.PHONY: demo test lint typecheck bench clean system-deps oracle

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	touch $(STAMP)

$(ORACLE_STAMP):
	rm -rf $(ORACLE)
	$(PYTHON) -m venv $(ORACLE)
	$(ORACLE)/bin/pip install --quiet --no-deps longform-memory==0.1.1
	$(ORACLE)/bin/python -I -c "import longform_memory as m; assert m.__version__ == '0.1.1'"
	touch $(ORACLE_STAMP)

oracle: $(ORACLE_STAMP)

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

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP) oracle system-deps lint typecheck
	$(BIN)/pytest -q

bench: $(STAMP) oracle
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(ORACLE) .pytest_cache .mypy_cache .ruff_cache
