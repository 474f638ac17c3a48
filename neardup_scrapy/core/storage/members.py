"""The member rows of the report's clusters, built the same way by every store."""

from __future__ import annotations

import math
from typing import Any

from .base import STATUS_NAMES

__all__ = ["cluster_member"]


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
