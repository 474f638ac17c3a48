"""Tests for neardup_scrapy.core.text: parsing and main-content extraction (the compiled extractor)."""

from __future__ import annotations

import codecs
import collections
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from lxml import html as lxml_html

from neardup_scrapy.core import text as T
from neardup_scrapy.core.native.tokens import Tokenizer
from neardup_scrapy.core.text import extract_main_text, html_to_text, parse_html

# ----------------------------------------------------------------------------------------------
# helpers

LOREM = (
    "The committee met on Tuesday to discuss the proposal for the new river bridge, which "
    "residents have requested for many years because the old crossing is narrow and slow. "
)


def prose(n: int, seed: str = "") -> str:
    """``n`` distinct sentences (so shingles differ between calls with different seeds)."""
    return " ".join(f"{seed} sentence {i} says {LOREM}" for i in range(n))


def page(body: str, head: str = "<title>T</title>") -> str:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>"


CHROME = (
    "<header><a href='/'>Home</a> <a href='/news'>News</a> <a href='/about'>About us</a></header>"
    "<nav><ul><li><a href='/a'>Menu entry alpha</a></li><li><a href='/b'>Menu entry beta</a></li></ul></nav>"
    "<div class='sidebar'><p>Sidebar teaser about an unrelated topic with enough words to be prose.</p></div>"
    "<footer><p>Copyright notice and imprint of the publishing house, all rights reserved.</p></footer>"
)


def serialize(root: etree._Element) -> bytes:
    return etree.tostring(root.getroottree())


# ----------------------------------------------------------------------------------------------
# parse_html: nasty inputs


def nasty_inputs() -> list[tuple[str, bytes | str]]:
    deep = "<div>" * 12_000 + "deep text here" + "</div>" * 12_000
    big_para = "<p>" + ("word " * 200) + "</p>"
    return [
        ("empty bytes", b""),
        ("empty str", ""),
        ("whitespace", b" \n\t  "),
        ("binary junk", bytes(range(256)) * 40),
        ("nul bytes", b"<html><body><p>a\x00b\x00c " + b"x" * 50 + b"</p>\x00</body></html>"),
        ("only nul", b"\x00" * 100),
        (
            "xml decl str",
            '<?xml version="1.0" encoding="iso-8859-1"?><html><body><p>caf\xe9 ok</p></body></html>',
        ),
        ("xml decl bytes", b'<?xml version="1.0" encoding="utf-8"?><html><body><p>plain</p></body></html>'),
        (
            "xhtml",
            '<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
            '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"><html xmlns="http://www.w3.org/1999/xhtml">'
            "<head><title>x</title></head><body><p>xhtml body text</p></body></html>",
        ),
        ("broken markup", b"<html><body><div><p>unclosed <b>bold <i>italic</div></span></table><p>next"),
        ("comments only", b"<!-- just a comment --><!-- another -->"),
        ("pi only", b"<?php echo 1; ?>"),
        ("comments and pis", b"<html><!-- c --><?pi x?><body><!-- c2 -->text<?pi y?> after</body></html>"),
        ("doctype only", b"<!DOCTYPE html>"),
        ("deep nesting", deep.encode()),
        ("deep nesting str", deep),
        ("20 MB", page(big_para * 20_000).encode()),
        ("unknown charset", b'<meta charset="no-such-charset"><p>hello</p>'),
        ("latin1 declared", '<meta charset="iso-8859-1"><p>caf\xe9 cr\xe8me</p>'.encode("latin-1")),
        ("utf8 declared, latin1 bytes", '<meta charset="utf-8"><p>caf\xe9</p>'.encode("latin-1")),
        ("utf16 bom", codecs.BOM_UTF16_LE + "<p>utf sixteen text</p>".encode("utf-16-le")),
        ("declared utf16 without bom", b'<meta charset="utf-16"><p>ascii really</p>'),
        ("lone surrogate str", "<p>bad \ud800 surrogate</p>"),
        ("script only", b"<script>var x = '<p>not text</p>';</script>"),
        ("cdata", b"<html><body><![CDATA[ weird ]]><p>after cdata</p></body></html>"),
        ("frameset", b"<html><frameset><frame src='a.html'></frameset></html>"),
    ]


@pytest.mark.parametrize(("name", "data"), nasty_inputs(), ids=[n for n, _ in nasty_inputs()])
def test_nasty_inputs_never_raise(name: str, data: bytes | str) -> None:
    root = parse_html(data)
    text = html_to_text(data)
    assert isinstance(text, str)
    if root is not None:
        before = serialize(root)
        result = T.extract(root)
        assert result.status in ("ok", "empty")
        assert result.text == extract_main_text(root)
        assert serialize(root) == before


@pytest.mark.parametrize("data", [b"", b"   \n", "", "<!-- only a comment -->", b"<?xml version='1.0'?>"])
def test_parse_html_returns_none_when_nothing_to_parse(data: bytes | str) -> None:
    assert parse_html(data) is None
    assert html_to_text(data) == ""


def test_parse_html_returns_html_element() -> None:
    root = parse_html(b"<p>hello</p>")
    assert isinstance(root, lxml_html.HtmlElement)
    assert root.tag == "html"


def test_xml_declaration_on_str_input() -> None:
    doc = '<?xml version="1.0" encoding="iso-8859-1"?><html><body><p>caf\xe9 au lait</p></body></html>'
    with pytest.raises(ValueError, match="encoding declaration"):
        lxml_html.document_fromstring(doc)  # what plain lxml does
    assert "café au lait" in html_to_text(doc)


def test_charset_resolution() -> None:
    latin = '<meta charset="iso-8859-1"><p>caf\xe9 cr\xe8me br\xfbl\xe9e</p>'.encode("latin-1")
    assert "café crème brûlée" in html_to_text(latin)
    # the transport encoding wins over <meta>
    cp1251 = '<meta charset="utf-8"><p>\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440</p>'.encode(
        "cp1251"
    )
    assert "Привет мир" in html_to_text(cp1251, encoding="windows-1251")
    # a BOM wins over everything
    bom = codecs.BOM_UTF8 + '<meta charset="latin-1"><p>na\xefve</p>'.encode()
    assert "naïve" in html_to_text(bom, encoding="latin-1")
    # invalid UTF-8 becomes U+FFFD instead of failing
    assert "caf\ufffd" in html_to_text(b"<p>caf\xe9</p>")
    # unknown names are ignored
    assert "hello" in html_to_text(b"<p>hello</p>", encoding="x-nonsense")


