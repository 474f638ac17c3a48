"""The disk store's file format: its schema, bucket keys, stored text and record checks.

Shared by the store (:mod:`.sqlite` and its ``sqlite_*`` collaborators) and :mod:`.sqlite_check`
(the offline check); the layout is described in :mod:`.sqlite`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from neardup_scrapy.core.hashing import mix64

from .base import STATUS_NAMES, U64Array

FORMAT = "neardup-sqlite/2"
_S16 = np.uint64(16)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY,
    parent INTEGER NOT NULL,
    status INTEGER NOT NULL,
    similarity REAL,
    hamming INTEGER NOT NULL,
    added REAL NOT NULL,
    simhash INTEGER NOT NULL,
    digest BLOB NOT NULL,
    signature BLOB,
    host INTEGER NOT NULL,
    url TEXT NOT NULL,
    profile BLOB
);
CREATE TABLE IF NOT EXISTS buckets (key INTEGER NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY (key, doc))
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
    pages INTEGER NOT NULL DEFAULT 0, "unique" INTEGER NOT NULL DEFAULT 0,
    exact INTEGER NOT NULL DEFAULT 0, near INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0,
    duplicate_bytes INTEGER NOT NULL DEFAULT 0, documents INTEGER NOT NULL DEFAULT 0,
    duplicated INTEGER NOT NULL DEFAULT 0, revisits INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS clusters (root INTEGER NOT NULL, host INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (root, host)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shared (host INTEGER NOT NULL, other INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (host, other)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS canonical (host INTEGER NOT NULL, other INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (host, other)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS url_rules (writer TEXT PRIMARY KEY, state BLOB NOT NULL) WITHOUT ROWID;
"""


def bucket_key48(keys: U64Array) -> list[int]:
    """48-bit mixes of 64-bit bucket keys (stored by SQLite in 6 bytes)."""
    return [int(k) for k in (mix64(keys.astype(np.uint64)) >> _S16)]


def to_db(text: str) -> str | bytes:
    """A url or host for SQLite: a string it cannot store as TEXT (a lone surrogate, valid in
    Python and from ``json.loads``) is stored as its UTF-8 bytes (a BLOB) instead."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def text_of(raw: bytes) -> str:
    """A TEXT value as read from the file; bytes that are not UTF-8 (damage: SQLite does not check
    what it is given) are kept as escapes rather than failing the whole query."""
    return raw.decode("utf-8", "surrogateescape")


def from_db(value: Any) -> str:
    """A url or host as stored by :func:`to_db`."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return value.decode("utf-8", "replace")
    return str(value)


def record_damage(row: Sequence[Any], num_perm: int) -> str:
    """What is wrong with a ``docs`` row as :meth:`~.sqlite.SQLiteStorage.fetch` reads it (``id, simhash,
    digest, signature, added, url, host, profile, status``); ``""`` for a sound one.

    The checks are those of the values' types and sizes, which SQLite does not enforce (a column
    declared ``INTEGER`` takes text): a record damaged so passes the integrity check at open.
    """
    _, simhash, digest, signature, added, url, host, profile, status = row
    if type(simhash) is not int:
        return f"SimHash is {type(simhash).__name__}, not an integer"
    if not isinstance(digest, bytes) or len(digest) != 16:
        return f"digest of {_size(digest)}, expected 16 bytes"
    if signature is not None and (not isinstance(signature, bytes) or len(signature) != num_perm):
        return f"signature of {_size(signature)}, expected {num_perm} bytes"
    if type(added) not in (int, float) or not math.isfinite(added):
        return f"time added is {added!r}, not a number"
    if not isinstance(url, (str, bytes)) or not url:
        return f"url is {url!r}"
    if type(host) is not int:
        return f"host id is {type(host).__name__}, not an integer"
    if profile is not None and not isinstance(profile, bytes):
        return f"profile is {type(profile).__name__}, not bytes"
    if type(status) is not int or status not in STATUS_NAMES:
        return f"status is {status!r}"
    return ""


def damaged_record_sql(num_perm: int) -> str:
    """An SQL condition on a ``docs`` row that holds where :func:`record_damage` finds damage."""
    return (
        "typeof(simhash) != 'integer' OR typeof(digest) != 'blob' OR length(digest) != 16 "
        "OR (signature IS NOT NULL AND (typeof(signature) != 'blob' "
        f"OR length(signature) != {int(num_perm)})) "
        "OR typeof(added) NOT IN ('integer', 'real') OR typeof(url) NOT IN ('text', 'blob') OR url = '' "
        "OR typeof(host) != 'integer' OR (profile IS NOT NULL AND typeof(profile) != 'blob') "
        "OR typeof(status) != 'integer' OR status NOT IN (0, 1, 2)"
    )


def _size(value: Any) -> str:
    return f"{len(value)} bytes" if isinstance(value, bytes) else f"a {type(value).__name__}"
