"""JSON Lines (one object per line) and JSON array feeds (Scrapy's ``-O items.json``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO

from .base import JSON, TOO_LARGE, Unit

_CHUNK = 1 << 20
_WHITESPACE = b" \t\r\n"


class LineCounter:
    """Counts what a JSON reader passed over (blank lines)."""

    def __init__(self) -> None:
        self.blank = 0


def _lines(stream: IO[bytes], limit: int) -> Iterator[tuple[bytes, bool]]:
    """``(line, whole)`` of ``stream``; a line longer than ``limit`` (> 0) is drained unread."""
    if not limit:
        for line in stream:
            yield line, True
        return
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or (line.endswith(b"\n") and len(line) == limit + 1):
            yield line, True
            continue
        while not line.endswith(b"\n"):  # drain the rest of an oversized line without keeping it
            line = stream.readline(_CHUNK)
            if not line:
                break
        yield b"", False


def json_lines(stream: IO[bytes], line_limit: int, counter: LineCounter) -> Iterator[Unit]:
    """Units of a JSON Lines stream; blank lines are counted and skipped."""
    for number, (line, whole) in enumerate(_lines(stream, line_limit), start=1):
        if not whole:
            yield Unit(number, JSON, b"", reason=TOO_LARGE)
        elif line.strip():
            yield Unit(number, JSON, line)
        else:
            counter.blank += 1


def json_array(stream: IO[bytes], line_limit: int, counter: LineCounter) -> Iterator[Unit]:
    """Units of a JSON array of objects.

    Scrapy's JSON feed exporter writes ``[``, one item per line followed by ``,``, and ``]``:
    each such line is cut out without being parsed. Any other layout (several items on a line)
    is split with a JSON decoder.
    """
    decoder = json.JSONDecoder()
    lines = enumerate(_lines(stream, line_limit), start=1)
    for number, (line, whole) in lines:
        if not whole:
            yield Unit(number, JSON, b"", reason=TOO_LARGE)
            continue
        body = line.strip(_WHITESPACE)
        if number == 1 and body.startswith(b"["):
            body = body[1:].lstrip(_WHITESPACE)
        if body.endswith(b"]"):
            body = body[:-1].rstrip(_WHITESPACE)
        body = body.rstrip(b",").rstrip(_WHITESPACE)
        if not body:
            continue
        if body.startswith(b"{") and not body.endswith(b"}"):
            # Items spread over several lines (FEED_EXPORT_INDENT): decode the rest as a whole.
            rest = b"".join([line.lstrip(_WHITESPACE), *(part for _n, (part, _whole) in lines)])
            rest = rest.rstrip(_WHITESPACE)
            yield from _split(decoder, number, rest[:-1] if rest.endswith(b"]") else rest)
            return
        if body.startswith(b"{") and body.endswith(b"}") and b"},{" not in body.replace(b" ", b""):
            yield Unit(number, JSON, body)
            continue
        yield from _split(decoder, number, body)


def _split(decoder: json.JSONDecoder, number: int, body: bytes) -> Iterator[Unit]:
    """The items of a line holding several (or a fragment: passed on to fail as invalid JSON)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        yield Unit(number, JSON, body)
        return
    pos = 0
    while pos < len(text):
        try:
            obj, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            yield Unit(number, JSON, text[pos:].encode("utf-8"))
            return
        yield Unit(number, JSON, json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        pos = end
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