def test_utf8_bytes_under_a_legacy_label_are_utf8() -> None:
    """Valid UTF-8 with non-ASCII bytes is read as UTF-8 whatever the label says; bytes that are
    not valid UTF-8 keep the label's charset."""
    relabelled = '<meta charset="iso-8859-1"><p>Gebühren für Straßen</p>'.encode()
    assert "Gebühren für Straßen" in html_to_text(relabelled)
    assert "Gebühren für Straßen" in html_to_text(relabelled, encoding="windows-1252")
    gbk_label = '<meta charset="gb2312"><p>中文文本</p>'.encode()
    assert "中文文本" in html_to_text(gbk_label)
    real_gbk = '<meta charset="gb2312"><p>中文文本</p>'.encode("gb18030")
    assert "中文文本" in html_to_text(real_gbk)
    real_latin = '<meta charset="iso-8859-1"><p>Gebühren für Straßen</p>'.encode("latin-1")
    assert "Gebühren für Straßen" in html_to_text(real_latin)
    # a 7-bit charset has no non-ASCII bytes: its label is kept
    jis = '<meta charset="iso-2022-jp"><p>日本語</p>'.encode("iso-2022-jp")
    assert "日本語" in html_to_text(jis)


def test_deep_nesting_keeps_text() -> None:
    deep = "<div>" * 12_000 + "<p>" + prose(3) + "</p>" + "</div>" * 12_000
    assert "committee" in html_to_text(deep)


# ----------------------------------------------------------------------------------------------
# extraction behaviour on small handcrafted pages


def test_chrome_removed() -> None:
    doc = page(CHROME + f"<div class='content'><p>{prose(3)}</p><p>{prose(2, 'b')}</p></div>")
    text = html_to_text(doc)
    assert "committee" in text
    for chrome in ("Menu entry", "Sidebar teaser", "Copyright notice", "About us"):
        assert chrome not in text


def test_hidden_and_aria_hidden_removed() -> None:
    doc = page(
        f"<div class='story'><p>{prose(4)}</p>"
        "<p style='display: none'>invisible paragraph one with plenty of hidden words inside</p>"
        "<div hidden><p>invisible paragraph two with plenty of hidden words inside it</p></div>"
        "<div aria-hidden='true'>invisible three</div>"
        "<div style='VISIBILITY:hidden'>invisible four</div>"
        "<script>document.write('script text')</script><style>p{color:red}</style>"
        "<noscript>enable javascript please</noscript></div>"
    )
    text = html_to_text(doc)
    assert "committee" in text
    for hidden in ("invisible", "script text", "color:red", "enable javascript"):
        assert hidden not in text


def test_article_preferred_over_bigger_side_block() -> None:
    doc = page(
        "<div class='main-column'><article><h1>Headline of the story</h1>"
        f"<p>{prose(4)}</p><ul><li>first list point of the article</li></ul></article></div>"
        f"<aside><p>{prose(2, 'aside')}</p></aside>"
    )
    text = html_to_text(doc)
    assert text.startswith("Headline of the story")
    assert "first list point" in text
    assert "aside sentence" not in text


def test_main_element_is_the_content_whatever_its_classes() -> None:
    """A <main> (or role=main) holding a fair share of the page is its content, with the title,
    lists and code blocks around the paragraphs (HTML: the dominant contents of the body)."""
    menu = "".join(f"<li><a href='/{i}'>Section {i} of the manual</a></li>" for i in range(40))
    doc = page(
        f"<nav><ul>{menu}</ul></nav>"
        "<div class='layout-with-sidebar'><div role='main' class='box modal-enabled'>"
        "<h1>open(2)</h1><pre>int open(const char *path, int flags);</pre>"
        f"<p>{prose(2)}</p><ul><li>O_RDONLY opens for reading</li></ul></div></div>"
    )
    text = html_to_text(doc)
    assert text.startswith("open(2)")
    assert "int open(const char *path" in text
    assert "O_RDONLY opens for reading" in text
    assert "Section 3 of the manual" not in text


def test_layout_words_are_document_parts_inside_a_section() -> None:
    """'sidebar', 'header' or 'toc' name page regions outside sectioning content, but document
    parts inside it: a DocBook sidebar note and an article's header with its title stay."""
    doc = page(
        "<div class='sidebar'><p>Site sidebar teaser with some words in it for the reader.</p></div>"
        "<article><div class='header'><h1>The article title</h1></div>"
        f"<p>{prose(3)}</p><div class='sidebar'><p>Note: a boxed remark inside the text.</p></div></article>"
    )
    text = html_to_text(doc)
    assert text.startswith("The article title")
    assert "a boxed remark inside the text" in text
    assert "Site sidebar teaser" not in text


def test_title_heading_stays_with_the_text_it_introduces() -> None:
    """When the page's title heading sits beside the text's block (a generated reference page
    with the title in a block of its own), the container keeps both (a page without ``<h1>`` is
    also named by its ``<title>``)."""
    doc = page(
        "<div id='doc'><div class='summary'><h2>Foo::Bar Class Reference</h2></div>"
        f"<div class='contents'><p>{prose(4)}</p></div></div>",
        head="<title>project: Foo::Bar Class Reference</title>",
    )
    text = html_to_text(doc)
    assert "Foo::Bar Class Reference sentence 0 says The committee" in text


def test_list_of_articles_beside_the_page_article_is_left_out() -> None:
    teasers = "".join(f"<article class='teaser'><p>{prose(1, f'teaser{i}')}</p></article>" for i in range(6))
    doc = page(
        f"<div id='primary'><article><h1>The post</h1><p>{prose(3)}</p></article>"
        f"<article class='more'>{teasers}</article></div>",
        head="<title>The post - Blog</title>",
    )
    text = html_to_text(doc)
    assert text.startswith("The post")
    assert "committee" in text
    assert "teaser3" not in text


