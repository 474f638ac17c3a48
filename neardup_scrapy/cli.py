"""The ``neardup-scrapy`` command: find near-duplicates in crawled pages, render reports.

Usage::

    neardup-scrapy scan [INPUT ...] [--inputs-from FILE] [-o OUTPUT] [--report REPORT.json]
                        [--html REPORT.html] [--clusters FILE] [--pairs FILE] [--jobs N]
                        [--max-body-bytes N] [--retag] [--threshold T]
                        [--algorithm both|minhash|simhash] [--num-perm N] [--shingle-size N]
                        [--min-tokens N] [--simhash-distance N] [--scope global|host]
                        [--storage KIND] [--disk-path FILE] [--redis-url URL]
                        [--redis-prefix PREFIX] [-s NAME=VALUE ...] [-q | -v]
    neardup-scrapy export [--report REPORT.json] [--html REPORT.html] [--clusters FILE]
                          [--pairs FILE] [--storage KIND] [--disk-path FILE] [--redis-url URL]
                          [--redis-prefix PREFIX] [-s NAME=VALUE ...] [-q]
    neardup-scrapy report REPORT.json [-o REPORT.html] [--summary] [-q]
    neardup-scrapy check-index PATH... [-q]

``scan`` reads JSON Lines or a JSON array (Scrapy's ``-O items.jsonl`` / ``-O items.json``
feeds; gzip allowed; ``-`` for stdin), one page per record with ``url`` and ``html`` (or
``body``; or ``text`` for plain text), or a web archive (WARC/ARC, plain or gzip, and WACZ):
its HTML ``response`` records. It checks every page in input order and writes each JSON
record to OUTPUT unchanged, with a ``neardup`` key holding the page's tag object added at the
end (a record that already has one keeps it unless ``--retag``). For an archive, OUTPUT gets
one JSON line per HTML response record: ``url``, ``warc_record_id`` and ``neardup``.

A record that is not checked is counted by reason (an archive's request records and images
too). A JSON record that cannot be used (invalid JSON, not an object, no ``url``, no page
body, a field of the wrong type, nested too deep) is reported on stderr with its line number
and still written to OUTPUT with a ``skipped`` tag whose ``reason`` says why.

Several inputs (files, directories of web archives, ``--inputs-from`` lists; see
:mod:`.inputs.collection`) are read one after another into one index, which may be kept on disk
or shared in Redis (:mod:`.scanindex`); ``export`` writes the report and exports of such an
index without scanning.

Exit status: 0 ok; 1 some records could not be used (the output is still complete);
2 usage, parameter or input/output error, or an input with no page body at all;
130 interrupted (Ctrl-C). On an input error or an interrupt the output, the report and the
summary cover the records done so far.

This module imports neither Scrapy nor (until ``scan`` runs) the detector, so it starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import re
import sys
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from .progress import Progress

if TYPE_CHECKING:
    from .core.urlrules import UrlRuleLearner

EXIT_OK = 0
EXIT_MALFORMED = 1
#: Same value: some records could not be used.
EXIT_UNUSABLE = EXIT_MALFORMED
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

PROG = "neardup-scrapy"
#: Unusable records reported one by one on stderr (all of them with ``--verbose``).
MAX_LINE_MESSAGES = 20
#: Lines of the end-of-scan summary on stderr.
SUMMARY_LINES = 25
#: gzip level of a ``.gz`` OUTPUT: 6 is zlib's default, a good speed/size balance.
GZIP_LEVEL = 6
_BUFFER = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
TAG_KEY = "neardup"
#: Reason of a record without a page body (see :mod:`neardup_scrapy.inputs.base`).
NO_BODY_REASON = "no page body"
#: Detector parameter -> option, to name the option in error messages.
_OPTIONS = {
    "threshold": "--threshold",
    "algorithm": "--algorithm",
    "num_perm": "--num-perm",
    "shingle_size": "--shingle-size",
    "min_tokens": "--min-tokens",
    "simhash_distance": "--simhash-distance",
    "scope": "--scope",
}


class CliError(Exception):
    """A usage, parameter or I/O problem: printed as one line, exit status 2."""


class _OutputError(Exception):
    """Writing OUTPUT failed (disk full, broken pipe...); wraps the OSError."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


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
    scan.add_argument(
        "--report", metavar="REPORT.json", help="write the JSON report (neardup-report/1; - for stdout)"
    )
    scan.add_argument("--html", metavar="REPORT.html", help="write the HTML report (- for stdout)")
    scan.add_argument(
        "--clusters",
        metavar="FILE",
        help="write every cluster with every member (JSON Lines, - for stdout; Parquet if .parquet)",
    )
    scan.add_argument(
        "--pairs",
        metavar="FILE",
        help="write every duplicate with its representative (JSON Lines, - for stdout; Parquet if .parquet)",
    )
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
    scan.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="T",
        help="Jaccard similarity of a near duplicate (0.8)",
    )
    scan.add_argument(
        "--algorithm", choices=("both", "minhash", "simhash"), default=None, help="candidate search (both)"
    )
    scan.add_argument("--num-perm", type=int, default=None, metavar="N", help="MinHash permutations (128)")
    scan.add_argument("--shingle-size", type=int, default=None, metavar="N", help="words per shingle (5)")
    scan.add_argument(
        "--min-tokens",
        type=int,
        default=None,
        metavar="N",
        help="shorter pages are matched exactly only, or as views of their own address (10)",
    )
    scan.add_argument(
        "--simhash-distance",
        type=int,
        default=None,
        metavar="N",
        help="SimHash Hamming distance of a near duplicate (3)",
    )
    scan.add_argument(
        "--scope",
        choices=("global", "host"),
        default=None,
        help="compare across hosts or within a host (global)",
    )
    _index_options(scan, export=False)
    noise = scan.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", action="store_true", help="no progress line and no summary")
    noise.add_argument(
        "-v", "--verbose", action="store_true", help="print every duplicate and every unusable record"
    )
    scan.set_defaults(run=_run_scan)

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
    report.set_defaults(run=_run_report)

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
    export.add_argument(
        "--report", metavar="REPORT.json", help="write the JSON report (neardup-report/1; - for stdout)"
    )
    export.add_argument("--html", metavar="REPORT.html", help="write the HTML report (- for stdout)")
    export.add_argument(
        "--clusters",
        metavar="FILE",
        help="write every cluster with every member (JSON Lines, - for stdout; Parquet if .parquet)",
    )
    export.add_argument(
        "--pairs",
        metavar="FILE",
        help="write every duplicate with its representative (JSON Lines, - for stdout; Parquet if .parquet)",
    )
    export.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    _index_options(export, export=True)
    export.set_defaults(run=_run_export)

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
    check.set_defaults(run=_run_check_index)
    return parser


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
        _err("interrupted")
        return EXIT_INTERRUPTED


