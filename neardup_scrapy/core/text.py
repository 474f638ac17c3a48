"""Page bodies to parsed trees, and parsed trees to main text.

Near-duplicate detection compares what a page *says*, not the site chrome around it:

* :func:`parse_html` decodes bytes or text as a browser would and parses them with lxml's HTML
  parser (libxml2).
* :func:`extract` and :func:`extract_main_text` run the compiled extractor
  (:mod:`neardup_scrapy.core.native.extract`, whose docstring states its rules) over a parsed
  tree without modifying it (Scrapy's spider parses the same tree later).

Every function here is total: junk input gives an empty result, never an exception.
"""

from __future__ import annotations

import codecs
import re
import threading
import time
from typing import Any, Final, NamedTuple, cast

from lxml import etree
from lxml import html as lxml_html

from .native.extract import Extractor

__all__ = [
    "MAX_ATTRIBUTES",
    "Extraction",
    "ParseTimeout",
    "cap_attributes",
    "extract",
    "extract_main_text",
    "flatten_tags",
    "html_to_text",
    "parse_html",
    "parse_plain",
    "parse_utf8",
    "utf8_document",
]

DEFAULT_MAX_CHARS: Final = 500_000

# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

#: How far into a document the ``<meta charset>`` / XML declaration sniffing looks.
_SNIFF_BYTES: Final = 4096
_META_CHARSET_RE: Final = re.compile(
    rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{1,40})""", re.IGNORECASE
)
_XML_DECL_RE: Final = re.compile(
    rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_.:\-]{1,40})""", re.IGNORECASE
)
_BOMS: Final = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels that browsers (WHATWG Encoding Standard) decode with a superset codec.
_SUPERSET_CODECS: Final = {
    "latin-1": "cp1252",
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "tis-620": "cp874",
}

_local = threading.local()
#: Tags kept when a document nests deeper than libxml2 parses: the page's structure that the
#: extractor reads (title, headings, paragraphs, main content) and the elements whose text is
#: never visible (code, media, controls) -- every other tag is flattened to a space.
_FLATTEN_TAG_RE: Final = re.compile(
    rb"</?(?!(?:html|head|body|title|meta|link|main|article|h[1-6]|p|br|pre|script|style|template"
    rb"|noscript|svg|math|iframe|object|textarea|select|option|button)\b)[a-zA-Z][^>]*>",
    re.IGNORECASE,
)
#: Attributes kept per tag in a parsed tree. libxml2's tree builder compares each attribute of a
#: tag with the tag's earlier ones, so its time grows with the square of their number (100k
#: attributes on one tag, 0.9 MB: 22 to 75 s). Attributes carry no visible text and no real
#: element has hundreds, so the ones past this many are dropped before a tree is parsed: the
#: principle is that parsing time must be linear in the size of the page whatever its markup.
MAX_ATTRIBUTES: Final = 256
# A tag long enough to hold MAX_ATTRIBUTES attributes (each at least 2 characters); linear:
# each run of characters between two angle brackets is scanned once.
_LONG_TAG_BYTES_RE: Final = re.compile(rb"<[a-zA-Z][^<>]{%d,}>" % (2 * MAX_ATTRIBUTES))
_ATTRIBUTE_BYTES_RE: Final = re.compile(rb"""[^\s/>"'=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]*))?""")


class ParseTimeout(Exception):
    """The page could not be parsed within the check's CPU time budget."""


def cap_attributes(data: bytes) -> bytes:
    """``data`` with the attributes past the :data:`MAX_ATTRIBUTES`-th of each tag dropped (the
    same object when no tag has that many). Linear in ``data``."""

    def cap(match: re.Match[bytes]) -> bytes:
        tag = match.group(0)
        # the first match is the tag name
        for attributes, attribute in enumerate(_ATTRIBUTE_BYTES_RE.finditer(tag, 1)):
            if attributes > MAX_ATTRIBUTES:
                return tag[: attribute.start()] + b">"
        return tag

    if _LONG_TAG_BYTES_RE.search(data) is None:
        return data
    capped = _LONG_TAG_BYTES_RE.sub(cap, data)
    return data if capped == data else capped


