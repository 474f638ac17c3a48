"""Benchmark of the reports: size and render time of the HTML page of a 100k-page crawl, and the
time headless Chromium takes to load and paint it.

The report is built at the caps ``NearDupDetector.report()`` applies by default (1,000 hosts,
100 clusters of 20 members, 20 near-pair examples of 2,000-character texts), so it is the
largest report a crawl of any size gives with default settings. Targets: HTML under 5 MB,
loaded in Chromium in under 2 s.

``--scan EVAL_DEV_DIR`` also times ``neardup-scrapy scan`` over the eval-dev set (1,602 pages,
170 MB of JSON) end to end, with gzip output, JSON and HTML reports (target: well under 55 s),
next to the time of just reading and parsing the input, to show the CLI's own overhead.

Usage: ``python benchmarks/bench_report.py [--pages N] [--hosts N] [--chromium PATH] [--keep DIR]
[--scan EVAL_DEV_DIR]``
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from neardup_scrapy.report import format_summary, render_html, validate_report
from neardup_scrapy.report.synthetic import synthetic_report

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]

TIMING = """
<script>
(function () {
  var t = {script: performance.now()};
  function put() {
    var pre = document.getElementById("timing") || document.createElement("pre");
    pre.id = "timing";
    pre.textContent = JSON.stringify(t);
    document.body.appendChild(pre);
  }
  document.addEventListener("DOMContentLoaded", function () { t.dcl = performance.now(); put(); });
  window.addEventListener("load", function () { t.load = performance.now(); put(); });
})();
</script>
"""


def _chromium(path: str | None) -> str | None:
    for candidate in (
        path,
        os.environ.get("NEARDUP_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _run(binary: str, profile: Path, url: str, *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(
        [binary, *FLAGS, f"--user-data-dir={profile}", *args, url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return time.perf_counter() - started, result.stdout.decode("utf-8", "replace")


def bench_scan(eval_dir: Path) -> None:
    """Time the CLI over eval-dev against reading + parsing the same input."""
    source = eval_dir / "pages.jsonl.gz"
    started = time.perf_counter()
    with gzip.open(source, "rb") as handle:
        pages = sum(1 for line in handle if json.loads(line))
    read_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable,
            "-m",
            "neardup_scrapy.cli",
            "scan",
            str(source),
            "-o",
            f"{tmp}/out.jsonl.gz",
        ]
        command += ["--report", f"{tmp}/report.json", "--html", f"{tmp}/report.html", "-q"]
        started = time.perf_counter()
        subprocess.run(command, check=True)
        scan_s = time.perf_counter() - started
    print(f"scan of {pages:,} eval-dev pages: {scan_s:.1f} s end to end (target well under 55 s)")
    print(f"  read + json.loads alone {read_s:.1f} s ({read_s / scan_s:.0%} of the scan)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=5_000)
    parser.add_argument("--chromium")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", help="directory to keep report.json / report.html in")
    parser.add_argument("--scan", metavar="EVAL_DEV_DIR", help="also time the CLI scan of eval-dev")
    args = parser.parse_args()
    if args.scan:
        bench_scan(Path(args.scan))

    report = synthetic_report(pages=args.pages, hosts=args.hosts)
    validate_report(report)
    json_size = len(json.dumps(report).encode())
    started = time.perf_counter()
    page = render_html(report)
    render_s = time.perf_counter() - started
    html_size = len(page.encode())
    started = time.perf_counter()
    summary = format_summary(report)
    summary_s = time.perf_counter() - started
    print(f"report of {args.pages:,} pages on {args.hosts:,} hosts (default caps)")
    print(
        f"  JSON {json_size / 1e6:.2f} MB; HTML {html_size / 1e6:.2f} MB "
        f"({html_size / 5e6:.0%} of the 5 MB cap)"
    )
    print(
        f"  render_html {render_s * 1000:.0f} ms; "
        f"format_summary {summary_s * 1000:.1f} ms, {len(summary)} lines"
    )

    binary = _chromium(args.chromium)
    if binary is None:
        print("  Chromium not found: load time not measured")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        (work / "report.json").write_text(json.dumps(report), encoding="utf-8")
        target = work / "report.html"
        target.write_text(page, encoding="utf-8")
        blank = work / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title><p>x</p>")
        timed = work / "timed.html"
        unlocked = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)  # let TIMING run
        timed.write_text(unlocked.replace("</body>", TIMING + "</body>"), encoding="utf-8")
        profile = work / "profile"
        shot = ["--window-size=1280,2000", f"--screenshot={work / 'shot.png'}"]
        _run(binary, profile, blank.as_uri(), *shot)  # warm the profile and the disk cache
        blank_s = min(_run(binary, profile, blank.as_uri(), *shot)[0] for _ in range(args.runs))
        report_s = min(_run(binary, profile, target.as_uri(), *shot)[0] for _ in range(args.runs))
        loads = []
        for _ in range(args.runs):
            _wall, dom = _run(binary, profile, timed.as_uri(), "--dump-dom", "--window-size=1280,2000")
            match = re.search(r'<pre id="timing">(.*?)</pre>', dom, re.S)
            if match:
                loads.append(json.loads(html.unescape(match.group(1))))
        print(f"  Chromium screenshot wall time: report {report_s:.2f} s, blank page {blank_s:.2f} s")
        print(
            f"  => load + layout + paint of the report ~ {max(report_s - blank_s, 0.0):.2f} s (target < 2 s)"
        )
        if loads:
            best = min(loads, key=lambda t: t.get("load", 1e9))
            print(
                f"  navigation timing (best of {len(loads)}): DOMContentLoaded {best.get('dcl', 0):.0f} ms, "
                f"load {best.get('load', 0):.0f} ms"
            )
        if args.keep:
            print(f"  kept in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
