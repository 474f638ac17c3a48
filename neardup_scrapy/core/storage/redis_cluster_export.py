"""Whole-index work on a Redis Cluster (:mod:`.redis_cluster`): the page table read back, the
promotions of mirrors' origins, the clusters and their members for the report, the memory used and
wiping the index."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .base import I64Array
from .members import summarize_clusters
from .redis_base import RedisBase
from .redis_cluster_commit import ClusterCommits
from .redis_cluster_layout import RECORDS_PER_KEY, ClusterLayout
from .redis_cluster_records import ClusterRecords
from .redis_cluster_scripts import ClusterScripts
from .redis_common import RECORD_HEAD, record_roots, redis_bytes
from .unionfind import origin_members


class ClusterExports:
    """The page table, promotions of origins, clusters, memory and wiping of the index of ``store``."""

    def __init__(
        self,
        store: RedisBase,
        scripts: ClusterScripts,
        layout: ClusterLayout,
        records: ClusterRecords,
        commits: ClusterCommits,
    ) -> None:
        self._store = store
        self._scripts = scripts
        self._layout = layout
        self._records = records
        self._commits = commits

    def page_table(self) -> tuple[I64Array, I64Array]:
        """``(ids, parents)`` of every committed page, from the page table."""
        ids, parents, _ = self.page_table_hosts()
        return ids, parents

    def page_table_hosts(self) -> tuple[I64Array, I64Array, I64Array]:
        """``(ids, parents, host codes)`` of every committed page, from the page table."""
        total = int(
            self._store.call(lambda: self._store.client.hget(f"{self._store.key_base}:m", "next"), "clusters")
            or 0
        )
        chunks: list[bytes] = []
        step = 1 << 16
        for first in range(0, total, step):
            count = min(step, total - first)
            raw = self._scripts.eval(
                "table", self._store.key_base, [self._store.key_base, first, count], "clusters"
            )
            chunks.append(bytes(raw).ljust(8 * count, b"\0"))
        table = (
            np.frombuffer(b"".join(chunks), dtype="<u4").reshape(-1, 2) if chunks else np.zeros((0, 2), "<u4")
        )
        ids = np.flatnonzero(table[:, 0] > 0).astype(np.int64)
        return ids, table[ids, 0].astype(np.int64) - 1, table[ids, 1].astype(np.int64) - 1

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol):
        one read of the page table, then :meth:`promote` for the pages chosen."""
        names = sorted(set(origins) | set(origins.values()))
        raw = self._store.call(
            lambda: self._store.client.hmget(f"{self._store.key_base}:hk", [redis_bytes(h) for h in names]),
            "promote",
        )
        code = {h: int(c) for h, c in zip(names, raw, strict=True) if c is not None}
        wanted = {code[m]: code[o] for m, o in origins.items() if m in code and o in code}
        if not wanted:
            return 0
        ids, parents, hosts = self.page_table_hosts()
        if not len(ids):
            return 0
        chosen = origin_members(record_roots(ids, parents), hosts, wanted, ids)
        return sum(
            self._commits.promote(chosen[start : start + 1000]) for start in range(0, len(chosen), 1000)
        )

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the largest ones, over the whole shared index."""
        ids, parents = self.page_table()
        if not len(ids):
            return {}, []
        heads = self._records.heads(ids.tolist())
        keep = [k for k, h in enumerate(heads) if len(h) >= 16]  # expired records left out
        unpacked = [RECORD_HEAD.unpack(bytes(heads[k])) for k in keep]
        if self._store.ttl is not None and math.isfinite(self._store.ttl):
            # records past the ttl wait for their hash to expire: left out as if gone
            since = time.time() - self._store.ttl
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

    def _describe(self, ids: Sequence[int]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        places = [self._layout.record_at(d)[:2] for d in ids]
        values = self._records.per_key("HGET", places, (), "clusters")
        for doc, value in zip(ids, values, strict=True):
            rec = self._records.record_of(value, doc)
            if not rec:
                out.append(("", ""))
                continue
            host, _, _, url = self._store.unpack_tail(bytes(rec), -1)
            out.append((url, host))
        return out

    def memory_bytes(self) -> int:
        """Approximate bytes held by this index over the cluster (sampled ``MEMORY USAGE``)."""
        client = self._store.client

        def measure() -> int:
            pages = int(client.hget(f"{self._store.key_base}:m", "count") or 0)
            top = int(client.hget(f"{self._store.key_base}:m", "next") or 0)
            metas = self._scripts.pipeline(
                lambda pipe: [pipe.hmget(f"{b}:m", "L", "p") for b in self._layout.group_bases],
                "memory usage",
            )
            shard_keys = []
            for base, (level, split) in zip(self._layout.group_bases, metas, strict=True):
                count = (1 << int(level or 0)) + int(split or 0)
                shard_keys += [f"{base}:s:{n}" for n in range(count)]
            record_keys = -(-top // RECORDS_PER_KEY)
            sample_docs = [
                self._layout.record_key(i) for i in range(0, record_keys, max(1, record_keys // 200))
            ][:200]
            sample_shards = shard_keys[:: max(1, len(shard_keys) // 200)][:200]
            fixed = [f"{self._store.key_base}:{name}" for name in ("log", "hk", "hv", "m")]
            fixed += [f"{base}:hc" for base in self._layout.group_bases]
            fixed += [f"{self._store.key_base}:t:{chunk}" for chunk in range((top >> 20) + 1)]
            sizes: list[int] = self._scripts.pipeline(
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

        return self._store.call(measure, "memory usage")

    def wipe(self) -> int:
        """Delete every key of this index on every primary (for tests and tooling). Returns keys deleted."""
        client = self._store.client

        def delete() -> int:
            keys = [
                key
                for pattern in (f"{{{self._store.prefix}}}:*", f"{{{self._store.prefix}:g*")
                for key in client.scan_iter(match=pattern, count=1000)
            ]
            return sum(int(n) for n in self._records.per_key("DEL", keys, (), "wipe"))

        deleted = int(self._store.call(delete, "wipe"))
        self._commits.snapshot = None
        self._commits.next_id = -1
        return deleted


__all__ = ["ClusterExports"]
