"""The thread that checks pages in inline mode while the crawl's thread goes on.

Inline mode (``NEARDUP_WORKER = "inline"``) checks pages in the crawl's process. While the
reactor runs, the page index and its per-page pass belong to one helper thread: the crawl's
thread hands each page's text over and goes on with other responses; the verdict comes back to
it as a Deferred. Most of a check is compiled code that releases the GIL (the pass over the
parser's events, tokens, sketches), so it runs beside the crawl's Python on a machine with a
spare core; the rest (the index, in Python) runs there too, next to its own data in the core's
caches, and costs the crawl's thread only the GIL it holds.

One thread for the process, first in first out: jobs finish in the order they were handed over,
so verdicts are those of checking the pages one by one in that order. Results are delivered to
the reactor's thread in batches (one wake-up for all the results ready). The thread lives as
long as the process: lxml trees parsed on one thread can be used on another as long as the
thread that parsed them has not ended.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any, ClassVar

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorFromThreads

__all__ = ["CheckThread"]

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
