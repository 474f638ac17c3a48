"""The per-page half of a check: page -> main text -> sketch, with no index involved.

:class:`PageAnalyzer` is a pure function of the detector parameters, so it can run in another
process (``neardup-scrapy scan --jobs``) while one process keeps the index; its result,
:class:`PageAnalysis`, is picklable and is handed to :meth:`NearDupDetector.check_analysis`.
The work itself is one compiled pass (:mod:`neardup_scrapy.core.native.page`) over the page's
HTML as libxml2 parses it (or over a tree parsed already), bounded by the page's budget: the
work it counts (:attr:`DetectorParams.max_work`, the same on any machine under any load) and, as a
safety net, the CPU time of the thread (:attr:`DetectorParams.timeout`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .charset import utf8_document
from .hosts import host_of
from .native.page import NativeAnalyzer, PageSketch
from .params import DetectorParams
from .reading import ParseTimeout, parse_utf8
from .simhash import block_masks
from .sketch import Sketch, host_salt
from .text import tree_root

logger = logging.getLogger(__name__)

#: Characters of the main text kept with an analysis (for the report's side-by-side examples).
EXCERPT_CHARS = 8000


@dataclass(frozen=True)
class PageAnalysis:
    """What one page contributes to a check, before the index is asked.

    Attributes:
        host: the page's host (lower-cased), as :func:`~.hosts.host_of` gives it.
        excerpt: the start of the page's main text (for report examples).
        sketch: the page's sketches, or ``None`` when the page cannot be checked.
        skip_reason: why the page cannot be checked (``"no text"``, ``"too much work"``,
            ``"timeout"``, ``"unreadable (...)"``), ``None`` when it can.
        work: work units the page's pass counted (0 for a page not read).
    """

    host: str
    excerpt: str
    sketch: Sketch | None
    skip_reason: str | None = None
    work: int = 0


class PageAnalyzer:
    """Turns a page into a :class:`PageAnalysis` for one set of :class:`DetectorParams`.

    Not thread-safe (it reuses compiled buffers): one analyzer per thread.
    """

    def __init__(self, params: DetectorParams) -> None:
        self.params = params
        self._native = NativeAnalyzer(
            params.seed,
            params.num_perm,
            params.shingle_size,
            params.lsh_bands,
            params.lsh_rows,
            block_masks(params.simhash_distance),
            mask_digits=params.mask_digits,
            mask_dates=params.mask_dates,
            char_mode=params.shingle_kind == "char",
            max_chars=params.max_text_chars,
        )

    def __call__(
        self,
        url: str,
        html: bytes | str | None = None,
        *,
        text: str | None = None,
        tree: Any = None,
        encoding: str | None = None,
        started: float | None = None,
        parse: Callable[[], Any] | None = None,
    ) -> PageAnalysis:
        """Analyse one page; the text comes from ``text``, else ``tree``, else ``html``.

        Never raises on bad input: an unreadable page gives an analysis with a ``skip_reason``;
        a page whose pass counts more than ``params.max_work`` work units is skipped as
        ``too much work``, one whose parse and pass take more than ``params.timeout`` CPU
        seconds of this thread as ``timeout``. ``started`` (``time.thread_time()`` of this
        thread) is when the check began, when the caller parsed ``tree`` itself: its parse
        counts in the CPU budget too (default: now). ``parse`` gives the tree of ``html`` for
        the documents the compiled pass cannot read from the parser's events (default:
        :func:`~.reading.parse_utf8`); what it raises reaches the caller.
        """
        host = host_of(url)
        salt = host_salt(host, self.params.seed) if self.params.scope == "host" else None
        if started is None:
            started = time.thread_time()
        try:
            if text is not None:
                page = self._native.analyze_text(text, salt)
            else:
                outcome = self._analyze_page(
                    html, tree, encoding=encoding, salt=salt, started=started, parse=parse
                )
                if isinstance(outcome, str):
                    return PageAnalysis(host, "", None, outcome)
                page = outcome
        except (ValueError, TypeError, UnicodeError, MemoryError, RecursionError) as exc:
            logger.debug("neardup: cannot read %s: %r", url, exc)
            return PageAnalysis(host, "", None, f"unreadable ({type(exc).__name__})")
        if page.status != "ok":
            return PageAnalysis(host, "", None, page.status, page.work)
        excerpt = page.text[: EXCERPT_CHARS * 4].decode("utf-8", "ignore")[:EXCERPT_CHARS]
        return PageAnalysis(host, excerpt, Sketch.from_native(page, self.params.lsh_bands), None, page.work)

    def _analyze_page(
        self,
        html: bytes | str | None,
        tree: Any,
        *,
        encoding: str | None,
        salt: int | None,
        started: float,
        parse: Callable[[], Any] | None,
    ) -> PageSketch | str:
        """The compiled pass over ``tree``, else over ``html``; a skip reason where there is none.

        From HTML the pass follows the parser's events and builds no tree; the few documents it
        cannot read that way (see ``NativeAnalyzer.analyze_html``) are parsed into a tree, in
        time linear in the document (:func:`~.reading.parse_utf8`) and within the CPU budget."""
        root = tree_root(tree) if tree is not None else None
        data = None
        timeout, max_work = self.params.timeout, self.params.max_work
        if root is None:
            if html is None:
                return "no content" if tree is None else "no text"
            data = utf8_document(html, encoding)
            if data is None:
                return "no text"
        left = timeout - (time.thread_time() - started)
        if left <= 0:
            return "timeout"
        if data is not None:
            page = self._native.analyze_html(data, salt, left, max_work)
            if page is not None:
                return page
            if parse is not None:
                root = tree_root(parse())
            else:
                try:
                    root = parse_utf8(data, deadline=started + timeout)
                except ParseTimeout:
                    return "timeout"
            if root is None:
                return "no text"
            left = timeout - (time.thread_time() - started)
            if left <= 0:
                return "timeout"
        return self._native.analyze_tree(root, salt, left, max_work)
