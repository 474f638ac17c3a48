"""Reading a disk index's page records: for verification, for the report and at open."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup_scrapy.core.minhash import STORED_DTYPE

from .base import (
    BUCKET_CAP,
    MAX_CANDIDATES,
    STATUS_NAMES,
    DocBatch,
    I64Array,
    StorageError,
    U64Array,
    pinned_keys,
    rank_candidates,
)
from .members import summarize_clusters
from .sqlite_format import bucket_key48, damaged_record_sql, from_db, record_damage

_CHUNK = 500  # ids per IN (...) query


def read_records(
    db: sqlite3.Connection,
    path: str,
    ids: Sequence[int],
    num_perm: int,
    *,
    host_names: Mapping[int, str],
    find: Callable[[int], int],
) -> DocBatch:
    """Records of ``ids`` (in that order, missing ones left out) with their cluster roots.

    Raises:
        StorageError: the query failed, or a record is damaged.
    """
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
        raise StorageError(f"neardup index {path}: fetch failed: {exc}") from exc
    present = [i for i in id_list if i in rows]
    n = len(present)
    signatures = np.zeros((n, num_perm), dtype=STORED_DTYPE)
    simhashes = np.zeros(n, dtype=np.uint64)
    added = np.zeros(n, dtype=np.float64)
    digests, urls, hosts, profiles, statuses = [], [], [], [], []
    for i, doc in enumerate(present):
        _, simhash, digest, signature, when, url, host, profile, status = rows[doc]
        damage = record_damage(rows[doc], num_perm)
        if damage:
            raise StorageError(
                f"the record of page {doc} in the neardup index at {path} is damaged ({damage}); "
                f"`neardup-scrapy check-index {path}` lists every damaged record"
            )
        if signature is not None:
            signatures[i] = np.frombuffer(signature, dtype=STORED_DTYPE)
        simhashes[i] = simhash & 0xFFFFFFFFFFFFFFFF
        added[i] = when
        digests.append(bytes(digest))
        urls.append(from_db(url))
        hosts.append(host_names.get(host, ""))
        profiles.append(bytes(profile or b""))
        statuses.append(STATUS_NAMES[status])
    return DocBatch(
        ids=np.array(present, dtype=np.int64),
        signatures=signatures,
        simhashes=simhashes,
        digests=digests,
        roots=np.array([find(i) for i in present], dtype=np.int64),
        added=added,
        urls=urls,
        hosts=hosts,
        profiles=profiles,
        statuses=statuses,
    )


def read_verdicts(
    db: sqlite3.Connection, n: int
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32], npt.NDArray[np.int16]]:
    """Status, similarity and Hamming distance of pages ``0 .. n - 1``; damaged values (text in a
    number column: SQLite keeps it) as unknown."""
    status = np.zeros(n, dtype=np.uint8)
    similarity = np.zeros(n, dtype=np.float32)
    hamming = np.zeros(n, dtype=np.int16)
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
    return status, similarity, hamming


def describe(
    db: sqlite3.Connection, ids: Sequence[int], host_names: Mapping[int, str]
) -> list[tuple[str, str]]:
    """``(url, host)`` of each of ``ids`` (``("", "")`` for a missing page)."""
    found: dict[int, tuple[str, str]] = {}
    id_list = list(ids)
    for start in range(0, len(id_list), _CHUNK):
        part = id_list[start : start + _CHUNK]
        marks = ",".join("?" * len(part))
        for doc, url, host in db.execute(f"SELECT id, url, host FROM docs WHERE id IN ({marks})", part):
            found[int(doc)] = (from_db(url), host_names.get(host, "") if type(host) is int else "")
    return [found.get(i, ("", "")) for i in id_list]


def read_parents(db: sqlite3.Connection, path: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """Every page's cluster parent (``-1`` when damaged) and host id (``-1`` when damaged).

    Raises:
        StorageError: the page ids are not dense.
    """
    rows = db.execute(
        "SELECT parent, CASE WHEN typeof(host) = 'integer' THEN host ELSE -1 END FROM docs ORDER BY id"
    ).fetchall()
    parents = np.array([p if isinstance(p, int) else -1 for (p, _) in rows], dtype=np.int64)
    hosts = np.array([h for (_, h) in rows], dtype=np.int32)
    (max_id,) = db.execute("SELECT max(id) FROM docs").fetchone()
    if max_id is not None and max_id + 1 != len(parents):
        raise StorageError(f"the neardup index {path} is inconsistent (ids not dense)")
    return parents, hosts


def count_damaged(db: sqlite3.Connection, num_perm: int) -> int:
    """Page records with values of the wrong type or size."""
    (damaged,) = db.execute(f"SELECT count(*) FROM docs WHERE {damaged_record_sql(num_perm)}").fetchone()
    return int(damaged)


def first_live(db: sqlite3.Connection, frontier: int, since: float) -> int | None:
    """The first page at or after ``frontier`` added at ``since`` or later (``None``: none)."""
    row = db.execute(
        "SELECT id FROM docs WHERE id >= ? AND added >= ? ORDER BY id LIMIT 1", (frontier, since)
    ).fetchone()
    return int(row[0]) if row is not None else None


def read_candidates(db: sqlite3.Connection, path: str, keys: U64Array, frontier: int) -> I64Array:
    """Ids at or after ``frontier`` in the buckets of ``keys``, ranked when there are too many
    (see :data:`~.base.MAX_CANDIDATES`).

    Raises:
        StorageError: the query failed.
    """
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
                (key, frontier, BUCKET_CAP),
            )
        ]
    except sqlite3.Error as exc:
        raise StorageError(f"neardup index {path}: lookup failed: {exc}") from exc
    docs = np.array([doc for (_, doc) in rows], dtype=np.int64)
    distinct = np.unique(docs)
    if len(distinct) <= MAX_CANDIDATES:
        return distinct
    pinned = {key for key, pin in zip(k48, pinned_keys(keys).tolist(), strict=True) if pin}
    is_pinned = np.array([key in pinned for (key, _) in rows], dtype=bool)
    return rank_candidates(docs[is_pinned], docs[~is_pinned])


def read_clusters(
    db: sqlite3.Connection,
    roots: I64Array,
    host_names: Mapping[int, str],
    *,
    max_clusters: int,
    max_members: int,
    singletons: bool,
) -> tuple[dict[int, int], list[dict[str, Any]]]:
    """Size histogram of the clusters of ``roots`` (every page's root) and the largest ones."""
    status, similarity, hamming = read_verdicts(db, len(roots))
    return summarize_clusters(
        roots,
        status=status,
        similarity=similarity,
        hamming=hamming,
        max_clusters=max_clusters,
        max_members=max_members,
        describe=lambda ids: describe(db, ids, host_names),
        singletons=singletons,
    )
