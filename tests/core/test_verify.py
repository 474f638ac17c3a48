"""The near-duplicate rule (neardup_scrapy.core.verify), through the detector's public API."""

from __future__ import annotations

import random

import pytest

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.sketch import resource_keys
from neardup_scrapy.core.verify import PairRule, other_release, release_key

RNG = random.Random(4)
VOCAB = ["".join(RNG.choice("abcdefghijklmnopqrst") for _ in range(RNG.randint(3, 9))) for _ in range(3000)]


def words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(VOCAB) for _ in range(n)]


def edit_words(body: list[str], places: int, seed: int) -> list[str]:
    """``body`` with one word replaced at ``places`` places spread over it."""
    rng = random.Random(seed)
    step = len(body) // places
    return [rng.choice(VOCAB) if i % step == step // 2 else w for i, w in enumerate(body)]


def page(heading: str, body: str, title: str | None = None) -> str:
    return (
        f"<html><head><title>{title or heading}</title></head><body><nav>Home Docs Blog</nav>"
        f"<main><h1>{heading}</h1><p>{body}</p></main></body></html>"
    )


def check_pair(a: str, b: str, url_a: str = "http://127.0.0.1/a", url_b: str = "http://127.0.0.2/a") -> str:
    """The verdict of page ``b`` checked after page ``a`` (by default at the same path of another
    host: a copy, which neither page's address tells apart)."""
    det = NearDupDetector()
    assert det.check(url_a, a).status == "unique"
    verdict = det.check(url_b, b)
    assert verdict.status == "unique" or verdict.duplicate_of == url_a
    return verdict.status


def test_names_decide_unless_the_texts_are_the_same_beyond_doubt() -> None:
    """Rule 0: pages whose names differ are different documents, unless their texts are the same
    beyond doubt (long enough to identify a document, and J >= 0.95 with room for the
    estimate's error): one item published under two names."""
    body = words(600, 1)
    assert check_pair(page("Map", " ".join(body)), page("Other name", " ".join(body))) == "near"
    edited = edit_words(body, 8, 14)  # J ~0.87: under the same heading, a near-duplicate
    assert check_pair(page("Map", " ".join(body)), page("Map", " ".join(edited))) == "near"
    assert check_pair(page("Map", " ".join(body)), page("Other name", " ".join(edited))) == "unique"
    short = words(40, 15)  # too short to identify a document: identical text, other names
    assert check_pair(page("Map", " ".join(short)), page("Other name", " ".join(short))) == "unique"
    assert check_pair(page("Map", " ".join(short)), page("Map", " ".join(short))) == "exact"


def test_beyond_doubt_means_clear_of_the_estimates_error() -> None:
    """An estimated J must clear 0.95 by two standard errors (``sqrt(J (1 - J) / k)``); an exact
    one (two short pages) need only reach it; a text under ``IDENTITY_TOKENS`` never is."""
    rule = PairRule(DetectorParams())
    det = NearDupDetector()
    long_a, long_b = (det.analyze("http://h/a", page("A", " ".join(words(600, s)))).sketch for s in (1, 2))
    short_a, short_b = (det.analyze("http://h/a", page("A", " ".join(words(80, s)))).sketch for s in (1, 2))
    tiny_a, tiny_b = (det.analyze("http://h/a", page("A", " ".join(words(30, s)))).sketch for s in (1, 2))
    assert long_a is not None and long_b is not None and short_a is not None and short_b is not None
    assert tiny_a is not None and tiny_b is not None
    assert rule.beyond_doubt(0.99, long_a.profile, long_b.profile)
    assert not rule.beyond_doubt(0.96, long_a.profile, long_b.profile)  # 0.96 - 2 * 0.017 < 0.95
    assert rule.beyond_doubt(0.96, short_a.profile, short_b.profile)  # measured exactly
    assert not rule.beyond_doubt(1.0, tiny_a.profile, tiny_b.profile)


def test_names_that_differ_in_a_number_are_never_overruled_by_the_text() -> None:
    """Release notes of two versions announcing the same fix: the same text, but the number in
    the name is what each page is."""
    body = " ".join(words(300, 16))
    assert check_pair(page("Release 3.19.3", body), page("Release 3.19.1", body)) == "unique"
    assert check_pair(page("Part 2: Setup", body), page("Part 3: Setup", body)) == "unique"
    assert check_pair(page("Release 3.19.3", body), page("Release 3.19.3 - Site", body)) == "near"


@pytest.mark.parametrize(
    ("name_a", "name_b"),
    [
        ("scipy.sparse.csr_matrix.mean", "scipy.sparse.bsr_array.mean"),
        ("Eigen::IdentityPreconditioner Member List", "Eigen::Transpose< MatrixType > Member List"),
        ("GHC.Platform.X86", "GHC.Platform.X86_64"),
        ("std::ptr::swap", "core::ptr::swap"),
    ],
)
def test_a_qualified_name_is_one_name(name_a: str, name_b: str) -> None:
    """``a.b.c`` and ``a::b::c`` name one thing: two qualified names that share all but one part
    are two names (as separate words they would share most of their words)."""
    body = words(300, 17)
    a = " ".join(f"{w} alpha" if i % 100 == 0 else w for i, w in enumerate(body))  # J ~0.9
    b = " ".join(f"{w} beta" if i % 100 == 0 else w for i, w in enumerate(body))
    assert check_pair(page(name_a, a), page(name_b, b)) == "unique"
    assert check_pair(page(name_a, a), page(name_a, b)) == "near"


def test_heading_and_title_are_each_compared_with_their_like() -> None:
    """A generic title shared by a site's pages ("Site: Member List") agrees with neither page's
    specific heading; two headings that name different things are two documents even when the
    titles agree, and the other way round."""
    body = words(300, 18)
    a = " ".join(f"{w} alpha" if i % 60 == 0 else w for i, w in enumerate(body))  # J ~0.85
    b = " ".join(f"{w} beta" if i % 60 == 0 else w for i, w in enumerate(body))
    generic = "Lib: Member List"
    first = page("Lib::Alpha Member List", a, title=generic)
    assert check_pair(first, page("Lib::Beta Member List", b, title=generic)) == "unique"
    assert check_pair(
        page("Documentation", a, title="Lib.Alpha"), page("Documentation", b, title="Lib.Beta")
    ) == ("unique")
    assert check_pair(first, page("Lib::Alpha Member List", b, title=generic)) == "near"


def test_different_headings_make_different_documents() -> None:
    """Generated pages for different items share most words but not their heading."""
    body = words(300, 2)
    a = " ".join(f"{w} Alpha" if i % 60 == 0 else w for i, w in enumerate(body))  # J ~0.85
    b = " ".join(f"{w} Beta" if i % 60 == 0 else w for i, w in enumerate(body))
    assert check_pair(page("Struct std::iter::Alpha", a), page("Struct std::iter::Beta", b)) == "unique"
    # the same two texts under the same heading are one document
    assert check_pair(page("Struct std::iter::Alpha", a), page("Struct std::iter::Alpha", b)) == "near"


def test_headings_that_differ_in_a_version_number_name_different_documents() -> None:
    """Release notes of two patch releases share most of their words; "3.19.3" is one name, not
    the words 3 and 19 (a subset of "3.19.1"). The same release's notes under any heading
    decoration are one document."""
    body = words(300, 2)
    a = " ".join(f"{w} fixed" if i % 60 == 0 else w for i, w in enumerate(body))  # J ~0.85
    b = " ".join(f"{w} added" if i % 60 == 0 else w for i, w in enumerate(body))
    release = "Release 3.19.{} On 2017-06-08"
    assert check_pair(page(release.format(3), a), page(release.format(1), b)) == "unique"
    assert check_pair(page(release.format(3), a), page("Release 3.19.3 On 2017-06-08 - SQLite", b)) == "near"
    assert check_pair(page("Version 2_74 notes", a), page("Version 2_66 notes", b)) == "unique"


def test_a_copy_titled_with_the_originals_title_has_the_same_heading() -> None:
    body = " ".join(words(400, 3))
    original = page("Investors see mixed signals", body, title="Trade talks latest - News Site")
    copy = (
        "<html><head><title>Trade talks latest - News Site - Digest</title></head><body>"
        f"<div class='story'><h1>Trade talks latest - News Site</h1><p>{body}</p><p>Via news site</p>"
        "</div></body></html>"
    )
    assert check_pair(original, copy, url_b="http://127.0.0.2/copy") == "near"


@pytest.mark.parametrize(("insert_at", "inserted"), [(0, 12), (60, 25), (119, 20)])
def test_edited_copy_of_a_short_page_is_a_near_duplicate(insert_at: int, inserted: int) -> None:
    """A dateline, notice or paragraph inserted into a short page drops J well below T."""
    body = words(120, 5)
    edited = body[:insert_at] + words(inserted, 6) + body[insert_at:]
    assert check_pair(page("Short page", " ".join(body)), page("Short page", " ".join(edited))) == "near"


def test_scattered_substitutions_are_not_an_edited_copy() -> None:
    """Same heading, but the texts differ in many places: not an edit of one another."""
    body = words(300, 7)
    other = [w if i % 9 else RNG.choice(VOCAB) for i, w in enumerate(body)]
    assert check_pair(page("Reference", " ".join(body)), page("Reference", " ".join(other))) == "unique"


def test_a_rewritten_paragraph_makes_a_revised_copy_but_not_a_release() -> None:
    """One passage rewritten in a short page drops J below T; under the same heading it is one
    document revised, while two releases of a document must be nearly identical (rule 2)."""
    body = words(90, 12)
    revised = body[:40] + words(12, 13) + body[52:]  # 12 of 90 words rewritten: J ~0.6
    a, b = page("Notes", " ".join(body)), page("Notes", " ".join(revised))
    assert check_pair(a, b) == "near"
    releases = ("http://127.0.0.1/lib/2.66/notes.html", "http://127.0.0.1/lib/2.74/notes.html")
    assert check_pair(a, b, *releases) == "unique"


def test_two_releases_of_one_document() -> None:
    body = words(500, 8)
    changed = [w if i % 70 else RNG.choice(VOCAB) for i, w in enumerate(body)]  # 8 places, J ~0.85
    a, b = page("Class Foo 2.66", " ".join(body)), page("Class Foo 2.74", " ".join(changed))
    assert (
        check_pair(a, b, "http://127.0.0.1/lib/2.66/foo.html", "http://127.0.0.1/lib/2.74/foo.html") == "near"
    )
    assert (
        check_pair(a, b, "http://127.0.0.1/lib/2.66/foo.html", "http://127.0.0.1/lib/2.66/bar.html")
        == "unique"
    )


def test_a_passage_added_in_a_new_release_makes_another_document_unless_little_changed() -> None:
    """A passage inserted in an article is an edited copy (J ~0.65); two releases of a document
    that differ by that much are two documents: releases pass the edit rule only within one
    standard error of ``T`` (the estimate's), as they pass rule 2 at ``T``."""
    body = words(300, 21)
    grown = body[:150] + words(150, 22) + body[150:]
    a, b = page("Foo", " ".join(body)), page("Foo", " ".join(grown))
    assert check_pair(a, b, "http://127.0.0.1/lib/foo.html", "http://127.0.0.1/lib/foo-new.html") == "near"
    releases = ("http://127.0.0.1/lib/2.66/foo.html", "http://127.0.0.1/lib/2.74/foo.html")
    assert check_pair(a, b, *releases) == "unique"
    assert abs(DetectorParams().release_floor - 0.7646) < 1e-3


def test_release_keys() -> None:
    assert release_key("https://h/docs/gcc-11.3.0/manual/x.html") == ("h", "/docs/gcc-#.#.#/manual/x.html")
    assert other_release("https://h/gtk2/2.24/GtkEditable.html", "https://h/gtk3/3.24/GtkEditable.html")
    assert other_release("https://h/api/v2/index.html", "https://h/api/v3/index.html")
    assert not other_release("https://h/news/page/2", "https://h/news/page/3")  # no version number
    assert not other_release("https://h/2019/11/18/a", "https://h/2019/11/19/a")
    assert not other_release("https://h/v2.0/a/1", "https://h/v2.0/a/2")  # the version is the same
    # a version in the page's own name: release notes of two versions are two documents
    assert not other_release("https://h/doc/release.1.9.2.html", "https://h/doc/release.1.8.2.html")
    assert not other_release("https://h/releaselog/3_6_6.html", "https://h/releaselog/3_6_7.html")
    assert release_key("https://h/docs/manual/x.html") is None
    assert other_release("https://h/v1.2/a", "https://h/v1.3/a")
    assert not other_release("https://h/v1.2/a", "https://h/v1.2/a")
    assert not other_release("https://h/v1.2/a", "https://h/v1.2/a?oldid=7")  # a view, not a release
    assert not other_release("https://h/v1.2/a", "https://other/v1.3/a")
    assert not other_release("https://h/v1.2/a", "https://h/v1.3/b")


def test_near_verdict_similarity_and_reason() -> None:
    det = NearDupDetector()
    body = words(120, 9)
    det.check("http://127.0.0.1/a", page("Note", " ".join(body)))
    verdict = det.check("http://127.0.0.2/a", page("Note", " ".join(body[:60] + words(25, 10) + body[60:])))
    assert verdict.status == "near"
    assert verdict.similarity is not None and verdict.similarity < det.params.threshold
    assert "edited copy" in verdict.reason


def test_short_pages_match_only_exactly() -> None:
    det = NearDupDetector(min_tokens=10)
    det.check("http://127.0.0.1/a", page("T", "one two three four"))
    assert det.check("http://127.0.0.2/a", page("T", "one two three five")).status == "unique"
    assert det.check("http://127.0.0.3/a", page("T", "one two three four")).status == "exact"


def test_a_url_checked_again_is_not_its_own_duplicate() -> None:
    det = NearDupDetector()
    html = page("Once", " ".join(words(200, 11)))
    first = det.check("http://127.0.0.1/a", html)
    again = det.check("http://127.0.0.1/a", html)
    assert first.status == again.status == "unique"
    assert again.reason == "this url was checked before"
    assert det.revisits == 1
    copy = det.check("http://127.0.0.2/a", html)
    assert copy.status == "exact"
    assert det.check("http://127.0.0.2/a", html).status == "exact"  # reported as it was
    report = det.report()
    assert report["totals"]["pages"] == 4 and report["totals"]["revisits"] == 2  # two pages indexed
    assert [m["url"] for m in report["clusters"][0]["members"]] == [
        "http://127.0.0.1/a",
        "http://127.0.0.2/a",
    ]


def test_simhash_mode_decides_by_hamming_distance() -> None:
    det = NearDupDetector(algorithm="simhash")
    body = words(800, 12)
    det.check("http://127.0.0.1/a", page("Long", " ".join(body)))
    edited = [*body[:400], "x", *body[401:]]
    verdict = det.check("http://127.0.0.1/b", page("Long", " ".join(edited)))
    assert verdict.status == "near"
    assert verdict.hamming is not None and verdict.hamming <= det.params.simhash_distance


@pytest.mark.parametrize("base_first", [True, False])
def test_a_view_of_the_same_address_holding_part_of_the_page_is_a_near_duplicate(base_first: bool) -> None:
    """A print view holding a sixth of an article (J ~0.17): the same page when only its query
    differs, in either order; the same text part at another address is not."""
    body = words(900, 7)
    article, part = page("Bridge", " ".join(body)), page("Bridge", " ".join(body[300:450]))
    base, view = "http://127.0.0.1/news/bridge", "http://127.0.0.1/news/bridge?output=print"
    first, second = ((base, article), (view, part)) if base_first else ((view, part), (base, article))
    det = NearDupDetector()
    assert det.check(*first).status == "unique"
    verdict = det.check(*second)
    assert verdict.status == "near" and verdict.duplicate_of == first[0]
    assert verdict.reason is not None and "another view of the same address" in verdict.reason
    assert check_pair(article, part, url_a=base, url_b="http://127.0.0.1/news/bridge-print") == "unique"


@pytest.mark.parametrize("base_first", [True, False])
def test_a_view_of_a_page_of_a_few_words_is_found_by_alignment(base_first: bool) -> None:
    """A generated page whose title is all its text (too short for shingles: it is matched
    exactly only) and a view of its address with a dateline added: the same page in either
    order; the view's text at another address, or another item's page, is not."""
    base, view = "http://127.0.0.1/api/Timestamp.value.html", "http://127.0.0.1/api/Timestamp.value.html?v=2"
    short = page("pandas.Timestamp.value", "Timestamp.value")
    dated = page("pandas.Timestamp.value", "Revised 22 Nov 2023, 10:13 JST Timestamp.value")
    first, second = ((base, short), (view, dated)) if base_first else ((view, dated), (base, short))
    det = NearDupDetector()
    assert det.check(*first).status == "unique"
    verdict = det.check(*second)
    assert verdict.status == "near" and verdict.duplicate_of == first[0]
    assert verdict.reason is not None and "another view of the same address" in verdict.reason
    assert (
        check_pair(short, dated, url_a=base, url_b="http://127.0.0.1/api/Timestamp.value-dated.html")
        == "unique"
    )
    other = page("pandas.Timestamp.year", "Revised 22 Nov 2023, 10:13 JST Timestamp.year")
    assert check_pair(short, other, url_a=base, url_b=view) == "unique"


def test_a_view_of_a_page_that_copies_a_mirror_joins_the_mirrors_cluster() -> None:
    """A page whose exact copy on a mirror host came first is still found by its address's
    views, and the mirror (its near-identical representative) stands for it: the print view of
    the page joins the cluster though it resembles the mirror only by containment."""
    body = words(900, 7)
    article, part = page("Bridge", " ".join(body)), page("Bridge", " ".join(body[300:450]))
    det = NearDupDetector()
    assert det.check("http://127.0.0.2/copies/news/bridge", article).status == "unique"
    assert det.check("http://127.0.0.1/news/bridge", article).status == "exact"
    verdict = det.check("http://127.0.0.1/news/bridge?output=print", part)
    assert verdict.status == "near" and verdict.duplicate_of == "http://127.0.0.2/copies/news/bridge"
    assert verdict.reason is not None and "another view of the same address" in verdict.reason


def test_a_view_whose_text_is_mostly_its_own_is_another_page() -> None:
    """A query that selects other content (page 2 of a listing) shares a little of the first."""
    body = words(900, 7)
    first, second = page("Listing", " ".join(body[:600])), page("Listing", " ".join(body[450:]))
    assert check_pair(first, second, "http://127.0.0.1/list", "http://127.0.0.1/list?page=2") == "unique"


def test_resource_keys_send_views_to_their_base_only() -> None:
    """A view looks up the base's bucket, a base the views' bucket: views of one address never
    meet each other through it (an address with thousands of query pages stays cheap)."""
    base_lookup, base_insert = resource_keys("http://h/p", 1)
    view_lookup, view_insert = resource_keys("http://h/p?a=1", 1)
    other_lookup, other_insert = resource_keys("http://h/p?a=2", 1)
    assert view_lookup == other_lookup == base_insert == resource_keys("http://h/p#part", 1)[0]
    assert base_lookup == view_insert == other_insert
    assert view_lookup != view_insert
    assert base_lookup & 0xFFFFFFFFFFFF != base_insert & 0xFFFFFFFFFFFF  # stores keep the low 48 bits
