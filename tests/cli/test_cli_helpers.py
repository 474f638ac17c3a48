"""Generated crawls for the CLI, report and browser tests (no tests in this module).

Pages are made of pseudo-words from a seeded generator, so distinct pages share almost no
5-word shingles, while exact copies, one-sentence edits and mirror copies are duplicates.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, stdin: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """``python -m neardup_scrapy.cli ARGS`` from the checkout, output captured, never raising."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run(
        [sys.executable, "-m", "neardup_scrapy.cli", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
        check=False,
    )


_SYLLABLES = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "xe", "ba", "de", "fi", "go", "hu", "ja"]


def _vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class PageFactory:
    """Deterministic article texts and the HTML pages around them."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = _vocabulary(self.rng)

    def sentence(self) -> str:
        words = [self.rng.choice(self.words) for _ in range(self.rng.randint(9, 16))]
        return " ".join(words).capitalize() + "."

    def article(self, paragraphs: int = 8, sentences: int = 5) -> list[list[str]]:
        return [[self.sentence() for _ in range(sentences)] for _ in range(paragraphs)]

    def edit(self, article: list[list[str]]) -> list[list[str]]:
        """The same article with one sentence replaced (a near duplicate)."""
        copy = [list(p) for p in article]
        p = self.rng.randrange(len(copy))
        copy[p][self.rng.randrange(len(copy[p]))] = self.sentence()
        return copy

    @staticmethod
    def html(title: str, article: list[list[str]], site: str = "Example site", extra: str = "") -> str:
        paragraphs = "\n".join(f"<p>{' '.join(p)}</p>" for p in article)
        return (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<header><nav><a href='/'>{site}</a> <a href='/about'>About</a> "
            "<a href='/blog'>Blog</a></nav></header>"
            f"<main><article><h1>{title}</h1>\n{paragraphs}\n</article></main>"
            f"<footer><p>Copyright {site}. {extra}</p></footer></body></html>"
        )

    @staticmethod
    def text(article: list[list[str]]) -> str:
        return "\n\n".join(" ".join(p) for p in article)


def make_crawl(seed: int = 7, distinct: int = 20) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Records of a small crawl and the expected status of some urls.

    * ``distinct`` articles on http://127.0.0.1/ (unique);
    * 3 exact copies on 127.0.0.1 (another url, same page);
    * 4 near copies on 127.0.0.1 (one sentence changed);
    * a mirror host http://127.0.0.2/ serving 10 of the articles in its own template;
    * 5 unique articles on http://127.0.0.3/, one given as ``body`` and one as plain ``text``.

    Returns:
        ``(records, expected)`` with ``expected[url]`` in {"unique", "exact", "near"}.
    """
    f = PageFactory(seed)
    records: list[dict[str, Any]] = []
    expected: dict[str, str] = {}
    articles = [f.article() for _ in range(distinct)]
    for i, art in enumerate(articles):
        url = f"http://127.0.0.1/post/{i}"
        records.append({"url": url, "html": f.html(f"Post {i}", art), "id": i})
        expected[url] = "unique"
    for i in range(3):
        url = f"http://127.0.0.1/post/{i}?utm_source=feed"
        records.append({"url": url, "html": f.html(f"Post {i}", articles[i]), "id": 100 + i})
        expected[url] = "exact"
    for i in range(3, 7):
        url = f"http://127.0.0.1/post/{i}/v2"
        records.append({"url": url, "html": f.html(f"Post {i}", f.edit(articles[i])), "id": 200 + i})
        expected[url] = "near"
    for i in range(6, 16):
        url = f"http://127.0.0.2/mirror/{i}.html"
        html = f.html(f"Post {i}", articles[i], site="Mirror site", extra="Mirrored content.")
        records.append({"url": url, "html": html, "id": 300 + i})
        expected[url] = "exact"
    for i in range(5):
        url = f"http://127.0.0.3/page/{i}"
        art = f.article()
        if i == 3:
            records.append({"url": url, "body": f.html(f"Other {i}", art), "id": 400 + i})
        elif i == 4:
            records.append({"url": url, "text": f.text(art), "id": 400 + i})
        else:
            records.append({"url": url, "html": f.html(f"Other {i}", art), "id": 400 + i})
        expected[url] = "unique"
    return records, expected


def write_jsonl(path: Path, records: list[Any], *, raw_lines: dict[int, str] | None = None) -> Path:
    """Write records as JSON Lines (gzip if the name ends in .gz), inserting raw lines by index."""
    lines = [json.dumps(r) for r in records]
    for index, text in sorted((raw_lines or {}).items()):
        lines.insert(index, text)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path
