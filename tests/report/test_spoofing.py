"""Urls and hosts shown inert: bidi and control characters can neither reorder nor drive anything.

A link to ``…\\u202etxt.exe`` must not read ``…exe.txt`` in the HTML report, and ``scan -v`` or a
summary must never send a terminal an escape sequence from a crawled url. The family: every
class of character that is not drawn as itself -- C0 and C1 controls and DEL, the bidi
embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069) and marks (U+200E, U+200F,
U+061C), zero-width and tag characters, line and paragraph separators, lone surrogates.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.core.urls import redact_url
from neardup_scrapy.report.escapes import shown
from neardup_scrapy.report.html import render_html
from neardup_scrapy.report.text import format_summary
from tests.cli.test_cli_helpers import make_crawl, run_cli, write_jsonl

#: Every class, every code point of the small ones and the edges of the large ones.
CLASSES: dict[str, list[str]] = {
    "C0 controls": [chr(c) for c in range(0x00, 0x20)],
    "DEL": ["\x7f"],
    "C1 controls": [chr(c) for c in range(0x80, 0xA0)],
    "bidi embeddings and overrides": [chr(c) for c in range(0x202A, 0x202F)],
    "bidi isolates": [chr(c) for c in range(0x2066, 0x206A)],
    "bidi marks": ["\u200e", "\u200f", "\u061c"],
    "zero-width and byte-order marks": ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"],
    "line and paragraph separators": ["\u2028", "\u2029"],
    "tag characters": ["\U000e0001", "\U000e0041", "\U000e007f"],
    "lone surrogates": ["\ud800", "\udce9"],
}
EVERY = [c for chars in CLASSES.values() for c in chars]
#: Some of every class, for the crawls (each code point is checked on its own above).
SAMPLE = ["\u202e", "\x1b", "\u2067", "\x9b", "\u200f", "\x7f", "\u202b", "\x00", "\u061c", "\u2069"]
SAMPLE += ["\r", "\u200b", "\ufeff", "\u2028", "\U000e0041", "\udce9", "\x85", "\u202a", "\u2066", "\u200e"]
#: Characters that are drawn and must stay as they are.
VISIBLE = "Hébreu שלום عربي 日本 \u00a0nbsp ✓ 🦊 a/b?c=d#e %20"


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_shown_escapes_every_invisible_character(name: str) -> None:
    for char in CLASSES[name]:
        text = shown(f"http://a.test/x{char}txt.exe")
        assert char not in text and text.isascii(), (name, hex(ord(char)), text)
        assert f"{ord(char):02x}" in text  # its code point, readable
    assert shown(VISIBLE) == VISIBLE
    assert shown(redact_url("https://u:pw@a.test/\u202e")) == "https://u:***@a.test/\\u202e"


def spoofed_records() -> list[dict[str, Any]]:
    """A crawl whose urls (and some hosts) hold each invisible character, duplicates included so
    that they reach the clusters, the examples, the -v lines and the host tables."""
    records, _expected = make_crawl()
    for k, record in enumerate(records):
        char = SAMPLE[k % len(SAMPLE)]
        host = f"h{k % 4}.test" if k % 5 else f"evil{char}{k % 4}.test"
        record["url"] = f"http://{host}/doc{k}{char}txt.exe"
    return records


class _Collect(HTMLParser):
    """Texts of the url and host elements, link targets and titles of a report page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.urls: list[str] = []  # text inside <bdi dir="ltr">
        self.hrefs: list[str] = []
        self.titles: list[str] = []
        self.svg_texts: list[str] = []
        self.esc_titles: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.stack.append((tag, a))
        if "href" in a:
            self.hrefs.append(a["href"])
        if "title" in a:
            (self.esc_titles if a.get("class") == "esc" else self.titles).append(a["title"])

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        tags = [t for t, _ in self.stack]
        if "bdi" in tags:
            self.urls.append(data)
        if "text" in tags and "svg" in tags:
            self.svg_texts.append(data)


def _invisible(text: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in text if c in EVERY]


