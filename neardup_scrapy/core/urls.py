"""Urls as shown to people (reports and log lines never print a password found in a crawled url),
and the canonical address a page names."""

from __future__ import annotations

from urllib.parse import urldefrag, urljoin

__all__ = ["canonical_address", "parse_link_header", "redact_url"]

REDACTED = "***"


def redact_url(url: str) -> str:
    """``url`` with the password of its user info replaced by ``***``.

    ``https://user:secret@host/path`` becomes ``https://user:***@host/path``; a url without a
    password is returned unchanged. Total over any string (it is not validated as a url).
    """
    if "@" not in url:
        return url
    start = url.find("//")
    if start < 0:
        return url
    start += 2
    end = len(url)
    for delimiter in "/?#":
        position = url.find(delimiter, start, end)
        if position >= 0:
            end = position
    userinfo, at, _ = url[start:end].rpartition("@")
    if not at:
        return url
    user, colon, password = userinfo.partition(":")
    if not colon or password == REDACTED:
        return url
    return f"{url[:start]}{user}:{REDACTED}{url[start + len(userinfo) :]}"


def canonical_address(url: str, href: str) -> str:
    """The absolute address a page at ``url`` names canonical with ``href`` (a ``<link
    rel=canonical>`` href or a ``Link`` header target, absolute or relative), without its
    fragment; ``""`` for none, for one that is not ``http(s)``, or for the page's own url."""
    href = href.strip()
    if not href:
        return ""
    if href.startswith(("http://", "https://")):  # the usual case, without urljoin's parse
        address = href.partition("#")[0]
    else:
        try:
            address = urldefrag(urljoin(url, href))[0]
        except ValueError:  # an invalid IPv6 literal, ...
            return ""
        if not address.startswith(("http://", "https://")):
            return ""
    return "" if address == url.partition("#")[0] else address


def parse_link_header(values: list[str]) -> str:
    """The target of the first ``rel="canonical"`` link of HTTP ``Link`` header values
    (RFC 8288: ``<https://a.example/x>; rel="canonical"``; several links per value, comma
    separated); ``""`` when none."""
    for value in values:
        for link in _split_links(value):
            target, _, params = link.partition(">")
            target = target.strip()
            if not target.startswith("<"):
                continue
            for param in params.split(";"):
                name, _, rel = param.strip().partition("=")
                if name.strip().lower() == "rel" and "canonical" in rel.strip().strip('"').lower().split():
                    return target[1:].strip()
    return ""


def _split_links(value: str) -> list[str]:
    """``Link`` header value split at the commas between links (not those inside ``<...>`` or quotes)."""
    links, start, depth, quoted = [], 0, 0, False
    for i, char in enumerate(value):
        if char == '"' and depth == 0:
            quoted = not quoted
        elif char == "<" and not quoted:
            depth += 1
        elif char == ">" and not quoted:
            depth = max(0, depth - 1)
        elif char == "," and depth == 0 and not quoted:
            links.append(value[start:i])
            start = i + 1
    links.append(value[start:])
    return links
