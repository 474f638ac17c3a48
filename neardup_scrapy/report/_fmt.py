"""Small number and size formatters shared by the HTML and the text report."""

from __future__ import annotations

import itertools
import math
from typing import Any


def as_int(value: Any) -> int:
    """``value`` as an int; anything that is not a number gives 0."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and not math.isnan(value) and not math.isinf(value):
        return int(value)
    return 0


def as_float(value: Any) -> float | None:
    """``value`` as a float, or ``None`` when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def count(value: Any) -> str:
    """An integer with thousands separators: ``12,345``."""
    return f"{as_int(value):,}"


def plural(value: Any, word: str, words: str | None = None) -> str:
    """``1 page``, ``2 pages``, ``1,074 pages``."""
    n = as_int(value)
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def percent(part: float, whole: float, digits: int = 1) -> str:
    """``part / whole`` as a percentage (``"-"`` when ``whole`` is 0)."""
    if not whole:
        return "-"
    return f"{100.0 * part / whole:.{digits}f}%"


def share(value: Any, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage (``"-"`` when missing)."""
    number = as_float(value)
    if number is None:
        return "-"
    return f"{100.0 * number:.{digits}f}%"


def nbytes(value: Any) -> str:
    """A byte count in decimal units: ``1.2 MB``."""
    n = float(as_int(value))
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} PB"  # pragma: no cover - unreachable


def similarity(value: Any) -> str:
    """A similarity with three decimals (``"-"`` when missing)."""
    number = as_float(value)
    return "-" if number is None else f"{number:.3f}"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "\u2026"


SIZE_EDGES = (2, 3, 4, 5, 6, 11, 21, 51, 101, 201, 501, 1001, 10001, 100001)


def size_bins(cluster_sizes: Any, max_exact: int = 12) -> list[tuple[str, int]]:
    """Group the cluster-size histogram into at most ~15 labelled bins.

    With few distinct sizes every size gets its own bin; otherwise sizes are grouped into
    ranges that grow roughly logarithmically (2, 3, 4, 5, 6-10, 11-20, 21-50, ...).

    Args:
        cluster_sizes: the report's ``cluster_sizes`` mapping (``{"2": n, ...}``).
        max_exact: up to this many distinct sizes are shown one per bin.

    Returns:
        ``[(label, clusters), ...]`` in increasing size order.
    """
    sizes: dict[int, int] = {}
    if isinstance(cluster_sizes, dict):
        for key, value in cluster_sizes.items():
            try:
                size = int(key)
            except (TypeError, ValueError):
                continue
            sizes[size] = sizes.get(size, 0) + as_int(value)
    if not sizes:
        return []
    if len(sizes) <= max_exact:
        return [(str(size), sizes[size]) for size in sorted(sizes)]
    largest = max(sizes)
    bins: list[tuple[str, int]] = []
    edges = [*SIZE_EDGES, max(largest + 1, SIZE_EDGES[-1] + 1)]
    for lo, hi in itertools.pairwise(edges):
        if lo > largest:
            break
        total = sum(n for size, n in sizes.items() if lo <= size < hi)
        label = str(lo) if hi - lo == 1 else (f"{lo}-{hi - 1}" if hi <= SIZE_EDGES[-1] else f"{lo}+")
        bins.append((label, total))
    below = sum(n for size, n in sizes.items() if size < SIZE_EDGES[0])
    if below:
        bins.insert(0, ("<2", below))
    return bins
