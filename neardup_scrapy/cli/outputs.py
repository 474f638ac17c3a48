"""The files a command writes: checked before anything is written, then written safely.

An output that is an input or another output is refused (:func:`check_distinct`), one that
cannot be created fails early (:func:`check_writable`); OUTPUT may be gzip-compressed or one
JSON array (:func:`open_output`); a report is replaced atomically (:func:`write_text`).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import sys
from collections.abc import Sequence
from typing import IO, Any, BinaryIO

from .common import PROG, CliError

#: gzip level of a ``.gz`` OUTPUT: 6 is zlib's default, a good speed/size balance.
GZIP_LEVEL = 6
_BUFFER = 1 << 20


class OutputError(Exception):
    """Writing OUTPUT failed (disk full, broken pipe...); wraps the OSError."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


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


def check_distinct(
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


def check_writable(path: str | None, what: str) -> None:
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


def check_export_options(args: argparse.Namespace) -> None:
    """A Parquet export needs pyarrow: refused before the scan when it is missing."""
    for path, what in ((args.clusters, "--clusters"), (args.pairs, "--pairs")):
        if path and path.endswith(".parquet"):
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise CliError(
                    f'{what} {path}: Parquet needs pyarrow (pip install "neardup-scrapy[parquet]")'
                ) from None


def open_output(path: str | None) -> tuple[BinaryIO | None, str | None]:
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


def silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's exit flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def write_text(path: str, text: str) -> None:
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
    from neardup_scrapy.report.schema import report_json as strict_json

    return strict_json(report)


def write_reports(args: argparse.Namespace, detector: Any, report: dict[str, Any]) -> list[str]:
    """Write the report, the HTML report and the exports the options ask for; their names."""
    written: list[str] = []
    if args.report:
        write_text(args.report, report_json(report))
        written.append(args.report)
    if args.html:
        from neardup_scrapy.report.html import render_html

        write_text(args.html, render_html(report))
        written.append(args.html)
    if args.clusters or args.pairs:
        written += _write_exports(args, detector)
    return written


def _write_exports(args: argparse.Namespace, detector: Any) -> list[str]:
    from neardup_scrapy.core.exports import cluster_rows, pair_rows, write_rows

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
