"""Urls taken apart into what duplicate-url rules act on: host, path, and named parameters.

A :class:`UrlForm` keeps what a request to a url depends on and nothing a server never sees
or a crawler already treats as the same request: the scheme and host lower-cased, no default
port, no fragment, and the query's pairs in sorted order (as Scrapy's request fingerprint
and w3lib's ``canonicalize_url`` already assume). Path parameters (``/a;jsessionid=X/b``) are
parameters too, named with a leading ``;`` (``;jsessionid``), so one rule kind covers both.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

from neardup_scrapy.core.hosts import host_of

__all__ = ["ABSENT", "UrlForm", "decompose", "path_difference"]

#: The "value" of a parameter a url does not carry.
ABSENT = ""
_SEP = "\x1f"  # separates the parts of a key: not a character urls carry unescaped


@dataclass(frozen=True, slots=True)
class UrlForm:
    """One url's parts.

    Attributes:
        scheme: ``http`` or ``https`` (lower-cased).
        host: host with a non-default port, lower-cased.
        path: the path without path parameters (``/`` at least).
        params: ``(name, value)`` pairs, sorted; path parameters are named ``;name``.
    """

    scheme: str
    host: str
    path: str
    params: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        """A string naming the form (equal forms, equal keys)."""
        query = _SEP.join(f"{name}={value}" for name, value in self.params)
        return f"{self.scheme}{_SEP}{self.host}{_SEP}{self.path}{_SEP}{query}"

    @property
    def section(self) -> str:
        """The path's first segment (``/news`` of ``/news/2024/a``; ``/`` for top-level pages):
        the scope of parameter rules narrower than the host."""
        end = self.path.find("/", 1)
        if end < 0:
            return "/"
        return self.path[:end]

    def values(self, name: str) -> str:
        """The values of parameter ``name`` joined by ``,`` (:data:`ABSENT` when it has none)."""
        return ",".join(v for n, v in self.params if n == name)

    def names(self) -> frozenset[str]:
        """The parameters' names."""
        return frozenset(n for n, _ in self.params)

    def without(self, name: str) -> UrlForm:
        """This form without parameter ``name``."""
        return UrlForm(self.scheme, self.host, self.path, tuple(p for p in self.params if p[0] != name))

    def with_path(self, path: str) -> UrlForm:
        """This form with another path."""
        return UrlForm(self.scheme, self.host, path, self.params)

    def with_host(self, host: str) -> UrlForm:
        """This form with another host."""
        return UrlForm(self.scheme, host, self.path, self.params)


@lru_cache(maxsize=65536)
def decompose(url: str) -> UrlForm | None:
    """The :class:`UrlForm` of ``url``; ``None`` for a url without a host (``mailto:``, junk).

    Memoised: a crawl meets most urls several times (found, requested, checked).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = host_of(url)
    if not host or not parts.scheme:
        return None
    path = parts.path or "/"
    params: list[tuple[str, str]] = []
    if ";" in path:
        segments = []
        for segment in path.split("/"):
            name, *pairs = segment.split(";")
            segments.append(name)
            for pair in pairs:
                key, _, value = pair.partition("=")
                if key:
                    params.append((";" + key.lower(), value))
        path = "/".join(segments) or "/"
    if parts.query:
        params.extend(parse_qsl(parts.query, keep_blank_values=True))
    return UrlForm(parts.scheme.lower(), host, path, tuple(sorted(params)))


def path_difference(a: str, b: str) -> tuple[tuple[str, str], ...] | None:
    """The path rules that make paths ``a`` and ``b`` equal, as ``(kind, literal)`` pairs, or
    ``None`` when no combination of them does.

    Kinds: ``case`` (letter case), ``slash`` (a trailing slash), ``prefix`` (a leading segment,
    ``/print/a`` and ``/a``), ``suffix`` (a last segment, ``/a/index.html`` and ``/a/``; with
    a trailing slash on one side only it comes with ``slash``). At most one kind besides
    ``slash``: a pair that needs more tells nothing about any single one of them.
    """
    if a == b:
        return ()
    if a.lower() == b.lower():
        return (("case", ""),)
    if a.rstrip("/") == b.rstrip("/"):
        return (("slash", ""),)
    for long, short in ((a, b), (b, a)):
        # prefix: /S/rest against /rest (or /S against /)
        if long.endswith(short) and long != short:
            head = long[: len(long) - len(short)]
            if short.startswith("/") and head.startswith("/") and "/" not in head[1:] and len(head) > 1:
                return (("prefix", head[1:]),)
        # suffix: /rest/S against /rest/ (or /rest)
        cut = long.rfind("/")
        literal = long[cut + 1 :]
        if cut >= 0 and literal:
            stem = long[: cut + 1]
            if stem == short:
                return (("suffix", literal),)
            if stem.rstrip("/") == short.rstrip("/") and stem != "/":
                return (("suffix", literal), ("slash", ""))
    return None
