"""Full exports of an index: every cluster with every member, and every duplicate pair.

The report caps what it lists (100 clusters of 20 members); these files do not. Both are
written as JSON Lines, or as Parquet when the file name ends with ``.parquet`` (needs pyarrow:
``pip install "neardup-scrapy[parquet]"``).

* clusters: one row per indexed page's cluster, singletons included, so every indexed page
  appears exactly once: ``{"cluster", "size", "hosts", "members": [{"url", "status",
  "similarity", "hamming"}, ...]}``, the representative (``cluster``) first.
* pairs: one row per duplicate: ``{"url", "duplicate_of", "status", "similarity",
  "hamming"}``; ``duplicate_of`` is the representative of the page's cluster, the page its
  similarity and Hamming distance were measured against. Joining each ``url`` to its
  ``duplicate_of`` rebuilds the clusters.

Urls are written as crawled, but for the password of a user info (``https://user:***@host/``,
and a user info without a password masked whole: often an access token), as in the report:
exports are shared more widely than the crawl's own items. Every other character is kept, so
the urls join the crawl's items and a scan's OUTPUT (whose records are kept unchanged).

Pure code: no Scrapy here.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

from neardup_scrapy.core.storage.base import IndexStorage
from neardup_scrapy.core.urls import redact_url

__all__ = ["cluster_rows", "pair_rows", "write_rows"]

#: "Every cluster, every member" in the terms of :meth:`IndexStorage.clusters`.
_ALL = 1 << 62


def cluster_rows(storage: IndexStorage) -> list[dict[str, Any]]:
    """Every cluster of the index (largest first, then singletons in index order).

    One :meth:`~.storage.base.IndexStorage.clusters` call with singletons: the store lists the
    pages that exist, so ids with gaps (a shared index whose processes reserve ids, expired
    records) are no obstacle, and every page appears once even when two share a url.
    """
    _hist, every = storage.clusters(_ALL, _ALL, singletons=True)
    return [
        {
            "cluster": redact_url(cluster["representative"]),
            "size": int(cluster["size"]),
            "hosts": list(cluster["hosts"]),
            "members": [{**m, "url": redact_url(m["url"])} for m in cluster["members"]],
        }
        for cluster in every
    ]


def pair_rows(clusters: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every duplicate of ``clusters`` (from :func:`cluster_rows`) with its representative."""
    for cluster in clusters:
        rep = cluster["cluster"]
        for member in cluster["members"]:
            if member["url"] == rep:
                continue
            yield {
                "url": member["url"],
                "duplicate_of": rep,
                "status": member["status"],
                "similarity": member["similarity"],
                "hamming": member["hamming"],
            }


def write_rows(path: str, rows: Iterable[dict[str, Any]], kind: str) -> int:
    """Write ``rows`` to ``path`` (JSON Lines, ``.gz`` compressed, or ``.parquet``); returns the count.

    The file is written next to its final name and renamed when complete.

    Args:
        path: the file name.
        rows: :func:`cluster_rows` or :func:`pair_rows` output.
        kind: ``"clusters"`` or ``"pairs"`` (the Parquet schema).

    Raises:
        OSError: the file cannot be written.
        ImportError: Parquet was asked for and pyarrow is not installed.
    """
    path = os.path.expanduser(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        if path.endswith(".parquet"):
            count = _write_parquet(tmp, rows, kind)
        else:
            count = 0
            handle: IO[bytes]
            opened: Any = gzip.open(tmp, "wb") if path.endswith(".gz") else open(tmp, "wb")  # noqa: SIM115
            with opened as handle:
                for row in rows:
                    text = json.dumps(row, ensure_ascii=False, allow_nan=False)
                    handle.write(text.encode("utf-8", "replace"))
                    handle.write(b"\n")
                    count += 1
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return count


def _write_parquet(path: str, rows: Iterable[dict[str, Any]], kind: str) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(
            'Parquet exports need pyarrow: pip install "neardup-scrapy[parquet]" (or pyarrow)'
        ) from exc
    member = pa.struct(
        [
            ("url", pa.string()),
            ("status", pa.string()),
            ("similarity", pa.float64()),
            ("hamming", pa.int32()),
        ]
    )
    if kind == "clusters":
        schema = pa.schema(
            [
                ("cluster", pa.string()),
                ("size", pa.int64()),
                ("hosts", pa.list_(pa.string())),
                ("members", pa.list_(member)),
            ]
        )
    else:
        schema = pa.schema(
            [
                ("url", pa.string()),
                ("duplicate_of", pa.string()),
                ("status", pa.string()),
                ("similarity", pa.float64()),
                ("hamming", pa.int32()),
            ]
        )
    data = list(rows)
    pq.write_table(pa.Table.from_pylist(data, schema=schema), path)
    return len(data)
