"""Redis store: one index shared by many crawler processes (``NEARDUP_STORAGE = "redis"``).

Key layout (``P`` is the prefix, one index per prefix; every value is packed binary):

* ``P:params`` (hash): the index parameters, one JSON value per field, written once by the
  first process and compared by every later one (:class:`~.base.ParameterMismatchError`).
* ``P:m`` (hash): bookkeeping -- ``next`` (doc id counter), ``L``/``p`` (linear-hashing level and
  split pointer of the bucket shards), ``n`` (bucket count), ``load``, ``maxval``, ``c`` (prune
  cursor), ``format``.
* ``P:d:<id>`` (string, one per page): the packed record -- parent ``i32``, status ``u8``,
  Hamming ``i8``, similarity ``f16``, time added ``f64``, SimHash ``u64``, digest (16 bytes),
  the host (``u16`` length + UTF-8), the profile (``u16`` length + bytes), the signature
  (``num_perm`` bytes: the stored form, :data:`~neardup_scrapy.core.minhash.STORED_DTYPE`) and
  the url, whose ``https://<host>`` or ``http://<host>`` prefix is one byte (``\x01``, ``\x02``;
  ``\x00`` escapes a url starting with a byte below 3). About 190 bytes + host + url path at
  128 permutations. With
  a ``ttl`` it carries ``EXPIRE ttl``.
* ``P:s:<n>`` (hash, "shard"): the LSH buckets. A bucket key becomes a 6-byte field (the top
  48 bits of a 64-bit mix of the key); its value is the bucket's doc ids as packed little-endian
  ``u32``. Shards are kept small (``load`` buckets on average, ~40) so Redis stores them as
  *listpacks* -- about 14 bytes per bucket entry instead of a key per bucket (a per-bucket key
  costs ~80 bytes: that is how datasketch's Redis storage turns 223 MB of input into 15 GB).
  Shards split one at a time as the index grows (linear hashing: a bucket with address hash
  ``h`` lives in shard ``h mod 2**L``, or ``h mod 2**(L+1)`` when that is below ``p``), so the
  layout stays compact from ten pages to tens of millions without a resize pause.
* ``P:o:<field>`` (string): a bucket that outgrew ``maxval`` bytes (the listpack value limit,
  64 by default) moves here; its shard field keeps an empty marker.
* ``P:hc`` (hash): per-host counters, fields ``<c>|<host>`` with ``c`` one of ``p`` pages,
  ``u``/``e``/``n``/``s`` unique/exact/near/skipped, ``b`` bytes, ``d`` duplicate bytes, and the
  mirror evidence ``D`` documents and ``U`` duplicated documents.
* ``P:ch:<root>`` (hash): pages per host of a cluster of several pages; ``P:sh:<host>`` (hash):
  ``other host -> documents shared``; ``P:cn:<host>`` (hash): ``other host -> pages whose
  canonical link names it`` -- the rest of the mirror evidence
  (:class:`~neardup_scrapy.core.mirrors.MirrorLedger`, whose arithmetic the commit script repeats).
* ``P:n:<client>`` (string): the last commit of one client, for idempotent retries.

Atomicity: :meth:`RedisStorage.lookup` is one Lua script (one round trip) that reads the
buckets and also returns the records and cluster roots of the candidates, so the detector's
:meth:`RedisStorage.fetch` is normally answered from that snapshot without a round trip.
Its token is, per bucket, the last id it held. Doc ids come from one counter and every commit
appends its id, so any insert into a bucket changes that bucket's last id. :meth:`RedisStorage.commit`
is one Lua script that re-reads those last ids and returns "conflict" if any changed;
otherwise it allocates the id, stores the record, appends the bucket entries, applies the
cluster unions, updates host counters and mirror evidence and splits a shard when due -- all
in one atomic step. Two processes that see near-duplicates at the same moment therefore cannot both
record an original: the second commit conflicts and the detector checks its page again.

One round trip for a page with no candidate: :meth:`RedisStorage.lookup_or_insert` is one Lua
script that reads the buckets like ``lookup`` and, when none holds a live page, applies the
detector's provisional "unique" commit in the same atomic step (the same code as ``commit``,
so the same record, bucket entries, counters and shard splits); otherwise it changes nothing and
answers exactly like ``lookup``. Most pages of a crawl have no candidate, so most cost one round
trip instead of two.

Faults: every round trip is retried with exponential backoff (:mod:`.retry`), then raises
:class:`~.base.StorageError`. Commits (also those applied by ``lookup_or_insert``) are idempotent
under retry: each carries a per-client sequence number, and a replay of an already applied commit
returns its first result. Each commit also carries a deadline in server time (when the client's
socket timeout runs out): a commit that reaches Redis after it (Redis was blocked, the client gave
up) is refused, so a page the detector counted as not checked is never indexed behind its back.
An index whose keys vanished (Redis restarted without persistence, keys deleted) is created
again, empty, with a WARNING, and the call is retried: checking goes on instead of failing for
the rest of the crawl. Damaged records give a :class:`~.base.StorageError`.

Expiry (``ttl``): records expire with Redis ``EXPIRE``; lookups skip ids whose record is gone
(and the detector ignores candidates older than ``ttl``). When a ttl is set, every commit also
prunes one shard (expired ids form a prefix of each bucket since ids grow with time), so
dead bucket entries are removed after one sweep over the shards. Host and mirror counters
are crawl totals and do not expire.

Scripts touch keys they compute from the prefix, so the store needs one Redis server (or a
primary with replicas), not Redis Cluster.
"""

