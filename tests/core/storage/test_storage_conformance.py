"""One conformance suite for every store: memory, disk (SQLite) and Redis.

The stores are driven directly through the :class:`IndexStorage` protocol with hand-built
records, then through the detector, which must give identical verdicts and reports on each.
"""

from __future__ import annotations

import math
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.storage.base import (
    Commit,
    DocRecord,
    IndexStorage,
    ParameterMismatchError,
)
from neardup_scrapy.core.storage.memory import MemoryStorage
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage
from neardup_scrapy.core.storage.redis_store import RedisStorage
from neardup_scrapy.core.storage.sqlite import SQLiteStorage
from tests.core.storage.test_storage_support import corpus

SIGNATURE = DetectorParams().index_signature()
NUM_PERM = int(SIGNATURE["num_perm"])
KINDS = [
    "memory",
    "disk",
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("redis-cluster", marks=pytest.mark.redis),
]
SHARED = ("redis", "redis-cluster")  # stores that several processes write at once

Factory = Callable[..., IndexStorage]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Factory]:
    """``make_store(**kw)``: a new, unopened store on this test's location (same file / prefix)."""
    made: list[IndexStorage] = []
    redis_url: tuple[str, str] | None = None
    if kind in SHARED:
        redis_url = request.getfixturevalue("redis_url" if kind == "redis" else "redis_cluster_url")

    def factory(**kwargs: Any) -> IndexStorage:
        store: IndexStorage
        if kind == "memory":
            store = MemoryStorage(**kwargs)
        elif kind == "disk":
            store = SQLiteStorage(tmp_path / "index.sqlite", **kwargs)
        elif kind == "redis":
            assert redis_url is not None
            store = RedisStorage(redis_url[0], prefix=redis_url[1], **kwargs)
        else:
            assert redis_url is not None
            store = RedisClusterStorage(redis_url[0], prefix=redis_url[1], **kwargs)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


def record(
    url: str,
    *,
    seed: int,
    parent: int = -1,
    status: str = "unique",
    similarity: float = math.nan,
    hamming: int = -1,
    added: float | None = None,
) -> DocRecord:
    rng = np.random.default_rng(seed)
    return DocRecord(
        url=url,
        host=url.split("/")[2],
        digest=rng.bytes(16),
        simhash=int(rng.integers(0, 2**63)) * 2 + 1,
        signature=rng.integers(0, 2**8, NUM_PERM).astype(np.uint8),
        parent=parent,
        status=status,
        similarity=similarity,
        hamming=hamming,
        added=time.time() if added is None else added,
    )


def keys(*values: int) -> np.ndarray[Any, np.dtype[np.uint64]]:
    return np.array(values, dtype=np.uint64)


def add(store: IndexStorage, rec: DocRecord, ks: np.ndarray[Any, Any], **kw: Any) -> int:
    _, token = store.lookup(ks if len(ks) else keys(0))  # the detector always looks up the exact key
    result = store.commit(Commit(record=rec, keys=ks, token=token, host=rec.host, status=rec.status, **kw))
    assert result is not None
    return result.doc_id


def test_empty_store(make_store: Factory) -> None:
    store = make_store()
    store.open(SIGNATURE)
    ids, _ = store.lookup(keys(1, 2, 3))
    assert len(ids) == 0
    assert len(store) == 0
    assert store.clusters(10, 10) == ({}, [])
    assert store.host_counts() == {}


