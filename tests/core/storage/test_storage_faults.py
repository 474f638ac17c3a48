"""Damaged or hostile index data in every store: it must never hang, crash or pass silently.

Cycles of cluster parents (a corrupted file, anyone with write access to a shared Redis), urls
holding lone surrogates (valid Python strings, e.g. from ``json.loads``), truncated records,
random bytes in a disk index, an index whose keys vanished, and a commit that reaches Redis after
the client gave up waiting for it.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.storage.base import IndexStorage, StorageError
from neardup_scrapy.core.storage.memory import MemoryStorage
from neardup_scrapy.core.storage.redis_store import RedisStorage
from neardup_scrapy.core.storage.retry import RetryPolicy
from neardup_scrapy.core.storage.sqlite import SQLiteStorage
from neardup_scrapy.core.storage.unionfind import all_roots
from neardup_scrapy.report import parse_report, report_json, validate_report
from tests.core.storage.test_storage_support import corpus, have_redis_server, private_redis

KINDS = ["memory", "disk", pytest.param("redis", marks=pytest.mark.redis)]
#: Four unrelated texts (one page each) and the urls they are first seen under.
PAGES = [(url, text) for url, text, _ in corpus(4, 0, seed=21)]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def new_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], IndexStorage]]:
    """``new_store()``: a new store on this test's location (same file / prefix each time)."""
    redis_url: tuple[str, str] | None = request.getfixturevalue("redis_url") if kind == "redis" else None
    shared = MemoryStorage()

    def factory() -> IndexStorage:
        if kind == "memory":
            return shared  # "reopening" a memory store is using it again
        if kind == "disk":
            return SQLiteStorage(tmp_path / "index.sqlite")
        assert redis_url is not None
        return RedisStorage(redis_url[0], prefix=redis_url[1])

    yield factory


def _make_cycle(kind: str, store: IndexStorage, parents: dict[int, int]) -> None:
    """Overwrite stored cluster parents, as a corrupted file or a hostile writer would."""
    if isinstance(store, MemoryStorage):
        for doc, parent in parents.items():
            store._parents[doc] = parent
    elif isinstance(store, SQLiteStorage):
        path = store.path
        store.close()
        db = sqlite3.connect(path)
        with db:
            db.executemany("UPDATE docs SET parent=? WHERE id=?", [(p, d) for d, p in parents.items()])
        db.close()
    else:
        assert isinstance(store, RedisStorage)
        for doc, parent in parents.items():
            store.client.setrange(f"{store.prefix}:d:{doc}", 0, struct.pack("<i", parent))


