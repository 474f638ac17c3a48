"""Duplicate-url rules: requests spent per document, documents lost, against other approaches.

Usage::

    python benchmarks/bench_urlrules.py [--runs 3] [--docs 60] [--maybedont DIR] [--only NAME,...]

Generated sites (``tests/urlrules_sites.py``) with the url habits of real sites -- session ids
fresh at every page view (an unbounded url space), ``;jsessionid=``, tracking links with a click
id per render, print and mobile views, ``index.html`` and trailing slashes, letter case, two
host names, a no-op sort parameter -- and traps: pagination, translations (``?lang=``), old
revisions under random-looking ids, documents reachable only through an alias. Pages carry a
rotating block and a view counter. Every site is served on its own loopback address
(127.0.0.2, ...; a second host name for the alias site), plus a control site whose urls hold no
duplicate (127.0.0.9).

Crawls (each a Scrapy process; every one capped at ``--cap`` times the documents):

* ``off``: Scrapy with its defaults, no plugin (its documents reached are the reference);
* ``rules-process`` / ``rules-inline``: the add-on with ``NEARDUP_SKIP_PREDICTED = True``, in
  each ``NEARDUP_WORKER`` mode, ``--runs`` times each;
* ``maybedont``: MaybeDont's ``AvoidDupContentMiddleware`` (github.com/TeamHG-Memex/MaybeDont,
  a checkout given by ``--maybedont``; needs ``pip install datasketch six``), fixed here only:
  its ``canonicalize_url`` import (gone from Scrapy; it silently fell back to no
  canonicalisation) now uses w3lib's, and ``random.sample`` gets a list (Python 3.11 refuses a
  set: a ``TypeError`` in ``process_response`` lost pages);
* ``w3lib``: requests' fingerprints from w3lib ``canonicalize_url`` with ``utm_*`` dropped;
* ``recrawl``: the add-on again with the rules file the first ``rules-process`` run wrote.

Scored from the servers' request logs: requests, documents reached, documents lost (reached by
``off`` but not by the crawl), duplicate downloads (requests for a document the crawl already
had). Prints one row per crawl and the acceptance checks.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from http.server import ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from urlrules_sites import HabitSite, handler_for  # noqa: E402

SPIDER = r"""
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

spec = json.loads(sys.argv[1])

class HabitSpider(scrapy.Spider):
    name = "habits"
    custom_settings = {}

    async def start(self):
        for url in spec["start"]:
            yield scrapy.Request(url, meta=dict(spec.get("meta", {})), errback=self.failed)

    def parse(self, response):
        yield {"url": response.url}
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if url.split("/")[2] in spec["hosts"]:
                yield scrapy.Request(url, meta=dict(spec.get("meta", {})), errback=self.failed)

    def failed(self, failure):
        value = failure.value
        if hasattr(value, "duplicate_of"):
            self.crawler.stats.inc_value("bench/errback_predicted")
            if getattr(value, "tag", None) is not None:
                self.crawler.stats.inc_value("bench/errback_tag")

    def closed(self, reason):
        stats = {k: v for k, v in self.crawler.stats.get_stats().items() if isinstance(v, (int, float))}
        print("RESULT " + json.dumps(stats), flush=True)

settings = {
    "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
    "RETRY_ENABLED": False, "COOKIES_ENABLED": False, "DOWNLOAD_TIMEOUT": 30,
    "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "CLOSESPIDER_PAGECOUNT": spec["cap"], "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
}
settings.update(spec["settings"])
if spec.get("maybedont"):
    sys.path.insert(0, spec["maybedont"])
    import random
    import w3lib.url
    import maybedont.predict, maybedont.utils
    fixed = lambda url: w3lib.url.canonicalize_url(url, keep_fragments=True)
    maybedont.utils.canonicalize_url = maybedont.predict.canonicalize_url = fixed
    original = maybedont.predict.DupePredictor._nodup_filter
    def _nodup_filter(self, min_hash, all_urls, max_sample=200):
        return original(self, min_hash, sorted(all_urls), max_sample)
    maybedont.predict.DupePredictor._nodup_filter = _nodup_filter
if spec.get("w3lib"):
    from scrapy.utils.request import RequestFingerprinter
    from w3lib.url import canonicalize_url, url_query_cleaner
    import hashlib
    class CanonicalFingerprinter:
        def fingerprint(self, request):
            url = canonicalize_url(request.url)
            base, _, query = url.partition("?")
            pairs = [p for p in query.split("&") if p and not p.startswith("utm_")]
            url = base + ("?" + "&".join(pairs) if pairs else "")
            return hashlib.sha1(url.encode()).digest()
    sys.modules["bench_fp"] = type(sys)("bench_fp")
    sys.modules["bench_fp"].CanonicalFingerprinter = CanonicalFingerprinter
    settings["REQUEST_FINGERPRINTER_CLASS"] = "bench_fp.CanonicalFingerprinter"
