"""Text-extraction benchmark: HTML -> tokens, relative to the lxml parse alone.

Usage::

    python benchmarks/bench_extract.py [EVAL_DEV_DIR] [--reps N]

EVAL_DEV_DIR defaults to ``../shared/eval-dev`` next to the repository.  Over all eval-dev pages,
in one run, each stage is timed (best of N passes, default 3; CPU seconds of this process via
``time.process_time``, so other work on the machine distorts the ratios less):

* ``parse``: ``lxml.html.document_fromstring`` on the page bytes (the baseline, 1.00x);
* ``parse_html``: :func:`neardup_scrapy.core.text.parse_html` alone;
* ``extract``: :func:`~neardup_scrapy.core.text.extract_main_text` on already parsed trees
  (what the Scrapy glue pays: Scrapy has parsed the page already);
* ``normalize`` and ``tokenize`` on the extracted texts;
* ``pipeline``: parse_html + extract + normalize + tokenize, page by page.

It prints each time and its ratio to ``parse``.  The lead's budget: HTML -> verdict <= 2.0x
parse (aim 1.5x), hashing and indexing included.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import lxml.html

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neardup_scrapy.core.text import (  # noqa: E402
    extract_main_text,
    normalize_text,
    parse_html,
    tokenize,
)


def load_pages(eval_dev: Path) -> list[bytes]:
    with gzip.open(eval_dev / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line)["html"].encode("utf-8") for line in f]


def best_of(reps: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(reps):
        gc.collect()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("eval_dev", nargs="?", default=str(ROOT.parent / "shared" / "eval-dev"))
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    pages = load_pages(Path(args.eval_dev))
    total_mb = sum(map(len, pages)) / 1e6
    print(f"{len(pages)} pages, {total_mb:.1f} MB of HTML, best of {args.reps} passes (CPU time)")

    roots = [parse_html(b) for b in pages]
    texts = [extract_main_text(r) if r is not None else "" for r in roots]
    normalized = [normalize_text(t) for t in texts]

    def parse() -> None:
        for b in pages:
            lxml.html.document_fromstring(b)

    def our_parse() -> None:
        for b in pages:
            parse_html(b)

    def extract() -> None:
        for r in roots:
            if r is not None:
                extract_main_text(r)

    def normalize() -> None:
        for t in texts:
            normalize_text(t)

    def tok() -> None:
        for t in normalized:
            tokenize(t)

    def pipeline() -> None:
        for b in pages:
            root = parse_html(b)
            tokenize(normalize_text(extract_main_text(root) if root is not None else ""))

    stages = [
        ("parse", parse),
        ("parse_html", our_parse),
        ("extract", extract),
        ("normalize", normalize),
        ("tokenize", tok),
        ("pipeline", pipeline),
    ]
    # interleave the stages over the passes so that machine load hits them alike
    times = {name: float("inf") for name, _ in stages}
    for _ in range(args.reps):
        for name, fn in stages:
            times[name] = min(times[name], best_of(1, fn))
    base = times["parse"]
    for name, _ in stages:
        print(f"{name:12s} {times[name]:8.3f} s   {times[name] / base:5.2f}x parse")
    print(f"text: {sum(map(len, texts)) / 1e6:.1f} M chars extracted from {total_mb:.1f} MB")
    print(f"ratio parse+extract+normalize+tokenize / parse = {times['pipeline'] / base:.2f}")


if __name__ == "__main__":
    main()
