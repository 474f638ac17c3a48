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
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from neardup_scrapy.core.minhash import STORED_DTYPE
from neardup_scrapy.core.mirrors import MirrorEvidence, MirrorLedger

from .base import (
    BUCKET_CAP,
    MAX_CANDIDATES,
    STATUS_CODES,
    STATUS_NAMES,
    Commit,
    CommitResult,
    DocBatch,
    HostCounts,
    I64Array,
    ParameterMismatchError,
    StorageError,
    U64Array,
    compare_parameters,
    fetch_without_chance_hits,
    pinned_keys,
    rank_candidates,
)
from .members import summarize_clusters
from .sqlite_format import (
    FORMAT,
    SCHEMA,
    bucket_key48,
    damaged_record_sql,
    from_db,
    record_damage,
    text_of,
    to_db,
)
from .unionfind import all_roots, find_root, origin_members

if TYPE_CHECKING:
    from neardup_scrapy.core.chance import ChanceFilter

logger = logging.getLogger(__name__)

_CHUNK = 500  # ids per IN (...) query
_COUNTERS = ("pages", "unique", "exact", "near", "skipped", "bytes", "duplicate_bytes", "revisits")


def _count(value: Any) -> int:
    """A counter as stored; a damaged one (not a non-negative integer) counts 0."""
    return value if type(value) is int and value >= 0 else 0


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


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
        self._next = 0
        self._parents = np.empty(0, dtype=np.int32)
        self._doc_hosts = np.empty(0, dtype=np.int32)  # host id of every page
        self._host_ids: dict[str, int] = {}
        self._host_names: dict[int, str] = {}
        self._counts: dict[str, HostCounts] = {}
        self._ledger = MirrorLedger()
        self._dirty_hosts: set[str] = set()
        self._pending = 0
        self._batch_started = 0.0
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
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=2.0, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open the neardup index {self.path}: {exc}") from exc
        db.text_factory = text_of
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA locking_mode=EXCLUSIVE")
            db.execute("PRAGMA cache_size=-65536")
            db.execute("BEGIN IMMEDIATE")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            columns = {str(r[1]) for r in db.execute("PRAGMA table_info(hosts)")}
            if "revisits" not in columns:  # a file written before revisits were counted
                db.execute("ALTER TABLE hosts ADD COLUMN revisits INTEGER NOT NULL DEFAULT 0")
            row = db.execute("SELECT value FROM meta WHERE key='params'").fetchone()
            if row is None:
                params = json.dumps(wanted, sort_keys=True, allow_nan=False)
                db.execute("INSERT INTO meta VALUES ('params', ?)", (params,))
                db.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", (FORMAT,))
            else:
                self._check_integrity(db)
                stored = json.loads(row[0])
                differences = compare_parameters(stored, wanted)
                if differences:
                    db.execute("ROLLBACK")
                    db.close()
                    raise ParameterMismatchError(self.path, differences)
            db.execute("COMMIT")
            self._db = db
            self._num_perm = int(wanted.get("num_perm", 128))
            self._load()
        except (sqlite3.DatabaseError, ValueError, StorageError) as exc:
            self._db = None
            db.close()
            if isinstance(exc, StorageError):
                raise
            if "locked" in str(exc):
                raise StorageError(
                    f"the neardup index {self.path} is in use by another process "
                    "(one process per disk index; use NEARDUP_STORAGE='redis' to share an index)"
                ) from exc
            raise StorageError(f"cannot open the neardup index {self.path}: {exc}") from exc
        if self.ttl is not None:
            self._advance_frontier(force=True)
            self._prune_expired()

    def _check_integrity(self, db: sqlite3.Connection) -> None:
        """Refuse a damaged file at open rather than fail most checks later.

        ``PRAGMA quick_check`` reads every page of the file once: about 0.7 s per 100,000
        indexed pages.

        Raises:
            StorageError: the file is damaged (the message says what to do).
        """
        try:
            problems = [str(r[0]) for r in db.execute("PRAGMA quick_check(5)").fetchall()]
        except sqlite3.DatabaseError as exc:
            problems = [str(exc)]
        if problems != ["ok"]:
            raise StorageError(
                f"the neardup index {self.path} is damaged (SQLite integrity check: {'; '.join(problems)}); "
                "move the file away to start a new index (the pages it holds are then forgotten), or put "
                "back a copy"
            )

    def _load(self) -> None:
        db = self._require()
        rows = db.execute(
            "SELECT parent, CASE WHEN typeof(host) = 'integer' THEN host ELSE -1 END FROM docs ORDER BY id"
        ).fetchall()
        parents = np.array([p if isinstance(p, int) else -1 for (p, _) in rows], dtype=np.int64)
        self._doc_hosts = np.array([h for (_, h) in rows], dtype=np.int32)
        self._next = len(parents)
        (max_id,) = db.execute("SELECT max(id) FROM docs").fetchone()
        if max_id is not None and max_id + 1 != self._next:
            raise StorageError(f"the neardup index {self.path} is inconsistent (ids not dense)")
        bad = np.flatnonzero((parents < 0) | (parents >= self._next))
        if len(bad):
            logger.warning(
                "neardup: %d page(s) of the index %s have a cluster parent out of range (corrupted?); "
                "they now represent their own clusters",
                len(bad),
                self.path,
            )
            parents[bad] = bad
        _, broken = all_roots(parents)  # logs the cycles it breaks
        parents[broken] = broken
        self._parents = parents.astype(np.int32)
        ledger = self._ledger
        for row in db.execute(
            'SELECT id, name, pages, "unique", exact, near, skipped, bytes, duplicate_bytes, documents, '
            "duplicated, revisits FROM hosts"
        ):
            host_id, name = int(row[0]), from_db(row[1])
            self._host_ids[name] = host_id
            self._host_names[host_id] = name
            self._counts[name] = HostCounts(
                **{c: _count(v) for c, v in zip(_COUNTERS, (*row[2:9], row[11]), strict=True)}
            )
            if _count(row[9]):
                ledger.documents[name] = _count(row[9])
            if _count(row[10]):
                ledger.duplicated[name] = _count(row[10])
        names = self._host_names
        for root, host_id, n in db.execute("SELECT root, host, n FROM clusters"):
            if type(root) is int and host_id in names:
                ledger.cluster_hosts.setdefault(root, {})[names[host_id]] = _count(n)
        for table, target in (("shared", ledger.shared), ("canonical", ledger.canonical)):
            for host_id, other_id, n in db.execute(f"SELECT host, other, n FROM {table}"):
                if host_id in names and other_id in names:
                    target.setdefault(names[host_id], {})[names[other_id]] = _count(n)
        (damaged,) = db.execute(
            f"SELECT count(*) FROM docs WHERE {damaged_record_sql(self._num_perm)}"
        ).fetchone()
        if damaged:
            logger.warning(
                "neardup: %d page record(s) of the index %s are damaged (values of the wrong type or "
                "size); a check that meets one fails like a store failure (NEARDUP_ON_STORAGE_ERROR). "
                "`neardup-scrapy check-index %s` lists them",
                damaged,
                self.path,
                self.path,
            )

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
        return self._next

    # -- the three calls per page --------------------------------------------------------------
    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Ids in the buckets of ``keys`` (expired pages left out); no token (one writer)."""
        db = self._require()
        if not len(keys):
            return np.empty(0, dtype=np.int64), None
        if self.ttl is not None:
            self._advance_frontier()
        k48 = bucket_key48(keys)
        try:
            # One range scan of the (key, doc) primary key per key, BUCKET_CAP rows at most: a
            # query over all keys at once ranked every row of every bucket, so its cost grew with
            # the largest bucket (a family of thousands of near-identical pages).
            rows = [
                (key, doc)
                for key in dict.fromkeys(k48)
                for (doc,) in db.execute(
                    "SELECT doc FROM buckets WHERE key = ? AND doc >= ? ORDER BY doc LIMIT ?",
                    (key, self._frontier, BUCKET_CAP),
                )
            ]
        except sqlite3.Error as exc:
            raise StorageError(f"neardup index {self.path}: lookup failed: {exc}") from exc
        docs = np.array([doc for (_, doc) in rows], dtype=np.int64)
        distinct = np.unique(docs)
        if len(distinct) <= MAX_CANDIDATES:
            return distinct, None
        pinned = {key for key, pin in zip(k48, pinned_keys(keys).tolist(), strict=True) if pin}
        is_pinned = np.array([key in pinned for (key, _) in rows], dtype=bool)
        return rank_candidates(docs[is_pinned], docs[~is_pinned]), None

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
        id_list = [int(i) for i in ids]
        rows: dict[int, tuple[Any, ...]] = {}
        try:
            for start in range(0, len(id_list), _CHUNK):
                part = id_list[start : start + _CHUNK]
                marks = ",".join("?" * len(part))
                for row in db.execute(
                    "SELECT id, simhash, digest, signature, added, url, host, profile, status FROM docs "
                    f"WHERE id IN ({marks})",
                    part,
                ):
                    rows[int(row[0])] = row
        except sqlite3.Error as exc:
            raise StorageError(f"neardup index {self.path}: fetch failed: {exc}") from exc
        present = [i for i in id_list if i in rows]
        n = len(present)
        signatures = np.zeros((n, self._num_perm), dtype=STORED_DTYPE)
        simhashes = np.zeros(n, dtype=np.uint64)
        added = np.zeros(n, dtype=np.float64)
        digests, urls, hosts, profiles, statuses = [], [], [], [], []
        for i, doc in enumerate(present):
            _, simhash, digest, signature, when, url, host, profile, status = rows[doc]
            damage = record_damage(rows[doc], self._num_perm)
            if damage:
                raise StorageError(
                    f"the record of page {doc} in the neardup index at {self.path} is damaged ({damage}); "
                    f"`neardup-scrapy check-index {self.path}` lists every damaged record"
                )
            if signature is not None:
                signatures[i] = np.frombuffer(signature, dtype=STORED_DTYPE)
            simhashes[i] = simhash & 0xFFFFFFFFFFFFFFFF
            added[i] = when
            digests.append(bytes(digest))
            urls.append(from_db(url))
            hosts.append(self._host_names.get(host, ""))
            profiles.append(bytes(profile or b""))
            statuses.append(STATUS_NAMES[status])
        return DocBatch(
            ids=np.array(present, dtype=np.int64),
            signatures=signatures,
            simhashes=simhashes,
            digests=digests,
            roots=np.array([self._find(i) for i in present], dtype=np.int64),
            added=added,
            urls=urls,
            hosts=hosts,
            profiles=profiles,
            statuses=statuses,
        )

    def commit(self, commit: Commit) -> CommitResult:
        """Add the page inside the current batch transaction (one writer: never conflicts)."""
        db = self._require()
        host = commit.host
        counts = self._counts.setdefault(host, HostCounts())
        try:
            self._begin()
            if commit.status == "skipped" or commit.record is None:
                if commit.status == "revisit":
                    counts.revisits += 1
                else:
                    counts.skipped += 1
                self._host_id(host)
                self._dirty_hosts.add(host)
                self._after_write()
                return CommitResult(doc_id=-1, host_pages=counts.pages)
            record = commit.record
            doc_id = self._next
            parent = self._find(record.parent) if record.parent >= 0 else doc_id
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
                    self._host_id(record.host),
                    to_db(record.url),
                    bytes(record.profile),
                ),
            )
            self._next += 1
            if len(self._parents) <= doc_id:
                size = max(1024, 2 * len(self._parents))
                self._parents = np.resize(self._parents, size)
                self._doc_hosts = np.resize(self._doc_hosts, size)
            self._parents[doc_id] = doc_id
            self._doc_hosts[doc_id] = self._host_id(record.host)
            ledger = self._ledger
            for root, new_root in commit.unions:
                a, b = self._find(int(root)), self._find(int(new_root))
                if a != b:
                    ledger.union(a, self._host_of_doc(a), b, self._host_of_doc(b))
                    self._parents[a] = b
                    db.execute("UPDATE docs SET parent=? WHERE id=?", (b, a))
            if record.parent >= 0:
                root = self._find(parent)
                ledger.join(root, self._host_of_doc(root), record.host)
                self._parents[doc_id] = root
                if root != parent:
                    db.execute("UPDATE docs SET parent=? WHERE id=?", (root, doc_id))
            else:
                ledger.new_document(record.host)
            if commit.canonical_host and commit.canonical_host != record.host:
                self._host_id(commit.canonical_host)
                ledger.canonical_link(record.host, commit.canonical_host)
            if len(commit.keys):
                entries = [(k, doc_id) for k in bucket_key48(commit.keys)]
                db.executemany("INSERT OR IGNORE INTO buckets VALUES (?, ?)", entries)
            counts.pages += 1
            counts.bytes += commit.nbytes
            setattr(counts, commit.status, getattr(counts, commit.status) + 1)
            if commit.status != "unique":
                counts.duplicate_bytes += commit.nbytes
            self._dirty_hosts.add(host)
            promoted = (
                commit.named_key is not None
                and record.parent >= 0
                and self._named(doc_id, commit.named_key)
                and self.promote(doc_id)
            )
            self._after_write()
        except sqlite3.Error as exc:
            raise StorageError(f"neardup index {self.path}: commit failed: {exc}") from exc
        return CommitResult(doc_id=doc_id, host_pages=counts.pages, promoted=promoted)

    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` its cluster's representative (see the protocol)."""
        db = self._require()
        doc_id = int(doc_id)
        root = self._find(doc_id)
        if root == doc_id:
            return False
        try:
            self._begin()
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
            self._parents[doc_id] = doc_id
            self._parents[root] = doc_id
            name = STATUS_NAMES.get(status, "unique")
            if name != "unique":
                for host, sign in ((self._host_of_doc(doc_id), -1), (self._host_of_doc(root), 1)):
                    counts = self._counts.setdefault(host, HostCounts())
                    setattr(counts, name, getattr(counts, name) + sign)
                    counts.unique -= sign
                    self._dirty_hosts.add(host)
            self._ledger.rename(root, doc_id)
            self._after_write()
        except sqlite3.Error as exc:
            raise StorageError(f"neardup index {self.path}: promote failed: {exc}") from exc
        return True

    def _named(self, doc_id: int, key: int) -> bool:
        """Whether a page of ``doc_id``'s cluster is indexed under ``key`` (names it canonical)."""
        (k48,) = bucket_key48(np.array([key], dtype=np.uint64))
        rows = self._require().execute(
            "SELECT doc FROM buckets WHERE key = ? AND doc >= ? ORDER BY doc LIMIT ?",
            (k48, self._frontier, BUCKET_CAP),
        )
        root = self._find(doc_id)
        return any(self._find(int(d)) == root for (d,) in rows if d != doc_id)

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol)."""
        ids = self._host_ids
        codes = {ids[m]: ids[o] for m, o in origins.items() if m in ids and o in ids}
        if not codes or not self._next:
            return 0
        hosts = self._doc_hosts[: self._next].astype(np.int64)
        chosen = origin_members(self._all_roots(), hosts, codes)
        return sum(self.promote(doc) for doc in chosen)

    # -- reports -------------------------------------------------------------------------------
    def host_counts(self) -> dict[str, HostCounts]:
        """Counters of every host."""
        return {h: HostCounts(**vars(c)) for h, c in self._counts.items()}

    def mirror_evidence(self, min_pages: int = 0, share: float = 0.0) -> MirrorEvidence:
        """The mirror evidence (see the protocol)."""
        return self._ledger.evidence({h: c.pages for h, c in self._counts.items()}, min_pages, share)

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the largest ones (see the protocol)."""
        db = self._require()
        n = self._next
        if not n:
            return {}, []
        roots = self._all_roots()
        status = np.zeros(n, dtype=np.uint8)
        similarity = np.zeros(n, dtype=np.float32)
        hamming = np.zeros(n, dtype=np.int16)
        # damaged values (text in a number column: SQLite keeps it) are shown as unknown
        for doc, st, sim, ham in db.execute(
            "SELECT id, "
            "CASE WHEN typeof(status) = 'integer' AND status BETWEEN 0 AND 2 THEN status ELSE 255 END, "
            "CASE WHEN typeof(similarity) IN ('real', 'integer') AND similarity BETWEEN 0 AND 1 "
            "THEN similarity END, "
            "CASE WHEN typeof(hamming) = 'integer' AND hamming BETWEEN -1 AND 64 THEN hamming ELSE -1 END "
            "FROM docs"
        ):
            status[doc] = st
            similarity[doc] = float("nan") if sim is None else sim
            hamming[doc] = ham
        return summarize_clusters(
            roots,
            status=status,
            similarity=similarity,
            hamming=hamming,
            max_clusters=max_clusters,
            max_members=max_members,
            describe=self._describe,
            singletons=singletons,
        )

    def save_url_rules(self, writer: str, state: bytes) -> None:
        """Keep a process's duplicate-url rules in the file (committed with the open batch)."""
        db = self._require()
        try:
            if not db.in_transaction:
                db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT OR REPLACE INTO url_rules VALUES (?, ?)", (writer, bytes(state)))
            if self._pending == 0:
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

    def _describe(self, ids: Sequence[int]) -> list[tuple[str, str]]:
        db = self._require()
        found: dict[int, tuple[str, str]] = {}
        id_list = list(ids)
        for start in range(0, len(id_list), _CHUNK):
            part = id_list[start : start + _CHUNK]
            marks = ",".join("?" * len(part))
            for doc, url, host in db.execute(f"SELECT id, url, host FROM docs WHERE id IN ({marks})", part):
                found[int(doc)] = (from_db(url), self._host_names.get(host, "") if type(host) is int else "")
        return [found.get(i, ("", "")) for i in id_list]

    def _begin(self) -> None:
        if self._pending == 0:
            db = self._require()
            if not db.in_transaction:
                db.execute("BEGIN IMMEDIATE")
            self._batch_started = time.monotonic()

    def _after_write(self) -> None:
        self._pending += 1
        if self._pending >= self.batch_size or time.monotonic() - self._batch_started >= self.batch_seconds:
            self._flush()

    def _flush(self) -> None:
        db = self._require()
        ledger = self._ledger
        hosts = self._dirty_hosts | ledger.dirty_hosts
        if hosts or ledger.dirty_clusters or ledger.dropped_clusters:
            if not db.in_transaction:
                db.execute("BEGIN IMMEDIATE")
            for h in hosts:
                self._host_id(h)
            db.executemany(
                'UPDATE hosts SET pages=?, "unique"=?, exact=?, near=?, skipped=?, bytes=?, '
                "duplicate_bytes=?, revisits=?, documents=?, duplicated=? WHERE id=?",
                [
                    (
                        *(getattr(self._counts[h], c) for c in _COUNTERS),
                        ledger.documents.get(h, 0),
                        ledger.duplicated.get(h, 0),
                        self._host_ids[h],
                    )
                    for h in sorted(hosts)
                ],
            )
            ids = self._host_ids
            for table, source in (("shared", ledger.shared), ("canonical", ledger.canonical)):
                dirty = sorted(ledger.dirty_hosts)
                rows = [(ids[h], ids[o], n) for h in dirty for o, n in source.get(h, {}).items()]
                db.executemany(f"DELETE FROM {table} WHERE host=?", [(ids[h],) for h in dirty])
                db.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)
            gone = sorted(ledger.dropped_clusters | ledger.dirty_clusters)
            db.executemany("DELETE FROM clusters WHERE root=?", [(r,) for r in gone])
            db.executemany(
                "INSERT INTO clusters VALUES (?, ?, ?)",
                [
                    (root, ids[h], n)
                    for root in sorted(ledger.dirty_clusters)
                    for h, n in ledger.cluster_hosts.get(root, {}).items()
                ],
            )
            self._dirty_hosts.clear()
            ledger.clear_dirty()
        if db.in_transaction:
            db.execute("COMMIT")
        self._pending = 0

    def _host_id(self, host: str) -> int:
        host_id = self._host_ids.get(host)
        if host_id is None:
            db = self._require()
            cursor = db.execute("INSERT INTO hosts (name) VALUES (?)", (to_db(host),))
            host_id = int(cursor.lastrowid or 0)
            self._host_ids[host] = host_id
            self._host_names[host_id] = host
            self._counts.setdefault(host, HostCounts())
        return host_id

    def _host_of_doc(self, doc_id: int) -> str:
        return self._host_names.get(int(self._doc_hosts[doc_id]), "")

    def _find(self, doc_id: int) -> int:
        # Path compression in memory only; the file keeps its parents.
        return find_root(self._parents, doc_id, self._next)

    def _all_roots(self) -> I64Array:
        roots, broken = all_roots(self._parents[: self._next].astype(np.int64))
        for root in broken:
            self._parents[root] = root
        return roots

    def _advance_frontier(self, force: bool = False) -> None:
        """Move the expiry frontier: the first id added after ``now - ttl``."""
        now = time.monotonic()
        if not force and now - self._frontier_checked < 1.0:
            return
        self._frontier_checked = now
        assert self.ttl is not None
        row = (
            self._require()
            .execute(
                "SELECT id FROM docs WHERE id >= ? AND added >= ? ORDER BY id LIMIT 1",
                (self._frontier, time.time() - self.ttl),
            )
            .fetchone()
        )
        self._frontier = int(row[0]) if row is not None else self._next

    def _prune_expired(self) -> None:
        """Delete bucket rows and signatures of expired pages (run at open)."""
        if self._frontier <= 0:
            return
        db = self._require()
        db.execute("BEGIN IMMEDIATE")
        removed = db.execute("DELETE FROM buckets WHERE doc < ?", (self._frontier,)).rowcount
        db.execute("UPDATE docs SET signature=NULL WHERE id < ? AND signature IS NOT NULL", (self._frontier,))
        db.execute("COMMIT")
        if removed:
            logger.info("neardup: forgot %d bucket entries of pages older than the ttl", removed)