def test_lookup_fetch_roundtrip(make_store: Factory) -> None:
    store = make_store()
    store.open(SIGNATURE)
    a = record("http://127.0.0.1/a", seed=1)
    b = record("http://127.0.0.2/b", seed=2)
    ida = add(store, a, keys(10, 11, (5 << 56) | 12))
    idb = add(store, b, keys(11, 13))
    assert ida != idb and len(store) == 2
    ids, _ = store.lookup(keys(11))
    assert ids.tolist() == sorted([ida, idb])
    ids, _ = store.lookup(keys((5 << 56) | 12, 99))
    assert ids.tolist() == [ida]
    batch = store.fetch(np.array([idb, ida], dtype=np.int64))
    assert batch.ids.tolist() == [idb, ida]
    assert batch.urls == [b.url, a.url]
    assert batch.hosts == ["127.0.0.2", "127.0.0.1"]
    assert batch.digests == [b.digest, a.digest]
    assert batch.simhashes.tolist() == [b.simhash, a.simhash]
    np.testing.assert_array_equal(batch.signatures[1], a.signature)
    assert batch.roots.tolist() == [idb, ida]
    assert abs(float(batch.added[0]) - b.added) < 1.0  # stores may keep whole seconds


def test_skipped_and_host_counters(make_store: Factory) -> None:
    store = make_store()
    store.open(SIGNATURE)
    result = store.commit(Commit(record=None, keys=keys(), token=None, host="127.0.0.1", status="skipped"))
    assert result is not None and result.doc_id == -1 and result.host_pages == 0
    rep = record("http://127.0.0.1/a", seed=1)
    root = add(store, rep, keys(1, 2), nbytes=1000)
    near = record("http://127.0.0.2/a", seed=2, parent=root, status="near", similarity=0.9, hamming=2)
    _, token = store.lookup(keys(1, 2, 3))
    result = store.commit(
        Commit(
            record=near,
            keys=keys(1, 2, 3),
            token=token,
            host="127.0.0.2",
            status="near",
            canonical_host="127.0.0.1",
            nbytes=800,
        )
    )
    assert result is not None
    assert result.host_pages == 1
    exact = record("http://127.0.0.2/b", seed=3, parent=root, status="exact", similarity=1.0, hamming=0)
    _, token = store.lookup(keys(1, 2))
    result = store.commit(
        Commit(
            record=exact,
            keys=keys(),
            token=token,
            host="127.0.0.2",
            status="exact",
            nbytes=700,
        )
    )
    assert result is not None and result.host_pages == 2
    # a url fetched again counts as a revisit of its host, nothing else
    result = store.commit(Commit(record=None, keys=keys(), token=None, host="127.0.0.1", status="revisit"))
    assert result is not None and result.doc_id == -1 and result.host_pages == 1
    counts = store.host_counts()
    assert vars(counts["127.0.0.1"]) == {
        "pages": 1,
        "unique": 1,
        "exact": 0,
        "near": 0,
        "skipped": 1,
        "bytes": 1000,
        "duplicate_bytes": 0,
        "revisits": 1,
    }
    assert vars(counts["127.0.0.2"]) == {
        "pages": 2,
        "unique": 0,
        "exact": 1,
        "near": 1,
        "skipped": 0,
        "bytes": 1500,
        "duplicate_bytes": 1500,
        "revisits": 0,
    }
    evidence = store.mirror_evidence()
    assert evidence.pages == {"127.0.0.1": 1, "127.0.0.2": 2}
    assert evidence.documents == {"127.0.0.1": 1, "127.0.0.2": 1}  # two pages, one document
    assert evidence.duplicated == {"127.0.0.1": 1, "127.0.0.2": 1}
    assert evidence.shared == {"127.0.0.1": {"127.0.0.2": 1}, "127.0.0.2": {"127.0.0.1": 1}}
    assert evidence.canonical == {"127.0.0.2": {"127.0.0.1": 1}}
    # exact duplicates add no bucket entries
    ids, _ = store.lookup(keys(1, 2, 3))
    assert len(ids) == 2


