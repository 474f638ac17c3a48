"""The scrapy-redis example: two spider processes share one frontier and one neardup index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_server import Site, html_page, loopback_available, serve

from tests.core.storage.test_storage_support import corpus

pytestmark = [pytest.mark.redis, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
SPIDER = ROOT / "example_project" / "redis_example" / "shared_index_spider.py"


def two_host_site(groups: int, base: str) -> tuple[Site, Site]:
    """Host 1: an index and articles; host 2: a mirror (another template) of every article."""
    pages = corpus(groups, 1, seed=41, exact_every=0)
    first, second = Site(), Site()
    links = []
    for url, text, group in pages:
        words = text.split()
        paragraphs = [" ".join(words[i : i + 50]) for i in range(0, len(words), 50)]
        if "/doc/" in url:
            first.add(f"/a/{group}", html_page(f"Article {group}", paragraphs, links=[f"{base}/m/{group}"]))
            links.append(f"/a/{group}")
        else:
            # a mirror copies the article, title included, into its own template
            mirrored = html_page(f"Article {group}", paragraphs, extra="<aside>mirror</aside>")
            second.add(f"/m/{group}", mirrored)
    first.add("/", html_page("Index", ["The index of the test site."], links=links))
    return first, second


@pytest.mark.skipif(not loopback_available("127.0.0.2"), reason="127.0.0.2 is not available")
def test_two_scrapy_redis_spiders_share_one_index(redis_url: tuple[str, str], tmp_path: Path) -> None:
    import redis

    url, prefix = redis_url
    groups = 20
    # the mirror host's port is only known once served: serve host 2 first
    _, mirror = two_host_site(groups, "")
    with serve({"127.0.0.2": mirror}) as mirror_urls:
        site, _ = two_host_site(groups, mirror_urls["127.0.0.2"])
        with serve({"127.0.0.1": site}) as urls:
            settings = {
                "REDIS_URL": url,
                "REDIS_START_URLS_KEY": f"{prefix}:start_urls",
                "SCHEDULER_QUEUE_KEY": f"{prefix}:requests",
                "SCHEDULER_DUPEFILTER_KEY": f"{prefix}:dupefilter",
                "NEARDUP_REDIS_PREFIX": f"{prefix}:neardup",
                # Each process idles from its own start until the start url is pushed, which
                # waits for both: on a busy machine the second can open 10 s or more after the
                # first (seen in CI: the first had closed, idle, and the other did all the work).
                "MAX_IDLE_TIME_BEFORE_CLOSE": 30,
                # One request at a time per process, 0.3 s apart: a crawl of about 13 s, which
                # one process cannot drain before the other's engine polls the shared queue
                # (Scrapy polls an idle scheduler every 5 s); with 16 slots each, a fast process
                # took every request before the other looked.
                "DOWNLOAD_DELAY": 0.3,
                "CONCURRENT_REQUESTS": 1,
                "LOG_LEVEL": "INFO",
                "TELNETCONSOLE_ENABLED": False,
            }
            args = [a for k, v in settings.items() for a in ("-s", f"{k}={v}")]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
            command = [sys.executable, "-m", "scrapy", "runspider", str(SPIDER), *args]

            def launch(n: int) -> subprocess.Popen[bytes]:
                log = (tmp_path / f"log-{n}.txt").open("w")
                out = ["-o", str(tmp_path / f"items-{n}.jsonl")]
                return subprocess.Popen(
                    [*command, *out], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
                )

            def wait_for(condition: Callable[[], bool]) -> None:
                deadline = time.monotonic() + 60
                while not condition() and time.monotonic() < deadline:
                    time.sleep(0.1)

            # both spiders are open before the crawl starts (on a busy machine one process can
            # start seconds after the other and would find the shared queue already drained)
            procs = [launch(0), launch(1)]
            for n in range(2):
                wait_for(lambda n=n: "Spider opened" in (tmp_path / f"log-{n}.txt").read_text())
            client = redis.Redis.from_url(url)
            client.rpush(f"{prefix}:start_urls", urls["127.0.0.1"] + "/")
            for proc in procs:
                assert proc.wait(120) == 0, (tmp_path / "log-0.txt").read_text()[-3000:]
    logs = "".join((tmp_path / f"log-{n}.txt").read_text() for n in range(2))
    assert "Traceback" not in logs, logs[-3000:]
    items = []
    per_process = []
    for n in range(2):
        path = tmp_path / f"items-{n}.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        got = [json.loads(line) for line in lines if line.strip()]
        per_process.append(len(got))
        items += got
    starts = ("/",)
    urls_seen = [i["url"] for i in items if not i["url"].endswith(starts)]
    # each page crawled once overall (start urls are not in the seen-url filter: Scrapy does not
    # filter start requests, so links back to them may fetch them once more)
    assert len(urls_seen) == len(set(urls_seen)) == 2 * groups
    assert all(n > 0 for n in per_process), per_process  # both processes did work
    articles = [i for i in items if "/a/" in i["url"] or "/m/" in i["url"]]
    clusters: dict[str, list[str]] = {}
    for item in articles:
        clusters.setdefault(item["neardup"]["cluster"], []).append(item["neardup"]["status"])
    assert len(clusters) == groups, logs[-3000:]
    for statuses in clusters.values():  # one original per cluster, over both processes
        assert statuses.count("unique") == 1 and set(statuses) <= {"unique", "near", "exact"}, clusters
    assert sum(s.count("near") for s in clusters.values()) == groups  # every mirror page found
