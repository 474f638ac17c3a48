"""Signals sent by neardup-scrapy.

Connect to them like to Scrapy's own signals::

    from neardup_scrapy.signals import duplicate_found

    class MyExtension:
        @classmethod
        def from_crawler(cls, crawler):
            ext = cls()
            crawler.signals.connect(ext.duplicate_found, signal=duplicate_found)
            return ext

        def duplicate_found(self, verdict, response, item, spider):
            ...

A receiver may declare any subset of the arguments.
"""

from __future__ import annotations

__all__ = ["duplicate_found"]

#: Sent for each duplicate page (``exact`` or ``near``) found by the downloader middleware, and
#: for each duplicate item found by the pipeline (``NEARDUP_ITEM_FIELDS``), before it is tagged
#: or dropped. Arguments: ``verdict`` (:class:`neardup_scrapy.core.Verdict`; ``verdict.to_dict()``
#: is the tag object, ``verdict.explain()`` adds the reason), ``response`` (the page's response,
#: ``None`` for items), ``item`` (the item, ``None`` for pages) and ``spider``.
duplicate_found = object()
