"""Checking a page in the caller's thread, on the tree Scrapy parsed where it can."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import maybeDeferred

from neardup_scrapy.core.reading import ParseTimeout, page_tree
from neardup_scrapy.core.storage.retry import CLOSE_PATIENCE, call_patiently

from .base import Checker, Outcome

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

    from neardup_scrapy.core import NearDupDetector

__all__ = ["InlineChecker"]


class InlineChecker(Checker):
    """The page index in this process, checked in the caller's thread.

    Args:
        detector: the page index.
        timeout: the CPU seconds a page's check may take, its parse included (``NEARDUP_TIMEOUT``).
        tree_of_text: the crawl's parser: the tree Scrapy's selector builds from a text (so a
            page reads the same in every strategy; ``None`` when it cannot be parsed).
    """

    def __init__(
        self, detector: NearDupDetector, timeout: float, *, tree_of_text: Callable[[str], Any]
    ) -> None:
        self._detector: NearDupDetector | None = detector
        self.timeout = timeout
        self.tree_of_text = tree_of_text
        self._mirrors_version = -1

    @property
    def detector(self) -> NearDupDetector | None:
        return self._detector

    @detector.setter
    def detector(self, detector: NearDupDetector | None) -> None:
        self._detector = detector

    def _index(self) -> NearDupDetector:
        detector = self._detector
        assert detector is not None, "the index is closed"
        return detector

    def describe(self) -> str:
        return "inline"

    def check_html(
        self, url: str, text: str, nbytes: int, tree: Callable[[], Any] | None, canonical: str = ""
    ) -> Outcome:
        # The parse counts in the check's CPU budget (NEARDUP_TIMEOUT), as in the worker.
        started = time.thread_time()
        scrapy_tree = tree if tree is not None else lambda: self.tree_of_text(text)
        try:
            root = page_tree(text, started + self.timeout, scrapy_tree)
        except ParseTimeout:
            return self.record_skip(url, "timeout")
        except Exception:
            root = None
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
    ) -> Outcome:
        """Check a page as :meth:`NearDupDetector.check <neardup_scrapy.core.NearDupDetector.check>`
        does; never raises."""
        try:
            verdict = self._index().check(
                url,
                html,
                tree=tree,
                text=text,
                encoding=encoding,
                nbytes=nbytes,
                started=started,
                canonical=canonical,
            )
        except Exception as exc:
            return Outcome(url, error=exc)
        return Outcome(url, verdict=verdict, mirrors=self.take_mirrors())

    def record_skip(self, url: str, reason: str) -> Outcome:
        try:
            return Outcome(url, verdict=self._index().skip(url, reason))
        except Exception as exc:
            return Outcome(url, error=exc)

    def mirrors_at_open(self) -> dict[str, str] | None:
        return self.take_mirrors()

    def take_mirrors(self) -> dict[str, str] | None:
        """The index's map of mirror hosts if it changed since it was last given out, else
        ``None`` (read where the index lives)."""
        detector = self._detector
        if detector is None or detector.mirrors_version == self._mirrors_version:
            return None
        self._mirrors_version = detector.mirrors_version
        return detector.mirrors

    def exchange_url_rules(self, writer: str, state: bytes | None, timeout: float = 0.0) -> list[bytes]:
        return self._index().exchange_url_rules(writer, state)

    def exchange_url_rules_later(self, writer: str, state: bytes | None) -> Deferred[list[bytes]]:
        return maybeDeferred(self.exchange_url_rules, writer, state)

    def surviving_mirrors(
        self, unseen: dict[str, int], timeout: float = 0.0
    ) -> tuple[dict[str, str], dict[str, str] | None]:
        return self._index().surviving_mirrors(unseen), self.take_mirrors()

    def report(self, options: dict[str, int], timeout: float = 0.0) -> dict[str, Any]:
        detector = self._index()
        return call_patiently(lambda: detector.report(**options), CLOSE_PATIENCE, "the report")

    def cluster_rows(self, timeout: float = 0.0) -> list[dict[str, Any]]:
        from neardup_scrapy.core.exports import cluster_rows

        storage = self._index().storage
        return call_patiently(lambda: cluster_rows(storage), CLOSE_PATIENCE, "the exports")

    def stop_growing(self) -> None:
        """Nothing to stop: no helper is ever started."""

    def close(self, timeout: float = 0.0) -> list[Exception]:
        detector, self._detector = self._detector, None
        if detector is None:
            return []
        try:
            detector.close()
        except Exception as exc:
            return [exc]
        return []
