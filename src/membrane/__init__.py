"""Membrane: a prompt compiler with hard token budgets, cache-stable prefixes and citation maps."""

from __future__ import annotations
