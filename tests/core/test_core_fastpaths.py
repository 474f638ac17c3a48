"""The fast paths of the core give exactly what their plain definitions give.

* the compiled tokenizer (ASCII in C, non-ASCII pieces normalised one by one, memoised) against
  normalising the whole text at once;
* ``host_of`` (memoised by origin) against ``urlsplit`` on the whole url;
* the repeat cache (byte-identical bodies skip parsing) against a detector without it.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.hosts import _host_of_origin, host_of
from neardup_scrapy.core.native import tokens as tokens_module
from neardup_scrapy.core.native.sketch import digest_bytes, digest_text
from neardup_scrapy.core.native.tokens import Tokenizer, normalize_piece

# Characters that exercise every branch: ASCII words, digits and punctuation, Latin and Cyrillic
# letters, case folding that changes length (ß, İ), compatibility forms (ligature, full width,
# superscript, Arabic-Indic digits), combining marks (one composes with "=" to "≠"), typographic
# separators and no-break space, CJK, kana, Thai and an emoji.
# Chinese and Japanese, hashed in C character by character: ideographs, kana, a kana that
# composes with a following voiced sound mark (combining U+3099/U+309A and spacing U+309B/U+309C),
# the date units that mask the digits before them (年 月 日), full-width digits, the ideographic
# full stop and comma, the prolonged sound mark, and kana digraphs that NFKC expands (ヿ ゟ).
CJK = (
    "\u4e2d\u6587\u6771\u4eac\u3072\u304b\u30ab\u30c8"
    "\u3099\u309a\u309b\u309c\u5e74\u6708\u65e5\uff11\uff12\u3002\u3001\u30fc\u30ff\u309f"
)
ALPHABET = (
    "abcXYZ019_ -.,;:'\"!?()<>=/\t\n"
    "éüßİçñ"
    + "привет"
    + "\ufb01\uff21\uff22\uff11\uff12\u00b2\u0663\u0664"  # ligature fi, full width, superscript, Arabic-Indic
    + "\u0301\u0338"  # combining acute, combining long solidus overlay
    + "\u2019\u2018\u201c\u201d\u2013\u2014\u2026\u00a0\u00ab\u00bb\u2022\u00b7"
    + "\u4e2d\u6587\u5b57\u3072\u30ab\u0e01\u0e32\U0001f310"
    + CJK
)
texts = st.text(alphabet=ALPHABET, max_size=300)


def _hashes(tokenizer: Tokenizer, text: str) -> list[int]:
    return np.frombuffer(tokenizer.hashes(text), dtype="<u8").tolist()


@given(st.lists(texts, min_size=1, max_size=6), st.booleans())
@settings(max_examples=300, deadline=None)
def test_tokens_equal_normalising_the_whole_text(pages: list[str], mask_digits: bool) -> None:
    """Normalising piece by piece (and from the memo) gives the tokens of the whole text."""
    tokenizer = Tokenizer(3, mask_digits=mask_digits, mask_dates=False)
    for text in pages:
        expected = [tokenizer.word_hash(t) for t in normalize_piece(text, mask_digits, False)]
        assert _hashes(tokenizer, text) == expected


@given(st.lists(st.text(alphabet=CJK + "3", max_size=200), min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_cjk_tokens_hashed_in_c_equal_normalising_the_whole_text(pages: list[str]) -> None:
    """With date masking on (digits before 年 月 日 become 0), as by default."""
    tokenizer = Tokenizer(5)
    for text in pages:
        expected = [tokenizer.word_hash(t) for t in normalize_piece(text)]
        assert _hashes(tokenizer, text) == expected


def test_characters_hashed_in_c_are_simple() -> None:
    """Every character the tokenizer hashes in C is one that normalising leaves alone."""
    table = set(tokens_module._simple_table())
    ranges = {cp for lo, hi in tokens_module.SIMPLE_RANGES for cp in range(lo, hi)}
    ranges -= set(map(ord, tokens_module.SIMPLE_EXCLUDED))
    assert ranges <= table
    assert len(ranges) > 27_000


def test_characters_folded_in_c_fold_as_in_any_text() -> None:
    """Every character the C table folds gives, alone and among others (ASCII, combining marks,
    CJK, fractions and spacing accents that fold to several characters), the tokens of
    normalising the whole text, with digits masked or not."""
    table = tokens_module.fold_classes()
    assert len(table) > 15_000
    for mask_digits in (False, True):
        tokenizer = Tokenizer(3, mask_digits=mask_digits, mask_dates=not mask_digits)
        for cp in table:
            c = chr(cp)
            for text in (c + c, "a" + c + "9b", c + "\u0301", "\u4e2d" + c + "\u00bc\u00a8" + c):
                tokens = normalize_piece(text, mask_digits, not mask_digits)
                expected = [tokenizer.word_hash(t) for t in tokens]
                assert _hashes(tokenizer, text) == expected, (mask_digits, text)


def test_european_text_needs_no_python_per_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """Words in Latin, Greek and Cyrillic letters, typographic punctuation, no-break spaces,
    full-width forms and Hangul are folded in C: the Python normaliser is never called."""
    calls: list[str] = []

    def spy(piece: str, *args: bool) -> list[str]:
        calls.append(piece)
        return normalize_piece(piece, *args)

    monkeypatch.setattr(tokens_module, "normalize_piece", spy)
    tokenizer = Tokenizer(3)
    calls.clear()  # the month and weekday names it hashed when built
    full_width = "\uff26\uff35\uff2c\uff2c"
    text = f"Größe\u00a0café «déjà» „Ärger“ привет Σίσυφος ½ {full_width} 한국어 — naïve\u2019s ¶"
    hashes = _hashes(tokenizer, text)
    assert calls == []
    assert hashes == [tokenizer.word_hash(t) for t in normalize_piece(text)]
    assert len(hashes) == 12  # 1/2 is two tokens, "¶" none
    tokenizer = Tokenizer(3)
    calls.clear()
    assert _hashes(tokenizer, "cafe\u0301") == [tokenizer.word_hash("café")]  # decomposed: Python
    assert calls == ["cafe\u0301"]


def test_scripts_without_spaces_are_one_token_per_character() -> None:
    assert normalize_piece("東京タワーは高い") == ["東", "京", "タ", "ワ", "ー", "は", "高", "い"]
    assert normalize_piece("ภาษาไทย") == list("ภาษาไทย")
    assert normalize_piece("한국어 문장") == ["한국어", "문장"]  # Hangul is written with spaces
    assert normalize_piece("Straße \uff26\uff35\uff2c\uff2c \ufb01ne") == ["strasse", "full", "fine"]


DATES = [  # the same page fetched twice: only the date or time changed
    ("Updated 2024-03-01 12:30:05 UTC", "Updated 2025-11-23 08:02:59 UTC"),
    ("am 01.03.2024 um 09:15", "am 23.11.2025 um 18:40"),
    ("on 3 March 2024", "on 21 March 2025"),
    ("on March 3, 2024", "on March 28, 2025"),
    ("Monday, 3 January 2024", "Friday, 9 January 2026"),
    ("am 3. Januar 2024", "am 17. Januar 2025"),
    ("le 3 février 2024", "le 14 février 2025"),
    ("2024年3月1日 12時30分", "2025年11月23日 8時2分"),
    ("posted 5 hours ago", "posted 11 hours ago"),
    ("03/01/24 at 7:05", "11/23/25 at 19:45"),
]


def test_dates_and_times_are_masked() -> None:
    tokenizer = Tokenizer(1)
    zero = tokenizer.word_hash("0")
    for first, again in DATES:
        assert _hashes(tokenizer, first) == _hashes(tokenizer, again), first
        assert zero in _hashes(tokenizer, first)


def test_other_numbers_are_content() -> None:
    """Versions, sizes, counts and identifiers are not dates: they tell pages apart."""
    tokenizer = Tokenizer(1)
    for a, b in [
        ("release 1.63.0 notes", "release 1.64.0 notes"),
        ("i32::MAX is 2147483647", "i64::MAX is 9223372036854775807"),
        ("a buffer of 4096 bytes", "a buffer of 8192 bytes"),
        ("section 4.2 of the manual", "section 4.3 of the manual"),
        ("Page 12 of 40", "Page 13 of 40"),
    ]:
        assert _hashes(tokenizer, a) != _hashes(tokenizer, b), (a, b)
    masked = Tokenizer(1, mask_digits=True)
    assert _hashes(masked, "release 1.63.0") == _hashes(masked, "release 2.74.5")


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
        assert cached._reader.cache.hits > 0 and plain._reader.cache.hits == 0
        assert cached.report()["totals"] == plain.report()["totals"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_a_text_is_digested_as_stored_equal_texts_alike(a: str, b: str) -> None:
    """The repeat cache digests a text's stored characters (no encoding pass): equal texts
    digest alike whatever object holds them, different ones differently."""
    copy = "".join(list(a))  # another object, the same characters
    assert digest_text(copy, 5) == digest_text(a, 5)
    assert (digest_text(a, 5) == digest_text(b, 5)) == (a == b)


def test_texts_of_other_widths_whose_stored_bytes_agree_digest_apart() -> None:
    narrow = "A\x01B\x00"  # 1 byte per character: 41 01 42 00
    wide = "\u0141\u0042"  # 2 bytes per character: 41 01 42 00
    assert digest_text(narrow, 0) != digest_text(wide, 0)
    assert digest_text("café", 0) != digest_bytes("café".encode("latin-1"), 0)


def test_repeat_cache_is_bounded_and_keyed_by_encoding() -> None:
    det = NearDupDetector(repeat_cache=3)
    body = "<html><body><p>Caf\xe9 au lait, a short text of some words for the test.</p></body></html>"
    latin1 = det.check("http://127.0.0.1/a", body.encode("latin-1"), encoding="latin-1")
    as_utf8 = det.check("http://127.0.0.1/b", body.encode("latin-1"), encoding="utf-8")
    # decoded differently: one word differs, so not an exact repeat served by the cache
    assert latin1.status == "unique" and as_utf8.status != "exact"
    assert as_utf8.similarity is None or as_utf8.similarity < 1.0
    for i in range(10):
        det.check(f"http://127.0.0.1/{i}", f"<p>page {i} " * 30)
    assert len(det._reader.cache) == 3
