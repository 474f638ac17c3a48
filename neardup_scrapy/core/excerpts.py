"""Report examples: the main texts of recent unique pages, and near-duplicate pairs cut around
their first difference for the report to show side by side."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

EXCERPT_CHARS = 2000  # per side of a report example
CACHED_CHARS = 8000  # per cached text, so the window can move to where two texts differ
MAX_EXAMPLES = 50


class Examples:
    """The texts of the ``keep`` most recent representatives (``CACHED_CHARS`` each, at most) and
    the first ``MAX_EXAMPLES`` near-duplicate pairs whose representative's text was at hand."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._texts: OrderedDict[int, str] = OrderedDict()
        #: the pairs, in the order they were found (``neardup-report/1`` examples)
        self.pairs: list[dict[str, Any]] = []

    def add_pair(
        self,
        url: str,
        raw: str,
        *,
        root: int,
        root_url: str | None,
        similarity: float | None,
        hamming: int | None,
    ) -> None:
        """Record a near duplicate ``url`` (text ``raw``) of representative ``root``, when room is
        left and the representative's text is kept."""
        if len(self.pairs) < MAX_EXAMPLES and root in self._texts:
            left, right = around_first_difference(excerpt(self._texts[root]), excerpt(raw))
            self.pairs.append(
                {
                    "status": "near",
                    "similarity": similarity,
                    "hamming": hamming,
                    "a": {"url": root_url, "text": left},
                    "b": {"url": url, "text": right},
                }
            )

    def keep_text(self, doc_id: int, raw: str) -> None:
        """Keep the text of representative ``doc_id`` (the oldest kept goes past ``keep``)."""
        if self.keep:
            self._texts[doc_id] = raw[:CACHED_CHARS]  # folded when shown
            while len(self._texts) > self.keep:
                self._texts.popitem(last=False)


def excerpt(text: str) -> str:
    """The first ``CACHED_CHARS`` characters of ``text`` with whitespace folded."""
    return " ".join(text[:CACHED_CHARS].split())


def around_first_difference(a: str, b: str) -> tuple[str, str]:
    """Cut two texts to ``EXCERPT_CHARS`` starting a little before where they first differ."""
    same = common_prefix_length(a, b)
    start = max(0, same - EXCERPT_CHARS // 4)
    if start:
        start = a.rfind(" ", 0, start) + 1  # do not cut a word
    return a[start : start + EXCERPT_CHARS], b[start : start + EXCERPT_CHARS]


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``, by bisection on slice equality
    (``log2 n`` comparisons done in C, where ``os.path.commonprefix`` steps in Python per
    character)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low
