"""The unit and record types shared by every input format, and :func:`decode`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: Fields that may hold a page body, in order of preference (``text`` is plain text).
CONTENT_KEYS = ("html", "body", "text")
#: Reason of a record whose fields hold no page body (drives the "add an html field" hint).
NO_BODY = "no page body"
TOO_LARGE = "too large"

JSON = "json"
PAGE = "page"


class InputFormatError(Exception):
    """The input cannot be read as the format it was taken for (the message says why)."""


@dataclass(slots=True)
class Unit:
    """One record of the input, cut out but not decoded.

    Attributes:
        number: its position (the line number for JSON Lines, the record number otherwise).
        kind: ``"json"`` (``payload`` is one JSON object's bytes) or ``"page"`` (``payload`` is
            a page body with ``url``, ``record_id`` and ``encoding`` known).
        payload: the bytes.
        url: the page's url (``"page"`` units).
        record_id: WARC-Record-ID (``"page"`` units).
        encoding: the body's charset when its headers name one.
        reason: set when the reader already knows the record cannot be checked.
        problem: that reason is a defect of the input.
        canonical: the target of the response's ``Link: <...>; rel="canonical"`` header.
    """

    number: int
    kind: str
    payload: bytes
    url: str | None = None
    record_id: str | None = None
    encoding: str | None = None
    reason: str | None = None
    problem: bool = False
    canonical: str = ""


@dataclass(slots=True)
class Record:
    """A decoded unit: what the detector needs, and what the writer needs to tag it.

    Attributes:
        url: the page's url (``None`` when the record has none).
        content: the body (``str`` from JSON, ``bytes`` from archives), ``None`` when skipped.
        plain: ``content`` is plain text (a JSON ``text`` field), not HTML.
        encoding: charset of a ``bytes`` body.
        is_object: the JSON record is an object (it can take a ``neardup`` key).
        has_tag: the JSON object already has a ``neardup`` key.
        reason: why it is not checked (``None``: it is checked).
        problem: the reason is a defect of the input.
        nbytes: the body's size.
        canonical: the target of the response's ``Link`` canonical header (archives).
    """

    url: str | None
    content: str | bytes | None = None
    plain: bool = False
    encoding: str | None = None
    is_object: bool = False
    has_tag: bool = False
    reason: str | None = None
    problem: bool = False
    nbytes: int = 0
    canonical: str = ""


def decode(unit: Unit, max_body_bytes: int, tag_key: str = "neardup") -> Record:
    """Decode one unit; never raises (a record that cannot be used gets a ``reason``).

    Args:
        unit: from a reader.
        max_body_bytes: larger bodies are not checked (reason ``too large``); 0: no limit.
        tag_key: the key whose presence ``has_tag`` reports.
    """
    if unit.reason is not None:
        return Record(url=unit.url, reason=unit.reason, problem=unit.problem)
    if unit.kind == PAGE:
        body = unit.payload
        if max_body_bytes and len(body) > max_body_bytes:
            return Record(url=unit.url, reason=TOO_LARGE)
        return Record(
            url=unit.url, content=body, encoding=unit.encoding, nbytes=len(body), canonical=unit.canonical
        )
    try:
        data: Any = json.loads(unit.payload)
    except RecursionError:
        return Record(url=None, reason="nested too deep", problem=True)
    except json.JSONDecodeError as exc:
        return Record(url=None, reason=f"invalid JSON: {exc.msg} at column {exc.colno}", problem=True)
    except ValueError:  # UnicodeDecodeError
        return Record(url=None, reason="not UTF-8 text", problem=True)
    if type(data) is not dict:
        return Record(url=None, reason=f"not a JSON object but {type(data).__name__}", problem=True)
    has_tag = tag_key in data
    url = data.get("url")
    if url is None:
        return Record(url=None, is_object=True, has_tag=has_tag, reason="no 'url' field", problem=True)
    if not isinstance(url, str):
        reason = f"'url' is {type(url).__name__}, not a string"
        return Record(url=None, is_object=True, has_tag=has_tag, reason=reason, problem=True)
    if not url:
        return Record(url=None, is_object=True, has_tag=has_tag, reason="'url' is empty", problem=True)
    for key in CONTENT_KEYS:
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            reason = f"'{key}' is {type(value).__name__}, not a string"
            return Record(url=url, is_object=True, has_tag=has_tag, reason=reason, problem=True)
        # A str holds at most 4 UTF-8 bytes per character; measure exactly only near the cap.
        nbytes = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
        if max_body_bytes and nbytes > max_body_bytes:
            return Record(url=url, is_object=True, has_tag=has_tag, reason=TOO_LARGE)
        plain = key == "text"
        return Record(url=url, content=value, plain=plain, is_object=True, has_tag=has_tag, nbytes=nbytes)
    return Record(url=url, is_object=True, has_tag=has_tag, reason=NO_BODY, problem=True)
