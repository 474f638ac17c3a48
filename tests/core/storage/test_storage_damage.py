"""Damaged records of a disk index that pass SQLite's integrity check, and ``check-index``.

SQLite does not enforce a column's declared type or a blob's size, and a deleted row leaves
a sound file: damage of that kind passes the check at open. The store must then fail the check
that meets a damaged record with a storage error (``NEARDUP_ON_STORAGE_ERROR`` decides), the
report must still be built, the open must warn, and ``neardup-scrapy check-index`` must find every
such damage -- and none in a sound index, whatever its parameters and history.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import run_crawl
from e2e_server import serve

from neardup_scrapy.cli import EXIT_ERROR, EXIT_MALFORMED, EXIT_OK
from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.storage.base import StorageError
from neardup_scrapy.core.storage.sqlite import SQLiteStorage
from neardup_scrapy.core.storage.sqlite_check import check_index
from neardup_scrapy.report.schema import validate_report
from tests.cli.test_cli_helpers import run_cli
from tests.core.storage.test_storage_support import corpus
from tests.e2e.test_redis_crawl import article_site

#: 40 originals on 127.0.0.1, each with a near copy and an exact copy on other hosts.
PAGES = corpus(40, 2, seed=11, exact_every=2)
ORIGINALS = [(url, text) for url, text, _ in PAGES if "/doc/" in url]
COPIES = [(url, text) for url, text, _ in PAGES if "/copy/" in url]
SIGNATURE = DetectorParams().index_signature()

#: Damage to one column of a page record, of every kind SQLite lets through: text or a number
#: in a number or blob column, a blob cut or grown, emptied.
RECORD_DAMAGE = {
    "signature cut": "signature = substr(signature, 1, 60)",
    "signature grown": "signature = signature || x'00'",
    "signature as text": "signature = 'abc'",
    "digest emptied": "digest = x''",
    "digest cut": "digest = substr(digest, 1, 8)",
    "digest as a number": "digest = 7",
    "simhash as text": "simhash = 'x'",
    "simhash as a real": "simhash = 1.5",
    "status as text": "status = 'near'",
    "status out of range": "status = 9",
    "time added as text": "added = 'yesterday'",
    "host as text": "host = 'example.com'",
    "profile as a number": "profile = 3",
    "url emptied": "url = ''",
}


def _index(tmp_path: Path, **params: Any) -> Path:
    path = tmp_path / "index.sqlite"
    det = NearDupDetector(storage=SQLiteStorage(path), **params)
    for url, text in ORIGINALS:
        assert det.check(url, text=text).status == "unique"
    det.close()
    return path


def _damage(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    with db:
        for statement in statements:
            db.execute(statement)
    db.close()
    assert _query(path, "PRAGMA quick_check") == "ok"  # the damage passes the check at open


def _query(path: Path, sql: str) -> Any:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize("damage", sorted(RECORD_DAMAGE))
def test_damaged_record_fails_the_check_that_meets_it_with_a_storage_error(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = _index(tmp_path)
    _damage(path, f"UPDATE docs SET {RECORD_DAMAGE[damage]} WHERE id % 4 = 1")
    with caplog.at_level(logging.WARNING):
        det = NearDupDetector(storage=SQLiteStorage(path))
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("10 page record(s)" in m and "check-index" in m for m in warned), warned
    outcomes = []
    for k, (url, text) in enumerate(COPIES):
        original = k // 2
        try:
            verdict = det.check(url, text=text)
        except StorageError as exc:  # the storage error the crawl's setting governs
            assert f"the record of page {original} " in str(exc) and "check-index" in str(exc)
            outcomes.append("error")
            continue
        assert original % 4 != 1, f"page {original} is damaged, yet {url} was {verdict.status}"
        outcomes.append(verdict.status)
    assert outcomes.count("error") >= 10  # each copy of a damaged page met it
    validate_report(det.report())  # the report is still built
    det.close()
    found = check_index(path)
    assert found.damaged
    (records,) = [f for f in found.findings if f.what.startswith("page records damaged")]
    assert records.count == 10 and records.examples == [1, 5, 9, 13, 17, 21, 25, 29, 33, 37]


@pytest.mark.parametrize("column", ["similarity", "hamming", "parent"])
@pytest.mark.parametrize("value", ["'text'", "-5", "1e300"])
def test_damaged_report_values_leave_the_report_whole(tmp_path: Path, column: str, value: str) -> None:
    path = tmp_path / "index.sqlite"
    det = NearDupDetector(storage=SQLiteStorage(path))
    for url, text, _ in PAGES:
        det.check(url, text=text)
    det.close()
    _damage(path, f"UPDATE docs SET {column} = {value} WHERE id % 3 = 1")
    det = NearDupDetector(storage=SQLiteStorage(path))
    report = det.report()
    validate_report(report)
    assert report["totals"]["pages"] == len(PAGES)
    det.close()
    assert check_index(path).damaged


#: Bucket entries deleted, family by family: every key a page is committed with counts.
BUCKET_DAMAGE = {
    "every entry of most pages": "DELETE FROM buckets WHERE doc % 40 != 0",
    "every entry of one page": "DELETE FROM buckets WHERE doc = 7",
    "one entry of one page": "DELETE FROM buckets WHERE doc = 7 AND key = "
    "(SELECT max(key) FROM buckets WHERE doc = 7)",
    "one entry in a hundred": "DELETE FROM buckets WHERE (key + doc) % 100 = 0",
    "entries of pages that do not exist": "INSERT INTO buckets VALUES (12345, 999)",
}


@pytest.mark.parametrize("damage", sorted(BUCKET_DAMAGE))
def test_check_index_finds_missing_bucket_entries(tmp_path: Path, damage: str) -> None:
    path = _index(tmp_path)
    before = _query(path, "SELECT count(*) FROM buckets")
    _damage(path, BUCKET_DAMAGE[damage])
    after = _query(path, "SELECT count(*) FROM buckets")
    assert after != before
    result = run_cli("check-index", str(path))
    out = result.stdout.decode()
    assert result.returncode == EXIT_MALFORMED, out + result.stderr.decode()
    assert "the index is damaged" in out
    if damage == "entries of pages that do not exist":
        assert "bucket entries of pages that do not exist (e.g. 999)" in out
    else:
        assert "pages missing bucket entries" in out and "comes back unique" in out
    if damage == "every entry of most pages":  # what the damage does, that the check foretold
        det = NearDupDetector(storage=SQLiteStorage(path))
        statuses = [det.check(url, text=text).status for url, text in COPIES]
        assert statuses[0::2].count("unique") == 39  # the first copy of each damaged page
        det.close()


@pytest.mark.parametrize(
    "history",
    ["default", "scope host", "minhash then simhash", "items", "ttl pruned", "resumed", "cycle broken"],
)
def test_check_index_finds_no_damage_in_a_sound_index(tmp_path: Path, history: str) -> None:
    """No false alarm, whatever the parameters and history of a sound index."""
    path = tmp_path / "index.sqlite"
    params: dict[str, Any] = {"scope": "host"} if history == "scope host" else {}
    runs: list[dict[str, Any]] = [{"algorithm": "minhash"}, {"algorithm": "simhash"}]
    if history != "minhash then simhash":
        runs = [{}, {}] if history == "resumed" else [{}]
    for k, run in enumerate(runs):
        store = SQLiteStorage(path, ttl=1.0 if history == "ttl pruned" and k else None)
        det = NearDupDetector(storage=store, **params, **run, url_identity=history != "items")
        for url, text, _ in PAGES[k::2] if len(runs) > 1 else PAGES:
            det.check(url, text=text)
        det.close()
    if history == "ttl pruned":
        db = sqlite3.connect(path)
        with db:
            db.execute("UPDATE docs SET added = added - 3600 WHERE id < 20")
        db.close()
        pruning = SQLiteStorage(path, ttl=60.0)
        pruning.open(SIGNATURE)  # prunes at open
        pruning.close()
    if history == "cycle broken":
        _damage(path, "UPDATE docs SET parent = 2 WHERE id = 1", "UPDATE docs SET parent = 1 WHERE id = 2")
    result = check_index(path)
    if history == "cycle broken":
        assert [f.what for f in result.findings if f.count] == ["cycles of cluster parents"]
        return
    assert not result.damaged, [(f.what, f.count, f.examples) for f in result.findings]
    assert result.pages == _query(path, "SELECT count(*) FROM docs")
    if history == "ttl pruned":
        assert result.expired == 20


def test_check_index_command_line(tmp_path: Path) -> None:
    path = _index(tmp_path)
    sound = run_cli("check-index", str(path))
    assert sound.returncode == EXIT_OK and "no damage found" in sound.stdout.decode()
    assert run_cli("check-index", str(path), "-q").stdout == b""
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    (jobdir / "neardup.sqlite").write_bytes(path.read_bytes())
    assert run_cli("check-index", str(jobdir)).returncode == EXIT_OK  # a JOBDIR
    missing = run_cli("check-index", str(tmp_path / "none.sqlite"))
    assert missing.returncode == EXIT_ERROR and "no such file" in missing.stderr.decode()
    (tmp_path / "text.sqlite").write_text("not a database")
    assert run_cli("check-index", str(tmp_path / "text.sqlite")).returncode == EXIT_ERROR
    store = SQLiteStorage(path)
    store.open(SIGNATURE)  # a crawl holds it
    busy = run_cli("check-index", str(path))
    store.close()
    assert busy.returncode == EXIT_ERROR and "in use by a running crawl" in busy.stderr.decode()
    assert len(busy.stderr.decode().strip().splitlines()) == 1


@pytest.mark.e2e
def test_crawl_on_a_damaged_jobdir_index_stops_with_the_storage_error(tmp_path: Path) -> None:
    """``NEARDUP_ON_STORAGE_ERROR = "stop"`` fires on a damaged record: a storage error, not a crash."""
    site = article_site(groups=8)
    jobdir = tmp_path / "job"
    settings = {"JOBDIR": str(jobdir), "LOG_LEVEL": "INFO", "CONCURRENT_REQUESTS": 1}
    with serve({"127.0.0.1": site}) as urls:
        first = run_crawl("LinkSpider", settings, start=urls["127.0.0.1"] + "/")
        assert first.returncode == 0, first.log[-3000:]
        index = jobdir / "neardup.sqlite"
        _damage(index, "UPDATE docs SET signature = substr(signature, 1, 10)")
        (jobdir / "requests.seen").unlink()  # crawl the same pages again: each meets its damaged record
        second = run_crawl(
            "LinkSpider",
            {**settings, "NEARDUP_ON_STORAGE_ERROR": "stop"},
            start=urls["127.0.0.1"] + "/",
        )
    assert "Traceback" not in second.log, second.log[-3000:]
    assert second.stat("_finish_reason_") == "neardup_storage_error", second.log[-3000:]
    assert "is damaged (signature of 10 bytes" in second.log
    assert "check-index" in second.log
    out = run_cli("check-index", str(jobdir))
    assert out.returncode == EXIT_MALFORMED
