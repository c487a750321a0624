"""The Agents SDK tests: tracing off (its exporter would try OpenAI's servers); not collected in
the CrewAI environment, which does not install the SDK."""

from __future__ import annotations

import os

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

collect_ignore_glob = ["test_*.py"] if os.environ.get("MEMBRANE_ADAPTER_ENV") == "crewai" else []
