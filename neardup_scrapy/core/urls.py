"""Urls as shown to people (reports, exports and log lines never print a secret a url carries),
and the canonical address a page names.

Two kinds of url carry secrets:

* crawled pages: ``https://user:password@host/…`` (user info). :func:`redact_url` masks the
  password of every user info in the text (an address nested in a query too), and a user info
  without a password (``https://TOKEN@host/``: often an access token) as a whole;
* connection urls (Redis): redis-py's ``from_url`` takes ``redis://``, ``rediss://`` and
  ``unix://`` urls with a user info (``[[user]:password]@``) and passes *every* query argument
  to the connection, so ``?password=…``, ``?username=…`` and ``?ssl_password=…`` (the TLS key's
  passphrase) work as well. :func:`redact_connection_url` masks the user info's password (the
  user info taken up to the last ``@``: a password may hold ``/``, ``?`` or ``@`` unescaped)
  and the value of every query argument whose name speaks of a secret; :func:`scrub` removes
  the secrets of a connection url from any text (an error message that quotes them).

A url or host shown to a person must also show what it is: :func:`shown` makes visible, as
escapes (``\\u202e``), the characters that are not drawn as themselves but steer the display
-- controls (C0, C1, DEL), bidi embeddings, overrides, isolates and marks, zero-width and tag
characters, line separators, lone surrogates and unassigned code points -- so a link to
``…\u202etxt.exe`` cannot pass for ``…exe.txt`` and a terminal never receives an escape
sequence from a crawled url.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus, urldefrag, urljoin

__all__ = [
    "REDACTED",
    "canonical_address",
    "parse_link_header",
    "redact_connection_url",
    "redact_url",
    "scrub",
]

REDACTED = "***"

#: ``//user:password@`` or ``//token@`` of a page url: the user info stops at the first ``/``,
#: ``\\`` (browsers read it as ``/``), ``?``, ``#`` or whitespace, and runs to the last ``@``
#: before it.
_USERINFO = re.compile(r"([/\\]{2})([^/\\?#\s]*)@")
#: Query arguments of a connection url that hold a secret (by their name).
_SECRET_NAME = re.compile(r"pass|secret|token|auth|cred|key", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_DELIMITERS = re.compile(r"[/?#@:&=\[\]]")


def _masked(userinfo: str) -> str:
    user, colon, password = userinfo.partition(":")
    if not colon:
        return userinfo if userinfo in ("", REDACTED) else REDACTED
    return userinfo if password == REDACTED else f"{user}:{REDACTED}"


def redact_url(url: str) -> str:
    """``url`` with the password of each user info replaced by ``***``.

    ``https://user:secret@host/path`` becomes ``https://user:***@host/path``; a user info without
    a password (``https://TOKEN@host/``) becomes ``***@``. A url without user info is returned
    unchanged. Total over any string (it is not validated as a url).
    """
    if "@" not in url:
        return url
    return _USERINFO.sub(lambda m: f"{m.group(1)}{_masked(m.group(2))}@", url)


def _split_connection(url: str) -> tuple[str, str, str]:
    """``(scheme://, user info, rest)`` of a connection url (user info ``""`` when none)."""
    scheme = _SCHEME.match(url)
    head = scheme.group(0) if scheme else ""
    body = url[len(head) :]
    userinfo, at, rest = body.rpartition("@")
    if not at:
        return head, "", body
    return head, userinfo, rest


def redact_connection_url(url: str) -> str:
    """A connection url (Redis) without its secrets: the password of its user info (a user info
    without a password is masked whole) and the value of every query argument named like a
    secret (``password``, ``ssl_password``, ``token`` …) are ``***``.

    ``redis://:s3cret@h:6379/0`` -> ``redis://:***@h:6379/0``; ``unix:///tmp/r.sock?password=s``
    -> ``unix:///tmp/r.sock?password=***``. Total over any string.
    """
    head, userinfo, rest = _split_connection(url)
    shown = head + (_masked(userinfo) + "@" if userinfo or url[len(head) :].startswith("@") else "") + rest
    base, question, query = shown.partition("?")
    if not question:
        return shown
    query, hash_mark, fragment = query.partition("#")
    parts = []
    for part in query.split("&"):
        name, equals, value = part.partition("=")
        if equals and value and _SECRET_NAME.search(unquote_plus(name)):
            part = f"{name}={REDACTED}"
        parts.append(part)
    return f"{base}?{'&'.join(parts)}{hash_mark}{fragment}"


def _secrets(url: str) -> set[str]:
    """The secret values a connection url holds, as written and decoded."""
    _head, userinfo, rest = _split_connection(url)
    user, colon, password = userinfo.partition(":")
    values = [password if colon else user]
    query = rest.partition("?")[2].partition("#")[0]
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if _SECRET_NAME.search(unquote_plus(name)):
            values.append(value)
    found = {form for value in values for form in (value, unquote(value), unquote_plus(value))}
    # and its pieces between url delimiters: a parser that mistakes the url's parts quotes them
    # (``redis://u:pa/ss@h`` gives urllib the port "pa")
    found |= {piece for value in list(found) for piece in _DELIMITERS.split(value)}
    return {s for s in found if len(s) >= 3}


def scrub(text: str, url: str) -> str:
    """``text`` with every secret of connection url ``url`` replaced by ``***`` (for error
    messages of a client library that may quote the url or a password). Secrets shorter than 3
    characters are left (replacing them would garble the message; they are not secret anyway)."""
    for secret in sorted(_secrets(url), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    if url in text:  # and the url itself, should it be quoted whole
        text = text.replace(url, redact_connection_url(url))
    return text


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
