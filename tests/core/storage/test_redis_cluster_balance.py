"""#34 "Even cluster": the redis-cluster store spreads what pages write over the slots.

Counted, not timed (the figures are in ``benchmarks/bench_cluster_balance.py``): the hash tags of
the bucket groups sit on evenly spaced slots, records take those slots in turn, and the
serialisation slot grows by a few bytes a page, not a key per cluster.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import redis
from redis_cluster_support import LocalCluster

from neardup_scrapy.core.storage.base import Commit, StorageError
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage
from neardup_scrapy.core.storage.redis_cluster_layout import (
    CH_SPAN,
    GROUPS,
    RECORDS_PER_KEY,
    SLOTS,
    key_slot,
    spread_tags,
)
from tests.core.storage.test_storage_conformance import SIGNATURE, record


def _owner(slot: int, primaries: int) -> int:
    """The primary owning ``slot`` when ``primaries`` own equal ranges (``redis-cli --cluster create``)."""
    return min(primaries - 1, slot * primaries // SLOTS)


@pytest.mark.parametrize("primaries", [3, 6, 7])
@pytest.mark.parametrize("prefix", ["neardup", "news", "ünï-côdé"])
def test_group_tags_split_evenly_over_primaries(primaries: int, prefix: str) -> None:
    tags = spread_tags(prefix, GROUPS)
    slots = [key_slot(t.encode()) for t in tags]
    assert len(set(slots)) == GROUPS
    # tag k in the k-th of 256 ranges of 64 slots
    assert [s * GROUPS // SLOTS for s in slots] == list(range(GROUPS))
    per_node = Counter(_owner(s, primaries) for s in slots)
    assert max(per_node.values()) - min(per_node.values()) <= 1, per_node
    assert spread_tags(prefix, GROUPS) == tags  # every process derives the same tags


def test_record_hashes_spread_over_the_slots_at_every_count() -> None:
    store = RedisClusterStorage("redis://127.0.0.1:1/0", prefix="p")
    store._layout.group_bases = ["{" + t + "}" for t in spread_tags("p", GROUPS)]
    slots = [
        key_slot(store._layout.record_at(doc)[0][1:].split("}")[0].encode())
        for doc in range(0, RECORDS_PER_KEY * 1024, RECORDS_PER_KEY)
    ]
    # every group's slot once in each run of 256 hashes
    assert all(len(set(slots[k : k + GROUPS])) == GROUPS for k in range(0, 1024, GROUPS))
    # and the first hashes, however few, over the primaries: taken in turn, the first 85 all sat
    # on one primary of three
    for primaries in (3, 6):
        for count in (50, 100, 390, 1000):
            per_node = Counter(_owner(s, primaries) for s in slots[:count])
            mean = count / primaries
            assert all(abs(per_node[k] / mean - 1) <= 0.1 for k in range(primaries)), (count, per_node)


def _pages(n: int, hosts: int) -> list[tuple[Any, np.ndarray[Any, Any]]]:
    """Pages in pairs: an original and a near-duplicate of it on the same host (half of the
    pages start a cluster of two, the most per-cluster data a page can leave)."""
    rng = np.random.default_rng(11)
    out: list[tuple[Any, np.ndarray[Any, Any]]] = []
    for i in range(n):
        if i % 2 == 0:
            ks = rng.integers(1, 2**62, 43, dtype=np.uint64)
            rec = record(f"http://h{i % hosts}.test/{i}", seed=i)
        else:
            ks = out[-1][1].copy()
            ks[:6] = rng.integers(1, 2**62, 6, dtype=np.uint64)
            rec = record(
                f"http://h{(i - 1) % hosts}.test/{i}",
                seed=i,
                parent=i - 1,
                status="near",
                similarity=0.9,
                hamming=2,
            )
        out.append((rec, ks))
    return out


def _slot_usage(cluster: LocalCluster, prefix: str) -> tuple[Counter[int], Counter[int], Counter[int]]:
    """Per slot the index's keys and their bytes (``MEMORY USAGE``); per primary its keys."""
    keys: Counter[int] = Counter()
    size: Counter[int] = Counter()
    per_node: Counter[int] = Counter()
    for port in cluster.primaries():
        node = redis.Redis(host="127.0.0.1", port=port)
        for key in node.scan_iter(match=f"*{prefix}*", count=1000):
            slot = int(node.execute_command("CLUSTER", "KEYSLOT", key))
            keys[slot] += 1
            size[slot] += int(node.memory_usage(key, samples=0) or 0)
            per_node[port] += 1
        node.close()
    return keys, size, per_node