def test_clusters_and_unions(make_store: Factory) -> None:
    store = make_store()
    store.open(SIGNATURE)
    r1 = add(store, record("http://127.0.0.1/r1", seed=1), keys(1))
    r2 = add(store, record("http://127.0.0.1/r2", seed=2), keys(2))
    m1 = add(
        store,
        record("http://127.0.0.2/m1", seed=3, parent=r1, status="near", similarity=0.9, hamming=1),
        keys(1, 3),
    )
    m2 = add(
        store,
        record("http://127.0.0.2/m2", seed=4, parent=r2, status="exact", similarity=1.0, hamming=0),
        keys(),
    )
    batch = store.fetch(np.array([m1, m2], dtype=np.int64))
    assert batch.roots.tolist() == [r1, r2]
    # a page joining both clusters merges r2's cluster into r1's
    _, token = store.lookup(keys(1, 2))
    joiner = record("http://127.0.0.3/j", seed=5, parent=r1, status="near", similarity=0.85, hamming=3)
    result = store.commit(
        Commit(
            record=joiner,
            keys=keys(1, 2),
            token=token,
            unions=[(r2, r1)],
            host="127.0.0.3",
            status="near",
        )
    )
    assert result is not None
    batch = store.fetch(np.array([r2, m2, result.doc_id], dtype=np.int64))
    assert batch.roots.tolist() == [r1, r1, r1]
    evidence = store.mirror_evidence()  # one document on three hosts
    assert evidence.documents == {"127.0.0.1": 1, "127.0.0.2": 1, "127.0.0.3": 1}
    assert evidence.duplicated == {"127.0.0.1": 1, "127.0.0.2": 1, "127.0.0.3": 1}
    assert evidence.shared == {
        "127.0.0.1": {"127.0.0.2": 1, "127.0.0.3": 1},
        "127.0.0.2": {"127.0.0.1": 1, "127.0.0.3": 1},
        "127.0.0.3": {"127.0.0.1": 1, "127.0.0.2": 1},
    }
    hist, largest = store.clusters(max_clusters=5, max_members=3)
    assert hist == {5: 1}
    (cluster,) = largest
    assert cluster["representative"] == cluster["id"] == "http://127.0.0.1/r1"
    assert cluster["size"] == 5
    assert cluster["hosts"] == ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
    assert len(cluster["members"]) == 3
    assert cluster["members"][0] == {
        "url": "http://127.0.0.1/r1",
        "status": "unique",
        "similarity": None,
        "hamming": None,
    }
    assert cluster["members"][1]["url"] == "http://127.0.0.1/r2"
    assert cluster["members"][2] == {
        "url": "http://127.0.0.2/m1",
        "status": "near",
        "similarity": pytest.approx(0.9, abs=1e-3),
        "hamming": 1,
    }


