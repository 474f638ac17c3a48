"""Reports of a near-duplicate run: the JSON schema, the HTML page and the text summary.

Nothing here imports Scrapy or the detector, so the command-line tool starts fast and the
HTML report can be rendered from a saved JSON file alone.
"""

from .html import render_html
from .schema import REPORT_FORMAT, ReportFormatError, parse_report, report_json, validate_report
from .text import format_summary

__all__ = [
    "REPORT_FORMAT",
    "ReportFormatError",
    "format_summary",
    "parse_report",
    "render_html",
    "report_json",
    "validate_report",
]
