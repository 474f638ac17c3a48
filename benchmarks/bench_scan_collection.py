"""Benchmark of ``neardup-scrapy scan`` over a collection: several processes into one index.

The three labelled sets (``../shared/eval-{dev,docs,ref}``, 8,743 pages) are cut into three
shards, each holding a third of every set (the first third of each set in shard 1, ...). Then:

1. **one process**: ``scan shard1 shard2 shard3`` into memory (the reference);
2. **Redis Cluster**: three ``scan`` processes at once, one per shard, into one index on a local
   cluster of 3 primaries and 3 replicas (ports ``--port`` .. ``--port`` + 5), then ``export``;
3. **kept disk index**: three successive runs, one shard each, then ``export``;
4. **rescan**: shard 2 again into the disk index: every page must be a revisit, none a
   duplicate, and the export must not change by a byte;
5. **commit order**: the pages in the order the cluster index committed them (read back from
   it, :func:`commit_order`), checked by one process: its clusters and tags must be those of
   the three processes (the guarantee: every verdict is what one process gives for the same
   pages in some order, here that order).

Scored with each set's ``score.py`` (pairwise F1 against the source truth), from the final
clusters (the ``--clusters`` export: every member with its representative) and from the tags the
pages got when checked (``-o``). Printed: F1 per set and run, the difference from the reference
(target: within 0.005), whether the cluster index's export has the clusters of the reference
(member sets; the representative may differ, see README) and those of one process in its
commit order, and the rescan's counts.

Usage: ``python benchmarks/bench_scan_collection.py [--port 7200] [--jobs 1] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SETS = ("dev", "docs", "ref")
SHARDS = 3
TARGET = 0.005


def cli(*args: str, stderr: Any = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "neardup_scrapy.cli", *args], cwd=ROOT, check=True, stderr=stderr
    )


def write_shards(work: Path) -> list[Path]:
    """Shard k holds the k-th third of every set, the sets one after another."""
    paths = [work / f"shard{k + 1}.jsonl" for k in range(SHARDS)]
    outs = [p.open("wb") for p in paths]
    try:
        for name in SETS:
            with gzip.open(SHARED / f"eval-{name}" / "pages.jsonl.gz", "rb") as handle:
                lines = handle.readlines()
            size = -(-len(lines) // SHARDS)
            for k in range(SHARDS):
                outs[k].writelines(lines[k * size : (k + 1) * size])
    finally:
        for out in outs:
            out.close()
    return paths


def predictions_of_clusters(clusters: Path, out: Path) -> Path:
    with out.open("w") as handle:
        for row in map(json.loads, clusters.open()):
            rep = row["cluster"]
            for member in row["members"]:
                url = member["url"]
                handle.write(
                    json.dumps({"url": url, "cluster": rep, "duplicate_of": None if url == rep else rep})
                    + "\n"
                )
    return out


def predictions_of_tags(outputs: list[Path], out: Path) -> Path:
    with out.open("w") as handle:
        for path in outputs:
            for row in map(json.loads, path.open()):
                tag = row["neardup"]
                handle.write(
                    json.dumps(
                        {"url": row["url"], "cluster": tag["cluster"], "duplicate_of": tag["duplicate_of"]}
                    )
                    + "\n"
                )
    return out


def f1(name: str, predictions: Path) -> float:
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        subprocess.run(
            [sys.executable, str(SHARED / f"eval-{name}" / "score.py"),
             str(SHARED / f"eval-{name}" / "truth.json"), str(predictions), "--json", result.name, "--quiet"],
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        return float(json.loads(Path(result.name).read_text())["source_pairs"]["f1"])


def member_sets(clusters: Path) -> set[frozenset[str]]:
    return {frozenset(m["url"] for m in row["members"]) for row in map(json.loads, clusters.open())}


def commit_order(url: str, prefix: str) -> list[str]:
    """The urls of a cluster index's pages in the order they were committed.

    A page's time added is taken when its commit is prepared, after the lookup it was decided on
    (a commit that conflicts is prepared again), so two pages that share a bucket are in the
    order of their commits; pages that share none do not change each other's verdicts.
    """
    from neardup_scrapy.core.params import DetectorParams
    from neardup_scrapy.core.storage import open_storage

    store = open_storage("redis-cluster", redis_url=url, prefix=prefix)
    store.open(DetectorParams().index_signature())
    try:
        rows: list[tuple[float, int, str]] = []
        start, empty = 0, 0
        while empty < 4:  # ids have gaps (handed out in advance; conflicts): stop after 4,000 unused
            batch = store.fetch(np.arange(start, start + 1000, dtype=np.int64))
            empty = empty + 1 if not len(batch) else 0
            rows += zip(batch.added.tolist(), batch.ids.tolist(), batch.urls, strict=True)
            start += 1000
    finally:
        store.close()
    return [u for _, _, u in sorted(rows)]


def write_in_order(shards: list[Path], order: list[str], out: Path) -> None:
    """The shards' pages in ``order``, then the pages not indexed (skipped), in shard order."""
    lines = {json.loads(line)["url"]: line for shard in shards for line in shard.open("rb")}
    with out.open("wb") as handle:
        handle.writelines(lines.pop(u) for u in order)
        handle.writelines(lines.values())