def _err(message: str) -> None:
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()


# -- files -------------------------------------------------------------------------------------


def _file_identity(path: str) -> set[tuple[Any, ...]]:
    """What names the file at ``path``: its resolved path (symlinks followed) and, when it
    exists, its device and inode (which hard links share); ``-`` is the standard stream."""
    keys: set[tuple[Any, ...]] = {("path", os.path.realpath(os.path.expanduser(path)))}
    with contextlib.suppress(OSError):
        info = os.stat(path)
        keys.add(("inode", info.st_dev, info.st_ino))
    return keys


def _stdout_identity() -> set[tuple[Any, ...]]:
    """The file standard output is redirected to (``> file``, ``>> file``), when it is one."""
    try:
        info = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return set()
    import stat

    return {("inode", info.st_dev, info.st_ino)} if stat.S_ISREG(info.st_mode) else set()


def _check_distinct(
    inputs: Sequence[tuple[str | None, str]], outputs: Sequence[tuple[str | None, str]]
) -> None:
    """Refuse (one line, exit 2) an output that is one of the inputs or another output.

    Files are compared by resolved path and by device and inode, so a symlink, a hard link or
    another spelling of a path is the same file; ``-`` as an output is standard output, which may
    itself be redirected to an input. Checked before anything is opened for writing.
    """
    known: list[tuple[set[tuple[Any, ...]], str, str]] = []
    for path, what in inputs:
        if path and path != "-":
            known.append((_file_identity(path), what, path))
    to_stdout: str | None = None
    for path, what in outputs:
        if path is None:
            continue
        if path == "-":
            if to_stdout is not None:
                raise CliError(
                    f"{to_stdout} and {what} both write to standard output; give each its own file"
                )
            to_stdout = what
            keys, name = _stdout_identity(), "standard output"
        else:
            keys, name = _file_identity(path), path
        for other_keys, other_what, other_path in known:
            if keys & other_keys:
                if other_what.startswith("INPUT"):
                    raise CliError(
                        f"{what} {name} is the input {other_path}; {PROG} never writes over its input: "
                        "choose another file name"
                    )
                raise CliError(
                    f"{what} {name} is the same file as {other_what} {other_path}; give each output its own"
                )
        known.append((keys, what, name))


