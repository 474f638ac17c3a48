"""Mirror evidence and mirror pairs: counted the same in every order, decided by evidence."""

from __future__ import annotations

import itertools
import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.mirrors import (
    MirrorEvidence,
    MirrorLedger,
    copies,
    copies_most,
    mirror_pairs,
    read_evidence,
    settled,
    survives,
    undecided_pairs,
)


def _from_scratch(
    clusters: list[list[str]],
) -> tuple[dict[str, int], dict[str, int], dict[str, dict[str, int]]]:
    """The evidence's definition: documents, duplicated documents and shared documents per host."""
    documents: Counter[str] = Counter()
    duplicated: Counter[str] = Counter()
    shared: dict[str, Counter[str]] = {}
    for hosts in clusters:
        present = set(hosts)
        for host in present:
            documents[host] += 1
            if len(present) > 1:
                duplicated[host] += 1
            for other in present - {host}:
                shared.setdefault(host, Counter())[other] += 1
    return dict(documents), dict(duplicated), {h: dict(c) for h, c in shared.items()}


events = st.lists(
    st.tuples(
        st.sampled_from(["new", "join", "union"]),
        st.integers(0, 30),
        st.integers(0, 30),
        st.sampled_from("abcd"),
    ),
    max_size=120,
)


@given(events)
@settings(max_examples=300, deadline=None)
def test_ledger_equals_its_definition(steps: list[tuple[str, int, int, str]]) -> None:
    """Whatever the sequence of new pages, joins and unions, the incremental counters equal the
    counters recomputed from the clusters."""
    ledger = MirrorLedger()
    pages: list[str] = []  # host of every page id
    parent: list[int] = []

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for kind, a, b, host in steps:
        if kind == "new" or not pages:
            pages.append(host)
            parent.append(len(parent))
            ledger.new_document(host)
        elif kind == "join":
            root = find(a % len(pages))
            pages.append(host)
            parent.append(root)
            ledger.join(root, pages[root], host)
        else:
            ra, rb = find(a % len(pages)), find(b % len(pages))
            if ra != rb:
                ledger.union(ra, pages[ra], rb, pages[rb])
                parent[ra] = rb
    clusters: dict[int, list[str]] = {}
    for i, host in enumerate(pages):
        clusters.setdefault(find(i), []).append(host)
    documents, duplicated, shared = _from_scratch(list(clusters.values()))
    ev = ledger.evidence({})
    assert ev.documents == documents
    assert ev.duplicated == duplicated
    assert ev.shared == shared


def _ev(
    documents: dict[str, int],
    shared: dict[tuple[str, str], int],
    canonical: dict[tuple[str, str], int] | None = None,
) -> MirrorEvidence:
    duplicated: Counter[str] = Counter()
    table: dict[str, dict[str, int]] = {}
    for (a, b), n in shared.items():
        table.setdefault(a, {})[b] = n
        table.setdefault(b, {})[a] = n
    for host, row in table.items():
        duplicated[host] = min(documents[host], sum(row.values()))
    canon: dict[str, dict[str, int]] = {}
    for (a, b), n in (canonical or {}).items():
        canon.setdefault(a, {})[b] = n
    return MirrorEvidence(
        pages=dict(documents),
        documents=dict(documents),
        duplicated=dict(duplicated),
        shared=table,
        canonical=canon,
    )


evidence_cases = st.tuples(
    st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 40), min_size=2),
    st.dictionaries(st.tuples(st.sampled_from("abcdefgh"), st.sampled_from("abcdefgh")), st.integers(1, 30)),
    st.dictionaries(st.tuples(st.sampled_from("abcdefgh"), st.sampled_from("abcdefgh")), st.integers(1, 5)),
    st.integers(1, 8),
    st.sampled_from([0.25, 0.5, 0.8]),
)


@given(evidence_cases)
@settings(max_examples=400, deadline=None)
def test_the_rows_read_are_all_the_decisions_need(
    case: tuple[dict[str, int], dict[tuple[str, str], int], dict[tuple[str, str], int], int, float],
) -> None:
    """Evidence read with only the rows of the hosts that copy most of what they have and of the
    hosts they share enough with decides every pair as the whole evidence does, at the share
    read and above."""
    documents, pairs, canonical, min_pages, share = case
    hosts = set(documents)
    full = _ev(
        documents,
        {(a, b): n for (a, b), n in pairs.items() if a < b and {a, b} <= hosts},
        {(a, b): n for (a, b), n in canonical.items() if a != b and {a, b} <= hosts},
    )
    asked: list[list[str]] = []

    def rows(wanted: list[str]) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
        asked.append(wanted)
        return (
            {h: full.shared[h] for h in wanted if h in full.shared},
            {h: full.canonical[h] for h in wanted if h in full.canonical},
        )

    part = read_evidence(full.documents, full.duplicated, rows, min_pages=min_pages, share=share)
    assert len(asked) <= 2
    for at in (share, min(1.0, 2 * share)):
        assert mirror_pairs(part, min_pages, at) == mirror_pairs(full, min_pages, at)
        assert undecided_pairs(part, min_pages, at) == undecided_pairs(full, min_pages, at)
    for host in hosts:
        if not copies_most(full, host, min_pages, share):
            continue
        assert part.shared.get(host) == full.shared.get(host)
        for origin, n in full.shared.get(host, {}).items():
            if n >= min_pages:
                decided = copies(full, host, origin, min_pages, share)
                assert copies(part, host, origin, min_pages, share) == decided


