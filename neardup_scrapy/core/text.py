"""Main-content text extraction and normalisation, built on lxml alone.

Near-duplicate detection compares what a page *says*, not the site chrome around it, so the
detector shingles the page's main content.  This module turns HTML into that text:

* :func:`parse_html` decodes bytes or text robustly and parses them with lxml's HTML parser.
* :func:`extract_main_text` finds the main-content block of a parsed tree and returns its
  visible text, without modifying the tree (Scrapy's spider parses the same tree later).
* :func:`normalize_text`, :func:`tokenize` and :func:`char_tokens` turn text into the tokens the
  shingler consumes.

Every function here is total: junk input gives an empty result, never an exception.
"""

from __future__ import annotations

import codecs
import re
import threading
import unicodedata
from collections.abc import Iterator
from typing import Final, cast

from lxml import etree
from lxml import html as lxml_html

__all__ = [
    "char_tokens",
    "extract_main_text",
    "html_to_text",
    "normalize_text",
    "parse_html",
    "tokenize",
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
_CONTAINER_TAG_RE: Final = re.compile(
    rb"</?(?:div|span|section|article|main|font|b|i|u|em|strong|small|big|center|blockquote|a"
    rb"|table|tbody|tr|td|th|ul|ol|li|dl|dt|dd|form|fieldset|label|figure|q|cite|s|sub|sup)\b[^>]*>",
    re.IGNORECASE,
)


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


def _to_utf8(data: bytes, encoding: str | None) -> bytes:
    """Transcode ``data`` to UTF-8 bytes, choosing the charset like a browser would.

    Order: byte-order mark, then the caller's ``encoding`` (the HTTP header), then a
    ``<meta charset>`` or XML declaration near the start, then UTF-8.  Undecodable bytes become
    U+FFFD.  A declared UTF-16/32 on bytes without a BOM is treated as UTF-8 (an ASCII-compatible
    document cannot really be UTF-16).
    """
    codec: str | None = None
    for bom, name in _BOMS:
        if data.startswith(bom):
            codec = name
            data = data[len(bom) :]
            break
    if codec is None:
        codec = _codec_name(encoding)
        if codec is None:
            head = data[:_SNIFF_BYTES]
            match = _XML_DECL_RE.search(head) or _META_CHARSET_RE.search(head)
            codec = _codec_name(match.group(1)) if match else None
        if codec is not None and codec.startswith(("utf-16", "utf-32")):
            codec = "utf-8"
    if codec is None or codec == "utf-8":
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


def _parse(html: bytes | str, encoding: str | None, *, plain: bool) -> etree._Element | None:
    """:func:`parse_html`, into plain :class:`lxml.etree._Element` trees when ``plain``."""
    try:
        if isinstance(html, str):
            data = html.encode("utf-8", "replace")
        elif isinstance(html, (bytes, bytearray, memoryview)):
            data = _to_utf8(bytes(html), encoding)
        else:
            return None
        if not data or data.isspace():  # (stops at the first non-space byte; strip() would copy)
            return None
        parser = _parser(plain)
        root = etree.fromstring(data, parser)
        last = parser.error_log.last_error
        if last is not None and last.type_name == "ERR_RESOURCE_LIMIT":
            # libxml2 stops at a nesting depth of 2048 and drops the rest of the document:
            # flatten the usual container tags and parse again.
            root = etree.fromstring(_CONTAINER_TAG_RE.sub(b" ", data), parser)
    except Exception:
        return None
    if root is None or not isinstance(root.tag, str):
        return None
    return root


# --------------------------------------------------------------------------------------------
# Main-content extraction
# --------------------------------------------------------------------------------------------

#: Elements that never hold visible main text: code, embedded documents, media, controls.
_HARD_DROP_TAGS: Final = (
    "script",
    "style",
    "template",
    "svg",
    "math",
    "iframe",
    "object",
    "embed",
    "button",
    "select",
    "textarea",
    "input",
    "option",
    "head",
    "title",
    "meta",
    "link",
    "canvas",
    "audio",
    "video",
    "map",
    "datalist",
    "frameset",
    "frame",
    "applet",
    "param",
    "source",
    "track",
)
#: Site chrome by HTML semantics.  They are dropped unless they hold most of the text of the
#: block being rendered (broken markup can leave a whole page inside an unclosed ``<noscript>``,
#: and some sites wrap the whole page in one ``<form>``).
_SOFT_DROP_TAGS: Final = ("noscript", "nav", "header", "footer", "aside", "form", "menu", "dialog")
_DROP_TAG_SET: Final = frozenset(_HARD_DROP_TAGS + _SOFT_DROP_TAGS)
_SOFT_DROP_SET: Final = frozenset(_SOFT_DROP_TAGS)
_LANDMARK_CHROME: Final = frozenset(("navigation", "banner", "contentinfo", "complementary", "menu"))
#: Soft-dropped tags that are chrome by definition: removed even when they hold most text.
_SEMANTIC_CHROME: Final = frozenset(("nav", "aside", "menu", "dialog"))

#: Phrasing (inline) elements: text inside them belongs to the enclosing block.
_INLINE_TAGS: Final = frozenset(
    (
        "a",
        "abbr",
        "acronym",
        "b",
        "bdi",
        "bdo",
        "big",
        "blink",
        "cite",
        "code",
        "data",
        "del",
        "dfn",
        "em",
        "font",
        "i",
        "ins",
        "kbd",
        "label",
        "mark",
        "nobr",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "time",
        "tt",
        "u",
        "var",
        "wbr",
    )
)
#: Blocks that are paragraphs by nature: their container is their parent.
_PARAGRAPH_TAGS: Final = frozenset(
    (
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "li",
        "dt",
        "dd",
        "pre",
        "blockquote",
        "figcaption",
        "caption",
        "address",
        "summary",
        "legend",
    )
)
#: Elements rendered on their own line; everything else is inline and glued to its neighbours.
_BLOCK_TAGS: Final = (
    "address",
    "article",
    "blockquote",
    "br",
    "caption",
    "center",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "body",
    "html",
    "legend",
    "hgroup",
    "img",
    "picture",
    "dir",
    "frame",
    "marquee",
    "noscript",
    "nav",
    "header",
    "footer",
    "aside",
    "menu",
    "dialog",
    "option",
)
# The XPaths here are compiled with ``regexp=False``: none uses EXSLT regular expressions, and
# registering them in the context costs every call (~5% of the paragraph scoring).
_HAS_BLOCK_CHILD: Final = etree.XPath(
    "boolean(p|div|ul|ol|dl|table|section|article|main|blockquote|pre|h1|h2|h3|h4|h5|h6|form"
    "|header|footer|nav|aside|figure|center|hr)",
    regexp=False,
)

#: Text nodes long enough to be prose (not menu items), outside code and form controls.
_PROSE_XPATH: Final = etree.XPath(
    ".//text()[string-length(normalize-space(.)) >= 25]"
    "[not(parent::script or parent::style or parent::noscript or parent::template"
    " or parent::textarea or parent::title or parent::option)]",
    regexp=False,
)

#: class/id words that mark site chrome (menus, sidebars, share bars, ads, comment threads...).
#: A class/id string is split into words at non-letters and camelCase humps, lower-cased.
#: Short words must match a whole word; long ones anywhere inside a word ("postcomments").
_CHROME_WORDS: Final = frozenset(
    (
        "nav",
        "navbar",
        "menu",
        "menus",
        "submenu",
        "foot",
        "ad",
        "ads",
        "share",
        "tags",
        "toc",
        "skip",
        "rss",
        "login",
        "promo",
        "promos",
        "modal",
        "search",
        "rail",
        "sronly",
        "offscreen",
        "print",
        "masthead",
        "byline",
        "signin",
        "signup",
        "pager",
    )
)
_CHROME_PARTS: Final = (
    "navigation",
    "sidebar",
    "sidenav",
    "footer",
    "header",
    "breadcrumb",
    "comment",
    "sharing",
    "social",
    "related",
    "recommend",
    "advert",
    "sponsor",
    "banner",
    "cookie",
    "consent",
    "gdpr",
    "newsletter",
    "subscri",
    "popup",
    "toolbar",
    "pagination",
    "outbrain",
    "taboola",
    "disqus",
    "copyright",
    "trackback",
    "teaserlist",
)
_CHROME_PARTS_RE: Final = re.compile("|".join(_CHROME_PARTS))
#: class/id words that mark content containers.
_CONTENT_WORDS: Final = frozenset(("main", "post", "entry", "story", "body", "text", "article", "content"))
_CONTENT_PARTS_RE: Final = re.compile("article|content|story|entry|maintext|mainbody|posttext|postbody")
_CAMEL_RE: Final = re.compile(r"([a-z])([A-Z])")
_WORD_SPLIT_RE: Final = re.compile(r"[^a-z]+")
_DIGIT_RUN_RE: Final = re.compile(r"[0-9]+")
_name_cache: dict[str, int] = {}
_CHROME: Final = 1
_CONTENT: Final = 2
_WEAK_CHROME: Final = 3
#: Words that are chrome inside a content block, but also name the layout blocks of page
#: builders (``elementor-widget-container`` wraps everything), so they never disqualify a
#: candidate block on their own.
_WEAK_CHROME_RE: Final = re.compile("widget")


def _classify_name(name: str) -> int:
    """Classify a class/id string: ``_CHROME``, ``_CONTENT``, ``_WEAK_CHROME`` or 0 (cached)."""
    hit = _name_cache.get(name)
    if hit is not None:
        return hit
    # Digits only separate words, so "post-123" and "post-456" (unique ids) share a class.
    shape = _DIGIT_RUN_RE.sub("0", name)
    hit = _name_cache.get(shape)
    if hit is None:
        words = [w for w in _WORD_SPLIT_RE.split(_CAMEL_RE.sub(r"\1 \2", shape).lower()) if w]
        if any(w in _CHROME_WORDS or _CHROME_PARTS_RE.search(w) for w in words):
            hit = _CHROME
        elif any(w in _CONTENT_WORDS or _CONTENT_PARTS_RE.search(w) for w in words):
            hit = _CONTENT
        elif any(_WEAK_CHROME_RE.search(w) for w in words):
            hit = _WEAK_CHROME
        else:
            hit = 0
    if len(_name_cache) > 50_000:
        _name_cache.clear()
    _name_cache[shape] = _name_cache[name] = hit
    return hit


def _name_of(el: etree._Element) -> str:
    cls = el.get("class")
    ident = el.get("id")
    if cls and ident:
        return f"{cls} {ident}"
    return cls or ident or ""


def _is_chrome_name(name: str) -> bool:
    """Whether a class/id string names site chrome."""
    return _classify_name(name) == _CHROME


def _text(el: etree._Element) -> str:
    """The raw text content of ``el`` (all descendants, no tail), computed in C."""
    try:
        return etree.tostring(el, method="text", encoding="unicode", with_tail=False)
    except Exception:
        return ""


def _text_len(el: etree._Element) -> int:
    """Length of the raw text of ``el`` (whitespace included; only used for comparisons)."""
    return len(_text(el))


_FOLDED_LEN_XPATH: Final = etree.XPath("string-length(normalize-space(.))", regexp=False)


def _folded_len(el: etree._Element) -> int:
    """Length of the text of ``el`` with whitespace runs folded (computed in C)."""
    return int(cast(float, _FOLDED_LEN_XPATH(el)))


def _is_hidden(el: etree._Element) -> bool:
    """Whether attributes alone hide ``el`` (``hidden``, ``aria-hidden``, inline CSS)."""
    if el.get("hidden") is not None or el.get("aria-hidden") in ("true", "TRUE", "True"):
        return True
    style = el.get("style")
    if style:
        style = style.replace(" ", "").lower()
        return "display:none" in style or "visibility:hidden" in style
    return False


_CHROME_ROLES: Final = frozenset(
    (
        "navigation",
        "banner",
        "contentinfo",
        "complementary",
        "menu",
        "menubar",
        "search",
        "dialog",
        "alert",
        "toolbar",
        "tablist",
    )
)
#: Elements checked for chrome attributes inside the rendered block (block-level containers;
#: inline elements are too many to check and rarely chrome on their own).
_SCAN_TAGS: Final = (
    *_SOFT_DROP_TAGS,
    "div",
    "section",
    "ul",
    "ol",
    "dl",
    "table",
    "figure",
    "p",
    "center",
)


def _is_chrome_items(items: list[tuple[str, str]]) -> bool:
    """Whether an element's attributes mark it as chrome: a hidden attribute or style, a chrome
    role, or a class/id that names chrome (soft-dropped tags are chrome by their tag alone)."""
    for key, value in items:
        if key in {"class", "id"}:
            if _classify_name(value) in {_CHROME, _WEAK_CHROME}:
                return True
        elif key == "style":
            style = value.replace(" ", "").lower()
            if "display:none" in style or "visibility:hidden" in style:
                return True
        elif key == "hidden":
            return True
        elif key == "role":
            if value in _CHROME_ROLES:
                return True
        elif key == "aria-hidden" and value.lower() == "true":
            return True
    return False


_attributes_cache: dict[tuple[tuple[str, str], ...], bool] = {}


def _chrome_attributes(items: list[tuple[str, str]]) -> bool:
    """:func:`_is_chrome_items`, memoised by attribute set (pages of a site repeat them).

    A single attribute is judged directly: class/id names have their own cache.
    """
    if len(items) < 2:
        return bool(items) and _is_chrome_items(items)
    key = tuple(items)
    hit = _attributes_cache.get(key)
    if hit is None:
        hit = _is_chrome_items(items)
        if len(_attributes_cache) > 50_000:
            _attributes_cache.clear()
        _attributes_cache[key] = hit
    return hit


_LIST_SET: Final = frozenset(("ul", "ol", "dl", "table"))
_HARD_DROP_SET: Final = frozenset(_HARD_DROP_TAGS)
_SCAN_SET: Final = frozenset(_SCAN_TAGS)

#: What :func:`_render` does at an element, by tag (any other tag is a block): drop it with
#: its content (``_R_HARD``: code, media, controls; also comments and processing
#: instructions), glue it to its neighbours (inline, links), or check it for chrome (scanned
#: blocks, lists, soft-dropped tags). ``kind >= _R_SCAN`` means "check for chrome".
_R_BLOCK: Final = 0
_R_INLINE: Final = 1
_R_LINK: Final = 2
_R_HARD: Final = 3
_R_SCAN: Final = 4
_R_LIST: Final = 5
_R_SOFT: Final = 6
_RENDER_KIND: Final[dict[object, int]] = {
    **dict.fromkeys(_INLINE_TAGS, _R_INLINE),
    **dict.fromkeys(_SCAN_SET, _R_SCAN),
    **dict.fromkeys(_LIST_SET, _R_LIST),
    **dict.fromkeys(_SOFT_DROP_SET, _R_SOFT),
    **dict.fromkeys(_HARD_DROP_SET, _R_HARD),
    **dict.fromkeys((etree.Comment, etree.ProcessingInstruction, etree.Entity), _R_HARD),
    "a": _R_LINK,
}


class _Span:
    """A chrome or list element met by :func:`_render`: where its parts start and end, and the
    running text and link-text lengths at both ends (hard-dropped text excluded)."""

    __slots__ = (
        "end",
        "kind",
        "link1",
        "link1_end",
        "link2",
        "link2_end",
        "size",
        "start",
        "tag",
        "tail",
        "tail_link",
    )

    def __init__(self, kind: int, tag: str, start: int, at: tuple[int, int, int]) -> None:
        size, link1, link2 = at
        self.kind = kind  # _CHROME_SPAN, _LIST_SPAN, _LINKED_LIST_SPAN or _NESTED_LIST_SPAN
        self.tag = tag
        self.start = start
        self.end = start
        self.size = size  # text length before the element, then the element's own
        self.link1 = link1  # link text (depth >= 1) before the element, then inside it
        self.link2 = link2  # the same at link depth >= 2 (for lists inside a link)
        self.link1_end = link1
        self.link2_end = link2
        self.tail = False
        self.tail_link = 0

    def close(self, end: int, at: tuple[int, int, int], tail_link: int) -> None:
        """End the span at part ``end`` with the running lengths ``at`` there; ``tail_link`` is
        the link depth of the element's tail, -1 when it has none."""
        total, link1, link2 = at
        self.end = end
        self.size = total - self.size
        self.link1_end = link1
        self.link2_end = link2
        if tail_link >= 0:
            self.tail = True
            self.tail_link = tail_link


_CHROME_SPAN: Final = 1
_LIST_SPAN: Final = 2
_LINKED_LIST_SPAN: Final = 3  # a list inside an <a>: only links nested inside it count
_NESTED_LIST_SPAN: Final = 4  # judged with its outermost list


def _render(el: etree._Element) -> str:
    """Visible text of ``el`` with chrome removed and block boundaries kept as whitespace.

    The text is not folded: runs of whitespace stay (callers fold when they need to).

    One read-only walk over the subtree collects the text pieces (skipping hard-dropped tags,
    comments and processing instructions, whose tails stay glued to the text before them),
    with a space at the start and end of every non-inline element, and records the span of
    every chrome element (soft-dropped tags, hidden elements, chrome roles and class/id words)
    and every outermost list.  Chrome is then removed only when it holds less than half of
    the block's text (nav-like tags always), so a mislabelled wrapper cannot empty the page,
    and a list is removed when what remains of it is short and mostly link text.
    """
    parts: list[str] = []
    append = parts.append
    total = link1 = link2 = 0  # text length so far; of it, inside >= 1 and >= 2 <a> elements
    in_link = 0
    open_lists = 0
    spans: list[_Span] = []
    kinds = _RENDER_KIND
    text = el.text
    if text:
        append(text)
        total = len(text)
    # The element being walked (its children iterator, kind and span) and, on the stack, its
    # open ancestors. The ``for`` over the iterator is left to descend into a child or to end
    # a leaf, and resumed where it stopped.
    stack: list[tuple[etree._Element, Iterator[etree._Element], int, _Span | None]] = []
    children: Iterator[etree._Element] = iter(el)
    node, kind, span = el, _R_BLOCK, None
    ended: etree._Element | None = None
    ended_kind, ended_span = _R_BLOCK, None
    while True:
        for child in children:
            child_kind = kinds.get(child.tag, _R_BLOCK)
            if child_kind == _R_HARD:
                tail = child.tail  # comments and code vanish, their tails stay glued
                if tail:
                    append(tail)
                    total += len(tail)
                    if in_link:
                        link1 += len(tail)
                        link2 += len(tail) if in_link > 1 else 0
                continue  # (inline here: leaving the loop for each one costs 3% of extraction)
            child_span = None
            if child_kind >= _R_SCAN:
                if child_kind == _R_SOFT or _chrome_attributes(cast("list[tuple[str, str]]", child.items())):
                    child_span = _Span(_CHROME_SPAN, child.tag, len(parts), (total, link1, link2))
                    spans.append(child_span)
                elif child_kind == _R_LIST:
                    list_kind = (
                        _NESTED_LIST_SPAN if open_lists else _LINKED_LIST_SPAN if in_link else _LIST_SPAN
                    )
                    child_span = _Span(list_kind, child.tag, len(parts), (total, link1, link2))
                    spans.append(child_span)
                    open_lists += 1
            if child_kind == _R_LINK:
                in_link += 1
            elif child_kind != _R_INLINE:
                append(" ")
            text = child.text
            if text:
                append(text)
                total += len(text)
                if in_link:
                    link1 += len(text)
                    link2 += len(text) if in_link > 1 else 0
            if len(child):
                stack.append((node, children, kind, span))
                node, children, kind, span = child, iter(child), child_kind, child_span
                break
            ended, ended_kind, ended_span = child, child_kind, child_span  # a leaf ends at once
            break
        else:  # ``node`` has no more children: it ends
            if not stack:
                break
            ended, ended_kind, ended_span = node, kind, span
            node, children, kind, span = stack.pop()
        if ended is None:
            continue  # went down into a child
        if ended_kind == _R_LINK:
            in_link -= 1
        elif ended_kind != _R_INLINE:
            append(" ")
        tail = ended.tail
        if ended_span is not None:
            ended_span.close(len(parts), (total, link1, link2), in_link if tail else -1)
            if ended_span.kind != _CHROME_SPAN:
                open_lists -= 1
        if tail:
            append(tail)
            total += len(tail)
            if in_link:
                link1 += len(tail)
                link2 += len(tail) if in_link > 1 else 0
        ended = None
    if spans:
        doomed = _doomed_spans(spans, 0.5 * total)
        if doomed:
            kept: list[str] = []
            pos = 0
            for span in doomed:
                if span.start < pos:
                    continue  # inside a removed element
                kept.extend(parts[pos : span.start])
                if span.tail:
                    kept.append(" ")
                pos = span.end
            kept.extend(parts[pos:])
            parts = kept
    return "".join(parts)


def _doomed_spans(spans: list[_Span], limit: float) -> list[_Span]:
    """The chrome and link-list spans :func:`_render` removes, sorted by start.

    Chrome goes first, in document order, unless an ancestor went already: nav-like tags
    always, others when their text is under ``limit``.  Then each outermost list outside
    removed chrome goes when its remaining text is under ``limit`` and over 60% link text.
    """
    removed: list[_Span] = []
    last_end = -1
    for span in spans:
        if (
            span.kind == _CHROME_SPAN
            and span.start >= last_end
            and (span.tag in _SEMANTIC_CHROME or span.size < limit)
        ):
            removed.append(span)
            last_end = span.end
    doomed = list(removed)
    first = 0  # first removed span that does not end before the current list
    for span in spans:
        if span.kind in {_CHROME_SPAN, _NESTED_LIST_SPAN}:
            continue
        while first < len(removed) and removed[first].end <= span.start:
            first += 1
        if first < len(removed) and removed[first].start < span.start:
            continue  # inside removed chrome
        depth = 1 if span.kind == _LIST_SPAN else 2
        size = span.size
        links = span.link1_end - span.link1 if depth == 1 else span.link2_end - span.link2
        for gone in removed[first:]:
            if gone.start >= span.end:
                break
            # removing an element takes its text and leaves a space before its tail
            size -= gone.size
            links -= gone.link1_end - gone.link1 if depth == 1 else gone.link2_end - gone.link2
            if gone.tail:
                size += 1
                links += gone.tail_link >= depth
        if size and size < limit and links > 0.6 * size:
            doomed.append(span)
    if len(doomed) > len(removed):
        doomed.sort(key=lambda span: span.start)
    return doomed


def _find_body(root: etree._Element) -> etree._Element:
    if root.tag == "body":
        return root
    body = next(root.iterchildren("body"), None)  # C-level; root.find goes through ElementPath
    if body is None:
        body = next(root.iter("body"), None)
    return root if body is None else body


def _excluded_ancestor(el: etree._Element, body: etree._Element) -> bool:
    """Whether ``el`` sits inside chrome.

    Chrome is a soft-dropped tag (``nav``, ``aside``...), a hidden element, an ARIA
    navigation/banner/contentinfo/complementary landmark, a ``header``/``footer`` or an
    element whose class/id names chrome.  Class names often describe page layouts rather than
    chrome (``layout-with-sidebar`` on the wrapper of everything), and broken markup can leave
    a page inside an unclosed ``<header>``, so such an ancestor is ignored when a content
    element (``<article>``, ``<main>``, a class/id such as ``content``, ``article``, ``post``)
    lies between it and ``el``.
    """
    node: etree._Element | None = el
    content_below = False
    while node is not None and node is not body:
        tag = node.tag
        if tag in ("header", "footer"):
            # broken markup can leave a whole page inside an unclosed <header>
            if not content_below:
                return True
        elif isinstance(tag, str) and tag in _DROP_TAG_SET and tag not in ("form", "noscript"):
            return True
        role = None
        if node.keys():  # most ancestors have no attributes: skip the lookups
            if _is_hidden(node):
                return True
            role = node.get("role")
            if role in _LANDMARK_CHROME:
                return True
            name = _name_of(node)
            if name:
                kind = _classify_name(name)
                if kind == _CHROME and not content_below:
                    return True
                if kind == _CONTENT:
                    content_below = True
        if tag in ("article", "main") or role == "main":
            content_below = True
        node = node.getparent()
    return False


#: The text of a container's direct ``<p>`` children.
_PARAGRAPH_TEXT_XPATH: Final = etree.XPath("p//text()", smart_strings=False, regexp=False)
_PARAGRAPH_PARENTS_XPATH: Final = etree.XPath(".//p/..", regexp=False)


def _paragraph_scores(body: etree._Element) -> dict[etree._Element, int]:
    """Score elements by the text of their direct ``<p>`` children, less 3 per text node.

    Evaluated with two XPath queries per page in C; whitespace counts as text, which only
    matters for comparisons between nearly equal blocks.
    """
    scores: dict[etree._Element, int] = {}
    for parent in cast("list[etree._Element]", _PARAGRAPH_PARENTS_XPATH(body)):
        texts = cast("list[str]", _PARAGRAPH_TEXT_XPATH(parent))
        score = sum(map(len, texts)) - 3 * len(texts)
        if score > 0:
            scores[parent] = score
    return scores


def _prose_scores(body: etree._Element) -> dict[etree._Element, int]:
    """Score blocks by all the prose they hold, whatever the markup (the slower, general pass).

    Every text node of at least 25 characters that is not link text counts for the block
    holding it (through inline elements such as ``<span>`` or ``<b>``).  Paragraph-like blocks
    (``<p>``, headings, list items, or ``<div>``s without block children) pass their score to
    their parent, so the winner is the element whose paragraphs hold the most text; a block
    that holds text next to other blocks (text and ``<br>`` in one ``<div>``, a table cell)
    keeps it.  List items count for the list's parent.
    """
    scores: dict[etree._Element, int] = {}
    containers: dict[etree._Element, etree._Element | None] = {}
    for s in cast("list[etree._ElementUnicodeResult]", _PROSE_XPATH(body)):
        el = s.getparent()
        if el is None:
            continue
        if s.is_tail:
            el = el.getparent()
        in_link = False
        while el is not None and el.tag in _INLINE_TAGS:
            if el.tag == "a":
                in_link = True
                break
            el = el.getparent()
        if in_link or el is None:
            continue
        if el in containers:
            cont = containers[el]
        else:
            tag = el.tag
            if tag in _PARAGRAPH_TAGS or (
                tag not in ("td", "th", "body", "html") and el is not body and not _HAS_BLOCK_CHILD(el)
            ):
                cont = el.getparent()
                while cont is not None and cont.tag in ("ul", "ol", "dl", "li") and cont is not body:
                    cont = cont.getparent()
            else:
                cont = el
            containers[el] = cont
        if cont is not None:
            scores[cont] = scores.get(cont, 0) + len(s.strip())
    return scores


def _pick(scores: dict[etree._Element, int], body: etree._Element) -> etree._Element | None:
    """The best-scored element outside chrome (else the best one)."""
    ranked = sorted(scores, key=scores.__getitem__, reverse=True)
    for cand in ranked[:25]:
        if not _excluded_ancestor(cand, body):
            return cand
    return None


def _article_of(el: etree._Element, body: etree._Element) -> etree._Element | None:
    """The nearest ``<article>`` ancestor-or-self of ``el`` below ``body``, if any."""
    node: etree._Element | None = el
    while node is not None and node is not body:
        if node.tag == "article":
            return node
        node = node.getparent()
    return None


_VISIBLE_TEXT_XPATH: Final = etree.XPath(
    "descendant::text()[not(parent::script or parent::style or parent::noscript or parent::template)]",
    smart_strings=False,
    regexp=False,
)


def _visible_len(el: etree._Element) -> int:
    """Length of the visible text of ``el`` (outside scripts and styles), whitespace folded."""
    words = " ".join(cast("list[str]", _VISIBLE_TEXT_XPATH(el))).split()
    return sum(map(len, words)) + len(words) - 1 if words else 0


def _climb(best: etree._Element, scores: dict[etree._Element, int], body: etree._Element) -> etree._Element:
    """Move up from ``best`` to an ancestor that gathers much more of the page's prose.

    Articles are often split into sibling blocks (one per section, or cut by ad slots), and
    the best single block then holds only part of the text.  Scores of the top-scoring blocks
    outside chrome, and inside the same ``<article>`` as ``best`` (sibling ``<article>``
    elements are separate items of a listing), are added to their ancestors up to four
    levels.  An ancestor of ``best`` (up to four levels, never above its ``<article>`` nor at
    ``<body>``) is taken when it gathers at least 1.4 times the prose of the current choice
    and that prose is at least half of its visible text.
    """
    base = scores[best]
    if sum(scores.values()) < 1.4 * base:
        return best  # not enough prose elsewhere on the page to ever climb
    article = _article_of(best, body)
    chain: list[etree._Element] = []  # ancestors of best that climbing may take
    node = best if best is article else best.getparent()
    while node is not None and node is not body and node.tag != "html" and len(chain) < 4:
        if node is not best:
            chain.append(node)
        if node is article:
            break
        node = node.getparent()
    if not chain:
        return best
    on_chain = set(chain)
    agg: dict[etree._Element, int] = {}
    for cand in sorted(scores, key=scores.__getitem__, reverse=True)[:40]:
        score = scores[cand]
        if score < max(0.05 * base, 50):
            break
        # walk up to where cand joins best's chain; give up past four levels or on
        # reaching another <article> (an item of a listing, not part of this text)
        path: list[etree._Element] = []
        node = cand if cand is not best else None
        joined = None
        for _ in range(5):
            if node is None or node is body:
                break
            if node in on_chain:
                joined = node
                break
            if node.tag == "article" and node is not article:
                break
            path.append(node)
            node = node.getparent()
        if cand is best:
            joined = chain[0]
        elif joined is None or any(_is_chrome_node(n) for n in path):
            continue
        for anc in chain[chain.index(joined) :]:
            agg[anc] = agg.get(anc, 0) + score
    chosen, total = best, base
    for anc in chain:
        gathered = agg.get(anc, 0) + scores.get(anc, 0)
        if gathered >= 1.4 * total and gathered >= _MIN_DENSITY * _visible_len(anc):
            chosen, total = anc, gathered
    return chosen


def _is_chrome_node(node: etree._Element) -> bool:
    """Whether ``node`` itself is chrome for candidate selection (see :func:`_excluded_ancestor`)."""
    tag = node.tag
    if isinstance(tag, str) and tag in _DROP_TAG_SET and tag not in ("form", "noscript"):
        return True
    if _is_hidden(node) or node.get("role") in _LANDMARK_CHROME:
        return True
    name = _name_of(node)
    return bool(name) and _classify_name(name) == _CHROME


def _is_semantic(el: etree._Element) -> bool:
    return (
        el.tag in ("article", "main")
        or el.get("role") == "main"
        or el.get("itemprop") in ("articleBody", "text", "mainContentOfPage")
    )


def _widen(best: etree._Element, body: etree._Element) -> etree._Element:
    """Prefer a semantic container around ``best`` when it is not much bigger.

    The nearest ancestor-or-self that is ``<article>``, ``<main>``, ``role="main"`` or
    ``itemprop="articleBody"`` replaces ``best`` if its text is at most twice as long, so the
    headline, lists and code blocks next to the paragraphs are kept.
    """
    node: etree._Element | None = best
    depth = 0
    while node is not None and node is not body and depth < 12:
        if _is_semantic(node):
            if node is best or _text_len(node) <= 2.0 * _text_len(best):
                return node
            break
        node = node.getparent()
        depth += 1
    return best


def _is_ancestor(anc: etree._Element, el: etree._Element) -> bool:
    """Whether ``anc`` is ``el`` or one of its ancestors."""
    node: etree._Element | None = el
    while node is not None:
        if node is anc:
            return True
        node = node.getparent()
    return False


def _heading_for(block: etree._Element, body: etree._Element) -> str:
    """The page heading (first ``<h1>``) just outside ``block``, if any.

    Headlines often sit above the article body, outside the block that holds the paragraphs.
    The first ``<h1>`` of the enclosing ``<article>`` (else of the block's parent, grandparent
    or great-grandparent below ``<body>``) is taken when it is not in the block already and
    not inside chrome.
    """
    article = _article_of(block, body)
    if article is not None and article is not block:
        scope = article
    else:
        scope = block
        for _ in range(3):
            parent = scope.getparent()
            if parent is None or parent is body or parent.tag == "html":
                break
            scope = parent
    if scope is block:
        return ""
    h1 = next(scope.iter("h1"), None)
    if h1 is None or _is_ancestor(block, h1) or _excluded_ancestor(h1, body):
        return ""
    return " ".join(_text(h1).split())


_MIN_PARAGRAPH_SCORE: Final = 400
#: Share of an ancestor's text that must be scored prose for :func:`_climb` to take it.
_MIN_DENSITY: Final = 0.5
_MIN_WORDS: Final = 10


def _cap(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ", max(0, max_chars - 200))
    return cut[:space] if space > 0 else cut


def extract_main_text(root: etree._Element, max_chars: int = DEFAULT_MAX_CHARS, *, fold: bool = True) -> str:
    """Return the visible text of the main content of a parsed page, read-only on ``root``.

    Heuristics, in order:

    1. The *paragraph block*: the element whose direct ``<p>`` children hold the most text,
       skipping blocks inside site chrome (``nav``/``aside``/``header``/``footer``, hidden
       elements, ARIA landmark roles for navigation, banners and complementary content,
       class/id words such as ``menu``, ``sidebar``, ``share``, ``related``, ``comment``,
       ``ad``).
    2. When paragraphs are scarce (pages built from ``<div>``s, ``<br>``s or lists), a general
       pass scores every block by the prose text nodes it holds instead.
    3. Split articles are gathered: an ancestor (up to four levels, not past the enclosing
       ``<article>``) replaces the block when it holds much more scored prose and is still
       mostly prose (:func:`_climb`).
    4. A semantic container (``<main>``, ``<article>``, ``role="main"``,
       ``itemprop="articleBody"``) around the block replaces it when it is not much bigger,
       so headings, lists and code blocks next to the paragraphs count.
    5. Inside the chosen block, chrome is removed again (the same signals plus link lists)
       and the text is rendered with block boundaries as whitespace; the article's ``<h1>``
       is prepended when it sits outside the block.
    6. When the result is tiny (under ten words), the visible text of ``<body>`` is used
       instead, after the same chrome removal.

    Args:
        root: A tree from :func:`parse_html` or any lxml HTML tree (e.g. Scrapy's
            ``response.selector.root``).  It is never modified.
        max_chars: Cap on the length of the text with whitespace folded.
        fold: Fold whitespace runs to single spaces. Without it, the text keeps the page's
            whitespace (the same words; cheaper when only the words matter).

    Returns:
        The main text, possibly empty.
    """
    try:
        text = _extract(root, max_chars)
    except Exception:
        return ""
    return " ".join(text.split()) if fold else text


def _extract(root: etree._Element, max_chars: int) -> str:
    if root is None or not isinstance(getattr(root, "tag", None), str):
        getroot = getattr(root, "getroot", None)
        if getroot is None:
            return ""
        root = getroot()  # an ElementTree
        if root is None or not isinstance(root.tag, str):
            return ""
    if root.tag.startswith("{"):
        # A namespaced (XML-parsed XHTML) tree: reparse its serialisation as HTML.
        reparsed = parse_html(etree.tostring(root))
        if reparsed is None:
            return ""
        root = reparsed
    body = _find_body(root)
    scores = _paragraph_scores(body)
    best = _pick(scores, body)
    if best is None or scores[best] < _MIN_PARAGRAPH_SCORE:
        prose = _prose_scores(body)
        alt = _pick(prose, body)
        if alt is not None and (best is None or prose[alt] > scores[best]):
            best, scores = alt, prose
    if best is not None:
        best = _climb(best, scores, body)
    if best is None:
        semantic = [s for s in body.iter("article", "main") if not _excluded_ancestor(s, body)]
        if semantic:
            best = max(semantic, key=_text_len)
    text = ""
    if best is not None:
        block = _widen(best, body)
        text = _render(block)
        heading = _heading_for(block, body)
        if heading:
            text = f"{heading} {text}"
    if len(text.split(None, _MIN_WORDS)) < _MIN_WORDS:
        text = _render(body)
    if len(text) > max_chars:
        text = _cap(" ".join(text.split()), max_chars)
    return text


def html_to_text(
    html: bytes | str, encoding: str | None = None, max_chars: int = DEFAULT_MAX_CHARS, *, fold: bool = True
) -> str:
    """Parse ``html`` and return its main text (see :func:`extract_main_text`); ``""`` if unparseable."""
    root = _parse(html, encoding, plain=True)
    if root is None:
        return ""
    return extract_main_text(root, max_chars, fold=fold)


# --------------------------------------------------------------------------------------------
# Normalisation and tokens
# --------------------------------------------------------------------------------------------

_DIGIT_RE: Final = re.compile(r"\d")
_WORD_RE: Final = re.compile(r"\w+")
_NONSPACE_RE: Final = re.compile(r"\S")


def normalize_text(text: str, mask_digits: bool = True) -> str:
    """Normalise text for shingling.

    Unicode NFKC (full-width forms, ligatures, compatibility digits fold to their plain form),
    case folding, every decimal digit replaced by ``0`` (dates, counters and prices then do not
    break shingles) and whitespace runs folded to one space, trimmed.  The function is
    idempotent.

    Args:
        text: Any text.
        mask_digits: Replace each Unicode decimal digit by ``"0"``.

    Returns:
        The normalised text.
    """
    if not text:
        return ""
    if text.isascii():
        text = text.lower()
    else:
        # NFKC and case folding do not commute for a few characters: repeat until stable
        # (is_normalized is a fast quick-check; casefold is idempotent).
        text = unicodedata.normalize("NFKC", text).casefold()
        for _ in range(3):
            if unicodedata.is_normalized("NFKC", text):
                break
            text = unicodedata.normalize("NFKC", text).casefold()
    if mask_digits:
        text = _DIGIT_RE.sub("0", text)
    # Fold whitespace unless the text is already folded (the usual case for extracted text):
    # a printable string holds no whitespace other than the ASCII space.
    if not text.isprintable() or "  " in text or text[:1] == " " or text[-1:] == " ":
        text = " ".join(text.split())
    return text


def tokenize(normalized: str) -> list[str]:
    """Split normalised text into word tokens (Unicode ``\\w+`` runs)."""
    return _WORD_RE.findall(normalized)


def char_tokens(normalized: str) -> list[str]:
    """Split normalised text into its non-whitespace characters (for CJK and similar scripts)."""
    return _NONSPACE_RE.findall(normalized)
