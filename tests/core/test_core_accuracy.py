"""Accuracy on the three labelled sets (eval-dev: news, blogs, docs; eval-docs: documentation
sites; eval-ref: documentation generators neither has, hard negatives, releases), scored by their
own score.py with default settings, in file order and in shuffled orders.

Each run prints its figures (F1, recall by kind, the host pairs of false positives, the mirror
pairs), so a regression shows which class of duplicates it hit. The floors are the acceptance
levels of the project's issues, or, where a figure is below its target, the measured value
less a margin (the measured values: docs/accuracy.md).
"""

from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmark_modules import load_benchmark

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.text import html_to_text

pytestmark = pytest.mark.evaldev

#: The mirror pairs eval-docs' README lists; eval-dev has one with real evidence.
DOCS_MIRRORS = {
    ("rustdocs.example-cdn.net", "doc.rust-lang.org"),
    ("mirror.example.ac.jp", "docs.oracle.com"),
    ("mirror.example.ac.jp", "debian-handbook.info"),
    ("www.codelibrary-online.example.com", "docs.oracle.com"),
    ("www.codelibrary-online.example.com", "doc.qt.io"),
    ("www.codelibrary-online.example.com", "developer-old.gnome.org"),
    ("linuxdoc.example.jp", "debian-handbook.info"),
    ("linuxdoc.example.jp", "www.debian.org"),
    ("wiki.snapshot-archive.example.org", "pandas.pydata.org"),
    ("wiki.snapshot-archive.example.org", "www.sqlite.org"),
    ("wiki.snapshot-archive.example.org", "www.erlang.org"),
    ("wiki.snapshot-archive.example.org", "docs.octave.org"),
}
DEV_MIRRORS = {("devtutorials-hub.example.io", "fastapi.tiangolo.com")}
#: The mirror pairs eval-ref's README lists.
REF_MIRRORS = {
    ("gnome-docs.ftp.example.edu", "docs.gtk.org"),
    ("scipy-docs.mirror.example.net", "docs.scipy.org"),
    ("ghc.haskell-mirror.example.org.uk", "downloads.haskell.org"),
    ("answers.devknowledge.example.com", "eigen.tuxfamily.org"),
    ("answers.devknowledge.example.com", "docs.scipy.org"),
    ("answers.devknowledge.example.com", "nodejs.org"),
    ("read.docshelf.example.io", "vimdoc.sourceforge.net"),
    ("read.docshelf.example.io", "developer.gnome.org"),
    ("read.docshelf.example.io", "downloads.haskell.org"),
    ("portal.darkdocs.example.dev", "docs.gtk.org"),
    ("portal.darkdocs.example.dev", "downloads.haskell.org"),
}


