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
* ``{T_k}:r:<n>`` -- page records (packed as in the single-server store), 256 per hash, hash
  ``n = id // 256`` on group ``159 n mod groups``'s slot, field ``<id mod 256>``: consecutive
  hashes jump over the slot space (a golden-ratio stride), so any number of them is spread. A key
  per record costs Redis about 110 bytes (key, object, entry, the cluster's slot index) beside
  the record; a field of a hash about 40.
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

import binascii
import hashlib
import json
import logging
import math
import struct
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from .base import (
    BUCKET_CAP,
    MAX_CANDIDATES,
    Commit,
    CommitResult,
    DocBatch,
    I64Array,
    ParameterMismatchError,
    StorageError,
    U64Array,
    pinned_keys,
    rank_candidates,
)
from .cluster_codec import INLINE_BYTES, SHARD_LOAD, shard_field
from .lua_scripts import lua_script
from .members import summarize_clusters
from .redis_common import (
    RECORD_HEAD,
    STATUS_CHAR,
    UNIQUE_TAIL,
    bucket_fields,
    pack_record,
    record_roots,
    redis_bytes,
    reply_text,
    safe_url,
)
from .redis_store import RedisStorage
from .unionfind import origin_members

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_CLUSTER_URL = "redis://127.0.0.1:7000/0"
FORMAT = "neardup-redis-cluster/4"
#: Page records per hash (``{T_k}:r:<id // RECORDS_PER_KEY>``): a dict of up to 256 entries keeps
#: its table at 256 slots.
RECORDS_PER_KEY = 256
GROUPS = 256
LOG_SIZE = 1024
#: Clusters per hash of packed host tables (``{P}:ch:<root // CH_SPAN>``): at most 128 fields keep a
#: hash a listpack.
CH_SPAN = 128
SLOTS = 16384
#: Hash ``n`` of records goes to group ``n * RECORD_STRIDE mod groups``: odd (every group gets its
#: turn when ``groups`` is a power of two) and near ``groups / golden ratio`` (low discrepancy).
RECORD_STRIDE = 159
#: Most bucket groups an index may have (each then owns a range of 4 slots).
MAX_GROUPS = 4096

# The scripts (``lua/*.lua``, see :mod:`.lua_scripts`) by name, each with the parts it is made of.
# ``cluster_table`` defines the hooks that ``mirror`` (shared with the single-server store) calls:
# ``host_of``, ``hosts_load``/``hosts_save``/``hosts_move`` on packed host tables, and ``bump``,
# which turns each counter change into a delta the client applies with ``counts``.
_SCRIPT_PARTS: dict[str, tuple[str, ...]] = {
    "counts": ("cluster_counts",),
    "group_read": ("linear_hash", "cluster_shards", "cluster_group_read"),
    "group_add": ("linear_hash", "cluster_shards", "cluster_group_add"),
    "init": ("cluster_init",),
    "begin": ("cluster_begin",),
    "release": ("cluster_release",),
    "status": ("cluster_table", "cluster_status"),
    "table": ("cluster_table_range",),
    "commit": ("cluster_table", "mirror", "cluster_promote_in_table", "cluster_commit"),
    "heads": ("cluster_heads",),
    "promote": ("cluster_table", "cluster_promote_in_table", "cluster_promote"),
    "set_tail": ("cluster_set_tail",),
}
_SCRIPTS = {
    name: lua_script(parts, {"BUCKET_CAP": BUCKET_CAP, "CH_SPAN": CH_SPAN})
    for name, parts in _SCRIPT_PARTS.items()
}


@dataclass(frozen=True)
class ClusterToken:
    """What a lookup saw: the commit counter before it, the fields it read, the committed ids found."""

    snapshot: int
    fields: bytes
    seen: bytes


def key_slot(tag: bytes) -> int:
    """The Redis Cluster hash slot of a hash tag's content: CRC16 (XMODEM) mod 16384."""
    return binascii.crc_hqx(tag, 0) % SLOTS


def spread_tags(prefix: str, count: int) -> list[str]:
    """``count`` hash tags of ``prefix`` on evenly spaced slots: tag ``k`` is ``<prefix>:g<k>:<j>``
    with the first ``j`` whose slot falls in the ``k``-th of ``count`` equal ranges of slots.

    A cluster whose primaries own equal ranges of slots (as ``redis-cli --cluster create`` and
    ``rebalance`` leave them) then holds an equal share of the tags: 256 tags over 6 primaries are
    42 or 43 on each, where tags hashed at random put 43 +- 6.5 (one standard deviation) on each.
    About ``SLOTS / count`` CRCs per tag (256 tags: 65,000 CRCs, a few milliseconds).
    """
    if not 1 <= count <= MAX_GROUPS:
        raise ValueError(f"groups must be 1 .. {MAX_GROUPS}, not {count}")
    out: list[str] = []
    for k in range(count):
        low, high = k * SLOTS // count, (k + 1) * SLOTS // count
        j = 0
        while not low <= key_slot(redis_bytes(f"{prefix}:g{k}:{j}")) < high:
            j += 1
        out.append(f"{prefix}:g{k}:{j}")
    return out


def field_group(field: bytes, groups: int) -> int:
    """The bucket group of a 6-byte field (its last two bytes; the shard address uses the first four)."""
    return int.from_bytes(field[4:6], "big") % groups


class RedisClusterStorage(RedisStorage):
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
        self.groups = max(1, min(MAX_GROUPS, int(groups)))
        self.log_size = max(16, int(log_size))
        self._load = 38
        self._maxval = 64
        self._shas = {name: hashlib.sha1(src.encode()).hexdigest() for name, src in _SCRIPTS.items()}
        self._group_bases: list[str] = []
        self._snapshot: int | None = None
        self._next_id = -1
        self._orphans: list[int] = []
        self._count_batch = 0
        self._pending_counts: list[tuple[int, dict[int, list[Any]], bytes]] = []

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
                raise StorageError(f"invalid Redis url {safe_url(self.url)}: {self._said(exc)}") from None
            except (redis.RedisError, RedisClusterException) as exc:
                raise StorageError(
                    f"cannot reach the Redis Cluster at {safe_url(self.url)}: {self._said(exc)}"
                ) from exc
        try:
            self._load_scripts()
        except (redis.RedisError, RedisClusterException) as exc:
            raise StorageError(
                f"cannot reach the Redis Cluster at {safe_url(self.url)}: {self._said(exc)}"
            ) from exc
        wanted = {k: json.loads(json.dumps(v, allow_nan=False)) for k, v in signature.items()}
        self._init_args = [self._base, FORMAT, SHARD_LOAD, INLINE_BYTES, self.groups]
        for name, value in sorted(wanted.items()):
            self._init_args += [name, json.dumps(value, allow_nan=False)]
        self._wanted = wanted
        self._init_index()
        self._num_perm = int(wanted.get("num_perm", 128))
        self._begin(alloc=False)
        self._opened = True

    def _load_scripts(self) -> None:
        """Load every script on every node (a replica promoted by a failover has them too)."""
        from redis.cluster import RedisCluster

        for source in _SCRIPTS.values():
            self._client.execute_command("SCRIPT LOAD", source, target_nodes=RedisCluster.ALL_NODES)

    def _init_index(self) -> None:
        stored_raw, limits, layout = self._eval("init", self._base, self._init_args, "open")
        if reply_text(layout) != FORMAT:
            raise ParameterMismatchError(self.where, {"layout": (reply_text(layout), FORMAT)})
        self._load, self._maxval, self.groups = (int(v) for v in limits)
        self._group_bases = ["{" + tag + "}" for tag in spread_tags(self.prefix, self.groups)]
        self._check_parameters(stored_raw)

    def _recreate_index(self) -> None:
        """The index vanished: create it again, empty (ids continue after the last one seen)."""
        self._init_index()
        if self._last_doc >= 0:
            self._client.hset(f"{self._base}:m", "next", self._last_doc + 1)
        self._cache.clear()
        self._snapshot = None
        self._next_id = -1
        logger.warning(
            "neardup: the index at %s vanished (keys deleted, or nodes restarted without persistence); "
            "it was created again, empty: pages checked before are forgotten",
            self.where,
        )

    def _begin(self, *, alloc: bool) -> None:
        """Read the commit counter (the next lookup's snapshot) and, with ``alloc``, take a doc id."""
        seq, doc, seconds, micros = self._eval("begin", self._base, [self._base, int(alloc)], "lookup")
        self._snapshot = int(seq)
        if int(doc) >= 0:
            self._next_id = int(doc)
        self._clock_offset = int(seconds) + int(micros) / 1e6 - time.time()

    def close(self) -> None:
        """Give back an unused doc id when nobody took one since, and release the connections."""
        if self._opened and self._next_id >= 0 and self._client is not None:
            try:
                self._client.execute_command(
                    "EVALSHA", self._shas["release"], 1, f"{self._base}:m", self._base, self._next_id
                )
            except Exception:
                logger.debug("neardup: could not give back doc id %d", self._next_id, exc_info=True)
            self._next_id = -1
        if self._opened and self._pending_counts and self._client is not None:
            self._flush_counts()  # one more try; what fails is lost (and logged)
        self._snapshot = None
        super().close()

    def __len__(self) -> int:
        raw = self._call(lambda: self._client.hget(f"{self._base}:m", "count"), "len")
        return int(raw or 0)

    # -- the calls per page --------------------------------------------------------------------
    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Committed candidates of ``keys`` and a :class:`ClusterToken`; records cached for :meth:`fetch`."""
        if self._snapshot is None:
            self._begin(alloc=False)
        assert self._snapshot is not None
        snapshot = self._snapshot
        fields = bucket_fields(keys)
        values = self._read_buckets(fields)
        per_bucket = [np.frombuffer(v, dtype="<u4").astype(np.int64) for v in values]
        found = np.unique(np.concatenate(per_bucket)) if per_bucket else np.empty(0, dtype=np.int64)
        self._cache.clear()
        live = self._load_records([int(d) for d in found], prefetch=self.prefetch)
        seen = np.array(sorted(live), dtype=np.int64)
        token = ClusterToken(snapshot, b"".join(fields), seen.astype("<u4").tobytes())
        if len(seen):
            self._last_doc = max(self._last_doc, int(seen[-1]))
        if len(seen) > MAX_CANDIDATES:
            pinned = pinned_keys(keys).tolist()
            kept = [np.intersect1d(ids, seen) for ids in per_bucket]
            ranked = rank_candidates(
                np.concatenate([k for k, pin in zip(kept, pinned, strict=True) if pin] or [seen[:0]]),
                np.concatenate([k for k, pin in zip(kept, pinned, strict=True) if not pin] or [seen[:0]]),
            )
            return np.intersect1d(seen, ranked), token
        return seen, token

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
            self._load_records(missing, prefetch=len(missing))
        return self._batch([i for i in wanted if i in self._cache])

    def commit(self, commit: Commit) -> CommitResult | None:
        """Write the page's record and bucket entries, then commit it on ``{P}``; ``None`` on conflict."""
        record = commit.record
        skipped = commit.status == "skipped" or record is None
        token = commit.token if isinstance(commit.token, ClusterToken) else None
        doc, given = -1, -1
        written = named = payload = b""
        if not skipped and record is not None:
            if self._next_id < 0:
                self._begin(alloc=True)
            doc, given = self._next_id, record.parent if record.parent >= 0 else -1
            self._next_id = -1  # taken: whatever happens, not used twice
            fields = bucket_fields(commit.keys) if len(commit.keys) else []
            written = b"".join(fields)
            payload = pack_record(record)
            read = None
            if commit.named_key is not None and given >= 0:
                read = bucket_fields(np.array([commit.named_key], dtype=np.uint64))[0]
            named = self._write(doc, payload, fields, read=read)
        unions = b"".join(struct.pack("<ii", int(a), int(b)) for a, b in commit.unions)
        self._seq += 1
        args: list[Any] = [
            self._base,
            token.snapshot if token else (self._snapshot or 0),
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
            self._client_id,
            self._seq,
            0,
            token.seen if token else b"",
            self.log_size,
            # a page that writes nothing keeps the id the client holds (a new one each time left
            # a gap of 8 bytes in the page table per skipped page or revisit)
            1 if not skipped or self._next_id < 0 else 0,
            named,
        ]
        if token is None and not skipped:
            args[9] = written  # no lookup: any page entering these buckets since the snapshot conflicts
        reply = self._eval("commit", self._base, args, "commit", deadline_at=12)
        self._cache.clear()
        self._snapshot = int(reply[2])
        if int(reply[3]) >= 0:
            if self._next_id >= 0:  # a replayed reply handed out a second id: give none back, use the new
                self._orphans.append(self._next_id)
            self._next_id = int(reply[3])
        if int(reply[0]) == -2:
            self.conflicts += 1
            self._orphans.append(doc)
            return None
        old_root = int(reply[4]) if len(reply) > 4 else -1
        pages = self._apply_counts(bytes(reply[5]) if len(reply) > 5 else b"", commit.host)
        if old_root >= 0:  # promoted on {P}: now the records' heads
            self._set_tails({doc: UNIQUE_TAIL, old_root: payload[4:8]})
        result = self._commit_result(reply)
        return CommitResult(doc_id=result.doc_id, host_pages=pages, promoted=old_root >= 0)

    def _host_group(self, host: bytes) -> int:
        """The group on whose slot a host's counters and mirror evidence live."""
        return zlib.crc32(host) % self.groups

    def _apply_counts(self, packed: bytes, host: str | None = None) -> int:
        """Apply a script's counter deltas on their hosts' group slots, one pipeline (see the module
        docstring); returns the pages counted for ``host`` (0 without one, or when the cluster
        failed: the commit stands, and its counts wait for the next call)."""
        by_group: dict[int, list[Any]] = {}
        at = 0
        while at < len(packed):
            kind = packed[at : at + 1]
            (na,) = struct.unpack_from("<H", packed, at + 1)
            a = packed[at + 3 : at + 3 + na]
            at += 3 + na
            (nb,) = struct.unpack_from("<H", packed, at)
            b = packed[at + 2 : at + 2 + nb]
            (n,) = struct.unpack_from("<d", packed, at + 2 + nb)
            at += 10 + nb
            by_group.setdefault(self._host_group(a), []).extend((kind, a, b, int(n)))
        want = redis_bytes(host) if host else b""
        if want:
            by_group.setdefault(self._host_group(want), [])
        if by_group:
            self._count_batch += 1
            self._pending_counts.append((self._count_batch, by_group, want))
        return self._flush_counts()

    def _flush_counts(self) -> int:
        """Apply the counter batches not applied yet, in order, each under its own batch number
        (a group that has it already skips it); the last batch's host pages."""
        pages = 0
        sha = self._shas["counts"]
        while self._pending_counts:
            batch, by_group, want = self._pending_counts[0]
            home = self._host_group(want) if want else -1

            def fill(
                pipe: Any,
                batch: int = batch,
                by_group: dict[int, list[Any]] = by_group,
                want: bytes = want,
                home: int = home,
            ) -> None:
                for g in sorted(by_group):
                    base = self._group_bases[g]
                    mine = want if g == home else b""
                    self._script_in(pipe, sha, base, base, self._client_id, batch, mine, *by_group[g])

            try:
                replies = self._pipeline(fill, "host counts")
            except StorageError as exc:
                logger.warning(
                    "neardup: host counts of %d commit(s) not added yet, retried with the next: %s",
                    len(self._pending_counts),
                    exc,
                )
                return 0
            self._pending_counts.pop(0)
            pages = max(int(r or 0) for r in replies)
        return pages

    def _counter_fields(self) -> dict[Any, Any]:
        """The host counters of every group slot, merged (a host's live on one)."""
        self._flush_counts()
        raw = self._pipeline(
            lambda pipe: [pipe.hgetall(f"{base}:hc") for base in self._group_bases], "host counts"
        )
        out: dict[Any, Any] = {}
        for part in raw:
            out.update(part)
        return out

    # -- round trips -----------------------------------------------------------------------------
    def _record_at(self, doc: int) -> tuple[str, bytes]:
        """The hash and field of page ``doc``'s record."""
        return self._record_key(doc // RECORDS_PER_KEY), b"%d" % (doc % RECORDS_PER_KEY)

    def _record_key(self, n: int) -> str:
        """Hash ``n`` of records: on the slot of group ``n * RECORD_STRIDE mod groups`` -- the
        golden-ratio stride leaves consecutive hashes spread over the whole slot space at every
        count (taken in turn, the first 85 hashes of records would all sit on one primary's range)."""
        return f"{self._group_bases[n * RECORD_STRIDE % self.groups]}:r:{n}"

    def _read_buckets(self, fields: list[bytes]) -> list[bytes]:
        """The first ids of each bucket (``b""`` for none), one group script per group, pipelined."""
        by_group: dict[int, list[int]] = {}
        for k, field in enumerate(fields):
            by_group.setdefault(field_group(field, self.groups), []).append(k)
        sha = self._shas["group_read"]
        order = sorted(by_group)

        def read(pipe: Any) -> None:
            for g in order:
                base = self._group_bases[g]
                stored = [shard_field(fields[k], self.groups) for k in by_group[g]]
                self._script_in(pipe, sha, base, base, *stored)

        replies = self._pipeline(read, "lookup")
        out: list[bytes] = [b""] * len(fields)
        for g, reply in zip(order, replies, strict=True):
            for k, value in zip(by_group[g], reply, strict=True):
                out[k] = bytes(value)
        return out

    def _load_records(self, ids: list[int], *, prefetch: int) -> set[int]:
        """Which of ``ids`` are committed with a record; caches up to ``prefetch`` of their records."""
        if not ids:
            return set()
        first = ids[:prefetch]
        sha = self._shas["status"]

        def read(pipe: Any) -> None:
            self._script_in(pipe, sha, self._base, self._base, *ids)
            for doc in first:
                pipe.hget(*self._record_at(doc))

        replies = self._pipeline(read, "fetch")
        roots = [int(r) for r in replies[0]]
        live: set[int] = set()
        later: list[int] = []
        for k, doc in enumerate(ids):
            if roots[k] < 0:
                continue  # not committed (being written, or left by a writer that crashed or conflicted)
            if k < len(first):
                rec = replies[1 + k]
                if rec:
                    self._cache[doc] = (bytes(rec), roots[k])
                    live.add(doc)
            else:
                later.append(doc)
        if later:  # more candidates than prefetched: their records in one more round trip
            recs = self._pipeline(lambda pipe: [pipe.hget(*self._record_at(d)) for d in later], "fetch")
            index = {d: k for k, d in enumerate(ids)}
            for doc, rec in zip(later, recs, strict=True):
                if rec:
                    self._cache[doc] = (bytes(rec), roots[index[doc]])
                    live.add(doc)
        return live

    def _write(self, doc: int, payload: bytes, fields: list[bytes], read: bytes | None = None) -> bytes:
        """The page's record and bucket entries (not committed yet), and drop records of conflicted
        ids; in the same pipeline, the first ids of bucket ``read`` (returned; ``b""``: none)."""
        by_group: dict[int, list[bytes]] = {}
        for field in fields:
            by_group.setdefault(field_group(field, self.groups), []).append(shard_field(field, self.groups))
        sha = self._shas["group_add"]
        packed = struct.pack("<I", doc)
        ttl = 0 if self.ttl is None or not math.isfinite(self.ttl) else max(1, math.ceil(self.ttl))
        orphans = list(self._orphans)

        key, field = self._record_at(doc)

        def write(pipe: Any) -> None:
            pipe.hset(key, field, payload)
            if ttl:
                pipe.expire(key, ttl)
            for g, group_fields in sorted(by_group.items()):
                base = self._group_bases[g]
                self._script_in(pipe, sha, base, base, self._load, self._maxval, packed, *group_fields)
            for old in orphans:
                pipe.hdel(*self._record_at(old))
            if read is not None:
                base = self._group_bases[field_group(read, self.groups)]
                self._script_in(pipe, self._shas["group_read"], base, base, shard_field(read, self.groups))

        replies = self._pipeline(write, "write")
        del self._orphans[: len(orphans)]
        return bytes(replies[-1][0]) if read is not None else b""

    def _script_in(self, pipe: Any, sha: str, key_base: str, *args: Any) -> None:
        """Queue script ``sha`` on the slot of ``key_base`` in a cluster pipeline.

        The node is named (from the client's slot map): left to find the keys itself, redis-py's
        cluster pipeline asks the server (``COMMAND GETKEYS``) once per script call. A stale map
        gets ``MOVED``, and redis-py then sends the call again by itself, routed by its key.
        """
        key = f"{key_base}:m"
        node = self._client.get_node_from_key(key)
        pipe.execute_command("EVALSHA", sha, 1, key, *args, target_nodes=node)

    def _before_probe(self) -> None:
        """Learn the slot map again before probing a cluster that failed: redis-py learns it after a
        failed call, and a map learnt before a replica's promotion still names the dead primary, so
        the probe after the promotion would fail on it and checking wait for the next probe."""
        try:
            self._client.nodes_manager.initialize()
        except Exception as exc:  # no node answers: the probe fails and says why
            logger.debug("neardup: cannot read the cluster's slot map: %s", self._said(exc))

    def _eval(
        self, name: str, key_base: str, args: Sequence[Any], what: str, *, deadline_at: int | None = None
    ) -> Any:
        """Run script ``name`` on the slot of ``key_base``; ``args[deadline_at]`` gets a fresh deadline."""
        import redis

        sha = self._shas[name]
        key = f"{key_base}:m"

        def attempt() -> Any:
            argv = list(args)
            if deadline_at is not None:
                argv[deadline_at] = repr(self._deadline())
            try:
                return self._with_scripts(lambda: self._client.execute_command("EVALSHA", sha, 1, key, *argv))
            except redis.ResponseError as exc:
                if "NEARDUP_LATE" in str(exc):
                    raise redis.TimeoutError("the commit reached Redis after the client's timeout") from exc
                raise

        return self._call(attempt, what)

    def _pipeline(self, fill: Callable[[Any], Any], what: str) -> list[Any]:
        """One cluster pipeline (its commands go to their nodes together), retried as a whole."""

        def attempt() -> list[Any]:
            def run() -> list[Any]:
                pipe = self._client.pipeline()
                fill(pipe)
                return list(pipe.execute())

            return self._with_scripts(run)

        return self._call(attempt, what)

    def _with_scripts(self, fn: Callable[[], T]) -> T:
        """``fn()``; when a node lacks a script (restarted, promoted), load them everywhere and retry once."""
        import redis

        try:
            return fn()
        except redis.exceptions.NoScriptError:
            self._load_scripts()
            return fn()
        except redis.ResponseError as exc:
            if "NOSCRIPT" not in str(exc):
                raise
            self._load_scripts()
            return fn()

    # -- reports -------------------------------------------------------------------------------
    def _mirror_tables(self, hosts: list[str]) -> list[Any]:
        """The mirror hashes of ``hosts``, each on its host's group slot: one pipeline."""
        self._flush_counts()

        def fill(pipe: Any) -> None:
            for host in hosts:
                name = redis_bytes(host)
                base = self._group_bases[self._host_group(name)]
                pipe.hgetall(f"{base}:sh:".encode() + name)
                pipe.hgetall(f"{base}:cn:".encode() + name)

        return self._pipeline(fill, "mirror evidence")

    def _page_table(self) -> tuple[I64Array, I64Array]:
        """``(ids, parents)`` of every committed page, from the page table."""
        ids, parents, _ = self._page_table_hosts()
        return ids, parents

    def _page_table_hosts(self) -> tuple[I64Array, I64Array, I64Array]:
        """``(ids, parents, host codes)`` of every committed page, from the page table."""
        total = int(self._call(lambda: self._client.hget(f"{self._base}:m", "next"), "clusters") or 0)
        chunks: list[bytes] = []
        step = 1 << 16
        for first in range(0, total, step):
            count = min(step, total - first)
            raw = self._eval("table", self._base, [self._base, first, count], "clusters")
            chunks.append(bytes(raw).ljust(8 * count, b"\0"))
        table = (
            np.frombuffer(b"".join(chunks), dtype="<u4").reshape(-1, 2) if chunks else np.zeros((0, 2), "<u4")
        )
        ids = np.flatnonzero(table[:, 0] > 0).astype(np.int64)
        return ids, table[ids, 0].astype(np.int64) - 1, table[ids, 1].astype(np.int64) - 1

    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` its cluster's representative (see the protocol): the page
        table, counters and evidence in one script on ``{P}``, then the two records' heads."""
        return self._promote([int(doc_id)]) > 0

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol):
        one read of the page table, then :meth:`promote` for the pages chosen."""
        names = sorted(set(origins) | set(origins.values()))
        raw = self._call(
            lambda: self._client.hmget(f"{self._base}:hk", [redis_bytes(h) for h in names]), "promote"
        )
        code = {h: int(c) for h, c in zip(names, raw, strict=True) if c is not None}
        wanted = {code[m]: code[o] for m, o in origins.items() if m in code and o in code}
        if not wanted:
            return 0
        ids, parents, hosts = self._page_table_hosts()
        if not len(ids):
            return 0
        chosen = origin_members(record_roots(ids, parents), hosts, wanted, ids)
        return sum(self._promote(chosen[start : start + 1000]) for start in range(0, len(chosen), 1000))

    def _promote(self, docs: list[int]) -> int:
        if not docs:
            return 0
        heads = self._heads(docs)
        args: list[Any] = [self._base]
        for doc, head in zip(docs, heads, strict=True):
            if len(head) >= 16:
                args += [doc, RECORD_HEAD.unpack(bytes(head))[1]]
        if len(args) == 1:
            return 0
        tails = {doc: bytes(head)[4:8] for doc, head in zip(docs, heads, strict=True) if len(head) >= 16}
        pairs, deltas = self._eval("promote", self._base, args, "promote")
        self._apply_counts(bytes(deltas))
        changed = [(int(pairs[k]), int(pairs[k + 1])) for k in range(0, len(pairs), 2)]
        new_tails: dict[int, bytes] = {}
        for doc, root in changed:
            new_tails[doc] = UNIQUE_TAIL
            new_tails[root] = tails[doc]
        self._set_tails(new_tails)
        return len(changed)

    def _set_tails(self, tails: dict[int, bytes]) -> None:
        """Bytes 4..7 of the records' heads (status, Hamming distance, similarity), by page."""
        by_key: dict[str, list[Any]] = {}
        for page, tail in tails.items():
            key, field = self._record_at(page)
            by_key.setdefault(key, []).extend((field, tail))
        sha = self._shas["set_tail"]
        keys = list(by_key)
        for start in range(0, len(keys), 1000):
            part = keys[start : start + 1000]

            def fill(pipe: Any, part: list[str] = part) -> None:
                for key in part:
                    node = self._client.get_node_from_key(key)
                    pipe.execute_command("EVALSHA", sha, 1, key, *by_key[key], target_nodes=node)

            self._pipeline(fill, "promote")
        self._cache.clear()

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the largest ones, over the whole shared index."""
        ids, parents = self._page_table()
        if not len(ids):
            return {}, []
        heads = self._heads(ids.tolist())
        keep = [k for k, h in enumerate(heads) if len(h) >= 16]  # expired records left out
        unpacked = [RECORD_HEAD.unpack(bytes(heads[k])) for k in keep]
        if self.ttl is not None and math.isfinite(self.ttl):
            # records past the ttl wait for their hash to expire: left out as if gone
            since = time.time() - self.ttl
            alive = [k for k, u in enumerate(unpacked) if u[4] >= since]
            keep, unpacked = [keep[k] for k in alive], [unpacked[k] for k in alive]
        kept_ids = ids[keep]
        roots = record_roots(kept_ids, parents[keep])
        return summarize_clusters(
            roots,
            ids=kept_ids,
            status=np.array([u[1] for u in unpacked], dtype=np.uint8),
            similarity=np.array([u[3] for u in unpacked], dtype=np.float32),
            hamming=np.array([u[2] for u in unpacked], dtype=np.int16),
            max_clusters=max_clusters,
            max_members=max_members,
            describe=self._describe,
            singletons=singletons,
        )

    def _heads(self, ids: list[int]) -> list[bytes]:
        """The 16-byte heads of the records of ``ids`` (``b""`` for none): a script per hash of
        records, in pipelines of 1000 hashes."""
        by_key: dict[str, list[int]] = {}
        for k, doc in enumerate(ids):
            by_key.setdefault(self._record_at(doc)[0], []).append(k)
        keys = list(by_key)
        sha = self._shas["heads"]
        out: list[bytes] = [b""] * len(ids)
        for start in range(0, len(keys), 1000):
            part = keys[start : start + 1000]

            def fill(pipe: Any, part: list[str] = part) -> None:
                for key in part:
                    fields = [self._record_at(ids[k])[1] for k in by_key[key]]
                    node = self._client.get_node_from_key(key)
                    pipe.execute_command("EVALSHA", sha, 1, key, *fields, target_nodes=node)

            for key, reply in zip(part, self._pipeline(fill, "clusters"), strict=True):
                for k, head in zip(by_key[key], reply, strict=True):
                    out[k] = bytes(head)
        return out

    def _describe(self, ids: Sequence[int]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for rec in self._per_key("HGET", [self._record_at(d) for d in ids], (), "clusters"):
            if not rec:
                out.append(("", ""))
                continue
            host, _, _, url = self._unpack_tail(bytes(rec), -1)
            out.append((url, host))
        return out

    def _per_key(self, command: str, keys: list[Any], args: tuple[Any, ...], what: str) -> list[Any]:
        """``command key *args`` for every key (a tuple: ``key field``), in pipelines of 1000."""
        out: list[Any] = []
        for start in range(0, len(keys), 1000):
            part = keys[start : start + 1000]

            def fill(pipe: Any, part: list[Any] = part) -> None:
                for key in part:
                    pipe.execute_command(command, *(key if isinstance(key, tuple) else (key,)), *args)

            out += self._pipeline(fill, what)
        return out

    @property
    def _url_rules_key(self) -> str:
        """In the serialisation slot (``{prefix}:urlrules``): one small hash."""
        return f"{self._base}:urlrules"

    def memory_bytes(self) -> int:
        """Approximate bytes held by this index over the cluster (sampled ``MEMORY USAGE``)."""
        client = self._client

        def measure() -> int:
            pages = int(client.hget(f"{self._base}:m", "count") or 0)
            top = int(client.hget(f"{self._base}:m", "next") or 0)
            metas = self._pipeline(
                lambda pipe: [pipe.hmget(f"{b}:m", "L", "p") for b in self._group_bases], "memory usage"
            )
            shard_keys = []
            for base, (level, split) in zip(self._group_bases, metas, strict=True):
                count = (1 << int(level or 0)) + int(split or 0)
                shard_keys += [f"{base}:s:{n}" for n in range(count)]
            record_keys = -(-top // RECORDS_PER_KEY)
            sample_docs = [self._record_key(i) for i in range(0, record_keys, max(1, record_keys // 200))][
                :200
            ]
            sample_shards = shard_keys[:: max(1, len(shard_keys) // 200)][:200]
            fixed = [f"{self._base}:{name}" for name in ("log", "hk", "hv", "m")]
            fixed += [f"{base}:hc" for base in self._group_bases]
            fixed += [f"{self._base}:t:{chunk}" for chunk in range((top >> 20) + 1)]
            sizes: list[int] = self._pipeline(
                lambda pipe: [pipe.memory_usage(k, samples=0) for k in sample_docs + sample_shards + fixed],
                "memory usage",
            )
            sizes = [int(size or 0) for size in sizes]
            docs = sizes[: len(sample_docs)]
            shards = sizes[len(sample_docs) : len(sample_docs) + len(sample_shards)]
            total = sum(sizes[len(sample_docs) + len(sample_shards) :])
            live_docs = [s for s in docs if s]
            if live_docs:  # hashes of records, the last one partly filled
                total += int(sum(live_docs) / len(live_docs) * pages / RECORDS_PER_KEY)
            if shards:
                total += int(sum(shards) / len(shards) * len(shard_keys))
            return int(total)

        return self._call(measure, "memory usage")

    def wipe(self) -> int:
        """Delete every key of this index on every primary (for tests and tooling). Returns keys deleted."""
        client = self._client

        def delete() -> int:
            keys = [
                key
                for pattern in (f"{{{self.prefix}}}:*", f"{{{self.prefix}:g*")
                for key in client.scan_iter(match=pattern, count=1000)
            ]
            return sum(int(n) for n in self._per_key("DEL", keys, (), "wipe"))

        deleted = int(self._call(delete, "wipe"))
        self._snapshot = None
        self._next_id = -1
        return deleted


__all__ = ["DEFAULT_CLUSTER_URL", "ClusterToken", "RedisClusterStorage"]
