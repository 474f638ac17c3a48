"""Pause/resume: a crawl with JOBDIR and the disk index, stopped part way and resumed, gives the
same verdicts as the same crawl run without a pause."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import run_crawl
from e2e_server import Site, html_page, serve

from tests.core.storage.test_storage_support import corpus

pytestmark = pytest.mark.e2e


def site_with_duplicates(groups: int = 15) -> Site:
    """Articles, each with a print copy and an exact copy; a chain of index pages links them."""
    site = Site()
    pages = corpus(groups, 2, seed=31, exact_every=2)
    paths = []
    for url, text, group in pages:
        kind = "article" if "/doc/" in url else f"copy{url.rsplit('/', 1)[1]}"
        path = f"/{kind}/{group}"
        words = text.split()
        site.add(
            path,
            html_page(f"Article {group}", [" ".join(words[i : i + 50]) for i in range(0, len(words), 50)]),
        )
        paths.append(path)
    # index pages: each lists a few pages and the next index, so the crawl order is fixed
    per = 5
    for n, start in enumerate(range(0, len(paths), per)):
        links = paths[start : start + per]
        if start + per < len(paths):
            links = [*links, f"/index/{n + 1}"]
        site.add(
            "/" if n == 0 else f"/index/{n}",
            html_page(f"Index {n}", [f"Index page number {n}."], links=links),
        )
    return site


SETTINGS: dict[str, Any] = {  # no NEARDUP_STORAGE: with JOBDIR the index persists on disk by default
    "CONCURRENT_REQUESTS": 1,
    "LOG_LEVEL": "INFO",
}


def verdicts(items: list[dict[str, Any]]) -> dict[str, tuple[str, str | None]]:
    return {i["url"]: (i["neardup"]["status"], i["neardup"]["duplicate_of"]) for i in items}


def test_pause_and_resume_gives_the_same_verdicts(tmp_path: Path) -> None:
    site = site_with_duplicates()
    with serve({"127.0.0.1": site}) as urls:
        start = urls["127.0.0.1"] + "/"
        full = run_crawl("LinkSpider", {**SETTINGS, "JOBDIR": str(tmp_path / "full")}, start=start)
        assert full.returncode == 0, full.log[-2000:]
        jobdir = str(tmp_path / "paused")
        first = run_crawl(
            "LinkSpider", {**SETTINGS, "JOBDIR": jobdir, "CLOSESPIDER_PAGECOUNT": 20}, start=start
        )
        assert first.stat("_finish_reason_") == "closespider_pagecount"
        index = Path(jobdir) / "neardup.sqlite"
        assert index.exists()
        db = sqlite3.connect(index)  # readable by another process, and holds the first part
        (pages_before,) = db.execute("SELECT count(*) FROM docs").fetchone()
        db.close()
        assert pages_before >= 15
        second = run_crawl("LinkSpider", {**SETTINGS, "JOBDIR": jobdir}, start=start)
        assert second.stat("_finish_reason_") == "finished"
    expected = verdicts(full.items)
    before, after = verdicts(first.items), verdicts(second.items)
    assert not set(before) & set(after)  # the resumed crawl did not fetch pages again
    resumed = before | after
    assert resumed == expected
    # pages after the pause were recognised as duplicates of pages seen before it
    assert any(dup in before for status, dup in after.values() if status != "unique")
    assert second.stat("neardup/exact") + second.stat("neardup/near") >= 1


def test_resume_with_other_parameters_fails_clearly(tmp_path: Path) -> None:
    site = site_with_duplicates(groups=3)
    with serve({"127.0.0.1": site}) as urls:
        start = urls["127.0.0.1"] + "/"
        jobdir = str(tmp_path / "job")
        first = run_crawl(
            "LinkSpider", {**SETTINGS, "JOBDIR": jobdir, "CLOSESPIDER_PAGECOUNT": 3}, start=start
        )
        assert first.returncode == 0
        second = run_crawl(
            "LinkSpider", {**SETTINGS, "JOBDIR": jobdir, "NEARDUP_THRESHOLD": 0.7}, start=start
        )
    assert not second.items
    assert "threshold: stored 0.8, requested 0.7" in second.log
