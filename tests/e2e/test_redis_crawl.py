"""Scrapy crawls on a Redis index whose server dies mid-crawl: NEARDUP_ON_STORAGE_ERROR pass/stop."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import CrawlResult, run_crawl
from e2e_server import Site, html_page, serve

from tests.core.storage.test_storage_support import corpus, have_redis_server, private_redis

pytestmark = [
    pytest.mark.redis,
    pytest.mark.e2e,
    pytest.mark.skipif(not have_redis_server(), reason="redis-server binary not installed"),
]

PAGES = 40


def article_site(groups: int = 20, seed: int = 21) -> Site:
    """An index page linking ``groups`` articles and a print copy of each (2 * groups pages)."""
    pages = corpus(groups, 1, seed=seed, exact_every=0)
    site = Site()
    links = []
    for url, text, group in pages:
        path = f"/article/{group}" if "/doc/" in url else f"/print/{group}"
        words = text.split()
        paragraphs = [" ".join(words[i : i + 60]) for i in range(0, len(words), 60)]
        site.add(path, html_page(f"Article {group}", paragraphs))
        links.append(path)
    site.add("/", html_page("Index", ["Welcome to the test site index page."], links=links))
    return site


def crawl_with_dying_redis(tmp_path: Path, policy: str, kill_after: int = 12) -> tuple[CrawlResult, int]:
    site = article_site()
    with private_redis(tmp_path) as server, serve({"127.0.0.1": site}) as urls:

        def killer() -> None:
            while len(site.hits) < kill_after:
                time.sleep(0.01)
            server.kill()

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        result = run_crawl(
            "LinkSpider",
            {
                "NEARDUP_STORAGE": "redis",
                "NEARDUP_REDIS_URL": server.url,
                "NEARDUP_REDIS_PREFIX": "dying",
                "NEARDUP_ON_STORAGE_ERROR": policy,
                "CONCURRENT_REQUESTS": 1,
                "DOWNLOAD_DELAY": 0.05,
                "LOG_LEVEL": "INFO",
            },
            start=urls["127.0.0.1"] + "/",
        )
        thread.join(5)
        return result, len(site.hits)


def _no_traceback(result: CrawlResult) -> None:
    assert "Traceback" not in result.log, result.log[-3000:]


def test_pass_policy_tags_pages_skipped_and_loses_nothing(tmp_path: Path) -> None:
    result, served = crawl_with_dying_redis(tmp_path, "pass")
    assert result.returncode == 0, result.log[-3000:]
    _no_traceback(result)
    assert result.stat("_finish_reason_") == "finished"
    assert served == PAGES + 1
    assert len(result.items) == PAGES + 1  # every page still produced its item
    statuses: dict[str, Any] = {}
    for item in result.items:
        statuses.setdefault(item["neardup"]["status"], []).append(item["url"])
    assert "skipped" in statuses and len(statuses["skipped"]) >= PAGES + 1 - 12
    assert "unique" in statuses, result.log[-3000:]  # pages checked before the kill
    assert result.stat("neardup/storage_errors") == len(statuses["skipped"])
    assert result.stat("neardup/skipped/storage_error") == len(statuses["skipped"])
    assert result.stat("neardup/pages") == PAGES + 1  # pages passed unchecked are counted too
    assert "NEARDUP_ON_STORAGE_ERROR" in result.log  # one clear warning, not one per page


def test_stop_policy_closes_the_spider_cleanly(tmp_path: Path) -> None:
    result, served = crawl_with_dying_redis(tmp_path, "stop")
    _no_traceback(result)
    assert result.stat("_finish_reason_") == "neardup_storage_error"
    assert served < PAGES + 1
    assert result.stat("neardup/storage_errors") >= 1
    assert len(result.items) >= 1
    for item in result.items:  # items of pages before the failure kept their tags
        assert item["neardup"]["status"] in {"unique", "exact", "near", "skipped"}
    assert "cannot reach" in result.log or "failed after" in result.log


def test_redis_unreachable_at_start_stops_the_crawl(tmp_path: Path) -> None:
    from tests.core.storage.test_storage_support import free_port

    site = article_site(groups=2)
    with serve({"127.0.0.1": site}) as urls:
        result = run_crawl(
            "LinkSpider",
            {
                "NEARDUP_STORAGE": "redis",
                "NEARDUP_REDIS_URL": f"redis://:pw@127.0.0.1:{free_port()}/0",
                "LOG_LEVEL": "INFO",
            },
            start=urls["127.0.0.1"] + "/",
        )
    assert not result.items
    assert "cannot reach Redis" in result.log
    assert ":pw@" not in result.log
