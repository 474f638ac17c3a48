"""The detector in a helper process, so that checking pages does not slow the crawl down.

A Scrapy crawl runs on one CPU core. Extracting a page's main text and sketching it costs a good
part of what Scrapy itself spends per page, so done in the crawl's process it would cut the
throughput of a fast crawl by a third. With ``NEARDUP_WORKER = "process"`` (the default) the
downloader middleware sends each HTML body to one helper process that owns the detector and
its index, and the response waits for its verdict while the crawl goes on with other responses.

* One worker, one index: pages are checked strictly in the order the middleware sent them, so
  the verdicts are exactly those of the detector run in the crawl's process (``"inline"``).
* The worker is a plain ``python -m neardup_scrapy.worker`` subprocess that reads pickled
  frames on its stdin and answers on its stdout (no ``multiprocessing``: a crawl script
  without an ``if __name__ == "__main__"`` guard is not run a second time).
* In the crawl's process the pipes are non-blocking and watched by the Twisted reactor
  (``addReader``/``addWriter``), so a verdict reaches the waiting response without any thread
  hand-over. Where the reactor cannot watch pipes (Windows), two helper threads do the I/O.
* Calls made while the reactor is not running (opening the index at start-up) or from inside
  it when a result is needed at once (the report at close) read the pipe directly.
* If the worker dies, pending checks fail with :class:`WorkerError`, a :class:`StorageError`
  that ``NEARDUP_ON_STORAGE_ERROR`` handles like a lost index store, and so do later calls
  until the runtime starts a new worker (:attr:`DetectorWorker.dead`). A call that fails in the
  worker for any other reason (a bug) fails with :class:`WorkerCallError`.
* A call waited for here (:meth:`DetectorWorker.call_sync`) has a deadline; a worker that
  misses it is killed, so the crawl never hangs at close.
* Between bursts of pages the worker commits the open batch of a store that batches its writes
  (the disk store), so a worker killed while idle loses no page.
* The worker's log records (WARNING and above) are sent to the crawl's process and logged there,
  under their own logger names, so they reach the crawl's log (``LOG_FILE``...).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import pickle
import queue
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import IO, Any

from .core.storage.base import StorageError
from .core.storage.retry import CLOSE_PATIENCE, call_patiently

__all__ = ["DetectorWorker", "WorkerCallError", "WorkerError", "serve"]

logger = logging.getLogger(__name__)

_HEADER = struct.Struct("!I")
_STOP = object()
_LOG = -1  # call id of a log record sent by the worker
_MIRRORS = -2  # call id of the worker's map of mirror hosts, sent when it changes

Callback = Callable[[bool, Any], None]


#: Seconds without a call after which the worker commits its store's open batch.
IDLE_FLUSH = 0.5


class WorkerError(StorageError):
    """The worker process or its store failed, or it exited; handled by ``NEARDUP_ON_STORAGE_ERROR``."""


class WorkerCallError(RuntimeError):
    """A call failed in the worker with an unexpected error (not a store failure)."""


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


def _frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: IO[bytes]) -> Any:
    header = _read_exact(stream, _HEADER.size)
    if header is None:
        raise EOFError
    data = _read_exact(stream, _HEADER.unpack(header)[0])
    if data is None:
        raise EOFError
    return pickle.loads(data)


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
            [sys.executable, "-m", "neardup_scrapy.worker"],
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
        self._outbuf += _frame(message)
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
        while len(buf) >= _HEADER.size:
            size = _HEADER.unpack_from(buf)[0]
            if len(buf) < _HEADER.size + size:
                break
            message = pickle.loads(bytes(buf[_HEADER.size : _HEADER.size + size]))
            del buf[: _HEADER.size + size]
            self._answer(*message)

    def _answer(self, call_id: int, ok: bool, result: Any) -> None:
        if call_id == _LOG:
            level, name, message = result
            logging.getLogger(name).log(level, "%s", message)
            return
        if call_id == _MIRRORS:
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
                self._stdin.write(_frame(message))
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
                message = _read_frame(self._stdout)
            except (EOFError, OSError, ValueError, pickle.UnpicklingError):
                code = self._proc.wait()
                self._fail_all(f"the neardup worker process exited (exit code {code})")
                return
            self._answer(*message)


# -- child side ----------------------------------------------------------------------------------
def _open(
    *,
    params: Any,
    storage: str,
    path: str | None,
    redis_url: str | None,
    prefix: str,
    keep_excerpts: int,
) -> Any:
    from .core import NearDupDetector

    store: Any = "memory"
    if storage != "memory":
        from .core.storage import open_storage

        store = open_storage(storage, path=path, redis_url=redis_url, prefix=prefix, ttl=params.ttl)
    return NearDupDetector.from_params(params, storage=store, keep_excerpts=keep_excerpts)


_IDLE = object()  # what _FrameReader.read returns after an idle spell


class _FrameReader:
    """Child side: reads frames from the input pipe, and tells when it has been idle a while."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        try:
            self._fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):  # not a pipe (tests)
            self._fd = None
        self._buf = bytearray()

    def read(self, idle: float | None) -> Any:
        """The next frame; :data:`_IDLE` when none came within ``idle`` seconds.

        Raises:
            EOFError: the input is closed.
        """
        if self._fd is None or sys.platform == "win32":
            return _read_frame(self._stream)
        while True:
            if len(self._buf) >= _HEADER.size:
                size = _HEADER.size + _HEADER.unpack_from(self._buf)[0]
                if len(self._buf) >= size:
                    frame = pickle.loads(bytes(self._buf[_HEADER.size : size]))
                    del self._buf[:size]
                    return frame
            if idle is not None and not select.select([self._fd], [], [], idle)[0]:
                return _IDLE
            data = os.read(self._fd, 1 << 20)
            if not data:
                raise EOFError
            self._buf += data


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """Child side: answer calls until the input closes (or the index cannot be opened)."""
    detector: Any = None
    reader = _FrameReader(stdin)
    unflushed = False
    mirrors_sent: tuple[Any, int] | None = None  # (detector, its mirrors_version) last sent
    while True:
        try:
            message = reader.read(IDLE_FLUSH if unflushed else None)
        except EOFError:
            break
        if message is _IDLE:
            unflushed = False
            flush = getattr(detector.storage, "flush", None) if detector is not None else None
            if flush is not None:
                try:
                    flush()
                except Exception as exc:
                    logger.warning("cannot commit the index: %s", exc)
            continue
        op, call_id, payload = message
        try:
            if op == "open":
                detector = _open(**payload)
                result: Any = True
            elif detector is None and op != "close":
                raise WorkerError("the index is not open")
            elif op == "check":
                result = _check(detector, *payload)
                unflushed = True
            elif op == "skip":
                result = detector.skip(*payload)
                unflushed = True
            elif op == "report":
                result = call_patiently(partial(detector.report, **payload), CLOSE_PATIENCE, "the report")
            elif op == "url_rules":
                result = detector.exchange_url_rules(*payload)
            elif op == "survivors":
                result = detector.surviving_mirrors(payload)
            elif op == "export":
                from .core.exports import cluster_rows

                result = call_patiently(
                    partial(cluster_rows, detector.storage), CLOSE_PATIENCE, "the exports"
                )
            elif op == "close":
                if detector is not None:
                    detector.close()
                detector = None
                result = True
            else:
                raise ValueError(f"unknown call {op!r}")
            reply = (call_id, True, result if call_id else None)
        except Exception as exc:
            reply = (call_id, False, (type(exc).__name__, f"{exc}", isinstance(exc, StorageError)))
        if detector is not None and mirrors_sent != (detector, detector.mirrors_version):
            # The crawl's process skips requests to mirror hosts from this map: it must hold every
            # mirror the index knows, from the start (a resumed or shared index) and at once.
            mirrors_sent = (detector, detector.mirrors_version)
            stdout.write(_frame((_MIRRORS, True, detector.mirrors)))
            stdout.flush()
        if call_id or not reply[1]:
            stdout.write(_frame(reply))
            stdout.flush()
        if op == "open" and not reply[1]:
            return  # the parent sees the worker exit; calls sent meanwhile fail with it
    if detector is not None:
        detector.close()


