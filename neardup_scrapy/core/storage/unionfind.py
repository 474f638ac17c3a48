"""Union-find root finding that always ends, for parents read from a file or a shared server.

A store's cluster parents normally form a forest, but a corrupted file or anyone with write
access to a shared Redis can leave a parent pointer out of range or a cycle of them. Root
finding must still end: a pointer out of range makes its page a root, and a cycle is broken at
its smallest id, which becomes the root of every page leading into it. The Redis store's Lua
scripts apply the same rule, so every store and every process agrees on the roots. Each broken
cycle is logged (WARNING), so a damaged index does not go unnoticed.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import numpy as np

from .base import I64Array

__all__ = ["all_roots", "find_root", "origin_members"]

logger = logging.getLogger(__name__)


class Parents(Protocol):
    """A mutable sequence of parent ids (a numpy array or a store column)."""

    def __getitem__(self, row: int, /) -> Any: ...

    def __setitem__(self, row: int, value: Any, /) -> None: ...


def find_root(parents: Parents, doc_id: int, size: int) -> int:
    """Root of ``doc_id``, compressing its path; a cycle is broken at its smallest id.

    Args:
        parents: parent of every page (``parents[i] == i`` for a root); changed in place by
            path compression and, for a cycle, by making its smallest id a root.
        doc_id: the page.
        size: number of pages (a longer walk must have met a cycle).
    """
    root = doc_id
    hops = 0
    while (parent := int(parents[root])) != root:
        root = parent
        hops += 1
        if hops > size:
            root = _break_cycle(parents, doc_id)
            break
    while (parent := int(parents[doc_id])) != root:  # path compression
        parents[doc_id] = root
        doc_id = parent
    return root


def _break_cycle(parents: Parents, start: int) -> int:
    """Make the smallest id of the cycle reached from ``start`` a root; returns it."""
    seen: dict[int, int] = {}
    order: list[int] = []
    node = start
    while node not in seen:
        seen[node] = len(order)
        order.append(node)
        node = int(parents[node])
    cycle = order[seen[node] :]
    root = min(cycle)
    parents[root] = root
    logger.warning(
        "neardup: the index holds a cycle of %d cluster parent pointers (corrupted, or written by "
        "another program?); page %d now represents its cluster",
        len(cycle),
        root,
    )
    return root


def all_roots(parents: I64Array) -> tuple[I64Array, list[int]]:
    """Roots of all pages ``0..n-1`` at once (pointer jumping), however the parents are damaged.

    Parents out of range make their page a root; each cycle is broken at its smallest id.

    Returns:
        ``(roots, broken)``: the root of every page, and the ids at which cycles were broken
        (empty for a sound forest). The input is not modified.
    """
    n = len(parents)
    pos = np.asarray(parents, dtype=np.int64).copy()
    if not n:
        return pos, []
    bad = (pos < 0) | (pos >= n)
    if bad.any():
        pos[bad] = np.flatnonzero(bad)
    # A forest of depth d converges after ceil(log2(d)) + 1 squarings, to roots that are their
    # own parents; a cycle either never converges or (a cycle whose length divides a power of
    # two) converges to pages that are not their own parents.
    current = pos
    for _ in range(n.bit_length() + 2):
        grand = current[current]
        if np.array_equal(grand, current):
            if np.array_equal(pos[current], current):
                return current, []
            break
        current = grand
    return _roots_breaking_cycles(pos.tolist())


def _roots_breaking_cycles(parents: list[int]) -> tuple[I64Array, list[int]]:
    """One walk per path (linear time) for parents that hold cycles; see :func:`all_roots`."""
    n = len(parents)
    roots = [-1] * n
    broken: list[int] = []
    for start in range(n):
        if roots[start] >= 0:
            continue
        path: list[int] = []
        on_path: dict[int, int] = {}
        node = start
        while True:
            if roots[node] >= 0:
                root = roots[node]
                break
            if node in on_path:  # a cycle: its smallest id becomes the root
                root = min(path[on_path[node] :])
                parents[root] = root
                broken.append(root)
                break
            on_path[node] = len(path)
            path.append(node)
            parent = parents[node]
            if parent == node:
                root = node
                break
            node = parent
        for member in path:  # every page on the path leads to the same root
            roots[member] = root
    if broken:
        logger.warning(
            "neardup: the index holds %d cycle(s) of cluster parent pointers (corrupted, or written by "
            "another program?); each is broken at its smallest page id (%s)",
            len(broken),
            ", ".join(str(b) for b in sorted(broken)[:10]) + (", ..." if len(broken) > 10 else ""),
        )
    return np.array(roots, dtype=np.int64), sorted(broken)


def origin_members(
    roots: I64Array, hosts: I64Array, origins: dict[int, int], ids: I64Array | None = None
) -> list[int]:
    """The pages to promote for mirror pairs (see ``IndexStorage.promote_origins``).

    Args:
        roots: the cluster root of every page (row ``i`` is page ``ids[i]``).
        hosts: a code (>= 0) for the host of every page.
        origins: ``{mirror host code: origin host code}``.
        ids: the page ids of the rows (default ``0..n-1``); roots are page ids too.

    Returns:
        For every cluster whose root is on a mirror host and that holds a page of that mirror's
        origin, the earliest such page (ascending ids).
    """
    if not origins or not len(roots):
        return []
    if ids is None:
        ids = np.arange(len(roots), dtype=np.int64)
    host_of_id = np.full(int(max(ids.max(), roots.max())) + 1, -1, dtype=np.int64)
    host_of_id[ids] = hosts
    wanted = np.full(int(max(hosts.max(initial=0), *origins)) + 2, -1, dtype=np.int64)
    for mirror, origin in origins.items():
        wanted[mirror] = origin
    root_hosts = host_of_id[roots]  # -1 (the last slot of wanted: none) for a root not listed
    origin_of_root = wanted[root_hosts]
    chosen = (roots != ids) & (origin_of_root >= 0) & (hosts == origin_of_root)
    if not chosen.any():
        return []
    order = np.argsort(ids[chosen], kind="stable")
    _, first = np.unique(roots[chosen][order], return_index=True)
    return sorted(int(i) for i in ids[chosen][order][first])
