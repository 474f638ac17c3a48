"""The extraction that follows the parser's events (``Extractor.extract_html``, the worker's pass)
gives what the tree walk gives on lxml's tree of the same document (``Extractor.extract``)."""

from __future__ import annotations

import gzip
import itertools
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from neardup_scrapy.core.analysis import PageAnalyzer
from neardup_scrapy.core.native.extract import Extractor
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.sketch import Sketch
from neardup_scrapy.core.text import parse_html, parse_utf8, utf8_document

Result = tuple[str, str, str, str, str]


def both(doc: str | bytes, max_chars: int = 500_000) -> tuple[Result | None, Result]:
    """``(tree walk, event walk)`` of one document (the tree walk ``None`` when lxml finds no
    element at all)."""
    data = utf8_document(doc)
    assert data is not None
    extractor = Extractor()
    root = parse_utf8(data)
    from_tree = extractor.extract(root, max_chars) if root is not None else None
    return from_tree, extractor.extract_html(data, max_chars)


def assert_same(doc: str | bytes, max_chars: int = 500_000) -> Result:
    from_tree, from_events = both(doc, max_chars)
    assert from_events[0] != "fallback", doc
    assert from_events == from_tree
    return from_events


# ----------------------------------------------------------------------------------------------
# documents built from a grammar of the markup the extractor reads

TAGS = [
    "div",
    "p",
    "span",
    "a",
    "main",
    "article",
    "section",
    "nav",
    "aside",
    "header",
    "footer",
    "h1",
    "h2",
    "h3",
    "ul",
    "li",
    "table",
    "tr",
    "td",
    "pre",
    "code",
    "script",
    "style",
    "xmp",
    "template",
    "svg",
    "title",
    "link",
    "iframe",
    "noscript",
    "form",
    "figure",
    "figcaption",
    "b",
    "i",
    "select",
    "option",
    "textarea",
    "dialog",
    "menu",
    "blockquote",
    "br",
    "img",
    "body",
    "head",
    "html",
]
WORDS = [
    "content",
    "sidebar",
    "nav",
    "share",
    "post",
    "title",
    "menu",
    "header",
    "entry-title",
    "page-header",
    "related",
    "footer",
    "article-body",
    "toc",
    "comments",
    "ad-slot",
]
ATTRIBUTES = st.sampled_from(
    [f"class='{w}'" for w in WORDS]
    + [f"id='{w}'" for w in WORDS[:6]]
    + [
        "role='main'",
        "role='navigation'",
        "role='dialog'",
        "hidden",
        "style='display: none'",
        "style='color:red'",
        "aria-hidden='true'",
        "aria-hidden=false",
        "href='/x'",
        "href='#top'",
        "href",
        "rel='next'",
        "rel='canonical'",
        "rel='prev nofollow'",
        "rel=up",
        "class",
        "class='a &amp; b'",
        "data-x='<p>'",
    ]
)
TEXTS = st.one_of(
    st.sampled_from(
        [
            "The committee met on Tuesday to discuss the bridge. ",
            "  \n  ",
            " ",
            "x",
            "&amp; &lt;p&gt; &nbsp;",
            "日本語のテキストです。",
            "Größe 42 € ",
            "&#0;",
            "&bogus;",
            "<!-- a comment -->",
            "<![CDATA[ raw ]]>",
            "<?pi x?>",
            "\x00",
            "T",
        ]
    ),
    st.text(max_size=20),
)


def _element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    def render(tag: str, attrs: list[str], inner: list[str], closed: bool) -> str:
        opening = "<" + " ".join([tag, *attrs]) + ">"
        return opening + "".join(inner) + (f"</{tag}>" if closed else "")

    return st.builds(
        render,
        st.sampled_from(TAGS),
        st.lists(ATTRIBUTES, max_size=3),
        st.lists(children, max_size=5),
        st.booleans() | st.just(True),
    )