def load(path: Path) -> list[tuple[str, bytes]]:
    with gzip.open(path / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        return [(rec["url"], rec["html"].encode("utf-8")) for rec in map(json.loads, f)]


def run(
    path: Path, pages: list[tuple[str, bytes]], tmp: Path, *, seed: int = 0, **params: Any
) -> dict[str, Any]:
    """Check the pages (shuffled with ``seed`` unless 0), score them; metrics plus mirror pairs."""
    order = list(range(len(pages)))
    if seed:
        random.Random(seed).shuffle(order)
    det = NearDupDetector(**params)
    tags: dict[str, dict[str, Any]] = {}
    for i in order:
        url, body = pages[i]
        tags[url] = det.check(url, body).explain()
    preds = tmp / f"preds-{path.name}-{seed}-{params.get('algorithm', 'both')}.jsonl"
    with preds.open("w") as f:
        for url, _ in pages:
            tag = tags[url]
            f.write(
                json.dumps({"url": url, "duplicate_of": tag["duplicate_of"], "cluster": tag["cluster"]})
                + "\n"
            )
    out = preds.with_suffix(".json")
    subprocess.run(
        [
            sys.executable,
            str(path / "score.py"),
            str(path / "truth.json"),
            str(preds),
            "--json",
            str(out),
            "--quiet",
        ],
        check=True,
        capture_output=True,
    )
    metrics: dict[str, Any] = json.loads(out.read_text())
    metrics["mirror_pairs"] = {(m["host"], m["mirror_of"]) for m in det.report()["mirrors"]}
    metrics["clusters"] = _clusters_of(tags)
    metrics["tags"] = tags
    pairs = metrics["source_pairs"]
    kinds = {k: round(v["recall"], 3) for k, v in metrics["recall_by_kind"].items()}
    print(
        f"{path.name} seed={seed} {params or ''}: P={pairs['precision']:.4f} R={pairs['recall']:.4f} "
        f"F1={pairs['f1']:.4f}\n  recall by kind: {kinds}\n"
        f"  false-positive host pairs: {metrics.get('false_positive_pairs', {}).get('top_host_pairs')}\n"
        f"  mirrors: {sorted(metrics['mirror_pairs'])}"
    )
    return metrics


def kind_recall(metrics: dict[str, Any], prefix: str) -> float:
    rows = [v for k, v in metrics["recall_by_kind"].items() if k.startswith(prefix)]
    return sum(r["found"] for r in rows) / sum(r["total"] for r in rows)


@pytest.fixture(scope="module")
def dev(eval_dev: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pages = load(eval_dev)
    tmp = tmp_path_factory.mktemp("accuracy-dev")
    out = {alg: run(eval_dev, pages, tmp, algorithm=alg) for alg in ("both", "minhash", "simhash")}
    out["shuffled"] = [run(eval_dev, pages, tmp, seed=seed) for seed in (1, 2, 3)]
    return out


@pytest.fixture(scope="module")
def docs(eval_docs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pages = load(eval_docs)
    tmp = tmp_path_factory.mktemp("accuracy-docs")
    return {
        "both": run(eval_docs, pages, tmp),
        "shuffled": [run(eval_docs, pages, tmp, seed=s) for s in (1, 2, 3)],
    }


@pytest.fixture(scope="module")
def ref(eval_ref: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pages = load(eval_ref)
    tmp = tmp_path_factory.mktemp("accuracy-ref")
    return {
        "both": run(eval_ref, pages, tmp),
        "shuffled": [run(eval_ref, pages, tmp, seed=s) for s in (1, 2, 3)],
    }


def test_eval_dev_quality(dev: dict[str, Any]) -> None:
    pairs = dev["both"]["source_pairs"]
    assert pairs["f1"] >= 0.99, pairs  # measured 0.994
    assert pairs["precision"] >= 0.995, pairs  # measured 1.000


def test_eval_docs_quality(docs: dict[str, Any]) -> None:
    pairs = docs["both"]["source_pairs"]
    assert pairs["f1"] >= 0.98, pairs  # measured 0.989
    assert pairs["precision"] >= 0.99, pairs  # measured 0.997


def test_eval_ref_quality(ref: dict[str, Any]) -> None:
    """Sites from generators the other sets lack, hundreds of tiny generated pages that differ in
    the item they document, a reference at two releases."""
    pairs = ref["both"]["source_pairs"]
    assert pairs["f1"] >= 0.95, pairs  # measured 0.970
    assert pairs["precision"] >= 0.97, pairs  # measured 0.991


def test_tags_say_what_they_mean(dev: dict[str, Any], docs: dict[str, Any], ref: dict[str, Any]) -> None:
    """``exact`` only for a text identical, as compared, to the representative's (similarity 1);
    ``near`` below the threshold only by a rule README states: an edited or revised copy,
    another view of the same address, a copy of a member, or a page joined through a member it
    passes while within ``T - 0.3`` of the representative (the chaining guard's one step)."""
    threshold = NearDupDetector().params.threshold
    below_by_rule = ("edited", "revised", "view", "member-copy")
    for results in (dev, docs, ref):
        for metrics in (results["both"], *results["shuffled"]):
            for url, tag in metrics["tags"].items():
                if tag["status"] == "exact":
                    assert tag["similarity"] >= 0.95 and tag["rule"] == "exact", (url, tag)
                elif tag["status"] == "near" and tag["similarity"] < threshold:
                    through_member = tag["matched"] != tag["duplicate_of"]
                    assert tag["rule"] in below_by_rule or (
                        through_member and tag["similarity"] >= threshold - 0.3
                    ), (url, tag)


def test_both_is_at_least_as_good_as_each_alone(dev: dict[str, Any]) -> None:
    f1 = {alg: dev[alg]["source_pairs"]["f1"] for alg in ("both", "minhash", "simhash")}
    assert f1["both"] >= f1["minhash"] - 1e-9
    assert f1["both"] >= f1["simhash"] - 1e-9


def test_mirrors_and_copies_are_found(dev: dict[str, Any], docs: dict[str, Any]) -> None:
    """Floors: the 0.95 aim where it is met, else the measured value less about 0.03."""
    for metrics in (docs["both"],):
        # measured 0.99 / 1.00 / 0.95: the wiki's misses are reference pages of a few words,
        # to which the wiki's template adds more text than the page has
        for host in ("codelib", "linuxdoc", "wiki"):
            assert kind_recall(metrics, f"template_mirror:{host}") >= 0.95, host
        assert kind_recall(metrics, "exact_mirror") == 1.0
        assert kind_recall(metrics, "variant:print") >= 0.95  # measured 1.00
    metrics = dev["both"]
    assert kind_recall(metrics, "exact_mirror") >= 0.97
    assert kind_recall(metrics, "template_mirror:main") >= 0.95
    # measured 0.96 (aim 0.95): news pages whose benchmark article body leaves out the standfirst
    assert kind_recall(metrics, "template_mirror:article") >= 0.95
    assert kind_recall(metrics, "template_mirror:reader") >= 0.95
    # measured 0.96: print views that keep part of the article are found by their address
    assert kind_recall(metrics, "variant:print") >= 0.95


def test_scripts_without_spaces_are_matched_like_the_others(eval_docs: Path, docs: dict[str, Any]) -> None:
    """Chinese and Japanese pages, with default settings: derived pages are found with their
    origins as often as English ones, and translations are not taken for copies."""
    truth = json.loads((eval_docs / "truth.json").read_text())
    clusters = docs["both"]["clusters"]
    found: dict[str, list[bool]] = {"cjk": [], "en": []}
    for p in truth["pages"]:
        if p["of"] and p["lang"] in ("ja", "zh-CN", "zh-TW", "en"):
            group = "en" if p["lang"] == "en" else "cjk"
            found[group].append(clusters[p["url"]] == clusters[p["of"]])
    recall = {group: sum(hits) / len(hits) for group, hits in found.items()}
    print("derived pages found with their origin, by script:", recall, {g: len(h) for g, h in found.items()})
    assert len(found["cjk"]) > 50
    assert recall["cjk"] >= recall["en"] - 0.03
    by_url = {p["url"]: p for p in truth["pages"]}
    translations = [
        (a, b)
        for a, b in _pairs_in_clusters(clusters)
        if by_url[a]["site"].split("-")[0] in ("handbook", "debref")
        and by_url[a]["lang"] != by_url[b]["lang"]
    ]
    assert not translations, translations[:5]


def _clusters_of(tags: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The clusters the tags describe, as ``score.py`` reads them: pages sharing a ``cluster``
    value or linked by ``duplicate_of`` (a tag names the representative its page met, and a
    representative can change after: a merge, or an original replacing its copy)."""
    parent = {url: url for url in tags}

    def find(url: str) -> str:
        while parent[url] != url:
            parent[url] = parent[parent[url]]
            url = parent[url]
        return url

    first: dict[str, str] = {}
    for url, tag in tags.items():
        for other in (tag["duplicate_of"], first.setdefault(tag["cluster"], url) if tag["cluster"] else None):
            if other in parent:
                parent[find(url)] = find(other)
    return {url: find(url) if tags[url]["cluster"] else None for url in tags}


def _pairs_in_clusters(clusters: dict[str, Any]) -> list[tuple[str, str]]:
    members: dict[Any, list[str]] = {}
    for url, cluster in clusters.items():
        if cluster is not None:
            members.setdefault(cluster, []).append(url)
    return [(a, b) for group in members.values() for i, a in enumerate(group) for b in group[i + 1 :]]


@pytest.mark.parametrize("which", ["dev", "docs", "ref"])
def test_the_order_of_pages_does_not_matter(
    which: str, dev: dict[str, Any], docs: dict[str, Any], ref: dict[str, Any]
) -> None:
    results = {"dev": dev, "docs": docs, "ref": ref}[which]
    base = results["both"]["source_pairs"]["f1"]
    expected = {"dev": DEV_MIRRORS, "docs": DOCS_MIRRORS, "ref": REF_MIRRORS}[which]
    assert results["both"]["mirror_pairs"] == expected
    for metrics in results["shuffled"]:
        assert abs(metrics["source_pairs"]["f1"] - base) <= 0.01
        assert metrics["mirror_pairs"] == expected


def test_template_mirrors_in_templates_never_tuned_on(eval_dev: Path, eval_docs: Path) -> None:
    """The main content of real pages moved into the templates of 20 other real sites
    (``benchmarks/bench_templates.py``): the copy is found, and distinct pages in one template
    stay apart. The sets hold three mirror templates each; this holds the extractor to many."""
    bench = load_benchmark("bench_templates")
    contents, templates, _ = bench.sample((eval_dev, eval_docs), 60, 20, 3, 40, None)
    figures = bench.measure(contents, templates)
    print(
        f"transplants: recall {figures['recall']:.3f} over {figures['pairs']} pairs, bleed "
        f"{figures['bleed']}; weakest templates {figures['weakest_templates'][:3]}"
    )
    assert figures["pairs"] >= 1000
    assert figures["recall"] >= 0.95
    assert figures["bleed_share"] <= 0.005


def test_variants_in_wording_and_addresses_never_tuned_on(eval_dev: Path, eval_docs: Path) -> None:
    """Variants of 120 real pages made with phrases and addresses of their own
    (``benchmarks/bench_variants.py``: timestamp and counter lines in five languages, edited
    paragraphs, added chrome, print views, at a query of the page's url or at another path):
    found with their page, and never with another page. Each labelled set writes its variants
    one way; this holds the detector to others."""
    bench = load_benchmark("bench_variants")
    contents = bench.sample((eval_dev, eval_docs), 120, 3, 20)
    figures = bench.measure(bench.build(contents, 3), 3)
    recall = {key: round(value, 3) for key, (value, _) in figures["recall"].items()}
    print(f"variants: recall {recall}; false pairs {figures['false_pairs_by_kinds']}")
    assert figures["pages"] >= 900
    assert recall["all"] >= 0.95  # measured 0.975 (seeds 0-4 at 120 to 200 pages: 0.975-0.984)
    assert min(recall["address:query"], recall["address:path"]) >= 0.94
    assert figures["false_pairs"] == 0


def test_a_table_of_links_keeps_its_rows_whatever_precedes_it(eval_docs: Path) -> None:
    """A generated member list (every entry links its definition; entries without arguments are
    mostly link text) gives the same rows with and without the sentence before the table: rows
    are records of their table, not link lists of their own (a real page of eval-docs)."""
    url = "https://developer-old.gnome.org/glibmm/2.66/classGio_1_1DBus_1_1ObjectManager-members.html"
    html = next(body for page_url, body in load(eval_docs) if page_url == url).decode()
    intro = re.search(r"<p>This is the complete list.*?</p>", html, re.S)
    assert intro is not None
    with_intro = html_to_text(html)
    without = html_to_text(html.replace(intro.group(0), ""))
    assert "freeze_notify()" in with_intro and "freeze_notify()" in without
    assert len(with_intro.split()) - len(without.split()) == len(
        html_to_text(f"<p>{intro.group(0)}</p>").split()
    )