from __future__ import annotations

import json
import logging
import math
import struct
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from neardup_scrapy.core.minhash import STORED_DTYPE
from neardup_scrapy.core.mirrors import MirrorEvidence, Rows, read_evidence
from neardup_scrapy.core.urls import scrub

from .base import (
    BUCKET_CAP,
    MAX_CANDIDATES,
    STATUS_NAMES,
    Commit,
    CommitResult,
    DocBatch,
    HostCounts,
    I64Array,
    ParameterMismatchError,
    StorageError,
    U64Array,
    compare_parameters,
    fetch_without_chance_hits,
    pinned_keys,
    rank_candidates,
)
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
    unpack_tail,
)
from .retry import RetryPolicy, call_with_retry
from .unionfind import origin_members

if TYPE_CHECKING:
    from neardup_scrapy.core.chance import ChanceFilter

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_URL = "redis://127.0.0.1:6379/0"
#: Seconds after a round trip failed all its retries before one attempt probes the server again;
#: each probe that fails doubles the spell, up to the store's ``cooldown``.
FIRST_PROBE = 0.5
FORMAT = "neardup-redis/2"
_NONE4 = b"\xff\xff\xff\xff"
_COUNTER_CHAR = {
    "p": "pages",
    "u": "unique",
    "e": "exact",
    "n": "near",
    "s": "skipped",
    "b": "bytes",
    "d": "duplicate_bytes",
    "r": "revisits",
}
# The scripts (``lua/*.lua``, see :mod:`.lua_scripts`) by name, each with the parts it is made of.
# ``server_apply`` is the commit shared by ``commit`` and ``lookup_or_insert``; ``mirror`` needs
# the hooks of ``server_common`` (``host_of``) and ``server_hosts`` (the per-cluster host tables).
_APPLY = ("server_hosts", "mirror", "server_promote_doc", "server_apply")
_SHARDS = ("linear_hash", "shards")  # bucket fields in listpack shards
_SCRIPT_PARTS: dict[str, tuple[str, ...]] = {
    "lookup": (*_SHARDS, "server_common", "server_lookup"),
    "fetch": (*_SHARDS, "server_common", "server_fetch"),
    "commit": (*_SHARDS, "server_common", *_APPLY, "server_commit"),
    "lookup_or_insert": (*_SHARDS, "server_common", *_APPLY, "server_lookup_or_insert"),
    "init": ("server_init",),
    "heads": ("server_heads",),
    "promote": (*_SHARDS, "server_common", "server_hosts", "mirror", "server_promote_doc", "server_promote"),
    "parents_hosts": (*_SHARDS, "server_common", "server_parents_hosts"),
}
_SCRIPTS = {
    name: lua_script(parts, {"BUCKET_CAP": BUCKET_CAP, "UNIQUE_TAIL": UNIQUE_TAIL})
    for name, parts in _SCRIPT_PARTS.items()
}


