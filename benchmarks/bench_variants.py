"""Variants in wording and addresses the detector has never seen: are they found with their page?

The labelled sets make their variants (a timestamp line, a view counter, an edited paragraph, a
print view...) with one set of phrases each, at one kind of address each; the held-out set uses
others. This benchmark makes more from real pages of ``../shared/eval-dev`` and
``../shared/eval-docs``, with phrases written for it in five languages and at two kinds of
address:

* ``query``: the page's url with a query added (a tracking, session or view parameter);
* ``path``: another path on the same host (a print or cache prefix, a ``;jsessionid`` path
  parameter, an ``index.html`` or an AMP suffix), which no address rule can tie to the page.

All pages (the originals and every variant) are checked by one detector in a seeded random
order, and the clusters are read as ``score.py`` reads them (a page's cluster and its
``duplicate_of`` link). Printed: recall by kind of variant, by kind of address, by set and by
length of the page (a variant found with its own original), and the false pairs (two pages of
different originals in one cluster) with their kinds.

Usage::

    python benchmarks/bench_variants.py [--contents 200] [--seed 0] [--json FILE]
"""

from __future__ import annotations

import argparse
import copy
import html as html_text
import itertools
import json
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import lxml.html

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_templates import SHARED, load, prepare, utf8_document

from neardup_scrapy.core import NearDupDetector

KINDS = ("timestamp", "counter", "delete", "insert", "rewrite", "chrome", "print", "combo")
SHORT_WORDS = 150  # a page with fewer words in its content region counts as short

MONTHS = {
    "en": "January February March April May June July August September October November December",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
}
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _when(rng: random.Random) -> dict[str, Any]:
    return {
        "y": rng.randint(2019, 2026),
        "m": rng.randint(1, 12),
        "d": rng.randint(1, 28),
        "H": rng.randint(0, 23),
        "M": rng.randint(0, 59),
        "S": rng.randint(0, 59),
        "w": rng.choice(WEEKDAYS),
    }


def timestamp_line(lang: str, rng: random.Random) -> str:
    """A revision or generation line in one of several wordings (none of the labelled sets')."""
    t = _when(rng)
    month = MONTHS.get(lang, MONTHS["en"]).split()[t["m"] - 1]
    ampm = "AM" if t["H"] < 12 else "PM"
    wordings = {
        "en": [
            f"Last updated: {t['w']}, {month} {t['d']}, {t['y']} at {t['H'] % 12 or 12}:{t['M']:02d} {ampm}",
            f"Page generated {t['y']}-{t['m']:02d}-{t['d']:02d}T{t['H']:02d}:{t['M']:02d}:{t['S']:02d}Z",
            f"This page was last modified on {t['d']} {month} {t['y']}, at {t['H']:02d}:{t['M']:02d}.",
            f"Content current as of {t['m']}/{t['d']}/{t['y']}",
        ],
        "de": [f"Zuletzt aktualisiert am {t['d']}. {month} {t['y']} um {t['H']:02d}:{t['M']:02d} Uhr"],
        "fr": [f"Mis à jour le {t['d']} {month} {t['y']} à {t['H']:02d}h{t['M']:02d}"],
        "ja": [f"最終更新日時：{t['y']}年{t['m']}月{t['d']}日 {t['H']:02d}:{t['M']:02d}"],  # noqa: RUF001
        "zh": [f"本页更新于{t['y']}年{t['m']}月{t['d']}日 {t['H']:02d}:{t['M']:02d}"],
    }
    return rng.choice(wordings[lang])


def counter_line(lang: str, rng: random.Random) -> str:
    """A view, vote or comment count in one of several wordings."""
    n, m = rng.randint(12, 98_000), rng.randint(0, 400)
    wordings = {
        "en": [
            f"This article has been read {n:,} times.",
            f"{m} of {m + rng.randint(1, 50)} people found this page helpful",
            f"Views: {n} | Comments: {m}",
        ],
        "de": [f"Dieser Beitrag wurde {n} Mal aufgerufen, {m} Kommentare"],
        "fr": [f"Cette page a été consultée {n} fois"],
        "ja": [f"閲覧数 {n} 回・いいね {m}"],
        "zh": [f"浏览次数：{n}，评论 {m} 条"],  # noqa: RUF001
    }
    return rng.choice(wordings[lang])


