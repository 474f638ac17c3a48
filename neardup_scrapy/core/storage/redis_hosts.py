"""Host counters and mirror evidence of the Redis stores, as the reports read them.

:class:`HostEvidence` turns the raw counters (``P:hc``, fields ``<c>|<host>``) and the mirror
hashes (``P:sh:<host>``, ``P:cn:<host>``) into :class:`~.base.HostCounts` and
:class:`~neardup_scrapy.core.mirrors.MirrorEvidence`; each store says where they are:
:class:`ServerHosts` on one server, :class:`~.redis_cluster_counts.ClusterCounts` on a cluster.
"""

from __future__ import annotations

from typing import Any

from neardup_scrapy.core.mirrors import MirrorEvidence, Rows, read_evidence

from .base import HostCounts
from .redis_base import RedisBase
from .redis_common import redis_bytes, reply_text

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


class HostEvidence:
    """Host counters and mirror evidence of the index of ``store`` (all processes)."""

    def __init__(self, store: RedisBase) -> None:
        self._store = store

    def host_counts(self) -> dict[str, HostCounts]:
        """Counters of every host (all processes)."""
        return self._host_counters()[0]

    def _counter_fields(self) -> dict[Any, Any]:
        """The raw host counters: ``{"<c>|<host>": count}`` (see the key layout)."""
        raise NotImplementedError

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
        raise NotImplementedError


class ServerHosts(HostEvidence):
    """The counters and mirror hashes of the single-server store (see :mod:`.redis_store`)."""

    def _counter_fields(self) -> dict[Any, Any]:
        """The raw host counters: ``{"<c>|<host>": count}`` (see the key layout)."""
        return dict(
            self._store.call(lambda: self._store.client.hgetall(f"{self._store.key_base}:hc"), "host counts")
        )

    def _mirror_tables(self, hosts: list[str]) -> list[Any]:
        """Per host, its ``shared`` then its ``canonical`` hash (``{other host: count}``, raw)."""
        client = self._store.client

        def read() -> list[Any]:
            pipe = client.pipeline(transaction=False)
            for host in hosts:
                pipe.hgetall(redis_bytes(f"{self._store.key_base}:sh:{host}"))
                pipe.hgetall(redis_bytes(f"{self._store.key_base}:cn:{host}"))
            return list(pipe.execute())

        return self._store.call(read, "mirror evidence")


__all__ = ["HostEvidence", "ServerHosts"]
