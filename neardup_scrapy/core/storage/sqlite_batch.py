"""The disk store's write batches: pages applied inside one transaction, committed together."""

from __future__ import annotations

import sqlite3
import time

from .sqlite_hosts import HostTable


class WriteBatch:
    """The open transaction of a disk index, committed with the host counters and mirror
    evidence changed meanwhile."""

    def __init__(self, hosts: HostTable) -> None:
        self.hosts = hosts
        #: writes since the last commit
        self.pending = 0
        self._started = 0.0

    def begin(self, db: sqlite3.Connection) -> None:
        """Open the batch's transaction before its first write."""
        if self.pending == 0:
            if not db.in_transaction:
                db.execute("BEGIN IMMEDIATE")
            self._started = time.monotonic()

    def wrote(self, db: sqlite3.Connection, size: int, seconds: float) -> None:
        """Count a write; commit when the batch holds ``size`` writes or is ``seconds`` old."""
        self.pending += 1
        if self.pending >= size or time.monotonic() - self._started >= seconds:
            self.commit(db)

    def commit(self, db: sqlite3.Connection) -> None:
        """Write the changed counters and commit the open transaction."""
        self.hosts.write(db)
        if db.in_transaction:
            db.execute("COMMIT")
        self.pending = 0
