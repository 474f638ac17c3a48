"""Redis store specifics: conflicts, compact layout, shard splits, idempotent retries, ttl, faults."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.storage.base import Commit, StorageError
from neardup_scrapy.core.storage.redis_common import pack_record, unpack_tail
from neardup_scrapy.core.storage.redis_store import RedisStorage, safe_url
from neardup_scrapy.core.storage.retry import RetryPolicy
from tests.core.storage.test_storage_conformance import SIGNATURE, keys, record
from tests.core.storage.test_storage_support import corpus, free_port, have_redis_server, private_redis

pytestmark = pytest.mark.redis


def opened(redis_url: tuple[str, str], **kw: Any) -> RedisStorage:
    store = RedisStorage(redis_url[0], prefix=redis_url[1], **kw)
    store.open(SIGNATURE)
    return store


def test_conflict_when_a_bucket_changed(redis_url: tuple[str, str]) -> None:
    a, b = opened(redis_url), opened(redis_url)
    ks = keys(1, 2, 3)
    _, token_a = a.lookup(ks)
    _, token_b = b.lookup(ks)
    rec_b = record("http://127.0.0.2/b", seed=2)
    done = b.commit(Commit(record=rec_b, keys=ks, token=token_b, host="127.0.0.2"))
    assert done is not None and done.doc_id == 0
    rec_a = record("http://127.0.0.1/a", seed=1)
    assert a.commit(Commit(record=rec_a, keys=ks, token=token_a, host="127.0.0.1")) is None
    assert a.conflicts == 1 and len(a) == 1
    # a change to an unrelated bucket does not conflict
    _, token_a = a.lookup(ks)
    assert (
        b.commit(
            Commit(record=record("http://127.0.0.2/c", seed=3), keys=keys(50), token=None, host="127.0.0.2")
        )
        is not None
    )
    assert a.commit(Commit(record=rec_a, keys=ks, token=token_a, host="127.0.0.1")) is not None
    ids, _ = a.lookup(ks)
    assert ids.tolist() == [0, 2]
    a.close()
    b.close()


def test_exact_duplicate_commit_checks_its_token(redis_url: tuple[str, str]) -> None:
    a, b = opened(redis_url), opened(redis_url)
    ks = keys(9)
    _, token_a = a.lookup(ks)
    b.commit(Commit(record=record("http://127.0.0.2/b", seed=2), keys=ks, token=None, host="127.0.0.2"))
    exact = record("http://127.0.0.1/a", seed=1, parent=0, status="exact", similarity=1.0, hamming=0)
    assert (
        a.commit(Commit(record=exact, keys=keys(), token=token_a, host="127.0.0.1", status="exact")) is None
    )


def test_large_buckets_and_shard_splits_stay_compact(redis_url: tuple[str, str]) -> None:
    store = opened(redis_url)
    client = store.client
    shared = keys(123456789)
    n = 1500
    for i in range(n):
        own = np.array([(i * 31 + j) * 2654435761 + 7 for j in range(31)], dtype=np.uint64)
        ks = np.concatenate([own, shared]) if i < 40 else own
        _, token = store.lookup(ks)
        result = store.commit(
            Commit(record=record(f"http://127.0.0.1/{i}", seed=i), keys=ks, token=token, host="127.0.0.1")
        )
        assert result is not None and result.doc_id == i
    ids, _ = store.lookup(shared)
    assert ids.tolist() == list(range(40))  # grew past the listpack value limit into an overflow key
    for i in (0, 777, n - 1):
        probe = np.array([(i * 31 + 5) * 2654435761 + 7], dtype=np.uint64)
        assert store.lookup(probe)[0].tolist() == [i]
    meta = {k.decode(): v.decode() for k, v in client.hgetall(f"{store.prefix}:m").items()}
    shards = (1 << int(meta["L"])) + int(meta["p"])
    assert int(meta["n"]) == n * 31 + 1
    assert shards >= n * 31 / int(meta["load"])
    encodings = {client.object("encoding", f"{store.prefix}:s:{s}") for s in range(shards)}
    assert encodings <= {b"listpack", b"ziplist"}, encodings
    per_page = store.memory_bytes() / n
    assert per_page < 1200, per_page  # ~600 record + ~14 per bucket entry; no key per bucket
    store.close()


def test_commit_replay_is_idempotent(redis_url: tuple[str, str]) -> None:
    store = opened(redis_url)
    commit = Commit(
        record=record("http://127.0.0.1/a", seed=1), keys=keys(4, 5), token=None, host="127.0.0.1"
    )
    first = store.commit(commit)
    store.commit_state.seq -= 1  # as if the reply was lost and the same commit sent again
    again = store.commit(commit)
    assert first is not None and again is not None
    assert again.doc_id == first.doc_id and len(store) == 1
    assert store.lookup(keys(4))[0].tolist() == [first.doc_id]


def test_ttl_expires_records_and_prunes_buckets(redis_url: tuple[str, str]) -> None:
    store = opened(redis_url, ttl=1)
    for i in range(5):
        store.commit(
            Commit(
                record=record(f"http://127.0.0.1/{i}", seed=i),
                keys=keys(1, 100 + i),
                token=None,
                host="127.0.0.1",
            )
        )
    assert len(store.lookup(keys(1))[0]) == 5
    assert store.client.ttl(f"{store.prefix}:d:0") in (0, 1)
    time.sleep(2.1)
    assert len(store.lookup(keys(1))[0]) == 0
    # every commit prunes one shard: after a sweep, the dead entries are gone
    client = store.client
    meta = client.hmget(f"{store.prefix}:m", "L", "p")
    shards = (1 << int(meta[0])) + int(meta[1])
    for i in range(shards + 1):
        store.commit(
            Commit(
                record=record(f"http://127.0.0.2/{i}", seed=50 + i),
                keys=keys(10_000 + i),
                token=None,
                host="127.0.0.2",
            )
        )
    assert int(client.hget(f"{store.prefix}:m", "n")) == shards + 1
    assert store.host_counts()["127.0.0.1"].pages == 5  # counters are crawl totals


def test_detector_ttl_forgets_old_pages(redis_url: tuple[str, str]) -> None:
    store = RedisStorage(redis_url[0], prefix=redis_url[1])
    det = NearDupDetector(storage=store, ttl=1)
    (url, text, _), (url2, _, _) = corpus(1, 1, seed=9)[:2]
    assert det.check(url, text=text).status == "unique"
    assert det.check(url2, text=text).status == "exact"
    time.sleep(2.1)
    assert det.check(url2 + "?again", text=text).status == "unique"
    det.close()


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://a.example/x?q=1", "a.example"),
        ("http://a.example", "a.example"),
        ("https://a.example.evil/x", "a.example"),  # the host is a prefix of another host
        ("https://b.example/x", "a.example"),
        ("\x01raw", "a.example"),  # starts with a byte that means a packed prefix
        ("\x00", ""),
        ("", "a.example"),
        ("https://h\u00e9.example/\u00e9", "h\u00e9.example"),
    ],
)
def test_record_urls_round_trip_with_their_host_prefix_packed(url: str, host: str) -> None:
    rec = replace(record("https://a.example/1", seed=1), url=url, host=host)
    packed = pack_record(rec)
    assert unpack_tail(packed, len(rec.signature))[::3] == (host, url)
    if host and url.startswith(f"https://{host}"):  # one byte for scheme and host
        assert len(packed) == len(pack_record(replace(rec, url=""))) + 1 + len(url.encode()) - len(
            f"https://{host}".encode()
        )


def test_records_written_with_the_whole_url_still_read() -> None:
    rec = record("https://a.example/1", seed=1)
    packed = pack_record(rec)
    old = packed[: -len("/1") - 1] + rec.url.encode()  # the layout before the prefix was packed
    assert unpack_tail(old, len(rec.signature))[3] == rec.url


def test_safe_url_hides_password() -> None:
    assert safe_url("redis://:s3cret@example.test:6380/2") == "redis://:***@example.test:6380/2"
    assert safe_url("redis://user:s3cret@h/0") == "redis://user:***@h/0"
    assert safe_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_unreachable_at_open_is_a_clear_error() -> None:
    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"
    store = RedisStorage(url, prefix="x", connect_timeout=0.5)
    with pytest.raises(StorageError) as info:
        store.open(SIGNATURE)
    message = str(info.value)
    assert "cannot reach Redis" in message and "127.0.0.1" in message and "s3cret" not in message
    with pytest.raises(StorageError, match="cannot reach Redis"):
        NearDupDetector(storage=RedisStorage(url, prefix="x", connect_timeout=0.5))


needs_server = pytest.mark.skipif(not have_redis_server(), reason="redis-server binary not installed")


@needs_server
def test_redis_killed_mid_crawl_retries_then_fails(tmp_path: Path) -> None:
    pages = corpus(10, 1, seed=4)
    with private_redis(tmp_path) as server:
        policy = RetryPolicy(attempts=3, base_delay=0.2, max_delay=1.0)
        det = NearDupDetector(
            storage=RedisStorage(server.url, prefix="crawl", retry=policy, socket_timeout=1.0)
        )
        for url, text, _ in pages[:10]:
            det.check(url, text=text)
        server.kill()
        started = time.monotonic()
        with pytest.raises(StorageError, match=r"failed after 3 attempt\(s\)") as info:
            det.check(pages[10][0], text=pages[10][1])
        elapsed = time.monotonic() - started
        assert elapsed >= sum(policy.delays()) * 0.9  # it waited and retried before giving up
        assert str(server.port) in str(info.value)
        det.close()


@needs_server
def test_redis_restarted_within_the_retries_is_survived(tmp_path: Path) -> None:
    pages = corpus(10, 1, seed=5)
    with private_redis(tmp_path, appendonly=True) as server:
        policy = RetryPolicy(attempts=6, base_delay=0.25, max_delay=1.0)
        det = NearDupDetector(
            storage=RedisStorage(server.url, prefix="crawl", retry=policy, socket_timeout=1.0)
        )
        verdicts = [det.check(url, text=text).status for url, text, _ in pages[:10]]
        server.kill()
        restarter = threading.Timer(0.4, server.start)
        restarter.start()
        try:
            again = det.check(pages[0][0] + "?copy", text=pages[0][1])  # waits for the restart
        finally:
            restarter.join()
        assert again.status == "exact"  # the index survived (append-only file) and answers again
        assert verdicts.count("unique") == len({g for _, _, g in pages[:10]})
        det.close()


def test_parameter_change_of_volatile_settings_is_allowed(redis_url: tuple[str, str]) -> None:
    NearDupDetector(storage=RedisStorage(redis_url[0], prefix=redis_url[1])).close()
    det = NearDupDetector(
        storage=RedisStorage(redis_url[0], prefix=redis_url[1]), algorithm="minhash", mirror_share=0.7
    )
    assert det.params == DetectorParams(algorithm="minhash", mirror_share=0.7)
    det.close()


def test_lookup_or_insert_lost_reply_is_not_applied_twice(redis_url: tuple[str, str]) -> None:
    import redis

    store = opened(redis_url, retry=RetryPolicy(attempts=2, base_delay=0.0))
    script = store._scripts.registered["lookup_or_insert"]
    lost: list[int] = []

    def applied_then_lost(**kw: Any) -> Any:
        reply = script(**kw)
        if not lost:
            lost.append(1)
            raise redis.ConnectionError("reply lost (test)")
        return reply

    store._scripts.registered["lookup_or_insert"] = applied_then_lost
    ks = keys(4, 5)
    rec = record("http://127.0.0.1/a", seed=1)
    ids, _, result = store.lookup_or_insert(ks, Commit(record=rec, keys=ks, token=None, host=rec.host))
    assert lost and len(ids) == 0  # the retry saw its own insert as already applied ...
    assert result is not None and result.doc_id == 0 and result.host_pages == 1
    assert len(store) == 1 and store.host_counts()["127.0.0.1"].unique == 1  # ... and did not redo it
    # a later call (new sequence number) finds the page as a candidate
    ids, _, again = store.lookup_or_insert(ks, Commit(record=rec, keys=ks, token=None, host=rec.host))
    assert again is None and ids.tolist() == [0]
    store.close()


def test_lookup_or_insert_over_expired_pages_inserts(redis_url: tuple[str, str]) -> None:
    store = opened(redis_url, ttl=1)
    ks = keys(1, 2)
    old = record("http://127.0.0.1/old", seed=1)
    assert store.lookup_or_insert(ks, Commit(record=old, keys=ks, token=None, host=old.host))[2] is not None
    time.sleep(2.1)
    new = record("http://127.0.0.1/new", seed=2)
    ids, _, result = store.lookup_or_insert(ks, Commit(record=new, keys=ks, token=None, host=new.host))
    assert len(ids) == 0 and result is not None and result.doc_id == 1  # only dead ids were in the buckets
    assert store.lookup(ks)[0].tolist() == [1]
    store.close()


def test_pages_without_candidate_cost_one_round_trip(redis_url: tuple[str, str]) -> None:
    store = RedisStorage(redis_url[0], prefix=redis_url[1])
    det = NearDupDetector(storage=store)
    calls: list[str] = []
    run = store._scripts.run

    def counting(script: str, args: Any, what: str, **kw: Any) -> Any:
        calls.append(script)
        return run(script, args, what, **kw)

    store._scripts.run = counting  # type: ignore[method-assign]
    statuses = [det.check(url, text=text).status for url, text, _ in corpus(6, 2, seed=13)]
    duplicates = sum(s != "unique" for s in statuses)
    assert statuses.count("unique") == 6 and duplicates == 12
    # one script per page; a second (the commit) only for pages with candidates; fetch from the snapshot
    assert sorted(calls) == sorted(["lookup_or_insert"] * len(statuses) + ["commit"] * duplicates)
    det.close()


def test_mirror_evidence_reads_the_rows_of_copying_hosts_only(redis_url: tuple[str, str]) -> None:
    """Forty hosts that each share one story with others, and one host that copies ten of the
    thirty pages of one origin: the evidence read for the mirror decision fetches the rows of the copy and its
    origin, not of every host (a broad crawl has thousands), and the mirror is still named."""
    store = RedisStorage(redis_url[0], prefix=redis_url[1])
    det = NearDupDetector(storage=store)
    story = " ".join(f"wire{i} report{i % 7}" for i in range(60))
    for h in range(40):
        det.check(f"https://site{h}.example/own", text=" ".join(f"own{h} word{i}" for i in range(120)))
        det.check(f"https://site{h}.example/story", text=story)
    for i in range(30):
        text = " ".join(f"doc{i} term{j}" for j in range(120))
        det.check(f"https://origin.example/{i}", text=text)
        if i < 10:  # the origin has pages of its own beyond the copied ones
            det.check(f"https://copy.example/{i}", text=text)
    read: list[list[str]] = []
    tables = store._hosts._mirror_tables
    store._hosts._mirror_tables = lambda hosts: read.append(hosts) or tables(hosts)  # type: ignore[method-assign]
    assert [(p.host, p.mirror_of) for p in det.mirror_pairs()] == [("copy.example", "origin.example")]
    assert read == [["copy.example"], ["origin.example"]]
    assert len(store.mirror_evidence().shared) == 42  # every host's rows, asked without thresholds
    det.close()
