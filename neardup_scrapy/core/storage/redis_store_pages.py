"""The calls per page of the single-server store (:mod:`.redis_store`): lookup, fetch and commit,
each one Lua script (see the module docstring of :mod:`.redis_store` for their atomicity)."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import (
    MAX_CANDIDATES,
    Commit,
    CommitResult,
    DocBatch,
    I64Array,
    U64Array,
    pinned_keys,
    rank_candidates,
)
from .redis_base import RedisBase
from .redis_common import STATUS_CHAR, bucket_fields, pack_record, redis_bytes
from .redis_store_scripts import ServerScripts

_NONE4 = b"\xff\xff\xff\xff"
_NO_IDS = np.empty(0, dtype="<u4")


class ServerPages:
    """Lookups, fetches and commits of pages in the index of ``store``, with ``scripts``."""

    def __init__(self, store: RedisBase, scripts: ServerScripts) -> None:
        self._store = store
        self._scripts = scripts

    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Candidates of ``keys`` in one round trip; their records are cached for :meth:`fetch`.

        Returns:
            ``(ids, token)``; the token holds each bucket's field and last id.
        """
        fields = bucket_fields(keys)
        answer = self._scripts.run("lookup", [self._store.prefix, self._store.prefetch, *fields], "lookup")
        return self._candidates(fields, answer, pinned_keys(keys).tolist())

    def lookup_or_insert(
        self, keys: U64Array, provisional: Commit
    ) -> tuple[I64Array, object, CommitResult | None]:
        """Like :meth:`lookup`; with no live page in the buckets, apply ``provisional`` in the same step.

        One Lua script, so one atomic round trip, for a page without candidate.

        Args:
            keys: the page's bucket keys, as for :meth:`lookup`.
            provisional: the page's commit as a "unique" page without candidate (its token is
                ignored: the buckets are read in the same atomic step).

        Returns:
            ``(ids, token, None)`` exactly like :meth:`lookup` when a candidate exists (nothing
            changed), else ``(no ids, None, result)`` where ``result`` is ``provisional``'s
            :class:`~.base.CommitResult`.
        """
        fields = bucket_fields(keys)
        args = [self._store.prefix, self._store.prefetch, *self._commit_args(provisional)[2:], *fields]
        answer = self._scripts.run("lookup_or_insert", args, "lookup", deadline_at=12)
        if answer[5]:
            self._store.records_cache.clear()
            return np.empty(0, dtype=np.int64), None, self._store.commit_result(answer[5])
        found, token = self._candidates(fields, answer, pinned_keys(keys).tolist())
        return found, token, None

    def fetch(self, ids: I64Array) -> DocBatch:
        """Records of ``ids`` with their roots; from the lookup snapshot when it has them all."""
        wanted = [int(i) for i in ids]
        missing = [i for i in wanted if i not in self._store.records_cache]
        if missing:
            recs, roots = self._scripts.run("fetch", [self._store.prefix, *missing], "fetch")
            for doc, rec, root in zip(missing, recs, roots, strict=True):
                if rec:
                    self._store.records_cache[doc] = (bytes(rec), int(root))
        present = [i for i in wanted if i in self._store.records_cache]
        return self._store.cached_batch(present)

    def commit(self, commit: Commit) -> CommitResult | None:
        """Apply ``commit`` in one atomic script; ``None`` if a bucket changed since the lookup."""
        reply = self._scripts.run("commit", self._commit_args(commit), "commit", deadline_at=12)
        self._store.records_cache.clear()
        if int(reply[0]) == -2:
            self._store.conflicts += 1
            return None
        return self._store.commit_result(reply)

    def _candidates(
        self, fields: list[bytes], answer: Sequence[Any], pinned: list[bool]
    ) -> tuple[I64Array, bytes]:
        """``(ids, token)`` from a lookup answer; caches the prefetched records for :meth:`fetch`.

        ``pinned``: which fields are exact-digest or url buckets (see :data:`~.base.MAX_CANDIDATES`).
        """
        values, ids, recs, roots, ncand = answer[:5]
        # each value: the bucket's first BUCKET_CAP ids, then its last id (see ``trimmed``)
        token = b"".join(fields) + b"".join(bytes(v[-4:]) if len(v) >= 4 else _NONE4 for v in values)
        self._store.records_cache.clear()
        candidates: list[int] = []
        if recs or not ids:
            for k, doc in enumerate(ids):
                rec = recs[k] if k < len(recs) else b""
                if rec:
                    self._store.records_cache[int(doc)] = (bytes(rec), int(roots[k]))
                    if k < ncand:
                        candidates.append(int(doc))
        else:  # too many candidates to prefetch: fetch() will ask
            candidates = [int(d) for d in ids[:ncand]]
        if candidates:
            self._store.commit_state.last_doc = max(self._store.commit_state.last_doc, *candidates)
        found = np.unique(np.array(candidates, dtype=np.int64))
        if len(found) > MAX_CANDIDATES:
            per_bucket = [np.frombuffer(bytes(v[:-4]), dtype="<u4") for v in values]
            ranked = rank_candidates(
                np.concatenate(
                    [ids for ids, pin in zip(per_bucket, pinned, strict=True) if pin] or [_NO_IDS]
                ),
                np.concatenate(
                    [ids for ids, pin in zip(per_bucket, pinned, strict=True) if not pin] or [_NO_IDS]
                ),
            )
            found = np.intersect1d(found, ranked)
        return found, token

    def _commit_args(self, commit: Commit) -> list[Any]:
        """ARGV 1..14 of the commit script (see ``lua/server_apply.lua``); takes the next sequence number."""
        record = commit.record
        skipped = commit.status == "skipped" or record is None
        if skipped or record is None:
            payload = b""
            fields = b""
        else:
            payload = pack_record(record)
            fields = b"".join(bucket_fields(commit.keys)) if len(commit.keys) else b""
        token = commit.token if isinstance(commit.token, bytes) else b""
        unions = b"".join(struct.pack("<ii", int(a), int(b)) for a, b in commit.unions)
        ttl = (
            0
            if self._store.ttl is None or not math.isfinite(self._store.ttl)
            else max(1, math.ceil(self._store.ttl))
        )
        self._store.commit_state.seq += 1
        return [
            self._store.prefix,
            token,
            fields,
            payload,
            redis_bytes(commit.host),  # any str, lone surrogates too (redis-py would refuse them)
            STATUS_CHAR[
                commit.status if commit.status == "revisit" else "skipped" if skipped else commit.status
            ],
            redis_bytes(commit.canonical_host or ""),
            int(commit.nbytes),
            unions,
            ttl,
            self._store.client_id,
            self._store.commit_state.seq,
            0,  # the deadline, set at each attempt
            bucket_fields(np.array([commit.named_key], dtype=np.uint64))[0]
            if commit.named_key is not None
            else b"",
        ]


__all__ = ["ServerPages"]
