"""The progress line: drawn only on a terminal, with rate and ETA; and stdout-is-a-terminal behaviour."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from neardup_scrapy.cli.progress import Progress
from tests.cli.test_cli_helpers import make_crawl, write_jsonl

ROOT = Path(__file__).resolve().parents[2]


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_line_with_known_total() -> None:
    progress = Progress(io.StringIO(), total=1000, enabled=True)
    progress.started -= 10.0
    progress.pages, progress.done, progress.duplicates = 500, 250, 40
    line = progress.line(progress.started + 10.0)
    assert "25.0%" in line and "500 pages" in line and "50.0 pages/s" in line and "40 duplicates" in line
    assert "ETA 0:30" in line and line.index("ETA") < line.index("pages")


def test_line_without_total_has_no_eta() -> None:
    progress = Progress(io.StringIO(), total=None, enabled=True)
    progress.pages = 10
    line = progress.line(progress.started + 2.0)
    assert "ETA" not in line and "%" not in line and "5.0 pages/s" in line


def test_not_drawn_when_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream, total=100)
    assert not progress.enabled
    progress.update(5, 50)
    progress.close()
    assert stream.getvalue() == ""


def test_drawn_and_cleared_on_a_terminal() -> None:
    stream = FakeTty()
    progress = Progress(stream, total=100, interval=0.0)
    assert progress.enabled
    progress.update(5, 50, 1)
    assert "\r" in stream.getvalue() and "50.0%" in stream.getvalue()
    progress.write("a message")
    assert "a message\n" in stream.getvalue()
    progress.close()
    assert stream.getvalue().endswith("\r\x1b[K")


def _run_on_pty(args: list[str], stdout_on_tty: bool) -> tuple[int, bytes, bytes]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup_scrapy.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_on_tty else subprocess.PIPE,
        stderr=slave,
        cwd=ROOT,
    )
    os.close(slave)
    terminal = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO once the child has closed the terminal
            break
        if not chunk:
            break
        terminal += chunk
    stdout = proc.stdout.read() if proc.stdout is not None else b""
    os.close(master)
    return proc.wait(timeout=120), terminal, stdout


@pytest.mark.skipif(sys.platform != "linux", reason="pseudo-terminals as on Linux")
def test_progress_and_summary_on_a_terminal(tmp_path: Path) -> None:
    records, _expected = make_crawl(distinct=400)
    # byte-distinct copies, so the scan parses every page (and lasts long enough to draw)
    copies = [
        {**rec, "html": f"{rec['html']}<!-- copy {k} -->"} if "html" in rec else rec
        for k in range(3)
        for rec in records
    ]
    path = write_jsonl(tmp_path / "pages.jsonl", copies)
    code, terminal, _ = _run_on_pty(["scan", str(path), "-o", str(tmp_path / "o.jsonl")], stdout_on_tty=False)
    assert code == 0
    assert b"\r[" in terminal and b"ETA" in terminal and b"\x1b[K" in terminal  # the progress line
    assert b"neardup: " in terminal


@pytest.mark.skipif(sys.platform != "linux", reason="pseudo-terminals as on Linux")
def test_records_not_dumped_on_a_terminal(tmp_path: Path) -> None:
    records, _expected = make_crawl()
    path = write_jsonl(tmp_path / "pages.jsonl", records)
    code, terminal, _ = _run_on_pty(["scan", str(path)], stdout_on_tty=True)
    assert code == 0
    assert b"stdout is a terminal" in terminal
    assert b'"html"' not in terminal
