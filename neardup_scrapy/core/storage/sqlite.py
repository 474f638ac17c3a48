"""Disk store: one SQLite file, for crawls that pause and resume (``NEARDUP_STORAGE = "disk"``).

Layout (one file, WAL journal):

* ``meta(key, value)``: the index parameters as JSON (checked at every open) and the format.
* ``docs(id INTEGER PRIMARY KEY, ...)``: one compact row per page -- the MinHash signature as a
  BLOB of ``num_perm`` bytes (128 at 128 permutations), the 16-byte digest,
  the SimHash as a signed 64-bit integer, parent, status, similarity, Hamming distance, time
  added, a host id, the url and the page's profile (edit sketch and heading words).
* ``buckets(key, doc) WITHOUT ROWID``: one row per bucket entry; its primary key *is* the index
  (no separate rowid table). ``key`` is a 48-bit mix of the 64-bit bucket key, so SQLite stores
  it in 6 bytes; a rare collision only adds a candidate, which the detector verifies anyway.
* ``hosts``: the per-host counters, with the host's documents and duplicated documents;
  ``clusters``, ``shared`` and ``canonical``: the rest of the mirror evidence
  (:class:`~neardup_scrapy.core.mirrors.MirrorLedger`), mirrored in memory.

Atomicity and durability: every page is applied inside a write transaction, and transactions
are committed in batches (every ``batch_size`` pages or ``batch_seconds`` seconds, and on
:meth:`SQLiteStorage.close`). A graceful stop (Scrapy's pause with ``JOBDIR``) closes the store,
so nothing is lost and a resumed crawl sees exactly the pages checked before the pause. A killed
process leaves the file readable and consistent (SQLite rolls the open transaction back) and
loses at most the pages of the last uncommitted batch. ``batch_size=1`` commits every page.

One process writes a file at a time (``locking_mode=EXCLUSIVE``); several crawler processes
should share a Redis store instead. Union-find parents, host counters and the mirror evidence
are mirrored in memory (4 bytes per page, plus the hosts of clusters of several pages) so
``find`` and mirror decisions need no query.

Expiry (``ttl``): pages older than ``ttl`` seconds are ignored by :meth:`SQLiteStorage.lookup` at
once (a moving id frontier; ids grow with time), and their bucket rows and signatures are deleted
from the file when the store is next opened.

The store's collaborators: :mod:`.sqlite_open` opens the file, :mod:`.sqlite_read` reads its
records, :mod:`.sqlite_pages` and :mod:`.sqlite_hosts` hold what is mirrored in memory and write
it, :mod:`.sqlite_batch` groups the writes into transactions.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from neardup_scrapy.core.mirrors import MirrorEvidence

from .base import (
    Commit,
    CommitResult,
    DocBatch,
    HostCounts,
    I64Array,
    StorageError,
    U64Array,
    fetch_without_chance_hits,
)
from .sqlite_batch import WriteBatch
from .sqlite_hosts import HostTable
from .sqlite_open import open_index, prune_expired
from .sqlite_pages import PageTable
from .sqlite_read import count_damaged, first_live, read_candidates, read_clusters, read_records

if TYPE_CHECKING:
    from neardup_scrapy.core.chance import ChanceFilter

logger = logging.getLogger(__name__)


def _load(db: sqlite3.Connection, path: str, pages: PageTable, hosts: HostTable, num_perm: int) -> None:
    """Read what the store keeps in memory, warning of damage found on the way."""
    bad = pages.load(db, path)
    if bad:
        logger.warning(
            "neardup: %d page(s) of the index %s have a cluster parent out of range (corrupted?); "
            "they now represent their own clusters",
            bad,
            path,
        )
    pages.all_roots()  # logs the cycles it breaks
    hosts.load(db)
    damaged = count_damaged(db, num_perm)
    if damaged:
        logger.warning(
            "neardup: %d page record(s) of the index %s are damaged (values of the wrong type or "
            "size); a check that meets one fails like a store failure (NEARDUP_ON_STORAGE_ERROR). "
            "`neardup-scrapy check-index %s` lists them",
            damaged,
            path,
            path,
        )


class SQLiteStorage:
    """Single-file SQLite store (see the module docstring for the layout and guarantees).

    Args:
        path: the database file (created with its directory when missing).
        ttl: seconds after which pages are forgotten (``None``: never).
        batch_size: pages per transaction (1 = commit every page).
        batch_seconds: commit an open transaction at least this often.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        ttl: float | None = None,
        *,
        batch_size: int = 500,
        batch_seconds: float = 2.0,
        **_: Any,
    ) -> None:
        self.path = os.fspath(path)
        self.ttl = ttl
        self.batch_size = max(1, int(batch_size))
        self.batch_seconds = batch_seconds
        self._db: sqlite3.Connection | None = None
        self._num_perm = 0
        self._hosts = HostTable()
        self._pages = PageTable(self._hosts)
        self._batch = WriteBatch(self._hosts)
        self._frontier = 0  # ids below are expired (ttl)
        self._frontier_checked = 0.0

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, signature: Mapping[str, Any]) -> None:
        """Create the file or open it and check its parameters.

        Raises:
            ParameterMismatchError: the file was built with other parameters.
            StorageError: the file cannot be opened (not a database, locked by another process).
        """
        if self._db is not None:
            return
        wanted = json.loads(json.dumps(dict(signature), allow_nan=False))

        def load(db: sqlite3.Connection) -> None:
            self._num_perm = int(wanted.get("num_perm", 128))
            _load(db, self.path, self._pages, self._hosts, self._num_perm)

        self._db = open_index(self.path, wanted, load)
        if self.ttl is not None:
            self._advance_frontier(force=True)
            if self._frontier > 0:
                removed = prune_expired(self._db, self._frontier)
                if removed:
                    logger.info("neardup: forgot %d bucket entries of pages older than the ttl", removed)

    def close(self) -> None:
        """Commit the open batch, checkpoint the WAL into the file and close. Idempotent."""
        db = self._db
        if db is None:
            return
        try:
            self._flush()
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot close the neardup index {self.path}: {exc}") from exc
        finally:
            db.close()
            self._db = None

    def flush(self) -> None:
        """Commit the open batch now."""
        self._flush()

    def fetch_candidates(self, ids: I64Array, chance: ChanceFilter) -> DocBatch:
        """:meth:`fetch` of ``ids`` less the chance hits (judged on the fetched records)."""
        return fetch_without_chance_hits(self, ids, chance)

    def __len__(self) -> int:
        return self._pages.next

    # -- the three calls per page --------------------------------------------------------------
    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Ids in the buckets of ``keys`` (expired pages left out); no token (one writer)."""
        db = self._require()
        if not len(keys):
            return np.empty(0, dtype=np.int64), None
        if self.ttl is not None:
            self._advance_frontier()
        return read_candidates(db, self.path, keys, self._frontier), None

    def lookup_or_insert(
        self, keys: U64Array, provisional: Commit
    ) -> tuple[I64Array, object, CommitResult | None]:
        """:meth:`lookup`, then :meth:`commit` of ``provisional`` if no live page is in the buckets.

        One writer per file (``locking_mode=EXCLUSIVE``), so the two steps are atomic as they are.
        """
        ids, token = self.lookup(keys)
        if len(ids):
            return ids, token, None
        return ids, token, self.commit(provisional)

    def fetch(self, ids: I64Array) -> DocBatch:
        """Records of ``ids`` (in that order) with their cluster roots."""
        db = self._require()
        ids_list = [int(i) for i in ids]
        return read_records(
            db, self.path, ids_list, self._num_perm, host_names=self._hosts.names, find=self._pages.find
        )

    def commit(self, commit: Commit) -> CommitResult:
        """Add the page inside the current batch transaction (one writer: never conflicts)."""
        db = self._require()
        host = commit.host
        counts = self._hosts.counts.setdefault(host, HostCounts())
        try:
            self._batch.begin(db)
            if commit.status == "skipped" or commit.record is None:
                if commit.status == "revisit":
                    counts.revisits += 1
                else:
                    counts.skipped += 1
                self._hosts.host_id(db, host)
                self._hosts.dirty.add(host)
                self._batch.wrote(db, self.batch_size, self.batch_seconds)
                return CommitResult(doc_id=-1, host_pages=counts.pages)
            record = commit.record
            doc_id = self._pages.add(db, commit, record)
            counts.pages += 1
            counts.bytes += commit.nbytes
            setattr(counts, commit.status, getattr(counts, commit.status) + 1)
            if commit.status != "unique":
                counts.duplicate_bytes += commit.nbytes
            self._hosts.dirty.add(host)
            promoted = (
                commit.named_key is not None
                and record.parent >= 0
                and self._pages.named(db, doc_id, commit.named_key, self._frontier)
                and self.promote(doc_id)
            )
            self._batch.wrote(db, self.batch_size, self.batch_seconds)
        except sqlite3.Error as exc:
            raise StorageError(f"neardup index {self.path}: commit failed: {exc}") from exc
        return CommitResult(doc_id=doc_id, host_pages=counts.pages, promoted=promoted)

    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` its cluster's representative (see the protocol)."""
        db = self._require()
        doc_id = int(doc_id)
        root = self._pages.find(doc_id)
        if root == doc_id:
            return False
        try:
            self._batch.begin(db)
            self._pages.promote(db, doc_id, root)
            self._batch.wrote(db, self.batch_size, self.batch_seconds)
        except sqlite3.Error as exc:
            raise StorageError(f"neardup index {self.path}: promote failed: {exc}") from exc
        return True

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol)."""
        return sum(self.promote(doc) for doc in self._pages.origin_pages(origins))

    # -- reports -------------------------------------------------------------------------------
    def host_counts(self) -> dict[str, HostCounts]:
        """Counters of every host."""
        return {h: HostCounts(**vars(c)) for h, c in self._hosts.counts.items()}

    def mirror_evidence(self, min_pages: int = 0, share: float = 0.0) -> MirrorEvidence:
        """The mirror evidence (see the protocol)."""
        pages = {h: c.pages for h, c in self._hosts.counts.items()}
        return self._hosts.ledger.evidence(pages, min_pages, share)

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the largest ones (see the protocol)."""
        db = self._require()
        n = self._pages.next
        if not n:
            return {}, []
        return read_clusters(
            db,
            self._pages.all_roots(),
            self._hosts.names,
            max_clusters=max_clusters,
            max_members=max_members,
            singletons=singletons,
        )

    def save_url_rules(self, writer: str, state: bytes) -> None:
        """Keep a process's duplicate-url rules in the file (committed with the open batch)."""
        db = self._require()
        try:
            if not db.in_transaction:
                db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT OR REPLACE INTO url_rules VALUES (?, ?)", (writer, bytes(state)))
            if self._batch.pending == 0:
                db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot save the url rules in {self.path}: {exc}") from exc

    def url_rules(self) -> dict[str, bytes]:
        """Every writer's duplicate-url rules."""
        db = self._require()
        try:
            return {str(w): bytes(s) for w, s in db.execute("SELECT writer, state FROM url_rules")}
        except sqlite3.Error as exc:
            raise StorageError(f"cannot read the url rules in {self.path}: {exc}") from exc

    def memory_bytes(self) -> int:
        """Bytes of the database file and its WAL."""
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(self.path + suffix)
        return total

    # -- internals -----------------------------------------------------------------------------
    def _require(self) -> sqlite3.Connection:
        if self._db is None:
            raise StorageError(f"the neardup index {self.path} is not open")
        return self._db

    def _flush(self) -> None:
        self._batch.commit(self._require())

    def _advance_frontier(self, force: bool = False) -> None:
        """Move the expiry frontier: the first id added after ``now - ttl``."""
        now = time.monotonic()
        if not force and now - self._frontier_checked < 1.0:
            return
        self._frontier_checked = now
        assert self.ttl is not None
        found = first_live(self._require(), self._frontier, time.time() - self.ttl)
        self._frontier = found if found is not None else self._pages.next
