"""#35: the original survives -- a copy that happened to be checked first never stays the
representative of the original's cluster.

The original is the page at the address its copies name canonical (``<link rel=canonical>`` or
the HTTP ``Link`` header), or the page of a settled mirror's origin host. Every scenario runs in
both arrival orders (and shuffled ones): the representative, the tags written after the change,
the report, the exports and the counts are the same whichever page came first.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from neardup_scrapy.core import NearDupDetector, Verdict
from neardup_scrapy.core.exports import cluster_rows, pair_rows
from neardup_scrapy.core.urls import canonical_address, parse_link_header
from tests.core.storage.test_storage_support import vocabulary

VOCAB = vocabulary(3000, seed=35)


def words(seed: int, n: int = 300) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def origin_page(title: str, seed: int, head: str = "") -> str:
    return (
        f"<html><head><title>{title}</title>{head}</head><body><nav><a href='/'>Home</a></nav>"
        f"<main><h1>{title}</h1><p>{words(seed)}</p></main><footer>Gazette</footer></body></html>"
    )


def copy_page(title: str, seed: int, head: str = "") -> str:
    """The same article in another site's template."""
    return (
        f"<html><head><title>{title} - Portal</title>{head}</head><body><div id='top'>Portal menu</div>"
        f"<div id='content'><h2>{title}</h2><div class='para'>{words(seed)}</div></div>"
        "<div id='bottom'>Copyright Portal</div></body></html>"
    )


def canonical(url: str) -> str:
    return f"<link rel='canonical' href='{url}'>"


def counts_of(verdicts: list[Verdict]) -> dict[str, int]:
    out = dict.fromkeys(("pages", "unique", "exact", "near", "skipped", "revisits"), 0)
    for v in verdicts:
        out["pages"] += 1
        out[v.counted] += 1
    return out


def totals(report: dict[str, Any]) -> dict[str, int]:
    return {k: report["totals"][k] for k in ("pages", "unique", "exact", "near", "skipped", "revisits")}


ORIGINAL = "http://a.example/story"
COPY = "http://b.example/copy/story"


@pytest.mark.parametrize("copy_first", [True, False], ids=["copy-first", "original-first"])
@pytest.mark.parametrize("declared", ["link", "header", "relative-https"])
def test_the_canonical_address_is_the_representative_in_both_orders(copy_first: bool, declared: str) -> None:
    """The copy names the original's address canonical: by ``<link>``, by the ``Link`` header,
    or with another scheme (``https://`` for a page fetched as ``http://``)."""
    named = ORIGINAL.replace("http://", "https://") if declared == "relative-https" else ORIGINAL
    head = canonical(named) if declared != "header" else ""
    det = NearDupDetector()
    pages = [(COPY, copy_page("Story", 1, head)), (ORIGINAL, origin_page("Story", 1))]
    if not copy_first:
        pages.reverse()
    header = named if declared == "header" else ""
    verdicts = {url: det.check(url, html, canonical=header if url == COPY else "") for url, html in pages}
    original, copy = verdicts[ORIGINAL], verdicts[COPY]
    if copy_first:
        assert copy.status == "unique"  # its tag was written before the original came
        # the original's tag says what it was checked against; it replaces the copy as the
        # representative (never dropped) and later tags name it
        assert original.status == "near" and original.duplicate_of == COPY and original.replaced == COPY
        assert not original.droppable
    else:
        assert original.status == "unique" and original.cluster == ORIGINAL
        assert copy.status == "near" and copy.duplicate_of == ORIGINAL
        assert copy.droppable and not copy.undecided  # it declared where the original is
    later = det.check("http://c.example/third", copy_page("Story", 1))
    assert later.duplicate_of == ORIGINAL  # tags written after the change name the original
    report = det.report()
    (cluster,) = report["clusters"]
    assert cluster["representative"] == ORIGINAL
    assert cluster["members"][0]["url"] == ORIGINAL
    members = {m["url"]: m for m in cluster["members"]}
    assert members[COPY]["status"] == "near" and members[COPY]["similarity"] is not None
    rows = cluster_rows(det.storage)
    pairs = {p["url"]: p["duplicate_of"] for p in pair_rows(rows)}
    assert pairs == {COPY: ORIGINAL, "http://c.example/third": ORIGINAL}
    assert totals(report) == counts_of([*verdicts.values(), later]) == det.counts


