"""Parsed trees to main text: the compiled extractor's Python face.

:func:`extract` and :func:`extract_main_text` run the compiled extractor
(:mod:`neardup_scrapy.core.native.extract`, whose docstring states its rules) over a parsed
tree without modifying it (Scrapy's spider parses the same tree later); :func:`html_to_text`
reads a page whole. Reading a page (charset, parse, depth) is :mod:`.reading`'s; its names are
re-exported here for the callers that know them from this module.

Every function here is total: junk input gives an empty result, never an exception.
"""

from __future__ import annotations

import threading
from typing import Any, Final, NamedTuple, cast

from lxml import etree

from .charset import utf8_document
from .native.extract import Extractor
from .reading import (
    MAX_ATTRIBUTES,
    ParseTimeout,
    cap_attributes,
    flatten_tags,
    parse_html,
    parse_plain,
    parse_utf8,
)

__all__ = [
    "MAX_ATTRIBUTES",
    "Extraction",
    "ParseTimeout",
    "cap_attributes",
    "extract",
    "extract_main_text",
    "flatten_tags",
    "html_to_text",
    "parse_html",
    "parse_plain",
    "parse_utf8",
    "tree_root",
    "utf8_document",
]

DEFAULT_MAX_CHARS: Final = 500_000
_local = threading.local()

# --------------------------------------------------------------------------------------------
# Main-content extraction (compiled)
# --------------------------------------------------------------------------------------------


class Extraction(NamedTuple):
    """What the extractor found on a page.

    Attributes:
        status: ``"ok"``, ``"empty"`` (no visible text) or ``"timeout"``.
        text: the main text, whitespace folded.
        heading: the page's heading (first ``<h1>`` outside chrome, else the first short
            title-classed element).
        title: the page's ``<title>``.
        canonical: the page's ``<link rel=canonical>`` href.
    """

    status: str
    text: str
    heading: str
    title: str
    canonical: str


def _extractor() -> Extractor:
    extractor = getattr(_local, "extractor", None)
    if extractor is None:
        extractor = _local.extractor = Extractor()
    return cast(Extractor, extractor)


def tree_root(tree: Any) -> etree._Element | None:
    """The root element of an lxml element or element tree (``None`` for anything else)."""
    if isinstance(tree, etree._ElementTree):
        tree = tree.getroot()
    if isinstance(tree, etree._Element) and isinstance(tree.tag, str):
        return tree
    return None


def extract(root: Any, max_chars: int = DEFAULT_MAX_CHARS, timeout: float = 0.0) -> Extraction:
    """Extract the main text of a parsed page (read-only on ``root``); see the native extractor.

    Args:
        root: an lxml element (a tree's root, e.g. Scrapy's ``response.selector.root``) or tree.
        max_chars: cap on the length of the text.
        timeout: seconds the extraction may take (0: no limit).
    """
    element = tree_root(root)
    if element is None:
        return Extraction("empty", "", "", "", "")
    return Extraction(*_extractor().extract(element, max_chars, timeout))


def extract_main_text(root: Any, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The main text of a parsed page (``""`` when it has none)."""
    return extract(root, max_chars).text


def html_to_text(html: bytes | str, encoding: str | None = None, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Parse ``html`` and return its main text (see :func:`extract`); ``""`` if unparseable."""
    root = parse_plain(html, encoding)
    if root is None:
        return ""
    return extract(root, max_chars).text