def _check_writable(path: str | None, what: str) -> None:
    """Fail early (before the scan) when an output file cannot be created."""
    if not path or path == "-":
        return
    if os.path.isdir(path):
        raise CliError(f"{what} {path}: is a directory")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise CliError(f"{what} {path}: not writable")
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CliError(f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise CliError(f"{what} {path}: directory {parent} is not writable")


def _open_output(path: str | None) -> tuple[BinaryIO | None, str | None]:
    """The record output stream and its display name; ``(None, None)`` when not written."""
    if path is None:
        if sys.stdout.isatty():
            return None, None
        return sys.stdout.buffer, "<stdout>"
    if path == "-":
        return sys.stdout.buffer, "<stdout>"
    try:
        stream: BinaryIO
        if path.endswith(".gz"):
            raw = open(path, "wb")  # noqa: SIM115 - closed with the gzip stream
            gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0)
            stream = _ClosingGzip(gz, raw)
        else:
            stream = open(path, "wb", buffering=_BUFFER)  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise CliError(f"OUTPUT {path}: cannot create: {exc.strerror or exc}") from None
    if path.removesuffix(".gz").lower().endswith(".json"):
        return _JsonArray(stream), path
    return stream, path


class _ClosingGzip(io.BufferedWriter):
    """A buffered gzip writer that also closes the underlying file."""

    def __init__(self, gz: gzip.GzipFile, raw: IO[bytes]) -> None:
        super().__init__(gz, _BUFFER)
        self._raw_file = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw_file.close()


class _JsonArray(io.BufferedWriter):
    """``-o NAME.json``: the output lines as one JSON array, one element per line.

    Every line the scan writes is one JSON value ending in a newline; the array is closed when
    the output is, also after an interruption, so the file is always one JSON document.
    """

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__(stream, _BUFFER)
        self._elements = 0

    def write(self, line: Any) -> int:
        opener = b",\n" if self._elements else b"[\n"
        self._elements += 1
        super().write(opener + bytes(line).rstrip(b"\r\n"))
        return len(line)

    def close(self) -> None:
        if not self.closed:
            try:
                super().write(b"\n]\n" if self._elements else b"[]\n")
            finally:
                super().close()


def _write_text(path: str, text: str) -> None:
    """Write a UTF-8 text file; a new or regular file atomically (temporary file, then rename);
    ``-``: standard output."""
    if path == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8", "replace"))
        sys.stdout.buffer.flush()
        return
    regular = not os.path.lexists(path) or (os.path.isfile(path) and not os.path.islink(path))
    target = f"{path}.tmp{os.getpid()}" if regular else path
    try:
        with open(target, "w", encoding="utf-8", errors="replace", newline="\n") as out:
            out.write(text)
        if regular:
            os.replace(target, path)
    except OSError as exc:
        if regular:
            with contextlib.suppress(OSError):
                os.unlink(target)
        raise CliError(f"{path}: cannot write: {exc.strerror or exc}") from None


def report_json(report: dict[str, Any]) -> str:
    """The report as indented, strict JSON text (see :func:`neardup_scrapy.report.report_json`)."""
    from .report.schema import report_json as strict_json

    return strict_json(report)


