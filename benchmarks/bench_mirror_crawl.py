"""Mirror crawls: an origin and its template mirror crawled at once, many times over (#35).

Usage::

    python benchmarks/bench_mirror_crawl.py [--runs 20] [--modes inline,process]
        [--scenarios skip-fast,skip-declared,skip-slow,drop-fast,drop-declared]

Each crawl serves the two sites of ``tests/e2e_mirror_site.py`` on 127.0.0.1 (the origin, 47
pages) and 127.0.0.2 (a mirror of 20 of its stories in another template, plus 3 pages of its own)
and crawls both with a ``CrawlSpider`` that starts on both (``tests/e2e_spiders.py``), in a
subprocess per crawl (``tests/e2e_crawl.py``). Scenarios:

* ``skip-fast``: ``NEARDUP_SKIP_MIRRORS``, the mirror links all its pages from its front page and
  has no canonical links: smaller than its origin, it is fetched faster (the crawl of #35, where
  counts first named the origin the mirror);
* ``skip-declared``: the mirror's copies name the origin's pages canonical, and it is paged one
  story at a time (the origin is fetched faster; most of the mirror is left when the pair settles);
* ``skip-slow``: paged, without canonical links (the direction is settled on counts alone);
* ``drop-fast``, ``drop-declared``: ``NEARDUP_ACTION = "drop"`` on the first two sites.

Prints, per scenario and worker mode: the runs in which every origin page was fetched and
delivered to the spider, requests to the origin skipped (all runs), log lines naming the origin
a mirror, claims withdrawn, mirror requests skipped (min / median / max per run), mirror pages
fetched (median of 23), requests scheduled again and given up, and pages dropped per host.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e_mirror_site import MirrorCrawl, crawl_both, mirror_paths, origin_paths  # noqa: E402

SCENARIOS: dict[str, tuple[dict[str, object], bool, str]] = {
    "skip-fast": ({"NEARDUP_SKIP_MIRRORS": True}, False, "index"),
    "skip-declared": ({"NEARDUP_SKIP_MIRRORS": True}, True, "chain"),
    "skip-slow": ({"NEARDUP_SKIP_MIRRORS": True}, False, "chain"),
    "drop-fast": ({"NEARDUP_ACTION": "drop"}, False, "index"),
    "drop-declared": ({"NEARDUP_ACTION": "drop"}, True, "chain"),
}


def _spread(values: list[int]) -> str:
    return f"{min(values)}/{statistics.median(values):g}/{max(values)}" if values else "-"


def summarize(name: str, mode: str, runs: list[MirrorCrawl], seconds: float) -> str:
    origin = set(origin_paths())
    whole = sum(1 for r in runs if r.origin_fetched == origin and r.origin_items() == origin)
    failed = sum(1 for r in runs if r.result.returncode != 0)

    def dropped(run: MirrorCrawl, host: str) -> int:
        return sum(
            1 for e in run.result.errbacks if e["exception"] == "DuplicatePage" and host in (e["url"] or "")
        )

    stat = lambda run, key: int(run.result.stat(key))  # noqa: E731
    return (
        f"{name:14} {mode:8} runs {len(runs):3}  origin whole {whole:3}/{len(runs)}  "
        f"origin skipped {sum(r.origin_skipped for r in runs):3}  reversed claims "
        f"{sum(r.reversed_claims for r in runs):2}  withdrawn {sum(len(r.withdrawn) for r in runs):2}  "
        f"mirror skipped {_spread([r.mirror_skipped for r in runs]):9}  mirror fetched "
        f"{statistics.median([len(r.mirror_fetched) for r in runs]):4g}/{len(mirror_paths())}  "
        f"rescheduled {sum(stat(r, 'neardup/mirror_requests_rescheduled') for r in runs):3}  "
        f"given up {sum(stat(r, 'neardup/mirror_requests_given_up') for r in runs):3}  "
        f"dropped origin/mirror {sum(dropped(r, r.origin_host) for r in runs)}/"
        f"{sum(dropped(r, r.mirror_host) for r in runs)}  failed {failed}  ({seconds:.0f} s)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--modes", default="inline,process")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args()
    bad = 0
    for name in args.scenarios.split(","):
        settings, canonical, nav = SCENARIOS[name]
        for mode in args.modes.split(","):
            started = time.monotonic()
            runs = [
                crawl_both({"NEARDUP_WORKER": mode, **settings}, canonical=canonical, nav=nav)
                for _ in range(args.runs)
            ]
            print(summarize(name, mode, runs, time.monotonic() - started), flush=True)
            origin = set(origin_paths())
            bad += sum(1 for r in runs if r.origin_skipped or r.origin_items() != origin)
    print(f"runs that skipped or lost an origin page: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