def test_promote_makes_a_page_the_representative(kind: str, make_store: Factory) -> None:
    """``promote``: the page becomes its cluster's root, the old root takes its status and
    similarity, the hosts' counters follow (the totals do not change), the mirror evidence stays
    with the cluster, and later lookups, clusters and reports name the new representative --
    also after reopening a persisted store."""
    store = make_store()
    store.open(SIGNATURE)
    copy = add(store, record("http://127.0.0.2/copy", seed=1), keys(1))
    other = add(store, record("http://127.0.0.2/other", seed=2), keys(2))
    original = add(
        store,
        record("http://127.0.0.1/original", seed=3, parent=copy, status="near", similarity=0.9, hamming=2),
        keys(1, 3),
    )
    third = add(
        store,
        record("http://127.0.0.3/third", seed=4, parent=copy, status="exact", similarity=1.0, hamming=0),
        keys(),
    )
    before = {h: (c.unique, c.exact, c.near) for h, c in store.host_counts().items()}
    assert before == {"127.0.0.2": (2, 0, 0), "127.0.0.1": (0, 0, 1), "127.0.0.3": (0, 1, 0)}
    evidence = store.mirror_evidence()
    assert store.promote(original) is True
    assert store.promote(original) is False  # already the representative
    assert store.promote(other) is False  # a cluster of one
    after = {h: (c.unique, c.exact, c.near) for h, c in store.host_counts().items()}
    assert after == {"127.0.0.2": (1, 0, 1), "127.0.0.1": (1, 0, 0), "127.0.0.3": (0, 1, 0)}
    assert store.mirror_evidence() == evidence
    batch = store.fetch(np.array([copy, original, third], dtype=np.int64))
    assert batch.roots.tolist() == [original] * 3
    assert batch.statuses == ["near", "unique", "exact"]
    _, largest = store.clusters(max_clusters=5, max_members=5)
    (cluster,) = largest
    assert cluster["representative"] == "http://127.0.0.1/original"
    assert cluster["members"][0]["url"] == "http://127.0.0.1/original"
    by_url = {m["url"]: m for m in cluster["members"]}
    assert by_url["http://127.0.0.2/copy"] == {
        "url": "http://127.0.0.2/copy",
        "status": "near",
        "similarity": pytest.approx(0.9, abs=1e-3),
        "hamming": 2,
    }
    # a page joining the cluster later (through the copy) counts on the new representative
    joiner = add(
        store,
        record("http://127.0.0.4/j", seed=5, parent=copy, status="near", similarity=0.8, hamming=3),
        keys(1),
    )
    assert store.fetch(np.array([joiner], dtype=np.int64)).roots.tolist() == [original]
    assert store.mirror_evidence().shared["127.0.0.4"] == {"127.0.0.1": 1, "127.0.0.2": 1, "127.0.0.3": 1}
    if kind != "memory":
        store.close()
        again = make_store()
        again.open(SIGNATURE)
        assert again.fetch(np.array([copy], dtype=np.int64)).roots.tolist() == [original]
        assert {h: (c.unique, c.near) for h, c in again.host_counts().items()}["127.0.0.1"] == (1, 0)


def test_promote_origins_promotes_the_origin_page_of_each_mirror_cluster(make_store: Factory) -> None:
    """Clusters represented on a mirror host that hold a page of its origin get that page (the
    earliest of the origin's) as representative; other clusters are left alone."""
    store = make_store()
    store.open(SIGNATURE)
    roots, origins = [], []
    for i in range(3):
        root = add(store, record(f"http://127.0.0.2/c{i}", seed=10 + i), keys(10 + i))
        roots.append(root)
        origins.append(
            add(
                store,
                record(f"http://127.0.0.1/o{i}", seed=20 + i, parent=root, status="near", similarity=0.9),
                keys(10 + i),
            )
        )
        again = record(f"http://127.0.0.1/p{i}", seed=30 + i, parent=root, status="exact", similarity=1.0)
        add(store, again, keys())
    lone = add(store, record("http://127.0.0.2/lone", seed=40), keys(40))
    elsewhere = add(store, record("http://127.0.0.3/x", seed=41), keys(41))
    add(
        store,
        record("http://127.0.0.1/y", seed=42, parent=elsewhere, status="near", similarity=0.9),
        keys(41),
    )
    assert store.promote_origins({"127.0.0.2": "127.0.0.1"}) == 3
    batch = store.fetch(np.array([*roots, lone, elsewhere], dtype=np.int64))
    assert batch.roots.tolist() == [*origins, lone, elsewhere]
    assert store.promote_origins({"127.0.0.2": "127.0.0.1"}) == 0
    assert store.promote_origins({"nowhere.example": "127.0.0.1"}) == 0


def test_reopen_keeps_everything(kind: str, make_store: Factory) -> None:
    if kind == "memory":
        pytest.skip("the memory store persists nothing")
    store = make_store()
    store.open(SIGNATURE)
    a = add(store, record("http://127.0.0.1/a", seed=1), keys(7, 8))
    add(
        store,
        record("http://127.0.0.2/a", seed=2, parent=a, status="near", similarity=0.9, hamming=1),
        keys(7, 9),
        canonical_host="127.0.0.1",
    )
    store.close()
    again = make_store()
    again.open(SIGNATURE)
    assert len(again) == 2
    ids, _ = again.lookup(keys(7))
    assert len(ids) == 2
    assert again.fetch(ids).roots.tolist() == [a, a]
    evidence = again.mirror_evidence()
    assert evidence.shared == {"127.0.0.1": {"127.0.0.2": 1}, "127.0.0.2": {"127.0.0.1": 1}}
    assert evidence.canonical == {"127.0.0.2": {"127.0.0.1": 1}}
    assert again.host_counts()["127.0.0.2"].near == 1
    c = add(again, record("http://127.0.0.3/c", seed=3), keys(9))
    assert c == 2


