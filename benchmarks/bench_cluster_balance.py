"""How evenly a ``redis-cluster`` index spreads over the primaries (#34, "Even cluster").

Usage::

    .venv/bin/python benchmarks/bench_cluster_balance.py                   # 3 primaries + 3 replicas
    .venv/bin/python benchmarks/bench_cluster_balance.py --primaries 6     # 6 primaries + 6 replicas
    .venv/bin/python benchmarks/bench_cluster_balance.py --pages 20000 --no-real

Starts a local cluster of its own (``--primaries`` primaries with one replica each, on ports
``--base-port`` ..; each port + 10000 is its cluster bus) and fills one index per workload:

* ``synthetic``: ``--pages`` pages of ``benchmarks/bench_storage.py``'s generator (43 bucket keys
  a page, 500 hosts, 30% near-duplicates of an earlier page), looked up and committed through the
  store as a crawl's detector would;
* ``real``: the shared labelled sets (``../shared/eval-{dev,docs,ref}``, 8,743 pages, about the
  size of the held-out set) checked by two detector processes (pages dealt out in turn), as in the
  measurement of #34.

Before each workload a *warm-up* index (the measured index's prefix, so the same slots) takes
the same kind of pages (``--warm-up`` of them: synthetic pages, or the first of each shared set),
and its keys are deleted before the measure starts. A node pays some costs once, whatever the
index and its size: Redis 7 allocates a latency histogram of some 24 KB the first time it runs a command name
(``latency-tracking``, on by default; the commands scripts run count), and keeps each script it
loads. A cluster that has served any traffic has paid them; a fresh one pays them during the
first pages, which at 8,743 pages would add ~150 bytes a page that do not grow with the index.
The warm-up pays them before the measure, and they are printed on their own (and the figure a
fresh cluster would show beside the check). ``--warm-up 0`` measures fresh nodes.

Per primary it prints the keys the workload added (``DBSIZE``), the growth of ``used_memory``
less replication buffers (``mem_total_replication_buffers``: the backlog fills to 1 MB whatever
the index), the share of the commands it ran (``INFO commandstats``, admin commands left out),
each as a ratio to the mean over the primaries, and the bytes per page summed over the primaries
(with the part of it that is latency histograms the warm-up did not allocate);
then the acceptance of #34: keys and memory per primary within +-20% of their mean, no primary
above 45% of the commands, at most 1,000 bytes per page.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_storage import PARAMS, fill, synthetic  # noqa: E402
from redis_cluster_support import LocalCluster, _cli, start_cluster  # noqa: E402

from neardup_scrapy.core import NearDupDetector  # noqa: E402
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage  # noqa: E402

SETS = ("eval-dev", "eval-docs", "eval-ref")
#: Fields of ``INFO memory`` whose growth is shown too (summed over the primaries).
PARTS = (
    "used_memory_dataset",
    "used_memory_overhead",
    "used_memory_scripts",
    "mem_clients_normal",
    "mem_clients_slaves",
    "mem_replication_backlog",
    "mem_total_replication_buffers",
    "mem_cluster_links",
)
#: Commands of the benchmark's own measuring and of the cluster's upkeep, not of the index.
ADMIN = {"info", "dbsize", "config", "cluster", "command", "ping", "memory", "script", "client", "hello"}


def node_state(port: int) -> dict[str, int]:
    """Keys, used memory less replication buffers and commands run so far, of one node."""
    memory = dict(line.split(":", 1) for line in _cli(port, "INFO", "memory").splitlines() if ":" in line)
    used = int(memory["used_memory"]) - int(
        memory.get("mem_total_replication_buffers", memory.get("mem_replication_backlog", "0"))
    )
    calls = 0
    for line in _cli(port, "INFO", "commandstats").splitlines():
        if not line.startswith("cmdstat_"):
            continue
        name, _, stats = line.partition(":")
        command = name[len("cmdstat_") :].split("|")[0]
        if command in ADMIN:
            continue
        calls += int(dict(kv.split("=") for kv in stats.strip().split(","))["calls"])
    parts = {f: int(memory.get(f, "0")) for f in PARTS}
    histograms = _cli(port, "INFO", "latencystats").count("latency_percentiles_usec_")
    return {
        "keys": int(_cli(port, "DBSIZE").strip() or 0),
        "memory": used,
        "commands": calls,
        "histograms": histograms,
        **parts,
    }


def histogram_names(port: int) -> set[str]:
    """The command names a node keeps a latency histogram of."""
    return {
        line.split(":", 1)[0][len("latency_percentiles_usec_") :]
        for line in _cli(port, "INFO", "latencystats").splitlines()
        if line.startswith("latency_percentiles_usec_")
    }


def histogram_bytes(port: int) -> float:
    """Bytes per latency histogram on the node: what ``CONFIG RESETSTAT`` frees, over the histograms
    it drops (the node's command statistics are gone after it)."""
    histograms = _cli(port, "INFO", "latencystats").count("latency_percentiles_usec_")
    before = int(_cli(port, "INFO", "memory").split("used_memory:")[1].split()[0])
    _cli(port, "CONFIG", "RESETSTAT")
    after = int(_cli(port, "INFO", "memory").split("used_memory:")[1].split()[0])
    return (before - after) / max(1, histograms)


def slots_of(port: int) -> int:
    """Slots owned by the primary on ``port``."""
    for line in _cli(port, "CLUSTER", "NODES").splitlines():
        parts = line.split()
        if "myself" in parts[2]:
            total = 0
            for span in parts[8:]:
                if span.startswith("["):
                    continue
                low, _, high = span.partition("-")
                total += int(high or low) - int(low) + 1
            return total
    return 0


def _real_worker(
    url: str, prefix: str, part: int, parts: int, limit: int | None, barrier: Any, out: Any
) -> None:
    det = NearDupDetector(storage=RedisClusterStorage(url, prefix=prefix))
    barrier.wait(120)
    n = 0
    for name in SETS:
        path = ROOT.parent / "shared" / name / "pages.jsonl.gz"
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for i, row in enumerate(map(json.loads, fh)):
                if limit is not None and i >= limit:
                    break
                if i % parts == part:
                    det.check(f"{row['url']}", row["html"])
                    n += 1
    det.close()
    out.put(n)


def fill_real(url: str, prefix: str, processes: int = 2, limit: int | None = None) -> int:
    """The shared sets, one after the other, dealt out over ``processes`` detectors (the first
    ``limit`` pages of each set; ``None``: all)."""
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(processes), ctx.Queue()
    workers = [
        ctx.Process(target=_real_worker, args=(url, prefix, k, processes, limit, barrier, out))
        for k in range(processes)
    ]
    for w in workers:
        w.start()
    total = sum(out.get(timeout=7200) for _ in workers)
    for w in workers:
        w.join()
    return total


def fill_synthetic(url: str, prefix: str, pages: int) -> int:
    store = RedisClusterStorage(url, prefix=prefix)
    store.open(PARAMS.index_signature())
    fill(store, synthetic(pages))
    store.close()
    return pages


def delete_index(cluster: LocalCluster, prefix: str) -> int:
    """Delete every key of the index of ``prefix`` (its serialisation slot's and its groups'), on
    every primary; the count deleted."""
    import redis

    deleted = 0
    for port in cluster.primaries():
        node = redis.Redis(host="127.0.0.1", port=port)
        for pattern in (f"{{{prefix}}}:*", f"{{{prefix}:g*"):
            keys = list(node.scan_iter(match=pattern, count=1000))
            for start in range(0, len(keys), 500):
                pipe = node.pipeline(transaction=False)
                # One key a command (the keys span slots); DEL, not UNLINK, so that they are
                # freed before the measure starts, not later by a background thread.
                for key in keys[start : start + 500]:
                    pipe.delete(key)
                deleted += sum(int(n) for n in pipe.execute())
        node.close()
    return deleted


def warm_up(cluster: LocalCluster, run: Any, prefix: str) -> dict[str, Any]:
    """Fill a throwaway index (``run(prefix)``), delete it, and return what stayed on the
    primaries: the once-per-node costs (latency histograms, loaded scripts)."""
    primaries = cluster.primaries()
    cluster.wait_replicated()
    before = {p: node_state(p) for p in primaries}
    pages = run(prefix)
    deleted = delete_index(cluster, prefix)
    cluster.wait_replicated()
    after = {p: node_state(p) for p in primaries}
    return {
        "pages": pages,
        "deleted": deleted,
        "histograms": sum(after[p]["histograms"] - before[p]["histograms"] for p in primaries),
        "scripts": sum(after[p]["used_memory_scripts"] - before[p]["used_memory_scripts"] for p in primaries),
        "memory": sum(after[p]["memory"] - before[p]["memory"] for p in primaries),
    }


def breakdown(cluster: LocalCluster, prefix: str) -> dict[str, tuple[int, int]]:
    """The index's keys by kind: count and bytes (``MEMORY USAGE``). ``serial:<kind>`` are the
    serialisation slot's (``{P}:<kind>...``); the others the groups' (``{P:g<k>:<j>}:<kind>...``)."""
    import redis

    out: dict[str, tuple[int, int]] = {}
    for port in cluster.primaries():
        node = redis.Redis(host="127.0.0.1", port=port)
        for pattern in (f"{{{prefix}}}:*", f"{{{prefix}:g*"):
            for key in node.scan_iter(match=pattern, count=1000):
                name = key.decode("utf-8", "replace")
                tail = name.split("}", 1)[1].split(":")
                kind = ("serial:" if pattern.endswith("}:*") else "") + (tail[1] if len(tail) > 1 else "")
                n, size = out.get(kind, (0, 0))
                out[kind] = (n + 1, size + int(node.memory_usage(key, samples=0) or 0))
        node.close()
    return out


def measure(
    cluster: LocalCluster, name: str, run: Any, prefix: str, warm: dict[str, Any] | None
) -> dict[str, Any]:
    """Fill one workload; per primary the growth of keys, memory and commands."""
    primaries = cluster.primaries()
    cluster.wait_replicated()
    before = {p: node_state(p) for p in primaries}
    names_before = {p: histogram_names(p) for p in primaries}
    started = time.perf_counter()
    pages = run(prefix)
    seconds = time.perf_counter() - started
    cluster.wait_replicated()
    after = {p: node_state(p) for p in primaries}
    rows = {p: {k: after[p][k] - before[p][k] for k in after[p]} for p in primaries}
    new_names: dict[str, int] = {}
    for p in primaries:
        for command in histogram_names(p) - names_before[p]:
            new_names[command] = new_names.get(command, 0) + 1
    kinds = breakdown(cluster, prefix)
    per_histogram = sum(histogram_bytes(p) for p in primaries) / len(primaries)
    return {
        "name": name,
        "pages": pages,
        "seconds": seconds,
        "rows": rows,
        "slots": {p: slots_of(p) for p in primaries},
        "kinds": kinds,
        "per_histogram": per_histogram,
        "warm": warm,
        "new_histograms": new_names,
    }


def report(result: dict[str, Any]) -> bool:
    rows, pages = result["rows"], result["pages"]
    n = len(rows)
    mean = {k: sum(r[k] for r in rows.values()) / n for k in ("keys", "memory", "commands")}
    total_commands = sum(r["commands"] for r in rows.values()) or 1
    print(f"\n{result['name']}: {pages:,} pages in {result['seconds']:.0f} s, {n} primaries")
    print(
        f"{'primary':>8} {'slots':>6} {'keys':>9} {'/mean':>6} {'memory KiB':>11} {'/mean':>6}"
        f" {'commands':>10} {'share':>6}"
    )
    for port, r in sorted(rows.items()):
        print(
            f"{port:>8} {result['slots'][port]:>6} {r['keys']:>9,} {r['keys'] / (mean['keys'] or 1):>6.2f}"
            f" {r['memory'] / 1024:>11,.0f} {r['memory'] / (mean['memory'] or 1):>6.2f}"
            f" {r['commands']:>10,} {r['commands'] / total_commands:>6.1%}"
        )
    kinds = result["kinds"]
    print(
        "  growth over the primaries, bytes per page: "
        + ", ".join(f"{f} {sum(r[f] for r in rows.values()) / max(1, pages):,.1f}" for f in PARTS)
    )
    print("  index by kind of key (MEMORY USAGE), bytes per page:")
    for kind, (count, size) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(
            f"    {kind:<14} {count:>8,} keys {size / 1024:>10,.0f} KiB {size / max(1, pages):>8.1f} B/page"
        )
    new_histograms = sum(r["histograms"] for r in rows.values())
    print(
        f"  latency histograms of commands first run on a primary during the fill: {new_histograms},"
        f" {result['per_histogram']:,.0f} bytes each (Redis 7 latency-tracking; one per command name and"
        f" node, not per page): {new_histograms * result['per_histogram'] / max(1, pages):.1f} B/page"
        + (
            " (" + ", ".join(f"{name} on {n}" for name, n in sorted(result["new_histograms"].items())) + ")"
            if result["new_histograms"]
            else ""
        )
    )
    warm = result["warm"]
    once = 0.0
    if warm is not None:
        once = warm["histograms"] * result["per_histogram"] + warm["scripts"]
        print(
            f"  once per node, paid by the warm-up ({warm['pages']:,} pages of a throwaway index,"
            f" {warm['deleted']:,} keys deleted before the measure): {warm['histograms']} latency"
            f" histograms and {warm['scripts'] / 1024:,.0f} KiB of scripts over the primaries,"
            f" {once / 1024:,.0f} KiB; on fresh nodes they would add {once / max(1, pages):.1f} B/page"
            f" at this size"
        )
    serial = sum(size for kind, (_, size) in kinds.items() if kind.startswith("serial:"))
    print(f"    serialisation slot together: {serial / max(1, pages):.1f} B/page")
    bpp = sum(r["memory"] for r in rows.values()) / max(1, pages)
    worst_keys = max(abs(r["keys"] / mean["keys"] - 1) for r in rows.values()) if mean["keys"] else 0.0
    worst_mem = max(abs(r["memory"] / mean["memory"] - 1) for r in rows.values()) if mean["memory"] else 0.0
    top_share = max(r["commands"] for r in rows.values()) / total_commands
    checks = [
        (f"keys within +-20% of the mean (worst {worst_keys:+.1%})", worst_keys <= 0.20),
        (f"memory within +-20% of the mean (worst {worst_mem:+.1%})", worst_mem <= 0.20),
        (f"no primary above 45% of the commands (top {top_share:.1%})", top_share <= 0.45),
        (
            f"<= 1,000 bytes per page over all primaries ({bpp:,.0f}"
            + (f"; {bpp + once / max(1, pages):,.0f} on fresh nodes" if warm is not None else "")
            + ")",
            bpp <= 1000,
        ),
    ]
    for text, ok in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {text}")
    return all(ok for _, ok in checks)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--primaries", type=int, default=3)
    parser.add_argument("--pages", type=int, default=100_000, help="synthetic pages (0: none)")
    parser.add_argument("--no-real", action="store_true", help="skip the shared sets")
    parser.add_argument("--base-port", type=int, default=7100, help="first port of the cluster's nodes")
    parser.add_argument(
        "--warm-up",
        type=int,
        default=500,
        help="pages of a throwaway index filled before each workload (real: the first of each set),"
        " at least the commit log's length (1,024) in all so that its trimming has run"
        " (0: measure fresh nodes)",
    )
    args = parser.parse_args()
    ports = list(range(args.base_port, args.base_port + 2 * args.primaries))
    cluster = start_cluster(nodes=len(ports), replicas=1, ports=ports)
    ok = True
    try:
        url = cluster.url
        runs: list[tuple[str, Any, Any]] = []
        if args.pages:
            runs.append(
                (
                    f"synthetic ({args.pages:,})",
                    lambda p: fill_synthetic(url, p, args.pages),
                    lambda p: fill_synthetic(url, p, args.warm_up),
                )
            )
        if not args.no_real:
            runs.append(
                (
                    "real (eval-dev, eval-docs, eval-ref; 2 processes)",
                    lambda p: fill_real(url, p),
                    lambda p: fill_real(url, p, limit=args.warm_up),
                )
            )
        for name, run, warm_run in runs:
            prefix = f"bal-{uuid.uuid4().hex[:6]}"
            # The warm-up index has the measured index's prefix, so its serialisation slot and
            # groups are on the same slots, and their commands have run on the same nodes.
            warm = warm_up(cluster, warm_run, prefix) if args.warm_up else None
            ok = report(measure(cluster, name, run, prefix, warm)) and ok
    finally:
        cluster.stop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
