"""Strings shown to people -- urls and hosts above all -- shown as what they are.

Some characters are not drawn as themselves but steer how text is shown: controls (C0, DEL,
C1: a terminal runs escape sequences made of them), bidi embeddings, overrides, isolates and
marks (a link to ``…\\u202etxt.exe`` reads ``…exe.txt``), zero-width, byte-order and tag
characters, line and paragraph separators, lone surrogates, unassigned code points. The
principle: wherever a url or a host from a crawl is shown (a terminal, a log, the HTML report),
each such character is shown as its code point (``\\u202e``), so the text reads as it is and
drives nothing; the data (the JSON report, the exports) keeps the url as crawled.

Standard library only, so the report renderers and the command line import it without the
detector.
"""

from __future__ import annotations

import unicodedata

__all__ = ["INVISIBLE_CATEGORIES", "escape_char", "is_invisible", "shown"]

#: Unicode categories of characters that are not drawn as themselves but steer how text is
#: shown: controls (Cc: C0, DEL, C1), format characters (Cf: bidi embeddings, overrides,
#: isolates and marks, zero-width joiners, tag characters), line and paragraph separators
#: (Zl, Zp), lone surrogates (Cs) and unassigned code points (Cn).
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})


def is_invisible(char: str) -> bool:
    """Whether ``char`` (one character) is of :data:`INVISIBLE_CATEGORIES`."""
    return unicodedata.category(char) in INVISIBLE_CATEGORIES


def escape_char(char: str) -> str:
    """``\\x1b``, ``\\u202e`` or ``\\U000e0041``: a character written as its code point."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: str) -> str:
    """``text`` with every invisible character (see :func:`is_invisible`) written as an escape:
    safe to print on a terminal and unambiguous to read."""
    if text.isprintable():  # no character of those categories (the common case)
        return text
    return "".join(escape_char(c) if is_invisible(c) else c for c in text)
