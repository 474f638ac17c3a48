"""Several crawler processes on one Redis Cluster index: exports, reports and a failover.

Real crawls (one Python process each) on a private local cluster (3 primaries, 3 replicas,
``cluster-node-timeout`` 1.5 s), each crawling a site of its own into one shared index:

* without any fault, two and four processes each write their report and both full exports (the
  exports read the pages that exist: ids have gaps when processes take ids at once);
* the primary of the serialisation slot (every commit goes there) killed mid-crawl: every
  process that found the store failing checks pages again within 5 s of the replica's
  promotion, and every process writes its report and exports;
* the same primary killed as the crawls end: the report and exports at close wait for the
  promoted replica instead of being given up.

Nothing is lost: every page yields its item, tagged; pages passed unchecked are counted.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import _need as need
from e2e_crawl import CrawlResult, run_crawl
from e2e_server import loopback_available, serve
from redis_cluster_support import LocalCluster, have_redis_server, start_cluster

from tests.e2e.test_redis_crawl import article_site

pytestmark = [pytest.mark.redis, pytest.mark.e2e]

GROUPS = 30  # 2 * GROUPS + 1 pages per site
PAGES = 2 * GROUPS + 1
PREFIX = "shared"
#: Log lines carry the epoch time with milliseconds, to compare with the promotion.
LOG_FORMAT = "%(created).3f [%(name)s] %(levelname)s: %(message)s"


@pytest.fixture
def private_cluster() -> Iterator[LocalCluster]:
    if not have_redis_server():
        need("redis-server / redis-cli not found: cannot start a local Redis Cluster")
    cluster = start_cluster(node_timeout_ms=1500)
    try:
        yield cluster
    finally:
        cluster.stop()


def _crawls(
    cluster: LocalCluster, tmp_path: Path, processes: int, kill_after: int | None = None
) -> tuple[list[CrawlResult], float | None]:
    """``processes`` crawls at once, each of its own site; with ``kill_after``, the primary of the
    serialisation slot is killed once each crawl has fetched that many pages on average.

    Returns the results and the time (``time.time()``) the replica was seen promoted.
    """
    hosts = [f"127.0.0.{k + 1}" for k in range(processes)]
    if not all(loopback_available(h) for h in hosts):
        pytest.skip("127.0.0.2 ... are not configured as loopback addresses here")
    sites = {host: article_site(groups=GROUPS, seed=40 + k) for k, host in enumerate(hosts)}
    results: list[CrawlResult | None] = [None] * processes
    promoted: float | None = None
    with serve(sites) as urls:

        def crawl(k: int) -> None:
            results[k] = run_crawl(
                "LinkSpider",
                {
                    "NEARDUP_STORAGE": "redis-cluster",
                    "NEARDUP_REDIS_URL": cluster.url,
                    "NEARDUP_REDIS_PREFIX": PREFIX,
                    "NEARDUP_REPORT_FILE": str(tmp_path / f"report-{k}.json"),
                    "NEARDUP_CLUSTERS_FILE": str(tmp_path / f"clusters-{k}.jsonl"),
                    "NEARDUP_PAIRS_FILE": str(tmp_path / f"pairs-{k}.jsonl"),
                    "CONCURRENT_REQUESTS": 2,
                    "DOWNLOAD_DELAY": 0.2 if kill_after is not None else 0,
                    "LOG_LEVEL": "INFO",
                    "LOG_FORMAT": LOG_FORMAT,
                },
                start=urls[hosts[k]] + "/",
                timeout=240,
            )

        threads = [threading.Thread(target=crawl, args=(k,)) for k in range(processes)]
        for thread in threads:
            thread.start()
        if kill_after is not None:
            while sum(len(site.hits) for site in sites.values()) < kill_after * processes:
                time.sleep(0.01)
            from redis.cluster import RedisCluster

            client = RedisCluster.from_url(cluster.url)
            serialising = client.get_node_from_key("{" + PREFIX + "}:m").port
            client.close()
            replica = cluster.replica_of(serialising)
            cluster.kill(serialising)
            promoted = cluster.wait_promoted(replica)
        for thread in threads:
            thread.join()
    done = [r for r in results if r is not None]
    assert len(done) == processes
    return done, promoted


def _logged_at(result: CrawlResult, pattern: str) -> list[float]:
    """Times of the log lines that match ``pattern``."""
    return [
        float(line.split(" ", 1)[0])
        for line in result.log.splitlines()
        if re.match(r"\d+\.\d+ ", line) and re.search(pattern, line)
    ]


def _everything_written(results: list[CrawlResult], tmp_path: Path) -> None:
    for k, result in enumerate(results):
        assert result.returncode == 0, result.log[-3000:]
        assert "Traceback" not in result.log, result.log[-3000:]
        assert "cannot read the clusters" not in result.log, result.log[-3000:]
        assert "cannot build the report" not in result.log, result.log[-3000:]
        report = json.loads((tmp_path / f"report-{k}.json").read_text())
        assert report["totals"]["storage_errors"] == result.stat("neardup/storage_errors")
        clusters = [json.loads(line) for line in (tmp_path / f"clusters-{k}.jsonl").read_text().splitlines()]
        members = [m["url"] for row in clusters for m in row["members"]]
        assert len(members) == len(set(members)) >= PAGES - result.stat("neardup/storage_errors")
        pairs = (tmp_path / f"pairs-{k}.jsonl").read_text().splitlines()
        assert len(pairs) == sum(row["size"] - 1 for row in clusters)
        # nothing lost: every page gave its item, tagged; pages passed unchecked are counted
        assert len(result.items) == PAGES
        assert all(
            item["neardup"]["status"] in ("unique", "exact", "near", "skipped") for item in result.items
        )
        skipped = sum(item["neardup"]["status"] == "skipped" for item in result.items)
        assert skipped == result.stat("neardup/storage_errors")
    # the report written last covers every process's pages (all checked by then), but for the
    # last commits a replica had not received when its primary died (replication is asynchronous)
    last = max(range(len(results)), key=lambda k: _logged_at(results[k], "report written")[-1])
    checked = sum(PAGES - r.stat("neardup/storage_errors") for r in results)
    indexed = json.loads((tmp_path / f"report-{last}.json").read_text())["totals"]["pages"]
    assert checked - 2 * len(results) <= indexed <= checked


@pytest.mark.parametrize("processes", [2, 4])
def test_processes_sharing_a_cluster_index_write_their_exports(
    private_cluster: LocalCluster, tmp_path: Path, processes: int
) -> None:
    results, _ = _crawls(private_cluster, tmp_path, processes)
    _everything_written(results, tmp_path)
    for result in results:
        assert result.stat("neardup/storage_errors") == 0


def test_checking_resumes_within_5s_of_the_promotion_in_every_process(
    private_cluster: LocalCluster, tmp_path: Path
) -> None:
    results, promoted = _crawls(private_cluster, tmp_path, 2, kill_after=10)
    assert promoted is not None
    _everything_written(results, tmp_path)
    failed = 0
    for result in results:
        off = _logged_at(result, r"the index store failed .*checking is off")
        back = _logged_at(result, r"the index store answers again; checking is on again")
        if not off:  # this process's calls rode the failover out inside their retries
            assert result.stat("neardup/storage_errors") == 0
            continue
        failed += 1
        assert back, result.log[-3000:]
        print(f"checking off {off[0] - promoted:+.2f} s, back {back[0] - promoted:+.2f} s after promotion")
        assert back[0] - promoted <= 5.0, f"checking came back {back[0] - promoted:.2f} s after the promotion"
    print(f"failover: {failed} of {len(results)} processes found the store failing")


def test_report_and_exports_wait_for_the_promotion_at_close(
    private_cluster: LocalCluster, tmp_path: Path
) -> None:
    results, promoted = _crawls(private_cluster, tmp_path, 2, kill_after=PAGES - 3)
    assert promoted is not None
    _everything_written(results, tmp_path)