FRAGMENT = st.recursive(TEXTS, _element, max_leaves=40)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A document: an optional doctype, ``<html>``, ``<head>`` and ``<body>`` around fragments,
    with stray end tags now and then."""
    head = draw(st.lists(FRAGMENT, max_size=3).map("".join))
    body = draw(st.lists(FRAGMENT | st.sampled_from(["</div>", "</body>", "</html>", "</p>"]), max_size=6))
    parts = [draw(st.sampled_from(["", "<!DOCTYPE html>"]))]
    if draw(st.booleans()):
        parts.append(f"<html><head>{head}</head>")
    parts.append(draw(st.sampled_from(["<body>", "<body class='content'>", "", "<body hidden>"])))
    parts.extend(body)
    parts.append(draw(st.sampled_from(["", "</body></html>", "</body></html><p>after the end</p>"])))
    return "".join(parts)


@given(documents())
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_event_walk_gives_the_tree_walks_result(doc: str) -> None:
    assume(utf8_document(doc) is not None)
    from_tree, from_events = both(doc)
    if from_events[0] == "fallback":
        # only a document lxml gives no <body> goes to the tree
        root = parse_utf8(utf8_document(doc) or b"")
        assert root is None or root.find("body") is None
    else:
        assert from_events == from_tree


@given(documents(), st.integers(1, 200))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_cut_at_max_chars_is_the_same(doc: str, max_chars: int) -> None:
    assume(utf8_document(doc) is not None)
    from_tree, from_events = both(doc, max_chars)
    assert from_events[0] == "fallback" or from_events == from_tree


# ----------------------------------------------------------------------------------------------
# the parts of a page the events carry differently from a tree


def test_head_title_links_and_the_title_moved_into_the_body() -> None:
    head = "<title>Head title</title><link rel=canonical href='https://a.example/x'><link rel=next href=/p2>"
    status, text, _heading, title, canonical = assert_same(
        f"<html><head>{head}</head><body><p>First paragraph of text.</p>"
        "<a href=/p2>Next page</a></body></html>"
    )
    assert (status, title, canonical) == ("ok", "Head title", "https://a.example/x")
    assert "Next page" not in text  # the head's rel=next makes the pager navigation
    # a <title> after body content: the parser puts it in the body, where it is still the title
    assert (
        assert_same("<p>Some text first.</p><title>Late title</title><p>More text after it.</p>")[3]
        == "Late title"
    )


def test_hidden_subtrees_and_the_elements_inside_them_are_skipped() -> None:
    result = assert_same(
        "<html><body><div hidden><title>Not it</title><p>hidden text</p><div><p>deeper</p></div></div>"
        "<p style='display:none'>styled away</p><p>Visible text of the page.</p>"
        "<script>var x</script></body></html>"
    )
    assert result[1] == "Visible text of the page."
    assert result[3] == ""


def test_whitespace_between_inline_and_block_elements_is_kept_as_in_the_tree() -> None:
    for doc in (
        "<p><b>one</b> <i>two</i></p>\n<p>three</p>",
        "<div>\n  <span>a</span>\n  <span>b</span>\n</div>",
        "<ul> <li>x</li> <li>y</li> </ul>",
        "<table> <tr> <td>1</td> <td>2</td> </tr> </table>",
    ):
        assert_same(doc)


@pytest.mark.parametrize("body", ["<body><p>Text of the page itself.</p></body>", "<body></body>", ""])
def test_what_follows_the_end_of_html_is_not_the_pages(body: str) -> None:
    """libxml2 opens a second ``<html>`` for markup after ``</html>``; lxml's root is the first
    (without a ``<body>`` of its own, the tree walk reads it)."""
    doc = f"<html><head><title>T</title></head>{body}</html><p>after the end</p>"
    from_tree, from_events = both(doc)
    assert from_tree is not None
    assert "after the end" not in from_tree[1]
    if body:
        assert from_events == from_tree
    else:
        assert from_events[0] == "fallback"


def test_raw_text_elements_and_entities() -> None:
    assert_same(
        "<xmp><b>shown as text</b></xmp><p>caf&eacute; &amp; cr&egrave;me &#x41;</p><textarea>no</textarea>"
    )


@pytest.mark.parametrize(
    "doc",
    [
        "<html><head><title>Only a head</title></head></html>",
        "<html><frameset><frame src='a.html'></frameset></html>",
        "<title>x</title>",
    ],
)
def test_documents_without_a_body_go_to_the_tree_walk(doc: str) -> None:
    from_tree, from_events = both(doc)
    assert from_events[0] == "fallback"
    assert from_tree is None or from_tree[0] in ("ok", "empty")


def test_documents_nested_nearly_as_deep_as_lxml_trees_go_go_to_the_tree_walk() -> None:
    """lxml's tree stops at depth 2,048 (the tree walk then flattens the markup and parses
    again): near that depth the events give way, so a page reads the same every way."""
    shallow = "<div><span>x</span>" * 1_000 + "deep text here" + "</div>" * 1_000
    assert_same(shallow)
    deep = "<div><span>x</span>" * 3_000 + "deep text here" + "</div>" * 3_000 + "<p>and the rest</p>"
    assert both(deep)[1][0] == "fallback"
    analyze = PageAnalyzer(DetectorParams())
    from_html = analyze("https://a.example/deep", deep.encode())
    from_tree = analyze("https://a.example/deep", tree=parse_html(deep))
    assert from_html.sketch is not None and from_tree.sketch is not None
    assert "deep text here" in from_html.excerpt
    assert _fields(from_html.sketch) == _fields(from_tree.sketch)


def test_a_deadline_stops_the_parse_and_the_next_page_is_read_whole() -> None:
    extractor = Extractor()
    big = ("<p>" + "word " * 50 + "</p>") * 200_000
    assert extractor.extract_html(big.encode(), timeout=1e-6)[0] == "timeout"
    assert extractor.extract_html(b"<p>A small page after the big one.</p>")[:2] == (
        "ok",
        "A small page after the big one.",
    )


def test_one_extractor_reads_many_documents_as_fresh_ones_would() -> None:
    docs = [
        "<html><head><title>One</title></head><body><main><p>First document text.</p></main></body></html>",
        "<p>Second document, no head at all.</p>",
        "<html><head><title>Only a head</title></head></html>",
        "<body><article><h1>Third</h1><p>Third document text.</p></article></body>",
    ]
    shared = Extractor()
    for doc in docs * 2:
        data = utf8_document(doc)
        assert data is not None
        assert shared.extract_html(data) == Extractor().extract_html(data)


def test_a_parse_stopped_early_on_the_documents_that_renew_the_parser() -> None:
    """Every way a parse ends (whole, stopped after ``</html>``, stopped at a deadline, given
    to the tree) on every count of documents, past the renewal of the parser context."""
    after = utf8_document("<body><p>The page itself.</p></body></html><p>after the end</p>")
    whole = utf8_document("<body><p>A whole page.</p></body>")
    headless = utf8_document("<html><head><title>Only a head</title></head></html>")
    assert after is not None and whole is not None and headless is not None
    extractor = Extractor()
    for n in range(2_600):
        data = (after, whole, headless)[n % 3]
        assert extractor.extract_html(data)[0] == ("ok", "ok", "fallback")[n % 3]
    assert extractor.extract_html(after)[1] == "The page itself."


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc")
def test_names_pages_invent_do_not_pile_up_in_the_parser() -> None:
    """libxml2 interns every tag and attribute name for as long as a parser context lives: with
    one context for every page, 200k pages of unique names held ~15 MB more at the end."""
    extractor = Extractor()
    for n in range(2_000):  # warm up: buffers at their working size
        extractor.extract_html(f"<p x{n}=1>warm {n}</p>".encode())
    before = _resident_bytes()
    for n in range(200_000):
        page = f"<body><x-tag{n} data-a{n}='v'><p>text {n}</p></x-tag{n}></body>"
        assert extractor.extract_html(page.encode())[0] == "ok"
    assert _resident_bytes() - before < 6_000_000


# ----------------------------------------------------------------------------------------------
# the analyzer: the worker's HTML goes through the events, a parsed tree through the walk


def test_the_analyzer_gives_the_same_sketch_from_html_and_from_its_tree() -> None:
    analyze = PageAnalyzer(DetectorParams())
    html = (
        "<html><head><title>Bridge report</title></head><body><nav><a href=/>Home</a></nav>"
        "<article><h1>Bridge report</h1>"
        + "<p>The committee met on Tuesday, 12 May, about the bridge.</p>"
        * 5
    ).encode()
    from_html = analyze("https://a.example/r", html)
    from_tree = analyze("https://a.example/r", tree=parse_html(html))
    assert from_html.sketch is not None and from_tree.sketch is not None
    assert (from_html.host, from_html.excerpt) == (from_tree.host, from_tree.excerpt)
    assert _fields(from_html.sketch) == _fields(from_tree.sketch)


def _fields(sketch: Sketch) -> tuple[object, ...]:
    return (
        sketch.tokens,
        sketch.digest,
        sketch.signature.tobytes(),
        sketch.stored.tobytes(),
        sketch.simhash,
        sketch.keys.tobytes(),
        sketch.bands,
        sketch.profile,
        sketch.canonical,
    )


# ----------------------------------------------------------------------------------------------
# real pages: both labelled sets, every page


def _pages(path: Path) -> list[str]:
    with gzip.open(path / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [json.loads(line)["html"] for line in lines]


@pytest.mark.evaldev
def test_every_page_of_both_labelled_sets_extracts_the_same(eval_dev: Path, eval_docs: Path) -> None:
    extractor = Extractor()
    differ = []
    fallbacks = 0
    pages = itertools.chain(_pages(eval_dev), _pages(eval_docs))
    for number, html in enumerate(pages):
        data = utf8_document(html)
        if data is None:
            continue
        from_events = extractor.extract_html(data)
        if from_events[0] == "fallback":
            fallbacks += 1
            continue
        root = parse_utf8(data)
        if root is None or extractor.extract(root) != from_events:
            differ.append(number)
    assert differ == []
    assert fallbacks == 0


@pytest.mark.parametrize("extra", [-3, -1, 0, 1, 2])
def test_one_depth_rule_for_the_events_and_the_tree(extra: int) -> None:
    """The walk of the parser's events gives way to the tree exactly where the tree reaches
    libxml2's depth (``MAX_DEPTH``), the depth at which the tree is read flattened."""
    from lxml import etree

    from neardup_scrapy.core.reading import MAX_DEPTH, reaches_depth_limit

    divs = MAX_DEPTH - 2 + extra  # inside <html> and <body>
    data = ("<html><body>" + "<div>" * divs + "deep words").encode()
    to_tree = Extractor().extract_html(data)[0] == "fallback"
    root = etree.fromstring(data, etree.HTMLParser(encoding="utf-8", huge_tree=True))
    assert reaches_depth_limit(root) == to_tree == (divs + 2 >= MAX_DEPTH)
    if to_tree:  # read flattened, the text is all there
        assert "deep words" in Extractor().extract(parse_utf8(data))[1]