COOKIE = {
    "en": "We use cookies to understand how visitors use this site. "
    "By continuing you accept our cookie policy. Accept Decline",
    "de": "Diese Website verwendet Cookies. "
    "Wenn Sie weitersurfen, stimmen Sie der Cookie-Nutzung zu. Akzeptieren Ablehnen",
    "fr": "Ce site utilise des cookies. "
    "En poursuivant votre navigation, vous acceptez leur utilisation. Accepter Refuser",
    "ja": "当サイトではクッキーを使用しています。閲覧を続けることで同意したものとみなされます。同意する",
    "zh": "本网站使用Cookie以改善浏览体验。继续浏览即表示您同意我们的Cookie政策。接受",
}


def language(text: str) -> str:
    """The wording language for a page: by its script (kana: Japanese; Han: Chinese), else by
    a few common words (German, French), else English."""
    if re.search(r"[\u3040-\u30ff]", text):
        return "ja"
    if len(re.findall(r"[\u4e00-\u9fff]", text)) > len(text) // 20:
        return "zh"
    words = Counter(text.lower().split())
    if words["und"] + words["der"] + words["die"] > 10:
        return "de"
    if words["les"] + words["des"] + words["est"] > 10:
        return "fr"
    return "en"


def _element(html: str) -> Any:
    return lxml.html.fragment_fromstring(html, create_parent=False)


def _after_heading(doc: Any, region: Any, element: Any) -> None:
    """Put ``element`` right after the page's first heading (in or before the content region),
    or first in the region."""
    heading = next(iter(region.iter("h1", "h2")), None)
    if heading is None:
        heading = next(iter(doc.iter("h1")), None)
    if heading is not None and heading.getparent() is not None:
        element.tail = heading.tail
        heading.tail = None
        heading.addnext(element)
    else:
        region.insert(0, element)


def _paragraphs(region: Any) -> list[Any]:
    return [p for p in region.iter("p", "li", "dd") if len(p.text_content().split()) >= 12]


class Maker:
    """Makes the variants of one content, seeded; ``others`` lends paragraphs and titles."""

    def __init__(self, content: dict[str, Any], others: list[dict[str, Any]], rng: random.Random) -> None:
        self.content = content
        self.others = others
        self.rng = rng
        self.lang = content["lang"]

    def _copy(self) -> tuple[Any, Any]:
        doc = copy.deepcopy(self.content["doc"])
        tree = self.content["doc"].getroottree()
        region = doc.getroottree().xpath(tree.getpath(self.content["region"]))[0]
        return doc, region

    def _foreign_paragraph(self) -> str:
        """A paragraph of another page in the same language (its text only)."""
        pool = [o for o in self.others if o["lang"] == self.lang and o["paragraphs"]] or [
            o for o in self.others if o["paragraphs"]
        ]
        return str(self.rng.choice(self.rng.choice(pool)["paragraphs"]))

    def timestamp(self, doc: Any, region: Any) -> bool:
        _after_heading(doc, region, _element(f'<p class="updated">{timestamp_line(self.lang, self.rng)}</p>'))
        body = doc.find("body")
        if body is not None:
            body.append(_element(f"<div><small>{timestamp_line(self.lang, self.rng)}</small></div>"))
        return True

    def counter(self, doc: Any, region: Any) -> bool:
        _after_heading(doc, region, _element(f'<div class="stats">{counter_line(self.lang, self.rng)}</div>'))
        region.append(_element(f"<p><em>{counter_line(self.lang, self.rng)}</em></p>"))
        return True

    def delete(self, doc: Any, region: Any) -> bool:
        paragraphs = _paragraphs(region)
        if len(paragraphs) < 3:
            return False
        self.rng.choice(paragraphs).drop_tree()
        return True

    def insert(self, doc: Any, region: Any) -> bool:
        paragraphs = _paragraphs(region)
        new = _element(f"<p>{html_text.escape(self._foreign_paragraph())}</p>")
        if paragraphs:
            self.rng.choice(paragraphs).addnext(new)
        else:
            region.append(new)
        return True

    def rewrite(self, doc: Any, region: Any) -> bool:
        paragraphs = [p for p in _paragraphs(region) if len(list(p)) == 0 and p.text]
        if not paragraphs:
            return False
        p = self.rng.choice(paragraphs)
        sentences = re.split(r"(?<=[.!?。])\s+", p.text.strip())
        replacement = re.split(r"(?<=[.!?。])\s+", self._foreign_paragraph())[0]
        sentences[self.rng.randrange(len(sentences))] = replacement
        p.text = " ".join(sentences)
        return True

    def chrome(self, doc: Any, region: Any) -> bool:
        body = doc.find("body")
        if body is None or region is body:
            return False
        body.insert(0, _element(f'<div class="consent">{COOKIE[self.lang]}</div>'))
        titles = [o["title"] for o in self.rng.sample(self.others, min(5, len(self.others)))]
        links = "".join(f'<li><a href="/r/{i}">{html_text.escape(t)}</a></li>' for i, t in enumerate(titles))
        region.addnext(_element(f'<aside class="related"><h3>Related</h3><ul>{links}</ul></aside>'))
        return True

    def print_view(self, doc: Any, region: Any) -> Any:
        """The content region (and the page's heading) alone, between a print header and footer."""
        page = lxml.html.document_fromstring("<html><head><title></title></head><body></body></html>")
        title, body = page.find("head/title"), page.find("body")
        assert title is not None and body is not None
        title.text = self.content["title"]
        body.append(_element(f'<div class="print-head">{urlsplit(self.content["url"]).hostname}</div>'))
        if self.content["heading"] is not None:
            heading = copy.deepcopy(self.content["heading"])
            heading.tail = None
            body.append(heading)
        body.append(region)
        t = _when(self.rng)
        body.append(_element(f"<p>{self.content['url']} ({t['y']}-{t['m']:02d}-{t['d']:02d})</p>"))
        return page

    def make(self, kind: str) -> bytes | None:
        doc, region = self._copy()
        if kind == "print":
            doc = self.print_view(doc, region)
        elif kind == "combo":
            for part in (self.timestamp, self.counter, self.chrome):
                part(doc, region)
        elif not getattr(self, kind)(doc, region):
            return None
        return utf8_document(doc)


