"""Template transplant: does a page's verdict survive a template the detector has never seen?

The labelled sets hold three mirror templates each; the held-out set uses others. This benchmark
makes many more: it moves the main content of real pages (originals of ``../shared/eval-dev`` and
``../shared/eval-docs``) into the templates of real pages of *other* sites, and asks

* **recall**: is the transplanted page a near-duplicate of its original? (a template mirror)
* **bleed**: are two different contents in one template kept apart? (the template's own text must
  not make distinct pages look alike)

The content region is found without the extractor's help where possible: the deepest element that
holds both the start and the end of the page's extracted text. A page whose text could not be
located (or is shorter than ``--min-words``) is left out, and the count is printed.

Usage::

    python benchmarks/bench_templates.py [--contents 100] [--templates 40] [--seed 0]
        [--regions FILE]  # the same transplants for two versions of the extractor
        [--json FILE]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import lxml.html
from lxml import etree

from neardup_scrapy.core import NearDupDetector
from neardup_scrapy.core.text import html_to_text

SHARED = Path(__file__).resolve().parents[2] / "shared"
UTF8 = lxml.html.HTMLParser(encoding="utf-8")
BLOCKS = frozenset({"div", "section", "article", "main"})
HOLDS_BLOCKS_BADLY = frozenset(
    {"p", "a", "span", "font", "b", "i", "em", "strong", "table", "ul", "ol", "li", "h1", "h2", "h3"}
)
SKIP_TAGS = frozenset({"script", "style", "noscript", "template"})


def _norm(text: str) -> str:
    return " ".join(text.split())


def _visible(element: Any) -> str:
    parts: list[str] = []
    for node in element.iter():
        if not isinstance(node.tag, str) or node.tag in SKIP_TAGS:
            continue
        if node.text and not _skipped(node):
            parts.append(node.text)
        if node.tail and node is not element and not _skipped(node.getparent()):
            parts.append(node.tail)
    return _norm(" ".join(parts))


def _skipped(node: Any) -> bool:
    while node is not None:
        if isinstance(node.tag, str) and node.tag in SKIP_TAGS:
            return True
        node = node.getparent()
    return False


def content_region(doc: Any, text: str, min_words: int) -> Any | None:
    """The deepest element whose visible text holds both the start and the end of ``text``."""
    words = text.split()
    if len(words) < min_words:
        return None
    skip = min(len(words) // 10, 20)  # the heading the extractor may have prepended
    head = " ".join(words[skip : skip + 6])
    tail = " ".join(words[-6:])
    body = doc.find("body")
    if body is None or head not in _visible(body) or tail not in _visible(body):
        return None
    node = body
    while True:
        inner = [c for c in node if isinstance(c.tag, str) and c.tag not in SKIP_TAGS]
        holder = next((c for c in inner if head in (v := _visible(c)) and tail in v), None)
        if holder is None:
            return node
        node = holder


def _heading(doc: Any, region: Any, text: str) -> Any | None:
    """The page's heading when it lies outside ``region``: the first h1 whose words open the
    page's extracted ``text`` (a mirror carries the page's heading, not a site's logo)."""
    for h1 in doc.iter("h1"):
        words = _norm(h1.text_content())
        if words and text.startswith(words) and region not in h1.iterancestors() and h1 is not region:
            return h1
    return None


def _block_region(region: Any) -> bool:
    """Whether a region can move between pages unchanged: a block container that no inline
    element or table holds (a parser re-nests blocks found inside those)."""
    return region.tag in BLOCKS and not any(a.tag in HOLDS_BLOCKS_BADLY for a in region.iterancestors())


def transplant(content: dict[str, Any], template: dict[str, Any]) -> bytes:
    """``content``'s region (and heading) in place of ``template``'s region, under its title."""
    template_doc, template_region = template["doc"], template["region"]
    doc = copy.deepcopy(template_doc)
    region = doc.getroottree().xpath(template_region.getroottree().getpath(template_region))[0]
    for h1 in list(doc.iter("h1")):  # the template page's own heading is not the mirrored page's
        if region not in h1.iterancestors() and h1.getparent() is not None:
            h1.drop_tree()
    moved = copy.deepcopy(content["region"])
    heading = content["heading"]
    if heading is not None:
        copied = copy.deepcopy(heading)
        copied.tail = None
        moved.insert(0, copied)
    moved.tail = region.tail
    region.getparent().replace(region, moved)
    title_el = doc.find(".//title")
    if title_el is not None:
        title_el.text = content["title"]
    return utf8_document(doc)


def utf8_document(doc: Any) -> bytes:
    """``doc`` written as UTF-8 bytes, its own charset declarations replaced by UTF-8's."""
    for meta in list(doc.iter("meta")):
        if meta.get("charset") or (meta.get("http-equiv") or "").lower() == "content-type":
            meta.drop_tree()
    head = doc.find("head")
    if head is not None:
        head.insert(0, lxml.html.Element("meta", charset="utf-8"))
    return bytes(lxml.html.tostring(doc, encoding="utf-8", doctype="<!DOCTYPE html>"))


