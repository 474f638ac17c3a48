"""Several scrapy-redis spiders sharing one frontier *and* one neardup index.

Run as many copies as you like (on one machine or many), all pointing at the same Redis::

    scrapy runspider shared_index_spider.py -s REDIS_URL=redis://127.0.0.1:6379/0 -o items-1.jsonl
    scrapy runspider shared_index_spider.py -s REDIS_URL=redis://127.0.0.1:6379/0 -o items-2.jsonl
    redis-cli lpush shared_index:start_urls http://127.0.0.1:8000/

scrapy-redis shares the request queue and the seen-url filter; neardup-scrapy shares the
near-duplicate index (``NEARDUP_STORAGE = "redis"``; the index lives under the key prefix
``NEARDUP_REDIS_PREFIX``, by default the spider name, and uses ``REDIS_URL`` unless
``NEARDUP_REDIS_URL`` is set). Every page is checked and inserted atomically, so when two
processes fetch near-duplicates at the same moment exactly one is tagged ``unique``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider


class SharedIndexSpider(RedisSpider):
    """Follows every link (set ``allowed_domains`` for a real site); one item per page, tagged by neardup."""

    name = "shared_index"
    custom_settings = {
        # scrapy-redis: shared scheduler queue and seen-url filter; keep them when one spider stops
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 10,  # stop when the shared queue stays empty this long
        # neardup-scrapy: one index in the same Redis for every process
        "ADDONS": {"neardup_scrapy.Addon": 100},
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_ON_STORAGE_ERROR": "stop",
        "ROBOTSTXT_OBEY": False,
    }

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        """Yield the page's item and follow its links."""
        yield {
            "url": response.url,
            "title": response.css("title::text").get(),
        }
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if urlsplit(url).scheme in ("http", "https"):
                yield scrapy.Request(url, callback=self.parse)