def test_parameter_mismatch(kind: str, make_store: Factory) -> None:
    if kind == "memory":
        pytest.skip("the memory store persists nothing")
    store = make_store()
    store.open(SIGNATURE)
    add(store, record("http://127.0.0.1/a", seed=1), keys(1))
    store.close()
    other = DetectorParams(threshold=0.7, shingle_size=4).index_signature()
    with pytest.raises(ParameterMismatchError) as info:
        make_store().open(other)
    assert set(info.value.differences) >= {"threshold", "shingle_size"}
    assert "threshold" in str(info.value) and "shingle_size" in str(info.value)
    assert "num_perm" not in info.value.differences
    # the same parameters still open fine
    again = make_store()
    again.open(SIGNATURE)
    assert len(again) == 1


def test_detector_mismatch_message(kind: str, make_store: Factory) -> None:
    if kind == "memory":
        pytest.skip("the memory store persists nothing")
    NearDupDetector(storage=make_store()).close()
    with pytest.raises(ParameterMismatchError, match="num_perm"):
        NearDupDetector(storage=make_store(), num_perm=64)


def _verdicts(storage: IndexStorage | None, pages: list[tuple[str, str, int]]) -> tuple[list[Any], Any]:
    det = NearDupDetector(storage=storage)
    out = [det.check(url, text=text).to_dict() for url, text, _ in pages]
    det.skip("http://127.0.0.9/binary", reason="non-html")
    report = det.report()
    det.close()
    return out, report


def _nan_free(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _nan_free(v) for k, v in value.items() if k != "generated_at"}
    if isinstance(value, list):
        return [_nan_free(v) for v in value]
    return value


def test_detector_same_verdicts_as_memory(make_store: Factory) -> None:
    pages = corpus(40, 3, seed=3)
    expected, expected_report = _verdicts(None, pages)
    got, report = _verdicts(make_store(), pages)
    assert got == expected
    assert _nan_free(report) == _nan_free(expected_report)
    assert sum(v["status"] == "unique" for v in got) == 40


def _originals(storage: IndexStorage | None) -> tuple[list[Any], Any, dict[str, int]]:
    """Copies checked before their originals (canonical links, a mirror with none), revisits."""
    from tests.core.test_originals import canonical, copy_page, origin_page

    det = NearDupDetector(storage=storage)
    pages = [(f"http://m.example/c{i}", copy_page(f"P{i}", 200 + i)) for i in range(12)]
    pages += [(f"http://o.example/p{i}", origin_page(f"P{i}", 200 + i)) for i in range(30)]
    pages += [
        (f"http://c.example/{i}", copy_page(f"Q{i}", 400 + i, canonical(f"http://o.example/q{i}")))
        for i in range(3)
    ]
    pages += [(f"http://o.example/q{i}", origin_page(f"Q{i}", 400 + i)) for i in range(3)]
    pages += pages[:2]  # fetched again
    verdicts = [det.check(url, html) for url, html in pages]
    report = det.report()
    det.close()
    return [v.to_dict() for v in verdicts], report, {v.url: v.counted for v in verdicts}


def test_detector_keeps_the_original_on_every_store(make_store: Factory) -> None:
    """The representative choice and the counts behind the store protocol (``promote``,
    ``promote_origins``, revisit counters): every store gives the memory store's tags and report."""
    expected, expected_report, counted = _originals(None)
    got, report, _ = _originals(make_store())
    assert got == expected
    assert _nan_free(report) == _nan_free(expected_report)
    assert all(c["representative"].startswith("http://o.example/") for c in report["clusters"])
    assert report["totals"]["revisits"] == 2 and report["totals"]["pages"] == len(counted) + 2
    assert report["totals"]["unique"] == 33  # 30 + 3 documents of the origin, none of the copies


