"""A primary of the cluster dies mid-crawl: its replica takes over and checking goes on.

A private cluster (3 primaries, 3 replicas) of its own, since a node is killed. The primary
killed is the one holding the serialisation slot ``{P}`` -- every commit goes there -- so no
page can be checked until the failover; pages that fail meanwhile are counted, as the crawl's
``NEARDUP_ON_STORAGE_ERROR = "pass"`` would, and pages checked before the kill still match after.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import _need as need
from redis_cluster_support import LocalCluster, have_redis_server, start_cluster

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.storage import StorageError
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage
from neardup_scrapy.core.storage.retry import RetryPolicy
from tests.core.storage.test_storage_support import corpus

pytestmark = pytest.mark.redis

GROUPS = 40


@pytest.fixture
def private_cluster() -> Iterator[LocalCluster]:
    if not have_redis_server():
        need("redis-server / redis-cli not found: cannot start a local Redis Cluster")
    cluster = start_cluster(node_timeout_ms=1500)
    try:
        yield cluster
    finally:
        cluster.stop()


def test_crawl_goes_on_after_a_primary_dies(private_cluster: LocalCluster) -> None:
    pages = corpus(GROUPS, 1, seed=8)
    originals = [(url, text) for url, text, _ in pages if "/doc/" in url]
    copies = [(url, text) for url, text, _ in pages if "/copy/" in url]
    store = RedisClusterStorage(
        private_cluster.url,
        prefix="failover",
        retry=RetryPolicy(attempts=2, base_delay=0.1),
        cooldown=0.5,
        socket_timeout=2.0,
        connect_timeout=0.5,
    )
    det = NearDupDetector(storage=store)
    first = {url: det.check(url, text=text) for url, text in originals[: GROUPS // 2]}
    assert all(v.status == "unique" for v in first.values())
    private_cluster.wait_replicated()  # replication is asynchronous: what a replica lacks is lost

    serialising = store.client.get_node_from_key("{failover}:m").port
    private_cluster.kill(serialising)

    # the crawl goes on with new pages: they fail (and pass unchecked, as NEARDUP_ON_STORAGE_ERROR =
    # "pass" has it) until the replica has taken over, then they are checked again
    errors = 0
    verdicts = {}
    fresh = [(url.replace("/doc/", "/new/"), text) for url, text in originals[GROUPS // 2 :]]
    fresh += [(url.replace("/doc/", "/fresh/"), text) for url, text, _ in corpus(60, 0, seed=9)]
    deadline = time.monotonic() + 60
    for url, text in fresh:
        try:
            verdicts[url] = det.check(url, text=text)
        except StorageError:
            errors += 1
            time.sleep(0.1)
            continue
        if errors or time.monotonic() > deadline:
            break
    assert errors >= 1, "the kill of the primary went unnoticed"
    assert verdicts, f"no page was checked again within 60 s ({errors} failed)"
    assert serialising not in private_cluster.primaries()
    assert all(v.status == "unique" for v in verdicts.values())
    # copies of the pages checked before the kill still match them
    for url, text in copies[: GROUPS // 2]:
        verdicts[url] = det.check(url, text=text)
        original = url.replace("/copy/", "/doc/").rsplit("/", 1)[0].replace("127.0.0.2", "127.0.0.1")
        assert verdicts[url].status in ("near", "exact") and verdicts[url].duplicate_of == original, url
    assert len(store) == len(first) + len(verdicts)
    report = det.report()
    assert report["totals"]["pages"] == len(first) + len(verdicts)
    det.close()
    print(f"failover: {errors} pages failed while the replica took over, {len(verdicts)} checked after")
