"""State shared by the neardup components of one crawler: config, detector, counters.

Whichever component is built first (extension, middlewares, pipeline) creates the
:class:`NeardupRuntime` with :meth:`NeardupRuntime.of`; the others get the same object, so the
settings are parsed once, the index is opened once, and every component sees the same verdicts.
The index is opened right there, in ``from_crawler``: an unreachable Redis server or a store
built with other parameters stops the crawl before its first request.

Pages are checked either in a helper process (``NEARDUP_WORKER = "process"``, the default; see
:mod:`neardup_scrapy.worker`) or in the crawl's process (``"inline"``). Item texts
(``NEARDUP_ITEM_FIELDS``) are always checked inline: they need no HTML parsing.

Nothing that goes wrong while checking stops a page or an item: a store failure is handled by
``NEARDUP_ON_STORAGE_ERROR`` (checking switched off with a WARNING, and a WARNING again when it
resumes), any other error gives a ``skipped`` verdict (reason ``error``), and a worker process
that died is replaced by a new one that reopens the index.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred

from .config import NeardupConfig, NeardupSettingsError, parse_settings
from .core import NearDupDetector, Verdict
from .core.hosts import host_of
from .core.storage.base import IndexStorage, StorageError
from .core.storage.retry import CLOSE_PATIENCE, call_patiently
from .core.urls import redact_url
from .signals import duplicate_found

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.python.failure import Failure

    from .check_thread import CheckThread
    from .mirrorskip import MirrorSkipper
    from .worker import DetectorWorker

__all__ = ["KNOWN_SETTINGS", "NeardupRuntime", "NeardupStorageError", "reason_key"]

logger = logging.getLogger(__name__)

_ATTRIBUTE = "_neardup_runtime"
CLOSE_REASON = "neardup_storage_error"
#: Seconds the worker process gets to build the report (and to close the index) at spider close.
REPORT_TIMEOUT = 600.0
#: While the store keeps failing, a WARNING repeats at most this often (seconds).
STILL_FAILING_EVERY = 60.0
#: A worker process that ran at least this long (seconds) is restarted at once when it dies;
#: one that dies sooner is restarted after a delay doubling from 1 s up to RESTART_MAX_DELAY.
RESTART_STABLE_AFTER = 30.0
RESTART_MAX_DELAY = 60.0
#: Unexpected errors logged one by one (WARNING); later ones are only counted.
MAX_ERROR_LOGS = 10

KNOWN_SETTINGS = frozenset(
    f"NEARDUP_{name}"
    for name in (
        "ENABLED",
        "ACTION",
        "THRESHOLD",
        "ALGORITHM",
        "NUM_PERM",
        "SHINGLE_SIZE",
        "SHINGLE_KIND",
        "SIMHASH_DISTANCE",
        "MIN_TOKENS",
        "SCOPE",
        "MAX_TEXT_CHARS",
        "MASK_DIGITS",
        "SEED",
        "LSH_BANDS",
        "LSH_ROWS",
        "MIRROR_MIN_PAGES",
        "MIRROR_SHARE",
        "TTL",
        "FIELD",
        "ITEM_FIELDS",
        "FOLLOW_DUPLICATES",
        "SKIP_MIRRORS",
        "MIRROR_REQUESTS_KEPT",
        "REPORT_FILE",
        "REPORT_HTML",
        "DEBUG",
        "STORAGE",
        "DISK_PATH",
        "REDIS_URL",
        "REDIS_PREFIX",
        "ON_STORAGE_ERROR",
        "MAX_BODY_BYTES",
        "KEEP_EXCERPTS",
        "WORKER",
        "MASK_DATES",
        "TIMEOUT",
        "MAX_WORK",
        "CLUSTERS_FILE",
        "PAIRS_FILE",
        "WARC_FILE",
        "MONITOR_MAX_DUPLICATE_SHARE",
        "MONITOR_MAX_SKIPPED_SHARE",
        "MONITOR_MAX_STORAGE_ERRORS",
        "MONITOR_MIN_PAGES",
        "MONITOR_MAX_RESCHEDULED_SHARE",
        "URL_RULES",
        "SKIP_PREDICTED",
        "URL_RULES_FILE",
        "URL_RULES_MIN_SUPPORT",
        "PREDICTED_KEEP",
    )
)


class NeardupStorageError(StorageError):
    """The index store could not be opened at start-up (the message says which store and why)."""


class _QuietStartupFailure(logging.Filter):
    """Drops the traceback that asyncio or Twisted log for a start-up error already logged in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and getattr(exc, "_neardup_logged", False):
            return False
        if not record.name.startswith("twisted"):
            return True
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        return not any(f"neardup_scrapy.{name}" in text for name in _STARTUP_ERRORS)


