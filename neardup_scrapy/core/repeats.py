"""Sketches of recently seen page bodies, so a byte-identical body is not parsed again.

Crawls fetch the same bytes under many urls (session ids, tracking parameters, mirror hosts
serving one file). A 128-bit digest of the body costs about 1/100 of parsing it; on a hit the
detector reuses the sketch it computed for that body and goes straight to the index, which
then finds the exact duplicate as it would have. Verdicts are unchanged, only the work before
the index lookup is skipped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .analysis import PageAnalysis, PageAnalyzer
from .hosts import host_of
from .native.sketch import digest_bytes, digest_text
from .params import DetectorParams
from .sketch import Sketch

#: Characters of the main text kept per entry (for the report's side-by-side excerpts).
EXCERPT_CHARS = 2000


class RepeatCache:
    """A bounded LRU map ``body digest -> (main-text excerpt, sketch or None for no text)``.

    Args:
        max_entries: Bodies remembered (about 3 KB each); 0 disables the cache.
        seed: Hash seed of the digest.
    """

    def __init__(self, max_entries: int, seed: int) -> None:
        self.max_entries = max_entries
        self._seed = seed
        self._entries: OrderedDict[bytes, tuple[str, Sketch | None]] = OrderedDict()
        self.hits = 0

    def key(self, html: bytes | str, encoding: str | None, salt: str) -> bytes:
        """The key of a body as decoded with ``encoding``; ``salt`` separates scopes (the host)."""
        # a text is digested as Python stores it (no encoding pass); the key of a text and of
        # its bytes differ, and a crawl hands the detector one or the other throughout
        digest = digest_text(html, self._seed) if isinstance(html, str) else digest_bytes(html, self._seed)
        return b"\0".join(
            (digest, (encoding or "").encode("utf-8", "replace"), salt.encode("utf-8", "replace"))
        )

    def get(self, key: bytes) -> tuple[str, Sketch | None] | None:
        """The entry of ``key`` (made most recent), or ``None``."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            self.hits += 1
        return entry

    def put(self, key: bytes, text: str, sketch: Sketch | None) -> None:
        """Remember the sketch (``None``: the body has no text) and the start of the main text."""
        if not self.max_entries:
            return
        self._entries[key] = (text[:EXCERPT_CHARS], sketch)
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class RepeatingAnalyzer:
    """A :class:`~.analysis.PageAnalyzer` behind a :class:`RepeatCache`: a body (``html``, also
    when given with ``tree``; with ``scope="host"``, on the same host) seen recently byte for
    byte is not parsed again, its analysis is rebuilt from the cache.

    Args:
        params: the detector parameters.
        max_entries: bodies remembered; 0 disables the cache.
    """

    def __init__(self, params: DetectorParams, max_entries: int) -> None:
        self.analyzer = PageAnalyzer(params)
        self.cache = RepeatCache(max_entries, params.seed)
        self._per_host = params.scope == "host"

    def __call__(
        self,
        url: str,
        html: bytes | str | None,
        *,
        text: str | None,
        tree: Any,
        encoding: str | None,
        started: float | None,
        parse: Callable[[], Any] | None,
    ) -> PageAnalysis:
        """The analysis of a page (arguments as for :class:`~.analysis.PageAnalyzer`)."""
        key = None
        if text is None and html is not None and self.cache.max_entries:
            host = host_of(url)
            key = self.cache.key(html, encoding, host if self._per_host else "")
            repeat = self.cache.get(key)
            if repeat is not None:
                excerpt, sketch = repeat
                return PageAnalysis(host, excerpt, sketch, None if sketch is not None else "no text")
        analysis = self.analyzer(
            url, html, text=text, tree=tree, encoding=encoding, started=started, parse=parse
        )
        if key is not None and analysis.skip_reason in (None, "no text"):
            self.cache.put(key, analysis.excerpt, analysis.sketch)
        return analysis
