"""The worker process: ``python -m neardup_scrapy.checking.child`` owns the page index and
answers the calls of :class:`~.channel.DetectorWorker` until its input closes.

* One worker, one index: pages are checked strictly in the order they were sent, so the verdicts
  are exactly those of the detector run in the crawl's process (``NEARDUP_WORKER = "inline"``).
* Between bursts of pages the worker commits the open batch of a store that batches its writes
  (the disk store), so a worker killed while idle loses no page.
* Its log records (WARNING and above) are sent to the crawl's process and logged there.
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import signal
import sys
import time
from functools import partial
from typing import IO, Any

from neardup_scrapy.core.storage.base import StorageError
from neardup_scrapy.core.storage.retry import CLOSE_PATIENCE, call_patiently

from .frames import HEADER, LOG_ID, MIRRORS_ID, WorkerError, frame, read_frame

__all__ = ["main", "serve"]

logger = logging.getLogger(__name__)

#: Seconds without a call after which the worker commits its store's open batch.
IDLE_FLUSH = 0.5


def _open(
    *,
    params: Any,
    storage: str,
    path: str | None,
    redis_url: str | None,
    prefix: str,
    keep_excerpts: int,
) -> Any:
    from neardup_scrapy.core import NearDupDetector

    store: Any = "memory"
    if storage != "memory":
        from neardup_scrapy.core.storage import open_storage

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
            return read_frame(self._stream)
        while True:
            if len(self._buf) >= HEADER.size:
                size = HEADER.size + HEADER.unpack_from(self._buf)[0]
                if len(self._buf) >= size:
                    frame = pickle.loads(bytes(self._buf[HEADER.size : size]))
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
            if detector is not None:
                try:
                    detector.storage.flush()
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
                result = check(detector, *payload)
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
                from neardup_scrapy.core.exports import cluster_rows

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
            stdout.write(frame((MIRRORS_ID, True, detector.mirrors)))
            stdout.flush()
        if call_id or not reply[1]:
            stdout.write(frame(reply))
            stdout.flush()
        if op == "open" and not reply[1]:
            return  # the parent sees the worker exit; calls sent meanwhile fail with it
    if detector is not None:
        detector.close()


def check(  # noqa: PLR0917 (a "check" call's payload tuple, sent positionally)
    detector: Any, url: str, html: bytes | str, encoding: str | None, nbytes: int, canonical: str = ""
) -> Any:
    """Check one page; a ``str`` body is the text Scrapy decoded, read like the inline mode does
    (:func:`~neardup_scrapy.pages.text_reading`). ``canonical``: the ``Link`` header's target."""
    if isinstance(html, str):
        from neardup_scrapy.pages import ParseTimeout, text_reading

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
            self._stdout.write(frame((LOG_ID, True, (record.levelno, record.name, self.format(record)))))
            self._stdout.flush()
        except Exception:
            self.handleError(record)


def main() -> None:
    """Entry point of ``python -m neardup_scrapy.checking.child``."""
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
