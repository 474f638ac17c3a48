"""The Scrapy glue under faults (components with get_crawler): nothing is lost, hangs or goes silent."""

from __future__ import annotations

import logging
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import ensure_reactor
from e2e_server import article

from neardup_scrapy import (
    DuplicateItem,
    DuplicatePage,
    NeardupExtension,
    NeardupPipeline,
    NeardupStorageError,
)
from neardup_scrapy.core import NearDupDetector, Verdict
from neardup_scrapy.core.storage.sqlite import SQLiteStorage
from neardup_scrapy.worker import DetectorWorker, WorkerCallError, WorkerError
from tests.components.test_scrapy_components import Env, html_response, page, tagged
from tests.core.storage.test_storage_support import have_redis_server, private_redis


def warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage()]


def worker_init(storage: str, prefix: str = "x") -> dict[str, Any]:
    return {
        "params": NearDupDetector().params,
        "storage": storage,
        "path": None,
        "redis_url": None,
        "prefix": prefix,
        "keep_excerpts": 0,
    }


# -- report deadline -----------------------------------------------------------------------------
@pytest.mark.timeout(60)
@pytest.mark.parametrize("use_reactor", [True, False])
def test_worker_call_deadline_is_honoured(use_reactor: bool) -> None:
    ensure_reactor()
    worker = DetectorWorker(worker_init("e2e_spiders.HangingReportStorage"), use_reactor=use_reactor)
    try:
        started = time.monotonic()
        with pytest.raises(WorkerError, match="did not answer 'report' within 1"):
            worker.call_sync("report", {}, 1.0)
        assert time.monotonic() - started < 10
        assert worker.dead is not None
        deadline = time.monotonic() + 10
        while worker._proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker._proc.returncode is not None  # the stuck worker was killed
    finally:
        worker.stop()


@pytest.mark.timeout(60)
def test_spider_close_never_hangs_on_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("neardup_scrapy.runtime.REPORT_TIMEOUT", 1.0)
    env = Env(
        NEARDUP_WORKER="process",
        NEARDUP_STORAGE="e2e_spiders.HangingReportStorage",
        NEARDUP_REPORT_FILE=str(tmp_path / "report.json"),
    )
    NeardupExtension.from_crawler(env.crawler)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        env.runtime._spider_closed(env.crawler.spider, "finished")
    assert time.monotonic() - started < 20
    assert warnings(caplog, "cannot build the report") and not (tmp_path / "report.json").exists()


# -- unexpected errors ---------------------------------------------------------------------------
def test_unexpected_error_passes_the_page_as_skipped(caplog: pytest.LogCaptureFixture) -> None:
    env = Env(NEARDUP_STORAGE="e2e_spiders.FailingStorage", NEARDUP_REDIS_PREFIX="bug-after-1")
    try:
        with caplog.at_level(logging.WARNING):
            tags = [tagged(env, f"http://a.test/{i}", i).meta["neardup"] for i in range(3)]
        assert [t["status"] for t in tags] == ["unique", "skipped", "skipped"]
        assert env.stat("neardup/skipped/error") == 2 and env.stat("neardup/pages") == 3
        assert env.stat("neardup/storage_errors") == 0  # a bug is not a store failure
        logged = warnings(caplog, "unexpected error while checking")
        assert len(logged) == 2 and "KeyError" in logged[0]
    finally:
        env.close()


def test_unexpected_error_in_the_worker_is_not_a_store_failure() -> None:
    ensure_reactor()
    worker = DetectorWorker(worker_init("e2e_spiders.FailingStorage", "bug-after-0"))
    try:
        body = page(1)
        with pytest.raises(WorkerCallError, match="KeyError"):
            worker.call_sync("check", ("http://a.test/1", body, None, len(body)), 30)
    finally:
        worker.stop()


