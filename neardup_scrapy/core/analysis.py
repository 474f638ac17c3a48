"""The per-page half of a check: page -> main text -> sketch, with no index involved.

:class:`PageAnalyzer` is a pure function of the detector parameters, so it can run in another
process (``neardup-scrapy scan --jobs``) while one process keeps the index; its result,
:class:`PageAnalysis`, is picklable and is handed to :meth:`NearDupDetector.check_analysis`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .hosts import host_of
from .params import DetectorParams
from .sketch import Sketch, Sketcher
from .text import extract_main_text, html_to_text

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
        skip_reason: why the page cannot be checked (``"no text"``, ``"unreadable (...)"``...),
            ``None`` when it can.
    """

    host: str
    excerpt: str
    sketch: Sketch | None
    skip_reason: str | None = None


class PageAnalyzer:
    """Turns a page into a :class:`PageAnalysis` for one set of :class:`DetectorParams`."""

    def __init__(self, params: DetectorParams) -> None:
        self.params = params
        self._sketcher = Sketcher(params)

    def __call__(
        self,
        url: str,
        html: bytes | str | None = None,
        *,
        text: str | None = None,
        tree: Any = None,
        encoding: str | None = None,
    ) -> PageAnalysis:
        """Analyse one page; the text comes from ``text``, else ``tree``, else ``html``.

        Never raises on bad input: an unreadable page gives an analysis with a ``skip_reason``.
        """
        host = host_of(url)
        try:
            if text is not None:
                raw = text[: self.params.max_text_chars]
            elif tree is not None:
                raw = extract_main_text(tree, self.params.max_text_chars, fold=False)
            elif html is not None:
                raw = html_to_text(html, encoding, self.params.max_text_chars, fold=False)
            else:
                return PageAnalysis(host, "", None, "no content")
            token_hashes = self._sketcher.token_hashes(raw)
        except (ValueError, TypeError, UnicodeError, MemoryError, RecursionError) as exc:
            logger.debug("neardup: cannot read %s: %r", url, exc)
            return PageAnalysis(host, "", None, f"unreadable ({type(exc).__name__})")
        if not len(token_hashes):
            return PageAnalysis(host, "", None, "no text")
        return PageAnalysis(host, raw[:EXCERPT_CHARS], self._sketcher.sketch(token_hashes, host))