def test_related_items_named_as_such_are_left_out() -> None:
    teasers = "".join(f"<article class='teaser'><p>{prose(1, f'teaser{i}')}</p></article>" for i in range(4))
    related = f"<section class='related'>{teasers}</section>"
    doc = page(f"<main><article class='post'><p>{prose(6)}</p></article>{related}</main>")
    text = html_to_text(doc)
    assert "committee" in text
    assert "teaser3" not in text


@pytest.mark.parametrize(
    "aside",
    [
        '<figure><img src="x.jpg"><figcaption>A crowd at the bridge. Photo: Jane Roe</figcaption></figure>',
        '<div class="wp-caption"><p class="wp-caption-text">A crowd at the bridge</p></div>',
        '<div class="photo-credits">Photo: Jane Roe for the Daily</div>',
        '<p class="post-author">By Jane Roe, 24 November 2026, 10:43</p>',
        '<div class="articleByline">By Jane Roe, staff writer</div>',
        '<span class="hidden">structured data for machines 540 960 admin</span>',
        '<div class="visually-hidden">Skip to the comments section</div>',
    ],
    ids=["figcaption", "caption-class", "credit", "author", "byline", "hidden", "visually-hidden"],
)
def test_media_captions_bylines_and_hidden_text_are_not_the_text(aside: str) -> None:
    """A copy of an article rarely keeps its captions, byline or CSS-hidden text: they are chrome."""
    body = f"<article><h1>Bridge</h1>{aside}<p>{prose(6)}</p></article>"
    text = html_to_text(page(body))
    assert "sentence 5 says" in text
    for word in ("crowd", "Roe", "structured", "Skip"):
        assert word not in text, (word, text[:200])


def test_entries_marked_as_articles_are_the_content() -> None:
    """Reference pages that mark each entry as an <article> keep them all."""
    entries = "".join(
        f"<article><h3>func{i}/1</h3><p>{prose(1, f'entry{i}')}</p></article>" for i in range(8)
    )
    modules = "".join(f"<li><a href='/m{i}'>module {i}</a></li>" for i in range(60))
    doc = page(
        f"<aside><ul>{modules}</ul></aside>"
        f"<div id='content'><h1>mymod</h1><p>{prose(1, 'summary')}</p>"
        f"<div class='functions'>{entries}</div></div>",
        head="<title>Docs -- mymod</title>",
    )
    text = html_to_text(doc)
    assert text.startswith("mymod")
    for i in range(8):
        assert f"entry{i}" in text
    assert "module 7" not in text


def test_split_article_is_gathered() -> None:
    parts = "".join(
        f"<div class='body-part'><p>{prose(2, f'part{i}')}</p></div><div class='ad-slot'>Advertisement</div>"
        for i in range(4)
    )
    doc = page(CHROME + f"<section class='story-body'>{parts}</section>")
    text = html_to_text(doc)
    for i in range(4):
        assert f"part{i}" in text
    assert "Advertisement" not in text


def test_short_page_keeps_its_only_text() -> None:
    doc = page("<nav><a href='/'>Home</a></nav><div><span>Only a short caption here</span></div>")
    assert html_to_text(doc) == "T Only a short caption here"  # a page without <h1> is named by <title>


def test_blocks_are_not_glued() -> None:
    doc = page(
        "<div><h2>Title</h2><p>first</p><p>second</p><ul><li>alpha</li><li>beta</li></ul>"
        "<table><tr><td>cellone</td><td>celltwo</td></tr></table>line<br>break"
        f"<p>{prose(3)}</p></div>"
    )
    words = set(html_to_text(doc).split())
    for word in ("Title", "first", "second", "alpha", "beta", "cellone", "celltwo", "line", "break"):
        assert word in words


def test_inline_markup_does_not_split_words() -> None:
    doc = page(f"<div><p><b>W</b>ord and some<em>thing</em> else. {prose(3)}</p></div>")
    text = html_to_text(doc)
    assert "Word and something else." in text


def test_unclosed_header_does_not_hide_the_page() -> None:
    doc = page(f"<header id='branding'><h1>Site</h1><article><p>{prose(4)}</p></article>")
    assert "committee" in html_to_text(doc)


def test_whole_page_in_form_or_noscript_is_kept() -> None:
    assert "committee" in html_to_text(page(f"<form action='/x'><div><p>{prose(4)}</p></div></form>"))
    assert "committee" in html_to_text(page(f"<noscript><div id='x'></noscript><div><p>{prose(4)}</p></div>"))


def test_link_lists_removed_inside_content_but_kept_on_index_pages() -> None:
    links = "".join(f"<li><a href='/r{i}'>Related headline number {i} here</a></li>" for i in range(8))
    doc = page(f"<div class='entry'><p>{prose(4)}</p><ul>{links}</ul><p>{prose(1, 'end')}</p></div>")
    text = html_to_text(doc)
    assert "end sentence" in text
    assert "Related headline" not in text
    index = page(f"<div class='entry'><p>All pages:</p><ul>{links}</ul></div>")
    assert "Related headline number 7 here" in html_to_text(index)


def test_max_chars() -> None:
    doc = page(f"<div><p>{prose(50)}</p></div>")
    text = html_to_text(doc, max_chars=1000)
    assert 0 < len(text) <= 1000
    assert not text.endswith(" ")


def test_extract_reports_heading_title_and_canonical() -> None:
    doc = page(
        f"<main><h1>The <b>real</b> heading</h1><p>{prose(2)}</p></main>",
        head="<title>Page title | Site</title><link rel='canonical' href='https://origin.example/a'>",
    )
    result = T.extract(parse_html(doc))
    assert result.status == "ok"
    assert result.heading == "The real heading"
    assert result.title == "Page title | Site"
    assert result.canonical == "https://origin.example/a"


