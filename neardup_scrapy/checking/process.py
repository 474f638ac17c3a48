"""Checking pages in a helper process (``NEARDUP_WORKER = "process"``, the default).

A Scrapy crawl runs on one CPU core. Extracting a page's main text and sketching it costs a good
part of what Scrapy itself spends per page, so done in the crawl's process it would cut the
throughput of a fast crawl by a third. Here each HTML body goes to one helper process that owns
the detector and its index (:mod:`.child`, reached through :mod:`.channel`), and the response
waits for its verdict while the crawl goes on with other responses.

A worker process that died is replaced by a new one that reopens the index: at once when it
had run a while, else after a delay that doubles (so a worker that cannot live is not restarted
in a tight loop); until then calls fail at once, as store failures.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from .base import Checker, Outcome
from .channel import DetectorWorker
from .index import store_options

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from neardup_scrapy.config import NeardupConfig
    from neardup_scrapy.core import NearDupDetector

__all__ = ["ProcessChecker"]

logger = logging.getLogger(__name__)

#: A worker process that ran at least this long (seconds) is restarted at once when it dies;
#: one that dies sooner is restarted after a delay doubling from 1 s up to RESTART_MAX_DELAY.
RESTART_STABLE_AFTER = 30.0
RESTART_MAX_DELAY = 60.0


class ProcessChecker(Checker):
    """The page index in a worker process; pages checked there, in the order they were sent.

    Args:
        config: the crawl's settings (the index's parameters and store).
        stats: the crawl's stats (``neardup/worker_restarts``).

    Raises:
        WorkerError: the worker could not start or open the index.
    """

    def __init__(self, config: NeardupConfig, stats: StatsCollector) -> None:
        self._config = config
        self._stats = stats
        self._init = {
            "params": config.params,
            "storage": config.storage,
            "keep_excerpts": config.keep_excerpts,
            **store_options(config, False),
        }
        self._mirrors: dict[str, str] | None = None  # sent by the worker, not given out yet
        self._mirrors_lock = threading.Lock()
        self.worker: DetectorWorker | None = DetectorWorker(self._init, on_mirrors=self._mirrors_sent)
        self.restarts = 0
        self._started = time.monotonic()
        self._pages = 0
        self._restart_delay = 0.0
        self._restart_at = 0.0
        self._closed = False

    @property
    def detector(self) -> NearDupDetector | None:
        return None

    def describe(self) -> str:
        return f"process (pid {self.worker.pid})" if self.worker is not None else "process"

    # -- the worker's map of mirror hosts --------------------------------------------------------
    def _mirrors_sent(self, mirrors: dict[str, str]) -> None:
        """The worker's map (after the open, and before the answer that first carries a change);
        in the reactor's thread or in the channel's reader thread."""
        with self._mirrors_lock:
            self._mirrors = mirrors

    def _take_mirrors(self) -> dict[str, str] | None:
        with self._mirrors_lock:
            mirrors, self._mirrors = self._mirrors, None
        return mirrors

    def mirrors_at_open(self) -> dict[str, str] | None:
        return self._take_mirrors()

    # -- the worker's life -----------------------------------------------------------------------
    def _live(self, *, now: bool = False) -> DetectorWorker:
        """The worker process; a new one when it died (not before its restart delay unless ``now``)."""
        worker = self.worker
        assert worker is not None, "the index is closed"
        if worker.check_alive() or (self._closed and not now):
            return worker
        clock = time.monotonic()
        if not now and clock < self._restart_at:
            return worker  # still dead: calls fail at once and count as store failures
        return self._restart(worker, clock, wait=now)

    def _restart(self, old: DetectorWorker, clock: float, *, wait: bool) -> DetectorWorker:
        reason = old.dead
        old.stop(timeout=5.0)
        if clock - self._started >= RESTART_STABLE_AFTER:
            self._restart_delay = 0.0
        else:
            self._restart_delay = min(RESTART_MAX_DELAY, max(1.0, 2 * self._restart_delay))
        self._restart_at = clock + self._restart_delay
        self.restarts += 1
        self._stats.inc_value("neardup/worker_restarts")
        logger.warning(
            "neardup: the worker process stopped (%s); starting a new one (restart %d). %s",
            reason,
            self.restarts,
            self._consequence(),
        )
        try:
            worker = DetectorWorker(self._init, wait=wait, on_open=_opened, on_mirrors=self._mirrors_sent)
        except Exception as exc:
            logger.error("neardup: cannot start a new worker process: %s", exc)
            return old
        self.worker = worker
        self._started = clock
        self._pages = 0
        return worker

    def _consequence(self) -> str:
        """What a restart loses, by store."""
        storage = self._config.storage
        if storage == "memory":
            return (
                f"The index was in the memory of the process that stopped: the {self._pages} "
                "page(s) it checked are forgotten, later pages are compared only with pages checked "
                "after this restart, and the report covers only those (NEARDUP_STORAGE = 'disk' or "
                "'redis' keeps the index across a restart)."
            )
        if storage == "disk":
            return (
                "It reopens the disk index; the pages of the batch not yet committed when the process "
                "stopped (those of its last moments) are forgotten."
            )
        if storage in ("redis", "redis-cluster"):
            return "It reopens the Redis index; nothing is lost."
        return f"It reopens the index ({self._config.storage_description()})."

    # -- calls -----------------------------------------------------------------------------------
    def _call(self, op: str, payload: Any, done: Callable[[bool, Any], None]) -> None:
        """Send ``op``; ``done(ok, result)`` runs in the reactor's thread."""
        worker = self._live()
        if worker.threaded:
            from twisted.internet import reactor

            worker.call(op, payload, lambda ok, result: reactor.callFromThread(done, ok, result))
        else:
            worker.call(op, payload, done)

    def check_html(
        self, url: str, text: str, nbytes: int, tree: Callable[[], Any] | None, canonical: str = ""
    ) -> Deferred[Outcome]:
        deferred: Deferred[Outcome] = Deferred()

        def done(ok: bool, result: Any) -> None:
            if ok:
                self._pages += 1
                outcome = Outcome(url, verdict=result, mirrors=self._take_mirrors())
            else:
                outcome = Outcome(url, error=result, mirrors=self._take_mirrors())
            deferred.callback(outcome)

        self._call("check", (url, text, None, nbytes, canonical), done)
        return deferred

    def record_skip(self, url: str, reason: str) -> None:
        self._live().send("skip", (url, reason))

    def exchange_url_rules(self, writer: str, state: bytes | None, timeout: float) -> list[bytes]:
        result: list[bytes] = self._live(now=True).call_sync("url_rules", (writer, state), timeout)
        return result

    def exchange_url_rules_later(self, writer: str, state: bytes | None) -> Deferred[list[bytes]]:
        deferred: Deferred[list[bytes]] = Deferred()

        def done(ok: bool, result: Any) -> None:
            if ok:
                deferred.callback(result)
            else:
                deferred.errback(Failure(result))  # type: ignore[no-untyped-call]

        self._call("url_rules", (writer, state), done)
        return deferred

    def surviving_mirrors(
        self, unseen: dict[str, int], timeout: float
    ) -> tuple[dict[str, str], dict[str, str] | None]:
        surviving: dict[str, str] = self._live(now=True).call_sync("survivors", unseen, timeout)
        return surviving, self._take_mirrors()

    def report(self, options: dict[str, int], timeout: float) -> dict[str, Any]:
        report: dict[str, Any] = self._live(now=True).call_sync("report", options, timeout)
        return report

    def cluster_rows(self, timeout: float) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._live(now=True).call_sync("export", None, timeout)
        return rows

    def stop_growing(self) -> None:
        self._closed = True

    def close(self, timeout: float) -> list[Exception]:
        worker, self.worker = self.worker, None
        if worker is None:
            return []
        errors: list[Exception] = []
        if worker.dead is None:
            try:
                worker.call_sync("close", None, timeout)
            except Exception as exc:
                errors.append(exc)
        worker.stop()
        return errors


def _opened(ok: bool, result: Any) -> None:
    """A restarted worker has opened the index (or could not)."""
    if ok:
        logger.info("neardup: the new worker process has opened the index; pages are checked again")
    else:
        logger.warning(
            "neardup: the new worker process cannot open the index (%s); another one is started "
            "at a later page",
            result,
        )
