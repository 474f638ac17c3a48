"""Host counters and mirror evidence on a Redis Cluster (:mod:`.redis_cluster`): the commit
script's counter deltas applied on their hosts' group slots, and read back from them."""

from __future__ import annotations

import logging
import struct
from typing import Any

from .base import StorageError
from .redis_base import RedisBase
from .redis_cluster_layout import ClusterLayout
from .redis_cluster_scripts import ClusterScripts
from .redis_common import redis_bytes
from .redis_hosts import HostEvidence

logger = logging.getLogger(__name__)


class ClusterCounts(HostEvidence):
    """The counter batches of ``store`` not applied yet, and its host counters and mirror evidence."""

    def __init__(self, store: RedisBase, scripts: ClusterScripts, layout: ClusterLayout) -> None:
        super().__init__(store)
        self._scripts = scripts
        self._layout = layout
        self.batch = 0
        self.pending: list[tuple[int, dict[int, list[Any]], bytes]] = []

    def apply(self, packed: bytes, host: str | None = None) -> int:
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
            by_group.setdefault(self._layout.host_group(a), []).extend((kind, a, b, int(n)))
        want = redis_bytes(host) if host else b""
        if want:
            by_group.setdefault(self._layout.host_group(want), [])
        if by_group:
            self.batch += 1
            self.pending.append((self.batch, by_group, want))
        return self.flush()

    def flush(self) -> int:
        """Apply the counter batches not applied yet, in order, each under its own batch number
        (a group that has it already skips it); the last batch's host pages."""
        pages = 0
        sha = self._scripts.shas["counts"]
        while self.pending:
            batch, by_group, want = self.pending[0]
            home = self._layout.host_group(want) if want else -1

            def fill(
                pipe: Any,
                batch: int = batch,
                by_group: dict[int, list[Any]] = by_group,
                want: bytes = want,
                home: int = home,
            ) -> None:
                for g in sorted(by_group):
                    base = self._layout.group_bases[g]
                    mine = want if g == home else b""
                    self._scripts.script_in(
                        pipe, sha, base, base, self._store.client_id, batch, mine, *by_group[g]
                    )

            try:
                replies = self._scripts.pipeline(fill, "host counts")
            except StorageError as exc:
                logger.warning(
                    "neardup: host counts of %d commit(s) not added yet, retried with the next: %s",
                    len(self.pending),
                    exc,
                )
                return 0
            self.pending.pop(0)
            pages = max(int(r or 0) for r in replies)
        return pages

    def _counter_fields(self) -> dict[Any, Any]:
        """The host counters of every group slot, merged (a host's live on one)."""
        self.flush()
        raw = self._scripts.pipeline(
            lambda pipe: [pipe.hgetall(f"{base}:hc") for base in self._layout.group_bases], "host counts"
        )
        out: dict[Any, Any] = {}
        for part in raw:
            out.update(part)
        return out

    def _mirror_tables(self, hosts: list[str]) -> list[Any]:
        """The mirror hashes of ``hosts``, each on its host's group slot: one pipeline."""
        self.flush()

        def fill(pipe: Any) -> None:
            for host in hosts:
                name = redis_bytes(host)
                base = self._layout.group_bases[self._layout.host_group(name)]
                pipe.hgetall(f"{base}:sh:".encode() + name)
                pipe.hgetall(f"{base}:cn:".encode() + name)

        return self._scripts.pipeline(fill, "mirror evidence")


__all__ = ["ClusterCounts"]
