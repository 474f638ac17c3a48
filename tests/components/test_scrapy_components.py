"""The Scrapy components on their own (scrapy.utils.test.get_crawler, no network, inline worker)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import ensure_reactor
from e2e_crawl import make_crawler as get_crawler
from e2e_server import article, html_page
from e2e_spiders import PageAttrs, PageData, PageItem, PageItemWithoutTag
from scrapy import Request, Spider
from scrapy.exceptions import DropItem, IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse

from neardup_scrapy import (
    DuplicateItem,
    DuplicatePage,
    NeardupDownloaderMiddleware,
    NeardupExtension,
    NeardupPipeline,
    NeardupSpiderMiddleware,
    NeardupStorageError,
)
from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.report.schema import validate_report
from neardup_scrapy.runtime import NeardupRuntime
from neardup_scrapy.signals import duplicate_found
from neardup_scrapy.worker import DetectorWorker, WorkerCallError, WorkerError

TAG_KEYS = {"status", "duplicate_of", "similarity", "hamming", "cluster", "mirror_of"}


class DemoSpider(Spider):
    name = "demo"


class Env:
    """A crawler with the neardup components built from it."""

    def __init__(self, **settings: Any) -> None:
        settings.setdefault("NEARDUP_WORKER", "inline")
        self.crawler = get_crawler(DemoSpider, settings)
        self.crawler.spider = DemoSpider()
        self.downloader = NeardupDownloaderMiddleware.from_crawler(self.crawler)
        self.spider_mw = NeardupSpiderMiddleware.from_crawler(self.crawler)
        self.runtime = NeardupRuntime.of(self.crawler)
        self.signals: list[dict[str, Any]] = []
        self.crawler.signals.connect(self._on_duplicate, signal=duplicate_found)

    def _on_duplicate(self, verdict: Any, response: Any, item: Any) -> None:
        self.signals.append({"verdict": verdict, "response": response, "item": item})

    def stat(self, key: str) -> Any:
        return self.crawler.stats.get_value(key, 0)

    def fetch(self, response: Response) -> Response:
        request = response.request
        assert request is not None
        self.downloader.process_request(request)
        result = self.downloader.process_response(request, response)
        assert isinstance(result, Response)
        return result

    def close(self) -> None:
        self.runtime.close()


@pytest.fixture
def env() -> Iterator[Env]:
    environment = Env()
    yield environment
    environment.close()


def html_response(url: str, body: bytes | str, **kwargs: Any) -> HtmlResponse:
    headers = kwargs.pop("headers", {"Content-Type": "text/html; charset=utf-8"})
    data = body.encode("utf-8") if isinstance(body, str) else body
    return HtmlResponse(url, body=data, headers=headers, request=Request(url), **kwargs)


def page(seed: int, title: str = "Article") -> str:
    return html_page(title, article(seed), ["/a", "/b"])


# -- downloader middleware -----------------------------------------------------------------------
def test_tags_pages_and_flags_duplicates(env: Env) -> None:
    first = env.fetch(html_response("http://a.test/1", page(1)))
    other = env.fetch(html_response("http://a.test/2", page(2)))
    copy = env.fetch(html_response("http://b.test/1", page(1)))
    assert set(first.meta["neardup"]) == TAG_KEYS
    assert first.meta["neardup"]["status"] == "unique" and other.meta["neardup"]["status"] == "unique"
    assert copy.meta["neardup"]["status"] == "exact"
    assert copy.meta["neardup"]["duplicate_of"] == "http://a.test/1"
    assert "neardup:exact" in copy.flags and not first.flags
    assert [s["verdict"].url for s in env.signals] == ["http://b.test/1"]
    assert env.signals[0]["response"] is copy and env.signals[0]["item"] is None
    assert (
        env.stat("neardup/pages") == 3 and env.stat("neardup/unique") == 2 and env.stat("neardup/exact") == 1
    )


def test_reuses_the_selector_tree(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    response = html_response("http://a.test/1", page(1))
    seen: list[Any] = []
    detector = env.runtime.detector
    assert detector is not None
    original = detector.check

    def spy(url: str, html: Any = None, **kwargs: Any) -> Any:
        seen.append((html, kwargs.get("tree")))
        return original(url, html, **kwargs)

    monkeypatch.setattr(detector, "check", spy)
    env.fetch(response)
    # the decoded body only keys the repeat cache; the text comes from Scrapy's tree
    assert seen == [(response.text, response.selector.root)]


def test_utf8_under_a_legacy_label_is_read_as_utf8(env: Env) -> None:
    """A UTF-8 body labelled iso-8859-1 is the page its UTF-8 twin is (and what ``scan`` reads)."""
    words = "Die Straßenbahn fährt über die Brücke, {} Gebühren für jede Fahrt"
    body = html_page("Gebühren", [words.format(i) for i in range(30)])
    first = env.fetch(html_response("http://a.test/1", body))
    labelled = html_response(
        "http://b.test/1", body.encode(), headers={"Content-Type": "text/html; charset=iso-8859-1"}
    )
    assert "Ã¼" in labelled.text  # what Scrapy decodes for the spider
    second = env.fetch(labelled)
    assert first.meta["neardup"]["status"] == "unique"
    assert second.meta["neardup"]["status"] == "exact"


def test_near_duplicate_with_edits(env: Env) -> None:
    text = article(5, 400)
    edited = [*text[:-1], "A completely new closing paragraph about something else entirely."]
    env.fetch(html_response("http://a.test/x", html_page("X", text)))
    near = env.fetch(html_response("http://a.test/x?sid=42", html_page("X", edited)))
    tag = near.meta["neardup"]
    assert tag["status"] == "near" and tag["duplicate_of"] == "http://a.test/x"
    assert 0.8 <= tag["similarity"] < 1.0 and tag["cluster"] == "http://a.test/x"


@pytest.mark.parametrize(
    "response",
    [
        Response("http://a.test/logo.png", body=b"\x89PNG\r\n", headers={"Content-Type": "image/png"}),
        TextResponse(
            "http://a.test/robots.txt", body=b"User-agent: *", headers={"Content-Type": "text/plain"}
        ),
    ],
    ids=["binary", "text"],
)
def test_non_html_passes_untouched(env: Env, response: Response) -> None:
    response.request = Request(response.url)
    result = env.fetch(response)
    assert result is response and "neardup" not in response.meta and not response.flags
    # not a page: counted on its own, not in the pages, the index or the report
    assert env.stat("neardup/untouched/non_html") == 1 and env.stat("neardup/pages") == 0


def test_error_status_passes_untouched(env: Env) -> None:
    response = html_response("http://a.test/missing", page(1), status=404)
    assert env.fetch(response) is response and "neardup" not in response.meta
    assert env.stat("neardup/untouched/http_error") == 1 and env.stat("neardup/pages") == 0


def test_dont_neardup(env: Env) -> None:
    env.fetch(html_response("http://a.test/1", page(1)))
    response = html_response("http://a.test/copy", page(1))
    assert response.request is not None
    response.request.meta["dont_neardup"] = True
    assert env.fetch(response) is response and "neardup" not in response.meta
    assert env.stat("neardup/untouched/dont_neardup") == 1 and env.stat("neardup/exact") == 0


def test_stale_tag_copied_from_another_response_is_removed(env: Env) -> None:
    request = Request("http://a.test/img.png", meta={"neardup": {"status": "near"}})
    env.downloader.process_request(request)
    assert "neardup" not in request.meta


BAD_BODIES = {
    "binary-as-html": (bytes(range(256)) * 400, {"Content-Type": "text/html"}),
    "empty": (b"", {"Content-Type": "text/html; charset=utf-8"}),
    "nul-bytes": (b"<html>\x00\x00<p>\x00</p>" * 100, {"Content-Type": "text/html"}),
    "wrong-charset": (
        ("<html><body><article><p>" + "Größe Übermaß café " * 200 + "</p></article></body></html>").encode(
            "latin-1"
        ),
        {"Content-Type": "text/html; charset=utf-8"},
    ),
    "unknown-charset": (page(3).encode("utf-8"), {"Content-Type": "text/html; charset=x-no-such-charset"}),
    "missing-charset": (page(4).encode("cp1252"), {"Content-Type": "text/html"}),
    "utf16-declared": (page(5).encode("utf-16"), {"Content-Type": "text/html; charset=utf-16"}),
    "only-whitespace": (b"   \n\t  ", {"Content-Type": "text/html"}),
    "broken-markup": (b"<html><body><div><p>unclosed <b>tags <<<>>> &bogus; </td></tr>" * 50, {}),
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
@pytest.mark.parametrize("drop", [False, True])
def test_bad_responses_never_raise(name: str, drop: bool) -> None:
    env = Env(NEARDUP_ACTION="drop" if drop else "tag")
    try:
        body, headers = BAD_BODIES[name]
        response = html_response(
            f"http://a.test/{name}", body, headers=headers or {"Content-Type": "text/html"}
        )
        result = env.fetch(response)
        assert result is response
        assert response.meta["neardup"]["status"] in ("unique", "skipped")
        assert env.stat("neardup/pages") == 1
        assert env.stat("neardup/skipped/error") == 0
    finally:
        env.close()


def test_huge_page_is_skipped() -> None:
    body = html_page("Huge", article(9, 200) * 16000)
    assert len(body) > 20_000_000
    env = Env()
    try:
        response = env.fetch(html_response("http://a.test/huge", body))
        assert response.meta["neardup"]["status"] == "skipped"
        assert env.stat("neardup/skipped/too_large") == 1
    finally:
        env.close()
    # NEARDUP_MAX_BODY_BYTES = 0 (no limit): see tests/e2e/test_scrapy_e2e.py::test_bad_responses


def test_drop_mode_raises_duplicate_page() -> None:
    env = Env(NEARDUP_ACTION="drop")
    try:
        env.fetch(html_response("http://a.test/1", page(1)))
        with pytest.raises(DuplicatePage) as info:
            env.fetch(html_response("http://a.test/1?session=9", page(1)))
        assert isinstance(info.value, IgnoreRequest)
        assert info.value.verdict.status == "exact"
        assert env.stat("neardup/dropped") == 1 and env.stat("neardup/dropped/page") == 1
        assert len(env.signals) == 1
    finally:
        env.close()


def confirm_mirror(env: Env) -> None:
    """b.test copies ten of a.test's fifteen pages: it becomes its mirror, its direction settled
    (default margin 5: b.test copies most of what it has with 5 documents to spare, and a.test
    has 5 more documents of its own)."""
    for seed in range(15):
        env.fetch(html_response(f"http://a.test/{seed}", page(seed)))
    for seed in range(10):
        response = env.fetch(html_response(f"http://b.test/{seed}", page(seed)))
    assert response.meta["neardup"]["mirror_of"] == "a.test"
    assert env.stat("neardup/mirror_hosts") == 1


def test_requests_to_mirrors_are_skipped_by_the_downloader() -> None:
    env = Env(NEARDUP_SKIP_MIRRORS=True)
    try:
        confirm_mirror(env)
        with pytest.raises(IgnoreRequest):
            env.downloader.process_request(Request("http://b.test/new"))
        env.downloader.process_request(Request("http://b.test/new", meta={"dont_neardup": True}))
        env.downloader.process_request(Request("http://a.test/new"))
        assert env.stat("neardup/mirror_requests_skipped") == 1
    finally:
        env.close()


def test_mirrors_are_not_skipped_by_default(env: Env) -> None:
    confirm_mirror(env)
    env.downloader.process_request(Request("http://b.test/new"))


# -- spider middleware ---------------------------------------------------------------------------
def tagged(env: Env, url: str, seed: int) -> Response:
    return env.fetch(html_response(url, page(seed)))


@pytest.mark.parametrize("kind", ["dict", "item", "dataclass", "attrs"])
def test_items_get_the_tag(env: Env, kind: str) -> None:
    response = tagged(env, "http://a.test/1", 1)
    make = {"dict": dict, "item": PageItem, "dataclass": PageData, "attrs": PageAttrs}[kind]
    items = [make(url=response.url, title="t"), make(url=response.url, title="u")]
    out = list(env.spider_mw.process_spider_output(response, items))
    assert out == items
    for item in out:
        tag = item["neardup"] if isinstance(item, (dict, PageItem)) else item.neardup
        assert tag == response.meta["neardup"]
    first = out[0]["neardup"] if isinstance(out[0], (dict, PageItem)) else out[0].neardup
    second = out[1]["neardup"] if isinstance(out[1], (dict, PageItem)) else out[1].neardup
    assert first is not second  # each item has its own copy
    assert env.stat("neardup/items/tagged") == 2


def test_item_without_the_field_is_kept_and_explained(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    response = tagged(env, "http://a.test/1", 1)
    items = [PageItemWithoutTag(url="x"), PageItemWithoutTag(url="y")]
    with caplog.at_level(logging.ERROR):
        out = list(env.spider_mw.process_spider_output(response, items))
    assert out == items and "neardup" not in out[0]
    errors = [
        r for r in caplog.records if r.levelno == logging.ERROR and "PageItemWithoutTag" in r.getMessage()
    ]
    assert len(errors) == 1
    assert "scrapy.Field()" in errors[0].getMessage() and "NEARDUP_FIELD" in errors[0].getMessage()
    assert env.stat("neardup/items/field_missing") == 2


def test_custom_field_name() -> None:
    env = Env(NEARDUP_FIELD="dup")
    try:
        response = tagged(env, "http://a.test/1", 1)
        (item,) = env.spider_mw.process_spider_output(response, [{"url": "x"}])
        assert item["dup"]["status"] == "unique" and "neardup" not in item
    finally:
        env.close()


def test_untagged_responses_leave_items_alone(env: Env) -> None:
    response = Response("http://a.test/feed", body=b"{}", request=Request("http://a.test/feed"))
    (item,) = env.spider_mw.process_spider_output(response, [{"url": "x"}])
    assert item == {"url": "x"}


@pytest.mark.parametrize("follow", [True, False])
def test_follow_duplicates(follow: bool) -> None:
    env = Env(NEARDUP_FOLLOW_DUPLICATES=follow)
    try:
        original = tagged(env, "http://a.test/1", 1)
        copy = tagged(env, "http://a.test/copy", 1)
        links = [Request("http://a.test/next"), {"url": "item"}]
        assert len(list(env.spider_mw.process_spider_output(original, links))) == 2
        out = list(env.spider_mw.process_spider_output(copy, links))
        assert len(out) == (2 if follow else 1)
        assert env.stat("neardup/requests_not_followed") == (0 if follow else 1)
    finally:
        env.close()


def test_async_output_and_start() -> None:
    env = Env(NEARDUP_SKIP_MIRRORS=True, NEARDUP_FOLLOW_DUPLICATES=False)
    try:
        confirm_mirror(env)
        copy = tagged(env, "http://a.test/copy", 1)

        async def produce(objs: list[Any]) -> AsyncIterator[Any]:
            for obj in objs:
                yield obj

        async def collect(stream: AsyncIterator[Any]) -> list[Any]:
            return [obj async for obj in stream]

        out = asyncio.run(
            collect(
                env.spider_mw.process_spider_output_async(
                    copy, produce([Request("http://a.test/n"), {"a": 1}])
                )
            )
        )
        assert out == [{"a": 1, "neardup": copy.meta["neardup"]}]
        start = [Request("http://b.test/start"), Request("http://a.test/start"), {"seed": 1}]
        kept = asyncio.run(collect(env.spider_mw.process_start(produce(start))))
        assert [getattr(o, "url", o) for o in kept] == ["http://a.test/start", {"seed": 1}]
        assert env.stat("neardup/mirror_requests_skipped") == 1
    finally:
        env.close()


# -- pipeline ------------------------------------------------------------------------------------
@pytest.mark.parametrize("action", ["tag", "drop"])
def test_pipeline_deduplicates_item_fields(action: str) -> None:
    env = Env(NEARDUP_ITEM_FIELDS=["title", "body"], NEARDUP_ACTION=action)
    try:
        pipeline = NeardupPipeline.from_crawler(env.crawler)
        body = " ".join(article(7))
        first = pipeline.process_item({"url": "http://a.test/1", "title": "T", "body": body})
        assert first["neardup"]["status"] == "unique"
        copy = PageData(url="http://b.test/1", title="T", body=body)
        if action == "drop":
            with pytest.raises(DuplicateItem) as info:
                pipeline.process_item(copy)
            assert isinstance(info.value, DropItem) and info.value.log_level == "DEBUG"
            assert env.stat("neardup/dropped/item") == 1
        else:
            assert pipeline.process_item(copy).neardup["status"] == "exact"
        assert env.signals[-1]["item"] is copy and env.signals[-1]["response"] is None
        assert pipeline.process_item({"url": "x"}) == {"url": "x"}  # no text: untouched
        assert env.stat("neardup/items/no_fields") == 1
        assert env.stat("neardup/items/pages") == 2
        # The page index is separate: the item text does not make a page a duplicate.
        response = env.fetch(html_response("http://a.test/1", html_page("T", article(7))))
        assert response.meta["neardup"]["status"] == "unique"
    finally:
        env.close()


# -- storage errors ------------------------------------------------------------------------------
def test_store_that_cannot_open_stops_start_up() -> None:
    with pytest.raises(NeardupStorageError, match="connection refused"):
        Env(NEARDUP_STORAGE="e2e_spiders.FailingStorage", NEARDUP_REDIS_PREFIX="fail-open")


def test_storage_errors_pass_pages_as_skipped(caplog: pytest.LogCaptureFixture) -> None:
    env = Env(NEARDUP_STORAGE="e2e_spiders.FailingStorage", NEARDUP_REDIS_PREFIX="fail-between-2-5")
    try:
        with caplog.at_level(logging.DEBUG):
            statuses = [tagged(env, f"http://a.test/{i}", i).meta["neardup"]["status"] for i in range(7)]
        assert statuses == ["unique", "skipped", "skipped", "skipped", "unique", "unique", "unique"]
        assert env.stat("neardup/storage_errors") == 3 and env.runtime.storage_errors == 3
        assert env.stat("neardup/skipped/storage_error") == 3 and env.stat("neardup/pages") == 7
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len([w for w in warnings if "store failed" in w and "checking is off" in w]) == 1
        # and a WARNING again when it answers, with the count of pages passed unchecked
        resumed = [w for w in warnings if "store answers again" in w]
        assert len(resumed) == 1 and "after 3 page(s)" in resumed[0]
        assert not any(r.exc_info for r in caplog.records)
    finally:
        env.close()


# -- extension -----------------------------------------------------------------------------------
def test_extension_writes_reports_and_stats(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = Env(
        NEARDUP_REPORT_FILE=str(tmp_path / "out" / "report.json"),
        NEARDUP_REPORT_HTML=str(tmp_path / "report.html"),
        NEARDUP_ACTION="drop",
    )
    NeardupExtension.from_crawler(env.crawler)
    for seed in (1, 2, 1, 1):
        with contextlib.suppress(DuplicatePage):
            tagged(env, f"http://a.test/{seed}?v={env.stat('neardup/pages')}", seed)
    with caplog.at_level(logging.INFO):
        env.runtime._spider_closed(env.crawler.spider, "finished")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    validate_report(report)
    assert report["totals"]["pages"] == 4 and report["totals"]["dropped"] == 2
    assert (tmp_path / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert env.stat("neardup/clusters") == 1 and env.stat("neardup/mirror_hosts") == 0
    summary = [
        r for r in caplog.records if r.name == "neardup_scrapy.extension" and "pages from" in r.getMessage()
    ]
    assert len(summary) == 1 and len(summary[0].getMessage().splitlines()) <= 25
    assert env.runtime.detector is None  # closed after the report


# -- worker process ------------------------------------------------------------------------------
@pytest.mark.parametrize("use_reactor", [False, True])
def test_worker_gives_the_inline_verdicts(use_reactor: bool) -> None:
    ensure_reactor()
    params = NearDupDetector().params
    init = {
        "params": params,
        "storage": "memory",
        "path": None,
        "redis_url": None,
        "prefix": "x",
        "keep_excerpts": 9,
    }
    worker = DetectorWorker(init, use_reactor=use_reactor)
    assert worker.threaded is not use_reactor
    detector = NearDupDetector.from_params(params)
    try:
        seeds = [1, 2, 1, 3, 2, 1]
        pages = [(f"http://h{seed % 3}.test/{i}", page(seed).encode()) for i, seed in enumerate(seeds)]
        answers: list[tuple[bool, Any]] = []
        for url, body in pages[:-1]:
            worker.call("check", (url, body, "utf-8", len(body)), lambda ok, res: answers.append((ok, res)))
        url, body = pages[-1]
        last = worker.call_sync("check", (url, body, "utf-8", len(body)), 30)  # also waits for the others
        assert len(answers) == len(pages) - 1 and all(ok for ok, _ in answers)
        remote = [res for _, res in answers] + [last]
        local = [detector.check(url, body, encoding="utf-8") for url, body in pages]
        assert [v.to_dict() for v in remote] == [v.to_dict() for v in local]
        report = worker.call_sync("report", {"dropped": 0, "storage_errors": 0}, 30)
        assert report["totals"]["pages"] == 6
        with pytest.raises(WorkerCallError, match="unknown call"):  # a bug, not a store failure
            worker.call_sync("explode", None, 30)
    finally:
        worker.stop()
    failed: list[tuple[bool, Any]] = []
    worker.call("check", ("http://x/", b"", None, 0), lambda ok, res: failed.append((ok, res)))
    assert failed and not failed[0][0] and isinstance(failed[0][1], WorkerError)


def test_worker_survives_ctrl_c_of_the_crawl() -> None:
    """SIGINT (Ctrl-C reaches the whole process group) must not kill the worker before the crawl
    has shut down gracefully and asked it for the report."""
    init = {
        "params": NearDupDetector().params,
        "storage": "memory",
        "path": None,
        "redis_url": None,
        "prefix": "x",
        "keep_excerpts": 0,
    }
    worker = DetectorWorker(init, use_reactor=False)
    try:
        body = page(1).encode()
        assert worker.call_sync("check", ("http://a.test/1", body, "utf-8", len(body)), 30).status == "unique"
        os.kill(worker.pid, signal.SIGINT)
        time.sleep(0.3)
        assert worker.call_sync("check", ("http://b.test/1", body, "utf-8", len(body)), 30).status == "exact"
        assert worker.call_sync("report", {"dropped": 0, "storage_errors": 0}, 30)["totals"]["pages"] == 2
    finally:
        worker.stop()


def test_worker_reports_open_errors() -> None:
    init = {
        "params": NearDupDetector().params,
        "storage": "e2e_spiders.FailingStorage",
        "path": None,
        "redis_url": None,
        "prefix": "fail-open",
        "keep_excerpts": 0,
    }
    with pytest.raises(WorkerError, match="connection refused"):
        DetectorWorker(init)


def test_the_link_header_names_the_original() -> None:
    """A copy checked first whose ``Link`` header names the original's address: the original,
    when it comes, replaces it as the representative (never dropped: drop mode here), later
    tags name it, and the report counts the copy as the duplicate."""
    env = Env(NEARDUP_ACTION="drop")
    try:
        headers = {"Content-Type": "text/html", "Link": '<http://a.test/1>; rel="canonical"'}
        copy = env.fetch(html_response("http://b.test/copy", page(1), headers=headers))
        original = env.fetch(html_response("http://a.test/1", page(1)))  # not dropped
        assert copy.meta["neardup"]["status"] == "unique"
        assert original.meta["neardup"]["duplicate_of"] == "http://b.test/copy"  # checked against it
        with pytest.raises(DuplicatePage) as later:
            env.fetch(html_response("http://c.test/again", page(1), headers=headers))
        assert later.value.verdict.duplicate_of == "http://a.test/1"
        assert env.stat("neardup/not_dropped") == 1 and env.stat("neardup/dropped") == 1
        hosts = {h["host"]: h for h in env.runtime.report()["hosts"]}
        assert (hosts["a.test"]["unique"], hosts["b.test"]["exact"]) == (1, 1)
    finally:
        env.close()
