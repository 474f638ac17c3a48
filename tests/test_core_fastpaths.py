"""The fast paths of the core give exactly what their plain reference definitions give.

* ``WordHasher`` (bytes, memoised pieces) against ``token_hashes(tokenize(normalize_text()))``;
* ``host_of`` (memoised by origin) against ``urlsplit`` on the whole url;
* ``simhash64`` (both bit-counting paths) against per-bit counting;
* the repeat cache (byte-identical bodies skip parsing) against a detector without it;
* ``extract_main_text(fold=False)`` against the folded text.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.hashing import token_hashes
from neardup_scrapy.core.hosts import _host_of_origin, host_of
from neardup_scrapy.core.simhash import simhash64
from neardup_scrapy.core.text import extract_main_text, normalize_text, parse_html, tokenize
from neardup_scrapy.core.tokens import WordHasher

# Characters that exercise every branch: ASCII words, digits and punctuation, Latin and Cyrillic
# letters, case folding that changes length (ß, İ), compatibility forms (ligature, full width,
# superscript, Arabic-Indic digits), combining marks (one composes with "=" to "≠"), typographic
# separators and no-break space, CJK and an emoji.
ALPHABET = (
    "abcXYZ019_ -.,;:'\"!?()<>=/\t\n"
    "éüßİçñ"
    + "привет"
    + "\ufb01\uff21\uff22\uff11\uff12\u00b2\u0663\u0664"  # ligature fi, full width, superscript, Arabic-Indic
    + "\u0301\u0338"  # combining acute, combining long solidus overlay
    + "\u2019\u2018\u201c\u201d\u2013\u2014\u2026\u00a0\u00ab\u00bb\u2022\u00b7"
    + "\u4e2d\u6587\u5b57\U0001f310"
)
texts = st.text(alphabet=ALPHABET, max_size=300)


@given(st.lists(texts, min_size=1, max_size=6), st.booleans(), st.integers(min_value=0, max_value=30))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_word_hasher_equals_reference(pages: list[str], mask_digits: bool, max_entries: int) -> None:
    hasher = WordHasher(5, mask_digits=mask_digits, max_entries=max_entries)
    for text in pages:
        expected = token_hashes(tokenize(normalize_text(text, mask_digits)), 5).tolist()
        assert hasher(text).tolist() == expected


url_parts = st.tuples(
    st.sampled_from(["http", "https", "ftp", "HTTP", "svn+ssh", ""]),
    st.sampled_from(["://", ":", "//", ""]),
    st.text(alphabet="abcXY.-_:@[]19", max_size=20),
    st.text(alphabet="/?#=&ab", max_size=10),
)


@given(url_parts)
@settings(max_examples=400)
def test_host_of_equals_urlsplit_on_the_whole_url(parts: tuple[str, str, str, str]) -> None:
    url = "".join(parts)
    assert host_of(url) == _host_of_origin.__wrapped__(url)


@given(st.integers(min_value=1, max_value=5000), st.integers(min_value=0, max_value=2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_simhash_equals_per_bit_majority(n: int, seed: int) -> None:
    values = np.random.default_rng(seed).integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
    expected = 0
    for bit in range(64):
        ones = int(((values >> np.uint64(bit)) & np.uint64(1)).sum())
        if 2 * ones > n:
            expected |= 1 << bit
    assert simhash64(values) == expected


@pytest.mark.parametrize("n", [1, 254, 255, 256, 510, 511, 2047, 2048, 2049])
def test_simhash_lane_sums_do_not_overflow(n: int) -> None:
    """Every bit set in every shingle: a byte lane summed over more than 255 rows would wrap."""
    ones = np.full(n, 2**64 - 1, dtype=np.uint64)
    assert simhash64(ones) == 2**64 - 1
    mostly = ones.copy()
    mostly[: (n - 1) // 2] = 0  # still a strict majority of ones
    assert simhash64(mostly) == 2**64 - 1
    assert simhash64(np.zeros(n, dtype=np.uint64)) == 0


def _pages(seed: int) -> list[tuple[str, bytes]]:
    """A crawl with byte-identical bodies on several urls and hosts, and empty pages."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 8))) for _ in range(300)]
    paragraphs = [" ".join(rng.choice(vocab) for _ in range(200)) for _ in range(12)]
    bodies = [f"<html><body><article><p>{text}</p></article></body></html>" for text in paragraphs]
    bodies.append("<html><body><script>only code</script></body></html>")
    out = []
    for i in range(80):
        body = rng.choice(bodies)
        out.append((f"http://127.0.0.{1 + i % 3}/p/{i}", body.encode()))
    return out


def test_repeat_cache_gives_the_same_verdicts() -> None:
    for scope in ("global", "host"):
        cached = NearDupDetector(scope=scope)
        plain = NearDupDetector(scope=scope, repeat_cache=0)
        for url, body in _pages(3):
            assert cached.check(url, body).to_dict() == plain.check(url, body).to_dict()
        assert cached._repeats.hits > 0 and plain._repeats.hits == 0
        assert cached.report()["totals"] == plain.report()["totals"]


def test_repeat_cache_is_bounded_and_keyed_by_encoding() -> None:
    det = NearDupDetector(repeat_cache=3)
    body = "<html><body><p>Caf\xe9 au lait, a short text of some words for the test.</p></body></html>"
    latin1 = det.check("http://127.0.0.1/a", body.encode("latin-1"), encoding="latin-1")
    as_utf8 = det.check("http://127.0.0.1/b", body.encode("latin-1"), encoding="utf-8")
    assert latin1.status == "unique" and as_utf8.status == "unique"  # decoded differently
    for i in range(10):
        det.check(f"http://127.0.0.1/{i}", f"<p>page {i} " * 30)
    assert len(det._repeats) == 3


def test_unfolded_text_has_the_same_words() -> None:
    html = b"<html><body><main><h1>Title</h1>\n\n  <p>One   two\tthree</p>\n<p>four</p></main></body></html>"
    root = parse_html(html)
    assert root is not None
    raw = extract_main_text(root, fold=False)
    assert " ".join(raw.split()) == extract_main_text(root) == "Title One two three four"
