"""format_summary: a one-screen, aligned summary whatever the size of the crawl."""

from __future__ import annotations

from typing import Any

import pytest

from neardup_scrapy.report import format_summary
from neardup_scrapy.report.synthetic import synthetic_report


def _reports() -> list[dict[str, Any]]:
    from neardup_scrapy.core import NearDupDetector

    return [
        NearDupDetector().report(),
        synthetic_report(pages=50, hosts=2, mirrors=1, max_clusters=3, max_examples=1),
        synthetic_report(pages=5000, hosts=12, mirrors=6),
        synthetic_report(),
        synthetic_report(pages=10_000_000, hosts=100_000, mirrors=3000),
    ]


@pytest.mark.parametrize("max_lines", [1, 3, 5, 8, 12, 25, 40])
def test_line_budget_is_kept(max_lines: int) -> None:
    for report in _reports():
        lines = format_summary(report, max_lines=max_lines)
        assert 1 <= len(lines) <= max_lines
        for line in lines:
            assert "\n" not in line
            assert line == line.rstrip()
            assert len(line) <= 120, line


def test_contents_of_a_large_crawl() -> None:
    report = synthetic_report()
    lines = format_summary(report)
    text = "\n".join(lines)
    assert len(lines) <= 25
    assert lines[0].startswith("neardup: 100,000 pages from 5,000 hosts;")
    assert "cluster sizes" in text
    assert "more hosts" in text
    assert "mirror hosts (40):" in text
    assert "more mirror hosts" in text


def test_host_table_is_aligned() -> None:
    lines = format_summary(synthetic_report(pages=5000, hosts=12, mirrors=2))
    start = next(i for i, line in enumerate(lines) if line.startswith("host "))
    header = lines[start]
    rows = [line for line in lines[start + 1 :] if not line.startswith(" ") and not line.startswith("mirror")]
    assert rows
    end_of_pages = header.index("pages") + len("pages")
    end_of_dup = header.index("dup") + len("dup")
    for row in rows:
        assert row[end_of_pages - 1] != " ", row  # numbers right-aligned under the header
        assert row[end_of_dup - 1] == "%", row


def test_empty_report() -> None:
    from neardup_scrapy.core import NearDupDetector

    lines = format_summary(NearDupDetector().report())
    assert lines[0].startswith("neardup: 0 pages")
    assert not any("cluster sizes" in line for line in lines)


def test_storage_errors_are_flagged() -> None:
    report = synthetic_report(pages=100, hosts=3)
    report["totals"]["storage_errors"] = 7
    assert any("WARNING: 7 pages" in line for line in format_summary(report))


def test_one_extra_row_replaces_the_more_line() -> None:
    report = synthetic_report(pages=5000, hosts=200, mirrors=6)
    lines = format_summary(report, max_lines=40)
    mirror_rows = [line for line in lines if "->" in line]
    assert len(mirror_rows) == 6
    assert not any("1 more mirror" in line for line in lines)
