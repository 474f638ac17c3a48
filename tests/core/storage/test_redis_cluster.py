"""The redis-cluster store on a local Redis Cluster: key spread, commit protocol, wiring.

The store's contract (the same as every store's) is in ``test_storage_conformance.py``, its race
test in ``test_redis_race.py``; here what is particular to a cluster.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import numpy as np
import pytest
import redis
from redis_cluster_support import LocalCluster

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.storage import StorageError, open_storage
from neardup_scrapy.core.storage.base import Commit, ParameterMismatchError
from neardup_scrapy.core.storage.cluster_codec import SHARD_LOAD, records_in
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage
from neardup_scrapy.core.storage.redis_common import bucket_fields, pack_record
from tests.core.storage.test_storage_conformance import SIGNATURE, keys, record, unique_commit
from tests.core.storage.test_storage_support import corpus

pytestmark = pytest.mark.redis


def stored_records(client: Any, key: Any) -> int:
    """Records in a hash of records (4 to a field)."""
    return sum(1 for value in client.hvals(key) for rec in records_in(value) if rec)


def _keys_per_primary(cluster: LocalCluster, prefix: str) -> dict[int, list[bytes]]:
    """The index's keys that each primary holds (a node keeps only the keys of its own slots)."""
    out: dict[int, list[bytes]] = {}
    for port in cluster.primaries():
        node = redis.Redis(host="127.0.0.1", port=port)
        out[port] = list(node.scan_iter(match=f"*{prefix}*", count=1000))
        node.close()
    return out


def test_index_is_spread_over_all_primaries(
    redis_cluster: LocalCluster, redis_cluster_url: tuple[str, str]
) -> None:
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix)
    det = NearDupDetector(storage=store)
    for page_url, text, _ in corpus(50, 2, seed=4):
        det.check(page_url, text=text)
    assert len(store) == 150
    det.close()
    per_primary = _keys_per_primary(redis_cluster, prefix)
    assert len(per_primary) == 3
    counts = {port: len(found) for port, found in per_primary.items()}
    total = sum(counts.values())
    assert total > 150  # group metas and shards, the records' hash, the {P} keys
    assert all(n > total / 6 for n in counts.values()), counts  # each primary holds a fair share
    # buckets on every primary; the serialisation slot's keys on one primary only; 150 records
    # in one hash (256 per hash, 4 to a field) on the slot of group 0
    for found in per_primary.values():
        assert any(k.decode().startswith(f"{{{prefix}:g") for k in found)
    records = [
        k
        for found in per_primary.values()
        for k in found
        if k.decode().startswith(f"{{{prefix}:g0:") and k.decode().endswith("}:r:0")
    ]
    assert len(records) == 1
    owner = RedisClusterStorage(url, prefix=prefix)
    owner.open(SIGNATURE)
    assert stored_records(owner.client, records[0]) == 150
    owner.close()
    tagged = Counter(
        port for port, found in per_primary.items() for k in found if k.startswith(f"{{{prefix}}}".encode())
    )
    assert len(tagged) == 1


def test_pages_not_committed_are_ignored(redis_cluster_url: tuple[str, str]) -> None:
    url, prefix = redis_cluster_url
    crashed = RedisClusterStorage(url, prefix=prefix)
    crashed.open(SIGNATURE)
    rec = record("http://127.0.0.1/a", seed=1)
    crashed._commits.begin(alloc=True)  # a writer that dies between its writes and its commit
    crashed._records.write(crashed._commits.next_id, pack_record(rec), bucket_fields(keys(1, 2)))
    other = RedisClusterStorage(url, prefix=prefix)
    other.open(SIGNATURE)
    ids, token = other.lookup(keys(1, 2))
    assert len(ids) == 0 and len(other) == 0
    b = record("http://127.0.0.2/b", seed=2)
    done = other.commit(Commit(record=b, keys=keys(1, 2), token=token, host=b.host))
    assert done is not None
    assert other.lookup(keys(1, 2))[0].tolist() == [done.doc_id]
    hist, _ = other.clusters(5, 5)
    assert hist == {} and len(other) == 1
    crashed.close()
    other.close()


