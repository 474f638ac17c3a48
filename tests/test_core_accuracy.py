"""Accuracy on the labelled eval-dev set, scored by its own score.py (default settings)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.core import NearDupDetector

pytestmark = pytest.mark.evaldev


@pytest.fixture(scope="module")
def pages(eval_dev: Path) -> list[tuple[str, bytes]]:
    with gzip.open(eval_dev / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        return [(rec["url"], rec["html"].encode("utf-8")) for rec in map(json.loads, f)]


def score(eval_dev: Path, pages: list[tuple[str, bytes]], tmp_path: Path, **params: Any) -> dict[str, Any]:
    det = NearDupDetector(**params)
    preds = tmp_path / f"preds-{params.get('algorithm', 'both')}.jsonl"
    with preds.open("w") as f:
        for url, body in pages:
            tag = det.check(url, body).to_dict()
            f.write(
                json.dumps({"url": url, "duplicate_of": tag["duplicate_of"], "cluster": tag["cluster"]})
                + "\n"
            )
    out = tmp_path / "metrics.json"
    subprocess.run(
        [
            sys.executable,
            str(eval_dev / "score.py"),
            str(eval_dev / "truth.json"),
            str(preds),
            "--json",
            str(out),
            "--quiet",
        ],
        check=True,
        capture_output=True,
    )
    metrics: dict[str, Any] = json.loads(out.read_text())
    return metrics


def kind_recall(metrics: dict[str, Any], prefix: str) -> float:
    rows = [v for k, v in metrics["recall_by_kind"].items() if k.startswith(prefix)]
    return sum(r["found"] for r in rows) / sum(r["total"] for r in rows)


@pytest.fixture(scope="module")
def results(
    eval_dev: Path, pages: list[tuple[str, bytes]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("accuracy")
    return {alg: score(eval_dev, pages, tmp, algorithm=alg) for alg in ("both", "minhash", "simhash")}


def test_default_settings_meet_the_quality_bar(results: dict[str, Any]) -> None:
    both = results["both"]["source_pairs"]
    summary = {alg: round(r["source_pairs"]["f1"], 4) for alg, r in results.items()}
    print("F1 by algorithm:", summary)
    assert both["f1"] >= 0.95, summary
    assert both["precision"] >= 0.98, both


def test_template_mirrors_and_print_versions_are_found(results: dict[str, Any]) -> None:
    metrics = results["both"]
    assert kind_recall(metrics, "template_mirror") >= 0.90
    assert kind_recall(metrics, "variant:print") >= 0.90
    assert kind_recall(metrics, "exact_mirror") >= 0.97


def test_both_is_at_least_as_good_as_each_alone(results: dict[str, Any]) -> None:
    f1 = {alg: r["source_pairs"]["f1"] for alg, r in results.items()}
    assert f1["both"] >= f1["minhash"] - 1e-9
    assert f1["both"] >= f1["simhash"] - 1e-9