def plural(count: int, word: str, words: str | None = None) -> str:
    """``"1 page"``, ``"2 pages"``, ``"1,074 records"``."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


# -- scan --------------------------------------------------------------------------------------


def _url_rule_learner() -> UrlRuleLearner:
    from .core.urlrules import UrlRuleLearner

    return UrlRuleLearner()


@dataclass
class ScanStats:
    """What a scan read and did.

    Attributes:
        records: records read and written (or passed over) so far, in input order.
        pages: pages checked.
        duplicates: exact and near duplicates among them (revisits excepted).
        revisits: pages whose url the index had checked before (in this run or an earlier one
            into a kept index): tagged as they were then, counted once.
        problems: records that could not be used because of a defect of the input.
        problem_numbers: the first of their line or record numbers.
        reasons: records not checked, by reason (defects and non-pages alike).
        kept: records whose existing ``neardup`` key was kept (no ``--retag``).
        written: records written to OUTPUT.
        url_rules: the duplicate-url rules learnt from the pages' urls and verdicts.
    """

    records: int = 0
    pages: int = 0
    duplicates: int = 0
    problems: int = 0
    problem_numbers: list[int] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)
    kept: int = 0
    written: int = 0
    blank: int = 0
    url_rules: UrlRuleLearner | None = None
    revisits: int = 0

    def add(self, other: ScanStats) -> None:
        """Add the counts of ``other`` (the next input of the run) and take its rule learner."""
        for name in ("records", "pages", "duplicates", "problems", "kept", "written", "blank", "revisits"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.problem_numbers += other.problem_numbers[: max(0, 100 - len(self.problem_numbers))]
        self.reasons.update(other.reasons)
        self.url_rules = other.url_rules or self.url_rules


def _skipped_tag(reason: str, number: int | None) -> dict[str, Any]:
    tag: dict[str, Any] = {
        "status": "skipped",
        "duplicate_of": None,
        "similarity": None,
        "hamming": None,
        "cluster": None,
        "mirror_of": None,
        "reason": reason,
    }
    if number is not None:
        tag["line"] = number
    return tag


def _index_setup(args: argparse.Namespace) -> tuple[dict[str, str], Any]:
    """The ``-s`` settings and the index the options name (a bad one names its option, exit 2)."""
    from .scanindex import IndexOptionError, index_spec, parse_settings

    try:
        settings = parse_settings(args.settings)
        spec = index_spec(
            settings,
            storage=args.storage,
            disk_path=args.disk_path,
            redis_url=args.redis_url,
            redis_prefix=args.redis_prefix,
        )
    except IndexOptionError as exc:
        raise CliError(str(exc)) from None
    return settings, spec


def _params(args: argparse.Namespace, settings: dict[str, str]) -> Any:
    """The detector parameters from the options and ``-s``; a bad value names its option."""
    from .core.params import DetectorParams, ParameterError
    from .scanindex import IndexOptionError, param_values

    flags = {name: getattr(args, name, None) for name in _OPTIONS}
    try:
        values, origin = param_values(settings, flags)
        return DetectorParams(**values)
    except IndexOptionError as exc:
        raise CliError(str(exc)) from None
    except ParameterError as exc:
        message = str(exc)
        match = re.search(r"'(\w+)'", message)
        name = match.group(1) if match else ""
        accepts = message.split("expected", 1)[-1].strip() if "expected" in message else message
        if origin.get(name):
            setting = origin[name]
            raise CliError(
                f"argument -s {setting}: invalid value {settings[setting]!r}: expected {accepts}"
            ) from None
        if name in _OPTIONS:
            raise CliError(
                f"argument {_OPTIONS[name]}: invalid value {values[name]!r}: expected {accepts}"
            ) from None
        raise CliError(message) from None


def _open_index(spec: Any, params: Any, *, recorded: bool = False) -> Any:
    """The detector over the index ``spec``; an index built with other parameters, or one that
    cannot be reached, stops the command with one line (exit 2)."""
    from .core.params import ParameterError
    from .core.storage import ParameterMismatchError, StorageError
    from .scanindex import IndexOptionError, open_detector, open_recorded

    try:
        return open_recorded(spec, params) if recorded else open_detector(spec, params)
    except ParameterMismatchError as exc:
        raise CliError(f"{exc} (the scan options and -s set them)") from None
    except (StorageError, ParameterError) as exc:
        raise CliError(f"cannot open the {spec.describe()}: {exc}") from None
    except IndexOptionError as exc:
        raise CliError(str(exc)) from None


def _export_options(args: argparse.Namespace) -> None:
    for path, what in ((args.clusters, "--clusters"), (args.pairs, "--pairs")):
        if path and path.endswith(".parquet"):
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise CliError(
                    f'{what} {path}: Parquet needs pyarrow (pip install "neardup-scrapy[parquet]")'
                ) from None


@dataclass
class _Run:
    """One scan run over its inputs: the shared detector, OUTPUT and the totals."""

    args: argparse.Namespace
    detector: Any
    out: BinaryIO | None
    out_name: str | None
    total: ScanStats
    inputs: int
    where: str


def _run_scan(args: argparse.Namespace) -> int:
    if args.max_body_bytes < 0:
        raise CliError(f"argument --max-body-bytes: invalid value {args.max_body_bytes}: expected >= 0")
    if args.jobs is not None and args.jobs < 1:
        raise CliError(f"argument --jobs: invalid value {args.jobs}: expected an integer >= 1")
    if not args.inputs and not args.inputs_from:
        raise CliError("the following arguments are required: INPUT (or --inputs-from FILE)")
    from .inputs import InputFormatError, open_input
    from .inputs.collection import expand_inputs

    settings, spec = _index_setup(args)
    try:
        inputs = expand_inputs(args.inputs, args.inputs_from)
    except InputFormatError as exc:
        raise CliError(str(exc)) from None
    outputs = (
        (args.output if args.output is not None or sys.stdout.isatty() else "-", "OUTPUT"),
        (args.report, "--report"),
        (args.html, "--html"),
        (args.clusters, "--clusters"),
        (args.pairs, "--pairs"),
    )
    named = [(path, "INPUT") for path in inputs]
    if spec.disk_path:
        named.append((spec.disk_path, "INPUT (the index)"))
    _check_distinct(named, outputs)
    params = _params(args, settings)
    for path, what in outputs:
        _check_writable(path, what)
    _export_options(args)
    source = None
    if (
        len(inputs) == 1
    ):  # one input: opened before anything else (an unreadable one: exit 2, nothing written)
        try:
            source = open_input(inputs[0], args.max_body_bytes)
        except InputFormatError as exc:
            raise CliError(str(exc)) from None
    try:
        detector = _open_index(spec, params)
        out, out_name = _open_output(args.output)
    except CliError:
        if source is not None:
            source.close()
        raise
    run = _Run(args, detector, out, out_name, ScanStats(), len(inputs), spec.describe())
    if out is None and not args.quiet:
        _err("stdout is a terminal: tagged records are not written (use -o FILE or -o -)")
    started = time.monotonic()
    status = EXIT_OK
    input_lines: list[str] = []
    try:
        for number, path in enumerate(inputs, 1):
            if source is None:
                try:
                    source = open_input(path, args.max_body_bytes)
                except InputFormatError as exc:
                    _err(str(exc))
                    status = EXIT_ERROR
                    continue
            one = _scan_input(run, source, number)
            source = None
            status = max(status, one.status) if one.status != EXIT_INTERRUPTED else EXIT_INTERRUPTED
            if run.inputs > 1:
                line = _input_summary(one, number, run.inputs)
                input_lines.append(line)
                if not args.quiet:
                    sys.stderr.write(line + "\n")
                    sys.stderr.flush()
            if one.stop:
                break
    finally:
        if source is not None:
            source.close()
        if out is not None:
            try:
                if out is sys.stdout.buffer:
                    out.flush()
                else:
                    out.close()
            except BrokenPipeError:
                _silence_stdout()
                status = max(status, EXIT_ERROR)
            except OSError as exc:
                _err(f"OUTPUT {out_name}: cannot write: {exc}")
                status = max(status, EXIT_ERROR)
    elapsed = time.monotonic() - started
    stats = run.total

    if status == EXIT_OK and stats.pages == 0 and stats.reasons.get(NO_BODY_REASON):
        detector.close()
        name = inputs[0] if len(inputs) == 1 else "the inputs"
        _err(
            f"{'<stdin>' if name == '-' else name}: no page bodies to check: its records have no 'html' "
            "field; add one to your items (e.g. item['html'] = response.text), or scan a WARC of the crawl"
        )
        return EXIT_ERROR

    from .core.storage import StorageError
    from .scanindex import writer_name

    written: list[str] = [name for name in (out_name,) if name]
    try:
        # the report lists the duplicate-url rules the input's urls show (NEARDUP_URL_RULES_FILE
        # loads such a report for a crawl); a kept index keeps one state per machine and inputs
        if stats.url_rules is not None:
            writer = writer_name(inputs) if spec.kept else "scan"
            detector.exchange_url_rules(writer, json.dumps(stats.url_rules.state()).encode("utf-8"))
        # A kept index's mirror origins become representatives when a report or export is
        # written (as at the end of a crawl), not at the end of every run: other processes may
        # still be checking pages against the representatives (see README).
        settle = not spec.kept or any((args.report, args.html, args.clusters, args.pairs))
        report = detector.report() if settle else detector.report_as_is()
        written += _write_reports(args, detector, report)
    except StorageError as exc:
        _err(f"{spec.describe()}: {exc}; the report and exports were not written")
        return EXIT_ERROR
    finally:
        detector.close()
    if not args.quiet:
        from .report.text import format_summary

        lines = format_summary(report, max_lines=SUMMARY_LINES - 3)
        if spec.kept:
            lines.insert(0, f"index: {spec.describe()} (the totals cover every scan and crawl into it)")
        if run.inputs > 1:
            lines.append(f"inputs: {run.inputs:,} read")
        lines += _input_lines(stats, elapsed)
        if written:
            lines.append("wrote: " + ", ".join("<stdout>" if name == "-" else name for name in written))
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()
    if status == EXIT_OK and stats.problems:
        status = EXIT_MALFORMED
    return status


def _write_reports(args: argparse.Namespace, detector: Any, report: dict[str, Any]) -> list[str]:
    """Write the report, the HTML report and the exports the options ask for; their names."""
    written: list[str] = []
    if args.report:
        _write_text(args.report, report_json(report))
        written.append(args.report)
    if args.html:
        from .report.html import render_html

        _write_text(args.html, render_html(report))
        written.append(args.html)
    if args.clusters or args.pairs:
        written += _write_exports(args, detector)
    return written


@dataclass
class _InputResult:
    """What scanning one input did: its counts, its exit status, whether the run stops."""

    name: str
    stats: ScanStats
    elapsed: float
    status: int = EXIT_OK
    stop: bool = False


def _scan_input(run: _Run, source: Any, number: int) -> _InputResult:
    """Scan one opened input into the run's index and OUTPUT; closes the input."""
    from .core.storage import StorageError
    from .inputs import InputFormatError

    args, total = run.args, run.total
    label = f"[{number}/{run.inputs}] {source.name}  " if run.inputs > 1 else ""
    interactive = sys.stderr.isatty()
    progress = Progress(sys.stderr, source.total, enabled=interactive and not args.quiet, label=label)
    stats = ScanStats(url_rules=total.url_rules)
    result = _InputResult(source.name, stats, 0.0)
    started = time.monotonic()
    try:
        _scan_records(args, detector=run.detector, source=source, out=run.out, progress=progress, stats=stats)
    except KeyboardInterrupt:
        progress.close()
        done = total.records + stats.records
        _err(
            f"interrupted after {plural(done, 'record')} ({plural(total.written + stats.written, 'record')} "
            "written); output, report and summary cover them"
        )
        result.status, result.stop = EXIT_INTERRUPTED, True
    except _OutputError as exc:
        progress.close()
        if isinstance(exc.error, BrokenPipeError):
            _err("output closed early (broken pipe)")
            _silence_stdout()
        else:
            _err(f"OUTPUT {run.out_name}: cannot write: {exc.error.strerror or exc.error}")
        result.status, result.stop = EXIT_ERROR, True
    except InputFormatError as exc:
        progress.close()
        _err(f"{source.name}: {exc}")
        result.status = EXIT_ERROR
    except StorageError as exc:
        progress.close()
        _err(f"{source.name}: record {stats.records + 1}: the {run.where} failed: {exc}")
        result.status, result.stop = EXIT_ERROR, True
    except (OSError, EOFError, zlib.error) as exc:
        progress.close()
        _err(f"{source.name}: record {stats.records + 1}: cannot read input: {exc}")
        result.status = EXIT_ERROR
    finally:
        progress.close()
        source.close()
    result.elapsed = time.monotonic() - started
    stats.blank = source.counter.blank
    total.add(stats)
    return result


