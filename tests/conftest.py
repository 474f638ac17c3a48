"""Shared fixtures.

* ``eval_dev``, ``eval_docs``, ``eval_ref``: the labelled development sets in
  ``../shared/eval-dev``, ``../shared/eval-docs`` and ``../shared/eval-ref`` (next to the repo, or
  at ``$NEARDUP_EVAL_DEV`` / ``$NEARDUP_EVAL_DOCS`` / ``$NEARDUP_EVAL_REF``).
  Skipped when absent -- except under ``CI=true``, where they must exist.
* ``redis_url``: a Redis server (``$NEARDUP_TEST_REDIS``, default ``redis://127.0.0.1:6379/0``)
  and a unique key prefix, cleaned up afterwards. Skipped when unreachable -- except under
  ``CI=true``, where the test fails.
* ``redis_cluster``: a local Redis Cluster (3 primaries, 3 replicas on free loopback ports) for the
  whole session, stopped after; ``redis_cluster_url``: ``(url, prefix)`` on it with a fresh prefix.
  Skipped without ``redis-server`` -- except under ``CI=true``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis_cluster_support import LocalCluster, have_redis_server, start_cluster

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _need(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (required when CI=true)")
    pytest.skip(reason)


def _labelled_set(name: str, variable: str) -> Path:
    path = Path(os.environ.get(variable, ROOT.parent / "shared" / name))
    if not (path / "pages.jsonl.gz").is_file() or not (path / "truth.json").is_file():
        _need(f"{name} set not found at {path}")
    return path


@pytest.fixture(scope="session")
def eval_dev() -> Path:
    """Path of the eval-dev directory (pages.jsonl.gz, truth.json, score.py)."""
    return _labelled_set("eval-dev", "NEARDUP_EVAL_DEV")


@pytest.fixture(scope="session")
def eval_docs() -> Path:
    """Path of the eval-docs directory (documentation sites; same format and scorer)."""
    return _labelled_set("eval-docs", "NEARDUP_EVAL_DOCS")


@pytest.fixture(scope="session")
def eval_ref() -> Path:
    """Path of the eval-ref directory (generators no other set has, hard negatives, releases)."""
    return _labelled_set("eval-ref", "NEARDUP_EVAL_REF")


REDIS_URL = os.environ.get("NEARDUP_TEST_REDIS", "redis://127.0.0.1:6379/0")


@pytest.fixture
def redis_url() -> Iterator[tuple[str, str]]:
    """``(url, prefix)`` of a reachable Redis with a fresh key prefix; keys are deleted after."""
    try:
        import redis
    except ImportError:  # pragma: no cover - the test extra installs it
        _need("the redis package is not installed")
        raise
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        _need(f"Redis is not reachable at {REDIS_URL}: {exc}")
    prefix = f"neardup-test-{uuid.uuid4().hex[:12]}"
    try:
        yield REDIS_URL, prefix
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
        client.close()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    """A local Redis Cluster of 3 primaries and 3 replicas, for the whole session."""
    if not have_redis_server():
        _need("redis-server / redis-cli not found: cannot start a local Redis Cluster")
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def redis_cluster_url(redis_cluster: LocalCluster) -> Iterator[tuple[str, str]]:
    """``(url of a cluster node, fresh key prefix)``; the prefix's keys are deleted after."""
    from redis.cluster import RedisCluster

    prefix = f"neardup-test-{uuid.uuid4().hex[:12]}"
    yield redis_cluster.url, prefix
    ports = [p for p in redis_cluster.primaries()]
    for port in ports:  # every primary, whatever the slot map says now
        client = RedisCluster(host="127.0.0.1", port=port, socket_connect_timeout=2)
        try:
            for pattern in (f"{prefix}*", f"{{{prefix}*"):
                for key in list(client.scan_iter(match=pattern, count=1000)):
                    client.delete(key)
        finally:
            client.close()