@pytest.mark.parametrize("print_first", [True, False])
def test_a_print_view_naming_its_article_never_stays_the_representative(print_first: bool) -> None:
    """One site: the print view names the article canonical with a relative href."""
    article = ("http://a.example/news/7", origin_page("Rates", 7))
    printed = ("http://a.example/news/7/print", copy_page("Rates", 7, canonical("/news/7")))
    det = NearDupDetector()
    order = [printed, article] if print_first else [article, printed]
    verdicts = {v.url: v for v in (det.check(url, html) for url, html in order)}
    assert verdicts[printed[0]].status == ("unique" if print_first else "near")
    assert verdicts[article[0]].replaced == (printed[0] if print_first else None)
    assert det.report()["clusters"][0]["representative"] == article[0]
    assert not verdicts[article[0]].droppable  # never dropped for its print view


def test_a_copy_without_evidence_is_undecided_until_its_mirror_is_settled() -> None:
    """A cross-host duplicate with nothing telling which page is the original is undecided (drop
    mode keeps it); once the copy's host is a settled mirror, its pages are copies (dropped in
    drop mode) and the origin's pages are never dropped; the report makes the origin's pages the
    representatives, and tags written after it name them."""
    det = NearDupDetector()
    first = det.check("http://m.example/s0", copy_page("S0", 100))
    second = det.check("http://o.example/s0", origin_page("S0", 100))
    assert first.status == "unique" and second.status == "near" and second.undecided
    for i in range(30):
        det.check(f"http://o.example/own{i}", origin_page(f"Own {i}", 500 + i))
    for i in range(1, 12):
        det.check(f"http://o.example/s{i}", origin_page(f"S{i}", 100 + i))
    verdicts = [det.check(f"http://m.example/s{i}", copy_page(f"S{i}", 100 + i)) for i in range(1, 12)]
    assert det.mirror_of("m.example") == "o.example"
    # undecided until the pair is settled, by the 10th copy (5 to spare), then a copy
    assert [v.undecided for v in verdicts] == [True] * 8 + [False] * 3
    assert [v.droppable for v in verdicts] == [False] * 8 + [True] * 3
    late_copy = det.check("http://m.example/s12", copy_page("S12", 112))
    late_origin = det.check("http://o.example/s12", origin_page("S12", 112))
    assert late_copy.status == "unique" and not late_origin.droppable  # the origin's page is kept
    det.report()
    assert (
        det.check("http://m.example/s0?again=1", copy_page("S0", 100)).duplicate_of == "http://o.example/s0"
    )
    assert det.check("http://c.example/s12", copy_page("S12", 112)).duplicate_of == "http://o.example/s12"


def _mirror_site() -> list[tuple[str, str]]:
    """An origin of 25 documents and a copy of 15 of them in another template, no canonical link."""
    pages = [(f"http://o.example/p{i}", origin_page(f"P{i}", 200 + i)) for i in range(25)]
    pages += [(f"http://m.example/c{i}", copy_page(f"P{i}", 200 + i)) for i in range(15)]
    return pages