def _pairs(ev: MirrorEvidence) -> set[tuple[str, str]]:
    return {(p.host, p.mirror_of) for p in mirror_pairs(ev, 5, 0.5)}


def test_a_copy_of_part_of_a_site_mirrors_it() -> None:
    ev = _ev({"origin": 400, "copy": 110}, {("origin", "copy"): 110})
    assert _pairs(ev) == {("copy", "origin")}


def test_an_aggregator_copies_each_origin_and_no_origin_copies_it() -> None:
    documents = {"agg": 100, "a": 8, "b": 30, "c": 3, "d": 40}
    ev = _ev(documents, {("agg", "a"): 8, ("agg", "b"): 30, ("agg", "c"): 3, ("agg", "d"): 20})
    assert _pairs(ev) == {("agg", "a"), ("agg", "b"), ("agg", "d")}  # c shares too few documents


def test_two_copies_of_one_origin_do_not_copy_each_other() -> None:
    documents = {"origin": 300, "archive": 150, "wiki": 80}
    shared = {("archive", "origin"): 60, ("wiki", "origin"): 60, ("archive", "wiki"): 40}
    assert _pairs(_ev(documents, shared)) == {("archive", "origin"), ("wiki", "origin")}


def test_a_full_mirror_needs_evidence_for_its_direction() -> None:
    documents = {"a.example": 50, "b.example": 50}
    shared = {("a.example", "b.example"): 50}
    assert _pairs(_ev(documents, shared)) == set()
    assert undecided_pairs(_ev(documents, shared), 5, 0.5) == [("a.example", "b.example")]
    with_canonical = _ev(documents, shared, {("b.example", "a.example"): 30})
    assert _pairs(with_canonical) == {("b.example", "a.example")}
    assert undecided_pairs(with_canonical, 5, 0.5) == []


def test_a_copy_is_not_named_as_the_origin_of_another_copy() -> None:
    """A full mirror (canonical links to the origin) and a digest that copies some of the
    origin's pages: the digest mirrors the origin, not the mirror that holds the same pages."""
    documents = {"origin": 22, "mirror": 22, "digest": 7}
    shared = {("mirror", "origin"): 22, ("digest", "origin"): 5, ("digest", "mirror"): 5}
    ev = _ev(documents, shared, {("mirror", "origin"): 22})
    assert _pairs(ev) == {("mirror", "origin"), ("digest", "origin")}
    # without the origin in the crawl, the mirror is the only source the digest is seen to copy
    alone = _ev({"mirror": 22, "digest": 7}, {("digest", "mirror"): 5})
    assert _pairs(alone) == {("digest", "mirror")}


