"""End-to-end crawls: a real Scrapy crawler (own process) against local servers on 127.0.0.1/2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e_crawl import CrawlResult, run_crawl
from e2e_server import Page, Site, article, html_page, loopback_available, serve

from neardup_scrapy.report.schema import validate_report

pytestmark = pytest.mark.e2e

if not loopback_available("127.0.0.2"):  # pragma: no cover - macOS without the alias
    pytest.skip("127.0.0.2 is not available on this machine", allow_module_level=True)


@dataclass
class Sites:
    """A small news site on 127.0.0.1 and its exact mirror on 127.0.0.2."""

    a: Site
    b: Site
    url_a: str
    url_b: str


ARTICLES = {f"/news/{n}": n for n in range(1, 7)}


def _populate(site: Site, mirror_url: str | None, canonical_base: str = "") -> None:
    """The pages of one host; a mirror names the origin's pages as canonical (``canonical_base``),
    the evidence that tells which of two hosts serving the same pages is the copy."""

    def canonical(path: str) -> str:
        return f"<link rel='canonical' href='{canonical_base}{path}'>" if canonical_base else ""

    links = [*ARTICLES, "/news/1-copy", "/news/2?sid=8f3a9", "/print/3", "/feed.xml", "/logo.png", "/more"]
    site.add("/", html_page("Front page", ["Latest news from the harbour town."], links, head=canonical("/")))
    for path, seed in ARTICLES.items():
        site.add(path, html_page(f"Story {seed}", article(seed, 300), ["/", "/news/1"], head=canonical(path)))
    # An exact copy under another url that links to a page nothing else links to.
    site.add("/news/1-copy", html_page("Story 1", article(1, 300), ["/", "/only-from-copy"]))
    site.add("/only-from-copy", html_page("Hidden", article(99, 300)))
    site.add("/news/2?sid=8f3a9", html_page("Story 2", article(2, 300), ["/", "/news/1"]))
    # A print version: the same article in a bare template.
    site.add(
        "/print/3",
        "<html><body><h1>Story 3</h1>" + "".join(f"<p>{p}</p>" for p in article(3, 300)) + "</body></html>",
    )
    site.add(
        "/feed.xml",
        Page("<rss><channel><title>news</title></channel></rss>", content_type="application/rss+xml"),
    )
    site.add("/logo.png", Page(b"\x89PNG\r\n\x1a\n" + bytes(200), content_type="image/png"))
    site.add("/more", html_page("More", ["Our partner sites."], [mirror_url] if mirror_url else []))


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    a, b = Site(), Site()
    with serve({"127.0.0.1": a, "127.0.0.2": b}) as urls:
        _populate(a, urls["127.0.0.2"] + "/")
        _populate(b, urls["127.0.0.2"] + "/", canonical_base=urls["127.0.0.1"])
        yield Sites(a, b, urls["127.0.0.1"], urls["127.0.0.2"])


# BFS with one request at a time: the crawl order, and so the verdicts, are deterministic.
ORDERED = {
    "CONCURRENT_REQUESTS": 1,
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
}


def crawl(sites: Sites, settings: dict[str, object] | None = None, **spider_args: object) -> CrawlResult:
    spider_args.setdefault("start", sites.url_a + "/")
    result = run_crawl(settings={**ORDERED, **(settings or {})}, **spider_args)
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-5000:]
    assert result.stat("log_count/ERROR") == 0, result.log[-5000:]
    return result


def tag_of(item: dict[str, object]) -> dict[str, object]:
    tag = item.get("neardup")
    assert isinstance(tag, dict), item
    return tag


def check_tags(result: CrawlResult, sites: Sites) -> None:
    items = result.by_url()
    a, b = sites.url_a, sites.url_b
    assert tag_of(items[f"{a}/news/1"])["status"] == "unique"
    copy = tag_of(items[f"{a}/news/1-copy"])
    assert copy["status"] == "exact" and copy["duplicate_of"] == f"{a}/news/1"
    assert tag_of(items[f"{a}/news/2?sid=8f3a9"])["status"] == "exact"
    printed = tag_of(items[f"{a}/print/3"])
    assert printed["status"] in ("exact", "near") and printed["duplicate_of"] == f"{a}/news/3"
    mirrored = tag_of(items[f"{b}/news/4"])
    assert mirrored["status"] == "exact" and mirrored["duplicate_of"] == f"{a}/news/4"
    assert mirrored["mirror_of"] == a.split("//")[1]
    for url in (f"{a}/feed.xml", f"{a}/logo.png"):
        assert url not in items or items[url].get("neardup") is None


@pytest.mark.parametrize("worker", ["process", "inline"])
def test_tag_mode(sites: Sites, worker: str) -> None:
    result = crawl(
        sites,
        {
            "NEARDUP_WORKER": worker,
            "NEARDUP_REPORT_FILE": "report.json",
            "NEARDUP_REPORT_HTML": "report.html",
        },
        binary_items=True,
    )
    check_tags(result, sites)
    # Per host: front, 6 articles, copy, session, print, more, only-from-copy; feed and logo.
    assert len(result.items) == 2 * 14
    stats = result.stats
    assert stats["neardup/pages"] == 24 and stats["neardup/untouched/non_html"] == 4
    # 127.0.0.1: 9 originals and 3 copies; 127.0.0.2: copies of all 12.
    assert stats["neardup/unique"] == 9 and stats["neardup/exact"] + stats.get("neardup/near", 0) == 15
    assert stats["neardup/mirror_hosts"] == 1 and stats["neardup/clusters"] == 9
    assert stats["neardup/items/tagged"] == 24
    duplicates = stats["neardup/exact"] + stats.get("neardup/near", 0)
    assert len(result.signals) == duplicates and all(s["response"] for s in result.signals)

    report = json.loads((result.out / "report.json").read_text())
    validate_report(report)
    totals = report["totals"]
    for key in ("pages", "unique", "exact", "skipped"):
        assert totals[key] == stats.get(f"neardup/{key}", 0), key
    assert report["mirrors"][0]["host"] == sites.url_b.split("//")[1]
    assert (result.out / "report.html").stat().st_size > 1000
    assert "neardup: 24 pages from 2 hosts" in result.log  # the closing summary


def test_inline_mode_checks_pages_on_its_helper_thread(sites: Sites, tmp_path: Path) -> None:
    """While the crawl runs, inline mode's index lives on the check thread: every lookup runs
    there, and the tags are those of the other modes (test_tag_mode)."""
    record = tmp_path / "threads.json"
    result = crawl(
        sites,
        {
            "NEARDUP_WORKER": "inline",
            "NEARDUP_STORAGE": "e2e_spiders.ThreadRecordingStorage",
            "NEARDUP_REDIS_PREFIX": str(record),
        },
    )
    check_tags(result, sites)
    assert json.loads(record.read_text()) == ["neardup-check"]
    stats = result.stats
    assert stats["neardup/pages"] == 24 and stats["neardup/untouched/non_html"] == 4
    assert stats["neardup/unique"] == 9 and stats["neardup/mirror_hosts"] == 1


@pytest.mark.parametrize("item_type", ["item", "dataclass", "attrs"])
def test_item_types(sites: Sites, item_type: str) -> None:
    result = crawl(sites, item_type=item_type)
    check_tags(result, sites)
    assert result.stats["neardup/items/tagged"] == len(result.items)


def test_item_without_declared_field(sites: Sites) -> None:
    result = run_crawl(settings=ORDERED, start=sites.url_a + "/", item_type="item_without_tag")
    assert result.returncode == 0
    assert len(result.items) == 24 and all("neardup" not in item for item in result.items)
    assert result.stat("log_count/ERROR") == 1 and "declare the field" in result.log.lower()


@pytest.mark.parametrize("worker", ["process", "inline"])
def test_drop_mode(sites: Sites, worker: str) -> None:
    result = crawl(sites, {"NEARDUP_ACTION": "drop", "NEARDUP_WORKER": worker})
    statuses = {tag_of(item)["status"] for item in result.items}
    assert statuses == {"unique"}
    # Dropped pages are not parsed, so their links are not followed: /only-from-copy (linked from
    # the copy) and the mirror's pages (linked from its front page, a copy) are never found.
    assert len(result.items) == 8
    dropped = result.stats["neardup/dropped"]
    assert dropped == result.stats["neardup/exact"] + result.stats.get("neardup/near", 0) == 4
    assert result.stats["neardup/dropped/page"] == dropped
    assert len(result.errbacks) == dropped and {e["exception"] for e in result.errbacks} == {"DuplicatePage"}
    assert "Spider error" not in result.log and "Error downloading" not in result.log


@pytest.mark.parametrize("action", ["tag", "drop"])
def test_item_field_dedup(sites: Sites, action: str) -> None:
    result = crawl(
        sites,
        {"NEARDUP_ITEM_FIELDS": ["body"], "NEARDUP_ACTION": action, "NEARDUP_WORKER": "inline"},
        items_per_page=2,
    )
    stats = result.stats
    if action == "tag":
        assert len(result.items) == 2 * 24
        assert all(tag_of(item)["status"] != "unique" for item in result.items[1::2])
        assert {tag_of(item)["status"] for item in result.items[::2]} == {"unique", "exact"}
        assert stats["neardup/items/exact"] >= 24
    else:
        # Each of the 8 pages that reach the spider (the others are dropped as pages) gives two
        # items with the same body: the second is dropped.
        assert len(result.items) == 8
        assert stats["item_dropped_reasons_count/DuplicateItem"] == 8 == stats["neardup/dropped/item"]
        assert stats["neardup/dropped"] == 8 + stats["neardup/dropped/page"]
        assert stats.get("log_count/WARNING", 0) == 0  # duplicates are dropped quietly


@pytest.mark.parametrize("follow", [True, False])
def test_follow_duplicates(sites: Sites, follow: bool) -> None:
    before = sites.a.hits.count("/only-from-copy")
    result = crawl(sites, {"NEARDUP_FOLLOW_DUPLICATES": follow})
    fetched = sites.a.hits.count("/only-from-copy") - before
    assert fetched == (1 if follow else 0)
    assert result.stat("neardup/requests_not_followed") == (
        0 if follow else result.stat("neardup/requests_not_followed")
    )
    if not follow:
        assert result.stat("neardup/requests_not_followed") > 0


def test_skip_mirrors(sites: Sites) -> None:
    before = len(sites.b.hits)
    result = crawl(sites, {"NEARDUP_SKIP_MIRRORS": True, "NEARDUP_REPORT_FILE": "report.json"})
    fetched_from_mirror = len(sites.b.hits) - before
    assert result.stat("neardup/mirror_requests_skipped") > 0
    assert fetched_from_mirror < 13
    assert result.stat("neardup/mirror_hosts") == 1
    report = json.loads((result.out / "report.json").read_text())
    assert report["mirrors"][0]["mirror_of"] == sites.url_a.split("//")[1]
    # Dropped before download: no errback, no downloader exception for dashboards to count.
    assert not result.errbacks
    assert result.stat("downloader/exception_count") == 0
    assert not [k for k in result.stats if k.startswith("downloader/exception_type_count")]


def test_dont_neardup(sites: Sites) -> None:
    copy = sites.url_a + "/news/1-copy"
    result = crawl(sites, dont_neardup=copy, start=f"{sites.url_a}/news/1,{copy}")
    items = result.by_url()
    assert "neardup" not in items[copy] or items[copy]["neardup"] is None
    assert result.stat("neardup/untouched/dont_neardup") == 1


def test_invalid_setting_stops_the_crawl(sites: Sites) -> None:
    before = len(sites.a.hits)
    result = run_crawl(settings={"NEARDUP_ACTION": "delete"}, start=sites.url_a + "/")
    assert result.returncode != 0
    assert len(sites.a.hits) == before and not result.items
    assert "invalid setting NEARDUP_ACTION = 'delete': expected one of 'tag', 'drop'" in result.log


def test_unreachable_store_stops_the_crawl(sites: Sites) -> None:
    before = len(sites.a.hits)
    settings = {"NEARDUP_STORAGE": "e2e_spiders.FailingStorage", "NEARDUP_REDIS_PREFIX": "fail-open"}
    result = run_crawl(settings=settings, start=sites.url_a + "/")
    assert result.returncode != 0 and len(sites.a.hits) == before
    assert "cannot open the index" in result.log and "connection refused" in result.log


@pytest.mark.parametrize("policy", ["pass", "stop"])
def test_store_lost_mid_crawl(sites: Sites, policy: str) -> None:
    settings = {
        "NEARDUP_STORAGE": "e2e_spiders.FailingStorage",
        "NEARDUP_REDIS_PREFIX": "fail-after-4",
        "NEARDUP_ON_STORAGE_ERROR": policy,
    }
    result = run_crawl(settings={**ORDERED, **settings}, start=sites.url_a + "/")
    assert result.returncode == 0
    assert "Traceback" not in result.log
    statuses = [tag_of(item)["status"] for item in result.items]
    assert statuses[:4] == ["unique"] * 4 and statuses[4] == "skipped"
    assert result.stat("neardup/storage_errors") >= 1
    if policy == "stop":
        assert result.stats["_finish_reason_"] == "neardup_storage_error"
        assert len(result.items) < 24
    else:
        assert result.stats["_finish_reason_"] == "finished" and len(result.items) == 24
        assert (
            result.log.count("pages pass unchecked, tagged 'skipped'") == 1
        )  # one warning, not one per page


def test_bad_responses(sites: Sites) -> None:
    site = Site()
    big = html_page("Huge", article(9, 200) * 16000)
    pages = {
        "/binary": Page(bytes(range(256)) * 400, content_type="text/html"),
        "/empty": Page(b"", content_type="text/html; charset=utf-8"),
        "/wrong-charset": Page(
            html_page("Größe", ["Übermaß café " * 100]).encode("latin-1"),
            content_type="text/html; charset=utf-8",
        ),
        "/unknown-charset": Page(html_page("X", article(3)), content_type="text/html; charset=x-nothing"),
        "/no-charset": Page(html_page("Café", article(4)).encode("cp1252"), content_type="text/html"),
        "/no-content-type": Page(html_page("Y", article(5)), content_type=None),
        "/huge": Page(big),
        "/gzip": Page(html_page("Zipped", article(6)), gzip=True),
        "/redirect": Page("", status=301, headers={"Location": "/gzip-copy"}),
        "/gzip-copy": Page(html_page("Zipped", article(6)), gzip=True),
    }
    links = list(pages)
    site.add("/", html_page("Bad", ["Links to odd responses."], links))
    for path, bad in pages.items():
        site.add(path, bad)
    with serve({"127.0.0.1": site}) as urls:
        result = crawl(sites, {"NEARDUP_MAX_BODY_BYTES": 0}, start=urls["127.0.0.1"] + "/", binary_items=True)
    # Every response gave its item: the front page, the ten others minus the redirect.
    assert len(result.items) == 1 + len(pages) - 1
    items = {item["url"].split("/", 3)[3]: item for item in result.items}
    assert tag_of(items["gzip-copy"])["status"] == "exact"  # decompressed, after the redirect
    assert tag_of(items["gzip-copy"])["duplicate_of"].endswith("/gzip")
    # 19 MB: checked, or skipped for its work (past NEARDUP_MAX_WORK) or its CPU time (parsing it
    # alone can take longer than NEARDUP_TIMEOUT)
    huge = tag_of(items["huge"])["status"]
    skips = (result.stat("neardup/skipped/too_much_work") or 0) + (
        result.stat("neardup/skipped/timeout") or 0
    )
    assert huge == "unique" or (huge == "skipped" and skips == 1)
    for name in ("binary", "empty", "wrong-charset", "unknown-charset", "no-charset"):
        assert tag_of(items[name])["status"] in ("unique", "skipped"), name
    assert result.stat("neardup/skipped/error") == 0


def test_crawl_exports_and_keeps_a_warc_that_scans_the_same(sites: Sites) -> None:
    import subprocess
    import sys

    import pyarrow.parquet as pq

    from tests.core.test_exports import check_exports

    settings = {
        "NEARDUP_CLUSTERS_FILE": "clusters.jsonl",
        "NEARDUP_PAIRS_FILE": "pairs.parquet",
        "NEARDUP_WARC_FILE": "pages.warc.gz",
    }
    result = crawl(sites, settings)
    tags = {url: tag_of(item) for url, item in result.by_url().items()}
    checked = {url for url, tag in tags.items() if tag["status"] != "skipped"}
    clusters = [json.loads(line) for line in (result.out / "clusters.jsonl").read_text().splitlines()]
    pairs = pq.read_table(result.out / "pairs.parquet").to_pylist()
    check_exports(clusters, pairs, checked)
    assert result.stat("neardup/warc_records") == result.stat("neardup/pages")  # every page, none else

    sidecar = result.out / "tags.jsonl"
    scan = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup_scrapy.cli",
            "scan",
            str(result.out / "pages.warc.gz"),
            "-o",
            str(sidecar),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert scan.returncode == 0, scan.stderr.decode()
    rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
    assert {r["url"] for r in rows} == checked
    assert {r["url"]: r["neardup"]["status"] for r in rows} == {u: tags[u]["status"] for u in checked}


def _spidermon_settings(**thresholds: object) -> dict[str, object]:
    import os

    if os.environ.get("CI") != "true":
        pytest.importorskip("spidermon")
    return {
        "SPIDERMON_ENABLED": True,
        "EXTENSIONS": {"spidermon.contrib.scrapy.extensions.Spidermon": 500},
        "SPIDERMON_SPIDER_CLOSE_MONITORS": ["neardup_scrapy.monitors.NeardupMonitorSuite"],
        **{f"NEARDUP_MONITOR_{k.upper()}": v for k, v in thresholds.items()},
    }


def test_spidermon_monitor_fails_a_crawl_over_its_duplicate_share(sites: Sites) -> None:
    settings = _spidermon_settings(max_duplicate_share=0.3)
    result = run_crawl(settings={**ORDERED, **settings}, start=sites.url_a + "/")
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("neardup/monitor/failed") == 1, result.log[-3000:]
    duplicates = result.stat("neardup/exact") + result.stat("neardup/near")
    checked = result.stat("neardup/pages") - result.stat("neardup/skipped")
    assert f"({duplicates} of {checked} checked pages) is over NEARDUP_MONITOR_MAX_DUPLICATE_SHARE = 0.3" in (
        result.log
    )

    passing = run_crawl(
        settings={**ORDERED, **_spidermon_settings(max_duplicate_share=0.9)}, start=sites.url_a + "/"
    )
    assert passing.returncode == 0 and passing.stat("neardup/monitor/failed") == 0
    assert "is over NEARDUP_MONITOR" not in passing.log


def test_spidermon_thresholds_are_validated_at_start(sites: Sites) -> None:
    before = len(sites.a.hits)
    result = run_crawl(settings=_spidermon_settings(max_duplicate_share=1.5), start=sites.url_a + "/")
    assert result.returncode != 0 and len(sites.a.hits) == before
    assert "invalid setting NEARDUP_MONITOR_MAX_DUPLICATE_SHARE = 1.5" in result.log
