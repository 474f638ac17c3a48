"""Every verification rule earns its place: what each rule accepted on each labelled set, and how
often it was right.

Each set of ``../shared`` (eval-dev, eval-docs, eval-ref) is checked by one detector with default
settings, in the set's order (or a seeded shuffle). For every page tagged a duplicate, the
explanation names the rule it passed (``Verdict.rule``: ``exact``, ``member-copy``,
``near-identical``, ``release``, ``resemblance``, ``edited``, ``revised``, ``view``; README, "How
it works", step 5) and the page it matched; the pair (page, matched page) is right when the
truth gives both the same source. Printed per set: pairwise precision, recall and F1 as
``score.py`` counts them (pages in one predicted cluster), then per rule the pairs accepted, the
precision of those pairs and the wrong ones, then recall by kind of derived page and the host
pairs of the false pairs.

Usage::

    python benchmarks/bench_rules.py [--sets eval-dev eval-docs eval-ref] [--seed 0] [--wrong]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.verify import RULES

SHARED = Path(__file__).resolve().parents[2] / "shared"
SETS = ("eval-dev", "eval-docs", "eval-ref")


def _pairs(labels: list[Any]) -> set[tuple[int, int]]:
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        groups[label].append(i)
    return {pair for members in groups.values() for pair in itertools.combinations(members, 2)}


def measure(path: Path, seed: int = 0) -> dict[str, Any]:
    """Check one set's pages and score the verdicts: totals, per rule, per kind, false host pairs."""
    truth = json.loads((path / "truth.json").read_text())["pages"]
    with gzip.open(path / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        pages = [(record["url"], record["html"].encode("utf-8")) for record in map(json.loads, f)]
    index = {url: i for i, (url, _) in enumerate(pages)}
    order = list(range(len(pages)))
    if seed:
        random.Random(seed).shuffle(order)
    detector = NearDupDetector()
    verdicts = {}
    for i in order:
        verdicts[i] = detector.check(*pages[i])
    # the predicted clusters as score.py reads them: one cluster id, plus url -- duplicate_of
    parent = list(range(len(pages)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: int, b: int) -> None:
        a, b = find(a), find(b)
        parent[max(a, b)] = min(a, b)

    first: dict[str, int] = {}
    for i, verdict in verdicts.items():
        if verdict.cluster is not None:
            union(i, first.setdefault(verdict.cluster, i))
        if verdict.duplicate_of in index:
            union(i, index[verdict.duplicate_of])
    predicted = _pairs([find(i) for i in range(len(pages))])
    true = _pairs([page["source"] for page in truth])
    hits = len(predicted & true)
    precision = hits / len(predicted) if predicted else 1.0
    recall = hits / len(true) if true else 1.0
    rules: dict[str, list[int]] = {rule: [0, 0] for rule in RULES}
    wrong: list[tuple[str, float, str, str]] = []
    for i, verdict in verdicts.items():
        if not verdict.is_duplicate:
            continue
        matched = index[verdict.matched or verdict.duplicate_of or ""]
        right = truth[i]["source"] == truth[matched]["source"]
        rules[verdict.rule][0] += 1
        rules[verdict.rule][1] += right
        if not right:
            wrong.append((verdict.rule, verdict.similarity or 0.0, verdict.url, pages[matched][0]))
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for i, page in enumerate(truth):
        if page["of"] in index:
            kind = f"{page['kind']}:{page['subkind']}" if page["subkind"] else page["kind"]
            kinds[kind][0] += 1
            kinds[kind][1] += find(i) == find(index[page["of"]])
    false_hosts = Counter(tuple(sorted((truth[a]["host"], truth[b]["host"]))) for a, b in predicted - true)
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "rules": rules,
        "wrong": wrong,
        "kinds": dict(kinds),
        "false_hosts": false_hosts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", nargs="+", default=list(SETS), help="sets of ../shared to check")
    parser.add_argument("--seed", type=int, default=0, help="shuffle the pages with this seed (0: set order)")
    parser.add_argument("--wrong", action="store_true", help="print every wrong pair")
    args = parser.parse_args()
    for name in args.sets:
        figures = measure(SHARED / name, args.seed)
        print(
            f"{name} (seed {args.seed}): P={figures['precision']:.4f} R={figures['recall']:.4f} "
            f"F1={figures['f1']:.4f}"
        )
        print(f"  {'rule':16s} {'pairs':>6s} {'precision':>9s} {'wrong':>6s}")
        for rule, (accepted, right) in figures["rules"].items():
            share = f"{right / accepted:.3f}" if accepted else "-"
            print(f"  {rule:16s} {accepted:6d} {share:>9s} {accepted - right:6d}")
        kinds = ", ".join(
            f"{kind} {found / total:.3f}" for kind, (total, found) in sorted(figures["kinds"].items())
        )
        print(f"  recall by kind: {kinds}")
        print(f"  false pairs by host pair: {figures['false_hosts'].most_common(6)}")
        if args.wrong:
            for rule, similarity, url, matched in figures["wrong"]:
                print(f"    {rule} {similarity:.3f} {url} -> {matched}")


if __name__ == "__main__":
    main()
