"""The downloader middleware that checks pages, and the spider middleware that acts on verdicts.

Enable them with the add-on (``ADDONS = {"neardup_scrapy.Addon": 100}``) or by hand::

    DOWNLOADER_MIDDLEWARES = {"neardup_scrapy.NeardupDownloaderMiddleware": 540}
    SPIDER_MIDDLEWARES = {"neardup_scrapy.NeardupSpiderMiddleware": 100}

Why 540: a downloader middleware's ``process_response`` runs from the highest number to the
lowest, so at 540 a response has already been through ``HttpCacheMiddleware`` (900),
``RedirectMiddleware`` (600), ``HttpCompressionMiddleware`` (590), ``MetaRefreshMiddleware``
(580) and ``RetryMiddleware`` (550): it is decompressed, it is the final page of a redirect
chain, and it is not a response about to be retried. Why 100 for the spider middleware: its
``process_spider_output`` runs from the highest number to the lowest too, so at 100 it sees
the items and requests after the project's own spider middlewares (543 by default) made them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from .archive import WarcKeeper, response_headers
from .core import Verdict
from .core.hosts import host_of
from .core.urls import parse_link_header, redact_url
from .pages import response_text, selector_tree
from .runtime import NeardupRuntime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = [
    "DuplicatePage",
    "MirrorHostRequest",
    "NeardupDownloaderMiddleware",
    "NeardupSpiderMiddleware",
    "stamp_item",
]

logger = logging.getLogger(__name__)

META_KEY = "neardup"
OPT_OUT_KEY = "dont_neardup"
DUPLICATE = ("exact", "near")


class DuplicatePage(IgnoreRequest):
    """Raised for a duplicate page with ``NEARDUP_ACTION = "drop"``.

    Like any :class:`~scrapy.exceptions.IgnoreRequest`, it reaches the request's errback and is
    not logged as an error.

    Attributes:
        verdict: the detector's verdict (``verdict.to_dict()`` is the tag object).
    """

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        super().__init__(
            f"neardup: {redact_url(verdict.url)} is a {verdict.status} duplicate of "
            f"{redact_url(verdict.duplicate_of or '')}"
        )


class MirrorHostRequest(IgnoreRequest):
    """Raised for a request to a confirmed mirror host with ``NEARDUP_SKIP_MIRRORS = True``."""


_field_errors_logged: set[tuple[type, str]] = set()


def stamp_item(item: Any, field: str, tag: dict[str, Any], runtime: NeardupRuntime) -> bool:
    """Put ``tag`` in ``item[field]`` (dicts, ``scrapy.Item``, dataclasses, attrs, ...).

    An item class without the field keeps its items untouched and logs one error per class
    that says how to fix it; returns False then.
    """
    try:
        ItemAdapter(item)[field] = tag
    except Exception as exc:
        runtime.stats.inc_value("neardup/items/field_missing")
        key = (type(item), field)
        if key not in _field_errors_logged:
            _field_errors_logged.add(key)
            logger.error(
                "neardup: cannot store the tag in field %r of %s items (%s: %s). Declare the field "
                "(e.g. `%s = scrapy.Field()`, or a dataclass/attrs field with a default of None) or set "
                "NEARDUP_FIELD to a field the item has. Such items are passed on untagged.",
                field,
                type(item).__name__,
                type(exc).__name__,
                exc,
                field,
            )
        return False
    return True


class NeardupDownloaderMiddleware:
    """Checks every HTML response and tags it (``response.meta["neardup"]``) or drops it.

    * ``HtmlResponse`` with a 2xx status: checked (inline, outside a running reactor, on the
      tree Scrapy caches for ``response.selector``; else from its text, read as Scrapy's
      selector reads it, without building that tree in the crawl's thread).
      ``response.meta["neardup"]`` gets the tag object; duplicates get a ``neardup:exact`` or
      ``neardup:near`` flag in ``response.flags``, the ``duplicate_found`` signal, and with
      ``NEARDUP_ACTION = "drop"`` a :class:`DuplicatePage` (an ``IgnoreRequest``).
    * Other responses (non-HTML, error statuses, ``request.meta["dont_neardup"]``) pass
      untouched and are counted as skipped (``neardup/skipped/<reason>``).
    * Bodies larger than ``NEARDUP_MAX_BODY_BYTES`` are tagged ``skipped`` (reason
      ``too_large``) without being parsed.
    * Nothing raises out of here for a bad response; it is counted and passed on.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.runtime = NeardupRuntime.of(crawler)
        self.config = self.runtime.config
        self._warc: WarcKeeper | None = None
        if self.config.warc_file:
            self._warc = WarcKeeper(self.config.warc_file)
            crawler.signals.connect(self._close_warc, signal=signals.spider_closed)

    def _keep(self, response: Response) -> None:
        """Add a checked response to ``NEARDUP_WARC_FILE``; a write error stops the keeping, not the crawl."""
        if self._warc is None:
            return
        try:
            self._warc.write(response.url, response.status, response_headers(response.headers), response.body)
        except Exception as exc:
            logger.error(
                "neardup: cannot write NEARDUP_WARC_FILE %s (%s); no more pages are kept",
                self._warc.path,
                exc,
            )
            self._warc.close()
            self._warc = None
            return
        self.runtime.stats.inc_value("neardup/warc_records")

    def _close_warc(self, spider: Any = None) -> None:
        if self._warc is not None:
            self._warc.close()
            n = self._warc.records
            word = "response" if n == 1 else "responses"
            logger.info("neardup: %d %s kept in %s", n, word, self._warc.path)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Build the middleware (raises ``NotConfigured`` when ``NEARDUP_ENABLED`` is False)."""
        return cls(crawler)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def process_request(self, request: Request, spider: Any = None) -> None:
        """Forget a tag copied from another response; skip requests to mirror hosts.

        Requests to mirror hosts are normally skipped as they leave the scheduler (no
        exception; see :mod:`neardup_scrapy.mirrorskip`); only when no scheduler could be
        filtered are they refused here, with a :class:`MirrorHostRequest` (and kept aside too).
        """
        meta = request.meta
        if META_KEY in meta:
            del meta[META_KEY]
        skipper = self.runtime.skipper
        if skipper is not None and not skipper.gate_installed and skipper.skip(request):
            target = self.runtime.mirror_of(request.url)
            raise MirrorHostRequest(f"neardup: {host_of(request.url)} mirrors {target}")

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response | Coroutine[Any, Any, Response]:
        """Check the page; returns the response, or raises :class:`DuplicatePage` in drop mode.

        With a worker process the result is a coroutine that waits for the verdict.
        """
        outcome = self._check(request, response)
        if outcome is None:
            return response
        if isinstance(outcome, Deferred):
            return self._wait(request, response, outcome)
        return self._apply(request, response, outcome)

    async def _wait(self, request: Request, response: Response, outcome: Deferred[Verdict]) -> Response:
        # the runtime's Deferred never fails: a failure fires it with a ``skipped`` verdict
        return self._apply(request, response, await maybe_deferred_to_future(outcome))

    def _apply(self, request: Request, response: Response, verdict: Verdict) -> Response:
        request.meta[META_KEY] = verdict.to_dict()
        if verdict.is_duplicate:
            response.flags.append(f"neardup:{verdict.status}")
            self.runtime.duplicate_found(verdict, response=response)
            if self.config.drop:
                if not verdict.droppable:  # it is, or may be, the original of the page it duplicates
                    self.runtime.stats.inc_value("neardup/not_dropped")
                    return response
                self.runtime.count_drop("page")
                raise DuplicatePage(verdict)
        return response

    def _check(self, request: Request, response: Response) -> Verdict | Deferred[Verdict] | None:
        """The verdict (or its Deferred) for a response; ``None`` when it passes untouched.

        Never raises: a bug must not lose the page, which then passes tagged ``skipped`` (reason
        ``error``), counted and logged by the runtime."""
        try:
            return self._read_and_check(request, response)
        except Exception as exc:
            return self.runtime.unexpected(response.url, exc)

    def _read_and_check(self, request: Request, response: Response) -> Verdict | Deferred[Verdict] | None:
        url = response.url
        # Responses that get no tag are not pages: not counted as pages, not in the index or the
        # report, not in NEARDUP_WARC_FILE (so a scan of it counts what the crawl counted).
        if request.meta.get(OPT_OUT_KEY):
            self.runtime.untouched("dont_neardup")
            return None
        if not isinstance(response, HtmlResponse):
            self.runtime.untouched("non-html")
            return None
        if not 200 <= response.status < 300:
            self.runtime.untouched("http error")
            return None
        body = response.body
        self._keep(response)
        if self.config.max_body_bytes and len(body) > self.config.max_body_bytes:
            return self.runtime.skip(url, "too large")
        # Both modes read the text Scrapy decoded (and the tree it parses from it), so inline and
        # worker verdicts agree for every encoding.
        text = response_text(response)
        # Scrapy's tree is the page's tree only when it was parsed from the same text.
        tree = (lambda: selector_tree(response)) if text is response.text else None
        canonical = parse_link_header([_text(v) for v in response.headers.getlist("Link")])
        return self.runtime.check_page(url, text, len(body), tree, canonical)


class NeardupSpiderMiddleware:
    """Stamps the page's tag into items; drops requests from duplicates and to mirror hosts.

    * Every item produced from a tagged response gets the tag object in ``NEARDUP_FIELD``.
    * ``NEARDUP_FOLLOW_DUPLICATES = False``: requests yielded while parsing a duplicate page are
      dropped (``neardup/requests_not_followed``).
    * ``NEARDUP_SKIP_MIRRORS = True``: start requests to hosts already known as mirrors (a
      shared or resumed index) are dropped here; later requests to mirror hosts are dropped as
      they leave the scheduler, before download (both count ``neardup/mirror_requests_skipped``;
      neither is a downloader exception).

    Works with sync and async callbacks (``process_spider_output`` and
    ``process_spider_output_async``) and with ``start()`` (``process_start``).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.runtime = NeardupRuntime.of(crawler)
        self.config = self.runtime.config
        self._stats = self.runtime.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Build the middleware (raises ``NotConfigured`` when ``NEARDUP_ENABLED`` is False)."""
        return cls(crawler)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    async def process_start(self, start: AsyncIterator[Any], spider: Any = None) -> AsyncIterator[Any]:
        """Skip (and keep aside) start requests to mirror hosts (known when the index is shared
        or resumed)."""
        skipper = self.runtime.skipper
        async for obj in start:
            if skipper is not None and isinstance(obj, Request) and skipper.skip(obj):
                continue
            yield obj

    def process_spider_output(
        self, response: Response, result: Iterable[Any], spider: Any = None
    ) -> Iterable[Any]:
        """Tag items and filter requests of a synchronous callback."""
        tag = _tag_of(response)
        for obj in result:
            if self._keep(obj, tag):
                yield obj

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        """Tag items and filter requests of an asynchronous callback."""
        tag = _tag_of(response)
        async for obj in result:
            if self._keep(obj, tag):
                yield obj

    def _keep(self, obj: Any, tag: dict[str, Any] | None) -> bool:
        if isinstance(obj, Request):
            # Requests to mirror hosts are dropped by the downloader middleware, after the
            # scheduler's duplicate filter, so that each skipped url is counted once.
            if tag is not None and not self.config.follow_duplicates and tag.get("status") in DUPLICATE:
                self._stats.inc_value("neardup/requests_not_followed")
                return False
            return True
        if (
            tag is not None
            and ItemAdapter.is_item(obj)
            and stamp_item(obj, self.config.field, dict(tag), self.runtime)
        ):
            self._stats.inc_value("neardup/items/tagged")
        return True


def _tag_of(response: Response) -> dict[str, Any] | None:
    try:
        tag = response.meta.get(META_KEY)
    except AttributeError:  # a response without a request (not from the engine)
        return None
    return tag if isinstance(tag, dict) else None


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value
