"""Settings of the example project: neardup-scrapy enabled through its add-on."""

from __future__ import annotations

import os
from pathlib import Path

# Where the items and reports go (the tests point it elsewhere).
OUTPUT = Path(os.environ.get("NEARDUP_EXAMPLE_OUTPUT") or Path(__file__).resolve().parent.parent / "output")

BOT_NAME = "demo"
SPIDER_MODULES = ["demo.spiders"]
NEWSPIDER_MODULE = "demo.spiders"

# The demo site is local; no robots.txt, no politeness delay needed.
ROBOTSTXT_OBEY = False
CONCURRENT_REQUESTS = 8
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"

# Breadth-first order: the Gazette's own pages come before the copies that its "About" page
# links to, so the copies are the ones reported as duplicates.
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"

# --- neardup-scrapy ---------------------------------------------------------------------------
ADDONS = {"neardup_scrapy.Addon": 100}

NEARDUP_ACTION = "tag"  # "drop" would drop duplicate pages before the spider parses them
NEARDUP_THRESHOLD = 0.8
NEARDUP_SKIP_MIRRORS = True  # stop fetching a host once it is confirmed as a mirror
NEARDUP_REPORT_FILE = str(OUTPUT / "neardup-report.json")
NEARDUP_REPORT_HTML = str(OUTPUT / "neardup-report.html")

FEEDS = {
    str(OUTPUT / "items.jsonl"): {"format": "jsonlines", "encoding": "utf-8", "overwrite": True},
}
