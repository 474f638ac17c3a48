"""#35: one count, everywhere -- the stats, the closing summary, the JSON report, the spidermon
monitor and a scan of the crawl's WARC give the same pages, unique, exact, near, skipped and
revisits, for a crawl with revisits (a start url linked again), 404s, a body over the size cap,
an image and duplicates, on the memory, disk and Redis stores; and a second crawl over the same
Redis index counts its pages as revisits and its 404s not at all.

What counts as a page: every response that gets a tag -- checked (``unique``, ``exact``,
``near``), tagged ``skipped`` (here: too large), or a url checked before (a revisit).
Responses passed on untouched (error statuses, not HTML, ``dont_neardup``) are not pages: the
crawl counts them in ``neardup/untouched/<reason>`` and keeps them out of its WARC, and a scan
of a WARC that holds them does not count them either.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import CrawlResult, run_crawl
from e2e_server import Page, Site, article, html_page, serve

pytestmark = pytest.mark.e2e

KEYS = ("pages", "unique", "exact", "near", "skipped", "revisits")
MAX_BODY = 20_000


def sites() -> tuple[Site, Site]:
    """127.0.0.1: a front page, 8 articles, a print view and a session copy of two of them, a
    page over the size cap, an image and two broken links; 127.0.0.2: copies of 4 articles
    (another template) and a broken link. Every page links the front page again."""
    origin, copy = Site(), Site()
    articles = [f"/a/{i}" for i in range(8)]
    links = [*articles, "/a/1/print", "/a/2?session=9", "/big", "/logo", "/missing/1", "/missing/2", "/"]
    origin.add("/", html_page("Front", ["The front page of the test site."], links))
    for i, path in enumerate(articles):
        origin.add(path, html_page(f"Article {i}", article(60 + i, 240), ["/", "/missing/1"]))
    origin.add("/a/1/print", html_page("Article 1", [*article(61, 240), "Printed from the site."], ["/"]))
    origin.add("/a/2?session=9", html_page("Article 2", article(62, 240), ["/"]))
    origin.add("/big", html_page("Big", article(99, 6000), ["/"]))
    origin.add("/logo", Page(b"\x89PNG\r\n\x1a\n" + bytes(64), content_type="image/png"))
    copy.add(
        "/", html_page("Copies", ["Stories from the other site."], ["/c/0", "/c/1", "/c/2", "/c/3", "/gone"])
    )
    for i in range(4):
        text = " ".join(article(60 + i, 240))
        copy.add(f"/c/{i}", f"<html><body><div id='x'><h2>Article {i}</h2><p>{text}</p></div></body></html>")
    return origin, copy


def crawl(settings: dict[str, Any], times: int = 1) -> list[CrawlResult]:
    """``times`` crawls of the two sites (served on the same ports throughout)."""
    origin, copy = sites()
    results = []
    with serve({"127.0.0.1": origin, "127.0.0.2": copy}) as urls:
        for _ in range(times):
            results.append(_crawl(settings, urls))
    return results


def _crawl(settings: dict[str, Any], urls: dict[str, str]) -> CrawlResult:
    result = run_crawl(
        "SiteCrawlSpider",
        {
            "LOG_LEVEL": "INFO",
            "NEARDUP_MAX_BODY_BYTES": MAX_BODY,
            "NEARDUP_REPORT_FILE": "report.json",
            "NEARDUP_WARC_FILE": "pages.warc.gz",
            "SPIDERMON_ENABLED": True,
            "EXTENSIONS": {"spidermon.contrib.scrapy.extensions.Spidermon": 500},
            "SPIDERMON_SPIDER_CLOSE_MONITORS": ["neardup_scrapy.monitors.NeardupMonitorSuite"],
            # thresholds every crawl breaks, so that the monitor says what it counted
            "NEARDUP_MONITOR_MAX_DUPLICATE_SHARE": 0.0,
            "NEARDUP_MONITOR_MAX_SKIPPED_SHARE": 0.0,
            "NEARDUP_MONITOR_MIN_PAGES": 0,
            "HTTPERROR_ALLOW_ALL": True,  # the 404s reach the middleware and the spider
            **settings,
        },
        start=f"{urls['127.0.0.1']}/,{urls['127.0.0.2']}/",
    )
    assert result.returncode == 0, result.log[-3000:]
    return result


def from_stats(result: CrawlResult) -> dict[str, int]:
    return {k: int(result.stat(f"neardup/{k}")) for k in KEYS}


def from_summary(log: str) -> dict[str, int]:
    """The closing summary's counts (its first two lines)."""
    pages = re.search(r"neardup: ([\d,]+) pages? from", log)
    line = re.search(
        r"unique ([\d,]+)  exact ([\d,]+)  near ([\d,]+)  skipped ([\d,]+)  revisits ([\d,]+)  dropped", log
    )
    assert pages and line, log[-3000:]
    values = [int(v.replace(",", "")) for v in (pages.group(1), *line.groups())]
    return dict(zip(KEYS, values, strict=True))


