"""``NEARDUP_SKIP_MIRRORS``: requests to mirror hosts are skipped, kept aside, and fetched after
all when the claim they were skipped on does not hold.

A host is skipped only once its pair's direction is *settled* (see
:func:`neardup_scrapy.core.mirrors.settled`): decided on evidence that arrival order cannot flip.
Even so a skip is never final while the crawl runs:

* a skipped request leaves Scrapy's scheduler (after its duplicate filter, so each url counts
  once) and is kept aside, at most ``NEARDUP_MIRROR_REQUESTS_KEPT`` of them
  (``neardup/mirror_requests_skipped``; those beyond the cap are counted in
  ``neardup/mirror_requests_not_kept`` and cannot be fetched later);
* when the index withdraws the claim, the requests kept for that host are scheduled again
  (``neardup/mirror_requests_rescheduled``);
* when the spider would close (``spider_idle``), the claims are read afresh and each host's kept
  requests are given up only if its pair would hold whatever those pages turn out to be
  (:func:`neardup_scrapy.core.mirrors.survives`): the requests were skipped on evidence from
  which the skipped pages themselves were missing. Otherwise they are scheduled again, the
  spider stays open for them and the host is not skipped again in this crawl (the claim was
  taken on evidence missing its own pages). Requests given up count in
  ``neardup/mirror_requests_given_up``;
* with ``JOBDIR`` the requests kept aside when the crawl pauses are saved there and taken back
  when it resumes.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider

from .core.hosts import host_of
from .core.urls import redact_url

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

__all__ = ["MirrorMap", "MirrorSkipper", "MirrorSource"]

logger = logging.getLogger(__name__)

OPT_OUT_KEY = "dont_neardup"
#: File (under ``JOBDIR``) of the requests kept aside when a crawl pauses.
HELD_FILE = "neardup-mirror-requests.pickle"


class MirrorSource(Protocol):
    """What the skipper reads (the crawl's neardup runtime provides it)."""

    stats: StatsCollector

    def mirror_of(self, url: str) -> str | None:
        """The host that ``url``'s host mirrors, if any."""

    def surviving_mirrors(self, unseen: dict[str, int]) -> dict[str, str]:
        """Of the mirror hosts in ``unseen``, those whose claim holds whatever those pages are."""


class MirrorMap:
    """The index's map of mirror hosts as the crawl acts on it (``neardup/mirror_hosts``).

    The map is the index's own, whole: a host stays a mirror until the index says otherwise
    (not until one of its own pages is checked again), and a resumed or shared index names
    its mirrors before the first request. Learning it from the verdicts of each host's pages
    let a resumed crawl fetch a known mirror until one of its pages came back checked.

    Args:
        stats: the crawl's stats.
        changed: called with the new map whenever it changes (the skipper's
            :meth:`MirrorSkipper.mirrors_changed`).
    """

    def __init__(
        self, stats: StatsCollector, changed: Callable[[dict[str, str]], None] | None = None
    ) -> None:
        self._stats = stats
        self._mirror_of: dict[str, str] = {}
        self.changed = changed

    def of_url(self, url: str) -> str | None:
        """The host that ``url``'s host has been confirmed to mirror, if any."""
        return self._mirror_of.get(host_of(url)) if self._mirror_of else None

    def of_host(self, host: str) -> str | None:
        """The host that ``host`` has been confirmed to mirror, if any."""
        return self._mirror_of.get(host)

    def update(self, mirrors: dict[str, str]) -> None:
        """Take the index's whole map (logged host by host where it changed)."""
        if mirrors == self._mirror_of:
            return
        for host, origin in sorted(mirrors.items()):
            if self._mirror_of.get(host) != origin:
                logger.info("neardup: host %s is a mirror of %s", host, origin)
        for host in sorted(set(self._mirror_of) - set(mirrors)):
            logger.info("neardup: host %s is no longer taken for a mirror", host)
        self._mirror_of = dict(mirrors)
        self._stats.set_value("neardup/mirror_hosts", len(self._mirror_of))
        if self.changed is not None:
            self.changed(self._mirror_of)


class MirrorSkipper:
    """Skips, keeps aside and schedules again the requests to mirror hosts of one crawler.

    Args:
        crawler: the crawler.
        runtime: its neardup runtime (the map of mirror hosts, the claims' survival).
        keep: how many skipped requests to keep aside at most.
    """

    def __init__(self, crawler: Crawler, runtime: MirrorSource, keep: int) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.keep = keep
        self.held: dict[str, list[Request]] = {}
        self.not_kept: dict[str, int] = {}
        self._held_count = 0
        self._rescheduled = 0
        #: hosts whose claim would not hold whatever their kept pages are: fetched from then on
        self._released: set[str] = set()
        self.gate_installed = False
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._idle, signal=signals.spider_idle)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    # -- skipping --------------------------------------------------------------------------------
    def skip(self, request: Request) -> bool:
        """Whether ``request`` goes to a mirror host; if so it is counted and kept aside."""
        if request.meta.get(OPT_OUT_KEY):
            return False
        host = host_of(request.url)
        origin = self.runtime.mirror_of(request.url)
        if origin is None or host in self._released:
            return False
        stats = self.runtime.stats
        stats.inc_value("neardup/mirror_requests_skipped")
        if self._held_count < self.keep:
            self.held.setdefault(host, []).append(request)
            self._held_count += 1
        else:
            self.not_kept[host] = self.not_kept.get(host, 0) + 1
            stats.inc_value("neardup/mirror_requests_not_kept")
        logger.debug(
            "neardup: request to a mirror host skipped: %s (%s mirrors %s)",
            redact_url(request.url),
            host,
            origin,
        )
        return True

    def _install_gate(self) -> None:
        """Skip requests to mirror hosts as they leave the scheduler, before any download.

        A request skipped there is no downloader exception (``downloader/exception_count`` stays
        as it is). Requests leave the scheduler after its duplicate filter, so each url counts once.
        """
        engine = getattr(self.crawler, "engine", None)
        scheduler = getattr(engine, "scheduler", None)
        if scheduler is None:  # Scrapy < 2.14 keeps it in the engine's slot
            scheduler = getattr(getattr(engine, "_slot", None), "scheduler", None)
        original = getattr(scheduler, "next_request", None)
        if original is None:
            logger.debug("neardup: no scheduler to filter; mirror requests are refused by the middleware")
            return

        def next_request() -> Request | None:
            while True:
                request = original()
                if request is None or not self.skip(request):
                    return request  # type: ignore[no-any-return]

        assert scheduler is not None
        scheduler.next_request = next_request
        self.gate_installed = True

    # -- scheduling again ------------------------------------------------------------------------
    def mirrors_changed(self, mirrors: dict[str, str]) -> None:
        """The index's map of mirror hosts changed: schedule again the requests kept for the
        hosts it no longer names."""
        for host in sorted(set(self.held) - set(mirrors)):
            self._reschedule(host, "it is no longer taken for a mirror")
        for host in sorted(set(self.not_kept) - set(mirrors)):
            self._lost(host)

    def _reschedule(self, host: str, why: str) -> int:
        requests = self.held.pop(host, [])
        self._held_count -= len(requests)
        engine = getattr(self.crawler, "engine", None)
        if not requests or engine is None:
            return 0
        for request in requests:
            engine.crawl(request.replace(dont_filter=True))  # its url passed the filter already
        self._rescheduled += len(requests)
        self.runtime.stats.inc_value("neardup/mirror_requests_rescheduled", len(requests))
        logger.info("neardup: %d skipped request(s) to %s scheduled again: %s", len(requests), host, why)
        return len(requests)

    def _lost(self, host: str) -> None:
        lost = self.not_kept.pop(host, 0)
        if lost:
            logger.warning(
                "neardup: %d request(s) to %s were skipped beyond NEARDUP_MIRROR_REQUESTS_KEPT = %d and "
                "cannot be scheduled again, though the host is not taken for a mirror any more",
                lost,
                host,
                self.keep,
            )

    def _idle(self, spider: Any = None) -> None:
        """Before the spider closes: give the kept requests up only where the claim holds
        whatever they are; schedule the others again (and keep the spider open for them)."""
        hosts = sorted(set(self.held) | set(self.not_kept))
        if not hosts:
            return
        unseen = {h: len(self.held.get(h, ())) + self.not_kept.get(h, 0) for h in hosts}
        before = self._rescheduled
        surviving = self.runtime.surviving_mirrors(unseen)  # may withdraw claims (mirrors_changed)
        for host in hosts:
            if host not in surviving:
                self._released.add(host)
                self._reschedule(
                    host, "its claim would not hold whatever they are; it is fetched from now on"
                )
                self._lost(host)
        if self._rescheduled != before:
            raise DontCloseSpider
        for host in hosts:  # every claim left holds: nothing the crawl could still fetch changes it
            given_up = len(self.held.pop(host, ())) + self.not_kept.pop(host, 0)
            if not given_up:
                continue
            self.runtime.stats.inc_value("neardup/mirror_requests_given_up", given_up)
            logger.info(
                "neardup: %d request(s) to %s not fetched: it mirrors %s whatever those pages are",
                given_up,
                host,
                surviving[host],
            )
        self._held_count = 0

    # -- pause and resume ------------------------------------------------------------------------
    def _held_path(self) -> Path | None:
        jobdir = self.crawler.settings.get("JOBDIR")
        return Path(jobdir) / HELD_FILE if jobdir else None

    def _opened(self, spider: Any = None) -> None:
        self._install_gate()
        path = self._held_path()
        if path is None or not path.exists():
            return
        from scrapy.utils.request import request_from_dict

        try:
            saved = pickle.loads(path.read_bytes())
            for host, items in saved.items():
                requests = [request_from_dict(d, spider=self.crawler.spider) for d in items]
                self.held.setdefault(host, []).extend(requests)
                self._held_count += len(requests)
            path.unlink()
        except Exception as exc:
            logger.error("neardup: cannot read the mirror requests kept in %s: %s", path, exc)
            return
        logger.info("neardup: %d request(s) to mirror hosts kept aside by the paused crawl", self._held_count)

    def _closed(self, spider: Any = None, reason: str = "finished") -> None:
        if not self.held:
            return
        path = self._held_path()
        count = sum(len(r) for r in self.held.values())
        if path is None:
            logger.info(
                "neardup: %d request(s) to mirror hosts kept aside are not fetched (the spider closed: %s)",
                count,
                reason,
            )
            return
        try:
            spider = self.crawler.spider
            data = {h: [r.to_dict(spider=spider) for r in rs] for h, rs in self.held.items()}
            path.write_bytes(pickle.dumps(data, protocol=4))
        except Exception as exc:
            logger.error("neardup: cannot keep the %d mirror request(s) in %s: %s", count, path, exc)
            return
        logger.info(
            "neardup: %d request(s) to mirror hosts kept aside in %s for the resumed crawl", count, path
        )
