"""Fixtures of the longform tests: the two oracle server processes, shared by the session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .oracle import OracleUnavailable, Side, start_ours, start_published


@pytest.fixture(scope="session")
def published() -> Iterator[Side]:
    # A missing oracle fails the run (locally and under CI=true alike); it is never a skip.
    try:
        side = start_published()
    except OracleUnavailable as exc:
        pytest.fail(str(exc))
    yield side
    side.close()


@pytest.fixture(scope="session")
def ours() -> Iterator[Side]:
    try:
        side = start_ours()
    except OracleUnavailable as exc:
        pytest.fail(str(exc))
    yield side
    side.close()