def test_extract_accepts_other_roots() -> None:
    root = parse_html(page(f"<div><p>{prose(3)}</p></div>"))
    assert root is not None
    expected = extract_main_text(root)
    assert extract_main_text(root.getroottree()) == expected
    assert "committee" in extract_main_text(root.find("body"))
    assert extract_main_text(None) == ""
    xml_root = etree.fromstring(
        f'<html xmlns="http://www.w3.org/1999/xhtml"><body><div><p>{prose(3)}</p></div></body></html>'.encode()
    )
    assert "committee" in extract_main_text(xml_root)


def test_extract_on_scrapy_like_tree_is_read_only() -> None:
    doc = page(CHROME + f"<main><p>{prose(3)}</p><!-- note --><p>tail <b>bold</b> end</p></main>")
    root = lxml_html.document_fromstring(doc)  # not our parser, like Scrapy's selector root
    before = serialize(root)
    assert "committee" in extract_main_text(root)
    assert serialize(root) == before


def test_render_drops_code_comments_and_chrome_but_keeps_order() -> None:
    block = (
        "<div><h2>Head<b>line</b></h2><p>glued<!-- c -->word and<script>x()</script>more</p>"
        "<p>kept<span>inline</span>text<br>after break</p>"
        "<div class='share-buttons'>Share this</div>tail of share"
        "<ul><li><a href='/1'>Link one</a></li><li><a href='/2'>Link two</a></li>"
        "<li><a href='/3'>Link three</a></li></ul>"
        "<ul><li>Plain item one</li><li>Plain item two</li></ul>"
        f"<p>{prose(2)}</p></div>"
    )
    for root in (parse_html(page(block)), lxml_html.document_fromstring(page(block))):
        assert root is not None
        before = serialize(root)
        text = extract_main_text(root)
        assert serialize(root) == before  # read-only
        expected = "Headline gluedword andmore keptinlinetext after break tail of share Plain item one"
        assert expected in text
        assert "Share this" not in text
        assert "Link one" not in text
        assert "committee" in text


def test_pathological_markup_is_linear_and_bounded_in_time() -> None:
    """Markup that made the old extractor quadratic costs one walk now, and a deadline ends a
    pass that takes too long."""
    many = page("<p>a b</p>" * 65_536)
    nested = page("<p><i><x>" * 2_100 + "deep text")
    for doc in (many, nested):
        root = parse_html(doc)
        started = time.monotonic()
        result = T.extract(root)
        assert time.monotonic() - started < 5.0  # generous: the point is "not minutes"
        assert result.status == "ok"
    assert "deep text" in T.extract(parse_html(nested)).text
    assert T.extract(parse_html(many), timeout=1e-9).status == "timeout"


# ----------------------------------------------------------------------------------------------
# property tests on arbitrary input

FRAGMENTS = [
    "<p>", "</p>", "<div>", "</div>", "<div class='sidebar'>", "<div class='content'>", "<article>",
    "</article>", "<main>", "<nav>", "</nav>", "<header>", "<footer>", "<aside>", "<ul><li>", "</li></ul>",
    "<a href='/x'>", "</a>", "<b>", "</b>", "<br>", "<script>", "</script>", "<style>", "<!--", "-->",
    "<?pi x?>", "<![CDATA[", "]]>", "<table><tr><td>", "</td></tr></table>", "<span hidden>", "</span>",
    "<div style='display:none'>", "<h1>", "</h1>", "<form>", "</form>", "<noscript>", "<svg><text>",
    "&amp;", "&nbsp;", "&#0;", "&bogus;", "<meta charset='latin-1'>",
    "<?xml version='1.0' encoding='utf-8'?>",
    "<html xmlns='http://www.w3.org/1999/xhtml'>", "<body>", "</body>", "\x00", "\ufeff", LOREM,
]  # fmt: skip

html_like = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=60).map("".join)


@given(st.binary(max_size=3000))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_never_raises_on_arbitrary_bytes(data: bytes) -> None:
    assert isinstance(html_to_text(data), str)
    assert isinstance(html_to_text(data, encoding="utf-16"), str)


@given(html_like, st.sampled_from([None, "utf-8", "latin-1", "shift_jis", "bogus"]))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_never_raises_and_never_modifies_root(doc: str, encoding: str | None) -> None:
    for data in (doc, doc.encode("utf-8", "surrogatepass")):
        root = parse_html(data, encoding)
        if root is None:
            assert html_to_text(data, encoding) == ""
            continue
        before = serialize(root)
        text = extract_main_text(root, 1000)
        assert len(text) <= 1000
        assert text == " ".join(text.split(" "))  # ASCII whitespace folded
        assert not any(c in text for c in "\t\n\r\f\v")
        assert serialize(root) == before


# ----------------------------------------------------------------------------------------------
# eval-dev quality floor: exact Jaccard over 5-word shingles of the extracted text


def _shingles(tokens: list[int]) -> set[tuple[int, ...]]:
    if len(tokens) < 5:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + 5]) for i in range(len(tokens) - 4)}


