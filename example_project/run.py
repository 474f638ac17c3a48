"""Run the neardup-scrapy example: serve the demo site locally, crawl it, write the results.

Usage (from the repository root, after ``pip install -e .`` or ``pip install neardup-scrapy``)::

    python example_project/run.py

Writes to ``example_project/output/``: ``items.jsonl`` (one tagged item per page),
``neardup-report.json`` (format ``neardup-report/1``) and ``neardup-report.html`` (open it in a
browser). Needs no network: the demo site is served on 127.0.0.1 and 127.0.0.2.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    sys.path.insert(0, str(HERE))
    os.environ["SCRAPY_SETTINGS_MODULE"] = "demo.settings"
    from demo.servers import start_demo_servers
    from demo.settings import OUTPUT
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.project import get_project_settings

    servers = start_demo_servers()
    print("Demo site served at " + ", ".join(f"{name} {url}" for name, url in servers.urls.items()))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    process = CrawlerProcess(get_project_settings())
    failures: list[object] = []
    deferred = process.crawl("gazette", start_urls=servers.start_urls)
    deferred.addErrback(failures.append)
    process.start()
    servers.stop()
    if failures:
        for failure in failures:
            print(failure, file=sys.stderr)
        return 1

    items = OUTPUT / "items.jsonl"
    counts: dict[str, int] = {}
    for line in items.read_text(encoding="utf-8").splitlines():
        status = (json.loads(line).get("neardup") or {}).get("status", "untagged")
        counts[status] = counts.get(status, 0) + 1
    print()
    print("Items by verdict: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"Tagged items:     {items}")
    print(f"JSON report:      {OUTPUT / 'neardup-report.json'}")
    print(f"HTML report:      {OUTPUT / 'neardup-report.html'}  (open it in a browser)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
