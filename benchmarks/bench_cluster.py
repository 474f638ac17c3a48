"""Check time as one host's cluster of near-identical pages grows (#12 finding 6).

Usage::

    .venv/bin/python benchmarks/bench_cluster.py                       # memory, disk, redis
    .venv/bin/python benchmarks/bench_cluster.py --stores memory --sizes 100,1000,10000

One detector per store is filled with near-identical pages of one host (the same 300-word
article with two words changed per page: calendars, faceted search, spam farms; ``--html``: as
HTML pages with a title and a heading). At each size, ``--probes`` more such pages are checked
one by one; the script prints the median check time (wall, and CPU time of this process: the
client's side of a Redis store), the median number of candidates fetched and of pairs verified
by the rule per check, and the ratio of the medians at each size to those at the first size
(#32: CPU within 2x at 10k vs 100).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neardup_scrapy.core import NearDupDetector  # noqa: E402
from neardup_scrapy.core.storage import open_storage  # noqa: E402

_VOCAB = [f"w{i}" for i in range(2000)]


def near_identical(i: int, words: int = 300) -> str:
    """Page ``i`` of the family: one article, two of its words changed by ``i``."""
    base = random.Random(7)
    text = [base.choice(_VOCAB) for _ in range(words)]
    rng = random.Random(i)
    for _ in range(2):
        text[rng.randrange(words)] = rng.choice(_VOCAB)
    return " ".join(text)


class CountingFetch:
    """Wraps a store's ``fetch`` to record how many candidates each call returns."""

    def __init__(self, detector: NearDupDetector) -> None:
        self.sizes: list[int] = []
        self._fetch = detector.storage.fetch
        detector.storage.fetch = self  # type: ignore[method-assign]

    def __call__(self, ids: Any) -> Any:
        self.sizes.append(len(ids))
        return self._fetch(ids)


def near_identical_html(i: int) -> str:
    """:func:`near_identical` as an HTML page of the family (the same title and heading)."""
    return (
        "<html><head><title>Events this week</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<h1>Events this week</h1><p>{near_identical(i)}</p></body></html>"
    )


class CountingRule:
    """Wraps the detector's pair rule to count the pairs verified."""

    def __init__(self, detector: NearDupDetector) -> None:
        self.calls = 0
        rule = detector._indexer.rule
        judge, view = rule.judge, rule.view

        def counted_judge(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return judge(*args, **kwargs)

        def counted_view(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return view(*args, **kwargs)

        rule.judge, rule.view = counted_judge, counted_view  # type: ignore[method-assign]


def measure(
    detector: NearDupDetector, sizes: list[int], probes: int, html: bool = False
) -> list[tuple[int, float, float, float, float]]:
    """``(size, median wall seconds, median CPU seconds, median candidates, median pairs
    verified)`` per check at each size."""
    counter = CountingFetch(detector)
    rule = CountingRule(detector)

    def check(n: int) -> Any:
        url = f"http://farm.test/p/{n}"
        if html:
            return detector.check(url, near_identical_html(n).encode())
        return detector.check(url, text=near_identical(n))

    out = []
    n = 0
    for size in sizes:
        while n < size:
            check(n)
            n += 1
        times, cpu, fetched, verified = [], [], [], []
        for _ in range(probes):
            counter.sizes.clear()
            rule.calls = 0
            started, started_cpu = time.perf_counter(), time.process_time()
            check(n)
            cpu.append(time.process_time() - started_cpu)
            times.append(time.perf_counter() - started)
            fetched.append(sum(counter.sizes))
            verified.append(rule.calls)
            n += 1
        out.append(
            (
                size,
                statistics.median(times),
                statistics.median(cpu),
                statistics.median(fetched),
                statistics.median(verified),
            )
        )
    return out


def make(store: str, redis_url: str) -> NearDupDetector:
    if store == "memory":
        return NearDupDetector(keep_excerpts=0, repeat_cache=0)
    if store == "disk":
        path = Path(tempfile.mkdtemp()) / "index.sqlite"
        return NearDupDetector(storage=open_storage("disk", path=str(path)), keep_excerpts=0, repeat_cache=0)
    prefix = f"bench-cluster-{uuid.uuid4().hex[:8]}"
    storage = open_storage("redis", redis_url=redis_url, prefix=prefix)
    return NearDupDetector(storage=storage, keep_excerpts=0, repeat_cache=0)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stores", default="memory,disk,redis")
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--probes", type=int, default=100)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--html", action="store_true", help="HTML pages with a title and a heading")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for store in args.stores.split(","):
        detector = make(store, args.redis_url)
        try:
            rows = measure(detector, sizes, args.probes, args.html)
        finally:
            if store == "redis":
                client = detector.storage.client  # type: ignore[attr-defined]
                prefix = detector.storage.prefix  # type: ignore[attr-defined]
                for key in client.scan_iter(f"{prefix}*"):
                    client.delete(key)
            detector.close()
        first, first_cpu = rows[0][1], rows[0][2]
        for size, median, cpu, fetched, verified in rows:
            print(
                f"{store:6s} {size:6d} pages: {median * 1000:7.2f} ms/check (x{median / first:4.2f} vs "
                f"{sizes[0]}), CPU {cpu * 1000:7.2f} ms (x{cpu / first_cpu:4.2f}), "
                f"{fetched:5.0f} candidates, {verified:5.0f} pairs verified per check",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
