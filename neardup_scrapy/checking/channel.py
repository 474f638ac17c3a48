"""The crawl's side of the worker process (``NEARDUP_WORKER = "process"``): starting it, the
pipes, the calls. The worker itself is :mod:`.child`; :mod:`.process` is the checking strategy.

* The worker is a plain ``python -m neardup_scrapy.checking.child`` subprocess that reads
  pickled frames (:mod:`.frames`) on its stdin and answers on its stdout (no
  ``multiprocessing``: a crawl script without an ``if __name__ == "__main__"`` guard is not run
  a second time).
* In the crawl's process the pipes are non-blocking and watched by the Twisted reactor
  (``addReader``/``addWriter``), so a verdict reaches the waiting response without any thread
  hand-over. Where the reactor cannot watch pipes (Windows), two helper threads do the I/O.
* Calls made while the reactor is not running (opening the index at start-up) or from inside
  it when a result is needed at once (the report at close) read the pipe directly.
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
import pickle
import queue
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from .frames import HEADER, LOG_ID, MIRRORS_ID, WorkerCallError, WorkerError, frame, read_frame

__all__ = ["DetectorWorker"]

logger = logging.getLogger(__name__)

_STOP = object()

Callback = Callable[[bool, Any], None]

_F_SETPIPE_SZ = 1031  # Linux fcntl


def _widen_pipe(fd: int) -> None:
    """Give a pipe a 1 MiB buffer where the OS allows (Linux), so a page body goes in one write.

    The default 64 KiB makes the reactor wake up several times per body.
    """
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, 1 << 20)
    except (ImportError, OSError):
        pass


class _Reader:
    """Reactor read descriptor for the worker's stdout (``IReadDescriptor``)."""

    def __init__(self, worker: DetectorWorker) -> None:
        self.worker = worker

    def fileno(self) -> int:
        return self.worker._out_fd

    def doRead(self) -> object:
        return self.worker._read_available()

    def connectionLost(self, reason: object) -> None:
        self.worker._eof()

    def logPrefix(self) -> str:
        return "neardup-worker"


class _Writer(_Reader):
    """Reactor write descriptor for the worker's stdin (``IWriteDescriptor``)."""

    def fileno(self) -> int:
        return self.worker._in_fd

    def doWrite(self) -> object:
        return self.worker._write_available()


