# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Word tokens of a text and their seeded 64-bit hashes, in one pass over its UTF-8 bytes.

A token is a maximal run of word characters (Unicode ``\\w``), after Unicode NFKC and case
folding, except in scripts written without spaces between words (Chinese, Japanese kana,
Thai, Lao, Khmer, Myanmar...), where every character is a token of its own: a Chinese
sentence is then a sequence of tokens like an English one, and shingles of five of them
compare as well.

ASCII runs are lower-cased and hashed in C. A *piece* holding non-ASCII bytes (a maximal run of
word bytes and bytes >= 0x80, between ASCII separators) is folded in C too, character by
character from a table built once per process from Python's own Unicode data
(:func:`fold_classes`: Latin, Greek, Cyrillic and the other alphabets, punctuation, symbols,
Hangul, full-width forms; Chinese and Japanese characters by :data:`SIMPLE_RANGES`). A piece
with a character the table leaves out (a combining mark, a character that composes with the one
before it) is normalised by :func:`normalize_piece` once per distinct piece and process: NFKC
composes a character only with the marks that follow it, and the ASCII separators around a
piece are separators either way, so normalising pieces alone gives the tokens of normalising
the whole text.

Numbers are content: digits are kept, except in **calendar dates and times of day**, which
change between two fetches of one page (``2024-03-01``, ``01/03/2024``, ``3 March 2024``,
``March 3, 2024``, ``12:30:05``, ``2024年3月1日``, ``5 hours ago``): their digits become ``0``.
Version numbers (``1.63.0``), sizes and counts are left alone.

