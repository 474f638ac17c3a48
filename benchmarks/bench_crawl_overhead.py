"""Crawl overhead of neardup-scrapy: the same link-following crawl with and without the plugin.

Usage::

    python benchmarks/bench_crawl_overhead.py [EVAL_DEV_DIR] [--rounds 3] [--concurrency 16]
        [--pages N] [--latency-ms 0]

A local server (a thread of this process) serves the eval-dev pages under their own urls -- the
crawl uses it as its HTTP proxy, so the pages keep their hosts (``https://`` urls are fetched as
``http://``) -- plus generated list pages (``http://crawl-index.test/list/<k>``) that link to 25
pages each and to the next list page. The spider follows the list pages' links and, on every
page, takes the title and all the links (``response.css``), like a real crawl's parse.

Each round runs two crawls in separate subprocesses, one without the plugin (no add-on) and one
with ``ADDONS = {"neardup_scrapy.Addon": 100}`` (default settings, tag mode), alternating
which goes first; each crawl also reports its own CPU time per page (``time.process_time``),
whose ratio is the throughput ratio of a CPU-bound crawl, less moved by other work on the
machine. With ``--baseline-set NAME=VALUE`` the first crawl runs the plugin too, with those
settings (e.g. ``--baseline-set URL_RULES=False``: learning duplicate-url rules on, paired
against off). Throughput is pages per second between the first and the last parsed page
(start-up excluded). Prints each run, then the median ratio (with / without): >= 0.90 is
required, >= 0.95 the aim.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e_server import Page, ProxySite, crawl_url, start_server  # noqa: E402

INDEX_HOST = "http://crawl-index.test"
PER_LIST = 25

SPIDER = r"""
import json, sys, time
import scrapy
from scrapy.crawler import CrawlerProcess

spec = json.loads(sys.argv[1])

class BenchSpider(scrapy.Spider):
    name = "bench"
    first = last = None
    pages = 0

    async def start(self):
        yield self.req(spec["start"], self.parse_list)

    def req(self, url, callback):
        return scrapy.Request(url, callback=callback, meta={"proxy": spec["proxy"]})

    def parse_list(self, response):
        for href in response.css("a.page::attr(href)").getall():
            yield self.req(href, self.parse_page)
        for href in response.css("a.next::attr(href)").getall():
            yield self.req(href, self.parse_list)

    def parse_page(self, response):
        now = time.perf_counter()
        if self.first is None:
            self.first, self.first_cpu = now, time.process_time()
        self.last, self.last_cpu = now, time.process_time()
        self.pages += 1
        links = response.css("a::attr(href)").getall()
        yield {"url": response.url, "title": response.css("title::text").get(), "links": len(links)}

    def closed(self, reason):
        elapsed = (self.last or 0) - (self.first or 0)
        cpu = (getattr(self, "last_cpu", 0) or 0) - (getattr(self, "first_cpu", 0) or 0)
        print("RESULT " + json.dumps({"pages": self.pages, "elapsed": elapsed, "cpu": cpu,
              "neardup_pages": self.crawler.stats.get_value("neardup/pages", 0),
              "dups": self.crawler.stats.get_value("neardup/exact", 0)
                      + self.crawler.stats.get_value("neardup/near", 0)}), flush=True)

settings = {
    "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
    "CONCURRENT_REQUESTS": spec["concurrency"], "CONCURRENT_REQUESTS_PER_DOMAIN": spec["concurrency"],
    "RETRY_ENABLED": False, "COOKIES_ENABLED": False, "DOWNLOAD_TIMEOUT": 60,
}
if spec["plugin"]:
    settings["ADDONS"] = {"neardup_scrapy.Addon": 100}
    settings.update(spec["neardup_settings"])