def _site_pages(seed: int) -> list[tuple[str, str]]:
    """An origin (docs site with 60 pages) and a mirror that copies 40 of them in another
    template and names the origin in rel=canonical."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 9))) for _ in range(2000)]
    pages = []
    for i in range(60):
        words = " ".join(rng.choice(vocab) for _ in range(250))
        title = f"Chapter {i} {vocab[i]}"
        pages.append(
            (
                f"http://127.0.0.1/docs/{i}.html",
                f"<html><head><title>{title} - Docs</title></head><body><nav>Docs home index</nav>"
                f"<main><h1>{title}</h1><p>{words}</p></main></body></html>",
            )
        )
        if i < 40:
            pages.append(
                (
                    f"http://127.0.0.2/mirror/{i}",
                    f"<html><head><title>{title} | Mirror</title>"
                    f"<link rel='canonical' href='http://127.0.0.1/docs/{i}.html'></head><body>"
                    f"<div class='top'>Mirror site</div>"
                    f"<div class='text'><h1>{title}</h1><p>{words}</p></div>"
                    "<div class='foot'>Copied with permission</div></body></html>",
                )
            )
    return pages


def test_mirror_pairs_are_the_same_in_every_order() -> None:
    base = _site_pages(1)
    results = set()
    for seed in range(5):
        pages = list(base)
        random.Random(seed).shuffle(pages)
        det = NearDupDetector()
        for url, html in pages:
            det.check(url, html)
        report = det.report()
        results.add(tuple((m["host"], m["mirror_of"]) for m in report["mirrors"]))
        assert det.mirror_of("127.0.0.2") == "127.0.0.1"
        assert det.mirror_of("127.0.0.1") is None
    assert results == {(("127.0.0.2", "127.0.0.1"),)}


def test_order_of_arrival_never_names_the_origin_a_mirror() -> None:
    """Mirror pages first, origin pages after: the origin is still the origin."""
    pages = _site_pages(2)
    mirror_first = sorted(pages, key=lambda p: "127.0.0.1" in p[0])
    det = NearDupDetector()
    for url, html in mirror_first:
        det.check(url, html)
    assert [(m["host"], m["mirror_of"]) for m in det.report()["mirrors"]] == [("127.0.0.2", "127.0.0.1")]


def test_evidence_is_the_same_in_every_order() -> None:
    base = _site_pages(3)
    seen = []
    for perm in itertools.islice(itertools.permutations(range(3)), 3):
        chunks = [base[i::3] for i in perm]
        det = NearDupDetector()
        for chunk in chunks:
            for url, html in chunk:
                det.check(url, html)
        ev = det.storage.mirror_evidence()
        seen.append((ev.documents, ev.duplicated, ev.shared))
    assert seen[0] == seen[1] == seen[2]


def test_a_confirmed_mirror_stays_while_its_own_pages_arrive_and_goes_when_copies_are_few() -> None:
    """A mirror named on 5 copies of 9 documents (56%) is not withdrawn when 5 pages of its own
    come next (5 of 14, 36%: a crawl reached its copies first), but is when its copies fall to
    5 of 25 (20%, under half of ``mirror_share``)."""
    pages = _site_pages(4)
    origin = [p for p in pages if "127.0.0.1" in p[0]]
    copies = [p for p in pages if "127.0.0.2" in p[0]][:5]
    rng = random.Random(9)
    vocab = ["".join(rng.choice("qrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(2000)]

    def own(i: int) -> tuple[str, str]:
        words = " ".join(rng.choice(vocab) for _ in range(250))
        return (
            f"http://127.0.0.2/own/{i}",
            f"<html><body><main><h1>Own page {i}</h1><p>{words}</p></main></body></html>",
        )

    det = NearDupDetector()
    for url, html in [*origin, *copies, *(own(i) for i in range(4))]:
        det.check(url, html)
    det.report()
    assert det.mirror_of("127.0.0.2") == "127.0.0.1"
    for i in range(4, 9):
        det.check(*own(i))
    det.report()
    assert det.mirror_of("127.0.0.2") == "127.0.0.1"
    for i in range(9, 20):
        det.check(*own(i))
    det.report()
    assert det.mirror_of("127.0.0.2") is None


# -- settled directions and the requests a crawl gives up -------------------------------------------
def _crawl_with_skips(pages: list[tuple[str, str]], min_pages: int = 5, share: float = 0.5) -> dict[str, int]:
    """A crawl of ``pages`` (``(host, document)`` in arrival order) that skips a host once its pair
    is settled (:func:`settled`), fetches what it kept aside when the pair is withdrawn, and at the
    end gives the kept pages up only where the pair :func:`survives` them (else fetches them and
    decides again), as ``neardup_scrapy.mirrorskip`` does; returns the pages given up per host."""
    ledger = MirrorLedger()
    roots: dict[str, tuple[int, str]] = {}
    counts: Counter[str] = Counter()
    held: dict[str, list[str]] = {}
    acting: set[tuple[str, str]] = set()

    def fetch(host: str, doc: str) -> None:
        counts[host] += 1
        if doc in roots:
            ledger.join(*roots[doc], host)
        else:
            roots[doc] = (len(roots), host)
            ledger.new_document(host)

    def refresh() -> dict[str, str]:
        ev = ledger.evidence(counts)
        pairs = {(p.host, p.mirror_of) for p in mirror_pairs(ev, min_pages, share)}
        acting.intersection_update(pairs)
        acting.update(p for p in pairs if settled(ev, *p, min_pages, share))
        skipping = dict(sorted(acting))
        for host in [h for h in held if h not in skipping]:
            for doc in held.pop(host):
                fetch(host, doc)
        return skipping

    for host, doc in pages:
        if host in refresh():
            held.setdefault(host, []).append(doc)
        else:
            fetch(host, doc)
    while True:  # spider_idle
        skipping = refresh()
        ev = ledger.evidence(counts)
        fetch_again = [
            h
            for h, docs in held.items()
            if not survives(ev, h, skipping[h], len(docs), min_pages=min_pages, share=share, keep=0.5)
        ]
        if not fetch_again:
            return {h: len(docs) for h, docs in held.items()}
        for host in fetch_again:
            for doc in held.pop(host):
                fetch(host, doc)


def _arrivals(
    shared: int, origin_own: int, copy_own: int, seed: int, copy_speed: int
) -> list[tuple[str, str]]:
    """Pages of an origin ``o`` (``shared`` + ``origin_own`` documents) and of its copy ``m``
    (``shared`` + ``copy_own``) in a crawl order: shuffled (``copy_speed`` 0), or the origin's
    copied pages first while the copy is fetched ``copy_speed`` times faster (a crawl far ahead
    on the copy: the order that makes counts name the origin the copy)."""
    rng = random.Random(seed)
    origin = [("o", f"s{i}") for i in range(shared)] + [("o", f"r{i}") for i in range(origin_own)]
    copy = [("m", f"s{i}") for i in range(shared)] + [("m", f"t{i}") for i in range(copy_own)]
    rng.shuffle(origin)
    rng.shuffle(copy)
    if not copy_speed:
        pages = origin + copy
        rng.shuffle(pages)
        return pages
    origin.sort(key=lambda page: not page[1].startswith("s"))
    pages = []
    while origin or copy:
        pages += copy[:copy_speed] + origin[:1]
        copy, origin = copy[copy_speed:], origin[1:]
    return pages


def _truth(pages: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The pairs on the evidence of every page."""
    ledger = MirrorLedger()
    roots: dict[str, tuple[int, str]] = {}
    counts: Counter[str] = Counter()
    for host, doc in pages:
        counts[host] += 1
        if doc in roots:
            ledger.join(*roots[doc], host)
        else:
            roots[doc] = (len(roots), host)
            ledger.new_document(host)
    return {(p.host, p.mirror_of) for p in mirror_pairs(ledger.evidence(counts), 5, 0.5)}


