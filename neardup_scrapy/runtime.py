"""State shared by the neardup components of one crawler: config, the checker, the policy.

Whichever component is built first (extension, middlewares, pipeline) creates the
:class:`NeardupRuntime` with :meth:`NeardupRuntime.of`; the others get the same object, so the
settings are parsed once, the index is opened once, and every component sees the same verdicts.
The index is opened right there, in ``from_crawler``: an unreachable Redis server or a store
built with other parameters stops the crawl before its first request.

Pages are checked by one of the strategies of :mod:`neardup_scrapy.checking`, chosen once from
``NEARDUP_WORKER``: in a helper process (``"process"``, the default) or in the crawl's process
(``"inline"``: on a helper thread while the reactor runs). Item texts (``NEARDUP_ITEM_FIELDS``)
are always checked inline: they need no HTML parsing. A strategy answers with a raw outcome;
the runtime applies the policy to it here, in :meth:`NeardupRuntime._settle`
(:mod:`neardup_scrapy.policy`: stats, logs, ``NEARDUP_ON_STORAGE_ERROR``; the map of mirror
hosts: :class:`~neardup_scrapy.mirrorskip.MirrorMap`).

Nothing that goes wrong while checking stops a page or an item: see :mod:`neardup_scrapy.policy`;
a worker process that died is replaced by a new one that reopens the index.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from .checking.base import Checker, Outcome
from .checking.index import open_detector
from .config import NeardupConfig, NeardupSettingsError, parse_settings
from .core import NearDupDetector, Verdict
from .core.hosts import host_of
from .core.storage.base import StorageError
from .mirrorskip import MirrorMap, MirrorSkipper
from .pages import html_tree
from .policy import StoreOutage, Tally, reason_key
from .signals import duplicate_found

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from .checking.inline import InlineChecker

__all__ = ["KNOWN_SETTINGS", "NeardupRuntime", "NeardupStorageError", "reason_key"]

logger = logging.getLogger(__name__)

_ATTRIBUTE = "_neardup_runtime"
CLOSE_REASON = "neardup_storage_error"
#: Seconds the worker process gets to build the report (and to close the index) at spider close;
#: also how long the check thread may take to finish the pages handed over.
REPORT_TIMEOUT = 600.0

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


def _open_checker(config: NeardupConfig, stats: StatsCollector) -> Checker:
    """The way pages are checked, from ``NEARDUP_WORKER``. Raises what opening the index raises."""
    if config.worker == "process":
        from .checking.process import ProcessChecker

        return ProcessChecker(config, stats)
    from .checking.inline import InlineChecker
    from .checking.thread import ThreadChecker

    return ThreadChecker(InlineChecker(open_detector(config), config.params.timeout, tree_of_text=html_tree))


def _open_error(config: NeardupConfig, what: str, exc: Exception) -> NeardupStorageError:
    where = config.storage_description()
    return NeardupStorageError(f"neardup: cannot open the {what} ({where}; see NEARDUP_STORAGE): {exc}")


def _close_spider(crawler: Crawler, reason: str) -> None:
    engine = getattr(crawler, "engine", None)
    if engine is None:
        return
    if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
        deferred_from_coro(engine.close_spider_async(reason=reason))
    else:
        engine.close_spider(crawler.spider, reason)


class _ItemIndex:
    """The separate index of item texts (``NEARDUP_ITEM_FIELDS``), opened on first use and
    always checked inline (item texts need no HTML parsing)."""

    def __init__(self, config: NeardupConfig) -> None:
        self._config = config
        self._checker: InlineChecker | None = None

    def _open(self) -> InlineChecker:
        if self._checker is None:
            from .checking.inline import InlineChecker

            try:
                detector = open_detector(self._config, items=True)
            except Exception as exc:
                raise _open_error(self._config, "item index", exc) from exc
            self._checker = InlineChecker(detector, self._config.params.timeout, tree_of_text=html_tree)
        return self._checker

    def detector(self) -> NearDupDetector:
        """The index, opened now if it is not yet.

        Raises:
            NeardupStorageError: the index store cannot be opened.
        """
        detector = self._open().detector
        assert detector is not None
        return detector

    def check(self, url: str, text: str) -> Outcome:
        """Check an item's text; never raises. Its index's mirror hosts are not the crawl's."""
        try:
            outcome = self._open().check(url, text=text)
        except Exception as exc:
            return Outcome(url, error=exc)
        return replace(outcome, mirrors=None)

    def close(self) -> list[Exception]:
        """Close the index if it was opened; the errors met."""
        checker, self._checker = self._checker, None
        return [] if checker is None else checker.close()


