"""Urls as shown to people: reports and log lines never print a password found in a crawled url."""

from __future__ import annotations

__all__ = ["redact_url"]

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
