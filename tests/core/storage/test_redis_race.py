"""Race test: several processes check interleaved near-duplicates into one Redis index at once.

Run on one Redis server and on a local Redis Cluster (3 primaries, 3 replicas).

Every group (an original and its copies) is spread over all processes, and all processes work
on the same group at the same moment, so the check-and-insert of near-duplicates really
races. The compare-and-insert commit must still give every cluster exactly one original, and
the clustering must equal a single process's.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import struct
from typing import Any

import pytest

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage
from neardup_scrapy.core.storage.redis_store import RedisStorage
from tests.core.storage.test_storage_support import corpus

pytestmark = pytest.mark.redis

PROCESSES = 4
GROUPS = 60
COPIES = 7  # 8 pages per group: 2 per process


def _store(kind: str, url: str, prefix: str) -> RedisStorage:
    if kind == "redis-cluster":
        return RedisClusterStorage(url, prefix=prefix)
    return RedisStorage(url, prefix=prefix)


def _worker(kind: str, url: str, prefix: str, pages: list[tuple[str, str]], barrier: Any, out: Any) -> None:
    store = _store(kind, url, prefix)
    det = NearDupDetector(storage=store)
    barrier.wait(30)
    verdicts = []
    for page_url, text in pages:
        verdict = det.check(page_url, text=text)
        verdicts.append(verdict.to_dict() | {"url": page_url, "doc_id": verdict.doc_id})
    det.close()
    out.put((verdicts, store.conflicts))


def commit_order(store: RedisClusterStorage) -> list[int]:
    """Doc ids of the commits in the cluster store's commit log, in commit order.

    The log is a list at ``<base>:log`` on the serialisation slot; each entry starts with two
    little-endian uint32, the second the doc id (see ``redis_cluster.py``'s commit script).
    """
    raw = store.client.lrange(f"{store.key_base}:log", 0, -1)
    return [struct.unpack_from("<II", bytes(entry))[1] for entry in raw]


def _partition(verdicts: list[dict[str, Any]]) -> set[frozenset[str]]:
    clusters: dict[str, set[str]] = {}
    for v in verdicts:
        clusters.setdefault(v["cluster"], set()).add(v["url"])
    return {frozenset(c) for c in clusters.values()}


@pytest.mark.parametrize("kind", ["redis", "redis-cluster"])
def test_concurrent_processes_record_one_original_per_cluster(
    kind: str, request: pytest.FixtureRequest
) -> None:
    url, prefix = request.getfixturevalue("redis_url" if kind == "redis" else "redis_cluster_url")
    pages = corpus(GROUPS, COPIES, seed=11)
    rng = random.Random(5)
    by_group: dict[int, list[tuple[str, str]]] = {}
    for page_url, text, group in pages:
        by_group.setdefault(group, []).append((page_url, text))
    order = list(by_group)
    rng.shuffle(order)
    shares: list[list[tuple[str, str]]] = [[] for _ in range(PROCESSES)]
    for group in order:  # every process gets 2 pages of each group, in the same group order
        members = list(by_group[group])
        rng.shuffle(members)
        for k, page in enumerate(members):
            shares[k % PROCESSES].append(page)

    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(kind, url, prefix, share, barrier, out)) for share in shares]
    for p in procs:
        p.start()
    results = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    verdicts = [v for vs, _ in results for v in vs]
    conflicts = sum(c for _, c in results)
    assert len(verdicts) == len(pages)

    # exactly one original per cluster
    by_cluster: dict[str, list[str]] = {}
    for v in verdicts:
        by_cluster.setdefault(v["cluster"], []).append(v["status"])
    assert all(statuses.count("unique") == 1 for statuses in by_cluster.values()), by_cluster

    # serializable: one process checking the pages in the order the shared index committed them
    # gives the very same verdicts ("up to which copy came first": the order decides which copy is
    # the original, and the chaining guard may then keep a far copy out of the cluster). One server
    # commits in doc id order; the cluster store in the order of its commit log.
    texts = {page_url: text for page_url, text, _ in pages}
    store = _store(kind, url, prefix)
    det = NearDupDetector(storage=store)
    if isinstance(store, RedisClusterStorage):
        rank = {doc: k for k, doc in enumerate(commit_order(store))}
        assert len(rank) == len(pages)
        committed = sorted(verdicts, key=lambda v: rank[v["doc_id"]])
    else:
        committed = sorted(verdicts, key=lambda v: v["doc_id"])
    single = NearDupDetector()
    replay = {}
    for v in committed:
        replay[v["url"]] = single.check(v["url"], text=texts[v["url"]]).to_dict()
    for v in verdicts:
        expected = replay[v["url"]]
        assert (v["status"], v["duplicate_of"], v["cluster"]) == (
            expected["status"],
            expected["duplicate_of"],
            expected["cluster"],
        ), v["url"]
    # and (almost always) one cluster per group, like one process in the generated order
    alone = NearDupDetector()
    in_order = [alone.check(page_url, text=text).to_dict() | {"url": page_url} for page_url, text, _ in pages]
    assert len(by_cluster) >= GROUPS
    assert len(_partition(verdicts) ^ _partition(in_order)) <= 4

    # the shared index agrees with the processes' verdicts
    hist, _ = store.clusters(max_clusters=1, max_members=1)
    assert sum(hist.values()) + sum(1 for sizes in by_cluster.values() if len(sizes) == 1) == len(by_cluster)
    assert len(store) == len(pages)
    totals = det.report()["totals"]
    assert totals["unique"] == len(by_cluster) and totals["pages"] == len(pages)
    det.close()
    print(f"{PROCESSES} processes, {len(pages)} pages, {conflicts} commit conflicts re-checked")