class _Finalizers:
    """What runs at spider close, in order, before the indexes are closed (the report, the
    url rules' last exchange...); an error in one is logged and the others still run."""

    def __init__(self) -> None:
        self._functions: list[Callable[[NeardupRuntime, str], None]] = []
        self.done = False

    def add(self, finalizer: Callable[[NeardupRuntime, str], None], *, first: bool = False) -> None:
        """Add ``finalizer`` last, or with ``first`` before those added so far."""
        self._functions.insert(0 if first else len(self._functions), finalizer)

    def run(self, runtime: NeardupRuntime, reason: str) -> None:
        """Run them all, once."""
        self.done = True
        for finalizer in self._functions:
            try:
                finalizer(runtime, reason)
            except Exception:
                logger.exception("neardup: error while finishing the crawl")


class NeardupRuntime:
    """Config, checker, counters and the policy applied to outcomes, for one crawler.

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
        self.tally = Tally(self.stats, config.debug)
        self.outage = StoreOutage(
            config.on_storage_error, self.stats, lambda: self.close_spider(CLOSE_REASON)
        )
        try:
            self.checker = _open_checker(config, self.stats)
        except Exception as exc:
            raise _open_error(config, "index", exc) from exc
        self.skipper: MirrorSkipper | None = None
        if config.skip_mirrors:
            self.skipper = MirrorSkipper(crawler, self, config.mirror_requests_kept)
        self.mirrors = MirrorMap(self.stats, self.skipper.mirrors_changed if self.skipper else None)
        self._apply_mirrors(self.checker.mirrors_at_open())
        self.items = _ItemIndex(config)
        self.finalizers = _Finalizers()
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
        return _runtime_of(cls, crawler)

    @property
    def detector(self) -> NearDupDetector | None:
        """The page index when it lives in this process (``NEARDUP_WORKER = "inline"``)."""
        return self.checker.detector

    @property
    def item_detector(self) -> NearDupDetector:
        """The separate index of item texts (``NEARDUP_ITEM_FIELDS``), opened on first use.

        Item texts get their own index so that an item's text never matches the page it was
        extracted from.
        """
        return self.items.detector()

    # -- checking --------------------------------------------------------------------------------
    def check_page(
        self, url: str, text: str, nbytes: int, tree: Callable[[], Any] | None, canonical: str = ""
    ) -> Verdict | Deferred[Verdict]:
        """Check an HTML page; never raises or fails (see :mod:`neardup_scrapy.policy`).

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
            while the reactor runs (the page is checked on the helper thread).
        """
        outcome = self.checker.check_html(url, text, nbytes, tree, canonical)
        if isinstance(outcome, Deferred):
            return outcome.addCallback(self._settle_late).addErrback(self._failed_late, url)
        return self._settle(outcome)

    def _failed_late(self, failure: Failure, url: str) -> Verdict:
        """A Deferred check that failed (a bug): the page passes as :meth:`unexpected` says."""
        error = failure.value if failure.value is not None else RuntimeError(failure.getErrorMessage())
        return self.unexpected(url, error)

    def skip(self, url: str, reason: str) -> Verdict:
        """Count a page as skipped without checking it (non-HTML, too large, opted out...)."""
        outcome = self.checker.record_skip(url, reason)
        if outcome is None:  # handed over to where the index lives
            host = host_of(url)
            verdict = Verdict(
                url=url, host=host, status="skipped", reason=reason, mirror_of=self.mirrors.of_host(host)
            )
        elif outcome.verdict is None:
            return self._settle(outcome)
        else:
            verdict = outcome.verdict
        self.tally.count(verdict)
        return verdict

    def check_item(self, url: str, text: str) -> Verdict:
        """Check the text of an item's fields against earlier items (own index, own stats); never raises."""
        return self._settle(self.items.check(url, text), "neardup/items/")

    def _settle(self, outcome: Outcome, prefix: str = "neardup/") -> Verdict:
        """The policy, in one place: the outcome's mirrors taken, its error handled (a store
        failure by ``NEARDUP_ON_STORAGE_ERROR``, any other as a bug), its verdict counted."""
        self._apply_mirrors(outcome.mirrors)
        error = outcome.error
        if error is None:
            verdict = outcome.verdict
            assert verdict is not None
            self.outage.answered()
        elif isinstance(error, StorageError):
            verdict = self.outage.failed(outcome.url, error)
        else:
            return self.tally.error(outcome.url, error, prefix)
        self.tally.count(verdict, prefix)
        return verdict

    def _settle_late(self, outcome: Outcome) -> Verdict:
        """:meth:`_settle` for an outcome that arrived later: the page goes on whatever happens."""
        try:
            return self._settle(outcome)
        except Exception as exc:  # counting or logging failed: the page must still go on
            logger.debug("neardup: error while counting a verdict: %r", exc)
            return Verdict(url=outcome.url, host=host_of(outcome.url), status="skipped", reason="error")

    def _apply_mirrors(self, mirrors: dict[str, str] | None) -> None:
        if mirrors is not None:
            self.mirrors.update(mirrors)

    def unexpected(self, url: str, exc: BaseException, prefix: str = "neardup/") -> Verdict:
        """Count a page or item whose check failed unexpectedly (a bug); it passes as ``skipped``.

        The verdict has reason ``error`` (stat ``neardup/skipped/error``, or
        ``neardup/items/skipped/error``); the first errors are logged with a WARNING.
        """
        return self.tally.error(url, exc, prefix)

    def untouched(self, reason: str) -> None:
        """Count a response passed on untouched, without a tag (opted out, not HTML, an error
        status): not a page, so neither in ``neardup/pages`` nor in the index and the report;
        counted in ``neardup/untouched/<reason>``."""
        self.stats.inc_value(f"neardup/untouched/{reason_key(reason)}")

    @property
    def storage_errors(self) -> int:
        """Pages and items that passed unchecked because the index store failed."""
        return self.outage.errors

    # -- mirrors ---------------------------------------------------------------------------------
    def mirror_of(self, url: str) -> str | None:
        """The host that ``url``'s host has been confirmed to mirror, if any."""
        return self.mirrors.of_url(url)

    def surviving_mirrors(self, unseen: dict[str, int]) -> dict[str, str]:
        """Of the mirror hosts in ``unseen`` (``{host: requests given up on it}``), those whose
        claim holds whatever those pages are, with their origin (see
        :meth:`NearDupDetector.surviving_mirrors`); the map of mirror hosts is read afresh too.
        ``{}`` when the index cannot answer (every request is then fetched)."""
        try:
            surviving, mirrors = self.checker.surviving_mirrors(unseen, REPORT_TIMEOUT)
        except Exception as exc:
            logger.warning("neardup: cannot read the mirror claims (%s); skipped requests are fetched", exc)
            return {}
        self._apply_mirrors(mirrors)
        return surviving

    # -- actions ---------------------------------------------------------------------------------
    def count_drop(self, what: str) -> None:
        """Count a dropped page or item (``what``: ``"page"`` or ``"item"``)."""
        self.tally.drop(what)

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
        _close_spider(self.crawler, reason)

    def on_page(self, listener: Callable[[Verdict], None]) -> None:
        """Call ``listener(verdict)`` with every page's verdict as it is counted (any status)."""
        self.tally.listeners.append(listener)

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
                return self.checker.exchange_url_rules(writer, state, REPORT_TIMEOUT)
            except Exception as exc:
                logger.debug("neardup: cannot exchange the url rules with the index: %s", exc)
                return None
        self.checker.exchange_url_rules_later(writer, state).addCallbacks(
            callback, _no_rules, errbackArgs=(callback,)
        )
        return None

    # -- closing ---------------------------------------------------------------------------------
    def on_close(self, finalizer: Callable[[NeardupRuntime, str], None], *, first: bool = False) -> None:
        """Run ``finalizer(runtime, reason)`` at spider close, before the index is closed
        (``first``: before the finalizers added so far, e.g. to save state the report reads)."""
        self.finalizers.add(finalizer, first=first)

    def report(self, **caps: int) -> dict[str, Any]:
        """The detector's report with ``totals.dropped`` and ``totals.storage_errors`` filled in."""
        options = {"dropped": self.tally.dropped, "storage_errors": self.outage.errors, **caps}
        return self.checker.report(options, REPORT_TIMEOUT)

    def cluster_rows(self) -> list[dict[str, Any]]:
        """Every cluster of the page index, every member (see :mod:`neardup_scrapy.core.exports`)."""
        return self.checker.cluster_rows(REPORT_TIMEOUT)

    def close(self) -> None:
        """Close the indexes and stop the worker process (idempotent)."""
        errors = self.checker.close(REPORT_TIMEOUT) + self.items.close()
        for error in errors:
            logger.warning("neardup: error while closing the index: %s", error)

    def _spider_closed(self, spider: Any = None, reason: str = "finished") -> None:
        if self.finalizers.done:
            return
        self.checker.stop_growing()
        self.finalizers.run(self, reason)
        if self.outage.errors:
            logger.warning(
                "neardup: %d page(s) or item(s) passed unchecked because the index store failed",
                self.outage.errors,
            )
        self.close()