def test_pipeline_never_loses_an_item(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = Env(
        NEARDUP_ITEM_FIELDS=["body"],
        NEARDUP_STORAGE="disk",
        NEARDUP_DISK_PATH=str(tmp_path / "index.sqlite"),
    )
    try:
        pipeline = NeardupPipeline.from_crawler(env.crawler)
        body = " ".join(article(3))
        # a lone surrogate is a valid str (json.loads gives one for "\udce9")
        first = pipeline.process_item({"url": "http://a.test/caf\udce9", "body": body})
        second = pipeline.process_item({"url": "http://b.test/x", "body": body})
        assert first["neardup"]["status"] == "unique" and second["neardup"]["status"] == "exact"
        assert second["neardup"]["duplicate_of"] == "http://a.test/caf\udce9"

        def broken(url: str, text: str) -> Any:
            raise RuntimeError("a bug")

        env.runtime.item_detector.check = broken  # type: ignore[method-assign,assignment]
        with caplog.at_level(logging.WARNING):
            third = pipeline.process_item({"url": "http://c.test/y", "body": body})
        assert third["neardup"]["status"] == "skipped"
        assert env.stat("neardup/items/skipped/error") == 1
        assert warnings(caplog, "unexpected error while checking http://c.test/y")
    finally:
        env.close()


# -- no silent degradation -----------------------------------------------------------------------
def test_a_long_outage_is_recalled(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("neardup_scrapy.policy.STILL_FAILING_EVERY", 0.0)
    env = Env(NEARDUP_STORAGE="e2e_spiders.FailingStorage", NEARDUP_REDIS_PREFIX="fail-after-0")
    try:
        with caplog.at_level(logging.WARNING):
            for i in range(3):
                tagged(env, f"http://a.test/{i}", i)
        recalled = warnings(caplog, "still fails")
        assert len(recalled) == 2 and "3 page(s)" in recalled[-1]
    finally:
        env.close()


def test_damaged_disk_index_stops_start_up(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    det = NearDupDetector(storage=SQLiteStorage(path))
    for i in range(300):
        det.check(f"http://a.test/{i}", text=" ".join(article(i, 120)))
    det.close()
    with path.open("r+b") as fh:
        fh.seek(path.stat().st_size // 2)
        fh.write(random.Random(2).randbytes(8192))
    with pytest.raises(NeardupStorageError, match="is damaged"):
        Env(NEARDUP_STORAGE="disk", NEARDUP_DISK_PATH=str(path))
    assert os.path.exists(path)


@pytest.mark.skipif(not have_redis_server(), reason="redis-server binary not installed")
def test_redis_restarted_without_persistence(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with private_redis(tmp_path) as server:
        env = Env(NEARDUP_STORAGE="redis", NEARDUP_REDIS_URL=server.url, NEARDUP_REDIS_PREFIX="crawl")
        try:
            with caplog.at_level(logging.WARNING):
                before = [tagged(env, f"http://a.test/{i}", i).meta["neardup"]["status"] for i in range(3)]
                server.kill()
                down = tagged(env, "http://a.test/3", 3).meta["neardup"]["status"]  # retried, then passed
                server.start()  # empty: no persistence
                time.sleep(5.2)  # the store's cooldown after a failed page
                after = tagged(env, "http://a.test/4", 4).meta["neardup"]["status"]
                copy = tagged(env, "http://b.test/4", 4).meta["neardup"]
            assert before == ["unique"] * 3 and down == "skipped" and after == "unique"
            assert copy["status"] == "exact" and copy["duplicate_of"] == "http://a.test/4"
            assert warnings(caplog, "checking is off") and warnings(caplog, "vanished")
            resumed = warnings(caplog, "store answers again")
            assert len(resumed) == 1 and "after 1 page(s)" in resumed[0]
        finally:
            env.close()


# -- credentials ---------------------------------------------------------------------------------
def test_logs_never_print_passwords(caplog: pytest.LogCaptureFixture) -> None:
    env = Env(NEARDUP_DEBUG=True)
    try:
        with caplog.at_level(logging.DEBUG):
            env.fetch(html_response("https://alice:s3cret@a.test/1", page(1)))
            env.fetch(html_response("https://bob:hunter2@b.test/1", page(1)))
            env.runtime.unexpected("https://carol:pa55@c.test/", RuntimeError("x"))
        text = "\n".join(r.getMessage() for r in caplog.records)
        assert "alice:***@a.test" in text
        assert "s3cret" not in text and "hunter2" not in text and "pa55" not in text
        # the messages of dropped pages and items (errbacks, Scrapy's "Dropped:" line) too
        verdict = Verdict(
            url="https://bob:hunter2@b.test/1",
            host="b.test",
            status="exact",
            duplicate_of="https://alice:s3cret@a.test/1",
        )
        for exc in (DuplicatePage(verdict), DuplicateItem(verdict)):
            assert "s3cret" not in str(exc) and "hunter2" not in str(exc) and "***" in str(exc)
    finally:
        env.close()


# -- both modes read a page alike ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (page(1).encode("utf-16-le"), "text/html; charset=utf-16-le"),  # no byte-order mark
        (page(2).replace("harbour", "har\x00bour").encode(), "text/html; charset=utf-8"),
        (("<div>" * 3000 + "deep text" + "</div>" * 3000).encode(), "text/html"),
        (b"", "text/html"),
        (b"\xff\xfe\x00garbage\x80", "text/html; charset=x-unknown"),
    ],
)
def test_worker_tree_is_scrapys_tree(body: bytes, content_type: str) -> None:
    from lxml import etree

    from neardup_scrapy.pages import html_tree, response_text, selector_tree

    response = html_response("http://a.test/1", body, headers={"Content-Type": content_type})
    scrapy_tree = selector_tree(response)  # what the inline mode reads
    worker_tree = html_tree(response_text(response))  # what the worker builds from the text it gets
    assert etree.tostring(worker_tree) == etree.tostring(scrapy_tree)


@pytest.mark.parametrize("where", ["reading the text", "the checker", "the checker's deferred", "counting"])
def test_a_failure_anywhere_on_a_page_s_path_passes_it_as_skipped(
    where: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Whichever step fails -- the middleware reading the response, the checking strategy at once
    or later (a Deferred that fails), the runtime counting the outcome -- the page is never lost:
    it passes tagged ``skipped`` (reason ``error``), counted once, with a WARNING."""
    from twisted.internet import defer

    import neardup_scrapy.middlewares as middlewares

    env = Env()
    try:

        def bug(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"a bug in {where}")

        if where == "reading the text":
            monkeypatch.setattr(middlewares, "response_text", bug)
        elif where == "the checker":
            monkeypatch.setattr(env.runtime.checker, "check_html", bug)
        else:
            checked = env.runtime.checker.check_html

            def later(*args: Any) -> Any:  # the outcome arrives through a Deferred
                outcome = checked(*args)
                return (
                    defer.fail(RuntimeError("a bug"))
                    if where == "the checker's deferred"
                    else defer.succeed(outcome)
                )

            monkeypatch.setattr(env.runtime.checker, "check_html", later)
            if where == "counting":
                monkeypatch.setattr(env.runtime.tally, "count", bug)
        with caplog.at_level(logging.WARNING):
            if where in ("reading the text", "the checker"):
                tag = tagged(env, "http://a.test/1", 1).meta["neardup"]
            else:
                body = page(1)
                result = env.runtime.check_page("http://a.test/1", body, len(body), None)
                assert isinstance(result, defer.Deferred)
                fired: list[Verdict] = []
                result.addCallback(fired.append)
                assert len(fired) == 1  # fired, not failed
                tag = fired[0].to_dict()
        assert tag["status"] == "skipped"
        if where != "counting":  # counting itself failed: nothing could be counted
            assert env.stat("neardup/skipped/error") == 1
            assert warnings(caplog, "unexpected error while checking")
    finally:
        env.close()
