"""Fuzz target of the compiled pass (#32): generated pages, and the corpus of pages that once
failed (``tests/fuzz_corpus/``), through the walk of the parser's events and of a parsed tree.

Whatever the markup, the pass ends with an outcome, never raises, and counts work linear in the
page (at most ``MAX_WORK_PER_BYTE`` units per byte); within the default budget no page of this
size is skipped for its work. Bounded in CI by the number of examples; run more with
``--hypothesis-seed`` or ``benchmarks/bench_budget.py --fuzz N``, and under AddressSanitizer as
README's Development section says.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from benchmark_modules import load_benchmark
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.native.extract import Extractor
from neardup_scrapy.core.text import parse_plain
from neardup_scrapy.worker import _check as worker_check

BENCH = load_benchmark("bench_budget")
CORPUS = sorted((Path(__file__).resolve().parents[2] / "fuzz_corpus").glob("*.html.gz"))
#: Work units per byte of the costliest known page (see test_budget_work.py), and a constant
#: for the smallest pages (the <title>, the tokens of a short text).
MAX_WORK_PER_BYTE = 24
WORK_CONSTANT = 10_000
OUTCOMES = {"ok", "empty", "fallback"}

_JUNK = st.sampled_from([*BENCH._JUNK, "\u0301", "\u202e", "\ud800", "&#0;", "<![CDATA[", "<?xml ?>"])
_ATTRIBUTES = st.sampled_from(BENCH._ATTRS)


@st.composite
def motif(draw: st.DrawFn) -> str:
    """Units of random kinds with random attributes, nested ``depth`` deep, some left open."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(BENCH.ELEMENTS + BENCH.SPECIAL))
        opening, closing = BENCH._unit(kind)
        if kind == "attributes":
            opening, closing = "<p " + "x=1 " * draw(st.integers(0, 600)) + ">a", "</p>"
        elif opening.startswith("<") and opening[1:2].isalpha() and draw(st.booleans()):
            opening = opening.replace(">", " " + draw(_ATTRIBUTES) + ">", 1)
        if draw(st.integers(0, 4)) == 0:
            closing = ""
        if draw(st.integers(0, 4)) == 0:
            opening += draw(_JUNK)
        parts.append((opening, closing))
    depth = draw(st.sampled_from([1, 1, 2, 10, 100, 2100]))
    return "".join(o for o, _ in parts) * depth + "".join(c for _, c in reversed(parts)) * depth


@st.composite
def page(draw: st.DrawFn) -> bytes:
    """A page of a few motifs repeated up to ~100 KB, junk and random bytes spliced in."""
    motifs = draw(st.lists(motif(), min_size=1, max_size=3))
    out = [draw(st.sampled_from([BENCH.HEAD, "", "<html><body>", "<title>a b</title>"]))]
    for _ in range(draw(st.integers(1, 6))):
        piece = draw(st.sampled_from(motifs))
        out.append(piece * draw(st.integers(1, max(1, 20_000 // max(len(piece), 1)))))
        if draw(st.integers(0, 3)) == 0:
            out.append(draw(_JUNK) * draw(st.integers(1, 500)))
    data = bytearray("".join(out).encode("utf-8", "surrogatepass")[:120_000])
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.binary(max_size=8))
    return bytes(data)


def _pass(data: bytes) -> None:
    """The compiled pass from the events and from the tree: an outcome, in linear work."""
    bound = MAX_WORK_PER_BYTE * len(data) + WORK_CONSTANT
    events = Extractor()
    outcome = events.extract_html(data, 500_000, 0.0, 0)
    assert outcome[0] in OUTCOMES, outcome[0]
    assert events.last_work <= bound, (events.last_work, len(data))
    root = parse_plain(data)
    if root is not None:
        tree = Extractor()
        assert tree.extract(root, 500_000, 0.0, 0)[0] in OUTCOMES
        assert tree.last_work <= bound, (tree.last_work, len(data))


@given(page())
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
def test_the_pass_ends_in_linear_work_on_generated_pages(data: bytes) -> None:
    _pass(data)


@given(page())
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
def test_a_generated_page_is_never_over_the_default_budget(data: bytes) -> None:
    detector = NearDupDetector(repeat_cache=0)
    try:
        verdict = detector.check("http://fuzz.test/a", data)
        assert verdict.reason not in ("too much work", "timeout")
    finally:
        detector.close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", CORPUS, ids=[path.name.split(".")[0] for path in CORPUS])
def test_the_corpus_of_pages_that_once_failed(path: Path) -> None:
    data = gzip.decompress(path.read_bytes())
    _pass(data)
    detector = NearDupDetector(repeat_cache=0)
    try:
        for verdict in (
            detector.check("http://corpus.test/bytes", data),
            detector.check("http://corpus.test/tree", tree=parse_plain(data)),
            worker_check(
                detector, "http://corpus.test/worker", data.decode("utf-8", "replace"), None, len(data)
            ),
        ):
            assert verdict.status != "skipped" or verdict.reason == "no text", verdict.reason
    finally:
        detector.close()


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 7