process = CrawlerProcess(settings)
process.crawl(HabitSpider)
process.start()
"""

#: name -> (habits, traps)
SITES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "sessions": (frozenset({"session", "tracking", "sort"}), frozenset({"pages", "revision"})),
    "jsession": (frozenset({"jsession", "print"}), frozenset({"lang"})),
    "statics": (frozenset({"index", "case", "tracking"}), frozenset({"pages"})),
    "aliased": (frozenset({"alias", "session"}), frozenset({"only-alias", "revision"})),
    "mobile": (frozenset({"mobile", "jsession", "tracking"}), frozenset({"only-alias", "lang"})),
    "control": (frozenset(), frozenset({"pages"})),
}
ADDRESSES = {
    "sessions": "127.0.0.2",
    "jsession": "127.0.0.3",
    "statics": "127.0.0.4",
    "aliased": "127.0.0.5",
    "mobile": "127.0.0.7",
    "control": "127.0.0.9",
}
SECOND_HOST = {"aliased": "127.0.0.6"}


class Sites:
    """The benchmark's sites, served on loopback; ``reset()`` before each crawl."""

    def __init__(self, n_docs: int, names: list[str] | None = None, seed: int = 0) -> None:
        self.sites: dict[str, HabitSite] = {}
        self.servers: list[ThreadingHTTPServer] = []
        for k, (name, (habits, traps)) in enumerate(SITES.items()):
            if names and name not in names:
                continue
            site = HabitSite(name, habits, traps, n_docs=n_docs, seed=seed * 100 + k)
            addresses = [ADDRESSES[name]] + ([SECOND_HOST[name]] if name in SECOND_HOST else [])
            hosts = []
            for address in addresses:
                server = ThreadingHTTPServer((address, 0), handler_for(site, {}))
                server.daemon_threads = True
                Thread(target=server.serve_forever, daemon=True).start()
                self.servers.append(server)
                hosts.append(f"{address}:{server.server_address[1]}")
            site.hosts = hosts
            self.sites[name] = site

    def reset(self) -> None:
        for site in self.sites.values():
            site.log.clear()

    @property
    def starts(self) -> list[str]:
        return [f"http://{site.hosts[0]}/" for site in self.sites.values()]

    @property
    def hosts(self) -> list[str]:
        return [h for site in self.sites.values() for h in site.hosts]

    def documents(self) -> int:
        return sum(len(site.documents()) for site in self.sites.values())

    def score(self) -> dict[str, Any]:
        """Requests, documents reached and duplicate downloads of the last crawl, per site."""
        out: dict[str, Any] = {}
        for name, site in self.sites.items():
            seen: set[str] = set()
            duplicates = 0
            for _host, _target, doc, _status in site.log:
                if doc is not None:
                    if doc in seen:
                        duplicates += 1
                    seen.add(doc)
            out[name] = {"requests": len(site.log), "reached": seen, "duplicates": duplicates}
        return out

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


