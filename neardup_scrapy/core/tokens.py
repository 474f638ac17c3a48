"""Hashes of a text's normalised word tokens, in a few C-level passes (the detector's hot path).

The result equals ``token_hashes(tokenize(normalize_text(text, mask_digits)), seed)``: NFKC, case
folding, decimal digits masked to ``0``, the ``\\w+`` runs, each hashed with seeded xxh3-64.
Doing that with ``unicodedata`` and ``re`` over whole pages and hashing token by token costs
more than twice as much (0.46 s against 0.21 s over the eval-dev texts). A page is encoded to
UTF-8 once, ASCII is handled by one ``bytes.translate`` and only the pieces holding non-ASCII
characters are normalised on their own. Those pieces are found with ``bytes.find`` (a
``memchr``) on a copy of the text with every byte >= 0x80 mapped to 0x80, so the ASCII words
around them cost no Python call at all.

Normalising such a piece (a maximal run between ASCII separators) alone gives the same tokens
as normalising the whole text: NFKC composes a character only with the combining marks that
follow it, and the only ASCII separators with compositions (``<``, ``=`` and ``>`` with U+0338)
compose to symbols, which are separators either way. A multi-byte character is never cut, as
all its bytes are >= 0x80.
"""

from __future__ import annotations

from itertools import repeat

import numpy as np
import numpy.typing as npt
import xxhash

from .text import normalize_text, tokenize

__all__ = ["WordHasher"]

U64 = npt.NDArray[np.uint64]


def _ascii_table(mask_digits: bool) -> bytes:
    """``bytes.translate`` table: ASCII word characters lower-cased (digits to ``0`` when masked),
    other ASCII characters to a space, bytes >= 0x80 unchanged."""
    table = bytearray(range(256))
    for code in range(128):
        char = chr(code)
        if char.isdigit():
            table[code] = ord("0") if mask_digits else code
        elif char.isalpha() or char == "_":
            table[code] = ord(char.lower())
        else:
            table[code] = ord(" ")
    return bytes(table)


def _normalize_piece(piece: str, mask_digits: bool) -> str:
    """Tokens of one piece with non-ASCII characters, space-joined (the plain definition)."""
    return " ".join(tokenize(normalize_text(piece, mask_digits)))


#: Normalised tokens of non-ASCII pieces (UTF-8, space-joined), by ``mask_digits``.
_PIECE_MEMOS: dict[bool, dict[bytes, bytes]] = {}
#: ``bytes.translate`` table marking non-ASCII bytes: every byte >= 0x80 becomes 0x80.
_MARK_HIGH = bytes(range(128)) + b"\x80" * 128


class WordHasher:
    """Seeded xxh3-64 hashes of a text's normalised word tokens.

    ``WordHasher(seed)(text)`` equals ``token_hashes(tokenize(normalize_text(text)), seed)``:

    1. The text is encoded to UTF-8; one ``bytes.translate`` lower-cases ASCII letters, masks
       ASCII digits and turns every other ASCII character into a space, which leaves pieces
       (runs of non-space bytes) between spaces.
    2. Each piece holding non-ASCII bytes is replaced by its normalised tokens (none, one or
       several; memoised per process, as words repeat), before the split.
    3. Every token is hashed by a C-level ``map``. (Hashing all tokens as numpy arrays, with
       XXH3's short-input formulas, was measured no faster at a thousand tokens per page.)

    Args:
        seed: The hash seed.
        mask_digits: Replace every decimal digit by ``0`` (as ``normalize_text`` does).
        max_entries: Size of the memo of normalised non-ASCII pieces that triggers a reset.
    """

    def __init__(self, seed: int, mask_digits: bool = True, max_entries: int = 100_000) -> None:
        self._seed = seed
        self._mask_digits = mask_digits
        self._table = _ascii_table(mask_digits)
        # A pure function of the piece, so hashers of one process share it (seed-independent).
        self._pieces = _PIECE_MEMOS.setdefault(mask_digits, {})
        self._max_entries = max_entries

    def __call__(self, text: str) -> U64:
        """The token hashes of ``text``, in order (uint64)."""
        data = text.encode("utf-8", "surrogatepass").translate(self._table)
        if not data.isascii():
            data = self._normalize_pieces(data)
        tokens = data.split()
        return np.fromiter(
            map(xxhash.xxh3_64_intdigest, tokens, repeat(self._seed)), dtype=np.uint64, count=len(tokens)
        )

    def _normalize_pieces(self, data: bytes) -> bytes:
        """``data`` (translated) with each piece that holds non-ASCII bytes replaced by its
        normalised tokens, space-joined."""
        if len(self._pieces) > self._max_entries:
            self._pieces.clear()
        memo = self._pieces
        find_high = data.translate(_MARK_HIGH).find
        out: list[bytes] = []
        done = 0  # data[:done] is in out
        while (high := find_high(0x80, done)) >= 0:
            start = data.rfind(b" ", done, high) + 1  # the piece around the byte
            end = data.find(b" ", high)
            if end < 0:
                end = len(data)
            piece = data[start:end]
            value = memo.get(piece)
            if value is None:
                text = _normalize_piece(piece.decode("utf-8", "surrogatepass"), self._mask_digits)
                value = memo[piece] = text.encode("utf-8", "surrogatepass")
            out += (data[done:start], value)
            done = end
        out.append(data[done:])
        return b"".join(out)