# -- the optional lookup_or_insert (one round trip for a page without candidate) ----------------


def unique_commit(rec: DocRecord, ks: np.ndarray[Any, Any], **kw: Any) -> Commit:
    """The detector's provisional commit: the page as unique, token unused."""
    return Commit(record=rec, keys=ks, token=None, host=rec.host, status="unique", **kw)


def test_lookup_or_insert_inserts_only_without_candidate(make_store: Factory) -> None:
    store: Any = make_store()
    store.open(SIGNATURE)
    a = record("http://127.0.0.1/a", seed=1)
    ids, _, result = store.lookup_or_insert(keys(1, 2, 3), unique_commit(a, keys(1, 2, 3), nbytes=500))
    assert len(ids) == 0
    assert result is not None and result.doc_id == 0 and result.host_pages == 1
    assert len(store) == 1
    assert store.lookup(keys(2))[0].tolist() == [0]
    batch = store.fetch(np.array([0], dtype=np.int64))
    assert batch.urls == [a.url] and batch.digests == [a.digest] and batch.roots.tolist() == [0]
    np.testing.assert_array_equal(batch.signatures[0], a.signature)
    assert vars(store.host_counts()["127.0.0.1"]) == {
        "pages": 1,
        "unique": 1,
        "exact": 0,
        "near": 0,
        "skipped": 0,
        "bytes": 500,
        "revisits": 0,
        "duplicate_bytes": 0,
    }
    # a candidate in any looked-up bucket: nothing changes, the answer is lookup's
    b = record("http://127.0.0.2/b", seed=2)
    expected, _ = store.lookup(keys(3, 4))
    ids, token, result = store.lookup_or_insert(keys(3, 4), unique_commit(b, keys(3, 4)))
    assert result is None
    assert ids.tolist() == expected.tolist() == [0]
    assert len(store) == 1 and "127.0.0.2" not in store.host_counts()
    # ... and its token serves the commit that follows
    assert store.fetch(ids).urls == [a.url]
    near = record(b.url, seed=2, parent=0, status="near", similarity=0.9, hamming=2)
    done = store.commit(
        Commit(
            record=near,
            keys=keys(3, 4),
            token=token,
            host="127.0.0.2",
            status="near",
        )
    )
    assert done is not None and done.doc_id == 1
    assert store.fetch(np.array([1], dtype=np.int64)).roots.tolist() == [0]
    # buckets that are all empty: a new page
    c = record("http://127.0.0.3/c", seed=3)
    ids, _, result = store.lookup_or_insert(keys(5, 6), unique_commit(c, keys(5, 6)))
    assert len(ids) == 0 and result is not None and result.doc_id == 2
    assert store.lookup(keys(4, 6))[0].tolist() == [1, 2]
    assert len(store) == 3


def test_lookup_or_insert_invalidates_tokens_like_commit(kind: str, make_store: Factory) -> None:
    if kind not in SHARED:
        pytest.skip("one writer per store: nothing to race")
    a: Any = make_store()
    b: Any = make_store()
    a.open(SIGNATURE)
    b.open(SIGNATURE)
    rec_a = record("http://127.0.0.1/a", seed=1)
    rec_b = record("http://127.0.0.2/b", seed=2)
    # a looked up (empty buckets) and decides; meanwhile b's page without candidate goes in
    _, token_a = a.lookup(keys(1, 2))
    ids, _, result = b.lookup_or_insert(keys(2, 3), unique_commit(rec_b, keys(2, 3)))
    assert len(ids) == 0 and result is not None and result.doc_id == 0
    assert a.commit(Commit(record=rec_a, keys=keys(1, 2), token=token_a, host=rec_a.host)) is None
    # a checks again: b's page is a candidate now, so nothing is inserted
    ids, token_a, result = a.lookup_or_insert(keys(1, 2), unique_commit(rec_a, keys(1, 2)))
    assert result is None and ids.tolist() == [0]
    # another insert into a bucket a looked at (bucket 1, still empty) makes a's token stale again
    rec_c = record("http://127.0.0.3/c", seed=3)
    _, _, result = b.lookup_or_insert(keys(1, 9), unique_commit(rec_c, keys(1, 9)))
    assert result is not None and result.doc_id == 1
    assert a.commit(Commit(record=rec_a, keys=keys(1, 2), token=token_a, host=rec_a.host)) is None
    assert len(a) == 2


