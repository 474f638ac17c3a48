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
"""

import re
import unicodedata

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy, memset

from neardup_scrapy.core.native._common cimport U64Buf, hash_bytes, mix64, u64buf_push

# -- the Python half: normalisation of non-ASCII pieces -----------------------------------------------
#: Scripts written without spaces between words: every character is a token.
NO_SPACE_SCRIPTS = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK unified ideographs extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
_TOKEN_RE = re.compile(f"[{NO_SPACE_SCRIPTS}]|[^\\W{NO_SPACE_SCRIPTS}]+")
_NONSPACE_RE = re.compile(r"\S")
#: Digits of a date or time written with CJK unit characters (年 year, 月 month, 日 day...).
_CJK_DATE_RE = re.compile(r"\d+(?=[年月日時分秒])")
_DIGIT_RE = re.compile(r"\d")


def normalize_piece(str piece, bint mask_digits=False, bint mask_dates=True, bint char_mode=False):
    """The tokens of one piece of text: NFKC, case folding (repeated until stable, as the two do
    not commute for a few characters), then word runs, with a character of a script written
    without spaces as one token; digits masked to ``0`` as asked (``char_mode``: every
    non-space character is a token)."""
    text = unicodedata.normalize("NFKC", piece).casefold()
    for _ in range(3):
        if unicodedata.is_normalized("NFKC", text):
            break
        text = unicodedata.normalize("NFKC", text).casefold()
    if mask_digits:
        text = _DIGIT_RE.sub("0", text)
    elif mask_dates:
        text = _CJK_DATE_RE.sub("0", text)
    if char_mode:
        return _NONSPACE_RE.findall(text)
    return _TOKEN_RE.findall(text)


#: Month and weekday names of the languages most crawled (a date's words change with its digits),
#: and the units of "N hours ago".
MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "januar februar märz mai juni juli oktober dezember "
    "janvier février mars avril juin juillet août septembre octobre novembre décembre "
    "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre diciembre "
    "gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre "
    "janeiro fevereiro março maio junho julho setembro outubro novembro dezembro "
    "januari februari maart mei augustus"
)
WEEKDAYS = (
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun "
    "montag dienstag mittwoch donnerstag freitag samstag sonntag "
    "lundi mardi mercredi jeudi vendredi samedi dimanche "
    "lunes martes miércoles jueves viernes sábado domingo"
)
UNITS = "second seconds sec secs minute minutes min mins hour hours hr hrs day days week weeks month months year years"

#: Characters U+3000..U+9FFF that are *simple*: in a script written without spaces, unchanged by
#: NFKC and case folding, one token alone, a starter (not a combining mark), and not a unit that
#: marks the digits before it as a date (年 月 日 時 分 秒). Such a character is a token by itself
#: whatever its neighbours: NFKC composes a starter only with what follows it, and in these blocks
#: only kana compose, with a following voiced sound mark (checked where the text is read).
cdef uint32_t _SIMPLE_BASE = 0x3000
cdef uint8_t _simple[0x7000]


def _simple_table():
    """The code points of the simple characters (computed from :func:`normalize_piece`)."""
    def simple(str chars):
        return (
            unicodedata.normalize("NFKC", chars) == chars
            and chars.casefold() == chars
            and _TOKEN_RE.findall(chars) == list(chars)
            and not any(unicodedata.combining(c) for c in chars)
        )
    units = set("年月日時分秒")
    found = []
    for lo, hi in ((0x3040, 0x3100), (0x31F0, 0x3200), (0x3400, 0x4DC0), (0x4E00, 0xA000)):
        block = "".join(chr(cp) for cp in range(lo, hi))
        if hi - lo > 1024 and simple(block):
            found.extend(cp for cp in range(lo, hi) if chr(cp) not in units)
            continue
        for cp in range(lo, hi):
            c = chr(cp)
            if c not in units and simple(c):
                found.append(cp)
    return found


#: The simple characters as ranges (half-open), checked against :func:`_simple_table` by a test:
#: hiragana (without the voiced sound marks and the digraph ゟ), katakana (without the digraph ヿ),
#: katakana phonetic extensions, CJK unified ideographs and extension A, less the date units.
SIMPLE_RANGES = ((0x3041, 0x3097), (0x309D, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x3200),
                 (0x3400, 0x4DC0), (0x4E00, 0xA000))
SIMPLE_EXCLUDED = "年月日時分秒"
for _lo, _hi in SIMPLE_RANGES:
    memset(&_simple[_lo - _SIMPLE_BASE], 1, _hi - _lo)
for _c in SIMPLE_EXCLUDED:
    _simple[ord(_c) - _SIMPLE_BASE] = 0

# -- characters folded in C ----------------------------------------------------------------------
#: Blocks whose characters the C path may read (any other non-ASCII character sends its run to
#: the Python path): the alphabets, punctuation and symbols up to the dingbats, CJK punctuation,
#: Hangul syllables and the full-width forms.
FOLD_RANGES = ((0x80, 0x2800), (0x3000, 0x3040), (0xAC00, 0xD7A4), (0xFF00, 0xFFF0))

cdef enum:
    FOLD_OTHER = 0   # read by the Python path
    FOLD_SEP = 1     # folds to separators only: ends a token
    FOLD_SAME = 2    # a word character that folding leaves alone
    FOLD_MAPPED = 3  # folds to other characters, word characters among them (kept in the pool)
    FOLD_DIGITS = 4  # flag: the folded text holds a digit (masked by the Python path when asked)

#: ``_fold[cp]``: the class in bits 0-1; for FOLD_MAPPED, bit 2 is set when the folded text
#: holds a digit, bits 3-8 are its UTF-8 length and the bits above its offset in ``_fold_pool``
#: (separators stored as a space). Filled once per process (on the first :class:`Tokenizer`),
#: from this Python's own Unicode tables.
cdef uint32_t _fold[0x10000]
cdef unsigned char _fold_pool[1 << 15]
cdef bint _fold_ready = False


def fold_classes():
    """``{code point: (class, folded text, holds a digit)}`` for the characters the C path reads;
    in the folded text, each separator is a space.

    The C path folds a run character by character, which is exact when folding a character
    alone gives what it gives inside any text. NFKC changes a character by its neighbours only
    through combining marks (reordered among themselves, composed with the starter before them)
    and through the second characters of canonical compositions (a Hangul vowel or final jamo,
    a few vowel signs), which compose with what comes before them. So a character qualifies
    when it and the first character it folds to are starters that compose with nothing before
    them (what follows inside its folded text was composed when it was folded alone, and the
    next character of the run starts with a starter too), and when it folds to word characters
    and separators only, none of a script written without spaces (each of whose characters is
    a token). Anything else stays on the Python path.
    """
    word = re.compile(f"[^\\W{NO_SPACE_SCRIPTS}]")
    separator = re.compile(f"[^\\w{NO_SPACE_SCRIPTS}]")  # a character of those scripts is a token
    digit = re.compile(r"\d")
    seconds = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul V and T jamo
    for cp in range(0x80, 0x10000):
        parts = unicodedata.decomposition(chr(cp)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(int(parts[1], 16))

    def composes(ch):
        return unicodedata.combining(ch) != 0 or ord(ch) in seconds

    found = {}
    for lo, hi in FOLD_RANGES:
        for cp in range(lo, hi):
            ch = chr(cp)
            folded = _fold_alone(ch)
            if composes(ch) or composes(folded[0]):
                continue
            marked = "".join(f if word.match(f) else " " if separator.match(f) else "\0" for f in folded)
            if "\0" in marked:
                continue
            digits = bool(digit.search(folded))
            kind = FOLD_SEP if not marked.strip() else FOLD_SAME if folded == ch and not digits else FOLD_MAPPED
            found[cp] = (kind, marked, digits)
    return found


def _fold_alone(str ch):
    """``ch`` after NFKC and case folding, as :func:`normalize_piece` folds it."""
    text = unicodedata.normalize("NFKC", ch).casefold()
    for _ in range(3):
        if unicodedata.is_normalized("NFKC", text):
            break
        text = unicodedata.normalize("NFKC", text).casefold()
    return text


def _build_fold_table():
    """Fill ``_fold`` and ``_fold_pool`` (once per process).

    No lock (none to inherit locked across a fork): the table is a function of this Python's
    Unicode data, so two threads building it at once write the same values, and
    ``_fold_ready`` is set after every entry is written.
    """
    global _fold_ready
    cdef Py_ssize_t used, size
    cdef bytes encoded
    entries = {}
    pool = bytearray()
    for cp, (kind, folded, digits) in fold_classes().items():
        if kind != FOLD_MAPPED:
            entries[cp] = kind
            continue
        encoded = folded.encode("utf-8")
        size = len(encoded)
        if size > 63 or len(pool) + size > sizeof(_fold_pool):
            continue  # left to the Python path
        entries[cp] = FOLD_MAPPED | (FOLD_DIGITS if digits else 0) | (size << 3) | (len(pool) << 9)
        pool += encoded
    for used in range(len(pool)):
        _fold_pool[used] = pool[used]
    for cp, entry in entries.items():
        _fold[cp] = entry
    _fold_ready = True


cdef inline bint _starter_at(const unsigned char *s, size_t n) noexcept nogil:
    """Whether the UTF-8 text ``s[:n]`` is empty or starts with ASCII or a simple character
    (conservative: ``False`` for anything else, which is then read by the slow path)."""
    cdef uint32_t cp
    if n == 0 or s[0] < 0x80:
        return True
    if n < 3 or s[0] < 0xE3 or s[0] > 0xE9 or (s[1] & 0xC0) != 0x80 or (s[2] & 0xC0) != 0x80:
        return False
    cp = ((<uint32_t>s[0] & 0x0F) << 12) | ((<uint32_t>s[1] & 0x3F) << 6) | (<uint32_t>s[2] & 0x3F)
    return _simple[cp - _SIMPLE_BASE]


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

    cdef int _piece(self, const unsigned char *s, size_t n, U64Buf *out, uint8_t sep) except -1 nogil:
        """Emit the tokens of a piece holding non-ASCII bytes.

        A *simple* character (see :func:`_simple_table`) is one token whatever surrounds it and
        its bytes are already normalised, so it is hashed here in C; the runs between simple
        characters go to :meth:`_normalised` (folded in C, or normalised in Python and
        memoised). Text in Chinese or Japanese is then hashed in C, character by character,
        like ASCII words; the tokens are the same as normalising the whole piece (a test
        compares them).
        """
        cdef size_t i = 0, start = 0
        cdef uint32_t cp
        cdef unsigned char c
        cdef bint first = True
        while i + 2 < n:
            c = s[i]
            if c < 0xE3 or c > 0xE9 or (s[i + 1] & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80:
                i += 1
                continue
            cp = ((<uint32_t>c & 0x0F) << 12) | ((<uint32_t>s[i + 1] & 0x3F) << 6) | (<uint32_t>s[i + 2] & 0x3F)
            if not _simple[cp - _SIMPLE_BASE] or (cp < 0x3100 and not _starter_at(s + i + 3, n - i - 3)):
                # kana compose with a voiced sound mark (U+3099, U+309A) among the combining
                # marks after them, in any order: they are read with those marks
                i += 3
                continue
            if i > start:
                self._normalised(s + start, i - start, out, sep if first else 32)
                first = False
            self._emit(out, hash_bytes(s + i, 3, self.seed), TK_OTHER, 0, sep if first else 32, 0)
            first = False
            i += 3
            start = i
        if n > start:
            self._normalised(s + start, n - start, out, sep if first else 32)
        return 0

    cdef int _normalised(self, const unsigned char *s, size_t n, U64Buf *out, uint8_t sep) except -1 nogil:
        """Emit the tokens of a run: folded in C when the table holds every character of it
        (:meth:`_fold_run`), else normalised in Python (:func:`normalize_piece`) and remembered
        by the run's 128-bit fingerprint: only a run not met before takes the GIL."""
        cdef PieceMemo *memo = self.memo
        cdef uint64_t key
        if self._fold_run(s, n, out, sep):
            return 0
        key = hash_bytes(s, n, self.seed ^ 0x6E6F726D616C31ULL) | 1
        cdef uint64_t check = hash_bytes(s, n, self.seed ^ 0x6E6F726D616C32ULL)
        cdef uint32_t slot = <uint32_t>(key & (PIECE_SLOTS - 1))
        cdef uint32_t k
        while memo.keys[slot] != key or memo.checks[slot] != check:
            if memo.keys[slot] == 0:
                with gil:
                    slot = self._learn(s, n, key, check, out, sep)
                if slot == PIECE_SLOTS:
                    return 0
                break
            slot = (slot + 1) & (PIECE_SLOTS - 1)
        for k in range(memo.counts[slot]):
            self._emit(out, memo.hashes[memo.starts[slot] + k], TK_OTHER, 0, sep if k == 0 else 32, 0)
        return 0

    cdef int _fold_run(self, const unsigned char *s, size_t n, U64Buf *out, uint8_t sep) except -1 nogil:
        """Emit the tokens of a run folded character by character in C (see :func:`fold_classes`);
        returns 0, emitting nothing, when a character of the run is not in the table (or the
        bytes are not UTF-8), which leaves the run to the Python path."""
        cdef size_t i = 0, w = 0, start, k = 0, width, size
        cdef unsigned char c
        cdef unsigned char *buf
        cdef uint32_t cp, entry
        if self.char_mode or not _fold_ready:
            return 0
        while i < n:
            if w + 64 > self.cap_fold:
                self._grow_fold(2 * (w + 64) + n)
            buf = self.fold_buf
            c = s[i]
            if c < 0x80:
                if _byte_class[c] <= BC_SPACE:
                    return 0  # not inside a piece: not this path's business
                if _byte_class[c] == BC_UPPER:
                    c += 32
                elif _byte_class[c] == BC_DIGIT and self.mask_digits:
                    c = 48
                buf[w] = c
                w += 1
                i += 1
                continue
            if 0xC2 <= c < 0xE0 and i + 1 < n and (s[i + 1] & 0xC0) == 0x80:
                cp = ((<uint32_t>c & 0x1F) << 6) | (<uint32_t>s[i + 1] & 0x3F)
                width = 2
            elif 0xE0 <= c < 0xF0 and i + 2 < n and (s[i + 1] & 0xC0) == 0x80 and (s[i + 2] & 0xC0) == 0x80:
                cp = ((<uint32_t>c & 0x0F) << 12) | ((<uint32_t>s[i + 1] & 0x3F) << 6) | (<uint32_t>s[i + 2] & 0x3F)
                width = 3
                if cp < 0x800:
                    return 0  # an overlong form: the Python path replaces it
            else:
                return 0
            entry = _fold[cp]
            if entry & 3 == FOLD_OTHER:
                return 0
            if entry & 3 == FOLD_SEP:
                buf[w] = 32
                w += 1
            elif entry & 3 == FOLD_SAME:
                memcpy(buf + w, s + i, width)
                w += width
            else:
                if entry & FOLD_DIGITS and self.mask_digits:
                    return 0
                size = (entry >> 3) & 63
                memcpy(buf + w, &_fold_pool[entry >> 9], size)
                w += size
            i += width
        # every character was read: the tokens are the runs between the separators
        buf = self.fold_buf
        start = 0
        for i in range(w + 1):
            if i == w or buf[i] == 32:
                if i > start:
                    self._emit(out, hash_bytes(buf + start, i - start, self.seed), TK_OTHER, 0, sep if k == 0 else 32, 0)
                    k += 1
                start = i + 1
        return 1

    cdef int _grow_fold(self, size_t need) except -1 nogil:
        cdef unsigned char *grown = <unsigned char *>realloc(self.fold_buf, need)
        if grown == NULL:
            with gil:
                raise MemoryError()
        self.fold_buf = grown
        self.cap_fold = need
        return 0

    cdef int _learn(self, const unsigned char *s, size_t n, uint64_t key, uint64_t check, U64Buf *out,
                    uint8_t sep) except -1:
        """Normalise a run in Python and remember its token hashes; returns its slot in the memo
        (emptied first when full, as a bounded cache), or ``PIECE_SLOTS`` for a run too long to
        remember, whose tokens are emitted here."""
        cdef PieceMemo *memo = self.memo
        cdef bytes tb
        cdef list tokens = self.normalize_piece(
            PyBytes_FromStringAndSize(<const char *>s, n).decode("utf-8", "replace"),
            self.mask_digits, self.mask_dates, self.char_mode,
        )
        cdef uint32_t count = <uint32_t>len(tokens), slot, k = 0
        if count > PIECE_HASHES // 4:
            for t in tokens:
                tb = (<str>t).encode("utf-8", "surrogatepass")
                self._emit(out, hash_bytes(<const unsigned char *>PyBytes_AS_STRING(tb), PyBytes_GET_SIZE(tb), self.seed),
                           TK_OTHER, 0, sep if k == 0 else 32, 0)
                k += 1
            return PIECE_SLOTS
        if memo.used >= PIECE_SLOTS * 3 // 4 or memo.nhashes + count > PIECE_HASHES:
            memset(memo.keys, 0, sizeof(memo.keys))
            memo.used = memo.nhashes = 0
        slot = <uint32_t>(key & (PIECE_SLOTS - 1))
        while memo.keys[slot] != 0:
            slot = (slot + 1) & (PIECE_SLOTS - 1)
        memo.keys[slot] = key
        memo.checks[slot] = check
        memo.starts[slot] = memo.nhashes
        memo.counts[slot] = count
        for t in tokens:
            tb = (<str>t).encode("utf-8", "surrogatepass")
            memo.hashes[memo.nhashes] = hash_bytes(<const unsigned char *>PyBytes_AS_STRING(tb), PyBytes_GET_SIZE(tb), self.seed)
            memo.nhashes += 1
        memo.used += 1
        return slot

    cdef int tokenize(self, const unsigned char *s, size_t n, U64Buf *out) except -1 nogil:
        """Append the token hashes of the UTF-8 text ``s[:n]`` to ``out``.

        One pass over the bytes by class (:data:`_byte_class`): an ASCII word is lower-cased
        into a buffer and hashed as it ends; a piece with non-ASCII bytes goes to :meth:`_piece`.
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
                self._piece(s + i, j - i, out, sepc if seps <= 1 else 0)
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
            self._mask_dates(out)
        return 0

    cdef void _mask_dates(self, U64Buf *out) noexcept nogil:
        """Replace the hashes of date and time digits (and of weekday names next to them) by the
        hash of ``0`` (see the module docstring)."""
        cdef TokMeta *m = self.meta
        cdef uint64_t *h = out.data
        cdef size_t n = out.len, k
        cdef uint8_t s1, s2
        for k in range(n):
            if m[k].kind != TK_DIGITS or m[k].masked:
                continue
            # time of day: H:MM[:SS]
            if (
                m[k].ndigits <= 2 and m[k].value <= 24 and k + 1 < n and m[k + 1].kind == TK_DIGITS
                and m[k + 1].ndigits == 2 and m[k + 1].sep == 58 and m[k + 1].value <= 59
            ):
                m[k].masked = m[k + 1].masked = 1
                if k + 2 < n and m[k + 2].kind == TK_DIGITS and m[k + 2].ndigits == 2 and m[k + 2].sep == 58:
                    m[k + 2].masked = 1
                continue
            if k + 2 < n and m[k + 1].kind == TK_DIGITS and m[k + 2].kind == TK_DIGITS:
                s1 = m[k + 1].sep
                s2 = m[k + 2].sep
                if s1 == s2 and (s1 == 45 or s1 == 47 or s1 == 46):
                    # YYYY-MM-DD
                    if (
                        m[k].ndigits == 4 and 1900 <= m[k].value <= 2099
                        and m[k + 1].ndigits <= 2 and 1 <= m[k + 1].value <= 12
                        and m[k + 2].ndigits <= 2 and 1 <= m[k + 2].value <= 31
                    ):
                        m[k].masked = m[k + 1].masked = m[k + 2].masked = 1
                        continue
                    # DD.MM.YYYY, MM/DD/YY and the like
                    if (
                        m[k].ndigits <= 2 and m[k + 1].ndigits <= 2 and 1 <= m[k].value <= 31
                        and 1 <= m[k + 1].value <= 31 and (m[k].value <= 12 or m[k + 1].value <= 12)
                        and (
                            (m[k + 2].ndigits == 4 and 1900 <= m[k + 2].value <= 2099)
                            or m[k + 2].ndigits == 2
                        )
                    ):
                        m[k].masked = m[k + 1].masked = m[k + 2].masked = 1
                        continue
            # N unit ago
            if k + 2 < n and _set_has(&self.units, h[k + 1]) and h[k + 2] == self.ago_hash:
                m[k].masked = 1
        # month names: the day and year next to them
        for k in range(n):
            if m[k].kind == TK_DIGITS or not _set_has(&self.months, h[k]):
                continue
            if k >= 1 and _day(&m[k - 1]):
                m[k - 1].masked = 1
            if k + 1 < n and _day(&m[k + 1]):
                m[k + 1].masked = 1
                if k + 2 < n and _year(&m[k + 2]):
                    m[k + 2].masked = 1
            elif k + 1 < n and _year(&m[k + 1]):
                m[k + 1].masked = 1
        # weekday names just before a masked date
        for k in range(n):
            if _set_has(&self.weekdays, h[k]) and (
                (k + 1 < n and m[k + 1].masked) or (k + 2 < n and m[k + 2].masked and not m[k + 1].kind == TK_DIGITS)
            ):
                m[k].masked = 1
        for k in range(n):
            if m[k].masked:
                h[k] = self.zero_hash

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


cdef void _set_add(WordSet *s, uint64_t h) noexcept:
    cdef uint32_t slot = <uint32_t>(h >> 56)
    if h == 0:
        h = 1
    while s.keys[slot] != 0 and s.keys[slot] != h:
        slot = (slot + 1) & 255
    s.keys[slot] = h


cdef inline bint _set_has(WordSet *s, uint64_t h) noexcept nogil:
    cdef uint32_t slot = <uint32_t>(h >> 56)
    if h == 0:
        h = 1
    while s.keys[slot] != 0:
        if s.keys[slot] == h:
            return True
        slot = (slot + 1) & 255
    return False


cdef inline bint _day(TokMeta *m) noexcept nogil:
    return m.kind == TK_DIGITS and m.ndigits <= 2 and 1 <= m.value <= 31


cdef inline bint _year(TokMeta *m) noexcept nogil:
    return m.kind == TK_DIGITS and m.ndigits == 4 and 1900 <= m.value <= 2099