def _runtime_of(cls: type[NeardupRuntime], crawler: Crawler) -> NeardupRuntime:
    """See :meth:`NeardupRuntime.of`."""
    runtime = getattr(crawler, _ATTRIBUTE, None)
    if isinstance(runtime, NeardupRuntime):
        return runtime
    if runtime is False:
        raise NotConfigured
    config = _read_config(crawler)
    if config is None:
        setattr(crawler, _ATTRIBUTE, False)
        raise NotConfigured
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
        runtime.checker.describe(),
    )
    return runtime


def _no_rules(_failure: Any, callback: Callable[[list[bytes] | None], None]) -> None:
    """The url rules could not be exchanged where the index lives: not worth stopping a crawl for."""
    logger.debug("neardup: cannot exchange the url rules with the index: %s", _failure.getErrorMessage())
    callback(None)


def _read_config(crawler: Crawler) -> NeardupConfig | None:
    """The crawler's neardup settings; ``None`` when ``NEARDUP_ENABLED`` is False. Unknown
    ``NEARDUP_*`` settings are logged (with the setting meant, when one is close).

    Raises:
        NeardupSettingsError: a setting is invalid (logged here in one line).
    """
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
        logger.info("neardup is disabled (NEARDUP_ENABLED = False)")
        return None
    for name in sorted(k for k in crawler.settings if isinstance(k, str) and k.startswith("NEARDUP_")):
        if name not in KNOWN_SETTINGS:
            close = difflib.get_close_matches(name, sorted(KNOWN_SETTINGS), n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}?" if close else "misspelt? see the neardup-scrapy README"
            logger.warning("Unknown setting %s ignored (%s)", name, hint)
    return config
