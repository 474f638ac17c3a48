"""Full exports: --clusters / --pairs (JSON Lines and Parquet), and the same from a crawl."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.cli import EXIT_OK, main
from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.exports import cluster_rows, pair_rows, write_rows
from tests.cli.test_cli_helpers import make_crawl, write_jsonl


def read_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_table(path).to_pylist())
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return [json.loads(line) for line in data.splitlines()]


def components(pairs: list[dict[str, Any]], urls: set[str]) -> set[frozenset[str]]:
    """The clusters that the pairs rebuild (union-find over url -> duplicate_of), singletons too."""
    parent = {u: u for u in urls}

    def find(u: str) -> str:
        while parent[u] != u:
            parent[u] = parent[parent[u]]
            u = parent[u]
        return u

    for pair in pairs:
        parent[find(pair["url"])] = find(pair["duplicate_of"])
    groups: dict[str, set[str]] = {}
    for u in urls:
        groups.setdefault(find(u), set()).add(u)
    return {frozenset(g) for g in groups.values()}


def check_exports(clusters: list[dict[str, Any]], pairs: list[dict[str, Any]], urls: set[str]) -> None:
    members = [m["url"] for c in clusters for m in c["members"]]
    assert len(members) == len(set(members))  # every page once...
    assert set(members) == urls  # ...and every page
    assert all(c["size"] == len(c["members"]) and c["members"][0]["url"] == c["cluster"] for c in clusters)
    rebuilt = components(pairs, urls)
    assert rebuilt == {frozenset(m["url"] for m in c["members"]) for c in clusters}
    assert len(pairs) == sum(c["size"] - 1 for c in clusters) > 0
    assert all(p["status"] in ("exact", "near", "unique") for p in pairs)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".parquet"])
def test_scan_exports(tmp_path: Path, suffix: str) -> None:
    records, expected = make_crawl()
    path = write_jsonl(tmp_path / "pages.jsonl", records)
    clusters_file, pairs_file = tmp_path / f"clusters{suffix}", tmp_path / f"pairs{suffix}"
    args = ["scan", str(path), "-o", str(tmp_path / "o.jsonl"), "-q"]
    assert main([*args, "--clusters", str(clusters_file), "--pairs", str(pairs_file)]) == EXIT_OK
    clusters, pairs = read_rows(clusters_file), read_rows(pairs_file)
    checked = {r["url"] for r in records if expected[r["url"]] != "skipped"}
    check_exports(clusters, pairs, checked)
    duplicates = {url for url, status in expected.items() if status in ("exact", "near")}
    assert {p["url"] for p in pairs} >= duplicates


def test_exports_of_merged_clusters_rebuild() -> None:
    """Clusters merged after the fact (union-find) are still rebuilt from the pairs."""
    detector = NearDupDetector(threshold=0.5)
    base = " ".join(f"w{i}" for i in range(200))
    texts = {
        "http://a/1": base,
        "http://a/2": base.replace("w10 ", "x10 ").replace("w50 ", "x50 "),
        "http://a/3": " ".join(f"v{i}" for i in range(200)),
        "http://a/4": base,
    }
    for url, text in texts.items():
        detector.check(url, text=text)
    clusters = cluster_rows(detector.storage)
    check_exports(clusters, list(pair_rows(clusters)), set(texts))


def test_write_rows_rejects_nan(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_rows(str(tmp_path / "x.jsonl"), [{"similarity": float("nan")}], "pairs")
    assert not list(tmp_path.iterdir())  # no partial file left behind
