"""Two processes sharing one Redis index over the eval-dev pages score like one process."""

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
from neardup_scrapy.core.storage.redis_store import RedisStorage

pytestmark = [pytest.mark.redis, pytest.mark.evaldev]


def _pages(path: Path) -> list[tuple[str, str]]:
    with gzip.open(path / "pages.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [(r["url"], r["html"]) for r in map(json.loads, fh)]


def _worker(eval_dir: str, url: str, prefix: str, part: int, parts: int, barrier: Any, out: Any) -> None:
    pages = _pages(Path(eval_dir))
    det = NearDupDetector(storage=RedisStorage(url, prefix=prefix))
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


def test_two_processes_score_like_one(eval_dev: Path, redis_url: tuple[str, str], tmp_path: Path) -> None:
    url, prefix = redis_url
    single = NearDupDetector()
    alone = [single.check(u, html).to_dict() | {"url": u} for u, html in _pages(eval_dev)]
    f1_single = _score(eval_dev, alone, tmp_path, "single")

    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(str(eval_dev), url, prefix, k, 2, barrier, out)) for k in range(2)
    ]
    for p in procs:
        p.start()
    shared = [t for _ in procs for t in out.get(timeout=600)]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(shared) == len(alone)
    f1_shared = _score(eval_dev, shared, tmp_path, "shared")
    print(f"eval-dev F1: one process {f1_single:.4f}, two processes on one Redis index {f1_shared:.4f}")
    assert abs(f1_shared - f1_single) <= 0.005
