"""Hosts of urls."""

from __future__ import annotations

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