@pytest.mark.evaldev
def test_eval_dev_exact_jaccard_quality(eval_dev: Path, tmp_path: Path) -> None:
    """Cluster eval-dev with exact J >= 0.8 over our extraction; the floors are measured values
    (F1 0.970, P 0.999; template mirrors 0.81 / 0.98 / 0.93, print 0.84 at the time of writing)
    minus a margin. The detector's own figures, with its full rule, are in test_core_accuracy."""
    with gzip.open(eval_dev / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        pages = [json.loads(line) for line in f]
    tokenizer = Tokenizer(1)
    tokens = [
        np.frombuffer(tokenizer.hashes(html_to_text(p["html"].encode("utf-8"))), dtype="<u8").tolist()
        for p in pages
    ]
    sets = [_shingles(t) for t in tokens]
    index: dict[tuple[int, ...], list[int]] = collections.defaultdict(list)
    exact: dict[tuple[int, ...], int] = {}
    dup: list[int | None] = [None] * len(pages)
    for i, (toks, sh) in enumerate(zip(tokens, sets, strict=True)):
        if len(toks) < 20:  # short texts only match identical text
            key = tuple(toks)
            if toks and key in exact:
                dup[i] = exact[key]
            exact.setdefault(key, i)
            continue
        common: collections.Counter[int] = collections.Counter()
        for s in sh:
            common.update(index[s])
        best = max(
            ((c / (len(sh) + len(sets[j]) - c), j) for j, c in common.items()),
            default=(0.0, -1),
        )
        if best[0] >= 0.8:
            dup[i] = best[1]
        for s in sh:
            index[s].append(i)
    preds = tmp_path / "preds.jsonl"
    with preds.open("w") as out:
        for i, p in enumerate(pages):
            d = dup[i]
            out.write(
                json.dumps({"url": p["url"], "duplicate_of": pages[d]["url"] if d is not None else None})
            )
            out.write("\n")
    result = tmp_path / "score.json"
    subprocess.run(
        [
            sys.executable,
            str(eval_dev / "score.py"),
            str(eval_dev / "truth.json"),
            str(preds),
            "--json",
            str(result),
        ],
        check=True,
        capture_output=True,
    )
    scores = json.loads(result.read_text())
    pairs = scores["source_pairs"]
    assert pairs["f1"] >= 0.96, pairs
    assert pairs["precision"] >= 0.99, pairs
    kinds = scores["recall_by_kind"]
    floors = {
        "template_mirror:article": 0.78,
        "template_mirror:main": 0.94,
        "template_mirror:reader": 0.89,
        "variant:print": 0.8,
    }
    for kind, floor in floors.items():
        assert kinds[kind]["recall"] >= floor, (kind, kinds[kind])
    assert kinds["exact_mirror"]["recall"] == 1.0


_SPACED_UTF8 = st.text(alphabet=" \t\n\r\x0b\x0c\x00\x1fa~é中\U0001f310", max_size=100).map(str.encode)


@given(st.binary(max_size=200) | _SPACED_UTF8)
@settings(max_examples=400, deadline=None)
def test_visible_characters_counted_eight_bytes_at_a_time(data: bytes) -> None:
    """The word-at-a-time count of visible characters equals counting byte by byte."""
    from neardup_scrapy.core.native.extract import count_chars

    expected = sum(1 for b in data if (b & 0xC0) != 0x80 and b not in b" \t\n\r\x0b\x0c")
    assert count_chars(data) == expected


def test_title_and_canonical_moved_into_the_body_by_the_parser_are_still_the_pages() -> None:
    """libxml2 opens <body> at the first element a <head> may not hold, and puts the <title> and
    links after it there: they still name the document. An inline SVG's <title> does not."""
    doc = (
        "<html><head><meta charset='utf-8'><div>consent banner</div>"
        "<title>Moved title | Site</title><link rel='canonical' href='https://origin.example/m'>"
        "</head><body><svg><title>Logo</title></svg>"
        f"<article><h1>Heading</h1><p>{prose(2)}</p></article></body></html>"
    )
    result = T.extract(parse_html(doc))
    assert result.title == "Moved title | Site"
    assert result.canonical == "https://origin.example/m"
    svg_first = page(f"<svg><title>Logo</title></svg><p>{prose(2)}</p>", head="")
    assert T.extract(parse_html(svg_first)).title == ""


def test_main_holding_the_text_outside_chrome_is_the_content_beside_a_large_footer() -> None:
    """A short reference page: its <main> holds a small share of all the characters (a long
    legal footer) but all of the text outside chrome; its own text beside the heading stays."""
    legal = " ".join(f"Legal clause {i} of the publisher applies to this documentation." for i in range(12))
    doc = page(
        "<header><nav><a href='/'>Overview</a> <a href='/m'>Module</a></nav></header>"
        "<main><div class='header'><h1>Uses of Class Widget</h1></div>No usage of Widget</main>"
        f"<footer><p>{legal}</p></footer>",
        head="<title>Uses of Class Widget</title>",
    )
    assert html_to_text(doc) == "Uses of Class Widget No usage of Widget"


def test_layout_table_holding_the_title_heading_is_descended() -> None:
    """A page laid out by a table (a link tree, the document, a side rail): the document's cell
    is the content, not the table; a data table is still content as a whole."""
    tree = "".join(f"<li><a href='/p{i}'>Other reference page number {i}</a></li>" for i in range(30))
    rail = "".join(f"<li><a href='/q{i}'>Popular question {i} asked here</a></li>" for i in range(8))
    doc = page(
        f"<table class='frame'><tr><td><ul>{tree}</ul></td>"
        f"<td><h1>Class Widget</h1><p>{prose(1, 'widget')}</p></td>"
        f"<td><div>{prose(1, 'rail')}</div><ol>{rail}</ol></td></tr></table>",
        head="<title>Class Widget</title>",
    )
    text = html_to_text(doc)
    assert text.startswith("Class Widget widget sentence 0")
    for aside in ("Other reference page", "rail sentence", "Popular question"):
        assert aside not in text
    rows = "".join(f"<tr><td>name{i}</td><td>value {i} of the data</td></tr>" for i in range(20))
    data = page(f"<h1>Values</h1><p>{prose(1)}</p><table>{rows}</table>")
    assert "value 19 of the data" in html_to_text(data)


def test_headed_sections_stay_together() -> None:
    """An index page: an introduction, then a heading and its short list. The heading makes
    its parent a document of sections, so the descent does not keep the introduction alone
    (which every index page of the site shares)."""
    intro = "Here is a list of all namespace members with links to the documentation of each member:"
    doc = page(
        f"<div class='contents'><div class='textblock'>{intro}</div>"
        "<h3>- z -</h3><ul><li>ZlibCompressorFormat : <a href='/gio'>Gio</a></li></ul></div>",
        head="<title>Namespace Members</title>",
    )
    text = html_to_text(doc)
    assert "ZlibCompressorFormat" in text and "Here is a list" in text


def test_ad_slots_and_widget_placeholders_lose_their_label() -> None:
    """A block that a script fills in the browser keeps only a label of its own ("Advert",
    "Loading..."); text with a script beside it in a block of real text stays."""
    slot = "<div class='q1x9'><center><span>Advert</span><br><script>fill()</script></center></div>"
    doc = page(
        f"<article><h1>Review</h1><p>{prose(2, 'one')}</p>{slot}<p>{prose(2, 'two')}</p>"
        f"<div>{prose(1, 'three')}<script>track()</script></div></article>"
    )
    text = html_to_text(doc)
    assert "Advert" not in text
    for kept in ("one sentence 1", "two sentence 0", "three sentence 0"):
        assert kept in text


def test_a_branch_of_any_copy_of_the_title_heading_alone_is_not_the_content() -> None:
    """The title repeated in a top bar and above a short text: the descent keeps the text
    beside the second copy too (a branch holding either copy alone is not the content)."""
    doc = page(
        "<div id='wrap'><div class='bar'><h1>EDoc User Guide</h1></div>"
        "<div id='content'><div class='inner'><center><h1>EDoc User Guide</h1></center>"
        "<center><h4>Version 1.2</h4></center><center><h4>May 3, 2026</h4></center></div></div></div>",
        head="<title>Erlang -- EDoc User Guide</title>",
    )
    text = html_to_text(doc)
    assert "Version 1.2" in text and "May 3, 2026" in text


def test_one_line_of_links_is_navigation_but_a_linked_heading_path_is_not() -> None:
    """A short block that is mostly links (categories, breadcrumbs) is not the text; a line
    of prose with a link and a heading naming the item by a linked path stay."""
    doc = page(
        "<div id='page'><div class='head'><h1>Struct <a href='/s'>core</a>::<a href='/t'>Cell</a></h1></div>"
        f"<p>{prose(3)}</p><p>See <a href='/x'>the guide</a> for the details of this rule.</p>"
        "<div class='cats'>Categories: <a href='/c1'>Programming</a> | "
        "<a href='/c2'>Databases</a></div></div>",
        head="<title>Cell in core</title>",
    )
    text = html_to_text(doc)
    assert "Categories" not in text and "Databases" not in text
    for kept in ("Struct core::Cell", "See the guide for"):
        assert kept in text


def test_a_bar_holding_only_the_title_heading_is_not_the_content_of_a_short_page() -> None:
    """A top bar with the title heading beside a short front page: the bar is a good share
    of such a page, but it holds the heading alone, so the text beside it stays."""
    doc = page(
        "<div id='wrap'><div class='bar'><h1>Reltool Users Guide</h1></div>"
        "<div id='content'><div class='inner'><center><h1>Reltool User's Guide</h1></center>"
        "<center><h4>Version 0.9</h4></center></div></div></div>",
        head="<title>Erlang -- Reltool Users Guide</title>",
    )
    assert "Version 0.9" in html_to_text(doc)
    # ... and a long link tree beside the bar and the short text is left out
    links = "".join(f"<li><a href='/c{i}'>Chapter number {i} of the guide</a></li>" for i in range(12))
    doc = page(
        f"<div id='wrap'><div class='bar'><h1>Reltool Users Guide</h1></div><aside><ul>{links}</ul></aside>"
        "<div id='content'><p>The tool generates release and script files.</p></div></div>",
        head="<title>Erlang -- Reltool Users Guide</title>",
    )
    text = html_to_text(doc)
    assert "Chapter number" not in text
    assert "Reltool Users Guide" in text and "release and script files" in text


def test_text_written_straight_into_the_container_stays_with_the_heading_block() -> None:
    """A short page whose only sentence sits directly in ``<main>`` (no element of its own) beside
    a header block of the title heading and a longer line of reader counters: the descent
    follows the heading's branch only when the container has no prose of its own beside it."""
    viewed = "".join(
        f"<li><a href='/p{i}'>Recently viewed page number {i} of the site</a></li>" for i in range(20)
    )
    doc = page(
        f"<header><nav><ul>{viewed}</ul></nav></header>"
        "<main><div class='header'><h1>Uses of Class org.example.Widget</h1>"
        "<div class='stats'>Rated 4.5/5 by 2,578 readers and bookmarked 12,592 times</div>"
        "<p class='stamp'>Revised 2 Jul 2023, 16:57 EDT</p></div>"
        "No usage of org.example.Widget</main>"
        "<footer><p>Copyright 1993, 2026, Example Corporation and its affiliates. All rights"
        " reserved. Use is subject to license terms and the documentation policy.</p></footer>",
        head="<title>Uses of Class org.example.Widget</title>",
    )
    text = html_to_text(doc)
    assert "No usage of org.example.Widget" in text
    assert "Uses of Class org.example.Widget" in text and "Recently viewed" not in text


# ----------------------------------------------------------------------------------------------
# the same content in another template gives the same text (benchmarks/bench_templates.py)


def test_a_layout_named_note_inside_the_content_is_part_of_it_in_any_template() -> None:
    """A DocBook "sidebar" note is prose inside the text: kept whether or not a <section> or
    <main> of the template holds the content (only a link-dense one is navigation)."""
    note = "<div class='sidebar'><p>TOOL The locale command lists the settings of every category.</p></div>"
    body = f"<div class='chapter'><h1>Basic Configuration</h1><p>{prose(4)}</p>{note}<p>{prose(3, 'b')}</p>"
    body += "</div>"
    head = "<title>Basic Configuration</title>"
    for wrapper in (
        "{}",
        "<main>{}</main>",
        "<div id='x'>{}</div><div class='menu'><a href='/'>Home</a></div>",
    ):
        assert "locale command lists" in html_to_text(page(wrapper.format(body), head))
    links = "".join(f"<a href='/p{i}'>Related page {i}</a> " for i in range(8))
    doc = page(f"<main>{body.replace(note, f'<div class=sidebar>{links}</div>')}</main>", head)
    assert "Related page" not in html_to_text(doc)


def test_the_heading_in_a_page_header_names_the_page_and_stays_with_its_text() -> None:
    """An article's <header> copied outside any <article>: the header is chrome by position,
    but the <h1> in it names the page, so it is the heading and opens the text."""
    doc = page(
        "<div class='box'><header><h2>Local news from the valley towns</h2>"
        "<h1>Drinking water contaminated</h1></header>"
        "<p class='intro'>On Saturday the town warned its residents about the tap water.</p>"
        f"<div class='body'><p>{prose(5)}</p></div></div>",
        head="<title>Drinking water contaminated</title>",
    )
    extraction = T.extract(T.parse_plain(doc))
    assert extraction.heading == "Drinking water contaminated"
    assert "Drinking water contaminated On Saturday the town warned" in extraction.text
    # a page header without the title heading (a site banner) is still chrome
    doc = page(
        "<header><h1>Example Site</h1><p>The site slogan of the house, in many words.</p></header>"
        f"<div class='body'><h2>Drinking water contaminated</h2><p>{prose(5)}</p></div>",
        head="<title>Drinking water contaminated</title>",
    )
    assert "site slogan" not in html_to_text(doc)


def test_a_layout_word_on_a_heading_says_what_the_heading_is() -> None:
    """``<h1 class="page-header">`` is the page's heading, not a page region."""
    doc = page(
        "<div id='page'><div class='left'><h1 class='page-header'>Sweden drops the case</h1>"
        f"<p>{prose(4)}</p></div><div class='more'><p>{prose(6, 'other')}</p></div></div>",
        head="<title>Sweden drops the case | News</title>",
    )
    extraction = T.extract(T.parse_plain(doc))
    assert extraction.heading == "Sweden drops the case"
    assert extraction.text.startswith("Sweden drops the case sentence 0")
    assert "other sentence" not in extraction.text


def test_navigation_by_markup_goes_however_much_of_the_container_it_fills() -> None:
    """A mega menu in a <nav> inside <main>, longer than the article and with parts named
    "content": mostly links, so navigation; an <aside> of prose goes while it holds less than
    two thirds of the container; the text beside either stays."""
    menu = "".join(f"<li><a href='/m{i}'>Menu entry number {i} of the site</a></li>" for i in range(40))
    article = f"<h1>Plague case reported</h1><p>{prose(3)}</p>"
    videos = "".join(f"<p>0{i}:45 Video title number {i} about another topic entirely</p>" for i in range(14))
    aside = f"<aside class='sidebar'><div class='view-content'>{videos}</div></aside>"
    for body, chrome in (
        (f"<main><nav><ul class='mm-content'>{menu}</ul></nav><div>{article}</div></main>", "Menu entry"),
        (f"<main><div>{article}</div>{aside}</main>", "Video title"),
    ):
        text = html_to_text(page(body, head="<title>Plague case reported</title>"))
        assert chrome not in text and "sentence 2" in text


def test_a_modal_dialog_is_not_the_text_and_a_skip_target_is() -> None:
    """A privacy policy in a ``class="dialog"`` overlay is chrome; an element named as the
    target of a skip link (``id="skip2"``) holds the content."""
    policy = f"<div class='dialog' id='privacy'><div class='dialog__content'><p>{prose(8, 'policy')}</p>"
    policy += "</div></div>"
    doc = page(
        f"<div class='main-content'><h1>Lemon trees</h1><p>{prose(4)}</p></div>{policy}",
        head="<title>Lemon trees</title>",
    )
    text = html_to_text(doc)
    assert "policy sentence" not in text and "sentence 3" in text
    doc = page(
        "<div class='overlay'><p>This site uses cookies to measure how it is used.</p></div>"
        f"<div class='Wrapper'><div class='Main' id='Skip2'><p>{prose(5)}</p></div></div>",
        head="<title>Emirates order</title>",
    )
    assert "sentence 4" in html_to_text(doc)


def test_a_hiding_class_is_a_short_name_of_its_own() -> None:
    """``hidden``, ``is-hidden``, ``visually-hidden`` hide an element; in a longer name the word
    is about a part or a variant: a ``field--label-hidden`` field shows its text (only its
    label is hidden), ``hidden-xs`` shows on all but the smallest screens."""
    for cls in ("hidden", "is-hidden", "visually-hidden", "invisible"):
        doc = page(f"<div><p>{prose(5)}</p><div class='{cls}'><p>{prose(2, 'secret')}</p></div></div>")
        assert "secret sentence" not in html_to_text(doc), cls
    for cls in ("field field--name-body field--label-hidden", "hidden-xs col-md-8"):
        doc = page(f"<div><p>{prose(5)}</p><div class='{cls}'><p>{prose(2, 'field')}</p></div></div>")
        assert "field sentence 1" in html_to_text(doc), cls


def test_a_menu_item_in_the_page_header_is_not_the_title_heading() -> None:
    """A site header's menu item whose words are in the title ("Michigan" in "Michigan officials
    report...") is not the page's heading: in a page header only an <h1> names the page."""
    menu = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(20))
    doc = page(
        f"<header><ul class='menu'><li><a href='/mi'><span class='title'>Michigan</span></a></li>{menu}</ul>"
        f"</header><div class='story'><p>{prose(3)}</p></div>",
        head="<title>Michigan officials report a sixth case - News</title>",
    )
    extraction = T.extract(T.parse_plain(doc))
    assert "sentence 2" in extraction.text and "Section" not in extraction.text
    assert extraction.heading != "Michigan"