def load(path: Path, per_host: int) -> list[dict[str, Any]]:
    """The originals of a labelled set, one per source, at most ``per_host`` per site."""
    truth = json.loads((path / "truth.json").read_text())["pages"]
    taken: dict[str, int] = defaultdict(int)
    sources: set[str] = set()
    out = []
    with gzip.open(path / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        for meta, line in zip(truth, f, strict=True):
            if meta["kind"] != "original" or meta["source"] in sources or taken[meta["host"]] >= per_host:
                continue
            taken[meta["host"]] += 1
            sources.add(meta["source"])
            rec = json.loads(line)
            out.append(
                {"url": rec["url"], "host": meta["host"], "html": rec["html"].encode(), "set": path.name}
            )
    return out


def _at(tree: Any, path: str | None) -> Any | None:
    return tree.xpath(path)[0] if path else None


def prepare(pages: list[dict[str, Any]], min_words: int, regions: Path | None) -> list[dict[str, Any]]:
    """Parse the pages and locate their content regions (read from ``regions`` when it exists, so
    that two versions of the extractor are compared on the same transplants; written otherwise)."""
    known: dict[str, list[str | None] | None] = (
        json.loads(regions.read_text()) if regions and regions.exists() else {}
    )
    ready = []
    for page in pages:
        try:
            doc = lxml.html.fromstring(page["html"], parser=UTF8)
        except (etree.ParserError, ValueError):
            continue
        tree = doc.getroottree()
        if page["url"] in known:
            paths = known[page["url"]]
            region = _at(tree, paths[0]) if paths else None
            heading = _at(tree, paths[1]) if paths else None
        else:
            text = _norm(html_to_text(page["html"]))
            region = content_region(doc, text, min_words)
            if region is not None and not _block_region(region):
                region = None
            heading = None if region is None else _heading(doc, region, text)
            known[page["url"]] = (
                None
                if region is None
                else [tree.getpath(region), None if heading is None else tree.getpath(heading)]
            )
        if region is None:
            continue
        title = doc.findtext(".//title") or ""
        ready.append({**page, "doc": doc, "region": region, "heading": heading, "title": title})
    if regions and not regions.exists():
        regions.write_text(json.dumps(known))
    return ready


def measure(contents: list[dict[str, Any]], templates: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall of every content in every other site's template, and bleed inside each template."""
    found = total = bleed = 0
    per_template: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_set: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_content: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    bleed_hosts: dict[str, int] = defaultdict(int)
    misses: list[tuple[str, str]] = []
    for t_index, template in enumerate(templates):
        with NearDupDetector() as shared:
            for c_index, content in enumerate(contents):
                if content["host"] == template["host"]:
                    continue
                url = f"https://tpl{t_index}.example.net/p/{c_index}"
                body = transplant(content, template)
                with NearDupDetector() as pair:
                    pair.check(content["url"], content["html"])
                    verdict = pair.check(url, body)
                hit = int(verdict.status in ("near", "exact") and verdict.duplicate_of == content["url"])
                found += hit
                total += 1
                if not hit:
                    misses.append((content["url"], template["host"]))
                for counts in (
                    per_template[template["host"]],
                    per_set[content["set"]],
                    per_content[content["url"]],
                ):
                    counts[0] += hit
                    counts[1] += 1
                if shared.check(url, body).status in ("near", "exact"):
                    bleed += 1
                    bleed_hosts[template["host"]] += 1
    return {
        "templates": len(templates),
        "contents": len(contents),
        "pairs": total,
        "recall": found / total if total else 0.0,
        "found": found,
        "bleed": bleed,
        "bleed_share": bleed / total if total else 0.0,
        "recall_by_set": {k: a / b for k, (a, b) in sorted(per_set.items())},
        "weakest_templates": sorted(((h, a / b) for h, (a, b) in per_template.items()), key=lambda kv: kv[1])[
            :10
        ],
        "weakest_contents": sorted(((u, a / b) for u, (a, b) in per_content.items()), key=lambda kv: kv[1])[
            :10
        ],
        "misses": misses,
        "bleed_by_template": dict(sorted(bleed_hosts.items(), key=lambda kv: -kv[1])[:10]),
    }


def sample(
    sets: tuple[Path, Path],
    contents: int,
    templates: int,
    seed: int,
    min_words: int,
    regions: Path | None,
    template_set: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Seeded contents and templates (one page per site, of ``template_set`` only when given)
    among the pages with a located region."""
    pages = load(sets[0], 2) + load(sets[1], 20)  # eval-dev has hundreds of sites, eval-docs ten
    ready = prepare(pages, min_words, regions)
    rng = random.Random(seed)
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for page in ready:
        by_host[page["host"]].append(page)
    hosts = sorted(h for h in by_host if template_set is None or by_host[h][0]["set"] == template_set)
    rng.shuffle(hosts)
    return (
        rng.sample(ready, min(contents, len(ready))),
        [by_host[h][0] for h in hosts[:templates]],
        len(pages),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contents", type=int, default=100)
    parser.add_argument("--templates", type=int, default=40)
    parser.add_argument("--min-words", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--regions", type=Path, help="JSON file of content regions to reuse (A/B runs)")
    parser.add_argument(
        "--templates-from", choices=("eval-dev", "eval-docs"), help="templates of one set only"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"needs {SHARED}/eval-dev and eval-docs", file=sys.stderr)
        return 2
    contents, templates, n_pages = sample(
        (SHARED / "eval-dev", SHARED / "eval-docs"),
        args.contents,
        args.templates,
        args.seed,
        args.min_words,
        args.regions,
        args.templates_from,
    )
    figures = measure(contents, templates)
    print(
        f"template-mirror recall over {figures['templates']} templates x {figures['contents']} contents "
        f"(of {n_pages} pages): {figures['recall']:.3f} ({figures['found']}/{figures['pairs']})"
    )
    for name, recall in figures["recall_by_set"].items():
        print(f"  contents of {name}: {recall:.3f}")
    print("  weakest templates: " + ", ".join(f"{h} {r:.2f}" for h, r in figures["weakest_templates"]))
    print("  weakest contents: " + ", ".join(f"{u} {r:.2f}" for u, r in figures["weakest_contents"]))
    print(
        f"bleed (distinct contents in one template tagged duplicates): {figures['bleed']} of "
        f"{figures['pairs']} pages; by template: {figures['bleed_by_template']}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
