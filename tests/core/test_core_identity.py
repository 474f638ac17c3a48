"""What a page is: its names (heading, title, address) and how exactly short pages are compared.

Properties of the pieces rule 0 and the short-page measures stand on (``core.native.sketch``,
``core.native.tokens``, ``core.verify``), through the detector's public analysis where a page is
needed, and the families of pages they keep apart or together.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.native.sketch import (
    NAMES_AGREE,
    NAMES_DIFFER,
    NAMES_DIFFER_IN_NUMBERS,
    SHORT_TOKENS,
    edit_regions,
    exact_similarity,
    names_relation,
)
from neardup_scrapy.core.native.tokens import Tokenizer
from neardup_scrapy.core.verify import addresses_differ

DETECTOR = NearDupDetector()
WORDS = [f"w{i}x" for i in range(400)]


def profile(heading: str, body: str = "some text of the page", title: str | None = None) -> bytes:
    html = (
        f"<html><head><title>{title if title is not None else heading}</title></head>"
        f"<body><main><h1>{heading}</h1><p>{body}</p></main></body></html>"
    )
    analysis = DETECTOR.analyze("http://h/p", html)
    assert analysis.sketch is not None
    return analysis.sketch.profile


def text_profile(tokens: list[str]) -> bytes:
    analysis = DETECTOR.analyze("http://h/p", text=" ".join(tokens))
    assert analysis.sketch is not None
    return analysis.sketch.profile


# -- names -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("separator", [".", "::"])
def test_a_qualified_name_is_one_word_whatever_its_parts(separator: str) -> None:
    """Two qualified names differing in any one part are two names, in a heading or a title, at
    any depth; a separator followed by a space is punctuation, not part of a name."""
    rng = random.Random(3)
    for depth in range(2, 6):
        parts = [rng.choice(WORDS) for _ in range(depth)]
        for changed in range(depth):
            other = list(parts)
            other[changed] = "zz" + other[changed]
            a, b = separator.join(parts), separator.join(other)
            assert names_relation(profile(a), profile(b)) == NAMES_DIFFER, (a, b)
            assert names_relation(profile(a), profile(f"{a} - Site")) == NAMES_AGREE
    # "Lib: Member List" is the words lib, member, list: it holds the words of "Lib Member List"
    assert names_relation(profile("Lib: Member List"), profile("Lib Member List")) == NAMES_AGREE


@pytest.mark.parametrize("number", ["3.19.{}", "1.{}.0", "Part {}", "{} Release Notes", "Chapter 1{}"])
def test_names_that_differ_in_a_number_alone(number: str) -> None:
    a, b = number.format(1), number.format(2)
    assert names_relation(profile(f"Lib {a}"), profile(f"Lib {b}")) == NAMES_DIFFER_IN_NUMBERS
    assert names_relation(profile(f"Lib {a}"), profile(f"Other {b}")) == NAMES_DIFFER
    assert names_relation(profile(f"Lib {a}"), profile(f"Lib {a}")) == NAMES_AGREE


def test_like_is_compared_with_like_and_a_copy_may_take_the_title_for_its_heading() -> None:
    original = profile("Investors see mixed signals", title="Trade talks latest - News")
    copy = profile("Trade talks latest - News", title="Trade talks latest - News - Digest")
    assert names_relation(original, copy) == NAMES_AGREE  # the copy's heading is the title
    generic = "Lib: Member List"  # a title shared by a family of pages says nothing of them
    a = profile("Lib::Alpha Member List", title=generic)
    b = profile("Lib::Beta Member List", title=generic)
    assert names_relation(a, b) == NAMES_DIFFER
    # the same heading ("Documentation"), titles naming two modules
    c = profile("Documentation", title="Lib.Alpha")
    d = profile("Documentation", title="Lib.Beta")
    assert names_relation(c, d) == NAMES_DIFFER


# -- addresses ---------------------------------------------------------------------------------------
SAME_DOCUMENT = [
    ("/news/story-of-the-day", "/news/story-of-the-day/amp"),
    ("/news/story-of-the-day", "/amp/news/story-of-the-day"),
    ("/news/story-of-the-day", "/print/news/story-of-the-day"),
    ("/news/story-of-the-day.html", "/news/story-of-the-day.amp.html"),
    ("/news/story-of-the-day", "/_cache/8f3a9c/news/story-of-the-day"),
    ("/news/story-of-the-day", "/news/story-of-the-day;jsessionid=ABC123"),
    ("/docs/guide/", "/docs/guide/index.html"),
    ("/docs/guide", "/docs/guide/"),
    ("/Docs/Guide.html", "/docs/guide.html"),
    ("/news/story", "/sport/story"),
    ("/article/123", "/article/124"),
    ("/article/123-the-story", "/article/456-the-story"),
    ("/lib/2.66/foo.html", "/lib/2.74/foo.html"),
]
OTHER_DOCUMENTS = [
    ("/gtk4/method.Dialog.response.html", "/gtk4/vfunc.Dialog.response.html"),
    ("/ref/scipy.sparse.csr_matrix.mean.html", "/ref/scipy.sparse.bsr_array.mean.html"),
    ("/wiki/Colour_theory", "/wiki/Music_theory"),
    ("/docs/install", "/docs/configure"),
]


@pytest.mark.parametrize(("a", "b"), SAME_DOCUMENT)
@pytest.mark.parametrize("order", [0, 1])
def test_views_keys_and_sections_of_an_address_name_one_document(a: str, b: str, order: int) -> None:
    a, b = (a, b) if order == 0 else (b, a)
    assert not addresses_differ(f"https://site.example{a}", f"https://site.example{b}")


@pytest.mark.parametrize(("a", "b"), OTHER_DOCUMENTS)
@pytest.mark.parametrize("order", [0, 1])
def test_a_site_names_its_documents_in_their_paths(a: str, b: str, order: int) -> None:
    a, b = (a, b) if order == 0 else (b, a)
    assert addresses_differ(f"https://site.example{a}", f"https://site.example{b}")
    assert addresses_differ(f"https://site.example{a}?x=1", f"https://site.example{b}#top")
    assert not addresses_differ(f"https://site.example{a}", f"https://mirror.example{b}")  # other host


# -- short pages, measured exactly -------------------------------------------------------------------
def _python_jaccard(a: list[int], b: list[int], k: int) -> float:
    def shingles(t: list[int]) -> set[tuple[int, ...]]:
        width = min(k, len(t))
        return {tuple(t[i : i + width]) for i in range(len(t) - width + 1)}

    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def _top8(tokens: list[str]) -> list[int]:
    data = Tokenizer(DETECTOR.params.seed).hashes(" ".join(tokens))
    return [int.from_bytes(data[i : i + 8], "little") >> 56 for i in range(0, len(data), 8)]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS[:40]), min_size=1, max_size=SHORT_TOKENS),
    st.lists(st.sampled_from(WORDS[:40]), min_size=1, max_size=SHORT_TOKENS),
    st.integers(min_value=1, max_value=6),
)
def test_short_pages_are_compared_exactly(a: list[str], b: list[str], k: int) -> None:
    """The similarity of two short pages is the Jaccard similarity of their shingles exactly
    (as 8-bit tokens); a longer page keeps no tokens and is estimated."""
    pa, pb = text_profile(a), text_profile(b)
    expected = _python_jaccard(_top8(a), _top8(b), k)
    assert exact_similarity(pa, pb, k) == pytest.approx(expected)
    long = text_profile([WORDS[i % 400] for i in range(SHORT_TOKENS + 1)])
    assert exact_similarity(pa, long, k) == -1.0


def test_short_pages_are_aligned_token_by_token_and_a_coincidence_is_no_anchor() -> None:
    base = [WORDS[i] for i in range(60)]
    swapped = [*base[:30], "other", *base[31:]]
    level, regions = edit_regions(text_profile(base), text_profile(swapped)) or (None, None)
    assert (level, regions) == (0, [(1, 1)])
    # two rewritten passages 3 words apart are one place; 8 words apart, two
    near = [*base[:20], "r1", "r2", *base[22:25], "r3", "r4", *base[27:]]
    assert edit_regions(text_profile(base), text_profile(near)) == (0, [(7, 7)])
    far = [*base[:20], "r1", "r2", *base[22:30], "r3", "r4", *base[32:]]
    assert edit_regions(text_profile(base), text_profile(far)) == (0, [(2, 2), (2, 2)])


# -- the families these rules keep apart or together ---------------------------------------------
def _reference_page(name: str, kind: str, body: str, extra: str = "") -> str:
    nav = "".join(f"<li><a href='/{i}.html'>Entry {i}</a></li>" for i in range(30))
    return (
        f"<html><head><title>{name}</title></head><body><nav><ul>{nav}</ul></nav>"
        f"<section id='main'><header><h3>{kind}</h3><h1>{name}</h1>{extra}</header>"
        f"<section><p>{body}</p></section></section></body></html>"
    )


def test_tiny_reference_pages_that_differ_in_the_item_they_document() -> None:
    """Generated pages of a few dozen words, the same template sentence, another identifier:
    never one document, in either order, whatever rule the texts would pass; the same page with
    a dateline added (at its own address with a query, or on a mirror) is."""
    sentence = "Returns the value of the property for the given object in the current context"
    names = ["Lib.Widget.get_size", "Lib.Widget.get_name", "Lib.Window.get_size", "Lib.Frame.get_size"]
    for order in (names, names[::-1]):
        det = NearDupDetector()
        for name in order:
            html = _reference_page(name, "Method", f"{name.rsplit('.', 1)[1]} {sentence}")
            assert det.check(f"https://docs.example/{name}.html", html).status == "unique", name
    det = NearDupDetector()
    name = names[0]
    body = f"{name.rsplit('.', 1)[1]} {sentence}"
    det.check(f"https://docs.example/{name}.html", _reference_page(name, "Method", body))
    dated = _reference_page(name, "Method", body, "<div>Checked on Monday 3 March 2025 (build #7431)</div>")
    assert det.check(f"https://docs.example/{name}.html?build=7431", dated).status == "near"
    assert det.check(f"https://mirror.example/{name}.html", dated).status == "near"


CHROME_CLASSES = ["comment", "comments-list", "search-result", "related-post", "sidebar-item"]


@pytest.mark.parametrize("chrome_class", CHROME_CLASSES)
@pytest.mark.parametrize("depth", [0, 3])
def test_a_page_whose_content_looks_like_chrome_is_read_whole(chrome_class: str, depth: int) -> None:
    """A story's comments view, a forum's search results: the blocks that make the page are in
    elements named like chrome, and what is left is the heading these pages share. Such a page
    is read whole: two of them with other content are two documents, the same one twice is one."""
    rng = random.Random(depth)

    def forum_page(heading: str, seed: int) -> str:
        rng.seed(seed)
        nav = "".join(f"<li><a href='/c/{i}'>Category {i}</a></li>" for i in range(12))
        posts = "".join(
            f"<div class='{chrome_class}'><a href='/u/{i}'>user{i}</a><p>"
            + " ".join(rng.choice(WORDS) for _ in range(40))
            + "</p></div>"
            for i in range(10)
        )
        wrapped = "<div>" * depth + posts + "</div>" * depth
        return (
            f"<html><head><title>{heading}</title></head><body><ul>{nav}</ul>"
            f"<h1>{heading}</h1>{wrapped}</body></html>"
        )

    det = NearDupDetector()
    assert det.check("https://forum.example/t/1/comments", forum_page("Comments", 1)).status == "unique"
    assert det.check("https://forum.example/t/2/comments", forum_page("Comments", 2)).status == "unique"
    assert det.check("https://forum.example/search?q=a", forum_page("Search results", 3)).status == "unique"
    assert det.check("https://forum.example/search?q=b", forum_page("Search results", 4)).status == "unique"
    again = det.check("https://forum.example/t/1/comments?utm_source=x", forum_page("Comments", 1))
    assert again.status == "exact"
    analysis = det.analyze("https://forum.example/t/9", forum_page("Comments", 9))
    assert analysis.sketch is not None and analysis.sketch.tokens > 300


def test_a_header_that_gains_a_dateline_keeps_its_section() -> None:
    """A <header> introduces its section (a kicker, the heading, a dateline): the main text is
    never the header alone, whether or not it holds a line besides the heading."""
    body = " ".join(WORDS[:80])
    for extra in ("", "<div>Checked on 3 March 2025 (build #7431)</div>", "<p>Updated by the docs team</p>"):
        analysis = DETECTOR.analyze("https://d/x", _reference_page("Lib.Widget", "Class", body, extra))
        assert analysis.sketch is not None
        assert body in analysis.excerpt and "Lib.Widget" in analysis.excerpt, extra
