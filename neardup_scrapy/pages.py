"""How a response becomes what the detector reads: the Scrapy side of :mod:`.core.reading`.

Both ways of checking pages (``NEARDUP_WORKER = "inline"`` and ``"process"``) read a page from
the text Scrapy decoded (:func:`response_text`: ``response.text``, which follows the HTTP
charset, a byte-order mark or ``<meta charset>`` the way every spider sees the page, unless the
bytes contradict the label) and from the lxml tree Scrapy builds from that text for
``response.selector`` (:func:`html_tree` builds the same one in the worker). So the two modes
give the same verdict for every body, whatever its encoding or markup. Everything else about
reading a page (parse bounds, depth, events or tree) is :mod:`.core.reading`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .core import reading
from .core.charset import utf8_despite_label
from .core.reading import MAX_ATTRIBUTES, ParseTimeout, ordinary_page, selector_body

__all__ = [
    "MAX_ATTRIBUTES",
    "ParseTimeout",
    "html_tree",
    "ordinary_page",
    "page_tree",
    "response_text",
    "selector_body",
    "selector_tree",
    "text_reading",
]

logger = logging.getLogger(__name__)


def response_text(response: Any) -> str:
    """The body as Scrapy decodes it for the spider (``response.text``), except a body whose
    bytes contradict its label: valid UTF-8 with non-ASCII under another charset's name is read
    as UTF-8, as ``neardup-scrapy scan`` reads it
    (:func:`~neardup_scrapy.core.charset.utf8_despite_label`)."""
    body: bytes = response.body
    if utf8_despite_label(body, response.encoding):
        return body.decode("utf-8")
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


def page_tree(text: str, deadline: float, scrapy_tree: Callable[[], Any] | None = None) -> Any:
    """:func:`.core.reading.page_tree` with Scrapy's tree of ``text``: ``scrapy_tree()`` (inline:
    the cached ``response.selector`` tree), else :func:`html_tree`.

    Raises:
        ParseTimeout: the parse did not finish before ``deadline``.
    """
    return reading.page_tree(
        text, deadline, scrapy_tree if scrapy_tree is not None else lambda: html_tree(text)
    )


def text_reading(text: str, deadline: float) -> tuple[bytes | str, dict[str, Any]]:
    """:func:`.core.reading.text_reading` with Scrapy's tree of a text (:func:`html_tree`); used
    by the worker process and by inline mode's helper thread.

    Raises:
        ParseTimeout: the parse of an odd page did not finish before ``deadline``.
    """
    return reading.text_reading(text, deadline, html_tree)


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
