"""Reading a page: bytes -> charset -> parser events or a tree -> main text.

This module owns every step between a page's body and what the compiled extractor walks:

* the charset (:mod:`.charset`: the UTF-8 the parser reads);
* the parse (libxml2 through lxml), in time linear in the page: attributes past
  :data:`MAX_ATTRIBUTES` per tag are dropped first (:func:`cap_attributes`), and the parse of
  a long page is fed in chunks with the thread's CPU clock looked at between them;
* the **depth policy**: libxml2's trees hold elements at most :data:`MAX_DEPTH` deep and the
  parser drops the rest of a document nested deeper. A tree that reaches that depth is parsed
  again with the tags the extractor does not read flattened (:func:`flatten_tags`), in one
  place (:func:`_within_depth`), whoever parsed it; the walk of the parser's events gives way
  to the tree at the same depth, so a page reads the same every way;
* the choice between the two walks (:func:`text_reading`): the parser's events when they
  suffice, a tree where they do not.

Nothing here imports Scrapy: where the tree Scrapy builds for the spider is wanted, the caller
hands over a function that gives it.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from lxml import etree
from lxml import html as lxml_html

from .charset import utf8_document
from .native.extract import MAX_TREE_DEPTH
from .native.markup import has_long_tag

__all__ = [
    "FLATTEN_TAG_PATTERN",
    "MAX_ATTRIBUTES",
    "MAX_DEPTH",
    "PARSE_CHUNK",
    "SAFE_PARSE_CHARS",
    "ParseTimeout",
    "cap_attributes",
    "cap_attributes_text",
    "flatten_tags",
    "ordinary_page",
    "page_tree",
    "parse_html",
    "parse_plain",
    "parse_utf8",
    "reaches_depth_limit",
    "selector_body",
    "text_reading",
]

#: The deepest element a libxml2 tree holds (``huge_tree``): the parser stops at an element it
#: would nest deeper and drops the rest of the document. One constant, defined with the
#: compiled walk of the parser's events (which gives way to the tree at this depth).
MAX_DEPTH: Final[int] = MAX_TREE_DEPTH
#: Attributes kept per tag in a parsed tree. libxml2's tree builder compares each attribute of a
#: tag with the tag's earlier ones, so its time grows with the square of their number (100k
#: attributes on one tag, 0.9 MB: 22 to 75 s). Attributes carry no visible text and no real
#: element has hundreds, so the ones past this many are dropped before a tree is parsed: the
#: principle is that parsing time must be linear in the size of the page whatever its markup.
MAX_ATTRIBUTES: Final = 256
#: Texts up to this many characters are read from the tree Scrapy builds for the spider (parsed
#: once for both). libxml2 parses ordinary markup at 7 MB/s or more, so that parse stays well
#: inside the check's budget; longer texts are parsed here, in chunks, with the CPU clock of the
#: thread looked at between chunks (a parse that cannot finish in time is abandoned).
SAFE_PARSE_CHARS: Final = 1_000_000
#: Bytes fed to the parser between two looks at the clock (about 30 ms of parsing).
PARSE_CHUNK: Final = 1 << 18

#: Tags kept when a document nests deeper than libxml2 parses: the page's structure that the
#: extractor reads (title, headings, paragraphs, main content) and the elements whose text is
#: never visible (code, media, controls) -- every other tag is flattened to a space.
FLATTEN_TAG_PATTERN: Final = (
    rb"</?(?!(?:html|head|body|title|meta|link|main|article|h[1-6]|p|br|pre|script|style|template"
    rb"|noscript|svg|math|iframe|object|textarea|select|option|button)\b)[a-zA-Z][^>]*>"
)
_FLATTEN_TAG_RE: Final = re.compile(FLATTEN_TAG_PATTERN, re.IGNORECASE)
# A tag long enough to hold MAX_ATTRIBUTES attributes (each at least 2 characters); linear:
# each run of characters between two angle brackets is scanned once.
_LONG_TAG = rf"<[a-zA-Z][^<>]{{{2 * MAX_ATTRIBUTES},}}>"
_ATTRIBUTE = r"""[^\s/>"'=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]*))?"""
_LONG_TAG_BYTES_RE: Final = re.compile(_LONG_TAG.encode())
_ATTRIBUTE_BYTES_RE: Final = re.compile(_ATTRIBUTE.encode())
_LONG_TAG_TEXT_RE: Final = re.compile(_LONG_TAG)
_ATTRIBUTE_TEXT_RE: Final = re.compile(_ATTRIBUTE)

_Markup = TypeVar("_Markup", str, bytes)
logger = logging.getLogger(__name__)


class ParseTimeout(Exception):
    """The page could not be parsed within the check's CPU time budget."""


# -- markup made linear to parse ----------------------------------------------------------------


def _cap(
    markup: _Markup, long_tag: re.Pattern[_Markup], attribute: re.Pattern[_Markup], end: _Markup
) -> _Markup:
    def cap(match: re.Match[_Markup]) -> _Markup:
        tag = match.group(0)
        # the first match is the tag name
        for attributes, found in enumerate(attribute.finditer(tag, 1)):
            if attributes > MAX_ATTRIBUTES:
                return tag[: found.start()] + end
        return tag

    capped = long_tag.sub(cap, markup)
    return markup if capped == markup else capped


def cap_attributes(data: bytes) -> bytes:
    """``data`` with the attributes past the :data:`MAX_ATTRIBUTES`-th of each tag dropped (the
    same object when no tag has that many). Linear in ``data``."""
    if _LONG_TAG_BYTES_RE.search(data) is None:
        return data
    return _cap(data, _LONG_TAG_BYTES_RE, _ATTRIBUTE_BYTES_RE, b">")


def cap_attributes_text(text: str) -> str:
    """:func:`cap_attributes` of a text (a compiled scan spares most pages the pattern)."""
    if not has_long_tag(text, 2 * MAX_ATTRIBUTES):
        return text
    return _cap(text, _LONG_TAG_TEXT_RE, _ATTRIBUTE_TEXT_RE, ">")


def flatten_tags(data: bytes) -> bytes:
    """``data`` with every tag the extractor does not read replaced by a space (for documents
    nested deeper than libxml2 parses). Linear: a tag runs to the next ``>``, so the pattern is
    applied only up to the document's last ``>`` (past it no tag can end, and each attempt
    from a ``<`` there would scan to the end of the document: quadratic in the ``<`` signs)."""
    last = data.rfind(b">")
    if last < 0:
        return data
    return _FLATTEN_TAG_RE.sub(b" ", data[: last + 1]) + data[last + 1 :]


# -- the depth policy ------------------------------------------------------------------------------


def reaches_depth_limit(root: Any) -> bool:
    """Whether the tree at ``root`` reaches :data:`MAX_DEPTH`, where libxml2 cuts documents.

    The parser stops at the element it cannot nest and drops the rest of the document, so that
    element is the document's last: at the end of the chain of last children from the root.
    Following that chain costs one step per level of one path, where a search of every path
    costs a visit of every element.
    """
    node, depth = root, 1
    try:
        while depth < MAX_DEPTH:
            if not len(node):
                return False
            node = node[-1]
            depth += 1
    except Exception:
        return False
    return True


def _within_depth(data: bytes, parse: Callable[[bytes], Any]) -> Any:
    """``parse(data)``; a tree that reaches libxml2's depth limit is parsed again with the tags
    the extractor does not read flattened (:func:`flatten_tags`), so its text is not lost."""
    root = parse(data)
    if root is not None and reaches_depth_limit(root):
        root = parse(flatten_tags(data))
    return root


# -- parsers ---------------------------------------------------------------------------------------

_local = threading.local()
#: Every element is a plain :class:`lxml.html.HtmlElement`, chosen in C: ``lxml.html``'s own
#: lookup calls Python for each element proxy (to pick form/input classes), which makes every
#: walk over the tree markedly slower.
_LOOKUP: Final = etree.ElementDefaultClassLookup(
    element=lxml_html.HtmlElement,
    comment=lxml_html.HtmlComment,
    pi=lxml_html.HtmlProcessingInstruction,
    entity=lxml_html.HtmlEntity,
)
#: Trees that never leave the detector have lxml's own C element types: a proxy of a Python
#: subclass costs more to create (an instance dict, an ``_init`` call), and extraction creates
#: hundreds of proxies per page.
_PLAIN_LOOKUP: Final = etree.ElementDefaultClassLookup()


def _parser(plain: bool = False) -> etree.HTMLParser:
    """Return this thread's HTML parser (lxml parsers must not be shared between threads).

    The parser is told the input is UTF-8 (we transcode everything else first), which both
    skips libxml2's own charset sniffing and makes it ignore contradicting ``<meta charset>``
    or XML declarations.  ``huge_tree`` lifts libxml2's limits on text node size and depth;
    ``collect_ids=False`` skips libxml2's table of ``id`` attributes (nothing here looks
    elements up by id), about 6% of the parse.  ``plain`` parsers build plain
    :class:`lxml.etree._Element` trees, the others :class:`lxml.html.HtmlElement` trees.
    """
    name = "plain_parser" if plain else "parser"
    parser = getattr(_local, name, None)
    if parser is None:
        parser = etree.HTMLParser(encoding="utf-8", huge_tree=True, collect_ids=False)
        parser.set_element_class_lookup(_PLAIN_LOOKUP if plain else _LOOKUP)
        setattr(_local, name, parser)
    return cast(etree.HTMLParser, parser)


def _check_clock(deadline: float | None) -> None:
    if deadline is not None and time.thread_time() > deadline:
        raise ParseTimeout


def parse_utf8(data: bytes, *, plain: bool = True, deadline: float | None = None) -> etree._Element | None:
    """Parse what :func:`~.charset.utf8_document` gives (plain elements unless ``plain`` is
    false), in time linear in ``data``, within the depth policy (module docstring).

    ``deadline``: ``time.thread_time()`` of this thread past which the parse gives up (looked
    at before the parse, and before a second one of a document nested too deep).

    Raises:
        ParseTimeout: ``deadline`` passed.
    """
    parser = _parser(plain)

    def parse(markup: bytes) -> etree._Element | None:
        _check_clock(deadline)
        return etree.fromstring(markup, parser)

    try:
        root = _within_depth(cap_attributes(data), parse)
    except ParseTimeout:
        raise
    except Exception:
        return None
    if root is None or not isinstance(root.tag, str):
        return None
    return cast(etree._Element, root)


def _parse(html: bytes | str, encoding: str | None, *, plain: bool) -> etree._Element | None:
    try:
        data = utf8_document(html, encoding)
    except Exception:
        return None
    return None if data is None else parse_utf8(data, plain=plain)


def parse_html(html: bytes | str, encoding: str | None = None) -> lxml_html.HtmlElement | None:
    """Parse an HTML document into an lxml tree, tolerating any input.

    Args:
        html: The document, as bytes (decoded by BOM, ``encoding``, the declared charset, else
            UTF-8 with replacement characters) or as text (XML declarations that name an
            encoding are fine, unlike with plain lxml).
        encoding: Charset from the transport layer (HTTP ``Content-Type``); a byte-order mark
            wins over it, it wins over ``<meta charset>``.  Unknown names are ignored.

    Returns:
        The root ``<html>`` element, or ``None`` when there is nothing to parse (empty or
        whitespace-only input, a document made only of comments, input lxml rejects).
    """
    return cast("lxml_html.HtmlElement | None", _parse(html, encoding, plain=False))


def parse_plain(html: bytes | str, encoding: str | None = None) -> etree._Element | None:
    """:func:`parse_html` into a plain :class:`lxml.etree._Element` tree (cheaper proxies; for
    trees that never leave the detector)."""
    return _parse(html, encoding, plain=True)


# -- the text Scrapy decoded -------------------------------------------------------------------


def selector_body(text: str) -> bytes | None:
    """The bytes parsel hands lxml for ``response.selector``: ``text`` stripped, without NUL
    characters, in UTF-8; ``None`` when ``text`` cannot be encoded."""
    try:
        return text.strip().replace("\x00", "").encode("utf-8") or b"<html/>"
    except UnicodeError:
        return None


def ordinary_page(text: str) -> bool:
    """Whether :func:`page_tree` reads ``text`` from the tree Scrapy builds (size and markup
    within bounds), so the same document parsed anew gives the same result."""
    return len(text) <= SAFE_PARSE_CHARS and cap_attributes_text(text) is text


def _bounded_parse(text: str, deadline: float) -> Any:
    """Parse ``text`` as parsel does for Scrapy (same parser options, same clean-up), feeding it
    in chunks and giving up once the thread's CPU clock (``time.thread_time()``) passes
    ``deadline``, within the depth policy (module docstring).

    Raises:
        ParseTimeout: the deadline passed.
    """

    def parse(body: bytes) -> Any:
        parser = lxml_html.HTMLParser(recover=True, encoding="utf-8", huge_tree=True)
        for start in range(0, len(body), PARSE_CHUNK):
            _check_clock(deadline)
            parser.feed(body[start : start + PARSE_CHUNK])
        try:
            root = parser.close()
        except etree.XMLSyntaxError:
            root = None
        if root is None:
            root = etree.fromstring(b"<html/>", parser=lxml_html.HTMLParser())
        return root

    body = selector_body(text)
    return None if body is None else _within_depth(body, parse)


def page_tree(text: str, deadline: float, scrapy_tree: Callable[[], Any]) -> Any:
    """The tree the detector reads for ``text`` (as Scrapy decoded it), the same in both worker
    modes.

    Ordinary pages (at most ``SAFE_PARSE_CHARS`` characters, no tag with more than
    ``MAX_ATTRIBUTES`` attributes, short of :data:`MAX_DEPTH`) give the tree Scrapy builds for
    the spider: ``scrapy_tree()``. Others are parsed by :func:`_bounded_parse` within
    ``deadline`` (``time.thread_time()`` of this thread: CPU time).

    Returns:
        The root element, or ``None`` when the text cannot be parsed.

    Raises:
        ParseTimeout: the parse did not finish before ``deadline``.
    """
    capped = cap_attributes_text(text)
    if capped is text and len(text) <= SAFE_PARSE_CHARS:
        root = scrapy_tree()
        if root is None or not reaches_depth_limit(root):
            return root
    try:
        return _bounded_parse(capped, deadline)
    except ParseTimeout:
        raise
    except Exception as exc:
        logger.debug("neardup: cannot parse a page (%r); reading its text instead", exc)
        return None


def text_reading(
    text: str, deadline: float, tree_of_text: Callable[[str], Any]
) -> tuple[bytes | str, dict[str, Any]]:
    """How the detector reads ``text`` (as Scrapy decoded it) without Scrapy's tree at hand:
    ``(html, keyword arguments)`` for ``NearDupDetector.check`` or ``analyze``.

    An ordinary page is read in one pass over the parser's events on the very bytes Scrapy's
    selector parses (:func:`selector_body`), which gives what the walk of Scrapy's tree gives
    without building a tree; the tree is built (:func:`page_tree`, ``tree_of_text`` building
    the tree Scrapy would) only where that pass needs it.

    Raises:
        ParseTimeout: the parse of an odd page did not finish before ``deadline`` (the
            ``parse`` handed over may raise it too).
    """
    body = selector_body(text) if ordinary_page(text) else None
    if body is not None:
        return body, {
            "encoding": "utf-8",
            "parse": lambda: page_tree(text, deadline, lambda: tree_of_text(text)),
        }
    return text, {"tree": page_tree(text, deadline, lambda: tree_of_text(text))}
