"""A full check of a disk index (``neardup-scrapy check-index``): the damage SQLite cannot see.

SQLite's integrity check, which the store runs at every open, proves the file's structure; it
cannot see values that a column's declared type does not enforce, nor rows that are missing.
The principle of this check: every stored value must have the type and size the store wrote,
and every page must be findable -- the bucket entries it was committed with must be there.
Most of a page's keys are recomputed from its record (the exact-digest key from its digest, the
SimHash block keys from its SimHash, the address keys from its url, with the index's seed and
scope); its MinHash band keys, made from the full signature the store does not keep, are
counted instead (all or none: the lookups of a run may leave one family out). A page whose
entries are missing is silently lost to lookups: a copy of it checked later comes back unique.

Read-only: the file is opened with ``mode=ro`` and never written (a crawl that has it open
holds it exclusively: check it after the crawl, or check a copy).

Pure code: no Scrapy here.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from neardup_scrapy.core.hashing import mix64
from neardup_scrapy.core.simhash import block_masks
from neardup_scrapy.core.sketch import host_salt, resource_keys, url_key

from .base import StorageError
from .sqlite_format import FORMAT, bucket_key48, record_damage, text_of
from .unionfind import all_roots

__all__ = ["Finding", "IndexCheck", "check_index"]

_LOW56 = (1 << 56) - 1
_EXAMPLES = 10
_EXACT = 1  # the stored status code of an exact duplicate


@dataclass
class Finding:
    """One kind of damage: how many pages (or rows) show it, the first of them, and what it does."""

    what: str
    consequence: str
    count: int = 0
    examples: list[int] = field(default_factory=list)

    def add(self, doc: int) -> None:
        self.count += 1
        if len(self.examples) < _EXAMPLES:
            self.examples.append(doc)


@dataclass
class IndexCheck:
    """What :func:`check_index` found."""

    path: str
    pages: int = 0
    bucket_entries: int = 0
    hosts: int = 0
    expired: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def damaged(self) -> bool:
        """Whether any damage was found."""
        return any(f.count for f in self.findings)


class _Findings:
    """The findings of one check, by kind, in the order they were first met."""

    def __init__(self) -> None:
        self.by_kind: dict[str, Finding] = {}

    def add(self, what: str, doc: int, consequence: str) -> None:
        finding = self.by_kind.get(what)
        if finding is None:
            finding = self.by_kind[what] = Finding(what, consequence)
        finding.add(doc)


def check_index(path: str | os.PathLike[str]) -> IndexCheck:
    """Check every record, bucket entry, cluster parent and host counter of a disk index.

    Raises:
        StorageError: the file cannot be read at all (missing, not a database, in use).
    """
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise StorageError(f"{name}: no such file")
    try:
        db = sqlite3.connect(Path(name).resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open {name}: {exc}") from exc
    db.text_factory = text_of
    try:
        return _check(db, name)
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc):
            raise StorageError(
                f"{name} is in use by a running crawl (it holds the file exclusively): check it after "
                "the crawl stops, or check a copy"
            ) from exc
        raise StorageError(f"cannot read {name}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"cannot read {name}: {exc}") from exc
    finally:
        db.close()


def _check(db: sqlite3.Connection, name: str) -> IndexCheck:
    result = IndexCheck(name)
    found = _Findings()
    problems = [str(r[0]) for r in db.execute("PRAGMA integrity_check(20)").fetchall()]
    if problems != ["ok"]:
        found.add(
            "the file's structure (SQLite integrity check: " + "; ".join(problems) + ")",
            0,
            "the store refuses to open it",
        )
        result.findings = list(found.by_kind.values())
        return result
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("format") != FORMAT or "params" not in meta:
        found.add(f"not a neardup index of format {FORMAT} (meta: {sorted(meta)})", 0, "it cannot be used")
        result.findings = list(found.by_kind.values())
        return result
    params = json.loads(meta["params"])
    seed, bands = int(params.get("seed", 1)), int(params.get("bands", 0))
    num_perm, by_host = int(params.get("num_perm", 128)), params.get("scope") == "host"
    masks = block_masks(int(params.get("simhash_distance", 3)))
    hosts = {row[0]: row for row in db.execute("SELECT * FROM hosts")}
    result.hosts = len(hosts)
    (result.pages, top) = db.execute("SELECT count(*), coalesce(max(id) + 1, 0) FROM docs").fetchone()
    (result.bucket_entries,) = db.execute("SELECT count(*) FROM buckets").fetchone()
    if top != result.pages:
        found.add(
            f"page ids are not dense ({result.pages:,} pages, ids up to {top - 1:,})",
            0,
            "the store refuses to open it",
        )
    n = top
    parents = np.arange(n, dtype=np.int64)
    pages_of_host: dict[Any, int] = {}
    addresses = np.zeros(n, dtype=np.int8)  # 1: a url key found, -1: none, 0: not looked at
    missing = np.zeros(n, dtype=bool)  # content keys missing
    address_partial = np.zeros(n, dtype=bool)
    entries = db.execute("SELECT doc, key FROM buckets ORDER BY doc")
    pending = entries.fetchone()
    stray = Finding("bucket entries of pages that do not exist", "lookups find ids without a record")
    rows = db.execute(
        "SELECT id, simhash, digest, signature, added, url, host, profile, status, parent, similarity, "
        "hamming FROM docs ORDER BY id"
    )
    for row in rows:
        doc = row[0]
        while pending is not None and pending[0] < doc:
            stray.add(int(pending[0]))
            pending = entries.fetchone()
        have: set[int] = set()
        while pending is not None and pending[0] == doc:
            have.add(pending[1])
            pending = entries.fetchone()
        damage = record_damage(row[:9], num_perm)
        if damage:
            found.add(
                f"page records damaged: {damage.split(' ', 1)[0]}",
                doc,
                "a check that meets one fails like a store failure (NEARDUP_ON_STORAGE_ERROR)",
            )
        parent, similarity, hamming = row[9], row[10], row[11]
        if type(parent) is not int or not 0 <= parent < n:
            found.add("cluster parents out of range", doc, "the page represents its own cluster")
        else:
            parents[doc] = parent
        if similarity is not None and (type(similarity) not in (int, float) or not 0.0 <= similarity <= 1.0):
            found.add("similarities damaged", doc, "the report shows them as unknown")
        if type(hamming) is not int or not -1 <= hamming <= 64:
            found.add("Hamming distances damaged", doc, "the report shows them as unknown")
        host = row[6]
        pages_of_host[host] = pages_of_host.get(host, 0) + 1
        if type(host) is int and host not in hosts:
            found.add("pages of a host that is not in the hosts table", doc, "the report counts them nowhere")
        if damage:
            continue
        if row[3] is None:  # forgotten by the ttl: its bucket entries were deleted with its signature
            result.expired += 1
            continue
        content_ok, url_found = _keys_present(
            row, have, seed=seed, bands=bands, masks=masks, by_host=by_host, host=_host_name(hosts, host)
        )
        missing[doc] = not content_ok
        addresses[doc] = 1 if url_found == 2 else -1
        address_partial[doc] = url_found == 1
    while pending is not None:
        stray.add(int(pending[0]))
        pending = entries.fetchone()
    # a page index keeps every page's address keys; an item index none (decided by the majority)
    page_index = int((addresses == 1).sum()) >= int((addresses == -1).sum())
    lost = missing | address_partial | ((addresses == -1) if page_index else np.zeros(n, dtype=bool))
    for doc in np.flatnonzero(lost).tolist():
        found.add(
            "pages missing bucket entries",
            doc,
            "lookups do not find them: a copy of one checked again comes back unique",
        )
    if stray.count:
        found.by_kind[stray.what] = stray
    _, broken = all_roots(parents)
    for root in broken:
        found.add("cycles of cluster parents", int(root), "broken at open, at the smallest page id")
    for host_id, row in hosts.items():
        counters = row[2:]
        if any(type(v) is not int or v < 0 for v in counters):
            found.add("hosts whose counters are damaged", int(host_id), "the report counts them as 0")
        elif counters[0] != pages_of_host.get(host_id, 0):
            found.add(
                "hosts whose page counter disagrees with their pages",
                int(host_id),
                "the report's counts of the host are wrong",
            )
    result.findings = list(found.by_kind.values())
    return result


def _host_name(hosts: dict[Any, Any], host: Any) -> str:
    row = hosts.get(host)
    return (
        ""
        if row is None
        else row[1].decode("utf-8", "surrogatepass")
        if isinstance(row[1], bytes)
        else row[1]
    )


def _key(value: int, table: int, salt: int | None) -> int:
    if salt is not None:
        value ^= salt
    mixed = int(mix64(np.array([value & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0])
    return (mixed & _LOW56) | (table << 56)


def _keys_present(
    row: tuple[Any, ...],
    have: set[int],
    *,
    seed: int,
    bands: int,
    masks: tuple[int, ...],
    by_host: bool,
    host: str,
) -> tuple[bool, int]:
    """Whether the page's content keys are all there, and how many of its two address keys are."""
    _, simhash, digest, _, _, url_value, _, _, status = row[:9]
    url = url_value.decode("utf-8", "surrogatepass") if isinstance(url_value, bytes) else url_value
    salt = host_salt(host, seed) if by_host else None
    simhash_keys = [_key(simhash & mask, 1 + bands + t, salt) for t, mask in enumerate(masks)]
    exact = [_key(int.from_bytes(digest[:8], "little"), 0, salt)]
    address = [int(resource_keys(url, seed)[1]), int(url_key(url, seed))]
    k48 = bucket_key48(np.array(exact + simhash_keys + address, dtype=np.uint64))
    exact48, simhash48, address48 = k48[:1], k48[1 : 1 + len(masks)], k48[1 + len(masks) :]
    url_found = sum(k in have for k in address48)
    if status == _EXACT:  # exact duplicates are committed with their address keys only
        return len(have) == url_found, url_found
    simhash_found = sum(k in have for k in simhash48)
    band_rows = len(have - set(exact48) - set(simhash48) - set(address48))
    content_ok = (
        exact48[0] in have
        and simhash_found in (0, len(masks))
        and band_rows in (0, bands)
        and simhash_found + band_rows > 0
    )
    return content_ok, url_found


def _plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


def describe(check: IndexCheck) -> list[str]:
    """The check's result as text lines (the last one says whether the index is damaged)."""
    lines = [
        f"{check.path}: {_plural(check.pages, 'page')}, "
        f"{_plural(check.bucket_entries, 'bucket entry', 'bucket entries')}, {_plural(check.hosts, 'host')}"
        + (f", {check.expired:,} forgotten by the ttl" if check.expired else "")
    ]
    for finding in check.findings:
        if not finding.count:
            continue
        shown = ", ".join(str(d) for d in finding.examples)
        more = ", ..." if finding.count > len(finding.examples) else ""
        lines.append(
            f"  damaged: {finding.count:,} {finding.what} (e.g. {shown}{more}): {finding.consequence}"
        )
    if check.damaged:
        lines.append(
            "the index is damaged: move it away to start a new one (the pages it holds are then forgotten), "
            "or put back a copy"
        )
    else:
        lines.append("no damage found")
    return lines
