"""Extension: final stats, the closing summary in the log, and the JSON/HTML reports.

Enable it with the add-on, or by hand::

    EXTENSIONS = {"neardup_scrapy.NeardupExtension": 100}

The counters (``neardup/pages``, ``neardup/unique``...) are kept as pages are checked, by
whichever components are enabled; at spider close this extension adds ``neardup/clusters`` and
``neardup/mirror_hosts``, logs a summary of at most ~25 lines as one record, and writes
``NEARDUP_REPORT_FILE`` (the ``neardup-report/1`` JSON) and ``NEARDUP_REPORT_HTML``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .report.schema import report_json
from .runtime import NeardupRuntime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["NeardupExtension"]

logger = logging.getLogger(__name__)

SUMMARY_LINES = 25


def _write(path: str, text: str) -> None:
    """Write ``text`` atomically (a temporary file renamed over ``path``)."""
    target = Path(path).expanduser()
    if target.parent and not target.parent.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8", errors="replace")  # HTML: a lone surrogate becomes "?"
    os.replace(tmp, target)


class NeardupExtension:
    """Stats, closing summary and reports of the near-duplicate detection."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.runtime = NeardupRuntime.of(crawler)
        self.config = self.runtime.config
        self.runtime.on_close(self._finish)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """Build the extension (raises ``NotConfigured`` when ``NEARDUP_ENABLED`` is False)."""
        return cls(crawler)

    def _finish(self, runtime: NeardupRuntime, reason: str) -> None:
        try:
            report = runtime.report()
        except Exception as exc:
            logger.warning("neardup: cannot build the report (the index store failed?): %s", exc)
            return
        totals = report.get("totals", {})
        stats = runtime.stats
        stats.set_value("neardup/clusters", int(totals.get("clusters", 0)))
        stats.set_value("neardup/mirror_hosts", int(totals.get("mirror_hosts", 0)))
        self._log_summary(report)
        if self.config.report_file:
            self._save(self.config.report_file, lambda: report_json(report))
        if self.config.report_html:
            self._save(self.config.report_html, lambda: _render_html(report))
        if self.config.clusters_file or self.config.pairs_file:
            self._export(runtime)

    def _export(self, runtime: NeardupRuntime) -> None:
        from .core.exports import pair_rows, write_rows

        try:
            clusters = runtime.cluster_rows()
        except Exception as exc:
            logger.error("neardup: cannot read the clusters for NEARDUP_CLUSTERS_FILE/PAIRS_FILE: %s", exc)
            return
        for path, kind in ((self.config.clusters_file, "clusters"), (self.config.pairs_file, "pairs")):
            if not path:
                continue
            rows = clusters if kind == "clusters" else pair_rows(clusters)
            try:
                count = write_rows(path, rows, kind)
            except Exception as exc:
                logger.error("neardup: cannot write the %s file %s: %s", kind, path, exc)
                continue
            logger.info("neardup: %s written to %s (%d rows)", kind, path, count)

    @staticmethod
    def _log_summary(report: dict[str, Any]) -> None:
        try:
            from .report.text import format_summary

            lines = format_summary(report, max_lines=SUMMARY_LINES)
        except Exception as exc:
            logger.warning("neardup: cannot format the summary: %s", exc)
            return
        if lines:
            logger.info("%s", "\n".join(lines))

    @staticmethod
    def _save(path: str, render: Any) -> None:
        try:
            _write(path, render())
        except Exception as exc:
            logger.error("neardup: cannot write the report %s: %s", path, exc)
            return
        logger.info("neardup: report written to %s", path)


def _render_html(report: dict[str, Any]) -> str:
    from .report.html import render_html

    return render_html(report)