The module is one extension split by concern into the files it includes (``_tokens/``):
normalising a piece in Python and the characters that are tokens alone (``normalise.pxi``), the
table of the characters folded in C (``fold.pxi``), the pieces holding non-ASCII bytes
(``pieces.pxi``) and the masking of dates (``dates.pxi``); the one pass over the bytes
(:class:`Tokenizer`) is here, its fields declared in ``tokens.pxd``.
"""

import re
import unicodedata

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy, memset

from neardup_scrapy.core.native._common cimport U64Buf, hash_bytes, mix64, u64buf_push

cdef enum:
    TK_WORD = 0
    TK_DIGITS = 1
    TK_OTHER = 2

cdef enum:
    BC_SEP = 0      # ASCII other than word characters and whitespace
    BC_SPACE = 1    # ASCII whitespace
    BC_WORD = 2     # a-z and _
    BC_UPPER = 3    # A-Z
    BC_DIGIT = 4    # 0-9
    BC_HIGH = 5     # a byte of a non-ASCII character

#: The class of every byte value (one table lookup per byte).
cdef uint8_t _byte_class[256]
for _b in range(256):
    _byte_class[_b] = (
        BC_HIGH if _b >= 0x80 else BC_SPACE if _b in (9, 10, 11, 12, 13, 32) else BC_DIGIT if 48 <= _b <= 57
        else BC_UPPER if 65 <= _b <= 90 else BC_WORD if 97 <= _b <= 122 or _b == 95 else BC_SEP
    )


include "_tokens/normalise.pxi"
include "_tokens/fold.pxi"
include "_tokens/pieces.pxi"
include "_tokens/dates.pxi"


cdef class Tokenizer:
    """Seeded token hashes of texts (see the module docstring).

    Args:
        seed: the hash seed.
        mask_digits: replace every digit by ``0`` (the old, blunt option; off by default).
        mask_dates: replace the digits of dates and times by ``0`` (on by default).
        char_mode: every non-space character is a token (``shingle_kind="char"``).
    """

    def __cinit__(self, uint64_t seed, bint mask_digits=False, bint mask_dates=True, bint char_mode=False):
        self.seed = seed
        self.mask_digits = mask_digits
        self.mask_dates = mask_dates and not mask_digits
        self.char_mode = char_mode
        self.memo = <PieceMemo *>calloc(1, sizeof(PieceMemo))
        if self.memo == NULL:
            raise MemoryError()
        self.normalize_piece = normalize_piece
        self.meta = NULL
        self.cap_meta = 0
        self.lower = NULL
        self.cap_lower = 0
        self.fold_buf = NULL
        self.cap_fold = 0
        if not _fold_ready:
            _build_fold_table()
        self.zero_hash = hash_bytes(<const unsigned char *>b"0", 1, seed)
        memset(&self.months, 0, sizeof(WordSet))
        memset(&self.weekdays, 0, sizeof(WordSet))
        memset(&self.units, 0, sizeof(WordSet))
        for w in MONTHS.split():
            _set_add(&self.months, self._hash_word(w))
        for w in WEEKDAYS.split():
            _set_add(&self.weekdays, self._hash_word(w))
        for w in UNITS.split():
            _set_add(&self.units, self._hash_word(w))
        self.ago_hash = self._hash_word("ago")

    def __dealloc__(self):
        free(self.memo)
        free(self.meta)
        free(self.lower)
        free(self.fold_buf)

    def _hash_word(self, str word):
        cdef bytes b = " ".join(normalize_piece(word)).encode("utf-8")
        return hash_bytes(<const unsigned char *>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), self.seed)

    cdef int _emit(self, U64Buf *out, uint64_t h, uint8_t kind, uint8_t ndigits, uint8_t sep, uint32_t value) except -1 nogil:
        cdef TokMeta *grown
        cdef TokMeta *m
        if out.len >= self.cap_meta:
            self.cap_meta = self.cap_meta * 2 if self.cap_meta else 1024
            grown = <TokMeta *>realloc(self.meta, self.cap_meta * sizeof(TokMeta))
            if grown == NULL:
                with gil:
                    raise MemoryError()
            self.meta = grown
        m = &self.meta[out.len]
        m.kind = kind
        m.ndigits = ndigits
        m.sep = sep
        m.masked = 0
        m.glued = self.pending_glue
        self.pending_glue = 0
        m.value = value
        if u64buf_push(out, h) < 0:
            with gil:
                raise MemoryError()
        return 0

    cdef int tokenize(self, const unsigned char *s, size_t n, U64Buf *out) except -1 nogil:
        """Append the token hashes of the UTF-8 text ``s[:n]`` to ``out``.

        One pass over the bytes by class (:data:`_byte_class`): an ASCII word is lower-cased
        into a buffer and hashed as it ends; a piece with non-ASCII bytes goes to :func:`_piece`.
        """
        cdef size_t i = 0, j, seps = 0, colons = 0
        cdef unsigned char c, sepc = 32
        cdef bint spaced = False
        cdef uint8_t t
        cdef bint high, digits
        cdef uint32_t value
        cdef unsigned char *lower
        cdef unsigned char *grown
        if n > self.cap_lower:
            grown = <unsigned char *>realloc(self.lower, n)
            if grown == NULL:
                with gil:
                    raise MemoryError()
            self.lower = grown
            self.cap_lower = n
        lower = self.lower
        while i < n:
            c = s[i]
            t = _byte_class[c]
            if t <= BC_SPACE:
                if t == BC_SEP:
                    seps += 1
                    sepc = c
                    colons += c == 58
                    if self.char_mode:
                        self._emit(out, hash_bytes(s + i, 1, self.seed), TK_OTHER, 0, 32, 0)
                else:
                    spaced = True
                i += 1
                continue
            # a qualified name: tokens joined by one '.' or by '::', with no space between
            self.pending_glue = not spaced and ((seps == 1 and sepc == 46) or (seps == 2 and colons == 2))
            # a piece: the separator before it is its one non-space ASCII byte, if one
            j = i
            high = False
            digits = True
            value = 0
            while j < n:
                c = s[j]
                t = _byte_class[c]
                if t <= BC_SPACE:
                    break
                if t == BC_DIGIT:
                    if value < 100000000:
                        value = value * 10 + (c - 48)
                    lower[j - i] = 48 if self.mask_digits else c
                elif t == BC_UPPER:
                    digits = False
                    lower[j - i] = c + 32
                elif t == BC_HIGH:
                    high = True
                else:
                    digits = False
                    lower[j - i] = c
                j += 1
            if high or self.char_mode:
                _piece(self, s + i, j - i, out, sepc if seps <= 1 else 0)
            else:
                self._emit(
                    out,
                    hash_bytes(lower, j - i, self.seed),
                    TK_DIGITS if digits else TK_WORD,
                    <uint8_t>min(j - i, 255),
                    sepc if seps <= 1 else 0,
                    value,
                )
            seps = colons = 0
            sepc = 32
            spaced = False
            self.pending_glue = 0
            i = j
        if self.mask_dates and out.len:
            _mask_dates(self, out)
        return 0

    cdef void join_names(self, U64Buf *out) noexcept nogil:
        """Make each dotted number (``3.19.3``, ``2_74``) and each qualified name
        (``scipy.sparse.csr_matrix.mean``, ``std::ptr::swap``, ``GHC.StableName``) of the text just
        tokenized into ``out`` one token. Names (headings, titles) are compared as sets of words,
        and a qualified name or a version number names one thing: as separate words,
        ``scipy.sparse.bsr_array.mean`` shares three of four words with ``scipy.sparse.csr_array.mean``,
        and ``3.19.3`` is a subset of ``3.19.1`` (numbers are content)."""
        cdef TokMeta *m = self.meta
        cdef uint64_t *h = out.data
        cdef size_t n = out.len, k, w = 0
        cdef bint dotted_number, numeric = False
        cdef uint64_t top = 1ULL << 63
        for k in range(n):
            dotted_number = (
                m[k].kind == TK_DIGITS and m[k - 1].kind == TK_DIGITS and (m[k].sep == 46 or m[k].sep == 95)
            ) if k else False
            if w and (dotted_number or m[k].glued):
                h[w - 1] = mix64(h[w - 1] * 0x9E3779B97F4A7C15ULL ^ h[k])
                numeric = numeric and m[k].kind == TK_DIGITS
            else:
                if w:
                    h[w - 1] = (h[w - 1] | top) if numeric else (h[w - 1] & ~top)
                h[w] = h[k]
                numeric = m[k].kind == TK_DIGITS
                w += 1
        if w:
            h[w - 1] = (h[w - 1] | top) if numeric else (h[w - 1] & ~top)
        out.len = w

    # -- Python access ---------------------------------------------------------------------------
    def hashes(self, text):
        """The token hashes of ``text`` (``str`` or UTF-8 ``bytes``), as bytes of little-endian uint64."""
        cdef bytes data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        cdef U64Buf out
        out.data = NULL
        out.len = out.cap = 0
        try:
            self.tokenize(<const unsigned char *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), &out)
            return PyBytes_FromStringAndSize(<const char *>out.data, out.len * 8) if out.len else b""
        finally:
            free(out.data)

    def word_hash(self, str token):
        """The hash of one normalised token (as :meth:`hashes` gives it)."""
        cdef bytes b = token.encode("utf-8", "surrogatepass")
        return hash_bytes(<const unsigned char *>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), self.seed)
