"""What an operator sees: start-up errors in one line, readable names, plurals, misspelt settings.

The crawls here run the real ``scrapy runspider`` command (its exit status and log are what a
user gets), against nothing: they stop before the first request, or fetch one local page.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_server import Site, article, html_page, serve

from neardup_scrapy.report.text import format_summary

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]

SPIDER = """
import scrapy


class OneSpider(scrapy.Spider):
    name = "one"
    custom_settings = {"ADDONS": {"neardup_scrapy.Addon": 100}}

    def __init__(self, start="http://127.0.0.1:9/", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        yield {"url": response.url}
"""


def scrapy_version() -> tuple[int, int]:
    import scrapy

    major, minor = scrapy.__version__.split(".")[:2]
    return int(major), int(minor)


def runspider(tmp_path: Path, *settings: str, start: str | None = None) -> subprocess.CompletedProcess[str]:
    spider = tmp_path / "one.py"
    spider.write_text(SPIDER)
    args = [sys.executable, "-m", "scrapy", "runspider", str(spider)]
    for setting in settings:
        args += ["-s", setting]
    if start:
        args += ["-a", f"start={start}"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        args, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env, check=False
    )


def test_invalid_setting_is_one_line_without_traceback(tmp_path: Path) -> None:
    result = runspider(tmp_path, "LOG_LEVEL=INFO", "NEARDUP_THRESHOLD=7")
    assert result.returncode != 0
    log = result.stderr
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == 1, log
    assert "invalid setting NEARDUP_THRESHOLD = '7'" in errors[0]
    assert "Task exception was never retrieved" not in log, log
    if scrapy_version() >= (2, 14):
        assert "Traceback" not in log, log
    else:  # Scrapy 2.13: Twisted prints the unhandled Deferred to stderr itself (see README)
        assert "[twisted] CRITICAL: Unhandled error in Deferred:" in log


def test_invalid_setting_traceback_at_debug(tmp_path: Path) -> None:
    result = runspider(tmp_path, "LOG_LEVEL=DEBUG", "NEARDUP_ACTION=delete")
    assert result.returncode != 0
    assert "invalid setting NEARDUP_ACTION = 'delete'" in result.stderr
    assert "Traceback" in result.stderr  # kept for debugging, as a DEBUG record


def test_names_plurals_and_misspelt_settings(tmp_path: Path) -> None:
    site = Site()
    site.add("/", html_page("Front", article(3, 200)))
    with serve({"127.0.0.1": site}) as urls:
        result = runspider(
            tmp_path,
            "LOG_LEVEL=INFO",
            "NEARDUP_TRESHOLD=0.9",
            "NEARDUP_WORKER=inline",
            start=urls["127.0.0.1"] + "/",
        )
    log = result.stderr
    assert result.returncode == 0, log
    assert "neardup_scrapy.addon.Addon object at 0x" not in log and "<class 'neardup_scrapy" not in log, log
    assert "[neardup_scrapy.Addon]" in log
    assert "neardup_scrapy.middlewares.NeardupDownloaderMiddleware" in log
    assert "Unknown setting NEARDUP_TRESHOLD ignored (did you mean NEARDUP_THRESHOLD?)" in log
    assert "neardup: 1 page from 1 host;" in log
    assert "1 pages" not in log and "1 clusters" not in log


def test_summary_plurals() -> None:
    report = {"totals": {"pages": 1, "unique": 1, "clusters": 1, "storage_errors": 1}, "hosts_total": 1}
    lines = format_summary(report)
    assert lines[0].startswith("neardup: 1 page from 1 host;")
    assert "in 1 cluster" in lines[2] and "1 checked page " in lines[2]
    assert "WARNING: 1 page passed unchecked" in "\n".join(lines)
