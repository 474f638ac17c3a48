"""``neardup-scrapy report``: validate a JSON report and render it as one HTML page."""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import zlib
from typing import Any

from .common import EXIT_OK, CliError
from .outputs import check_distinct, check_writable, write_text

_GZIP_MAGIC = b"\x1f\x8b"


def _read_report(path: str) -> Any:
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
        if data[:2] == _GZIP_MAGIC:
            data = gzip.decompress(data)
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise CliError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    from neardup_scrapy.report.schema import parse_report

    try:
        return parse_report(data)
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 JSON") from None
    except ValueError as exc:  # NaN or Infinity, an integer too long to read
        raise CliError(f"{path}: not JSON: {exc}") from None


def run_report(args: argparse.Namespace) -> int:
    """Run ``report``; returns the exit status."""
    from neardup_scrapy.report.html import render_html
    from neardup_scrapy.report.schema import ReportFormatError, validate_report

    output = args.output
    if output is None:
        output = "-" if args.report == "-" else re.sub(r"(\.json)?(\.gz)?$", "", args.report) + ".html"
    check_distinct([(args.report, "INPUT")], [(output, "OUTPUT")])
    check_writable(output, "OUTPUT")
    data = _read_report(args.report)
    try:
        validate_report(data)
    except ReportFormatError as exc:
        raise CliError(f"{args.report}: not a valid neardup-report/1 file: {exc}") from None
    page = render_html(data)
    if output == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
    else:
        write_text(output, page)
    if not args.quiet:
        if args.summary:
            from neardup_scrapy.report.text import format_summary

            sys.stderr.write("".join(line + "\n" for line in format_summary(data)))
        if output != "-":
            sys.stderr.write(f"wrote: {output} ({len(page.encode('utf-8', 'replace')):,} bytes)\n")
        sys.stderr.flush()
    return EXIT_OK
