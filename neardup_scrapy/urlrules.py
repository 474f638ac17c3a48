"""Duplicate-url rules in a crawl: learnt from the verdicts, applied before downloads.

Enabled by the add-on (``DOWNLOADER_MIDDLEWARES = {"neardup_scrapy.urlrules.NeardupUrlRulesMiddleware":
530}`` by hand). It learns each host's rules (:mod:`neardup_scrapy.core.urlrules`) from the pages
the downloader middleware checks, from redirects and from ``<link rel=canonical>``; saves them
with the index and in the report; and with ``NEARDUP_SKIP_PREDICTED = True`` does not download a
request whose url, rewritten by its host's valid rules, names a page already fetched or being
fetched: it raises :class:`PredictedDuplicate` (an ``IgnoreRequest``; the errback sees the page
it duplicates) and keeps the request aside, to schedule it again if the prediction stops holding
(a rule withdrawn, the page it named failed or never came: checked again when the spider is
idle). A small, shrinking share of predicted duplicates is downloaded anyway to keep testing
the rules.

Why 530: its ``process_response`` runs after the checking middleware's (540), so the page's tag
is in ``request.meta`` when it looks; its ``process_request`` runs before any download.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Response

from .core import Verdict
from .core.urlrules import Prediction, SkipPlanner, UrlRuleLearner
from .core.urls import redact_url
from .runtime import NeardupRuntime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["NeardupUrlRulesMiddleware", "PredictedDuplicate"]

logger = logging.getLogger(__name__)

META_KEY = "neardup"
OPT_OUT_KEY = "dont_neardup"
#: Pages learnt from between two exchanges of rules with a shared index (Redis, Redis Cluster, a
#: custom store: other processes' rules are read then, this process's saved); other stores are
#: read at start and written at close.
SYNC_EVERY = 200
_CHECKED = ("unique", "exact", "near")
#: In ``JOBDIR``: the requests kept aside and the pages fetched when the crawl paused.
SAVED_FILE = "neardup-predicted.pickle"


class PredictedDuplicate(IgnoreRequest):
    """A request not downloaded: its host's rules say it names a page already fetched.

    Attributes:
        url: the request's url.
        duplicate_of: the url of the page it names.
        tag: that page's tag object (``None`` when that page was still being downloaded).
        rules: the rules that rewrote the url, in words.
    """

    def __init__(self, prediction: Prediction) -> None:
        self.url = prediction.url
        self.duplicate_of = prediction.duplicate_of
        self.tag: dict[str, Any] | None = dict(prediction.tag) if prediction.tag is not None else None
        self.rules = [f"{host}: {rule.describe()}" for host, rule in prediction.rules]
        super().__init__(
            f"neardup: {redact_url(prediction.url)} names the page {redact_url(prediction.duplicate_of)} "
            f"({'; '.join(self.rules)})"
        )


class NeardupUrlRulesMiddleware:
    """Learns duplicate-url rules; with ``NEARDUP_SKIP_PREDICTED`` skips what they predict."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.runtime = NeardupRuntime.of(crawler)
        config = self.config = self.runtime.config
        if not config.url_rules:
            raise NotConfigured
        self.stats = self.runtime.stats
        self.learner = UrlRuleLearner(min_support=config.url_rules_min_support)
        self.planner: SkipPlanner[Request] | None = None
        if config.skip_predicted:
            self.planner = SkipPlanner(self.learner, seed=config.params.seed, keep=config.predicted_keep)
        self._writer = uuid.uuid4().hex
        self._file_states = self._read_file()
        # only a store that other processes write at the same time has rules to read mid-crawl
        self._shared = config.storage not in ("memory", "disk")
        self._since_sync = 0
        self._syncing = False
        self._learned = self._withdrawn = 0
        self._again: list[Request] = []
        others = self.runtime.url_rules(self._writer, None) or []
        self._load(others)
        self.runtime.on_page(self._page)
        self.runtime.on_close(self._finish, first=True)
        crawler.signals.connect(self._idle, signal=signals.spider_idle)
        jobdir = crawler.settings.get("JOBDIR")
        self._paused: _PausedRequests | None = None
        if jobdir and self.planner is not None:
            self._paused = _PausedRequests(Path(jobdir) / SAVED_FILE, self.planner)
            crawler.signals.connect(self._resume, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Build the middleware (``NotConfigured`` when ``NEARDUP_URL_RULES`` is False)."""
        return cls(crawler)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # -- rules from files and the index ------------------------------------------------------------
    def _read_file(self) -> list[dict[str, Any]]:
        path = self.config.url_rules_file
        if not path or not Path(path).expanduser().exists():
            return []
        try:
            state = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
            from .core.urlrules import parse_state

            parse_state(state)
        except (OSError, ValueError) as exc:
            logger.error(
                "neardup: cannot read NEARDUP_URL_RULES_FILE %s (%s); starting without it", path, exc
            )
            return []
        logger.info("neardup: url rules loaded from %s", path)
        return [state]

    def _load(self, others: list[bytes]) -> None:
        states = list(self._file_states)
        for blob in others:
            try:
                state = json.loads(blob)
            except ValueError:
                continue
            if isinstance(state, dict):
                states.append(state)
        try:
            self.learner.load(states)
        except ValueError as exc:
            logger.warning("neardup: url rules in the index are malformed (%s); ignored", exc)
            self.learner.load(self._file_states)
        self._after_change()

    def _sync(self) -> None:
        if self._syncing:
            return
        self._syncing = True
        state = json.dumps(self.learner.state()).encode("utf-8")

        def done(others: list[bytes] | None) -> None:
            self._syncing = False
            if others is not None:
                self._load(others)

        self.runtime.url_rules(self._writer, state, done)

    # -- learning ----------------------------------------------------------------------------------
    def _page(self, verdict: Verdict) -> None:
        """A checked page: learn from it; requests may now name it."""
        if verdict.status not in _CHECKED or not verdict.cluster:
            if self.planner is not None:
                self._reschedule(self.planner.failed(verdict.url), "the page they named was not checked")
            return
        self.learner.observe(verdict.url, verdict.cluster)
        if verdict.canonical and verdict.canonical != verdict.url:
            self.learner.observe_same(verdict.url, verdict.canonical)
        if self.planner is not None:
            self.planner.fetched(verdict.url, verdict.to_dict())
        self._after_change()
        self._since_sync += 1
        if self._shared and self._since_sync >= SYNC_EVERY:
            self._since_sync = 0
            self._sync()

    def _after_change(self) -> None:
        learned, withdrawn = self.learner.learned, self.learner.withdrawn
        if learned != self._learned or withdrawn != self._withdrawn:
            self.stats.inc_value("neardup/url_rules/learned", learned - self._learned)
            self.stats.inc_value("neardup/url_rules/withdrawn", withdrawn - self._withdrawn)
            if withdrawn != self._withdrawn:
                logger.info(
                    "neardup: %d url rule(s) withdrawn after a counter-example", withdrawn - self._withdrawn
                )
            self._learned, self._withdrawn = learned, withdrawn
        if self.planner is not None:
            self._reschedule(self.planner.withdrawn(), "a rule was withdrawn")

    # -- applying ----------------------------------------------------------------------------------
    def process_request(self, request: Request, spider: Any = None) -> None:
        """Skip a predicted duplicate (``NEARDUP_SKIP_PREDICTED``)."""
        planner = self.planner
        if planner is None or request.method != "GET" or request.dont_filter or request.meta.get(OPT_OUT_KEY):
            return
        prediction = planner.predict(request.url)
        if prediction is not None:
            if prediction.explore:
                self.stats.inc_value("neardup/predicted/explored")
            elif planner.keep(prediction, request):
                self.stats.inc_value("neardup/skipped/predicted")
                raise PredictedDuplicate(prediction)
            else:
                self.stats.inc_value("neardup/predicted/not_kept")
        planner.fetching(request.url)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        """Learn from redirects; hand back the requests kept for a download that gave no page."""
        redirects = request.meta.get("redirect_urls")
        if redirects:
            for source in redirects:
                if source != response.url:
                    self.learner.observe_same(source, response.url)
            self._after_change()
        if self.planner is not None and not isinstance(request.meta.get(META_KEY), dict):
            self._reschedule(self.planner.failed(request.url), "the page they named gave no page")
        return response

    def process_exception(self, request: Request, exception: BaseException, spider: Any = None) -> None:
        """A download failed: the requests kept for its page are scheduled again."""
        if self.planner is not None and not isinstance(exception, PredictedDuplicate):
            self._reschedule(self.planner.failed(request.url), "the page they named failed")

    def _reschedule(self, requests: list[Request], why: str) -> None:
        if not requests:
            return
        engine = getattr(self.crawler, "engine", None)
        if engine is None:
            return
        logger.debug("neardup: %d skipped request(s) scheduled again: %s", len(requests), why)
        self.stats.inc_value("neardup/predicted/rescheduled", len(requests))
        for request in requests:
            engine.crawl(request.replace(dont_filter=True))

    def _idle(self, spider: Any = None) -> None:
        """Before the spider closes: schedule again the skipped requests whose page never came."""
        if self.planner is None:
            return
        requests = self._again + self.planner.withdrawn() + self.planner.idle()
        self._again = []
        if requests:
            self._reschedule(requests, "the page they named never came")
            raise DontCloseSpider

    # -- pause and resume (JOBDIR) -----------------------------------------------------------------
    def _resume(self, spider: Any = None) -> None:
        """A resumed crawl takes back the requests kept aside and the pages fetched before."""
        assert self._paused is not None
        self._again.extend(self._paused.resume(spider))  # scheduled again when the spider is first idle

    # -- closing -----------------------------------------------------------------------------------
    def _finish(self, runtime: NeardupRuntime, reason: str) -> None:
        """Save the rules with the index (the report reads them there) and in the rules file."""
        state = json.dumps(self.learner.state()).encode("utf-8")
        others = runtime.url_rules(self._writer, state)
        if others is not None:
            self._load(others)
        summary = self.learner.summary()
        self.stats.set_value("neardup/url_rules/valid", summary["valid"])
        if self.planner is not None:
            self.stats.set_value("neardup/predicted/kept", self.planner.kept)
            if self._paused is not None:
                self._paused.save(self.crawler.spider)
        path = self.config.url_rules_file
        if path:
            try:
                target = Path(path).expanduser()
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(summary, indent=1), encoding="utf-8")
                os.replace(tmp, target)
            except OSError as exc:
                logger.error("neardup: cannot write NEARDUP_URL_RULES_FILE %s: %s", path, exc)
            else:
                logger.info("neardup: %d valid url rule(s) written to %s", summary["valid"], path)


class _PausedRequests:
    """The url-rules middleware's requests kept aside, kept in ``JOBDIR`` across a pause: Scrapy's
    duplicate filter remembers the skipped requests, so a resumed crawl could not schedule them
    again. The pages fetched are kept with them (the requests' predictions name them)."""

    def __init__(self, path: Path, planner: SkipPlanner[Request]) -> None:
        self.path = path
        self.planner = planner

    def save(self, spider: Any) -> None:
        """Keep the requests set aside and the pages fetched in the file (removed when no request
        is kept)."""
        kept = self.planner.kept_items()
        if not kept:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(f".{SAVED_FILE}.{os.getpid()}.tmp")
        entries: list[dict[str, Any]] = [{"page": url, "tag": tag} for url, tag in self.planner.pages()]
        entries += [{"request": request.to_dict(spider=spider), "came": came} for request, came in kept]
        try:
            # like Scrapy's own queues in JOBDIR: requests hold bytes (body, headers)
            tmp.write_bytes(pickle.dumps(entries, protocol=4))
            os.replace(tmp, self.path)
        except (OSError, TypeError, ValueError, pickle.PicklingError) as exc:
            tmp.unlink(missing_ok=True)
            logger.error(
                "neardup: cannot keep the %d skipped request(s) in %s (%s); a resumed crawl cannot "
                "schedule them again if their rules are withdrawn",
                len(kept),
                self.path,
                exc,
            )

    def resume(self, spider: Any) -> list[Request]:
        """Take back the pages fetched and the requests kept aside before the pause; the requests
        to schedule again (their page did not come, or their rules no longer rewrite them)."""
        if not self.path.exists():
            return []
        from scrapy.utils.request import request_from_dict

        again: list[Request] = []
        kept = 0
        try:
            entries = pickle.loads(self.path.read_bytes())
        except Exception as exc:
            logger.error("neardup: cannot read %s: %s", self.path, exc)
            return []
        for entry in entries:
            try:
                if "page" in entry:
                    self.planner.fetched(entry["page"], entry.get("tag"))
                    continue
                request = request_from_dict(entry["request"], spider=spider)
            except Exception as exc:
                logger.warning("neardup: a request kept in %s cannot be read back (%s)", self.path, exc)
                continue
            if entry.get("came") and self.planner.keep_resumed(request, request.url):
                kept += 1
            else:
                again.append(request)
        self.path.unlink(missing_ok=True)
        logger.info(
            "neardup: %d skipped request(s) kept from the paused crawl, %d scheduled again", kept, len(again)
        )
        return again