@given(
    st.integers(5, 30),
    st.integers(0, 40),
    st.integers(0, 8),
    st.integers(0, 2**31),
    st.sampled_from([0, 1, 2, 3]),
)
@settings(max_examples=300, deadline=None)
def test_no_page_is_given_up_unless_its_host_is_a_mirror_on_every_page(
    shared: int, origin_own: int, copy_own: int, seed: int, copy_speed: int
) -> None:
    """Whatever the order -- shuffled, or a crawl far ahead on the copy, the order in which counts
    of what has arrived name the origin the copy -- the pages a crawl gives up are pages of a host
    that the evidence of all pages names a mirror: a claim on counts may settle the wrong way, but
    the pages it kept aside are fetched before the end, because the claim would not hold whatever
    they are."""
    pages = _arrivals(shared, origin_own, copy_own, seed, copy_speed)
    truth = _truth(pages)
    for host, count in _crawl_with_skips(pages).items():
        assert not count or (host, "o" if host == "m" else "m") in truth, (host, count, truth)


def test_a_settled_copy_gives_most_of_its_pages_up() -> None:
    """A copy of 20 of its origin's 47 documents, met in shuffled orders: skipped once settled, and
    what it kept aside given up at the end (what skipping saves), the origin never."""
    given_up = [_crawl_with_skips(_arrivals(20, 27, 3, seed, 0)) for seed in range(40)]
    assert not any(g.get("o") for g in given_up)
    assert sum(g.get("m", 0) for g in given_up) > 100  # 157 of the 40 copies' pages


def test_settled_needs_a_margin_and_a_declaration_is_one() -> None:
    ev = MirrorEvidence(
        documents={"m": 12, "o": 14},
        duplicated={"m": 10, "o": 10},
        shared={"m": {"o": 10}, "o": {"m": 10}},
    )
    assert copies(ev, "m", "o", 5, 0.5) is True  # m is more completely made of o's documents
    assert not settled(ev, "m", "o", 5, 0.5)  # by 2 documents: a crawl ahead on m flips that
    ev.canonical = {"m": {"o": 5}}
    assert settled(ev, "m", "o", 5, 0.5)  # five copies name the origin's pages canonical
    ev.canonical = {"m": {"o": 5}, "o": {"m": 1}}
    assert not settled(ev, "m", "o", 5, 0.5)
    ev = MirrorEvidence(
        documents={"m": 12, "o": 20},
        duplicated={"m": 11, "o": 11},
        shared={"m": {"o": 11}, "o": {"m": 11}},
    )
    assert settled(ev, "m", "o", 5, 0.5)  # copies 11 of 12 (5 to spare); o has 9 of its own, m 1
    assert survives(ev, "m", "o", 3, min_pages=5, share=0.5, keep=0.5)
    assert not survives(ev, "m", "o", 40, min_pages=5, share=0.5, keep=0.5)  # could be its own
