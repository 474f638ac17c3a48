"""How a response becomes what the detector reads: the same in the crawl's process and the worker.

Both ways of checking pages (``NEARDUP_WORKER = "inline"`` and ``"process"``) read a page from
the text Scrapy decoded (:func:`response_text`: ``response.text``, which follows the HTTP
charset, a byte-order mark or ``<meta charset>`` the way every spider sees the page) and from the
lxml tree Scrapy builds from that text for ``response.selector`` (:func:`html_tree` builds the
same one in the worker). So the two modes give the same verdict for every body, whatever its
encoding or markup.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["html_tree", "response_text", "selector_tree"]

logger = logging.getLogger(__name__)


def response_text(response: Any) -> str:
    """The body as Scrapy decodes it for the spider (``response.text``)."""
    text: str = response.text
    return text


def html_tree(text: str) -> Any:
    """The lxml tree of ``text`` exactly as Scrapy builds it for ``response.selector``, or ``None``."""
    from parsel import Selector

    try:
        return Selector(text=text, type="html").root
    except Exception as exc:
        logger.debug("neardup: cannot parse a page (%r); reading its text instead", exc)
        return None


def selector_tree(response: Any) -> Any:
    """The tree behind ``response.selector`` (parsed once, cached by Scrapy), or ``None``.

    Scrapy builds it with :func:`html_tree` of :func:`response_text`, so this is the same tree
    without a second parse when the spider reads the page too.
    """
    try:
        selector = response.selector
        if getattr(selector, "type", "html") != "html":
            return None
        return selector.root
    except Exception as exc:
        logger.debug("neardup: no selector for a page (%r); reading its text instead", exc)
        return None
