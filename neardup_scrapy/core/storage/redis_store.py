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
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from neardup_scrapy.core.mirrors import MirrorEvidence

from .base import (
    STATUS_NAMES,
    Commit,
    CommitResult,
    DocBatch,
    HostCounts,
    I64Array,
    StorageError,
    U64Array,
    fetch_without_chance_hits,
)
from .redis_base import RedisBase
from .redis_common import safe_url
from .redis_hosts import ServerHosts
from .redis_store_export import ServerExports
from .redis_store_pages import ServerPages
from .redis_store_scripts import ServerScripts

if TYPE_CHECKING:
    from neardup_scrapy.core.chance import ChanceFilter

logger = logging.getLogger(__name__)

DEFAULT_URL = "redis://127.0.0.1:6379/0"
FORMAT = "neardup-redis/2"


class RedisStorage(RedisBase):
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
            after :data:`~.redis_base.FIRST_PROBE` seconds, then after spells that double up to ``cooldown``.
            So a crawl that passes pages through while Redis is down is not slowed by a
            backoff per page, and checking is back within ``cooldown`` seconds of the server
            (or a promoted replica) answering, sooner after a short outage.
        client: an existing ``redis.Redis`` client to use instead of ``url``.
    """

    def __init__(
        self, url: str = DEFAULT_URL, prefix: str = "neardup", ttl: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(url, prefix, ttl, **kwargs)
        self._scripts = ServerScripts(self)
        self._pages = ServerPages(self, self._scripts)
        self._hosts = ServerHosts(self)
        self._exports = ServerExports(self, self._scripts)

    # -- lifecycle ---------------------------------------------------------------------------
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
                raise StorageError(f"invalid Redis url {safe_url(self.url)}: {self.said(exc)}") from None
        client = self._client
        self._scripts.register(client)
        try:
            client.ping()
        except self._transient as exc:
            raise StorageError(f"cannot reach Redis at {safe_url(self.url)}: {self.said(exc)}") from exc
        except redis.RedisError as exc:
            raise StorageError(
                f"Redis at {safe_url(self.url)} refused the connection: {self.said(exc)}"
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
        self._check_parameters(self._scripts.run("init", self._init_args, "open"))

    def _recreate_index(self) -> None:
        """The index vanished: create it again, empty, ids continuing after the last one seen."""
        self._init_args[4] = self.commit_state.last_doc + 1
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
        self.commit_state.clock_offset = seconds + micros / 1e6 - (before + after) / 2

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

    def __len__(self) -> int:
        raw = self.call(lambda: self._client.hget(f"{self.prefix}:m", "next"), "len")
        return int(raw or 0)

    # -- the calls per page (:mod:`.redis_store_pages`) ------------------------------------------
    def lookup(self, keys: U64Array) -> tuple[I64Array, object]:
        """Candidates of ``keys`` in one round trip; their records are cached for :meth:`fetch`."""
        return self._pages.lookup(keys)

    def lookup_or_insert(
        self, keys: U64Array, provisional: Commit
    ) -> tuple[I64Array, object, CommitResult | None]:
        """Like :meth:`lookup`; with no live page in the buckets, apply ``provisional`` in the same step."""
        return self._pages.lookup_or_insert(keys, provisional)

    def fetch(self, ids: I64Array) -> DocBatch:
        """Records of ``ids`` with their roots; from the lookup snapshot when it has them all."""
        return self._pages.fetch(ids)

    def fetch_candidates(self, ids: I64Array, chance: ChanceFilter) -> DocBatch:
        """:meth:`fetch` of ``ids`` less the chance hits (judged on the fetched records)."""
        return fetch_without_chance_hits(self, ids, chance)

    def commit(self, commit: Commit) -> CommitResult | None:
        """Apply ``commit`` in one atomic script; ``None`` if a bucket changed since the lookup."""
        return self._pages.commit(commit)

    # -- the whole index (:mod:`.redis_store_export`, :mod:`.redis_hosts`) -----------------------
    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` its cluster's representative, in one atomic script."""
        return self._exports.promote(doc_id)

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol)."""
        return self._exports.promote_origins(origins)

    def host_counts(self) -> dict[str, HostCounts]:
        """Counters of every host (all processes)."""
        return self._hosts.host_counts()

    def mirror_evidence(self, min_pages: int = 0, share: float = 0.0) -> MirrorEvidence:
        """The mirror evidence of the whole shared index (see the protocol)."""
        return self._hosts.mirror_evidence(min_pages, share)

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the largest ones, over the whole shared index."""
        return self._exports.clusters(max_clusters, max_members, singletons=singletons)

    def memory_bytes(self) -> int:
        """Approximate bytes held in Redis by this index (sampled ``MEMORY USAGE``)."""
        return self._exports.memory_bytes()

    def wipe(self) -> int:
        """Delete every key of this index (for tests and tooling). Returns keys deleted."""
        return self._exports.wipe()


__all__ = ["DEFAULT_URL", "STATUS_NAMES", "RedisStorage", "safe_url"]