QUERIES: list[Callable[[random.Random], str]] = [
    lambda r: f"utm_source=newsletter&utm_medium=email&utm_campaign=w{r.randint(1, 52)}",
    lambda r: f"sid={r.getrandbits(64):016x}",
    lambda r: f"ref=related&pos={r.randint(1, 9)}",
    lambda r: f"rev={r.randint(1000, 99999)}",
]
PRINT_QUERIES = ("print=yes", "view=printable", "format=print")


def address(url: str, kind: str, pattern: str, rng: random.Random) -> str:
    """The variant's url: ``url`` with a query (``query``) or another path on its host (``path``)."""
    scheme, host, path, query, _ = urlsplit(url)
    if pattern == "query":
        extra = rng.choice(PRINT_QUERIES) if kind == "print" else rng.choice(QUERIES)(rng)
        return urlunsplit((scheme, host, path, f"{query}&{extra}" if query else extra, ""))
    if kind == "print":
        path = rng.choice(["/print", "/printable", "/pdf-view"]) + path
    else:
        change = rng.randrange(3)
        if change == 0:
            path = f"{path};jsessionid={rng.getrandbits(80):020X}"
        elif change == 1:
            path = f"/_cache/{rng.getrandbits(32):08x}{path}"
        else:
            path = path + ("index.html" if path.endswith("/") else "/amp")
    return urlunsplit((scheme, host, path, query, ""))