def test_commit_conflicts_only_with_unseen_pages(redis_cluster_url: tuple[str, str]) -> None:
    url, prefix = redis_cluster_url
    a = RedisClusterStorage(url, prefix=prefix)
    b = RedisClusterStorage(url, prefix=prefix)
    a.open(SIGNATURE)
    b.open(SIGNATURE)
    # b commits after a's snapshot but before a reads the buckets: a sees it, no conflict
    x = record("http://127.0.0.2/x", seed=2)
    _, _, first = b.lookup_or_insert(keys(1, 2), unique_commit(x, keys(1, 2)))
    assert first is not None
    ids, token = a.lookup(keys(1, 5))
    assert ids.tolist() == [first.doc_id]
    near = record(
        "http://127.0.0.1/near", seed=1, parent=first.doc_id, status="near", similarity=0.9, hamming=1
    )
    assert (
        a.commit(Commit(record=near, keys=keys(1, 5), token=token, host=near.host, status="near")) is not None
    )
    # b commits into a bucket a read, after a read it: a's commit conflicts, and a later try passes
    _, token = a.lookup(keys(7, 8))
    y = record("http://127.0.0.2/y", seed=3)
    assert b.lookup_or_insert(keys(8, 9), unique_commit(y, keys(8, 9)))[2] is not None
    z = record("http://127.0.0.1/z", seed=4)
    assert a.commit(Commit(record=z, keys=keys(7, 8), token=token, host=z.host)) is None
    assert a.conflicts == 1
    # ... but a commit into other buckets does not
    _, token = a.lookup(keys(20, 21))
    assert b.lookup_or_insert(keys(30, 31), unique_commit(y, keys(30, 31)))[2] is not None
    assert a.commit(Commit(record=z, keys=keys(20, 21), token=token, host=z.host)) is not None
    assert len(a) == 5 and a.conflicts == 1
    a.close()
    b.close()


def test_lookup_older_than_the_log_conflicts(redis_cluster_url: tuple[str, str]) -> None:
    url, prefix = redis_cluster_url
    a = RedisClusterStorage(url, prefix=prefix, log_size=16)
    b = RedisClusterStorage(url, prefix=prefix, log_size=16)
    a.open(SIGNATURE)
    b.open(SIGNATURE)
    _, token = a.lookup(keys(1))
    for k in range(20):  # other buckets, but more commits than the log keeps
        rec = record(f"http://127.0.0.2/{k}", seed=10 + k)
        assert b.lookup_or_insert(keys(100 + k), unique_commit(rec, keys(100 + k)))[2] is not None
    z = record("http://127.0.0.1/z", seed=4)
    assert a.commit(Commit(record=z, keys=keys(1), token=token, host=z.host)) is None
    _, token = a.lookup(keys(1))
    assert a.commit(Commit(record=z, keys=keys(1), token=token, host=z.host)) is not None
    a.close()
    b.close()


def test_open_storage_and_prefix_check(redis_cluster_url: tuple[str, str]) -> None:
    url, prefix = redis_cluster_url
    store: Any = open_storage("redis-cluster", redis_url=url, prefix=prefix)
    assert isinstance(store, RedisClusterStorage)
    store.open(SIGNATURE)
    rec = record("http://127.0.0.1/a", seed=1)
    assert store.lookup_or_insert(keys(1, 2), unique_commit(rec, keys(1, 2)))[2] is not None
    assert store.wipe() > 3
    assert len(store) == 0
    store.close()
    with pytest.raises(StorageError, match="braces"):
        RedisClusterStorage(url, prefix="a{b}")


def test_unreachable_cluster_is_a_storage_error() -> None:
    from tests.core.storage.test_storage_support import free_port

    store = RedisClusterStorage(f"redis://127.0.0.1:{free_port()}/0", prefix="x", connect_timeout=0.5)
    with pytest.raises(StorageError, match="cannot reach the Redis Cluster"):
        store.open(SIGNATURE)


def test_fetch_skips_pages_not_committed(redis_cluster_url: tuple[str, str]) -> None:
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix)
    store.open(SIGNATURE)
    rec = record("http://127.0.0.1/a", seed=1)
    result = store.lookup_or_insert(keys(1), unique_commit(rec, keys(1)))[2]
    assert result is not None
    batch = store.fetch(np.array([result.doc_id, result.doc_id + 1, 10_000], dtype=np.int64))
    assert batch.ids.tolist() == [result.doc_id]
    store.close()


def test_index_created_again_when_its_slot_lost_it(redis_cluster_url: tuple[str, str]) -> None:
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix)
    store.open(SIGNATURE)
    first = record("http://127.0.0.1/a", seed=1)
    assert store.lookup_or_insert(keys(1), unique_commit(first, keys(1)))[2] is not None
    # the node of {P} restarts without persistence: the serialisation slot's keys are gone
    client = store.client
    for key in list(client.scan_iter(match=f"{{{prefix}}}:*", count=1000)):
        client.delete(key)
    ids = []
    for k in range(2, 5):  # the first commit finds no index, creates it again and is retried
        rec = record(f"http://127.0.0.1/{k}", seed=k)
        _, token = store.lookup(keys(10 * k))
        done = store.commit(Commit(record=rec, keys=keys(10 * k), token=token, host=rec.host))
        assert done is not None
        ids.append(done.doc_id)
    assert len(set(ids)) == 3 and min(ids) > 0  # ids go on after the last one seen, never twice
    assert len(store) == 3
    store.close()