def test_a_main_left_inside_an_unclosed_header_is_still_the_main_content() -> None:
    """HTML allows no <main> inside a header or aside: one found there was put there by the
    parser (the page left them unclosed), so it is the content and its <h1> the heading."""
    links = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(30))
    doc = page(
        f"<header role='banner'><section role='complementary'><ul>{links}</ul>"
        f"<main><h1>Reform backlog</h1><p>{prose(3)}</p></main>"
        f"<div class='box'><p>{prose(6, 'box')}</p></div>",
        head="<title>Reform backlog - News</title>",
    )
    extraction = T.extract(T.parse_plain(doc))
    assert extraction.heading == "Reform backlog"
    assert extraction.text.startswith("Reform backlog sentence 0") and "box sentence" not in extraction.text


def test_a_page_framing_a_copied_document_gives_the_document_its_own_text() -> None:
    """An archive or wiki page heads a copied document with its own label ("Site: Document")
    above the document's heading: the document (from its own heading on) is the text, in the
    frame as on its own page, whatever the frame adds beside it."""
    document = "<h1>parse_config\u00b6</h1><p>Reads a configuration file and returns its settings.</p>"
    framed = page(
        "<div class='top'><a href='/'>Example Archive</a> <a href='/random'>Random page</a></div>"
        "<div class='record'><h1>Project Docs: parse_config \u2014 Project Docs</h1>"
        "<div class='note'>Saved by the Example Archive, a library of old web pages</div>"
        f"<div class='copy'>{document}</div></div>",
        head="<title>Project Docs: parse_config \u2014 Project Docs \u2014 Example Archive</title>",
    )
    own = page(f"<div class='doc'>{document}</div>", head="<title>parse_config \u2014 Project Docs</title>")
    expected = "parse_config\u00b6 Reads a configuration file and returns its settings."
    assert html_to_text(framed) == html_to_text(own) == expected
    # a heading that is not the frame's label (it names something else) leaves the page as it was
    other = framed.replace("<h1>parse_config\u00b6</h1>", "<h1>Settings reader</h1>")
    assert "Saved by the Example Archive" in html_to_text(other)


