"""The ways of checking a page, siblings behind one interface (:class:`.base.Checker`).

* :mod:`.inline`: in the caller's thread, on the tree Scrapy parsed where it can;
* :mod:`.thread`: on one helper thread of the crawl's process while the reactor runs
  (``NEARDUP_WORKER = "inline"``), in the caller's thread before and after;
* :mod:`.process`: in a helper process (``NEARDUP_WORKER = "process"``, the default), over
  pipes (:mod:`.channel` and :mod:`.pipes` on the crawl's side, :mod:`.child` in the helper
  process, :mod:`.frames` between them).

Each answers with an :class:`~.base.Outcome` (the verdict or the error, and the index's map of
mirror hosts when it changed) and never calls back into the runtime: the runtime
(:mod:`neardup_scrapy.runtime`) chooses one from the settings and applies the policy (stats,
errors, mirrors, logs) in one place. This package imports nothing at import time, so the helper
process (``python -m neardup_scrapy.checking.child``) loads only what it needs.
"""
