"""#12 finding 1: no page can hold a check (and the pages behind it) past the time budget.

The CPU budget (``NEARDUP_TIMEOUT``, 1 s of the checking thread's CPU time by default) covers the
whole check: the parse of the page (:func:`neardup_scrapy.pages.page_tree`, in chunks with the
CPU clock read between them, attributes capped so that libxml2 stays linear) and the compiled
pass (which also counts its work against ``NEARDUP_MAX_WORK``: see ``test_budget_work.py``). A
page past it is skipped with reason ``timeout``; the pages behind it keep their verdicts and
their latency.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import scrapy
from e2e_crawl import make_crawler, run_crawl
from e2e_server import Page, Site, article, html_page, serve
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse

from neardup_scrapy.core import NearDupDetector, Verdict
from neardup_scrapy.core.native.markup import has_long_tag
from neardup_scrapy.pages import MAX_ATTRIBUTES, page_tree, response_text, selector_tree
from neardup_scrapy.runtime import NeardupRuntime
from neardup_scrapy.worker import _check as worker_check

BUDGET = 1.0  # the default NEARDUP_TIMEOUT
#: What a check may take past the budget: the parse chunk or final step under way when the
#: clock ran out. Before the fix the worst page below took 75 s (and a 1 MB flood of <h1> 507 s).
SLACK = 1.0


def _doc(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


PATHOLOGICAL: dict[str, str] = {
    "p x 32k": _doc("<p>a b</p>" * 32_000),
    "p x 64k": _doc("<p>a b</p>" * 64_000),
    "p x 128k": _doc("<p>a b</p>" * 128_000),
    "p i x x 2100": _doc("<p><i><x>" * 2_100 + "deep text"),
    # what a 19 KB gzip response unpacks to, under the default NEARDUP_MAX_BODY_BYTES
    "9.9 MB": _doc("<p>a b</p>" * 990_000),
    # libxml2 compares each attribute of a tag with the earlier ones: quadratic (75 s unbounded)
    "100k attributes": _doc("<p " + " ".join(f"a{i}=1" for i in range(100_000)) + ">some text</p>"),
    # #32: title headings matched pairwise after the walk (507 s before the fix)
    "h1 x 100k": "<html><head><title>a</title></head><body>" + "<h1>a</h1>" * 99_990 + "</body></html>",
}


class _Spider(scrapy.Spider):
    name = "budget"


def _inline_runtime() -> NeardupRuntime:
    crawler = make_crawler(_Spider, {"NEARDUP_WORKER": "inline", "NEARDUP_TIMEOUT": BUDGET})
    return NeardupRuntime.of(crawler)


def _check_inline(runtime: NeardupRuntime, url: str, html: str) -> Verdict:
    response = HtmlResponse(url, body=html.encode("utf-8"), encoding="utf-8")
    text = response_text(response)
    verdict = runtime.check_page(url, text, len(response.body), lambda: selector_tree(response))
    assert isinstance(verdict, Verdict)
    return verdict


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["inline", "process"])
def test_each_pathological_page_ends_within_the_budget(mode: str) -> None:
    """Each page finishes in about the budget of CPU time of the thread checking it (or is
    skipped as ``timeout`` within it), and both modes give the same verdict for pages that
    finish well inside it."""
    runtime = _inline_runtime() if mode == "inline" else None
    detector = NearDupDetector(timeout=BUDGET, repeat_cache=0)
    try:
        for name, html in PATHOLOGICAL.items():
            url = f"http://127.0.0.1/{len(html)}"
            started = time.thread_time()
            if runtime is not None:
                verdict = _check_inline(runtime, url, html)
            else:
                verdict = worker_check(detector, url, html, None, len(html))
            elapsed = time.thread_time() - started
            assert elapsed <= BUDGET + SLACK, f"{name}: {elapsed:.1f} s ({verdict.status}/{verdict.reason})"
            assert verdict.status != "skipped" or verdict.reason in ("timeout", "too much work", "no text"), (
                name,
                verdict,
            )
    finally:
        detector.close()
        if runtime is not None:
            runtime.close()


_MARKUP_CHARACTERS = st.sampled_from("<>aZ =\"'x/\u00e9\u4e2d\U0001f600")


@given(st.text(alphabet=_MARKUP_CHARACTERS, max_size=300), st.integers(0, 30))
@settings(max_examples=500, deadline=None)
def test_the_long_tag_scan_finds_the_tags_the_pattern_finds(text: str, min_chars: int) -> None:
    """The compiled scan that spares most pages the attribute cap's regular expression."""
    found = has_long_tag(text, min_chars)
    assert found == bool(re.search(rf"<[a-zA-Z][^<>]{{{min_chars},}}", text))
    if re.search(rf"<[a-zA-Z][^<>]{{{min_chars},}}>", text):
        assert found


