"""WARC and ARC files (plain or gzip), through warcio; and WACZ packages (zip of WARCs)."""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

from neardup_scrapy.core.urls import parse_link_header

from .base import PAGE, TOO_LARGE, InputFormatError, Unit

_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9._:-]+)", re.IGNORECASE)
_HTML_TYPES = ("text/html", "application/xhtml+xml")
# Record types of WARC 1.0/1.1, and of ARC files as warcio converts them (arc2warc); any other
# type is read from a damaged header (warcio takes whatever text the cut left).
_RECORD_TYPES = frozenset(
    {"warcinfo", "response", "resource", "request", "metadata", "revisit", "conversion", "continuation"}
)
_DRAIN_BYTES = 1 << 16
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer around deflate data
_GZIP_MAGIC = b"\x1f\x8b"
_SKIP_BYTES = 1 << 20


class _GzipMembers:
    """A read-through view of a stream that checks, as it passes, that every gzip member ends.

    warcio inflates a cut ``.warc.gz`` without complaint (zlib returns what it could), and a cut
    inside a record's first bytes reads as a clean end of file. A second inflater over the same
    bytes knows whether the last member reached its end; it costs far less than checking the
    pages the archive holds.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._inflater: Any = zlib.decompressobj(_GZIP_WBITS)
        self._pending = False  # bytes of an unfinished member have been seen
        self.damaged = ""

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        if data and not self.damaged:
            self._feed(data)
        return data

    def tell(self) -> int:
        return self._stream.tell()

    def _feed(self, data: bytes) -> None:
        while data:
            inflater = self._inflater
            try:  # the output is dropped; at most _SKIP_BYTES of it is held at once
                inflater.decompress(data, _SKIP_BYTES)
                while not inflater.eof and inflater.unconsumed_tail:
                    inflater.decompress(inflater.unconsumed_tail, _SKIP_BYTES)
            except zlib.error as exc:
                self.damaged = f"damaged gzip data ({exc})"
                return
            self._pending = not inflater.eof
            if not inflater.eof:
                return
            data = inflater.unused_data  # the next member starts in this block
            self._inflater = zlib.decompressobj(_GZIP_WBITS)

    @property
    def complete(self) -> bool:
        """True when no member was left unfinished and no member was damaged."""
        return not self._pending and not self.damaged


def _iterator(stream: IO[bytes] | _GzipMembers) -> Any:
    try:
        from warcio.archiveiterator import ArchiveIterator
    except ImportError as exc:  # pragma: no cover - warcio is a dependency
        raise InputFormatError("reading WARC needs warcio (pip install warcio)") from exc
    return ArchiveIterator(stream, arc2warc=True)


def warc_units(stream: IO[bytes], max_body_bytes: int, start: int = 1) -> Iterator[Unit]:
    """One unit per record of a WARC/ARC stream; records that are not HTML responses get a reason.

    Only ``response`` records whose HTTP ``Content-Type`` is HTML are pages; their body is read
    with warcio's transfer and content decoding (chunked, gzip). Bodies over
    ``max_body_bytes`` (> 0) are not kept.
    """
    number = start - 1
    tally = _GzipMembers(stream) if _peek(stream, 2) == _GZIP_MAGIC else None
    records = _iterator(tally if tally is not None else stream)
    try:
        for record in records:
            number += 1
            # a cut inside the header block leaves a partial type or no length (both mandatory)
            if record.rec_type not in _RECORD_TYPES or not record.rec_headers.get_header("Content-Length"):
                raise OSError(f"damaged or truncated archive at record {number}")
            unit = _unit(record, number, max_body_bytes)
            _check_complete(record, number)
            yield unit
        if records.next_line:  # warcio stops at a header that ends early, as if at the end
            raise OSError(f"truncated archive after record {number}: a record's header is cut")
        if tally is not None and not tally.complete:
            raise OSError(f"truncated or damaged archive after record {number}: {tally.damaged or 'cut'}")
    except (InputFormatError, OSError):
        raise
    except Exception as exc:  # warcio's ArchiveLoadFailed and friends
        if number < start:
            raise InputFormatError(f"not a WARC or ARC file ({exc})") from None
        raise OSError(f"damaged archive after record {number}: {exc}") from None


def _peek(stream: IO[bytes], size: int) -> bytes:
    peek = getattr(stream, "peek", None)
    if peek is not None:
        return bytes(peek(size)[:size])
    if stream.seekable():
        position = stream.tell()
        head = stream.read(size)
        stream.seek(position)
        return head
    return b""


def _check_complete(record: Any, number: int) -> None:
    """Read what is left of ``record`` and raise ``OSError`` when it is shorter than it says.

    warcio reads a cut file without complaint (zlib returns what it could inflate), so a record
    whose block ends before its ``Content-Length`` is the only sign that the archive was cut or
    damaged; the rest is read here rather than by the iterator, which would read it anyway.
    """
    raw = record.raw_stream
    while raw.read(_DRAIN_BYTES):
        pass
    if getattr(raw, "limit", 0) > 0:
        raise OSError(f"truncated archive at record {number}: its block is shorter than its length")


def _unit(record: Any, number: int, max_body_bytes: int) -> Unit:
    url = record.rec_headers.get_header("WARC-Target-URI")
    record_id = record.rec_headers.get_header("WARC-Record-ID")
    kind = record.rec_type
    if kind != "response":
        return Unit(number, PAGE, b"", url=url, record_id=record_id, reason=f"{kind} record")
    http = record.http_headers
    if http is None:
        return Unit(number, PAGE, b"", url=url, record_id=record_id, reason="not an HTTP response")
    content_type = (http.get_header("Content-Type") or "").lower()
    if not any(t in content_type for t in _HTML_TYPES):
        return Unit(number, PAGE, b"", url=url, record_id=record_id, reason="not HTML")
    # From here on the record is an HTML response: it gets a line in the output.
    status = http.get_statuscode() or ""
    if not status.startswith("2"):
        return Unit(number, PAGE, b"", url=url, record_id=record_id, reason="http error", problem=False)
    if not url:
        return Unit(number, PAGE, b"", record_id=record_id, reason="no WARC-Target-URI", problem=True)
    stream = record.content_stream()
    body = stream.read(max_body_bytes + 1) if max_body_bytes else stream.read()
    if max_body_bytes and len(body) > max_body_bytes:
        return Unit(number, PAGE, b"", url=url, record_id=record_id, reason=TOO_LARGE)
    match = _CHARSET.search(content_type)
    links = [value for name, value in http.headers if name.lower() == "link"]
    return Unit(
        number,
        PAGE,
        body,
        url=url,
        record_id=record_id,
        encoding=match.group(1) if match else None,
        canonical=parse_link_header(links),
    )


def is_html_response(unit: Unit) -> bool:
    """True for the units that get a line in a WARC scan's sidecar output."""
    return unit.reason is None or unit.reason in ("http error", TOO_LARGE, "no WARC-Target-URI")


def wacz_units(
    path: str, max_body_bytes: int, position: Callable[[int], None] | None = None
) -> Iterator[Unit]:
    """The units of every WARC in a WACZ package (``archive/*.warc[.gz]``), in name order."""
    try:
        package = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputFormatError(f"not a WACZ (zip) file: {exc}") from None
    with package:
        names = sorted(
            n for n in package.namelist() if n.startswith("archive/") and re.search(r"\.(w)?arc(\.gz)?$", n)
        )
        if not names:
            raise InputFormatError("the WACZ holds no archive/*.warc[.gz] file")
        number = 0
        done = 0
        for name in names:
            with package.open(name) as member:
                for unit in warc_units(member, max_body_bytes, number + 1):
                    number = unit.number
                    yield unit
            done += package.getinfo(name).compress_size
            if position is not None:
                position(done)
