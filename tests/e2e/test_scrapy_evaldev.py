"""A real crawl of the eval-dev pages gives the verdicts of the detector run directly on them.

The pages are served under their own urls by a local server that the crawl uses as its HTTP
proxy (``https://`` pages are fetched as ``http://``), 16 requests at a time. A downloader
middleware records the order in which neardup received the responses; the same pages, in that
order and under the same urls, are then checked with ``NearDupDetector.check(url, html)``: every
tag object must be equal, and so must the scores of ``score.py``.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import run_crawl
from e2e_server import Page, ProxySite, crawl_url, serve

from neardup_scrapy.core import NearDupDetector

pytestmark = [pytest.mark.e2e, pytest.mark.evaldev]


def load(eval_dev: Path) -> list[tuple[str, str]]:
    with gzip.open(eval_dev / "pages.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [(r["url"], r["html"]) for r in map(json.loads, fh)]


def score(eval_dev: Path, preds: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    path = out.with_suffix(".jsonl")
    path.write_text("".join(json.dumps(p) + "\n" for p in preds))
    subprocess.run(
        [
            sys.executable,
            str(eval_dev / "score.py"),
            str(eval_dev / "truth.json"),
            str(path),
            "--json",
            str(out),
            "--quiet",
        ],
        check=True,
        capture_output=True,
    )
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def predictions(tags: list[dict[str, Any]], urls: list[str], back: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "url": url,
            "duplicate_of": back.get(tag["duplicate_of"]) if tag["duplicate_of"] else None,
            "cluster": back.get(tag["cluster"]) if tag["cluster"] else None,
        }
        for url, tag in zip(urls, tags, strict=True)
    ]


@pytest.mark.parametrize("worker", ["process", "inline"])
def test_crawl_verdicts_equal_direct_scan(eval_dev: Path, tmp_path: Path, worker: str) -> None:
    pages = load(eval_dev)
    targets = [crawl_url(url) for url, _ in pages]
    assert len(set(targets)) == len(targets)
    back = dict(zip(targets, (url for url, _ in pages), strict=True))
    site = ProxySite()
    for target, (_, html) in zip(targets, pages, strict=True):
        site.add(target, Page(html))
    urls_file = tmp_path / "urls.json"
    urls_file.write_text(json.dumps(list(enumerate(targets))))
    with serve({"127.0.0.1": site}) as servers:
        result = run_crawl(
            "ListSpider",
            {
                "CONCURRENT_REQUESTS": 16,
                "NEARDUP_WORKER": worker,
                "LOG_LEVEL": "INFO",
                "DOWNLOADER_MIDDLEWARES": {"e2e_spiders.OrderRecorder": 541},
            },
            timeout=900,
            urls_file=str(urls_file),
            proxy=servers["127.0.0.1"],
        )
    assert result.returncode == 0, result.log[-3000:]
    assert sorted(item["index"] for item in result.items) == list(range(len(pages)))
    # neither mode builds Scrapy's tree in the crawl's thread for the plugin: a spider that does
    # not read the page does not pay for its parse (inline reads the text on its helper thread)
    assert not any(item["selector_built"] for item in result.items)
    tags = {item["url"]: item["neardup"] for item in result.items}
    order = result.order
    assert sorted(order) == sorted(targets)

    html_of = dict(zip(targets, (html for _, html in pages), strict=True))
    detector = NearDupDetector()
    scanned = {target: detector.check(target, html_of[target]).to_dict() for target in order}
    mismatches = [(t, tags[t], scanned[t]) for t in order if tags[t] != scanned[t]]
    assert not mismatches, mismatches[:5]
    crawled = [tags[t] for t in targets]
    scanned_list = [scanned[t] for t in targets]

    eval_urls = [url for url, _ in pages]
    crawl_score = score(eval_dev, predictions(crawled, eval_urls, back), tmp_path / "crawl.json")
    scan_score = score(eval_dev, predictions(scanned_list, eval_urls, back), tmp_path / "scan.json")
    assert crawl_score["source_pairs"] == scan_score["source_pairs"]
    assert crawl_score["source_pairs"]["f1"] >= 0.97
    print(f"eval-dev F1 vs source truth, crawl ({worker}) = scan = {crawl_score['source_pairs']['f1']:.4f}")