@pytest.mark.redis
@pytest.mark.timeout(600)
def test_pages_do_not_collapse_onto_one_slot(
    redis_cluster: LocalCluster, redis_cluster_url: tuple[str, str]
) -> None:
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix, log_size=16)
    store.open(SIGNATURE)
    hosts = 8
    pages = _pages(1200, hosts)
    ids: list[int] = []
    for k, (rec, ks) in enumerate(pages):
        found, token = store.lookup(ks)
        if k % 2:
            assert ids[-1] in found.tolist()
            rec = replace(rec, parent=ids[-1])
        result = store.commit(Commit(record=rec, keys=ks, token=token, host=rec.host, status=rec.status))
        assert result is not None
        ids.append(result.doc_id)
    assert len(store) == len(pages)
    hist, _ = store.clusters(5, 2)
    assert hist == {2: len(pages) // 2}
    store.close()

    keys, size, per_node = _slot_usage(redis_cluster, prefix)
    serial = key_slot(prefix.encode())
    # the serialisation slot: params, meta, one chunk of the page table, host codes and counters,
    # the log, the packed host tables (one hash per CH_SPAN clusters) -- not a key per cluster
    assert keys[serial] <= 12 + 2 * hosts + len(pages) // CH_SPAN, keys[serial]
    # and a few bytes a page: the page table (8) and a packed host table per cluster (~20 / 2);
    # a hash per cluster cost ~90 bytes each (~45 a page here)
    assert size[serial] / len(pages) <= 30, size[serial] / len(pages)
    # the rest over the groups' tags: every one of them holds keys, none much more than its share
    others = {slot: n for slot, n in keys.items() if slot != serial}
    assert len(others) >= GROUPS
    # keys per primary within 20% of their mean
    mean = sum(per_node.values()) / len(per_node)
    assert all(abs(n / mean - 1) <= 0.2 for n in per_node.values()), per_node


@pytest.mark.redis
def test_host_counts_added_once_after_a_failed_batch(
    redis_cluster_url: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counts of a commit are added after it on the hosts' slots: a batch that fails waits for
    the next commit, and a batch sent twice (a retry) is added once."""
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix)
    store.open(SIGNATURE)
    pipeline = store._scripts.pipeline
    failing = {"left": 1}

    def flaky(fill: Any, what: str) -> list[Any]:
        if what == "host counts" and failing["left"]:
            failing["left"] -= 1
            raise StorageError("the cluster is down")
        return pipeline(fill, what)

    monkeypatch.setattr(store._scripts, "pipeline", flaky)
    pages = _pages(4, 1)
    results = []
    for rec, ks in pages[::2]:  # two originals of one host
        _, token = store.lookup(ks)
        results.append(store.commit(Commit(record=rec, keys=ks, token=token, host=rec.host, nbytes=100)))
    assert [r.host_pages for r in results if r] == [0, 2]  # the first's counts came with the second
    assert not store._counts.pending
    counts = store.host_counts()["h0.test"]
    assert (counts.pages, counts.unique, counts.bytes) == (2, 2, 200)
    # a retried batch (the same number) is skipped by the slots that have it
    batch = store._counts.batch
    store._counts.pending.append(
        (batch, {store._layout.host_group(b"h0.test"): [b"h", b"h0.test", b"p", 5]}, b"")
    )
    store._counts.flush()
    assert store.host_counts()["h0.test"].pages == 2
    store.close()