def _check(  # noqa: PLR0917 (a "check" call's payload tuple, sent positionally)
    detector: Any, url: str, html: bytes | str, encoding: str | None, nbytes: int, canonical: str = ""
) -> Any:
    """Check one page; a ``str`` body is the text Scrapy decoded, read like the inline mode does
    (:func:`~neardup_scrapy.pages.text_reading`). ``canonical``: the ``Link`` header's target."""
    if isinstance(html, str):
        from .pages import ParseTimeout, text_reading

        # The parse counts in the check's CPU budget (NEARDUP_TIMEOUT), as inline.
        started = time.thread_time()
        try:
            source, how = text_reading(html, started + detector.params.timeout)
            return detector.check(url, source, nbytes=nbytes, started=started, canonical=canonical, **how)
        except ParseTimeout:
            return detector.skip(url, "timeout")
    return detector.check(url, html, encoding=encoding, nbytes=nbytes, canonical=canonical)


class _ForwardHandler(logging.Handler):
    """Child side: sends log records to the parent, which logs them in the crawl's log."""

    def __init__(self, stdout: IO[bytes]) -> None:
        super().__init__(logging.WARNING)
        self._stdout = stdout

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._stdout.write(_frame((_LOG, True, (record.levelno, record.name, self.format(record)))))
            self._stdout.flush()
        except Exception:
            self.handleError(record)


def main() -> None:
    """Entry point of ``python -m neardup_scrapy.worker``."""
    # Ctrl-C in a terminal reaches the whole process group: the crawl shuts down gracefully and
    # closes this worker itself (end of input), so the worker must not die first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the frames
    root = logging.getLogger()
    root.setLevel(logging.WARNING)
    root.addHandler(_ForwardHandler(stdout))
    serve(stdin, stdout)


if __name__ == "__main__":
    main()
