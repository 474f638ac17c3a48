"""The HTML report's cells: escaping, urls shown inert, numbers and shares (see :mod:`.html`)."""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from . import _fmt
from .escapes import escape_char, is_invisible, shown

#: Characters of a url shown (the link keeps up to MAX_HREF characters).
MAX_URL_CHARS = 160
MAX_HREF = 2048
_SAFE_HREF = re.compile(r"^https?://[^\s\"'<>`]+$", re.IGNORECASE)


def _e(value: Any) -> str:
    """Escape any value for HTML text and attribute context."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _visible(text: str) -> str:
    """``text`` escaped for HTML, its invisible characters shown as marked escapes."""
    if text.isprintable():
        return _e(text)
    out = []
    for char in text:
        if is_invisible(char):
            name = unicodedata.name(char, "")
            title = f"U+{ord(char):04X} {name}".rstrip()
            out.append(f'<span class="esc" title="{_e(title)}">{_e(escape_char(char))}</span>')
        else:
            out.append(_e(char))
    return "".join(out)


def _isolated(text: str, limit: int) -> str:
    """A url or host as text: shortened, isolated left to right, invisible characters shown."""
    return f'<bdi dir="ltr">{_visible(_fmt.clip(text, limit))}</bdi>'


def _href(url: str) -> str:
    """A link target with its invisible characters percent-encoded (the same address)."""
    if url.isprintable():
        return url
    return "".join(
        "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) if is_invisible(c) else c
        for c in url
    )


def _url(value: Any, limit: int = MAX_URL_CHARS) -> str:
    """A url as a link (http/https only) or plain text; always escaped, isolated and shortened.

    Links send no referrer (the page's referrer policy) and open in the same tab.
    """
    url = _str(value)
    text = _isolated(url, limit)
    title = f' title="{_e(shown(_fmt.clip(url, MAX_HREF)))}"' if len(url) > limit else ""
    if len(url) <= MAX_HREF and _SAFE_HREF.match(url):
        return f'<a class="url" href="{_e(_href(url))}"{title}>{text}</a>'
    return f'<span class="url"{title}>{text}</span>'


def _share_cell(value: Any) -> str:
    number = _fmt.as_float(value)
    width = 0.0 if number is None else min(max(number, 0.0), 1.0) * 100.0
    data = "" if number is None else f"{number:.4f}"
    # One element per cell: the bar is the cell's ::before, filled up to --s.
    return f'<td class="num share" data-v="{data}" style="--s:{width:.1f}%">{_fmt.share(value)}</td>'


def _num_cell(value: Any) -> str:
    return f'<td class="num" data-v="{_fmt.as_int(value)}">{_fmt.count(value)}</td>'


def _more(shown: int, total: int, what: str) -> str:
    if total <= shown:
        return ""
    return f'<p class="note">{_fmt.count(total - shown)} more {what} not listed.</p>'


# -- charts ------------------------------------------------------------------------------------