def _input_summary(result: _InputResult, number: int, inputs: int) -> str:
    """The line printed after each input of a run of several."""
    from .report.escapes import shown as escaped

    stats = result.stats
    rate = stats.pages / result.elapsed if result.elapsed > 0 else 0.0
    text = (
        f"[{number}/{inputs}] {escaped(result.name)}: {plural(stats.records, 'record')}, "
        f"{plural(stats.pages, 'page')} checked in {result.elapsed:.1f} s ({rate:,.1f} pages/s): "
        f"{plural(stats.duplicates, 'duplicate')}, {plural(stats.revisits, 'revisit')}"
    )
    if stats.reasons:
        text += "; not checked: " + ", ".join(f"{n:,} {r}" for r, n in stats.reasons.most_common(3))
    if stats.problems:
        text += f"; {plural(stats.problems, 'unusable record')}"
    if result.status == EXIT_INTERRUPTED:
        text += " (interrupted)"
    elif result.status != EXIT_OK:
        text += " (stopped by an error)"
    return text


def _run_export(args: argparse.Namespace) -> int:
    from .core.params import DetectorParams, ParameterError
    from .core.storage import StorageError
    from .scanindex import IndexOptionError, param_values

    if not (args.report or args.html or args.clusters or args.pairs) and args.quiet:
        raise CliError(
            "nothing to do: give --report, --html, --clusters or --pairs (or drop -q for the summary)"
        )
    settings, spec = _index_setup(args)
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
    _check_distinct([(spec.disk_path, "INPUT (the index)")], outputs)
    for path, what in outputs:
        _check_writable(path, what)
    _export_options(args)
    try:
        values, _origin = param_values(settings, {})
        base = DetectorParams(**values)
    except (IndexOptionError, ParameterError) as exc:
        raise CliError(str(exc)) from None
    detector = _open_index(spec, base, recorded=True)
    try:
        if len(detector.storage) == 0 and not detector.storage.host_counts():
            raise CliError(f"the {spec.describe()} holds no pages")
        report = detector.report()
        written = _write_reports(args, detector, report)
    except StorageError as exc:
        raise CliError(f"the {spec.describe()} failed: {exc}") from None
    finally:
        detector.close()
    if not args.quiet:
        from .report.text import format_summary

        lines = [f"index: {spec.describe()}", *format_summary(report, max_lines=SUMMARY_LINES - 2)]
        if written:
            lines.append("wrote: " + ", ".join("<stdout>" if name == "-" else name for name in written))
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()
    return EXIT_OK


