"""neardup-scrapy scan over the eval-dev set: every page tagged in order, valid report, short summary.

The time it takes is measured by ``benchmarks/bench_report.py scan``, not asserted here.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from neardup_scrapy.cli import EXIT_OK
from neardup_scrapy.report.schema import validate_report

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.evaldev
def test_scan_eval_dev(eval_dev: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl.gz"
    report = tmp_path / "report.json"
    page = tmp_path / "report.html"
    command = [sys.executable, "-m", "neardup_scrapy.cli", "scan", str(eval_dev / "pages.jsonl.gz")]
    command += ["-o", str(out), "--report", str(report), "--html", str(page)]
    result = subprocess.run(
        command,
        capture_output=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert result.returncode == EXIT_OK, result.stderr.decode()[-3000:]
    summary = result.stderr.decode().splitlines()
    assert 5 <= len(summary) <= 25
    assert summary[0].startswith("neardup: 1,602 pages")

    with gzip.open(eval_dev / "pages.jsonl.gz", "rb") as src, gzip.open(out, "rb") as dst:
        count = 0
        for line_in, line_out in zip(src, dst, strict=True):
            assert line_out.startswith(line_in.rstrip()[:-1])  # the record, byte for byte
            tag = json.loads(line_out)["neardup"]
            assert tag["status"] in ("unique", "exact", "near", "skipped")
            count += 1
    assert count == 1602

    data = json.loads(report.read_text())
    validate_report(data)
    assert data["totals"]["pages"] == 1602
    assert data["mirrors"], "eval-dev has mirror hosts"
    assert page.stat().st_size < 5_000_000