def test_lookup_or_insert_concurrent_inserts_one_original(kind: str, make_store: Factory) -> None:
    if kind not in SHARED:
        pytest.skip("one writer per store: nothing to race")
    n = 8
    stores: list[Any] = [make_store() for _ in range(n)]
    for store in stores:
        store.open(SIGNATURE)
    barrier = threading.Barrier(n)
    answers: list[Any] = [None] * n

    def run(k: int) -> None:
        rec = record(f"http://127.0.0.{k + 1}/same", seed=k)
        ks = keys(7, 8, 100 + k)  # two shared buckets, one of its own
        barrier.wait(10)
        answers[k] = stores[k].lookup_or_insert(ks, unique_commit(rec, ks))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    inserted = [a[2] for a in answers if a[2] is not None]
    assert len(inserted) == 1 and len(stores[0]) == 1
    first = inserted[0].doc_id
    assert all(a[0].tolist() == [first] for a in answers if a[2] is None)


def _explained(storage: IndexStorage, pages: list[tuple[str, str]]) -> list[dict[str, Any]]:
    det = NearDupDetector(storage=storage)
    out = []
    for url, text in pages:
        verdict = det.check(url, text=text)
        out.append(verdict.explain() | {"doc_id": verdict.doc_id})
    det.close()
    return out


