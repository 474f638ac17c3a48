"""Opening a disk index: the file created, or its parameters and integrity checked.

The store (:mod:`.sqlite`) reads what it keeps in memory inside the same opening transaction,
so a file that cannot be read is refused as one that cannot be opened.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from typing import Any

from .base import ParameterMismatchError, StorageError, compare_parameters
from .sqlite_format import FORMAT, SCHEMA, text_of


def open_index(
    path: str, wanted: dict[str, Any], load: Callable[[sqlite3.Connection], None]
) -> sqlite3.Connection:
    """Create the file at ``path`` or open it and check its parameters, then ``load(db)``.

    Raises:
        ParameterMismatchError: the file was built with other parameters.
        StorageError: the file cannot be opened (not a database, damaged, locked by another
            process) or ``load`` failed.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        db = sqlite3.connect(path, timeout=2.0, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(f"cannot open the neardup index {path}: {exc}") from exc
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
            check_integrity(db, path)
            stored = json.loads(row[0])
            differences = compare_parameters(stored, wanted)
            if differences:
                db.execute("ROLLBACK")
                db.close()
                raise ParameterMismatchError(path, differences)
        db.execute("COMMIT")
        load(db)
    except (sqlite3.DatabaseError, ValueError, StorageError) as exc:
        db.close()
        if isinstance(exc, StorageError):
            raise
        if "locked" in str(exc):
            raise StorageError(
                f"the neardup index {path} is in use by another process "
                "(one process per disk index; use NEARDUP_STORAGE='redis' to share an index)"
            ) from exc
        raise StorageError(f"cannot open the neardup index {path}: {exc}") from exc
    return db


def check_integrity(db: sqlite3.Connection, path: str) -> None:
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
            f"the neardup index {path} is damaged (SQLite integrity check: {'; '.join(problems)}); "
            "move the file away to start a new index (the pages it holds are then forgotten), or put "
            "back a copy"
        )


def prune_expired(db: sqlite3.Connection, frontier: int) -> int:
    """Delete the bucket rows and signatures of the pages below ``frontier`` (expired); the
    number of bucket rows deleted."""
    db.execute("BEGIN IMMEDIATE")
    removed = int(db.execute("DELETE FROM buckets WHERE doc < ?", (frontier,)).rowcount)
    db.execute("UPDATE docs SET signature=NULL WHERE id < ? AND signature IS NOT NULL", (frontier,))
    db.execute("COMMIT")
    return removed
