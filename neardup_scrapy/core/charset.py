"""A page's bytes to the UTF-8 the parser reads: the charset chosen as a browser chooses it.

The order is a byte-order mark, then the transport's label (HTTP ``Content-Type``), then a
``<meta charset>`` or XML declaration near the start, then UTF-8, with one exception: bytes
that hold non-ASCII and are valid UTF-8 throughout are UTF-8 whatever is declared
(:func:`to_utf8` says why). Every function here is total.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

__all__ = ["codec_name", "to_utf8", "utf8_despite_label", "utf8_document"]

#: How far into a document the ``<meta charset>`` / XML declaration sniffing looks.
_SNIFF_BYTES: Final = 4096
_META_CHARSET_RE: Final = re.compile(
    rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{1,40})""", re.IGNORECASE
)
_XML_DECL_RE: Final = re.compile(
    rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_.:\-]{1,40})""", re.IGNORECASE
)
_BOMS: Final = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels that browsers (WHATWG Encoding Standard) decode with a superset codec.
_SUPERSET_CODECS: Final = {
    "latin-1": "cp1252",
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "tis-620": "cp874",
}


def codec_name(label: str | bytes | None) -> str | None:
    """Resolve an encoding label to a Python codec name, or ``None`` if it is unknown."""
    if not label:
        return None
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    try:
        name = codecs.lookup(label.strip().lower()).name
    except (LookupError, ValueError):
        return None
    return _SUPERSET_CODECS.get(name, name)


def _is_utf8_beyond_ascii(data: bytes) -> bool:
    """Whether ``data`` holds non-ASCII bytes and all of it is valid UTF-8."""
    if data.isascii():
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def utf8_despite_label(data: bytes, label: str | None) -> bool:
    """Whether ``data``, labelled ``label`` (an HTTP charset, a ``<meta charset>``), is read as
    UTF-8 all the same: the label names another ASCII-compatible charset and the bytes hold
    non-ASCII and are valid UTF-8 throughout (see :func:`to_utf8`)."""
    codec = codec_name(label)
    if codec is None or codec == "utf-8" or codec.startswith(("utf-16", "utf-32")):
        return False
    return _is_utf8_beyond_ascii(data)


def to_utf8(data: bytes, encoding: str | None) -> bytes:
    """Transcode ``data`` to UTF-8 bytes, choosing the charset like a browser would, except for
    declarations that the bytes contradict.

    Order: byte-order mark, then the caller's ``encoding`` (the HTTP header), then a
    ``<meta charset>`` or XML declaration near the start, then UTF-8.  Undecodable bytes become
    U+FFFD.  A declared UTF-16/32 on bytes without a BOM is treated as UTF-8 (an ASCII-compatible
    document cannot really be UTF-16).  Bytes that hold non-ASCII and are valid UTF-8 throughout
    are UTF-8 whatever else is declared: text in another charset almost never forms UTF-8's
    strict lead-and-continuation sequences (in cp1252 they read as pairs such as "Ã¼"), while a
    page re-encoded or served as UTF-8 under a stale label is common; decoding it by the label
    would give the same page two texts, one of them garbled.  (7-bit charsets such as
    ISO-2022-JP have no non-ASCII bytes and keep their label.)
    """
    codec: str | None = None
    for bom, name in _BOMS:
        if data.startswith(bom):
            codec = name
            data = data[len(bom) :]
            break
    bom_free = codec is None
    if codec is None:
        codec = codec_name(encoding)
        if codec is None:
            head = data[:_SNIFF_BYTES]
            match = _XML_DECL_RE.search(head) or _META_CHARSET_RE.search(head)
            codec = codec_name(match.group(1)) if match else None
        if codec is not None and codec.startswith(("utf-16", "utf-32")):
            codec = "utf-8"
    if codec is None or codec == "utf-8" or (bom_free and _is_utf8_beyond_ascii(data)):
        # libxml2 replaces invalid UTF-8 sequences and NUL bytes by U+FFFD on its own.
        return data
    try:
        return data.decode(codec, "replace").encode("utf-8", "replace")
    except Exception:  # a codec that fails even in "replace" mode: treat as UTF-8
        return data


def utf8_document(html: bytes | str, encoding: str | None = None) -> bytes | None:
    """The document as the UTF-8 bytes the parser reads (charset chosen by :func:`to_utf8`; text
    is encoded as is), or ``None`` when there is nothing to parse (empty, whitespace only, not
    text)."""
    if isinstance(html, str):
        data = html.encode("utf-8", "replace")
    elif isinstance(html, (bytes, bytearray, memoryview)):
        data = to_utf8(bytes(html), encoding)
    else:
        return None
    if not data or data.isspace():  # (stops at the first non-space byte; strip() would copy)
        return None
    return data
