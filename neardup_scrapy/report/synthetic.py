"""Synthetic reports at the size limits, for tests, benchmarks and trying the HTML renderer.

:func:`synthetic_report` builds a valid ``neardup-report/1`` report of a made-up crawl with
every list filled to the caps ``NearDupDetector.report()`` applies, so the size and the load
time of the HTML page can be checked without running a crawl.
"""

from __future__ import annotations

import random
from typing import Any

from .schema import REPORT_FORMAT

_WORDS = " ".join(
    (
        "the of and to in is for on that with as by this from are be or at an it was which can",
        "page data crawl index content search result release version server request response",
        "document section example install configure option module function return value error",
        "network storage cluster mirror host article guide reference update change support",
    )
).split()


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16)))
        sentence = sentence[0].upper() + sentence[1:] + "."
        words.append(sentence)
        size += len(sentence) + 1
    return " ".join(words)[:chars]


def _edit(rng: random.Random, text: str) -> str:
    sentences = text.split(". ")
    for _ in range(max(1, len(sentences) // 8)):
        i = rng.randrange(len(sentences))
        sentences[i] = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 12)))
    return ". ".join(sentences)


def synthetic_report(
    pages: int = 100_000,
    hosts: int = 5_000,
    *,
    max_hosts: int = 1000,
    max_clusters: int = 100,
    max_members: int = 20,
    max_examples: int = 20,
    text_chars: int = 2000,
    mirrors: int = 40,
    seed: int = 0,
) -> dict[str, Any]:
    """A valid report of a made-up crawl of ``pages`` pages on ``hosts`` hosts.

    Args:
        pages: pages crawled.
        hosts: hosts crawled (``hosts_total``); ``max_hosts`` of them are listed.
        max_hosts: hosts listed, as ``report(max_hosts=...)``.
        max_clusters: clusters listed.
        max_members: members listed per cluster.
        max_examples: near-pair examples, each with two texts of ``text_chars`` characters.
        text_chars: characters per example text (the detector keeps 2,000).
        mirrors: mirror hosts.
        seed: random seed (the report is deterministic for a seed).

    Returns:
        The report dict.
    """
    rng = random.Random(seed)
    names = [
        f"www.site-{i:05d}.example-{rng.choice(('news', 'docs', 'shop', 'blog'))}.org" for i in range(hosts)
    ]
    weights = sorted((rng.paretovariate(1.2) for _ in range(hosts)), reverse=True)
    scale = pages / sum(weights)
    per_host = [max(1, int(w * scale)) for w in weights]
    per_host[0] += pages - sum(per_host)
    mirror_of = {names[-(i + 1)]: names[i] for i in range(min(mirrors, hosts // 2))}

    host_rows: list[dict[str, Any]] = []
    totals = dict.fromkeys(("unique", "exact", "near", "skipped"), 0)
    for name, n in zip(names, per_host, strict=True):
        skipped = n // 50
        checked = n - skipped
        dup_share = 0.9 if name in mirror_of else rng.random() * 0.4
        dups = int(checked * dup_share)
        exact = dups // 3
        near = dups - exact
        totals["unique"] += checked - dups
        totals["exact"] += exact
        totals["near"] += near
        totals["skipped"] += skipped
        host_rows.append(
            {
                "host": name,
                "pages": n,
                "unique": checked - dups,
                "exact": exact,
                "near": near,
                "skipped": skipped,
                "duplicate_share": round(dups / checked, 4) if checked else 0.0,
                "mirror_of": mirror_of.get(name),
            }
        )
    host_rows.sort(key=lambda h: (-h["pages"], h["host"]))

    duplicates = totals["exact"] + totals["near"]
    sizes: dict[str, int] = {}
    remaining = duplicates
    size = 2
    while remaining > 0 and size < 5000:
        n = max(1, remaining // (2 * size))
        sizes[str(size)] = n
        remaining -= n * (size - 1)
        size = size + 1 if size < 12 else int(size * 1.6)

    def url(host: str, i: int) -> str:
        slug = f"{i:07d}-{rng.choice(_WORDS)}-page.html?ref=list&page={i % 13}"
        return f"https://{host}/section-{i % 97}/articles/{2000 + i % 25}/{slug}"

    cluster_list = []
    for c in range(max_clusters):
        host = names[c % len(names)]
        size_c = max(2, 4000 // (c + 1))
        first = {"url": url(host, c * 1000), "status": "unique", "similarity": None, "hamming": None}
        members: list[dict[str, Any]] = [first]
        for m in range(1, min(size_c, max_members)):
            exact = m % 3 == 0
            members.append(
                {
                    "url": url(names[(c + m) % len(names)], c * 1000 + m),
                    "status": "exact" if exact else "near",
                    "similarity": 1.0 if exact else round(0.8 + rng.random() * 0.19, 4),
                    "hamming": 0 if exact else rng.randint(0, 6),
                }
            )
        cluster_list.append(
            {
                "id": members[0]["url"],
                "size": size_c,
                "representative": members[0]["url"],
                "hosts": sorted({host, names[(c + 1) % len(names)], names[(c + 2) % len(names)]}),
                "members": members,
            }
        )

    example_list = []
    for e in range(max_examples):
        a = _text(rng, text_chars)
        example_list.append(
            {
                "status": "near",
                "similarity": round(0.8 + rng.random() * 0.19, 4),
                "hamming": rng.randint(0, 6),
                "a": {"url": url(names[e % len(names)], e), "text": a},
                "b": {"url": url(names[(e + 7) % len(names)], e + 7), "text": _edit(rng, a)[:text_chars]},
            }
        )

    mirror_list: list[dict[str, Any]] = [
        {
            "host": row["host"],
            "mirror_of": row["mirror_of"],
            "pages": row["pages"],
            "duplicate_pages": row["exact"] + row["near"],
            "duplicate_share": row["duplicate_share"],
        }
        for row in host_rows
        if row["mirror_of"]
    ]
    mirror_list.sort(key=lambda m: (-m["duplicate_pages"], m["host"]))
    total_bytes = pages * 60_000
    return {
        "format": REPORT_FORMAT,
        "generated_at": "2025-01-01T00:00:00Z",
        "tool": {"name": "neardup-scrapy", "version": "synthetic"},
        "params": {
            "threshold": 0.8,
            "algorithm": "both",
            "num_perm": 128,
            "shingle_size": 5,
            "scope": "global",
        },
        "totals": {
            "pages": pages,
            **totals,
            "dropped": 0,
            "clusters": sum(sizes.values()),
            "mirror_hosts": len(mirror_list),
            "bytes": total_bytes,
            "bytes_saved": int(total_bytes * duplicates / max(pages, 1)),
            "storage_errors": 0,
        },
        "hosts": host_rows[:max_hosts],
        "hosts_total": hosts,
        "cluster_sizes": sizes,
        "clusters": cluster_list,
        "mirrors": mirror_list,
        "examples": example_list,
    }