def test_attributes_past_the_cap_are_dropped_and_text_is_kept() -> None:
    html = PATHOLOGICAL["100k attributes"]
    started = time.thread_time()
    root = page_tree(html, time.thread_time() + 30)
    assert time.thread_time() - started < 5.0
    p = root.find(".//p")
    assert p is not None and p.text == "some text"
    assert len(p.attrib) == MAX_ATTRIBUTES
    ordinary = _doc('<p class="a" id="b" data-x=\'1\' hidden>x</p>')
    assert page_tree(ordinary, time.thread_time() + 30).find(".//p").attrib == {
        "class": "a",
        "id": "b",
        "data-x": "1",
        "hidden": "",
    }


# -- a crawl: one pathological page among 100 ------------------------------------------------------


def _site(with_bad: bool) -> Site:
    site = Site()
    for i in range(100):
        # 70 distinct articles, then 30 exact copies of the first ones (other urls)
        seed = i if i < 70 else i - 70
        site.add(f"/p/{i}", html_page(f"Article {seed}", article(seed, 300)))
    if with_bad:
        site.add("/bad", Page(PATHOLOGICAL["100k attributes"]))
        site.add("/huge", Page(PATHOLOGICAL["9.9 MB"], gzip=True))
    return site


def _crawl(mode: str, with_bad: bool) -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
    with serve({"127.0.0.1": _site(with_bad)}) as urls:
        base = urls["127.0.0.1"]
        paths = [f"/p/{i}" for i in range(100)]
        if with_bad:
            paths[50:50] = ["/bad", "/huge"]
        result_dir = Path(tempfile.mkdtemp(prefix="neardup-budget-"))
        urls_file = result_dir / "urls.json"
        urls_file.write_text(json.dumps([[i, base + path] for i, path in enumerate(paths)]))
        result = run_crawl(
            "ListSpider",
            {
                "NEARDUP_WORKER": mode,
                "NEARDUP_TIMEOUT": BUDGET,
                "CONCURRENT_REQUESTS": 8,
                "LOG_LEVEL": "INFO",
                "DOWNLOADER_MIDDLEWARES": {
                    "e2e_spiders.LatencyBefore": 541,
                    "e2e_spiders.LatencyAfter": 539,
                },
            },
            timeout=240,
            urls_file=str(urls_file),
        )
    assert result.returncode == 0, result.log[-3000:]
    tags = {item["url"].split(":", 2)[2].split("/", 1)[1]: item["neardup"] for item in result.items}
    latency = [json.loads(line) for line in (result.out / "latency.jsonl").read_text().splitlines()]
    return tags, latency, result


def _partition(tags: dict[str, Any]) -> set[frozenset[str]]:
    """The pages grouped by cluster: independent of which copy arrived first."""
    by_root: dict[str, set[str]] = {}
    for path, tag in tags.items():
        root = tag["cluster"].split("/", 3)[-1] if tag["cluster"] else path
        by_root.setdefault(root, set()).add(path)
    return {frozenset(members) for members in by_root.values()}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", ["inline", "process"])
