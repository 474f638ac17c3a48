"""Opening a page or item index from the crawl's settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neardup_scrapy.core import NearDupDetector

if TYPE_CHECKING:
    from neardup_scrapy.config import NeardupConfig
    from neardup_scrapy.core.storage.base import IndexStorage

__all__ = ["items_path", "open_detector", "store_options"]


def items_path(path: str | None) -> str | None:
    """``jobdir/neardup.sqlite`` -> ``jobdir/neardup-items.sqlite`` (the item index)."""
    if path is None:
        return None
    head, dot, ext = path.rpartition(".")
    if dot and "/" not in ext:
        return f"{head}-items.{ext}"
    return f"{path}-items"


def store_options(config: NeardupConfig, items: bool) -> dict[str, Any]:
    """Where the page index (or, with ``items``, the item index) is kept."""
    return {
        "path": items_path(config.disk_path) if items else config.disk_path,
        "redis_url": config.redis_url,
        "prefix": f"{config.redis_prefix}:items" if items else config.redis_prefix,
    }


def open_detector(config: NeardupConfig, *, items: bool = False) -> NearDupDetector:
    """The page index (or the item index) in this process. Raises what the store raises."""
    storage: IndexStorage | str = "memory"
    if config.storage != "memory":
        from neardup_scrapy.core.storage import open_storage

        storage = open_storage(config.storage, ttl=config.params.ttl, **store_options(config, items))
    return NearDupDetector.from_params(
        config.params,
        storage=storage,
        keep_excerpts=0 if items else config.keep_excerpts,
        url_identity=not items,  # the items of one page share its url
    )
