"""The example project runs offline with one command and produces tagged items and reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neardup_scrapy.report.schema import validate_report

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def test_example_project(tmp_path: Path) -> None:
    env = {**os.environ, "NEARDUP_EXAMPLE_OUTPUT": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "example_project" / "run.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=str(tmp_path),
        check=False,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]
    assert "HTML report:" in proc.stdout

    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert len(items) >= 50
    assert all(item["neardup"]["status"] in ("unique", "exact", "near", "skipped") for item in items)
    statuses = {item["neardup"]["status"] for item in items}
    assert {"unique", "exact", "near"} <= statuses
    by_path = {
        item["url"].split("/", 3)[3]: item["neardup"]
        for item in items
        if item["url"].startswith("http://127.0.0.1")
    }

    # a crawl fetches pages in any order: either page of a pair may come first, and the cluster
    # may be rooted at a third copy; what holds in every order is one cluster holding both
    def one_cluster(*paths: str) -> bool:
        roots = {by_path[path]["cluster"] or by_path[path]["duplicate_of"] for path in paths}
        return len(roots) == 1 and None not in roots

    assert one_cluster("news/lighthouse-lens.html", "print/lighthouse-lens.html"), by_path
    sea_wall = ("news/sea-wall-storm.html", "news/sea-wall-storm-update.html")
    assert one_cluster(*sea_wall), {path: by_path[path] for path in sea_wall}
    assert "near" in {by_path[path]["status"] for path in sea_wall}
    # a distinct story under a heavy template clusters only with its own copies (its ``?sid=``
    # variants may come first, so "unique" is not an invariant; the cluster's membership is)
    canal = by_path["news/canal-cycle-path.html"]
    canal_root = canal["cluster"] or canal["duplicate_of"]
    assert canal_root and "canal-cycle-path" in canal_root, canal
    strangers = [
        item["url"]
        for item in items
        if canal_root in (item["neardup"]["cluster"], item["neardup"]["duplicate_of"])
        and "canal-cycle-path" not in item["url"]
    ]
    assert not strangers, strangers

    report = json.loads((tmp_path / "neardup-report.json").read_text())
    validate_report(report)
    assert len(report["mirrors"]) == 2  # the exact mirror and the digest in its own template
    assert report["examples"], "near-duplicate pairs with their texts"
    html = (tmp_path / "neardup-report.html").read_text()
    assert "<svg" in html and "http://" not in html.split("<body", 1)[0]  # nothing loaded from outside
