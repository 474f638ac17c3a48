"""The ``neardup-scrapy`` parser and the dispatch to its subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .check_index import run_check_index
from .common import EXIT_ERROR, EXIT_INTERRUPTED, PROG, CliError, err
from .export import run_export
from .report_cmd import run_report
from .scan import run_scan


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("neardup-scrapy")
    except metadata.PackageNotFoundError:  # pragma: no cover - source tree without metadata
        return "0+unknown"


_EPILOG = (
    "Exit status: 0 ok, 1 some records could not be used, 2 usage or I/O error, an output that is "
    "the input or another output, or no page bodies, 130 interrupted."
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``neardup-scrapy`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Near-duplicate detection for crawled pages, and its reports.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _add_scan(sub)
    _add_report(sub)
    _add_export(sub)
    _add_check_index(sub)
    return parser


def _add_scan(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scan = sub.add_parser(
        "scan",
        help="tag the pages of a feed or web archive as unique / exact / near duplicates",
        description=(
            "Read pages (JSON Lines or a JSON array: url + html, body or text; .gz allowed; - for "
            "stdin; or WARC/ARC/WACZ), check them in order and write each record with a 'neardup' "
            "tag object added (for an archive: one line per HTML response record)."
        ),
        epilog=_EPILOG,
    )
    scan.add_argument(
        "inputs",
        metavar="INPUT",
        nargs="*",
        help=(
            "JSON Lines, JSON array, .warc[.gz], .arc[.gz] or .wacz file (.gz allowed), - for stdin, or a "
            "directory (its web archives, subdirectories too, in path order); several are read in order "
            "into one index"
        ),
    )
    scan.add_argument(
        "--inputs-from",
        action="append",
        default=[],
        metavar="FILE",
        help="also read the files and directories FILE lists, one a line (# comments; - for stdin)",
    )
    scan.add_argument(
        "-o",
        "--output",
        metavar="OUTPUT",
        help="tagged records, JSON Lines (a NAME.json gets one JSON array; .gz compresses; - for stdout); "
        "default: stdout unless it is a terminal",
    )
    _output_options(scan)
    scan.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help="processes that decode and analyse pages (default: all cores); verdicts do not change",
    )
    scan.add_argument(
        "--max-body-bytes",
        type=int,
        default=10_000_000,
        metavar="N",
        help="larger page bodies are skipped as 'too large', longer JSON lines unread (10000000; 0: no cap)",
    )
    scan.add_argument(
        "--retag",
        action="store_true",
        help="replace a 'neardup' key the records already have (default: keep it)",
    )
    _detector_options(scan)
    _index_options(scan, export=False)
    noise = scan.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", action="store_true", help="no progress line and no summary")
    noise.add_argument(
        "-v", "--verbose", action="store_true", help="print every duplicate and every unusable record"
    )
    scan.set_defaults(run=run_scan)


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser(
        "report",
        help="render a JSON report as a self-contained HTML page",
        description="Validate a neardup-report/1 JSON file and render it as one self-contained HTML page.",
        epilog="Exit status: 0 ok, 2 usage error, unreadable or invalid report.",
    )
    report.add_argument("report", metavar="REPORT.json", help="the JSON report (.gz allowed; - for stdin)")
    report.add_argument(
        "-o", "--output", metavar="REPORT.html", help="HTML file (- for stdout); default: REPORT with .html"
    )
    report.add_argument("--summary", action="store_true", help="also print the text summary on stderr")
    report.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    report.set_defaults(run=run_report)


def _add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser(
        "export",
        help="write the report, clusters and pairs of a kept or shared index, without scanning",
        description=(
            "Read a disk index (a scan's --disk-path, a crawl's JOBDIR), a Redis or a Redis Cluster "
            "index (URL and prefix) with the parameters it was built with, and write its JSON or HTML "
            "report, every cluster and every duplicate pair. The mirror hosts are decided on the whole "
            "index first, as at the end of a crawl or scan (their origins' pages become representatives)."
        ),
        epilog="Exit status: 0 ok, 2 usage error, no such index, or an index that cannot be read.",
    )
    _output_options(export)
    export.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    _index_options(export, export=True)
    export.set_defaults(run=run_export)


def _add_check_index(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = sub.add_parser(
        "check-index",
        help="look for damage in a disk index that the check at open cannot see",
        description=(
            "Check every record, bucket entry, cluster parent and host counter of a disk index "
            "(NEARDUP_STORAGE = 'disk'), read-only: values of the wrong type or size, pages whose "
            "bucket entries are missing (lookups no longer find them), cycles of cluster parents."
        ),
        epilog="Exit status: 0 no damage found, 1 the index is damaged, 2 usage error or unreadable file.",
    )
    check.add_argument(
        "path",
        metavar="PATH",
        nargs="+",
        help="the index file, or a JOBDIR (its neardup.sqlite and neardup-items.sqlite)",
    )
    check.add_argument("-q", "--quiet", action="store_true", help="print only what is damaged")
    check.set_defaults(run=run_check_index)


def _output_options(parser: argparse.ArgumentParser) -> None:
    """The report and export files of ``scan`` and ``export``."""
    parser.add_argument(
        "--report", metavar="REPORT.json", help="write the JSON report (neardup-report/1; - for stdout)"
    )
    parser.add_argument("--html", metavar="REPORT.html", help="write the HTML report (- for stdout)")
    parser.add_argument(
        "--clusters",
        metavar="FILE",
        help="write every cluster with every member (JSON Lines, - for stdout; Parquet if .parquet)",
    )
    parser.add_argument(
        "--pairs",
        metavar="FILE",
        help="write every duplicate with its representative (JSON Lines, - for stdout; Parquet if .parquet)",
    )


def _detector_options(parser: argparse.ArgumentParser) -> None:
    """The detector parameters of ``scan`` (a flag wins over ``-s``)."""
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="T",
        help="Jaccard similarity of a near duplicate (0.8)",
    )
    parser.add_argument(
        "--algorithm", choices=("both", "minhash", "simhash"), default=None, help="candidate search (both)"
    )
    parser.add_argument("--num-perm", type=int, default=None, metavar="N", help="MinHash permutations (128)")
    parser.add_argument("--shingle-size", type=int, default=None, metavar="N", help="words per shingle (5)")
    parser.add_argument(
        "--min-tokens",
        type=int,
        default=None,
        metavar="N",
        help="shorter pages are matched exactly only, or as views of their own address (10)",
    )
    parser.add_argument(
        "--simhash-distance",
        type=int,
        default=None,
        metavar="N",
        help="SimHash Hamming distance of a near duplicate (3)",
    )
    parser.add_argument(
        "--scope",
        choices=("global", "host"),
        default=None,
        help="compare across hosts or within a host (global)",
    )


def _index_options(parser: argparse.ArgumentParser, *, export: bool) -> None:
    """The options that name the index (the crawl's settings, see :mod:`.scanindex`)."""
    group = parser.add_argument_group(
        "index",
        "where the index lives (the crawl's settings; a flag wins over -s)"
        if export
        else "where the index lives: memory (default), or kept on disk or in Redis, to check pages "
        "against earlier scans and crawls and to share it between processes (a flag wins over -s)",
    )
    group.add_argument(
        "--storage",
        choices=("memory", "disk", "redis", "redis-cluster")
        if not export
        else ("disk", "redis", "redis-cluster"),
        default=None,
        help="NEARDUP_STORAGE: "
        + ("disk when --disk-path is given" if export else "memory, or disk with --disk-path"),
    )
    group.add_argument(
        "--disk-path",
        metavar="FILE",
        default=None,
        help="NEARDUP_DISK_PATH: the SQLite index file (a directory: a crawl's JOBDIR, its neardup.sqlite)",
    )
    group.add_argument(
        "--redis-url",
        metavar="URL",
        default=None,
        help="NEARDUP_REDIS_URL: the Redis server, or any node of the cluster (redis://127.0.0.1:6379/0)",
    )
    group.add_argument(
        "--redis-prefix",
        metavar="PREFIX",
        default=None,
        help="NEARDUP_REDIS_PREFIX: key prefix, one index per prefix (neardup; a crawl's: its spider name)",
    )
    group.add_argument(
        "-s",
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a crawl setting: NEARDUP_STORAGE, NEARDUP_DISK_PATH, JOBDIR, NEARDUP_REDIS_URL, "
        "NEARDUP_REDIS_PREFIX or a detector parameter (NEARDUP_THRESHOLD, NEARDUP_SEED, ...)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it).

    Args:
        argv: arguments without the program name (default: ``sys.argv[1:]``).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except CliError as exc:
        sys.stderr.write(f"{PROG} {args.command}: error: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