def test_page_table_past_its_first_chunk(redis_cluster_url: tuple[str, str]) -> None:
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix)
    store.open(SIGNATURE)
    store.client.hset(f"{{{prefix}}}:m", "next", 2**20 - 2)  # ids cross into the page table's second chunk
    store._commits.next_id = -1
    a = record("http://127.0.0.1/a", seed=1)
    first = store.lookup_or_insert(keys(1), unique_commit(a, keys(1)))[2]
    assert first is not None and first.doc_id == 2**20 - 2
    ids = [first.doc_id]
    for k in range(2, 5):  # near copies of a, across the chunk boundary
        rec = record(
            f"http://127.0.0.{k}/a", seed=k, parent=first.doc_id, status="near", similarity=0.9, hamming=1
        )
        _, token = store.lookup(keys(1))
        done = store.commit(Commit(record=rec, keys=keys(1), token=token, host=rec.host, status="near"))
        assert done is not None
        ids.append(done.doc_id)
    assert max(ids) >= 2**20
    assert store.fetch(np.array(ids, dtype=np.int64)).roots.tolist() == [first.doc_id] * 4
    hist, largest = store.clusters(max_clusters=1, max_members=4)
    assert hist == {4: 1} and largest[0]["representative"] == a.url
    store.close()


@pytest.mark.parametrize("old", [f"neardup-redis-cluster/{n}" for n in range(1, 5)])
def test_an_index_of_another_layout_is_refused(redis_cluster_url: tuple[str, str], old: str) -> None:
    """An index written by a version that kept one key per record (/1), its groups and records
    on slots hashed at random and a key per cluster (/2), its buckets in listpack hashes (/3), or
    one record to a field (/4), is not read as an empty one."""
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix)
    store.open(SIGNATURE)
    store.client.hset(f"{{{prefix}}}:m", "format", old)
    store.close()
    again = RedisClusterStorage(url, prefix=prefix)
    with pytest.raises(
        ParameterMismatchError, match=f"layout: stored '{old}', requested 'neardup-redis-cluster/5'"
    ):
        again.open(SIGNATURE)


def test_records_past_the_ttl_leave_the_report_before_their_hash_expires(
    redis_cluster_url: tuple[str, str],
) -> None:
    """Records share a hash that expires ``ttl`` after its last write, so an old record can
    outlive its ttl there: the report leaves it out by its time added."""
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix, ttl=60)
    store.open(SIGNATURE)
    hour_ago = time.time() - 3600
    near: dict[str, Any] = {"status": "near", "similarity": 0.9, "hamming": 2}
    pages = [  # (record, keys, status): two pairs, the first an hour old
        (record("http://127.0.0.1/old", seed=1, added=hour_ago), keys(1, 2), "unique"),
        (
            record(
                "http://127.0.0.2/old",
                seed=2,
                parent=0,
                status="near",
                similarity=0.9,
                hamming=2,
                added=hour_ago,
            ),
            keys(1, 5),
            "near",
        ),
        (record("http://127.0.0.1/new", seed=3), keys(3, 4), "unique"),
        (
            record("http://127.0.0.2/new", seed=4, parent=2, **near),
            keys(3, 6),
            "near",
        ),
    ]
    for rec, ks, status in pages:
        _, token = store.lookup(ks)
        commit = Commit(record=rec, keys=ks, token=token, host=rec.host, status=status)
        assert store.commit(commit) is not None
    assert stored_records(store.client, store._layout.record_at(0)[0]) == 4  # every record is still stored
    hist, largest = store.clusters(10, 10)
    assert hist == {2: 1}
    assert [m["url"] for m in largest[0]["members"]] == ["http://127.0.0.1/new", "http://127.0.0.2/new"]
    store.close()


