"""Bounded work per page (#32, findings 1 and 2): floods and fuzzed pages on every entry point.

Usage::

    python benchmarks/bench_budget.py                          # floods at 160 KB and 1 MB, 300 fuzzed pages
    python benchmarks/bench_budget.py --sizes 160000 --fuzz 50 --entries bytes,tree
    python benchmarks/bench_budget.py --hog 3                  # again under 3 busy processes: same tags?
    python benchmarks/bench_budget.py --save-slow /tmp/slow    # pages over --slow seconds, for the corpus

Pages: a *flood* of every repeated element kind (headings, links, list items, paragraphs,
divisions, table cells, options, line breaks, comments, attributes, title-classed blocks...) in
every shape (flat, each in a block beside a link, nested and closed, nested and left open, at the
bottom of 1,990 nested divisions, in chains of 100), at each size of ``--sizes``; the corpus of
``tests/fuzz_corpus/`` (inputs that once cost too much); and ``--fuzz`` pages generated from a seed
(random mixtures of those motifs, random nesting, junk bytes, 1 KB to 1 MB).

Entry points, each with its own detector: ``bytes`` (``NearDupDetector.check(url, body)``),
``scan`` (a JSON record decoded and analysed as ``neardup-scrapy scan`` does, then checked),
``tree`` (``check(url, tree=...)`` on a tree parsed beforehand), ``worker`` (the worker
process's check of the text Scrapy decoded), ``thread`` (inline mode's helper thread) and
``inline`` (inline mode outside a running reactor, reading Scrapy's own tree).

For each page it measures the CPU time of the thread doing the check (``time.thread_time``) and
prints, per entry point, the slowest page, the largest work count and the skip reasons; with
``--hog N`` it runs everything again while N processes spin on the cores and says whether every
tag is the same (the budget counts work, so it must be).
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

CORPUS = ROOT / "tests" / "fuzz_corpus"
HEAD = "<html><head><title>a</title></head><body>"
TAIL = "</body></html>"

#: Element kinds flooded: every kind the extractor treats apart, and a few it ignores.
# fmt: off
ELEMENTS = (
    "h1", "h2", "h3", "h4", "h5", "h6", "a", "li", "p", "div", "span", "b", "i", "td", "th", "tr",
    "table", "tbody", "ul", "ol", "dl", "dt", "dd", "option", "select", "br", "img", "input",
    "section", "article", "main", "nav", "aside", "header", "footer", "form", "pre", "blockquote",
    "figure", "figcaption", "title", "script", "style", "iframe", "svg", "noscript", "template",
    "button", "label", "x-custom",
)
# fmt: on
#: Floods that are not one element kind.
SPECIAL = (
    "comment",  # <!--a-->
    "attributes",  # one tag holding thousands of attributes
    "attributes-each",  # every element with eight attributes, a chrome or title class among them
    "titled",  # <div class="title">: title-classed blocks
    "rel-next",  # <a rel="next">: navigation by relation
    "link-head",  # <link rel="next">: series links
    "hidden",  # <div hidden>
    "entity",  # &amp;
    "lt",  # bare '<' signs: tags that never end
    "cdata",
    "combining",  # text of letters and combining marks (normalised per piece)
    "text",  # words only
)
SHAPES = ("flat", "linked", "nested", "open", "deep", "chains")


def _unit(kind: str) -> tuple[str, str]:
    """The opening and closing markup of one flood unit (with the text ``a``)."""
    special = {
        "comment": ("<!--a-->a", ""),
        "attributes": ('<p class="a" ', ">a</p>"),  # filled in by flood()
        "attributes-each": (
            '<div class="post-title nav" id="a1" role="main" data-x="1" style="x" hidden=no lang="en" '
            'aria-label="a">a',
            "</div>",
        ),
        "titled": ('<div class="title">a', "</div>"),
        "rel-next": ('<a rel="next" href="/n">a', "</a>"),
        "link-head": ('<link rel="next" href="/n">a', ""),
        "hidden": ("<div hidden>a", "</div>"),
        "entity": ("&amp;a", ""),
        "lt": ("<a", ""),
        "cdata": ("<![CDATA[a]]>a", ""),
        "combining": ("a\u0301b\u0308 ", ""),
        "text": ("a ", ""),
        "a": ('<a href="/a">a', "</a>"),
        "br": ("<br>a", ""),
        "img": ('<img src="a">a', ""),
        "input": ("<input>a", ""),
    }
    return special.get(kind, (f"<{kind}>a", f"</{kind}>"))


def flood(kind: str, shape: str, size: int) -> bytes:
    """A page of about ``size`` bytes made of one repeated unit of ``kind`` in ``shape``."""
    opening, closing = _unit(kind)
    room = max(size - len(HEAD) - len(TAIL), 64)
    prefix = "<div>" * 1990 if shape == "deep" else ""
    room = max(room - len(prefix), 64)
    if kind == "attributes":
        count = max(room // 8, 1)
        body = opening + " ".join(f"a{i}=1" for i in range(count))
        return (HEAD + prefix + body[:room] + closing + TAIL).encode()
    if shape == "linked":
        opening, closing = "<div>" + opening, closing + '<a href="/x">a link of twenty letters</a></div>'
    unit = len(opening) + len(closing)
    count = max(room // max(unit, 1), 1)
    if shape in ("flat", "linked", "deep"):
        body = (opening + closing) * count
    elif shape == "nested":
        body = opening * count + closing * count
    elif shape == "open":
        body = opening * (room // max(len(opening), 1))
    else:  # chains of 100
        chain = opening * 100 + closing * 100
        body = chain * max(room // len(chain), 1)
    return (HEAD + prefix + body + TAIL).encode("utf-8", "surrogatepass")


def floods(sizes: list[int]) -> Iterator[tuple[str, bytes]]:
    for size in sizes:
        for kind in ELEMENTS + SPECIAL:
            for shape in SHAPES if kind != "attributes" else ("flat", "deep"):
                yield f"{kind}/{shape}/{size // 1000}k", flood(kind, shape, size)


# -- fuzzed pages ------------------------------------------------------------------------------------

_JUNK = [
    "<",
    ">",
    "</",
    "&",
    "&#",
    "\x00",
    "\xff",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    '"',
    "'",
    "=",
    "\r\n",
    "/>",
]
_ATTRS = [
    'class="nav"', 'class="title"', 'class="content"', 'id="comments"', 'role="main"', "hidden",
    'style="display:none"', 'href="/x"', 'rel="next"', 'aria-hidden="true"', 'class="' + "a " * 40 + '"',
]  # fmt: skip


def fuzzed(seed: int, max_size: int = 1_000_000) -> bytes:
    """A page from ``seed``: a few motifs (units of random kinds with random attributes, nested
    at random), each repeated a random number of times, junk spliced in, 1 KB to ``max_size``."""
    rng = random.Random(seed)
    size = int(10 ** rng.uniform(3, 6)) if max_size >= 1_000_000 else rng.randrange(1000, max_size)
    motifs = []
    for _ in range(rng.randint(1, 4)):
        parts = []
        for _ in range(rng.randint(1, 5)):
            kind = rng.choice(ELEMENTS + SPECIAL)
            opening, closing = _unit(kind) if kind != "attributes" else ("<p " + "x=1 " * 300 + ">a", "</p>")
            if opening.startswith("<") and opening[1:2].isalpha() and rng.random() < 0.3:
                opening = opening.replace(">", " " + " ".join(rng.sample(_ATTRS, 2)) + ">", 1)
            if rng.random() < 0.2:
                closing = ""
            if rng.random() < 0.2:
                opening += rng.choice(_JUNK)
            parts.append((opening, closing))
        depth = rng.choice((1, 1, 2, 10, 100, 3000))
        inner = "".join(o for o, _ in parts) * depth + "".join(c for _, c in reversed(parts)) * depth
        motifs.append(inner)
    out: list[str] = [HEAD if rng.random() < 0.8 else ""]
    length = len(out[0])
    while length < size:
        piece = rng.choice(motifs)
        times = rng.randint(1, max(1, (size - length) // max(len(piece), 1)))
        chunk = piece * min(times, 1 + size // max(len(piece), 1))
        out.append(chunk)
        length += len(chunk)
        if rng.random() < 0.3:
            out.append(rng.choice(_JUNK) * rng.randint(1, 2000))
    data = "".join(out).encode("utf-8", "surrogatepass")[:size]
    if rng.random() < 0.3:  # random bytes sprinkled in
        raw = bytearray(data)
        for _ in range(rng.randint(1, 50)):
            at = rng.randrange(len(raw) + 1)
            raw[at:at] = rng.randbytes(rng.randint(1, 8))
        data = bytes(raw)
    return data


def corpus() -> Iterator[tuple[str, bytes]]:
    for path in sorted(CORPUS.glob("*")):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        yield f"corpus/{path.name}", data


# -- entry points ------------------------------------------------------------------------------------


class Entries:
    """Each entry point, as ``name -> check(url, body) -> (status, reason)``."""

    def __init__(self, names: list[str]) -> None:
        from neardup_scrapy.core import NearDupDetector

        self.names = names
        self.detectors = {name: NearDupDetector(repeat_cache=0, keep_excerpts=0) for name in names}
        self._runtime: Any = None
        if "thread" in names or "inline" in names:
            import scrapy
            from e2e_crawl import make_crawler

            from neardup_scrapy.runtime import NeardupRuntime

            class Spider(scrapy.Spider):
                name = "bench-budget"

            crawler = make_crawler(Spider, {"NEARDUP_WORKER": "inline"})
            self._runtime = NeardupRuntime.of(crawler)
            self._runtime.detector.storage.close()
            self._runtime.checker.detector = self.detectors.get("inline") or self.detectors["thread"]

    def run(self, name: str, url: str, body: bytes) -> tuple[float, str, str]:
        """CPU seconds of this thread, status and reason of one check."""
        check = getattr(self, "_" + name)
        started = time.thread_time()
        verdict = check(self.detectors[name], url, body)
        return time.thread_time() - started, verdict.status, verdict.reason or ""

    @staticmethod
    def _bytes(detector: Any, url: str, body: bytes) -> Any:
        return detector.check(url, body)

    @staticmethod
    def _scan(detector: Any, url: str, body: bytes) -> Any:
        from neardup_scrapy.cli.inputs.base import Unit
        from neardup_scrapy.cli.scanjobs import _analyse

        analyzer = detector._reader.analyzer
        payload = json.dumps({"url": url, "html": body.decode("utf-8", "replace")}).encode()
        record, analysis = _analyse(analyzer, Unit(number=1, kind="json", payload=payload), 10_000_000)
        if analysis is None:
            return detector.skip(url, record.reason or "unreadable")
        return detector.check_analysis(url, analysis, nbytes=record.nbytes)

    @staticmethod
    def _tree(detector: Any, url: str, body: bytes) -> Any:
        raise NotImplementedError  # run() parses first: see run_tree

    @staticmethod
    def _worker(detector: Any, url: str, body: bytes) -> Any:
        from neardup_scrapy.worker import _check

        return _check(detector, url, body.decode("utf-8", "replace"), None, len(body))

    def _thread(self, detector: Any, url: str, body: bytes) -> Any:
        self._runtime.checker.detector = detector
        outcome = self._runtime.checker.check_here(url, body.decode("utf-8", "replace"), len(body))
        assert outcome.error is None, outcome.error
        return outcome.verdict

    def _inline(self, detector: Any, url: str, body: bytes) -> Any:
        from scrapy.http import HtmlResponse

        from neardup_scrapy.pages import response_text, selector_tree

        self._runtime.checker.detector = detector
        response = HtmlResponse(url, body=body, encoding="utf-8")
        text = response_text(response)
        return self._runtime.check_page(url, text, len(body), lambda: selector_tree(response))

    def run_tree(self, url: str, body: bytes) -> tuple[float, str, str]:
        from neardup_scrapy.core.text import parse_plain

        root = parse_plain(body)  # the caller's parse: not the check's
        started = time.thread_time()
        verdict = self.detectors["tree"].check(url, tree=root) if root is not None else None
        spent = time.thread_time() - started
        return (spent, verdict.status, verdict.reason or "") if verdict else (spent, "skipped", "unparsable")

    def close(self) -> None:
        for detector in self.detectors.values():
            detector.close()


def work_of(body: bytes) -> int:
    """Work units the compiled pass counts for ``body`` (read from its events, else its tree)."""
    from neardup_scrapy.core.analysis import PageAnalyzer
    from neardup_scrapy.core.params import DetectorParams

    return PageAnalyzer(DetectorParams(max_work=0, timeout=600))("http://w/", body).work


def measure(pages: list[tuple[str, bytes]], entries: list[str], slow: float) -> dict[str, Any]:
    """Every page through every entry point: ``{page: {entry: (cpu, status, reason)}}``.

    A check that took over half of ``slow`` is repeated twice more (on detectors of their own,
    so the index of the others stays as it was) and its least CPU time kept: on a shared
    machine other processes inflate a single measurement now and then (caches, frequency),
    rarely the least of three. The tags are those of the first check."""
    bench, spare = Entries(entries), Entries(entries)
    rows: dict[str, dict[str, tuple[float, str, str]]] = {}

    def once(entry: str, url: str, body: bytes, where: Entries = bench) -> tuple[float, str, str]:
        return where.run_tree(url, body) if entry == "tree" else where.run(entry, url, body)

    try:
        for n, (name, body) in enumerate(pages):
            url = f"http://bench{n % 7}.test/{n}"
            row = {}
            for entry in entries:
                first = once(entry, url, body)
                cpu = first[0]
                for again in range(2 if cpu > slow / 2 else 0):
                    cpu = min(cpu, once(entry, f"{url}/again{again}", body, spare)[0])
                row[entry] = (cpu, *first[1:])
            rows[name] = row
            worst = max(row.values())
            if worst[0] > slow:
                print(
                    f"  slow: {name} ({len(body):,} B): "
                    + ", ".join(f"{e} {r[0]:.3f} s {r[1]}/{r[2]}" for e, r in row.items()),
                    flush=True,
                )
    finally:
        bench.close()
        spare.close()
    return rows


def summarise(
    rows: dict[str, dict[str, tuple[float, str, str]]],
    pages: dict[str, bytes],
    entries: list[str],
    slow: float,
) -> None:
    over = f"over {slow} s"
    print(f"\n{'entry':8s} {'pages':>6s} {'max CPU s':>10s} {over:>10s}  slowest page / skip reasons")
    for entry in entries:
        cpu = [(row[entry][0], name) for name, row in rows.items()]
        worst, name = max(cpu)
        over = sum(1 for c, _ in cpu if c > slow)
        reasons = Counter(row[entry][2] for row in rows.values() if row[entry][1] == "skipped")
        print(
            f"{entry:8s} {len(cpu):6d} {worst:10.3f} {over:10d}  {name} ({len(pages[name]):,} B); "
            f"skipped: {dict(reasons) or 'none'}"
        )
    works = sorted(((work_of(body), name) for name, body in pages.items()), reverse=True)[:5]
    print("largest work counts: " + ", ".join(f"{name} {work:,}" for work, name in works))


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="160000,1000000", help="flood sizes in bytes")
    parser.add_argument("--fuzz", type=int, default=300, help="fuzzed pages (seeds 0..N-1)")
    parser.add_argument("--seed", type=int, default=0, help="first fuzz seed")
    parser.add_argument("--entries", default="bytes,scan,tree,worker,thread,inline")
    parser.add_argument("--only", default="", help="run only the pages whose name contains this")
    parser.add_argument("--slow", type=float, default=0.25, help="print pages over this many CPU seconds")
    parser.add_argument("--hog", type=int, default=0, help="run again under N spinning processes")
    parser.add_argument("--save-slow", default="", help="write the pages over --slow to this directory")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    entries = args.entries.split(",")
    pages = dict(floods(sizes))
    pages.update(corpus())
    pages.update((f"fuzz/{seed}", fuzzed(seed)) for seed in range(args.seed, args.seed + args.fuzz))
    if args.only:
        pages = {name: body for name, body in pages.items() if args.only in name}
    print(
        f"{len(pages)} pages ({sum(map(len, pages.values())) / 1e6:.1f} MB), entries: {', '.join(entries)}",
        flush=True,
    )
    started = time.monotonic()
    rows = measure(list(pages.items()), entries, args.slow)
    print(f"(measured in {time.monotonic() - started:.0f} s)")
    summarise(rows, pages, entries, args.slow)
    if args.save_slow:
        out = Path(args.save_slow)
        out.mkdir(parents=True, exist_ok=True)
        for name, row in rows.items():
            if max(row.values())[0] > args.slow:
                (out / (name.replace("/", "_") + ".html.gz")).write_bytes(gzip.compress(pages[name]))
    if args.hog:
        hogs = [multiprocessing.Process(target=_spin, args=(3600,), daemon=True) for _ in range(args.hog)]
        for hog in hogs:
            hog.start()
        try:
            loaded = measure(list(pages.items()), entries, float("inf"))
        finally:
            for hog in hogs:
                hog.terminate()
                hog.join()
        print(f"\nunder {args.hog} spinning processes:")
        summarise(loaded, pages, entries, args.slow)
        changed = [
            (name, entry)
            for name in rows
            for entry in entries
            if rows[name][entry][1:] != loaded[name][entry][1:]
        ]
        print(f"tags identical under load: {'yes' if not changed else 'no'} ({len(changed)} differ)")
        for name, entry in changed[:20]:
            print(f"  {name} {entry}: {rows[name][entry][1:]} -> {loaded[name][entry][1:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
