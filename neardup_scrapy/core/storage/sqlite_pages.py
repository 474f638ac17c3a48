"""The disk store's pages in memory: every page's cluster parent and host, and the writes that
change them (a page added with its unions and bucket rows, a page promoted).

Union-find parents are kept in memory (4 bytes per page) so ``find`` needs no query; path
compression stays in memory, the file keeps the parents written.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Mapping

import numpy as np

from neardup_scrapy.core.minhash import STORED_DTYPE

from .base import BUCKET_CAP, STATUS_CODES, STATUS_NAMES, Commit, DocRecord, HostCounts, I64Array
from .sqlite_format import bucket_key48, to_db
from .sqlite_hosts import HostTable
from .sqlite_read import read_parents
from .unionfind import all_roots, find_root, origin_members


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


class PageTable:
    """Cluster parents and hosts of a disk index's pages (ids ``0 .. len - 1``)."""

    def __init__(self, hosts: HostTable) -> None:
        self.hosts = hosts
        self.next = 0
        self.parents = np.empty(0, dtype=np.int32)
        self.doc_hosts = np.empty(0, dtype=np.int32)  # host id of every page

    def load(self, db: sqlite3.Connection, path: str) -> int:
        """Read every page's parent and host; the number of parents out of range (each page
        then represents its own cluster; :meth:`all_roots` breaks the cycles).

        Raises:
            StorageError: the page ids are not dense.
        """
        parents, self.doc_hosts = read_parents(db, path)
        self.next = len(parents)
        bad = np.flatnonzero((parents < 0) | (parents >= self.next))
        parents[bad] = bad
        self.parents = parents.astype(np.int32)
        return len(bad)

    def find(self, doc_id: int) -> int:
        """The root of ``doc_id``'s cluster."""
        return find_root(self.parents, doc_id, self.next)

    def all_roots(self) -> I64Array:
        """Every page's cluster root (cycles broken)."""
        roots, broken = all_roots(self.parents[: self.next].astype(np.int64))
        for root in broken:
            self.parents[root] = root
        return roots

    def host_of(self, doc_id: int) -> str:
        """The host of page ``doc_id``."""
        return self.hosts.names.get(int(self.doc_hosts[doc_id]), "")

    def add(self, db: sqlite3.Connection, commit: Commit, record: DocRecord) -> int:
        """Write the page's row, its cluster unions and bucket rows; its id."""
        hosts = self.hosts
        doc_id = self.next
        parent = self.find(record.parent) if record.parent >= 0 else doc_id
        # float16 like the other stores, so reports agree to the last digit
        similarity = None if math.isnan(record.similarity) else float(np.float16(record.similarity))
        db.execute(
            "INSERT INTO docs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                doc_id,
                parent,
                STATUS_CODES[record.status],
                similarity,
                int(record.hamming),
                float(record.added or time.time()),
                _signed64(int(record.simhash)),
                bytes(record.digest),
                np.ascontiguousarray(record.signature, dtype=STORED_DTYPE).tobytes(),
                hosts.host_id(db, record.host),
                to_db(record.url),
                bytes(record.profile),
            ),
        )
        self.next += 1
        if len(self.parents) <= doc_id:
            size = max(1024, 2 * len(self.parents))
            self.parents = np.resize(self.parents, size)
            self.doc_hosts = np.resize(self.doc_hosts, size)
        self.parents[doc_id] = doc_id
        self.doc_hosts[doc_id] = hosts.host_id(db, record.host)
        ledger = hosts.ledger
        for root, new_root in commit.unions:
            a, b = self.find(int(root)), self.find(int(new_root))
            if a != b:
                ledger.union(a, self.host_of(a), b, self.host_of(b))
                self.parents[a] = b
                db.execute("UPDATE docs SET parent=? WHERE id=?", (b, a))
        if record.parent >= 0:
            root = self.find(parent)
            ledger.join(root, self.host_of(root), record.host)
            self.parents[doc_id] = root
            if root != parent:
                db.execute("UPDATE docs SET parent=? WHERE id=?", (root, doc_id))
        else:
            ledger.new_document(record.host)
        if commit.canonical_host and commit.canonical_host != record.host:
            hosts.host_id(db, commit.canonical_host)
            ledger.canonical_link(record.host, commit.canonical_host)
        if len(commit.keys):
            entries = [(k, doc_id) for k in bucket_key48(commit.keys)]
            db.executemany("INSERT OR IGNORE INTO buckets VALUES (?, ?)", entries)
        return doc_id

    def promote(self, db: sqlite3.Connection, doc_id: int, root: int) -> None:
        """Make ``doc_id`` the representative of ``root``'s cluster: the two swap verdicts, and
        their hosts' counters follow."""
        row = db.execute("SELECT status, similarity, hamming FROM docs WHERE id=?", (doc_id,)).fetchone()
        status, similarity, hamming = (int(row[0]), row[1], int(row[2])) if row else (0, None, -1)
        db.execute(
            "UPDATE docs SET parent=?, status=?, similarity=?, hamming=? WHERE id=?",
            (doc_id, status, similarity, hamming, root),
        )
        db.execute(
            "UPDATE docs SET parent=?, status=?, similarity=NULL, hamming=-1 WHERE id=?",
            (doc_id, STATUS_CODES["unique"], doc_id),
        )
        self.parents[doc_id] = doc_id
        self.parents[root] = doc_id
        name = STATUS_NAMES.get(status, "unique")
        if name != "unique":
            for host, sign in ((self.host_of(doc_id), -1), (self.host_of(root), 1)):
                counts = self.hosts.counts.setdefault(host, HostCounts())
                setattr(counts, name, getattr(counts, name) + sign)
                counts.unique -= sign
                self.hosts.dirty.add(host)
        self.hosts.ledger.rename(root, doc_id)

    def named(self, db: sqlite3.Connection, doc_id: int, key: int, frontier: int) -> bool:
        """Whether a live page of ``doc_id``'s cluster is indexed under ``key`` (names it canonical)."""
        (k48,) = bucket_key48(np.array([key], dtype=np.uint64))
        rows = db.execute(
            "SELECT doc FROM buckets WHERE key = ? AND doc >= ? ORDER BY doc LIMIT ?",
            (k48, frontier, BUCKET_CAP),
        )
        root = self.find(doc_id)
        return any(self.find(int(d)) == root for (d,) in rows if d != doc_id)

    def origin_pages(self, origins: Mapping[str, str]) -> list[int]:
        """The pages to promote for ``origins`` (mirror host -> origin host; see the protocol)."""
        ids = self.hosts.ids
        codes = {ids[m]: ids[o] for m, o in origins.items() if m in ids and o in ids}
        if not codes or not self.next:
            return []
        hosts = self.doc_hosts[: self.next].astype(np.int64)
        return origin_members(self.all_roots(), hosts, codes)
