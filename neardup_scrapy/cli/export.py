"""``neardup-scrapy export``: the report and exports of a kept or shared index, without scanning."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_OK, CliError
from .index_options import index_setup, open_index, recorded_params
from .outputs import check_distinct, check_export_options, check_writable, write_reports
from .summary import export_summary


def run_export(args: argparse.Namespace) -> int:
    """Run ``export``; returns the exit status."""
    from neardup_scrapy.core.storage import StorageError

    if not (args.report or args.html or args.clusters or args.pairs) and args.quiet:
        raise CliError(
            "nothing to do: give --report, --html, --clusters or --pairs (or drop -q for the summary)"
        )
    settings, spec = index_setup(args)
    if not spec.kept:
        raise CliError(
            "no index named: give --disk-path FILE (or a JOBDIR), or --storage redis|redis-cluster"
        )
    outputs = (
        (args.report, "--report"),
        (args.html, "--html"),
        (args.clusters, "--clusters"),
        (args.pairs, "--pairs"),
    )
    check_distinct([(spec.disk_path, "INPUT (the index)")], outputs)
    for path, what in outputs:
        check_writable(path, what)
    check_export_options(args)
    base = recorded_params(settings)
    detector = open_index(spec, base, recorded=True)
    try:
        if len(detector.storage) == 0 and not detector.storage.host_counts():
            raise CliError(f"the {spec.describe()} holds no pages")
        report = detector.report()
        written = write_reports(args, detector, report)
    except StorageError as exc:
        raise CliError(f"the {spec.describe()} failed: {exc}") from None
    finally:
        detector.close()
    if not args.quiet:
        sys.stderr.write("".join(line + "\n" for line in export_summary(report, spec.describe(), written)))
        sys.stderr.flush()
    return EXIT_OK