def test_one_pathological_page_among_100_holds_back_no_other(mode: str) -> None:
    baseline, base_latency, _ = _crawl(mode, with_bad=False)
    tags, latency, result = _crawl(mode, with_bad=True)
    bad = {"bad", "huge"}
    others = {path: tag for path, tag in tags.items() if path not in bad}
    assert set(others) == set(baseline)
    assert _partition(others) == _partition(baseline)
    assert {path: tag["status"] for path, tag in others.items()} == {
        path: tag["status"] for path, tag in baseline.items()
    }
    for path in bad:
        assert tags[path]["status"] in ("unique", "skipped"), tags[path]
    worst_base = max(entry["seconds"] for entry in base_latency)
    worst = max(entry["seconds"] for entry in latency if entry["url"].rsplit("/", 1)[-1] not in bad)
    # Every other page waits at most one budget (plus slack) longer than in the crawl without.
    # The budget is CPU time (and counted work): on a machine loaded past its cores, a CPU
    # second takes longer on the wall clock, in proportion.
    stretch = max(1.0, os.getloadavg()[0] / len(os.sched_getaffinity(0)))
    assert worst <= worst_base + (BUDGET + SLACK) * stretch, (worst, worst_base, stretch)
    assert result.stat("neardup/pages") == 102


# -- #12 finding 9: both modes read odd pages alike ---------------------------------------------

_ARTICLE = (
    "<article><h1>Deep title</h1>"
    + "<p>words of an article kept deep inside the page</p>" * 30
    + "</article>"
)
ODD: dict[str, tuple[bytes, str]] = {
    "100k deep": (("<div>" * 100_000 + "deep words here and there " * 20).encode(), "utf-8"),
    "article in 100k nested": (_doc("<div>" * 100_000 + _ARTICLE + "</div>" * 100_000).encode(), "utf-8"),
    "article in 100k spans": (_doc("<span>" * 100_000 + _ARTICLE).encode(), "utf-8"),
    "p i x x 2100": (PATHOLOGICAL["p i x x 2100"].encode(), "utf-8"),
    "100k attributes": (PATHOLOGICAL["100k attributes"].encode(), "utf-8"),
    "utf-16-le without BOM": (_doc(_ARTICLE).encode("utf-16-le"), "utf-16-le"),
    "NUL bytes": (_doc(_ARTICLE).replace("words", "wo\x00rds").encode(), "utf-8"),
    "invalid utf-8": (_doc(_ARTICLE).encode() + b"\xff\xfe\xc3(", "utf-8"),
    "only comments": (b"<!-- a --><!-- b -->", "utf-8"),
    "whitespace": (b"  \n\t ", "utf-8"),
    "2 MB article": (_doc(_ARTICLE * 700).encode(), "utf-8"),
    "unclosed cells": (("<table>" + "<td>cell text" * 50_000).encode(), "utf-8"),
    # ordinary pages (the worker reads them from the parser's events, inline from the tree)
    "article": (_doc(_ARTICLE).encode(), "utf-8"),
    "latin-1 article": (_doc(_ARTICLE.replace("words", "mots déjà vus")).encode("latin-1"), "latin-1"),
    "markup after html": ((_doc(_ARTICLE) + "<p>after the end of the page</p>").encode(), "utf-8"),
    "head only": (b"<html><head><title>A title alone</title></head></html>", "utf-8"),
}


@pytest.mark.timeout(300)
def test_worker_and_inline_modes_agree_on_odd_pages() -> None:
    runtime = _inline_runtime()
    inline_detector = runtime.detector
    assert inline_detector is not None
    try:
        for name, (body, charset) in ODD.items():
            url = f"http://127.0.0.1/{name.replace(' ', '-')}"
            response = HtmlResponse(url, body=body, headers={"Content-Type": f"text/html; charset={charset}"})
            text = response_text(response)
            inline = runtime.check_page(url, text, len(body), lambda r=response: selector_tree(r))
            worker = NearDupDetector(timeout=BUDGET)
            try:
                in_worker = worker_check(worker, url, text, None, len(body))
            finally:
                worker.close()
            assert isinstance(inline, Verdict)
            assert (in_worker.status, in_worker.reason, in_worker.tokens) == (
                inline.status,
                inline.reason,
                inline.tokens,
            ), name
            if "article" in name or name == "100k deep":
                assert in_worker.status != "skipped", (name, in_worker.reason)
            # a fresh index for the next page in inline mode too
            inline_detector.storage.close()
            runtime.checker.detector = NearDupDetector(timeout=BUDGET)
            inline_detector = runtime.detector
    finally:
        runtime.close()