@pytest.mark.timeout(60)
def test_parent_cycle_never_hangs_and_is_reported(
    kind: str, new_store: Callable[[], IndexStorage], caplog: pytest.LogCaptureFixture
) -> None:
    det = NearDupDetector(storage=new_store())
    assert [det.check(url, text=text).status for url, text in PAGES] == ["unique"] * 4
    _make_cycle(kind, det.storage, {0: 1, 1: 2, 2: 0})  # pages 0 -> 1 -> 2 -> 0
    if kind == "disk":
        det = NearDupDetector(storage=new_store())  # the file is read again at open
    with caplog.at_level(logging.WARNING):
        copy = det.check("http://127.0.0.9/copy-of-1", text=PAGES[1][1])
        report = det.report()
    # Every store breaks the cycle at its smallest id, so all agree on the representative; the
    # copy's text is that of page 1, a member of its cluster, not the representative's
    assert (copy.status, copy.rule, copy.duplicate_of) == ("near", "member-copy", PAGES[0][0])
    validate_report(report)
    biggest = report["clusters"][0]
    assert biggest["representative"] == PAGES[0][0] and biggest["size"] == 4
    assert {m["url"] for m in biggest["members"]} == {PAGES[0][0], PAGES[1][0], PAGES[2][0], copy.url}
    if kind != "redis":  # the Lua side cannot log; its roots agree with the report's (logged) ones
        assert any("cycle" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    det.close()


def test_all_roots_of_damaged_parents() -> None:
    # 0 -> 1 -> 2 -> 0 and 5 -> 9 -> 8 -> 7 -> 5 are cycles; 6 points out of range
    parents = np.array([1, 2, 0, 3, 3, 9, -4, 5, 7, 8], dtype=np.int64)
    roots, broken = all_roots(parents)
    assert roots.tolist() == [0, 0, 0, 3, 3, 5, 6, 5, 5, 5] and broken == [0, 5]
    assert parents.tolist() == [1, 2, 0, 3, 3, 9, -4, 5, 7, 8]  # not modified
    chain = np.arange(-1, 999, dtype=np.int64)  # a sound forest, however deep, is left as it is
    chain[0] = 0
    roots, broken = all_roots(chain)
    assert roots.tolist() == [0] * 1000 and broken == []


SURROGATE_URLS = ["http://a.test/caf\udce9", "http://\udcff.test/x", "http://b.test/\ud800?q=\udfff"]


def test_urls_with_lone_surrogates_are_stored_and_reported(
    kind: str, new_store: Callable[[], IndexStorage]
) -> None:
    det = NearDupDetector(storage=new_store())
    texts = [text for _, text in PAGES[:3]]
    for url, text in zip(SURROGATE_URLS, texts, strict=True):
        assert det.check(url, text=text).status == "unique"
    copies = [det.check(f"http://c.test/{i}", text=text) for i, text in enumerate(texts)]
    assert [v.duplicate_of for v in copies] == SURROGATE_URLS
    if kind != "memory":
        det.close()
        det = NearDupDetector(storage=new_store())  # read back from the store
    again = det.check("http://c.test/again", text=texts[1])
    assert again.status == "exact" and again.duplicate_of == SURROGATE_URLS[1]
    report = det.report()
    validate_report(report)
    back = parse_report(report_json(report))  # strict JSON, the surrogates escaped
    urls = {m["url"] for c in back["clusters"] for m in c["members"]}
    assert set(SURROGATE_URLS) <= urls
    assert "\udcff.test" in {h["host"] for h in back["hosts"]}
    det.close()


@pytest.mark.redis
@pytest.mark.parametrize("cut", ["head", "signature"])
def test_truncated_redis_record_is_a_storage_error(redis_url: tuple[str, str], cut: str) -> None:
    store = RedisStorage(redis_url[0], prefix=redis_url[1])
    det = NearDupDetector(storage=store)
    url, text = PAGES[0]
    det.check(url, text=text)
    client = store.client
    key = f"{store.prefix}:d:0"
    record = client.get(key)
    # the record ends with the signature and the url: cut inside its head, or 5 bytes before
    # the end of the signature
    size = 10 if cut == "head" else len(record) - len(url.encode()) - 5
    client.set(key, record[:size])
    with pytest.raises(StorageError, match=r"damaged|failed"):
        det.check("http://127.0.0.9/copy", text=text)
    det.close()


def test_damaged_disk_index_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    det = NearDupDetector(storage=SQLiteStorage(path))
    for url, text, _ in corpus(300, 0, seed=3, length=120):
        det.check(url, text=text)
    det.close()
    size = path.stat().st_size
    assert size > 200_000
    with path.open("r+b") as fh:  # 8 KB of random bytes in the middle of the file
        fh.seek(size // 2)
        fh.write(random.Random(1).randbytes(8192))
    with pytest.raises(StorageError, match="damaged") as info:
        NearDupDetector(storage=SQLiteStorage(path))
    assert "move the file away" in str(info.value)
    assert os.path.exists(path)  # nothing is deleted behind the operator's back


@pytest.mark.redis
def test_vanished_redis_index_is_created_again(
    redis_url: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisStorage(redis_url[0], prefix=redis_url[1])
    det = NearDupDetector(storage=store)
    before = [det.check(url, text=text) for url, text in PAGES[:2]]
    store.wipe()  # as after a Redis restart without persistence
    with caplog.at_level(logging.WARNING):
        after = det.check(*PAGES[2])
    assert after.status == "unique"
    assert after.doc_id is not None and after.doc_id > max(v.doc_id or 0 for v in before)  # ids not reused
    assert any("vanished" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert det.check("http://127.0.0.9/copy", text=PAGES[2][1]).duplicate_of == PAGES[2][0]
    det.close()


@pytest.mark.redis
def test_infinite_ttl_means_never(redis_url: tuple[str, str]) -> None:
    det = NearDupDetector(storage=RedisStorage(redis_url[0], prefix=redis_url[1]), ttl=float("inf"))
    url, text = PAGES[0]
    assert det.check(url, text=text).status == "unique"
    assert det.check(url + "?copy", text=text).status == "exact"
    parse_report(report_json(det.report()))
    det.close()


needs_server = pytest.mark.skipif(not have_redis_server(), reason="redis-server binary not installed")


@needs_server
def test_commit_reaching_redis_after_the_client_gave_up_is_not_applied(tmp_path: Path) -> None:
    import redis

    with private_redis(tmp_path, debug=True) as server:
        store = RedisStorage(
            server.url,
            prefix="late",
            socket_timeout=0.4,
            retry=RetryPolicy(attempts=2, base_delay=0.05),
            cooldown=0.0,
        )
        det = NearDupDetector(storage=store)
        checked = [det.check(url, text=text) for url, text in PAGES[:2]]
        staller = redis.Redis.from_url(server.url)
        stall = threading.Thread(target=lambda: staller.execute_command("DEBUG", "SLEEP", "2"))
        stall.start()
        time.sleep(0.2)
        with pytest.raises(StorageError):  # both tries time out while Redis sleeps
            det.check(*PAGES[2])
        stall.join()
        time.sleep(0.2)  # Redis has run the queued commits by now
        # The page counted as not checked was not indexed behind the detector's back.
        assert len(store) == len(checked) == 2
        assert sum(c.pages for c in store.host_counts().values()) == 2
        assert det.check(*PAGES[2]).status == "unique"  # and it is checked normally now
        det.close()
        staller.close()


def test_report_json_is_strict() -> None:
    with pytest.raises(ValueError):
        report_json({"x": float("nan")})
    with pytest.raises(ValueError):
        parse_report('{"x": NaN}')
    with pytest.raises(ValueError):
        parse_report('{"x": -Infinity}')
    params = DetectorParams(ttl=float("inf"))
    report = NearDupDetector.from_params(params).report()
    assert parse_report(report_json(report))["params"]["ttl"] is None


def _fail_until_answered(det: NearDupDetector, pages: list[tuple[str, str]]) -> list[str]:
    """Check ``pages`` in turn (every 20 ms) until one is checked; the errors met before."""
    errors = []
    for url, text in pages:
        try:
            det.check(url, text=text)
        except StorageError as exc:
            errors.append(str(exc))
            time.sleep(0.02)
            continue
        return errors
    raise AssertionError(f"no page was checked: {errors[-3:]}")


@needs_server
def test_checking_resumes_soon_after_the_server_answers_again(tmp_path: Path) -> None:
    """A short outage (a restart, a failover) is followed by probes 0.5, 1, 2 ... s apart, not by
    a fixed cooldown: checking resumes within the spell in progress, here 1 s."""
    pages = [(f"http://127.0.0.1/p{k}", f"page {k} " + text) for k, (_, text) in enumerate(PAGES * 200)]
    with private_redis(tmp_path, appendonly=True) as server:
        store = RedisStorage(server.url, prefix="probe", retry=RetryPolicy(attempts=2, base_delay=0.05))
        det = NearDupDetector(storage=store)
        det.check(*pages[0])
        server.kill()
        with pytest.raises(StorageError):
            det.check(*pages[1])
        failed = time.monotonic()
        time.sleep(1.0)  # down for a second after the first failure
        server.start()
        back = time.monotonic()
        errors = _fail_until_answered(det, pages[2:])
        resumed = time.monotonic()
        assert all("unreachable (next try in" in e for e in errors)  # no backoff per page
        assert resumed - back <= 1.0, f"checking resumed {resumed - back:.2f} s after Redis answered"
        assert resumed - failed <= 2.5
        det.close()


@needs_server
def test_probes_of_a_store_that_stays_down_double_up_to_the_cooldown(tmp_path: Path) -> None:
    with private_redis(tmp_path) as server:
        store = RedisStorage(
            server.url, prefix="spells", retry=RetryPolicy(attempts=1), cooldown=1.0, connect_timeout=0.2
        )
        det = NearDupDetector(storage=store)
        server.kill()
        spells = []
        started = time.monotonic()
        last_probe_failed = True
        while time.monotonic() - started < 4.0:
            try:
                det.check(*PAGES[0])
            except StorageError as exc:
                text = str(exc)
                if "next try in" not in text:  # a probe (an attempt) failed
                    last_probe_failed = True
                elif last_probe_failed:  # the first call after it: the spell before the next probe
                    spells.append(float(text.rsplit("next try in ", 1)[1].rstrip("s)")))
                    last_probe_failed = False
            time.sleep(0.01)
        assert spells[:4] == pytest.approx([0.5, 1.0, 1.0, 1.0], abs=0.06)
        det.close()


def test_the_report_at_close_waits_for_a_failing_store(caplog: pytest.LogCaptureFixture) -> None:
    from neardup_scrapy.core.storage.retry import call_patiently

    clock = [0.0]
    calls = []

    def report() -> str:
        calls.append(clock[0])
        if clock[0] < 3.0:
            raise StorageError("Redis at redis://host/0 is unreachable (next try in 1.0s)")
        return "report"

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    with caplog.at_level(logging.WARNING):
        assert call_patiently(report, 30, "the report", sleep=sleep, clock=lambda: clock[0]) == "report"
    assert 3.0 <= clock[0] <= 3.3
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and "waiting up to 30 s" in messages[0] and "answers again" in messages[1]
    clock[0] = 0.0
    with pytest.raises(StorageError):  # a store that stays down: given up after the patience
        call_patiently(report, 2, "the report", sleep=sleep, clock=lambda: clock[0])
    assert 2.0 <= clock[0] <= 2.3