_QUIET = _QuietStartupFailure()
_STARTUP_ERRORS = ("config.NeardupSettingsError", "runtime.NeardupStorageError")


def _startup_failed(exc: Exception, crawler: Any) -> None:
    """Log a start-up error as one ERROR line (its traceback at DEBUG) and keep others quiet about it.

    The exception still propagates, so the crawl does not start and ``scrapy crawl`` exits with
    status 1; the "Task exception was never retrieved" traceback asyncio (or Twisted) would add is
    filtered out.
    """
    exc._neardup_logged = True  # type: ignore[attr-defined]
    logger.error("%s", exc if str(exc).startswith("neardup") else f"neardup: {exc}")
    logger.debug("neardup: traceback of the error above", exc_info=exc)
    for name in ("asyncio", "twisted", "scrapy.crawler", "scrapy.utils.defer"):
        target = logging.getLogger(name)
        if _QUIET not in target.filters:
            target.addFilter(_QUIET)
    if not hasattr(crawler, "crawl_async"):
        # Scrapy 2.13 counts a crawl as failed to start (exit status 1 of `scrapy crawl`) only
        # when the crawler has no spider; the crawl never starts, so nothing else reads it.
        # Later versions count any start-up exception.
        with contextlib.suppress(Exception):
            crawler.spider = None


def reason_key(reason: str) -> str:
    """A skip reason as a stats key part: ``"no text"`` -> ``"no_text"``."""
    return re.sub(r"[^a-z0-9]+", "_", reason.lower()).strip("_") or "other"


def _items_path(path: str | None) -> str | None:
    """``jobdir/neardup.sqlite`` -> ``jobdir/neardup-items.sqlite`` (the item index)."""
    if path is None:
        return None
    head, dot, ext = path.rpartition(".")
    if dot and "/" not in ext:
        return f"{head}-items.{ext}"
    return f"{path}-items"