@pytest.mark.parametrize("order", ["mirror-first", "origin-first", "shuffled-1", "shuffled-2", "shuffled-3"])
def test_the_report_shows_the_origin_as_representative_whatever_came_first(order: str) -> None:
    """Whatever came first, the report's clusters are represented by the origin's pages, the
    host table counts the mirror's copies as its duplicates, and the mirror table agrees."""
    pages = _mirror_site()
    if order == "mirror-first":
        pages.sort(key=lambda p: "o.example" in p[0])
    elif order.startswith("shuffled"):
        random.Random(int(order[-1])).shuffle(pages)
    det = NearDupDetector()
    verdicts = [det.check(url, html) for url, html in pages]
    report = det.report()
    assert [(m["host"], m["mirror_of"]) for m in report["mirrors"]] == [("m.example", "o.example")]
    assert all(c["representative"].startswith("http://o.example/") for c in report["clusters"])
    hosts = {h["host"]: h for h in report["hosts"]}
    assert hosts["m.example"]["duplicate_share"] == report["mirrors"][0]["duplicate_share"] == 1.0
    assert hosts["o.example"]["duplicate_share"] == 0.0
    assert hosts["m.example"]["mirror_of"] == "o.example"
    assert totals(report) == counts_of(verdicts)  # promotions at the end swap, never recount
    pairs = list(pair_rows(cluster_rows(det.storage)))
    assert len(pairs) == 15 and all(p["duplicate_of"].startswith("http://o.example/") for p in pairs)


def test_a_url_fetched_again_is_a_revisit() -> None:
    det = NearDupDetector()
    first = det.check(ORIGINAL, origin_page("Story", 1))
    again = det.check(ORIGINAL, origin_page("Story", 1))
    assert first.status == again.status == "unique" and again.revisit and again.counted == "revisits"
    report = det.report()
    assert totals(report) == counts_of([first, again]) == det.counts
    assert report["totals"]["revisits"] == 1 and report["totals"]["unique"] == 1
    assert report["hosts"][0]["pages"] == 2 and report["hosts"][0]["revisits"] == 1


@pytest.mark.parametrize(
    ("values", "target"),
    [
        (['<https://a.example/x>; rel="canonical"'], "https://a.example/x"),
        (["<https://a.example/x>; rel=canonical"], "https://a.example/x"),
        (
            ['<https://a.example/amp>; rel="amphtml", <https://a.example/x>; rel="canonical"'],
            "https://a.example/x",
        ),
        (['<https://a.example/a,b>; rel="alternate canonical"'], "https://a.example/a,b"),
        (['<https://a.example/p>; rel="preload"', '</x>; title="a, b"; rel="canonical"'], "/x"),
        (['<https://a.example/p>; rel="preload"'], ""),
        (["garbage", ""], ""),
    ],
)
def test_the_canonical_link_header(values: list[str], target: str) -> None:
    assert parse_link_header(values) == target


@pytest.mark.parametrize(
    ("url", "href", "address"),
    [
        ("http://a.example/x?print=1", "/x", "http://a.example/x"),
        ("http://a.example/x", "http://a.example/x#top", ""),  # its own address
        ("http://b.example/c", "//a.example/x", "http://a.example/x"),
        ("http://b.example/c", "mailto:a@b.example", ""),
        ("http://b.example/c", "  ", ""),
    ],
)
def test_the_canonical_address(url: str, href: str, address: str) -> None:
    assert canonical_address(url, href) == address


@pytest.mark.parametrize("same_text", [True, False], ids=["exact", "near"])
@pytest.mark.parametrize("declared", ["", "link", "header"])
def test_every_kind_of_match_knows_where_its_original_is(same_text: bool, declared: str) -> None:
    """Whatever rule joined a copy checked first (identical main text or an edited copy), the
    original replaces it when a page names it canonical, and a cross-host duplicate with no such
    evidence is undecided: the decision is the same for ``exact`` and ``near``."""
    make_copy = origin_page if same_text else copy_page
    head = canonical(ORIGINAL) if declared == "link" else ""
    det = NearDupDetector()
    copy = det.check(
        COPY,
        make_copy("Story", 3, head) if declared == "link" else make_copy("Story", 3),
        canonical=ORIGINAL if declared == "header" else "",
    )
    original = det.check(ORIGINAL, origin_page("Story", 3))
    assert copy.status == "unique"
    assert original.status == ("exact" if same_text else "near")
    assert original.is_duplicate and original.duplicate_of == COPY
    if declared:
        assert original.replaced == COPY and not original.undecided and not original.droppable
        assert det.report()["clusters"][0]["representative"] == ORIGINAL
    else:
        assert original.replaced is None and original.undecided and not original.droppable
