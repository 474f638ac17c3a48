"""The crawl's side of the worker process (``NEARDUP_WORKER = "process"``): starting it,
calling it, stopping it. The worker itself is :mod:`.child`; :mod:`.process` is the checking strategy.

* The worker is a plain ``python -m neardup_scrapy.checking.child`` subprocess that reads
  pickled frames (:mod:`.frames`) on its stdin and answers on its stdout (no
  ``multiprocessing``: a crawl script without an ``if __name__ == "__main__"`` guard is not run
  a second time).
* The pipes (:mod:`.pipes`) are watched by the Twisted reactor, or by two threads where it
  cannot watch them; calls made while the reactor is not running (opening the index at
  start-up) or from inside it when a result is needed at once (the report at close) read the
  pipe directly.
* If the worker dies, pending calls fail with :class:`~.frames.WorkerError`, a
  :class:`StorageError` that ``NEARDUP_ON_STORAGE_ERROR`` handles like a lost index store, and so
  do later calls until a new worker is started (:attr:`DetectorWorker.dead`). A call that fails
  in the worker for any other reason (a bug) fails with :class:`~.frames.WorkerCallError`.
* A call waited for here (:meth:`DetectorWorker.call_sync`) has a deadline; a worker that
  misses it is killed, so the crawl never hangs at close.
* The worker's log records (WARNING and above) are logged here, under their own logger names,
  so they reach the crawl's log (``LOG_FILE``...).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .frames import LOG_ID, MIRRORS_ID, WorkerCallError, WorkerError
from .pipes import Pipes

__all__ = ["DetectorWorker"]

logger = logging.getLogger(__name__)

Callback = Callable[[bool, Any], None]


class DetectorWorker:
    """Parent side: starts the worker process and sends it calls.

    Args:
        init: keyword arguments of the worker's ``open`` call (parameters and store).
        use_reactor: watch the pipes with the installed Twisted reactor (default: when one is
            installed and can); otherwise two threads do the I/O.
        timeout: seconds to wait for the worker to open its index.
        wait: wait here until the index is open (start-up). ``False`` (a restart mid-crawl):
            return at once; calls sent meanwhile are answered after the open, and fail if it
            fails (the worker then exits).
        on_open: with ``wait=False``, ``on_open(ok, result_or_error)`` when the open is done.
        on_mirrors: ``on_mirrors({mirror host: origin host})`` with the worker's whole map of
            confirmed mirrors, after the open (a resumed or shared index already has some) and
            whenever it changes, always before the verdict that first carries the change; it
            runs where answers arrive (see :meth:`call`).

    Raises:
        WorkerError: the worker could not start or open the index (message from the worker).
    """

    def __init__(
        self,
        init: dict[str, Any],
        use_reactor: bool | None = None,
        timeout: float = 120.0,
        *,
        wait: bool = True,
        on_open: Callback | None = None,
        on_mirrors: Callable[[dict[str, str]], None] | None = None,
    ) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "neardup_scrapy.checking.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._on_mirrors = on_mirrors
        self._ids = itertools.count(1)
        self._pending: dict[int, Callback] = {}
        self._lock = threading.Lock()
        self._dead: str | None = None
        self._pipes = Pipes(self._proc, use_reactor, self._answer, self._fail_all)
        if wait:
            try:
                self.call_sync("open", init, timeout)
            except BaseException:
                self.stop()
                raise
        self._pipes.start()
        if not wait:
            self.call("open", init, on_open or (lambda ok, result: None))

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self._proc.pid

    @property
    def dead(self) -> str | None:
        """Why the worker can no longer answer (it exited, was stopped, missed a deadline), or ``None``."""
        return self._dead

    def check_alive(self) -> bool:
        """Whether the worker can answer; notices at once a process that exited (a ``kill -9``)
        before the end of its pipe has been read."""
        if self._dead is None and self._proc.poll() is not None:
            self._fail_all(f"the neardup worker process exited (exit code {self._proc.returncode})")
        return self._dead is None

    # -- calls -----------------------------------------------------------------------------------
    def call(self, op: str, payload: Any, callback: Callback) -> None:
        """Send ``op``; ``callback(ok, result_or_error)`` runs when the answer arrives.

        With the reactor, the callback runs in the reactor thread; with threads, in the reader
        thread (use ``reactor.callFromThread`` there). A dead worker calls it at once with a
        :class:`WorkerError`.
        """
        with self._lock:
            if self._dead is not None:
                error = WorkerError(self._dead)
            else:
                error = None
                call_id = next(self._ids)
                self._pending[call_id] = callback
        if error is not None:
            callback(False, error)
            return
        self._pipes.send((op, call_id, payload))

    def send(self, op: str, payload: Any = None) -> None:
        """Send ``op`` without waiting for its result (errors are only logged)."""
        if self._dead is None:
            self._pipes.send((op, 0, payload))

    def call_sync(self, op: str, payload: Any = None, timeout: float | None = None) -> Any:
        """Send ``op`` and wait for its result here (by reading the pipe directly).

        Args:
            op: the call.
            payload: its argument.
            timeout: seconds to wait (``None``: no limit). A worker that does not answer in
                time is killed: it is stuck, and every later call would wait behind it.

        Raises:
            WorkerError: the worker failed the call, died or missed the deadline.
            WorkerCallError: the call failed in the worker with an unexpected error.
        """
        box: list[tuple[bool, Any]] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._pipes.threaded:  # threads: the reader thread answers
            done = threading.Event()

            def store(ok: bool, result: Any) -> None:
                box.append((ok, result))
                done.set()

            self.call(op, payload, store)
            done.wait(timeout)
        else:
            self.call(op, payload, lambda ok, result: box.append((ok, result)))
            self._pipes.pump_until(box, deadline, lambda: self._dead is None)
        if not box:
            if self._dead is not None:
                raise WorkerError(self._dead)
            message = f"the neardup worker did not answer {op!r} within {timeout} s; it was killed"
            self._kill(message)
            raise WorkerError(message)
        ok, result = box[0]
        if not ok:
            raise result if isinstance(result, BaseException) else WorkerError(str(result))
        return result

    def _kill(self, message: str) -> None:
        """Kill a worker that is stuck, and fail its pending calls."""
        with contextlib.suppress(OSError):
            self._proc.kill()
        self._fail_all(message)

    def stop(self, timeout: float = 10.0) -> None:
        """Close the worker's input and wait for it to exit (kill it after ``timeout``)."""
        self._pipes.stop()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._fail_all("the neardup worker process was stopped")
        self._pipes.close_output()

    @property
    def threaded(self) -> bool:
        """True when answers arrive in a helper thread (not in the reactor thread)."""
        return self._pipes.threaded

    # -- answers ---------------------------------------------------------------------------------
    def _answer(self, message: tuple[Any, ...]) -> None:
        call_id, ok, result = message
        if call_id == LOG_ID:
            level, name, message = result
            logging.getLogger(name).log(level, "%s", message)
            return
        if call_id == MIRRORS_ID:
            if self._on_mirrors is not None:
                self._on_mirrors(result)
            return
        if call_id == 0:
            if not ok:
                logger.warning("neardup worker: %s", result[1])
            return
        with self._lock:
            callback = self._pending.pop(call_id, None)
        if callback is None:
            return
        if ok:
            callback(True, result)
        else:
            name, message, storage = result
            callback(False, WorkerError(message) if storage else WorkerCallError(f"{name}: {message}"))

    def _fail_all(self, message: str) -> None:
        with self._lock:
            if self._dead is None:
                self._dead = message
            pending, self._pending = self._pending, {}
        for callback in pending.values():
            callback(False, WorkerError(message))
