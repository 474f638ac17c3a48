"""``scan --jobs N``: decoding, extraction and sketching in N processes, the index in one.

Units are sent in chunks to a pool of processes (``forkserver`` where available, else
``spawn``: nothing of the parent is inherited); each returns, per unit, the decoded
:class:`~neardup_scrapy.cli.inputs.Record` (without its body) and the page's
:class:`~neardup_scrapy.core.analysis.PageAnalysis`. Results come back in input order and
the main process alone asks the index (:meth:`NearDupDetector.check_analysis`), so the
verdicts are exactly those of ``--jobs 1``, which runs the same two halves in one process.
At most ``WINDOW_PER_JOB`` chunks per process are in flight, each closed at ``CHUNK`` units or
once it holds ``CHUNK_BYTES``, so memory stays bounded whatever the input's size.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from neardup_scrapy.core.analysis import PageAnalysis, PageAnalyzer
from neardup_scrapy.core.params import DetectorParams

from .inputs import Record, Unit, decode

__all__ = ["analysed", "default_jobs"]

#: A chunk is sent to a worker when it holds this many units or ``CHUNK_BYTES`` of payload. Few,
#: large messages: each one costs the main process's pool threads Python work (and the GIL the
#: index needs); 64 units of eval-docs (about 2 MB) took ``--jobs 2`` from 0.72 to 0.55-0.59 of
#: ``--jobs 1`` (16 units, 4 chunks in flight per process, before).
CHUNK = 64
CHUNK_BYTES = 4 << 20
WINDOW_PER_JOB = 2
#: Units read ahead by the reader thread (see :func:`_read_ahead`).
READ_AHEAD = 256
#: Inputs with fewer units than this are analysed in the main process (no pool start-up cost).
SMALL_INPUT = 256

_state: dict[str, Any] = {}


def default_jobs() -> int:
    """The CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _analyse(analyzer: PageAnalyzer, unit: Unit, max_body_bytes: int) -> tuple[Record, PageAnalysis | None]:
    record = decode(unit, max_body_bytes)
    analysis = None
    if record.reason is None and record.url is not None:
        if record.plain:
            assert isinstance(record.content, str)
            analysis = analyzer(record.url, text=record.content)
        else:
            analysis = analyzer(record.url, record.content, encoding=record.encoding)
    record.content = None  # the body is not needed any more (nor sent back)
    return record, analysis


def _init(params: DetectorParams, max_body_bytes: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    _state["analyzer"] = PageAnalyzer(params)
    _state["max_body_bytes"] = max_body_bytes


def _chunk(units: list[Unit]) -> list[tuple[Record, PageAnalysis | None]]:
    analyzer, cap = _state["analyzer"], _state["max_body_bytes"]
    return [_analyse(analyzer, unit, cap) for unit in units]


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def analysed(
    units: Iterable[Unit], params: DetectorParams, max_body_bytes: int, jobs: int, *, read_ahead: bool = False
) -> Iterator[tuple[Unit, Record, PageAnalysis | None]]:
    """``(unit, record, analysis)`` for every unit, in input order.

    Args:
        units: the input's units.
        params: the detector parameters (the analysis depends on them).
        max_body_bytes: body size cap (0: none).
        jobs: processes to use; 1 analyses in this process.
        read_ahead: read the units in a thread when ``jobs > 1`` (:func:`_read_ahead`); only for
            inputs whose reads never wait for a writer (files, not a terminal or a pipe).
    """
    it = _read_ahead(units, READ_AHEAD) if jobs > 1 and read_ahead else iter(units)
    if jobs <= 1:
        analyzer = PageAnalyzer(params)
        for unit in it:
            yield (unit, *_analyse(analyzer, unit, max_body_bytes))
        return
    head: list[Unit] = []
    try:
        for unit in it:
            head.append(unit)
            if len(head) >= SMALL_INPUT:
                break
    except (Exception, KeyboardInterrupt):  # an input error or Ctrl-C: what was read is still done
        yield from analysed(head, params, max_body_bytes, 1)
        raise
    if len(head) < SMALL_INPUT:
        yield from analysed(head, params, max_body_bytes, 1)
        return
    pool = _context().Pool(jobs, initializer=_init, initargs=(params, max_body_bytes))
    try:
        pending: deque[tuple[list[Unit], Any]] = deque()
        chunk: list[Unit] = []

        def units_again() -> Iterator[Unit]:
            yield from head
            yield from it

        error: Exception | None = None
        try:
            size = 0
            for unit in units_again():
                chunk.append(unit)
                size += len(unit.payload)
                if len(chunk) < CHUNK and size < CHUNK_BYTES:
                    continue
                pending.append((chunk, pool.apply_async(_chunk, (chunk,))))
                chunk = []
                size = 0
                while len(pending) >= WINDOW_PER_JOB * jobs:
                    yield from _take(pending)
        except Exception as exc:  # an input error: finish what was read before it, then raise it
            error = exc
        if chunk:
            pending.append((chunk, pool.apply_async(_chunk, (chunk,))))
        while pending:
            yield from _take(pending)
        pool.close()
        if error is not None:
            raise error
    finally:
        pool.terminate()
        pool.join()


def _take(pending: deque[tuple[list[Unit], Any]]) -> Iterator[tuple[Unit, Record, PageAnalysis | None]]:
    chunk, result = pending.popleft()
    for unit, (record, analysis) in zip(chunk, result.get(), strict=True):
        yield unit, record, analysis


class _End:
    """The end of the input, with the error that ended it (``None``: its end)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


def _read_ahead(units: Iterable[Unit], size: int) -> Iterator[Unit]:
    """``units``, read by a thread up to ``size`` ahead of the consumer.

    Reading is mostly decompression and file reads, which release the GIL: with a thread they
    overlap the main process's own work (the index, the output) instead of adding to it. An
    error of the input is raised to the consumer where it occurred in the sequence; the thread
    stops when the consumer does. Units read ahead but not taken when the consumer stops are
    not counted as read by it.
    """
    buffer: queue.Queue[Any] = queue.Queue(size)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for unit in units:
                if not put(unit):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put(_End(exc))
            return
        put(_End(None))

    reader = threading.Thread(target=read, name="neardup-scan-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = buffer.get()
            if isinstance(item, _End):
                reader.join()
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        # Stopped early (Ctrl-C, an error downstream): the reader ends at its next unit; one
        # blocked on an input that never comes (a terminal, a pipe) is a daemon and is not waited for.
        stop.set()
