"""In-memory store (the default): numpy columns, an LSM multimap for buckets, union-find parents.

Per page it keeps: num_perm bytes of signature (128 at 128 permutations), 9 to 10 bytes
per bucket entry (one per MinHash band, SimHash table and url), the profile (about 100 to 140
bytes: the edit sketch and heading words), 16 bytes of digest, 8 of SimHash, ~20 of bookkeeping
and the url's bytes. The records' columns are in :mod:`.memory_columns`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from neardup_scrapy.core.chance import ChanceFilter
from neardup_scrapy.core.columns import Column
from neardup_scrapy.core.mirrors import MirrorEvidence, MirrorLedger
from neardup_scrapy.core.multimap import KeyMultimap

from .base import (
    BUCKET_CAP,
    MAX_CANDIDATES,
    STATUS_NAMES,
    Commit,
    CommitResult,
    DocBatch,
    HostCounts,
    I64Array,
    U64Array,
    pinned_keys,
    rank_candidates,
)
from .members import summarize_clusters
from .memory_columns import PageColumns
from .unionfind import all_roots, find_root, origin_members


class MemoryStorage:
    """The default store: everything in this process's memory, nothing persisted.

    Args:
        ttl: accepted for interface compatibility; expiry is applied by the detector, which
            ignores candidates older than its ``ttl``.
    """

    def __init__(self, ttl: float | None = None, **_: Any) -> None:
        self.ttl = ttl
        self._signature: dict[str, Any] | None = None
        self._buckets = KeyMultimap()
        self._hosts: dict[str, int] = {}
        self._host_names: list[str] = []
        self._host_counts: dict[str, HostCounts] = {}
        self._ledger = MirrorLedger()
        self._pages = PageColumns()
        self._parents = Column(np.int32)
        self._url_rules: dict[str, bytes] = {}

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, signature: Mapping[str, Any]) -> None:
        """Remember the parameters (nothing is persisted, so nothing can mismatch)."""
        self._signature = dict(signature)
        self._pages.open(int(signature.get("num_perm", 128)))

    def close(self) -> None:
        """Nothing to release."""

    def __len__(self) -> int:
        return len(self._pages)

    # -- the three calls per page --------------------------------------------------------------
    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Ids in the buckets of ``keys``; the token is unused (a single writer never conflicts)."""
        ids = self._buckets.lookup(keys, BUCKET_CAP)
        if len(ids) < 2:
            return ids.astype(np.int64), None
        # Few candidates as a rule: a set beats np.unique's sort machinery by microseconds.
        distinct = sorted(set(ids.tolist()))
        if len(distinct) <= MAX_CANDIDATES:
            return np.array(distinct, dtype=np.int64), None
        pinned = pinned_keys(keys)
        return rank_candidates(
            self._buckets.lookup(keys[pinned], BUCKET_CAP), self._buckets.lookup(keys[~pinned], BUCKET_CAP)
        ), None

    def fetch_candidates(self, ids: I64Array, chance: ChanceFilter) -> DocBatch | None:
        """:meth:`fetch` of ``ids`` less the chance hits, dropped before fetching
        (:meth:`drop_chance_hits`); ``None`` when none is left."""
        ids = self.drop_chance_hits(ids, chance)
        return self.fetch(ids) if len(ids) else None

    def flush(self) -> None:
        """Nothing to do: the store has no buffered writes."""

    def drop_chance_hits(self, ids: I64Array, chance: ChanceFilter) -> I64Array:
        """``ids`` without the pages that share only a SimHash block with the page by chance
        (:mod:`~neardup_scrapy.core.chance`), judged on the columns before anything is fetched."""
        return self._pages.drop_chance_hits(ids, chance)

    def lookup_or_insert(
        self, keys: U64Array, provisional: Commit
    ) -> tuple[I64Array, object, CommitResult | None]:
        """:meth:`lookup`, then :meth:`commit` of ``provisional`` if no bucket holds a page.

        One process, one writer: the two steps are atomic as they are. Calls ``self.lookup`` and
        ``self.commit``, so a subclass that wraps them (fault injection) still sees every call.
        """
        ids, token = self.lookup(keys)
        if len(ids):
            return ids, token, None
        return ids, token, self.commit(provisional)

    def fetch(self, ids: I64Array) -> DocBatch:
        """Records of ``ids`` with their cluster roots."""
        return self._pages.take(ids, self._find, self._host_names)

    def commit(self, commit: Commit) -> CommitResult:
        """Apply ``commit`` (never conflicts in one process)."""
        counts = self._host_counts.get(commit.host)
        if counts is None:
            counts = self._host_counts[commit.host] = HostCounts()
        if commit.status == "revisit":
            counts.revisits += 1
            return CommitResult(doc_id=-1, host_pages=counts.pages)
        if commit.status == "skipped" or commit.record is None:
            counts.skipped += 1
            return CommitResult(doc_id=-1, host_pages=counts.pages)
        record = commit.record
        host_id = self._host_id(record.host)
        doc_id = self._pages.append(record, host_id)
        self._parents.append(doc_id)
        for root, new_root in commit.unions:
            a, b = self._find(root), self._find(new_root)
            if a != b:
                self._ledger.union(a, self._host_at(a), b, self._host_at(b))
                self._parents[a] = b
        if record.parent >= 0:
            root = self._find(record.parent)
            self._ledger.join(root, self._host_at(root), record.host)
            self._parents[doc_id] = root
        else:
            self._ledger.new_document(record.host)
        if commit.canonical_host and commit.canonical_host != record.host:
            self._ledger.canonical_link(record.host, commit.canonical_host)
        self._ledger.clear_dirty()
        if len(commit.keys):
            self._buckets.add(commit.keys, doc_id)
        counts.pages += 1
        counts.bytes += commit.nbytes
        setattr(counts, commit.status, getattr(counts, commit.status) + 1)
        if commit.status != "unique":
            counts.duplicate_bytes += commit.nbytes
        promoted = (
            commit.named_key is not None and record.parent >= 0 and self._named(doc_id, commit.named_key)
        )
        return CommitResult(
            doc_id=doc_id, host_pages=counts.pages, promoted=promoted and self.promote(doc_id)
        )

    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` its cluster's representative (see the protocol)."""
        root = self._find(doc_id)
        if root == doc_id:
            return False
        status = self._pages.swap_verdicts(doc_id, root)
        self._parents[doc_id] = doc_id
        self._parents[root] = doc_id
        name = STATUS_NAMES[status]
        if name != "unique":
            promoted, demoted = (
                self._host_counts[self._host_at(doc_id)],
                self._host_counts[self._host_at(root)],
            )
            setattr(promoted, name, getattr(promoted, name) - 1)
            promoted.unique += 1
            demoted.unique -= 1
            setattr(demoted, name, getattr(demoted, name) + 1)
        self._ledger.rename(root, doc_id)
        self._ledger.clear_dirty()
        return True

    def _named(self, doc_id: int, key: int) -> bool:
        """Whether a page of ``doc_id``'s cluster is indexed under ``key`` (names it canonical)."""
        root = self._find(doc_id)
        ids = self._buckets.lookup(np.array([key], dtype=np.uint64), BUCKET_CAP).tolist()
        return any(self._find(int(i)) == root for i in ids if i != doc_id)

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol)."""
        codes = {
            self._hosts[m]: self._hosts[o]
            for m, o in origins.items()
            if m in self._hosts and o in self._hosts
        }
        if not codes or not len(self):
            return 0
        chosen = origin_members(self._all_roots(), self._pages.host_of.all().astype(np.int64), codes)
        return sum(self.promote(doc) for doc in chosen)

    # -- lookups for reports ---------------------------------------------------------------------
    def host_counts(self) -> dict[str, HostCounts]:
        """Counters of every host (live objects; do not modify)."""
        return self._host_counts

    def mirror_evidence(self, min_pages: int = 0, share: float = 0.0) -> MirrorEvidence:
        """The mirror evidence (see the protocol)."""
        return self._ledger.evidence({h: c.pages for h, c in self._host_counts.items()}, min_pages, share)

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the ``max_clusters`` largest (see the protocol)."""
        if not len(self):
            return {}, []
        return summarize_clusters(
            self._all_roots(),
            status=self._pages.status.all(),
            similarity=self._pages.similarity.all(),
            hamming=self._pages.hamming.all(),
            max_clusters=max_clusters,
            max_members=max_members,
            describe=lambda ids: [(self._pages.urls[i], self._host_at(i)) for i in ids],
            singletons=singletons,
        )

    def save_url_rules(self, writer: str, state: bytes) -> None:
        """Keep a process's duplicate-url rules with the index (in this process's memory)."""
        self._url_rules[writer] = bytes(state)

    def url_rules(self) -> dict[str, bytes]:
        """Every writer's duplicate-url rules."""
        return dict(self._url_rules)

    def memory_bytes(self) -> int:
        """Bytes held by the arrays of this store."""
        return self._pages.nbytes + self._parents.nbytes + self._buckets.nbytes

    # -- union-find ----------------------------------------------------------------------------
    def _find(self, doc_id: int) -> int:
        return find_root(self._parents, doc_id, len(self._parents))

    def _all_roots(self) -> I64Array:
        roots, broken = all_roots(self._parents.all())
        for root in broken:
            self._parents[root] = root
        return roots

    def _host_at(self, doc_id: int) -> str:
        return self._host_names[int(self._pages.host_of[doc_id])]

    def _host_id(self, host: str) -> int:
        host_id = self._hosts.get(host)
        if host_id is None:
            host_id = self._hosts[host] = len(self._host_names)
            self._host_names.append(host)
        return host_id
