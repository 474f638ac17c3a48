"""Hosts of urls and mirror-host decisions."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from urllib.parse import urlsplit


def host_of(url: str) -> str:
    """Lower-cased host of ``url`` (with a non-default port), or ``""`` when it has none.

    Memoised by origin (``scheme://authority``), as a crawl has few hosts and many urls.
    """
    scheme, separator, rest = url.partition("://")
    if separator and scheme.isalnum():
        end = len(rest)
        for delimiter in "/?#":
            position = rest.find(delimiter, 0, end)
            if position >= 0:
                end = position
        return _host_of_origin(f"{scheme}://{rest[:end]}")
    return _host_of_origin(url)


@lru_cache(maxsize=4096)
def _host_of_origin(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return ""
    if port and not (parts.scheme == "http" and port == 80) and not (parts.scheme == "https" and port == 443):
        return f"{host}:{port}"
    return host


def mirror_target(
    host: str, host_pages: int, pairs: Mapping[str, int], min_pages: int, share: float
) -> tuple[str, int] | None:
    """The host that ``host`` mirrors, if any.

    ``host`` mirrors ``other`` when at least ``min_pages`` of its pages, and at least ``share``
    of all its (non-skipped) pages, duplicate pages first seen on ``other``.

    Returns:
        ``(other, duplicate_pages)`` for the strongest such host, or ``None``.
    """
    best: tuple[str, int] | None = None
    for other, count in pairs.items():
        if other == host or count < min_pages or host_pages <= 0 or count / host_pages < share:
            continue
        if best is None or count > best[1] or (count == best[1] and other < best[0]):
            best = (other, count)
    return best
