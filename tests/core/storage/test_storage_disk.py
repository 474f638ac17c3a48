"""Disk store specifics, the store factory and the retry helper."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.storage import open_storage
from neardup_scrapy.core.storage.base import Commit, IndexStorage, StorageError
from neardup_scrapy.core.storage.memory import MemoryStorage
from neardup_scrapy.core.storage.retry import RetryPolicy, call_with_retry
from neardup_scrapy.core.storage.sqlite import SQLiteStorage
from tests.core.storage.test_storage_conformance import SIGNATURE, keys, record
from tests.core.storage.test_storage_support import corpus

ROOT = Path(__file__).resolve().parents[3]


def test_killed_process_leaves_a_readable_index(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(ROOT / "tests")!r})
        from neardup_scrapy.core import NearDupDetector
        from neardup_scrapy.core.storage.sqlite import SQLiteStorage
        from tests.core.storage.test_storage_support import corpus
        det = NearDupDetector(storage=SQLiteStorage({str(path)!r}, batch_size=10, batch_seconds=3600))
        for n, (url, text, _) in enumerate(corpus(30, 1, seed=2)):
            det.check(url, text=text)
            if n == 44:
                print("ready", flush=True)
                time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    # the last full batch (40 pages) survived; the 5 pages of the open batch are lost
    store = SQLiteStorage(path)
    det = NearDupDetector(storage=store)
    assert len(store) == 40
    assert sum(c.pages for c in store.host_counts().values()) == 40
    pages = corpus(30, 1, seed=2)
    # a page indexed before the kill is found again; one of the lost batch is new again
    assert det.check(pages[0][0] + "?again", text=pages[0][1]).status == "exact"
    assert det.check(pages[44][0], text=pages[44][1]).status == "unique"
    det.close()


def test_batch_size_one_commits_every_page(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "i.sqlite", batch_size=1)
    store.open(SIGNATURE)
    store.commit(
        Commit(record=record("http://127.0.0.1/a", seed=1), keys=keys(1), token=None, host="127.0.0.1")
    )
    other = sqlite3.connect(tmp_path / "i.sqlite")
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # one writer: the file is ours
        other.execute("SELECT count(*) FROM docs").fetchone()
    other.close()
    store.close()
    with sqlite3.connect(tmp_path / "i.sqlite") as db:
        assert db.execute("SELECT count(*) FROM docs").fetchone() == (1,)


def test_second_process_on_one_file_is_refused(tmp_path: Path) -> None:
    first = SQLiteStorage(tmp_path / "i.sqlite")
    first.open(SIGNATURE)
    first.commit(
        Commit(record=record("http://127.0.0.1/a", seed=1), keys=keys(1), token=None, host="127.0.0.1")
    )
    with pytest.raises(StorageError, match="in use by another process"):
        SQLiteStorage(tmp_path / "i.sqlite").open(SIGNATURE)
    first.close()


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError, match="cannot open the neardup index"):
        SQLiteStorage(path).open(SIGNATURE)


def test_disk_ttl_ignores_then_prunes_old_pages(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "i.sqlite", ttl=60)
    store.open(SIGNATURE)
    old = time.time() - 120
    for i in range(3):
        store.commit(
            Commit(
                record=record(f"http://127.0.0.1/{i}", seed=i, added=old),
                keys=keys(1),
                token=None,
                host="127.0.0.1",
            )
        )
    store.commit(
        Commit(record=record("http://127.0.0.1/new", seed=9), keys=keys(1), token=None, host="127.0.0.1")
    )
    store._frontier_checked = 0.0
    assert store.lookup(keys(1))[0].tolist() == [3]
    store.close()
    again = SQLiteStorage(tmp_path / "i.sqlite", ttl=60)
    again.open(SIGNATURE)
    assert again.lookup(keys(1))[0].tolist() == [3]
    assert len(again) == 4  # records stay for the report; their buckets and signatures are gone
    again.close()
    db = sqlite3.connect(tmp_path / "i.sqlite")
    assert db.execute("SELECT count(*) FROM buckets").fetchone() == (1,)
    assert db.execute("SELECT count(*) FROM docs WHERE signature IS NULL").fetchone() == (3,)
    db.close()


def test_disk_footprint_is_compact(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "i.sqlite")
    det = NearDupDetector(storage=store)
    pages = corpus(300, 1, seed=8, length=200)
    for url, text, _ in pages:
        det.check(url, text=text)
    det.close()
    per_page = os.path.getsize(tmp_path / "i.sqlite") / len(pages)
    assert per_page < 1500, per_page


# -- factory -------------------------------------------------------------------------------------


class CustomStore(MemoryStorage):
    """A user's store: built by import path with the factory's keyword arguments."""

    def __init__(self, *, path: str | None, redis_url: str | None, prefix: str, ttl: float | None) -> None:
        super().__init__(ttl=ttl)
        self.args = (path, redis_url, prefix)


class NotAStore:
    def __init__(self, **_: Any) -> None:
        pass


class PlainStore(IndexStorage):
    """A custom store that subclasses the protocol and implements only what the docs require
    (here by handing each call to a memory store): it inherits the plain optional calls."""

    def __init__(self) -> None:
        self.inner = MemoryStorage()


for _name in (
    "open", "close", "lookup", "fetch", "commit", "promote", "promote_origins", "__len__",
    "host_counts", "mirror_evidence", "clusters", "memory_bytes", "save_url_rules", "url_rules",
):  # fmt: skip
    setattr(PlainStore, _name, lambda self, *a, _n=_name, **k: getattr(self.inner, _n)(*a, **k))


def test_a_custom_store_inherits_the_plain_calls() -> None:
    det = NearDupDetector(storage=PlainStore())
    text = " ".join(f"word{i} other{i % 7}" for i in range(200))
    assert det.check("https://a.example/1", text=text).status == "unique"
    assert det.check("https://b.example/1", text=text).status == "exact"
    assert len(det.storage) == 2
    det.storage.flush()
    det.close()


def test_open_storage_kinds(tmp_path: Path) -> None:
    assert isinstance(open_storage("memory"), MemoryStorage)
    disk = open_storage("disk", path=str(tmp_path / "x.sqlite"), ttl=5)
    assert isinstance(disk, SQLiteStorage) and disk.ttl == 5
    custom = open_storage("tests.core.storage.test_storage_disk.CustomStore", path="p", prefix="q")
    assert isinstance(custom, CustomStore) and custom.args == ("p", None, "q")
    assert isinstance(custom, IndexStorage)
    with pytest.raises(StorageError, match="unknown storage"):
        open_storage("mongo")
    with pytest.raises(StorageError, match="cannot import"):
        open_storage("nowhere.Store")
    with pytest.raises(StorageError, match="does not implement"):
        open_storage("tests.core.storage.test_storage_disk.NotAStore")


def test_open_storage_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    from neardup_scrapy.core.storage.redis_store import RedisStorage

    store = open_storage("redis", redis_url="redis://127.0.0.1:1/0", prefix="p", ttl=3)
    assert isinstance(store, RedisStorage) and store.prefix == "p" and store.ttl == 3
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(StorageError, match=r'pip install "redis\[hiredis\]>=5.0"'):
        open_storage("redis")


def test_detector_accepts_a_kind_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    det = NearDupDetector(storage="disk")
    assert isinstance(det.storage, SQLiteStorage)
    det.close()
    assert (tmp_path / "neardup-index.sqlite").exists()


# -- retry ---------------------------------------------------------------------------------------


def test_retry_backoff_then_storage_error() -> None:
    sleeps: list[float] = []
    calls = []

    def failing() -> int:
        calls.append(1)
        raise ConnectionError("down")

    policy = RetryPolicy(attempts=4, base_delay=0.25, max_delay=0.6)
    with pytest.raises(StorageError, match=r"thing failed after 4 attempt\(s\): down"):
        call_with_retry(failing, policy, (ConnectionError,), "thing", sleep=sleeps.append)
    assert len(calls) == 4 and sleeps == [0.25, 0.5, 0.6] and sum(policy.delays()) == pytest.approx(1.35)


def test_retry_recovers_and_other_errors_pass() -> None:
    state = {"n": 0}

    def flaky() -> str:
        state["n"] += 1
        if state["n"] < 3:
            raise TimeoutError
        return "ok"

    assert call_with_retry(flaky, RetryPolicy(), (TimeoutError,), "x", sleep=lambda _: None) == "ok"
    with pytest.raises(KeyError):
        call_with_retry(lambda: {}["k"], RetryPolicy(), (TimeoutError,), "x", sleep=lambda _: None)
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


def test_signatures_roundtrip_exactly(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "i.sqlite")
    store.open(SIGNATURE)
    rec = record("http://127.0.0.1/a", seed=3)
    rec = type(rec)(**{**vars(rec), "simhash": 2**64 - 1})
    store.commit(Commit(record=rec, keys=keys(2**64 - 1), token=None, host="127.0.0.1"))
    batch = store.fetch(np.array([0], dtype=np.int64))
    assert int(batch.simhashes[0]) == 2**64 - 1
    assert store.lookup(keys(2**64 - 1))[0].tolist() == [0]
    store.close()
