"""Storage benchmark: bytes per page (memory, disk, Redis, Redis Cluster) and time per page.

Usage::

    .venv/bin/python benchmarks/bench_storage.py                  # 10k and 100k pages
    .venv/bin/python benchmarks/bench_storage.py --sizes 10000 --redis-url redis://127.0.0.1:6379/0
    .venv/bin/python benchmarks/bench_storage.py --cluster local  # also a local 3+3 Redis Cluster

Footprint: synthetic pages are pushed through each store's protocol (lookup + commit, the way the
detector does) with realistic keys -- the exact key, one key per MinHash band and per SimHash
table -- and 30% near-duplicates that share most of their original's band keys. Bytes per page:
``memory_bytes()`` for memory, the file size for disk, and the growth of Redis' ``used_memory``
(plus the sampled ``MEMORY USAGE`` estimate) for Redis, and of the sum of ``used_memory`` over the
primaries for Redis Cluster, also less their replication buffers (a fixed 1 MB each once full)
(``--cluster URL`` of any node, or ``local`` to start 3 primaries and 3 replicas on loopback ports
with ``tests/redis_cluster_support.py``).

Time: ``det.check`` over real pages (the eval-dev set when present, else generated HTML) with the
memory store and with the Redis store, same pages, same order, in one run, rounds interleaved.
Prints wall and CPU time, round trips per page and the Redis/memory ratios (the target is <= 1.5);
with ``--cluster`` the ``redis-cluster`` variant too (a round trip there is one cluster pipeline).
``--variants memory,redis,redis-2rt`` also times the Redis store without ``lookup_or_insert``
(two round trips for every page), ``memory-2step`` the memory store without it::

    .venv/bin/python benchmarks/bench_storage.py --sizes '' --rounds 7 --variants memory,redis,redis-2rt

``--hosts N`` times the mirror evidence read of a crawl over ``N`` hosts on Redis (each host a
page of its own and a story it shares with a few others, as syndicated news is): the read the
mirror decisions make (counters, then the rows of the hosts that copy most of what they have)
against a read of every host's rows, per read and per page at one read per 500 pages::

    .venv/bin/python benchmarks/bench_storage.py --sizes '' --variants '' --hosts 10000
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neardup_scrapy.core import NearDupDetector  # noqa: E402
from neardup_scrapy.core.params import DetectorParams  # noqa: E402
from neardup_scrapy.core.simhash import block_masks  # noqa: E402
from neardup_scrapy.core.storage.base import Commit, DocRecord, IndexStorage  # noqa: E402
from neardup_scrapy.core.storage.memory import MemoryStorage  # noqa: E402
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage  # noqa: E402
from neardup_scrapy.core.storage.redis_store import RedisStorage  # noqa: E402
from neardup_scrapy.core.storage.sqlite import SQLiteStorage  # noqa: E402

PARAMS = DetectorParams()
KEYS_PER_PAGE = 1 + PARAMS.lsh_bands + len(block_masks(PARAMS.simhash_distance))  # digest, bands, SimHash


def synthetic(n: int, seed: int = 1) -> list[tuple[DocRecord, np.ndarray[Any, Any]]]:
    """``n`` pages: records and keys; 30% near-duplicates of an earlier page."""
    rng = np.random.default_rng(seed)
    out: list[tuple[DocRecord, np.ndarray[Any, Any]]] = []
    tables = np.arange(KEYS_PER_PAGE, dtype=np.uint64) << np.uint64(56)
    low56 = np.uint64((1 << 56) - 1)
    now = time.time()
    for i in range(n):
        host = f"www.site{i % 500}.example.com"
        url = f"https://{host}/articles/2024/{i:07d}/some-article-title-{i % 97}"
        if out and rng.random() < 0.3:
            parent_index = int(rng.integers(0, len(out)))
            base_keys = out[parent_index][1].copy()
            changed = rng.random(KEYS_PER_PAGE) < 0.15
            changed[0] = True  # not an exact copy
            base_keys[changed] = (
                rng.integers(0, 2**63, int(changed.sum()), dtype=np.uint64) & low56
            ) | tables[changed]
            keys, status, parent = base_keys, "near", parent_index
        else:
            keys = (rng.integers(0, 2**63, KEYS_PER_PAGE, dtype=np.uint64) & low56) | tables
            status, parent = "unique", -1
        record = DocRecord(
            url=url,
            host=host,
            digest=rng.bytes(16),
            simhash=int(rng.integers(0, 2**63)),
            signature=rng.integers(0, 2**8, PARAMS.num_perm, dtype=np.uint8),
            parent=parent,
            status=status,
            similarity=0.9 if status == "near" else float("nan"),
            hamming=2 if status == "near" else -1,
            added=now,
        )
        out.append((record, keys))
    return out


def fill(store: IndexStorage, pages: list[tuple[DocRecord, np.ndarray[Any, Any]]]) -> float:
    started = time.perf_counter()
    for record, keys in pages:
        _, token = store.lookup(keys)
        store.commit(
            Commit(
                record=record, keys=keys, token=token, host=record.host, status=record.status, nbytes=20_000
            )
        )
    return time.perf_counter() - started


def redis_used_memory(client: Any) -> int:
    return int(client.info("memory")["used_memory"])


def cluster_used_memory(client: Any, *, replication: bool = True) -> int:
    """Sum of ``used_memory`` over the cluster's primaries; without ``replication``, less their
    replication buffers (the backlog fills to ``repl-backlog-size``, 1 MB, whatever the index)."""
    total = 0
    for node in client.get_primaries():
        info = client.info("memory", target_nodes=node)
        if node.name in info:  # some redis-py versions key the reply by node
            info = info[node.name]
        total += int(info["used_memory"])
        if not replication:
            total -= int(info.get("mem_total_replication_buffers", info.get("mem_replication_backlog", 0)))
    return total


def cluster_index_memory(client: Any) -> int:
    return cluster_used_memory(client, replication=False)


def shared_store(
    store: RedisStorage, pages: list[tuple[DocRecord, np.ndarray[Any, Any]]], *meters: Any
) -> tuple[list[float], float, float, float]:
    """Fill a Redis store: B/page by each meter (growth), seconds, round trips per page, sampled B/page."""
    store.open(PARAMS.index_signature())
    client = store.client
    before = [meter(client) for meter in meters]
    store.round_trips = 0
    seconds = fill(store, pages)
    n = len(pages)
    grown = [(meter(client) - b) / n for meter, b in zip(meters, before, strict=True)]
    out = (grown, seconds, store.round_trips / n, store.memory_bytes() / n)
    store.wipe()
    store.close()
    return out


def footprint(sizes: list[int], redis_url: str | None, cluster_url: str | None = None) -> None:
    print(
        f"footprint ({KEYS_PER_PAGE} bucket keys per page, num_perm={PARAMS.num_perm}, 30% near-duplicates)"
    )
    print(
        f"{'pages':>9} {'memory B/page':>14} {'disk B/page':>12} {'redis B/page':>13} {'(sampled)':>10}"
        f" {'disk us/page':>13} {'redis us/page':>14} {'cluster B/page':>15} {'cluster us/page':>16}"
        f" {'cluster trips':>14} {'cluster B/page without replication buffers':>43}"
    )
    signature = PARAMS.index_signature()
    for n in sizes:
        pages = synthetic(n)
        memory = MemoryStorage()
        memory.open(signature)
        fill(memory, pages)
        mem_bpp = memory.memory_bytes() / n
        with tempfile.TemporaryDirectory() as tmp:
            disk = SQLiteStorage(os.path.join(tmp, "index.sqlite"))
            disk.open(signature)
            disk_time = fill(disk, pages)
            disk.close()
            disk_bpp = os.path.getsize(os.path.join(tmp, "index.sqlite")) / n
        redis_bpp = sampled = redis_time = float("nan")
        cluster_bpp = cluster_index_bpp = cluster_time = trips = float("nan")
        if redis_url:
            (redis_bpp,), redis_time, _, sampled = shared_store(
                RedisStorage(redis_url, prefix=f"bench-{uuid.uuid4().hex[:8]}"), pages, redis_used_memory
            )
        if cluster_url:
            cluster = RedisClusterStorage(cluster_url, prefix=f"bench-{uuid.uuid4().hex[:8]}")
            (cluster_bpp, cluster_index_bpp), cluster_time, trips, _ = shared_store(
                cluster, pages, cluster_used_memory, cluster_index_memory
            )
        print(
            f"{n:>9} {mem_bpp:>14.0f} {disk_bpp:>12.0f} {redis_bpp:>13.0f} {sampled:>10.0f}"
            f" {disk_time / n * 1e6:>13.0f} {redis_time / n * 1e6:>14.0f} {cluster_bpp:>15.0f}"
            f" {cluster_time / n * 1e6:>16.0f} {trips:>14.2f} {cluster_index_bpp:>43.0f}"
        )


def real_pages(limit: int) -> tuple[str, list[tuple[str, str]]]:
    eval_dev = Path(os.environ.get("NEARDUP_EVAL_DEV", ROOT.parent / "shared" / "eval-dev"))
    if (eval_dev / "pages.jsonl.gz").is_file():
        with gzip.open(eval_dev / "pages.jsonl.gz", "rt", encoding="utf-8") as fh:
            pages = [(r["url"], r["html"]) for r in map(json.loads, fh)]
        return "eval-dev", pages[:limit]
    sys.path.insert(0, str(ROOT / "tests"))
    from e2e_server import html_page  # type: ignore[import-not-found]
    from test_storage_support import corpus  # type: ignore[import-not-found]

    out = []
    for url, text, _ in corpus(max(1, limit // 4), 3, seed=3):
        words = text.split()
        out.append((url, html_page("t", [" ".join(words[i : i + 40]) for i in range(0, len(words), 40)])))
    return "generated", out[:limit]


#: Timed variants: (store kind, whether the detector may use ``lookup_or_insert``).
VARIANTS = {
    "memory": ("memory", True),
    "memory-2step": ("memory", False),
    "redis": ("redis", True),
    "redis-2rt": ("redis", False),  # lookup + commit for every page (before lookup_or_insert)
    "redis-cluster": ("redis-cluster", True),
}


def _server_cpu(client: Any) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _one_round(variant: str, urls: dict[str, str], pages: list[tuple[str, str]]) -> dict[str, float]:
    kind, one_step = VARIANTS[variant]
    storage: Any = None
    if kind == "redis":
        storage = RedisStorage(urls["redis"], prefix=f"bench-{uuid.uuid4().hex[:8]}")
    elif kind == "redis-cluster":
        storage = RedisClusterStorage(urls["redis-cluster"], prefix=f"bench-{uuid.uuid4().hex[:8]}")
    det = NearDupDetector(storage=storage)
    if not one_step:
        det.storage.lookup_or_insert = None  # type: ignore[attr-defined]
    client = storage.client if storage is not None else None
    server_before = _server_cpu(client) if client is not None else 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    for url, html in pages:
        det.check(url, html)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    out = {"wall": wall / len(pages), "cpu": cpu / len(pages), "server": 0.0, "trips": 0.0}
    if isinstance(storage, RedisClusterStorage):
        out["server"] = float("nan")  # several servers; not measured
        out["trips"] = storage.round_trips / len(pages)
        storage.wipe()
    elif isinstance(storage, RedisStorage):
        out["server"] = (_server_cpu(client) - server_before) / len(pages)
        out["trips"] = storage.round_trips / len(pages)
        storage.wipe()
    det.close()
    return out


def timing(urls: dict[str, str], limit: int, rounds: int, variants: list[str]) -> None:
    """Time ``det.check`` per page for each variant, rounds interleaved so load drift hits all alike.

    Prints per variant the best wall time, the client CPU time (``process_time``, not inflated by
    waiting for a CPU on a loaded machine), the Redis server CPU per page (``INFO cpu``; includes
    other clients of that server, if any) and the round trips per page, then the ratios to
    ``memory``: of the best wall times, the median of the per-round wall ratios (each round's
    variants run back to back) and of client + server CPU.
    """
    if rounds < 1:
        return
    source, pages = real_pages(limit)
    print(f"\ndet.check time per page over {len(pages)} {source} pages (best of {rounds}, interleaved)")
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for _ in range(rounds):
        for variant in variants:
            runs[variant].append(_one_round(variant, urls, pages))
    print(
        f"  {'variant':<13} {'wall us/page':>12} {'cpu us/page':>12} {'server us/page':>15}"
        f" {'trips/page':>11}"
    )
    best: dict[str, dict[str, float]] = {}
    for variant, rows in runs.items():
        best[variant] = {key: min(r[key] for r in rows) for key in rows[0]}
        b = best[variant]
        print(
            f"  {variant:<13} {b['wall'] * 1e6:12.0f} {b['cpu'] * 1e6:12.0f} {b['server'] * 1e6:15.0f}"
            f" {b['trips']:11.3f}"
        )
    if "memory" not in runs:
        return
    memory = best["memory"]
    for variant in variants:
        if not variant.startswith("redis"):
            continue
        paired = sorted(r["wall"] / m["wall"] for r, m in zip(runs[variant], runs["memory"], strict=True))
        median = paired[len(paired) // 2]
        cpu_ratio = (best[variant]["cpu"] + best[variant]["server"]) / memory["cpu"]
        print(
            f"  {variant}/memory time ratio: {best[variant]['wall'] / memory['wall']:.2f} best wall,"
            f" {median:.2f} median paired wall, {cpu_ratio:.2f} cpu (client+server) (target <= 1.5)"
        )


def mirror_reads(redis_url: str, hosts: int, reads: int = 5) -> None:
    """Time the mirror evidence read over ``hosts`` hosts (module docstring)."""
    import random

    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(50_000)]
    stories = [" ".join(rng.choices(vocabulary, k=120)) for _ in range(max(1, hosts // 4))]
    store = RedisStorage(redis_url, prefix=f"neardup-bench-{uuid.uuid4().hex[:8]}")
    det = NearDupDetector(storage=store)
    try:
        for h in range(hosts):
            det.check(f"https://host{h}.example/own", text=" ".join(rng.choices(vocabulary, k=120)))
            det.check(f"https://host{h}.example/story", text=rng.choice(stories))
        min_pages, share = det.params.mirror_min_pages, det.params.mirror_share
        for label, args in (("decisions' read", (min_pages, share / 2)), ("every host's rows", ())):
            start = time.perf_counter()
            for _ in range(reads):
                evidence = store.mirror_evidence(*args)
            each = (time.perf_counter() - start) / reads
            print(
                f"mirror evidence over {hosts} hosts, {label}: {each * 1e3:.1f} ms per read "
                f"({len(evidence.shared)} hosts' rows), "
                f"{each / 500 * 1e6:.0f} us per page at one read per 500 pages"
            )
    finally:
        store.wipe()
        det.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated page counts")
    parser.add_argument(
        "--redis-url", default=os.environ.get("NEARDUP_TEST_REDIS", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--no-redis", action="store_true")
    parser.add_argument(
        "--cluster",
        default=None,
        help="a Redis Cluster node url, or 'local' to start a 3+3 cluster on loopback",
    )
    parser.add_argument("--pages", type=int, default=1602, help="real pages for the timing")
    parser.add_argument("--hosts", type=int, default=0, help="time the mirror evidence read over N hosts")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--variants",
        default="memory,redis",
        help=f"comma-separated timed variants, of {', '.join(VARIANTS)} (redis-2rt: the two round trip path)",
    )
    args = parser.parse_args()
    redis_url = None if args.no_redis else args.redis_url
    local = None
    cluster_url = args.cluster
    if cluster_url == "local":
        sys.path.insert(0, str(ROOT / "tests"))
        from redis_cluster_support import start_cluster  # type: ignore[import-not-found]

        local = start_cluster()
        cluster_url = local.url
    try:
        footprint([int(s) for s in args.sizes.split(",") if s], redis_url, cluster_url)
        variants = [v for v in args.variants.split(",") if v]
        if cluster_url and "redis-cluster" not in variants:
            variants.append("redis-cluster")
        if not redis_url:
            variants = [v for v in variants if not v.startswith("redis") or v == "redis-cluster"]
        urls = {"redis": redis_url or "", "redis-cluster": cluster_url or ""}
        if (redis_url or cluster_url) and variants:
            timing(urls, args.pages, args.rounds, variants)
        if redis_url and args.hosts:
            mirror_reads(redis_url, args.hosts)
    finally:
        if local is not None:
            local.stop()


if __name__ == "__main__":
    main()
