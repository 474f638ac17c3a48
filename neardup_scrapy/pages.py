"""How a response becomes what the detector reads: the same in the crawl's process and the worker.

Both ways of checking pages (``NEARDUP_WORKER = "inline"`` and ``"process"``) read a page from
the text Scrapy decoded (:func:`response_text`: ``response.text``, which follows the HTTP
charset, a byte-order mark or ``<meta charset>`` the way every spider sees the page, unless the
bytes contradict the label) and from the lxml tree Scrapy builds from that text for
``response.selector`` (:func:`html_tree` builds the same one in the worker). So the two modes
give the same verdict for every body, whatever its encoding or markup.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any, Final

from .core.native.extract import has_long_tag
from .core.text import MAX_ATTRIBUTES, ParseTimeout, flatten_tags, utf8_despite_label

__all__ = [
    "MAX_ATTRIBUTES",
    "ParseTimeout",
    "html_tree",
    "ordinary_page",
    "page_tree",
    "response_text",
    "selector_body",
    "selector_tree",
]

logger = logging.getLogger(__name__)

#: Texts up to this many characters are read from the tree Scrapy builds for the spider (parsed
#: once for both). libxml2 parses ordinary markup at 7 MB/s or more, so that parse stays well
#: inside the check's budget; longer texts are parsed here, in chunks, with the CPU clock of the
#: thread looked at between chunks (a parse that cannot finish in time is abandoned).
SAFE_PARSE_CHARS: Final = 1_000_000
#: Bytes fed to the parser between two looks at the clock (about 30 ms of parsing).
PARSE_CHUNK: Final = 1 << 18
#: libxml2 stops at this nesting depth (with ``huge_tree``) and drops the rest of the document.
_MAX_DEPTH: Final = 2047
# A tag long enough to hold MAX_ATTRIBUTES attributes (each at least 2 characters); linear:
# each run of characters between two angle brackets is scanned once.
_LONG_TAG_RE: Final = re.compile(rf"<[a-zA-Z][^<>]{{{2 * MAX_ATTRIBUTES},}}>")
_ATTRIBUTE_RE: Final = re.compile(r"""[^\s/>"'=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]*))?""")


def response_text(response: Any) -> str:
    """The body as Scrapy decodes it for the spider (``response.text``), except a body whose
    bytes contradict its label: valid UTF-8 with non-ASCII under another charset's name is read
    as UTF-8, as ``neardup-scrapy scan`` reads it (:func:`~neardup_scrapy.core.text.utf8_despite_label`)."""
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


def selector_body(text: str) -> bytes | None:
    """The bytes parsel hands lxml for ``response.selector`` (:func:`html_tree`): ``text``
    stripped, without NUL characters, in UTF-8; ``None`` when ``text`` cannot be encoded."""
    try:
        return text.strip().replace("\x00", "").encode("utf-8") or b"<html/>"
    except UnicodeError:
        return None


def ordinary_page(text: str) -> bool:
    """Whether :func:`page_tree` reads ``text`` from the tree Scrapy builds (size and markup
    within bounds), so the same document parsed anew gives the same result."""
    return len(text) <= SAFE_PARSE_CHARS and _cap_attributes(text) is text


def _cap_attributes(text: str) -> str:
    """``text`` with the attributes past the ``MAX_ATTRIBUTES``-th of each tag dropped (the
    same object when no tag has that many)."""

    def cap(match: re.Match[str]) -> str:
        tag = match.group(0)
        # the first match is the tag name
        for attributes, attribute in enumerate(_ATTRIBUTE_RE.finditer(tag, 1)):
            if attributes > MAX_ATTRIBUTES:
                return tag[: attribute.start()] + ">"
        return tag

    if not has_long_tag(text, 2 * MAX_ATTRIBUTES):
        return text
    capped = _LONG_TAG_RE.sub(cap, text)
    return text if capped == text else capped


