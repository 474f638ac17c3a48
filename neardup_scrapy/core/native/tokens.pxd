# cython: language_level=3
from libc.stdint cimport uint8_t, uint32_t, uint64_t

from neardup_scrapy.core.native._common cimport U64Buf

cdef struct TokMeta:
    uint8_t kind        # TK_WORD, TK_DIGITS or TK_OTHER
    uint8_t ndigits     # TK_DIGITS: number of digits (capped at 255)
    uint8_t sep         # the one non-space ASCII byte between this token and the previous one,
                        # 32 when only whitespace, 0 when more or a non-ASCII separator
    uint8_t masked
    uint8_t glued       # 1 when joined to the previous token by '.' or '::' alone (a qualified name)
    uint32_t value      # TK_DIGITS: the number (capped)


cdef struct WordSet:
    uint64_t keys[256]      # open addressing on the hash's top byte; 0 = empty


cdef enum:
    PIECE_SLOTS = 1 << 16     # non-ASCII pieces remembered (open addressing, kept <= 3/4 full)
    PIECE_HASHES = 1 << 20    # their token hashes remembered, in all


cdef struct PieceMemo:
    # non-ASCII piece -> its token hashes, readable without the GIL; 128-bit fingerprints
    uint64_t keys[PIECE_SLOTS]      # first fingerprint, never 0 (0: empty slot)
    uint64_t checks[PIECE_SLOTS]    # second fingerprint
    uint32_t starts[PIECE_SLOTS]    # the hashes: hashes[starts[i] : starts[i] + counts[i]]
    uint32_t counts[PIECE_SLOTS]
    uint32_t used
    uint32_t nhashes
    uint64_t hashes[PIECE_HASHES]


cdef class Tokenizer:
    cdef uint64_t seed
    cdef bint mask_digits
    cdef bint mask_dates
    cdef bint char_mode
    cdef PieceMemo *memo
    cdef object normalize_piece # str -> list[str]: the normalised tokens of one piece
    cdef uint64_t zero_hash
    cdef WordSet months
    cdef WordSet weekdays
    cdef WordSet units
    cdef uint64_t ago_hash
    cdef TokMeta *meta
    cdef size_t cap_meta
    cdef unsigned char *lower
    cdef size_t cap_lower
    cdef unsigned char *fold_buf
    cdef size_t cap_fold
    cdef uint8_t pending_glue   # the glue of the next token emitted (see TokMeta.glued)

    cdef int tokenize(self, const unsigned char *s, size_t n, U64Buf *out) except -1 nogil
    cdef int _emit(self, U64Buf *out, uint64_t h, uint8_t kind, uint8_t ndigits, uint8_t sep, uint32_t value) except -1 nogil
    cdef void join_names(self, U64Buf *out) noexcept nogil
