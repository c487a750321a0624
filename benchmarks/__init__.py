"""Benchmarks for Membrane, run against real peer packages."""