def test_html_report_isolates_urls_and_hosts_and_shows_their_invisible_characters(tmp_path: Path) -> None:
    pages = write_jsonl(tmp_path / "pages.jsonl", spoofed_records())
    page = tmp_path / "report.html"
    report = tmp_path / "report.json"
    result = run_cli(
        "scan", str(pages), "-o", str(tmp_path / "o.jsonl"), "--html", str(page), "--report", str(report)
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    text = page.read_text(encoding="utf-8", errors="surrogateescape")
    parsed = _Collect()
    parsed.feed(text)
    assert len(parsed.urls) > 50  # member urls, hosts, representatives, example headings
    for part in parsed.urls + parsed.hrefs + parsed.titles + parsed.svg_texts:
        assert not _invisible(part), (part, _invisible(part))
    # each kind of character was there, and is now shown by its code point, named on hover
    data = json.loads(report.read_text())
    listed = {m["url"] for c in data["clusters"] for m in c["members"]}
    assert any("\u202e" in u for u in listed)  # the report's data keeps the url as crawled
    assert "\\u202e" in "".join(parsed.urls)
    assert any("RIGHT-TO-LEFT OVERRIDE" in t for t in parsed.esc_titles)
    # every shown url and host is isolated left to right
    assert text.count('<bdi dir="ltr">') == len(re.findall(r"<bdi", text))
    # a link keeps its address, with the invisible characters percent-encoded
    assert any("%E2%80%AE" in h for h in parsed.hrefs)
    # nothing of the family is left raw anywhere in the page (but the markup's own newlines)
    assert not [c for c in _invisible(text) if c not in ("U+000A",)]


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_html_renders_a_hostile_report_inert(name: str) -> None:
    """A report file from elsewhere (``neardup-scrapy report``) gets the same treatment."""
    from neardup_scrapy.core import NearDupDetector

    det = NearDupDetector()
    body = " ".join(f"w{i}" for i in range(300))
    for char in CLASSES[name]:
        det.check(f"https://a.test/{ord(char)}{char}x", text=body)
    report = det.report()
    report["hosts"].append({"host": "".join(CLASSES[name]) + "h.test", "pages": 1, "unique": 1})
    report["mirrors"].append({"host": "x" + CLASSES[name][0], "mirror_of": "y" + CLASSES[name][-1]})
    page = render_html(report)
    parsed = _Collect()
    parsed.feed(page)
    for part in parsed.urls + parsed.hrefs + parsed.titles + parsed.svg_texts:
        assert not _invisible(part), (part, _invisible(part))
    assert not [c for c in _invisible(page) if c != "U+000A"]
    assert html.escape(shown(CLASSES[name][-1])) in page


def test_terminal_output_of_scan_is_inert(tmp_path: Path) -> None:
    pages = write_jsonl(tmp_path / "pages.jsonl", spoofed_records())
    result = run_cli("scan", str(pages), "-o", str(tmp_path / "o.jsonl"), "-v")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    err = result.stderr.decode("utf-8", "surrogateescape")
    assert err.count(" -> ") >= 10  # the -v lines of the duplicates
    assert "txt.exe" in err and "\\u202e" in err
    assert not [c for c in _invisible(err) if c != "U+000A"], _invisible(err)[:10]


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_summary_lines_are_inert(name: str) -> None:
    """The closing summary (the crawl's log and the terminal) prints hosts escaped."""
    hosts = [
        {"host": f"evil{char}.test", "pages": 3, "unique": 1, "exact": 2, "mirror_of": f"o{char}.test"}
        for char in CLASSES[name]
    ]
    report = {
        "totals": {"pages": 3 * len(hosts), "exact": 2 * len(hosts)},
        "hosts": hosts,
        "hosts_total": len(hosts),
        "mirrors": [
            {"host": h["host"], "mirror_of": h["mirror_of"], "pages": 3, "duplicate_pages": 2} for h in hosts
        ],
    }
    lines = format_summary(report, max_lines=40)
    text = "\n".join(lines)
    assert "evil" in text
    assert not _invisible(text.replace("\n", "")), _invisible(text)


def test_escapes_name_the_character() -> None:
    page = render_html({"hosts": [{"host": "a\u202eb.test", "pages": 1}], "hosts_total": 1})
    title = f"U+202E {unicodedata.name(chr(0x202E))}"
    assert f'title="{title}"' in page