def _write_exports(args: argparse.Namespace, detector: Any) -> list[str]:
    from .core.exports import cluster_rows, pair_rows, write_rows

    clusters = cluster_rows(detector.storage)
    done = []
    try:
        for path, kind in ((args.clusters, "clusters"), (args.pairs, "pairs")):
            if not path:
                continue
            rows = clusters if kind == "clusters" else pair_rows(clusters)
            if path == "-":  # JSON Lines on standard output
                out = sys.stdout.buffer
                for row in rows:
                    out.write(
                        json.dumps(row, ensure_ascii=False, allow_nan=False).encode("utf-8", "replace")
                        + b"\n"
                    )
                out.flush()
            else:
                write_rows(path, rows, kind)
            done.append(path)
    except (OSError, ImportError) as exc:
        raise CliError(f"cannot write an export: {exc}") from None
    return done


def _input_lines(stats: ScanStats, elapsed: float) -> list[str]:
    rate = stats.pages / elapsed if elapsed > 0 else 0.0
    text = (
        f"input: {plural(stats.records, 'record')}, {plural(stats.pages, 'page')} checked in "
        f"{elapsed:.1f} s ({rate:,.1f} pages/s)"
    )
    if stats.revisits:
        text += f", {plural(stats.revisits, 'revisit')} (urls the index had checked before; counted once)"
    if stats.blank:
        text += f", {stats.blank:,} blank {'line' if stats.blank == 1 else 'lines'}"
    if stats.kept:
        text += f", {stats.kept:,} kept their '{TAG_KEY}' (--retag replaces it)"
    lines = [text]
    if stats.reasons:
        parts = [f"{count:,} {reason}" for reason, count in stats.reasons.most_common(6)]
        more = len(stats.reasons) - 6
        line = "not checked: " + ", ".join(parts) + (f", {more} more reasons" if more > 0 else "")
        if stats.problems:
            first = ", ".join(str(n) for n in stats.problem_numbers[:5])
            more_numbers = ", ..." if stats.problems > 5 else ""
            line += f" ({plural(stats.problems, 'unusable record')}: {first}{more_numbers})"
        lines.append(line)
    return lines


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _scan_records(
    args: argparse.Namespace,
    *,
    detector: Any,
    source: Any,
    out: BinaryIO | None,
    progress: Progress,
    stats: ScanStats,
) -> None:
    """The scan loop: analyse (maybe in other processes), check, tag, write; in input order."""
    waiting: list[str] = []
    try:
        _scan_loop(args, detector, source, out, progress, stats, waiting)
    finally:
        if waiting and stats.pages:
            progress.write("\n".join(waiting))


