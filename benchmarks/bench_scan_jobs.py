"""Benchmark of ``neardup-scrapy scan --jobs``: wall time of --jobs N against --jobs 1.

Runs the scan of a labelled set (default ``../shared/eval-docs/pages.jsonl.gz``, 4,038 pages)
three times with each setting, alternating, checks that the outputs are byte-identical, and
prints each wall time, the medians and their ratio. Target: ratio <= 0.6 with --jobs 2 on two
otherwise idle cores (the scan's index work stays in one process, so the ratio cannot reach
0.5). A busy machine raises the ratio: the load average is printed next to it.

Usage: ``python benchmarks/bench_scan_jobs.py [INPUT] [--jobs N] [--runs N]``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INPUT = ROOT.parent / "shared" / "eval-docs" / "pages.jsonl.gz"


def run(source: Path, jobs: int, out: Path) -> tuple[float, str]:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup_scrapy.cli",
            "scan",
            str(source),
            "-o",
            str(out),
            "-q",
            "--jobs",
            str(jobs),
        ],
        check=True,
        cwd=ROOT,
    )
    elapsed = time.perf_counter() - started
    return elapsed, hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", nargs="?", type=Path, default=DEFAULT_INPUT)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not args.input.exists():
        sys.exit(f"{args.input}: not found (pass a JSON Lines or WARC file)")
    times: dict[int, list[float]] = {1: [], args.jobs: []}
    digests: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.runs):
            for jobs in (1, args.jobs):
                elapsed, digest = run(args.input, jobs, Path(tmp) / f"out-{jobs}-{n}.jsonl")
                times[jobs].append(elapsed)
                digests.add(digest)
                print(f"run {n + 1} --jobs {jobs}: {elapsed:.2f} s", flush=True)
    one, many = statistics.median(times[1]), statistics.median(times[args.jobs])
    print(f"cores available: {len(os.sched_getaffinity(0))}; load average: {os.getloadavg()}")
    print(f"median --jobs 1: {one:.2f} s; median --jobs {args.jobs}: {many:.2f} s")
    print(f"ratio --jobs {args.jobs} / --jobs 1: {many / one:.2f} (target <= 0.6 on 2 idle cores)")
    print(f"outputs identical: {len(digests) == 1}")
    if len(digests) != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
