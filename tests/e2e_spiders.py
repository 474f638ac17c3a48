"""Spiders and item classes for the end-to-end crawl tests (run by ``tests/e2e_crawl.py``)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import scrapy
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule
from twisted.python.failure import Failure

from neardup_scrapy.core.storage.base import StorageError
from neardup_scrapy.core.storage.memory import MemoryStorage


class PageItem(scrapy.Item):
    url = scrapy.Field()
    title = scrapy.Field()
    body = scrapy.Field()
    neardup = scrapy.Field()


class PageItemWithoutTag(scrapy.Item):
    url = scrapy.Field()
    title = scrapy.Field()
    body = scrapy.Field()


@dataclasses.dataclass
class PageData:
    url: str
    title: str | None = None
    body: str | None = None
    neardup: dict[str, Any] | None = None


@attrs.define
class PageAttrs:
    url: str
    title: str | None = None
    body: str | None = None
    neardup: dict[str, Any] | None = None


ITEM_TYPES: dict[str, Any] = {
    "dict": dict,
    "item": PageItem,
    "item_without_tag": PageItemWithoutTag,
    "dataclass": PageData,
    "attrs": PageAttrs,
}


class LinkSpider(scrapy.Spider):
    """Follows every link of HTML pages on the start urls' hosts; one item per HTML page.

    Args:
        start: start urls, comma-separated.
        item_type: ``dict``, ``item``, ``item_without_tag``, ``dataclass`` or ``attrs``.
        items_per_page: items to yield per page (the same text).
        use_async: parse with an ``async def`` callback (async generator).
        dont_neardup: comma-separated urls requested with ``meta["dont_neardup"]``.
        binary_items: also yield an item for non-HTML responses.
    """

    name = "links"

    def __init__(
        self,
        start: str = "",
        item_type: str = "dict",
        items_per_page: int = 1,
        use_async: bool = False,
        dont_neardup: str = "",
        binary_items: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.start_list = [u for u in start.split(",") if u]
        self.item_cls = ITEM_TYPES[item_type]
        self.items_per_page = int(items_per_page)
        self.use_async = bool(use_async)
        self.opt_out = {u for u in dont_neardup.split(",") if u}
        self.binary_items = bool(binary_items)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.start_list:
            yield self._request(url)

    def _request(self, url: str) -> scrapy.Request:
        callback = self.parse_async if self.use_async else self.parse
        meta = {"dont_neardup": True} if url in self.opt_out else {}
        return scrapy.Request(url, callback=callback, errback=self.failed, meta=meta)

    def failed(self, failure: Failure) -> None:
        out = self.settings.get("E2E_OUT")
        if out:
            with (Path(out) / "errbacks.jsonl").open("a") as fh:
                request = getattr(failure, "request", None)
                record = {
                    "url": request.url if request is not None else None,
                    "exception": type(failure.value).__name__,
                    "message": str(failure.value),
                }
                fh.write(json.dumps(record) + "\n")

    def _item(self, response: Response) -> Any:
        if isinstance(response, HtmlResponse):
            title = response.css("title::text").get()
            # "article p::text, main p::text" in one pass (libxml2 merges a union's node sets in
            # quadratic time: 100k paragraphs took 90 s), as strings (no Selector per text node)
            paragraphs = response.selector.root.xpath("//p[ancestor::article or ancestor::main]/text()")
            body = " ".join(t.strip() for t in paragraphs)
        else:
            title, body = None, None
        return self.item_cls(url=response.url, title=title, body=body)

    def _links(self, response: Response) -> Iterator[scrapy.Request]:
        if not isinstance(response, TextResponse):
            return
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if url.startswith("http"):
                yield self._request(url)

    def parse(self, response: Response) -> Iterator[Any]:
        if isinstance(response, HtmlResponse) or self.binary_items:
            for _ in range(self.items_per_page):
                yield self._item(response)
        yield from self._links(response)

    async def parse_async(self, response: Response) -> AsyncIterator[Any]:
        for obj in self.parse(response):
            yield obj


class ListSpider(scrapy.Spider):
    """Requests a list of urls in order (priority decreasing), yields one item per response.

    ``urls_file``: JSON list of ``[index, url]``; requests go through ``proxy`` when given.
    """

    name = "list"

    def __init__(self, urls_file: str = "", proxy: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = json.loads(Path(urls_file).read_text()) if urls_file else []
        self.proxy = proxy

    async def start(self) -> AsyncIterator[Any]:
        for index, url in self.urls:
            meta: dict[str, Any] = {"index": index}
            if self.proxy:
                meta["proxy"] = self.proxy
            yield scrapy.Request(url, callback=self.parse, meta=meta, priority=-index, dont_filter=True)

    def parse(self, response: Response) -> Iterator[dict[str, Any]]:
        # whether Scrapy's tree was built before the callback (this spider never reads it)
        built = getattr(response, "_cached_selector", None) is not None
        yield {"index": response.meta["index"], "url": response.url, "selector_built": built}


class FailingStorage(MemoryStorage):
    """A memory store that fails on purpose, chosen by its prefix (``NEARDUP_REDIS_PREFIX``).

    * ``fail-open``: opening fails (the crawl must not start);
    * ``fail-after-N``: every lookup after the first N fails (the store is "lost" mid-crawl);
    * ``fail-between-N-M``: lookups N..M-1 fail, then it answers again;
    * ``bug-after-N``: every lookup after the first N raises ``KeyError`` (a bug, not a
      ``StorageError``).
    """

    def __init__(
        self,
        path: str | None = None,
        redis_url: str | None = None,
        prefix: str = "",
        ttl: float | None = None,
    ) -> None:
        super().__init__(ttl=ttl)
        self.mode = prefix
        self.lookups = 0

    def open(self, signature: Mapping[str, Any]) -> None:
        if self.mode == "fail-open":
            raise StorageError("connection refused (test store)")
        super().open(signature)

    def lookup(self, keys: Any) -> Any:
        self.lookups += 1
        parts = self.mode.split("-")
        if parts[:2] == ["fail", "after"] and self.lookups > int(parts[2]):
            raise StorageError("connection lost (test store)")
        if parts[:2] == ["fail", "between"] and int(parts[2]) <= self.lookups < int(parts[3]):
            raise StorageError("connection lost (test store)")
        if parts[:2] == ["bug", "after"] and self.lookups > int(parts[2]):
            raise KeyError("a bug in the test store")
        return super().lookup(keys)


class ThreadRecordingStorage(MemoryStorage):
    """A memory store that writes the names of the threads its lookups ran on (a JSON list)
    to the file named by its prefix (``NEARDUP_REDIS_PREFIX``) when it is closed."""

    def __init__(self, prefix: str = "", ttl: float | None = None, **_: Any) -> None:
        super().__init__(ttl=ttl)
        self.record = Path(prefix)
        self.threads: set[str] = set()

    def lookup(self, keys: Any) -> Any:
        self.threads.add(threading.current_thread().name)
        return super().lookup(keys)

    def lookup_or_insert(self, *args: Any, **kwargs: Any) -> Any:
        self.threads.add(threading.current_thread().name)
        return super().lookup_or_insert(*args, **kwargs)

    def close(self) -> None:
        self.record.write_text(json.dumps(sorted(self.threads)))
        super().close()


class HangingReportStorage(MemoryStorage):
    """A memory store whose report never finishes (as a damaged index once made it loop)."""

    def __init__(self, **_: Any) -> None:
        super().__init__()

    def host_counts(self) -> Any:
        time.sleep(3600)
        return super().host_counts()


class KillerSpider(ListSpider):
    """:class:`ListSpider` that kills the neardup worker process (``kill -9``) in the callback of
    the responses whose indexes are listed in ``kill_after`` (comma-separated). It first waits a
    second, so the idle worker has committed its disk batch (the kill then loses nothing). Use
    ``DOWNLOAD_DELAY`` so that the next response is not checked before the kill."""

    name = "killer"

    def __init__(self, kill_after: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kill_after = {int(i) for i in kill_after.split(",") if i}

    def parse(self, response: Response) -> Iterator[dict[str, Any]]:
        if response.meta["index"] in self.kill_after:  # (blocks the reactor: nothing else runs)
            worker = self.crawler._neardup_runtime.checker.worker
            time.sleep(1.0)
            os.kill(worker.pid, signal.SIGKILL)
            time.sleep(0.3)
        yield from super().parse(response)


class OrderRecorder:
    """Downloader middleware (priority 541, just before neardup's 540 on responses): writes the
    url of every response, in the order neardup receives them, to ``E2E_OUT/order.txt``."""

    def __init__(self, out: str) -> None:
        self.file = (Path(out) / "order.txt").open("a", encoding="utf-8")

    @classmethod
    def from_crawler(cls, crawler: Any) -> OrderRecorder:
        return cls(crawler.settings.get("E2E_OUT"))

    def process_response(self, request: Any, response: Response, spider: Any = None) -> Response:
        self.file.write(response.url + "\n")
        self.file.flush()
        return response


_LATENCY_STARTED: dict[str, float] = {}


class LatencyBefore:
    """Downloader middleware at 541 (just before neardup's 540 on responses): notes when each
    response reaches neardup. With :class:`LatencyAfter` at 539, ``E2E_OUT/latency.jsonl`` gets
    ``{"url", "seconds"}``: how long neardup held each response it let through."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> LatencyBefore:
        return cls()

    def process_response(self, request: Any, response: Response, spider: Any = None) -> Response:
        _LATENCY_STARTED[response.url] = time.monotonic()
        return response


class LatencyAfter:
    """Downloader middleware at 539: see :class:`LatencyBefore`."""

    def __init__(self, out: str) -> None:
        self.file = (Path(out) / "latency.jsonl").open("a", encoding="utf-8")

    @classmethod
    def from_crawler(cls, crawler: Any) -> LatencyAfter:
        return cls(crawler.settings.get("E2E_OUT"))

    def process_response(self, request: Any, response: Response, spider: Any = None) -> Response:
        started = _LATENCY_STARTED.pop(response.url, None)
        if started is not None:
            seconds = time.monotonic() - started
            self.file.write(json.dumps({"url": response.url, "seconds": seconds}) + "\n")
            self.file.flush()
        return response


class SiteCrawlSpider(CrawlSpider):
    """A ``CrawlSpider`` that follows every link within the start urls' hosts, one item per page.

    Args:
        start: start urls, comma-separated.
    """

    name = "sitecrawl"
    rules = (Rule(LinkExtractor(), callback="parse_item", errback="failed", follow=True),)
    failed = LinkSpider.failed

    def __init__(self, start: str = "", **kwargs: Any) -> None:
        self.start_urls = [u for u in start.split(",") if u]
        self.allowed_domains = sorted(
            {u.split("//", 1)[1].split(":", 1)[0].split("/", 1)[0] for u in self.start_urls}
        )
        super().__init__(**kwargs)

    def parse_start_url(self, response: Response, **kwargs: Any) -> Any:
        return self.parse_item(response)

    def parse_item(self, response: Response) -> Iterator[dict[str, Any]]:
        yield {"url": response.url, "title": response.css("title::text").get()}
