"""What both Redis stores are built on (:mod:`.redis_store`, :mod:`.redis_cluster`).

:class:`RedisBase` holds the settings and one client: every round trip goes through
:meth:`RedisBase.call` (retries with backoff, then a cooldown between single probes; an index
that vanished is created again). It also keeps commit deadlines in server time, the check of the
index's parameters, the records a lookup cached (decoded by :meth:`RedisBase.cached_batch`) and the
url rules. Each store adds its own connection and scripts; its collaborators (pages, exports, host
counters) reach Redis through its public members only (see :class:`RedisBase`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from neardup_scrapy.core.minhash import STORED_DTYPE
from neardup_scrapy.core.urls import scrub

from .base import (
    STATUS_NAMES,
    CommitResult,
    DocBatch,
    ParameterMismatchError,
    StorageError,
    compare_parameters,
)
from .redis_common import RECORD_HEAD, reply_text, safe_url, unpack_tail
from .retry import RetryPolicy, call_with_retry

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds after a round trip failed all its retries before one attempt probes the server again;
#: each probe that fails doubles the spell, up to the store's ``cooldown``.
FIRST_PROBE = 0.5


@dataclass
class CommitState:
    """What a store's commits carry and learn (:attr:`RedisBase.commit_state`).

    Attributes:
        seq: the sequence number of this client's last commit (each commit takes the next; a
            replay of an applied one is answered with its first result).
        last_doc: the largest doc id seen (a re-created index continues after it).
        clock_offset: Redis server time minus local time, in seconds (for commit deadlines).
    """

    seq: int = 0
    last_doc: int = -1
    clock_offset: float = 0.0


class RedisBase:
    """The settings, client, round trips and records cache of a Redis store (see the module
    docstring); the arguments are those of :class:`~.redis_store.RedisStorage`. A store defines
    ``__len__`` and ``_recreate_index``.

    What the store's collaborators use: :attr:`client`, :attr:`key_base`, :attr:`client_id`,
    :attr:`records_cache`, :attr:`commit_state`, :meth:`call`, :meth:`deadline`, :meth:`said`,
    :meth:`unpack_tail`, :meth:`cached_batch`, :meth:`commit_result`, the settings (``prefix``,
    ``ttl``, ``prefetch``, :attr:`where`) and ``conflicts``.
    """

    def __init__(
        self,
        url: str,
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
        self._cache: dict[int, tuple[bytes, int]] = {}
        self._transient: tuple[type[BaseException], ...] = ()
        self._opened = False
        self._init_args: list[Any] = []
        self._wanted: dict[str, Any] = {}
        #: Sequence number, last doc id and clock offset of the commits (see :class:`CommitState`).
        self.commit_state = CommitState()
        #: Commits that found a bucket changed since their lookup (the detector re-checked).
        self.conflicts = 0
        #: Calls to Redis made so far (each one round trip, retries not counted), for benchmarks.
        self.round_trips = 0

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def where(self) -> str:
        """Url (without password) and prefix, for messages."""
        return f"{safe_url(self.url)} (prefix {self.prefix!r})"

    @property
    def client(self) -> Any:
        """The Redis client (``None`` when closed); run its calls through :meth:`call`."""
        return self._client

    @property
    def key_base(self) -> str:
        """What counter and mirror keys start with: the prefix (``{prefix}``, a hash tag, on a cluster)."""
        return self._base

    @property
    def client_id(self) -> str:
        """This client's name in the index (its commits' idempotency keys and counter batches)."""
        return self._client_id

    @property
    def records_cache(self) -> dict[int, tuple[bytes, int]]:
        """The records a lookup or fetch cached, ``{doc id: (record, root)}``; cleared by every write."""
        return self._cache

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
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def deadline(self) -> float:
        """When the client gives up waiting for a reply sent now, in server time (0: never)."""
        kwargs = getattr(getattr(self._client, "connection_pool", None), "connection_kwargs", {})
        timeout = kwargs.get("socket_timeout", self.socket_timeout)
        if not timeout:
            return 0.0
        return time.time() + self.commit_state.clock_offset + float(timeout)

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

    def commit_result(self, reply: list[Any]) -> CommitResult:
        """The result of a commit script's ``reply`` (doc id, host pages, promoted); notes the doc id."""
        doc_id = int(reply[0])
        self.commit_state.last_doc = max(self.commit_state.last_doc, doc_id)
        return CommitResult(
            doc_id=doc_id, host_pages=int(reply[1]), promoted=len(reply) > 2 and int(reply[2]) == 1
        )

    def flush(self) -> None:
        """Nothing to do: every commit is applied when it is made."""

    @property
    def _url_rules_key(self) -> str:
        return f"{self.prefix}:urlrules"

    def save_url_rules(self, writer: str, state: bytes) -> None:
        """Keep a process's duplicate-url rules: field ``writer`` of hash ``<prefix>:urlrules``."""
        client, key = self._client, self._url_rules_key
        self.call(lambda: client.hset(key, writer, bytes(state)), "url rules")

    def url_rules(self) -> dict[str, bytes]:
        """Every writer's duplicate-url rules."""
        client, key = self._client, self._url_rules_key
        found = self.call(lambda: client.hgetall(key), "url rules")
        return {(w.decode() if isinstance(w, bytes) else str(w)): bytes(v) for w, v in found.items()}

    # -- round trips ---------------------------------------------------------------------------
    def call(self, fn: Callable[[], T], what: str, *, recreated: bool = False) -> T:
        """``fn()``, one round trip about ``what`` (for messages), under the store's retries and cooldown.

        Raises:
            StorageError: Redis failed (after the retries), or the index vanished and cannot be
                created again.
        """
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
                fn, policy, self._transient, f"Redis {what} at {safe_url(self.url)}", said=self.said
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
                    return self.call(fn, what, recreated=True)
                raise StorageError(
                    f"the neardup index at {self.where} vanished (was Redis restarted without persistence, "
                    "or the keys deleted?)"
                ) from exc
            raise StorageError(f"Redis {what} at {safe_url(self.url)} failed: {self.said(exc)}") from exc
        except redis.RedisError as exc:
            raise StorageError(f"Redis {what} at {safe_url(self.url)} failed: {self.said(exc)}") from exc

    def said(self, exc: BaseException) -> str:
        """An error's message without the secrets of the url (a client library may quote them)."""
        return scrub(str(exc), self.url)

    def _before_probe(self) -> None:
        """Called before a single attempt probes a server that failed (nothing to do on one server)."""

    # -- the records a lookup cached ------------------------------------------------------------
    def cached_batch(self, ids: list[int]) -> DocBatch:
        """The records of ``ids`` with their roots, decoded from :attr:`records_cache` (all must be there)."""
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
            host, profile, signature, url = self.unpack_tail(rec, doc)  # checks the length first
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

    def unpack_tail(self, rec: bytes, doc: int) -> tuple[str, bytes, bytes, str]:
        """Host, profile, signature and url of page ``doc``'s record ``rec``.

        Raises:
            StorageError: the record is damaged.
        """
        try:
            return unpack_tail(rec, self._num_perm)
        except (ValueError, UnicodeDecodeError) as exc:
            raise StorageError(
                f"the record of page {doc} in the neardup index at {self.where} is damaged ({exc})"
            ) from exc


__all__ = ["FIRST_PROBE", "CommitState", "RedisBase"]