def _reactor() -> Any:
    """The installed Twisted reactor if it can watch pipes (POSIX), else ``None``."""
    if sys.platform == "win32" or "twisted.internet.reactor" not in sys.modules:
        return None
    from twisted.internet import reactor
    from twisted.internet.interfaces import IReactorFDSet

    return reactor if IReactorFDSet.providedBy(reactor) else None


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
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdin: IO[bytes] = self._proc.stdin
        self._stdout: IO[bytes] = self._proc.stdout
        self._in_fd = self._stdin.fileno()
        self._out_fd = self._stdout.fileno()
        for fd in (self._in_fd, self._out_fd):
            _widen_pipe(fd)
        self._on_mirrors = on_mirrors
        self._ids = itertools.count(1)
        self._pending: dict[int, Callback] = {}
        self._lock = threading.Lock()
        self._dead: str | None = None
        self._inbuf = bytearray()
        self._outbuf = bytearray()
        self._reactor = _reactor() if use_reactor is None else (_reactor() if use_reactor else None)
        self._reader = _Reader(self)
        self._writer = _Writer(self)
        self._writing = False
        self._outbox: queue.SimpleQueue[Any] | None = None
        if wait:
            try:
                self.call_sync("open", init, timeout)
            except BaseException:
                self.stop()
                raise
        if self._reactor is not None:
            os.set_blocking(self._in_fd, False)
            os.set_blocking(self._out_fd, False)
            self._reactor.addReader(self._reader)
        else:
            self._outbox = queue.SimpleQueue()
            threading.Thread(target=self._write_loop, name="neardup-worker-writer", daemon=True).start()
            threading.Thread(target=self._read_loop, name="neardup-worker-reader", daemon=True).start()
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
        self._send((op, call_id, payload))

    def send(self, op: str, payload: Any = None) -> None:
        """Send ``op`` without waiting for its result (errors are only logged)."""
        if self._dead is None:
            self._send((op, 0, payload))

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
        if self._outbox is not None:  # threads: the reader thread answers
            done = threading.Event()

            def store(ok: bool, result: Any) -> None:
                box.append((ok, result))
                done.set()

            self.call(op, payload, store)
            done.wait(timeout)
        else:
            self.call(op, payload, lambda ok, result: box.append((ok, result)))
            self._pump_until(box, deadline)
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
        if self._reactor is not None:
            self._reactor.removeReader(self._reader)
            self._reactor.removeWriter(self._writer)
        if self._outbox is not None:
            self._outbox.put(_STOP)
        else:
            with contextlib.suppress(OSError):
                self._flush_blocking()
            with contextlib.suppress(OSError):  # also when the flush met a dead worker
                self._stdin.close()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._fail_all("the neardup worker process was stopped")
        with contextlib.suppress(OSError):
            self._stdout.close()

    # -- transport -------------------------------------------------------------------------------
    def _send(self, message: Any) -> None:
        if self._outbox is not None:
            self._outbox.put(message)
            return
        self._outbuf += frame(message)
        if self._reactor is None:  # only before the threads start: the pipe is written at once
            self._flush_blocking()
        elif not self._writing:
            self._write_available()

    @property
    def threaded(self) -> bool:
        """True when answers arrive in a helper thread (not in the reactor thread)."""
        return self._outbox is not None

    def _write_available(self) -> object:
        """Write what the pipe takes now; watch it for more while some is left."""
        try:
            while self._outbuf:
                written = os.write(self._in_fd, self._outbuf)
                del self._outbuf[:written]
        except BlockingIOError:
            pass
        except OSError as exc:
            self._fail_all(f"cannot send to the neardup worker process: {exc}")
            return None
        want = bool(self._outbuf)
        if want != self._writing and self._reactor is not None:
            self._writing = want
            if want:
                self._reactor.addWriter(self._writer)
            else:
                self._reactor.removeWriter(self._writer)
        return None

    def _flush_blocking(self) -> None:
        blocking = os.get_blocking(self._in_fd)
        os.set_blocking(self._in_fd, True)
        try:
            while self._outbuf:
                written = os.write(self._in_fd, self._outbuf)
                del self._outbuf[:written]
        finally:
            os.set_blocking(self._in_fd, blocking)

    def _read_available(self) -> object:
        """Read what the pipe holds now and dispatch complete answers."""
        try:
            while True:
                data = os.read(self._out_fd, 1 << 20)
                if not data:
                    self._eof()
                    return None
                self._inbuf += data
                if len(data) < 1 << 20:
                    break
        except BlockingIOError:
            pass
        except OSError as exc:
            self._fail_all(f"cannot read from the neardup worker process: {exc}")
            return None
        self._dispatch()
        return None

    def _pump_until(self, box: list[Any], deadline: float | None = None) -> None:
        """Block until ``box`` is filled or ``deadline`` (``time.monotonic()``) passes, reading
        the pipe directly (no reactor loop)."""
        self._flush_blocking()
        blocking = os.get_blocking(self._out_fd)
        os.set_blocking(self._out_fd, True)
        try:
            while not box:
                if self._dead is not None:
                    return
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or not select.select([self._out_fd], [], [], left)[0]:
                        return
                data = os.read(self._out_fd, 1 << 20)
                if not data:
                    self._eof()
                    return
                self._inbuf += data
                self._dispatch()
        finally:
            os.set_blocking(self._out_fd, blocking)

    def _dispatch(self) -> None:
        buf = self._inbuf
        while len(buf) >= HEADER.size:
            size = HEADER.unpack_from(buf)[0]
            if len(buf) < HEADER.size + size:
                break
            message = pickle.loads(bytes(buf[HEADER.size : HEADER.size + size]))
            del buf[: HEADER.size + size]
            self._answer(*message)

    def _answer(self, call_id: int, ok: bool, result: Any) -> None:
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

    def _eof(self) -> None:
        if self._reactor is not None:
            self._reactor.removeReader(self._reader)
        code = self._proc.poll()
        self._fail_all(f"the neardup worker process exited (exit code {code})")

    def _fail_all(self, message: str) -> None:
        with self._lock:
            if self._dead is None:
                self._dead = message
            pending, self._pending = self._pending, {}
        for callback in pending.values():
            callback(False, WorkerError(message))

    # -- threads (no reactor that can watch pipes) -----------------------------------------------
    def _write_loop(self) -> None:
        assert self._outbox is not None
        try:
            while True:
                message = self._outbox.get()
                if message is _STOP:
                    break
                self._stdin.write(frame(message))
                if self._outbox.empty():
                    self._stdin.flush()
        except (OSError, ValueError) as exc:
            self._fail_all(f"cannot send to the neardup worker process: {exc}")
        finally:
            with contextlib.suppress(OSError):
                self._stdin.close()

    def _read_loop(self) -> None:
        while True:
            try:
                message = read_frame(self._stdout)
            except (EOFError, OSError, ValueError, pickle.UnpicklingError):
                code = self._proc.wait()
                self._fail_all(f"the neardup worker process exited (exit code {code})")
                return
            self._answer(*message)
