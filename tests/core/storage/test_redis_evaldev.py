"""Processes sharing one Redis index score like one process: two on eval-dev with one Redis
server, four on eval-docs with a local Redis Cluster."""

from __future__ import annotations

import gzip
import json
import multiprocessing as mp
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage
from neardup_scrapy.core.storage.redis_store import RedisStorage

pytestmark = [pytest.mark.redis, pytest.mark.evaldev]


def _pages(path: Path) -> list[tuple[str, str]]:
    with gzip.open(path / "pages.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [(r["url"], r["html"]) for r in map(json.loads, fh)]


def _worker(
    kind: str, eval_dir: str, url: str, prefix: str, part: int, parts: int, barrier: Any, out: Any
) -> None:
    pages = _pages(Path(eval_dir))
    store = (
        RedisClusterStorage(url, prefix=prefix)
        if kind == "redis-cluster"
        else RedisStorage(url, prefix=prefix)
    )
    det = NearDupDetector(storage=store)
    barrier.wait(60)
    tags = []
    for i, (page_url, html) in enumerate(pages):
        if i % parts == part:  # the crawl order of the set, pages dealt out in turn
            tags.append(det.check(page_url, html).to_dict() | {"url": page_url})
    det.close()
    out.put(tags)


def _score(eval_dir: Path, tags: list[dict[str, Any]], tmp_path: Path, name: str) -> float:
    preds = tmp_path / f"{name}.jsonl"
    preds.write_text("".join(json.dumps(t) + "\n" for t in tags))
    report = tmp_path / f"{name}.score.json"
    subprocess.run(
        [
            sys.executable,
            str(eval_dir / "score.py"),
            str(eval_dir / "truth.json"),
            str(preds),
            "--json",
            str(report),
            "--quiet",
        ],
        check=True,
        capture_output=True,
    )
    return float(json.loads(report.read_text())["source_pairs"]["f1"])


@pytest.mark.parametrize(
    ("kind", "labelled", "processes"),
    [("redis", "eval_dev", 2), ("redis-cluster", "eval_docs", 4)],
)
def test_processes_score_like_one(
    kind: str, labelled: str, processes: int, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    eval_dir: Path = request.getfixturevalue(labelled)
    url, prefix = request.getfixturevalue("redis_url" if kind == "redis" else "redis_cluster_url")
    single = NearDupDetector()
    alone = [single.check(u, html).to_dict() | {"url": u} for u, html in _pages(eval_dir)]
    f1_single = _score(eval_dir, alone, tmp_path, "single")

    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(processes)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(kind, str(eval_dir), url, prefix, k, processes, barrier, out))
        for k in range(processes)
    ]
    for p in procs:
        p.start()
    shared = [t for _ in procs for t in out.get(timeout=900)]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(shared) == len(alone)
    f1_shared = _score(eval_dir, shared, tmp_path, "shared")
    print(f"{eval_dir.name} F1: one process {f1_single:.4f}, {processes} on one {kind} index {f1_shared:.4f}")
    assert abs(f1_shared - f1_single) <= 0.005
