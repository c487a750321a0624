"""A real redis-server, and a real three-node Redis Cluster, on free loopback ports, each
started once per test session (the cluster only when a test asks for it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.redis_process import RedisClusterProcess, RedisProcess


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with RedisProcess() as server:
        yield server.url


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterProcess]:
    """A three-node Redis Cluster on loopback ports, started once per test session."""
    with RedisClusterProcess() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def cluster_url(redis_cluster: RedisClusterProcess) -> str:
    return redis_cluster.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Any]:
    """A client the store's deadline rules accept (5 s: a loaded test machine is slow)."""
    from membrane.state.redis import bounded_client

    client = bounded_client(redis_url, deadline_seconds=5.0)
    client.flushdb()
    yield client
    client.close()