def flatten_tags(data: bytes) -> bytes:
    """``data`` with every tag the extractor does not read replaced by a space (for documents
    nested deeper than libxml2 parses). Linear: a tag runs to the next ``>``, so the pattern is
    applied only up to the document's last ``>`` (past it no tag can end, and each attempt
    from a ``<`` there would scan to the end of the document: quadratic in the ``<`` signs)."""
    last = data.rfind(b">")
    if last < 0:
        return data
    return _FLATTEN_TAG_RE.sub(b" ", data[: last + 1]) + data[last + 1 :]


#: Every element is a plain :class:`lxml.html.HtmlElement`, chosen in C: ``lxml.html``'s own
#: lookup calls Python for each element proxy (to pick form/input classes), which makes every
#: walk over the tree markedly slower.
_LOOKUP: Final = etree.ElementDefaultClassLookup(
    element=lxml_html.HtmlElement,
    comment=lxml_html.HtmlComment,
    pi=lxml_html.HtmlProcessingInstruction,
    entity=lxml_html.HtmlEntity,
)
#: The trees :func:`html_to_text` parses never leave this module, so their elements are lxml's
#: own C types: a proxy of a Python subclass costs more to create (an instance dict, an
#: ``_init`` call), and extraction creates hundreds of proxies per page.
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


def _codec_name(label: str | bytes | None) -> str | None:
    """Resolve an encoding label to a Python codec name, or ``None`` if it is unknown."""
    if not label:
        return None
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    try:
        name = codecs.lookup(label.strip().lower()).name
    except (LookupError, ValueError):
        return None
    return _SUPERSET_CODECS.get(name, name)


def _is_utf8_beyond_ascii(data: bytes) -> bool:
    """Whether ``data`` holds non-ASCII bytes and all of it is valid UTF-8."""
    if data.isascii():
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def utf8_despite_label(data: bytes, label: str | None) -> bool:
    """Whether ``data``, labelled ``label`` (an HTTP charset, a ``<meta charset>``), is read as
    UTF-8 all the same: the label names another ASCII-compatible charset and the bytes hold
    non-ASCII and are valid UTF-8 throughout (see :func:`_to_utf8`)."""
    codec = _codec_name(label)
    if codec is None or codec == "utf-8" or codec.startswith(("utf-16", "utf-32")):
        return False
    return _is_utf8_beyond_ascii(data)


def _to_utf8(data: bytes, encoding: str | None) -> bytes:
    """Transcode ``data`` to UTF-8 bytes, choosing the charset like a browser would, except for
    declarations that the bytes contradict.

    Order: byte-order mark, then the caller's ``encoding`` (the HTTP header), then a
    ``<meta charset>`` or XML declaration near the start, then UTF-8.  Undecodable bytes become
    U+FFFD.  A declared UTF-16/32 on bytes without a BOM is treated as UTF-8 (an ASCII-compatible
    document cannot really be UTF-16).  Bytes that hold non-ASCII and are valid UTF-8 throughout
    are UTF-8 whatever else is declared: text in another charset almost never forms UTF-8's
    strict lead-and-continuation sequences (in cp1252 they read as pairs such as "Ã¼"), while a
    page re-encoded or served as UTF-8 under a stale label is common; decoding it by the label
    would give the same page two texts, one of them garbled.  (7-bit charsets such as
    ISO-2022-JP have no non-ASCII bytes and keep their label.)
    """
    codec: str | None = None
    for bom, name in _BOMS:
        if data.startswith(bom):
            codec = name
            data = data[len(bom) :]
            break
    bom_free = codec is None
    if codec is None:
        codec = _codec_name(encoding)
        if codec is None:
            head = data[:_SNIFF_BYTES]
            match = _XML_DECL_RE.search(head) or _META_CHARSET_RE.search(head)
            codec = _codec_name(match.group(1)) if match else None
        if codec is not None and codec.startswith(("utf-16", "utf-32")):
            codec = "utf-8"
    if codec is None or codec == "utf-8" or (bom_free and _is_utf8_beyond_ascii(data)):
        # libxml2 replaces invalid UTF-8 sequences and NUL bytes by U+FFFD on its own.
        return data
    try:
        return data.decode(codec, "replace").encode("utf-8", "replace")
    except Exception:  # a codec that fails even in "replace" mode: treat as UTF-8
        return data


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