def from_report(path: Path) -> dict[str, int]:
    totals = json.loads(path.read_text())["totals"]
    return {k: int(totals[k]) for k in KEYS}


def from_monitor(log: str) -> dict[str, int]:
    """What the spidermon monitor counted, from its failure messages: duplicates of checked
    pages, and skipped of pages."""
    duplicates = re.search(r"duplicate share [\d.]+% \(([\d,]+) of ([\d,]+) checked pages\)", log)
    skipped = re.search(r"skipped share [\d.]+% \(([\d,]+) of ([\d,]+) pages\)", log)
    assert duplicates and skipped, log[-4000:]
    return {
        "duplicates": int(duplicates.group(1)),
        "checked": int(duplicates.group(2)),
        "skipped": int(skipped.group(1)),
        "pages": int(skipped.group(2)),
    }


def scan(warc: Path, out: Path) -> dict[str, int]:
    report = out / "scan-report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup_scrapy.cli",
            "scan",
            str(warc),
            "-o",
            str(out / "tags.jsonl"),
            "--report",
            str(report),
            "--max-body-bytes",
            str(MAX_BODY),
            "-q",
            "-j",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return from_report(report)


def check_one_count(result: CrawlResult) -> dict[str, int]:
    counts = from_stats(result)
    assert from_summary(result.log) == counts
    assert from_report(result.out / "report.json") == counts
    assert scan(result.out / "pages.warc.gz", result.out) == counts
    monitor = from_monitor(result.log)
    assert monitor == {
        "duplicates": counts["exact"] + counts["near"],
        "checked": counts["unique"] + counts["exact"] + counts["near"],
        "skipped": counts["skipped"],
        "pages": counts["pages"],
    }
    assert counts["pages"] == sum(counts[k] for k in KEYS[1:])
    return counts


@pytest.fixture(params=["memory", "disk", pytest.param("redis", marks=pytest.mark.redis)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if request.param == "memory":
        return {"NEARDUP_STORAGE": "memory"}
    if request.param == "disk":
        return {"NEARDUP_STORAGE": "disk", "NEARDUP_DISK_PATH": str(tmp_path / "index.sqlite")}
    url, prefix = request.getfixturevalue("redis_url")
    return {"NEARDUP_STORAGE": "redis", "NEARDUP_REDIS_URL": url, "NEARDUP_REDIS_PREFIX": prefix}


@pytest.mark.timeout(600)
def test_stats_summary_report_monitor_and_scan_agree(store: dict[str, Any]) -> None:
    (result,) = crawl(store)
    counts = check_one_count(result)
    # 2 front pages fetched again (start urls, linked back): revisits, not unique pages
    assert counts["revisits"] == 2 and counts["skipped"] == 1  # /big, over the size cap
    stats = result.stats
    assert stats["neardup/untouched/http_error"] == 3 and stats["neardup/untouched/non_html"] == 1
    assert stats["neardup/warc_records"] == counts["pages"]  # every page, no 404 and no image
    assert counts["unique"] == 10 and counts["exact"] + counts["near"] == 6  # 8 + 2 fronts; 2 + 4 copies


@pytest.mark.redis
@pytest.mark.timeout(600)
def test_a_second_crawl_over_a_redis_index_counts_revisits(redis_url: tuple[str, str]) -> None:
    """The same crawl twice over one Redis index: the second one's pages are revisits (but the
    page tagged skipped, which is not indexed and is skipped again), its 404s are not pages, and
    the report (the whole index) adds exactly the second crawl's counts."""
    settings = {
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": redis_url[0],
        "NEARDUP_REDIS_PREFIX": redis_url[1],
    }
    first, second = crawl(settings, times=2)
    counts = check_one_count(first)
    again = from_stats(second)
    assert again["pages"] == counts["pages"] and again["skipped"] == counts["skipped"] == 1
    assert again["revisits"] == counts["pages"] - 1 and second.stats["neardup/untouched/http_error"] == 3
    whole = from_report(second.out / "report.json")
    assert whole == {k: counts[k] + again[k] for k in KEYS}
