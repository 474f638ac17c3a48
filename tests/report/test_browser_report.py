"""The HTML report in real headless Chromium: it paints, its charts have a size, its tables sort,
and it makes no network request.

Needs ``/usr/bin/chromium`` (Debian package ``chromium``) or ``$NEARDUP_CHROMIUM``. Without it the
tests are skipped -- except under ``CI=true``, where they fail. The screenshot is kept as
``artifacts/report.png``.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.cli import main
from neardup_scrapy.report import render_html
from neardup_scrapy.report.synthetic import synthetic_report
from tests.cli.test_cli_helpers import make_crawl, write_jsonl

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    # Nothing may leave the machine, whatever the page or the browser itself asks for.
    "--host-resolver-rules=MAP * ~NOTFOUND",
]

MEASURE = """
<script>
(function () {
  function box(sel) {
    var e = document.querySelector(sel);
    if (!e) { return null; }
    var r = e.getBoundingClientRect();
    return {w: r.width, h: r.height};
  }
  function column(table, i) {
    return Array.prototype.map.call(table.tBodies[0].rows, function (r) { return r.cells[i].textContent; });
  }
  var out = {charts: {}};
  ["#composition", "#histogram", "#top-hosts"].forEach(function (s) { out.charts[s] = box(s); });
  out.histogramBars = Array.prototype.map.call(document.querySelectorAll("#histogram rect"), function (r) {
    var b = r.getBoundingClientRect();
    return [b.width, b.height];
  });
  out.hostBars = document.querySelectorAll("#top-hosts rect").length;
  out.shareBars = Array.prototype.map.call(document.querySelectorAll("#host-table td.share"), function (td) {
    var bar = getComputedStyle(td, "::before");
    return [parseFloat(bar.width), parseFloat(bar.height), parseFloat(td.style.getPropertyValue("--s"))];
  });
  var t = document.getElementById("host-table");
  var heads = t.tHead.rows[0].cells;
  out.hostsBefore = column(t, 0);
  heads[0].click();
  out.hostsByName = column(t, 0);
  heads[1].click();
  out.pagesFirstClick = column(t, 1);
  out.pagesSort = heads[1].getAttribute("aria-sort");
  heads[1].click();
  out.pagesSecondClick = column(t, 1);
  out.mirrorRows = document.querySelectorAll("#mirror-table tbody tr").length;
  out.hostRows = t.tBodies[0].rows.length;
  out.diffMarks = document.querySelectorAll("#examples ins, #examples del").length;
  out.openClusters = document.querySelectorAll("#clusters details[open]").length;
  out.resources = performance.getEntriesByType("resource").map(function (e) { return e.name; });
  var pre = document.createElement("pre");
  pre.id = "measure";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


@pytest.fixture(scope="module")
def chromium() -> str:
    candidates = [os.environ.get("NEARDUP_CHROMIUM", ""), "/usr/bin/chromium"]
    candidates += [shutil.which(name) or "" for name in ("chromium", "chromium-browser")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    reason = "headless Chromium not found (apt-get install chromium, or set NEARDUP_CHROMIUM)"
    if IN_CI:
        pytest.fail(f"{reason} (required when CI=true)")
    pytest.skip(reason)


def run_chromium(binary: str, profile: Path, url: str, *args: str, netlog: Path | None = None) -> str:
    profile.mkdir(parents=True, exist_ok=True)
    command = [binary, *FLAGS, f"--user-data-dir={profile}", *args]
    if netlog is not None:
        command.append(f"--log-net-log={netlog}")
    result = subprocess.run([*command, url], capture_output=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    return result.stdout.decode("utf-8", errors="replace")


def page_requests(netlog: Path) -> list[str]:
    """http(s) requests the page made: those with a document initiator (Chromium's own background
    requests have none and are blocked by the resolver rule anyway)."""
    log = json.loads(netlog.read_text())
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls = []
    for event in log["events"]:
        params = event.get("params") or {}
        if names.get(event["type"]) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        if params.get("initiator") == "not an origin":
            continue
        if params["url"].startswith(("http:", "https:", "ws:", "wss:")):
            urls.append(params["url"])
    return urls


def png_stats(path: Path) -> tuple[int, int, int, float]:
    """``(width, height, distinct colours, share of pixels unlike the top-left one)`` of a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, bpp = 8, bytearray(), 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    prev = bytearray(stride)
    colours: set[bytes] = set()
    background = b""
    other = 0
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif kind == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 0xFF
        elif kind == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        row = bytes(line)
        if y == 0:
            background = row[:3]
        pixels = {row[i : i + 3] for i in range(0, stride, bpp * 2)}  # every other pixel is plenty
        colours |= pixels
        other += sum(1 for i in range(0, stride, bpp * 8) if row[i : i + 3] != background)
        prev = line
    sampled = height * len(range(0, stride, bpp * 8))
    return width, height, len(colours), other / sampled


@pytest.fixture(scope="module")
def crawl_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HTML report of a generated crawl with exact, near and mirror duplicates, made by the CLI."""
    work = tmp_path_factory.mktemp("browser")
    records, _expected = make_crawl()
    pages = write_jsonl(work / "pages.jsonl", records)
    page = work / "report.html"
    code = main(["scan", str(pages), "-o", str(work / "out.jsonl"), "--html", str(page), "-q"])
    assert code == 0
    return page


def test_report_paints_without_network(chromium: str, crawl_report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    netlog = tmp_path / "net.json"
    run_chromium(
        chromium,
        tmp_path / "profile",
        crawl_report.as_uri(),
        f"--screenshot={shot}",
        "--window-size=1280,2000",
        netlog=netlog,
    )
    width, height, colours, covered = png_stats(shot)
    assert (width, height) == (1280, 2000)
    assert colours > 30, f"only {colours} colours: blank page?"
    assert covered > 0.05, f"only {covered:.1%} of the page differs from the background"
    assert page_requests(netlog) == []
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(shot, ARTIFACTS / "report.png")


def test_network_check_sees_page_requests(chromium: str, tmp_path: Path) -> None:
    """Control: the net-log check does catch a page that loads something."""
    page = tmp_path / "external.html"
    page.write_text('<html><body><img src="http://127.0.0.9/x.png">x</body></html>')
    netlog = tmp_path / "net.json"
    run_chromium(chromium, tmp_path / "profile", page.as_uri(), "--dump-dom", netlog=netlog)
    assert page_requests(netlog) == ["http://127.0.0.9/x.png"]


def measure(chromium: str, page: Path, work: Path) -> dict[str, Any]:
    """Load a copy of the report with a measuring script appended; returns what it measured."""
    source = page.read_text(encoding="utf-8")
    source = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", source)  # let MEASURE run
    harness = work / "harness.html"
    harness.write_text(source.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    netlog = work / "net-harness.json"
    dom = run_chromium(
        chromium, work / "profile", harness.as_uri(), "--dump-dom", "--window-size=1280,2000", netlog=netlog
    )
    match = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert match, "the measuring script did not run"
    result: dict[str, Any] = json.loads(html.unescape(match.group(1)))
    result["netlog_requests"] = page_requests(netlog)
    return result


def test_charts_tables_and_sorting(chromium: str, crawl_report: Path, tmp_path: Path) -> None:
    m = measure(chromium, crawl_report, tmp_path)
    for chart, size in m["charts"].items():
        assert size and size["w"] > 100 and size["h"] > 20, (chart, size)
    assert m["histogramBars"] and all(w > 0 and h > 0 for w, h in m["histogramBars"])
    assert m["hostBars"] >= 2
    assert m["mirrorRows"] == 1
    assert m["hostRows"] == 3
    assert len(m["shareBars"]) == 3
    assert all(w > 50 and h > 4 for w, h, _fill in m["shareBars"])
    assert max(fill for _w, _h, fill in m["shareBars"]) > 0
    assert m["diffMarks"] > 0
    assert m["openClusters"] >= 1
    assert m["hostsByName"] == sorted(m["hostsBefore"])
    pages_desc = [int(v.replace(",", "")) for v in m["pagesFirstClick"]]
    assert pages_desc == sorted(pages_desc, reverse=True) and m["pagesSort"] == "descending"
    pages_asc = [int(v.replace(",", "")) for v in m["pagesSecondClick"]]
    assert pages_asc == sorted(pages_asc)
    # Without its CSP the page still asks for nothing: no external reference in the markup.
    assert m["resources"] == []
    assert m["netlog_requests"] == []


def test_100k_page_report_loads(chromium: str, tmp_path: Path) -> None:
    page = tmp_path / "big.html"
    text = render_html(synthetic_report(pages=100_000, hosts=5_000))
    assert len(text.encode()) < 5_000_000
    page.write_text(text, encoding="utf-8")
    m = measure(chromium, page, tmp_path)
    assert m["hostRows"] == 1000
    assert m["charts"]["#histogram"]["h"] > 20
    assert m["resources"] == [] and m["netlog_requests"] == []
