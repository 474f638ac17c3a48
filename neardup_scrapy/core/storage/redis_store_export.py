"""Whole-index work of the single-server store (:mod:`.redis_store`): promotions, the clusters
and their members for the report, the memory used and wiping the index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .members import summarize_clusters
from .redis_base import RedisBase
from .redis_common import RECORD_HEAD, record_roots, reply_text
from .redis_store_scripts import ServerScripts
from .unionfind import origin_members


class ServerExports:
    """Promotions, clusters, memory and wiping of the index of ``store``, with ``scripts``."""

    def __init__(self, store: RedisBase, scripts: ServerScripts) -> None:
        self._store = store
        self._scripts = scripts

    def promote(self, doc_id: int) -> bool:
        """Make page ``doc_id`` its cluster's representative, in one atomic script (see the
        protocol; a retry finds the page a root already and changes nothing)."""
        changed = self._scripts.run("promote", [self._store.prefix, int(doc_id)], "promote")
        self._store.records_cache.clear()
        return bool(changed)

    def promote_origins(self, origins: Mapping[str, str]) -> int:
        """Promote the origin's pages of clusters represented on a mirror (see the protocol):
        reads every page's parent and host (one script per 5,000 pages), then one script."""
        codes = {host: k for k, host in enumerate(sorted(set(origins) | set(origins.values())))}
        total = len(self._store)
        ids: list[int] = []
        parents: list[int] = []
        hosts: list[int] = []
        step = 5000
        for first in range(0, total, step):
            got, names = self._scripts.run(
                "parents_hosts", [self._store.prefix, first, min(step, total - first)], "promote"
            )
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
            changed += (
                len(
                    self._scripts.run(
                        "promote", [self._store.prefix, *chosen[start : start + 1000]], "promote"
                    )
                )
                // 2
            )
        self._store.records_cache.clear()
        return changed

    def clusters(
        self, max_clusters: int, max_members: int, *, singletons: bool = False
    ) -> tuple[dict[int, int], list[dict[str, Any]]]:
        """Size histogram of all clusters and the largest ones, over the whole shared index."""
        total = len(self._store)
        parents: list[int] = []
        ids: list[int] = []
        status: list[int] = []
        similarity: list[float] = []
        hamming: list[int] = []
        step = 5000
        for first in range(0, total, step):
            heads = self._scripts.run(
                "heads", [self._store.prefix, first, min(step, total - first)], "clusters"
            )
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

    def _describe(self, ids: Sequence[int]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        id_list = list(ids)
        for start in range(0, len(id_list), 500):
            part = id_list[start : start + 500]
            recs, _ = self._scripts.run("fetch", [self._store.prefix, *part], "clusters")
            for rec in recs:
                if not rec:
                    out.append(("", ""))
                    continue
                host, _, _, url = self._store.unpack_tail(bytes(rec), -1)
                out.append((url, host))
        return out

    def memory_bytes(self) -> int:
        """Approximate bytes held in Redis by this index (sampled ``MEMORY USAGE``)."""
        client = self._store.client
        prefix = self._store.prefix

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

        return self._store.call(measure, "memory usage")

    def wipe(self) -> int:
        """Delete every key of this index (for tests and tooling). Returns keys deleted."""
        client = self._store.client

        def delete() -> int:
            deleted = 0
            batch: list[Any] = []
            for key in client.scan_iter(match=f"{self._store.prefix}:*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    deleted += int(client.delete(*batch))
                    batch = []
            if batch:
                deleted += int(client.delete(*batch))
            return deleted

        return self._store.call(delete, "wipe")


__all__ = ["ServerExports"]
