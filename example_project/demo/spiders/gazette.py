"""The example spider: follows every link of the demo site and yields one item per HTML page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response

from demo.items import PageItem


class GazetteSpider(scrapy.Spider):
    """Crawls the Port Wenlow Gazette, its mirror and the Harbour Light Digest.

    Args:
        start_urls: comma-separated start urls. Without them, the spider starts the demo
            site's servers itself (so ``scrapy crawl gazette`` works on its own).
    """

    name = "gazette"

    def __init__(self, start_urls: str | list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(start_urls, str):
            start_urls = [u for u in start_urls.split(",") if u]
        self.start_list = list(start_urls or [])
        self._servers: Any = None

    async def start(self) -> AsyncIterator[scrapy.Request]:
        if not self.start_list:
            from demo.servers import start_demo_servers

            self._servers = start_demo_servers()
            self.logger.info("Demo site served at %s", ", ".join(self._servers.urls.values()))
            self.start_list = self._servers.start_urls
        for url in self.start_list:
            yield scrapy.Request(url)

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return  # the feed, the logo and the PDF: fetched because they are linked, not parsed
        text = " ".join(response.css("main p::text, .story p::text, body > p::text").getall())
        yield PageItem(
            url=response.url,
            title=response.css("title::text").get("").strip(),
            byline=response.css(".byline::text, .credit::text").get(),
            words=len(text.split()),
        )
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if url.startswith("http") and (urlsplit(url).hostname or "").startswith("127."):
                yield response.follow(url, callback=self.parse)

    def closed(self, reason: str) -> None:
        if self._servers is not None:
            self._servers.stop()
