"""Checking pages on one helper thread of the crawl's process (``NEARDUP_WORKER = "inline"``).

While the reactor runs, the page index and its per-page pass belong to one helper thread: the
crawl's thread hands each page's text over and goes on with other responses; the outcome comes
back to it as a Deferred. Most of a check is compiled code that releases the GIL (the pass over
the parser's events, tokens, sketches), so it runs beside the crawl's Python on a machine with a
spare core; the rest (the index, in Python) runs there too, next to its own data in the core's
caches, and costs the crawl's thread only the GIL it holds. Before the reactor runs and once the
spider closed, pages are checked in the caller's thread (:mod:`.inline`).

One thread for the process, first in first out: jobs finish in the order they were handed over,
so verdicts are those of checking the pages one by one in that order. Results are delivered to
the reactor's thread in batches (one wake-up for all the results ready). The thread lives as
long as the process: lxml trees parsed on one thread can be used on another as long as the
thread that parsed them has not ended.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any, ClassVar

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from neardup_scrapy.core.reading import ParseTimeout, text_reading
from neardup_scrapy.core.storage.base import StorageError

from .base import Checker, Outcome

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorFromThreads

    from neardup_scrapy.core import NearDupDetector

    from .inline import InlineChecker

__all__ = ["CheckThread", "ThreadChecker"]

logger = logging.getLogger(__name__)

_Job = tuple["Deferred[Any] | None", Callable[..., Any], tuple[Any, ...]]


class CheckThread:
    """A thread that runs jobs in order and hands their results to the reactor's thread.

    Use :meth:`shared` for the process's thread.

    Args:
        reactor: the running reactor, whose thread receives the results.
    """

    _shared: ClassVar[CheckThread | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, reactor: IReactorFromThreads) -> None:
        self._reactor = reactor
        self._jobs: SimpleQueue[_Job] = SimpleQueue()
        self._done: deque[tuple[Deferred[Any], Any]] = deque()
        self._lock = threading.Lock()
        self._wake_pending = False
        self._thread = threading.Thread(target=self._serve, name="neardup-check", daemon=True)
        self._thread.start()

    @classmethod
    def shared(cls, reactor: IReactorFromThreads) -> CheckThread:
        """The process's thread for ``reactor``, started at the first call."""
        with cls._shared_lock:
            if cls._shared is None or cls._shared._reactor is not reactor:
                cls._shared = cls(reactor)
            return cls._shared

    def submit(self, function: Callable[..., Any], *args: Any) -> Deferred[Any]:
        """Run ``function(*args)`` on the thread; the Deferred fires with its result (or its
        failure) in the reactor's thread, after those of the jobs submitted before."""
        deferred: Deferred[Any] = Deferred()
        self._jobs.put((deferred, function, args))
        return deferred

    def post(self, function: Callable[..., Any], *args: Any) -> None:
        """Run ``function(*args)`` on the thread, in order with the other jobs; nothing comes
        back (an exception is logged)."""
        self._jobs.put((None, function, args))

    def drain(self, timeout: float | None = None) -> bool:
        """Wait (blocking) until the jobs handed over so far have run; deliver their results now.
        False when ``timeout`` seconds passed first."""
        ran = threading.Event()
        self._jobs.put((None, ran.set, ()))
        finished = ran.wait(timeout)
        self._deliver()
        return finished

    def _serve(self) -> None:
        while True:
            deferred, function, args = self._jobs.get()
            try:
                result = function(*args)
            except BaseException as exc:
                result = Failure(exc)  # type: ignore[no-untyped-call]
            del function, args
            if deferred is None:
                if isinstance(result, Failure):
                    logger.warning("neardup: a job of the check thread failed: %s", result.getErrorMessage())
                continue
            with self._lock:
                self._done.append((deferred, result))
                wake = not self._wake_pending
                self._wake_pending = True
            if wake:
                self._reactor.callFromThread(self._deliver)

    def _deliver(self) -> None:
        """Fire the Deferreds of the results ready, in order (in the reactor's thread)."""
        with self._lock:
            ready = list(self._done)
            self._done.clear()
            self._wake_pending = False
        for deferred, result in ready:
            if isinstance(result, Failure):
                deferred.errback(result)
            else:
                deferred.callback(result)


