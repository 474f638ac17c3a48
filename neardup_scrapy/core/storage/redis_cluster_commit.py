"""Lookups and commits on a Redis Cluster (:mod:`.redis_cluster`): a lookup's token (the commit
counter before it, the buckets it read, the committed pages it saw) and the commit that checks it on the
serialisation slot ``{P}`` (commit counter, commit log, page table); then what follows from a commit."""

from __future__ import annotations

import logging
import struct
import time
from typing import Any

import numpy as np

from .base import MAX_CANDIDATES, Commit, CommitResult, I64Array, U64Array, pinned_keys, rank_candidates
from .redis_base import RedisBase
from .redis_cluster_counts import ClusterCounts
from .redis_cluster_layout import ClusterToken
from .redis_cluster_records import ClusterRecords
from .redis_cluster_scripts import ClusterScripts
from .redis_common import RECORD_HEAD, STATUS_CHAR, UNIQUE_TAIL, bucket_fields, pack_record, redis_bytes

logger = logging.getLogger(__name__)


class ClusterCommits:
    """Lookups, commits and promotions of the index of ``store``; ``snapshot``: the commit counter as
    last read (the next lookup's), ``next_id``: the doc id taken in advance (``-1``: none)."""

    def __init__(
        self,
        store: RedisBase,
        scripts: ClusterScripts,
        records: ClusterRecords,
        counts: ClusterCounts,
        log_size: int,
    ) -> None:
        self._store = store
        self._scripts = scripts
        self._records = records
        self._counts = counts
        self.log_size = log_size
        self.snapshot: int | None = None
        self.next_id = -1

    def begin(self, *, alloc: bool) -> None:
        """Read the commit counter (the next lookup's snapshot) and, with ``alloc``, take a doc id."""
        seq, doc, seconds, micros = self._scripts.eval(
            "begin", self._store.key_base, [self._store.key_base, int(alloc)], "lookup"
        )
        self.snapshot = int(seq)
        if int(doc) >= 0:
            self.next_id = int(doc)
        self._store.commit_state.clock_offset = int(seconds) + int(micros) / 1e6 - time.time()

    def release(self) -> None:
        """Give back an unused doc id when nobody took one since."""
        if self.next_id >= 0:
            try:
                self._store.client.execute_command(
                    "EVALSHA",
                    self._scripts.shas["release"],
                    1,
                    f"{self._store.key_base}:m",
                    self._store.key_base,
                    self.next_id,
                )
            except Exception:
                logger.debug("neardup: could not give back doc id %d", self.next_id, exc_info=True)
            self.next_id = -1

    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Committed candidates of ``keys`` and a :class:`ClusterToken`; records cached for :meth:`fetch`."""
        if self.snapshot is None:
            self.begin(alloc=False)
        assert self.snapshot is not None
        snapshot = self.snapshot
        fields = bucket_fields(keys)
        values = self._records.read_buckets(fields)
        per_bucket = [np.frombuffer(v, dtype="<u4").astype(np.int64) for v in values]
        found = np.unique(np.concatenate(per_bucket)) if per_bucket else np.empty(0, dtype=np.int64)
        self._store.records_cache.clear()
        live = self._records.load([int(d) for d in found], prefetch=self._store.prefetch)
        seen = np.array(sorted(live), dtype=np.int64)
        token = ClusterToken(snapshot, b"".join(fields), seen.astype("<u4").tobytes())
        if len(seen):
            self._store.commit_state.last_doc = max(self._store.commit_state.last_doc, int(seen[-1]))
        if len(seen) > MAX_CANDIDATES:
            pinned = pinned_keys(keys).tolist()
            kept = [np.intersect1d(ids, seen) for ids in per_bucket]
            ranked = rank_candidates(
                np.concatenate([k for k, pin in zip(kept, pinned, strict=True) if pin] or [seen[:0]]),
                np.concatenate([k for k, pin in zip(kept, pinned, strict=True) if not pin] or [seen[:0]]),
            )
            return np.intersect1d(seen, ranked), token
        return seen, token

    def commit(self, commit: Commit) -> CommitResult | None:
        """Write the page's record and bucket entries, then commit it on ``{P}``; ``None`` on conflict."""
        record = commit.record
        skipped = commit.status == "skipped" or record is None
        token = commit.token if isinstance(commit.token, ClusterToken) else None
        doc, given = -1, -1
        written = named = payload = b""
        if not skipped and record is not None:
            if self.next_id < 0:
                self.begin(alloc=True)
            doc, given = self.next_id, record.parent if record.parent >= 0 else -1
            self.next_id = -1  # taken: whatever happens, not used twice
            fields = bucket_fields(commit.keys) if len(commit.keys) else []
            written = b"".join(fields)
            payload = pack_record(record)
            read = None
            if commit.named_key is not None and given >= 0:
                read = bucket_fields(np.array([commit.named_key], dtype=np.uint64))[0]
            named = self._records.write(doc, payload, fields, read=read)
        unions = b"".join(struct.pack("<ii", int(a), int(b)) for a, b in commit.unions)
        self._store.commit_state.seq += 1
        args: list[Any] = [
            self._store.key_base,
            token.snapshot if token else (self.snapshot or 0),
            written,
            struct.pack("<ii", doc, given),
            redis_bytes(commit.host),
            STATUS_CHAR[
                commit.status if commit.status == "revisit" else "skipped" if skipped else commit.status
            ],
            redis_bytes(commit.canonical_host or ""),
            int(commit.nbytes),
            unions,
            token.fields if token else b"",
            self._store.client_id,
            self._store.commit_state.seq,
            0,
            token.seen if token else b"",
            self.log_size,
            # a page that writes nothing keeps the id the client holds (a new one each time left
            # a gap of 8 bytes in the page table per skipped page or revisit)
            1 if not skipped or self.next_id < 0 else 0,
            named,
        ]
        if token is None and not skipped:
            args[9] = written  # no lookup: any page entering these buckets since the snapshot conflicts
        reply = self._scripts.eval("commit", self._store.key_base, args, "commit", deadline_at=12)
        self._store.records_cache.clear()
        self.snapshot = int(reply[2])
        if int(reply[3]) >= 0:
            if self.next_id >= 0:  # a replayed reply handed out a second id: give none back, use the new
                self._records.orphans.append(self.next_id)
            self.next_id = int(reply[3])
        if int(reply[0]) == -2:
            self._store.conflicts += 1
            self._records.orphans.append(doc)
            return None
        old_root = int(reply[4]) if len(reply) > 4 else -1
        pages = self._counts.apply(bytes(reply[5]) if len(reply) > 5 else b"", commit.host)
        if old_root >= 0:  # promoted on {P}: now the records' heads
            self._records.set_tails({doc: UNIQUE_TAIL, old_root: payload[4:8]})
        result = self._store.commit_result(reply)
        return CommitResult(doc_id=result.doc_id, host_pages=pages, promoted=old_root >= 0)

    def promote(self, docs: list[int]) -> int:
        if not docs:
            return 0
        heads = self._records.heads(docs)
        args: list[Any] = [self._store.key_base]
        for doc, head in zip(docs, heads, strict=True):
            if len(head) >= 16:
                args += [doc, RECORD_HEAD.unpack(bytes(head))[1]]
        if len(args) == 1:
            return 0
        tails = {doc: bytes(head)[4:8] for doc, head in zip(docs, heads, strict=True) if len(head) >= 16}
        pairs, deltas = self._scripts.eval("promote", self._store.key_base, args, "promote")
        self._counts.apply(bytes(deltas))
        changed = [(int(pairs[k]), int(pairs[k + 1])) for k in range(0, len(pairs), 2)]
        new_tails: dict[int, bytes] = {}
        for doc, root in changed:
            new_tails[doc] = UNIQUE_TAIL
            new_tails[root] = tails[doc]
        self._records.set_tails(new_tails)
        return len(changed)


__all__ = ["ClusterCommits"]
