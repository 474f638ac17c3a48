"""Item pipeline: deduplicates items by the text of chosen fields (``NEARDUP_ITEM_FIELDS``).

Pages are deduplicated by the downloader middleware; this pipeline is for items, e.g. items
that do not come from an HTML page (an API, a feed) or several items per page. Enable it with
the add-on, or by hand::

    ITEM_PIPELINES = {"neardup_scrapy.NeardupPipeline": 200}
    NEARDUP_ITEM_FIELDS = ["title", "body"]

It switches itself off (``NotConfigured``) while ``NEARDUP_ITEM_FIELDS`` is empty. Item texts
have their own index, separate from the pages', so an item never matches its own page.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured

from .core import Verdict
from .core.urls import redact_url
from .middlewares import stamp_item
from .runtime import NeardupRuntime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["DuplicateItem", "NeardupPipeline"]

logger = logging.getLogger(__name__)


class DuplicateItem(DropItem):
    """Raised for a duplicate item with ``NEARDUP_ACTION = "drop"``; logged at DEBUG level.

    Scrapy counts it in the ``item_dropped_reasons_count/DuplicateItem`` stat.

    Attributes:
        verdict: the detector's verdict (``verdict.to_dict()`` is the tag object).
    """

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        super().__init__(
            f"neardup: {verdict.status} duplicate of the item from {redact_url(verdict.duplicate_of or '?')}",
            log_level="DEBUG",
        )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return " ".join(_text(v) for v in value.values())
    if isinstance(value, Iterable):
        return " ".join(_text(v) for v in value)
    return str(value)


class NeardupPipeline:
    """Checks ``NEARDUP_ITEM_FIELDS`` of every item against earlier items; tags or drops.

    * The text is the listed fields' values joined (lists and nested values flattened); an
      item with none of them passes untouched (``neardup/items/no_fields``).
    * The url is the item's ``url`` field when it has one (it decides the host for
      ``NEARDUP_SCOPE = "host"`` and the per-host report), else ``""``.
    * ``NEARDUP_FIELD`` gets the item's tag object (it replaces the page's tag); duplicates send
      ``duplicate_found`` and, with ``NEARDUP_ACTION = "drop"``, raise :class:`DuplicateItem`.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.runtime = NeardupRuntime.of(crawler)
        self.config = self.runtime.config
        if not self.config.item_fields:
            raise NotConfigured
        # Open the item index now, so that a store that cannot be reached stops the crawl here.
        self.runtime.item_detector  # noqa: B018

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Build the pipeline (``NotConfigured`` when disabled or without ``NEARDUP_ITEM_FIELDS``)."""
        return cls(crawler)

    def process_item(self, item: Any, spider: Any = None) -> Any:
        """Tag the item, or raise :class:`DuplicateItem` for a duplicate in drop mode.

        Never loses an item otherwise: an unexpected error tags it ``skipped`` (reason ``error``,
        stat ``neardup/items/skipped/error``) and logs a WARNING.
        """
        url = ""
        try:
            adapter = ItemAdapter(item)
            value = adapter.get("url") if "url" in adapter else None
            url = value if isinstance(value, str) else ""
            parts = [_text(adapter.get(name)) for name in self.config.item_fields if name in adapter]
            text = "\n".join(p for p in parts if p.strip())
            if not text:
                self.runtime.stats.inc_value("neardup/items/no_fields")
                return item
            verdict = self.runtime.check_item(url, text)
        except Exception as exc:
            verdict = self.runtime.unexpected(url, exc, "neardup/items/")
        stamp_item(item, self.config.field, verdict.to_dict(), self.runtime)
        if verdict.is_duplicate:
            self.runtime.duplicate_found(verdict, item=item)
            if self.config.drop:
                self.runtime.count_drop("item")
                raise DuplicateItem(verdict)
        return item
