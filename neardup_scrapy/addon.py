"""The Scrapy add-on: ``ADDONS = {"neardup_scrapy.Addon": 100}`` enables every component.

Components the project already lists (even with another priority, or ``None`` to disable one)
are left as they are, so the user's settings win. The equivalent manual configuration is::

    DOWNLOADER_MIDDLEWARES = {
        "neardup_scrapy.NeardupDownloaderMiddleware": 540,
        "neardup_scrapy.NeardupUrlRulesMiddleware": 530,  # duplicate-url rules
    }
    SPIDER_MIDDLEWARES = {"neardup_scrapy.NeardupSpiderMiddleware": 100}
    ITEM_PIPELINES = {"neardup_scrapy.NeardupPipeline": 200}   # only acts with NEARDUP_ITEM_FIELDS
    EXTENSIONS = {"neardup_scrapy.NeardupExtension": 100}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .extension import NeardupExtension
from .middlewares import NeardupDownloaderMiddleware, NeardupSpiderMiddleware
from .pipelines import NeardupPipeline
from .urlrules import NeardupUrlRulesMiddleware

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["COMPONENTS", "Addon"]

#: (setting, component, priority) enabled by the add-on.
COMPONENTS: tuple[tuple[str, type, int], ...] = (
    ("DOWNLOADER_MIDDLEWARES", NeardupDownloaderMiddleware, 540),
    ("DOWNLOADER_MIDDLEWARES", NeardupUrlRulesMiddleware, 530),
    ("SPIDER_MIDDLEWARES", NeardupSpiderMiddleware, 100),
    ("ITEM_PIPELINES", NeardupPipeline, 200),
    ("EXTENSIONS", NeardupExtension, 100),
)


class Addon:
    """Enables neardup-scrapy's middlewares, pipeline and extension with their default priorities."""

    def __repr__(self) -> str:
        return "neardup_scrapy.Addon"

    def update_settings(self, settings: BaseSettings) -> None:
        """Add each component unless the project already configures it.

        Components are added by import path (not as class objects) so that Scrapy's
        "Enabled ..." log lines name them readably.
        """
        from scrapy.utils.misc import load_object

        for name, component, priority in COMPONENTS:
            current = settings.getdict(name)
            if any(_loads(load_object, key) is component for key in current):
                continue
            current[f"{component.__module__}.{component.__qualname__}"] = priority
            settings.set(name, current, settings.getpriority(name) or 0)


def _loads(load_object: Any, key: Any) -> Any:
    try:
        return load_object(key)
    except (ImportError, NameError, ValueError, AttributeError):
        return None