def test_detector_verdicts_same_with_and_without_lookup_or_insert(
    kind: str, make_store: Factory, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    long_pages = [(url, text) for url, text, _ in corpus(12, 3, seed=21)]
    short = ["alpha beta gamma delta", "alpha beta gamma delta", "alpha beta gamma epsilon"]
    short_pages = [(f"http://127.0.0.4/short/{i}", text) for i, text in enumerate(short)]
    pages = long_pages[:8] + short_pages + long_pages[8:]
    with_it = _explained(make_store(), pages)
    without: Any
    if kind == "memory":
        without = MemoryStorage()
    elif kind == "disk":
        without = SQLiteStorage(tmp_path / "other.sqlite")
    elif kind == "redis":
        url, prefix = request.getfixturevalue("redis_url")
        without = RedisStorage(url, prefix=f"{prefix}-other")  # the fixture deletes prefix* keys
    else:
        url, prefix = request.getfixturevalue("redis_cluster_url")
        without = RedisClusterStorage(url, prefix=f"{prefix}-other")
    # the plain lookup_or_insert of IndexStorage (a custom store's): lookup, fetch, commit
    without.lookup_or_insert = types.MethodType(IndexStorage.lookup_or_insert, without)
    assert _explained(without, pages) == with_it
    reasons = [v["reason"] for v in with_it]
    assert reasons[0] == "no candidate in the index"
    assert reasons[8] == reasons[10] == "fewer than 10 tokens: matched exactly only"
    assert [v["status"] for v in with_it[8:11]] == ["unique", "exact", "unique"]
    assert {v["status"] for v in with_it} == {"unique", "exact", "near"}


def _with_gaps(kind: str, make_store: Factory) -> tuple[IndexStorage, set[str], set[str]]:
    """A store whose page ids have gaps the way each store gets them, and its pages' urls.

    Redis Cluster: two processes writing at once (each holds a reserved id, a refused commit
    leaves its id unused). Redis: a record gone (what expiry does). Memory and disk have one
    writer and dense ids: the same pages, without gaps.
    """
    first: Any = make_store()
    first.open(SIGNATURE)
    second: Any = make_store() if kind in SHARED else first
    second.open(SIGNATURE)
    urls: set[str] = set()
    for k in range(12):
        store = first if k % 3 else second  # interleaved: the cluster store's reserved ids go unused
        url = f"http://127.0.0.{1 + k % 2}/p{k}"
        add(store, record(url, seed=k), keys(1000 + k))
        urls.add(url)
    # two pages of one cluster, and two different pages under one url
    a = add(first, record("http://127.0.0.1/dup-a", seed=50), keys(77))
    add(
        second,
        record("http://127.0.0.2/dup-b", seed=51, parent=a, status="near", similarity=0.9, hamming=2),
        keys(77),
    )
    add(first, record("http://127.0.0.1/same", seed=60), keys(88))
    add(second, record("http://127.0.0.1/same", seed=61), keys(89))
    urls |= {"http://127.0.0.1/dup-a", "http://127.0.0.2/dup-b", "http://127.0.0.1/same"}
    if kind in SHARED:  # a commit refused because another process wrote a bucket it read
        late = record("http://127.0.0.3/late", seed=70)
        _, token = first.lookup(keys(99))
        add(second, record("http://127.0.0.3/early", seed=71), keys(99))
        assert first.commit(Commit(record=late, keys=keys(99), token=token, host=late.host)) is None
        add(first, late, keys(99, 100))
        urls |= {"http://127.0.0.3/late", "http://127.0.0.3/early"}
    gone: set[str] = set()
    if kind == "redis":
        first.client.delete(f"{first.prefix}:d:3")  # as if its record had expired
        gone.add("http://127.0.0.2/p3")
    if kind == "redis-cluster":
        ids, _ = first._exports.page_table()
        assert int(ids[-1]) + 1 > len(ids) == len(first)  # the ids have gaps
    return first, urls - gone, gone


def test_exports_list_every_page_when_ids_have_gaps(kind: str, make_store: Factory) -> None:
    from neardup_scrapy.core.exports import cluster_rows, pair_rows

    store, urls, gone = _with_gaps(kind, make_store)
    rows = cluster_rows(store)
    members = [m["url"] for row in rows for m in row["members"]]
    assert sorted(members) == sorted([*urls, "http://127.0.0.1/same"])  # every page once, even a shared url
    assert not gone & set(members)
    (dup,) = [row for row in rows if row["size"] == 2]
    assert [m["url"] for m in dup["members"]] == ["http://127.0.0.1/dup-a", "http://127.0.0.2/dup-b"]
    assert rows[0] is dup  # the larger clusters first, then the singletons
    assert [p["url"] for p in pair_rows(rows)] == ["http://127.0.0.2/dup-b"]
    report_hist, _ = store.clusters(10, 10)
    assert report_hist == {2: 1}


def test_url_rules_are_kept_per_writer_and_shared(kind: str, make_store: Factory) -> None:
    """Every store keeps each process's url rules with the index; a writer replaces its own; a
    second client of the same index (a shared or reopened store) reads them all."""
    store = make_store()
    store.open(SIGNATURE)
    assert store.url_rules() == {}
    store.save_url_rules("w1", b'{"a": 1}')
    store.save_url_rules("w2", b'{"b": 2}')
    store.save_url_rules("w1", b'{"a": 3}')
    assert store.url_rules() == {"w1": b'{"a": 3}', "w2": b'{"b": 2}'}
    if kind == "memory":
        return
    if kind == "disk":
        store.close()
    other = make_store()
    other.open(SIGNATURE)
    assert other.url_rules() == {"w1": b'{"a": 3}', "w2": b'{"b": 2}'}
