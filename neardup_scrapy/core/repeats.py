"""Sketches of recently seen page bodies, so a byte-identical body is not parsed again.

Crawls fetch the same bytes under many urls (session ids, tracking parameters, mirror hosts
serving one file). A 128-bit digest of the body costs about 1/100 of parsing it; on a hit the
detector reuses the sketch it computed for that body and goes straight to the index, which
then finds the exact duplicate as it would have. Verdicts are unchanged, only the work before
the index lookup is skipped.
"""

from __future__ import annotations

from collections import OrderedDict

from .native.sketch import digest_bytes, digest_text
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