process = CrawlerProcess(settings)
process.crawl(BenchSpider)
process.start()
"""


def load_pages(eval_dir: Path, limit: int | None) -> list[tuple[str, str]]:
    pages = []
    with gzip.open(eval_dir / "pages.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            pages.append((record["url"], record["html"]))
            if limit and len(pages) >= limit:
                break
    return pages


def build_site(pages: list[tuple[str, str]], latency: float) -> tuple[ProxySite, str]:
    site = ProxySite()
    urls = []
    for url, html in pages:
        target = crawl_url(url)
        urls.append(target)
        site.add(target, Page(html))
    lists = (len(urls) + PER_LIST - 1) // PER_LIST
    for k in range(lists):
        chunk = urls[k * PER_LIST : (k + 1) * PER_LIST]
        links = "".join(
            f'<li><a class="page" href="{u}">page {k * PER_LIST + i}</a></li>' for i, u in enumerate(chunk)
        )
        nxt = f'<a class="next" href="{INDEX_HOST}/list/{k + 1}">next</a>' if k + 1 < lists else ""
        site.add(
            f"{INDEX_HOST}/list/{k}",
            Page(f"<html><head><title>list {k}</title></head><body><ul>{links}</ul>{nxt}</body></html>"),
        )
    if latency:
        original = site.lookup

        def slow(target: str) -> Page | None:
            time.sleep(latency)
            return original(target)

        site.lookup = slow  # type: ignore[method-assign]
    return site, f"{INDEX_HOST}/list/0"


def run_one(
    proxy: str,
    start: str,
    plugin: bool,
    concurrency: int,
    neardup_settings: dict[str, str],
    baseline: dict[str, str] | None = None,
    callgrind: bool = False,
) -> dict[str, float]:
    if not plugin and baseline is not None:
        plugin, neardup_settings = True, {**neardup_settings, **baseline}
    spec = {
        "proxy": proxy,
        "start": start,
        "plugin": plugin,
        "concurrency": concurrency,
        "neardup_settings": neardup_settings,
    }
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bench_spider.py"  # a file: Scrapy reads callbacks' source
        script.write_text(SPIDER)
        counts = Path(tmp) / "callgrind.out"
        tool = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={counts}"] if callgrind else []
        proc = subprocess.run(
            [*tool, sys.executable, str(script), json.dumps(spec)],
            capture_output=True,
            text=True,
            cwd=tmp,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
        instructions = 0
        if callgrind and counts.exists():
            for line in counts.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    instructions = int(line.split()[1])
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, float] = json.loads(line[7:])
            result["rate"] = result["pages"] / result["elapsed"] if result["elapsed"] else 0.0
            result["instructions"] = instructions
            return result
    raise SystemExit(f"crawl failed:\n{proc.stdout}\n{proc.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "eval_dev", nargs="?", default=os.environ.get("NEARDUP_EVAL_DEV", ROOT.parent / "shared" / "eval-dev")
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--pages", type=int, default=0, help="use the first N pages (default: all)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="server delay per response")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a NEARDUP_* setting, e.g. WORKER=inline",
    )
    parser.add_argument(
        "--baseline-set",
        action="append",
        default=None,
        metavar="NAME=VALUE",
        help="run the baseline with the plugin and this NEARDUP_* setting (e.g. URL_RULES=False)",
    )
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="run each crawl under valgrind --tool=callgrind and compare the crawl process's "
        "instructions per page (slow: use --pages 300; unmoved by other work on the machine)",
    )
    args = parser.parse_args()

    def named(items: list[str]) -> dict[str, str]:
        out = {}
        for item in items:
            name, _, value = item.partition("=")
            out[name if name.startswith("NEARDUP_") else f"NEARDUP_{name}"] = value
        return out

    neardup_settings = named(args.set)
    baseline = named(args.baseline_set) if args.baseline_set is not None else None
    pages = load_pages(Path(args.eval_dev), args.pages or None)
    site, start = build_site(pages, args.latency_ms / 1000)
    server, proxy = start_server("127.0.0.1", site)
    print(
        f"{len(pages)} pages, {args.rounds} rounds, concurrency {args.concurrency}, "
        f"latency {args.latency_ms:g} ms, settings {neardup_settings or 'default'}, "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    try:
        for round_no in range(args.rounds):
            order = [False, True] if round_no % 2 == 0 else [True, False]
            results = {}
            for plugin in order:
                results[plugin] = run_one(
                    proxy, start, plugin, args.concurrency, neardup_settings, baseline, args.callgrind
                )
            base, with_plugin = results[False], results[True]
            ratio = with_plugin["rate"] / base["rate"]
            ratios.append(ratio)
            # the crawl's own CPU per page (its core is what a CPU-bound crawl is limited by): less
            # sensitive than wall time to other work on a shared machine
            cpu_ratio = (base["cpu"] / base["pages"]) / (with_plugin["cpu"] / with_plugin["pages"])
            cpu_ratios.append(cpu_ratio)
            if args.callgrind:
                per_page = [r["instructions"] / r["pages"] for r in (base, with_plugin)]
                cpu_ratio = per_page[0] / per_page[1]
                cpu_ratios[-1] = cpu_ratio
                print(
                    f"instructions per page of the crawl process: without {per_page[0]:,.0f}, "
                    f"with {per_page[1]:,.0f}"
                )
            print(
                f"round {round_no + 1}: without {base['rate']:7.1f} pages/s ({base['pages']:.0f} pages)   "
                f"with {with_plugin['rate']:7.1f} pages/s ({with_plugin['pages']:.0f} pages, "
                f"{with_plugin['neardup_pages']:.0f} checked, {with_plugin['dups']:.0f} duplicates)   "
                f"ratio {ratio:.3f}  (crawl CPU per page, without / with: {cpu_ratio:.3f})"
            )
    finally:
        server.shutdown()
        server.server_close()
    median = statistics.median(ratios)
    verdict = (
        "OK (aim >= 0.95 met)" if median >= 0.95 else "OK" if median >= 0.90 else "BELOW the 0.90 requirement"
    )
    print(f"throughput ratio with/without neardup (median of {len(ratios)}): {median:.3f}  {verdict}")
    what = "instructions" if args.callgrind else "CPU"
    print(f"crawl {what} per page, without / with (median): {statistics.median(cpu_ratios):.3f}")


if __name__ == "__main__":
    main()