def start_cluster(port: int) -> Any:
    sys.path.insert(0, str(ROOT / "tests"))
    import redis_cluster_support as support

    support._free_ports = lambda n: list(range(port, port + n))  # the ports this benchmark may use
    return support.start_cluster()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=7200, help="first of the 6 cluster ports (7200)")
    parser.add_argument("--jobs", type=int, default=1, help="--jobs of every scan process (1)")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-scan-collection-"))
    work.mkdir(parents=True, exist_ok=True)
    jobs = ["--jobs", str(args.jobs), "-q"]
    shards = write_shards(work)
    print(f"shards: {', '.join(f'{p.name} {sum(1 for _ in p.open()):,} pages' for p in shards)}")
    times: dict[str, float] = {}
    f1s: dict[str, dict[str, float]] = {}

    # 1. one process over all pages
    started = time.perf_counter()
    cli(
        "scan",
        *map(str, shards),
        "-o",
        str(work / "one.out"),
        "--clusters",
        str(work / "one.clusters"),
        *jobs,
    )
    times["one process, memory"] = time.perf_counter() - started

    # 2. three processes at once into one Redis Cluster index
    cluster = start_cluster(args.port)
    prefix = f"bench-scan-{uuid.uuid4().hex[:8]}"
    index = ["--storage", "redis-cluster", "--redis-url", cluster.url, "--redis-prefix", prefix]
    try:
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "neardup_scrapy.cli", "scan", str(shard), *index,
                 "-o", str(work / f"cluster{k + 1}.out"), *jobs],
                cwd=ROOT,
            )
            for k, shard in enumerate(shards)
        ]  # fmt: skip
        codes = [p.wait() for p in procs]
        times["3 processes at once, Redis Cluster"] = time.perf_counter() - started
        assert codes == [0, 0, 0], codes
        cli("export", *index, "--clusters", str(work / "cluster.clusters"), "-q")
        order = commit_order(cluster.url, prefix)
    finally:
        cluster.stop()
    # the same pages in the cluster's commit order, checked by one process
    write_in_order(shards, order, work / "ordered.jsonl")
    cli("scan", str(work / "ordered.jsonl"), "-o", str(work / "ordered.out"),
        "--clusters", str(work / "ordered.clusters"), *jobs)  # fmt: skip

    # 3. three successive runs into a kept disk index, 4. shard 2 again
    disk = ["--disk-path", str(work / "index.sqlite")]
    started = time.perf_counter()
    for k, shard in enumerate(shards):
        cli("scan", str(shard), *disk, "-o", str(work / f"disk{k + 1}.out"), *jobs)
    times["3 successive runs, disk"] = time.perf_counter() - started
    cli(
        "export", *disk, "--clusters", str(work / "disk.clusters"), "--report", str(work / "disk1.json"), "-q"
    )
    again = cli("scan", str(shards[1]), *disk, "-o", str(work / "again.out"), "--jobs", str(args.jobs),
                stderr=subprocess.PIPE)  # fmt: skip
    cli(
        "export",
        *disk,
        "--clusters",
        str(work / "disk-again.clusters"),
        "--report",
        str(work / "disk2.json"),
        "-q",
    )

    runs = {
        "one process": (work / "one.clusters", [work / "one.out"]),
        "Redis Cluster, 3 at once": (
            work / "cluster.clusters",
            [work / f"cluster{k + 1}.out" for k in range(3)],
        ),
        "disk, 3 successive runs": (work / "disk.clusters", [work / f"disk{k + 1}.out" for k in range(3)]),
    }
    for run, (clusters, outputs) in runs.items():
        slug = run.split(",")[0].replace(" ", "-").lower()
        exported = predictions_of_clusters(clusters, work / f"{slug}.clusters.preds")
        tagged = predictions_of_tags(outputs, work / f"{slug}.tags.preds")
        for name in SETS:
            f1s.setdefault(run, {})[f"{name} clusters"] = f1(name, exported)
            f1s[run][f"{name} tags"] = f1(name, tagged)

    print("\npairwise F1 against the source truth (final clusters from export | tags when checked)")
    print(f"{'run':26s}" + "".join(f"{name:>38s}" for name in SETS))
    reference = f1s["one process"]
    worst = 0.0
    for run, scores in f1s.items():
        cells = []
        for name in SETS:
            c, t = scores[f"{name} clusters"], scores[f"{name} tags"]
            dc, dt = c - reference[f"{name} clusters"], t - reference[f"{name} tags"]
            if run != "one process":
                worst = max(worst, abs(dc), abs(dt))
            cells.append(f"{c:.4f} ({dc:+.4f}) | {t:.4f} ({dt:+.4f})")
        print(f"{run:26s}" + "".join(f"{cell:>38s}" for cell in cells))
    print(
        f"largest |F1 - one process|: {worst:.4f} (target <= {TARGET}) -> "
        + ("ok" if worst <= TARGET else "MISSED")
    )

    one, clustered, disk_sets, ordered = (
        member_sets(work / f)
        for f in ("one.clusters", "cluster.clusters", "disk.clusters", "ordered.clusters")
    )
    print("\nclusters (member sets; representatives aside) of the exports:")
    for run, sets, reference_sets, what in (
        ("Redis Cluster", clustered, ordered, "one process, the pages in the cluster's commit order"),
        ("Redis Cluster", clustered, one, "one process, the pages in shard order"),
        ("disk, 3 runs", disk_sets, one, "one process, the pages in shard order"),
    ):
        moved = {url for c in reference_sets ^ sets for url in c}
        print(
            f"  {run} vs {what}: {'SAME clusters' if sets == reference_sets else 'clusters differ'} "
            f"({len(sets):,} vs {len(reference_sets):,}; {len(moved):,} pages in clusters not in both)"
        )
    concurrent = {
        row["url"]: (row["neardup"]["status"], row["neardup"]["duplicate_of"])
        for k in range(SHARDS)
        for row in map(json.loads, (work / f"cluster{k + 1}.out").open())
    }
    serial = {
        row["url"]: (row["neardup"]["status"], row["neardup"]["duplicate_of"])
        for row in map(json.loads, (work / "ordered.out").open())
    }
    same = sum(1 for url, verdict in serial.items() if concurrent.get(url) == verdict)
    print(
        f"  tags (status, duplicate_of) of the 3 processes equal to one process in commit order: "
        f"{same:,} of {len(serial):,} pages"
    )

    r1, r2 = (json.loads((work / f"disk{n}.json").read_text())["totals"] for n in (1, 2))
    tags = [json.loads(line)["neardup"] for line in (work / "again.out").open()]
    unchanged = (work / "disk.clusters").read_bytes() == (work / "disk-again.clusters").read_bytes()
    print(
        f"\nrescan of shard 2 into the disk index: {len(tags):,} pages, "
        f"{sum(1 for t in tags if t.get('revisit')):,} tagged revisits; index totals: revisits "
        f"+{r2['revisits'] - r1['revisits']:,}, unique +{r2['unique'] - r1['unique']}, exact "
        f"+{r2['exact'] - r1['exact']}, near +{r2['near'] - r1['near']}, "
        f"skipped +{r2['skipped'] - r1['skipped']}, "
        f"clusters +{r2['clusters'] - r1['clusters']}; export {'unchanged' if unchanged else 'CHANGED'}"
    )
    print("rescan summary: " + again.stderr.decode().strip().splitlines()[-2])
    print("\nwall time (s): " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; work directory: {work}")


if __name__ == "__main__":
    main()