def test_a_container_with_a_heading_of_its_own_is_not_given_another() -> None:
    """The page's name is prepended only to a container that lacks one: a site's name set as
    an ``<h1>`` above a document with its own ``<h1>`` is the site's, not the document's."""
    doc = page(
        "<div class='brand'><h1>Example Site</h1></div>"
        f"<div class='post'><h1>Drinking water contaminated</h1><p>{prose(5)}</p></div>",
        head="<title>Drinking water contaminated - Example Site</title>",
    )
    assert html_to_text(doc).startswith("Drinking water contaminated sentence 0")
    # ... and a container without one is still named by the page's heading
    doc = doc.replace("<div class='post'><h1>Drinking water contaminated</h1>", "<div class='post'>")
    assert " ".join(html_to_text(doc).split()).startswith("Example Site sentence 0")


def test_a_pager_is_navigation_by_its_link_relation_on_a_page_of_any_size() -> None:
    """Links to the next and previous page of a series (``rel="next"``, or the head's
    ``<link rel="next">`` to the same address) and up to the contents are navigation: a
    short page keeps none of them, however much of its text they are."""
    head = "<title>Day.rule_code</title><link rel='next' href='b.html'><link rel='prev' href='a.html'>"
    pager = "<a href='a.html'>previous Day.normalize</a> <a href='b.html'>next Day.n</a>"
    pager = f"<div class='area'>{pager}</div>"
    text = html_to_text(page(f"<main><h1>Day.rule_code</h1><p>Alias of the code.</p>{pager}</main>", head))
    assert "Day.normalize" not in text and "Day.n " not in f"{text} "
    assert "Alias of the code" in text
    texinfo = (
        "<div class='header'><p>Next: <a href='n.html' rel='next'>Assignment Expressions</a>, "
        "Up: <a href='u.html' rel='up'>Expressions</a></p></div>"
        "<h4>8.5 Boolean Expressions</h4><p>See <a href='x.html'>Short-circuit Boolean</a>.</p>"
    )
    text = html_to_text(page(f"<div class='section'>{texinfo}</div>", "<title>Boolean Expressions</title>"))
    assert "Assignment Expressions" not in text and "Up: Expressions" not in text
    assert "See Short-circuit Boolean" in " ".join(text.split())  # a link of the text is the text


