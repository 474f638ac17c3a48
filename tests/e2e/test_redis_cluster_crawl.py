"""A Scrapy crawl with ``NEARDUP_STORAGE = "redis-cluster"``: settings to verdicts and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_crawl import run_crawl
from e2e_server import serve

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage
from tests.e2e.test_redis_crawl import article_site

pytestmark = [pytest.mark.redis, pytest.mark.e2e]

GROUPS = 12


def test_crawl_on_the_cluster_tags_print_copies(redis_cluster_url: tuple[str, str], tmp_path: Path) -> None:
    url, prefix = redis_cluster_url
    site = article_site(groups=GROUPS)
    report = tmp_path / "report.json"
    with serve({"127.0.0.1": site}) as urls:
        result = run_crawl(
            "LinkSpider",
            {
                "NEARDUP_STORAGE": "redis-cluster",
                "NEARDUP_REDIS_URL": url,
                "NEARDUP_REDIS_PREFIX": prefix,
                "NEARDUP_REPORT_FILE": str(report),
                "LOG_LEVEL": "INFO",
            },
            start=urls["127.0.0.1"] + "/",
        )
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-3000:]
    assert f"redis-cluster ({url}, prefix {prefix!r})" in result.log
    assert result.stat("neardup/storage_errors") == 0
    tags = {item["url"].split("/", 3)[3]: item["neardup"] for item in result.items}
    for group in range(GROUPS):
        article, copy = tags[f"article/{group}"], tags[f"print/{group}"]
        first, second = sorted((article, copy), key=lambda t: t["status"] != "unique")
        assert first["status"] == "unique" and second["status"] in ("near", "exact"), (article, copy)
    totals = json.loads(report.read_text())["totals"]
    assert totals["pages"] == 2 * GROUPS + 1 and totals["unique"] == GROUPS + 1
    # the index stays in the cluster: another process sees the crawl's pages
    again = RedisClusterStorage(url, prefix=prefix)
    det = NearDupDetector(storage=again)
    assert len(again) == 2 * GROUPS + 1
    hist, _ = again.clusters(max_clusters=1, max_members=1)
    assert hist == {2: GROUPS}
    det.close()