def _scan_loop(  # noqa: PLR0917
    args: argparse.Namespace,
    detector: Any,
    source: Any,
    out: BinaryIO | None,
    progress: Progress,
    stats: ScanStats,
    waiting: list[str],
) -> None:
    from .core.urls import redact_url
    from .inputs.base import NO_BODY, TOO_LARGE
    from .inputs.detect import WACZ, WARC
    from .inputs.warc import is_html_response
    from .report.escapes import shown as escaped
    from .scanjobs import analysed, default_jobs

    dumps = json.dumps
    check = detector.check_analysis
    if stats.url_rules is None:  # made here, inside the scan's handling of Ctrl-C
        stats.url_rules = _url_rule_learner()
    rules = stats.url_rules
    write = out.write if out is not None else None
    verbose = args.verbose
    retag = args.retag
    archive = source.format in (WARC, WACZ)
    show_progress = progress.enabled
    jobs = args.jobs or default_jobs()
    shown = 0
    # a file has a size; standard input and pipes do not, and their reads may wait for a writer
    read_ahead = source.total is not None
    units = analysed(source.units, detector.params, args.max_body_bytes, jobs, read_ahead=read_ahead)
    for unit, record, analysis in units:
        number = unit.number
        line: bytes | None = None
        if record.reason is not None:
            reason = record.reason
            stats.reasons[reason.split(":", 1)[0]] += 1
            if reason == TOO_LARGE and record.url:
                # a page, tagged skipped: counted as the crawl counts it (NEARDUP_MAX_BODY_BYTES)
                detector.skip(record.url, TOO_LARGE)
            if record.problem:
                stats.problems += 1
                if len(stats.problem_numbers) < 100:
                    stats.problem_numbers.append(number)
                if verbose or shown < MAX_LINE_MESSAGES:
                    shown += 1
                    message = f"{PROG}: {escaped(source.name)}:{number}: {escaped(reason)}"
                    if not verbose and shown == MAX_LINE_MESSAGES:
                        message += f"\n{PROG}: further unusable records are counted but not shown (use -v)"
                    # Until a page has a body, "no page body" waits: an input with none gets one hint.
                    if reason == NO_BODY and not stats.pages:
                        waiting.append(message)
                    else:
                        progress.write(message)
            if write is not None:
                if archive:
                    if is_html_response(unit):
                        tag = _skipped_tag(reason, None)
                        line = _sidecar(unit, tag)
                elif not unit.payload:  # a line too long to read
                    line = dumps({"line": number, TAG_KEY: _skipped_tag(reason, number)}).encode() + b"\n"
                elif record.is_object and record.has_tag and not retag:
                    stats.kept += 1
                    line = unit.payload.rstrip(b"\r\n") + b"\n"
                else:
                    line = _tagged_copy(unit.payload, record.is_object, _skipped_tag(reason, number))
        else:
            assert record.url is not None and analysis is not None
            if waiting:
                progress.write("\n".join(waiting))
                waiting.clear()
            verdict = check(record.url, analysis, nbytes=record.nbytes, canonical=record.canonical)
            stats.pages += 1
            if verdict.cluster:
                rules.observe(verdict.url, verdict.cluster)
                if verdict.canonical and verdict.canonical != verdict.url:
                    rules.observe_same(verdict.url, verdict.canonical)
            if verdict.revisit:
                stats.revisits += 1
            elif verdict.status in ("exact", "near"):
                stats.duplicates += 1
                if verbose:
                    sim = "-" if verdict.similarity is None else f"{verdict.similarity:.3f}"
                    ham = "-" if verdict.hamming is None else str(verdict.hamming)
                    where = f"{escaped(source.name)}:{number}"
                    url = escaped(redact_url(record.url))
                    original = escaped(redact_url(verdict.duplicate_of or ""))
                    progress.write(f"{where}: {verdict.status} J={sim} H={ham} {url} -> {original}")
            if write is not None:
                tag = verdict.to_dict()
                if verdict.revisit:  # tagged as it was when first checked, and marked
                    tag["revisit"] = True
                if archive:
                    line = _sidecar(unit, tag)
                elif record.has_tag and not retag:
                    stats.kept += 1
                    line = unit.payload.rstrip(b"\r\n") + b"\n"
                elif record.has_tag:
                    line = _tagged_copy(unit.payload, True, tag)
                else:
                    # The record is written byte for byte; the tag goes before its closing brace.
                    tag_bytes = dumps(tag, allow_nan=False).encode()
                    line = b"".join((unit.payload.rstrip()[:-1], b', "neardup": ', tag_bytes, b"}\n"))
        if line is not None and write is not None:
            try:
                write(line)
            except OSError as error:
                raise _OutputError(error) from error
            stats.written += 1
        stats.records += 1
        if show_progress:
            progress.update(stats.pages, source.position(), stats.duplicates)


