"""Redis Cluster store: one shared index spread over a cluster (``NEARDUP_STORAGE = "redis-cluster"``).

A Lua script of Redis Cluster may touch keys of one hash slot only, so the single-server store
(:mod:`.redis_store`), whose scripts do a whole check in one atomic step, cannot run on a cluster.
This store splits the index by hash tags (``P`` is the prefix; it may not contain braces):

* ``{P}:*`` -- the *serialisation slot*, small: ``{P}:params``; ``{P}:m`` (hash: ``next`` doc id
  counter, ``seq`` commit counter, ``count`` pages, ``load``, ``maxval``, ``groups``, ``format``);
  ``{P}:t:<n>`` (strings of 2**20 ids each, the *page table*: 8 bytes per doc id, ``u32`` parent
  + 1 -- 0 while the page is not committed -- and ``u32`` host code + 1); ``{P}:hk``/``{P}:hv``
  (host <-> code);
  ``{P}:log`` (list, the *commit log*: per commit ``u32`` seq, ``u32`` doc id and the first 4
  bytes of each bucket field it wrote; the last ``log_size`` commits); the per-cluster host
  tables of the single-server store's mirror evidence, packed (``{P}:ch:<root // 128>``, field
  ``<root>``: ``u32`` host code and ``u32`` pages per host, some 20 bytes per cluster of several
  pages where a hash per cluster cost ~100) and ``{P}:n:<client>`` for idempotent retries. Per
  page it holds 8 bytes (the page table) and at most one packed host table: everything else a
  page writes goes to the groups' slots.
* ``{T_k}:*`` -- bucket *group* ``k`` of ``groups`` (256), ``T_k`` = ``P:g<k>:<j>`` chosen so that
  the groups' slots are evenly spaced (:func:`spread_tags`: group ``k`` in the ``k``-th of 256
  equal ranges of slots, so primaries owning equal ranges own equal numbers of groups; hashed at
  random, 6 primaries got 43 +- 6.5 groups each). A bucket field (6 bytes, as in the
  single-server store) belongs to group ``u16(field[4:6]) mod groups``; each group is a small
  linear-hashing table of its own (``{T_k}:m`` level/split pointer/bucket count,
  ``{T_k}:s:<n>`` shards, strings of (field, ``u32`` id) entries, the field without the byte
  its group fixes (:mod:`.cluster_codec`); ``{T_k}:o:<field>`` overflowed buckets), so a split
  moves fields between keys of one slot.
* ``{T_k}:r:<n>`` -- page records (packed as in the single-server store), 256 per hash, four to
  a field (:mod:`.cluster_codec`): hash ``n = id // 256`` on group ``159 n mod groups``'s slot,
  field ``<(id // 4) mod 64>``, slot ``id mod 4`` in it. Consecutive hashes jump over the slot
  space (a golden-ratio stride), so any number of them is spread. A key per record costs Redis
  about 110 bytes (key, object, entry, the cluster's slot index) beside the record; a field of
  its own about 88 with the allocator's rounding; a share of a field of four about 50.
* ``{T_h}:hc``, ``{T_h}:sh:<host>``, ``{T_h}:cn:<host>`` -- the single-server store's host
  counters and mirror evidence (same fields), each host's on group ``h = crc32(host) mod
  groups``; ``{T_h}:n:<client>`` the last counter batch of a client applied there.

A check takes these round trips (one cluster pipeline each; its commands go to their nodes):

1. *lookup*: one group script per group of the page's buckets reads the buckets (first
   :data:`~.base.BUCKET_CAP` ids each); then, when they hold ids, one script on ``{P}`` answers
   which are committed and their cluster roots (page table), pipelined with the GETs of records.
   The lookup's *snapshot* ``s`` is the commit counter as the store last read it on ``{P}``
   (always before the bucket reads); the token is ``(s, looked-up fields, seen)``, ``seen`` the
   committed ids the lookup found.
2. *write*: the page's record and its bucket entries (group scripts), under a doc id taken from
   ``{P}`` in advance (every reply from ``{P}`` hands the client its next id). Not committed yet:
   readers ignore it.
3. *commit*: one script on ``{P}`` refuses ("conflict", the detector checks again) when a commit
   log entry with ``seq > s`` wrote a bucket the lookup read and is not in ``seen``; otherwise it
   appends its own entry, marks the page committed in the page table and applies unions and the
   per-cluster host tables -- the single-server store's Lua, whose changes to host counters and
   mirror evidence it returns as *deltas* (host, field, n) instead of applying them.
4. *counts*: the deltas, one script per group slot of their hosts (pipelined). They are sums,
   so their order does not matter; each batch carries the client's batch number, and a group
   that has applied it skips it (a retry adds nothing twice). A batch that fails waits for the
   next commit (the commit stands); a process that dies before it loses those counts, not the
   page. The counts take no part in the conflict check: steps 1 and 3 decide a verdict.

Why two processes never both record an original (the verdicts are those of one process checking
the pages in commit order): take two commits ``A`` before ``B`` (``seq_A < seq_B``), ``A`` having
written a bucket that ``B`` looked up. If ``seq_A <= s_B``, ``A`` committed before ``B`` read
``s_B``, so before ``B`` read the buckets, and ``A``'s entries (written before its commit) and its
committed mark were there for ``B`` to see. If ``seq_A > s_B``, ``B``'s commit only passed with
``A`` in ``seen``. Either way ``B`` decided knowing ``A``; and ``B`` saw only pages committed before
its own commit. A log shorter than ``seq - s`` entries counts as a conflict. A writer that dies
between steps 2 and 3 leaves an uncommitted record and entries that every reader ignores; a
conflicting writer drops its record and takes a new id, so ids have gaps, ``len()`` counts pages.

Faults: as the single-server store (retries with backoff, then :class:`~.base.StorageError`, a
cooldown, idempotent commits with deadlines); a failover is ridden out by redis-py's cluster
retries (it follows ``MOVED`` and refreshes the slot map) and ours. Expiry (``ttl``): readers
skip records older than ``ttl`` (their time added); a hash of records expires ``ttl`` after the
last record written to it (Redis 7.0 has no expiry per field), so the memory of a record is
given back at most ``ttl`` plus the time its hash took to fill; bucket entries are not pruned.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from neardup_scrapy.core.mirrors import MirrorEvidence

from .base import (
    Commit,
    CommitResult,
    DocBatch,
    HostCounts,
    I64Array,
    ParameterMismatchError,
    StorageError,
    U64Array,
    fetch_without_chance_hits,
)
from .cluster_codec import INLINE_BYTES, SHARD_LOAD
from .redis_base import RedisBase
from .redis_cluster_commit import ClusterCommits
from .redis_cluster_counts import ClusterCounts
from .redis_cluster_export import ClusterExports
from .redis_cluster_layout import GROUPS, LOG_SIZE, MAX_GROUPS, ClusterLayout, ClusterToken, spread_tags
from .redis_cluster_records import ClusterRecords
from .redis_cluster_scripts import ClusterScripts
from .redis_common import reply_text, safe_url

if TYPE_CHECKING:
    from neardup_scrapy.core.chance import ChanceFilter

logger = logging.getLogger(__name__)

DEFAULT_CLUSTER_URL = "redis://127.0.0.1:7000/0"
FORMAT = "neardup-redis-cluster/5"


class RedisClusterStorage(RedisBase):
    """A near-duplicate index spread over a Redis Cluster (see the module docstring).

    Args:
        url: any node of the cluster (``redis://[:password@]host:port``), as
            ``redis.cluster.RedisCluster.from_url`` takes it.
        prefix: key prefix (no ``{`` or ``}``); one index per prefix.
        ttl: seconds after which pages are forgotten (``None``: never).
        groups: bucket groups (hash tags) of a new index; an existing one keeps its own.
        log_size: commits kept in the commit log (a lookup older than that many commits conflicts).
        **kwargs: as :class:`~.redis_store.RedisStorage` (``retry``, ``socket_timeout``,
            ``connect_timeout``, ``prefetch``, ``cooldown``, ``client`` -- a ``RedisCluster``).
    """

    def __init__(
        self,
        url: str = DEFAULT_CLUSTER_URL,
        prefix: str = "neardup",
        ttl: float | None = None,
        *,
        groups: int = GROUPS,
        log_size: int = LOG_SIZE,
        **kwargs: Any,
    ) -> None:
        if "{" in prefix or "}" in prefix:
            raise StorageError(f"the redis-cluster store's prefix may not contain braces: {prefix!r}")
        super().__init__(url, prefix=prefix, ttl=ttl, **kwargs)
        self._base = "{" + prefix + "}"
        self.log_size = max(16, int(log_size))
        self._layout = ClusterLayout(max(1, min(MAX_GROUPS, int(groups))))
        self._scripts = ClusterScripts(self)
        self._records = ClusterRecords(self, self._scripts, self._layout)
        self._counts = ClusterCounts(self, self._scripts, self._layout)
        self._commits = ClusterCommits(self, self._scripts, self._records, self._counts, self.log_size)
        self._exports = ClusterExports(self, self._scripts, self._layout, self._records, self._commits)

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, signature: Mapping[str, Any]) -> None:
        """Connect to the cluster, create the index or check its recorded parameters.

        Raises:
            ParameterMismatchError: the index under this prefix was built with other parameters.
            StorageError: the cluster cannot be reached.
        """
        if self._opened:
            return
        import redis
        from redis.cluster import RedisCluster
        from redis.exceptions import (
            ClusterDownError,
            MasterDownError,
            RedisClusterException,
            SlotNotCoveredError,
            TryAgainError,
        )

        self._transient = (
            redis.ConnectionError,
            redis.TimeoutError,
            redis.BusyLoadingError,
            ClusterDownError,
            TryAgainError,
            MasterDownError,
            SlotNotCoveredError,
            OSError,
        )
        if self._client is None:
            try:
                self._client = RedisCluster.from_url(
                    self.url,
                    socket_timeout=self.socket_timeout,
                    socket_connect_timeout=self.connect_timeout,
                )
            except ValueError as exc:
                # not chained: the parser's error may quote the url's parts (a traceback would show them)
                raise StorageError(f"invalid Redis url {safe_url(self.url)}: {self.said(exc)}") from None
            except (redis.RedisError, RedisClusterException) as exc:
                raise StorageError(
                    f"cannot reach the Redis Cluster at {safe_url(self.url)}: {self.said(exc)}"
                ) from exc
        try:
            self._scripts.load()
        except (redis.RedisError, RedisClusterException) as exc:
            raise StorageError(
                f"cannot reach the Redis Cluster at {safe_url(self.url)}: {self.said(exc)}"
            ) from exc
        wanted = {k: json.loads(json.dumps(v, allow_nan=False)) for k, v in signature.items()}
        self._init_args = [self._base, FORMAT, SHARD_LOAD, INLINE_BYTES, self._layout.groups]
        for name, value in sorted(wanted.items()):
            self._init_args += [name, json.dumps(value, allow_nan=False)]
        self._wanted = wanted
        self._init_index()
        self._num_perm = int(wanted.get("num_perm", 128))
        self._commits.begin(alloc=False)
        self._opened = True

    def _init_index(self) -> None:
        stored_raw, limits, layout = self._scripts.eval("init", self._base, self._init_args, "open")
        if reply_text(layout) != FORMAT:
            raise ParameterMismatchError(self.where, {"layout": (reply_text(layout), FORMAT)})
        self._layout.load, self._layout.maxval, self._layout.groups = (int(v) for v in limits)
        self._layout.group_bases = ["{" + tag + "}" for tag in spread_tags(self.prefix, self._layout.groups)]
        self._check_parameters(stored_raw)

    def _recreate_index(self) -> None:
        """The index vanished: create it again, empty (ids continue after the last one seen)."""
        self._init_index()
        if self.commit_state.last_doc >= 0:
            self._client.hset(f"{self._base}:m", "next", self.commit_state.last_doc + 1)
        self._cache.clear()
        self._commits.snapshot = None
        self._commits.next_id = -1
        logger.warning(
            "neardup: the index at %s vanished (keys deleted, or nodes restarted without persistence); "
            "it was created again, empty: pages checked before are forgotten",
            self.where,
        )

    def close(self) -> None:
        """Give back an unused doc id when nobody took one since, and release the connections."""
        if self._opened and self._client is not None:
            self._commits.release()
        if self._opened and self._counts.pending and self._client is not None:
            self._counts.flush()  # one more try; what fails is lost (and logged)
        self._commits.snapshot = None
        super().close()

    def __len__(self) -> int:
        raw = self.call(lambda: self._client.hget(f"{self._base}:m", "count"), "len")
        return int(raw or 0)

    def _before_probe(self) -> None:
        """Learn the slot map again before probing a cluster that failed (see :class:`.ClusterScripts`)."""
        self._scripts.before_probe()

    # -- the calls per page --------------------------------------------------------------------
    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Committed candidates of ``keys`` and a :class:`ClusterToken`; records cached for :meth:`fetch`."""
        return self._commits.lookup(keys)

    def lookup_or_insert(
        self, keys: U64Array, provisional: Commit
    ) -> tuple[I64Array, object, CommitResult | None]:
        """:meth:`lookup`, then, with no committed candidate, :meth:`commit` of ``provisional``.

        Not one atomic step as on one server, but with the same outcome: a commit that conflicts
        (another page entered a looked-up bucket) looks up again.
        """
        for _ in range(8):
            ids, token = self.lookup(keys)
            if len(ids):
                return ids, token, None
            result = self.commit(replace(provisional, token=token))
            if result is not None:
                return np.empty(0, dtype=np.int64), None, result
        ids, token = self.lookup(keys)
        return ids, token, None

    def fetch(self, ids: I64Array) -> DocBatch:
        """Records of the committed pages among ``ids`` with their roots (cached by the lookup)."""
        wanted = [int(i) for i in ids]
        missing = [i for i in wanted if i not in self._cache]
        if missing:
            self._records.load(missing, prefetch=len(missing))
        return self.cached_batch([i for i in wanted if i in self._cache])

    def fetch_candidates(self, ids: I64Array, chance: ChanceFilter) -> DocBatch:
        """:meth:`fetch` of ``ids`` less the chance hits (judged on the fetched records)."""
        return fetch_without_chance_hits(self, ids, chance)

    def commit(self, commit: Commit) -> CommitResult | None:
        """Write the page's record and bucket entries, then commit it on ``{P}``; ``None`` on conflict."""
        return self._commits.commit(commit)

    # -- the whole index (:mod:`.redis_cluster_export`, :mod:`.redis_cluster_counts`) ------------
    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` its cluster's representative (see the protocol): the page
        table, counters and evidence in one script on ``{P}``, then the two records' heads."""
        return self._commits.promote([int(doc_id)]) > 0

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol):
        one read of the page table, then :meth:`promote` for the pages chosen."""
        return self._exports.promote_origins(origins)

    def host_counts(self) -> dict[str, HostCounts]:
        """Counters of every host (all processes)."""
        return self._counts.host_counts()

    def mirror_evidence(self, min_pages: int = 0, share: float = 0.0) -> MirrorEvidence:
        """The mirror evidence of the whole shared index (see the protocol)."""
        return self._counts.mirror_evidence(min_pages, share)

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the largest ones, over the whole shared index."""
        return self._exports.clusters(max_clusters, max_members, singletons=singletons)

    @property
    def _url_rules_key(self) -> str:
        """In the serialisation slot (``{prefix}:urlrules``): one small hash."""
        return f"{self._base}:urlrules"

    def memory_bytes(self) -> int:
        """Approximate bytes held by this index over the cluster (sampled ``MEMORY USAGE``)."""
        return self._exports.memory_bytes()

    def wipe(self) -> int:
        """Delete every key of this index on every primary (for tests and tooling). Returns keys deleted."""
        return self._exports.wipe()


__all__ = ["DEFAULT_CLUSTER_URL", "ClusterToken", "RedisClusterStorage"]
