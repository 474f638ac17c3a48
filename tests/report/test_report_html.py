"""The HTML report: self-contained, escaped, bounded in size, and showing every section."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from neardup_scrapy.report import render_html
from neardup_scrapy.report.html import MAX_HOSTS
from neardup_scrapy.report.html_diff import MAX_TEXT_CHARS, diff_html
from neardup_scrapy.report.synthetic import synthetic_report

EVIL = '"><script>alert(1)</script><img src=x onerror=alert(2)>'


class _Collector(HTMLParser):
    """Collects tags, attributes and script bodies of a document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def parse(page: str) -> _Collector:
    collector = _Collector()
    collector.feed(page)
    collector.close()
    return collector


def small_report() -> dict[str, Any]:
    return synthetic_report(pages=2000, hosts=40, max_hosts=30, max_clusters=8, max_members=6, max_examples=3)


def test_all_sections_present() -> None:
    page = render_html(small_report())
    assert page.startswith("<!DOCTYPE html>")
    for section in ("totals", "sizes", "top-hosts-section", "mirrors", "hosts", "clusters", "examples"):
        assert f'id="{section}"' in page
    for chart in ("composition", "histogram", "top-hosts"):
        assert '<svg class="' in page and f'id="{chart}"' in page
    assert 'id="host-table"' in page and 'class="sortable"' in page


def test_self_contained_no_external_resources() -> None:
    page = render_html(small_report())
    tags = parse(page).tags
    for tag, attrs in tags:
        assert tag not in ("link", "iframe", "img", "object", "embed", "base"), tag
        if tag == "script":
            assert "src" not in attrs
        if tag != "a":  # links to the crawled pages are fine, nothing is loaded from them
            for name, value in attrs.items():
                if name in ("src", "href", "srcset", "action", "data", "poster"):
                    raise AssertionError(f"<{tag} {name}={value!r}>")
    assert "@import" not in page
    assert not re.search(r"url\s*\(", page)
    assert "@font-face" not in page


def test_csp_allows_exactly_the_inline_script() -> None:
    page = render_html(small_report())
    doc = parse(page)
    assert len(doc.scripts) == 1
    digest = base64.b64encode(hashlib.sha256(doc.scripts[0].encode()).digest()).decode()
    csp = next(
        a["content"] for t, a in doc.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    )
    assert csp is not None
    assert "default-src 'none'" in csp
    assert f"'sha256-{digest}'" in csp
    assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";")[0]


def evil_report() -> dict[str, Any]:
    report = small_report()
    report["hosts"][0]["host"] = EVIL
    report["hosts"][1]["mirror_of"] = EVIL
    report["mirrors"] = [
        {"host": EVIL, "mirror_of": EVIL, "pages": 3, "duplicate_pages": 3, "duplicate_share": 1.0}
    ]
    cluster = report["clusters"][0]
    cluster["representative"] = "javascript:alert(3)"
    cluster["hosts"] = [EVIL]
    cluster["members"][0]["url"] = "javascript:alert(3)"
    cluster["members"][1]["url"] = "http://127.0.0.1/" + EVIL
    cluster["members"][2]["status"] = EVIL
    example = report["examples"][0]
    example["status"] = EVIL
    example["a"] = {"url": "data:text/html,<script>alert(4)</script>", "text": EVIL + " same words here"}
    example["b"] = {
        "url": "http://127.0.0.1/</h3><script>alert(5)</script>",
        "text": "same words here " + EVIL,
    }
    report["params"] = {EVIL: EVIL}
    report["generated_at"] = EVIL
    report["tool"] = {"name": EVIL, "version": EVIL}
    return report


def test_untrusted_strings_are_escaped() -> None:
    page = render_html(evil_report())
    doc = parse(page)
    assert len(doc.scripts) == 1, "an injected <script> got through"
    assert "alert" not in doc.scripts[0]
    assert not any(tag == "img" for tag, _ in doc.tags)
    for tag, attrs in doc.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name == "href":
                assert value is not None and value.startswith(("http://", "https://")), value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_links_only_for_http_urls() -> None:
    page = render_html(evil_report())
    assert 'href="javascript:' not in page
    assert 'href="data:' not in page


def test_oversized_report_stays_bounded() -> None:
    report = synthetic_report(
        pages=10_000_000, hosts=20_000, max_hosts=20_000, max_clusters=2000, max_members=200
    )
    for example in report["examples"]:
        example["a"]["text"] = "lorem ipsum " * 50_000
        example["b"]["text"] = "ipsum lorem " * 50_000
    report["examples"] = report["examples"] * 20
    page = render_html(report)
    assert page.count("<tr>") < MAX_HOSTS + 200 * 60 + 600
    assert len(page.encode()) < 8_000_000


def test_100k_page_crawl_report_under_5_mb() -> None:
    report = synthetic_report(pages=100_000, hosts=5_000)  # at the detector's default caps
    size = len(render_html(report).encode("utf-8"))
    assert size < 5_000_000, size


def test_empty_report_renders() -> None:
    from neardup_scrapy.core import NearDupDetector

    page = render_html(NearDupDetector().report())
    assert "No clusters of two or more pages." in page
    assert "No host was found to mirror another host." in page
    assert "No near-duplicate examples were recorded." in page


def test_diff_marks_changed_words() -> None:
    a = "one two three four five six seven eight nine ten"
    b = "one two THREE four five six seven eight nine ten eleven"
    html_a, html_b, differs = diff_html(a, b)
    assert differs
    assert "<del>three</del>" in html_a
    assert "<ins>THREE</ins>" in html_b
    assert "<ins>eleven</ins>" in html_b
    assert "<del>" not in html_b and "<ins>" not in html_a


def test_diff_of_equal_texts_shows_start() -> None:
    text = " ".join(f"w{i}" for i in range(500))
    html_a, html_b, differs = diff_html(text, text)
    assert not differs
    assert html_a == html_b
    assert html_a.startswith("w0 w1 w2")
    assert "identical words" in html_a


def test_diff_ignores_cut_tail_of_excerpts() -> None:
    words = [f"w{i}" for i in range(600)]
    a = " ".join(words)[:2000]
    b = " ".join(["inserted", "words", *words])[:2000]
    html_a, html_b, _differs = diff_html(a, b)
    assert "<ins>inserted words</ins>" in html_b
    assert "<del>" not in html_a  # a's tail is only cut later in b: not a difference
    assert "excerpt ends" in html_a


def test_diff_cost_is_bounded() -> None:
    a = " ".join(f"a{i}" for i in range(200_000))
    b = " ".join(f"b{i}" for i in range(200_000))
    html_a, _html_b, _ = diff_html(a, b)
    assert len(html_a) < 2 * MAX_TEXT_CHARS


@pytest.mark.parametrize("sizes", [{"2": 5}, {str(s): 1 for s in range(2, 300)}, {"2": 3, "100000": 1}])
def test_histogram_renders_any_sizes(sizes: dict[str, int]) -> None:
    report = small_report()
    report["cluster_sizes"] = sizes
    page = render_html(report)
    histogram = page.split('id="histogram"', 1)[1].split("</svg>", 1)[0]
    assert 1 <= histogram.count("<rect") <= 16