def utf8_document(html: bytes | str, encoding: str | None = None) -> bytes | None:
    """The document as the UTF-8 bytes the parser reads (charset chosen as in :func:`parse_html`),
    or ``None`` when there is nothing to parse (empty, whitespace only, not text)."""
    if isinstance(html, str):
        data = html.encode("utf-8", "replace")
    elif isinstance(html, (bytes, bytearray, memoryview)):
        data = _to_utf8(bytes(html), encoding)
    else:
        return None
    if not data or data.isspace():  # (stops at the first non-space byte; strip() would copy)
        return None
    return data


def parse_utf8(data: bytes, *, plain: bool = True, deadline: float | None = None) -> etree._Element | None:
    """Parse what :func:`utf8_document` gives (plain elements unless ``plain`` is false), in
    time linear in ``data``: attributes past :data:`MAX_ATTRIBUTES` per tag are dropped first.

    ``deadline``: ``time.thread_time()`` of this thread past which the parse gives up (looked
    at before the parse, and before a second one of a document nested too deep).

    Raises:
        ParseTimeout: ``deadline`` passed.
    """
    try:
        data = cap_attributes(data)
        parser = _parser(plain)
        root = _parse_within(data, parser, deadline)
        last = parser.error_log.last_error
        if last is not None and last.type_name == "ERR_RESOURCE_LIMIT":
            # libxml2 stops at its nesting limit and drops the rest of the document: keep the
            # tags the extractor reads, flatten the others and parse again.
            root = _parse_within(flatten_tags(data), parser, deadline)
    except ParseTimeout:
        raise
    except Exception:
        return None
    if root is None or not isinstance(root.tag, str):
        return None
    return root


def _parse_within(data: bytes, parser: etree.HTMLParser, deadline: float | None) -> etree._Element | None:
    """``etree.fromstring(data, parser)``, unless the thread's CPU clock is past ``deadline``."""
    if deadline is not None and time.thread_time() > deadline:
        raise ParseTimeout
    return etree.fromstring(data, parser)


def _parse(html: bytes | str, encoding: str | None, *, plain: bool) -> etree._Element | None:
    """:func:`parse_html`, into plain :class:`lxml.etree._Element` trees when ``plain``."""
    try:
        data = utf8_document(html, encoding)
    except Exception:
        return None
    return None if data is None else parse_utf8(data, plain=plain)


# --------------------------------------------------------------------------------------------
# Main-content extraction (compiled)
# --------------------------------------------------------------------------------------------


class Extraction(NamedTuple):
    """What the extractor found on a page.

    Attributes:
        status: ``"ok"``, ``"empty"`` (no visible text) or ``"timeout"``.
        text: the main text, whitespace folded.
        heading: the page's heading (first ``<h1>`` outside chrome, else the first short
            title-classed element).
        title: the page's ``<title>``.
        canonical: the page's ``<link rel=canonical>`` href.
    """

    status: str
    text: str
    heading: str
    title: str
    canonical: str


def _extractor() -> Extractor:
    extractor = getattr(_local, "extractor", None)
    if extractor is None:
        extractor = _local.extractor = Extractor()
    return cast(Extractor, extractor)


def tree_root(tree: Any) -> etree._Element | None:
    """The root element of an lxml element or element tree (``None`` for anything else)."""
    if isinstance(tree, etree._ElementTree):
        tree = tree.getroot()
    if isinstance(tree, etree._Element) and isinstance(tree.tag, str):
        return tree
    return None


def extract(root: Any, max_chars: int = DEFAULT_MAX_CHARS, timeout: float = 0.0) -> Extraction:
    """Extract the main text of a parsed page (read-only on ``root``); see the native extractor.

    Args:
        root: an lxml element (a tree's root, e.g. Scrapy's ``response.selector.root``) or tree.
        max_chars: cap on the length of the text.
        timeout: seconds the extraction may take (0: no limit).
    """
    element = tree_root(root)
    if element is None:
        return Extraction("empty", "", "", "", "")
    return Extraction(*_extractor().extract(element, max_chars, timeout))


def extract_main_text(root: Any, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The main text of a parsed page (``""`` when it has none)."""
    return extract(root, max_chars).text


def html_to_text(html: bytes | str, encoding: str | None = None, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Parse ``html`` and return its main text (see :func:`extract`); ``""`` if unparseable."""
    root = parse_plain(html, encoding)
    if root is None:
        return ""
    return extract(root, max_chars).text
