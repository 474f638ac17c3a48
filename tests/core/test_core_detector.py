"""Detector behaviour: verdicts, clusters and the chaining guard, mirrors, scope, bad input, report."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector, ParameterError
from neardup_scrapy.core.excerpts import common_prefix_length
from neardup_scrapy.core.params import DetectorParams

RNG = random.Random(11)
VOCAB = [
    "".join(RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(RNG.randint(3, 9))) for _ in range(4000)
]


def words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(VOCAB) for _ in range(n)]


def edit(tokens: list[str], share: float, seed: int) -> list[str]:
    """Replace a contiguous run of ``share`` of the tokens."""
    rng = random.Random(seed)
    out = list(tokens)
    n = int(len(out) * share)
    start = rng.randint(0, len(out) - n)
    out[start : start + n] = words(n, seed + 10_000)
    return out


def page(title: str, body: list[str], chrome: str = "") -> bytes:
    paragraphs = "".join(f"<p>{' '.join(body[i : i + 40])}</p>" for i in range(0, len(body), 40))
    return (
        f"<html><head><title>{title}</title></head><body><nav>{chrome}</nav>"
        f"<article><h1>{title}</h1>{paragraphs}</article><footer>{chrome}</footer></body></html>"
    ).encode()


def test_unique_exact_near_and_tag_object() -> None:
    det = NearDupDetector()
    text = words(400, 1)
    v1 = det.check("http://127.0.0.1/a", page("A", text))
    v2 = det.check("http://127.0.0.2/a", page("A", text, chrome="other site menu " * 30))
    v3 = det.check("http://127.0.0.1/a?print=1", page("A", edit(text, 0.03, 2)))
    v4 = det.check("http://127.0.0.1/b", page("B", words(400, 3)))
    assert [v.status for v in (v1, v2, v3, v4)] == ["unique", "exact", "near", "unique"]
    tag = v3.to_dict()
    assert set(tag) == {"status", "duplicate_of", "similarity", "hamming", "cluster", "mirror_of"}
    assert tag["duplicate_of"] == tag["cluster"] == "http://127.0.0.1/a"
    assert 0.8 <= tag["similarity"] < 1.0
    assert isinstance(tag["hamming"], int)
    assert v1.to_dict()["cluster"] == "http://127.0.0.1/a" and v1.duplicate_of is None
    assert v3.reason and v3.matched == "http://127.0.0.1/a"
    json.dumps(tag)


@pytest.mark.parametrize("algorithm", ["minhash", "simhash", "both"])
def test_each_algorithm_finds_close_copies_and_rejects_distinct(algorithm: str) -> None:
    det = NearDupDetector(algorithm=algorithm)
    base = words(800, 4)
    assert det.check("http://h/1", text=" ".join(base)).status == "unique"
    assert det.check("http://h/2", text=" ".join(edit(base, 0.005, 5))).status == "near"
    assert det.check("http://h/3", text=" ".join(words(800, 6))).status == "unique"


def test_minhash_catches_what_simhash_misses_and_both_takes_the_union() -> None:
    base = words(800, 7)
    copy = edit(base, 0.04, 8)  # J ~ 0.85: far for SimHash at 3 bits, near for MinHash at 0.8
    results = {}
    for algorithm in ("minhash", "simhash", "both"):
        det = NearDupDetector(algorithm=algorithm)
        det.check("http://h/1", text=" ".join(base))
        results[algorithm] = det.check("http://h/2", text=" ".join(copy)).status
    assert results == {"minhash": "near", "simhash": "unique", "both": "near"}


def test_threshold_is_respected() -> None:
    base = words(1000, 9)
    far = base
    for place in range(6):  # J ~ 0.5, rewritten in six places: not an edited copy (verify.py)
        far = edit(far, 0.04, 10 + place)
    det = NearDupDetector(threshold=0.8)
    det.check("http://h/1", text=" ".join(base))
    assert det.check("http://h/2", text=" ".join(far)).status == "unique"
    det = NearDupDetector(threshold=0.4, algorithm="minhash")
    det.check("http://h/1", text=" ".join(base))
    assert det.check("http://h/2", text=" ".join(far)).status == "near"


def test_a_copy_of_a_close_member_joins_its_cluster() -> None:
    """P is a near-duplicate of M (J ~0.87), M of the representative R (J ~0.87); P differs
    from R in five places (J ~0.77): it joins R's cluster through M, the guard's one step. (The
    three are copies at addresses of one site that differ in a number: a key, not a name.)"""
    base = words(1000, 12)
    member = edit(base, 0.04, 5)
    page = member
    for place in range(4):
        page = edit(page, 0.012, 20 + place)
    alone = NearDupDetector()
    alone.check("http://h/doc/1", text=" ".join(base))
    assert alone.check("http://h/doc/3", text=" ".join(page)).status == "unique"  # not by itself
    det = NearDupDetector()
    det.check("http://h/doc/1", text=" ".join(base))
    assert det.check("http://h/doc/2", text=" ".join(member)).status == "near"
    verdict = det.check("http://h/doc/3", text=" ".join(page))
    assert (verdict.status, verdict.cluster) == ("near", "http://h/doc/1")
    assert verdict.reason is not None and "http://h/doc/2" in verdict.reason


def test_chaining_guard_keeps_clusters_from_snowballing() -> None:
    """A drifting series (each step ~J 0.85 from the previous) must not become one cluster."""
    det = NearDupDetector(algorithm="minhash")
    current = words(1000, 12)
    statuses = []
    representatives = set()
    for step in range(12):
        verdict = det.check(f"http://h/{step}", text=" ".join(current))
        statuses.append(verdict.status)
        representatives.add(verdict.cluster)
        current = edit(current, 0.03, 100 + step)
    report = det.report()
    largest = max(c["size"] for c in report["clusters"])
    assert largest < 12
    assert len(representatives) >= 2
    # Every member is similar to its representative, or very similar to the member it matched.
    for cluster in report["clusters"]:
        for member in cluster["members"][1:]:
            assert member["similarity"] >= 0.6


def test_union_of_clusters_keeps_first_representative() -> None:
    det = NearDupDetector(algorithm="minhash", threshold=0.7)
    a = words(600, 20)
    b = a[:420] + words(180, 21)  # J(a, b) ~ 0.54: separate clusters
    bridge = a[:510] + b[510:]  # close to both
    assert det.check("http://h/item/1", text=" ".join(a)).status == "unique"
    assert det.check("http://h/item/2", text=" ".join(b)).status == "unique"
    v = det.check("http://h/item/3", text=" ".join(bridge))
    assert v.status == "near" and v.duplicate_of == "http://h/item/1"


def test_a_copy_of_a_merged_representative_joins_in_either_order() -> None:
    """Y (a document) and X (Y rewritten in four places) are separate clusters; M (Y with two of
    those rewrites) passes both and merges them. K, Y with a sentence added, passes Y but not X:
    it joins the merged cluster whether it comes before or after M (Y was a representative, and
    what a page joins must not depend on which merge came first). The pages are at addresses
    of one site that differ in a number (a key, not a name), so their names never tell them
    apart."""
    y = words(400, 31)
    rewritten = list(y)
    for place, start in enumerate((40, 130, 220, 310)):
        rewritten[start : start + 15] = words(15, 400 + place)
    x = rewritten
    m = x[:175] + y[175:]  # the first two rewrites of X, the rest of Y
    k = y[:200] + words(6, 500) + y[200:]
    pages = {"x": x, "y": y, "m": m, "k": k}
    keys = {"x": 1, "y": 2, "m": 3, "k": 4}
    for order in (["x", "y", "m", "k"], ["x", "y", "k", "m"]):
        det = NearDupDetector()
        verdicts = {
            name: det.check(f"http://h/doc/{keys[name]}", text=" ".join(pages[name])) for name in order
        }
        assert verdicts["y"].status == "unique"  # X and Y are apart until M comes
        assert "merged 1 cluster" in (verdicts["m"].reason or "")
        clusters = {c["id"]: {member["url"] for member in c["members"]} for c in det.report()["clusters"]}
        assert clusters["http://h/doc/1"] == {f"http://h/doc/{keys[name]}" for name in pages}, order
        assert verdicts["k"].status == "near", order


def test_short_pages_match_exactly_only() -> None:
    det = NearDupDetector(min_tokens=20)
    det.check("http://h/1", text="subscribe to read the full story today")
    v = det.check("http://h/2", text="subscribe to read the full story now")
    assert v.status == "unique" and v.exact_only and "exactly" in v.reason
    assert det.check("http://h/3", text="Subscribe to read the full story today!").status == "exact"


def test_dates_are_masked_and_other_numbers_are_content() -> None:
    """The same page fetched twice differs in its dates and times; pages that differ in a
    count, size or version are different texts."""
    det = NearDupDetector()
    text = " ".join(words(300, 30))
    det.check("http://h/1", text=f"Updated 2024-01-01 10:00. {text} 123 views")
    assert det.check("http://h/2", text=f"Updated 2025-07-09 18:41. {text} 123 views").status == "exact"
    assert det.check("http://h/3", text=f"Updated 2025-07-09 18:41. {text} 987 views").status == "near"
    short = NearDupDetector()
    short.check("http://h/a", text="The buffer size constant is 4096 bytes on this platform")
    assert (
        short.check("http://h/b", text="The buffer size constant is 8192 bytes on this platform").status
        == "unique"
    )


def test_mirror_hosts_detected_after_min_pages() -> None:
    """127.0.0.2 copies 6 of the 10 pages of 127.0.0.1: it is the copy (the origin has pages of
    its own), confirmed once 3 copies are seen and named once its direction is settled: with a
    margin of 3 documents, the copy copies most of what it has with 3 to spare (6 copies) and
    the origin has 3 more documents of its own (4 against 0)."""
    det = NearDupDetector(mirror_min_pages=3, mirror_share=0.5)
    texts = [words(300, 40 + i) for i in range(10)]
    for i, t in enumerate(texts):
        det.check(f"http://127.0.0.1/p{i}", page(f"P{i}", t))
    verdicts = [
        det.check(f"http://127.0.0.2/copy{i}", page(f"P{i}", t, chrome="mirror"))
        for i, t in enumerate(texts[:6])
    ]
    assert [v.mirror_of for v in verdicts] == [None] * 5 + ["127.0.0.1"]
    assert det.mirror_of("127.0.0.2") == "127.0.0.1"
    assert det.mirror_of("127.0.0.1") is None
    report = det.report()
    assert report["mirrors"] == [
        {
            "host": "127.0.0.2",
            "mirror_of": "127.0.0.1",
            "pages": 6,
            "duplicate_pages": 6,
            "duplicate_share": 1.0,
        }
    ]


def test_scope_host_only_compares_within_a_host() -> None:
    det = NearDupDetector(scope="host")
    text = " ".join(words(300, 50))
    det.check("http://127.0.0.1/a", text=text)
    assert det.check("http://127.0.0.2/a", text=text).status == "unique"
    assert det.check("http://127.0.0.1/b", text=text).status == "exact"


def test_ttl_forgets_old_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    import neardup_scrapy.core.detection.detector as detector_module

    now = [1_000_000.0]
    monkeypatch.setattr(detector_module.time, "time", lambda: now[0])
    det = NearDupDetector(ttl=60)
    text = " ".join(words(300, 60))
    det.check("http://h/1", text=text)
    now[0] += 30
    assert det.check("http://h/2", text=text).status == "exact"
    now[0] += 120
    assert det.check("http://h/3", text=text).status == "unique"


def test_tree_input_is_not_modified_and_matches_bytes_input() -> None:
    body = page("T", words(300, 70), chrome="menu home about")
    tree = lxml.html.document_fromstring(body)
    before = lxml.html.tostring(tree)
    det1, det2 = NearDupDetector(), NearDupDetector()
    det1.check("http://h/1", tree=tree)
    det2.check("http://h/1", body)
    assert lxml.html.tostring(tree) == before
    other = page("T", words(300, 70))
    assert det1.check("http://h/2", other).to_dict() == det2.check("http://h/2", other).to_dict()


NASTY: list[tuple[str, bytes | str]] = [
    ("empty bytes", b""),
    ("empty str", ""),
    ("whitespace", b"   \n\t  "),
    ("binary", bytes(range(256)) * 40),
    ("nul bytes", b"<html>\x00\x00<body>\x00text\x00</body>"),
    ("png", b"\x89PNG\r\n\x1a\n" + bytes(2000)),
    (
        "xml declaration str",
        '<?xml version="1.0" encoding="utf-8"?><html><body><p>hi there</p></body></html>',
    ),
    (
        "xhtml",
        b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><p>x y z</p></body></html>',
    ),
    ("broken markup", b"<html><body><div><p>unclosed <b>tags <i>everywhere</div></table></html"),
    ("only comments", b"<!-- nothing --><!-- here -->"),
    ("wrong charset", b'<meta charset="utf-16"><p>plain ascii text labelled utf-16</p>'),
    ("unknown charset", b'<meta charset="x-no-such-charset"><p>text</p>'),
    ("latin-1 without charset", "<p>caf\xe9 cr\xe8me br\xfbl\xe9e</p>".encode("latin-1")),
    ("lone surrogates", "<p>bad \udcff surrogate \ud800 text</p>"),
    ("deep nesting", "<div>" * 20000 + "deep text" + "</div>" * 20000),
    ("huge", b"<html><body>" + b"<p>" + b"word " * 3_000_000 + b"</p></body></html>"),
    ("script only", b"<script>var x = '<p>not text</p>';</script>"),
    ("cjk", "<p>重复内容检测是一个很有意思的问题</p>".encode()),
]


@pytest.mark.parametrize(("name", "body"), NASTY, ids=[n for n, _ in NASTY])
def test_nasty_inputs_never_raise(name: str, body: bytes | str) -> None:
    det = NearDupDetector()
    verdict = det.check("http://127.0.0.1/nasty", body)
    assert verdict.status in ("unique", "skipped")
    if verdict.status == "skipped":
        assert verdict.reason
    again = det.check("http://127.0.0.1/nasty-again", body)
    assert again.status in ("exact", "skipped")


@given(st.binary(max_size=3000) | st.text(max_size=3000))
@settings(max_examples=150, deadline=None)
def test_arbitrary_input_never_raises(body: bytes | str) -> None:
    NearDupDetector().check("http://127.0.0.1/x", body)


def test_bad_urls_and_hostless_urls_are_fine() -> None:
    det = NearDupDetector()
    for url in ("", "not a url", "http://[::1", "file:///tmp/x.html", "http://127.0.0.1:8080/a"):
        det.check(url, text=" ".join(words(50, 80)))
    hosts = {h["host"] for h in det.report()["hosts"]}
    assert "127.0.0.1:8080" in hosts and "" in hosts


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("threshold", 1.5),
        ("threshold", 0),
        ("algorithm", "md5"),
        ("num_perm", 8),
        ("shingle_size", 0),
        ("simhash_distance", 20),
        ("scope", "planet"),
        ("min_tokens", -1),
        ("ttl", -5),
        ("bands", 200),
    ],
)
def test_invalid_parameters_name_the_parameter(field: str, value: object) -> None:
    with pytest.raises(ParameterError, match=field):
        DetectorParams(**{field: value})  # type: ignore[arg-type]


def test_report_is_json_and_capped() -> None:
    det = NearDupDetector()
    for i in range(30):
        text = " ".join(words(200, 90 + i))
        for j in range(3):
            det.check(f"http://10{j}.example/p{i}", text=text, nbytes=1000)
    report = det.report(max_clusters=5, max_members=2, max_hosts=2)
    json.dumps(report)
    assert report["format"] == "neardup-report/1"
    assert report["totals"]["pages"] == 90 and report["totals"]["exact"] == 60
    assert report["totals"]["bytes_saved"] == 60_000
    assert len(report["clusters"]) == 5 and all(len(c["members"]) == 2 for c in report["clusters"])
    assert len(report["hosts"]) == 2 and report["hosts_total"] == 3
    assert report["cluster_sizes"] == {"3": 30}
    assert {h["host"]: h["duplicate_share"] for h in report["hosts"]}.get("101.example") == 1.0


def test_core_imports_no_framework() -> None:
    code = (
        "import sys; import neardup_scrapy.core; from neardup_scrapy.core import NearDupDetector;"
        "NearDupDetector().check('http://h/', b'<p>x</p>');"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted', 'parsel', 'itemadapter')];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_report_examples_show_the_passage_that_differs() -> None:
    det = NearDupDetector()
    base = words(1500, 95)
    edited = list(base)
    edited[900:903] = ["CHANGED", "PASSAGE", "HERE"]
    det.check("http://h/a", text=" ".join(base))
    assert det.check("http://h/b", text=" ".join(edited)).status == "near"
    (example,) = det.report()["examples"]
    assert example["a"]["url"] == "http://h/a" and example["b"]["url"] == "http://h/b"
    assert "CHANGED PASSAGE HERE" in example["b"]["text"]
    assert "CHANGED" not in example["a"]["text"]
    assert len(example["a"]["text"]) <= 2000 and len(example["b"]["text"]) <= 2000


@given(
    st.text(alphabet="ab\u00e9\u4e2d", max_size=40),
    st.text(alphabet="ab\u00e9\u4e2d", max_size=40),
    st.booleans(),
)
def test_common_prefix_length_is_the_character_prefix(a: str, b: str, share: bool) -> None:
    """The report's excerpts start where two texts first differ: the bisection must agree with a
    character-by-character scan, also when one text is a prefix of the other."""
    if share:
        b = a[: len(b)] + b
    expected = len(os.path.commonprefix([a, b]))  # noqa: RUF071 (the reference: a character prefix)
    assert common_prefix_length(a, b) == expected
