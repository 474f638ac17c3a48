"""Crawls that meet faults: a worker killed twice, bodies the two checking modes could read apart.

Real Scrapy crawls (own process) against local servers on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import CrawlResult, run_crawl
from e2e_server import Page, Site, article, html_page, serve

from neardup_scrapy.report.schema import validate_report

pytestmark = pytest.mark.e2e

ORDERED = {
    "CONCURRENT_REQUESTS": 1,
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
}

#: (path, article seed): originals o0..o5, kill, copies and new pages, kill, more of both.
SEQUENCE = [
    *((f"/o{n}", n) for n in range(6)),  # 0-5; the worker is killed in the callback of 5
    ("/copy/o1", 1),  # 6: after restart 1
    ("/o6", 6),  # 7
    ("/copy/o3", 3),  # 8; killed again in its callback
    ("/copy/o6", 6),  # 9: after restart 2, a page first seen between the two kills
    ("/copy/o0", 0),  # 10
    ("/o7", 7),  # 11
]
KILL_AFTER = "5,8"


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    pages = Site({path: html_page(f"Story {seed}", article(seed, 300)) for path, seed in SEQUENCE})
    with serve({"127.0.0.1": pages}) as urls:
        yield urls["127.0.0.1"]


def crawl_with_kills(base: str, tmp_path: Path, settings: dict[str, Any]) -> CrawlResult:
    urls_file = tmp_path / "urls.json"
    urls_file.write_text(json.dumps([[i, base + path] for i, (path, _) in enumerate(SEQUENCE)]))
    result = run_crawl(
        "KillerSpider",
        settings={
            **ORDERED,
            "DOWNLOAD_DELAY": 0.3,  # the next page is fetched after the callback that kills
            "NEARDUP_WORKER": "process",
            "NEARDUP_REPORT_FILE": str(tmp_path / "report.json"),
            **settings,
        },
        timeout=180,
        urls_file=str(urls_file),
        kill_after=KILL_AFTER,
    )
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-5000:]
    return result


def statuses(result: CrawlResult, base: str) -> list[tuple[str, str | None]]:
    by_index = sorted(result.items, key=lambda item: item["index"])
    assert [item["index"] for item in by_index] == list(range(len(SEQUENCE)))
    return [
        (item["neardup"]["status"], (item["neardup"]["duplicate_of"] or "").replace(base, "") or None)
        for item in by_index
    ]


def check_report(result: CrawlResult, tmp_path: Path, pages: int) -> None:
    report = json.loads((tmp_path / "report.json").read_text())
    validate_report(report)
    assert report["totals"]["pages"] == pages
    assert "report written to" in result.log


@pytest.mark.parametrize("storage", ["disk", pytest.param("redis", marks=pytest.mark.redis)])
def test_killed_worker_is_restarted_and_reopens_the_index(
    site: str, tmp_path: Path, storage: str, request: pytest.FixtureRequest
) -> None:
    settings: dict[str, Any] = {"NEARDUP_STORAGE": storage}
    if storage == "disk":
        settings["NEARDUP_DISK_PATH"] = str(tmp_path / "index.sqlite")
    else:
        url, prefix = request.getfixturevalue("redis_url")
        settings.update(NEARDUP_REDIS_URL=url, NEARDUP_REDIS_PREFIX=prefix)
    result = crawl_with_kills(site, tmp_path, settings)
    # Checking stays on, and pages checked after a restart match pages checked before it.
    assert statuses(result, site) == [
        *[("unique", None)] * 6,
        ("exact", "/o1"),
        ("unique", None),
        ("exact", "/o3"),
        ("exact", "/o6"),
        ("exact", "/o0"),
        ("unique", None),
    ]
    assert result.stat("neardup/worker_restarts") == 2
    assert result.stat("neardup/storage_errors") == 0  # no page passed unchecked
    assert result.log.count("the worker process stopped") == 2
    check_report(result, tmp_path, pages=len(SEQUENCE))


def test_killed_worker_with_the_memory_index_says_what_is_lost(site: str, tmp_path: Path) -> None:
    result = crawl_with_kills(site, tmp_path, {"NEARDUP_STORAGE": "memory"})
    found = statuses(result, site)
    assert found[6] == ("unique", None)  # o1 was forgotten with the first worker
    assert found[8:11] == [("unique", None)] * 3  # and o3 and o6 with the second
    assert result.stat("neardup/worker_restarts") == 2
    assert "the 6 page(s) it checked are forgotten" in result.log
    assert "the 3 page(s) it checked are forgotten" in result.log
    check_report(result, tmp_path, pages=3)  # the report covers the pages of the last worker


# -- both modes read a page alike ----------------------------------------------------------------
def _encoding_site() -> Site:
    story = html_page("Größe", article(11, 300))
    nul = html_page("Nul", article(12, 300)).replace("harbour", "har\x00bour")
    return Site(
        {
            # UTF-16 without a byte-order mark, named by the header only
            "/utf16": Page(story.encode("utf-16-le"), content_type="text/html; charset=utf-16-le"),
            "/utf8": Page(story),
            "/nul": Page(nul),  # NUL characters inside words
            "/nul-free": Page(html_page("Nul", article(12, 300))),
        }
    )


@pytest.fixture(scope="module")
def encoding_site() -> Iterator[str]:
    with serve({"127.0.0.1": _encoding_site()}) as urls:
        yield urls["127.0.0.1"]


def test_worker_and_inline_modes_read_bodies_alike(encoding_site: str, tmp_path: Path) -> None:
    paths = ["/utf16", "/utf8", "/nul", "/nul-free"]
    urls_file = tmp_path / "urls.json"
    urls_file.write_text(json.dumps([[i, encoding_site + p] for i, p in enumerate(paths)]))
    tags: dict[str, list[dict[str, Any]]] = {}
    for mode in ("inline", "process"):
        result = run_crawl(
            "ListSpider", settings={**ORDERED, "NEARDUP_WORKER": mode}, urls_file=str(urls_file)
        )
        assert result.returncode == 0, result.log[-3000:]
        tags[mode] = [item["neardup"] for item in sorted(result.items, key=lambda item: item["index"])]
    assert tags["process"] == tags["inline"]
    utf16, utf8, nul, nul_free = tags["inline"]
    assert utf16["status"] == "unique" and utf8["status"] == "exact"
    assert utf8["duplicate_of"] == encoding_site + "/utf16"
    assert nul["status"] == "unique" and nul_free["status"] in ("exact", "near")
