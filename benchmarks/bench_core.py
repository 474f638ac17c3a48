"""Core benchmarks: per-page cost relative to the lxml parse, large pages, the index at 10k..1M pages.

Usage::

    python benchmarks/bench_core.py pipeline [SET_DIR ...]       # time ratios + large-page line
    python benchmarks/bench_core.py callgrind [N] [SET_DIR ...]  # instruction ratios (valgrind)
    python benchmarks/bench_core.py scaling                      # 20 MB vs 5 MB page
    python benchmarks/bench_core.py index [10000 100000 1000000]

``SET_DIR`` defaults to both ``../shared/eval-dev`` and ``../shared/eval-docs``. Targets
(issue #11): check / parse <= 1.3 on eval-dev and <= 1.5 on eval-docs; inline (a tree the crawl
parsed already) <= 0.6 on both; a 20 MB page <= 4.5x a 5 MB page.

Times are CPU seconds of the benchmark process (``time.process_time``). ``pipeline`` times, over
all pages of a set, the lxml parse alone (``lxml.html.document_fromstring`` on the bytes), the
whole ``check(url, html)`` (parse, main text, tokens, sketches, query, verify, insert) and the
check of an already parsed tree (``check(url, html, tree=...)``, what inline mode does with
Scrapy's tree), as best of 5 alternating passes and paired by page (each page parsed alone and
checked back to back, in alternating order; median of 5 rounds: on a VM whose speed drifts,
both totals of a round see the same machine state).

``callgrind`` counts instructions instead (steady on a busy machine): one process per mode
(``load``: imports and reading N pages of a seeded shuffle; ``parse``; ``check``; ``tree``:
parse then check the tree), and prints ``(check - load) / (parse - load)`` and
``(tree - parse) / (parse - load)``.

``index`` builds an in-memory index of N synthetic pages (90% distinct, 10% near copies of an
earlier page) in a fresh subprocess per size, one after another; then the sizes take turns
timing 50 pages each until each has timed its last 2,000 pages, so all sizes are measured in
the same minutes (this VM's speed drifts by tens of percent within minutes). It prints the
store's bytes per page, the process's RSS growth per page, the mean microseconds of query
(lookup + fetch + verify) and insert (commit) over the last 2,000 pages, and the mean
microseconds of a whole check (query + insert) over all N pages, which includes every merge
of the index's runs. Synthetic signatures skip text hashing, so the figures are the index's
own.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _load_pages(eval_dir: Path, limit: int = 0) -> list[tuple[str, bytes]]:
    """The pages of a labelled set, in a seeded shuffled order (the first ``limit`` when set)."""
    import random

    with gzip.open(eval_dir / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        pages = [(rec["url"], rec["html"].encode("utf-8")) for rec in map(json.loads, f)]
    random.Random(0).shuffle(pages)
    return pages[:limit] if limit else pages


def bench_pipeline(eval_dir: Path) -> None:
    """Time ratios on one set: whole passes and paired by page, from bytes and from a parsed tree."""
    import lxml.html

    from neardup_scrapy.core import NearDupDetector

    pages = _load_pages(eval_dir)
    total_mb = sum(len(b) for _, b in pages) / 1e6
    parse = lxml.html.document_fromstring
    clock = time.process_time
    trees = [parse(body) for _, body in pages]

    def parse_only() -> None:
        for _, body in pages:
            parse(body)

    def full() -> None:
        det = NearDupDetector()
        for url, body in pages:
            det.check(url, body)

    def inline() -> None:
        det = NearDupDetector()
        for (url, body), tree in zip(pages, trees, strict=True):
            det.check(url, body, tree=tree)

    # 1. Whole passes, alternating, best of 5 each.
    timings: dict[str, float] = {}
    for name, fn in (("parse", parse_only), ("full", full), ("inline", inline)) * 5:
        start = clock()
        fn()
        elapsed = clock() - start
        timings[name] = min(timings.get(name, elapsed), elapsed)

    # 2. Paired: each page is parsed alone and checked back to back (which goes first
    # alternates), so both totals of a round see the same machine state.
    def timed(fn: Any, *args: Any, **kwargs: Any) -> float:
        start = clock()
        fn(*args, **kwargs)
        return clock() - start

    paired: list[float] = []
    paired_inline: list[float] = []
    for round_ in range(5):
        det = NearDupDetector()
        det_inline = NearDupDetector()
        parse_s = full_s = inline_s = 0.0
        for i, (url, body) in enumerate(pages):
            if (i + round_) % 2:
                parse_s += timed(parse, body)
                full_s += timed(det.check, url, body)
                inline_s += timed(det_inline.check, url, body, tree=trees[i])
            else:
                inline_s += timed(det_inline.check, url, body, tree=trees[i])
                full_s += timed(det.check, url, body)
                parse_s += timed(parse, body)
        paired.append(full_s / parse_s)
        paired_inline.append(inline_s / parse_s)
    print(f"== {eval_dir.name}: {len(pages)} pages ({total_mb:.1f} MB of HTML), CPU time")
    print(f"lxml parse alone:   {timings['parse']:.3f} s  ({total_mb / timings['parse']:.1f} MB/s)")
    print(f"HTML -> verdict:    {timings['full']:.3f} s  ({len(pages) / timings['full']:.0f} pages/s)")
    rounds = " ".join(f"{r:.2f}" for r in paired)
    print(f"ratio check/parse, best passes:    {timings['full'] / timings['parse']:.2f}")
    print(f"ratio check/parse, paired by page: {float(np.median(paired)):.2f}   (median of rounds {rounds})")
    rounds = " ".join(f"{r:.2f}" for r in paired_inline)
    print(f"inline (parsed tree) / parse, best passes:    {timings['inline'] / timings['parse']:.2f}")
    print(
        f"inline (parsed tree) / parse, paired by page: {float(np.median(paired_inline)):.2f}"
        f"   (median of rounds {rounds})"
    )


def _callgrind_mode(mode: str, eval_dir: Path, limit: int) -> None:
    """One process measured by callgrind: load pages, then parse / check / check a parsed tree."""
    import lxml.html

    from neardup_scrapy.core import NearDupDetector

    pages = _load_pages(eval_dir, limit)
    det = NearDupDetector()
    parse = lxml.html.document_fromstring
    if mode == "parse":
        for _, body in pages:
            parse(body)
    elif mode == "check":
        for url, body in pages:
            det.check(url, body)
    elif mode == "tree":
        for url, body in pages:
            det.check(url, body, tree=parse(body))


def bench_callgrind(eval_dir: Path, limit: int) -> None:
    """Instruction counts (``valgrind --tool=callgrind``), steady on a busy machine.

    ``load`` (imports, reading the pages) is subtracted from the others: check / parse is
    ``(check - load) / (parse - load)``; inline is ``(tree - parse) / (parse - load)``, the
    extra cost of checking a tree the crawl has parsed already.
    """
    import re
    import tempfile

    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("load", "parse", "check", "tree"):
            proc = subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    f"--callgrind-out-file={tmp}/{mode}.out",
                    sys.executable,
                    __file__,
                    "_callgrind",
                    mode,
                    str(eval_dir),
                    str(limit),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            found = re.search(r"Collected : (\d+)", proc.stderr)
            if found is None:
                raise SystemExit(f"callgrind printed no total for {mode}:\n{proc.stderr[-2000:]}")
            counts[mode] = int(found.group(1))
    parse = counts["parse"] - counts["load"]
    print(f"== {eval_dir.name}: {limit} pages (seeded shuffle), instructions (callgrind), load subtracted")
    print("   ".join(f"{mode} {value / 1e9:.3f}G" for mode, value in counts.items()))
    print(f"check / parse:              {(counts['check'] - counts['load']) / parse:.2f}")
    print(f"inline (parsed tree) / parse: {(counts['tree'] - counts['parse']) / parse:.2f}")


def bench_scaling() -> None:
    """CPU time of one check of a 5 MB and a 20 MB page of one kind (documentation markup)."""
    from neardup_scrapy.core import NearDupDetector

    source = ROOT.parent / "shared" / "eval-docs"
    bodies = "".join(
        body.decode("utf-8").split("<body", 1)[-1].split(">", 1)[-1].rsplit("</body>", 1)[0]
        for _, body in _load_pages(source)
    )
    seconds: dict[int, float] = {}
    for mb in (5, 20):
        text = bodies * (1 + int(mb * 1e6) // len(bodies))
        page = (
            f"<html><head><title>Big</title></head><body><main>{text[: int(mb * 1e6)]}</main></body></html>"
        )
        data = page.encode("utf-8")
        best = float("inf")
        for _ in range(3):
            det = NearDupDetector(timeout=600)
            start = time.process_time()
            verdict = det.check(f"https://big.example/{mb}", data)
            best = min(best, time.process_time() - start)
        seconds[mb] = best
        print(f"{mb:>3} MB page: {best:.3f} s ({verdict.status})")
    print(f"20 MB / 5 MB: {seconds[20] / seconds[5]:.2f}   (target <= 4.5; linear is 4)")


TAIL = 2000  # timed pages at the end of each index
BATCH = 50  # timed pages per turn when the sizes take turns


def _synthetic_keys(det: Any, sigs: np.ndarray, fps: np.ndarray, digests: bytes) -> np.ndarray:
    """The bucket keys the compiled pass would give pages with MinHash rows ``sigs`` and SimHashes
    ``fps`` (one row of keys per page): the exact key from the digest, the band sums with the
    seeded multipliers, the SimHash blocks; mixed, table in the top byte, so the index sees the
    real key distribution."""
    from neardup_scrapy.core.hashing import mix64
    from neardup_scrapy.core.native.sketch import seeded_constants
    from neardup_scrapy.core.simhash import block_masks

    params = det.params
    cache = det.__dict__.setdefault("_bench_constants", {})
    if not cache:
        cache["mult"] = np.array(
            [v | 1 for v in seeded_constants(params.seed, "band", params.lsh_rows)], dtype=np.uint64
        )
        cache["masks"] = np.array(block_masks(params.simhash_distance), dtype=np.uint64)
    bands, rows = params.lsh_bands, params.lsh_rows
    pages = len(sigs)
    with np.errstate(over="ignore"):
        band = (sigs[:, : bands * rows].astype(np.uint64).reshape(pages, bands, rows) * cache["mult"]).sum(
            axis=2, dtype=np.uint64
        )
        exact = np.frombuffer(digests, dtype="<u8").reshape(pages, 2)[:, :1].astype(np.uint64)
        blocks = fps.astype(np.uint64)[:, None] & cache["masks"]
        raw = np.concatenate([exact, band, blocks], axis=1)
        tables = np.arange(raw.shape[1], dtype=np.uint64) << np.uint64(56)
        return (mix64(raw) & np.uint64((1 << 56) - 1)) | tables


def _sketch_of(sig: np.ndarray, fp: int, digest: bytes, keys: np.ndarray, bands: int) -> Any:
    from neardup_scrapy.core.minhash import stored_form
    from neardup_scrapy.core.sketch import Sketch

    return Sketch(
        tokens=300,
        digest=digest,
        signature=sig,
        stored=stored_form(sig),
        simhash=fp,
        keys=keys,
        bands=bands,
        profile=b"",
    )


def _synthetic_sketch(det: Any, sig: np.ndarray, fp: int, digest: bytes) -> Any:
    """The sketch the compiled pass would give a page with MinHash ``sig`` and SimHash ``fp``."""
    keys = _synthetic_keys(det, sig[None, :], np.array([fp], dtype=np.uint64), digest)[0]
    return _sketch_of(sig, fp, digest, keys, det.params.lsh_bands)


class _SyntheticPages:
    """Synthetic pages made a thousand at a time (numpy per batch, not per page): 90% distinct
    (random MinHash rows), every tenth a near copy of one of the last 5,000 pages (10 of the
    MinHash values and one SimHash bit changed), so clusters stay as small at 10M as at 10k."""

    RING = 5000
    CHUNK = 1000

    def __init__(self, det: Any, seed: int = 42) -> None:
        self.det = det
        self.rng = np.random.default_rng(seed)
        self.num_perm = det.params.num_perm
        self.ring_sigs = np.zeros((self.RING, self.num_perm), dtype=np.uint32)
        self.ring_fps = np.zeros(self.RING, dtype=np.uint64)
        self.filled = 0
        self.next = 0
        self.ready: list[tuple[str, str, Any]] = []

    def _make(self) -> None:
        from neardup_scrapy.core.hashing import mix64

        rng, n, start = self.rng, self.CHUNK, self.next
        index = np.arange(start, start + n, dtype=np.uint64)
        sigs = rng.integers(0, 2**32, size=(n, self.num_perm), dtype=np.uint32)
        fps = mix64(index)
        # Copies come from pages of earlier batches (the ring as this batch starts).
        copies = np.flatnonzero((index % 10 == 0) & (index > 0)) if self.filled else np.array([], int)
        if len(copies):
            base = rng.integers(self.filled, size=len(copies))
            sigs[copies] = self.ring_sigs[base]
            changed = np.argpartition(rng.random((len(copies), self.num_perm)), 10, axis=1)[:, :10]
            sigs[copies[:, None], changed] = rng.integers(0, 2**32, size=(len(copies), 10), dtype=np.uint32)
            flips = np.uint64(1) << rng.integers(64, size=len(copies)).astype(np.uint64)
            fps[copies] = self.ring_fps[base] ^ flips
        digests = rng.bytes(16 * n)
        keys = _synthetic_keys(self.det, sigs, fps, digests)
        slots = (index % self.RING).astype(np.int64)
        self.ring_sigs[slots] = sigs
        self.ring_fps[slots] = fps
        self.filled = min(self.RING, self.filled + n)
        bands = self.det.params.lsh_bands
        for j in range(n):
            i = start + j
            host = f"host{i % 997}.example.com"
            url = f"https://{host}/articles/{i:08d}.html"
            sketch = _sketch_of(sigs[j], int(fps[j]), digests[16 * j : 16 * j + 16], keys[j], bands)
            self.ready.append((url, host, sketch))
        self.ready.reverse()
        self.next += n

    def page(self) -> tuple[str, str, Any]:
        if not self.ready:
            self._make()
        return self.ready.pop()


def _index_worker(n: int) -> None:
    """Build an index of ``n - TAIL`` synthetic pages, then time its last ``TAIL`` pages in
    batches on request (``tail K`` on stdin; ``done`` prints the figures as JSON)."""
    from neardup_scrapy.core import NearDupDetector

    det = NearDupDetector()
    pages = _SyntheticPages(det)
    rss_before = _rss_bytes()
    build_s = 0.0  # every check before the timed tail, merges included
    started = time.monotonic()
    step = max((n - TAIL) // 10, 1)
    for i in range(n - TAIL):
        url, host, sketch = pages.page()
        t0 = time.process_time()
        det._indexer.check_sketch(url, host, sketch, "", 1000)
        build_s += time.process_time() - t0
        if (i + 1) % step == 0 and n >= 1_000_000:
            elapsed = time.monotonic() - started
            print(f"index {n}: {i + 1} pages built, {elapsed:.0f} s", file=sys.stderr, flush=True)
    print("ready", flush=True)
    parts: dict[str, list[float]] = {"lookup": [], "fetch": [], "decide": [], "insert": []}
    for line in sys.stdin:
        if line.startswith("done"):
            break
        for _ in range(int(line.split()[1])):
            url, host, sketch = pages.page()
            # Query = lookup + fetch (far hits dropped, candidates read) + decide (verify);
            # insert = the commit of the same page.
            keys = det._indexer.lookup.keys(url, sketch)
            t0 = time.process_time()
            ids, token = det.storage.lookup(keys)
            t1 = time.process_time()
            candidates = det._indexer.lookup.candidates(ids, url, sketch)
            t2 = time.process_time()
            match = det._indexer.decider.decide(url, sketch, candidates, False)
            t3 = time.process_time()
            det.storage.commit(det._indexer.committer.commit_for(url, host, sketch, match, token, 1000, keys))
            t4 = time.process_time()
            for name, seconds in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                parts[name].append(seconds * 1e6)
            build_s += t4 - t0
        print("ok", flush=True)
    mean = {name: float(np.mean(values)) for name, values in parts.items()}
    result = {
        "pages": n,
        "store_bytes_per_page": det.storage.memory_bytes() / n,
        "rss_bytes_per_page": (_rss_bytes() - rss_before) / n,
        "query_us": mean["lookup"] + mean["fetch"] + mean["decide"],
        "lookup_us": mean["lookup"],
        "fetch_us": mean["fetch"],
        "decide_us": mean["decide"],
        "insert_us": mean["insert"],
        "check_us_all": build_s / n * 1e6,
    }
    print(json.dumps(result), flush=True)


def bench_index(sizes: list[int]) -> None:
    # One worker process per size builds its index (one after another, so builds never share
    # the CPU); then the sizes take turns at timing BATCH pages each, so that every size's
    # figures come from the same minutes of the machine's drifting speed.
    workers = []
    for n in sizes:
        proc = subprocess.Popen(
            [sys.executable, __file__, "_index_one", str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"index worker for {n} pages failed")
        workers.append(proc)
    for _ in range(TAIL // BATCH):
        for proc in workers:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(f"tail {BATCH}\n")
            proc.stdin.flush()
            proc.stdout.readline()
    rows = []
    for proc in workers:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("done\n")
        proc.stdin.flush()
        rows.append(json.loads(proc.stdout.readline()))
        proc.wait()
    print(
        f"{'pages':>9} {'store B/page':>13} {'RSS B/page':>11} {'query us':>9} {'(lookup':>8} "
        f"{'fetch':>6} {'decide)':>8} {'insert us':>10} {'all checks us':>14}"
    )
    for r in rows:
        print(
            f"{r['pages']:>9} {r['store_bytes_per_page']:>13.0f} {r['rss_bytes_per_page']:>11.0f} "
            f"{r['query_us']:>9.1f} {r['lookup_us']:>8.1f} {r['fetch_us']:>6.1f} "
            f"{r['decide_us']:>8.1f} {r['insert_us']:>10.1f} {r['check_us_all']:>14.1f}"
        )
    first, last = rows[0], rows[-1]
    print(
        f"ratio {last['pages']} / {first['pages']}: query {last['query_us'] / first['query_us']:.2f}x, "
        f"insert {last['insert_us'] / max(first['insert_us'], 1e-9):.2f}x   (required: within 2x; "
        "bytes/page required <= 1024, RSS <= 700 at 1M)"
    )


def main(argv: list[str]) -> None:
    commands = ("pipeline", "callgrind", "scaling", "index", "_index_one", "_callgrind")
    if not argv or argv[0] not in commands:
        print(__doc__)
        raise SystemExit(2)
    default_sets = [ROOT.parent / "shared" / "eval-dev", ROOT.parent / "shared" / "eval-docs"]
    if argv[0] == "pipeline":
        for eval_dir in [Path(a) for a in argv[1:]] or default_sets:
            bench_pipeline(eval_dir)
        bench_scaling()
    elif argv[0] == "callgrind":
        limit = int(argv[1]) if len(argv) > 1 else 400
        for eval_dir in [Path(a) for a in argv[2:]] or default_sets:
            bench_callgrind(eval_dir, limit)
    elif argv[0] == "scaling":
        bench_scaling()
    elif argv[0] == "index":
        bench_index([int(a) for a in argv[1:]] or [10_000, 100_000, 1_000_000])
    elif argv[0] == "_callgrind":
        _callgrind_mode(argv[1], Path(argv[2]), int(argv[3]))
    else:
        _index_worker(int(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