class NeardupRuntime:
    """Config, detector(s), counters and the storage-error policy of one crawler.

    Args:
        crawler: the crawler.
        config: its parsed settings.

    Raises:
        NeardupStorageError: the index store cannot be opened.
    """

    def __init__(self, crawler: Crawler, config: NeardupConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.stats: StatsCollector = crawler.stats
        self.detector: NearDupDetector | None = None
        self.worker: DetectorWorker | None = None
        self.worker_restarts = 0
        self._worker_started = time.monotonic()
        self._worker_pages = 0
        self._restart_delay = 0.0
        self._restart_at = 0.0
        self._mirror_of: dict[str, str] = {}
        self._mirrors_version = -1
        self.skipper: MirrorSkipper | None = None
        if config.worker == "process":
            self.worker = self._start_worker()
        else:
            self.detector = self._open_detector(items=False)
            self._sync_mirrors()
        self._item_detector: NearDupDetector | None = None
        self.dropped = 0
        self.storage_errors = 0
        self.errors = 0
        self._stopping = False
        self._store_failing = False
        self._outage_started = 0.0
        self._outage_warned = 0.0
        self._outage_unchecked = 0
        self._logged_first_duplicate = False
        self._finalizers: list[Callable[[NeardupRuntime, str], None]] = []
        self._page_listeners: list[Callable[[Verdict], None]] = []
        self._closed = False
        self._thread: CheckThread | None = None
        self._thread_mirrors_version = -1
        if config.skip_mirrors:
            from .mirrorskip import MirrorSkipper

            self.skipper = MirrorSkipper(crawler, self, config.mirror_requests_kept)
        crawler.signals.connect(self._spider_closed, signal=scrapy_signals.spider_closed)

    # -- creation --------------------------------------------------------------------------------
    @classmethod
    def of(cls, crawler: Crawler) -> NeardupRuntime:
        """The crawler's runtime, created on first use.

        Raises:
            NotConfigured: ``NEARDUP_ENABLED`` is False (the component switches itself off).
            NeardupSettingsError: a setting is invalid.
            NeardupStorageError: the index store cannot be opened.
        """
        runtime = getattr(crawler, _ATTRIBUTE, None)
        if isinstance(runtime, NeardupRuntime):
            return runtime
        if runtime is False:
            raise NotConfigured
        spider_name = None
        spider = getattr(crawler, "spider", None)
        if spider is not None:
            spider_name = spider.name
        elif getattr(crawler, "spidercls", None) is not None:
            spider_name = getattr(crawler.spidercls, "name", None)
        try:
            config = parse_settings(crawler.settings, spider_name)
        except NeardupSettingsError as exc:
            _startup_failed(exc, crawler)
            raise
        if not config.enabled:
            setattr(crawler, _ATTRIBUTE, False)
            logger.info("neardup is disabled (NEARDUP_ENABLED = False)")
            raise NotConfigured
        for name in sorted(k for k in crawler.settings if isinstance(k, str) and k.startswith("NEARDUP_")):
            if name not in KNOWN_SETTINGS:
                close = difflib.get_close_matches(name, sorted(KNOWN_SETTINGS), n=1, cutoff=0.75)
                hint = f"did you mean {close[0]}?" if close else "misspelt? see the neardup-scrapy README"
                logger.warning("Unknown setting %s ignored (%s)", name, hint)
        try:
            runtime = cls(crawler, config)
        except NeardupStorageError as exc:
            _startup_failed(exc, crawler)
            raise
        setattr(crawler, _ATTRIBUTE, runtime)
        p = config.params
        logger.info(
            "neardup: action=%s threshold=%s algorithm=%s scope=%s storage=%s worker=%s",
            config.action,
            p.threshold,
            p.algorithm,
            p.scope,
            config.storage_description(),
            config.worker if runtime.worker is None else f"process (pid {runtime.worker.pid})",
        )
        return runtime

    def _store_options(self, items: bool) -> dict[str, Any]:
        config = self.config
        return {
            "path": _items_path(config.disk_path) if items else config.disk_path,
            "redis_url": config.redis_url,
            "prefix": f"{config.redis_prefix}:items" if items else config.redis_prefix,
        }

    def _open_error(self, what: str, exc: Exception) -> NeardupStorageError:
        where = self.config.storage_description()
        return NeardupStorageError(f"neardup: cannot open the {what} ({where}; see NEARDUP_STORAGE): {exc}")

    def _open_detector(self, items: bool) -> NearDupDetector:
        config = self.config
        storage: IndexStorage | str = "memory"
        try:
            if config.storage != "memory":
                from .core.storage import open_storage

                storage = open_storage(config.storage, ttl=config.params.ttl, **self._store_options(items))
            return NearDupDetector.from_params(
                config.params,
                storage=storage,
                keep_excerpts=0 if items else config.keep_excerpts,
                url_identity=not items,  # the items of one page share its url
            )
        except Exception as exc:
            raise self._open_error("item index" if items else "index", exc) from exc

    def _worker_init(self) -> dict[str, Any]:
        return {
            "params": self.config.params,
            "storage": self.config.storage,
            "keep_excerpts": self.config.keep_excerpts,
            **self._store_options(False),
        }

    def _start_worker(self) -> DetectorWorker:
        from .worker import DetectorWorker

        try:
            return DetectorWorker(self._worker_init(), on_mirrors=self._worker_mirrors)
        except Exception as exc:
            raise self._open_error("index", exc) from exc

    def _live_worker(self, *, now: bool = False) -> DetectorWorker:
        """The worker process; a new one when it died (not before its restart delay unless ``now``)."""
        worker = self.worker
        assert worker is not None
        if worker.check_alive() or (self._closed and not now):
            return worker
        clock = time.monotonic()
        if not now and clock < self._restart_at:
            return worker  # still dead: calls fail at once and count as store failures
        return self._restart_worker(worker, clock, wait=now)

    def _restart_worker(self, old: DetectorWorker, clock: float, *, wait: bool) -> DetectorWorker:
        from .worker import DetectorWorker

        reason = old.dead
        old.stop(timeout=5.0)
        if clock - self._worker_started >= RESTART_STABLE_AFTER:
            self._restart_delay = 0.0
        else:
            self._restart_delay = min(RESTART_MAX_DELAY, max(1.0, 2 * self._restart_delay))
        self._restart_at = clock + self._restart_delay
        self.worker_restarts += 1
        self.stats.inc_value("neardup/worker_restarts")
        logger.warning(
            "neardup: the worker process stopped (%s); starting a new one (restart %d). %s",
            reason,
            self.worker_restarts,
            self._restart_consequence(),
        )
        try:
            worker = DetectorWorker(
                self._worker_init(), wait=wait, on_open=self._worker_opened, on_mirrors=self._worker_mirrors
            )
        except Exception as exc:
            logger.error("neardup: cannot start a new worker process: %s", exc)
            return old
        self.worker = worker
        self._worker_started = clock
        self._worker_pages = 0
        return worker

    def _restart_consequence(self) -> str:
        storage = self.config.storage
        if storage == "memory":
            return (
                f"The index was in the memory of the process that stopped: the {self._worker_pages} "
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
        return f"It reopens the index ({self.config.storage_description()})."

    def _worker_opened(self, ok: bool, result: Any) -> None:
        if ok:
            logger.info("neardup: the new worker process has opened the index; pages are checked again")
        else:
            logger.warning(
                "neardup: the new worker process cannot open the index (%s); another one is started "
                "at a later page",
                result,
            )

    @property
    def item_detector(self) -> NearDupDetector:
        """The separate index of item texts (``NEARDUP_ITEM_FIELDS``), opened on first use.

        Item texts get their own index so that an item's text never matches the page it was
        extracted from.
        """
        if self._item_detector is None:
            self._item_detector = self._open_detector(items=True)
        return self._item_detector

    # -- checking --------------------------------------------------------------------------------
    def check_page(
        self, url: str, text: str, nbytes: int, tree: Callable[[], Any] | None, canonical: str = ""
    ) -> Verdict | Deferred[Verdict]:
        """Check an HTML page; never raises or fails (see the module docstring).

        Args:
            url: the page's url.
            text: its body as Scrapy decoded it (:func:`neardup_scrapy.pages.response_text`).
            nbytes: the size of its (decompressed) body.
            tree: returns the lxml tree Scrapy parsed from ``text`` (or ``None``); read only by
                an inline check outside a running reactor; ``None`` when ``text`` is not the
                text Scrapy parsed. The worker and inline's helper thread read ``text`` as
                Scrapy's selector reads it (:func:`neardup_scrapy.pages.selector_body`).
            canonical: the target of the response's ``Link: <...>; rel="canonical"`` header
                (``""``: none).

        Returns:
            The verdict, or a Deferred that fires with it: with a worker process, and inline
            while the reactor runs (the page is checked on the helper thread, see
            :mod:`neardup_scrapy.check_thread`).
        """
        if self.worker is not None:
            return self._check_in_worker((url, text, None, nbytes, canonical))
        from .pages import ParseTimeout, page_tree

        thread = self._check_thread()
        if thread is not None:
            # The helper thread reads the page from its text as the worker process does, in a
            # pass that releases the GIL; this thread builds no tree for the plugin: the spider
            # builds Scrapy's when it reads the page (if it does), while the caches hold it
            return thread.submit(self._check_on_thread, url, text, nbytes, canonical).addCallbacks(
                self._checked_on_thread, self._failed_on_thread, callbackArgs=(url,), errbackArgs=(url,)
            )
        # The parse counts in the check's CPU budget (NEARDUP_TIMEOUT), as in the worker.
        started = time.thread_time()
        try:
            root = page_tree(text, started + self.config.params.timeout, tree)
        except ParseTimeout:
            return self.skip(url, "timeout")
        except Exception:
            root = None
        if root is None:
            return self.check(url, html=text, nbytes=nbytes, started=started, canonical=canonical)
        return self.check(url, html=text, tree=root, nbytes=nbytes, started=started, canonical=canonical)

    def check(
        self,
        url: str,
        *,
        html: bytes | str | None = None,
        tree: Any = None,
        text: str | None = None,
        encoding: str | None = None,
        nbytes: int | None = None,
        started: float | None = None,
        canonical: str = "",
    ) -> Verdict:
        """Check a page in this process and count the verdict (inline mode only); never raises."""
        assert self.detector is not None, "check() needs NEARDUP_WORKER = 'inline'"
        try:
            verdict = self.detector.check(
                url,
                html,
                tree=tree,
                text=text,
                encoding=encoding,
                nbytes=nbytes,
                started=started,
                canonical=canonical,
            )
        except StorageError as exc:
            return self._storage_failed(url, exc)
        except Exception as exc:
            return self.unexpected(url, exc)
        self._store_answered()
        self._count(verdict, "neardup/")
        return verdict

    def _check_thread(self) -> CheckThread | None:
        """Inline mode's helper thread (:mod:`neardup_scrapy.check_thread`), which owns the page
        index from the first page checked while the reactor runs; ``None`` before (pages are
        then checked in the caller's thread) and once the runtime is closed."""
        if self._thread is None and not self._closed and self.detector is not None:
            from twisted.internet import reactor

            if reactor.running:
                from .check_thread import CheckThread

                self._thread = CheckThread.shared(reactor)
        return self._thread

    def _check_on_thread(
        self, url: str, text: str, nbytes: int, canonical: str = ""
    ) -> tuple[Verdict | None, StorageError | None, dict[str, str] | None]:
        """An inline check on the helper thread: the verdict or the store's error, and the
        detector's map of mirror hosts when it changed (read here, where the index lives).

        The page is read as the worker process reads it
        (:func:`~neardup_scrapy.pages.text_reading`)."""
        from .pages import ParseTimeout, text_reading

        detector = self.detector
        assert detector is not None, "the index is closed"
        started = time.thread_time()  # the budget counts this thread's CPU time
        try:
            try:
                source, how = text_reading(text, started + self.config.params.timeout)
                # analyze + check_analysis, not check(): check()'s cache of repeated bodies
                # hashes the whole body holding the GIL that the crawl's thread needs
                analysis = detector.analyze(url, source, started=started, **how)
            except ParseTimeout:
                verdict = detector.skip(url, "timeout")
            else:
                verdict = detector.check_analysis(url, analysis, nbytes=nbytes, canonical=canonical)
        except StorageError as exc:
            return None, exc, None
        mirrors = None
        if detector.mirrors_version != self._thread_mirrors_version:
            self._thread_mirrors_version = detector.mirrors_version
            mirrors = detector.mirrors
        return verdict, None, mirrors

    def _checked_on_thread(
        self, outcome: tuple[Verdict | None, StorageError | None, dict[str, str] | None], url: str
    ) -> Verdict:
        verdict, error, mirrors = outcome
        if mirrors is not None:
            self._set_mirrors(mirrors)
        if error is not None:
            return self._storage_failed(url, error)
        assert verdict is not None
        self._store_answered()
        self._count(verdict, "neardup/")
        return verdict

    def _failed_on_thread(self, failure: Failure, url: str) -> Verdict:
        error = failure.value
        return self.unexpected(url, error if error is not None else RuntimeError("the check failed"))

    def _skip_on_thread(self, url: str, reason: str) -> None:
        """Count a skipped page in the index, on the helper thread; a failing store is not
        reported for a skip (as with the worker process: the next check reports it)."""
        detector = self.detector
        if detector is None:
            return
        try:
            detector.skip(url, reason)
        except StorageError as exc:
            logger.debug("neardup: cannot count a skipped page in the index: %s", exc)

    def _on_thread_idle(self) -> None:
        """Wait until the helper thread has run every job handed over (before the index is read
        or closed in this thread)."""
        if self._thread is not None and not self._thread.drain(REPORT_TIMEOUT):
            logger.warning("neardup: the check thread did not finish its pages within %.0f s", REPORT_TIMEOUT)

    def _check_in_worker(self, payload: tuple[Any, ...]) -> Deferred[Verdict]:
        deferred: Deferred[Verdict] = Deferred()
        url = payload[0]
        worker = self._live_worker()

        def done(ok: bool, result: Any) -> None:
            try:
                if ok:
                    self._worker_pages += 1
                    self._store_answered()
                    self._count(result, "neardup/")
                    verdict = result
                elif isinstance(result, StorageError):
                    verdict = self._storage_failed(url, result)
                else:
                    verdict = self.unexpected(url, result)
            except Exception as exc:  # counting or logging failed: the page must still go on
                verdict = Verdict(url=url, host=host_of(url), status="skipped", reason="error")
                logger.debug("neardup: error while counting a verdict: %r", exc)
            deferred.callback(verdict)

        if worker.threaded:
            from twisted.internet import reactor

            worker.call("check", payload, lambda ok, result: reactor.callFromThread(done, ok, result))
        else:
            worker.call("check", payload, done)
        return deferred

    def skip(self, url: str, reason: str) -> Verdict:
        """Count a page as skipped without checking it (non-HTML, too large, opted out...)."""
        if self.worker is not None or self._check_thread() is not None:
            if self.worker is not None:
                self._live_worker().send("skip", (url, reason))
            else:
                assert self._thread is not None
                self._thread.post(self._skip_on_thread, url, reason)
            host = host_of(url)
            verdict = Verdict(
                url=url, host=host, status="skipped", reason=reason, mirror_of=self._mirror_of.get(host)
            )
        else:
            assert self.detector is not None
            try:
                verdict = self.detector.skip(url, reason)
            except StorageError as exc:
                return self._storage_failed(url, exc)
            except Exception as exc:
                return self.unexpected(url, exc)
        self._count(verdict, "neardup/")
        return verdict

    def untouched(self, reason: str) -> None:
        """Count a response passed on untouched, without a tag (opted out, not HTML, an error
        status): not a page, so neither in ``neardup/pages`` nor in the index and the report;
        counted in ``neardup/untouched/<reason>``."""
        self.stats.inc_value(f"neardup/untouched/{reason_key(reason)}")

    def surviving_mirrors(self, unseen: dict[str, int]) -> dict[str, str]:
        """Of the mirror hosts in ``unseen`` (``{host: requests given up on it}``), those whose
        claim holds whatever those pages are, with their origin (see
        :meth:`NearDupDetector.surviving_mirrors`); the map of mirror hosts is read afresh too.
        ``{}`` when the index cannot answer (every request is then fetched)."""
        try:
            if self.worker is not None:
                surviving: dict[str, str] = self._live_worker(now=True).call_sync(
                    "survivors", unseen, REPORT_TIMEOUT
                )
                return surviving
            assert self.detector is not None
            self._on_thread_idle()
            surviving = self.detector.surviving_mirrors(unseen)
            self._sync_mirrors()
            return surviving
        except Exception as exc:
            logger.warning("neardup: cannot read the mirror claims (%s); skipped requests are fetched", exc)
            return {}

    def check_item(self, url: str, text: str) -> Verdict:
        """Check the text of an item's fields against earlier items (own index, own stats); never raises."""
        try:
            verdict = self.item_detector.check(url, text=text)
        except StorageError as exc:
            return self._storage_failed(url, exc, "neardup/items/")
        except Exception as exc:
            return self.unexpected(url, exc, "neardup/items/")
        self._store_answered()
        self._count(verdict, "neardup/items/")
        return verdict

    def unexpected(self, url: str, exc: BaseException, prefix: str = "neardup/") -> Verdict:
        """Count a page or item whose check failed unexpectedly (a bug); it passes as ``skipped``.

        The verdict has reason ``error`` (stat ``neardup/skipped/error``, or
        ``neardup/items/skipped/error``); the first errors are logged with a WARNING.
        """
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
        self._count(verdict, prefix)
        return verdict

    def _count(self, verdict: Verdict, prefix: str) -> None:
        stats = self.stats
        stats.inc_value(prefix + "pages")
        stats.inc_value(prefix + verdict.counted)
        if verdict.status == "skipped":
            stats.inc_value(f"{prefix}skipped/{reason_key(verdict.reason)}")
        elif prefix == "neardup/" and self.detector is not None and self._thread is None:
            self._sync_mirrors()
        if prefix == "neardup/":
            for listener in self._page_listeners:
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
        if self.config.debug:
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

    def _sync_mirrors(self) -> None:
        """Inline: take the detector's map of mirror hosts when it changed."""
        detector = self.detector
        if detector is not None and detector.mirrors_version != self._mirrors_version:
            self._mirrors_version = detector.mirrors_version
            self._set_mirrors(detector.mirrors)

    def _worker_mirrors(self, mirrors: dict[str, str]) -> None:
        """The worker's map of mirror hosts (sent after the open and when it changes)."""
        if threading.current_thread() is threading.main_thread():
            self._set_mirrors(mirrors)
        else:  # the worker's reader thread (no reactor that can watch pipes)
            from twisted.internet import reactor

            reactor.callFromThread(self._set_mirrors, mirrors)

    def _set_mirrors(self, mirrors: dict[str, str]) -> None:
        """Replace the map requests to mirror hosts are skipped by (``NEARDUP_SKIP_MIRRORS``).

        The map is the index's own, whole: a host stays a mirror until the index says otherwise
        (not until one of its own pages is checked again), and a resumed or shared index names
        its mirrors before the first request. Learning it from the verdicts of each host's pages
        let a resumed crawl fetch a known mirror until one of its pages came back checked.
        """
        if mirrors == self._mirror_of:
            return
        for host, origin in sorted(mirrors.items()):
            if self._mirror_of.get(host) != origin:
                logger.info("neardup: host %s is a mirror of %s", host, origin)
        for host in sorted(set(self._mirror_of) - set(mirrors)):
            logger.info("neardup: host %s is no longer taken for a mirror", host)
        self._mirror_of = dict(mirrors)
        self.stats.set_value("neardup/mirror_hosts", len(self._mirror_of))
        if self.skipper is not None:
            self.skipper.mirrors_changed(self._mirror_of)

    def _storage_failed(self, url: str, exc: StorageError, prefix: str = "neardup/") -> Verdict:
        self.storage_errors += 1
        self.stats.inc_value("neardup/storage_errors")
        clock = time.monotonic()
        if not self._store_failing:
            self._store_failing = True
            self._outage_started = self._outage_warned = clock
            self._outage_unchecked = 0
        self._outage_unchecked += 1
        if self.config.on_storage_error == "stop":
            if not self._stopping:
                self._stopping = True
                logger.error(
                    "neardup: the index store failed (%s); closing the spider "
                    "(NEARDUP_ON_STORAGE_ERROR = 'stop')",
                    exc,
                )
                self.close_spider(CLOSE_REASON)
        elif self._outage_unchecked == 1:
            logger.warning(
                "neardup: the index store failed (%s); checking is off: pages pass unchecked, tagged "
                "'skipped', until it answers again (NEARDUP_ON_STORAGE_ERROR = 'pass'; see the "
                "neardup/storage_errors stat)",
                exc,
            )
        elif clock - self._outage_warned >= STILL_FAILING_EVERY:
            self._outage_warned = clock
            logger.warning(
                "neardup: the index store still fails (%s); %d page(s) or item(s) passed unchecked "
                "in the last %.0f s",
                exc,
                self._outage_unchecked,
                clock - self._outage_started,
            )
        else:
            logger.debug("neardup: store still failing for %s: %s", redact_url(url), exc)
        verdict = Verdict(url=url, host=host_of(url), status="skipped", reason="storage error")
        self._count(verdict, prefix)
        return verdict

    def _store_answered(self) -> None:
        """A check went through: say so if checking was off because the store failed."""
        if not self._store_failing:
            return
        self._store_failing = False
        if self.config.on_storage_error == "pass":
            logger.warning(
                "neardup: the index store answers again; checking is on again after %d page(s) or "
                "item(s) passed unchecked in %.0f s",
                self._outage_unchecked,
                time.monotonic() - self._outage_started,
            )

    # -- actions ---------------------------------------------------------------------------------
    def mirror_of(self, url: str) -> str | None:
        """The host that ``url``'s host has been confirmed to mirror, if any."""
        return self._mirror_of.get(host_of(url)) if self._mirror_of else None

    def count_drop(self, what: str) -> None:
        """Count a dropped page or item (``what``: ``"page"`` or ``"item"``)."""
        self.dropped += 1
        self.stats.inc_value("neardup/dropped")
        self.stats.inc_value(f"neardup/dropped/{what}")

    def duplicate_found(self, verdict: Verdict, *, response: Any = None, item: Any = None) -> None:
        """Send the :data:`~neardup_scrapy.signals.duplicate_found` signal."""
        self.crawler.signals.send_catch_log(
            signal=duplicate_found,
            verdict=verdict,
            response=response,
            item=item,
            spider=self.crawler.spider,
        )

    def close_spider(self, reason: str) -> None:
        """Ask the engine to close the spider (cleanly: pending requests are dropped)."""
        engine = getattr(self.crawler, "engine", None)
        if engine is None:
            return
        if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
            deferred_from_coro(engine.close_spider_async(reason=reason))
        else:
            engine.close_spider(self.crawler.spider, reason)

    # -- closing ---------------------------------------------------------------------------------
    def on_close(self, finalizer: Callable[[NeardupRuntime, str], None], *, first: bool = False) -> None:
        """Run ``finalizer(runtime, reason)`` at spider close, before the index is closed
        (``first``: before the finalizers added so far, e.g. to save state the report reads)."""
        if first:
            self._finalizers.insert(0, finalizer)
        else:
            self._finalizers.append(finalizer)

    def on_page(self, listener: Callable[[Verdict], None]) -> None:
        """Call ``listener(verdict)`` with every page's verdict as it is counted (any status)."""
        self._page_listeners.append(listener)

    def url_rules(
        self, writer: str, state: bytes | None, callback: Callable[[list[bytes] | None], None] | None = None
    ) -> list[bytes] | None:
        """Save this process's duplicate-url rules with the index and read every other
        writer's (see :meth:`~neardup_scrapy.core.NearDupDetector.exchange_url_rules`).

        Without ``callback`` the call is made here and returns the states (``None`` when the
        store failed: rules are not worth stopping a crawl for; logged at DEBUG). With one, it
        is made where the index lives (the worker, the check thread) and ``callback`` gets them
        in the reactor's thread.
        """
        if callback is None:
            try:
                if self.worker is not None:
                    result: list[bytes] = self._live_worker(now=True).call_sync(
                        "url_rules", (writer, state), REPORT_TIMEOUT
                    )
                    return result
                assert self.detector is not None
                self._on_thread_idle()
                return self.detector.exchange_url_rules(writer, state)
            except Exception as exc:
                logger.debug("neardup: cannot exchange the url rules with the index: %s", exc)
                return None
        if self.worker is not None:
            worker = self._live_worker()

            def done(ok: bool, result: Any) -> None:
                callback(result if ok else None)

            if worker.threaded:
                from twisted.internet import reactor

                worker.call("url_rules", (writer, state), lambda ok, r: reactor.callFromThread(done, ok, r))
            else:
                worker.call("url_rules", (writer, state), done)
            return None
        thread = self._check_thread()
        detector = self.detector
        if thread is None or detector is None:
            callback(self.url_rules(writer, state))
            return None
        thread.submit(detector.exchange_url_rules, writer, state).addCallbacks(
            callback, lambda _f: callback(None)
        )
        return None

    def report(self, **caps: int) -> dict[str, Any]:
        """The detector's report with ``totals.dropped`` and ``totals.storage_errors`` filled in."""
        options: dict[str, int] = {"dropped": self.dropped, "storage_errors": self.storage_errors, **caps}
        if self.worker is not None:
            report: dict[str, Any] = self._live_worker(now=True).call_sync("report", options, REPORT_TIMEOUT)
            return report
        detector = self.detector
        assert detector is not None
        self._on_thread_idle()
        return call_patiently(lambda: detector.report(**options), CLOSE_PATIENCE, "the report")

    def cluster_rows(self) -> list[dict[str, Any]]:
        """Every cluster of the page index, every member (see :mod:`neardup_scrapy.core.exports`)."""
        if self.worker is not None:
            rows: list[dict[str, Any]] = self._live_worker(now=True).call_sync("export", None, REPORT_TIMEOUT)
            return rows
        storage = self.detector.storage if self.detector is not None else None
        assert storage is not None
        self._on_thread_idle()
        from .core.exports import cluster_rows

        return call_patiently(lambda: cluster_rows(storage), CLOSE_PATIENCE, "the exports")

    def close(self) -> None:
        """Close the indexes and stop the worker process (idempotent)."""
        self._on_thread_idle()
        self._thread = None
        if self.worker is not None:
            worker, self.worker = self.worker, None
            if worker.dead is None:
                try:
                    worker.call_sync("close", None, REPORT_TIMEOUT)
                except Exception as exc:
                    logger.warning("neardup: error while closing the index: %s", exc)
            worker.stop()
        for detector in (self.detector, self._item_detector):
            if detector is None:
                continue
            try:
                detector.close()
            except Exception as exc:
                logger.warning("neardup: error while closing the index: %s", exc)
        self.detector = self._item_detector = None

    def _spider_closed(self, spider: Any = None, reason: str = "finished") -> None:
        if self._closed:
            return
        self._closed = True
        for finalizer in self._finalizers:
            try:
                finalizer(self, reason)
            except Exception:
                logger.exception("neardup: error while finishing the crawl")
        if self.storage_errors:
            logger.warning(
                "neardup: %d page(s) or item(s) passed unchecked because the index store failed",
                self.storage_errors,
            )
        self.close()
