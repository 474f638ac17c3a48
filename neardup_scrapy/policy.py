"""What the crawl does with a check's outcome: the verdict counted and logged (:class:`Tally`),
a failing index store handled by ``NEARDUP_ON_STORAGE_ERROR`` (:class:`StoreOutage`).

Nothing that goes wrong while checking stops a page or an item: a store failure switches
checking off with a WARNING (and a WARNING again when it resumes), or closes the spider with
``NEARDUP_ON_STORAGE_ERROR = "stop"``; any other error gives a ``skipped`` verdict (reason
``error``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .core import Verdict
from .core.hosts import host_of
from .core.urls import redact_url

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from .core.storage.base import StorageError

__all__ = ["MAX_ERROR_LOGS", "STILL_FAILING_EVERY", "StoreOutage", "Tally", "reason_key"]

logger = logging.getLogger(__name__)

#: While the store keeps failing, a WARNING repeats at most this often (seconds).
STILL_FAILING_EVERY = 60.0
#: Unexpected errors logged one by one (WARNING); later ones are only counted.
MAX_ERROR_LOGS = 10


def reason_key(reason: str) -> str:
    """A skip reason as a stats key part: ``"no text"`` -> ``"no_text"``."""
    return re.sub(r"[^a-z0-9]+", "_", reason.lower()).strip("_") or "other"


class Tally:
    """Counts verdicts in the crawl's stats (``neardup/...``, items under ``neardup/items/...``),
    hands page verdicts to the listeners, and logs what a user needs to see.

    Args:
        stats: the crawl's stats.
        debug: ``NEARDUP_DEBUG`` (every verdict at DEBUG).
    """

    def __init__(self, stats: StatsCollector, debug: bool) -> None:
        self.stats = stats
        self.debug = debug
        self.errors = 0
        self.dropped = 0
        self.listeners: list[Callable[[Verdict], None]] = []
        self._logged_first_duplicate = False

    def count(self, verdict: Verdict, prefix: str = "neardup/") -> None:
        """Count a page's (or, with ``prefix`` ``"neardup/items/"``, an item's) verdict."""
        stats = self.stats
        stats.inc_value(prefix + "pages")
        stats.inc_value(prefix + verdict.counted)
        if verdict.status == "skipped":
            stats.inc_value(f"{prefix}skipped/{reason_key(verdict.reason)}")
        if prefix == "neardup/":
            for listener in self.listeners:
                try:
                    listener(verdict)
                except Exception as exc:  # a listener's bug must not change the page's verdict
                    self.errors += 1
                    if self.errors <= MAX_ERROR_LOGS:
                        logger.warning(
                            "neardup: unexpected error after checking %s (the verdict stands): %r",
                            redact_url(verdict.url),
                            exc,
                            exc_info=exc if self.errors == 1 else None,
                        )
        if self.debug:
            logger.debug(
                "neardup %s: %s (%s)%s",
                verdict.status,
                redact_url(verdict.url),
                verdict.reason,
                f" duplicate of {redact_url(verdict.duplicate_of)}" if verdict.duplicate_of else "",
            )
        elif verdict.is_duplicate and not self._logged_first_duplicate:
            self._logged_first_duplicate = True
            logger.debug(
                "neardup: %s is a %s duplicate of %s (%s) - no more duplicates will be shown "
                "(see NEARDUP_DEBUG to show all)",
                redact_url(verdict.url),
                verdict.status,
                redact_url(verdict.duplicate_of or ""),
                verdict.reason,
            )

    def error(self, url: str, exc: BaseException, prefix: str = "neardup/") -> Verdict:
        """Count a page or item whose check failed unexpectedly (a bug); it passes as ``skipped``
        with reason ``error``; the first errors are logged with a WARNING."""
        self.errors += 1
        if self.errors <= MAX_ERROR_LOGS:
            logger.warning(
                "neardup: unexpected error while checking %s; it passes unchecked, tagged 'skipped' "
                "(reason 'error'): %r%s",
                redact_url(url),
                exc,
                "" if self.errors < MAX_ERROR_LOGS else " (further errors are only counted)",
                exc_info=exc if self.errors == 1 else None,
            )
        verdict = Verdict(url=url, host=host_of(url), status="skipped", reason="error")
        self.count(verdict, prefix)
        return verdict

    def drop(self, what: str) -> None:
        """Count a dropped page or item (``what``: ``"page"`` or ``"item"``)."""
        self.dropped += 1
        self.stats.inc_value("neardup/dropped")
        self.stats.inc_value(f"neardup/dropped/{what}")


class StoreOutage:
    """``NEARDUP_ON_STORAGE_ERROR``: what a failing index store does to the crawl.

    ``"pass"``: pages and items pass unchecked, tagged ``skipped`` (reason ``storage error``),
    with a WARNING when the store first fails, at most every :data:`STILL_FAILING_EVERY`
    seconds while it keeps failing, and when it answers again. ``"stop"``: the spider is closed.

    Args:
        policy: ``"pass"`` or ``"stop"``.
        stats: the crawl's stats (``neardup/storage_errors``).
        stop: closes the spider (called once, with ``"stop"``).
    """

    def __init__(self, policy: str, stats: StatsCollector, stop: Callable[[], None]) -> None:
        self.policy = policy
        self.stats = stats
        self.stop = stop
        self.errors = 0
        self._stopping = False
        self._failing = False
        self._started = 0.0
        self._warned = 0.0
        self._unchecked = 0

    def failed(self, url: str, exc: StorageError) -> Verdict:
        """A check or skip met a store failure: the page's (or item's) verdict."""
        self.errors += 1
        self.stats.inc_value("neardup/storage_errors")
        clock = time.monotonic()
        if not self._failing:
            self._failing = True
            self._started = self._warned = clock
            self._unchecked = 0
        self._unchecked += 1
        if self.policy == "stop":
            if not self._stopping:
                self._stopping = True
                logger.error(
                    "neardup: the index store failed (%s); closing the spider "
                    "(NEARDUP_ON_STORAGE_ERROR = 'stop')",
                    exc,
                )
                self.stop()
        elif self._unchecked == 1:
            logger.warning(
                "neardup: the index store failed (%s); checking is off: pages pass unchecked, tagged "
                "'skipped', until it answers again (NEARDUP_ON_STORAGE_ERROR = 'pass'; see the "
                "neardup/storage_errors stat)",
                exc,
            )
        elif clock - self._warned >= STILL_FAILING_EVERY:
            self._warned = clock
            logger.warning(
                "neardup: the index store still fails (%s); %d page(s) or item(s) passed unchecked "
                "in the last %.0f s",
                exc,
                self._unchecked,
                clock - self._started,
            )
        else:
            logger.debug("neardup: store still failing for %s: %s", redact_url(url), exc)
        return Verdict(url=url, host=host_of(url), status="skipped", reason="storage error")

    def answered(self) -> None:
        """A check went through: say so if checking was off because the store failed."""
        if not self._failing:
            return
        self._failing = False
        if self.policy == "pass":
            logger.warning(
                "neardup: the index store answers again; checking is on again after %d page(s) or "
                "item(s) passed unchecked in %.0f s",
                self._unchecked,
                time.monotonic() - self._started,
            )
