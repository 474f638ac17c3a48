"""Old home of the worker process, kept so that existing imports and
``python -m neardup_scrapy.worker`` still work: the crawl's side is now
:mod:`neardup_scrapy.checking.channel`, the worker :mod:`neardup_scrapy.checking.child`, the
strategy :mod:`neardup_scrapy.checking.process`."""

from __future__ import annotations

from .checking.channel import DetectorWorker
from .checking.child import IDLE_FLUSH, main, serve
from .checking.child import check as _check
from .checking.frames import WorkerCallError, WorkerError

__all__ = ["IDLE_FLUSH", "DetectorWorker", "WorkerCallError", "WorkerError", "_check", "main", "serve"]

if __name__ == "__main__":
    main()
