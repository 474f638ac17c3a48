# Part of the tokenizer, included by tokens.pyx (one compiled module; see its docstring).
# Pieces holding non-ASCII bytes: simple characters, runs folded in C or normalised in Python.

cdef int _piece(Tokenizer tk, const unsigned char *s, size_t n, U64Buf *out, uint8_t sep) except -1 nogil:
    """Emit the tokens of a piece holding non-ASCII bytes.

    A *simple* character (see :func:`_simple_table`) is one token whatever surrounds it and
    its bytes are already normalised, so it is hashed here in C; the runs between simple
    characters go to :func:`_normalised` (folded in C, or normalised in Python and
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
            _normalised(tk, s + start, i - start, out, sep if first else 32)
            first = False
        tk._emit(out, hash_bytes(s + i, 3, tk.seed), TK_OTHER, 0, sep if first else 32, 0)
        first = False
        i += 3
        start = i
    if n > start:
        _normalised(tk, s + start, n - start, out, sep if first else 32)
    return 0


cdef int _normalised(Tokenizer tk, const unsigned char *s, size_t n, U64Buf *out, uint8_t sep) except -1 nogil:
    """Emit the tokens of a run: folded in C when the table holds every character of it
    (:func:`_fold_run`), else normalised in Python (:func:`normalize_piece`) and remembered
    by the run's 128-bit fingerprint: only a run not met before takes the GIL."""
    cdef PieceMemo *memo = tk.memo
    cdef uint64_t key
    if _fold_run(tk, s, n, out, sep):
        return 0
    key = hash_bytes(s, n, tk.seed ^ 0x6E6F726D616C31ULL) | 1
    cdef uint64_t check = hash_bytes(s, n, tk.seed ^ 0x6E6F726D616C32ULL)
    cdef uint32_t slot = <uint32_t>(key & (PIECE_SLOTS - 1))
    cdef uint32_t k
    while memo.keys[slot] != key or memo.checks[slot] != check:
        if memo.keys[slot] == 0:
            with gil:
                slot = _learn(tk, s, n, key, check, out, sep)
            if slot == PIECE_SLOTS:
                return 0
            break
        slot = (slot + 1) & (PIECE_SLOTS - 1)
    for k in range(memo.counts[slot]):
        tk._emit(out, memo.hashes[memo.starts[slot] + k], TK_OTHER, 0, sep if k == 0 else 32, 0)
    return 0


cdef int _fold_run(Tokenizer tk, const unsigned char *s, size_t n, U64Buf *out, uint8_t sep) except -1 nogil:
    """Emit the tokens of a run folded character by character in C (see :func:`fold_classes`);
    returns 0, emitting nothing, when a character of the run is not in the table (or the
    bytes are not UTF-8), which leaves the run to the Python path."""
    cdef size_t i = 0, w = 0, start, k = 0, width, size
    cdef unsigned char c
    cdef unsigned char *buf
    cdef uint32_t cp, entry
    if tk.char_mode or not _fold_ready:
        return 0
    while i < n:
        if w + 64 > tk.cap_fold:
            _grow_fold(tk, 2 * (w + 64) + n)
        buf = tk.fold_buf
        c = s[i]
        if c < 0x80:
            if _byte_class[c] <= BC_SPACE:
                return 0  # not inside a piece: not this path's business
            if _byte_class[c] == BC_UPPER:
                c += 32
            elif _byte_class[c] == BC_DIGIT and tk.mask_digits:
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
            if entry & FOLD_DIGITS and tk.mask_digits:
                return 0
            size = (entry >> 3) & 63
            memcpy(buf + w, &_fold_pool[entry >> 9], size)
            w += size
        i += width
    # every character was read: the tokens are the runs between the separators
    buf = tk.fold_buf
    start = 0
    for i in range(w + 1):
        if i == w or buf[i] == 32:
            if i > start:
                tk._emit(out, hash_bytes(buf + start, i - start, tk.seed), TK_OTHER, 0, sep if k == 0 else 32, 0)
                k += 1
            start = i + 1
    return 1


cdef int _grow_fold(Tokenizer tk, size_t need) except -1 nogil:
    cdef unsigned char *grown = <unsigned char *>realloc(tk.fold_buf, need)
    if grown == NULL:
        with gil:
            raise MemoryError()
    tk.fold_buf = grown
    tk.cap_fold = need
    return 0


cdef int _learn(Tokenizer tk, const unsigned char *s, size_t n, uint64_t key, uint64_t check, U64Buf *out,
                uint8_t sep) except -1:
    """Normalise a run in Python and remember its token hashes; returns its slot in the memo
    (emptied first when full, as a bounded cache), or ``PIECE_SLOTS`` for a run too long to
    remember, whose tokens are emitted here."""
    cdef PieceMemo *memo = tk.memo
    cdef bytes tb
    cdef list tokens = tk.normalize_piece(
        PyBytes_FromStringAndSize(<const char *>s, n).decode("utf-8", "replace"),
        tk.mask_digits, tk.mask_dates, tk.char_mode,
    )
    cdef uint32_t count = <uint32_t>len(tokens), slot, k = 0
    if count > PIECE_HASHES // 4:
        for t in tokens:
            tb = (<str>t).encode("utf-8", "surrogatepass")
            tk._emit(out, hash_bytes(<const unsigned char *>PyBytes_AS_STRING(tb), PyBytes_GET_SIZE(tb), tk.seed),
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
        memo.hashes[memo.nhashes] = hash_bytes(<const unsigned char *>PyBytes_AS_STRING(tb), PyBytes_GET_SIZE(tb), tk.seed)
        memo.nhashes += 1
    memo.used += 1
    return slot
