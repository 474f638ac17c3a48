"""What both Redis stores share: the packed page record, bucket fields and reply text.

The record's layout is described in :mod:`.redis_store`; the cluster store keeps the same
record in hashes of records (:mod:`.redis_cluster`).
"""

from __future__ import annotations

import math
import struct
import time
from typing import Any

import numpy as np

from neardup_scrapy.core.hashing import mix64
from neardup_scrapy.core.minhash import STORED_DTYPE
from neardup_scrapy.core.urls import redact_connection_url

from .base import STATUS_CODES, DocRecord, I64Array, U64Array
from .unionfind import all_roots

__all__ = [
    "RECORD_HEAD",
    "STATUS_CHAR",
    "UNIQUE_TAIL",
    "bucket_fields",
    "pack_record",
    "record_roots",
    "redis_bytes",
    "reply_text",
    "safe_url",
    "unpack_tail",
]

RECORD_HEAD = struct.Struct("<iBbed")  # parent, status, hamming, similarity (f16), added
STATUS_CHAR = {"unique": "u", "exact": "e", "near": "n", "skipped": "s", "revisit": "r"}
#: Bytes 4..7 of a record's head for a page that represents its cluster: status ``unique``,
#: Hamming ``-1``, similarity NaN.
UNIQUE_TAIL = RECORD_HEAD.pack(0, STATUS_CODES["unique"], -1, math.nan, 0.0)[4:8]


def safe_url(url: str) -> str:
    """``url`` without its secrets (for messages and logs; see
    :func:`~neardup_scrapy.core.urls.redact_connection_url`)."""
    return redact_connection_url(url)


def bucket_fields(keys: U64Array) -> list[bytes]:
    """6-byte shard fields of bucket keys: the top 48 bits of a 64-bit mix, big-endian."""
    mixed = mix64(keys.astype(np.uint64)).astype(">u8").view(np.uint8).reshape(-1, 8)[:, :6]
    raw = mixed.tobytes()
    return [raw[i : i + 6] for i in range(0, len(raw), 6)]


def pack_record(record: DocRecord) -> bytes:
    """The packed record of a page (see the module docstring); parent ``-1`` means "itself"."""
    host_bytes = record.host.encode("utf-8", "surrogatepass")[:65535]
    head = RECORD_HEAD.pack(
        record.parent if record.parent >= 0 else -1,
        STATUS_CODES[record.status],
        max(-128, min(127, int(record.hamming))),
        float(record.similarity),
        float(record.added or time.time()),
    )
    profile = bytes(record.profile)[:65535]
    return b"".join(
        (
            head,
            int(record.simhash & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little"),
            bytes(record.digest).ljust(16, b"\0")[:16],
            len(host_bytes).to_bytes(2, "little"),
            host_bytes,
            len(profile).to_bytes(2, "little"),
            profile,
            np.ascontiguousarray(record.signature, dtype=STORED_DTYPE).tobytes(),
            _pack_url(record.url.encode("utf-8", "surrogatepass"), host_bytes),
        )
    )


# Most urls repeat the record's host after their scheme; one byte stands for both. A record is a
# string key of its own, and Redis rounds each value up to an allocator size class (256, 320 ...
# bytes), so these 8 + len(host) bytes often decide the class.
_URL_SCHEMES = (b"", b"https://", b"http://")  # by the first byte of a packed url


def _pack_url(url: bytes, host: bytes) -> bytes:
    for code in (1, 2):
        head = _URL_SCHEMES[code] + host
        if host and url.startswith(head):
            return bytes((code,)) + url[len(head) :]
    return b"\x00" + url if url[:1] < b"\x03" and url else url


def _unpack_url(packed: bytes, host: bytes) -> bytes:
    code = packed[0] if packed else 3
    if code >= 3:  # records written before the prefix was packed (and most urls of other hosts)
        return packed
    return (_URL_SCHEMES[code] + host if code else b"") + packed[1:]


def unpack_tail(rec: bytes, num_perm: int) -> tuple[str, bytes, bytes, str]:
    """``(host, profile, signature bytes, url)`` of a packed record (after its 40-byte head).

    Raises:
        ValueError: the record is shorter than its lengths say, or its text is not UTF-8.
    """
    if len(rec) < 42:
        raise ValueError(f"{len(rec)} bytes, shorter than a record head")
    host_len = int.from_bytes(rec[40:42], "little")
    at = 42 + host_len
    profile_len = int.from_bytes(rec[at : at + 2], "little")
    sig_at = at + 2 + profile_len
    if len(rec) < sig_at + num_perm:
        raise ValueError(f"{len(rec)} bytes, expected at least {sig_at + num_perm}")
    host = rec[42:at].decode("utf-8", "surrogatepass")
    profile = rec[at + 2 : sig_at]
    signature = rec[sig_at : sig_at + num_perm]
    url = _unpack_url(rec[sig_at + num_perm :], rec[42:at]).decode("utf-8", "surrogatepass")
    return host, profile, signature, url


def record_roots(ids: I64Array, parents: I64Array) -> I64Array:
    """Union-find roots of pages ``ids`` (sorted) given their parents; missing parents end a path.

    A cycle is broken at its smallest id, like the Lua ``find``.
    """
    index = {int(d): k for k, d in enumerate(ids.tolist())}
    pos = np.array([index.get(int(p), k) for k, p in enumerate(parents.tolist())], dtype=np.int64)
    roots, _ = all_roots(pos)  # logs the cycles it breaks
    return ids[roots]


def reply_text(value: Any) -> str:
    """A reply as text (lone surrogates kept; bytes that are not UTF-8 at all become U+FFFD)."""
    if not isinstance(value, bytes):
        return str(value)
    try:
        return value.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return value.decode("utf-8", "replace")


def redis_bytes(text: str) -> bytes:
    """``text`` as UTF-8 bytes for Redis, lone surrogates included (round trip with :func:`reply_text`)."""
    return text.encode("utf-8", "surrogatepass")