def test_a_title_word_in_a_wrappers_class_does_not_make_the_page_its_heading() -> None:
    """``<body class="no-header-title">`` (a theme option) is not the page's heading: the
    identity heading is short, here the article's ``<h1>``."""
    doc = (
        "<!DOCTYPE html><html><head><title>Reform backlog - News</title></head>"
        "<body class='single no-header-title'><p class='lead'>News of the valley towns, every day.</p>"
        f"<article><h1>Reform backlog</h1><p>{prose(4)}</p></article></body></html>"
    )
    assert T.extract(T.parse_plain(doc)).heading == "Reform backlog"


def test_the_h1_inside_a_title_classed_wrapper_is_the_identity_heading() -> None:
    """A theme's title wrapper adds a category beside the ``<h1>``: the ``<h1>`` names the page,
    so a copy titled with it (and no wrapper) has the same heading."""
    doc = page(
        "<div class='title-wrap'><a href='/c/general' class='cat'>General</a>"
        f"<h1 class='entry-title'>We support the climate strike</h1></div><p>{prose(4)}</p>",
        "<title>We support the climate strike - Valley Pirates</title>",
    )
    assert T.extract(T.parse_plain(doc)).heading == "We support the climate strike"
    # without an <h1>, a short title-classed element is the heading
    doc = doc.replace("<h1 class='entry-title'>", "<p>").replace("</h1>", "</p>")
    assert T.extract(T.parse_plain(doc)).heading.endswith("We support the climate strike")


def test_an_h1_written_apart_from_the_title_still_keeps_the_text_from_a_teaser_feed() -> None:
    """A headline that shares few words with the page's SEO ``<title>`` matches no title, but the
    page's one ``<h1>`` is its document's heading: beside a long feed of teaser cards (each a link
    holding a heading and a summary, more text than the article), the text is the article's."""
    cards = "".join(
        f'<article class="item"><a href="/n/{i}"><h4>Teaser headline {i} of another story</h4>'
        f"<p>{prose(3, f'card{i}')}</p></a></article>"
        for i in range(40)
    )
    body = (
        '<div class="container"><div class="row"><div class="col">'
        f"<h1>River crossing opens after years of delay, mayor says</h1><p>{prose(12, 'story')}</p>"
        f'</div></div></div><div class="container"><section class="stack">{cards}</section></div>'
    )
    text = html_to_text(page(body, head="<title>New bridge: town celebrates at last | Daily</title>"))
    assert text.startswith("River crossing opens") and "story sentence 11" in text
    assert "Teaser headline" not in text
