"""Page records and bucket entries on a Redis Cluster (:mod:`.redis_cluster`): the group scripts
that read and add bucket entries, the hashes of records, and the records' heads."""

from __future__ import annotations

import math
import struct
from typing import Any

from .base import StorageError
from .cluster_codec import record_in, shard_field
from .redis_base import RedisBase
from .redis_cluster_layout import ClusterLayout, field_group
from .redis_cluster_scripts import ClusterScripts


class ClusterRecords:
    """Records and bucket entries of the index of ``store``; ``orphans``: ids of records a conflict
    left, dropped with the next write."""

    def __init__(self, store: RedisBase, scripts: ClusterScripts, layout: ClusterLayout) -> None:
        self._store = store
        self._scripts = scripts
        self._layout = layout
        self.orphans: list[int] = []

    def read_buckets(self, fields: list[bytes]) -> list[bytes]:
        """The first ids of each bucket (``b""`` for none), one group script per group, pipelined."""
        by_group: dict[int, list[int]] = {}
        for k, field in enumerate(fields):
            by_group.setdefault(field_group(field, self._layout.groups), []).append(k)
        sha = self._scripts.shas["group_read"]
        order = sorted(by_group)

        def read(pipe: Any) -> None:
            for g in order:
                base = self._layout.group_bases[g]
                stored = [shard_field(fields[k], self._layout.groups) for k in by_group[g]]
                self._scripts.script_in(pipe, sha, base, base, *stored)

        replies = self._scripts.pipeline(read, "lookup")
        out: list[bytes] = [b""] * len(fields)
        for g, reply in zip(order, replies, strict=True):
            for k, value in zip(by_group[g], reply, strict=True):
                out[k] = bytes(value)
        return out

    def load(self, ids: list[int], *, prefetch: int) -> set[int]:
        """Which of ``ids`` are committed with a record; caches up to ``prefetch`` of their records."""
        if not ids:
            return set()
        first = ids[:prefetch]
        sha = self._scripts.shas["status"]

        def read(pipe: Any) -> None:
            self._scripts.script_in(pipe, sha, self._store.key_base, self._store.key_base, *ids)
            for doc in first:
                pipe.hget(*self._layout.record_at(doc)[:2])

        replies = self._scripts.pipeline(read, "fetch")
        roots = [int(r) for r in replies[0]]
        live: set[int] = set()
        later: list[int] = []
        for k, doc in enumerate(ids):
            if roots[k] < 0:
                continue  # not committed (being written, or left by a writer that crashed or conflicted)
            if k < len(first):
                rec = self.record_of(replies[1 + k], doc)
                if rec:
                    self._store.records_cache[doc] = (bytes(rec), roots[k])
                    live.add(doc)
            else:
                later.append(doc)
        if later:  # more candidates than prefetched: their records in one more round trip
            values = self._scripts.pipeline(
                lambda pipe: [pipe.hget(*self._layout.record_at(d)[:2]) for d in later], "fetch"
            )
            index = {d: k for k, d in enumerate(ids)}
            for doc, value in zip(later, values, strict=True):
                rec = self.record_of(value, doc)
                if rec:
                    self._store.records_cache[doc] = (bytes(rec), roots[index[doc]])
                    live.add(doc)
        return live

    def record_of(self, value: bytes | None, doc: int) -> bytes:
        """Page ``doc``'s record in the value of its field (``b""``: none there).

        Raises:
            StorageError: the field's value is damaged (its lengths do not add up).
        """
        try:
            return record_in(value, self._layout.record_at(doc)[2])
        except ValueError as exc:
            raise StorageError(
                f"the field of page {doc}'s record in the neardup index at {self._store.where}"
                f" is damaged ({exc})"
            ) from exc

    def write(self, doc: int, payload: bytes, fields: list[bytes], read: bytes | None = None) -> bytes:
        """The page's record and bucket entries (not committed yet), and drop records of conflicted
        ids; in the same pipeline, the first ids of bucket ``read`` (returned; ``b""``: none)."""
        by_group: dict[int, list[bytes]] = {}
        for field in fields:
            by_group.setdefault(field_group(field, self._layout.groups), []).append(
                shard_field(field, self._layout.groups)
            )
        sha = self._scripts.shas["group_add"]
        packed = struct.pack("<I", doc)
        ttl = (
            0
            if self._store.ttl is None or not math.isfinite(self._store.ttl)
            else max(1, math.ceil(self._store.ttl))
        )
        orphans = list(self.orphans)
        put = self._scripts.shas["record_put"]
        key, field, slot = self._layout.record_at(doc)
        dropped: dict[str, list[Any]] = {}
        for old in orphans:
            old_key, old_field, old_slot = self._layout.record_at(old)
            dropped.setdefault(old_key, []).extend((old_field, old_slot, b""))

        def write(pipe: Any) -> None:
            self._scripts.script_on_key(pipe, put, key, ttl, field, slot, payload)
            for g, group_fields in sorted(by_group.items()):
                base = self._layout.group_bases[g]
                self._scripts.script_in(
                    pipe, sha, base, base, self._layout.load, self._layout.maxval, packed, *group_fields
                )
            for old_key, triples in dropped.items():
                self._scripts.script_on_key(pipe, put, old_key, 0, *triples)
            if read is not None:
                base = self._layout.group_bases[field_group(read, self._layout.groups)]
                stored = shard_field(read, self._layout.groups)
                self._scripts.script_in(pipe, self._scripts.shas["group_read"], base, base, stored)

        replies = self._scripts.pipeline(write, "write")
        del self.orphans[: len(orphans)]
        return bytes(replies[-1][0]) if read is not None else b""

    def heads(self, ids: list[int]) -> list[bytes]:
        """The 16-byte heads of the records of ``ids`` (``b""`` for none): a script per hash of
        records, in pipelines of 1000 hashes."""
        by_key: dict[str, list[int]] = {}
        places: dict[str, list[Any]] = {}
        for k, doc in enumerate(ids):
            key, field, slot = self._layout.record_at(doc)
            by_key.setdefault(key, []).append(k)
            places.setdefault(key, []).extend((field, slot))
        keys = list(by_key)
        sha = self._scripts.shas["heads"]
        out: list[bytes] = [b""] * len(ids)
        for start in range(0, len(keys), 1000):
            part = keys[start : start + 1000]

            def fill(pipe: Any, part: list[str] = part) -> None:
                for key in part:
                    self._scripts.script_on_key(pipe, sha, key, *places[key])

            for key, reply in zip(part, self._scripts.pipeline(fill, "clusters"), strict=True):
                for k, head in zip(by_key[key], reply, strict=True):
                    out[k] = bytes(head)
        return out

    def set_tails(self, tails: dict[int, bytes]) -> None:
        """Bytes 4..7 of the records' heads (status, Hamming distance, similarity), by page."""
        by_key: dict[str, list[Any]] = {}
        for page, tail in tails.items():
            key, field, slot = self._layout.record_at(page)
            by_key.setdefault(key, []).extend((field, slot, tail))
        sha = self._scripts.shas["set_tail"]
        keys = list(by_key)
        for start in range(0, len(keys), 1000):
            part = keys[start : start + 1000]

            def fill(pipe: Any, part: list[str] = part) -> None:
                for key in part:
                    self._scripts.script_on_key(pipe, sha, key, *by_key[key])

            self._scripts.pipeline(fill, "promote")
        self._store.records_cache.clear()

    def per_key(self, command: str, keys: list[Any], args: tuple[Any, ...], what: str) -> list[Any]:
        """``command key *args`` for every key (a tuple: ``key field``), in pipelines of 1000."""
        out: list[Any] = []
        for start in range(0, len(keys), 1000):
            part = keys[start : start + 1000]

            def fill(pipe: Any, part: list[Any] = part) -> None:
                for key in part:
                    pipe.execute_command(command, *(key if isinstance(key, tuple) else (key,)), *args)

            out += self._scripts.pipeline(fill, what)
        return out


__all__ = ["ClusterRecords"]
