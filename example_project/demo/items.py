"""Items of the example project."""

from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    """One crawled page. ``neardup`` receives the tag object (declare it on scrapy.Item classes)."""

    url = scrapy.Field()
    title = scrapy.Field()
    byline = scrapy.Field()
    words = scrapy.Field()
    neardup = scrapy.Field()