class ThreadChecker(Checker):
    """Pages checked on the process's :class:`CheckThread` while the reactor runs; in the
    caller's thread (by ``here``) before it runs and once the spider closed.

    Args:
        here: the page index, checked in the caller's thread.
    """

    def __init__(self, here: InlineChecker) -> None:
        self.here = here
        self._thread: CheckThread | None = None
        self._closed = False

    @property
    def detector(self) -> NearDupDetector | None:
        return self.here.detector

    @detector.setter
    def detector(self, detector: NearDupDetector | None) -> None:
        self.here.detector = detector

    def describe(self) -> str:
        return "inline"

    def _check_thread(self) -> CheckThread | None:
        """The helper thread, which owns the page index from the first page checked while the
        reactor runs; ``None`` before (pages are then checked in the caller's thread) and once
        the spider closed."""
        if self._thread is None and not self._closed and self.here.detector is not None:
            from twisted.internet import reactor

            if reactor.running:
                self._thread = CheckThread.shared(reactor)
        return self._thread

    def _idle(self, timeout: float) -> None:
        """Wait until the helper thread has run every job handed over (before the index is read
        or closed in this thread)."""
        if self._thread is not None and not self._thread.drain(timeout):
            logger.warning("neardup: the check thread did not finish its pages within %.0f s", timeout)

    def check_html(
        self, url: str, text: str, nbytes: int, tree: Callable[[], Any] | None, canonical: str = ""
    ) -> Outcome | Deferred[Outcome]:
        thread = self._check_thread()
        if thread is None:
            return self.here.check_html(url, text, nbytes, tree, canonical)
        # The helper thread reads the page from its text as the worker process does, in a pass
        # that releases the GIL; this thread builds no tree for the plugin: the spider builds
        # Scrapy's when it reads the page (if it does), while the caches hold it
        deferred: Deferred[Outcome] = thread.submit(self.check_here, url, text, nbytes, canonical)
        return deferred.addErrback(_failed, url)

    def check_here(self, url: str, text: str, nbytes: int, canonical: str = "") -> Outcome:
        """A check as the helper thread makes it (in the calling thread): the page is read as
        the worker process reads it (:func:`~neardup_scrapy.core.reading.text_reading`), and the
        index's map of mirror hosts is read where the index lives."""
        detector = self.here.detector
        if detector is None:
            return Outcome(url, error=RuntimeError("the index is closed"))
        started = time.thread_time()  # the budget counts this thread's CPU time
        try:
            try:
                source, how = text_reading(text, started + self.here.timeout, self.here.tree_of_text)
                # analyze + check_analysis, not check(): check()'s cache of repeated bodies
                # hashes the whole body holding the GIL that the crawl's thread needs
                analysis = detector.analyze(url, source, started=started, **how)
            except ParseTimeout:
                verdict = detector.skip(url, "timeout")
            else:
                verdict = detector.check_analysis(url, analysis, nbytes=nbytes, canonical=canonical)
        except Exception as exc:
            return Outcome(url, error=exc)
        return Outcome(url, verdict=verdict, mirrors=self.here.take_mirrors())

    def record_skip(self, url: str, reason: str) -> Outcome | None:
        thread = self._check_thread()
        if thread is None:
            return self.here.record_skip(url, reason)
        thread.post(self._skip_here, url, reason)
        return None

    def _skip_here(self, url: str, reason: str) -> None:
        """Count a skipped page in the index, on the helper thread; a failing store is not
        reported for a skip (as with the worker process: the next check reports it)."""
        detector = self.here.detector
        if detector is None:
            return
        try:
            detector.skip(url, reason)
        except StorageError as exc:
            logger.debug("neardup: cannot count a skipped page in the index: %s", exc)

    def mirrors_at_open(self) -> dict[str, str] | None:
        return self.here.mirrors_at_open()

    def exchange_url_rules(self, writer: str, state: bytes | None, timeout: float) -> list[bytes]:
        self._idle(timeout)
        return self.here.exchange_url_rules(writer, state)

    def exchange_url_rules_later(self, writer: str, state: bytes | None) -> Deferred[list[bytes]]:
        thread = self._check_thread()
        detector = self.here.detector
        if thread is None or detector is None:
            return self.here.exchange_url_rules_later(writer, state)
        result: Deferred[list[bytes]] = thread.submit(detector.exchange_url_rules, writer, state)
        return result

    def surviving_mirrors(
        self, unseen: dict[str, int], timeout: float
    ) -> tuple[dict[str, str], dict[str, str] | None]:
        self._idle(timeout)
        return self.here.surviving_mirrors(unseen)

    def report(self, options: dict[str, int], timeout: float) -> dict[str, Any]:
        self._idle(timeout)
        return self.here.report(options)

    def cluster_rows(self, timeout: float) -> list[dict[str, Any]]:
        self._idle(timeout)
        return self.here.cluster_rows()

    def stop_growing(self) -> None:
        self._closed = True

    def close(self, timeout: float) -> list[Exception]:
        self._idle(timeout)
        self._thread = None
        return self.here.close()


def _failed(failure: Failure, url: str) -> Outcome:
    """A check that escaped :meth:`ThreadChecker.check_here` (not an ``Exception``)."""
    error = failure.value
    return Outcome(url, error=error if error is not None else RuntimeError("the check failed"))