def crawl(sites: Sites, settings: dict[str, Any], cap: int, **extra: Any) -> dict[str, Any]:
    """One crawl in a subprocess; returns its stats."""
    sites.reset()
    spec = {"start": sites.starts, "hosts": sites.hosts, "settings": settings, "cap": cap, **extra}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bench_spider.py"
        script.write_text(SPIDER)
        proc = subprocess.run(
            [sys.executable, str(script), json.dumps(spec)],
            capture_output=True,
            text=True,
            cwd=tmp,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
            timeout=1800,
        )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])  # type: ignore[no-any-return]
    raise SystemExit(f"crawl failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--docs", type=int, default=60, help="articles per site")
    parser.add_argument("--cap", type=float, default=8.0, help="requests cap per crawl, times the documents")
    parser.add_argument("--maybedont", default=os.environ.get("MAYBEDONT_DIR"), help="a MaybeDont checkout")
    parser.add_argument("--only", default="", help="comma-separated crawls to run")
    parser.add_argument("--json", help="write every crawl's figures to this file")
    parser.add_argument("--logs", help="write each crawl's request logs to this directory")
    args = parser.parse_args()

    sites = Sites(args.docs)
    total = sites.documents()
    cap = int(args.cap * total)
    only = set(args.only.split(",")) - {""}
    print(f"{len(sites.sites)} sites, {total} documents, cap {cap} requests per crawl")
    rules_file = Path(tempfile.mkdtemp()) / "rules.json"
    plugin = {"ADDONS": {"neardup_scrapy.Addon": 100}, "NEARDUP_SKIP_PREDICTED": True}
    plan: list[tuple[str, dict[str, Any], dict[str, Any]]] = [("off", {}, {})]
    for run in range(args.runs):
        for mode in ("process", "inline"):
            settings = {**plugin, "NEARDUP_WORKER": mode}
            if run == 0 and mode == "process":
                settings["NEARDUP_URL_RULES_FILE"] = str(rules_file)
            plan.append((f"rules-{mode}", settings, {}))
    if args.maybedont:
        md = {
            "AVOID_DUP_CONTENT_ENABLED": True,
            "DOWNLOADER_MIDDLEWARES": {"maybedont.scrapy_middleware.AvoidDupContentMiddleware": 200},
        }
        plan.append(("maybedont", md, {"maybedont": args.maybedont, "meta": {"avoid_dup_content": True}}))
    plan.append(("w3lib", {}, {"w3lib": True}))
    plan.append(("recrawl", {**plugin, "NEARDUP_URL_RULES_FILE": str(rules_file)}, {}))
    if only:
        plan = [p for p in plan if p[0] in only or p[0] == "off"]

    rows: list[dict[str, Any]] = []
    reference: dict[str, set[str]] = {}
    try:
        for name, settings, extra in plan:
            if name == "recrawl" and not rules_file.exists():
                continue
            report_path = Path(tempfile.mkdtemp()) / "report.json"
            if "ADDONS" in settings:
                settings = {**settings, "NEARDUP_REPORT_FILE": str(report_path)}
            stats = crawl(sites, settings, cap, **extra)
            saved_by_host: dict[str, int] = {}
            if report_path.exists():
                section = json.loads(report_path.read_text()).get("url_rules", {})
                saved_by_host = {h["host"]: h["saved"] for h in section.get("hosts", [])}
            score = sites.score()
            if args.logs:
                Path(args.logs).mkdir(parents=True, exist_ok=True)
                logs = {n: site.log for n, site in sites.sites.items()}
                Path(args.logs, f"{len(rows)}-{name}.json").write_text(json.dumps(logs))
            requests = sum(s["requests"] for s in score.values())
            reached = {n: s["reached"] for n, s in score.items()}
            if name == "off":
                reference = reached
            lost = sum(len(reference.get(n, set()) - reached[n]) for n in reached)
            row = {
                "crawl": name,
                "requests": requests,
                "per_document": requests / total,
                "reached": sum(len(r) for r in reached.values()),
                "lost": lost,
                "duplicates": sum(s["duplicates"] for s in score.values()),
                "skipped": stats.get("neardup/skipped/predicted", 0),
                "explored": stats.get("neardup/predicted/explored", 0),
                "rescheduled": stats.get("neardup/predicted/rescheduled", 0),
                "control_requests": score.get("control", {}).get("requests", 0),
                "control_skipped": sum(
                    saved_by_host.get(h, 0) for h in getattr(sites.sites.get("control"), "hosts", [])
                ),
                "sites": {
                    n: {
                        "requests": s["requests"],
                        "reached": len(s["reached"]),
                        "duplicates": s["duplicates"],
                        "lost": sorted(reference.get(n, set()) - s["reached"])[:5],
                        "missing": sorted(sites.sites[n].documents() - s["reached"])[:5],
                    }
                    for n, s in score.items()
                },
                "stats": stats,
            }
            rows.append(row)
            print(
                f"{name:14} requests {requests:6d} ({row['per_document']:.2f} per document)  reached "
                f"{row['reached']:4d}/{total}  lost {lost:3d}  duplicate downloads {row['duplicates']:5d}  "
                f"skipped {row['skipped']:5d}  explored {row['explored']:4d}  "
                f"rescheduled {row['rescheduled']:4d}  control skipped {row['control_skipped']}",
                flush=True,
            )
            for n, s in row["sites"].items():
                print(
                    f"    {n:10} requests {s['requests']:5d} reached {s['reached']:4d} "
                    f"dup {s['duplicates']:4d}"
                    + (f" lost {s['lost']}" if s["lost"] else "")
                    + (f" not reached {s['missing']}" if s["missing"] else "")
                )
    finally:
        sites.close()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=list))
    ours = [r for r in rows if r["crawl"].startswith("rules-")]
    if ours:
        worst = max(r["per_document"] for r in ours)
        print(
            f"rules crawls: worst {worst:.2f} requests per document (<= 1.5 required), "
            f"lost {max(r['lost'] for r in ours)} at most (0 required)"
        )
    for other in ("maybedont", "w3lib"):
        found = [r for r in rows if r["crawl"] == other]
        if found and ours:
            print(
                f"vs {other}: {found[0]['requests']} requests, lost {found[0]['lost']}; ours at most "
                f"{max(r['requests'] for r in ours)}"
            )
    recrawl = [r for r in rows if r["crawl"] == "recrawl"]
    if recrawl:
        r = recrawl[0]
        print(
            f"recrawl with saved rules: {r['duplicates']} duplicate downloads of {r['requests']} requests "
            f"({r['duplicates'] / max(1, r['requests']):.1%}; <= 5% required)"
        )


if __name__ == "__main__":
    main()
