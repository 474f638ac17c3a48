"""Old home of the check thread, kept so that existing imports still work: see
:mod:`neardup_scrapy.checking.thread`."""

from __future__ import annotations

from .checking.thread import CheckThread

__all__ = ["CheckThread"]