def _sidecar(unit: Any, tag: dict[str, Any]) -> bytes:
    """The output line of an archive's HTML response record."""
    row = {"url": unit.url, "warc_record_id": unit.record_id, TAG_KEY: tag}
    return json.dumps(row, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass") + b"\n"


def _tagged_copy(payload: bytes, is_object: bool, tag: dict[str, Any]) -> bytes:
    """The record with ``tag`` as its ``neardup`` key (replacing one it has), or ``{"raw": ...}``."""
    if is_object:
        with contextlib.suppress(ValueError, RecursionError):
            data = json.loads(payload)
            if type(data) is dict:
                data[TAG_KEY] = tag
                return json.dumps(data).encode() + b"\n"
    text = payload.rstrip(b"\r\n").decode("utf-8", "replace")
    return json.dumps({"raw": text, TAG_KEY: tag}).encode() + b"\n"


# -- report ------------------------------------------------------------------------------------


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
    from .report.schema import parse_report

    try:
        return parse_report(data)
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 JSON") from None
    except ValueError as exc:  # NaN or Infinity, an integer too long to read
        raise CliError(f"{path}: not JSON: {exc}") from None


def _run_check_index(args: argparse.Namespace) -> int:
    from .core.storage import StorageError
    from .core.storage.sqlite_check import check_index, describe

    files: list[str] = []
    for path in args.path:
        if os.path.isdir(path):
            found = [os.path.join(path, n) for n in ("neardup.sqlite", "neardup-items.sqlite")]
            found = [f for f in found if os.path.isfile(f)]
            if not found:
                raise CliError(f"{path}: no neardup.sqlite in this directory")
            files += found
        else:
            files.append(path)
    damaged = False
    for path in files:
        try:
            result = check_index(path)
        except StorageError as exc:
            raise CliError(str(exc)) from None
        damaged = damaged or result.damaged
        if result.damaged or not args.quiet:
            sys.stdout.write("".join(line + "\n" for line in describe(result)))
            sys.stdout.flush()
    return EXIT_MALFORMED if damaged else EXIT_OK


def _run_report(args: argparse.Namespace) -> int:
    from .report.html import render_html
    from .report.schema import ReportFormatError, validate_report

    output = args.output
    if output is None:
        output = "-" if args.report == "-" else re.sub(r"(\.json)?(\.gz)?$", "", args.report) + ".html"
    _check_distinct([(args.report, "INPUT")], [(output, "OUTPUT")])
    _check_writable(output, "OUTPUT")
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
        _write_text(output, page)
    if not args.quiet:
        if args.summary:
            from .report.text import format_summary

            sys.stderr.write("".join(line + "\n" for line in format_summary(data)))
        if output != "-":
            sys.stderr.write(f"wrote: {output} ({len(page.encode('utf-8', 'replace')):,} bytes)\n")
        sys.stderr.flush()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