def build(contents: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The originals and their variants: ``{url, html, origin, kind, pattern, set, short}``."""
    rng = random.Random(seed)
    pages: list[dict[str, Any]] = []
    used = {content["url"] for content in contents}
    for index, content in enumerate(contents):
        short = len(content["region_text"].split()) < SHORT_WORDS
        pages.append({"url": content["url"], "html": content["html"], "origin": index, "kind": "original"})
        maker = Maker(content, contents[:index] + contents[index + 1 :], rng)
        for kind, pattern in zip(KINDS, itertools.cycle(rng.sample(["query", "path"], 2)), strict=False):
            html = maker.make(kind)
            if html is None:
                continue
            url = address(content["url"], kind, pattern, rng)
            while url in used:  # one url per page: a url seen again is a revisit, not a variant
                pattern = "query"
                url = address(content["url"], kind, pattern, rng)
            used.add(url)
            pages.append(
                {
                    "url": url,
                    "html": html,
                    "origin": index,
                    "kind": kind,
                    "pattern": pattern,
                    "set": content["set"],
                    "short": short,
                }
            )
    return pages


def clusters(pages: list[dict[str, Any]], order: list[int]) -> list[int]:
    """Check the pages in ``order`` with one detector; a cluster label per page (score.py's
    reading: a page's cluster and its ``duplicate_of`` link join it to others)."""
    parent = list(range(len(pages)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    index = {page["url"]: i for i, page in enumerate(pages)}
    with NearDupDetector() as det:
        for i in order:
            verdict = det.check(pages[i]["url"], pages[i]["html"])
            for other in (verdict.cluster, verdict.duplicate_of):
                if other is not None and other in index:
                    parent[find(i)] = find(index[other])
    return [find(i) for i in range(len(pages))]


def measure(pages: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """Recall of the variants (found in their original's cluster) and the false pairs."""
    order = list(range(len(pages)))
    random.Random(seed).shuffle(order)
    label = clusters(pages, order)
    original_of = {page["origin"]: i for i, page in enumerate(pages) if page["kind"] == "original"}
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for i, page in enumerate(pages):
        if page["kind"] == "original":
            continue
        hit = int(label[i] == label[original_of[page["origin"]]])
        length = "short" if page["short"] else "long"
        for key in (
            "all",
            f"kind:{page['kind']}",
            f"address:{page['pattern']}",
            f"set:{page['set']}",
            length,
        ):
            found[key][0] += hit
            found[key][1] += 1
        if not hit:
            misses.append((page["kind"], page["pattern"], page["url"]))
    members: dict[int, list[int]] = defaultdict(list)
    for i, cluster in enumerate(label):
        members[cluster].append(i)
    false_pairs: Counter[tuple[str, str]] = Counter()
    for group in members.values():
        for a, b in itertools.combinations(group, 2):
            if pages[a]["origin"] != pages[b]["origin"]:
                first, second = sorted((pages[a]["kind"], pages[b]["kind"]))
                false_pairs[(first, second)] += 1
    return {
        "pages": len(pages),
        "recall": {key: (hits / total, total) for key, (hits, total) in sorted(found.items())},
        "false_pairs": sum(false_pairs.values()),
        "false_pairs_by_kinds": {" + ".join(k): n for k, n in false_pairs.most_common()},
        "misses": misses,
    }


def sample(sets: tuple[Path, Path], contents: int, seed: int, min_words: int) -> list[dict[str, Any]]:
    """Seeded originals of both sets whose content region was located, with their language,
    region text and paragraphs."""
    ready = prepare(load(sets[0], 2) + load(sets[1], 40), min_words, None)
    rng = random.Random(seed)
    chosen = rng.sample(ready, min(contents, len(ready)))
    for content in chosen:
        content["region_text"] = " ".join(content["region"].text_content().split())
        content["lang"] = language(content["region_text"])
        content["paragraphs"] = [" ".join(p.text_content().split()) for p in _paragraphs(content["region"])]
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contents", type=int, default=200)
    parser.add_argument("--min-words", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--misses", type=int, default=10, help="misses to list")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"needs {SHARED}/eval-dev and eval-docs", file=sys.stderr)
        return 2
    contents = sample((SHARED / "eval-dev", SHARED / "eval-docs"), args.contents, args.seed, args.min_words)
    pages = build(contents, args.seed)
    figures = measure(pages, args.seed)
    print(f"{len(contents)} originals, {figures['pages'] - len(contents)} variants (seed {args.seed})")
    for key, (recall, total) in figures["recall"].items():
        print(f"  recall {key:<16} {recall:.3f}  ({total} variants)")
    print(f"false pairs (pages of different originals in one cluster): {figures['false_pairs']}")
    for kinds, n in figures["false_pairs_by_kinds"].items():
        print(f"  {kinds}: {n}")
    for miss in figures["misses"][: args.misses]:
        print("  missed:", *miss)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
