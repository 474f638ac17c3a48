"""The report's clusters and their member rows, built the same way by every store."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .base import STATUS_NAMES, I64Array

__all__ = ["cluster_member", "summarize_clusters"]


def cluster_member(
    url: str, status: int, similarity: float, hamming: int, *, representative: bool
) -> dict[str, Any]:
    """One ``{"url", "status", "similarity", "hamming"}`` member of a cluster in the report.

    A page stores its similarity and Hamming distance to the representative it had when it was
    checked: none for a page that was unique then (``nan`` and ``-1``, or damaged values). When
    its cluster was merged into another later, it is listed as ``unique`` with ``null`` for both,
    so the report never holds NaN (not JSON) or a negative distance.
    """
    if representative:
        return {"url": url, "status": "unique", "similarity": None, "hamming": None}
    name = STATUS_NAMES.get(int(status), "near")
    value = float(similarity)
    known = name != "unique" and math.isfinite(value) and 0.0 <= value <= 1.0 and 0 <= int(hamming) <= 64
    return {
        "url": url,
        "status": name,
        "similarity": round(value, 4) if known else None,
        "hamming": int(hamming) if known else None,
    }


def summarize_clusters(
    roots: I64Array,
    *,
    status: np.ndarray[Any, Any],
    similarity: np.ndarray[Any, Any],
    hamming: np.ndarray[Any, Any],
    max_clusters: int,
    max_members: int,
    describe: Callable[[Sequence[int]], list[tuple[str, str]]],
    ids: I64Array | None = None,
    singletons: bool = False,
) -> tuple[dict[int, int], list[dict[str, Any]]]:
    """Cluster histogram and largest clusters from per-page roots (see ``IndexStorage.clusters``).

    Args:
        roots: cluster root of every page (row ``i`` is page ``ids[i]``).
        status: stored status code per page.
        similarity: similarity to the representative per page.
        hamming: SimHash distance to the representative per page.
        max_clusters: clusters listed.
        max_members: members listed per cluster (representative first).
        describe: ``ids -> [(url, host)]`` for the pages listed, called once with all of them
            (a store that asks a server batches its round trips).
        ids: page ids of the rows (default ``0..n-1``).
        singletons: list clusters of one page too (after the larger ones, in id order).
    """
    if not len(roots):
        return {}, []
    if ids is None:
        ids = np.arange(len(roots), dtype=np.int64)
    unique_roots, sizes = np.unique(roots, return_counts=True)
    multi = sizes > 1
    hist = {int(s): int(c) for s, c in zip(*np.unique(sizes[multi], return_counts=True), strict=True)}
    order = np.lexsort((unique_roots[multi], -sizes[multi]))[:max_clusters]
    chosen = unique_roots[multi][order]
    chosen_sizes = sizes[multi][order]
    # clusters of one page (the full exports): the root is the page, in id order, described at once
    lone = unique_roots[~multi][: max(max_clusters - len(chosen), 0)] if singletons else unique_roots[:0]
    by_root = np.argsort(roots, kind="stable")
    sorted_roots = roots[by_root]
    plans: list[tuple[int, int, I64Array, list[int], list[int]]] = []
    wanted: set[int] = set()
    for root, size in zip(chosen.tolist(), chosen_sizes.tolist(), strict=True):
        lo, hi = np.searchsorted(sorted_roots, [root, root + 1])
        rows = by_root[lo:hi]
        member_ids = ids[rows]
        # Representative first (it is the root; ids grow in crawl order).
        order_rows = np.argsort(np.where(member_ids == root, -1, member_ids), kind="stable")
        rows = rows[order_rows][: max(max_members, 1000)]
        listed_ids = [int(i) for i in ids[rows[: max(max_members, 1)]]]
        host_ids = [int(i) for i in ids[rows[:1000]]]
        plans.append((int(root), int(size), rows, listed_ids, host_ids))
        wanted.update(listed_ids)
        wanted.update(host_ids)
        wanted.add(int(root))
    lone_ids = lone.tolist()  # a cluster of one page is rooted at that page
    asked = sorted(wanted.union(lone_ids))
    info = dict(zip(asked, describe(asked), strict=True))
    out: list[dict[str, Any]] = []
    for root, size, rows, listed_ids, host_ids in plans:
        members = []
        for row, doc in zip(rows[:max_members].tolist(), listed_ids[:max_members], strict=True):
            members.append(
                cluster_member(
                    info[doc][0], status[row], similarity[row], hamming[row], representative=doc == root
                )
            )
        root_url = info[root][0] if root in info else (members[0]["url"] if members else "")
        out.append(
            {
                "id": root_url,
                "size": size,
                "representative": root_url,
                "hosts": sorted({info[i][1] for i in host_ids}),
                "members": members,
            }
        )
    for doc in lone_ids:
        url, host = info[doc]
        member = {"url": url, "status": "unique", "similarity": None, "hamming": None}
        out.append({"id": url, "size": 1, "representative": url, "hosts": [host], "members": [member]})
    return hist, out
