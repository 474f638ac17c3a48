"""``NEARDUP_WARC_FILE``: keep the responses the crawl checked, as a WARC, for a later ``scan``.

Each checked response (an HTML 2xx page within ``NEARDUP_MAX_BODY_BYTES``) is written as a
WARC ``response`` record with its status, headers and body as Scrapy received them after
decompression (so ``Content-Encoding`` and ``Transfer-Encoding`` are left out); the file is
gzip-compressed per record when its name ends with ``.gz``. ``neardup-scrapy scan FILE``
checks the same pages again, offline, with other parameters if wanted.
"""

from __future__ import annotations

import io
import logging
import os
from typing import IO, Any

logger = logging.getLogger(__name__)

__all__ = ["WarcKeeper"]

_DROPPED_HEADERS = {"content-encoding", "transfer-encoding", "content-length"}


class WarcKeeper:
    """Appends response records to one WARC file (opened on first use).

    Args:
        path: the file (``~`` expanded; its directory is created).
        software: the ``software`` field of the ``warcinfo`` record.
    """

    def __init__(self, path: str, software: str = "neardup-scrapy") -> None:
        self.path = os.path.expanduser(path)
        self.software = software
        self.records = 0
        self._file: IO[bytes] | None = None
        self._writer: Any = None

    def _open(self) -> Any:
        from warcio.warcwriter import WARCWriter

        parent = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(parent, exist_ok=True)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._writer = WARCWriter(self._file, gzip=self.path.endswith(".gz"))
        info = self._writer.create_warcinfo_record(
            os.path.basename(self.path), {"software": self.software, "format": "WARC File Format 1.1"}
        )
        self._writer.write_record(info)
        return self._writer

    def write(self, url: str, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        """Write one response record.

        Raises:
            OSError: the file cannot be written.
        """
        from warcio.statusandheaders import StatusAndHeaders

        writer = self._writer or self._open()
        kept = [(k, v) for k, v in headers if k.lower() not in _DROPPED_HEADERS]
        kept.append(("Content-Length", str(len(body))))
        http = StatusAndHeaders(f"{status} {_reason(status)}", kept, protocol="HTTP/1.1")
        record = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http)
        writer.write_record(record)
        self.records += 1

    def close(self) -> None:
        """Flush and close the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._writer = None


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def response_headers(headers: Any) -> list[tuple[str, str]]:
    """Scrapy ``Headers`` as ``(name, value)`` text pairs (Latin-1, as HTTP/1.1 sends them)."""
    pairs = []
    for name, values in headers.items():
        key = name.decode("latin-1") if isinstance(name, bytes) else str(name)
        for value in values:
            pairs.append((key, value.decode("latin-1") if isinstance(value, bytes) else str(value)))
    return pairs
