"""The ``neardup-scrapy`` command: find near-duplicates in a JSON Lines dump, render reports.

Usage::

    neardup-scrapy scan INPUT [-o OUTPUT] [--report REPORT.json] [--html REPORT.html]
                        [--threshold T] [--algorithm both|minhash|simhash] [--num-perm N]
                        [--shingle-size N] [--min-tokens N] [--simhash-distance N]
                        [--scope global|host] [-q | -v]
    neardup-scrapy report REPORT.json [-o REPORT.html] [--summary] [-q]

``scan`` reads JSON Lines (plain or gzip, ``-`` for stdin), one page per line with ``url`` and
``html`` (or ``body``; or ``text`` for plain text), checks every page in input order and
writes each input line to OUTPUT unchanged, with a ``neardup`` key holding the page's tag
object added at the end of the record. OUTPUT ending in ``.gz`` is gzip-compressed; ``-``
means stdout; without ``-o`` the records go to stdout unless stdout is a terminal (then they
are not written, and a note says so).

A line that cannot be used (invalid JSON, not an object, no ``url``, no ``html``/``body``/
``text``, a field of the wrong type) is reported on stderr with its line number, kept out of
the detection and still written to OUTPUT: an object keeps its keys and gets
``"neardup": {"status": "skipped", ..., "reason": "malformed: ...", "line": N}``; any other
line is written as ``{"raw": "<the line>", "neardup": {...}}``. Blank lines are ignored.

Exit status: 0 all lines used; 1 some lines were malformed (the output is still complete);
2 usage, parameter or input/output error; 130 interrupted (Ctrl-C). On an input error or an
interrupt the output, the report and the summary cover the lines read so far.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, BinaryIO

from .progress import Progress

EXIT_OK = 0
EXIT_MALFORMED = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

PROG = "neardup-scrapy"
#: Malformed lines reported one by one on stderr (all of them with ``--verbose``).
MAX_LINE_MESSAGES = 20
#: Lines of the end-of-scan summary on stderr.
SUMMARY_LINES = 25
#: gzip level of a ``.gz`` OUTPUT: 6 is zlib's default, a good speed/size balance.
GZIP_LEVEL = 6
_BUFFER = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_CONTENT_KEYS = ("html", "body", "text")
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


class _Malformed(Exception):
    """An input line that cannot be used; the message says why."""


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``neardup-scrapy`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Near-duplicate detection for crawled pages, and its reports.",
        epilog="Exit status: 0 ok, 1 some input lines malformed, 2 usage or I/O error, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    scan = sub.add_parser(
        "scan",
        help="tag the pages of a JSON Lines file as unique / exact / near duplicates",
        description=(
            "Read pages (JSON Lines: url + html, body or text; .gz allowed; - for stdin), check them "
            "in order and write each record with a 'neardup' tag object added."
        ),
        epilog="Exit status: 0 ok, 1 some input lines malformed, 2 usage or I/O error, 130 interrupted.",
    )
    scan.add_argument("input", metavar="INPUT", help="JSON Lines file (.gz allowed), or - for stdin")
    scan.add_argument(
        "-o",
        "--output",
        metavar="OUTPUT",
        help="tagged records (.gz compresses; - for stdout); default: stdout unless it is a terminal",
    )
    scan.add_argument("--report", metavar="REPORT.json", help="write the JSON report (neardup-report/1)")
    scan.add_argument("--html", metavar="REPORT.html", help="write the HTML report")
    scan.add_argument(
        "--threshold",
        type=float,
        default=0.8,
        metavar="T",
        help="Jaccard similarity of a near duplicate (0.8)",
    )
    scan.add_argument(
        "--algorithm", choices=("both", "minhash", "simhash"), default="both", help="candidate search (both)"
    )
    scan.add_argument("--num-perm", type=int, default=128, metavar="N", help="MinHash permutations (128)")
    scan.add_argument("--shingle-size", type=int, default=5, metavar="N", help="words per shingle (5)")
    scan.add_argument(
        "--min-tokens", type=int, default=10, metavar="N", help="shorter pages are matched exactly only (10)"
    )
    scan.add_argument(
        "--simhash-distance",
        type=int,
        default=3,
        metavar="N",
        help="SimHash Hamming distance of a near duplicate (3)",
    )
    scan.add_argument(
        "--scope",
        choices=("global", "host"),
        default="global",
        help="compare across hosts or within a host (global)",
    )
    noise = scan.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", action="store_true", help="no progress line and no summary")
    noise.add_argument(
        "-v", "--verbose", action="store_true", help="print every duplicate and every malformed line"
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
    return parser


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


@dataclass
class _Input:
    """An opened input: its lines, its size when known and a way to tell how far we are."""

    name: str
    lines: Iterable[bytes]
    total: int | None
    position: Callable[[], int]
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for close in reversed(self.closers):
            with contextlib.suppress(OSError):
                close()


def _open_input(path: str) -> _Input:
    """Open INPUT (a file or ``-``), decompressing gzip (detected by its magic bytes)."""
    if path == "-":
        stream: Any = sys.stdin.buffer
        if not isinstance(stream, io.BufferedReader):
            stream = io.BufferedReader(stream, _BUFFER)
        if stream.peek(2)[:2] == _GZIP_MAGIC:
            gz = gzip.GzipFile(fileobj=stream, mode="rb")
            return _Input("<stdin>", gz, None, lambda: 0, [gz.close])
        return _Input("<stdin>", stream, None, lambda: 0)
    try:
        raw = io.BufferedReader(io.FileIO(path, "rb"), _BUFFER)
    except FileNotFoundError:
        raise CliError(f"INPUT {path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"INPUT {path}: is a directory") from None
    except OSError as exc:
        raise CliError(f"INPUT {path}: cannot open: {exc.strerror or exc}") from None
    try:
        size: int | None = os.fstat(raw.fileno()).st_size or None
        magic = raw.peek(2)[:2]
    except OSError as exc:
        raw.close()
        raise CliError(f"INPUT {path}: cannot read: {exc.strerror or exc}") from None
    if magic == _GZIP_MAGIC:
        gz = gzip.GzipFile(fileobj=raw, mode="rb")
        return _Input(path, gz, size, raw.tell, [gz.close, raw.close])
    return _Input(path, raw, size, raw.tell, [raw.close])


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
        if path.endswith(".gz"):
            raw = open(path, "wb")  # noqa: SIM115 - closed with the gzip stream
            gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0)
            return _ClosingGzip(gz, raw), path
        return open(path, "wb", buffering=_BUFFER), path
    except OSError as exc:
        raise CliError(f"OUTPUT {path}: cannot create: {exc.strerror or exc}") from None


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


def _write_text(path: str, text: str) -> None:
    """Write a UTF-8 text file; a new or regular file atomically (temporary file, then rename)."""
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


# -- scan --------------------------------------------------------------------------------------


@dataclass
class ScanStats:
    """What a scan read: lines, pages checked, malformed and blank lines."""

    lines: int = 0
    pages: int = 0
    duplicates: int = 0
    malformed: int = 0
    blank: int = 0
    malformed_lines: list[int] = field(default_factory=list)


def _skipped_tag(reason: str, lineno: int) -> dict[str, Any]:
    return {
        "status": "skipped",
        "duplicate_of": None,
        "similarity": None,
        "hamming": None,
        "cluster": None,
        "mirror_of": None,
        "reason": f"malformed: {reason}",
        "line": lineno,
    }


def _page(record: Any) -> tuple[str, str, str]:
    """``(url, content key, content)`` of a decoded record, or :class:`_Malformed`."""
    if type(record) is not dict:
        raise _Malformed(f"not a JSON object but {type(record).__name__}")
    url = record.get("url")
    if url is None:
        raise _Malformed("no 'url' field")
    if not isinstance(url, str):
        raise _Malformed(f"'url' is {type(url).__name__}, not a string")
    if not url:
        raise _Malformed("'url' is empty")
    for key in _CONTENT_KEYS:
        value = record.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise _Malformed(f"'{key}' is {type(value).__name__}, not a string")
        return url, key, value
    raise _Malformed("no 'html', 'body' or 'text' field")


def _detector(args: argparse.Namespace) -> Any:
    """Create the detector from the options; a bad value names its option (exit 2)."""
    from .core import NearDupDetector, ParameterError

    try:
        return NearDupDetector(
            threshold=args.threshold,
            algorithm=args.algorithm,
            num_perm=args.num_perm,
            shingle_size=args.shingle_size,
            min_tokens=args.min_tokens,
            simhash_distance=args.simhash_distance,
            scope=args.scope,
        )
    except ParameterError as exc:
        message = str(exc)
        match = re.search(r"'(\w+)'", message)
        option = _OPTIONS.get(match.group(1)) if match else None
        accepts = message.split("expected", 1)[-1].strip() if "expected" in message else message
        if option:
            value = getattr(args, option[2:].replace("-", "_"))
            raise CliError(f"argument {option}: invalid value {value!r}: expected {accepts}") from None
        raise CliError(message) from None


def _run_scan(args: argparse.Namespace) -> int:
    detector = _detector(args)
    for path, what in ((args.output, "OUTPUT"), (args.report, "--report"), (args.html, "--html")):
        _check_writable(path, what)
    source = _open_input(args.input)
    try:
        out, out_name = _open_output(args.output)
    except CliError:
        source.close()
        raise
    interactive = sys.stderr.isatty()
    progress = Progress(sys.stderr, source.total, enabled=interactive and not args.quiet)
    if out is None and not args.quiet:
        progress.write(f"{PROG}: stdout is a terminal: tagged records are not written (use -o FILE or -o -)")
    stats = ScanStats()
    started = time.monotonic()
    status = EXIT_OK
    try:
        _scan_lines(args, detector=detector, source=source, out=out, progress=progress, stats=stats)
    except KeyboardInterrupt:
        progress.close()
        _err(f"interrupted after {stats.lines:,} lines; output, report and summary cover the lines done")
        status = EXIT_INTERRUPTED
    except _OutputError as exc:
        progress.close()
        if isinstance(exc.error, BrokenPipeError):
            _err("output closed early (broken pipe)")
            _silence_stdout()
        else:
            _err(f"OUTPUT {out_name}: cannot write: {exc.error.strerror or exc.error}")
        status = EXIT_ERROR
    except (OSError, EOFError, zlib.error) as exc:
        progress.close()
        _err(f"{source.name}: line {stats.lines + 1}: cannot read input: {exc}")
        status = EXIT_ERROR
    finally:
        progress.close()
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

    report = detector.report()
    try:
        if args.report:
            _write_text(args.report, report_json(report))
        if args.html:
            from .report.html import render_html

            _write_text(args.html, render_html(report))
    finally:
        detector.close()
    if not args.quiet:
        from .report.text import format_summary

        lines = format_summary(report, max_lines=SUMMARY_LINES - 2)
        lines.append(_input_line(stats, elapsed))
        written = [name for name in (out_name, args.report, args.html) if name]
        if written:
            lines.append("wrote: " + ", ".join(written))
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()
    if status == EXIT_OK and stats.malformed:
        status = EXIT_MALFORMED
    return status


def _input_line(stats: ScanStats, elapsed: float) -> str:
    rate = stats.pages / elapsed if elapsed > 0 else 0.0
    text = (
        f"input: {stats.lines:,} lines, {stats.pages:,} pages checked in {elapsed:.1f} s "
        f"({rate:,.1f} pages/s)"
    )
    if stats.blank:
        text += f", {stats.blank:,} blank"
    if stats.malformed:
        first = ", ".join(str(n) for n in stats.malformed_lines[:5])
        more = ", ..." if stats.malformed > 5 else ""
        text += f", {stats.malformed:,} MALFORMED (line {first}{more})"
    return text


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _scan_lines(
    args: argparse.Namespace,
    *,
    detector: Any,
    source: _Input,
    out: BinaryIO | None,
    progress: Progress,
    stats: ScanStats,
) -> None:
    """The scan loop: parse, check, tag, write; one line at a time, in input order."""
    loads, dumps = json.loads, json.dumps
    check = detector.check
    write = out.write if out is not None else None
    verbose = args.verbose
    show_progress = progress.enabled
    lines: Iterator[bytes] = iter(source.lines)
    for lineno, raw in enumerate(lines, start=1):
        stats.lines = lineno
        try:
            try:
                record = loads(raw)
            except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
                if not raw.strip():
                    stats.blank += 1
                    continue
                if isinstance(exc, json.JSONDecodeError):
                    raise _Malformed(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
                raise _Malformed("not UTF-8 text") from None
            url, key, content = _page(record)
        except _Malformed as exc:
            stats.malformed += 1
            if len(stats.malformed_lines) < 100:
                stats.malformed_lines.append(lineno)
            if verbose or stats.malformed <= MAX_LINE_MESSAGES:
                progress.write(f"{PROG}: {source.name}:{lineno}: {exc}")
                if not verbose and stats.malformed == MAX_LINE_MESSAGES:
                    progress.write(f"{PROG}: further malformed lines are counted but not shown (use -v)")
            if write is not None:
                tag = _skipped_tag(str(exc), lineno)
                if type(record := _try_loads(raw)) is dict:
                    record["neardup"] = tag
                    line = dumps(record).encode() + b"\n"
                else:
                    text = raw.rstrip(b"\r\n").decode("utf-8", "replace")
                    line = dumps({"raw": text, "neardup": tag}).encode() + b"\n"
                try:
                    write(line)
                except OSError as error:
                    raise _OutputError(error) from error
            continue

        verdict = check(url, text=content) if key == "text" else check(url, content)
        stats.pages += 1
        tag_bytes = dumps(verdict.to_dict(), allow_nan=False).encode()
        if verdict.status in ("exact", "near"):
            stats.duplicates += 1
            if verbose:
                sim = "-" if verdict.similarity is None else f"{verdict.similarity:.3f}"
                ham = "-" if verdict.hamming is None else str(verdict.hamming)
                where = f"{source.name}:{lineno}"
                progress.write(f"{where}: {verdict.status} J={sim} H={ham} {url} -> {verdict.duplicate_of}")
        if write is not None:
            if "neardup" in record:
                record["neardup"] = verdict.to_dict()
                line = dumps(record).encode() + b"\n"
            else:
                # The record is written byte for byte; the tag goes before its closing brace.
                line = b"".join((raw.rstrip()[:-1], b', "neardup": ', tag_bytes, b"}\n"))
            try:
                write(line)
            except OSError as error:
                raise _OutputError(error) from error
        if show_progress:
            progress.update(stats.pages, source.position(), stats.duplicates)


def _try_loads(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


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


def _run_report(args: argparse.Namespace) -> int:
    from .report.html import render_html
    from .report.schema import ReportFormatError, validate_report

    output = args.output
    if output is None:
        output = "-" if args.report == "-" else re.sub(r"(\.json)?(\.gz)?$", "", args.report) + ".html"
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
