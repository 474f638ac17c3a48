"""Open INPUT and tell its format: by its name (``.warc``, ``.arc``, ``.wacz``) or its first bytes."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .base import InputFormatError, Unit
from .jsonl import LineCounter, json_array, json_lines
from .warc import wacz_units, warc_units

_BUFFER = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"
#: A JSON line may be longer than the body it holds (escapes): lines over twice the body cap
#: (plus this much for the other fields) are skipped unread.
LINE_SLACK = 1 << 16

JSONL, JSON_ARRAY, WARC, WACZ = "jsonl", "json", "warc", "wacz"


@dataclass
class InputSource:
    """An opened input.

    Attributes:
        name: its name in messages (``<stdin>`` for ``-``).
        format: ``"jsonl"``, ``"json"`` (an array), ``"warc"`` (WARC or ARC) or ``"wacz"``.
        units: its units, in input order.
        total: its size in bytes when known (for the progress line).
        position: bytes read so far.
        counter: blank lines passed over (JSON formats).
    """

    name: str
    format: str
    units: Iterator[Unit]
    total: int | None
    position: Callable[[], int]
    counter: LineCounter = field(default_factory=LineCounter)
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Close the files (idempotent)."""
        for close in reversed(self.closers):
            with contextlib.suppress(OSError):
                close()
        self.closers.clear()


def _sniff(head: bytes) -> str:
    """The format of a stream starting with ``head`` (decompressed when gzip)."""
    if head[:2] == _GZIP_MAGIC:
        with contextlib.suppress(zlib.error):
            head = zlib.decompressobj(31).decompress(head, 4096)
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith((b"WARC/", b"filedesc://")):
        return WARC
    if text.startswith(b"["):
        return JSON_ARRAY
    return JSONL


def open_input(path: str, max_body_bytes: int) -> InputSource:
    """Open INPUT (a file or ``-``) for reading units.

    Raises:
        InputFormatError: the file cannot be opened or is not of a format ``scan`` reads.
    """
    line_limit = 2 * max_body_bytes + LINE_SLACK if max_body_bytes else 0
    if path == "-":
        stream: Any = sys.stdin.buffer
        if not isinstance(stream, io.BufferedReader):
            stream = io.BufferedReader(stream, _BUFFER)
        return _from_stream("<stdin>", stream, None, lambda: 0, [], line_limit, max_body_bytes)
    try:
        raw = io.BufferedReader(io.FileIO(path, "rb"), _BUFFER)
    except FileNotFoundError:
        raise InputFormatError(f"INPUT {path}: no such file") from None
    except IsADirectoryError:
        raise InputFormatError(f"INPUT {path}: is a directory") from None
    except OSError as exc:
        raise InputFormatError(f"INPUT {path}: cannot open: {exc.strerror or exc}") from None
    try:
        size: int | None = os.fstat(raw.fileno()).st_size or None
        head = raw.peek(4096)[:4096]
    except OSError as exc:
        raw.close()
        raise InputFormatError(f"INPUT {path}: cannot read: {exc.strerror or exc}") from None
    if head[:4] == _ZIP_MAGIC or path.lower().endswith(".wacz"):
        raw.close()
        done = [0]

        def moved(value: int) -> None:
            done[0] = value

        return InputSource(path, WACZ, wacz_units(path, max_body_bytes, moved), size, lambda: done[0])
    return _from_stream(path, raw, size, raw.tell, [raw.close], line_limit, max_body_bytes)


def _from_stream(  # noqa: PLR0917
    name: str,
    raw: Any,
    size: int | None,
    position: Callable[[], int],
    closers: list[Callable[[], None]],
    line_limit: int,
    max_body_bytes: int,
) -> InputSource:
    head = raw.peek(4096)[:4096]
    fmt = _sniff(head)
    lower = name.lower()
    if fmt == JSONL and any(lower.endswith(s) for s in (".warc", ".warc.gz", ".arc", ".arc.gz")):
        fmt = WARC
    if fmt == WARC:
        return InputSource(name, WARC, warc_units(raw, max_body_bytes), size, position, closers=closers)
    stream: Any = raw
    if head[:2] == _GZIP_MAGIC:
        gz = gzip.GzipFile(fileobj=raw, mode="rb")
        stream = gz
        closers = [*closers, gz.close]
    counter = LineCounter()
    reader = json_array if fmt == JSON_ARRAY else json_lines
    return InputSource(name, fmt, reader(stream, line_limit, counter), size, position, counter, closers)
