"""Reports are strict JSON, refuse absurd numbers, and never print credentials from crawled urls."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.cli import main
from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.report import ReportFormatError, format_summary, render_html, validate_report
from tests.core.storage.test_storage_support import vocabulary


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} in JSON output")


def strict(text: str) -> Any:
    """``json.loads`` that refuses NaN and Infinity (Python's accepts them by default)."""
    return json.loads(text, parse_constant=_no_constant)


def merging_pages() -> list[dict[str, str]]:
    """Triples of pages A, B, C: A and B differ too much to be duplicates (B is unique when
    checked), C is close to both, so C merges B's cluster into A's.

    C is a text of 400 words; A and B each replace four runs of five words of it, at different
    places (J ~0.85 to C, ~0.72 between them, rewritten in eight places: not an edited copy)."""
    vocab = vocabulary()
    pages = []
    for seed in range(1, 5):
        rng = random.Random(seed)
        common = [rng.choice(vocab) for _ in range(400)]
        variants = []
        for starts in ((20, 120, 220, 320), (70, 170, 270, 370)):
            words = list(common)
            for start in starts:
                words[start : start + 5] = [rng.choice(vocab) for _ in range(5)]
            variants.append(words)
        for name, words in (("a", variants[0]), ("b", variants[1]), ("c", common)):
            pages.append({"url": f"http://{name}.test/{seed}", "html": f"<p>{' '.join(words)}</p>"})
    return pages


def merged_members(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Cluster members that were unique when checked and are not their cluster's representative."""
    return [m for c in report["clusters"] for m in c["members"][1:] if m["status"] == "unique"]


def test_scan_with_merged_clusters_writes_strict_json(tmp_path: Path) -> None:
    source = tmp_path / "pages.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in merging_pages()))
    out, report_path, html = tmp_path / "out.jsonl", tmp_path / "report.json", tmp_path / "report.html"
    args = ["scan", str(source), "-o", str(out), "--report", str(report_path), "--html", str(html), "-q"]
    assert main(args) == 0
    for line in out.read_text().splitlines():
        strict(line)
    report = strict(report_path.read_text())
    validate_report(report)
    merged = merged_members(report)
    assert merged, "the scan must merge clusters for this test to mean anything"
    assert all(m["similarity"] is None and m["hamming"] is None for m in merged)
    assert main(["report", str(report_path), "-o", str(tmp_path / "again.html"), "-q"]) == 0


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (("cluster_sizes", "2"), 10**400, "cluster_sizes['2']"),
        (("totals", "pages"), 10**400, "totals.pages"),
        (("hosts_total",), 2**53, "hosts_total"),
    ],
)
def test_absurd_numbers_are_refused(path: tuple[str, ...], value: int, where: str) -> None:
    det = NearDupDetector()
    det.check("http://a.test/1", text="one two three four five six")
    report = det.report()
    target = report
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ReportFormatError) as info:
        validate_report(report)
    assert info.value.path == where and "2**53" in str(info.value)


def test_huge_cluster_size_key_is_refused() -> None:
    report = NearDupDetector().report()
    report["cluster_sizes"] = {"9" * 5000: 1}
    with pytest.raises(ReportFormatError, match="cluster size"):
        validate_report(report)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_report_command_refuses_nan(
    tmp_path: Path, constant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = NearDupDetector().report()
    text = json.dumps(report).replace('"threshold": 0.8', f'"threshold": {constant}')
    assert constant in text
    path = tmp_path / "report.json"
    path.write_text(text)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 2
    assert constant in capsys.readouterr().err


def test_report_never_prints_passwords_in_urls() -> None:
    det = NearDupDetector()
    body = " ".join(vocabulary()[:300])
    det.check("https://alice:s3cret@a.test/story", text=body)
    det.check("https://bob:hunter2@b.test/copy", text=body)
    det.check("https://b.test/near", text=body.replace(vocabulary()[5], "changed", 1))
    report = det.report()
    text = json.dumps(report) + render_html(report) + "\n".join(format_summary(report))
    assert "s3cret" not in text and "hunter2" not in text
    assert "https://alice:***@a.test/story" in json.dumps(report)
