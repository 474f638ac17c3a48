"""The disk store's hosts in memory: their ids, counters and mirror evidence.

Read from the file at open, kept in memory so mirror decisions need no query, and written back
with each batch (:meth:`HostTable.write`): the ``hosts`` table's counters and the ``clusters``,
``shared`` and ``canonical`` tables of the :class:`~neardup_scrapy.core.mirrors.MirrorLedger`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from neardup_scrapy.core.mirrors import MirrorLedger

from .base import HostCounts
from .sqlite_format import from_db, to_db

_COUNTERS = ("pages", "unique", "exact", "near", "skipped", "bytes", "duplicate_bytes", "revisits")


def _count(value: Any) -> int:
    """A counter as stored; a damaged one (not a non-negative integer) counts 0."""
    return value if type(value) is int and value >= 0 else 0


class HostTable:
    """Host ids and names, per-host counters and the mirror ledger of one disk index."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: dict[int, str] = {}
        self.counts: dict[str, HostCounts] = {}
        self.ledger = MirrorLedger()
        #: hosts whose counters changed since the last :meth:`write`
        self.dirty: set[str] = set()

    def load(self, db: sqlite3.Connection) -> None:
        """Read the hosts, their counters and the mirror evidence from the file."""
        ledger = self.ledger
        for row in db.execute(
            'SELECT id, name, pages, "unique", exact, near, skipped, bytes, duplicate_bytes, documents, '
            "duplicated, revisits FROM hosts"
        ):
            host_id, name = int(row[0]), from_db(row[1])
            self.ids[name] = host_id
            self.names[host_id] = name
            self.counts[name] = HostCounts(
                **{c: _count(v) for c, v in zip(_COUNTERS, (*row[2:9], row[11]), strict=True)}
            )
            if _count(row[9]):
                ledger.documents[name] = _count(row[9])
            if _count(row[10]):
                ledger.duplicated[name] = _count(row[10])
        names = self.names
        for root, host_id, n in db.execute("SELECT root, host, n FROM clusters"):
            if type(root) is int and host_id in names:
                ledger.cluster_hosts.setdefault(root, {})[names[host_id]] = _count(n)
        for table, target in (("shared", ledger.shared), ("canonical", ledger.canonical)):
            for host_id, other_id, n in db.execute(f"SELECT host, other, n FROM {table}"):
                if host_id in names and other_id in names:
                    target.setdefault(names[host_id], {})[names[other_id]] = _count(n)

    def host_id(self, db: sqlite3.Connection, host: str) -> int:
        """The id of ``host``, added to the file's ``hosts`` table when new."""
        host_id = self.ids.get(host)
        if host_id is None:
            cursor = db.execute("INSERT INTO hosts (name) VALUES (?)", (to_db(host),))
            host_id = int(cursor.lastrowid or 0)
            self.ids[host] = host_id
            self.names[host_id] = host
            self.counts.setdefault(host, HostCounts())
        return host_id

    def write(self, db: sqlite3.Connection) -> None:
        """Write the changed counters and mirror evidence (in a transaction, begun if none is open)."""
        ledger = self.ledger
        hosts = self.dirty | ledger.dirty_hosts
        if not (hosts or ledger.dirty_clusters or ledger.dropped_clusters):
            return
        if not db.in_transaction:
            db.execute("BEGIN IMMEDIATE")
        for h in hosts:
            self.host_id(db, h)
        db.executemany(
            'UPDATE hosts SET pages=?, "unique"=?, exact=?, near=?, skipped=?, bytes=?, '
            "duplicate_bytes=?, revisits=?, documents=?, duplicated=? WHERE id=?",
            [
                (
                    *(getattr(self.counts[h], c) for c in _COUNTERS),
                    ledger.documents.get(h, 0),
                    ledger.duplicated.get(h, 0),
                    self.ids[h],
                )
                for h in sorted(hosts)
            ],
        )
        ids = self.ids
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
        self.dirty.clear()
        ledger.clear_dirty()
