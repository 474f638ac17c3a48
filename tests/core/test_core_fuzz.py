"""Fuzzing ``NearDupDetector.check()`` (random and mutated HTML, as bytes or str, under odd urls)
and ``neardup-scrapy scan`` (random JSON lines).

Whatever a page holds, ``check()`` returns a verdict and never raises; its tag object and the
report are strict JSON. The number of examples is bounded so the test runs in seconds in CI.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import lxml.html
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_scrapy.core import NearDupDetector, Verdict
from neardup_scrapy.report import validate_report

TAGS = [
    "p", "div", "span", "article", "main", "section", "nav", "header", "footer", "aside", "a", "b",
    "ul", "li", "table", "tr", "td", "h1", "h2", "br", "img", "script", "style", "template", "svg",
    "iframe", "form", "noscript", "pre", "x-widget", "html", "body", "head", "title",
]  # fmt: skip
ATTRIBUTES = [
    'class="nav menu"', 'class="content article-body"', 'id="comments"', 'role="main"', "hidden",
    'style="display:none"', 'itemprop="articleBody"', 'aria-hidden="true"', 'class="footer"',
    'href="javascript:void(0)"', 'lang="ar" dir="rtl"', 'class="' + "x " * 50 + '"',
]  # fmt: skip
WORDS = st.sampled_from(
    [
        "harbour", "ferry", "council", "Größe", "café", "重复内容", "検出", "نص", "ﬁnance", "ǅemal",
        "2024-05-06", "&amp;", "&nbsp;", "&#0;", "&#xD800;", "&bogus;", "<", ">", "\u200b", "\x00",
        "\ud800", "\U0001f600", "e\u0301", "İstanbul", "ß" * 30, "x" * 300,
    ]
)  # fmt: skip
RAW = st.sampled_from(
    [
        "<!DOCTYPE html>", "<!-- comment -->", "<!--", "<![CDATA[ x ]]>", "<meta charset='koi8-r'>",
        "<?xml version='1.0' encoding='utf-16'?>", "</p>", "</div></div></div>", "<p", "<", "&", "<br/>",
        "\r\n", "\t",
    ]
)  # fmt: skip


@st.composite
def markup(draw: st.DrawFn, depth: int = 0) -> str:
    """A random HTML fragment: nested elements, chrome attributes, text, entities, junk."""
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 6 if depth < 4 else 2))):
        kind = draw(st.integers(0, 9))
        if kind < 4 and depth < 6:
            tag = draw(st.sampled_from(TAGS))
            attrs = " ".join(draw(st.lists(st.sampled_from(ATTRIBUTES), max_size=2)))
            inner = draw(markup(depth + 1))
            close = "" if draw(st.integers(0, 5)) == 0 else f"</{tag}>"
            parts.append(f"<{tag} {attrs}>{inner}{close}")
        elif kind < 8:
            parts.append(" ".join(draw(st.lists(WORDS, min_size=1, max_size=40))))
        else:
            parts.append(draw(RAW))
    return "".join(parts)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """Generated markup as bytes, then cut, spliced and sprinkled with random bytes."""
    data = bytearray(draw(markup()).encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.integers(0, 3))
        at = draw(st.integers(0, len(data)))
        if op == 0:
            data[at:at] = draw(st.binary(max_size=20))
        elif op == 1:
            del data[at : at + draw(st.integers(0, 50))]
        elif op == 2:
            data[at:at] = data[max(0, at - 100) : at]
        else:
            data = data[:at]
    return bytes(data)


CODECS = ["utf-8", "utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252", "shift_jis", "koi8-r", "x-nothing"]
URLS = st.sampled_from(
    [
        "http://a.test/1", "https://user:secret@b.test/p?q=1#f", "http://\udcff.test/x", "not a url",
        "", "http://[::1", "http://a.test:99999/", "file:///etc/passwd", "http://A.TEST/Ω",
    ]
)  # fmt: skip


@st.composite
def page_call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """Arguments of one ``check()`` call: html as str or bytes (maybe re-encoded), text, or a tree."""
    url = draw(URLS)
    form = draw(st.integers(0, 5))
    if form == 0:
        return url, {"html": draw(markup())}
    if form == 1:
        return url, {"html": draw(mutated())}
    if form == 2:
        html = draw(markup())
        codec = draw(st.sampled_from(CODECS))
        try:
            body = html.encode(codec, "replace")
        except LookupError:
            body = html.encode("utf-8", "surrogatepass")
        return url, {"html": body, "encoding": draw(st.sampled_from([*CODECS, None]))}
    if form == 3:
        return url, {"text": draw(markup())}
    if form == 4:
        return url, {"html": draw(st.binary(max_size=2000))}
    try:
        tree = lxml.html.document_fromstring(draw(markup()).encode("utf-8", "replace") or b"<p></p>")
    except Exception:  # lxml refuses some documents: the tree form is then not exercised
        return url, {"html": ""}
    return url, {"tree": tree}


def _no_constant(name: str) -> Any:
    raise ValueError(name)


@given(st.lists(page_call(), min_size=1, max_size=6))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_check_always_returns_a_verdict(calls: list[tuple[str, dict[str, Any]]]) -> None:
    det = NearDupDetector(keep_excerpts=10)
    for url, kwargs in calls * 2:  # twice: repeats go through the repeat cache and the index
        started = time.thread_time()
        verdict = det.check(url, **kwargs)
        # the pass is bounded by the CPU budget (1 s); the index part of a check takes milliseconds
        assert time.thread_time() - started < det.params.timeout + 2.0
        assert isinstance(verdict, Verdict)
        assert verdict.status in ("unique", "exact", "near", "skipped")
        assert verdict.status != "skipped" or verdict.reason
        json.loads(json.dumps(verdict.to_dict(), allow_nan=False), parse_constant=_no_constant)
    report = det.report()
    validate_report(report)
    text = json.dumps(report, allow_nan=False)
    assert "secret" not in text
    det.close()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def scan_line(draw: st.DrawFn) -> str:
    """A line of a scan input: a page record (odd fields allowed), any JSON value, or garbage."""
    form = draw(st.integers(0, 3))
    if form == 0:
        record: dict[str, Any] = {
            "url": draw(st.sampled_from(["https://a.test/x", "", "nourl", "http://[::1"]))
        }
        record[draw(st.sampled_from(["html", "body", "text"]))] = draw(markup())
        record.update(
            draw(st.dictionaries(st.sampled_from(["neardup", "url", "x"]), JSON_VALUES, max_size=2))
        )
        return json.dumps(record)
    if form == 1:
        return json.dumps(draw(JSON_VALUES))
    if form == 2:
        return "[" * draw(st.integers(1, 3000)) + "]" * draw(st.integers(0, 3000))
    return draw(st.text(max_size=200)).replace("\n", " ")


@given(st.lists(scan_line(), min_size=1, max_size=8))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_scan_never_crashes_on_random_lines(tmp_path: Path, lines: list[str]) -> None:
    """``scan`` over random JSON lines exits 0 (all checked), 1 (some skipped) or 2 (no pages)
    and never raises. A record is copied byte for byte with its tag added (so a user's own
    ``NaN`` or bad bytes stay as they were); the tag objects it adds (``--retag``: on every
    record) are strict JSON."""
    from neardup_scrapy.cli import main

    source = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    report = tmp_path / "report.json"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    code = main(
        ["scan", str(source), "-o", str(out), "--report", str(report), "-q", "--jobs", "1", "--retag"]
    )
    assert code in (0, 1, 2)
    if out.exists():
        for line in out.read_bytes().decode("utf-8", "surrogateescape").splitlines():
            tag = json.loads(line)["neardup"]
            assert tag["status"] in ("unique", "exact", "near", "skipped")
            json.loads(json.dumps(tag, allow_nan=False), parse_constant=_no_constant)
    if report.exists():
        json.loads(report.read_text(encoding="utf-8"), parse_constant=_no_constant)