@pytest.mark.parametrize("groups", [1, 256])
def test_large_buckets_and_shard_splits_in_shard_strings(
    redis_cluster_url: tuple[str, str], groups: int
) -> None:
    """Buckets are entries of strings (field, then id): a bucket past 16 ids moves to an overflow
    key, shards split by linear hashing, every bucket answers its ids in order, and a retried
    write adds nothing."""
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix, groups=groups)
    store.open(SIGNATURE)
    own = [np.arange(31, dtype=np.uint64) * 2654435761 + 7 + np.uint64(31 * i) for i in range(300)]
    shared = keys(123456789)
    ids = [
        store.commit(
            unique_commit(record(f"http://127.0.0.1/{i}", seed=i), np.concatenate([ks, shared[: i < 40]]))
        )
        for i, ks in enumerate(own)
    ]
    docs = [done.doc_id for done in ids if done is not None]
    assert len(docs) == 300
    assert store.lookup(shared)[0].tolist() == docs[:40]  # through the overflow key
    assert [store.lookup(own[i][5:6])[0].tolist() for i in (0, 150, 299)] == [
        [docs[0]],
        [docs[150]],
        [docs[299]],
    ]
    store._records.write(
        docs[-1], pack_record(record("http://127.0.0.1/299", seed=299)), bucket_fields(own[-1])
    )  # the last page's entries again (a retry)
    assert store.lookup(own[-1])[0].tolist() == [docs[-1]]
    width = 10 if groups == 1 else 9  # the field's last byte is the group's when groups is 256
    metas = [
        {k.decode(): int(v) for k, v in store.client.hgetall(f"{b}:m").items()}
        for b in store._layout.group_bases
    ]
    shards = [
        f"{b}:s:{s}"
        for b, m in zip(store._layout.group_bases, metas, strict=True)
        if m
        for s in range((1 << m.get("L", 0)) + m.get("p", 0))
    ]
    assert {store.client.strlen(key) % width for key in shards} == {0}
    assert sum(m.get("n", 0) for m in metas) == 300 * 31 + 1
    assert len(shards) >= 300 * 31 // SHARD_LOAD  # split while above SHARD_LOAD buckets a shard
    store.close()


@pytest.mark.parametrize("seed", range(6))
def test_records_sharing_a_field_are_written_read_and_dropped_on_their_own(
    redis_cluster_url: tuple[str, str], seed: int
) -> None:
    """Four pages' records share a field (layout /5): in any order of writes, each slot holds its
    own record, a dropped record or a changed tail leaves the others byte for byte, and a field
    with no record left is deleted. Checked through the store's own scripts and
    :func:`records_in`, with records of every length a record can have (the head up to urls of
    several KB) and one shorter than a head."""
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix)
    store.open(SIGNATURE)
    rng = np.random.default_rng(seed)
    docs = list(range(8, 16))  # two fields of one hash
    recs = {
        d: rng.integers(0, 256, int(rng.choice([7, 40, 300, 5000])), dtype=np.uint8).tobytes() for d in docs
    }
    key = store._layout.record_at(docs[0])[0]
    assert {store._layout.record_at(d)[0] for d in docs} == {key}
    fields = {store._layout.record_at(d)[1] for d in docs}
    assert len(fields) == 2
    put, client = store._scripts.shas["record_put"], store.client

    def stored() -> dict[int, bytes]:
        out = {}
        for d in docs:
            _, field, slot = store._layout.record_at(d)
            out[d] = records_in(client.hget(key, field))[slot]
        return out

    for d in rng.permutation(docs).tolist():
        _, field, slot = store._layout.record_at(d)
        client.evalsha(put, 1, key, 0, field, slot, recs[d])
    assert stored() == recs
    long = [d for d in docs if len(recs[d]) >= 16]
    assert store._records.heads(long) == [recs[d][:16] for d in long]
    tail = b"\x01\x02\x03\x04"
    changed = long[int(rng.integers(0, len(long)))]
    store._records.set_tails({changed: tail})
    recs[changed] = recs[changed][:4] + tail + recs[changed][8:]
    assert stored() == recs
    for d in rng.permutation(docs).tolist():  # dropped one by one, as conflicted ids are
        _, field, slot = store._layout.record_at(d)
        client.evalsha(put, 1, key, 0, field, slot, b"")
        recs[d] = b""
        assert stored() == recs
    assert not client.exists(key)  # no field left, no hash
    store.close()


def test_a_damaged_field_of_records_is_a_storage_error(redis_cluster_url: tuple[str, str]) -> None:
    url, prefix = redis_cluster_url
    store = RedisClusterStorage(url, prefix=prefix)
    store.open(SIGNATURE)
    key, field, _ = store._layout.record_at(0)
    for value in (b"\x05\x00", b"\x05\x00\x00\x00" + b"\x00" * 12 + b"abc"):  # too short; lengths off
        store.client.hset(key, field, value)
        with pytest.raises(StorageError, match="is damaged"):
            store._records.record_of(store.client.hget(key, field), 0)
    store.close()