def _too_deep(root: Any) -> bool:
    """Whether ``root`` is a tree libxml2 cut at its depth limit.

    The parser stops at the element it cannot nest and drops the rest of the document, so that
    element is the document's last: at the end of the chain of last children from the root,
    at the limit's depth. Following that chain costs one step per level of one path, where a
    search of every path costs a visit of every element.
    """
    node, depth = root, 1
    try:
        while depth < _MAX_DEPTH:
            if not len(node):
                return False
            node = node[-1]
            depth += 1
    except Exception:
        return False
    return True


def _bounded_parse(text: str, deadline: float) -> Any:
    """Parse ``text`` as parsel does for Scrapy (same parser options, same clean-up), feeding it
    in chunks and giving up once the thread's CPU clock (``time.thread_time()``) passes
    ``deadline``; a document nested past libxml2's depth limit is parsed again with the tags
    the extractor does not read flattened (:func:`~neardup_scrapy.core.text.flatten_tags`), so
    its text is not lost.

    Raises:
        ParseTimeout: the deadline passed.
    """
    from lxml import etree
    from lxml import html as lxml_html

    body = selector_body(text)
    if body is None:
        return None
    for attempt in range(2):
        parser = lxml_html.HTMLParser(recover=True, encoding="utf-8", huge_tree=True)
        for start in range(0, len(body), PARSE_CHUNK):
            if time.thread_time() > deadline:
                raise ParseTimeout
            parser.feed(body[start : start + PARSE_CHUNK])
        try:
            root = parser.close()
        except etree.XMLSyntaxError:
            root = None
        if root is None:
            root = etree.fromstring(b"<html/>", parser=lxml_html.HTMLParser())
        if attempt or not _too_deep(root):
            return root
        body = flatten_tags(body)
    return root  # pragma: no cover (the loop returns)


def page_tree(text: str, deadline: float, scrapy_tree: Callable[[], Any] | None = None) -> Any:
    """The tree the detector reads for ``text``, the same in both worker modes.

    Ordinary pages (at most ``SAFE_PARSE_CHARS`` characters, no tag with more than
    ``MAX_ATTRIBUTES`` attributes, nested less deep than libxml2's limit) give the tree Scrapy
    builds for the spider: ``scrapy_tree()`` (inline: the cached ``response.selector`` tree),
    else :func:`html_tree`. Others are parsed by :func:`_bounded_parse` within ``deadline``
    (``time.thread_time()`` of this thread: CPU time).

    Returns:
        The root element, or ``None`` when the text cannot be parsed.

    Raises:
        ParseTimeout: the parse did not finish before ``deadline``.
    """
    capped = _cap_attributes(text)
    if capped is text and len(text) <= SAFE_PARSE_CHARS:
        root = scrapy_tree() if scrapy_tree is not None else html_tree(text)
        if root is None or not _too_deep(root):
            return root
    try:
        return _bounded_parse(capped, deadline)
    except ParseTimeout:
        raise
    except Exception as exc:
        logger.debug("neardup: cannot parse a page (%r); reading its text instead", exc)
        return None


def text_reading(text: str, deadline: float) -> tuple[bytes | str, dict[str, Any]]:
    """How the detector reads ``text`` (as Scrapy decoded it) without Scrapy's tree at hand:
    ``(html, keyword arguments)`` for ``NearDupDetector.check`` or ``analyze``.

    An ordinary page is read in one pass over the parser's events on the very bytes Scrapy's
    selector parses (:func:`selector_body`), which gives what the walk of Scrapy's tree gives
    without building a tree; the tree is built (:func:`page_tree`) only where that pass needs
    it. Used by the worker process and by inline mode's helper thread.

    Raises:
        ParseTimeout: the parse of an odd page did not finish before ``deadline`` (the
            ``parse`` handed over may raise it too).
    """
    body = selector_body(text) if ordinary_page(text) else None
    if body is not None:
        return body, {"encoding": "utf-8", "parse": lambda: page_tree(text, deadline)}
    return text, {"tree": page_tree(text, deadline)}


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
