"""The Scrapy add-on: ``ADDONS = {"neardup_scrapy.Addon": 100}`` enables every component.

Components the project already lists (even with another priority, or ``None`` to disable one)
are left as they are, so the user's settings win. The equivalent manual configuration is::

    DOWNLOADER_MIDDLEWARES = {"neardup_scrapy.NeardupDownloaderMiddleware": 540}
    SPIDER_MIDDLEWARES = {"neardup_scrapy.NeardupSpiderMiddleware": 100}
    ITEM_PIPELINES = {"neardup_scrapy.NeardupPipeline": 200}   # only acts with NEARDUP_ITEM_FIELDS
    EXTENSIONS = {"neardup_scrapy.NeardupExtension": 100}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .extension import NeardupExtension
from .middlewares import NeardupDownloaderMiddleware, NeardupSpiderMiddleware
from .pipelines import NeardupPipeline

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["COMPONENTS", "Addon"]

#: (setting, component, priority) enabled by the add-on.
COMPONENTS: tuple[tuple[str, type, int], ...] = (
    ("DOWNLOADER_MIDDLEWARES", NeardupDownloaderMiddleware, 540),
    ("SPIDER_MIDDLEWARES", NeardupSpiderMiddleware, 100),
    ("ITEM_PIPELINES", NeardupPipeline, 200),
    ("EXTENSIONS", NeardupExtension, 100),
)


class Addon:
    """Enables neardup-scrapy's middlewares, pipeline and extension with their default priorities."""

    def update_settings(self, settings: BaseSettings) -> None:
        """Add each component unless the project already configures it."""
        for name, component, priority in COMPONENTS:
            settings.setdefault_in_component_priority_dict(name, component, priority)