_NO_IDS = np.empty(0, dtype="<u4")


class RedisStorage:
    """A near-duplicate index in Redis, shared by any number of processes (see the module docstring).

    Args:
        url: Redis url (``redis://[:password@]host:port/db``; ``rediss://`` for TLS). Query
            arguments understood by redis-py (e.g. ``socket_timeout``) are honoured.
        prefix: key prefix; one index per prefix.
        ttl: seconds after which pages are forgotten (``None``: never).
        retry: attempts and backoff of every round trip (default 4 tries over ~1.75 s).
        socket_timeout: seconds to wait for a reply.
        connect_timeout: seconds to wait for a connection.
        prefetch: lookups return the records of up to this many candidates in the same round
            trip (0 disables; then :meth:`fetch` makes its own round trip).
        cooldown: the longest spell, after a round trip failed all its retries, during which
            further calls fail at once; single attempts (without retries) probe the server
            after :data:`FIRST_PROBE` seconds, then after spells that double up to ``cooldown``.
            So a crawl that passes pages through while Redis is down is not slowed by a
            backoff per page, and checking is back within ``cooldown`` seconds of the server
            (or a promoted replica) answering, sooner after a short outage.
        client: an existing ``redis.Redis`` client to use instead of ``url``.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        prefix: str = "neardup",
        ttl: float | None = None,
        *,
        retry: RetryPolicy | None = None,
        socket_timeout: float = 5.0,
        connect_timeout: float = 2.0,
        prefetch: int = 64,
        cooldown: float = 4.0,
        client: Any = None,
        **_: Any,
    ) -> None:
        self.url = url
        self.prefix = prefix
        #: What counter and mirror keys start with (the prefix; a hash tag in the cluster store).
        self._base = prefix
        self.ttl = ttl
        self.retry = retry or RetryPolicy()
        self.socket_timeout = socket_timeout
        self.connect_timeout = connect_timeout
        self.prefetch = max(0, int(prefetch))
        self.cooldown = cooldown
        self._down_until: float | None = None
        self._down_spell = 0.0  # the current spell between probes while the server fails
        self._client: Any = client
        self._own_client = client is None
        self._num_perm = 0
        self._client_id = uuid.uuid4().hex[:16]
        self._seq = 0
        self._cache: dict[int, tuple[bytes, int]] = {}
        self._scripts: dict[str, Any] = {}
        self._transient: tuple[type[BaseException], ...] = ()
        self._opened = False
        self._init_args: list[Any] = []
        self._wanted: dict[str, Any] = {}
        self._clock_offset = 0.0  # Redis server time minus local time (seconds)
        self._last_doc = -1  # largest doc id seen (a re-created index continues after it)
        #: Commits that found a bucket changed since their lookup (the detector re-checked).
        self.conflicts = 0
        #: Calls to Redis made so far (each one round trip, retries not counted), for benchmarks.
        self.round_trips = 0

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def where(self) -> str:
        """Url (without password) and prefix, for messages."""
        return f"{safe_url(self.url)} (prefix {self.prefix!r})"

    def open(self, signature: Mapping[str, Any]) -> None:
        """Connect, create the index or check its recorded parameters.

        Raises:
            ParameterMismatchError: the index under this prefix was built with other parameters.
            StorageError: Redis cannot be reached (the message names the url, without password).
        """
        if self._opened:
            return
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError as exc:  # pragma: no cover - open_storage checks first
            raise StorageError(
                "the redis store needs the 'redis' package: pip install \"redis[hiredis]>=5.0\""
            ) from exc
        self._transient = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError, OSError)
        if self._client is None:
            try:
                self._client = redis.Redis.from_url(
                    self.url,
                    socket_timeout=self.socket_timeout,
                    socket_connect_timeout=self.connect_timeout,
                    retry=Retry(NoBackoff(), 0),
                )
            except ValueError as exc:
                # not chained: the parser's error may quote the url's parts (a traceback would show them)
                raise StorageError(f"invalid Redis url {safe_url(self.url)}: {self._said(exc)}") from None
        client = self._client
        for name, source in _SCRIPTS.items():
            self._scripts[name] = client.register_script(source)
        try:
            client.ping()
        except self._transient as exc:
            raise StorageError(f"cannot reach Redis at {safe_url(self.url)}: {self._said(exc)}") from exc
        except redis.RedisError as exc:
            raise StorageError(
                f"Redis at {safe_url(self.url)} refused the connection: {self._said(exc)}"
            ) from exc
        wanted = {k: json.loads(json.dumps(v, allow_nan=False)) for k, v in signature.items()}
        load, maxval = self._listpack_limits()
        self._init_args = [self.prefix, FORMAT, load, maxval, 0]
        for name, value in sorted(wanted.items()):
            self._init_args += [name, json.dumps(value, allow_nan=False)]
        self._wanted = wanted
        self._init_index()
        self._num_perm = int(wanted.get("num_perm", 128))
        self._measure_clock()
        self._opened = True

    def _init_index(self) -> None:
        """Create the index, or check the parameters of the one already there."""
        self._check_parameters(self._run("init", self._init_args, "open"))

    def _check_parameters(self, stored_raw: Sequence[Any]) -> None:
        """Refuse an index whose stored parameters (``HGETALL`` of ``params``) differ from ours."""
        if stored_raw:
            pairs = zip(stored_raw[::2], stored_raw[1::2], strict=True)
            stored = {reply_text(name): json.loads(reply_text(value)) for name, value in pairs}
            differences = compare_parameters(stored, self._wanted)
            if differences:
                raise ParameterMismatchError(self.where, differences)

    def _recreate_index(self) -> None:
        """The index vanished: create it again, empty, ids continuing after the last one seen."""
        self._init_args[4] = self._last_doc + 1
        self._init_index()
        self._cache.clear()
        logger.warning(
            "neardup: the index at %s vanished (Redis restarted without persistence, or its keys were "
            "deleted); it was created again, empty: pages checked before are forgotten",
            self.where,
        )

    def _measure_clock(self) -> None:
        """Learn the server's clock offset, for commit deadlines in server time."""
        try:
            before = time.time()
            seconds, micros = self._client.time()
            after = time.time()
        except Exception as exc:
            logger.debug("neardup: Redis TIME not available (%r); commit deadlines use the local clock", exc)
            return
        self._clock_offset = seconds + micros / 1e6 - (before + after) / 2

    def _deadline(self) -> float:
        """When the client gives up waiting for a reply sent now, in server time (0: never)."""
        kwargs = getattr(getattr(self._client, "connection_pool", None), "connection_kwargs", {})
        timeout = kwargs.get("socket_timeout", self.socket_timeout)
        if not timeout:
            return 0.0
        return time.time() + self._clock_offset + float(timeout)

    def _listpack_limits(self) -> tuple[int, int]:
        """Shard load and bucket value limit that keep shards in Redis' compact encoding."""
        entries, value = 128, 64
        try:
            config = self._client.config_get("hash-max-*-entries")
            config.update(self._client.config_get("hash-max-*-value"))
            get = config.get
            entries = int(get("hash-max-listpack-entries") or get("hash-max-ziplist-entries") or 128)
            value = int(get("hash-max-listpack-value") or get("hash-max-ziplist-value") or 64)
        except Exception as exc:
            logger.debug("neardup: CONFIG GET not available (%r); assuming Redis defaults", exc)
        return max(4, int(entries * 0.3)), max(8, min(value, 1024))

    def close(self) -> None:
        """Release the connections (the index stays in Redis). Idempotent."""
        if self._client is not None and self._own_client:
            try:
                self._client.close()
            except Exception:
                logger.debug("neardup: error while closing the Redis client", exc_info=True)
        self._client = None if self._own_client else self._client
        self._opened = False
        self._cache.clear()

    def __len__(self) -> int:
        raw = self._call(lambda: self._client.hget(f"{self.prefix}:m", "next"), "len")
        return int(raw or 0)

    # -- the three calls per page --------------------------------------------------------------
    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Candidates of ``keys`` in one round trip; their records are cached for :meth:`fetch`.

        Returns:
            ``(ids, token)``; the token holds each bucket's field and last id.
        """
        fields = bucket_fields(keys)
        answer = self._run("lookup", [self.prefix, self.prefetch, *fields], "lookup")
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
        args = [self.prefix, self.prefetch, *self._commit_args(provisional)[2:], *fields]
        answer = self._run("lookup_or_insert", args, "lookup", deadline_at=12)
        if answer[5]:
            self._cache.clear()
            return np.empty(0, dtype=np.int64), None, self._commit_result(answer[5])
        found, token = self._candidates(fields, answer, pinned_keys(keys).tolist())
        return found, token, None

    def fetch_candidates(self, ids: I64Array, chance: ChanceFilter) -> DocBatch:
        """:meth:`fetch` of ``ids`` less the chance hits (judged on the fetched records)."""
        return fetch_without_chance_hits(self, ids, chance)

    def flush(self) -> None:
        """Nothing to do: every commit is applied when it is made."""

    def fetch(self, ids: I64Array) -> DocBatch:
        """Records of ``ids`` with their roots; from the lookup snapshot when it has them all."""
        wanted = [int(i) for i in ids]
        missing = [i for i in wanted if i not in self._cache]
        if missing:
            recs, roots = self._run("fetch", [self.prefix, *missing], "fetch")
            for doc, rec, root in zip(missing, recs, roots, strict=True):
                if rec:
                    self._cache[doc] = (bytes(rec), int(root))
        present = [i for i in wanted if i in self._cache]
        return self._batch(present)

    def commit(self, commit: Commit) -> CommitResult | None:
        """Apply ``commit`` in one atomic script; ``None`` if a bucket changed since the lookup."""
        reply = self._run("commit", self._commit_args(commit), "commit", deadline_at=12)
        self._cache.clear()
        if int(reply[0]) == -2:
            self.conflicts += 1
            return None
        return self._commit_result(reply)

    def _candidates(
        self, fields: list[bytes], answer: Sequence[Any], pinned: list[bool]
    ) -> tuple[I64Array, bytes]:
        """``(ids, token)`` from a lookup answer; caches the prefetched records for :meth:`fetch`.

        ``pinned``: which fields are exact-digest or url buckets (see :data:`~.base.MAX_CANDIDATES`).
        """
        values, ids, recs, roots, ncand = answer[:5]
        # each value: the bucket's first BUCKET_CAP ids, then its last id (see ``trimmed``)
        token = b"".join(fields) + b"".join(bytes(v[-4:]) if len(v) >= 4 else _NONE4 for v in values)
        self._cache.clear()
        candidates: list[int] = []
        if recs or not ids:
            for k, doc in enumerate(ids):
                rec = recs[k] if k < len(recs) else b""
                if rec:
                    self._cache[int(doc)] = (bytes(rec), int(roots[k]))
                    if k < ncand:
                        candidates.append(int(doc))
        else:  # too many candidates to prefetch: fetch() will ask
            candidates = [int(d) for d in ids[:ncand]]
        if candidates:
            self._last_doc = max(self._last_doc, *candidates)
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
        ttl = 0 if self.ttl is None or not math.isfinite(self.ttl) else max(1, math.ceil(self.ttl))
        self._seq += 1
        return [
            self.prefix,
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
            self._client_id,
            self._seq,
            0,  # the deadline, set at each attempt
            bucket_fields(np.array([commit.named_key], dtype=np.uint64))[0]
            if commit.named_key is not None
            else b"",
        ]

    def _commit_result(self, reply: list[Any]) -> CommitResult:
        doc_id = int(reply[0])
        self._last_doc = max(self._last_doc, doc_id)
        return CommitResult(
            doc_id=doc_id, host_pages=int(reply[1]), promoted=len(reply) > 2 and int(reply[2]) == 1
        )

    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` its cluster's representative, in one atomic script (see the
        protocol; a retry finds the page a root already and changes nothing)."""
        changed = self._run("promote", [self.prefix, int(doc_id)], "promote")
        self._cache.clear()
        return bool(changed)

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol):
        reads every page's parent and host (one script per 5,000 pages), then one script."""
        codes = {host: k for k, host in enumerate(sorted(set(origins) | set(origins.values())))}
        total = len(self)
        ids: list[int] = []
        parents: list[int] = []
        hosts: list[int] = []
        step = 5000
        for first in range(0, total, step):
            got, names = self._run("parents_hosts", [self.prefix, first, min(step, total - first)], "promote")
            for k, (parent, name) in enumerate(zip(got, names, strict=True)):
                if int(parent) != -2:
                    ids.append(first + k)
                    parents.append(int(parent))
                    hosts.append(codes.get(reply_text(name), len(codes)))
        if not ids:
            return 0
        id_arr = np.array(ids, dtype=np.int64)
        roots = record_roots(id_arr, np.array(parents, dtype=np.int64))
        chosen = origin_members(
            roots, np.array(hosts, dtype=np.int64), {codes[m]: codes[o] for m, o in origins.items()}, id_arr
        )
        changed = 0
        for start in range(0, len(chosen), 1000):
            changed += len(self._run("promote", [self.prefix, *chosen[start : start + 1000]], "promote")) // 2
        self._cache.clear()
        return changed

    # -- reports -------------------------------------------------------------------------------
    def host_counts(self) -> dict[str, HostCounts]:
        """Counters of every host (all processes)."""
        return self._host_counters()[0]

    def _counter_fields(self) -> dict[Any, Any]:
        """The raw host counters: ``{"<c>|<host>": count}`` (see the key layout)."""
        return dict(self._call(lambda: self._client.hgetall(f"{self._base}:hc"), "host counts"))

    def _host_counters(self) -> tuple[dict[str, HostCounts], dict[str, int], dict[str, int]]:
        """Host counters, documents and duplicated documents per host."""
        raw = self._counter_fields()
        out: dict[str, HostCounts] = {}
        documents: dict[str, int] = {}
        duplicated: dict[str, int] = {}
        for key, value in raw.items():
            name = reply_text(key)
            kind, _, host = name.partition("|")
            if kind == "D":
                documents[host] = int(value)
                continue
            if kind == "U":
                duplicated[host] = int(value)
                continue
            counts = out.setdefault(host, HostCounts())
            attr = _COUNTER_CHAR.get(kind)
            if attr is not None:
                setattr(counts, attr, int(value))
        return out, documents, duplicated

    def mirror_evidence(self, min_pages: int = 0, share: float = 0.0) -> MirrorEvidence:
        """The mirror evidence of the whole shared index (see the protocol): the host counters in
        one request, then the rows of the hosts the decisions read in one pipeline per ring."""
        counts, documents, duplicated = self._host_counters()

        def rows(hosts: list[str]) -> tuple[Rows, Rows]:
            replies = self._mirror_tables(hosts)
            shared: Rows = {}
            canonical: Rows = {}
            for k, host in enumerate(hosts):
                for table, raw in ((shared, replies[2 * k]), (canonical, replies[2 * k + 1])):
                    if raw:
                        table[host] = {reply_text(o): int(n) for o, n in raw.items()}
            return shared, canonical

        pages = {h: c.pages for h, c in counts.items()}
        return read_evidence(documents, duplicated, rows, min_pages=min_pages, share=share, pages=pages)

    def _mirror_tables(self, hosts: list[str]) -> list[Any]:
        """Per host, its ``shared`` then its ``canonical`` hash (``{other host: count}``, raw)."""
        client = self._client

        def read() -> list[Any]:
            pipe = client.pipeline(transaction=False)
            for host in hosts:
                pipe.hgetall(redis_bytes(f"{self._base}:sh:{host}"))
                pipe.hgetall(redis_bytes(f"{self._base}:cn:{host}"))
            return list(pipe.execute())

        return self._call(read, "mirror evidence")

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the largest ones, over the whole shared index."""
        total = len(self)
        parents: list[int] = []
        ids: list[int] = []
        status: list[int] = []
        similarity: list[float] = []
        hamming: list[int] = []
        step = 5000
        for first in range(0, total, step):
            heads = self._run("heads", [self.prefix, first, min(step, total - first)], "clusters")
            for k, head in enumerate(heads):
                if len(head) < 16:
                    continue  # expired
                parent, st, ham, sim, _ = RECORD_HEAD.unpack(bytes(head))
                ids.append(first + k)
                parents.append(parent)
                status.append(st)
                hamming.append(ham)
                similarity.append(sim)
        if not ids:
            return {}, []
        id_arr = np.array(ids, dtype=np.int64)
        roots = record_roots(id_arr, np.array(parents, dtype=np.int64))
        return summarize_clusters(
            roots,
            ids=id_arr,
            status=np.array(status, dtype=np.uint8),
            similarity=np.array(similarity, dtype=np.float32),
            hamming=np.array(hamming, dtype=np.int16),
            max_clusters=max_clusters,
            max_members=max_members,
            describe=self._describe,
            singletons=singletons,
        )

    @property
    def _url_rules_key(self) -> str:
        return f"{self.prefix}:urlrules"

    def save_url_rules(self, writer: str, state: bytes) -> None:
        """Keep a process's duplicate-url rules: field ``writer`` of hash ``<prefix>:urlrules``."""
        client, key = self._client, self._url_rules_key
        self._call(lambda: client.hset(key, writer, bytes(state)), "url rules")

    def url_rules(self) -> dict[str, bytes]:
        """Every writer's duplicate-url rules."""
        client, key = self._client, self._url_rules_key
        found = self._call(lambda: client.hgetall(key), "url rules")
        return {(w.decode() if isinstance(w, bytes) else str(w)): bytes(v) for w, v in found.items()}

    def memory_bytes(self) -> int:
        """Approximate bytes held in Redis by this index (sampled ``MEMORY USAGE``)."""
        client = self._client
        prefix = self.prefix

        def measure() -> int:
            n = int(client.hget(f"{prefix}:m", "next") or 0)
            meta = client.hmget(f"{prefix}:m", "L", "p")
            shards = (1 << int(meta[0] or 0)) + int(meta[1] or 0)
            sample_docs = [f"{prefix}:d:{i}" for i in range(0, n, max(1, n // 200))][:200]
            sample_shards = [f"{prefix}:s:{i}" for i in range(0, shards, max(1, shards // 200))][:200]
            pipe = client.pipeline(transaction=False)
            for key in sample_docs + sample_shards:
                pipe.memory_usage(key, samples=0)
            sizes = [int(s or 0) for s in pipe.execute()]
            doc_sizes, shard_sizes = sizes[: len(sample_docs)], sizes[len(sample_docs) :]
            total = 0
            if doc_sizes:
                total += int(sum(doc_sizes) / len(doc_sizes) * n)
            if shard_sizes:
                total += int(sum(shard_sizes) / len(shard_sizes) * shards)
            overflow = 0
            for key in client.scan_iter(match=f"{prefix}:o:*", count=1000):
                overflow += int(client.memory_usage(key, samples=0) or 0)
            return total + overflow

        return self._call(measure, "memory usage")

    def wipe(self) -> int:
        """Delete every key of this index (for tests and tooling). Returns keys deleted."""
        client = self._client

        def delete() -> int:
            deleted = 0
            batch: list[Any] = []
            for key in client.scan_iter(match=f"{self.prefix}:*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    deleted += int(client.delete(*batch))
                    batch = []
            if batch:
                deleted += int(client.delete(*batch))
            return deleted

        return self._call(delete, "wipe")

    # -- internals -----------------------------------------------------------------------------
    def _call(self, fn: Callable[[], T], what: str, *, recreated: bool = False) -> T:
        if self._client is None:
            raise StorageError(f"the neardup Redis index at {self.where} is not open")
        import redis

        policy = self.retry
        if self._down_until is not None:
            wait = self._down_until - time.monotonic()
            if wait > 0:
                raise StorageError(f"Redis at {safe_url(self.url)} is unreachable (next try in {wait:.1f}s)")
            policy = RetryPolicy(attempts=1)  # half-open: one probe
            self._before_probe()
        self.round_trips += 1
        try:
            result = call_with_retry(
                fn, policy, self._transient, f"Redis {what} at {safe_url(self.url)}", said=self._said
            )
            self._down_until = None
            return result
        except StorageError:
            # the first spell is short (a failover is over in seconds), each failed probe doubles it
            failing = self._down_until is not None
            self._down_spell = min(self.cooldown, 2 * self._down_spell if failing else FIRST_PROBE)
            self._down_until = time.monotonic() + self._down_spell
            raise
        except redis.ResponseError as exc:
            if "NEARDUP_NOINDEX" in str(exc):
                if self._opened and not recreated:
                    self._recreate_index()
                    return self._call(fn, what, recreated=True)
                raise StorageError(
                    f"the neardup index at {self.where} vanished (was Redis restarted without persistence, "
                    "or the keys deleted?)"
                ) from exc
            raise StorageError(f"Redis {what} at {safe_url(self.url)} failed: {self._said(exc)}") from exc
        except redis.RedisError as exc:
            raise StorageError(f"Redis {what} at {safe_url(self.url)} failed: {self._said(exc)}") from exc

    def _said(self, exc: BaseException) -> str:
        """An error's message without the secrets of the url (a client library may quote them)."""
        return scrub(str(exc), self.url)

    def _before_probe(self) -> None:
        """Called before a single attempt probes a server that failed (nothing to do on one server)."""

    def _run(self, script: str, args: Sequence[Any], what: str, *, deadline_at: int | None = None) -> Any:
        """Run a script; ``args[deadline_at]`` gets a fresh commit deadline at each attempt."""
        runner = self._scripts[script]
        if deadline_at is None:
            return self._call(lambda: runner(keys=[], args=list(args)), what)
        import redis

        def attempt() -> Any:
            argv = list(args)
            argv[deadline_at] = repr(self._deadline())
            try:
                return runner(keys=[], args=argv)
            except redis.ResponseError as exc:
                if "NEARDUP_LATE" in str(exc):  # refused, nothing applied: as if it timed out
                    raise redis.TimeoutError("the commit reached Redis after the client's timeout") from exc
                raise

        return self._call(attempt, what)

    def _batch(self, ids: list[int]) -> DocBatch:
        n = len(ids)
        num_perm = self._num_perm
        signatures = np.zeros((n, num_perm), dtype=STORED_DTYPE)
        simhashes = np.zeros(n, dtype=np.uint64)
        added = np.zeros(n, dtype=np.float64)
        roots = np.zeros(n, dtype=np.int64)
        digests: list[bytes] = []
        urls: list[str] = []
        hosts: list[str] = []
        profiles: list[bytes] = []
        statuses: list[str] = []
        for row, doc in enumerate(ids):
            rec, root = self._cache[doc]
            host, profile, signature, url = self._unpack_tail(rec, doc)  # checks the length first
            _, status, _, _, added[row] = RECORD_HEAD.unpack_from(rec, 0)
            simhashes[row] = int.from_bytes(rec[16:24], "little")
            digests.append(rec[24:40])
            signatures[row] = np.frombuffer(signature, dtype=STORED_DTYPE, count=num_perm)
            hosts.append(host)
            profiles.append(profile)
            urls.append(url)
            statuses.append(STATUS_NAMES.get(status, "unique"))
            roots[row] = root if root >= 0 else doc
        return DocBatch(
            ids=np.array(ids, dtype=np.int64),
            signatures=signatures,
            simhashes=simhashes,
            digests=digests,
            roots=roots,
            added=added,
            urls=urls,
            hosts=hosts,
            profiles=profiles,
            statuses=statuses,
        )

    def _unpack_tail(self, rec: bytes, doc: int) -> tuple[str, bytes, bytes, str]:
        try:
            return unpack_tail(rec, self._num_perm)
        except (ValueError, UnicodeDecodeError) as exc:
            raise StorageError(
                f"the record of page {doc} in the neardup index at {self.where} is damaged ({exc})"
            ) from exc

    def _describe(self, ids: Sequence[int]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        id_list = list(ids)
        for start in range(0, len(id_list), 500):
            part = id_list[start : start + 500]
            recs, _ = self._run("fetch", [self.prefix, *part], "clusters")
            for rec in recs:
                if not rec:
                    out.append(("", ""))
                    continue
                host, _, _, url = self._unpack_tail(bytes(rec), -1)
                out.append((url, host))
        return out


__all__ = ["DEFAULT_URL", "STATUS_NAMES", "RedisStorage", "safe_url"]
